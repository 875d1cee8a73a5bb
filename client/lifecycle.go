package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"

	"github.com/ctlplane/ctlplane/api"
)

// Restart and signal of an allocation's tasks (Nomad's alloc restart and
// alloc signal), asked by the servers with a grant. A restart kills the
// task's process with its kill signal and starts it again at once; it is
// counted in the task's Restarts but not against its restart policy, as
// in Nomad.

var errTaskNotRunning = errors.New("Task not running")

// taskSignals are the signals a task may be sent (the servers check the
// same list).
var taskSignals = map[string]syscall.Signal{
	"SIGHUP": syscall.SIGHUP, "SIGINT": syscall.SIGINT, "SIGQUIT": syscall.SIGQUIT, "SIGKILL": syscall.SIGKILL,
	"SIGUSR1": syscall.SIGUSR1, "SIGUSR2": syscall.SIGUSR2, "SIGTERM": syscall.SIGTERM, "SIGCONT": syscall.SIGCONT,
	"SIGSTOP": syscall.SIGSTOP, "SIGTSTP": syscall.SIGTSTP, "SIGWINCH": syscall.SIGWINCH, "SIGALRM": syscall.SIGALRM,
}

// restart restarts a running task; reason is the Restart Signaled event's.
func (tr *taskRunner) restart(reason string) error {
	if tr.phase != phaseRunning || tr.userRestart {
		return errTaskNotRunning
	}
	tr.event(&api.TaskEvent{Type: api.TaskRestartSignal, RestartReason: reason, DisplayMessage: reason}, "")
	p := tr.proc
	if p == nil {
		// The mock driver: nothing to wait for.
		tr.disarm()
		tr.restartNow()
		return nil
	}
	tr.userRestart = true
	sig, _ := killSignal(tr.task.KillSignal)
	if err := p.signal(sig); err != nil {
		tr.ar.c.logger.Warn("failed to signal a task to restart it", "task", tr.task.Name, "pid", p.pid, "error", err)
	}
	timeout := tr.task.KillTimeout
	if timeout <= 0 {
		timeout = defaultKillTimeout
	}
	// The process's end (procExited) starts it again.
	tr.arm(timeout, func() { _ = p.signal(syscall.SIGKILL) })
	return nil
}

// restartedByUser: the process of a task being restarted ended.
func (tr *taskRunner) restartedByUser(res exitResult) {
	tr.userRestart = false
	tr.disarm()
	e := &api.TaskEvent{Type: api.TaskTerminated, ExitCode: res.code, Signal: res.signal, DisplayMessage: fmt.Sprintf("Exit Code: %d", res.code)}
	if res.signal != 0 {
		e.DisplayMessage = fmt.Sprintf("Exit Code: %d, Signal: %d", res.code, res.signal)
	}
	tr.event(e, "")
	tr.restartNow()
}

// restartNow counts a restart and starts the task again.
func (tr *taskRunner) restartNow() {
	now := tr.now()
	tr.st.Restarts++
	tr.st.LastRestart = now.UTC()
	tr.phase = phaseRestartWait
	tr.event(&api.TaskEvent{Type: api.TaskRestarting, DisplayMessage: "Task restarting in 0s"}, api.TaskStatePending)
	tr.launch()
}

// signal sends sig to a running task's process (the mock driver only
// records it).
func (tr *taskRunner) signal(name string, sig syscall.Signal) error {
	if tr.phase != phaseRunning || tr.userRestart {
		return errTaskNotRunning
	}
	tr.event(&api.TaskEvent{Type: api.TaskSignaling, Message: name, DisplayMessage: "Task being sent signal " + name}, "")
	if p := tr.proc; p != nil && p.alive() {
		if err := syscall.Kill(p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("failed to signal the task: %v", err)
		}
	}
	return nil
}

// lifecycleRequest decodes a lifecycle body (at most 64 KiB).
func lifecycleRequest(w http.ResponseWriter, r *http.Request, what string, out any) bool {
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		plainError(w, http.StatusBadRequest, "%s decoding failed: %v", what, err)
		return false
	}
	return true
}

// tasksFor finds the runner and the tasks a call names ("" for every
// running task), under c.mu; it answers the refusal itself.
func (c *Client) tasksFor(w http.ResponseWriter, allocID, task string) (*allocRunner, []*taskRunner, bool) {
	ar := c.runners[allocID]
	if ar == nil || ar.stopping {
		plainError(w, http.StatusNotFound, "allocation %s is not running on this node", allocID)
		return nil, nil, false
	}
	var out []*taskRunner
	for _, tr := range ar.tasks {
		if task != "" && tr.task.Name != task {
			continue
		}
		if task == "" && (tr.phase != phaseRunning || tr.userRestart) {
			continue
		}
		out = append(out, tr)
	}
	if task != "" && len(out) == 0 {
		plainError(w, http.StatusNotFound, "Could not find task runner for task: %s", task)
		return nil, nil, false
	}
	if len(out) == 0 {
		plainError(w, http.StatusBadRequest, "%v", errTaskNotRunning)
		return nil, nil, false
	}
	return ar, out, true
}

func (c *Client) handleRestart(w http.ResponseWriter, r *http.Request) {
	allocID, ok := allocRequest(w, r, http.MethodPut, http.MethodPost)
	if !ok {
		return
	}
	var req api.AllocationRestartRequest
	if !lifecycleRequest(w, r, "AllocationRestartRequest", &req) {
		return
	}
	if req.AllTasks && req.TaskName != "" {
		plainError(w, http.StatusBadRequest, "task name cannot be set when restarting all tasks")
		return
	}
	g := api.Grant{Op: api.GrantAllocRestart, AllocID: allocID, Task: req.TaskName, AllTasks: req.AllTasks}
	if code, err := c.authorizeGrant(r.Context(), r, g, false); err != nil {
		plainError(w, code, "%v", err)
		return
	}
	reason := "User requested running tasks to restart"
	switch {
	case req.TaskName != "":
		reason = "User requested task to restart"
	case req.AllTasks:
		reason = "User requested all tasks to restart"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ar, tasks, ok := c.tasksFor(w, allocID, req.TaskName)
	if !ok {
		return
	}
	for _, tr := range tasks {
		if err := tr.restart(reason); err != nil {
			ar.changed()
			plainError(w, http.StatusBadRequest, "%v", err)
			return
		}
	}
	ar.changed()
	writeNodeJSON(w, struct{}{})
}

func (c *Client) handleSignal(w http.ResponseWriter, r *http.Request) {
	allocID, ok := allocRequest(w, r, http.MethodPut, http.MethodPost)
	if !ok {
		return
	}
	var req api.AllocSignalRequest
	if !lifecycleRequest(w, r, "AllocSignalRequest", &req) {
		return
	}
	sig, known := taskSignals[req.Signal]
	if !known {
		plainError(w, http.StatusBadRequest, "invalid signal %q", req.Signal)
		return
	}
	g := api.Grant{Op: api.GrantAllocSignal, AllocID: allocID, Task: req.Task, Signal: req.Signal}
	if code, err := c.authorizeGrant(r.Context(), r, g, false); err != nil {
		plainError(w, code, "%v", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ar, tasks, ok := c.tasksFor(w, allocID, req.Task)
	if !ok {
		return
	}
	for _, tr := range tasks {
		if err := tr.signal(req.Signal, sig); err != nil {
			ar.changed()
			plainError(w, http.StatusBadRequest, "%v", err)
			return
		}
	}
	ar.changed()
	writeNodeJSON(w, struct{}{})
}
