package scheduler

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/scheduler/usage"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// harness is a Planner that applies plans to a real state.Store through its
// write methods at increasing fake Raft indexes, and plays the clients and
// the operator around the scheduler.
type harness struct {
	t     testing.TB
	store *state.Store
	idx   uint64
	now   time.Time

	plans   []*state.Plan
	refused []string
	created []*state.Evaluation
	// beforeApply, when set, runs before each plan is applied (to make it stale).
	beforeApply func(h *harness)
	// afterApply, when set, runs after each applied plan (invariant checks).
	afterApply func(h *harness, p *state.Plan, before *state.Store)

	// usage is the per-node usage view production's planner gives the
	// scheduler. Every evaluation is also computed without it (the walk
	// over every allocation) and the two plans must agree, unless
	// noCrossCheck (benchmarks).
	usage        usage.View
	noCrossCheck bool
	// limited: the scheduler places as Nomad's limited stack (limit.go).
	limited bool
}

// LimitedPlacement makes the harness a PlacementLimiter, as the broker's
// planner is.
func (h *harness) LimitedPlacement() bool { return h.limited }

// NodeUsage makes the harness the scheduler's UsageSource, as the broker's
// planner is.
func (h *harness) NodeUsage(snap usage.Source) (map[string]state.Resources, error) {
	return h.usage.NodeUsage(snap)
}

// NodeList makes the harness the scheduler's NodeListSource, as the
// broker's planner is: the cross-check's walk reads the nodes afresh.
func (h *harness) NodeList(snap usage.NodeSource) (*usage.NodeList, error) {
	return h.usage.NodeList(snap)
}

func newHarness(t testing.TB) *harness {
	return &harness{t: t, store: state.NewStore(), idx: 100, now: time.Unix(1_700_000_000, 0).UTC()}
}

func (h *harness) next() uint64 {
	h.idx++
	h.now = h.now.Add(time.Second)
	return h.idx
}

func (h *harness) clock() time.Time { return h.now }

// SubmitPlan applies the plan at the next index; a refused plan comes back
// with a fresh point-in-time store, as the leader's plan applier does.
func (h *harness) SubmitPlan(p *state.Plan) (*state.PlanResult, State, error) {
	if h.beforeApply != nil {
		h.beforeApply(h)
	}
	before := h.store.PointInTime()
	p.Now = h.now.UnixNano()
	res, err := h.store.ApplyPlan(h.next(), p)
	if err != nil {
		return nil, nil, err
	}
	if res.Refused != "" {
		h.refused = append(h.refused, res.Refused)
		return res, h.store.PointInTime(), nil
	}
	h.plans = append(h.plans, p)
	if h.afterApply != nil {
		h.afterApply(h, p, before)
	}
	return res, nil, nil
}

func (h *harness) UpdateEval(e *state.Evaluation) error {
	return h.store.EvalsUpsert(h.next(), []*state.Evaluation{e})
}

func (h *harness) CreateEval(e *state.Evaluation) error {
	h.created = append(h.created, e)
	return h.store.EvalsUpsert(h.next(), []*state.Evaluation{e})
}

// node registers a ready node; cpu or mem 0 means unlimited.
func (h *harness) node(name, dc string, cpu, mem int, drivers ...string) *state.Node {
	h.t.Helper()
	if len(drivers) == 0 {
		drivers = []string{"mock_driver"}
	}
	n := &state.Node{
		ID: uuid.NewString(), Name: name, Datacenter: dc,
		Drivers:   map[string]*state.DriverInfo{},
		Resources: state.Resources{CPU: cpu, MemoryMB: mem},
		Status:    state.NodeStatusReady, SchedulingEligibility: state.NodeSchedulingEligible,
	}
	for _, d := range drivers {
		n.Drivers[d] = &state.DriverInfo{Detected: true, Healthy: true}
	}
	if err := h.store.NodeRegister(h.next(), n, nil); err != nil {
		h.t.Fatal(err)
	}
	return n
}

func (h *harness) nodes(n int, cpu, mem int) []*state.Node {
	out := make([]*state.Node, n)
	for i := range out {
		out[i] = h.node(fmt.Sprintf("node-%d", i), "dc1", cpu, mem)
	}
	return out
}

func (h *harness) nodeDown(id string) {
	h.t.Helper()
	if err := h.store.NodeUpdateStatus(h.next(), id, state.NodeStatusDown, "missed heartbeat", nil, h.now.UnixNano()); err != nil {
		h.t.Fatal(err)
	}
}

// jobOpt changes a test job before it is registered.
type jobOpt func(j *state.Job)

// testJob is a one-group service job of count allocations (100 MHz, 64 MB
// each) rolled out one at a time.
func testJob(id string, count int, opts ...jobOpt) *state.Job {
	j := &state.Job{
		Namespace: "default", ID: id, Name: id, Type: state.JobTypeService, Priority: 50,
		Datacenters: []string{"dc1"},
		// "all": the test fleets mix node pools; the pool tests name theirs.
		NodePool: state.NodePoolAll,
		TaskGroups: []*state.TaskGroup{{
			Name:   "web",
			Count:  count,
			Update: &state.UpdateStrategy{MaxParallel: 1, HealthCheck: state.UpdateHealthTaskStates, ProgressDeadline: 10 * time.Minute},
			// Nomad's default for service jobs.
			ReschedulePolicy: &state.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true},
			Tasks: []*state.Task{{
				Name: "app", Driver: "mock_driver",
				Config:    map[string]any{"run_for": "1h"},
				Resources: &state.Resources{CPU: 100, MemoryMB: 64},
			}},
		}},
	}
	for _, o := range opts {
		o(j)
	}
	return j
}

func withMaxParallel(n int) jobOpt {
	return func(j *state.Job) { j.TaskGroups[0].Update.MaxParallel = n }
}
func withCanary(n int, auto bool) jobOpt {
	return func(j *state.Job) { j.TaskGroups[0].Update.Canary, j.TaskGroups[0].Update.AutoPromote = n, auto }
}

// withSpec changes the task config: a destructive update.
func withSpec(v string) jobOpt {
	return func(j *state.Job) { j.TaskGroups[0].Tasks[0].Config = map[string]any{"run_for": "1h", "v": v} }
}
func withNoUpdate() jobOpt { return func(j *state.Job) { j.TaskGroups[0].Update = nil } }

// register registers the job with its pending job-register evaluation.
func (h *harness) register(j *state.Job) *state.Evaluation {
	h.t.Helper()
	e := h.newEval(j.ID, state.EvalTriggerJobRegister)
	if _, err := h.store.JobRegister(h.next(), j, e); err != nil {
		h.t.Fatal(err)
	}
	return h.eval(e.ID)
}

func (h *harness) newEval(jobID, trigger string) *state.Evaluation {
	return &state.Evaluation{
		ID: uuid.NewString(), Namespace: "default", Priority: 50, Type: state.JobTypeService,
		TriggeredBy: trigger, JobID: jobID, Status: state.EvalStatusPending,
		CreateTime: h.now.UnixNano(), ModifyTime: h.now.UnixNano(),
	}
}

// evalFor writes a pending evaluation of the job (as the watcher, the
// client endpoints or the broker do).
func (h *harness) evalFor(jobID, trigger string) *state.Evaluation {
	h.t.Helper()
	e := h.newEval(jobID, trigger)
	if err := h.store.EvalsUpsert(h.next(), []*state.Evaluation{e}); err != nil {
		h.t.Fatal(err)
	}
	return h.eval(e.ID)
}

func (h *harness) eval(id string) *state.Evaluation {
	h.t.Helper()
	_, e, err := h.store.Eval(nil, id)
	if err != nil || e == nil {
		h.t.Fatalf("eval %s: %v %v", id, e, err)
	}
	return e
}

// process runs the scheduler on the evaluation from a point-in-time view and
// returns the evaluation as stored afterwards.
func (h *harness) process(e *state.Evaluation) *state.Evaluation {
	h.t.Helper()
	if !h.noCrossCheck {
		h.crossCheck(e)
	}
	s := NewServiceScheduler(hclog.NewNullLogger(), h.store.PointInTime(), h, h.clock)
	if err := s.Process(e); err != nil {
		h.t.Fatalf("process %s: %v", e.ID, err)
	}
	return h.eval(e.ID)
}

// crossCheck computes the evaluation's plan with the usage view and with
// the walk over every allocation: the same placements on the same nodes,
// the same stops and in-place updates.
func (h *harness) crossCheck(e *state.Evaluation) {
	h.t.Helper()
	snap := h.store.PointInTime()
	withView, err := compute(snap, e, h, h.now)
	if err != nil {
		h.t.Fatal(err)
	}
	walked, err := computeWith(snap, e, nil, h.now, h.limited)
	if err != nil {
		h.t.Fatal(err)
	}
	if a, b := planShape(withView.plan), planShape(walked.plan); !reflect.DeepEqual(a, b) {
		h.t.Fatalf("the usage view and the walk disagree:\nview %v\nwalk %v", a, b)
	}
	// The score cache against every node scored for every placement: the
	// same plan, the same metrics (placements' and failures').
	scored, err := computeOpts(snap, e, h, h.now, computeOptions{limited: h.limited, uncached: true})
	if err != nil {
		h.t.Fatal(err)
	}
	if a, b := planShape(withView.plan), planShape(scored.plan); !reflect.DeepEqual(a, b) {
		h.t.Fatalf("the score cache and scoring every node disagree:\ncache %v\nevery %v", a, b)
	}
	for i, a := range withView.plan.Placements {
		if x, y := metricShape(a.Metrics), metricShape(scored.plan.Placements[i].Metrics); !reflect.DeepEqual(x, y) {
			h.t.Fatalf("placement %s: the score cache's metric %+v, scoring every node %+v", a.Name, x, y)
		}
	}
	if len(withView.failed) != len(scored.failed) {
		h.t.Fatalf("failed groups: the score cache %v, scoring every node %v", withView.failed, scored.failed)
	}
	for g, m := range withView.failed {
		if x, y := metricShape(m), metricShape(scored.failed[g]); !reflect.DeepEqual(x, y) {
			h.t.Fatalf("group %s failed: the score cache's metric %+v, scoring every node %+v", g, x, y)
		}
	}
}

// metricShape is a placement metric without its timing, scores as text.
func metricShape(m *state.AllocMetric) string {
	if m == nil {
		return "<nil>"
	}
	c := *m
	c.AllocationTime = 0
	scores := c.ScoreMetaData
	c.ScoreMetaData = nil
	out := fmt.Sprintf("%+v", c)
	for _, s := range scores {
		out += fmt.Sprintf(" %+v", *s)
	}
	return out
}

// planShape is a plan without its random IDs.
func planShape(p *state.Plan) []string {
	var out []string
	for _, a := range p.Placements {
		out = append(out, fmt.Sprintf("place %s on %s ports %v", a.Name, a.NodeID, a.AllocatedPorts))
	}
	for _, st := range p.Stops {
		out = append(out, "stop "+st.AllocID+" "+st.DesiredDescription)
	}
	for _, ip := range p.InPlace {
		out = append(out, "inplace "+ip.AllocID)
	}
	return out
}

// run writes an evaluation for the job and processes it.
func (h *harness) run(jobID, trigger string) *state.Evaluation {
	h.t.Helper()
	return h.process(h.evalFor(jobID, trigger))
}

func (h *harness) allocs(jobID string) []*state.Allocation {
	h.t.Helper()
	_, as, err := h.store.AllocsByJob(nil, "default", jobID)
	if err != nil {
		h.t.Fatal(err)
	}
	sort.Slice(as, func(i, j int) bool {
		return as[i].Name < as[j].Name || (as[i].Name == as[j].Name && as[i].CreateIndex < as[j].CreateIndex)
	})
	return as
}

// live lists the allocations still meant to run.
func (h *harness) live(jobID string) []*state.Allocation {
	var out []*state.Allocation
	for _, a := range h.allocs(jobID) {
		if !a.TerminalStatus() {
			out = append(out, a)
		}
	}
	return out
}

func (h *harness) job(id string) *state.Job {
	h.t.Helper()
	_, j, err := h.store.Job(nil, "default", id)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

func (h *harness) deployments(jobID string) []*state.Deployment {
	h.t.Helper()
	_, ds, err := h.store.DeploymentsByJob(nil, "default", jobID)
	if err != nil {
		h.t.Fatal(err)
	}
	return ds
}

// latest is the job's newest deployment (nil when none).
func (h *harness) latest(jobID string) *state.Deployment {
	if ds := h.deployments(jobID); len(ds) > 0 {
		return ds[0]
	}
	return nil
}

// report sends one client update per allocation, as the client would.
func (h *harness) report(as []*state.Allocation, status string, healthy *bool) {
	h.t.Helper()
	for _, a := range as {
		u := &state.AllocClientUpdate{ID: a.ID, ClientStatus: status}
		if healthy != nil {
			u.DeploymentStatus = &state.AllocDeploymentStatus{Healthy: healthy, Timestamp: h.now}
		}
		if err := h.store.AllocsClientUpdate(h.next(), a.NodeID, []*state.AllocClientUpdate{u}, nil, h.now.UnixNano()); err != nil {
			h.t.Fatal(err)
		}
	}
}

var yes, no = ptr(true), ptr(false)

func ptr[T any](v T) *T { return &v }

// healthy marks every live allocation of the job that has no health yet
// running and healthy (not an unknown one: its node is cut off).
func (h *harness) healthy(jobID string) int {
	var todo []*state.Allocation
	for _, a := range h.live(jobID) {
		if (a.DeploymentStatus == nil || a.DeploymentStatus.Healthy == nil) && a.ClientStatus != state.AllocClientStatusUnknown {
			todo = append(todo, a)
		}
	}
	h.report(todo, state.AllocClientStatusRunning, yes)
	return len(todo)
}

// settle plays clients and the deployment watcher until the job's
// scheduler has nothing left to do: every round marks the live allocations
// healthy and runs a deployment-watcher evaluation.
func (h *harness) settle(jobID string) {
	h.t.Helper()
	for range 50 {
		n := len(h.plans)
		marked := h.healthy(jobID)
		h.run(jobID, state.EvalTriggerDeploymentWatcher)
		if marked == 0 && len(h.plans) == n {
			return
		}
	}
	h.t.Fatalf("job %s did not settle", jobID)
}

func (h *harness) setDeployment(id, status, desc string) {
	h.t.Helper()
	_, err := h.store.DeploymentUpdateStatus(h.next(), &state.DeploymentUpdateRequest{
		Update: state.DeploymentStatusUpdate{DeploymentID: id, Status: status, StatusDescription: desc},
		Now:    h.now.UnixNano(),
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) promote(id string) {
	h.t.Helper()
	if _, err := h.store.DeploymentPromote(h.next(), &state.DeploymentPromoteRequest{DeploymentID: id, All: true, Now: h.now.UnixNano()}); err != nil {
		h.t.Fatal(err)
	}
}

// countBy counts the allocations for which f is true.
func countBy(as []*state.Allocation, f func(a *state.Allocation) bool) int {
	n := 0
	for _, a := range as {
		if f(a) {
			n++
		}
	}
	return n
}

func names(as []*state.Allocation) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.Name
	}
	sort.Strings(out)
	return out
}
