package http

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/scheduler"
	"github.com/ctlplane/ctlplane/state"
	"github.com/ctlplane/ctlplane/state/jobdiff"
	"github.com/gorilla/mux"
)

// JobPlanner is the jobs service's dry run (see server/jobs Plan).
type JobPlanner interface {
	// PlanSubmission says what registering a submitted job would do,
	// committing nothing; with diff, the annotated diff from the current
	// version. It checks submit-job where the job would land.
	PlanSubmission(caller acl.Caller, sub jobs.Submission, diff bool) (*jobs.PlanResult, error)
}

// registerJobPlan serves Nomad's PUT|POST /v1/job/:id/plan.
func (h *Handler) registerJobPlan() {
	h.handle("/v1/job/{job}/plan", methods{
		{http.MethodPut, h.jobsService(h.jobPlan)},
		{http.MethodPost, h.jobsService(h.jobPlan)},
	})
}

// jobPlanRequest is Nomad's JobPlanRequest; Job stays raw for Parse.
type jobPlanRequest struct {
	Job            json.RawMessage
	Diff           bool
	PolicyOverride bool // no Sentinel here: nothing to override
	writeRequestFields
}

// jobPlanResponse is Nomad's JobPlanResponse.
type jobPlanResponse struct {
	Annotations        *planAnnotations
	FailedTGAllocs     map[string]*scheduler.PlacementMetric
	JobModifyIndex     uint64
	CreatedEvals       []*evalView
	Diff               *jobdiff.JobDiff
	NextPeriodicLaunch time.Time
	Warnings           string
	Index              uint64
}

// planAnnotations is Nomad's PlanAnnotations (no preemption here: the
// list is always empty).
type planAnnotations struct {
	DesiredTGUpdates map[string]*state.DesiredUpdates
	PreemptedAllocs  []allocStub
}

func (h *Handler) jobPlan(w http.ResponseWriter, r *http.Request) (any, error) {
	planner, ok := h.services.Jobs.(JobPlanner)
	if !ok {
		return nil, &apiError{code: http.StatusNotImplemented, msg: "Job plans are not served by this agent"}
	}
	var req jobPlanRequest
	if err := decodeBody(r, "JobPlanRequest", &req); err != nil {
		return nil, err
	}
	if t := strings.TrimSpace(string(req.Job)); t == "" || t == "null" {
		return nil, badRequest("Job must be specified")
	}
	var head struct{ ID *string }
	_ = json.Unmarshal(req.Job, &head) // a malformed job is reported by Parse
	if head.ID == nil || *head.ID == "" {
		return nil, badRequest("Job must have a valid ID")
	}
	if *head.ID != mux.Vars(r)["job"] {
		return nil, badRequest("Job ID does not match")
	}
	// Nomad's plan needs submit-job where the job would be registered:
	// the service checks it.
	caller, sub, err := h.submission(r, req.Job, req.Namespace)
	if err != nil {
		return nil, err
	}
	res, err := planner.PlanSubmission(caller, sub, req.Diff)
	if err != nil {
		return nil, err
	}
	// Nomad answers the current job's modify index as the plan's index.
	setWriteIndex(w, r, res.JobModifyIndex)
	var created []*evalView
	if len(res.CreatedEvals) > 0 {
		created = viewEvals(res.CreatedEvals)
	}
	return &jobPlanResponse{
		CreatedEvals:   created,
		Annotations:    &planAnnotations{DesiredTGUpdates: res.Annotations.DesiredTGUpdates},
		FailedTGAllocs: res.FailedTGAllocs,
		JobModifyIndex: res.JobModifyIndex,
		Diff:           res.Diff,
		Index:          res.JobModifyIndex,
	}, nil
}

// versionDiffs are Nomad's version diffs (when asked): for versions newest
// first, the diff from each one's predecessor to it.
func versionDiffs(versions []*state.Job, want bool) ([]*jobdiff.JobDiff, error) {
	if !want {
		return nil, nil
	}
	var out []*jobdiff.JobDiff
	for i := 0; i+1 < len(versions); i++ {
		d, err := jobdiff.Diff(versions[i+1], versions[i], true)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
