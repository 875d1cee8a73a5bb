package jobs

import (
	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
)

// StopAlloc stops an allocation as Nomad's Alloc.Stop does: it is told to
// stop (migrated) and an alloc-stop evaluation of its job, in one Raft
// entry, makes the scheduler place its replacement. It answers the
// evaluation's ID and the Raft index. The caller needs alloc-lifecycle in
// the allocation's namespace (checked after the lookup: 404, then 403).
func (s *Service) StopAlloc(caller acl.Caller, allocID string) (string, uint64, error) {
	snap := s.deps.State()
	_, a, err := snap.Alloc(memdb.NewWatchSet(), allocID)
	if err != nil {
		return "", 0, err
	}
	if a == nil {
		return "", 0, &state.Error{Code: state.ErrNotFound, Msg: `Unknown allocation "` + allocID + `"`}
	}
	if err := caller.RequireNamespace(a.Namespace, acl.CapAllocLifecycle); err != nil {
		return "", 0, err
	}
	now := s.deps.NowNanos()
	eval := &state.Evaluation{
		ID: uuid.NewString(), Namespace: a.Namespace, Priority: 50, Type: state.JobTypeService,
		TriggeredBy: state.EvalTriggerAllocStop, JobID: a.JobID, Status: state.EvalStatusPending,
		CreateTime: now, ModifyTime: now,
	}
	if _, job, err := snap.Job(memdb.NewWatchSet(), a.Namespace, a.JobID); err != nil {
		return "", 0, err
	} else if job != nil {
		eval.Priority, eval.Type, eval.JobModifyIndex = job.Priority, job.Type, job.ModifyIndex
	}
	res, err := fsm.Apply(s.deps.Raft, fsm.AllocStop, &fsm.AllocStopRequest{AllocID: allocID, Eval: eval, Now: now})
	if err != nil {
		return "", 0, err
	}
	return eval.ID, res.Index, nil
}
