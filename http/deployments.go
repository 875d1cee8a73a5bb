package http

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/deployments"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// Deployments: design §6. Reads are blocking queries answered from the
// state; the control operations go to the DeploymentService.

func (h *Handler) registerDeployments() {
	h.handle("/v1/deployments", methods{{http.MethodGet, h.deploymentList}})
	h.handle("/v1/deployment/allocations/{id}", methods{{http.MethodGet, h.deploymentAllocations}})
	h.handle("/v1/deployment/history/{id}", methods{{http.MethodGet, h.deploymentHistory}})
	h.handle("/v1/deployment/fail/{id}", methods{{http.MethodPut, h.deploymentFail}, {http.MethodPost, h.deploymentFail}})
	h.handle("/v1/deployment/pause/{id}", methods{{http.MethodPut, h.deploymentPause}, {http.MethodPost, h.deploymentPause}})
	h.handle("/v1/deployment/promote/{id}", methods{{http.MethodPut, h.deploymentPromote}, {http.MethodPost, h.deploymentPromote}})
	h.handle("/v1/deployment/allocation-health/{id}", methods{{http.MethodPut, h.deploymentAllocHealth}, {http.MethodPost, h.deploymentAllocHealth}})
	h.handle("/v1/deployment/unblock/{id}", methods{{http.MethodPut, h.deploymentUnblock}, {http.MethodPost, h.deploymentUnblock}})
	h.handle("/v1/deployment/{id}", methods{{http.MethodGet, h.deploymentRead}})
}

var errDeploymentDenied = &apiError{code: http.StatusForbidden, msg: "Permission denied"}

// deploymentIdentity resolves the caller; on these endpoints an unknown
// token is `Permission denied` too (design §7).
func (h *Handler) deploymentIdentity(r *http.Request) (*identity, error) {
	id, err := h.identify(r)
	if errors.Is(err, errACLNotFound) {
		return nil, errDeploymentDenied
	}
	return id, err
}

// errDeploymentNotFound is the answer for a well-formed ID that names nothing.
var errDeploymentNotFound = &apiError{code: http.StatusNotFound, msg: "deployment not found"}

func (h *Handler) deploymentRead(w http.ResponseWriter, r *http.Request) (any, error) {
	var d *state.Deployment
	return h.deploymentQuery(w, r, func(ws memdb.WatchSet, s *state.Store, id string) (uint64, *state.Deployment, error) {
		idx, got, err := s.Deployment(ws, id)
		d = got
		return idx, got, err
	}, func() any { return encodeOnce(d) })
}

// allocStub is an allocation as a deployment's allocation list shows it.
type allocStub struct {
	ID                 string
	EvalID             string
	Name               string
	Namespace          string
	NodeID             string
	NodeName           string
	JobID              string
	JobVersion         uint64
	TaskGroup          string
	DesiredStatus      string
	DesiredDescription string
	ClientStatus       string
	ClientDescription  string
	TaskStates         map[string]*state.TaskState
	DeploymentStatus   *allocDeploymentStatus
	FollowupEvalID     string
	NextAllocation     string
	PreviousAllocation string
	RescheduleTracker  *state.RescheduleTracker
	DesiredTransition  state.DesiredTransition
	CreateIndex        uint64
	ModifyIndex        uint64
	CreateTime         int64
	ModifyTime         int64
}

type allocDeploymentStatus struct {
	Healthy     *bool
	Canary      bool
	Timestamp   time.Time
	ModifyIndex uint64
}

func newAllocStub(a *state.Allocation) allocStub {
	s := allocStub{
		ID: a.ID, EvalID: a.EvalID, Name: a.Name, Namespace: a.Namespace, NodeID: a.NodeID, NodeName: a.NodeName,
		JobID: a.JobID, JobVersion: a.JobVersion, TaskGroup: a.TaskGroup,
		DesiredStatus: a.DesiredStatus, DesiredDescription: a.DesiredDescription,
		ClientStatus: a.ClientStatus, ClientDescription: a.ClientDescription, TaskStates: a.TaskStates,
		FollowupEvalID: a.FollowupEvalID, NextAllocation: a.NextAllocation, PreviousAllocation: a.PreviousAllocation,
		RescheduleTracker: a.RescheduleTracker, DesiredTransition: a.DesiredTransition,
		CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex, CreateTime: a.CreateTime, ModifyTime: a.ModifyTime,
	}
	if ds := a.DeploymentStatus; ds != nil {
		s.DeploymentStatus = &allocDeploymentStatus{Healthy: ds.Healthy, Canary: ds.Canary, Timestamp: ds.Timestamp, ModifyIndex: ds.ModifyIndex}
	}
	return s
}

func (h *Handler) deploymentAllocations(w http.ResponseWriter, r *http.Request) (any, error) {
	var out []allocStub
	return h.deploymentQuery(w, r, func(ws memdb.WatchSet, s *state.Store, id string) (uint64, *state.Deployment, error) {
		di, d, err := s.Deployment(ws, id)
		if err != nil || d == nil {
			return di, d, err
		}
		ai, allocs, err := s.AllocsByDeployment(ws, id)
		out = make([]allocStub, len(allocs))
		for i, a := range allocs {
			out[i] = newAllocStub(a)
		}
		return max(di, ai), d, err
	}, func() any { return out })
}

func (h *Handler) deploymentHistory(w http.ResponseWriter, r *http.Request) (any, error) {
	var out []*state.DeploymentEvent
	return h.deploymentQuery(w, r, func(ws memdb.WatchSet, s *state.Store, id string) (uint64, *state.Deployment, error) {
		di, d, err := s.Deployment(ws, id)
		if err != nil || d == nil {
			return di, d, err
		}
		hi, events, err := s.DeploymentHistory(ws, id)
		out = events
		return max(di, hi), d, err
	}, func() any { return out })
}

// deploymentQueryFunc reads what an endpoint shows of one deployment and
// returns the deployment (nil: unknown) with the index of what it read.
type deploymentQueryFunc func(ws memdb.WatchSet, s *state.Store, id string) (uint64, *state.Deployment, error)

// deploymentQuery is the shape of the one-deployment reads: a full UUID in
// the path, a blocking query, the read headers (also on a 404), 404 for an
// unknown deployment and 403 without read-job in its namespace (without
// headers, and before any wait).
func (h *Handler) deploymentQuery(w http.ResponseWriter, r *http.Request, query deploymentQueryFunc, result func() any) (any, error) {
	depID, err := pathID(r, "deployment")
	if err != nil {
		return nil, err
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	ident, err := h.deploymentIdentity(r)
	if err != nil {
		return nil, err
	}
	caller := ident.caller()
	var d *state.Deployment
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, got, err := query(ws, s, depID)
		if err == nil && got != nil {
			// Authorized on every read, before any wait: a caller who may
			// not read the deployment neither waits on it nor learns its
			// index.
			err = deployments.ReadDeployment(caller, got.Namespace)
		}
		d = got
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	if d == nil {
		return nil, errDeploymentNotFound
	}
	return result(), nil
}

// Request bodies of the control operations. Region, Namespace, SecretID,
// AuthToken and IdempotencyToken are what Nomad's Go client puts in every
// write: known, so that strict decoding accepts them, and ignored.
type writeRequestFields struct {
	Region           string
	Namespace        string
	SecretID         string
	AuthToken        string
	IdempotencyToken string
}

type deploymentIDRequest struct {
	DeploymentID string
	writeRequestFields
}

type deploymentPauseRequest struct {
	DeploymentID string
	Pause        bool
	writeRequestFields
}

type deploymentPromoteRequest struct {
	DeploymentID string
	All          bool
	Groups       []string
	PromotedAt   int64
	writeRequestFields
}

type deploymentAllocHealthRequest struct {
	DeploymentID           string
	HealthyAllocationIDs   []string
	UnhealthyAllocationIDs []string
	writeRequestFields
}

// deploymentUpdateResponse is the answer of fail and allocation-health:
// RevertedJobVersion always present (null when nothing was reverted).
type deploymentUpdateResponse struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	RevertedJobVersion    *uint64
	Index                 uint64
}

// deploymentActionResponse is the answer of pause, promote and unblock.
type deploymentActionResponse struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	Index                 uint64
}

// deploymentWrite is the shape of every control operation: a full UUID in
// the path, the body (optional when emptyOK) decoded strictly into body
// with a DeploymentID that must match the path, then the operation, which
// checks the caller itself (501 when this server has no deployment service).
func (h *Handler) deploymentWrite(w http.ResponseWriter, r *http.Request, what string, body any, bodyID *string, emptyOK bool,
	op func(svc DeploymentService, caller acl.Caller, id string) (*state.DeploymentActionResult, error), reverted bool) (any, error) {
	depID, err := pathID(r, "deployment")
	if err != nil {
		return nil, err
	}
	ident, err := h.deploymentIdentity(r)
	if err != nil {
		return nil, err
	}
	if err := decodeDeploymentBody(r, what, body, emptyOK); err != nil {
		return nil, err
	}
	if *bodyID != "" && *bodyID != depID {
		return nil, badRequest("Deployment ID does not match")
	}
	svc := h.services.Deployments
	if svc == nil {
		return nil, &apiError{code: http.StatusNotImplemented, msg: "deployment operations are not available on this server"}
	}
	res, err := op(svc, ident.caller(), depID)
	if err != nil {
		return nil, err
	}
	setWriteIndex(w, r, res.Index)
	if reverted {
		return deploymentUpdateResponse{res.EvalID, res.EvalCreateIndex, res.DeploymentModifyIndex, res.RevertedJobVersion, res.Index}, nil
	}
	return deploymentActionResponse{res.EvalID, res.EvalCreateIndex, res.DeploymentModifyIndex, res.Index}, nil
}

// decodeDeploymentBody decodes a control operation's body strictly; with
// emptyOK, an absent or blank body is no body at all.
func decodeDeploymentBody(r *http.Request, what string, out any, emptyOK bool) error {
	if emptyOK {
		var buf []byte
		if r.Body != nil {
			var err error
			if buf, err = io.ReadAll(r.Body); err != nil {
				var tooLarge *http.MaxBytesError
				if errors.As(err, &tooLarge) {
					return err
				}
				return badRequest("%s decoding failed: %v", what, err)
			}
		}
		if len(bytes.TrimSpace(buf)) == 0 {
			return nil
		}
		r.Body = io.NopCloser(bytes.NewReader(buf))
	}
	return decodeBody(r, what, out)
}

func (h *Handler) deploymentFail(w http.ResponseWriter, r *http.Request) (any, error) {
	var req deploymentIDRequest
	return h.deploymentWrite(w, r, "DeploymentFailRequest", &req, &req.DeploymentID, true,
		func(s DeploymentService, caller acl.Caller, id string) (*state.DeploymentActionResult, error) {
			return s.Fail(caller, id)
		}, true)
}

func (h *Handler) deploymentPause(w http.ResponseWriter, r *http.Request) (any, error) {
	var req deploymentPauseRequest
	return h.deploymentWrite(w, r, "DeploymentPauseRequest", &req, &req.DeploymentID, false,
		func(s DeploymentService, caller acl.Caller, id string) (*state.DeploymentActionResult, error) {
			return s.Pause(caller, id, req.Pause)
		}, false)
}

func (h *Handler) deploymentPromote(w http.ResponseWriter, r *http.Request) (any, error) {
	var req deploymentPromoteRequest
	return h.deploymentWrite(w, r, "DeploymentPromoteRequest", &req, &req.DeploymentID, false,
		func(s DeploymentService, caller acl.Caller, id string) (*state.DeploymentActionResult, error) {
			return s.Promote(caller, id, req.All, req.Groups)
		}, false)
}

func (h *Handler) deploymentAllocHealth(w http.ResponseWriter, r *http.Request) (any, error) {
	var req deploymentAllocHealthRequest
	return h.deploymentWrite(w, r, "DeploymentAllocHealthRequest", &req, &req.DeploymentID, false,
		func(s DeploymentService, caller acl.Caller, id string) (*state.DeploymentActionResult, error) {
			return s.SetAllocHealth(caller, id, req.HealthyAllocationIDs, req.UnhealthyAllocationIDs)
		}, true)
}

func (h *Handler) deploymentUnblock(w http.ResponseWriter, r *http.Request) (any, error) {
	var req deploymentIDRequest
	return h.deploymentWrite(w, r, "DeploymentUnblockRequest", &req, &req.DeploymentID, true,
		func(s DeploymentService, caller acl.Caller, id string) (*state.DeploymentActionResult, error) {
			return s.Unblock(caller, id)
		}, false)
}
