package server

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// memListener hands the HTTP server connections made inside this process:
// the dev agent's simulated client nodes talk to the API through it, over
// in-memory pipes. They are the agent itself, so they bypass the network,
// its TLS and the per-client-IP connection limit (a thousand simulated
// nodes would exceed it at once), but not the API: the same handler,
// authentication and forwarding serve them.
type memListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr{} }

// dial opens a connection to the listener.
func (l *memListener) dial(ctx context.Context) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		server.Close()
		client.Close()
		return nil, net.ErrClosed
	case <-ctx.Done():
		server.Close()
		client.Close()
		return nil, ctx.Err()
	}
}

type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "in-process" }

// InProcessHTTPClient is an HTTP client whose requests reach this server's
// API through memory (see memListener), whatever host their URL names.
// Valid after Serve.
func (s *Server) InProcessHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return s.inproc.dial(ctx)
		},
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     90 * time.Second,
	}}
}
