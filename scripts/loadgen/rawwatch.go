package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
)

// rawWatchers send blocked GETs on plain TCP connections and read the
// answer with a minimal HTTP/1.1 response parser: one read for a small
// answer, no transport goroutines. The connections stay open until close,
// so that their teardown is not part of what is measured.
type rawWatchers struct {
	host, token string

	mu    sync.Mutex
	conns []net.Conn
}

func newRawWatchers(base, token string) (*rawWatchers, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" {
		return nil, fmt.Errorf("raw watchers need an http:// address, not %q", base)
	}
	return &rawWatchers{host: u.Host, token: token}, nil
}

func (w *rawWatchers) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.conns {
		c.Close()
	}
	w.conns = nil
}

// get sends GET path and reads the answer; wrote is called once the
// request is written.
func (w *rawWatchers) get(ctx context.Context, path string, wrote func()) benchutil.Response {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", w.host)
	if err != nil {
		wrote()
		return benchutil.Response{Err: err}
	}
	w.mu.Lock()
	w.conns = append(w.conns, conn)
	w.mu.Unlock()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + w.host + "\r\n"
	if w.token != "" {
		req += "X-Service-Token: " + w.token + "\r\n"
	}
	req += "\r\n"
	_, err = conn.Write([]byte(req))
	wrote()
	if err != nil {
		return benchutil.Response{Err: err}
	}
	return readRawResponse(conn)
}

var errBadResponse = errors.New("malformed HTTP response")

// readRawResponse reads one response with a Content-Length body.
func readRawResponse(conn net.Conn) benchutil.Response {
	buf := make([]byte, 0, 2048)
	var r benchutil.Response
	headerEnd, bodyLen := -1, -1
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := conn.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if headerEnd < 0 {
			if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
				headerEnd = i + 4
				if r, bodyLen, err = parseRawHeader(buf[:i]); err != nil {
					return benchutil.Response{Err: err}
				}
			}
		}
		if headerEnd >= 0 && len(buf)-headerEnd >= bodyLen {
			r.Body = buf[headerEnd : headerEnd+bodyLen]
			return r
		}
		if err != nil {
			return benchutil.Response{Err: fmt.Errorf("reading the response after %d bytes: %w", len(buf), err)}
		}
		if len(buf) > 1<<20 {
			return benchutil.Response{Err: errBadResponse}
		}
	}
}

func parseRawHeader(h []byte) (benchutil.Response, int, error) {
	var r benchutil.Response
	lines := bytes.Split(h, []byte("\r\n"))
	status := bytes.Fields(lines[0])
	if len(status) < 2 {
		return r, 0, errBadResponse
	}
	code, err := strconv.Atoi(string(status[1]))
	if err != nil {
		return r, 0, errBadResponse
	}
	r.Status = code
	bodyLen := -1
	for _, l := range lines[1:] {
		name, value, ok := bytes.Cut(l, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if bodyLen, err = strconv.Atoi(string(value)); err != nil {
				return r, 0, errBadResponse
			}
		case bytes.EqualFold(name, []byte("X-Service-Index")):
			r.Index, _ = strconv.ParseUint(string(value), 10, 64)
		}
	}
	if bodyLen < 0 {
		return r, 0, errors.New("response without Content-Length")
	}
	return r, bodyLen, nil
}
