package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Task logs: each stream is written by the task (append mode) to
// <task>.<stream>.0; when that file passes LogMaxFileSize the client copies
// it to index 1 (older copies move up, the oldest beyond LogMaxFiles is
// dropped) and truncates it. Bytes written between the copy and the
// truncation are lost (logrotate's copytruncate); in exchange the task
// never holds a pipe to the client, so it survives a client restart.

// rotateLogs checks every running raw_exec task's log files once.
func (c *Client) rotateLogs() {
	type item struct {
		paths taskPaths
		task  string
	}
	c.mu.Lock()
	var items []item
	for _, ar := range c.runners {
		for _, tr := range ar.tasks {
			if tr.proc != nil {
				items = append(items, item{c.taskPaths(ar.alloc.ID, tr.task.Name), tr.task.Name})
			}
		}
	}
	c.mu.Unlock()
	for _, it := range items {
		for _, stream := range []string{"stdout", "stderr"} {
			if err := rotateStream(it.paths, it.task, stream, c.cfg.LogMaxFiles, c.cfg.LogMaxFileSize); err != nil {
				c.logger.Warn("failed to rotate a task's log", "task", it.task, "stream", stream, "error", err)
			}
		}
	}
}

// rotateStream rotates one stream when its current file is too big.
func rotateStream(p taskPaths, task, stream string, maxFiles int, maxSize int64) error {
	cur := p.logPath(task, stream, 0)
	fi, err := os.Stat(cur)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	if fi.Size() < maxSize {
		return nil
	}
	if maxFiles < 2 {
		return os.Truncate(cur, 0)
	}
	_ = os.Remove(p.logPath(task, stream, maxFiles-1))
	for i := maxFiles - 2; i >= 1; i-- {
		if err := os.Rename(p.logPath(task, stream, i), p.logPath(task, stream, i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := copyFile(cur, p.logPath(task, stream, 1)); err != nil {
		return err
	}
	return os.Truncate(cur, 0)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, logFileMode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// logRequest is a read of one task stream.
type logRequest struct {
	paths    taskPaths
	task     string
	stream   string // stdout or stderr
	offset   int64
	fromEnd  bool
	follow   bool
	maxFiles int
	// running says whether the task may still write (follow ends when it
	// returns false and everything was sent).
	running func() bool
	// flush pushes what was written to the caller.
	flush func()
}

// streamLogs writes the stream from the requested position: every file,
// oldest first, then (with follow) what the task writes next.
func streamLogs(ctx context.Context, w io.Writer, r logRequest) error {
	var sizes []int64
	var total int64
	for i := r.maxFiles - 1; i >= 0; i-- {
		var n int64
		if fi, err := os.Stat(r.paths.logPath(r.task, r.stream, i)); err == nil {
			n = fi.Size()
		}
		sizes = append(sizes, n)
		total += n
	}
	start := r.offset
	if r.fromEnd {
		start = total - r.offset
	}
	start = max(0, min(start, total))
	// Old files, then the current one up to its size at the start.
	var curPos int64
	for k, n := range sizes {
		idx := r.maxFiles - 1 - k
		if start >= n {
			start -= n
			if idx == 0 {
				curPos = n
			}
			continue
		}
		if err := copyRange(w, r.paths.logPath(r.task, r.stream, idx), start, n); err != nil {
			return err
		}
		if idx == 0 {
			curPos = n
		}
		start = 0
	}
	if r.flush != nil {
		r.flush()
	}
	if !r.follow {
		return nil
	}
	cur := r.paths.logPath(r.task, r.stream, 0)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		running := r.running()
		var size int64
		if fi, err := os.Stat(cur); err == nil {
			size = fi.Size()
		}
		if size < curPos {
			// Rotated: the rest of what we were reading is in index 1.
			prev := r.paths.logPath(r.task, r.stream, 1)
			if fi, err := os.Stat(prev); err == nil && fi.Size() > curPos {
				if err := copyRange(w, prev, curPos, fi.Size()); err != nil {
					return err
				}
			}
			curPos = 0
		}
		if size > curPos {
			if err := copyRange(w, cur, curPos, size); err != nil {
				return err
			}
			curPos = size
		}
		if r.flush != nil {
			r.flush()
		}
		if !running {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// copyRange writes bytes [from, to) of a file.
func copyRange(w io.Writer, path string, from, to int64) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer f.Close()
	if fa, ok := w.(interface{ fileAt(string, int64) }); ok {
		fa.fileAt(path, from) // a framed stream names the file
	}
	if _, err := io.Copy(w, io.NewSectionReader(f, from, to-from)); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}
