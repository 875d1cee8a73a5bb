package fsm_test

// Issue 31: no committed entry takes a server down. An entry that does not
// decode is an error result, the same wherever and whenever it is applied,
// and whatever applies gives a snapshot that decodes.

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/fsm/raftfsm"
	"github.com/ctlplane/ctlplane/limits"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// nestedMap is {"a": {"a": ... 1}}, levels maps deep.
func nestedMap(levels int) map[string]any {
	m := map[string]any{"a": 1}
	for i := 1; i < levels; i++ {
		m = map[string]any{"a": m}
	}
	return m
}

// depthOf is how deep maps nest in v.
func depthOf(v any) int {
	m, ok := v.(map[string]any)
	if !ok {
		return 0
	}
	d := 0
	for _, x := range m {
		d = max(d, depthOf(x))
	}
	return d + 1
}

const poisonNS, poisonJob, poisonGroup = "default", "web", "g"

func poisonJobEntry(t *testing.T, idx uint64, config map[string]any) *raft.Log {
	job := &state.Job{Namespace: poisonNS, ID: poisonJob, Type: state.JobTypeService,
		TaskGroups: []*state.TaskGroup{{Name: poisonGroup, Count: 1, Tasks: []*state.Task{{Name: "t", Driver: "mock_driver", Config: config}}}}}
	return entry(t, idx, fsm.JobRegisterType, fsm.JobRegisterRequest{Job: job})
}

func scaleEntry(t *testing.T, idx uint64, meta map[string]any) *raft.Log {
	return entry(t, idx, fsm.JobScaleType, fsm.JobScaleRequest{Namespace: poisonNS, JobID: poisonJob, Group: poisonGroup,
		Event: &state.ScalingEvent{Time: 1, Error: true, Message: "m", Meta: meta}})
}

func authMethodEntry(t *testing.T, idx uint64, config map[string]any) *raft.Log {
	return entry(t, idx, fsm.ACLAuthMethodSetType, fsm.ACLAuthMethodSetRequest{
		Method: state.ACLAuthMethod{Name: fmt.Sprintf("m%d", idx), Type: "jwt", Config: config}, Create: true})
}

// TestApplyEntriesGoOnAfterUndecodable: entries that do not decode (the
// exact poison of the finding, garbage, an unknown type) are error results
// in a batch and alone, the same error both ways, and the entries around
// them apply.
func TestApplyEntriesGoOnAfterUndecodable(t *testing.T) {
	logs := func() []*raft.Log {
		return []*raft.Log{
			poisonJobEntry(t, 2, map[string]any{"run_for": "1h"}),
			entry(t, 3, fsm.BindingRuleSetType, setReq(idA, "team1", "minikube", "a", true)),
			scaleEntry(t, 4, nestedMap(1100)), // the poison
			{Index: 5, Type: raft.LogCommand, Data: []byte{byte(fsm.BindingRuleSetType), 0xc1}},
			entry(t, 6, fsm.BindingRuleSetType, setReq(idB, "team1", "minikube", "b", true)),
			{Index: 7, Type: raft.LogCommand, Data: []byte{77, 0x80}},
			scaleEntry(t, 8, map[string]any{"k": "v"}),
			entry(t, 9, fsm.BindingRuleSetType, setReq(idC, "team1", "minikube", "c", true)),
		}
	}
	wantErr := map[int]string{
		2: "failed to decode job scale at index 4: msgpack decode error",
		3: "failed to decode binding rule set at index 5: msgpack decode error",
		5: "failed to apply request: unknown message type 77 at index 7",
	}
	batched := newFSM()
	outBatch := batched.ApplyBatch(logs())
	single := newFSM()
	for i, l := range logs() {
		resp := single.Apply(l)
		if want, bad := wantErr[i]; bad {
			got := wantRefused(t, resp)
			if !strings.HasPrefix(got, want) {
				t.Fatalf("entry %d alone: %q, want prefix %q", i, got, want)
			}
			if b := wantRefused(t, outBatch[i]); b != got {
				t.Fatalf("entry %d: %q in a batch, %q alone", i, b, got)
			}
			continue
		}
		if err, isErr := resp.(error); isErr {
			t.Fatalf("entry %d alone: %v", i, err)
		}
		if err, isErr := outBatch[i].(error); isErr {
			t.Fatalf("entry %d in a batch: %v", i, err)
		}
	}
	for name, f := range map[string]*raftfsm.FSM{"batched": batched, "single": single} {
		if n := len(allRules(t, f.State())); n != 3 {
			t.Fatalf("%s: %d rules, want 3", name, n)
		}
		_, events, err := f.State().ScalingEventsByJob(nil, poisonNS, poisonJob)
		if err != nil || len(events[poisonGroup]) != 1 || events[poisonGroup][0].Meta["k"] != "v" {
			t.Fatalf("%s: scaling events %v %+v, want the one that decodes", name, err, events)
		}
	}
	if a, b := persist(t, batched), persist(t, single); !bytes.Equal(a, b) {
		t.Fatal("the batched and the single FSM's snapshots differ")
	}
}

// TestEdgeValuesDecode pins the relation between the limits at the edge and
// the FSM's decoders, for every free-form field a write stores (a task's
// Config, a scaling event's Meta, an auth method's Config):
//   - a value at limits.MaxDepth applies and its snapshot decodes;
//   - the deepest value the log decoder takes (entries the edge never lets
//     through, but a build before it wrote) applies and its snapshot
//     decodes too: nothing that applies makes a snapshot that does not
//     (before, Meta at 1,020-1,021 levels did, and the server could not
//     restart from it); one level deeper is an error result.
func TestEdgeValuesDecode(t *testing.T) {
	if limits.MaxDepth*4 > limits.LogMaxDepth || limits.LogMaxDepth*2 > limits.SnapshotMaxDepth {
		t.Fatalf("limits MaxDepth %d, LogMaxDepth %d, SnapshotMaxDepth %d: each needs its margin",
			limits.MaxDepth, limits.LogMaxDepth, limits.SnapshotMaxDepth)
	}
	fields := []struct {
		name  string
		entry func(t *testing.T, idx uint64, v map[string]any) *raft.Log
		read  func(s *state.Store) map[string]any
	}{
		{"task Config", poisonJobEntry, func(s *state.Store) map[string]any {
			_, j, _ := s.Job(nil, poisonNS, poisonJob)
			return j.TaskGroups[0].Tasks[0].Config
		}},
		{"scaling Meta", scaleEntry, func(s *state.Store) map[string]any {
			_, ev, _ := s.ScalingEventsByJob(nil, poisonNS, poisonJob)
			return ev[poisonGroup][0].Meta
		}},
		{"auth method Config", authMethodEntry, func(s *state.Store) map[string]any {
			_, m, _ := s.ACLAuthMethod(nil, "m3")
			return m.Config
		}},
	}
	for _, field := range fields {
		t.Run(field.name, func(t *testing.T) {
			// The deepest value whose entry decodes.
			deepest := 0
			for levels := limits.LogMaxDepth; levels > 0; levels-- {
				f := newFSM()
				f.Apply(poisonJobEntry(t, 2, nil))
				if _, failed := f.Apply(field.entry(t, 3, nestedMap(levels))).(error); !failed {
					deepest = levels
					break
				}
			}
			if deepest < limits.LogMaxDepth-8 {
				t.Fatalf("the deepest value that applies nests %d levels, want about %d", deepest, limits.LogMaxDepth)
			}
			for _, levels := range []int{limits.MaxDepth, deepest} {
				f := newFSM()
				f.Apply(poisonJobEntry(t, 2, nil))
				if resp, failed := f.Apply(field.entry(t, 3, nestedMap(levels))).(error); failed {
					t.Fatalf("%d levels: %v", levels, resp)
				}
				restored, err := fsm.DecodeSnapshot(bytes.NewReader(persist(t, f)))
				if err != nil {
					t.Fatalf("%d levels: the snapshot does not decode: %v", levels, err)
				}
				if got := depthOf(field.read(restored)); got != levels {
					t.Fatalf("%d levels: restored value nests %d", levels, got)
				}
				if !reflect.DeepEqual(field.read(restored), field.read(f.State())) {
					t.Fatalf("%d levels: restored value differs", levels)
				}
			}
			f := newFSM()
			f.Apply(poisonJobEntry(t, 2, nil))
			msg := wantRefused(t, f.Apply(field.entry(t, 3, nestedMap(deepest+1))))
			if !strings.Contains(msg, "maximum decoding depth exceeded") {
				t.Fatalf("%d levels: %q", deepest+1, msg)
			}
		})
	}
}

// TestSnapshotTooDeepIsRefused: a snapshot stream whose row nests past
// limits.SnapshotMaxDepth (no build writes one: a crafted archive) is
// refused with the row's table and the reason, and one a little inside it
// decodes.
func TestSnapshotTooDeepIsRefused(t *testing.T) {
	h := &codec.MsgpackHandle{}
	stream := func(levels int) []byte {
		var buf []byte
		enc := codec.NewEncoderBytes(&buf, h)
		row := &state.JobScalingEvents{Namespace: poisonNS, JobID: poisonJob,
			ScalingEvents: map[string][]*state.ScalingEvent{poisonGroup: {{Message: "m", Meta: nestedMap(levels)}}}}
		for _, v := range []any{"job_scaling_events", row, "", uint64(1)} {
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
		}
		return buf
	}
	if _, err := fsm.DecodeSnapshot(bytes.NewReader(stream(limits.SnapshotMaxDepth - 8))); err != nil {
		t.Fatalf("%d levels: %v", limits.SnapshotMaxDepth-8, err)
	}
	for _, levels := range []int{limits.SnapshotMaxDepth, 3 * limits.SnapshotMaxDepth} {
		const want = "failed reading a row of job_scaling_events: msgpack decode error"
		if _, err := fsm.DecodeSnapshot(bytes.NewReader(stream(levels))); err == nil || !strings.HasPrefix(err.Error(), want) ||
			!strings.HasSuffix(err.Error(), "maximum decoding depth exceeded") {
			t.Fatalf("%d levels: %v, want %q ... depth exceeded", levels, err, want)
		}
		if _, err := fsm.VerifySnapshot(bytes.NewReader(stream(levels))); err == nil {
			t.Fatalf("%d levels: verified", levels)
		}
	}
}
