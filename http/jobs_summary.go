package http

import (
	"net/http"

	"github.com/ctlplane/ctlplane/state"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

// registerNomadCLI registers what Nomad's own CLI reads beyond the jobs,
// deployments and nodes APIs: job summaries and scaling, allocation reads
// and stops, namespaces, the agent's self-description and search.
func (h *Handler) registerNomadCLI() {
	h.handle("/v1/job/{job}/summary", methods{{http.MethodGet, h.jobsService(h.jobSummary)}})
	h.registerNamespaces()
	h.registerServiceRegistrations()
	h.registerJobScale()
	h.registerAgent()
	h.registerSearch()
	h.registerAllocStop()
}

// jobSummary is GET /v1/job/:id/summary (Nomad's JobSummary, blocking on
// the summaries).
func (h *Handler) jobSummary(w http.ResponseWriter, r *http.Request) (any, error) {
	jobID := mux.Vars(r)["job"]
	var out *state.JobSummary
	err := h.jobReadNS(w, r, func(ws memdb.WatchSet, s *state.Store, ns string) (uint64, error) {
		idx, sum, err := s.JobSummary(ws, ns, jobID)
		out = sum
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, notFound("job not found")
	}
	return out, nil
}
