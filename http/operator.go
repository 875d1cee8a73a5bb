package http

import (
	"net/http"
)

func (h *Handler) registerOperator() {
	h.handle("/v1/operator/raft/configuration", methods{{http.MethodGet, h.raftConfiguration}})
	h.handle("/v1/operator/raft/peer", methods{{http.MethodDelete, h.raftRemovePeer}})
}

// RaftServer is one server of the Raft configuration, as Consul shows it.
type RaftServer struct {
	ID              string
	Node            string
	Address         string
	Leader          bool
	ProtocolVersion string
	Voter           bool
}

// RaftConfiguration is the answer of GET /v1/operator/raft/configuration.
type RaftConfiguration struct {
	Servers []RaftServer
	Index   uint64
}

func (h *Handler) raftConfiguration(w http.ResponseWriter, r *http.Request) (any, error) {
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	if _, err := h.require(r, permOperatorRead); err != nil {
		return nil, err
	}
	if !opts.stale {
		if err := h.backend.CheckRead(opts.consistent); err != nil {
			return nil, err
		}
	}
	conf, index, err := h.backend.RaftConfiguration()
	if err != nil {
		return nil, err
	}
	names := h.backend.ServerNames()
	leader := h.backend.Leader()
	out := RaftConfiguration{Servers: []RaftServer{}, Index: index}
	for _, srv := range conf {
		out.Servers = append(out.Servers, RaftServer{
			ID:              srv.ID,
			Node:            names[srv.ID],
			Address:         srv.Address,
			Leader:          srv.Address == leader,
			ProtocolVersion: "3",
			Voter:           srv.Voter,
		})
	}
	return out, nil
}

func (h *Handler) raftRemovePeer(w http.ResponseWriter, r *http.Request) (any, error) {
	if _, err := h.require(r, permOperatorWrite); err != nil {
		return nil, err
	}
	id := r.URL.Query().Get("id")
	if id == "" {
		return nil, badRequest("Must specify ?id with the ID of the server to remove")
	}
	if err := h.backend.RemoveServer(id); err != nil {
		return nil, err
	}
	return true, nil
}
