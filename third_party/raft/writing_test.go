// ctlplane fork: tests of the leader replicating while it writes.

package raft

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// gatedStore holds StoreLogs of entries past from while the gate is shut,
// or fails them with fail.
type gatedStore struct {
	*InmemStore
	mu   sync.Mutex
	from uint64 // 0: open
	fail error
	open chan struct{}
}

func newGatedStore() *gatedStore { return &gatedStore{InmemStore: NewInmemStore()} }

func (g *gatedStore) shut(from uint64, fail error) {
	g.mu.Lock()
	g.from, g.fail, g.open = from, fail, make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedStore) release() {
	g.mu.Lock()
	g.from = 0
	close(g.open)
	g.mu.Unlock()
}

func (g *gatedStore) releaseIfShut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.from != 0 {
		g.from = 0
		close(g.open)
	}
}

func (g *gatedStore) StoreLogs(logs []*Log) error {
	g.mu.Lock()
	from, fail, open := g.from, g.fail, g.open
	g.mu.Unlock()
	if from != 0 && len(logs) > 0 && logs[len(logs)-1].Index >= from {
		if fail != nil {
			return fail
		}
		<-open
	}
	return g.InmemStore.StoreLogs(logs)
}

func (g *gatedStore) StoreLog(l *Log) error { return g.StoreLogs([]*Log{l}) }

type gatedNode struct {
	raft  *Raft
	store *gatedStore
	fsm   *MockFSM
}

// gatedCluster starts three voters over in-memory transports, each on a
// gatedStore, and returns them with the leader first.
func gatedCluster(t *testing.T) []*gatedNode {
	t.Helper()
	var nodes []*gatedNode
	var trans []*InmemTransport
	var servers []Server
	for i := 0; i < 3; i++ {
		addr, tr := NewInmemTransport("")
		trans = append(trans, tr)
		servers = append(servers, Server{Suffrage: Voter, ID: ServerID(fmt.Sprint("node", i)), Address: addr})
	}
	for _, a := range trans {
		for _, b := range trans {
			a.Connect(b.LocalAddr(), b)
		}
	}
	for i := 0; i < 3; i++ {
		conf := inmemConfig(t)
		conf.LocalID = servers[i].ID
		store := newGatedStore()
		snaps := NewInmemSnapshotStore()
		if err := BootstrapCluster(conf, store, store, snaps, trans[i], Configuration{Servers: servers}); err != nil {
			t.Fatalf("bootstrap: %v", err)
		}
		fsm := &MockFSM{}
		r, err := NewRaft(conf, fsm, store, store, snaps, trans[i])
		if err != nil {
			t.Fatalf("NewRaft: %v", err)
		}
		nodes = append(nodes, &gatedNode{raft: r, store: store, fsm: fsm})
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.store.releaseIfShut() // a failed test must not hold a write (and Shutdown) forever
			n.raft.Shutdown().Error()
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range nodes {
			if n.raft.State() == Leader {
				// One entry of this term committed everywhere before the test.
				if err := n.raft.Barrier(time.Second).Error(); err != nil {
					t.Fatalf("barrier: %v", err)
				}
				nodes[0], nodes[i] = nodes[i], nodes[0]
				return nodes
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no leader within 5s")
	return nil
}

func hasLog(s LogStore, index uint64) bool {
	var l Log
	return s.GetLog(index, &l) == nil
}

// The followers store (and acknowledge) a batch while the leader's own write
// of it is still in progress, and the apply completes once that write does.
func TestLeaderReplicatesWhileWriting(t *testing.T) {
	nodes := gatedCluster(t)
	leader := nodes[0]
	next := leader.raft.LastIndex() + 1
	leader.store.shut(next, nil)

	f := leader.raft.Apply([]byte("while-writing"), 5*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for !(hasLog(nodes[1].store, next) && hasLog(nodes[2].store, next)) {
		if time.Now().After(deadline) {
			t.Fatalf("followers did not store index %d while the leader wrote it (follower 1: %v, follower 2: %v)",
				next, hasLog(nodes[1].store, next), hasLog(nodes[2].store, next))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if hasLog(leader.store.InmemStore, next) {
		t.Fatalf("the leader's store has index %d while its write is held", next)
	}
	select {
	case <-f.(*logFuture).errCh:
		t.Fatal("the apply returned before the leader's own write finished")
	case <-time.After(50 * time.Millisecond):
	}
	leader.store.release()
	if err := f.Error(); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if f.Index() != next {
		t.Fatalf("applied at %d, want %d", f.Index(), next)
	}
	if !hasLog(leader.store.InmemStore, next) {
		t.Fatalf("the leader's store lacks index %d after the apply", next)
	}
	if got := leader.fsm.logs; len(got) == 0 || string(got[len(got)-1]) != "while-writing" {
		t.Fatalf("leader FSM's last entry %q", got)
	}
}

// A failed write on the leader answers ErrLeadershipLost (the followers may
// have the batch: its outcome is unknown), steps the leader down and takes
// the batch back off its last index.
func TestLeaderWriteFailureLosesLeadership(t *testing.T) {
	nodes := gatedCluster(t)
	leader := nodes[0]
	before := leader.raft.LastIndex()
	leader.store.shut(before+1, errors.New("disk full"))

	err := leader.raft.Apply([]byte("lost"), 5*time.Second).Error()
	if !errors.Is(err, ErrLeadershipLost) {
		t.Fatalf("apply error %v, want %v", err, ErrLeadershipLost)
	}
	deadline := time.Now().Add(5 * time.Second)
	for leader.raft.State() == Leader {
		if time.Now().After(deadline) {
			t.Fatal("the leader did not step down after its log write failed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Its store still refuses the index, so nothing may have raised it.
	if got := leader.raft.LastIndex(); got != before {
		t.Fatalf("last index %d after the failed write, want %d (the batch taken back)", got, before)
	}
	if hasLog(leader.store.InmemStore, before+1) {
		t.Fatalf("the failed write left index %d in the store", before+1)
	}
	// The cluster goes on: a leader among the others (or this node again
	// once its store works) takes writes.
	leader.store.release()
	deadline = time.Now().Add(10 * time.Second)
	for {
		for _, n := range nodes {
			if n.raft.State() == Leader && n.raft.Apply([]byte("after"), time.Second).Error() == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no write succeeded after the failed one")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
