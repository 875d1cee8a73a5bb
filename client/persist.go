package client

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// What the client saves (statedb.go): the node ID and, per allocation,
// what a restarted client needs to carry on: the allocation, its group,
// health, and per task its state, restart counters and pid. savedState is
// also the old state.json's layout, read once to migrate it.

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

// loadState opens the state DB once (moving an old state file into it),
// reads it and closes it again: Run opens it for good.
func loadState(dataDir string) (*savedState, error) {
	db, err := openStateDB(dataDir)
	if err != nil {
		return nil, err
	}
	s, err := db.load()
	if cerr := db.close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing the client state: %w", cerr)
	}
	return s, err
}

// persistRetry is the wait before a failed write is tried again.
const persistRetry = time.Second

// persistBatch bounds the allocations one round snapshots (under c.mu)
// and writes (in one transaction, without c.mu).
const persistBatch = 1024

// savedLocked is the allocation's record. Called with c.mu held; the
// allocation, group and health are replaced, never changed, and the task
// states are copies, so it is encoded after the lock is released.
func (ar *allocRunner) savedLocked() *savedAlloc {
	sa := &savedAlloc{Alloc: ar.alloc, Group: ar.group, Health: ar.healthReported}
	for _, tr := range ar.tasks {
		st := &savedTask{Name: tr.task.Name, State: tr.snapshot(), Count: tr.count, WindowStart: tr.windowStart}
		if tr.proc != nil {
			st.Pid, st.StartTick = tr.proc.pid, tr.proc.startTick
		}
		sa.Tasks = append(sa.Tasks, st)
	}
	return sa
}

// markDirtyLocked queues the allocation's record to be written. Called
// with c.mu held.
func (c *Client) markDirtyLocked(ar *allocRunner) {
	if c.cfg.DataDir == "" || c.runners[ar.alloc.ID] != ar {
		return
	}
	c.dirty[ar.alloc.ID] = ar
	c.kickPersister()
}

// markGoneLocked queues the deletion of an allocation's record. Called
// with c.mu held.
func (c *Client) markGoneLocked(allocID string) {
	if c.cfg.DataDir == "" {
		return
	}
	c.dirty[allocID] = nil
	c.kickPersister()
}

func (c *Client) kickPersister() {
	select {
	case c.persistKick <- struct{}{}:
	default: // a round is already due: it takes this change too
	}
}

// persistLoop writes the queued records until ctx ends: one kick writes
// whatever queued up meanwhile, so a burst of changes (a purge) costs a
// few transactions.
func (c *Client) persistLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.persistKick:
			c.persist(ctx)
		}
	}
}

// persist writes every queued record, persistBatch per transaction. The
// client's lock is held only to take each round's snapshots, never across
// the disk write; persistMu, held over one round (snapshots and write),
// keeps rounds in order (an older snapshot never overwrites a newer one)
// and lets a flush's round in between two of a purge's. It stops early
// when ctx ends (the shutdown writes the rest).
func (c *Client) persist(ctx context.Context) { c.persistRecords(ctx, nil) }

// persistRecords writes the queued records of ids (nil: all of them): a
// batch of reports waits for its own allocations' records only, not for
// the thousands a purge queued.
func (c *Client) persistRecords(ctx context.Context, ids []string) {
	for ctx.Err() == nil && c.persistRound(ids) {
	}
}

// persistRound writes one transaction of queued records of ids (nil: any);
// it says whether there may be more to write.
func (c *Client) persistRound(ids []string) bool {
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	c.mu.Lock()
	db := c.db
	if db == nil || len(c.dirty) == 0 {
		c.mu.Unlock()
		return false
	}
	batch := make(map[string]*allocRunner, min(len(c.dirty), persistBatch))
	var puts []*savedAlloc
	var gone []string
	take := func(id string, ar *allocRunner) {
		batch[id] = ar
		delete(c.dirty, id)
		if ar == nil {
			gone = append(gone, id)
		} else {
			puts = append(puts, ar.savedLocked())
		}
	}
	for _, id := range ids {
		if ar, ok := c.dirty[id]; ok && len(batch) < persistBatch {
			take(id, ar)
		}
	}
	if ids == nil {
		for id, ar := range c.dirty {
			if len(batch) == persistBatch {
				break
			}
			take(id, ar)
		}
	}
	c.mu.Unlock()
	if len(batch) == 0 {
		return false
	}
	if err := db.write(puts, gone); err != nil {
		c.logger.Error("failed to save the client state", "error", err)
		// Queued again, unless a newer change is queued meanwhile; the
		// next change, flush or this retry tries again.
		c.mu.Lock()
		for id, ar := range batch {
			if _, newer := c.dirty[id]; !newer {
				c.dirty[id] = ar
			}
		}
		c.mu.Unlock()
		time.AfterFunc(persistRetry, c.kickPersister)
		return false
	}
	return true
}

// closeState writes what is still queued and closes the state DB (client
// shutdown, after persistLoop ended).
func (c *Client) closeState() {
	c.persist(context.Background())
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	c.mu.Lock()
	db := c.db
	c.db = nil
	c.mu.Unlock()
	if db == nil {
		return
	}
	if err := db.close(); err != nil {
		c.logger.Error("failed to close the client state", "error", err)
	}
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
