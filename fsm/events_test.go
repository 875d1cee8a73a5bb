package fsm

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/state"
	"github.com/ctlplane/ctlplane/state/stream"
	"github.com/hashicorp/go-hclog"
)

// Entries applied in one batch (one memdb transaction) still give each
// entry its own events at its own index, published once the batch commits;
// an entry cut out of the batch gets its events from memdb's tracking; a
// rejected entry gives none.
func TestEventsPerEntryOfABatch(t *testing.T) {
	f := New(hclog.NewNullLogger())
	buf := stream.NewBuffer(100)
	f.SetEventSink(buf)
	rule := func(id, name string, create bool) []byte {
		b, err := Encode(BindingRuleSetType, &BindingRuleSetRequest{Create: create, Rule: state.BindingRule{
			ID: id, Namespace: "default", AuthMethod: "m", BindType: "service", BindName: name}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	del := func(id string) []byte {
		b, err := Encode(BindingRuleDeleteType, &BindingRuleDeleteRequest{ID: id, Namespace: "default"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	policy, err := Encode(ACLPolicySetType, &ACLPolicySetRequest{Policy: state.ACLPolicy{ID: "00000000-0000-0000-0000-0000000000aa", Name: "p", Rules: ""}})
	if err != nil {
		t.Fatal(err)
	}
	const r1, r2 = "00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"
	out := f.ApplyEntries([]Entry{
		{Index: 5, Data: rule(r1, "a", true)},
		{Index: 6, Data: rule(r2, "b", true)},
		{Index: 7, Data: rule(r1, "a2", false)}, // the same object again in the batch
		{Index: 8, Data: del(r2)},               // created and deleted in one batch
		{Index: 9, Data: rule(r1, "dup", true)}, // rejected: exists
		{Index: 10, Data: policy},               // not batched: cuts the batch
		{Index: 11, Data: del(r1)},
	})
	if err, ok := out[4].(error); !ok || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("entry 9: %v", out[4])
	}
	batches, _, err := buf.Subscribe(0).Next()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range batches {
		for _, e := range b.Events {
			if e.Index != b.Index {
				t.Errorf("event index %d in batch %d", e.Index, b.Index)
			}
			name := ""
			if r, ok := e.Payload[e.Topic].(*state.BindingRule); ok {
				name = r.BindName
			}
			got = append(got, fmt.Sprintf("%d %s %s %s %s", e.Index, e.Topic, e.Type, e.Key[len(e.Key)-2:], name))
		}
	}
	want := []string{
		"5 ACLBindingRule ACLBindingRuleUpserted 01 a",
		"6 ACLBindingRule ACLBindingRuleUpserted 02 b",
		"7 ACLBindingRule ACLBindingRuleUpserted 01 a2",
		"8 ACLBindingRule ACLBindingRuleDeleted 02 b",
		"10 ACLPolicy ACLPolicyUpserted aa ",
		"11 ACLBindingRule ACLBindingRuleDeleted 01 a2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A token's secret never reaches an event; a node's neither.
func TestEventsCarryNoSecrets(t *testing.T) {
	f := New(hclog.NewNullLogger())
	buf := stream.NewBuffer(10)
	f.SetEventSink(buf)
	tok, err := Encode(ACLTokenSetType, &ACLTokenSetRequest{Create: true, Token: state.ACLToken{
		AccessorID: "00000000-0000-0000-0000-0000000000a1", SecretID: "00000000-0000-0000-0000-00000000005e", Namespace: "default",
		Policies: []state.ACLLink{{ID: "00000000-0000-0000-0000-0000000000aa", Name: "p"}}}})
	if err != nil {
		t.Fatal(err)
	}
	node, err := Encode(NodeRegisterType, &NodeRegisterRequest{Node: &state.Node{ID: "00000000-0000-0000-0000-0000000000b1",
		SecretID: "00000000-0000-0000-0000-0000000000b2", Name: "n1", Datacenter: "dc1", Status: state.NodeStatusReady}})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range [][]byte{tok, node} {
		if resp := f.ApplyEntry(uint64(20+i), e); resp != nil {
			if err, ok := resp.(error); ok {
				t.Fatalf("entry %d: %v", i, err)
			}
		}
	}
	batches, _, _ := buf.Subscribe(0).Next()
	if len(batches) != 2 {
		t.Fatalf("%d batches", len(batches))
	}
	for _, b := range batches {
		enc, err := b.Encoded(func(e *stream.Event) stream.Event { return *e })
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range enc {
			if strings.Contains(string(j), "5e\"") || strings.Contains(string(j), "b2\"") {
				t.Errorf("a secret in an event: %s", j)
			}
		}
	}
	if e := batches[0].Events[0]; e.Type != stream.TypeACLTokenUpserted || e.Key != "00000000-0000-0000-0000-0000000000a1" {
		t.Errorf("token event %+v", e)
	}
	if e := batches[1].Events[0]; e.Type != stream.TypeNodeRegistration || e.Topic != stream.TopicNode {
		t.Errorf("node event %+v", e)
	}
	// The stored token keeps its secret: the event has its own copy.
	if _, tk, _ := f.State().ACLTokenBySecret(nil, "00000000-0000-0000-0000-00000000005e"); tk == nil {
		t.Error("the stored token lost its secret")
	}
}

// A snapshot restore ends the subscriptions of the replaced state with a
// message, and the restored store goes on producing events.
func TestEventsSnapshotRestoreEndsSubscriptions(t *testing.T) {
	src := New(hclog.NewNullLogger())
	pol := func(id, name string) []byte {
		b, err := Encode(ACLPolicySetType, &ACLPolicySetRequest{Policy: state.ACLPolicy{ID: id, Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	src.ApplyEntry(3, pol("00000000-0000-0000-0000-0000000000a1", "p1"))
	var snap bytes.Buffer
	s := src.Snapshot()
	if err := s.Stream(&snap); err != nil {
		t.Fatal(err)
	}
	s.Release()

	f := New(hclog.NewNullLogger())
	buf := stream.NewBuffer(10)
	f.SetEventSink(buf)
	f.ApplyEntry(1, pol("00000000-0000-0000-0000-0000000000b1", "other"))
	cur := buf.Subscribe(0)
	if batches, _, err := cur.Next(); err != nil || len(batches) != 1 {
		t.Fatalf("before restore: %d %v", len(batches), err)
	}
	if err := f.Restore(io.NopCloser(&snap)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cur.Next(); err == nil || !strings.Contains(err.Error(), "replaced by a snapshot restore") {
		t.Fatalf("after restore: %v", err)
	}
	fresh := buf.Subscribe(0)
	f.ApplyEntry(4, pol("00000000-0000-0000-0000-0000000000a2", "p2"))
	batches, _, err := fresh.Next()
	if err != nil || len(batches) != 1 || batches[0].Index != 4 || batches[0].Events[0].Key != "00000000-0000-0000-0000-0000000000a2" {
		t.Fatalf("after restore, a new subscription: %v %v", batches, err)
	}
}

// recordingBatch lists the commands that run in a batch of entries and
// whose state writes call Batch.record (memdb's tracking cannot tell the
// entries of one transaction apart).
var recordingBatch = map[MessageType]bool{BindingRuleSetType: true, BindingRuleDeleteType: true}

// A new batched command must record its changes, or its entries would give
// no events.
func TestBatchedCommandsRecordTheirChanges(t *testing.T) {
	for mt, c := range commands {
		if c.batch != nil && !recordingBatch[mt] {
			t.Errorf("command %q runs in a batch of entries: make its state writes call Batch.record (see state.NewEntriesBatch) and list it in recordingBatch", c.name)
		}
	}
}

// Drain and eligibility entries name their node events.
func TestEventsNodeDrainAndEligibility(t *testing.T) {
	f := New(hclog.NewNullLogger())
	buf := stream.NewBuffer(10)
	f.SetEventSink(buf)
	const id = "00000000-0000-0000-0000-0000000000c1"
	apply := func(idx uint64, mt MessageType, req any) {
		t.Helper()
		b, err := Encode(mt, req)
		if err != nil {
			t.Fatal(err)
		}
		if err, ok := f.ApplyEntry(idx, b).(error); ok {
			t.Fatalf("entry %d: %v", idx, err)
		}
	}
	apply(1, NodeRegisterType, &NodeRegisterRequest{Node: &state.Node{ID: id, SecretID: "00000000-0000-0000-0000-0000000000c2",
		Name: "n1", Datacenter: "dc1", Status: state.NodeStatusReady, SchedulingEligibility: state.NodeSchedulingEligible}})
	apply(2, NodeUpdateEligibilityType, &NodeUpdateEligibilityRequest{NodeID: id, Eligibility: state.NodeSchedulingIneligible})
	apply(3, NodeUpdateDrainType, &state.NodeDrainUpdate{NodeID: id, DrainStrategy: &state.DrainStrategy{}, UpdatedAt: 1})
	batches, _, err := buf.Subscribe(0).Next()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range batches {
		for _, e := range b.Events {
			if e.Topic == stream.TopicNode {
				n := e.Payload["Node"].(*state.Node)
				if n.SecretID != "" {
					t.Errorf("node secret in event %d", e.Index)
				}
				got = append(got, fmt.Sprintf("%d %s %s", e.Index, e.Type, n.SchedulingEligibility))
			}
		}
	}
	if s := strings.Join(got, ", "); s != "1 NodeRegistration eligible, 2 NodeEligibility ineligible, 3 NodeDrain ineligible" {
		t.Errorf("node events: %s", s)
	}
}
