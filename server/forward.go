package server

import (
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/hashicorp/go-memdb"
)

// forwardedHeader marks a request one server has forwarded to another. A
// forwarded request is never forwarded again: that rules out loops while
// leadership moves.
const forwardedHeader = "X-Service-Forwarded-By"

// leaderReadyWait bounds how long a request waits for a new leader to catch up.
const leaderReadyWait = 3 * time.Second

// API is the HTTP API a server serves. Each of its routes declares whether
// it is answered by this server itself (status, the agent's own metrics) or
// by the leader; forwarding reads that declaration.
type API interface {
	http.Handler
	AnsweredLocally(r *http.Request) bool
}

// needsLeader says whether a request must be answered by the leader:
// writes, and reads in default or consistent mode, unless its route is
// answered locally. Stale reads are local.
func needsLeader(r *http.Request, local func(*http.Request) bool) bool {
	if r.Method == http.MethodOptions || (local != nil && local(r)) {
		return false
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		if _, stale := r.URL.Query()["stale"]; stale {
			return false
		}
	}
	return true
}

// forwarding answers requests that need the leader on the leader: locally
// when this server leads, through a reverse proxy to the leader's HTTP API
// otherwise. The client sees the leader's status, headers and body.
func (s *Server) forwarding(next http.Handler, local func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// On the ready leader everything is answered here: no need to
		// match the route to know whether it could be.
		if s.leaderReady.Load() || !needsLeader(r, local) || s.waitLeaderReady(r.Context()) {
			next.ServeHTTP(w, r)
			return
		}
		if r.Header.Get(forwardedHeader) != "" {
			writeNoLeader(w)
			return
		}
		target := s.leaderHTTPAddr()
		if target == "" {
			writeNoLeader(w)
			return
		}
		proxy := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(&url.URL{Scheme: s.scheme(), Host: target})
				pr.Out.Header.Set(forwardedHeader, s.config.NodeName)
			},
			Transport:     s.forwardTransport,
			FlushInterval: -1,
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				s.logger.Warn("failed to forward request to the leader", "leader", target, "path", r.URL.Path, "error", err)
				writeNoLeader(w)
			},
		}
		proxy.ServeHTTP(w, r)
	})
}

// waitLeaderReady reports whether this server is the leader with its state
// caught up, waiting a little when it has just won an election.
func (s *Server) waitLeaderReady(ctx context.Context) bool {
	if s.leaderReady.Load() {
		return true
	}
	if !s.isRaftLeader() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, leaderReadyWait)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !s.leaderReady.Load() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// leaderHTTPAddr is the leader's HTTP address from the replicated server
// records, "" when there is no leader or it is not recorded yet.
//
// A snapshot restore replaces the server records with the snapshot's (often
// another cluster's) until the servers register again; meanwhile the
// address last seen for the same leader is used, so that forwarding goes on
// across a restore.
func (s *Server) leaderHTTPAddr() string {
	_, id := s.raft.LeaderWithID()
	if id == "" {
		return ""
	}
	_, srv, err := s.State().Server(memdb.NewWatchSet(), string(id))
	s.lastLeaderMu.Lock()
	defer s.lastLeaderMu.Unlock()
	if err == nil && srv != nil {
		s.lastLeaderID, s.lastLeaderHTTP = string(id), srv.HTTPAddr
		return srv.HTTPAddr
	}
	if s.lastLeaderID == string(id) {
		return s.lastLeaderHTTP
	}
	return ""
}

func writeNoLeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write([]byte(ErrNoLeader.Error()))
}
