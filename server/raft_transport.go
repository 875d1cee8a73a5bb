package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// raftHandshakeTimeout bounds a TLS handshake on the Raft port, so that a
// connection that says nothing does not hold a goroutine for ever.
const raftHandshakeTimeout = 10 * time.Second

// tlsStreamLayer is Raft's network over mutual TLS: both sides present a
// certificate signed by the cluster's CA carrying server.<dc>.ctlplane, so
// only the cluster's servers can send Raft RPCs (votes, entries, snapshots).
type tlsStreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	dial      *tls.Config
}

func newTLSStreamLayer(bind string, advertise net.Addr, server, client *tls.Config) (*tlsStreamLayer, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		addr := ln.Addr().(*net.TCPAddr)
		if addr.IP == nil || addr.IP.IsUnspecified() {
			ln.Close()
			return nil, errors.New("Raft is bound to an unspecified address: set -advertise to the address other servers reach this one at")
		}
		advertise = addr
	}
	return &tlsStreamLayer{ln: tls.NewListener(ln, server), advertise: advertise, dial: client}, nil
}

func (l *tlsStreamLayer) Accept() (net.Conn, error) {
	c, err := l.ln.Accept()
	if err != nil {
		return nil, err
	}
	return &handshakeConn{Conn: c.(*tls.Conn)}, nil
}

func (l *tlsStreamLayer) Close() error   { return l.ln.Close() }
func (l *tlsStreamLayer) Addr() net.Addr { return l.advertise }

func (l *tlsStreamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: l.dial}
	return d.DialContext(ctx, "tcp", string(addr))
}

// handshakeConn completes the TLS handshake, within a deadline, before the
// first byte is read or written.
type handshakeConn struct {
	*tls.Conn
	once sync.Once
	err  error
}

func (c *handshakeConn) handshake() error {
	c.once.Do(func() {
		c.Conn.SetDeadline(time.Now().Add(raftHandshakeTimeout))
		c.err = c.Conn.Handshake()
		c.Conn.SetDeadline(time.Time{})
		if c.err != nil {
			c.Conn.Close()
		}
	})
	return c.err
}

func (c *handshakeConn) Read(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *handshakeConn) Write(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// setupTransport opens Raft's network: none for a lone dev agent (it has no
// peers), mutual TLS when configured, plain TCP otherwise.
func (s *Server) setupTransport() error {
	cfg := s.config
	if cfg.Dev && len(cfg.Join) == 0 {
		_, s.transport = raft.NewInmemTransport("")
		return nil
	}
	var advertise net.Addr
	if cfg.AdvertiseAddr != "" {
		var err error
		if advertise, err = net.ResolveTCPAddr("tcp", cfg.AdvertiseAddr); err != nil {
			return fmt.Errorf("invalid advertise address %q: %w", cfg.AdvertiseAddr, err)
		}
	}
	if s.tls != nil {
		stream, err := newTLSStreamLayer(cfg.BindAddr, advertise, s.tls.RaftServer(), s.tls.ServerClient())
		if err != nil {
			return fmt.Errorf("failed to start Raft transport on %s: %w", cfg.BindAddr, err)
		}
		s.transport = pipelineTransport{raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: stream, MaxPool: 3, Timeout: 10 * time.Second, Logger: s.logger.Named("raft-net"),
		})}
		return nil
	}
	tr, err := raft.NewTCPTransportWithLogger(cfg.BindAddr, advertise, 3, 10*time.Second, s.logger.Named("raft-net"))
	if err != nil {
		return fmt.Errorf("failed to start Raft transport on %s: %w", cfg.BindAddr, err)
	}
	s.transport = pipelineTransport{tr}
	return nil
}

// secureDefaultError is why an agent without TLS may not form or join a
// multi-server cluster.
func secureDefaultError() error {
	return fmt.Errorf("refusing to form or join a multi-server cluster without TLS: anyone who reaches the Raft port could take the cluster over. " +
		"Create certificates once with `ctlplane tls ca create`, then on each server `ctlplane tls cert create -server -dc <datacenter>`, " +
		"and start the agents with -tls-ca-file=ctlplane-agent-ca.pem -tls-cert-file=<dc>-server-ctlplane-0.pem -tls-key-file=<dc>-server-ctlplane-0-key.pem " +
		"(see the README's Security section); or pass -insecure-raft to run without (trusted networks only)")
}
