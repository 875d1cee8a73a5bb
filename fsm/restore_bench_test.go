package fsm

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// benchStream is the snapshot stream of a store of n binding rules, made as
// scripts/snapbench makes them: spread over ten auth methods, one selector
// of eight, a templated BindName.
func benchStream(tb testing.TB, n int) []byte {
	tb.Helper()
	methods := []string{"minikube", "k8s-prod", "k8s-staging", "okta", "github-actions",
		"gitlab-ci", "azure-ad", "aws-iam", "gcp-iam", "vault-jwt"}
	teams := []string{"a", "b", "c", "payments", "search", "platform", "data", "web"}
	s := state.NewStore()
	b := s.NewBatch()
	for i := 1; i <= n; i++ {
		bindType := state.BindTypeService
		if i%10 == 0 {
			bindType = state.BindTypeRole
		}
		method := methods[i%len(methods)]
		_, err := b.BindingRuleSet(uint64(i+10), &state.BindingRule{
			ID:          uuid.NewString(),
			Description: fmt.Sprintf("bench rule %d for %s", i, method),
			AuthMethod:  method,
			Selector:    fmt.Sprintf("value.team == %q", teams[i%len(teams)]),
			BindType:    bindType,
			BindName:    "svc-${value.name}",
			Namespace:   state.DefaultNamespace,
		}, true)
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		tb.Fatal(err)
	}
	f := New(hclog.NewNullLogger())
	f.state = s
	var buf bytes.Buffer
	snap := f.Snapshot()
	if err := snap.Stream(&buf); err != nil {
		tb.Fatal(err)
	}
	snap.Release()
	return buf.Bytes()
}

func BenchmarkDecodeSnapshot(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			stream := benchStream(b, n)
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := DecodeSnapshot(bytes.NewReader(stream)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDecodeSnapshotProfile restores CTLPLANE_RESTORE_PROFILE_RULES rules
// and writes a CPU profile of the decode and a heap profile of the restored
// store into CTLPLANE_RESTORE_PROFILE_DIR (the current directory when
// unset). It is a measuring tool, skipped unless the count is set.
func TestDecodeSnapshotProfile(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CTLPLANE_RESTORE_PROFILE_RULES"))
	if n <= 0 {
		t.Skip("CTLPLANE_RESTORE_PROFILE_RULES is not set")
	}
	dir := os.Getenv("CTLPLANE_RESTORE_PROFILE_DIR")
	stream := benchStream(t, n)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	cpu, err := os.Create(dir + "restore.cpu.pprof")
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	if err := pprof.StartCPUProfile(cpu); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	store, err := DecodeSnapshot(bytes.NewReader(stream))
	took := time.Since(start)
	pprof.StopCPUProfile()
	if err != nil {
		t.Fatal(err)
	}
	var peak runtime.MemStats
	runtime.ReadMemStats(&peak)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	heap, err := os.Create(dir + "restore.heap.pprof")
	if err != nil {
		t.Fatal(err)
	}
	defer heap.Close()
	if err := pprof.Lookup("heap").WriteTo(heap, 0); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rules, stream %d MB: decode %s, heap in use after GC %d MB (%d B/rule), HeapSys at the end %d MB, allocated %d MB, GCs %d",
		n, len(stream)>>20, took, (after.HeapAlloc-before.HeapAlloc)>>20, (after.HeapAlloc-before.HeapAlloc)/uint64(n),
		peak.HeapSys>>20, (after.TotalAlloc-before.TotalAlloc)>>20, after.NumGC-before.NumGC)
	runtime.KeepAlive(store)
	runtime.KeepAlive(stream)
}
