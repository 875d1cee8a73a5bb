package server

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/ctlplane/ctlplane/server/tlsutil"
	"github.com/hashicorp/go-hclog"
)

// firstByteTimeout bounds how long a new connection may stay silent (it
// matches the HTTP server's ReadHeaderTimeout).
const firstByteTimeout = 10 * time.Second

// apiListener hands the HTTP server its connections after two checks made
// off the accept loop (so a silent client delays nobody else):
//
//   - With TLS configured, the API address speaks both HTTP and HTTPS: the
//     first byte tells a TLS handshake (0x16) from a plain request, so servers
//     reach each other over HTTPS at the address recorded for them, and
//     plain clients keep working. forceTLS (the -https-addr listener)
//     accepts TLS only.
//   - At most maxPerIP connections per client IP are open at once (Consul's
//     http_max_conns_per_client); over it the client gets a 429 and the
//     connection is closed. Servers authenticated by their certificate are
//     not counted: a follower forwards all its clients' requests.
type apiListener struct {
	raw      net.Listener
	tlsConf  *tls.Config // nil: plain HTTP only
	forceTLS bool
	dc       string
	limits   *connLimiter
	logger   hclog.Logger

	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func newAPIListener(raw net.Listener, tlsConf *tls.Config, forceTLS bool, dc string, limits *connLimiter, logger hclog.Logger) *apiListener {
	l := &apiListener{raw: raw, tlsConf: tlsConf, forceTLS: forceTLS, dc: dc, limits: limits, logger: logger,
		conns: make(chan net.Conn), done: make(chan struct{})}
	go l.acceptLoop()
	return l
}

func (l *apiListener) acceptLoop() {
	for {
		c, err := l.raw.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			l.Close()
			return
		}
		go l.prepare(c)
	}
}

// prepare sniffs the protocol, applies the per-IP limit and hands the
// connection to Accept.
func (l *apiListener) prepare(raw net.Conn) {
	ip := remoteIP(raw)
	counted := l.limits.acquire(ip)
	var c net.Conn = &countedConn{Conn: raw, release: func() { l.limits.release(ip) }}
	if !counted {
		c = raw
	}
	useTLS := l.forceTLS
	if l.tlsConf != nil && !l.forceTLS {
		raw.SetReadDeadline(time.Now().Add(firstByteTimeout))
		br := bufio.NewReaderSize(c, 1024)
		first, err := br.Peek(1)
		raw.SetReadDeadline(time.Time{})
		if err != nil {
			c.Close()
			return
		}
		useTLS = first[0] == 0x16 // TLS handshake record
		c = &peekedConn{Conn: c, r: br}
	}
	if useTLS {
		tc := tls.Server(c, l.tlsConf)
		tc.SetDeadline(time.Now().Add(firstByteTimeout))
		if err := tc.Handshake(); err != nil {
			tc.Close()
			return
		}
		tc.SetDeadline(time.Time{})
		if counted {
			if cs := tc.ConnectionState(); tlsutil.IsServer(&cs, l.dc) {
				c.(interface{ releaseOnce() }).releaseOnce()
				counted = false
			}
		}
		c = tc
	}
	if counted && l.limits.over(ip) {
		l.refuse(c, ip)
		return
	}
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

// refuse answers 429 and closes, reading what the client sent first so
// that it sees the answer rather than a reset.
func (l *apiListener) refuse(c net.Conn, ip string) {
	msg := fmt.Sprintf("Too many connections from %s: at most %d at once per client IP (agent flag -http-max-conns-per-client)\n", ip, l.limits.max)
	l.logger.Warn("too many connections from one client IP", "client", ip, "limit", l.limits.max)
	c.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	c.Close()
}

func (l *apiListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *apiListener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.raw.Close()
	})
	return err
}

func (l *apiListener) Addr() net.Addr { return l.raw.Addr() }

func remoteIP(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// peekedConn replays the bytes read while sniffing.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *peekedConn) releaseOnce() {
	if rc, ok := c.Conn.(interface{ releaseOnce() }); ok {
		rc.releaseOnce()
	}
}

// countedConn gives its slot back to the limiter when closed.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) releaseOnce() { c.once.Do(c.release) }

func (c *countedConn) Close() error {
	c.releaseOnce()
	return c.Conn.Close()
}

func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// connLimiter counts open connections per client IP; max 0 means no limit.
type connLimiter struct {
	max   int
	mu    sync.Mutex
	count map[string]int
}

func newConnLimiter(max int) *connLimiter { return &connLimiter{max: max, count: map[string]int{}} }

// acquire counts a new connection; it returns false when there is no limit.
func (l *connLimiter) acquire(ip string) bool {
	if l == nil || l.max <= 0 {
		return false
	}
	l.mu.Lock()
	l.count[ip]++
	l.mu.Unlock()
	return true
}

func (l *connLimiter) release(ip string) {
	l.mu.Lock()
	if l.count[ip]--; l.count[ip] <= 0 {
		delete(l.count, ip)
	}
	l.mu.Unlock()
}

// over says whether ip has more connections open than allowed.
func (l *connLimiter) over(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count[ip] > l.max
}
