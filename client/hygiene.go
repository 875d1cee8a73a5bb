package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// Modes of what the client writes: tasks of other jobs (and other users)
// must not read a task's files or logs.
const (
	allocDirMode = 0o700
	logFileMode  = 0o600
)

// prepareDataDir creates the data directory (0700) when missing and
// refuses one this agent's user does not own or that its group or others
// may write: the client starts processes from the state it finds there.
func prepareDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the data directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	return checkOwned("data directory", dir, fi, true)
}

// checkOwned refuses a file or directory not owned by this process's user,
// or writable by its group or others.
func checkOwned(what, path string, fi os.FileInfo, wantDir bool) error {
	if wantDir && !fi.IsDir() {
		return fmt.Errorf("%s %s is not a directory", what, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s %s is owned by uid %d, not by this agent's user (uid %d): the client trusts what it finds there, so it must be the agent's own", what, path, st.Uid, os.Geteuid())
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("%s %s is writable by its group or others (mode %#o): the client trusts what it finds there; run chmod go-w %s", what, path, perm, path)
	}
	return nil
}

// forgetLocked drops the runner of a finished allocation the servers no
// longer list; its directory stays (its logs stay readable) until the
// servers have collected the allocation (see gcLoop). Called with c.mu held.
func (c *Client) forgetLocked(ar *allocRunner) {
	if c.runners[ar.alloc.ID] != ar {
		return
	}
	ar.destroy()
	delete(c.runners, ar.alloc.ID)
	if c.cfg.DataDir != "" {
		c.gcDirs[ar.alloc.ID] = true
		c.markGoneLocked(ar.alloc.ID) // the saved state forgets it too
	}
}

// removeAllocDir deletes an allocation's directory (the servers have
// collected the allocation and its tasks are dead).
func (c *Client) removeAllocDir(allocID string) {
	if c.cfg.DataDir == "" || allocID == "" || filepath.Base(allocID) != allocID || allocID == "." || allocID == ".." {
		return
	}
	dir := filepath.Join(c.cfg.DataDir, "alloc", allocID)
	if err := os.RemoveAll(dir); err != nil {
		c.logger.Error("failed to remove a collected allocation's directory", "alloc", allocID, "error", err)
		return
	}
	c.logger.Debug("removed a collected allocation's directory", "alloc", allocID)
}

// groupIsTasks says whether process group pid can still be the task's, so
// that signalling it cannot hit another user's processes: its leader is
// the process that was started (same start time), or no process has that
// pid any more (Linux does not hand out a pid while a process group of that
// ID has members, so the group, if any, is the task's leftovers). Without a
// recorded start time, or without /proc, it cannot tell and says no.
func groupIsTasks(pid int, startTick uint64) bool {
	tick, _, err := procStat(pid)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true
	case err != nil, startTick == 0:
		return false
	}
	return tick == startTick
}

// gcBatch bounds the allocations looked up per GC round.
const gcBatch = 100

// findOrphanDirs marks for collection the allocation directories no runner
// owns (left by an earlier run).
func (c *Client) findOrphanDirs() {
	entries, err := os.ReadDir(filepath.Join(c.cfg.DataDir, "alloc"))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			c.logger.Error("failed to list the allocation directories", "error", err)
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		if e.IsDir() && c.runners[e.Name()] == nil {
			c.gcDirs[e.Name()] = true
		}
	}
}

// gcLoop removes, every GCInterval, the directories of finished allocations
// the servers have collected (a read of the allocation answers 404; any
// other answer, a 403 included, keeps the directory).
func (c *Client) gcLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.GCInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		ids := make([]string, 0, min(len(c.gcDirs), gcBatch))
		for id := range c.gcDirs {
			if len(ids) == gcBatch {
				break
			}
			ids = append(ids, id)
		}
		c.mu.Unlock()
		for _, id := range ids {
			_, _, err := c.server().Allocation(ctx, id, nil)
			if ctx.Err() != nil {
				return
			}
			if !api.IsNotFound(err) {
				continue
			}
			c.mu.Lock()
			owned := c.runners[id] != nil
			delete(c.gcDirs, id)
			c.mu.Unlock()
			if !owned {
				c.removeAllocDir(id)
			}
		}
	}
}
