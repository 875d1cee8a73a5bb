package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
)

// rawServer answers every GET on its own connection with how(path), written
// as it returns it: parts are written one after another, with a pause
// between them; a nil answer never comes.
func rawServer(t *testing.T, how func(path string) []string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				parts := how(req.URL.RequestURI())
				if parts == nil {
					time.Sleep(time.Minute)
					return
				}
				for _, p := range parts {
					c.Write([]byte(p))
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(time.Minute) // keep-alive: the server does not close
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func answer(status int, index uint64, body string) string {
	return fmt.Sprintf("HTTP/1.1 %d X\r\nContent-Type: application/json\r\nX-Service-Index: %d\r\nContent-Length: %d\r\n\r\n%s", status, index, len(body), body)
}

// Every answer reaches its done once, parsed: whole, split across writes
// (the loop re-arms the connection), or failed when the server closes, and
// one that never comes fails when its context ends.
func TestRawWatchersAnswers(t *testing.T) {
	base := rawServer(t, func(path string) []string {
		switch {
		case strings.HasPrefix(path, "/whole/"):
			return []string{answer(200, 7, `{"ID":"`+path+`"}`)}
		case strings.HasPrefix(path, "/split/"):
			a := answer(200, 8, `{"ID":"`+path+`"}`)
			return []string{a[:10], a[10 : len(a)-3], a[len(a)-3:]}
		case path == "/error":
			return []string{answer(403, 0, "ACL not found")}
		case path == "/never":
			return nil
		}
		return []string{"HTTP/1.1 200 OK\r\n\r\n"} // no Content-Length
	})
	w, err := newRawWatchers(base, "tok")
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()

	type got struct {
		path string
		r    benchutil.Response
	}
	var mu sync.Mutex
	var results []got
	var wg sync.WaitGroup
	start := func(ctx context.Context, path string) {
		wg.Add(1)
		wrote := 0
		w.start(ctx, path, func() { wrote++ }, func(r benchutil.Response) {
			mu.Lock()
			results = append(results, got{path, r})
			mu.Unlock()
			wg.Done()
		})
		if wrote != 1 {
			t.Errorf("%s: wrote called %d times before start returned", path, wrote)
		}
	}
	ctx := context.Background()
	for i := range 50 {
		start(ctx, fmt.Sprintf("/whole/%d", i))
		start(ctx, fmt.Sprintf("/split/%d", i))
	}
	start(ctx, "/error")
	start(ctx, "/nolength")
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start(short, "/never")
	wg.Wait()

	if len(results) != 103 {
		t.Fatalf("%d answers, want 103", len(results))
	}
	for _, g := range results {
		switch {
		case strings.HasPrefix(g.path, "/whole/"), strings.HasPrefix(g.path, "/split/"):
			wantIndex := uint64(7)
			if strings.HasPrefix(g.path, "/split/") {
				wantIndex = 8
			}
			if g.r.Failure() != "" || g.r.Index != wantIndex || string(g.r.Body) != `{"ID":"`+g.path+`"}` {
				t.Errorf("%s: %+v (%s), want 200, index %d and its body", g.path, g.r, g.r.Failure(), wantIndex)
			}
		case g.path == "/error":
			if g.r.Status != 403 || string(g.r.Body) != "ACL not found" {
				t.Errorf("/error: %+v", g.r)
			}
		case g.path == "/nolength":
			if g.r.Err == nil || !strings.Contains(g.r.Err.Error(), "without Content-Length") {
				t.Errorf("/nolength: %v, want the missing Content-Length", g.r.Err)
			}
		case g.path == "/never":
			if g.r.Err == nil || !strings.Contains(g.r.Err.Error(), "deadline exceeded") {
				t.Errorf("/never: %v, want the context's deadline", g.r.Err)
			}
		}
	}
}

// close fails what is still awaited.
func TestRawWatchersClose(t *testing.T) {
	base := rawServer(t, func(string) []string { return nil })
	w, err := newRawWatchers(base, "")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan benchutil.Response, 1)
	w.start(context.Background(), "/never", func() {}, func(r benchutil.Response) { done <- r })
	w.close()
	select {
	case r := <-done:
		if r.Err != errReaderClosed {
			t.Errorf("closed: %v, want errReaderClosed", r.Err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("close did not fail the awaited answer")
	}
}
