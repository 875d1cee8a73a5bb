package state

import (
	"fmt"
	"time"
)

// ReschedulePolicy says how the scheduler replaces a failed allocation of a
// group (Nomad's ReschedulePolicy): Attempts within Interval, or Unlimited,
// each after a delay that grows by DelayFunction up to MaxDelay.
type ReschedulePolicy struct {
	Attempts      int
	Interval      time.Duration
	Delay         time.Duration
	DelayFunction string
	MaxDelay      time.Duration
	Unlimited     bool
}

// Enabled says whether the policy allows any rescheduling.
func (p *ReschedulePolicy) Enabled() bool {
	return p != nil && (p.Attempts > 0 || p.Unlimited)
}

// AttemptsWithin is how many of the tracker's reschedules count against
// p's Attempts at t: those less than Interval before it (Nomad's
// rescheduleInfo). A nil tracker has none.
func (t *RescheduleTracker) AttemptsWithin(p *ReschedulePolicy, at time.Time) int {
	if t == nil || p == nil {
		return 0
	}
	n := 0
	for _, e := range t.Events {
		if at.UnixNano()-e.RescheduleTime < p.Interval.Nanoseconds() {
			n++
		}
	}
	return n
}

// RescheduleEligible says whether p still allows the allocation a
// reschedule at t: it is unlimited, or fewer than Attempts of the
// allocation's reschedules are within Interval (Nomad's
// Allocation.RescheduleEligible). A nil or disabled policy allows none.
func (a *Allocation) RescheduleEligible(p *ReschedulePolicy, at time.Time) bool {
	if !p.Enabled() {
		return false
	}
	return p.Unlimited || a.RescheduleTracker.AttemptsWithin(p, at) < p.Attempts
}

// RescheduleTracker is the history of the reschedules that led to an
// allocation: one event per predecessor, oldest first.
type RescheduleTracker struct {
	Events []*RescheduleEvent
}

// RescheduleEvent is one reschedule: when (Unix nanoseconds), from which
// allocation and node, and after which delay.
type RescheduleEvent struct {
	RescheduleTime int64         `codec:",omitempty"`
	PrevAllocID    string        `codec:",omitempty"`
	PrevNodeID     string        `codec:",omitempty"`
	Delay          time.Duration `codec:",omitempty"`
}

// Copy returns a deep copy (nil for nil).
func (t *RescheduleTracker) Copy() *RescheduleTracker {
	if t == nil {
		return nil
	}
	c := &RescheduleTracker{Events: make([]*RescheduleEvent, len(t.Events))}
	for i, e := range t.Events {
		ev := *e
		c.Events[i] = &ev
	}
	return c
}

// DesiredTransition is what the servers want to happen to an allocation
// beyond its desired status (Nomad's): Reschedule lets the scheduler
// replace a failed allocation of an active deployment (the deployment
// watcher sets it when the group has a progress deadline); Migrate moves it
// off a draining node.
type DesiredTransition struct {
	Migrate         *bool
	Reschedule      *bool
	ForceReschedule *bool
}

// ShouldReschedule says whether the allocation may be rescheduled inside
// its active deployment.
func (d DesiredTransition) ShouldReschedule() bool { return d.Reschedule != nil && *d.Reschedule }

// ShouldForceReschedule says whether the allocation is to be rescheduled
// whatever its policy says.
func (d DesiredTransition) ShouldForceReschedule() bool {
	return d.ForceReschedule != nil && *d.ForceReschedule
}

// ShouldMigrate says whether the allocation is to move off its node.
func (d DesiredTransition) ShouldMigrate() bool { return d.Migrate != nil && *d.Migrate }

// merge sets the fields o sets.
func (d *DesiredTransition) merge(o DesiredTransition) {
	if o.Migrate != nil {
		d.Migrate = o.Migrate
	}
	if o.Reschedule != nil {
		d.Reschedule = o.Reschedule
	}
	if o.ForceReschedule != nil {
		d.ForceReschedule = o.ForceReschedule
	}
}

// LastEventTime is when the allocation last changed on its client: the
// latest FinishedAt of its tasks, else its ModifyTime (Nomad's rule; the
// failure time reschedule delays count from).
func (a *Allocation) LastEventTime() time.Time {
	var last time.Time
	for _, ts := range a.TaskStates {
		if ts != nil && ts.FinishedAt.After(last) {
			last = ts.FinishedAt
		}
	}
	if last.IsZero() {
		return time.Unix(0, a.ModifyTime).UTC()
	}
	return last
}

// AllocsDesiredTransition merges transitions into allocations at idx and
// inserts evals, in one transaction. Unknown allocations are skipped: one
// may have been collected since the request was made.
func (s *Store) AllocsDesiredTransition(idx uint64, transitions map[string]DesiredTransition, evals []*Evaluation) error {
	txn := s.orchTxn()
	defer txn.Abort()
	jobs := map[[2]string]bool{}
	changed := false
	for id, t := range transitions {
		raw, err := txn.First(allocsTable, "id", id)
		if err != nil {
			return fmt.Errorf("failed allocation lookup: %w", err)
		}
		if raw == nil {
			continue
		}
		a := raw.(*Allocation).Copy()
		a.DesiredTransition.merge(t)
		a.ModifyIndex, a.AllocModifyIndex = idx, idx
		if err := txn.Insert(allocsTable, a); err != nil {
			return fmt.Errorf("failed updating allocation: %w", err)
		}
		changed = true
	}
	if changed {
		if err := setIndex(txn, allocsTable, idx); err != nil {
			return err
		}
	}
	for _, e := range evals {
		if err := upsertEvalTxn(txn, idx, e); err != nil {
			return err
		}
		jobs[[2]string{e.Namespace, e.JobID}] = true
	}
	for k := range jobs {
		if err := refreshJobStatusTxn(txn, idx, k[0], k[1]); err != nil {
			return err
		}
	}
	s.commitOrch(txn, idx)
	return nil
}
