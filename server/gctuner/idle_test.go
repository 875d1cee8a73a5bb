package gctuner

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeProcess is a process whose CPU time and headroom the test sets.
type fakeProcess struct {
	mu          sync.Mutex
	cpu         time.Duration
	due         bool
	collections atomic.Int64
}

func (p *fakeProcess) use(d time.Duration) { p.mu.Lock(); p.cpu += d; p.mu.Unlock() }
func (p *fakeProcess) setDue(v bool)       { p.mu.Lock(); p.due = v; p.mu.Unlock() }
func (p *fakeProcess) readCPU() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cpu
}
func (p *fakeProcess) isDue(float64) bool { p.mu.Lock(); defer p.mu.Unlock(); return p.due }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// The collector collects only after IdleTicks idle ticks in a row with the
// headroom used: not while the process is busy, not while the headroom is
// not used, and once per idle spell (its own CPU does not count).
func TestIdleCollectsWhenIdleAndDue(t *testing.T) {
	p := &fakeProcess{}
	const tick = 10 * time.Millisecond
	cfg := IdleConfig{Tick: tick, IdleTicks: 3, MaxBusy: 0.05, Share: 0.5}
	c := startIdle(cfg, p.readCPU, p.isDue, func() {
		p.collections.Add(1)
		p.use(time.Second) // a collection's CPU
	})
	defer c.Stop()

	// Busy: a tick's worth of CPU per tick.
	stopBusy := make(chan struct{})
	busyDone := make(chan struct{})
	go func() {
		defer close(busyDone)
		for {
			select {
			case <-stopBusy:
				return
			case <-time.After(tick / 4):
				p.use(tick)
			}
		}
	}()
	p.setDue(true)
	time.Sleep(20 * tick)
	close(stopBusy)
	<-busyDone
	if n := p.collections.Load(); n != 0 {
		t.Fatalf("%d collections while busy, want 0", n)
	}

	// Idle and due: one collection.
	waitFor(t, "a collection once idle", func() bool { return p.collections.Load() == 1 })
	// Idle and not due any more: no more.
	p.setDue(false)
	time.Sleep(10 * tick)
	if n := p.collections.Load(); n != 1 {
		t.Fatalf("%d collections with the headroom unused, want 1", n)
	}
	if got := c.Collections(); got != 1 {
		t.Errorf("Collections() = %d, want 1", got)
	}
	// Due again: another.
	p.setDue(true)
	waitFor(t, "a second collection", func() bool { return p.collections.Load() == 2 })

	c.Stop()
	n := p.collections.Load()
	time.Sleep(10 * tick)
	if p.collections.Load() != n {
		t.Error("collected after Stop")
	}
}

var garbage [][]byte

// In the real process: garbage past half the headroom, then an idle spell,
// makes a collection.
func TestIdleCollectsRealGarbage(t *testing.T) {
	for range 3 {
		runtime.GC()
	}
	if headroomUsed(0.5) {
		t.Fatal("half the headroom used right after a collection")
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	// Allocate until half the headroom is used (bounded).
	for i := 0; !headroomUsed(0.5) && i < 1<<16; i++ {
		garbage = append(garbage, make([]byte, 4096))
		if len(garbage) > 256 {
			garbage = garbage[:0]
		}
	}
	if !headroomUsed(0.5) {
		t.Fatal("256 MiB of garbage did not use half the headroom")
	}
	garbage = nil
	c := StartIdle(IdleConfig{Tick: 20 * time.Millisecond, IdleTicks: 2, MaxBusy: 0.5, Share: 0.5})
	defer c.Stop()
	waitFor(t, "an idle collection", func() bool { return c.Collections() >= 1 })
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if after.NumGC <= before.NumGC {
		t.Errorf("NumGC %d -> %d, want a collection", before.NumGC, after.NumGC)
	}
}
