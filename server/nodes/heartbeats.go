package nodes

import (
	"context"
	"time"

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
// disconnected or down (one node-update evaluation per affected job, in one
// Raft entry; see heartbeatMissed). Nodes known at the start get TTL + grace, since
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

// expire handles a missed heartbeat when the node's timer nt is still the
// current one. A node that stays disconnected keeps a timer: each TTL it is
// checked again, and goes down once none of its allocations may outlive the
// disconnect any more (Nomad's heartbeater).
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
	status, err := s.heartbeatMissed(nodeID)
	if err != nil {
		s.deps.Logger.Error("heartbeats: updating a silent node failed", "node", nodeID, "error", err)
	}
	// A disconnected node is checked again after a TTL; so is one whose
	// update failed.
	if status == state.NodeStatusDisconnected || err != nil {
		s.mu.Lock()
		if s.hb == hb && hb.timers[nodeID] == nil && hb.ctx.Err() == nil {
			s.armLocked(hb, nodeID, s.ttl)
		}
		s.mu.Unlock()
	}
}
