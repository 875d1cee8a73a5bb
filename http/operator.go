package http

import (
	"net/http"
)

func (h *Handler) registerOperator() {
	h.handle("/v1/operator/raft/configuration", methods{{http.MethodGet, h.operatorService(h.raftConfiguration)}})
	h.handle("/v1/operator/raft/peer", methods{{http.MethodDelete, h.operatorService(h.raftRemovePeer)}})
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
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	raft, err := h.services.Operator.Raft(id.caller())
	if err != nil {
		return nil, err
	}
	if !opts.stale {
		if err := h.backend.CheckRead(opts.consistent); err != nil {
			return nil, err
		}
	}
	conf, index, err := raft.Configuration()
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
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	if err := h.services.Operator.RemoveServer(id.caller(), r.URL.Query().Get("id")); err != nil {
		return nil, err
	}
	return true, nil
}

// operatorService answers 501 while no operator service is wired in.
func (h *Handler) operatorService(fn apiFunc) apiFunc {
	return func(w http.ResponseWriter, r *http.Request) (any, error) {
		if h.services.Operator == nil {
			return nil, &apiError{code: http.StatusNotImplemented, msg: "The operator API is not served by this agent"}
		}
		return fn(w, r)
	}
}
