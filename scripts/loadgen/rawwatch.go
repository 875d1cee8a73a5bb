package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
)

// rawWatchers send blocked GETs on plain TCP connections and read each
// answer with a minimal HTTP/1.1 response parser. The generator shares the
// cores with the server it measures, so the answers are read with as little
// CPU as can be: by one epoll loop for all the connections, with no
// goroutine or netpoller wake-up per answer (rawwatch_linux.go; the load
// generator, like benchutil, is for Linux). The connections stay open until
// close, so that their teardown is not part of what is measured.
type rawWatchers struct {
	host, token string
	reader      *rawReader
}

func newRawWatchers(base, token string) (*rawWatchers, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" {
		return nil, fmt.Errorf("raw watchers need an http:// address, not %q", base)
	}
	r, err := newRawReader()
	if err != nil {
		return nil, err
	}
	return &rawWatchers{host: u.Host, token: token, reader: r}, nil
}

// close fails the answers still awaited and closes every connection.
func (w *rawWatchers) close() { w.reader.close() }

// start sends GET path and returns; wrote is called once the request is
// written (or failed), done with the answer, once, from another goroutine
// (a failure to connect or write: before start returns). An answer not in
// by ctx's end is failed with ctx's error.
func (w *rawWatchers) start(ctx context.Context, path string, wrote func(), done func(benchutil.Response)) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", w.host)
	if err != nil {
		wrote()
		done(benchutil.Response{Err: err})
		return
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + w.host + "\r\n"
	if w.token != "" {
		req += "X-Service-Token: " + w.token + "\r\n"
	}
	req += "\r\n"
	if dl, ok := ctx.Deadline(); ok {
		conn.SetWriteDeadline(dl)
	}
	_, err = conn.Write([]byte(req))
	wrote()
	if err != nil {
		conn.Close()
		done(benchutil.Response{Err: err})
		return
	}
	w.reader.await(ctx, conn.(*net.TCPConn), done)
}

var errBadResponse = errors.New("malformed HTTP response")

// parseRawResponse parses buf, the bytes read so far: complete is false
// while more are to come.
func parseRawResponse(buf []byte) (r benchutil.Response, complete bool) {
	i := bytes.Index(buf, []byte("\r\n\r\n"))
	if i < 0 {
		if len(buf) > 1<<20 {
			return benchutil.Response{Err: errBadResponse}, true
		}
		return r, false
	}
	r, bodyLen, err := parseRawHeader(buf[:i])
	if err != nil {
		return benchutil.Response{Err: err}, true
	}
	body := buf[i+4:]
	if len(body) < bodyLen {
		return r, false
	}
	r.Body = body[:bodyLen]
	return r, true
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
			if bodyLen, err = strconv.Atoi(string(value)); err != nil || bodyLen < 0 {
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
