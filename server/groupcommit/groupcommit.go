// Package groupcommit batches writes from many callers into few Raft
// entries, as Nomad's eval batcher and Node.UpdateAlloc do.
package groupcommit

import "sync"

// Committer writes items from any number of callers: while one batch
// commits, the items that arrive meanwhile wait, and the next batch carries
// all of them (group commit). A lone item goes out at once. Every caller
// returns when the batch holding its item committed, with that batch's
// result or error (one error answers the whole batch).
type Committer[T, R any] struct {
	commit func([]T) (R, error)
	weight func(T) int
	max    int

	mu      sync.Mutex
	pending []T
	waiters []chan result[R]
	running bool
}

type result[R any] struct {
	value R
	err   error
}

// New returns a committer that writes batches with commit. A batch weighs
// at most max (weight of each item; nil weighs each 1), except that its
// first item always goes, whatever it weighs.
func New[T, R any](max int, weight func(T) int, commit func([]T) (R, error)) *Committer[T, R] {
	if weight == nil {
		weight = func(T) int { return 1 }
	}
	return &Committer[T, R]{commit: commit, weight: weight, max: max}
}

// Write commits item with whatever else is pending and answers the result
// of the batch that held it.
func (c *Committer[T, R]) Write(item T) (R, error) {
	done := make(chan result[R], 1)
	c.mu.Lock()
	c.pending = append(c.pending, item)
	c.waiters = append(c.waiters, done)
	if !c.running {
		c.running = true
		go c.run()
	}
	c.mu.Unlock()
	res := <-done
	return res.value, res.err
}

// Pending is how many items wait for the next batch (an operator's gauge
// and tests' sync point).
func (c *Committer[T, R]) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// run commits what is pending, one batch after another, until nothing is.
func (c *Committer[T, R]) run() {
	for {
		c.mu.Lock()
		n, size := 0, 0
		for n < len(c.pending) {
			w := c.weight(c.pending[n])
			if n > 0 && size+w > c.max {
				break
			}
			size += w
			n++
		}
		if n == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		items, waiters := c.pending[:n:n], c.waiters[:n:n]
		c.pending, c.waiters = c.pending[n:], c.waiters[n:]
		c.mu.Unlock()
		value, err := c.commit(items)
		for _, w := range waiters {
			w <- result[R]{value: value, err: err}
		}
	}
}
