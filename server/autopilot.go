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
func (s *Server) autopilot(ctx context.Context) {
	t := time.NewTicker(promoteInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.promoteCaughtUp(ctx)
		}
	}
}

func (s *Server) promoteCaughtUp(ctx context.Context) {
	conf, err := s.raftConfig()
	if err != nil {
		return
	}
	for _, srv := range conf.Servers {
		if srv.Suffrage != raft.Nonvoter || ctx.Err() != nil {
			continue
		}
		_, rec, err := s.State().Server(memdb.NewWatchSet(), string(srv.ID))
		if err != nil || rec == nil || rec.RaftAddr != string(srv.Address) {
			continue
		}
		info, err := s.fetchNodeInfo(rec.HTTPAddr)
		if err != nil || info.Self.ID != string(srv.ID) {
			s.logger.Debug("non-voter not reachable yet", "id", srv.ID, "error", err)
			continue
		}
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
}

// raftConfig is the current Raft configuration with suffrage.
func (s *Server) raftConfig() (raft.Configuration, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return raft.Configuration{}, fmt.Errorf("failed to read Raft configuration: %w", err)
	}
	return f.Configuration(), nil
}
