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

// classify sorts a group's allocations out: dead ones awaiting replacement,
// lost ones, canaries, and the live ones split into current, in-place and
// destructive updates; it stops what is not needed any more (canaries of
// older deployments, allocations a promoted canary replaces, scale-down).
func (r *reconciler) classify(tg *state.TaskGroup, allocs []*state.Allocation) (*groupState, error) {
	gs := &groupState{tg: tg, strategy: updateStrategy(r.job, tg), donors: map[int]*state.Allocation{}, donorStop: map[string]string{},
		rescheduled: map[string]bool{}}
	if r.deployment != nil {
		gs.dstate = r.deployment.TaskGroups[tg.Name]
	}
	canaryIDs := map[string]bool{}
	if gs.dstate != nil {
		for _, id := range gs.dstate.PlacedCanaries {
			canaryIDs[id] = true
		}
	}
	canaryState := gs.dstate != nil && gs.dstate.DesiredCanaries > 0 && !gs.dstate.Promoted

	r.reconcileReconnecting(allocs, canaryIDs)
	var live []*state.Allocation
	for _, a := range allocs {
		if a.JobVersion == r.job.Version {
			gs.hadRunning = true
		}
		if r.stopped[a.ID] {
			continue // a reconnect decided its fate
		}
		if !canaryIDs[a.ID] && a.DesiredStatus == state.AllocDesiredStatusRun && !a.ClientTerminalStatus() {
			switch r.taintOf(a) {
			case taintLost:
				r.stop(a, allocLost, state.AllocClientStatusLost)
				gs.addDonor(a, "")
				continue
			case taintDisconnecting:
				// Unknown from now on; replaced at once when its policy
				// allows, else it keeps its place in the group.
				gs.disconnecting = append(gs.disconnecting, a)
				if r.replaceDisconnected(a) {
					gs.addDonor(a, "")
					gs.rescheduled[a.ID] = true
					continue
				}
				live = append(live, a)
				continue
			case taintUnknown:
				if !replaced(a, allocs) {
					live = append(live, a)
				}
				continue
			}
		}
		failed := a.ClientStatus == state.AllocClientStatusFailed
		if failed && a.DesiredStatus == state.AllocDesiredStatusRun {
			if a.NextAllocation != "" {
				continue // already replaced
			}
			// A failed allocation is replaced as its reschedule policy
			// says: now, later (a follow-up evaluation), or never; until
			// then it stays, counting toward Count.
			now, later, at := r.reschedulable(a)
			if later {
				gs.later = append(gs.later, delayedReschedule{alloc: a, at: at})
			}
			if !now {
				failed = false
			} else {
				gs.rescheduled[a.ID] = true
			}
		}
		dead := failed || a.ClientStatus == state.AllocClientStatusLost
		switch {
		case canaryIDs[a.ID] && a.NextAllocation == "" && (dead || (a.DesiredStatus == state.AllocDesiredStatusRun && r.tainted(a.NodeID))):
			if a.DesiredStatus == state.AllocDesiredStatusRun {
				desc, cs := allocRescheduled, ""
				if a.ClientStatus != state.AllocClientStatusFailed {
					desc, cs = allocLost, state.AllocClientStatusLost
				}
				gs.donorStop[a.ID] = desc
				if cs != "" && !dead {
					// On a down node: lost now, whether or not it is replaced.
					r.stop(a, desc, cs)
				}
			}
			gs.canaryDonors = append(gs.canaryDonors, a)
			continue
		case a.DesiredStatus != state.AllocDesiredStatusRun:
			if dead && a.NextAllocation == "" {
				gs.addDonor(a, "")
			}
			continue
		case dead:
			desc := allocRescheduled
			if a.ClientStatus == state.AllocClientStatusLost {
				desc = allocLost
			}
			gs.addDonor(a, desc)
			continue
		case a.ClientStatus == state.AllocClientStatusComplete:
			// Nomad ignores a completed service allocation: its name is
			// free again and a new one is placed.
			continue
		case r.tainted(a.NodeID):
			r.stop(a, allocLost, state.AllocClientStatusLost)
			gs.addDonor(a, "")
			continue
		case a.DesiredTransition.ShouldMigrate() && !(canaryIDs[a.ID] && canaryState) &&
			!(a.DeploymentStatus != nil && a.DeploymentStatus.Canary && !canaryIDs[a.ID]):
			// On any node, as Nomad's filterByTainted; a canary awaiting
			// promotion stays one until then, and a canary of an older
			// deployment is stopped below rather than moved.
			gs.migrate = append(gs.migrate, a)
			continue
		case canaryIDs[a.ID]:
			gs.canaries = append(gs.canaries, a)
			continue
		case a.DeploymentStatus != nil && a.DeploymentStatus.Canary:
			// A canary of an older deployment is never promoted now.
			r.stop(a, allocNotNeeded, "")
			continue
		}
		live = append(live, a)
	}

	// Promoted canaries take over the names of the old allocations they
	// were placed beside, also one a drain moves (its replacement keeps
	// the name).
	if gs.dstate != nil && gs.dstate.Promoted {
		names := map[string]bool{}
		for _, c := range gs.canaries {
			names[c.Name] = true
		}
		for _, a := range gs.migrate {
			if canaryIDs[a.ID] {
				names[a.Name] = true
			}
		}
		kept := live[:0]
		for _, a := range live {
			if a.JobVersion != r.job.Version && names[a.Name] {
				r.stop(a, allocNotNeeded, "")
				continue
			}
			kept = append(kept, a)
		}
		live = kept
		// An old allocation a drain marked goes the same way: migrating
		// it would place a second allocation under the canary's name.
		moving := gs.migrate[:0]
		for _, a := range gs.migrate {
			if a.JobVersion != r.job.Version && names[a.Name] {
				r.stop(a, allocNotNeeded, "")
				continue
			}
			moving = append(moving, a)
		}
		gs.migrate = moving
	}
	counted := live
	if !canaryState {
		counted = append(counted, gs.canaries...)
	}

	// Migrating allocations count toward Count; beyond it they just stop.
	keep := tg.Count - len(gs.migrate)
	if keep < 0 {
		byIndex(gs.migrate)
		for _, a := range gs.migrate[tg.Count:] {
			r.stop(a, allocNotNeeded, "")
		}
		gs.migrate, keep = gs.migrate[:tg.Count], 0
	}
	// Scale down: the highest indexes go first (older versions first on a tie).
	if excess := len(counted) - keep; excess > 0 {
		sort.Slice(counted, func(i, j int) bool {
			a, b := counted[i], counted[j]
			if ia, ib := allocIndex(a.Name), allocIndex(b.Name); ia != ib {
				return ia > ib
			}
			if ca, cb := a.JobVersion == r.job.Version, b.JobVersion == r.job.Version; ca != cb {
				return !ca
			}
			return a.ID < b.ID
		})
		for _, a := range counted[:excess] {
			r.stop(a, allocNotNeeded, "")
		}
		counted = counted[excess:]
	}
	byIndex(counted)
	gs.counted = counted
	for _, a := range counted {
		if a.JobVersion == r.job.Version {
			gs.current = append(gs.current, a)
			continue
		}
		old, err := r.version(a.JobVersion)
		if err != nil {
			return nil, err
		}
		// What a running task can take on is updated in place, and only
		// where it may still run (the job's datacenters may have changed),
		// as Nomad checks; a failed allocation kept by its reschedule
		// policy has nothing running to update: the new version replaces it.
		if old == nil || tasksUpdated(old, r.job, tg.Name).modified || !r.stillFits(a, tg) || a.ClientStatus == state.AllocClientStatusFailed {
			gs.destructive = append(gs.destructive, a)
		} else {
			gs.inplace = append(gs.inplace, a)
		}
	}
	gs.missing = keep - len(counted)
	return gs, nil
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
