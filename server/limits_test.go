package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// rawRequest sends a request on a new TCP connection and returns the
// connection and a reader of the answer.
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Issue 8, finding 4: a body trickled slowly is cut off at the body read
// deadline instead of holding the connection.
func TestSlowBodyIsCutOff(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(""), func(c *server.Config) { c.HTTPBodyReadTimeout = time.Second })
	c := rawConn(t, ts.HTTPAddr())
	fmt.Fprintf(c, "POST /v1/acl/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	closed := make(chan string, 1)
	go func() {
		buf, _ := io.ReadAll(c)
		closed <- string(buf)
	}()
	start := time.Now()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case answer := <-closed:
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("connection held %v", d)
			}
			if d := time.Since(start); d < 900*time.Millisecond {
				t.Fatalf("answered after %v, before the body deadline: %q", d, answer)
			}
			return
		case <-tick.C:
			if time.Since(start) > 10*time.Second {
				t.Fatal("a body trickled one byte per 200ms still holds the connection after 10s")
			}
			c.Write([]byte(" "))
		}
	}
}

// Blocking queries are not cut by the body deadline: a 3s wait with a 1s
// body deadline answers after the wait.
func TestBlockingQueryOutlivesBodyDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := servertest.Start(t, func(c *server.Config) { c.HTTPBodyReadTimeout = time.Second })
	l := listQ(t, ts, "")
	start := time.Now()
	r := ts.Do(t, http.MethodGet, fmt.Sprintf("%s?index=%d&wait=3s", rulesPath, l.Index), "")
	if r.Status != http.StatusOK || time.Since(start) < 2500*time.Millisecond {
		t.Fatalf("blocking query: %s after %v", r, time.Since(start))
	}
}

// Issue 8, finding 4: at most 200 connections per client IP (Consul's
// default); the 201st gets 429 with a message and is closed. Servers
// presenting their certificate are not counted; a freed slot is usable.
func TestConnectionsPerClientIPCapped(t *testing.T) {
	ts := servertest.Start(t)
	if ts.Config.HTTPMaxConnsPerClient != 200 {
		t.Fatalf("default limit %d, want 200", ts.Config.HTTPMaxConnsPerClient)
	}
	held := make([]net.Conn, 200)
	for i := range held {
		held[i] = rawConn(t, ts.HTTPAddr())
	}
	ask := func(c net.Conn) (*http.Response, string) {
		t.Helper()
		fmt.Fprintf(c, "GET /v1/status/leader HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, strings.TrimSpace(string(body))
	}
	// Each answers (so the server has accepted and counted all of them)
	// and stays open (keep-alive).
	for i, c := range held {
		if resp, body := ask(c); resp.StatusCode != http.StatusOK {
			t.Fatalf("connection %d: %d %q", i+1, resp.StatusCode, body)
		}
	}
	over := rawConn(t, ts.HTTPAddr())
	resp, body := ask(over)
	const want = "Too many connections from 127.0.0.1: at most 200 at once per client IP (agent flag -http-max-conns-per-client)"
	if resp.StatusCode != http.StatusTooManyRequests || body != want {
		t.Fatalf("201st connection: %d %q, want 429 %q", resp.StatusCode, body, want)
	}
	over.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := over.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("the refused connection stays open (%d, %v)", n, err)
	}

	certs := servertest.TestCerts(t)
	code, _ := get(t, certs.Client(t, certs.ServerCert, certs.ServerKey), http.MethodGet, "https://"+ts.HTTPAddr()+"/v1/status/leader", "")
	if code != http.StatusOK {
		t.Fatalf("a server's connection over the cap: %d", code)
	}

	held[0].Close()
	waitFor(t, 5*time.Second, "a freed slot to be usable", func() string {
		c, err := net.Dial("tcp", ts.HTTPAddr())
		if err != nil {
			return err.Error()
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /v1/status/leader HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.Status
		}
		return ""
	})
}

// A snapshot restore upload may take longer than the body deadline of
// other requests.
func TestSnapshotUploadOutlivesBodyDeadline(t *testing.T) {
	ts := servertest.Start(t, func(c *server.Config) { c.HTTPBodyReadTimeout = 500 * time.Millisecond })
	create(t, ts, "kept")
	archive := must(t, ts, http.MethodGet, "/v1/snapshot", "").Body
	pr, pw := io.Pipe()
	go func() {
		// The archive in four pieces over about 1.5s.
		n := len(archive) / 4
		for i := 0; i < 4; i++ {
			end := (i + 1) * n
			if i == 3 {
				end = len(archive)
			}
			pw.Write([]byte(archive[i*n : end]))
			time.Sleep(500 * time.Millisecond)
		}
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPut, ts.URL+"/v1/snapshot", pr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("slow snapshot upload: %d %q", resp.StatusCode, body)
	}
}
