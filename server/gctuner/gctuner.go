// Package gctuner raises the garbage collector's percent while the live heap
// is small, so that a server with a small heap and a high allocation rate
// (every create allocates its request, its Raft entry and memdb's copied
// radix nodes) does not collect several times a second: after every
// collection it sets the percent so the next heap goal is
// max(live×2, live+floor), never past the memory limit (GOMEMLIMIT) when
// one is set. With a live heap past the floor it is Go's default (GOGC=100).
package gctuner

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// minLive is the live heap assumed before the first collection and below
// which the percent no longer grows: Go's own minimum heap goal is 4 MiB.
const minLive = 4 << 20

// maxPercent bounds the percent (a tiny live heap and a large floor).
const maxPercent = 100_000

// Percent is the GC percent that makes the next heap goal
// max(live×(1+base/100), live+floor), capped at limit (0: no limit); it is
// never below base, the percent the process started with.
func Percent(live, floor, limit uint64, base int) int {
	live = max(live, minLive)
	goal := live + floor
	if limit > 0 && goal > limit {
		goal = max(limit, live)
	}
	p := (goal - live) * 100 / live
	if p > maxPercent {
		p = maxPercent
	}
	return max(int(p), base)
}

// Tuner is the running tuner of the process.
type Tuner struct {
	floor   uint64
	base    int // GOGC at Start, restored by Stop
	stopped atomic.Bool
	percent atomic.Int64 // last percent set
	tunes   atomic.Uint64

	mu      sync.Mutex // serializes tune (the finalizer) with Stop
	samples []metrics.Sample
}

var (
	runningMu sync.Mutex
	running   *Tuner
)

// Start tunes the GC after every collection with a heap floor of floor
// bytes, and returns the tuner (nil when floor is 0 or the GC is off, i.e.
// GOGC=off: nothing to tune). A process has one tuner: Start stops the
// previous one.
func Start(floor uint64) *Tuner {
	runningMu.Lock()
	defer runningMu.Unlock()
	if running != nil {
		running.stop()
		running = nil
	}
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if floor == 0 || base < 0 {
		return nil
	}
	t := &Tuner{floor: floor, base: base, samples: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.tune()
	running = t
	// The sentinel is found unreachable by every collection; its finalizer
	// tunes and sets itself again, which keeps it for the next one.
	s := &sentinel{t: t}
	runtime.SetFinalizer(s, onGC)
	return t
}

// sentinel has a pointer and is larger than the tiny allocator's 16 bytes:
// finalizers of tiny objects may never run.
type sentinel struct {
	t   *Tuner
	pad [24]byte
}

func onGC(s *sentinel) {
	if s.t.stopped.Load() {
		return
	}
	s.t.tune()
	runtime.SetFinalizer(s, onGC)
}

func (t *Tuner) tune() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Load() {
		return
	}
	metrics.Read(t.samples)
	var live uint64
	if v := t.samples[0].Value; v.Kind() == metrics.KindUint64 {
		live = v.Uint64()
	}
	var limit uint64
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		limit = uint64(l)
	}
	p := Percent(live, t.floor, limit, t.base)
	if int64(p) != t.percent.Load() {
		debug.SetGCPercent(p)
		t.percent.Store(int64(p))
	}
	t.tunes.Add(1)
}

// Stop stops tuning and restores the percent the process started with.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	runningMu.Lock()
	defer runningMu.Unlock()
	t.stop()
	if running == t {
		running = nil
	}
}

func (t *Tuner) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped.Swap(true) {
		return
	}
	debug.SetGCPercent(t.base)
}

// Current is the percent the tuner last set.
func (t *Tuner) Current() int { return int(t.percent.Load()) }

// Tunes is how many times the tuner has run (once at Start, then once
// after every collection).
func (t *Tuner) Tunes() uint64 { return t.tunes.Load() }
