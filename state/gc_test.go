package state

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/go-memdb"
)

// gcCutoff is the cutoff of every kind in these tests; old objects were
// last changed just before it, new ones just after.
const (
	gcCutoff = int64(1_000_000_000_000)
	old      = gcCutoff - 1
	fresh    = gcCutoff + 1
)

var gcParams = GCParams{gcCutoff, gcCutoff, gcCutoff, gcCutoff}

// gcWorld builds a state row by row (names stand for IDs), each write at
// the next index.
type gcWorld struct {
	t   *testing.T
	s   *Store
	idx uint64
	ids map[string]string
}

func newGCWorld(t *testing.T) *gcWorld {
	return &gcWorld{t: t, s: NewStore(), idx: 10, ids: map[string]string{}}
}

func (w *gcWorld) id(name string) string {
	if name == "" {
		return ""
	}
	if id, ok := w.ids[name]; ok {
		return id
	}
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", len(w.ids)+1)
	w.ids[name] = id
	return id
}

func (w *gcWorld) name(id string) string {
	for n, i := range w.ids {
		if i == id {
			return n
		}
	}
	return id
}

// put inserts rows at the next index, as the writes of the state do.
func (w *gcWorld) put(table string, rows ...any) uint64 {
	w.t.Helper()
	w.idx++
	txn := w.s.db.Txn(true)
	defer txn.Abort()
	for _, r := range rows {
		if err := txn.Insert(table, r); err != nil {
			w.t.Fatal(err)
		}
	}
	if err := setIndex(txn, table, w.idx); err != nil {
		w.t.Fatal(err)
	}
	txn.Commit()
	return w.idx
}

// job registers job "web" (or id) as running; stop makes it stopped and dead.
func (w *gcWorld) job(id string, stop bool, submit int64) *Job {
	j := &Job{Namespace: "default", ID: id, Name: id, Type: JobTypeService, Stop: stop, Status: JobStatusRunning, SubmitTime: submit,
		TaskGroups: []*TaskGroup{{Name: "web", Count: 1}}}
	if stop {
		j.Status = JobStatusDead
	}
	w.idx++
	if _, err := w.s.JobRegister(w.idx, j, nil); err != nil {
		w.t.Fatal(err)
	}
	_, stored, _ := w.s.Job(nil, "default", id)
	// Status is what the allocations made it; keep the one asked for.
	c := stored.Copy()
	c.Status = j.Status
	w.put(jobsTable, c)
	return c
}

func (w *gcWorld) eval(name, job, status string, mtime int64) {
	w.put(evalsTable, &Evaluation{ID: w.id(name), Namespace: "default", JobID: job, Status: status, CreateIndex: w.idx + 1, ModifyIndex: w.idx + 1, ModifyTime: mtime})
}

type allocOpt func(*Allocation)

func next(name string) allocOpt         { return func(a *Allocation) { a.NextAllocation = name } }
func ofDeployment(name string) allocOpt { return func(a *Allocation) { a.DeploymentID = name } }
func onNode(name string) allocOpt       { return func(a *Allocation) { a.NodeID = name } }

func (w *gcWorld) alloc(name, eval, job, desired, client string, mtime int64, opts ...allocOpt) {
	a := &Allocation{ID: w.id(name), Namespace: "default", EvalID: w.id(eval), JobID: job, TaskGroup: "web", NodeID: "node",
		DesiredStatus: desired, ClientStatus: client, CreateIndex: w.idx + 1, ModifyIndex: w.idx + 1, ModifyTime: mtime}
	for _, o := range opts {
		o(a)
	}
	a.NextAllocation, a.DeploymentID, a.NodeID = w.id(a.NextAllocation), w.id(a.DeploymentID), w.id(a.NodeID)
	w.put(allocsTable, a)
}

// deployment creates a deployment of job version with one history record.
func (w *gcWorld) deployment(name, job string, version uint64, status string, mtime int64) {
	_, j, _ := w.s.Job(nil, "default", job)
	var jci uint64
	if j != nil {
		jci = j.CreateIndex
	}
	d := &Deployment{ID: w.id(name), Namespace: "default", JobID: job, JobVersion: version, JobCreateIndex: jci, Status: status,
		TaskGroups: map[string]*DeploymentState{}, CreateIndex: w.idx + 1, ModifyIndex: w.idx + 1, ModifyTime: mtime}
	w.put(deploymentsTable, d)
	w.put(deploymentHistoryTable, &DeploymentEvent{DeploymentID: d.ID, Index: w.idx, NewStatus: status})
}

func (w *gcWorld) node(name, status string, since int64) {
	w.put(nodesTable, &Node{ID: w.id(name), Name: name, Status: status, StatusUpdatedAt: since})
}

// names lists a request's objects by name, sorted: "eval:e1", "job:web" ...
func (w *gcWorld) names(r *GCRequest) string {
	var out []string
	for _, id := range r.EvalIDs {
		out = append(out, "eval:"+w.name(id))
	}
	for _, id := range r.AllocIDs {
		out = append(out, "alloc:"+w.name(id))
	}
	for _, id := range r.DeploymentIDs {
		out = append(out, "deployment:"+w.name(id))
	}
	for _, j := range r.Jobs {
		out = append(out, "job:"+j.ID)
	}
	for _, id := range r.NodeIDs {
		out = append(out, "node:"+w.name(id))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// remaining lists every object left, by name, sorted.
func (w *gcWorld) remaining() string {
	var out []string
	for _, table := range []string{evalsTable, allocsTable, deploymentsTable, jobsTable, jobVersionsTable, nodesTable, deploymentHistoryTable} {
		snap := w.s.Snapshot()
		rows, err := snap.Rows(table)
		snap.Close()
		if err != nil {
			w.t.Fatal(err)
		}
		for _, r := range rows {
			switch r := r.(type) {
			case *Evaluation:
				out = append(out, "eval:"+w.name(r.ID))
			case *Allocation:
				out = append(out, "alloc:"+w.name(r.ID))
			case *Deployment:
				out = append(out, "deployment:"+w.name(r.ID))
			case *Job:
				if table == jobsTable {
					out = append(out, "job:"+r.ID)
				} else {
					out = append(out, fmt.Sprintf("version:%s/%d", r.ID, r.Version))
				}
			case *Node:
				out = append(out, "node:"+r.Name)
			case *DeploymentEvent:
				out = append(out, "history:"+w.name(r.DeploymentID))
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// The eligibility rules, one situation each: what a collection at the
// cutoff chooses, and what is left once it is applied.
func TestGCRules(t *testing.T) {
	const (
		run, stop            = AllocDesiredStatusRun, AllocDesiredStatusStop
		running, pending     = AllocClientStatusRunning, AllocClientStatusPending
		complete, failed     = AllocClientStatusComplete, AllocClientStatusFailed
		lost                 = AllocClientStatusLost
		evalDone, evalQueued = EvalStatusComplete, EvalStatusPending
	)
	cases := []struct {
		name  string
		build func(w *gcWorld)
		want  string // chosen
		left  string // what remains after the apply
	}{
		{"an old terminal evaluation goes with its finished allocations", func(w *gcWorld) {
			w.job("web", false, old)
			w.eval("e1", "web", evalDone, old)
			w.alloc("a1", "e1", "web", stop, complete, old)
			w.alloc("a2", "e1", "web", run, complete, old)
		}, "alloc:a1 alloc:a2 eval:e1", "job:web version:web/0"},
		{"failed and canceled evaluations go too", func(w *gcWorld) {
			w.job("web", false, old)
			w.eval("e1", "web", EvalStatusFailed, old)
			w.eval("e2", "web", EvalStatusCanceled, old)
		}, "eval:e1 eval:e2", "job:web version:web/0"},
		{"a recent evaluation and its allocations stay", func(w *gcWorld) {
			w.job("web", false, old)
			w.eval("e1", "web", evalDone, fresh)
			w.alloc("a1", "e1", "web", stop, complete, old)
		}, "", "alloc:a1 eval:e1 job:web version:web/0"},
		{"pending and blocked evaluations stay", func(w *gcWorld) {
			w.job("web", false, old)
			w.eval("e1", "web", evalQueued, old)
			w.eval("e2", "web", EvalStatusBlocked, old)
		}, "", "eval:e1 eval:e2 job:web version:web/0"},
		{"an evaluation stays while one allocation is recent; the old finished one goes", func(w *gcWorld) {
			w.job("web", false, old)
			w.eval("e1", "web", evalDone, old)
			w.alloc("a1", "e1", "web", stop, complete, old)
			w.alloc("a2", "e1", "web", stop, complete, fresh)
		}, "alloc:a1", "alloc:a2 eval:e1 job:web version:web/0"},
		{"live allocations stay, and so does their evaluation", func(w *gcWorld) {
			w.job("web", false, old)
			w.eval("e1", "web", evalDone, old)
			w.alloc("a1", "e1", "web", run, running, old)
			w.alloc("a2", "e1", "web", run, pending, old)
		}, "", "alloc:a1 alloc:a2 eval:e1 job:web version:web/0"},
		{"an allocation told to stop that its client still runs stays", func(w *gcWorld) {
			w.job("web", false, old)
			w.eval("e1", "web", evalDone, old)
			w.alloc("a1", "e1", "web", stop, running, old)
			w.alloc("a2", "e1", "web", stop, pending, old)
		}, "", "alloc:a1 alloc:a2 eval:e1 job:web version:web/0"},
		{"a failed allocation still meant to run awaits its replacement", func(w *gcWorld) {
			w.job("web", false, old)
			w.eval("e1", "web", evalDone, old)
			w.alloc("a1", "e1", "web", run, failed, old)
		}, "", "alloc:a1 eval:e1 job:web version:web/0"},
		{"a lost allocation nothing replaced yet stays while an evaluation of its job is queued", func(w *gcWorld) {
			w.job("web", false, old)
			w.eval("e1", "web", evalDone, old)
			w.eval("e2", "web", EvalStatusBlocked, old)
			w.alloc("a1", "e1", "web", stop, lost, old)
		}, "", "alloc:a1 eval:e1 eval:e2 job:web version:web/0"},
		{"a lost allocation with no evaluation queued goes", func(w *gcWorld) {
			w.job("web", false, old)
			w.eval("e1", "web", evalDone, old)
			w.alloc("a1", "e1", "web", stop, lost, old)
		}, "alloc:a1 eval:e1", "job:web version:web/0"},
		{"a failed allocation that was replaced goes, even while its replacement runs", func(w *gcWorld) {
			w.job("web", false, old)
			w.eval("e1", "web", evalDone, old)
			w.eval("e2", "web", evalDone, fresh)
			w.eval("e3", "web", EvalStatusBlocked, fresh)
			w.alloc("a1", "e1", "web", run, failed, old, next("a2"))
			w.alloc("a2", "e2", "web", run, running, fresh)
			w.alloc("b1", "e1", "web", stop, lost, old, next("b2"))
			w.alloc("b2", "e2", "web", stop, complete, fresh)
		}, "alloc:a1 alloc:b1 eval:e1", "alloc:a2 alloc:b2 eval:e2 eval:e3 job:web version:web/0"},
		{"allocations of an active deployment stay, and the job's evaluations with them", func(w *gcWorld) {
			w.job("web", false, old)
			w.deployment("d1", "web", 0, DeploymentStatusRunning, old)
			w.eval("e1", "web", evalDone, old)
			w.alloc("a1", "e1", "web", stop, complete, old, ofDeployment("d1"))
			w.alloc("a2", "e1", "web", stop, complete, old)
		}, "alloc:a2", "alloc:a1 deployment:d1 eval:e1 history:d1 job:web version:web/0"},
		{"a stopped job's failed allocations go (nothing will replace them)", func(w *gcWorld) {
			w.job("web", true, fresh)
			w.eval("e1", "web", evalDone, old)
			w.alloc("a1", "e1", "web", run, failed, old)
		}, "alloc:a1 eval:e1", "job:web version:web/0"},
		{"allocations of an earlier job under the same ID go", func(w *gcWorld) {
			w.eval("e1", "web", evalDone, old)
			w.alloc("a1", "e1", "web", run, failed, old)
			w.job("web", false, old)
		}, "alloc:a1 eval:e1", "job:web version:web/0"},

		{"an old finished deployment that is not its job's latest goes with its history", func(w *gcWorld) {
			w.job("web", false, old)
			w.deployment("d1", "web", 7, DeploymentStatusSuccessful, old)
			w.deployment("d2", "web", 8, DeploymentStatusFailed, old)
		}, "deployment:d1", "deployment:d2 history:d2 job:web version:web/0"},
		{"the deployment of the job's current version stays, even when not the latest", func(w *gcWorld) {
			w.job("web", false, old)
			w.deployment("d0", "web", 0, DeploymentStatusFailed, old)
			w.deployment("d1", "web", 7, DeploymentStatusCancelled, old)
		}, "", "deployment:d0 deployment:d1 history:d0 history:d1 job:web version:web/0"},
		{"active, recent, and still-used deployments stay", func(w *gcWorld) {
			w.job("web", false, old)
			w.deployment("d1", "web", 5, DeploymentStatusPaused, old)
			w.deployment("d2", "web", 6, DeploymentStatusSuccessful, fresh)
			w.deployment("d3", "web", 7, DeploymentStatusSuccessful, old)
			w.deployment("d4", "web", 8, DeploymentStatusSuccessful, old)
			w.eval("e1", "web", evalQueued, old)
			w.alloc("a1", "e1", "web", stop, running, old, ofDeployment("d3"))
		}, "", "alloc:a1 deployment:d1 deployment:d2 deployment:d3 deployment:d4 eval:e1 history:d1 history:d2 history:d3 history:d4 job:web version:web/0"},
		{"a deployment referenced only by finished allocations goes", func(w *gcWorld) {
			w.job("web", false, old)
			w.deployment("d1", "web", 5, DeploymentStatusSuccessful, old)
			w.deployment("d2", "web", 6, DeploymentStatusSuccessful, old)
			w.eval("e1", "web", evalQueued, old)
			w.alloc("a1", "e1", "web", stop, complete, old, ofDeployment("d1"))
		}, "deployment:d1", "alloc:a1 deployment:d2 eval:e1 history:d2 job:web version:web/0"},
		{"the latest deployment of a job that is gone goes too", func(w *gcWorld) {
			w.deployment("d1", "gone", 0, DeploymentStatusCancelled, old)
		}, "deployment:d1", ""},

		{"a job stopped long ago goes with its versions, evaluations, allocations, deployments and history", func(w *gcWorld) {
			w.job("web", false, old)
			w.deployment("d1", "web", 0, DeploymentStatusSuccessful, old)
			w.job("web", true, old)
			w.deployment("d2", "web", 1, DeploymentStatusCancelled, old)
			w.eval("e1", "web", evalDone, old)
			w.alloc("a1", "e1", "web", stop, complete, old, ofDeployment("d1"))
			w.alloc("a2", "e1", "web", run, failed, old, ofDeployment("d1"))
			w.job("other", false, old)
		}, "job:web", "job:other version:other/0"},
		{"a stopped job stays while its client still runs an allocation", func(w *gcWorld) {
			w.job("web", true, old)
			w.eval("e1", "web", evalDone, old)
			w.alloc("a1", "e1", "web", stop, running, old)
		}, "", "alloc:a1 eval:e1 job:web version:web/0"},
		{"a stopped job stays while an evaluation is pending or recent", func(w *gcWorld) {
			w.job("web", true, old)
			w.eval("e1", "web", evalQueued, old)
			w.job("api", true, old)
			w.eval("e2", "api", evalDone, fresh)
		}, "", "eval:e1 eval:e2 job:api job:web version:api/0 version:web/0"},
		{"a job stopped recently stays; its old finished evaluation goes", func(w *gcWorld) {
			w.job("web", true, fresh)
			w.eval("e1", "web", evalDone, old)
		}, "eval:e1", "job:web version:web/0"},
		{"a dead job that is not stopped stays", func(w *gcWorld) {
			j := w.job("web", false, old)
			c := j.Copy()
			c.Status = JobStatusDead
			w.put(jobsTable, c)
		}, "", "job:web version:web/0"},

		{"a node down long ago with only finished allocations goes; the others stay", func(w *gcWorld) {
			w.job("web", false, old)
			w.eval("e1", "web", evalQueued, old)
			w.node("n1", NodeStatusDown, old)
			w.node("n2", NodeStatusDown, fresh)
			w.node("n3", NodeStatusReady, old)
			w.node("n4", NodeStatusDown, old)
			w.alloc("a1", "e1", "web", stop, lost, old, onNode("n1"))
			w.alloc("a2", "e1", "web", stop, running, old, onNode("n4"))
		}, "node:n1", "alloc:a1 alloc:a2 eval:e1 job:web node:n2 node:n3 node:n4 version:web/0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newGCWorld(t)
			tc.build(w)
			req, err := w.s.GCCandidates(gcParams, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := w.names(req); got != tc.want {
				t.Fatalf("chosen:\n got  %q\n want %q", got, tc.want)
			}
			res, err := w.s.GCApply(w.idx+1, req)
			if err != nil {
				t.Fatal(err)
			}
			if got := w.remaining(); got != tc.left {
				t.Fatalf("left:\n got  %q\n want %q (deleted %+v)", got, tc.left, res)
			}
			// Nothing more qualifies.
			again, _ := w.s.GCCandidates(gcParams, 0)
			if again.Size() != 0 {
				t.Fatalf("a second round chose %s", w.names(again))
			}
		})
	}
}

// The write checks each candidate again: an allocation that became live
// after the candidates were chosen is kept, and its evaluation with it.
func TestGCApplyRechecks(t *testing.T) {
	w := newGCWorld(t)
	w.job("web", false, old)
	w.eval("e1", "web", EvalStatusComplete, old)
	w.alloc("a1", "e1", "web", AllocDesiredStatusRun, AllocClientStatusComplete, old)
	w.alloc("a2", "e1", "web", AllocDesiredStatusStop, AllocClientStatusComplete, old)
	w.deployment("d1", "web", 3, DeploymentStatusSuccessful, old)
	w.deployment("d2", "web", 4, DeploymentStatusSuccessful, old)
	w.node("n1", NodeStatusDown, old)
	req, err := w.s.GCCandidates(gcParams, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.names(req); got != "alloc:a1 alloc:a2 deployment:d1 eval:e1 node:n1" {
		t.Fatalf("chosen %q", got)
	}
	// Meanwhile: a1's client reports it running again, the node comes
	// back, and d1 is written again (recently).
	w.idx++
	if err := w.s.AllocsClientUpdate(w.idx, "", []*AllocClientUpdate{{ID: w.id("a1"), ClientStatus: AllocClientStatusRunning}}, nil, fresh); err != nil {
		t.Fatal(err)
	}
	w.node("n1", NodeStatusReady, fresh)
	_, d1, _ := w.s.Deployment(nil, w.id("d1"))
	d := d1.Copy()
	d.ModifyTime = fresh
	w.put(deploymentsTable, d)

	res, err := w.s.GCApply(w.idx+1, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Allocs != 1 || res.Evals != 0 || res.Deployments != 0 || res.Nodes != 0 {
		t.Fatalf("deleted %+v, want only a2", res)
	}
	if got := w.remaining(); got != "alloc:a1 deployment:d1 deployment:d2 eval:e1 history:d1 history:d2 job:web node:n1 version:web/0" {
		t.Fatalf("left %q", got)
	}
}

// Every table a collection deletes from gets the write's index, so that
// blocking queries on it wake; tables it does not touch keep theirs.
func TestGCApplySetsIndexes(t *testing.T) {
	w := newGCWorld(t)
	w.job("web", true, old)
	w.deployment("d1", "web", 0, DeploymentStatusCancelled, old)
	w.eval("e1", "web", EvalStatusComplete, old)
	w.alloc("a1", "e1", "web", AllocDesiredStatusStop, AllocClientStatusComplete, old)
	w.node("n1", NodeStatusDown, old)
	ws := memdb.NewWatchSet()
	if _, _, err := w.s.Deployments(ws, AllNamespaces, ""); err != nil {
		t.Fatal(err)
	}
	bindingRules := w.s.TableIndex(bindingRulesTable)
	req, _ := w.s.GCCandidates(gcParams, 0)
	idx := w.idx + 1
	if _, err := w.s.GCApply(idx, req); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{evalsTable, allocsTable, deploymentsTable, deploymentHistoryTable, jobsTable, jobVersionsTable, nodesTable} {
		if got := w.s.TableIndex(table); got != idx {
			t.Errorf("index of %s: %d, want %d", table, got, idx)
		}
	}
	if got := w.s.TableIndex(bindingRulesTable); got != bindingRules {
		t.Errorf("binding rules index moved: %d", got)
	}
	if !fired(ws) {
		t.Error("a blocked deployments list did not wake")
	}
	if w.remaining() != "" {
		t.Errorf("left %q", w.remaining())
	}
}

// Candidates come in batches of about the limit; an evaluation comes with
// all of its allocations, a job with everything of it.
func TestGCCandidatesBatches(t *testing.T) {
	w := newGCWorld(t)
	w.job("web", false, old)
	for i := 0; i < 5; i++ {
		e := fmt.Sprintf("e%d", i)
		w.eval(e, "web", EvalStatusComplete, old)
		w.alloc(e+"a", e, "web", AllocDesiredStatusStop, AllocClientStatusComplete, old)
	}
	rounds := 0
	for {
		req, err := w.s.GCCandidates(gcParams, 3)
		if err != nil {
			t.Fatal(err)
		}
		if req.Size() == 0 {
			break
		}
		if req.Size() != 2 || len(req.EvalIDs) != 1 {
			t.Fatalf("round %d chose %s: want one evaluation with its allocation", rounds, w.names(req))
		}
		w.idx++
		if res, err := w.s.GCApply(w.idx, req); err != nil || res.Total() != 2 {
			t.Fatalf("apply: %+v %v", res, err)
		}
		rounds++
	}
	if rounds != 5 || w.remaining() != "job:web version:web/0" {
		t.Fatalf("%d rounds, left %q", rounds, w.remaining())
	}
}
