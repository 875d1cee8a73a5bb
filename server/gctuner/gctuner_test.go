package gctuner

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

const mib = 1 << 20

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		name               string
		live, floor, limit uint64
		base, want         int
	}{
		{"small heap: the floor decides", 32 * mib, 256 * mib, 0, 100, 800},
		{"before the first collection: 4 MiB assumed", 0, 256 * mib, 0, 100, 6400},
		{"heap past the floor: twice the live heap", 512 * mib, 256 * mib, 0, 100, 100},
		{"GOGC above the floor's percent stays", 512 * mib, 256 * mib, 0, 200, 200},
		{"the memory limit caps the goal", 32 * mib, 256 * mib, 96 * mib, 100, 200},
		{"a limit below live: base", 128 * mib, 256 * mib, 96 * mib, 100, 100},
		{"tiny heap, huge floor: bounded", 4 * mib, 1 << 40, 0, 100, maxPercent},
	} {
		if got := Percent(c.live, c.floor, c.limit, c.base); got != c.want {
			t.Errorf("%s: Percent(%d MiB live, %d MiB floor, limit %d MiB, base %d) = %d, want %d",
				c.name, c.live/mib, c.floor/mib, c.limit/mib, c.base, got, c.want)
		}
	}
}

func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// gcUntilTuned collects until the tuner has run after a collection.
func gcUntilTuned(t *testing.T, tu *Tuner) {
	t.Helper()
	n := tu.Tunes()
	deadline := time.Now().Add(10 * time.Second)
	for tu.Tunes() == n {
		if time.Now().After(deadline) {
			t.Fatal("the tuner did not run after a collection")
		}
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
}

var keep []byte

// The percent follows the live heap: high while it is small, back to the
// default once the live heap passes the floor, and the base again at Stop.
func TestTunerFollowsLiveHeap(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	const floor = 48 * mib
	tu := Start(floor)
	defer tu.Stop()
	gcUntilTuned(t, tu)
	if p := tu.Current(); p <= 100 {
		t.Fatalf("percent %d with a small live heap and a %d MiB floor, want > 100", p, floor/mib)
	}
	if g := heapGoal(); g < floor {
		t.Fatalf("heap goal %d MiB, want at least the floor (%d MiB)", g/mib, floor/mib)
	}

	keep = make([]byte, 96*mib)
	for i := range keep {
		keep[i] = 1
	}
	gcUntilTuned(t, tu)
	if p := tu.Current(); p != 100 {
		t.Fatalf("percent %d with a 96 MiB live heap past the %d MiB floor, want 100", p, floor/mib)
	}
	keep = nil
	gcUntilTuned(t, tu)
	if p := tu.Current(); p <= 100 {
		t.Fatalf("percent %d once the heap shrank again, want > 100", p)
	}

	tu.Stop()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("percent %d after Stop, want the base 100", p)
	}
	n := tu.Tunes()
	runtime.GC()
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if tu.Tunes() != n {
		t.Fatal("the tuner ran after Stop")
	}
}

func TestTunerRespectsMemoryLimit(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	limit := int64(ms.HeapAlloc) + 24*mib
	debug.SetMemoryLimit(limit)
	tu := Start(1 << 30)
	defer tu.Stop()
	gcUntilTuned(t, tu)
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	live := s[0].Value.Uint64()
	// The live heap read here may differ a little from the tuner's.
	if p, uncapped := tu.Current(), Percent(live, 1<<30, 0, 100); p >= uncapped/2 {
		t.Fatalf("percent %d with a 1 GiB floor and a limit of live+~24 MiB, want it capped (~%d), far below %d",
			p, Percent(live, 1<<30, uint64(limit), 100), uncapped)
	}
}

func TestStartOff(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	if tu := Start(0); tu != nil {
		t.Fatal("Start(0) returned a tuner")
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("Start(0) changed the percent to %d", p)
	}
	debug.SetGCPercent(-1)
	if tu := Start(256 * mib); tu != nil {
		t.Fatal("Start with GOGC=off returned a tuner")
	}
	if p := debug.SetGCPercent(100); p != -1 {
		t.Fatalf("Start with GOGC=off changed the percent to %d", p)
	}
}
