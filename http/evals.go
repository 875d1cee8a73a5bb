package http

import (
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// Nomad's evaluations API: reads only (evaluations are written by job and
// deployment operations, the scheduler and the node heartbeat).
func (h *Handler) registerEvals() {
	h.handle("/v1/evaluations", methods{{http.MethodGet, h.jobsService(h.evalList)}})
	h.handle("/v1/evaluation/{id}", methods{{http.MethodGet, h.jobsService(h.evalRead)}})
	h.handle("/v1/evaluation/{id}/allocations", methods{{http.MethodGet, h.jobsService(h.evalAllocations)}})
}

// evalPrefixRE: a UUID prefix is hex digits and hyphens, an even number of
// digits (as Nomad's UUID index requires).
var evalPrefixRE = regexp.MustCompile(`^[0-9a-fA-F-]*$`)

func checkUUIDPrefix(prefix string) error {
	digits := strings.ReplaceAll(prefix, "-", "")
	if !evalPrefixRE.MatchString(prefix) || len(digits)%2 != 0 {
		return badRequest("Invalid prefix %q: an ID prefix is an even number of hex digits (hyphens ignored)", prefix)
	}
	return nil
}

func (h *Handler) evalList(w http.ResponseWriter, r *http.Request) (any, error) {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	prefix := r.URL.Query().Get("prefix")
	if err := checkUUIDPrefix(prefix); err != nil {
		return nil, err
	}
	id, err := h.jobIdentity(r)
	if err != nil {
		return nil, err
	}
	ns, err := jobNamespace(r, "", id, true)
	if err != nil {
		return nil, err
	}
	visible, err := jobs.ReadJobsIn(id.caller(), ns)
	if err != nil {
		return nil, err
	}
	var out []*evalView
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, all, err := s.Evals(ws, ns)
		out = make([]*evalView, 0, len(all))
		for _, e := range all {
			if visible(e.Namespace) && hasIDPrefix(e.ID, prefix) {
				out = append(out, viewEval(e))
			}
		}
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	return out, nil
}

// hasIDPrefix compares case-insensitively, hyphens included as given.
func hasIDPrefix(id, prefix string) bool {
	return strings.HasPrefix(id, strings.ToLower(prefix))
}

// evalReadNS reads the path's evaluation (404 when there is none) and checks
// read-job in its namespace; more runs in the same blocking query.
func (h *Handler) evalReadNS(w http.ResponseWriter, r *http.Request, more func(ws memdb.WatchSet, s *state.Store, eval *state.Evaluation) (uint64, error)) (*state.Evaluation, error) {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	evalID, err := pathID(r, "evaluation")
	if err != nil {
		return nil, err
	}
	evalID = strings.ToLower(evalID)
	id, err := h.jobIdentity(r)
	if err != nil {
		return nil, err
	}
	caller := id.caller()
	var eval *state.Evaluation
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, e, err := s.Eval(ws, evalID)
		eval = e
		if err == nil && e != nil {
			// Before any wait, and without index headers on a refusal.
			err = jobs.ReadJob(caller, e.Namespace)
		}
		if err != nil || e == nil || more == nil {
			return idx, err
		}
		idx2, err := more(ws, s, e)
		return max(idx, idx2), err
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	if eval == nil {
		return nil, notFound("eval not found")
	}
	return eval, nil
}

func (h *Handler) evalRead(w http.ResponseWriter, r *http.Request) (any, error) {
	eval, err := h.evalReadNS(w, r, nil)
	if err != nil {
		return nil, err
	}
	return viewEval(eval), nil
}

func (h *Handler) evalAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	var out []allocStub
	_, err := h.evalReadNS(w, r, func(ws memdb.WatchSet, s *state.Store, e *state.Evaluation) (uint64, error) {
		idx, allocs, err := s.AllocsByEval(ws, e.ID)
		out = allocStubs(allocs)
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// allocStubs lists allocations as the deployment endpoints show them ([] for none).
func allocStubs(allocs []*state.Allocation) []allocStub {
	out := make([]allocStub, len(allocs))
	for i, a := range allocs {
		out[i] = newAllocStub(a)
	}
	return out
}

// evalView is an evaluation as Nomad's API shows it: WaitUntil is a time
// (the zero time when unset), as the official client decodes it.
type evalView struct {
	ID                string
	Namespace         string
	Priority          int
	Type              string
	TriggeredBy       string
	JobID             string
	JobModifyIndex    uint64
	NodeID            string
	DeploymentID      string
	Status            string
	StatusDescription string
	WaitUntil         time.Time
	NextEval          string
	PreviousEval      string
	BlockedEval       string
	QueuedAllocations map[string]int
	FailedTGAllocs    map[string]*allocMetric
	// ClassEligibility and EscapedComputedClass are Nomad's, on blocked
	// evaluations.
	ClassEligibility     map[string]bool `json:",omitempty"`
	EscapedComputedClass bool
	SnapshotIndex        uint64
	CreateIndex          uint64
	ModifyIndex          uint64
	CreateTime           int64
	ModifyTime           int64
}

func viewEval(e *state.Evaluation) *evalView {
	v := &evalView{
		ID: e.ID, Namespace: e.Namespace, Priority: e.Priority, Type: e.Type, TriggeredBy: e.TriggeredBy,
		JobID: e.JobID, JobModifyIndex: e.JobModifyIndex, NodeID: e.NodeID, DeploymentID: e.DeploymentID,
		Status: e.Status, StatusDescription: e.StatusDescription, NextEval: e.NextEval,
		PreviousEval: e.PreviousEval, BlockedEval: e.BlockedEval, QueuedAllocations: e.QueuedAllocations, SnapshotIndex: e.SnapshotIndex,
		ClassEligibility: e.ClassEligibility, EscapedComputedClass: e.EscapedComputedClass,
		CreateIndex: e.CreateIndex, ModifyIndex: e.ModifyIndex, CreateTime: e.CreateTime, ModifyTime: e.ModifyTime,
	}
	if e.WaitUntil != 0 {
		v.WaitUntil = time.Unix(0, e.WaitUntil).UTC()
	}
	if len(e.FailedTGAllocs) > 0 {
		v.FailedTGAllocs = make(map[string]*allocMetric, len(e.FailedTGAllocs))
		for g, m := range e.FailedTGAllocs {
			v.FailedTGAllocs[g] = viewAllocMetric(m)
		}
	}
	return v
}

// viewEvals lists evaluations as views ([] for none).
func viewEvals(evals []*state.Evaluation) []*evalView {
	out := make([]*evalView, 0, len(evals))
	for _, e := range evals {
		out = append(out, viewEval(e))
	}
	return out
}
