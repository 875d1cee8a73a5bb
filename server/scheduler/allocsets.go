package scheduler

// The named sets a group's allocations are sorted into, in the manner of
// Nomad's reconcile_util.go (filterByTainted, filterByRescheduleable, ...).
// Each filter decides one allocation's set and changes nothing; classify
// applies the sets in the allocations' order, so the plan's stops keep it.

import (
	"sort"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// allocSet names the set an allocation lands in.
type allocSet int

const (
	// setLive: meant to run and counting toward Count (split later into
	// current, in-place and destructive).
	setLive allocSet = iota
	// setIgnored: needs nothing of this plan (a reconnect decided its fate,
	// it was replaced already, or it completed).
	setIgnored
	// setLost: on a down, gone or disconnected node: stopped as lost now,
	// a replacement takes its name.
	setLost
	// setDisconnecting: becomes unknown and keeps its place in the group.
	setDisconnecting
	// setDisconnectingReplaced: becomes unknown and is replaced at once.
	setDisconnectingReplaced
	// setDeadCanary: a dead canary of the current deployment; its
	// replacement is a canary again.
	setDeadCanary
	// setLostCanary: a live canary of the current deployment on a tainted
	// node; replaced as a canary.
	setLostCanary
	// setDeadStopped: dead after the server stopped it: its name is free
	// for a replacement and there is nothing left to stop.
	setDeadStopped
	// setDead: failed (replaced now) or lost while meant to run: replaced.
	setDead
	// setMigrate: a drain marked it to move; it counts until replaced.
	setMigrate
	// setCanary: a live canary of the current deployment.
	setCanary
	// setOldCanary: a canary of an older deployment: never promoted now.
	setOldCanary
	// setCurrent, setInPlace, setDestructive split the counted allocations
	// by what the current version asks of them.
	setCurrent
	setInPlace
	setDestructive
)

var allocSetNames = [...]string{"live", "ignored", "lost", "disconnecting", "disconnecting-replaced",
	"dead-canary", "lost-canary", "dead-stopped", "dead", "migrate", "canary", "old-canary",
	"current", "in-place", "destructive"}

func (s allocSet) String() string { return allocSetNames[s] }

// canaryView is what the current deployment says of a group's canaries.
type canaryView struct {
	// ids are the canaries the current deployment placed.
	ids map[string]bool
	// awaiting: the deployment wants canaries and is not promoted yet.
	awaiting bool
}

func canariesOf(ds *state.DeploymentState) canaryView {
	c := canaryView{ids: map[string]bool{}}
	if ds == nil {
		return c
	}
	for _, id := range ds.PlacedCanaries {
		c.ids[id] = true
	}
	c.awaiting = ds.DesiredCanaries > 0 && !ds.Promoted
	return c
}

// taintedSet is Nomad's filterByTainted for an allocation the server still
// wants running and its client has not ended: decided says whether its
// node (or disconnect history) settles its set. Canaries are left to
// statusSet: they are replaced as canaries.
func (r *reconciler) taintedSet(a *state.Allocation, c canaryView, group []*state.Allocation) (set allocSet, decided bool) {
	if c.ids[a.ID] || a.DesiredStatus != state.AllocDesiredStatusRun || a.ClientTerminalStatus() {
		return setLive, false
	}
	switch r.taintOf(a) {
	case taintLost:
		return setLost, true
	case taintDisconnecting:
		// Replaced at once when its policy allows, else it keeps its place.
		if r.replaceDisconnected(a) {
			return setDisconnectingReplaced, true
		}
		return setDisconnecting, true
	case taintUnknown:
		if replaced(a, group) {
			return setIgnored, true
		}
		return setLive, true
	}
	return setLive, false
}

// rescheduleSet is where a failed allocation's reschedule policy puts it.
type rescheduleSet int

const (
	// notFailedRun: not a failed allocation the server wants running.
	notFailedRun rescheduleSet = iota
	// rescheduledAlready: its replacement exists.
	rescheduledAlready
	rescheduleNow
	// rescheduleLater: a follow-up evaluation replaces it; until then it
	// stays, counting toward Count.
	rescheduleLater
	// rescheduleNever: it stays, failed, counting toward Count.
	rescheduleNever
)

// rescheduleSetOf is Nomad's filterByRescheduleable for one allocation; at
// is when a later reschedule is due.
func (r *reconciler) rescheduleSetOf(a *state.Allocation) (set rescheduleSet, at time.Time) {
	if a.ClientStatus != state.AllocClientStatusFailed || a.DesiredStatus != state.AllocDesiredStatusRun {
		return notFailedRun, time.Time{}
	}
	if a.NextAllocation != "" {
		return rescheduledAlready, time.Time{}
	}
	now, later, at := r.reschedulable(a)
	switch {
	case now:
		return rescheduleNow, at
	case later:
		return rescheduleLater, at
	}
	return rescheduleNever, time.Time{}
}

// statusSet sorts out what taintedSet left: dead reads failed-and-replaced
// now, or lost.
func (r *reconciler) statusSet(a *state.Allocation, dead bool, c canaryView) allocSet {
	run := a.DesiredStatus == state.AllocDesiredStatusRun
	if c.ids[a.ID] && a.NextAllocation == "" {
		// A canary of the current deployment is replaced by a canary.
		switch {
		case dead:
			return setDeadCanary
		case run && r.tainted(a.NodeID):
			return setLostCanary
		}
	}
	if !run {
		if dead && a.NextAllocation == "" {
			return setDeadStopped
		}
		return setIgnored
	}
	return r.runSet(a, dead, c)
}

// runSet is statusSet for an allocation the server wants running.
func (r *reconciler) runSet(a *state.Allocation, dead bool, c canaryView) allocSet {
	switch {
	case dead:
		return setDead
	case a.ClientStatus == state.AllocClientStatusComplete:
		// Nomad ignores a completed service allocation: its name is free
		// again and a new one is placed.
		return setIgnored
	case r.tainted(a.NodeID):
		return setLost
	case a.DesiredTransition.ShouldMigrate() && c.mayMigrate(a):
		return setMigrate
	case c.ids[a.ID]:
		return setCanary
	case isCanary(a):
		return setOldCanary
	}
	return setLive
}

// mayMigrate: any marked allocation moves, on any node, as in Nomad's
// filterByTainted, except that a canary awaiting promotion stays one until
// then and a canary of an older deployment is stopped rather than moved.
func (c canaryView) mayMigrate(a *state.Allocation) bool {
	if c.ids[a.ID] {
		return !c.awaiting
	}
	return !isCanary(a)
}

func isCanary(a *state.Allocation) bool {
	return a.DeploymentStatus != nil && a.DeploymentStatus.Canary
}

// promotedNames are the names promoted canaries take over: a live canary's,
// and one a drain moves (its replacement keeps the name).
func promotedNames(canaries, migrate []*state.Allocation, c canaryView) map[string]bool {
	names := map[string]bool{}
	for _, a := range canaries {
		names[a.Name] = true
	}
	for _, a := range migrate {
		if c.ids[a.ID] {
			names[a.Name] = true
		}
	}
	return names
}

// filterByPromotedNames splits off the older-version allocations whose name a
// promoted canary took; the order of both parts is the input's.
func filterByPromotedNames(as []*state.Allocation, names map[string]bool, version uint64) (kept, replaced []*state.Allocation) {
	for _, a := range as {
		if a.JobVersion != version && names[a.Name] {
			replaced = append(replaced, a)
			continue
		}
		kept = append(kept, a)
	}
	return kept, replaced
}

// scaleDownOrder sorts counted allocations in the order a scale-down stops
// them: highest index first, an older version before the current one on a
// tie, then by ID.
func scaleDownOrder(as []*state.Allocation, version uint64) {
	sort.Slice(as, func(i, j int) bool {
		a, b := as[i], as[j]
		if ia, ib := allocIndex(a.Name), allocIndex(b.Name); ia != ib {
			return ia > ib
		}
		if ca, cb := a.JobVersion == version, b.JobVersion == version; ca != cb {
			return !ca
		}
		return a.ID < b.ID
	})
}

// updateSet says what the current version asks of a counted allocation.
// What a running task can take on is updated in place, and only where it
// may still run (the job's datacenters may have changed), as Nomad checks;
// a failed allocation kept by its reschedule policy has nothing running to
// update: the new version replaces it.
func (r *reconciler) updateSet(a *state.Allocation, tg *state.TaskGroup) (allocSet, error) {
	if a.JobVersion == r.job.Version {
		return setCurrent, nil
	}
	old, err := r.version(a.JobVersion)
	if err != nil {
		return 0, err
	}
	if old == nil || tasksUpdated(old, r.job, tg.Name).modified || !r.stillFits(a, tg) || a.ClientStatus == state.AllocClientStatusFailed {
		return setDestructive, nil
	}
	return setInPlace, nil
}
