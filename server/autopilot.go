package server

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
)

const (
	// promoteInterval paces the leader's look at its non-voters.
	promoteInterval = 500 * time.Millisecond
	// maxPromoteLag is how far behind the leader's commit index a non-voter
	// may be when it is promoted.
	maxPromoteLag = 64
)

// autopilot (a leader routine, after Consul's) promotes a non-voter to voter
// once it is reachable and caught up: it answers on its recorded HTTP
// address, has applied the latest configuration (so Raft reaches it), and
// its applied index is within maxPromoteLag of the commit index. A joiner
// that never gets there stays a non-voter and never costs the quorum.
//
// A non-voter that stays unreachable for DeadNonvoterTimeout is removed (a
// real server that comes back asks to join again).
func (s *Server) autopilot(ctx context.Context) {
	t := time.NewTicker(promoteInterval)
	defer t.Stop()
	unreachable := map[raft.ServerID]time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.promoteCaughtUp(ctx, unreachable)
		}
	}
}

func (s *Server) promoteCaughtUp(ctx context.Context, unreachable map[raft.ServerID]time.Time) {
	conf, err := s.raftConfig()
	if err != nil {
		return
	}
	present := map[raft.ServerID]bool{}
	for _, srv := range conf.Servers {
		if srv.Suffrage != raft.Nonvoter || ctx.Err() != nil {
			continue
		}
		present[srv.ID] = true
		_, rec, err := s.State().Server(memdb.NewWatchSet(), string(srv.ID))
		if err != nil || rec == nil || rec.RaftAddr != string(srv.Address) {
			continue
		}
		info, err := s.fetchNodeInfo(rec.HTTPAddr)
		if err != nil || info.Self.ID != string(srv.ID) {
			s.logger.Debug("non-voter not reachable yet", "id", srv.ID, "error", err)
			since, seen := unreachable[srv.ID]
			if !seen {
				unreachable[srv.ID] = time.Now()
			} else if time.Since(since) > s.config.DeadNonvoterTimeout {
				s.logger.Warn("removing a non-voter unreachable since it joined", "id", srv.ID, "node", rec.Name, "for", time.Since(since).Round(time.Second))
				if err := s.RemoveServer(string(srv.ID)); err != nil {
					s.logger.Warn("failed to remove an unreachable non-voter", "id", srv.ID, "error", err)
				}
				delete(unreachable, srv.ID)
			}
			continue
		}
		delete(unreachable, srv.ID)
		confIndex, _ := strconv.ParseUint(s.raft.Stats()["latest_configuration_index"], 10, 64)
		commit := s.raft.CommitIndex()
		if info.AppliedIndex < confIndex || info.AppliedIndex+maxPromoteLag < commit {
			s.logger.Debug("non-voter not caught up yet", "id", srv.ID, "applied", info.AppliedIndex, "commit", commit)
			continue
		}
		s.logger.Info("promoting a caught-up server to voter", "id", srv.ID, "node", rec.Name, "applied", info.AppliedIndex, "commit", commit)
		if err := s.raft.AddVoter(srv.ID, srv.Address, 0, 0).Error(); err != nil {
			s.logger.Warn("failed to promote a server", "id", srv.ID, "error", err)
		}
	}
	for id := range unreachable {
		if !present[id] {
			delete(unreachable, id)
		}
	}
}

// raftConfig is the current Raft configuration with suffrage.
func (s *Server) raftConfig() (raft.Configuration, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raft.Configuration{}, fmt.Errorf("failed to read Raft configuration: %w", err)
	}
	return f.Configuration(), nil
}
