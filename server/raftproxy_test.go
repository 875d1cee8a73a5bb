package server_test

// raftProxy stands in front of one node's Raft port so that a test can cut
// that node off. Every node of a partition test listens on its own port and
// advertises its proxy's address, so all Raft traffic to it passes through
// the proxy. Isolating node X then takes two steps:
//
//   - X's proxy is cut: it closes every connection and refuses new ones, so
//     nobody reaches X (inbound);
//   - every other node's proxy blocks X as a sender, so X reaches nobody
//     (outbound).
//
// A proxy tells the sender of a connection from the header of the first RPC
// on it (raft.RPCHeader carries the sender's server ID); the bytes read to
// decode it are then passed on unchanged. Raft connections carry requests
// from the dialer and responses from the listener only, so one connection
// is one directed link.

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

type raftProxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu      sync.Mutex
	cut     bool
	blocked map[string]bool // sender IDs refused
	conns   map[*proxiedConn]bool
	closed  bool
	wg      sync.WaitGroup
}

type proxiedConn struct {
	from             string // sender's server ID
	client, upstream net.Conn
}

func (c *proxiedConn) close() {
	c.client.Close()
	c.upstream.Close()
}

// startRaftProxy listens on a free 127.0.0.1 port and forwards to target.
// It is closed when the test ends.
func startRaftProxy(t testing.TB, target string) *raftProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &raftProxy{t: t, ln: ln, target: target, blocked: map[string]bool{}, conns: map[*proxiedConn]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// Addr is the address to advertise.
func (p *raftProxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection through the proxy and refuses new ones.
func (p *raftProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.close()
	}
}

// Block closes the connections from the server with that ID and refuses its new ones.
func (p *raftProxy) Block(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked[id] = true
	for c := range p.conns {
		if c.from == id {
			c.close()
		}
	}
}

// Heal lifts the cut and every block.
func (p *raftProxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	p.blocked = map[string]bool{}
}

func (p *raftProxy) close() {
	p.mu.Lock()
	p.closed = true
	p.cut = true
	for c := range p.conns {
		c.close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *raftProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(c)
		}()
	}
}

func (p *raftProxy) handle(client net.Conn) {
	p.mu.Lock()
	refuse := p.cut
	p.mu.Unlock()
	if refuse {
		client.Close()
		return
	}
	// Read the first RPC far enough to know its sender, keeping every byte
	// read so that it can be passed on.
	var seen bytes.Buffer
	br := bufio.NewReader(io.TeeReader(client, &seen))
	client.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := br.ReadByte(); err != nil { // RPC type
		client.Close()
		return
	}
	var hdr struct{ raft.RPCHeader }
	if err := codec.NewDecoder(br, &codec.MsgpackHandle{}).Decode(&hdr); err != nil {
		client.Close()
		return
	}
	client.SetReadDeadline(time.Time{})

	upstream, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		client.Close()
		return
	}
	c := &proxiedConn{from: string(hdr.ID), client: client, upstream: upstream}
	p.mu.Lock()
	if p.cut || p.blocked[c.from] {
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		c.close()
	}()

	if _, err := upstream.Write(seen.Bytes()); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		io.Copy(client, upstream)
		c.close()
		close(done)
	}()
	io.Copy(upstream, client)
	c.close()
	<-done
}
