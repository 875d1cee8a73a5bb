package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// The client's state in DATA_DIR/client/state.json: the node ID and, per
// allocation, what a restarted client needs to carry on: the allocation,
// its group, health, and per task its state, restart counters and pid.

type savedState struct {
	NodeID string
	Allocs []*savedAlloc
}

type savedAlloc struct {
	Alloc  *api.Allocation
	Group  *api.TaskGroup
	Health *api.AllocDeploymentStatus
	Tasks  []*savedTask
}

type savedTask struct {
	Name        string
	State       *api.TaskState
	Pid         int
	StartTick   uint64
	Count       int
	WindowStart time.Time
}

func (c *Client) statePath() string { return filepath.Join(c.cfg.DataDir, "client", "state.json") }

// loadState reads the saved state (nil when there is none).
func loadState(dataDir string) (*savedState, error) {
	path := filepath.Join(dataDir, "client", "state.json")
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Its pids are signalled and its tasks started again: only our own.
	if err := checkOwned("client state", path, fi, false); err != nil {
		return nil, err
	}
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s savedState
	if err := json.Unmarshal(buf, &s); err != nil {
		return nil, fmt.Errorf("client state %s is corrupt: %w", filepath.Join(dataDir, "client", "state.json"), err)
	}
	return &s, nil
}

// snapshotLocked encodes the client's state. Called with c.mu held.
func (c *Client) snapshotLocked() []byte {
	s := savedState{NodeID: c.nodeID}
	for _, ar := range c.runners {
		sa := &savedAlloc{Alloc: ar.alloc, Group: ar.group, Health: ar.healthReported}
		for _, tr := range ar.tasks {
			st := &savedTask{Name: tr.task.Name, State: tr.snapshot(), Count: tr.count, WindowStart: tr.windowStart}
			if tr.proc != nil {
				st.Pid, st.StartTick = tr.proc.pid, tr.proc.startTick
			}
			sa.Tasks = append(sa.Tasks, st)
		}
		s.Allocs = append(s.Allocs, sa)
	}
	buf, _ := json.Marshal(&s)
	return buf
}

// saveState writes the state (from snapshotLocked) atomically; of
// concurrent saves, an older snapshot never replaces a newer one.
func (c *Client) saveState(buf []byte, seq uint64) {
	c.saveMu.Lock()
	defer c.saveMu.Unlock()
	if seq <= c.savedSeq {
		return
	}
	path := c.statePath()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		c.logger.Error("failed to save the client state", "error", err)
		return
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf, 0o600); err != nil {
		c.logger.Error("failed to save the client state", "error", err)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		c.logger.Error("failed to save the client state", "error", err)
		return
	}
	c.savedSeq = seq
}

// persistLocked takes a snapshot to save (nil when the client keeps no
// state). Called with c.mu held; the caller saves it after unlocking.
func (c *Client) persistLocked() func() {
	if c.cfg.DataDir == "" {
		return func() {}
	}
	c.saveSeq++
	buf, seq := c.snapshotLocked(), c.saveSeq
	return func() { c.saveState(buf, seq) }
}

// restoreLocked rebuilds the runners of a previous run: tasks whose
// process still runs are re-attached; an allocation one of whose running
// tasks died meanwhile is reported lost. Called with c.mu held.
func (c *Client) restoreLocked(s *savedState) {
	for _, sa := range s.Allocs {
		if sa.Alloc == nil || sa.Group == nil {
			continue
		}
		ar := newAllocRunner(c, sa.Alloc, sa.Group)
		ar.healthReported = sa.Health
		saved := map[string]*savedTask{}
		for _, st := range sa.Tasks {
			saved[st.Name] = st
		}
		var died []*taskRunner
		for _, tr := range ar.tasks {
			st := saved[tr.task.Name]
			if st == nil || st.State == nil {
				tr.start()
				continue
			}
			tr.st, tr.count, tr.windowStart = st.State, st.Count, st.WindowStart
			switch {
			case st.State.State == api.TaskStateDead:
				tr.phase = phaseDead
			case st.Pid > 0 && (&rawProc{pid: st.Pid, startTick: st.StartTick}).alive():
				tr.attach(&rawProc{pid: st.Pid, startTick: st.StartTick})
				c.logger.Info("re-attached to a task", "alloc", sa.Alloc.ID, "task", tr.task.Name, "pid", st.Pid)
			case st.State.State == api.TaskStateRunning:
				died = append(died, tr)
			default:
				// Waiting to (re)start: start now.
				tr.phase = phaseRestartWait
				tr.launch()
			}
		}
		c.runners[sa.Alloc.ID] = ar
		for _, tr := range died {
			tr.phase = phaseDead
			tr.st.Failed = true
			tr.event(&api.TaskEvent{Type: api.TaskTerminated, FailsTask: true,
				Message:        "the task's process ended while the client was down",
				DisplayMessage: "Exit Code: unknown (the process ended while the client was down)"}, api.TaskStateDead)
			ar.lost = true
		}
		if ar.lost {
			for _, tr := range ar.tasks {
				if tr.proc != nil {
					_ = tr.proc.signal(syscall.SIGKILL)
				}
			}
		}
		if sa.Alloc.TerminalStatus() {
			ar.stop()
		} else if ar.healthReported == nil {
			ar.startHealthDeadline()
		}
		ar.changed()
	}
}
