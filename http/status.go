package http

import "net/http"

func (h *Handler) registerStatus() {
	h.handleLocal("/v1/status/leader", methods{{http.MethodGet, h.statusLeader}})
	h.handleLocal("/v1/status/peers", methods{{http.MethodGet, h.statusPeers}})
}

// statusLeader answers the leader's Raft address, "" when there is none.
func (h *Handler) statusLeader(http.ResponseWriter, *http.Request) (any, error) {
	return h.backend.Leader(), nil
}

// statusPeers answers the Raft addresses of the cluster's servers.
func (h *Handler) statusPeers(http.ResponseWriter, *http.Request) (any, error) {
	return h.backend.Peers()
}
