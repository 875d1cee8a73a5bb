package gctuner

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// IdleConfig says when the idle collector collects: after IdleTicks ticks
// in a row in each of which the process used at most MaxBusy of one core,
// once at least Share of the heap's headroom (goal minus live heap) has
// been allocated since the last collection.
type IdleConfig struct {
	Tick      time.Duration
	IdleTicks int
	MaxBusy   float64
	Share     float64
}

// DefaultIdle is what the agent runs: idle for 300 ms, half the headroom.
var DefaultIdle = IdleConfig{Tick: 100 * time.Millisecond, IdleTicks: 3, MaxBusy: 0.05, Share: 0.5}

// Idle collects garbage while the process is idle, so that a burst of work
// after a quiet spell does not meet a collection halfway through. Ten
// thousand blocked queries woken by one write are such a burst: a
// collection that started in it (its marking, the assists it asks of the
// woken handlers, the scan of the waiting goroutines' stacks) doubled the
// server's CPU for it. A collection made while idle uses CPU nothing else
// wanted, and leaves the headroom for the burst.
type Idle struct {
	cfg  IdleConfig
	stop chan struct{}
	done chan struct{}
	runs atomic.Uint64

	// The process's CPU time, whether the headroom is used, and the
	// collection: the real ones but in tests.
	cpu     func() time.Duration
	due     func(share float64) bool
	collect func()
}

var (
	idleMu      sync.Mutex
	runningIdle *Idle
	// idleRuns counts the process's idle collections, by every collector.
	idleRuns atomic.Uint64
)

// IdleCollections is how many idle collections the process has made, and
// whether an idle collector runs now (the agent's stats).
func IdleCollections() (n uint64, running bool) {
	idleMu.Lock()
	defer idleMu.Unlock()
	return idleRuns.Load(), runningIdle != nil
}

// StartIdle starts the process's idle collector (a second one replaces
// the first, as Start does the tuner).
func StartIdle(cfg IdleConfig) *Idle {
	return startIdle(cfg, processCPU, headroomUsed, runtime.GC)
}

func startIdle(cfg IdleConfig, cpu func() time.Duration, due func(float64) bool, collect func()) *Idle {
	idleMu.Lock()
	defer idleMu.Unlock()
	if runningIdle != nil {
		runningIdle.stopLoop()
	}
	c := &Idle{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{}), cpu: cpu, due: due, collect: collect}
	runningIdle = c
	go c.loop()
	return c
}

func (c *Idle) loop() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.Tick)
	defer t.Stop()
	busy := time.Duration(c.cfg.MaxBusy * float64(c.cfg.Tick))
	last := c.cpu()
	idle := 0
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		now := c.cpu()
		used := now - last
		last = now
		if used > busy {
			idle = 0
			continue
		}
		if idle++; idle < c.cfg.IdleTicks || !c.due(c.cfg.Share) {
			continue
		}
		c.collect()
		c.runs.Add(1)
		idleRuns.Add(1)
		idle = 0
		last = c.cpu() // the collection's own CPU is not a sign of work
	}
}

// Collections is how many collections the idle collector has made.
func (c *Idle) Collections() uint64 {
	if c == nil {
		return 0
	}
	return c.runs.Load()
}

// Stop stops the collector (nil: nothing to stop).
func (c *Idle) Stop() {
	if c == nil {
		return
	}
	idleMu.Lock()
	defer idleMu.Unlock()
	c.stopLoop()
	if runningIdle == c {
		runningIdle = nil
	}
}

func (c *Idle) stopLoop() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
}

// processCPU is the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// headroomUsed says whether the heap has grown by at least share of the way
// from the last collection's live heap to the next collection's goal.
func headroomUsed(share float64) bool {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/heap/goal:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
	}
	metrics.Read(s)
	for _, v := range s {
		if v.Value.Kind() != metrics.KindUint64 {
			return false
		}
	}
	live, goal, objects := s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
	if goal <= live || objects <= live {
		return false
	}
	return float64(objects-live) >= share*float64(goal-live)
}
