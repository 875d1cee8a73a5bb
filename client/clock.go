package client

import (
	"sort"
	"sync"
	"time"
)

// Clock drives the simulated time of tasks: run_for, restart delays, kill
// delays and health timers. (Heartbeats and update batching use real time,
// since the servers' heartbeat TTL does.)
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not happened yet.
	Stop() bool
}

// realClock is the wall clock, with an optional Now override.
type realClock struct{ now func() time.Time }

func (c realClock) Now() time.Time { return c.now() }

func (c realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// ManualClock is a Clock for tests: time moves only by Advance, which runs
// the timers that come due, in order.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers []*manualTimer
}

type manualTimer struct {
	c    *ManualClock
	at   time.Time
	seq  int
	f    func()
	done bool
}

// NewManualClock returns a clock set at start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now is the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f at Now()+d; d <= 0 runs it at once, in its own goroutine.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &manualTimer{c: c, at: c.now.Add(d), seq: c.seq, f: f}
	if d <= 0 {
		t.done = true
		go f()
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.done
	t.done = true
	return was
}

// Pending is how many timers wait to fire.
func (c *ManualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.done {
			n++
		}
	}
	return n
}

// Advance moves the clock by d, calling each timer that comes due (in due
// order, synchronously, the clock set to its due time), including timers
// those calls create.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		live := c.timers[:0]
		for _, t := range c.timers {
			if !t.done {
				live = append(live, t)
			}
		}
		c.timers = live
		sort.Slice(live, func(i, j int) bool {
			if !live[i].at.Equal(live[j].at) {
				return live[i].at.Before(live[j].at)
			}
			return live[i].seq < live[j].seq
		})
		if len(live) == 0 || live[0].at.After(end) {
			c.now = end
			c.mu.Unlock()
			return
		}
		t := live[0]
		t.done = true
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
	}
}
