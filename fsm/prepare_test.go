package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
)

const (
	prepID1 = "0a1b2c3d-0000-4000-8000-000000000001"
	prepID2 = "5e6f7a8b-0000-4000-8000-000000000002"
)

// streamOf returns the snapshot stream of a store holding one rule.
func streamOf(t *testing.T, id string, idx uint64) []byte {
	t.Helper()
	f := New(hclog.NewNullLogger())
	buf, err := Encode(BindingRuleSetType, &BindingRuleSetRequest{Rule: state.BindingRule{
		ID: id, AuthMethod: "m", BindType: "service", BindName: "b", Namespace: "default"}, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp := f.ApplyEntry(idx, buf); resp == nil {
		t.Fatal("create answered nil")
	} else if err, ok := resp.(error); ok {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := f.Snapshot().Stream(&out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func ruleIDs(t *testing.T, s *state.Store) []string {
	t.Helper()
	_, rules, err := s.BindingRules(nil, state.AllNamespaces, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rules {
		out = append(out, r.ID)
	}
	return out
}

// Restore of the prepared stream swaps in the prepared store itself.
func TestRestoreTakesPreparedStore(t *testing.T) {
	f := New(hclog.NewNullLogger())
	a := streamOf(t, prepID1, 5)
	if err := f.PrepareRestore(bytes.NewReader(a)); err != nil {
		t.Fatal(err)
	}
	want := f.prep.p.store
	if err := f.Restore(io.NopCloser(bytes.NewReader(a))); err != nil {
		t.Fatal(err)
	}
	if f.State() != want {
		t.Fatal("Restore of the prepared stream did not use the prepared store")
	}
	if ids := ruleIDs(t, f.State()); len(ids) != 1 || ids[0] != prepID1 {
		t.Fatalf("rules after restore: %v", ids)
	}
	if f.prep.p != nil {
		t.Fatal("the prepared store is still kept after the restore")
	}
}

// Another stream than the prepared one is refused and changes nothing; the
// prepared store is gone, so the next Restore of that stream decodes it.
func TestRestoreOfAnotherStreamThanPrepared(t *testing.T) {
	f := New(hclog.NewNullLogger())
	old := f.State()
	a, b := streamOf(t, prepID1, 5), streamOf(t, prepID2, 6)
	if err := f.PrepareRestore(bytes.NewReader(a)); err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader(b))); !errors.Is(err, errPreparedMismatch) {
		t.Fatalf("Restore of another stream: %v", err)
	}
	if f.State() != old {
		t.Fatal("a refused restore replaced the store")
	}
	if err := f.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatal(err)
	}
	if ids := ruleIDs(t, f.State()); len(ids) != 1 || ids[0] != prepID2 {
		t.Fatalf("rules after restore: %v", ids)
	}
}

// A stream that does not decode is refused as DecodeSnapshot refuses it,
// and nothing is kept; a dropped prepared store is not used.
func TestPrepareRestoreRefusesWhatDecodeRefuses(t *testing.T) {
	f := New(hclog.NewNullLogger())
	a := streamOf(t, prepID1, 5)
	cut := a[:len(a)-3]
	_, want := DecodeSnapshot(bytes.NewReader(cut))
	if err := f.PrepareRestore(bytes.NewReader(cut)); err == nil || want == nil || err.Error() != want.Error() {
		t.Fatalf("PrepareRestore of a cut stream: %v, DecodeSnapshot: %v", err, want)
	}
	if f.prep.p != nil {
		t.Fatal("a refused stream was kept")
	}
	if err := f.PrepareRestore(bytes.NewReader(a)); err != nil {
		t.Fatal(err)
	}
	prepared := f.prep.p.store
	f.DropPrepared()
	if err := f.Restore(io.NopCloser(bytes.NewReader(a))); err != nil {
		t.Fatal(err)
	}
	if f.State() == prepared {
		t.Fatal("Restore used a dropped prepared store")
	}
	if ids := ruleIDs(t, f.State()); len(ids) != 1 || ids[0] != prepID1 {
		t.Fatalf("rules after restore: %v", ids)
	}
}
