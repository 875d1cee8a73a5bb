package client

import (
	"reflect"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// Nomad's update-strategy defaults.
const (
	defaultMinHealthyTime  = 10 * time.Second
	defaultHealthyDeadline = 5 * time.Minute
)

// allocRunner runs one allocation: its tasks, its client status and its
// health for the deployment. Like taskRunner it lives under the client's lock.
type allocRunner struct {
	c     *Client
	alloc *api.Allocation
	group *api.TaskGroup
	tasks []*taskRunner

	status      string
	description string
	stopping    bool
	// lost: a task's process died while the client was down.
	lost bool
	// unlisted: the servers no longer list the allocation; once its tasks
	// are dead it is forgotten.
	unlisted bool

	// Health: reported once, for allocations of a deployment.
	watchHealth    bool
	healthReported *api.AllocDeploymentStatus
	minTimer       Timer
	deadlineTimer  Timer
	healthGen      uint64

	// checks run the services' checks while the allocation runs;
	// checkResults are the results to report (checks.go).
	checks       []*checkRunner
	checkResults map[string]*api.CheckResult
}

func newAllocRunner(c *Client, a *api.Allocation, tg *api.TaskGroup) *allocRunner {
	ar := &allocRunner{c: c, alloc: a, group: tg, status: api.AllocClientStatusPending}
	for _, t := range tg.Tasks {
		ar.tasks = append(ar.tasks, newTaskRunner(ar, t))
	}
	u := tg.Update
	ar.watchHealth = a.DeploymentID != "" && u != nil && u.HealthCheck != api.UpdateHealthManual
	return ar
}

// run starts every task and the health deadline.
func (ar *allocRunner) run() {
	ar.startHealthDeadline()
	for _, tr := range ar.tasks {
		tr.start()
	}
	ar.changed()
}

// startHealthDeadline arms the HealthyDeadline timer when health is watched.
func (ar *allocRunner) startHealthDeadline() {
	if !ar.watchHealth {
		return
	}
	d := ar.group.Update.HealthyDeadline
	if d <= 0 {
		d = defaultHealthyDeadline
	}
	g := ar.healthGen
	ar.deadlineTimer = ar.c.clock.AfterFunc(d, ar.locked(func() {
		if g == ar.healthGen {
			ar.reportHealth(false)
		}
	}))
}

// locked wraps a timer callback: under the client's lock, skipped once the
// client is closed, followed by a status report.
func (ar *allocRunner) locked(fn func()) func() {
	c := ar.c
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return
		}
		fn()
		ar.changed()
	}
}

func (ar *allocRunner) restartPolicy() api.RestartPolicy {
	if ar.group.RestartPolicy != nil {
		return *ar.group.RestartPolicy
	}
	return defaultRestartPolicy
}

// update takes a newer version of the allocation from the servers.
func (ar *allocRunner) update(a *api.Allocation, tg *api.TaskGroup) {
	joined := a.DeploymentID != ar.alloc.DeploymentID
	ar.alloc = a
	ar.c.markDirtyLocked(ar)
	newChecks := false
	if tg != nil {
		if !reflect.DeepEqual(servicesOf(ar.group), servicesOf(tg)) {
			// Updated in place with other services: new checks.
			ar.resetChecks()
			newChecks = true
		}
		ar.group = tg
	}
	switch a.DesiredStatus {
	case api.AllocDesiredStatusStop, api.AllocDesiredStatusEvict:
		ar.stop()
		return
	}
	if newChecks && !joined {
		ar.changed() // starts them
	}
	if a.ClientStatus == api.AllocClientStatusUnknown && !ar.stopping {
		// The servers marked it unknown while this node was cut off: tell
		// them it is still here (Nomad's allocRunner.Reconnect).
		for _, tr := range ar.tasks {
			tr.event(&api.TaskEvent{Type: api.TaskClientReconnected, DisplayMessage: "Client reconnected"}, "")
		}
		ar.changed()
	}
	if joined && !ar.stopping {
		// Updated in place into a new deployment (a scale or a rollback to
		// the same spec): that deployment needs this allocation's health
		// anew, as Nomad's client watches it again.
		ar.stopHealth()
		ar.healthReported = nil
		u := ar.group.Update
		ar.watchHealth = a.DeploymentID != "" && u != nil && u.HealthCheck != api.UpdateHealthManual
		ar.startHealthDeadline()
		ar.changed()
	}
}

// stop kills every task (the servers want the allocation stopped).
func (ar *allocRunner) stop() {
	if ar.stopping {
		return
	}
	ar.stopping = true
	ar.stopHealth()
	ar.stopChecks()
	if ar.finished() {
		return
	}
	for _, tr := range ar.tasks {
		tr.kill("")
	}
	ar.changed()
}

// taskFailed kills the failed task's siblings, as Nomad does.
func (ar *allocRunner) taskFailed(failed *taskRunner) {
	for _, tr := range ar.tasks {
		if tr == failed || tr.phase == phaseDead {
			continue
		}
		tr.event(&api.TaskEvent{Type: api.TaskSiblingFailed, FailedSibling: failed.task.Name,
			DisplayMessage: "Task's sibling \"" + failed.task.Name + "\" failed"}, "")
		tr.kill("")
	}
}

// finished says whether every task is dead.
func (ar *allocRunner) finished() bool {
	for _, tr := range ar.tasks {
		if tr.phase != phaseDead {
			return false
		}
	}
	return true
}

// destroy stops the runner's timers (client shutdown, or a finished
// allocation the servers no longer list).
func (ar *allocRunner) destroy() {
	ar.stopHealth()
	ar.stopChecks()
	for _, tr := range ar.tasks {
		tr.disarm()
		if tr.proc != nil && ar.c.cfg.KillTasksOnShutdown {
			_ = tr.proc.signal(syscall.SIGKILL)
		}
	}
}

// changed recomputes the client status and health after a task changed,
// and queues a report.
func (ar *allocRunner) changed() {
	var pending, running, dead, failed bool
	allRunning := len(ar.tasks) > 0
	for _, tr := range ar.tasks {
		switch {
		case tr.st.State == api.TaskStateDead && tr.st.Failed:
			failed = true
		case tr.st.State == api.TaskStateDead:
			dead = true
		case tr.st.State == api.TaskStateRunning:
			running = true
		default:
			pending = true
		}
		if tr.st.State != api.TaskStateRunning {
			allRunning = false
		}
	}
	status, desc := api.AllocClientStatusPending, "No tasks have started"
	switch {
	case ar.lost:
		status, desc = api.AllocClientStatusLost, "a task's process ended while the client was down"
	case failed:
		status, desc = api.AllocClientStatusFailed, "Failed tasks"
	case running:
		status, desc = api.AllocClientStatusRunning, "Tasks are running"
	case pending:
	case dead:
		status, desc = api.AllocClientStatusComplete, "All tasks have completed"
	}
	ar.status, ar.description = status, desc
	if status == api.AllocClientStatusRunning && !ar.stopping {
		ar.startChecks()
	} else if status != api.AllocClientStatusPending {
		ar.stopChecks()
	}
	ar.checkHealth(failed, allRunning)
	ar.c.queueUpdate(ar.report())
	ar.c.markDirtyLocked(ar)
	if ar.unlisted && ar.finished() {
		ar.c.forgetLocked(ar)
	}
}

// checkHealth follows the group's health check: healthy once every task
// has run (and, with health_check = "checks", every check has passed) for
// MinHealthyTime, unhealthy when a task fails (or, from run's timer, at the
// HealthyDeadline).
func (ar *allocRunner) checkHealth(failed, allRunning bool) {
	if !ar.watchHealth || ar.healthReported != nil || ar.stopping {
		return
	}
	if ar.group.Update.HealthCheck == api.UpdateHealthChecks && allRunning {
		if n, passing := ar.healthChecks(); n > 0 && !passing || n == 0 && groupHasChecks(ar.group) && ar.checks == nil {
			allRunning = false
		}
	}
	if failed {
		ar.reportHealth(false)
		return
	}
	if !allRunning {
		if ar.minTimer != nil {
			ar.minTimer.Stop()
			ar.minTimer = nil
			ar.healthGen++
		}
		return
	}
	if ar.minTimer != nil {
		return
	}
	min := ar.group.Update.MinHealthyTime
	if min < 0 {
		min = defaultMinHealthyTime
	}
	if min == 0 {
		ar.reportHealth(true)
		return
	}
	g := ar.healthGen
	ar.minTimer = ar.c.clock.AfterFunc(min, ar.locked(func() {
		if g == ar.healthGen {
			ar.reportHealth(true)
		}
	}))
}

func (ar *allocRunner) reportHealth(healthy bool) {
	if ar.healthReported != nil {
		return
	}
	h := healthy
	ar.healthReported = &api.AllocDeploymentStatus{Healthy: &h, Timestamp: ar.c.clock.Now().UTC()}
	ar.stopHealth()
}

func (ar *allocRunner) stopHealth() {
	ar.healthGen++
	if ar.minTimer != nil {
		ar.minTimer.Stop()
		ar.minTimer = nil
	}
	if ar.deadlineTimer != nil {
		ar.deadlineTimer.Stop()
		ar.deadlineTimer = nil
	}
}

// report is the allocation's status as the servers should see it.
func (ar *allocRunner) report() *api.AllocClientUpdate {
	u := &api.AllocClientUpdate{
		ID:                ar.alloc.ID,
		ClientStatus:      ar.status,
		ClientDescription: ar.description,
		TaskStates:        make(map[string]*api.TaskState, len(ar.tasks)),
	}
	for _, tr := range ar.tasks {
		u.TaskStates[tr.task.Name] = tr.snapshot()
	}
	if ar.healthReported != nil {
		ds := *ar.healthReported
		u.DeploymentStatus = &ds
	}
	if len(ar.checkResults) > 0 {
		u.CheckResults = make(map[string]*api.CheckResult, len(ar.checkResults))
		for k, v := range ar.checkResults {
			u.CheckResults[k] = v
		}
	}
	return u
}

// servicesOf lists the group's and its tasks' services.
func servicesOf(tg *api.TaskGroup) [][]*api.Service {
	if tg == nil {
		return nil
	}
	out := [][]*api.Service{tg.Services}
	for _, t := range tg.Tasks {
		out = append(out, t.Services)
	}
	return out
}
