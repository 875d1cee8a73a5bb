package http

import (
	"bytes"
	"io"
	"net/http"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/gorilla/mux"
)

// AllocStopService is what the allocation stop endpoint calls.
type AllocStopService interface {
	StopAlloc(caller acl.Caller, allocID string) (evalID string, index uint64, err error)
}

func (h *Handler) registerAllocStop() {
	h.handle("/v1/allocation/{alloc_id}/stop", methods{
		{http.MethodPut, h.jobsService(h.allocStop)},
		{http.MethodPost, h.jobsService(h.allocStop)},
	})
}

// allocStop is Nomad's PUT|POST /v1/allocation/:id/stop: alloc-lifecycle
// in the allocation's namespace. Nomad's client sends no body; a body, when
// sent, is Nomad's AllocStopRequest.
func (h *Handler) allocStop(w http.ResponseWriter, r *http.Request) (any, error) {
	stopper, ok := h.services.Jobs.(AllocStopService)
	if !ok {
		return nil, &apiError{code: http.StatusNotImplemented, msg: "Allocation stops are not served by this agent"}
	}
	allocID := mux.Vars(r)["alloc_id"]
	if err := allocStopBody(r, allocID); err != nil {
		return nil, err
	}
	if _, err := queryBool(r.URL.Query().Get("no_shutdown_delay"), "no_shutdown_delay"); err != nil {
		return nil, err
	}
	id, err := h.nodeIdentify(r)
	if err != nil {
		return nil, err
	}
	if !isUUID(allocID) {
		return nil, badRequest("Invalid allocation ID %q: a 36-character UUID is required", allocID)
	}
	evalID, index, err := stopper.StopAlloc(id.caller(), allocID)
	if err != nil {
		return nil, err
	}
	setWriteIndex(w, r, index)
	return &struct {
		EvalID string
		Index  uint64
	}{evalID, index}, nil
}

// allocStopBody reads an optional AllocStopRequest body; its AllocID, when
// set, must be the path's.
func allocStopBody(r *http.Request, allocID string) error {
	if r.Body == nil {
		return nil
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return nil
	}
	var req struct {
		AllocID         string
		NoShutdownDelay bool
		writeRequestFields
	}
	r.Body = io.NopCloser(bytes.NewReader(raw))
	if err := decodeBody(r, "AllocStopRequest", &req); err != nil {
		return err
	}
	if req.AllocID != "" && req.AllocID != allocID {
		return badRequest("Allocation ID in the body does not match the path")
	}
	return nil
}
