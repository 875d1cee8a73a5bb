package scheduler

import (
	"reflect"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// The set filters of allocsets.go, one table each: an allocation in, the set
// it lands in out. The filters read only the reconciler's job (and its
// cached versions), nodes, deployment, evaluation and clock, so each row
// builds those and nothing else.

var setsNow = time.Unix(1_700_000_000, 0).UTC()

// setsReconciler is a reconciler over four nodes: "ready" (dc1), "far"
// (ready, dc2), "down" and "disconnected"; any other node ID is gone.
func setsReconciler(job *state.Job, d *state.Deployment) *reconciler {
	node := func(id, dc, status string) *state.Node {
		return &state.Node{ID: id, Datacenter: dc, Status: status,
			Drivers: map[string]*state.DriverInfo{"mock_driver": {Detected: true, Healthy: true}}}
	}
	return &reconciler{
		job: job, deployment: d, now: setsNow,
		eval: &state.Evaluation{ID: "eval-now"},
		nodes: map[string]*state.Node{
			"ready":        node("ready", "dc1", state.NodeStatusReady),
			"far":          node("far", "dc2", state.NodeStatusReady),
			"down":         node("down", "dc1", state.NodeStatusDown),
			"disconnected": node("disconnected", "dc1", state.NodeStatusDisconnected),
		},
		versions: map[uint64]*state.Job{job.Version: job},
		stopped:  map[string]bool{},
	}
}

// setsAlloc is a running allocation of testJob's group on the ready node.
func setsAlloc(id string, opts ...func(a *state.Allocation)) *state.Allocation {
	a := &state.Allocation{ID: id, Name: "web.web[0]", TaskGroup: "web", NodeID: "ready",
		DesiredStatus: state.AllocDesiredStatusRun, ClientStatus: state.AllocClientStatusRunning,
		ModifyTime: setsNow.UnixNano()}
	for _, o := range opts {
		o(a)
	}
	return a
}

func onNode(id string) func(*state.Allocation) { return func(a *state.Allocation) { a.NodeID = id } }
func withClient(s string) func(*state.Allocation) {
	return func(a *state.Allocation) { a.ClientStatus = s }
}
func withDesired(s string) func(*state.Allocation) {
	return func(a *state.Allocation) { a.DesiredStatus = s }
}
func withNext(id string) func(*state.Allocation) {
	return func(a *state.Allocation) { a.NextAllocation = id }
}
func markedMigrate(a *state.Allocation) { a.DesiredTransition.Migrate = ptr(true) }
func deploymentCanary(a *state.Allocation) {
	a.DeploymentStatus = &state.AllocDeploymentStatus{Canary: true}
}
func unknownSince(d time.Duration) func(*state.Allocation) {
	return func(a *state.Allocation) {
		a.ClientStatus = state.AllocClientStatusUnknown
		a.AllocStates = []*state.AllocState{{Field: state.AllocStateFieldClientStatus, Value: state.AllocClientStatusUnknown, Time: setsNow.Add(-d)}}
	}
}

func TestTaintedSet(t *testing.T) {
	mcd := func(j *state.Job) { j.TaskGroups[0].MaxClientDisconnect = ptr(10 * time.Minute) }
	noReschedule := func(j *state.Job) { j.TaskGroups[0].ReschedulePolicy = &state.ReschedulePolicy{} }
	for _, tc := range []struct {
		name    string
		job     []jobOpt
		canary  bool
		alloc   *state.Allocation
		group   []*state.Allocation
		want    allocSet
		decided bool
	}{
		{name: "running on a ready node", alloc: setsAlloc("a"), want: setLive},
		{name: "canary on a down node is left to statusSet", canary: true, alloc: setsAlloc("a", onNode("down")), want: setLive},
		{name: "stopped on a down node", alloc: setsAlloc("a", onNode("down"), withDesired(state.AllocDesiredStatusStop)), want: setLive},
		{name: "complete on a down node", alloc: setsAlloc("a", onNode("down"), withClient(state.AllocClientStatusComplete)), want: setLive},
		{name: "running on a down node", alloc: setsAlloc("a", onNode("down")), want: setLost, decided: true},
		{name: "running on a gone node", alloc: setsAlloc("a", onNode("gone")), want: setLost, decided: true},
		{name: "disconnected without max_client_disconnect", alloc: setsAlloc("a", onNode("disconnected")), want: setLost, decided: true},
		{name: "disconnected, policy allows a reschedule", job: []jobOpt{mcd}, alloc: setsAlloc("a", onNode("disconnected")),
			want: setDisconnectingReplaced, decided: true},
		{name: "disconnected, policy allows none", job: []jobOpt{mcd, noReschedule}, alloc: setsAlloc("a", onNode("disconnected")),
			want: setDisconnecting, decided: true},
		{name: "unknown within max_client_disconnect", job: []jobOpt{mcd}, alloc: setsAlloc("a", onNode("disconnected"), unknownSince(time.Minute)),
			want: setLive, decided: true},
		{name: "unknown and replaced", job: []jobOpt{mcd},
			alloc: setsAlloc("a", onNode("disconnected"), unknownSince(time.Minute), withNext("b")),
			group: []*state.Allocation{setsAlloc("b")}, want: setIgnored, decided: true},
		{name: "unknown, its replacement stopped by a reconnect", job: []jobOpt{mcd},
			alloc: setsAlloc("a", onNode("disconnected"), unknownSince(time.Minute), withNext("b")),
			group: []*state.Allocation{setsAlloc("b", func(a *state.Allocation) { a.DesiredDescription = allocReconnected })},
			want:  setLive, decided: true},
		{name: "unknown past max_client_disconnect", job: []jobOpt{mcd}, alloc: setsAlloc("a", onNode("disconnected"), unknownSince(time.Hour)),
			want: setLost, decided: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := setsReconciler(testJob("web", 1, tc.job...), nil)
			c := canariesOf(nil)
			if tc.canary {
				c.ids[tc.alloc.ID] = true
			}
			group := append([]*state.Allocation{tc.alloc}, tc.group...)
			got, decided := r.taintedSet(tc.alloc, c, group)
			if got != tc.want || decided != tc.decided {
				t.Fatalf("taintedSet = %v, decided %v; want %v, decided %v", got, decided, tc.want, tc.decided)
			}
		})
	}
}

func TestRescheduleSetOf(t *testing.T) {
	failedAgo := func(d time.Duration) func(*state.Allocation) {
		return func(a *state.Allocation) {
			a.ClientStatus = state.AllocClientStatusFailed
			a.ModifyTime = setsNow.Add(-d).UnixNano()
		}
	}
	active := &state.Deployment{ID: "dep", Status: state.DeploymentStatusRunning}
	for _, tc := range []struct {
		name       string
		deployment *state.Deployment
		policy     *state.ReschedulePolicy
		alloc      *state.Allocation
		want       rescheduleSet
		at         time.Time
	}{
		{name: "running", alloc: setsAlloc("a"), want: notFailedRun},
		{name: "failed after a stop", alloc: setsAlloc("a", failedAgo(time.Hour), withDesired(state.AllocDesiredStatusStop)), want: notFailedRun},
		{name: "failed and replaced", alloc: setsAlloc("a", failedAgo(time.Hour), withNext("b")), want: rescheduledAlready},
		{name: "failed past its delay", alloc: setsAlloc("a", failedAgo(time.Hour)), want: rescheduleNow, at: setsNow.Add(-time.Hour + 30*time.Second)},
		{name: "failed within its delay", alloc: setsAlloc("a", failedAgo(0)), want: rescheduleLater, at: setsNow.Add(30 * time.Second)},
		{name: "failed within its delay, follow-up exists", alloc: setsAlloc("a", failedAgo(0), func(a *state.Allocation) { a.FollowupEvalID = "eval-later" }),
			want: rescheduleNever},
		{name: "failed, this is its follow-up", alloc: setsAlloc("a", failedAgo(0), func(a *state.Allocation) { a.FollowupEvalID = "eval-now" }),
			want: rescheduleNow, at: setsNow.Add(30 * time.Second)},
		{name: "failed, forced", alloc: setsAlloc("a", failedAgo(0), func(a *state.Allocation) { a.DesiredTransition.ForceReschedule = ptr(true) }),
			want: rescheduleNow, at: setsNow},
		{name: "failed, policy off", policy: &state.ReschedulePolicy{}, alloc: setsAlloc("a", failedAgo(time.Hour)), want: rescheduleNever},
		{name: "failed inside an active deployment, unmarked", deployment: active,
			alloc: setsAlloc("a", failedAgo(time.Hour), func(a *state.Allocation) { a.DeploymentID = "dep" }), want: rescheduleNever},
		{name: "failed inside an active deployment, marked by the watcher", deployment: active,
			alloc: setsAlloc("a", failedAgo(time.Hour), func(a *state.Allocation) {
				a.DeploymentID, a.DesiredTransition.Reschedule = "dep", ptr(true)
			}),
			want: rescheduleNow, at: setsNow.Add(-time.Hour + 30*time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob("web", 1)
			if tc.policy != nil {
				job.TaskGroups[0].ReschedulePolicy = tc.policy
			}
			r := setsReconciler(job, tc.deployment)
			got, at := r.rescheduleSetOf(tc.alloc)
			if got != tc.want || !at.Equal(tc.at) {
				t.Fatalf("rescheduleSetOf = %v at %v; want %v at %v", got, at, tc.want, tc.at)
			}
		})
	}
}

func TestStatusSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		// canary: a canary the current deployment placed; awaiting: that
		// deployment is not promoted yet.
		canary, awaiting, dead bool
		alloc                  *state.Allocation
		want                   allocSet
	}{
		{name: "current canary, dead", canary: true, dead: true, alloc: setsAlloc("a", withClient(state.AllocClientStatusFailed)), want: setDeadCanary},
		{name: "current canary on a down node", canary: true, alloc: setsAlloc("a", onNode("down")), want: setLostCanary},
		{name: "current canary, replaced, on a down node", canary: true, alloc: setsAlloc("a", onNode("down"), withNext("b")), want: setLost},
		{name: "current canary stopped on a down node", canary: true,
			alloc: setsAlloc("a", onNode("down"), withDesired(state.AllocDesiredStatusStop)), want: setIgnored},
		{name: "stopped, then lost", dead: true,
			alloc: setsAlloc("a", withDesired(state.AllocDesiredStatusStop), withClient(state.AllocClientStatusLost)), want: setDeadStopped},
		{name: "stopped, then lost, replaced", dead: true,
			alloc: setsAlloc("a", withDesired(state.AllocDesiredStatusStop), withClient(state.AllocClientStatusLost), withNext("b")), want: setIgnored},
		{name: "stopped, still running", alloc: setsAlloc("a", withDesired(state.AllocDesiredStatusStop)), want: setIgnored},
		{name: "failed, replaced now", dead: true, alloc: setsAlloc("a", withClient(state.AllocClientStatusFailed)), want: setDead},
		{name: "failed, kept by its policy", alloc: setsAlloc("a", withClient(state.AllocClientStatusFailed)), want: setLive},
		{name: "complete", alloc: setsAlloc("a", withClient(state.AllocClientStatusComplete)), want: setIgnored},
		{name: "on a down node", alloc: setsAlloc("a", onNode("down")), want: setLost},
		{name: "marked to migrate", alloc: setsAlloc("a", markedMigrate), want: setMigrate},
		{name: "marked to migrate, on a down node", alloc: setsAlloc("a", markedMigrate, onNode("down")), want: setLost},
		{name: "current canary marked to migrate, awaiting promotion", canary: true, awaiting: true,
			alloc: setsAlloc("a", markedMigrate, deploymentCanary), want: setCanary},
		{name: "current canary marked to migrate, promoted", canary: true,
			alloc: setsAlloc("a", markedMigrate, deploymentCanary), want: setMigrate},
		{name: "older canary marked to migrate", alloc: setsAlloc("a", markedMigrate, deploymentCanary), want: setOldCanary},
		{name: "current canary", canary: true, awaiting: true, alloc: setsAlloc("a", deploymentCanary), want: setCanary},
		{name: "older canary", alloc: setsAlloc("a", deploymentCanary), want: setOldCanary},
		{name: "running", alloc: setsAlloc("a"), want: setLive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := setsReconciler(testJob("web", 1), nil)
			c := canaryView{ids: map[string]bool{}, awaiting: tc.awaiting}
			if tc.canary {
				c.ids[tc.alloc.ID] = true
			}
			if got := r.statusSet(tc.alloc, tc.dead, c); got != tc.want {
				t.Fatalf("statusSet = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCanariesOf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ds       *state.DeploymentState
		ids      map[string]bool
		awaiting bool
	}{
		{name: "no deployment", ids: map[string]bool{}},
		{name: "no canaries wanted", ds: &state.DeploymentState{}, ids: map[string]bool{}},
		{name: "canaries placed, awaiting promotion", ds: &state.DeploymentState{DesiredCanaries: 2, PlacedCanaries: []string{"c1", "c2"}},
			ids: map[string]bool{"c1": true, "c2": true}, awaiting: true},
		{name: "canaries promoted", ds: &state.DeploymentState{DesiredCanaries: 1, PlacedCanaries: []string{"c1"}, Promoted: true},
			ids: map[string]bool{"c1": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := canariesOf(tc.ds)
			if !reflect.DeepEqual(c.ids, tc.ids) || c.awaiting != tc.awaiting {
				t.Fatalf("canariesOf = %v awaiting %v; want %v awaiting %v", c.ids, c.awaiting, tc.ids, tc.awaiting)
			}
		})
	}
}

func TestFilterByPromotedNames(t *testing.T) {
	at := func(id, name string, version uint64) *state.Allocation {
		return &state.Allocation{ID: id, Name: name, JobVersion: version}
	}
	canaries := []*state.Allocation{at("c0", "web.web[0]", 2)}
	// A promoted canary a drain moves keeps its name; an old allocation
	// being moved does not lend its name.
	migrate := []*state.Allocation{at("c1", "web.web[1]", 2), at("m2", "web.web[2]", 1)}
	names := promotedNames(canaries, migrate, canaryView{ids: map[string]bool{"c0": true, "c1": true}})
	if want := map[string]bool{"web.web[0]": true, "web.web[1]": true}; !reflect.DeepEqual(names, want) {
		t.Fatalf("promotedNames = %v, want %v", names, want)
	}
	for _, tc := range []struct {
		name           string
		in             []*state.Allocation
		kept, replaced []string
	}{
		{name: "old under a canary's name", in: []*state.Allocation{at("o0", "web.web[0]", 1)}, replaced: []string{"o0"}},
		{name: "current under a canary's name", in: []*state.Allocation{at("n0", "web.web[0]", 2)}, kept: []string{"n0"}},
		{name: "old under another name", in: []*state.Allocation{at("o3", "web.web[3]", 1)}, kept: []string{"o3"}},
		{name: "order kept", in: []*state.Allocation{at("o1", "web.web[1]", 1), at("o3", "web.web[3]", 1), at("o0", "web.web[0]", 1), at("o4", "web.web[4]", 0)},
			kept: []string{"o3", "o4"}, replaced: []string{"o1", "o0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, replaced := filterByPromotedNames(tc.in, names, 2)
			if got := allocIDs(kept); !reflect.DeepEqual(got, tc.kept) {
				t.Errorf("kept = %v, want %v", got, tc.kept)
			}
			if got := allocIDs(replaced); !reflect.DeepEqual(got, tc.replaced) {
				t.Errorf("replaced = %v, want %v", got, tc.replaced)
			}
		})
	}
}

func TestScaleDownOrder(t *testing.T) {
	at := func(id string, index int, version uint64) *state.Allocation {
		return &state.Allocation{ID: id, Name: allocName("web", "web", index), JobVersion: version}
	}
	for _, tc := range []struct {
		name string
		in   []*state.Allocation
		want []string
	}{
		{name: "highest index first", in: []*state.Allocation{at("a", 0, 2), at("b", 2, 2), at("c", 1, 2)}, want: []string{"b", "c", "a"}},
		{name: "older version first on a tie", in: []*state.Allocation{at("new", 1, 2), at("old", 1, 1)}, want: []string{"old", "new"}},
		{name: "then by ID", in: []*state.Allocation{at("y", 1, 1), at("x", 1, 1)}, want: []string{"x", "y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scaleDownOrder(tc.in, 2)
			if got := allocIDs(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("scaleDownOrder = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUpdateSet(t *testing.T) {
	old := testJob("web", 1)
	old.Version = 1
	changedSpec := testJob("web", 1, withSpec("v1"))
	changedSpec.Version = 3
	for _, tc := range []struct {
		name  string
		alloc *state.Allocation
		want  allocSet
	}{
		{name: "current version", alloc: setsAlloc("a", func(a *state.Allocation) { a.JobVersion = 2 }), want: setCurrent},
		{name: "older version, same tasks", alloc: setsAlloc("a", func(a *state.Allocation) { a.JobVersion = 1 }), want: setInPlace},
		{name: "older version, other task config", alloc: setsAlloc("a", func(a *state.Allocation) { a.JobVersion = 3 }), want: setDestructive},
		{name: "older version gone", alloc: setsAlloc("a", func(a *state.Allocation) { a.JobVersion = 0 }), want: setDestructive},
		{name: "older version, node outside the datacenters", alloc: setsAlloc("a", onNode("far"), func(a *state.Allocation) { a.JobVersion = 1 }),
			want: setDestructive},
		{name: "older version, failed", alloc: setsAlloc("a", withClient(state.AllocClientStatusFailed), func(a *state.Allocation) { a.JobVersion = 1 }),
			want: setDestructive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob("web", 1)
			job.Version = 2
			r := setsReconciler(job, nil)
			r.versions[0], r.versions[1], r.versions[3] = nil, old, changedSpec
			got, err := r.updateSet(tc.alloc, job.TaskGroups[0])
			if err != nil || got != tc.want {
				t.Fatalf("updateSet = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func allocIDs(as []*state.Allocation) []string {
	var ids []string
	for _, a := range as {
		ids = append(ids, a.ID)
	}
	return ids
}
