package scheduler

// What a group's allocations are: classify sorts them out before the
// reconciler places, updates and stops.

import (
	"sort"

	"github.com/ctlplane/ctlplane/state"
)

// byIndex sorts allocations by name index, then ID.
func byIndex(as []*state.Allocation) {
	sort.Slice(as, func(i, j int) bool {
		a, b := allocIndex(as[i].Name), allocIndex(as[j].Name)
		if a != b {
			return a < b
		}
		return as[i].ID < as[j].ID
	})
}

// classify sorts a group's allocations into the named sets of allocsets.go:
// dead ones awaiting replacement, lost ones, canaries, and the live ones
// split into current, in-place and destructive updates; it stops what is
// not needed any more (canaries of older deployments, allocations a
// promoted canary replaces, scale-down).
func (r *reconciler) classify(tg *state.TaskGroup, allocs []*state.Allocation) (*groupState, error) {
	gs := &groupState{tg: tg, strategy: updateStrategy(r.job, tg), donors: map[int]*state.Allocation{}, donorStop: map[string]string{},
		rescheduled: map[string]bool{}}
	if r.deployment != nil {
		gs.dstate = r.deployment.TaskGroups[tg.Name]
	}
	c := canariesOf(gs.dstate)
	r.reconcileReconnecting(allocs, c.ids)
	var live []*state.Allocation
	for _, a := range allocs {
		if a.JobVersion == r.job.Version {
			gs.hadRunning = true
		}
		if r.applySet(gs, a, r.setOf(gs, a, c, allocs)) {
			live = append(live, a)
		}
	}
	live = r.stopReplacedByPromoted(gs, live, c)
	// Canaries count toward Count once no promotion is awaited.
	counted := live
	if !c.awaiting {
		counted = append(counted, gs.canaries...)
	}
	keep := r.trimMigrating(gs)
	counted = r.scaleDown(counted, keep)
	byIndex(counted)
	gs.counted = counted
	for _, a := range counted {
		set, err := r.updateSet(a, tg)
		if err != nil {
			return nil, err
		}
		switch set {
		case setCurrent:
			gs.current = append(gs.current, a)
		case setInPlace:
			gs.inplace = append(gs.inplace, a)
		default:
			gs.destructive = append(gs.destructive, a)
		}
	}
	gs.missing = keep - len(counted)
	return gs, nil
}

// setOf runs an allocation through the filters in Nomad's order: its
// node first, then its reschedule policy, then its status. A failed
// allocation's reschedule is recorded here (now, or a follow-up later).
func (r *reconciler) setOf(gs *groupState, a *state.Allocation, c canaryView, group []*state.Allocation) allocSet {
	if r.stopped[a.ID] {
		return setIgnored // a reconnect decided its fate
	}
	if set, decided := r.taintedSet(a, c, group); decided {
		return set
	}
	dead := a.ClientStatus == state.AllocClientStatusFailed || a.ClientStatus == state.AllocClientStatusLost
	switch rs, at := r.rescheduleSetOf(a); rs {
	case rescheduledAlready:
		return setIgnored
	case rescheduleNow:
		gs.rescheduled[a.ID] = true
	case rescheduleLater:
		gs.later = append(gs.later, delayedReschedule{alloc: a, at: at})
		dead = false
	case rescheduleNever:
		dead = false
	}
	return r.statusSet(a, dead, c)
}

// applySet does what an allocation's set asks of this plan and says
// whether it is live (counting toward Count, unless scaled down).
func (r *reconciler) applySet(gs *groupState, a *state.Allocation, set allocSet) (live bool) {
	switch set {
	case setLive:
		return true
	case setLost:
		r.stop(a, allocLost, state.AllocClientStatusLost)
		gs.addDonor(a, "")
	case setDisconnecting:
		gs.disconnecting = append(gs.disconnecting, a)
		return true
	case setDisconnectingReplaced:
		gs.disconnecting = append(gs.disconnecting, a)
		gs.addDonor(a, "")
		gs.rescheduled[a.ID] = true
	case setDeadCanary, setLostCanary:
		r.addCanaryDonor(gs, a, set)
	case setDeadStopped:
		gs.addDonor(a, "")
	case setDead:
		desc := allocRescheduled
		if a.ClientStatus == state.AllocClientStatusLost {
			desc = allocLost
		}
		gs.addDonor(a, desc)
	case setMigrate:
		gs.migrate = append(gs.migrate, a)
	case setCanary:
		gs.canaries = append(gs.canaries, a)
	case setOldCanary:
		r.stop(a, allocNotNeeded, "")
	}
	return false
}

// addCanaryDonor records a canary whose replacement is a canary again, and
// how it is stopped then; one on a down node is lost now, whether or not it
// is replaced.
func (r *reconciler) addCanaryDonor(gs *groupState, a *state.Allocation, set allocSet) {
	if a.DesiredStatus == state.AllocDesiredStatusRun {
		desc := allocRescheduled
		if a.ClientStatus != state.AllocClientStatusFailed {
			desc = allocLost
			if set == setLostCanary {
				r.stop(a, desc, state.AllocClientStatusLost)
			}
		}
		gs.donorStop[a.ID] = desc
	}
	gs.canaryDonors = append(gs.canaryDonors, a)
}

// stopReplacedByPromoted stops, once the group's canaries are promoted,
// the old allocations whose names they take over, and returns the rest of
// live. An old allocation a drain marked goes the same way: migrating it
// would place a second allocation under the canary's name.
func (r *reconciler) stopReplacedByPromoted(gs *groupState, live []*state.Allocation, c canaryView) []*state.Allocation {
	if gs.dstate == nil || !gs.dstate.Promoted {
		return live
	}
	names := promotedNames(gs.canaries, gs.migrate, c)
	live, replacedLive := filterByPromotedNames(live, names, r.job.Version)
	migrate, replacedMigrating := filterByPromotedNames(gs.migrate, names, r.job.Version)
	for _, a := range append(replacedLive, replacedMigrating...) {
		r.stop(a, allocNotNeeded, "")
	}
	gs.migrate = migrate
	return live
}

// trimMigrating stops the migrating allocations beyond Count (they count
// toward it until replaced) and returns how many others Count keeps.
func (r *reconciler) trimMigrating(gs *groupState) (keep int) {
	keep = gs.tg.Count - len(gs.migrate)
	if keep >= 0 {
		return keep
	}
	byIndex(gs.migrate)
	for _, a := range gs.migrate[gs.tg.Count:] {
		r.stop(a, allocNotNeeded, "")
	}
	gs.migrate = gs.migrate[:gs.tg.Count]
	return 0
}

// scaleDown stops the counted allocations beyond keep, in scaleDownOrder,
// and returns the rest.
func (r *reconciler) scaleDown(counted []*state.Allocation, keep int) []*state.Allocation {
	excess := len(counted) - keep
	if excess <= 0 {
		return counted
	}
	scaleDownOrder(counted, r.job.Version)
	for _, a := range counted[:excess] {
		r.stop(a, allocNotNeeded, "")
	}
	return counted[excess:]
}

// addDonor records a dead allocation whose name a replacement takes (the
// newest one per name); stopDesc, when set, is how it is stopped then.
func (gs *groupState) addDonor(a *state.Allocation, stopDesc string) {
	idx := allocIndex(a.Name)
	if old := gs.donors[idx]; old != nil && old.CreateIndex > a.CreateIndex {
		return
	}
	gs.donors[idx] = a
	if stopDesc != "" {
		gs.donorStop[a.ID] = stopDesc
	}
}
