package http

import (
	"net/http"
	"time"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
)

// NodeDrainService is what the drain and eligibility endpoints call
// (server/nodes): each checks the caller (node:write) and writes one Raft
// entry; an unknown node is a state.Error with ErrNotFound, bad input
// ErrInvalid.
type NodeDrainService interface {
	UpdateDrain(caller acl.Caller, nodeID string, spec *state.DrainSpec, markEligible bool, meta map[string]string) (*state.NodeDrainResult, error)
	UpdateEligibility(caller acl.Caller, nodeID, eligibility string) (*state.NodeDrainResult, error)
}

func (h *Handler) registerNodeDrain() {
	h.handle("/v1/node/{node_id}/drain", methods{{http.MethodPut, h.nodeDrain}, {http.MethodPost, h.nodeDrain}})
	h.handle("/v1/node/{node_id}/eligibility", methods{{http.MethodPut, h.nodeEligibility}, {http.MethodPost, h.nodeEligibility}})
}

// nodeUpdateDrainRequest is api.NodeUpdateDrainRequest.
type nodeUpdateDrainRequest struct {
	NodeID    string
	DrainSpec *struct {
		Deadline         time.Duration
		IgnoreSystemJobs bool
	}
	MarkEligible bool
	Meta         map[string]string
	writeRequestFields
}

// nodeUpdateEligibilityRequest is api.NodeUpdateEligibilityRequest.
type nodeUpdateEligibilityRequest struct {
	NodeID      string
	Eligibility string
	writeRequestFields
}

var errNoDrainService = &apiError{code: http.StatusNotImplemented, msg: "node drain is not available on this server"}

// nodeDrainWrite is what both endpoints share: the node ID of the path,
// the caller, the body decoded strictly with a NodeID that must match.
func (h *Handler) nodeDrainWrite(w http.ResponseWriter, r *http.Request, what string, body any, bodyID *string,
	op func(NodeDrainService, acl.Caller, string) (*state.NodeDrainResult, error)) (any, error) {
	nodeID, err := nodeIDVar(r)
	if err != nil {
		return nil, err
	}
	id, err := h.nodeIdentify(r)
	if err != nil {
		return nil, err
	}
	if err := decodeBody(r, what, body); err != nil {
		return nil, err
	}
	if *bodyID != "" && *bodyID != nodeID {
		return nil, badRequest("NodeID %q does not match the node ID of the path", *bodyID)
	}
	svc := h.services.NodeDrain
	if svc == nil {
		return nil, errNoDrainService
	}
	res, err := op(svc, id.caller(), nodeID)
	if err != nil {
		return nil, err
	}
	setWriteIndex(w, r, res.Index)
	return res, nil
}

func (h *Handler) nodeDrain(w http.ResponseWriter, r *http.Request) (any, error) {
	var req nodeUpdateDrainRequest
	return h.nodeDrainWrite(w, r, "NodeUpdateDrainRequest", &req, &req.NodeID,
		func(svc NodeDrainService, caller acl.Caller, nodeID string) (*state.NodeDrainResult, error) {
			if err := nodeCheckStringMap("Meta", req.Meta, maxNodeMeta); err != nil {
				return nil, err
			}
			var spec *state.DrainSpec
			if req.DrainSpec != nil {
				spec = &state.DrainSpec{Deadline: req.DrainSpec.Deadline, IgnoreSystemJobs: req.DrainSpec.IgnoreSystemJobs}
			}
			return svc.UpdateDrain(caller, nodeID, spec, req.MarkEligible, req.Meta)
		})
}

func (h *Handler) nodeEligibility(w http.ResponseWriter, r *http.Request) (any, error) {
	var req nodeUpdateEligibilityRequest
	return h.nodeDrainWrite(w, r, "NodeUpdateEligibilityRequest", &req, &req.NodeID,
		func(svc NodeDrainService, caller acl.Caller, nodeID string) (*state.NodeDrainResult, error) {
			return svc.UpdateEligibility(caller, nodeID, req.Eligibility)
		})
}
