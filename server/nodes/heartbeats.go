package nodes

import (
	"context"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
)

// heartbeatMissed is the status description of a node marked down.
const heartbeatMissed = "Node heartbeat missed"

// heartbeats tracks one TTL timer per live node during one term of leadership.
type heartbeats struct {
	ctx    context.Context
	timers map[string]*nodeTimer
}

// nodeTimer is a node's TTL timer; a reset replaces it, so that a timer that
// fired while being replaced recognizes itself as stale.
type nodeTimer struct {
	t *time.Timer
}

// RunHeartbeats is a leader routine: while ctx lives (this server leads),
// every node that is not down must heartbeat within the TTL or is marked
// down (its live allocations lost, one node-update evaluation per affected
// job, in one Raft entry). Nodes known at the start get TTL + grace, since
// their heartbeats went to the previous leader.
func (s *Service) RunHeartbeats(ctx context.Context) {
	hb := &heartbeats{ctx: ctx, timers: map[string]*nodeTimer{}}
	s.mu.Lock()
	s.hb = hb
	s.mu.Unlock()
	// A snapshot restore replaces the store: track the nodes it brought.
	for done := false; !done; {
		store := s.deps.State()
		s.trackAll(hb, store)
		select {
		case <-store.AbandonCh():
		case <-ctx.Done():
			done = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, nt := range hb.timers {
		nt.t.Stop()
	}
	if s.hb == hb {
		s.hb = nil
	}
}

// trackAll gives every live node of store without a timer TTL + grace.
func (s *Service) trackAll(hb *heartbeats, store *state.Store) {
	_, nodes, err := store.Nodes(nil)
	if err != nil {
		s.deps.Logger.Error("heartbeats: listing nodes failed", "error", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range nodes {
		if n.Status != state.NodeStatusDown && hb.timers[n.ID] == nil {
			s.armLocked(hb, n.ID, s.ttl+s.grace)
		}
	}
}

// resetTimer gives a node a fresh TTL, when this server leads.
func (s *Service) resetTimer(nodeID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hb != nil {
		s.armLocked(s.hb, nodeID, s.ttl)
	}
}

func (s *Service) armLocked(hb *heartbeats, nodeID string, d time.Duration) {
	if old := hb.timers[nodeID]; old != nil {
		old.t.Stop()
	}
	nt := &nodeTimer{}
	nt.t = time.AfterFunc(d, func() { s.expire(hb, nodeID, nt) })
	hb.timers[nodeID] = nt
}

// TrackedNodes is how many nodes have a TTL timer (0 when not leading).
func (s *Service) TrackedNodes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hb == nil {
		return 0
	}
	return len(s.hb.timers)
}

// expire marks a node down when its timer nt is still the current one.
func (s *Service) expire(hb *heartbeats, nodeID string, nt *nodeTimer) {
	s.mu.Lock()
	current := s.hb == hb && hb.timers[nodeID] == nt && hb.ctx.Err() == nil
	if current {
		delete(hb.timers, nodeID)
	}
	s.mu.Unlock()
	if !current {
		return
	}
	if err := s.markDown(nodeID); err != nil {
		s.deps.Logger.Error("heartbeats: marking node down failed", "node", nodeID, "error", err)
	}
}

// markDown writes the node's down status with a node-update evaluation for
// every job that has a live allocation on it.
func (s *Service) markDown(nodeID string) error {
	store := s.deps.State()
	_, n, err := store.Node(nil, nodeID)
	if err != nil || n == nil || n.Status == state.NodeStatusDown {
		return err
	}
	_, allocs, err := store.AllocsByNode(nil, nodeID)
	if err != nil {
		return err
	}
	now := s.deps.Now()
	seen := map[[2]string]bool{}
	var evals []*state.Evaluation
	for _, a := range allocs {
		k := [2]string{a.Namespace, a.JobID}
		if a.ClientTerminalStatus() || seen[k] {
			continue
		}
		seen[k] = true
		_, job, err := store.Job(nil, a.Namespace, a.JobID)
		if err != nil {
			return err
		}
		if job != nil {
			evals = append(evals, newEval(job, state.EvalTriggerNodeUpdate, nodeID, now))
		}
	}
	s.deps.Logger.Warn("node missed its heartbeat, marking it down", "node", nodeID, "name", n.Name, "jobs", len(evals))
	req := &fsm.NodeStatusRequest{NodeID: nodeID, Status: state.NodeStatusDown, Description: heartbeatMissed, Evals: evals, Now: now.UnixNano()}
	_, err = fsm.Apply(s.deps.Raft, fsm.NodeStatus, req)
	return err
}
