package http

import (
	"net/http"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/gc"
)

// SystemService is what the /v1/system endpoints call.
type SystemService interface {
	// ForceCollect garbage-collects now, thresholds ignored, for a
	// management caller.
	ForceCollect(caller acl.Caller) (*gc.Result, error)
}

func (h *Handler) registerSystem() {
	h.handle("/v1/system/gc", methods{{http.MethodPut, h.systemGC}})
}

// systemGC is Nomad's PUT /v1/system/gc: a forced collection (thresholds
// ignored: every object the rules allow goes), with a management token.
// Unlike Nomad, which only queues the collection, it answers once it is
// done, with what it deleted.
func (h *Handler) systemGC(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	if h.services.System == nil {
		return nil, &apiError{code: http.StatusNotImplemented, msg: "garbage collection is not available on this server"}
	}
	return h.services.System.ForceCollect(id.caller())
}
