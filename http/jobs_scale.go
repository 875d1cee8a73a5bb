package http

import (
	"net/http"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

// JobScaleService is what the scale endpoint calls, beside JobService.
type JobScaleService interface {
	Scale(caller acl.Caller, req *jobs.ScaleRequest) (*state.JobWriteResult, error)
}

func (h *Handler) registerJobScale() {
	h.handle("/v1/job/{job}/scale", methods{
		{http.MethodGet, h.jobsService(h.jobScaleStatus)},
		{http.MethodPut, h.jobsService(h.jobScale)},
		{http.MethodPost, h.jobsService(h.jobScale)},
	})
}

// scalingRequest is Nomad's ScalingRequest.
type scalingRequest struct {
	Count          *int64
	Target         map[string]string
	Message        string
	Error          bool
	Meta           map[string]any
	PolicyOverride bool // Sentinel policies do not exist here: nothing to override
	JobModifyIndex uint64
	writeRequestFields
}

// jobScale is PUT|POST /v1/job/:id/scale: scale-job or submit-job in the
// job's namespace (Nomad's rule).
func (h *Handler) jobScale(w http.ResponseWriter, r *http.Request) (any, error) {
	scaler, ok := h.services.Jobs.(JobScaleService)
	if !ok {
		return nil, &apiError{code: http.StatusNotImplemented, msg: "Job scaling is not served by this agent"}
	}
	var req scalingRequest
	if err := decodeBody(r, "ScalingRequest", &req); err != nil {
		return nil, err
	}
	jobID := mux.Vars(r)["job"]
	if t := req.Target["Job"]; t != "" && t != jobID {
		return nil, badRequest("job ID in payload did not match URL")
	}
	id, err := h.jobIdentity(r)
	if err != nil {
		return nil, err
	}
	ns, err := jobNamespace(r, req.Namespace, id, false)
	if err != nil {
		return nil, err
	}
	res, err := scaler.Scale(id.caller(), &jobs.ScaleRequest{
		Namespace: ns, JobID: jobID, Group: req.Target["Group"], Count: req.Count,
		Message: req.Message, Error: req.Error, Meta: req.Meta, JobModifyIndex: req.JobModifyIndex,
	})
	if err != nil {
		return nil, err
	}
	setWriteIndex(w, r, res.Index)
	return &jobWriteResponse{EvalID: res.EvalID, EvalCreateIndex: res.EvalCreateIndex, JobModifyIndex: res.JobModifyIndex, Index: res.Index}, nil
}

// jobScaleStatus is Nomad's JobScaleStatus.
type jobScaleStatus struct {
	JobID          string
	Namespace      string
	JobCreateIndex uint64
	JobModifyIndex uint64
	JobStopped     bool
	TaskGroups     map[string]*taskGroupScaleStatus
}

type taskGroupScaleStatus struct {
	Desired   int
	Placed    int
	Running   int
	Healthy   int
	Unhealthy int
	Events    []*state.ScalingEvent
}

// jobScaleStatus is GET /v1/job/:id/scale: read-job-scaling or read-job.
// Placed counts the live allocations that are not canaries, as Nomad
// counts them.
func (h *Handler) jobScaleStatus(w http.ResponseWriter, r *http.Request) (any, error) {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	id, err := h.jobIdentity(r)
	if err != nil {
		return nil, err
	}
	ns, err := jobNamespace(r, "", id, false)
	if err != nil {
		return nil, err
	}
	if err := jobs.ReadJobScaling(id.caller(), ns); err != nil {
		return nil, err
	}
	jobID := mux.Vars(r)["job"]
	var out *jobScaleStatus
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		out = nil
		idx, job, err := s.Job(ws, ns, jobID)
		if err != nil || job == nil {
			return idx, err
		}
		aIdx, allocs, err := s.AllocsByJob(ws, ns, jobID)
		if err != nil {
			return 0, err
		}
		eIdx, events, err := s.ScalingEventsByJob(ws, ns, jobID)
		if err != nil {
			return 0, err
		}
		out = scaleStatus(job, allocs, events)
		return max(idx, aIdx, eIdx), nil
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	if out == nil {
		return nil, notFound("job not found")
	}
	return out, nil
}

func scaleStatus(job *state.Job, allocs []*state.Allocation, events map[string][]*state.ScalingEvent) *jobScaleStatus {
	out := &jobScaleStatus{JobID: job.ID, Namespace: job.Namespace, JobCreateIndex: job.CreateIndex,
		JobModifyIndex: job.ModifyIndex, JobStopped: job.Stop, TaskGroups: map[string]*taskGroupScaleStatus{}}
	for _, tg := range job.TaskGroups {
		ev := events[tg.Name]
		if ev == nil {
			ev = []*state.ScalingEvent{}
		}
		out.TaskGroups[tg.Name] = &taskGroupScaleStatus{Desired: tg.Count, Events: ev}
	}
	for _, a := range allocs {
		st := out.TaskGroups[a.TaskGroup]
		if st == nil || a.TerminalStatus() || (a.DeploymentStatus != nil && a.DeploymentStatus.Canary) {
			continue
		}
		st.Placed++
		if a.ClientStatus == state.AllocClientStatusRunning {
			st.Running++
		}
		switch {
		case a.DeploymentStatus.IsHealthy():
			st.Healthy++
		case a.DeploymentStatus.IsUnhealthy():
			st.Unhealthy++
		}
	}
	return out
}
