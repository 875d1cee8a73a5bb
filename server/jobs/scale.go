package jobs

import (
	"encoding/json"
	"fmt"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// ScaleRequest is Nomad's ScalingRequest, its target resolved to a group.
type ScaleRequest struct {
	Namespace string
	JobID     string
	Group     string
	// Count nil: only an event is recorded (an autoscaler's report).
	Count   *int64
	Message string
	Error   bool
	Meta    map[string]any
	// JobModifyIndex, when not 0, must be the job's.
	JobModifyIndex uint64
}

// checkScalingEvent bounds what the event keeps: its Message and Meta.
func checkScalingEvent(req *ScaleRequest) error {
	if n := len(req.Message); n > MaxScalingMessageBytes {
		return badRequest("scaling event Message is %d bytes: at most %d are allowed", n, MaxScalingMessageBytes)
	}
	if n := len(req.Meta); n > MaxScalingMetaKeys {
		return badRequest("scaling event Meta has %d keys: at most %d are allowed", n, MaxScalingMetaKeys)
	}
	if req.Meta != nil {
		b, err := json.Marshal(req.Meta)
		if err != nil {
			return badRequest("scaling event Meta is not valid JSON: %v", err)
		}
		if len(b) > MaxScalingMetaBytes {
			return badRequest("scaling event Meta is %d bytes of JSON: at most %d are allowed", len(b), MaxScalingMetaBytes)
		}
	}
	return nil
}

func badRequest(format string, args ...any) error {
	return &state.Error{Code: state.ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}

// Scale changes a group's count as Nomad's Job.Scale does: a new job
// version with a job-scaling evaluation, and a scaling event, in one Raft
// entry. Refused while the job's deployment is active (Nomad's rule). The
// caller needs scale-job or submit-job in the namespace.
func (s *Service) Scale(caller acl.Caller, req *ScaleRequest) (*state.JobWriteResult, error) {
	if caller.RequireNamespace(req.Namespace, acl.CapScaleJob) != nil {
		if err := caller.RequireNamespace(req.Namespace, acl.CapSubmitJob); err != nil {
			return nil, err
		}
	}
	if req.Group == "" {
		return nil, badRequest("missing task group name for scaling action")
	}
	if err := checkScalingEvent(req); err != nil {
		return nil, err
	}
	if req.Count != nil {
		if *req.Count < 0 {
			return nil, badRequest("scaling action count can't be negative")
		}
		if req.Error {
			return nil, badRequest("scaling action should not contain count if error is true")
		}
	}
	snap := s.deps.State()
	_, cur, err := snap.Job(memdb.NewWatchSet(), req.Namespace, req.JobID)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, &state.Error{Code: state.ErrNotFound, Msg: fmt.Sprintf("job %q not found", req.JobID)}
	}
	tg := cur.LookupTaskGroup(req.Group)
	if tg == nil {
		return nil, badRequest("task group %q specified for scaling does not exist in job", req.Group)
	}
	if req.JobModifyIndex != 0 && req.JobModifyIndex != cur.JobModifyIndex {
		return nil, badRequest("job %q modified since last scale request (JobModifyIndex %d, want %d)", req.JobID, cur.JobModifyIndex, req.JobModifyIndex)
	}
	now := s.deps.Now()
	event := &state.ScalingEvent{Time: uint64(now.UnixNano()), Count: req.Count, PreviousCount: int64(tg.Count),
		Message: req.Message, Error: req.Error, Meta: req.Meta}
	r := &fsm.JobScaleRequest{Namespace: req.Namespace, JobID: req.JobID, Group: req.Group, Event: event}
	if req.Count != nil {
		_, d, err := snap.LatestDeploymentByJob(memdb.NewWatchSet(), req.Namespace, req.JobID)
		if err != nil {
			return nil, err
		}
		if d != nil && d.Active() && d.JobCreateIndex == cur.CreateIndex {
			return nil, badRequest("job scaling blocked due to active deployment")
		}
		job := cur.Copy()
		groups := make([]*state.TaskGroup, len(job.TaskGroups))
		for i, g := range job.TaskGroups {
			c := *g
			if c.Name == req.Group {
				c.Count = int(*req.Count)
			}
			groups[i] = &c
		}
		job.TaskGroups = groups
		if err := Validate(job); err != nil {
			return nil, err
		}
		if err := s.checkTotalAllocs(job); err != nil {
			return nil, err
		}
		job.Status, job.StatusDescription, job.Stable, job.Version = "", "", false, 0
		job.CreateIndex, job.ModifyIndex, job.JobModifyIndex = 0, 0, 0
		job.SubmitTime = now.UnixNano()
		r.Job = job
		r.Eval = s.newEval(job, state.EvalTriggerScaling, 0, now.UnixNano())
		event.EvalID = &r.Eval.ID
	}
	res, err := fsm.Apply(s.deps.Raft, fsm.JobScale, r)
	if err != nil {
		return nil, err
	}
	out := &state.JobWriteResult{JobModifyIndex: res.JobModifyIndex, Index: res.Index, JobVersion: res.Version}
	if r.Eval != nil {
		out.EvalID, out.EvalCreateIndex = r.Eval.ID, res.Index
	}
	return out, nil
}
