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
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
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

// A leader routine that returns while its server leads (an error, a panic,
// or just returning) is restarted with backoff instead of staying stopped
// until the next term; the single server keeps leading.
func TestLeaderRoutineRestartedAfterFailure(t *testing.T) {
	ts := servertest.Start(t)
	var runs atomic.Int32
	running := make(chan struct{})
	stopped := make(chan struct{})
	start := time.Now()
	ts.AddLeaderRoutineErr("flaky", func(ctx context.Context) error {
		switch runs.Add(1) {
		case 1:
			return errors.New("injected state read failure")
		case 2:
			panic("injected bug")
		case 3:
			return nil // returned while leading: as much a stop as an error
		}
		close(running)
		<-ctx.Done()
		close(stopped)
		return nil
	})
	select {
	case <-running:
	case <-time.After(10 * time.Second):
		t.Fatalf("routine not running again after its failures (%d runs)", runs.Load())
	}
	// Backoff: 100ms, 200ms, 400ms between the four runs.
	if el := time.Since(start); el < 700*time.Millisecond {
		t.Errorf("restarted after %v, want backoff of at least 700ms", el)
	}
	if err := ts.CheckRead(false); err != nil {
		t.Fatalf("the single server stopped serving: %v", err)
	}
	if err := ts.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("restarted routine still running after shutdown returned")
	}
	if got := runs.Load(); got != 4 {
		t.Errorf("runs = %d, want 4", got)
	}
}

// A leader routine that keeps failing on one server makes it step down:
// another server leads and runs it.
func TestLeaderStepsDownWhenARoutineKeepsFailing(t *testing.T) {
	var mu sync.Mutex
	poisoned := "" // the first node to run the routine
	failures := map[string]int{}
	healthy := make(chan string, 3)
	routine := func(name string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			mu.Lock()
			if poisoned == "" {
				poisoned = name
			}
			bad := name == poisoned
			if bad {
				failures[name]++
			}
			mu.Unlock()
			if bad {
				return errors.New("injected failure")
			}
			select {
			case healthy <- name:
			default:
			}
			<-ctx.Done()
			return nil
		}
	}
	nodes := startCluster(t, 3)
	for _, n := range nodes {
		n.AddLeaderRoutineErr("poisoned", routine(n.Config.NodeName))
	}
	select {
	case name := <-healthy:
		mu.Lock()
		defer mu.Unlock()
		if name == poisoned {
			t.Fatalf("the poisoned node %s ran the routine", name)
		}
		if failures[poisoned] < 5 {
			t.Errorf("poisoned node %s failed %d times before stepping down, want >= 5", poisoned, failures[poisoned])
		}
	case <-time.After(60 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("no other server took over (the poisoned %s failed %d times)", poisoned, failures[poisoned])
	}
}
