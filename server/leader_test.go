package server_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// An injected failure of the first attempts to establish leadership ends
// with a ready leader (the attempts are retried), and the leader routines
// run only once it is ready, and stop with it.
func TestLeadershipRetriesThenServes(t *testing.T) {
	var attempts atomic.Int32
	ts := servertest.StartNoWait(t, func(c *server.Config) {
		c.EstablishHook = func() error {
			if attempts.Add(1) <= 3 {
				return errors.New("injected barrier failure")
			}
			return nil
		}
	})
	ts.WaitForLeader(t)
	if got := attempts.Load(); got != 4 {
		t.Errorf("establish attempts = %d, want 4 (3 injected failures, then success)", got)
	}
	if err := ts.CheckRead(false); err != nil {
		t.Fatalf("leader not ready after the retries: %v", err)
	}
	resp := must(t, ts, http.MethodGet, "/v1/acl/binding-rules", "")
	if resp.Status != http.StatusOK {
		t.Fatalf("read after retries: %d %s", resp.Status, resp.Body)
	}

	started := make(chan struct{})
	stopped := make(chan struct{})
	ts.AddLeaderRoutine("probe", func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		close(stopped)
	})
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("a routine added while leading did not start")
	}
	if err := ts.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("leader routine still running after shutdown returned")
	}
}

// A leader that cannot get ready at all steps down: another server takes
// over and serves, instead of the cluster answering 503 for the whole term.
func TestLeadershipStepsDownWhenItCannotGetReady(t *testing.T) {
	var mu sync.Mutex
	poisoned := "" // the node that fails every attempt
	failedBy := map[string]int{}
	hook := func(name string) func() error {
		return func() error {
			mu.Lock()
			defer mu.Unlock()
			if poisoned == "" {
				poisoned = name // the first node to win an election
			}
			if name == poisoned {
				failedBy[name]++
				return errors.New("injected ACL setup failure")
			}
			return nil
		}
	}
	addrs := []string{servertest.FreeAddr(t), servertest.FreeAddr(t), servertest.FreeAddr(t)}
	nodes := make([]*servertest.TestServer, 3)
	for i := range nodes {
		name := []string{"node1", "node2", "node3"}[i]
		nodes[i] = servertest.StartNoWait(t, servertest.HTTPAddr(addrs[i]), servertest.Join(3, addrs...),
			servertest.RaftTimeout(raftTimeout), func(c *server.Config) {
				c.NodeName = name
				c.EstablishHook = hook(name)
			})
	}
	deadline := time.Now().Add(60 * time.Second)
	var ready *servertest.TestServer
	for ready == nil && time.Now().Before(deadline) {
		for _, n := range nodes {
			if n.CheckRead(false) == nil {
				ready = n
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ready == nil {
		t.Fatal("no server became a ready leader")
	}
	mu.Lock()
	defer mu.Unlock()
	if ready.Config.NodeName == poisoned {
		t.Fatalf("the poisoned node %s became ready", poisoned)
	}
	if failedBy[poisoned] < 5 {
		t.Errorf("poisoned node %s made %d attempts before stepping down, want >= 5", poisoned, failedBy[poisoned])
	}
}
