package http

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/state"
	"github.com/ctlplane/ctlplane/state/jobdiff"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

// Nomad's jobs API (/v1/jobs, /v1/job/:id/...) and evaluations API.
func (h *Handler) registerJobs() {
	h.handle("/v1/jobs", methods{
		{http.MethodGet, h.jobsService(h.jobList)},
		{http.MethodPut, h.jobsService(h.jobRegister)},
		{http.MethodPost, h.jobsService(h.jobRegister)},
	})
	h.handle("/v1/job/{job}", methods{
		{http.MethodGet, h.jobsService(h.jobRead)},
		{http.MethodPut, h.jobsService(h.jobRegister)},
		{http.MethodPost, h.jobsService(h.jobRegister)},
		{http.MethodDelete, h.jobsService(h.jobDeregister)},
	})
	h.handle("/v1/job/{job}/versions", methods{{http.MethodGet, h.jobsService(h.jobVersions)}})
	h.handle("/v1/job/{job}/deployments", methods{{http.MethodGet, h.jobsService(h.jobDeployments)}})
	h.handle("/v1/job/{job}/deployment", methods{{http.MethodGet, h.jobsService(h.jobLatestDeployment)}})
	h.handle("/v1/job/{job}/allocations", methods{{http.MethodGet, h.jobsService(h.jobAllocations)}})
	h.handle("/v1/job/{job}/evaluations", methods{{http.MethodGet, h.jobsService(h.jobEvaluations)}})
	h.handle("/v1/job/{job}/stable", methods{
		{http.MethodPut, h.jobsService(h.jobStable)},
		{http.MethodPost, h.jobsService(h.jobStable)},
	})
	h.handle("/v1/job/{job}/revert", methods{
		{http.MethodPut, h.jobsService(h.jobRevert)},
		{http.MethodPost, h.jobsService(h.jobRevert)},
	})
	h.registerEvals()
}

// jobsService answers 501 while no jobs service is wired in.
func (h *Handler) jobsService(fn apiFunc) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		if h.services.Jobs == nil {
			return nil, &apiError{code: http.StatusNotImplemented, msg: "The jobs API is not served by this agent"}
		}
		return fn(w, r)
	}
}

// jobDenied is the answer to any missing capability on a job or evaluation,
// and to an unknown token (design §7).
var jobDenied = &apiError{code: http.StatusForbidden, msg: "Permission denied"}

// jobIdentity resolves the request's token; an unknown one is denied.
func (h *Handler) jobIdentity(r *http.Request) (*identity, error) {
	id, err := h.identify(r)
	if errors.Is(err, errACLNotFound) {
		return nil, jobDenied
	}
	return id, err
}

// jobNamespace picks a Nomad request's namespace: the body's, then Nomad's
// `namespace` query parameter, then the usual resolution.
func jobNamespace(r *http.Request, body string, id *identity, allowAll bool) (string, error) {
	if body == "" {
		body = r.URL.Query().Get("namespace")
	}
	return resolveNamespace(r, body, id, allowAll)
}

// jobQuery reads from one store in namespace ns, keeping its result.
type jobQuery func(ws memdb.WatchSet, s *state.Store, ns string) (uint64, error)

// jobReadNS is the shape of every read of one job's objects: query options,
// identity, namespace, jobs.ReadJob there, a blocking query and its headers.
func (h *Handler) jobReadNS(w http.ResponseWriter, r *http.Request, query jobQuery) error {
	return h.readNS(w, r, jobs.ReadJob, query)
}

// readNS is jobReadNS with the family's read rule.
func (h *Handler) readNS(w http.ResponseWriter, r *http.Request, rule func(acl.Caller, string) error, query jobQuery) error {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return err
	}
	id, err := h.jobIdentity(r)
	if err != nil {
		return err
	}
	ns, err := jobNamespace(r, "", id, false)
	if err != nil {
		return err
	}
	if err := rule(id.caller(), ns); err != nil {
		return err
	}
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		return query(ws, s, ns)
	})
	if err != nil {
		return err
	}
	setMeta(w, r, meta)
	return nil
}

func (h *Handler) jobRead(w http.ResponseWriter, r *http.Request) (any, error) {
	jobID := mux.Vars(r)["job"]
	var job *state.Job
	err := h.jobReadNS(w, r, func(ws memdb.WatchSet, s *state.Store, ns string) (uint64, error) {
		idx, j, err := s.Job(ws, ns, jobID)
		job = j
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	if job == nil {
		return nil, notFound("job not found")
	}
	return job, nil
}

// jobListStub is a list entry, as Nomad's JobListStub.
type jobListStub struct {
	ID                string
	ParentID          string
	Name              string
	Namespace         string
	Datacenters       []string
	NodePool          string
	Type              string
	Priority          int
	Periodic          bool
	ParameterizedJob  bool
	Stop              bool
	Status            string
	StatusDescription string
	JobSummary        *state.JobSummary
	Version           uint64
	CreateIndex       uint64
	ModifyIndex       uint64
	JobModifyIndex    uint64
	SubmitTime        int64
	Meta              map[string]string `json:",omitempty"`
}

func (h *Handler) jobList(w http.ResponseWriter, r *http.Request) (any, error) {
	opts, err := parseQueryOptions(r)
	if err != nil {
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
	visible, err := jobs.ListJobs(id.caller(), ns)
	if err != nil {
		return nil, err
	}
	withMeta, err := queryBool(r.URL.Query().Get("meta"), "meta")
	if err != nil {
		return nil, err
	}
	prefix := r.URL.Query().Get("prefix")
	var out []*jobListStub
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, all, err := s.Jobs(ws, ns, prefix)
		if err != nil {
			return 0, err
		}
		sumIdx, sums, err := s.JobSummaries(ws, all)
		if err != nil {
			return 0, err
		}
		idx = max(idx, sumIdx)
		out = make([]*jobListStub, 0, len(all))
		for _, j := range all {
			// With "*", only the namespaces the token may list.
			if !visible(j.Namespace) {
				continue
			}
			stub := &jobListStub{
				ID: j.ID, Name: j.Name, Namespace: j.Namespace, Datacenters: j.Datacenters, NodePool: jobPool(j), Type: j.Type,
				Priority: j.Priority, Stop: j.Stop, Status: j.Status, StatusDescription: j.StatusDescription,
				Version: j.Version, CreateIndex: j.CreateIndex, ModifyIndex: j.ModifyIndex,
				JobModifyIndex: j.JobModifyIndex, SubmitTime: j.SubmitTime,
				JobSummary: sums[[2]string{j.Namespace, j.ID}],
			}
			if withMeta {
				stub.Meta = j.Meta
			}
			out = append(out, stub)
		}
		return idx, nil
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	return out, nil
}

// jobRegisterRequest is Nomad's JobRegisterRequest. Job stays raw: the jobs
// service parses it with Nomad's rules.
type jobRegisterRequest struct {
	Job               json.RawMessage
	Submission        json.RawMessage // the submitted source: accepted, not kept
	EnforceIndex      bool
	JobModifyIndex    uint64
	PolicyOverride    bool // Sentinel policies do not exist here: nothing to override
	PreserveCounts    bool
	PreserveResources bool
	EvalPriority      int
	writeRequestFields
}

// jobWriteResponse is Nomad's JobRegisterResponse / JobDeregisterResponse.
type jobWriteResponse struct {
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	Warnings        string
	Index           uint64
}

func (h *Handler) jobRegister(w http.ResponseWriter, r *http.Request) (any, error) {
	var req jobRegisterRequest
	if err := decodeBody(r, "Job", &req); err != nil {
		return nil, err
	}
	if t := strings.TrimSpace(string(req.Job)); t == "" || t == "null" {
		return nil, badRequest("Job must be specified")
	}
	if req.PreserveResources {
		return nil, badRequest("PreserveResources is not supported")
	}
	// Nomad's order: the path ID and permission first (the service checks
	// submit-job before it parses), then validation.
	var head struct{ ID *string }
	_ = json.Unmarshal(req.Job, &head) // a malformed job is reported by Parse
	if pathID, ok := mux.Vars(r)["job"]; ok && head.ID != nil && *head.ID != "" && *head.ID != pathID {
		return nil, badRequest("Job ID does not match name")
	}
	caller, sub, err := h.submission(r, req.Job, req.Namespace)
	if err != nil {
		return nil, err
	}
	sub.PathID = mux.Vars(r)["job"]
	res, err := h.services.Jobs.Submit(caller, sub, state.JobRegisterOptions{
		EnforceIndex: req.EnforceIndex, JobModifyIndex: req.JobModifyIndex,
		PreserveCounts: req.PreserveCounts, EvalPriority: req.EvalPriority,
	})
	if err != nil {
		return nil, err
	}
	setWriteIndex(w, r, res.Index)
	return &jobWriteResponse{EvalID: res.EvalID, EvalCreateIndex: res.EvalCreateIndex, JobModifyIndex: res.JobModifyIndex, Index: res.Index}, nil
}

// submission resolves the caller and the namespace of a job a request
// submits (the query's, else the body's, else the usual resolution); the
// jobs service checks submit-job where the job would land.
func (h *Handler) submission(r *http.Request, raw json.RawMessage, bodyNS string) (acl.Caller, jobs.Submission, error) {
	id, err := h.jobIdentity(r)
	if err != nil {
		return acl.Caller{}, jobs.Submission{}, err
	}
	ns := r.URL.Query().Get("namespace")
	if ns == "" {
		ns = bodyNS
	}
	if ns, err = resolveNamespace(r, ns, id, false); err != nil {
		return acl.Caller{}, jobs.Submission{}, err
	}
	return id.caller(), jobs.Submission{Spec: raw, Namespace: ns}, nil
}

// jobWriteTarget resolves the caller and namespace of a write on the path's
// job (the jobs service checks submit-job there); body is the namespace a
// body named ("" for none).
func (h *Handler) jobWriteTarget(r *http.Request, body string) (caller acl.Caller, ns, jobID string, err error) {
	id, err := h.jobIdentity(r)
	if err != nil {
		return caller, "", "", err
	}
	if q := r.URL.Query().Get("namespace"); q != "" {
		body = q
	}
	if ns, err = resolveNamespace(r, body, id, false); err != nil {
		return caller, "", "", err
	}
	return id.caller(), ns, mux.Vars(r)["job"], nil
}

func (h *Handler) jobDeregister(w http.ResponseWriter, r *http.Request) (any, error) {
	q := r.URL.Query()
	purge, err := queryBool(q.Get("purge"), "purge")
	if err != nil {
		return nil, err
	}
	if _, err := queryBool(q.Get("global"), "global"); err != nil {
		return nil, err
	}
	if _, err := queryBool(q.Get("no_shutdown_delay"), "no_shutdown_delay"); err != nil {
		return nil, err
	}
	evalPriority := 0
	if v := q.Get("eval_priority"); v != "" {
		if evalPriority, err = strconv.Atoi(v); err != nil {
			return nil, badRequest("Failed to parse value of %q (%v) as an integer", "eval_priority", v)
		}
	}
	caller, ns, jobID, err := h.jobWriteTarget(r, "")
	if err != nil {
		return nil, err
	}
	res, err := h.services.Jobs.Deregister(caller, ns, jobID, purge, evalPriority)
	if err != nil {
		return nil, err
	}
	setWriteIndex(w, r, res.Index)
	return &struct {
		EvalID          string
		EvalCreateIndex uint64
		JobModifyIndex  uint64
		Index           uint64
	}{res.EvalID, res.EvalCreateIndex, res.JobModifyIndex, res.Index}, nil
}

// queryBool parses an optional boolean query parameter (Nomad's wording).
func queryBool(v, name string) (bool, error) {
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest("Failed to parse value of %q (%v) as a bool: %v", name, v, err)
	}
	return b, nil
}

// jobBodyID checks a body's JobID against the path: empty or equal.
func jobBodyID(r *http.Request, bodyID string) error {
	if bodyID != "" && bodyID != mux.Vars(r)["job"] {
		return badRequest("Job ID does not match")
	}
	return nil
}

func (h *Handler) jobStable(w http.ResponseWriter, r *http.Request) (any, error) {
	var req struct {
		JobID      string
		JobVersion uint64
		Stable     bool
		writeRequestFields
	}
	if err := decodeBody(r, "JobStabilityRequest", &req); err != nil {
		return nil, err
	}
	if err := jobBodyID(r, req.JobID); err != nil {
		return nil, err
	}
	caller, ns, jobID, err := h.jobWriteTarget(r, req.Namespace)
	if err != nil {
		return nil, err
	}
	res, err := h.services.Jobs.SetStable(caller, ns, jobID, req.JobVersion, req.Stable)
	if err != nil {
		return nil, err
	}
	setWriteIndex(w, r, res.Index)
	return &struct {
		JobModifyIndex uint64
		Index          uint64
	}{res.JobModifyIndex, res.Index}, nil
}

func (h *Handler) jobRevert(w http.ResponseWriter, r *http.Request) (any, error) {
	var req struct {
		JobID               string
		JobVersion          uint64
		EnforcePriorVersion *uint64
		ConsulToken         string
		VaultToken          string
		writeRequestFields
	}
	if err := decodeBody(r, "JobRevertRequest", &req); err != nil {
		return nil, err
	}
	if err := jobBodyID(r, req.JobID); err != nil {
		return nil, err
	}
	if req.ConsulToken != "" || req.VaultToken != "" {
		return nil, badRequest("ConsulToken and VaultToken are not supported")
	}
	caller, ns, jobID, err := h.jobWriteTarget(r, req.Namespace)
	if err != nil {
		return nil, err
	}
	res, err := h.services.Jobs.Revert(caller, ns, jobID, req.JobVersion, req.EnforcePriorVersion)
	if err != nil {
		return nil, err
	}
	setWriteIndex(w, r, res.Index)
	return &jobWriteResponse{EvalID: res.EvalID, EvalCreateIndex: res.EvalCreateIndex, JobModifyIndex: res.JobModifyIndex, Index: res.Index}, nil
}

func (h *Handler) jobVersions(w http.ResponseWriter, r *http.Request) (any, error) {
	withDiffs, err := queryBool(r.URL.Query().Get("diffs"), "diffs")
	if err != nil {
		return nil, err
	}
	jobID := mux.Vars(r)["job"]
	var versions []*state.Job
	err = h.jobReadNS(w, r, func(ws memdb.WatchSet, s *state.Store, ns string) (uint64, error) {
		idx, v, err := s.JobVersions(ws, ns, jobID)
		versions = v
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	if len(versions) == 0 {
		return nil, notFound("job versions not found")
	}
	diffs, err := versionDiffs(versions, withDiffs)
	if err != nil {
		return nil, err
	}
	return &struct {
		Versions []*state.Job
		Diffs    []*jobdiff.JobDiff
	}{versions, diffs}, nil
}

func (h *Handler) jobDeployments(w http.ResponseWriter, r *http.Request) (any, error) {
	jobID := mux.Vars(r)["job"]
	var out []*state.Deployment
	err := h.jobReadNS(w, r, func(ws memdb.WatchSet, s *state.Store, ns string) (uint64, error) {
		idx, d, err := s.DeploymentsByJob(ws, ns, jobID)
		out = d
		return idx, err
	})
	if out == nil {
		out = []*state.Deployment{}
	}
	return out, err
}

func (h *Handler) jobLatestDeployment(w http.ResponseWriter, r *http.Request) (any, error) {
	jobID := mux.Vars(r)["job"]
	var out *state.Deployment
	err := h.jobReadNS(w, r, func(ws memdb.WatchSet, s *state.Store, ns string) (uint64, error) {
		idx, d, err := s.LatestDeploymentByJob(ws, ns, jobID)
		out = d
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	// null when the job has none (Nomad's answer).
	return out, nil
}

func (h *Handler) jobAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	if _, err := queryBool(r.URL.Query().Get("all"), "all"); err != nil {
		return nil, err
	}
	jobID := mux.Vars(r)["job"]
	var out []allocStub
	err := h.jobReadNS(w, r, func(ws memdb.WatchSet, s *state.Store, ns string) (uint64, error) {
		idx, allocs, err := s.AllocsByJob(ws, ns, jobID)
		out = allocStubs(allocs)
		return idx, err
	})
	return out, err
}

func (h *Handler) jobEvaluations(w http.ResponseWriter, r *http.Request) (any, error) {
	jobID := mux.Vars(r)["job"]
	var out []*evalView
	err := h.jobReadNS(w, r, func(ws memdb.WatchSet, s *state.Store, ns string) (uint64, error) {
		idx, evals, err := s.EvalsByJob(ws, ns, jobID)
		out = viewEvals(evals)
		return idx, err
	})
	return out, err
}
