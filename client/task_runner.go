package client

import (
	"fmt"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// maxTaskEvents is how many recent events a task state keeps (Nomad's 10).
const maxTaskEvents = 10

// Restart reasons (Nomad's texts).
const (
	reasonWithinPolicy = "Restart within policy"
	reasonNoRestarts   = "Policy allows no restarts"
	reasonUnrecovered  = "Error was unrecoverable"
)

// defaultRestartPolicy is Nomad's for service jobs.
var defaultRestartPolicy = api.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"}

// defaultKillTimeout is Nomad's.
const defaultKillTimeout = 5 * time.Second

type taskPhase int

const (
	phaseIdle        taskPhase = iota
	phaseStarting              // start_block_for
	phaseRunning               // until run_for ends or a kill
	phaseRestartWait           // restart delay
	phaseKilling               // kill_after
	phaseDead
)

// taskRunner runs one task of an allocation with the mock driver. It has no
// goroutine: each step is a timer callback, under the client's lock.
type taskRunner struct {
	ar     *allocRunner
	task   *api.Task
	cfg    mockConfig
	raw    rawExecConfig
	cfgErr error
	// proc is the running process of a raw_exec task.
	proc  *rawProc
	st    *api.TaskState
	phase taskPhase

	timer Timer
	gen   uint64 // the current timer's generation; older callbacks are stale

	// Restart tracking (Nomad's restart tracker): attempts counted in the
	// interval that started at windowStart.
	count       int
	windowStart time.Time

	// userRestart: the process is being killed to restart (lifecycle.go).
	userRestart bool
}

func newTaskRunner(ar *allocRunner, task *api.Task) *taskRunner {
	tr := &taskRunner{ar: ar, task: task, st: &api.TaskState{State: api.TaskStatePending}}
	// Both drivers see their config interpolated with the task env
	// (${NOMAD_PORT_http}, ${NOMAD_ALLOC_ID}, …), as Nomad's do.
	cfg, _ := interpolateConfig(task.Config, taskEnvMap(ar.alloc, task, ar.c.taskPaths(ar.alloc.ID, task.Name))).(map[string]any)
	if task.Driver == RawExecDriver {
		tr.raw, tr.cfgErr = parseRawExecConfig(cfg)
		if tr.cfgErr == nil {
			_, tr.cfgErr = killSignal(task.KillSignal)
		}
	} else {
		tr.cfg, tr.cfgErr = parseMockConfig(cfg)
	}
	return tr
}

func (tr *taskRunner) now() time.Time { return tr.ar.c.clock.Now() }

// arm replaces the task's pending timer with fn after d.
func (tr *taskRunner) arm(d time.Duration, fn func()) {
	tr.disarm()
	tr.gen++
	g := tr.gen
	c := tr.ar.c
	tr.timer = c.clock.AfterFunc(d, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if tr.gen != g || c.closed {
			return
		}
		tr.timer = nil
		fn()
		tr.ar.changed()
	})
}

func (tr *taskRunner) disarm() {
	if tr.timer != nil {
		tr.timer.Stop()
		tr.timer = nil
	}
	tr.gen++
}

// event records an event and, when state is not "", the new task api.
func (tr *taskRunner) event(e *api.TaskEvent, newState string) {
	now := tr.now()
	e.Time = now.UnixNano()
	tr.st.Events = append(tr.st.Events, e)
	if n := len(tr.st.Events); n > maxTaskEvents {
		tr.st.Events = append([]*api.TaskEvent(nil), tr.st.Events[n-maxTaskEvents:]...)
	}
	switch newState {
	case api.TaskStateRunning:
		if tr.st.State != api.TaskStateRunning {
			tr.st.StartedAt = now.UTC()
		}
	case api.TaskStateDead:
		if tr.st.FinishedAt.IsZero() {
			tr.st.FinishedAt = now.UTC()
		}
	}
	if newState != "" {
		tr.st.State = newState
	}
}

// start is the first start of the task.
func (tr *taskRunner) start() {
	if tr.phase != phaseIdle {
		// Killed before it started, by a failing sibling.
		return
	}
	tr.event(&api.TaskEvent{Type: api.TaskReceived, DisplayMessage: "Task received by client"}, "")
	if !tr.ar.c.hasDriver(tr.task.Driver) {
		msg := fmt.Sprintf("driver %q is not available on this node", tr.task.Driver)
		tr.fail(&api.TaskEvent{Type: api.TaskDriverFailure, DriverError: msg, DisplayMessage: msg, FailsTask: true})
		return
	}
	if tr.cfgErr != nil {
		msg := tr.cfgErr.Error()
		tr.fail(&api.TaskEvent{Type: api.TaskFailedValidation, ValidationError: msg, DisplayMessage: msg, FailsTask: true})
		return
	}
	tr.event(&api.TaskEvent{Type: api.TaskSetup, Message: "Building Task Directory", DisplayMessage: "Building Task Directory"}, "")
	tr.launch()
}

// launch starts the task, after start_block_for.
func (tr *taskRunner) launch() {
	if tr.task.Driver == RawExecDriver {
		tr.launchRaw()
		return
	}
	if tr.cfg.startBlockFor > 0 && tr.phase != phaseStarting {
		tr.phase = phaseStarting
		tr.arm(tr.cfg.startBlockFor, tr.launch)
		return
	}
	if tr.cfg.startError != "" {
		e := &api.TaskEvent{Type: api.TaskDriverFailure, DriverError: tr.cfg.startError, DisplayMessage: tr.cfg.startError}
		if !tr.cfg.startErrorRecoverable {
			e.FailsTask = true
			tr.fail(e)
			return
		}
		tr.event(e, "")
		tr.exited(false)
		return
	}
	tr.phase = phaseRunning
	tr.event(&api.TaskEvent{Type: api.TaskStarted, DisplayMessage: "Task started by client"}, api.TaskStateRunning)
	if tr.cfg.hasRunFor {
		tr.arm(tr.cfg.runFor, tr.runEnded)
	}
}

// launchRaw starts a raw_exec task's process; a failed start goes
// through the restart policy, as Nomad's driver failures do.
func (tr *taskRunner) launchRaw() {
	p, err := tr.ar.c.startRawExec(tr.ar.alloc, tr.task, tr.raw)
	if err != nil {
		msg := err.Error()
		tr.event(&api.TaskEvent{Type: api.TaskDriverFailure, DriverError: msg, DisplayMessage: msg}, "")
		tr.exited(false)
		return
	}
	tr.attach(p)
	tr.event(&api.TaskEvent{Type: api.TaskStarted, DisplayMessage: "Task started by client"}, api.TaskStateRunning)
}

// attach follows a running process until it ends.
func (tr *taskRunner) attach(p *rawProc) {
	tr.proc = p
	tr.phase = phaseRunning
	c := tr.ar.c
	c.procs.Add(1)
	go func() {
		defer c.procs.Done()
		res := p.wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		if tr.proc != p || c.closed {
			return
		}
		tr.proc = nil
		tr.procExited(res)
		tr.ar.changed()
	}()
}

// procExited: the task's process ended, by itself or killed.
func (tr *taskRunner) procExited(res exitResult) {
	if tr.userRestart {
		tr.restartedByUser(res)
		return
	}
	if tr.phase == phaseKilling {
		tr.disarm()
		tr.killed()
		return
	}
	e := &api.TaskEvent{Type: api.TaskTerminated, ExitCode: res.code, Signal: res.signal}
	switch {
	case !res.known:
		e.Message = "the process was re-attached after a client restart: its exit status is unknown"
		e.DisplayMessage = "Exit Code: unknown"
	case res.signal != 0:
		e.DisplayMessage = fmt.Sprintf("Exit Code: %d, Signal: %d", res.code, res.signal)
	default:
		e.DisplayMessage = fmt.Sprintf("Exit Code: %d", res.code)
	}
	tr.event(e, "")
	tr.exited(res.known && res.code == 0)
}

// runEnded: run_for is over; the task exits with exit_code.
func (tr *taskRunner) runEnded() {
	msg := fmt.Sprintf("Exit Code: %d", tr.cfg.exitCode)
	if tr.cfg.exitErrMsg != "" {
		msg += ", Exit Message: " + fmt.Sprintf("%q", tr.cfg.exitErrMsg)
	}
	tr.event(&api.TaskEvent{Type: api.TaskTerminated, ExitCode: tr.cfg.exitCode, Message: tr.cfg.exitErrMsg, DisplayMessage: msg}, "")
	tr.exited(tr.cfg.exitCode == 0)
}

// exited applies the restart policy to an exit (a service task is restarted
// whatever its exit code, as in Nomad).
func (tr *taskRunner) exited(success bool) {
	p := tr.ar.restartPolicy()
	now := tr.now()
	if tr.windowStart.IsZero() || now.After(tr.windowStart.Add(p.Interval)) {
		tr.count, tr.windowStart = 0, now
	}
	tr.count++
	delay := p.Delay
	reason := reasonWithinPolicy
	if tr.count > p.Attempts {
		switch {
		case p.Mode == "delay":
			delay = tr.windowStart.Add(p.Interval).Sub(now)
			reason = fmt.Sprintf("Exceeded allowed attempts %d in interval %v and mode is %q", p.Attempts, p.Interval, p.Mode)
		case p.Attempts == 0:
			tr.notRestarting(reasonNoRestarts)
			return
		default:
			tr.notRestarting(fmt.Sprintf("Exceeded allowed attempts %d in interval %v and mode is %q", p.Attempts, p.Interval, p.Mode))
			return
		}
	}
	_ = success
	tr.phase = phaseRestartWait
	tr.st.Restarts++
	tr.st.LastRestart = now.UTC()
	tr.event(&api.TaskEvent{Type: api.TaskRestarting, RestartReason: reason, StartDelay: int64(delay),
		DisplayMessage: fmt.Sprintf("%s - Task restarting in %v", reason, delay)}, api.TaskStatePending)
	tr.arm(delay, tr.launch)
}

func (tr *taskRunner) notRestarting(reason string) {
	tr.fail(&api.TaskEvent{Type: api.TaskNotRestarting, RestartReason: reason, FailsTask: true, DisplayMessage: reason})
}

// fail ends the task as failed with event e; the allocation's other tasks are killed.
func (tr *taskRunner) fail(e *api.TaskEvent) {
	tr.disarm()
	tr.st.Failed = true
	tr.phase = phaseDead
	tr.event(e, api.TaskStateDead)
	tr.ar.taskFailed(tr)
}

// kill stops the task: Killing, then Killed after kill_after.
func (tr *taskRunner) kill(reason string) {
	tr.userRestart = false
	switch tr.phase {
	case phaseDead, phaseKilling:
		return
	case phaseIdle, phaseStarting, phaseRestartWait:
		// Not running: nothing to wait for.
		tr.disarm()
		tr.killed()
		return
	}
	timeout := tr.task.KillTimeout
	if timeout <= 0 {
		timeout = defaultKillTimeout
	}
	tr.phase = phaseKilling
	tr.event(&api.TaskEvent{Type: api.TaskKilling, KillReason: reason, KillTimeout: timeout,
		DisplayMessage: fmt.Sprintf("Sent interrupt. Waiting %v before force killing", timeout)}, "")
	if p := tr.proc; p != nil {
		// KillSignal to the group, then SIGKILL after KillTimeout; the
		// process's end (see attach) completes the kill.
		sig, _ := killSignal(tr.task.KillSignal)
		if err := p.signal(sig); err != nil {
			tr.ar.c.logger.Warn("failed to signal a task", "task", tr.task.Name, "pid", p.pid, "error", err)
		}
		tr.arm(timeout, func() { _ = p.signal(syscall.SIGKILL) })
		return
	}
	if tr.cfg.killAfter > 0 {
		tr.arm(tr.cfg.killAfter, tr.killed)
		return
	}
	tr.disarm()
	tr.killed()
}

func (tr *taskRunner) killed() {
	tr.phase = phaseDead
	tr.event(&api.TaskEvent{Type: api.TaskKilled, DisplayMessage: "Task successfully killed"}, api.TaskStateDead)
}

// snapshot is a copy of the task state that later changes do not touch.
func (tr *taskRunner) snapshot() *api.TaskState {
	c := *tr.st
	c.Events = append([]*api.TaskEvent(nil), tr.st.Events...)
	return &c
}
