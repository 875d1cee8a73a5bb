package http_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/fsm"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
)

// gatedRaft is the real server's Raft with a gate in front of it: a held
// entry waits until released, and entries can be failed as a broken log
// disk would fail them, instead of going to Raft.
type gatedRaft struct {
	inner fsm.Applier

	mu      sync.Mutex
	hold    chan struct{} // non-nil: the next entry waits for it to close
	entered chan struct{} // closed when a held entry arrived
	fail    error         // non-nil: every entry fails with it
}

var errLogDisk = errors.New("raft log disk failed")

func (g *gatedRaft) ApplyEntry(buf []byte) (any, error) {
	g.mu.Lock()
	hold, entered := g.hold, g.entered
	g.hold = nil
	g.mu.Unlock()
	if hold != nil {
		close(entered)
		<-hold
	}
	g.mu.Lock()
	err := g.fail
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return g.inner.ApplyEntry(buf)
}

// holdNext makes the next entry wait until release is called.
func (g *gatedRaft) holdNext() (entered <-chan struct{}, release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	hold, in := make(chan struct{}), make(chan struct{})
	g.hold, g.entered = hold, in
	return in, func() { close(hold) }
}

type batchNode struct {
	reg   *api.NodeRegistration
	nc    *ntNodeClient
	alloc *state.Allocation
}

// batchEnv is ntEnv with the gate between the node service and Raft, and
// n nodes holding one allocation each.
func batchEnv(t *testing.T, n int) (*ntEnv, *gatedRaft, []*batchNode) {
	t.Helper()
	ts := servertest.Start(t)
	clock := &ntClock{now: time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)}
	gate := &gatedRaft{inner: ts.Server}
	deps := svc.Deps{State: ts.Server.State, Raft: gate, Now: clock.Now, Logger: hclog.NewNullLogger()}
	s := nodes.New(deps, nodes.Config{HeartbeatTTL: time.Minute})
	hs := httptest.NewServer(ctlhttp.New(ts.Server, hclog.NewNullLogger(), ctlhttp.Services{ACL: aclOf(ts.Server), Nodes: s}))
	t.Cleanup(hs.Close)
	view := *ts
	view.URL = hs.URL
	env := &ntEnv{ts: ts, svc: s, clock: clock, url: hs.URL, srv: &view}
	c := env.client(t, "")
	job := ntJob(t, ts, "batched", nil, nil)
	var out []*batchNode
	for i := range n {
		reg := ntNode(fmt.Sprintf("batch-%d", i))
		nc := ntRegister(t, c, reg)
		allocs, _ := ntPlace(t, ts, job, reg.ID, reg.Name, 1, clock.Now())
		out = append(out, &batchNode{reg: reg, nc: nc, alloc: allocs[0]})
	}
	return env, gate, out
}

type reportAnswer struct {
	index uint64
	err   error
}

// reportAll sends each node's report on its own allocation concurrently.
func reportAll(nodes []*batchNode, status string) []chan reportAnswer {
	out := make([]chan reportAnswer, len(nodes))
	for i, n := range nodes {
		out[i] = make(chan reportAnswer, 1)
		go func() {
			res, err := n.nc.UpdateAllocations(context.Background(), n.reg.ID,
				[]*api.AllocClientUpdate{{ID: n.alloc.ID, ClientStatus: status}})
			if err != nil {
				out[i] <- reportAnswer{err: err}
				return
			}
			out[i] <- reportAnswer{index: res.Index}
		}()
	}
	return out
}

// waitPending waits until n reports are queued behind the entry in flight.
func waitPending(t *testing.T, s *nodes.Service, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.PendingReports() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d reports queued, want %d", s.PendingReports(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Reports of many nodes that arrive while an entry commits share the next
// Raft entry; every caller gets that entry's index, at which its
// allocation was written; a node's report on another node's allocation is
// refused before it joins the batch.
func TestNodeReportsShareOneEntry(t *testing.T) {
	env, gate, bn := batchEnv(t, 17)
	before := env.ts.Server.State().AllocsIndex()

	entered, release := gate.holdNext()
	first := reportAll(bn[:1], state.AllocClientStatusPending)
	<-entered
	rest := reportAll(bn[1:], state.AllocClientStatusRunning)
	// Node 1 reports node 2's allocation: refused at once, whole.
	_, err := bn[1].nc.UpdateAllocations(context.Background(), bn[1].reg.ID,
		[]*api.AllocClientUpdate{{ID: bn[2].alloc.ID, ClientStatus: state.AllocClientStatusFailed}})
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 403 ||
		apiErr.Message != "Permission denied: allocation "+bn[2].alloc.ID+" is not placed on node "+bn[1].reg.ID+"; the report was refused as a whole" {
		t.Fatalf("a report on another node's allocation: %v", err)
	}
	waitPending(t, env.svc, 16)
	release()

	a := <-first[0]
	if a.err != nil || a.index <= before {
		t.Fatalf("first report: index %d (before %d), %v", a.index, before, a.err)
	}
	indexes := map[uint64]int{}
	for i, ch := range rest {
		r := <-ch
		if r.err != nil {
			t.Fatalf("node %d: %v", i+1, r.err)
		}
		indexes[r.index]++
		got := ntAlloc(t, env.ts, bn[i+1].alloc.ID)
		if got.ModifyIndex != r.index || got.ClientStatus != state.AllocClientStatusRunning {
			t.Errorf("node %d answered index %d; its allocation is %s at %d", i+1, r.index, got.ClientStatus, got.ModifyIndex)
		}
	}
	if len(indexes) != 1 {
		t.Fatalf("16 reports queued together took %d Raft entries (%v), want 1", len(indexes), indexes)
	}
	for idx := range indexes {
		if idx <= a.index {
			t.Errorf("the batch committed at %d, not after the first report's %d", idx, a.index)
		}
		if got := env.ts.Server.State().AllocsIndex(); got != idx {
			t.Errorf("allocations table index %d, want the batch's %d", got, idx)
		}
	}
	if got := ntAlloc(t, env.ts, bn[2].alloc.ID); got.ClientStatus != state.AllocClientStatusRunning {
		t.Errorf("node 2's allocation is %s after node 1's refused report", got.ClientStatus)
	}
}

// An entry that fails answers its error to every caller whose reports it
// carried, and writes none of them.
func TestNodeReportBatchErrorReachesEveryCaller(t *testing.T) {
	env, gate, bn := batchEnv(t, 9)
	before := env.ts.Server.State().AllocsIndex()
	entered, release := gate.holdNext()
	first := reportAll(bn[:1], state.AllocClientStatusRunning)
	<-entered
	rest := reportAll(bn[1:], state.AllocClientStatusRunning)
	waitPending(t, env.svc, 8)
	gate.mu.Lock()
	gate.fail = errLogDisk
	gate.mu.Unlock()
	release()
	for i, ch := range append(first, rest...) {
		r := <-ch
		var apiErr *api.Error
		if !errors.As(r.err, &apiErr) || apiErr.StatusCode != 500 || apiErr.Message != errLogDisk.Error() {
			t.Errorf("node %d: answered index %d, error %v; want 500 %q", i, r.index, r.err, errLogDisk)
		}
		if got := ntAlloc(t, env.ts, bn[i].alloc.ID); got.ClientStatus != state.AllocClientStatusPending || got.ModifyIndex > before {
			t.Errorf("node %d: allocation %s at %d after a failed entry", i, got.ClientStatus, got.ModifyIndex)
		}
	}
	// The queue is empty again: the next report is written.
	gate.mu.Lock()
	gate.fail = nil
	gate.mu.Unlock()
	if r := <-reportAll(bn[3:4], state.AllocClientStatusRunning)[0]; r.err != nil || r.index <= before {
		t.Fatalf("report after the failure: index %d, %v", r.index, r.err)
	}
	if env.svc.PendingReports() != 0 {
		t.Errorf("%d reports still queued", env.svc.PendingReports())
	}
}
