package fsm_test

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
	"github.com/ctlplane/ctlplane/state/stream"
	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
)

// batchLogs is a batch that mixes batchable writes, rejected ones, a write
// that is applied on its own, a configuration entry and an empty command.
func batchLogs(t *testing.T) []*raft.Log {
	policy := fsm.ACLPolicySetRequest{Policy: state.ACLPolicy{ID: idC, Name: "p", Rules: `acl = "read"`}}
	return []*raft.Log{
		entry(t, 10, fsm.BindingRuleSetType, setReq(idA, "default", "m", "a", true)),
		entry(t, 11, fsm.BindingRuleSetType, setReq(idA, "default", "m", "again", true)), // conflict
		entry(t, 12, fsm.ACLPolicySetType, policy),
		{Index: 13, Term: 1, Type: raft.LogConfiguration, Data: []byte("not ours")},
		entry(t, 14, fsm.BindingRuleSetType, setReq(idA, "default", "", "a2", false)),
		entry(t, 15, fsm.BindingRuleSetType, setReq(idB, "default", "m", "b", true)),
		entry(t, 16, fsm.BindingRuleDeleteType, fsm.BindingRuleDeleteRequest{ID: idMissing, Namespace: "default"}), // not found
		entry(t, 17, fsm.BindingRuleSetType, setReq(idB, "other", "m", "b", false)),                                // not found
		{Index: 18, Term: 1, Type: raft.LogCommand, Data: []byte{}},
	}
}

// A batch answers and leaves the state exactly as applying its entries one
// by one does.
func TestApplyBatchMatchesApply(t *testing.T) {
	one, batched := newFSM(), newFSM()
	var want []any
	for _, l := range batchLogs(t) {
		if l.Type != raft.LogCommand {
			want = append(want, nil)
			continue
		}
		want = append(want, one.Apply(l))
	}
	got := batched.ApplyBatch(batchLogs(t))
	if len(got) != len(want) {
		t.Fatalf("ApplyBatch answered %d values for %d entries", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("entry %d: batch answered %T %v, one by one %T %v", i, got[i], got[i], want[i], want[i])
		}
	}
	wantStateError(t, got[1], state.ErrConflict, "binding rule "+idA+" already exists")
	if rule, ok := got[4].(*state.BindingRule); !ok || rule.BindName != "a2" || rule.CreateIndex != 10 || rule.ModifyIndex != 14 {
		t.Errorf("update in the batch answered %#v", got[4])
	}
	if !reflect.DeepEqual(allRules(t, batched.State()), allRules(t, one.State())) {
		t.Errorf("rules differ:\nbatch %v\nalone %v", allRules(t, batched.State()), allRules(t, one.State()))
	}
	if !reflect.DeepEqual(indexes(t, batched.State()), indexes(t, one.State())) {
		t.Errorf("index rows differ:\nbatch %v\nalone %v", indexes(t, batched.State()), indexes(t, one.State()))
	}
	if idx := batched.State().TableIndex(rulesTable); idx != 15 {
		t.Errorf("binding-rule table index %d, want 15 (the last write that changed it)", idx)
	}
}

// A batch of only rejected writes changes nothing, not even the index.
func TestApplyBatchRejectedWritesChangeNothing(t *testing.T) {
	f := newFSM()
	applyRule(t, f, 5, setReq(idA, "default", "m", "a", true))
	got := f.ApplyBatch([]*raft.Log{
		entry(t, 6, fsm.BindingRuleSetType, setReq(idA, "default", "m", "a", true)),
		entry(t, 7, fsm.BindingRuleDeleteType, fsm.BindingRuleDeleteRequest{ID: idA, Namespace: "other"}),
	})
	wantStateError(t, got[0], state.ErrConflict, "binding rule "+idA+" already exists")
	wantStateError(t, got[1], state.ErrNotFound, "binding rule does not exist")
	if idx := f.State().TableIndex(rulesTable); idx != 5 {
		t.Errorf("table index %d after rejected writes, want 5", idx)
	}
	if rules := allRules(t, f.State()); len(rules) != 1 || rules[0].ModifyIndex != 5 {
		t.Errorf("rules after rejected writes: %v", rules)
	}
}

// Watchers of the table wake once the batch is applied.
func TestApplyBatchWakesWatchers(t *testing.T) {
	f := newFSM()
	ws := memdb.NewWatchSet()
	if _, _, err := f.State().BindingRules(ws, state.AllNamespaces, ""); err != nil {
		t.Fatal(err)
	}
	f.ApplyBatch([]*raft.Log{
		entry(t, 2, fsm.BindingRuleSetType, setReq(idA, "default", "m", "a", true)),
		entry(t, 3, fsm.BindingRuleSetType, setReq(idB, "default", "m", "b", true)),
	})
	if timedOut := ws.Watch(time.After(time.Second)); timedOut {
		t.Fatal("list watch did not fire on an applied batch")
	}
	if rules := allRules(t, f.State()); len(rules) != 2 {
		t.Fatalf("%d rules after the batch, want 2", len(rules))
	}
}

// VerifySnapshot takes what DecodeSnapshot takes and counts the rows the
// decoded store holds.
func TestVerifySnapshotCountsAsDecode(t *testing.T) {
	valid := persist(t, seededWithServers(t))
	counts, err := fsm.VerifySnapshot(bytes.NewReader(valid))
	if err != nil {
		t.Fatal(err)
	}
	store, err := fsm.DecodeSnapshot(bytes.NewReader(valid))
	if err != nil {
		t.Fatal(err)
	}
	if want := store.Counts(); !reflect.DeepEqual(counts, want) {
		t.Fatalf("VerifySnapshot counted %v, the decoded store holds %v", counts, want)
	}
	if counts[rulesTable] == 0 || counts["servers"] == 0 {
		t.Fatalf("counts %v miss the seeded rows", counts)
	}
}

// benchCreates applies b.N binding-rule creates in batches of size n,
// with the event stream's events produced when events is set.
func benchCreates(b *testing.B, n int, events bool) {
	f := newFSM()
	if events {
		f.SetEventSink(stream.NewBuffer(stream.DefaultBufferSize))
	}
	logs := make([]*raft.Log, 0, n)
	for i := range b.N {
		req := setReq(uuidN(i), "default", "m", "b", true)
		data, err := fsm.Encode(fsm.BindingRuleSetType, req)
		if err != nil {
			b.Fatal(err)
		}
		logs = append(logs, &raft.Log{Index: uint64(i + 2), Term: 1, Type: raft.LogCommand, Data: data})
		if len(logs) == n || i == b.N-1 {
			f.ApplyBatch(logs)
			logs = logs[:0]
		}
	}
}

// BenchmarkApplyCreatesRandomIDs is the server's create load: random
// (server-made) IDs into a store of 100,000 rules, in batches of 16, with
// events.
func BenchmarkApplyCreatesRandomIDs(b *testing.B) {
	f := newFSM()
	f.SetEventSink(stream.NewBuffer(stream.DefaultBufferSize))
	idx := uint64(2)
	apply := func(count, n int) {
		logs := make([]*raft.Log, 0, n)
		for i := range count {
			data, err := fsm.Encode(fsm.BindingRuleSetType, setReq(uuid.NewString(), "default", "m", fmt.Sprintf("svc%d", i), true))
			if err != nil {
				b.Fatal(err)
			}
			logs = append(logs, &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: data})
			idx++
			if len(logs) == n || i == count-1 {
				f.ApplyBatch(logs)
				logs = logs[:0]
			}
		}
	}
	apply(100_000, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	apply(b.N, 16)
}

func uuidN(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i) }

func BenchmarkApplyCreatesOneByOne(b *testing.B)       { benchCreates(b, 1, false) }
func BenchmarkApplyCreatesBatch64(b *testing.B)        { benchCreates(b, 64, false) }
func BenchmarkApplyCreatesOneByOneEvents(b *testing.B) { benchCreates(b, 1, true) }
func BenchmarkApplyCreatesBatch64Events(b *testing.B)  { benchCreates(b, 64, true) }

// BenchmarkCollectRules is one full collection of a store of 200,000
// binding rules applied as the server applies creates (distinct BindNames,
// batches of 16, events on), and reports what the store keeps per rule:
// what the GC marks on every cycle, which is what a create costs more as
// the store grows.
//
//	go test -run '^$' -bench CollectRules -benchtime=5x ./fsm/
func BenchmarkCollectRules(b *testing.B) {
	f := newFSM()
	f.SetEventSink(stream.NewBuffer(stream.DefaultBufferSize))
	const count = 200_000
	logs := make([]*raft.Log, 0, 16)
	for i := range count {
		data, err := fsm.Encode(fsm.BindingRuleSetType, setReq(uuid.NewString(), "default", "m", fmt.Sprintf("svc%d-${value.name}", i), true))
		if err != nil {
			b.Fatal(err)
		}
		logs = append(logs, &raft.Log{Index: uint64(i + 2), Term: 1, Type: raft.LogCommand, Data: data})
		if len(logs) == cap(logs) || i == count-1 {
			f.ApplyBatch(logs)
			logs = logs[:0]
		}
	}
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/objects:objects"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	runtime.GC()
	metrics.Read(samples)
	live, objects, gcCPU := samples[0].Value.Uint64(), samples[1].Value.Uint64(), samples[2].Value.Float64()
	b.ResetTimer()
	for range b.N {
		runtime.GC()
	}
	b.StopTimer()
	metrics.Read(samples)
	b.ReportMetric(float64(live)/count, "B/rule")
	b.ReportMetric(float64(objects)/count, "objects/rule")
	b.ReportMetric((samples[2].Value.Float64()-gcCPU)*1e3/float64(b.N), "ms-GC-CPU/op")
	if n := f.State().Counts()["acl-binding-rules"]; n != count {
		b.Fatalf("%d rules in the store, want %d", n, count)
	}
}
