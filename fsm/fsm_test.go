package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/fsm/raftfsm"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// rulesTable is the state store's binding-rule table, as TableIndex names it.
const rulesTable = "acl-binding-rules"

const (
	idA       = "0a1b2c3d-0000-4000-8000-000000000001"
	idB       = "5e6f7a8b-0000-4000-8000-000000000002"
	idC       = "9c8d7e6f-0000-4000-8000-000000000003"
	idMissing = "11111111-2222-4333-8444-555555555555"
)

func newFSM() *raftfsm.FSM { return raftfsm.New(hclog.NewNullLogger()) }

func entry(t *testing.T, idx uint64, mt fsm.MessageType, req any) *raft.Log {
	t.Helper()
	data, err := fsm.Encode(mt, req)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	return &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: data}
}

func setReq(id, ns, method, bindName string, create bool) fsm.BindingRuleSetRequest {
	return fsm.BindingRuleSetRequest{
		Rule: state.BindingRule{
			ID:          id,
			Description: "desc " + bindName,
			AuthMethod:  method,
			Selector:    "value.team == " + bindName,
			BindType:    state.BindTypeService,
			BindName:    bindName,
			Namespace:   ns,
		},
		Create: create,
	}
}

// applyRule applies a create or update and returns the stored rule.
func applyRule(t *testing.T, f *raftfsm.FSM, idx uint64, req fsm.BindingRuleSetRequest) *state.BindingRule {
	t.Helper()
	resp := f.Apply(entry(t, idx, fsm.BindingRuleSetType, req))
	rule, ok := resp.(*state.BindingRule)
	if !ok {
		t.Fatalf("apply at %d returned %T %v, want *state.BindingRule", idx, resp, resp)
	}
	return rule
}

func wantStateError(t *testing.T, resp any, code state.ErrorCode, msg string) {
	t.Helper()
	err, ok := resp.(error)
	if !ok {
		t.Fatalf("response %T %v is not an error", resp, resp)
	}
	var se *state.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %T %q is not a *state.Error", err, err)
	}
	if se.Code != code || se.Error() != msg {
		t.Fatalf("got %d %q, want %d %q", se.Code, se.Error(), code, msg)
	}
}

func allRules(t *testing.T, s *state.Store) []*state.BindingRule {
	t.Helper()
	_, rules, err := s.BindingRules(nil, state.AllNamespaces, "")
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

func indexes(t *testing.T, s *state.Store) []*state.IndexEntry {
	t.Helper()
	snap := s.Snapshot()
	defer snap.Close()
	out, err := snap.Indexes()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wantRefused checks that an entry the FSM cannot apply was answered with
// an invalid-request error (not a panic, which stopped the server at every
// start while the entry was in its log) and returns its text.
func wantRefused(t *testing.T, resp any) string {
	t.Helper()
	err, ok := resp.(error)
	if !ok {
		t.Fatalf("response %T %v, want an error", resp, resp)
	}
	var se *state.Error
	if !errors.As(err, &se) || se.Code != state.ErrInvalid {
		t.Fatalf("error %T %q, want a state.Error ErrInvalid", err, err)
	}
	return err.Error()
}

func TestEncode(t *testing.T) {
	data, err := fsm.Encode(fsm.BindingRuleDeleteType, fsm.BindingRuleDeleteRequest{ID: idA, Namespace: "team1"})
	if err != nil {
		t.Fatal(err)
	}
	if data[0] != 2 {
		t.Fatalf("type byte %d, want 2", data[0])
	}
	var back fsm.BindingRuleDeleteRequest
	if err := codec.NewDecoderBytes(data[1:], &codec.MsgpackHandle{}).Decode(&back); err != nil {
		t.Fatal(err)
	}
	if back != (fsm.BindingRuleDeleteRequest{ID: idA, Namespace: "team1"}) {
		t.Fatalf("decoded %+v", back)
	}

	data, err = fsm.Encode(fsm.BindingRuleSetType, complex(1, 2))
	if want := "failed encoding 1 request: msgpack encode error: unsupported kind complex128, for (1+2i)"; err == nil || err.Error() != want || data != nil {
		t.Fatalf("encoding a complex: data %x err %v, want nil %q", data, err, want)
	}
}

// Encoders are reused: an entry never shares bytes with the next one, and
// a failed encode leaves nothing behind for the next.
func TestEncodeReusedEncoders(t *testing.T) {
	var entries [][]byte
	for i := range 50 {
		if i%10 == 5 {
			if _, err := fsm.Encode(fsm.BindingRuleSetType, []any{"partly", complex(1, 2)}); err == nil {
				t.Fatal("encoding a complex succeeded")
			}
		}
		data, err := fsm.Encode(fsm.BindingRuleDeleteType, fsm.BindingRuleDeleteRequest{ID: fmt.Sprintf("id-%d", i), Namespace: strings.Repeat("n", i*40)})
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, data)
	}
	for i, data := range entries {
		var back fsm.BindingRuleDeleteRequest
		if err := codec.NewDecoderBytes(data[1:], &codec.MsgpackHandle{BasicHandle: codec.BasicHandle{DecodeOptions: codec.DecodeOptions{RawToString: true}}}).Decode(&back); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if data[0] != 2 || back.ID != fmt.Sprintf("id-%d", i) || back.Namespace != strings.Repeat("n", i*40) {
			t.Fatalf("entry %d decoded as type %d %q/%d, later encodes changed it", i, data[0], back.ID, len(back.Namespace))
		}
	}
}

func TestMessageTypeValues(t *testing.T) {
	// These bytes are in every Raft log on disk: they must never change.
	got := []fsm.MessageType{fsm.BindingRuleSetType, fsm.BindingRuleDeleteType,
		fsm.ServerRegisterType, fsm.ServerDeregisterType,
		fsm.ACLPolicySetType, fsm.ACLPolicyDeleteType, fsm.ACLTokenSetType, fsm.ACLTokenDeleteType,
		fsm.ACLRoleSetType, fsm.ACLRoleDeleteType, fsm.ACLAuthMethodSetType, fsm.ACLAuthMethodDeleteType,
		fsm.ACLBootstrapType, fsm.ACLInitType, fsm.ACLTokenReapType,
		fsm.IgnoreUnknownTypeFlag}
	if want := []fsm.MessageType{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 128}; !reflect.DeepEqual(got, want) {
		t.Fatalf("message types changed: %v, want %v", got, want)
	}
}

func TestApplyBindingRuleSetCreate(t *testing.T) {
	f := newFSM()
	req := setReq(idA, "team1", "minikube", "web", true)
	req.Rule.CreateIndex, req.Rule.ModifyIndex = 50, 60 // ignored
	got := applyRule(t, f, 7, req)
	want := &state.BindingRule{
		ID: idA, Description: "desc web", AuthMethod: "minikube", Selector: "value.team == web",
		BindType: "service", BindName: "web", Namespace: "team1", CreateIndex: 7, ModifyIndex: 7,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("apply returned %+v, want %+v", got, want)
	}
	idx, stored, err := f.State().BindingRule(nil, idA, "team1")
	if err != nil || idx != 7 || !reflect.DeepEqual(stored, want) {
		t.Fatalf("stored: idx %d rule %+v err %v", idx, stored, err)
	}
	if got := f.State().TableIndex(rulesTable); got != 7 {
		t.Fatalf("TableIndex %d, want 7", got)
	}
}

func TestApplyBindingRuleSetUpdate(t *testing.T) {
	f := newFSM()
	applyRule(t, f, 3, setReq(idA, "team1", "minikube", "web", true))

	upd := setReq(idA, "team1", "", "api", false)
	upd.Rule.BindType = state.BindTypeRole
	upd.Rule.Selector = ""
	upd.Rule.Description = ""
	got := applyRule(t, f, 9, upd)
	want := &state.BindingRule{
		ID: idA, AuthMethod: "minikube", BindType: "role", BindName: "api", Namespace: "team1",
		CreateIndex: 3, ModifyIndex: 9,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("update returned %+v, want %+v", got, want)
	}
	if _, stored, _ := f.State().BindingRule(nil, idA, "team1"); !reflect.DeepEqual(stored, want) {
		t.Fatalf("stored %+v, want %+v", stored, want)
	}
	if got := f.State().TableIndex(rulesTable); got != 9 {
		t.Fatalf("TableIndex %d, want 9", got)
	}
}

func TestApplyBindingRuleSetErrors(t *testing.T) {
	tests := []struct {
		name string
		req  fsm.BindingRuleSetRequest
		code state.ErrorCode
		msg  string
	}{
		{"create of an existing ID", setReq(idA, "team1", "minikube", "x", true), state.ErrConflict, "binding rule " + idA + " already exists"},
		{"create without auth method", setReq(idB, "team1", "", "x", true), state.ErrInvalid, "Invalid Binding Rule: no AuthMethod is set"},
		{"create without namespace", setReq(idB, "", "minikube", "x", true), state.ErrInvalid, "binding rule is missing its ID or namespace"},
		{"update of a missing rule", setReq(idMissing, "team1", "minikube", "x", false), state.ErrNotFound, "cannot find binding rule " + idMissing},
		{"update in another namespace", setReq(idA, "default", "minikube", "x", false), state.ErrNotFound, "cannot find binding rule " + idA},
		{"update changing the auth method", setReq(idA, "team1", "jwt", "x", false), state.ErrInvalid, "the AuthMethod field of an Binding Rule is immutable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFSM()
			applyRule(t, f, 3, setReq(idA, "team1", "minikube", "web", true))
			before := allRules(t, f.State())

			wantStateError(t, f.Apply(entry(t, 4, fsm.BindingRuleSetType, tc.req)), tc.code, tc.msg)

			if after := allRules(t, f.State()); !reflect.DeepEqual(after, before) {
				t.Fatalf("rejected apply changed the rules: %+v", after)
			}
			if got := f.State().TableIndex(rulesTable); got != 3 {
				t.Fatalf("TableIndex %d after a rejected apply, want 3", got)
			}
		})
	}
}

func TestApplyBindingRuleDelete(t *testing.T) {
	f := newFSM()
	applyRule(t, f, 3, setReq(idA, "team1", "minikube", "a", true))
	applyRule(t, f, 4, setReq(idB, "default", "minikube", "b", true))

	// Missing and other-namespace deletes are rejected and change nothing.
	for _, req := range []fsm.BindingRuleDeleteRequest{
		{ID: idMissing, Namespace: "team1"},
		{ID: idA, Namespace: "default"},
	} {
		wantStateError(t, f.Apply(entry(t, 5, fsm.BindingRuleDeleteType, req)), state.ErrNotFound, "binding rule does not exist")
	}
	if got := f.State().TableIndex(rulesTable); got != 4 {
		t.Fatalf("TableIndex %d after rejected deletes, want 4", got)
	}
	if n := len(allRules(t, f.State())); n != 2 {
		t.Fatalf("%d rules after rejected deletes, want 2", n)
	}

	resp := f.Apply(entry(t, 6, fsm.BindingRuleDeleteType, fsm.BindingRuleDeleteRequest{ID: idA, Namespace: "team1"}))
	if resp != nil {
		t.Fatalf("delete returned %T %v, want nil", resp, resp)
	}
	rules := allRules(t, f.State())
	if len(rules) != 1 || rules[0].ID != idB {
		t.Fatalf("rules after delete: %+v", rules)
	}
	if got := f.State().TableIndex(rulesTable); got != 6 {
		t.Fatalf("TableIndex %d, want 6", got)
	}
}

func TestApplyEmptyEntry(t *testing.T) {
	f := newFSM()
	for _, data := range [][]byte{nil, {}} {
		resp := f.Apply(&raft.Log{Index: 12, Type: raft.LogCommand, Data: data})
		err, ok := resp.(error)
		if !ok || err.Error() != "empty log entry at index 12" {
			t.Fatalf("data %#v: response %T %v, want error %q", data, resp, resp, "empty log entry at index 12")
		}
		var se *state.Error
		if errors.As(err, &se) {
			t.Fatalf("empty entry reported as a state.Error %+v", se)
		}
	}
}

func TestApplyUnknownTypeIsAnError(t *testing.T) {
	for _, mt := range []fsm.MessageType{0, 3 + 60, 127} {
		f := newFSM()
		data := []byte{byte(mt), 0x80} // type byte, then an empty msgpack map
		msg := wantRefused(t, f.Apply(&raft.Log{Index: 21, Data: data}))
		if want := fmt.Sprintf("failed to apply request: unknown message type %d at index 21", mt); msg != want {
			t.Fatalf("type %d: %q, want %q", mt, msg, want)
		}
		if got := f.State().TableIndex(rulesTable); got != 1 {
			t.Fatalf("TableIndex %d, want 1", got)
		}
	}
}

func TestApplyUnknownTypeIgnored(t *testing.T) {
	f := newFSM()
	applyRule(t, f, 3, setReq(idA, "team1", "minikube", "a", true))
	for i, mt := range []fsm.MessageType{fsm.IgnoreUnknownTypeFlag, fsm.IgnoreUnknownTypeFlag | 63, 255} {
		data := []byte{byte(mt), 0x80}
		if resp := f.Apply(&raft.Log{Index: uint64(10 + i), Data: data}); resp != nil {
			t.Fatalf("type %d: response %T %v, want nil", mt, resp, resp)
		}
	}
	if got := f.State().TableIndex(rulesTable); got != 3 {
		t.Fatalf("TableIndex %d after ignored entries, want 3", got)
	}
	if n := len(allRules(t, f.State())); n != 1 {
		t.Fatalf("%d rules after ignored entries, want 1", n)
	}
}

func TestApplyKnownTypeWithIgnoreFlag(t *testing.T) {
	// The flag only says an older server that does not know the type may skip
	// it; a server that knows the type applies it like any other entry.
	f := newFSM()
	resp := f.Apply(entry(t, 5, fsm.BindingRuleSetType|fsm.IgnoreUnknownTypeFlag, setReq(idA, "team1", "minikube", "a", true)))
	rule, ok := resp.(*state.BindingRule)
	if !ok || rule.ID != idA || rule.CreateIndex != 5 {
		t.Fatalf("flagged create returned %T %+v, want the created rule", resp, resp)
	}
	resp = f.Apply(entry(t, 6, fsm.BindingRuleDeleteType|fsm.IgnoreUnknownTypeFlag, fsm.BindingRuleDeleteRequest{ID: idA, Namespace: "team1"}))
	if resp != nil {
		t.Fatalf("flagged delete returned %T %v, want nil", resp, resp)
	}
	if n := len(allRules(t, f.State())); n != 0 {
		t.Fatalf("%d rules, want 0", n)
	}
	if got := f.State().TableIndex(rulesTable); got != 6 {
		t.Fatalf("TableIndex %d, want 6", got)
	}
}

func TestApplyUndecodableBodyIsAnError(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"set, reserved msgpack byte", []byte{byte(fsm.BindingRuleSetType), 0xc1}, "failed to decode binding rule set at index 8: "},
		{"set, truncated", []byte{byte(fsm.BindingRuleSetType), 0x82}, "failed to decode binding rule set at index 8: "},
		{"set, no body", []byte{byte(fsm.BindingRuleSetType)}, "failed to decode binding rule set at index 8: "},
		{"delete, reserved msgpack byte", []byte{byte(fsm.BindingRuleDeleteType), 0xc1}, "failed to decode binding rule delete at index 8: "},
		{"delete, no body", []byte{byte(fsm.BindingRuleDeleteType)}, "failed to decode binding rule delete at index 8: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFSM()
			msg := wantRefused(t, f.Apply(&raft.Log{Index: 8, Data: tc.data}))
			if !strings.HasPrefix(msg, tc.want) {
				t.Fatalf("%q, want prefix %q", msg, tc.want)
			}
			if got := f.State().TableIndex(rulesTable); got != 1 {
				t.Fatalf("TableIndex %d, want 1", got)
			}
		})
	}
}

func TestApplyWakesWatchers(t *testing.T) {
	f := newFSM()
	ws := memdb.NewWatchSet()
	if _, _, err := f.State().BindingRules(ws, state.AllNamespaces, ""); err != nil {
		t.Fatal(err)
	}
	applyRule(t, f, 2, setReq(idA, "default", "m", "a", true))
	if timedOut := ws.Watch(time.After(time.Second)); timedOut {
		t.Fatal("list watch did not fire on an applied create")
	}
}

// ---- snapshots ----

// memSink is a raft.SnapshotSink that keeps what was written.
type memSink struct {
	bytes.Buffer
	failWrite          error
	closed, cancelled  bool
	writesBeforeFailed int
}

func (s *memSink) Write(p []byte) (int, error) {
	if s.failWrite != nil {
		if s.writesBeforeFailed == 0 {
			return 0, s.failWrite
		}
		s.writesBeforeFailed--
	}
	return s.Buffer.Write(p)
}
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

// trackedReader records whether Restore closed it.
type trackedReader struct {
	io.Reader
	closed bool
}

func (r *trackedReader) Close() error { r.closed = true; return nil }

// persist snapshots f into memory and returns the stream.
func persist(t *testing.T, f *raftfsm.FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed %v cancelled %v, want true false", sink.closed, sink.cancelled)
	}
	return sink.Bytes()
}

// seeded returns an FSM with rules in two namespaces, one updated and one deleted.
func seeded(t *testing.T) *raftfsm.FSM {
	t.Helper()
	f := newFSM()
	applyRule(t, f, 3, setReq(idC, "default", "minikube", "c", true))
	applyRule(t, f, 4, setReq(idA, "team1", "jwt", "a", true))
	applyRule(t, f, 5, setReq(idB, "default", "minikube", "b", true))
	applyRule(t, f, 6, setReq(idMissing, "default", "minikube", "gone", true))
	applyRule(t, f, 7, setReq(idC, "default", "", "c2", false))
	if resp := f.Apply(entry(t, 8, fsm.BindingRuleDeleteType, fsm.BindingRuleDeleteRequest{ID: idMissing, Namespace: "default"})); resp != nil {
		t.Fatalf("delete: %v", resp)
	}
	return f
}

// seededWithServers adds two servers (index 9 and 10) to seeded's rules.
func seededWithServers(t *testing.T) *raftfsm.FSM {
	t.Helper()
	f := seeded(t)
	for i, id := range []string{"srv-b", "srv-a"} {
		req := fsm.ServerRegisterRequest{Server: state.ServerInfo{ID: id, Name: "n-" + id, RaftAddr: "127.0.0.1:830" + fmt.Sprint(i), HTTPAddr: "127.0.0.1:850" + fmt.Sprint(i)}}
		if resp := f.Apply(entry(t, uint64(9+i), fsm.ServerRegisterType, req)); resp != nil {
			t.Fatalf("register %s: %v", id, resp)
		}
	}
	return f
}

func allServers(t *testing.T, s *state.Store) []*state.ServerInfo {
	t.Helper()
	_, out, err := s.Servers(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSnapshotRestoreRoundTripInmemStore(t *testing.T) {
	src := seededWithServers(t)
	wantRules := allRules(t, src.State())
	wantServers := allServers(t, src.State())
	wantIndexes := indexes(t, src.State())
	if len(wantRules) != 3 || len(wantServers) != 2 ||
		!reflect.DeepEqual(wantIndexes, []*state.IndexEntry{{Key: rulesTable, Value: 8}, {Key: "servers", Value: 10}}) {
		t.Fatalf("seed: %d rules, %d servers, indexes %+v", len(wantRules), len(wantServers), wantIndexes)
	}

	store := raft.NewInmemSnapshotStore()
	sink, err := store.Create(raft.SnapshotVersionMax, 8, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()

	meta, rc, err := store.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	if meta.Index != 8 || meta.Size != int64(len(persist(t, src))) {
		t.Fatalf("snapshot meta %+v", meta)
	}
	dst := newFSM()
	if err := dst.Restore(rc); err != nil {
		t.Fatal(err)
	}

	gotRules := allRules(t, dst.State())
	if !reflect.DeepEqual(gotRules, wantRules) {
		t.Fatalf("restored rules differ:\n got %+v\nwant %+v", gotRules, wantRules)
	}
	if got := allServers(t, dst.State()); !reflect.DeepEqual(got, wantServers) {
		t.Fatalf("restored servers differ:\n got %+v\nwant %+v", got, wantServers)
	}
	if got := indexes(t, dst.State()); !reflect.DeepEqual(got, wantIndexes) {
		t.Fatalf("restored indexes %+v, want %+v", got, wantIndexes)
	}
	if got := dst.State().TableIndex(rulesTable); got != 8 {
		t.Fatalf("restored TableIndex %d, want 8", got)
	}
	if got := dst.State().TableIndex("servers"); got != 10 {
		t.Fatalf("restored servers TableIndex %d, want 10", got)
	}
	if !reflect.DeepEqual(dst.State().Counts(), src.State().Counts()) {
		t.Fatalf("restored Counts %v, want %v", dst.State().Counts(), src.State().Counts())
	}
	// Field-level check of one restored rule, and the per-method index.
	_, c, _ := dst.State().BindingRule(nil, idC, "default")
	wantC := &state.BindingRule{ID: idC, Description: "desc c2", AuthMethod: "minikube", Selector: "value.team == c2",
		BindType: "service", BindName: "c2", Namespace: "default", CreateIndex: 3, ModifyIndex: 7}
	if !reflect.DeepEqual(c, wantC) {
		t.Fatalf("restored rule %+v, want %+v", c, wantC)
	}
	_, byMethod, _ := dst.State().BindingRules(nil, "default", "minikube")
	if len(byMethod) != 2 || byMethod[0].ID != idB || byMethod[1].ID != idC {
		t.Fatalf("restored authmethod list %+v", byMethod)
	}

	// The restored FSM keeps applying from there.
	applyRule(t, dst, 9, setReq(idA, "team1", "", "a9", false))
	if _, err := dst.State().BindingRuleSet(10, &state.BindingRule{ID: idB, Namespace: "default", AuthMethod: "m"}, true); err == nil {
		t.Fatal("restored state accepted a duplicate ID")
	}
}

func TestSnapshotRestoreEmpty(t *testing.T) {
	// An empty store's stream is the end record alone: "" and a count of 0.
	data := persist(t, newFSM())
	if want := []byte{0xa0, 0x00}; !bytes.Equal(data, want) {
		t.Fatalf("snapshot of an empty store is %x, want %x", data, want)
	}
	f := seeded(t)
	old := f.State()
	if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if n := len(allRules(t, f.State())); n != 0 {
		t.Fatalf("%d rules after restoring an empty snapshot", n)
	}
	if got := f.State().TableIndex(rulesTable); got != 1 {
		t.Fatalf("TableIndex %d, want 1", got)
	}
	if got := indexes(t, f.State()); len(got) != 0 {
		t.Fatalf("index rows %+v after restoring an empty snapshot", got)
	}
	if f.State() == old {
		t.Fatal("State() still returns the old store")
	}
	select {
	case <-old.AbandonCh():
	default:
		t.Fatal("old store not abandoned")
	}
}

func TestSnapshotIsPointInTime(t *testing.T) {
	f := seeded(t)
	want := allRules(t, f.State())
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()

	applyRule(t, f, 20, setReq(idMissing, "default", "jwt", "late", true))
	f.Apply(entry(t, 21, fsm.BindingRuleDeleteType, fsm.BindingRuleDeleteRequest{ID: idA, Namespace: "team1"}))

	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	dst := newFSM()
	if err := dst.Restore(io.NopCloser(&sink.Buffer)); err != nil {
		t.Fatal(err)
	}
	if got := allRules(t, dst.State()); !reflect.DeepEqual(got, want) {
		t.Fatalf("snapshot holds later writes:\n got %+v\nwant %+v", got, want)
	}
	if got := dst.State().TableIndex(rulesTable); got != 8 {
		t.Fatalf("TableIndex %d, want 8", got)
	}
}

func TestSnapshotStreamFormat(t *testing.T) {
	// The stream is (table name, row) msgpack records: the index table's rows
	// first, then every other table in name order, each in ID order, then the
	// end record ("", number of rows). Snapshots on disk depend on it.
	if got, want := state.Tables(), []string{"index", "acl-auth-methods", "acl-binding-rules", "acl-meta",
		"acl-policies", "acl-roles", "acl-tokens", "allocs", "deployment_history", "deployments", "evals",
		"job_scaling_events", "job_summary", "job_versions", "jobs", "namespaces", "node_pools", "nodes", "servers", "service_registrations"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("state.Tables() = %v, want %v", got, want)
	}
	f := seededWithServers(t)
	var want bytes.Buffer
	enc := codec.NewEncoder(&want, &codec.MsgpackHandle{})
	enc.MustEncode("index")
	enc.MustEncode(&state.IndexEntry{Key: rulesTable, Value: 8})
	enc.MustEncode("index")
	enc.MustEncode(&state.IndexEntry{Key: "servers", Value: 10})
	for _, r := range allRules(t, f.State()) {
		enc.MustEncode(rulesTable)
		enc.MustEncode(r)
	}
	for _, sv := range allServers(t, f.State()) {
		enc.MustEncode("servers")
		enc.MustEncode(sv)
	}
	enc.MustEncode("")
	enc.MustEncode(uint64(2 + 3 + 2))
	got := persist(t, f)
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("stream differs:\n got %x\nwant %x", got, want.Bytes())
	}
	// The record layout, byte for byte: fixstr "index", then a 2-entry map.
	if !bytes.HasPrefix(got, []byte("\xa5index\x82")) || !bytes.HasSuffix(got, []byte{0xa0, 0x07}) {
		t.Fatalf("stream starts %x and ends %x", got[:8], got[len(got)-2:])
	}
}

func TestSnapshotStreamFormatACLTables(t *testing.T) {
	// Every ACL table takes its place in the order. (Map keys, as in an auth
	// method's Config, are written in no fixed order: the stream is compared
	// record by record, decoded, not byte for byte.)
	f := seededACL(t)
	snap := f.State().Snapshot()
	defer snap.Close()
	type record struct {
		table string
		row   any
	}
	var want []record
	for _, table := range []string{"index", "acl-auth-methods", "acl-binding-rules", "acl-meta", "acl-policies", "acl-roles", "acl-tokens", "servers"} {
		rows, err := snap.Rows(table)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			want = append(want, record{table, row})
		}
	}
	if len(want) != 6+2+1+1+1+1+3 {
		t.Fatalf("%d rows", len(want))
	}

	data := persist(t, f)
	r := bytes.NewReader(data)
	h := &codec.MsgpackHandle{} // as fsm's: strings as strings, maps as map[string]any
	h.RawToString = true
	h.MapType = reflect.TypeOf(map[string]any(nil))
	dec := codec.NewDecoder(r, h)
	for i, w := range want {
		var table string
		dec.MustDecode(&table)
		if table != w.table {
			t.Fatalf("record %d is of table %q, want %q", i, table, w.table)
		}
		row := state.NewRow(table)
		dec.MustDecode(row)
		if !reflect.DeepEqual(row, w.row) {
			t.Fatalf("record %d (%s):\n got %+v\nwant %+v", i, table, row, w.row)
		}
	}
	var end string
	var count uint64
	dec.MustDecode(&end)
	dec.MustDecode(&count)
	if end != "" || count != uint64(len(want)) || r.Len() != 0 {
		t.Fatalf("end record %q %d, %d bytes after it", end, count, r.Len())
	}
}

func TestPersistWriteErrorCancelsSink(t *testing.T) {
	f := seeded(t)
	for _, okWrites := range []int{0, 1, 3} {
		snap, err := f.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		sink := &memSink{failWrite: errors.New("disk full"), writesBeforeFailed: okWrites}
		err = snap.Persist(sink)
		snap.Release()
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("after %d writes: err %v, want disk full", okWrites, err)
		}
		if !sink.cancelled || sink.closed {
			t.Fatalf("after %d writes: cancelled %v closed %v, want true false", okWrites, sink.cancelled, sink.closed)
		}
	}
}

func TestRestoreReplacesAndAbandonsOldStore(t *testing.T) {
	src := newFSM()
	applyRule(t, src, 40, setReq(idB, "team2", "ldap", "b", true))
	data := persist(t, src)

	f := seeded(t)
	old := f.State()
	ws := memdb.NewWatchSet()
	if _, rule, _ := old.BindingRule(ws, idA, "team1"); rule == nil {
		t.Fatal("seed rule missing")
	}
	rc := &trackedReader{Reader: bytes.NewReader(data)}
	if err := f.Restore(rc); err != nil {
		t.Fatal(err)
	}
	if !rc.closed {
		t.Fatal("Restore did not close the snapshot reader")
	}
	select {
	case <-old.AbandonCh():
	default:
		t.Fatal("old store's AbandonCh not closed")
	}
	fresh := f.State()
	if fresh == old {
		t.Fatal("State() still returns the old store")
	}
	select {
	case <-fresh.AbandonCh():
		t.Fatal("new store is abandoned")
	default:
	}
	rules := allRules(t, fresh)
	if len(rules) != 1 || rules[0].ID != idB || rules[0].Namespace != "team2" || rules[0].CreateIndex != 40 {
		t.Fatalf("restored rules %+v", rules)
	}
	if got := fresh.TableIndex(rulesTable); got != 40 {
		t.Fatalf("restored TableIndex %d, want 40", got)
	}
	// The old store is left as it was, for readers still holding it.
	if n := len(allRules(t, old)); n != 3 {
		t.Fatalf("old store has %d rules, want 3", n)
	}
	// Applies now go to the new store.
	applyRule(t, f, 41, setReq(idC, "team2", "ldap", "c", true))
	if n := len(allRules(t, old)); n != 3 {
		t.Fatalf("apply after restore wrote to the old store")
	}
	if n := len(allRules(t, f.State())); n != 2 {
		t.Fatalf("new store has %d rules, want 2", n)
	}
}

func TestRestoreCorruptStreamLeavesStateUntouched(t *testing.T) {
	valid := persist(t, seededWithServers(t))
	rows := uint64(2 + 3 + 2)
	body := valid[:len(valid)-2] // the records without the end record
	if !bytes.Equal(valid[len(valid)-2:], []byte{0xa0, byte(rows)}) {
		t.Fatalf("stream ends %x", valid[len(valid)-2:])
	}
	with := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	idxRow := encodeRecord(t, "index", &state.IndexEntry{Key: rulesTable, Value: 3})

	type tc struct {
		name string
		data []byte
		want string // error prefix
	}
	tests := []tc{
		{"unknown table", with(encodeRecord(t, "nope", &state.IndexEntry{Key: "x"}), endRecord(t, 1)), `unknown snapshot table "nope"`},
		{"unknown table, case differs", with(encodeRecord(t, "Index", &state.IndexEntry{Key: "x"}), endRecord(t, 1)), `unknown snapshot table "Index"`},
		{"old format: record type byte", with([]byte{0x01}, encodeValue(t, &state.IndexEntry{Key: rulesTable, Value: 3})), "failed reading snapshot record: "},
		{"table name not a string", []byte{0x09, 0x80}, "failed reading snapshot record: "},
		{"reserved msgpack byte", []byte{0xc1}, "failed reading snapshot record: "},
		{"nil table name", with([]byte{0xc0}, endRecord(t, 0)[1:]), "snapshot record after 0 rows has no table name"},
		{"nil as the end record", with(idxRow, []byte{0xc0, 0x01}), "snapshot record after 1 rows has no table name"},
		{"index row with a string body", with(encodeValue(t, "index"), []byte{0xa1, 'x'}, endRecord(t, 1)), "failed reading a row of index: "},
		{"rule row with a bad ID", with(encodeRecord(t, rulesTable, &state.BindingRule{ID: "nope", AuthMethod: "m", Namespace: "default"}), endRecord(t, 1)),
			"failed restoring a row of acl-binding-rules: "},
		{"server row with an empty ID", with(encodeRecord(t, "servers", &state.ServerInfo{Name: "x"}), endRecord(t, 1)), "failed restoring a row of servers: "},
		{"index row with an empty key", with(encodeRecord(t, "index", &state.IndexEntry{Value: 3}), endRecord(t, 1)), "failed restoring a row of index: "},
		{"token without a secret", with(encodeRecord(t, "acl-tokens", &state.ACLToken{AccessorID: idA}), endRecord(t, 1)), "failed restoring a row of acl-tokens: "},
		{"nil row", with(encodeValue(t, "acl-policies"), []byte{0xc0}, endRecord(t, 1)), "failed restoring a row of acl-policies: "},
		{"no end record", body, "snapshot is truncated: it ends after 7 rows without its end record"},
		{"empty stream", nil, "snapshot is truncated: it ends after 0 rows without its end record"},
		{"end record without its count", with(body, []byte{0xa0}), "failed reading snapshot end record: "},
		{"count too low", with(body, endRecord(t, rows-1)), "snapshot has 7 rows, its end record says 6"},
		{"count too high", with(body, endRecord(t, rows+1)), "snapshot has 7 rows, its end record says 8"},
		{"count of a truncated stream", with(idxRow, endRecord(t, rows)), "snapshot has 1 rows, its end record says 7"},
		{"huge count", with(body, endRecord(t, 1<<63)), "snapshot has 7 rows, its end record says 9223372036854775808"},
		{"nil count", with(body, []byte{0xa0, 0xc0}), "snapshot end record has no row count"},
		{"negative count", with(body, []byte{0xa0, 0xff}), "failed reading snapshot end record: "},
		{"count as a string", with(body, []byte{0xa0, 0xa1, '7'}), "failed reading snapshot end record: "},
		{"count as a float", with(body, []byte{0xa0}, encodeValue(t, 7.0)), "failed reading snapshot end record: "},
		{"valid stream then a byte", with(valid, []byte{0x7f}), "snapshot has data after its end record"},
		{"valid stream then nil", with(valid, []byte{0xc0}), "snapshot has data after its end record"},
		{"valid stream then a partial string", with(valid, []byte{0xa5, 'a'}), "snapshot has data after its end record"},
		{"valid stream then a partial uint64", with(valid, []byte{0xcf, 0x00}), "snapshot has data after its end record"},
		{"valid stream then a partial array", with(valid, []byte{0x92, 0x01}), "snapshot has data after its end record"},
		{"valid stream then another record", with(valid, idxRow), "snapshot has data after its end record"},
		{"valid stream twice", with(valid, valid), "snapshot has data after its end record"},
		{"valid stream then another end record", with(valid, endRecord(t, 0)), "snapshot has data after its end record"},
	}
	// Every truncation is refused, wherever the cut falls: inside a record,
	// at a record boundary, inside or just before the end record.
	for n := 0; n < len(valid); n++ {
		tests = append(tests, tc{fmt.Sprintf("truncated to %d of %d bytes", n, len(valid)), valid[:n], ""})
	}

	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			f := newFSM()
			applyRule(t, f, 3, setReq(idA, "team1", "jwt", "keep", true))
			old := f.State()
			wantRules := allRules(t, old)
			wantIndexes := indexes(t, old)

			rc := &trackedReader{Reader: bytes.NewReader(c.data)}
			err := f.Restore(rc)
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("err %v, want prefix %q", err, c.want)
			}
			if !rc.closed {
				t.Fatal("Restore did not close the reader on error")
			}
			if f.State() != old {
				t.Fatal("failed restore replaced the store")
			}
			select {
			case <-old.AbandonCh():
				t.Fatal("failed restore abandoned the store")
			default:
			}
			if got := allRules(t, f.State()); !reflect.DeepEqual(got, wantRules) {
				t.Fatalf("rules changed: %+v", got)
			}
			if got := indexes(t, f.State()); !reflect.DeepEqual(got, wantIndexes) {
				t.Fatalf("indexes changed: %+v", got)
			}
			if got := f.State().TableIndex(rulesTable); got != 3 {
				t.Fatalf("TableIndex %d, want 3", got)
			}
			if got := f.State().Counts(); got[rulesTable] != 1 || got["servers"] != 0 {
				t.Fatalf("Counts %v", got)
			}
			// The same stream through DecodeSnapshot: an error and no store.
			s, derr := fsm.DecodeSnapshot(bytes.NewReader(c.data))
			if derr == nil || s != nil {
				t.Fatalf("DecodeSnapshot: store %v err %v", s, derr)
			}
			// VerifySnapshot refuses it with the same error.
			if _, verr := fsm.VerifySnapshot(bytes.NewReader(c.data)); verr == nil || verr.Error() != derr.Error() {
				t.Fatalf("VerifySnapshot: %v, DecodeSnapshot: %v", verr, derr)
			}
		})
	}
}

// failingReader returns its data, then err.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestRestoreReadError(t *testing.T) {
	valid := persist(t, seeded(t))
	for _, n := range []int{0, 5, len(valid) - 1, len(valid)} {
		f := newFSM()
		old := f.State()
		boom := errors.New("disk read error")
		err := f.Restore(io.NopCloser(&failingReader{data: valid[:n], err: boom}))
		if err == nil || !errors.Is(err, boom) && !strings.Contains(err.Error(), boom.Error()) {
			t.Fatalf("after %d bytes: err %v, want the read error", n, err)
		}
		if f.State() != old {
			t.Fatalf("after %d bytes: store replaced", n)
		}
	}
}

func TestReadSnapshot(t *testing.T) {
	data := persist(t, seeded(t))
	r := state.NewRestore()
	if err := fsm.ReadSnapshot(bytes.NewReader(data), r); err != nil {
		t.Fatal(err)
	}
	s := r.Commit()
	if got := s.TableIndex(rulesTable); got != 8 {
		t.Fatalf("TableIndex %d, want 8", got)
	}
	if ids := ruleIDList(allRules(t, s)); !reflect.DeepEqual(ids, []string{idA, idB, idC}) {
		t.Fatalf("rules %v", ids)
	}

	r = state.NewRestore()
	defer r.Abort()
	bad := append(encodeRecord(t, "acl-nope", &state.IndexEntry{Key: "x"}), endRecord(t, 1)...)
	if err := fsm.ReadSnapshot(bytes.NewReader(bad), r); err == nil || err.Error() != `unknown snapshot table "acl-nope"` {
		t.Fatalf("err %v", err)
	}
	// The old format, (type byte, object) records, is refused.
	old := []byte{0x01, 0x82, 0xa3, 'K', 'e', 'y', 0xa1, 'x', 0xa5, 'V', 'a', 'l', 'u', 'e', 0x03}
	r2 := state.NewRestore()
	defer r2.Abort()
	if err := fsm.ReadSnapshot(bytes.NewReader(old), r2); err == nil || !strings.HasPrefix(err.Error(), "failed reading snapshot record: ") {
		t.Fatalf("old format: err %v", err)
	}
	// A stream that is only an end record is an empty store.
	r3 := state.NewRestore()
	if err := fsm.ReadSnapshot(bytes.NewReader(endRecord(t, 0)), r3); err != nil {
		t.Fatal(err)
	}
	if got := r3.Commit().Counts(); got[rulesTable] != 0 {
		t.Fatalf("Counts %v", got)
	}
}

func TestPersistConcurrentWithApply(t *testing.T) {
	// A snapshot is persisted from a read transaction while applies go on;
	// run with -race.
	f := seeded(t)
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := uint64(0); i < 50; i++ {
			id := fmt.Sprintf("aaaaaaaa-0000-4000-8000-%012d", i)
			f.Apply(entry(t, 100+i, fsm.BindingRuleSetType, setReq(id, "default", "m", "x", true)))
		}
	}()
	sink := &memSink{}
	perr := snap.Persist(sink)
	wg.Wait()
	if perr != nil {
		t.Fatal(perr)
	}
	dst := newFSM()
	if err := dst.Restore(io.NopCloser(&sink.Buffer)); err != nil {
		t.Fatal(err)
	}
	if n := len(allRules(t, dst.State())); n != 3 {
		t.Fatalf("snapshot has %d rules, want the 3 from before it was taken", n)
	}
	if n := len(allRules(t, f.State())); n != 53 {
		t.Fatalf("live store has %d rules, want 53", n)
	}
}

// ---- helpers for building streams ----

func ruleIDList(rules []*state.BindingRule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.ID)
	}
	return out
}

// encodeValue encodes one msgpack value.
func encodeValue(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := codec.NewEncoder(&buf, &codec.MsgpackHandle{}).Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// encodeRecord encodes one (table name, row) record.
func encodeRecord(t *testing.T, table string, row any) []byte {
	t.Helper()
	return append(encodeValue(t, table), encodeValue(t, row)...)
}

// endRecord encodes the end record of a stream of n rows.
func endRecord(t *testing.T, n uint64) []byte {
	t.Helper()
	return append(encodeValue(t, ""), encodeValue(t, n)...)
}

func TestApplyServerRegisterAndDeregister(t *testing.T) {
	f := newFSM()
	reg := fsm.ServerRegisterRequest{Server: state.ServerInfo{ID: "srv-1", Name: "one", RaftAddr: "10.0.0.1:8300", HTTPAddr: "10.0.0.1:8500", CreateIndex: 99}}
	if resp := f.Apply(entry(t, 5, fsm.ServerRegisterType, reg)); resp != nil {
		t.Fatalf("register returned %T %v, want nil", resp, resp)
	}
	want := &state.ServerInfo{ID: "srv-1", Name: "one", RaftAddr: "10.0.0.1:8300", HTTPAddr: "10.0.0.1:8500", CreateIndex: 5, ModifyIndex: 5}
	idx, got, err := f.State().Server(nil, "srv-1")
	if err != nil || idx != 5 || !reflect.DeepEqual(got, want) {
		t.Fatalf("after register: idx %d server %+v err %v, want 5 %+v", idx, got, err, want)
	}

	reg.Server.HTTPAddr = "10.0.0.1:9500"
	if resp := f.Apply(entry(t, 6, fsm.ServerRegisterType, reg)); resp != nil {
		t.Fatalf("re-register returned %v", resp)
	}
	want = &state.ServerInfo{ID: "srv-1", Name: "one", RaftAddr: "10.0.0.1:8300", HTTPAddr: "10.0.0.1:9500", CreateIndex: 5, ModifyIndex: 6}
	if _, got, _ := f.State().Server(nil, "srv-1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after re-register: %+v, want %+v", got, want)
	}

	wantStateError(t, f.Apply(entry(t, 7, fsm.ServerRegisterType, fsm.ServerRegisterRequest{})), state.ErrInvalid, "server is missing its ID")
	if got := f.State().TableIndex("servers"); got != 6 {
		t.Fatalf("servers TableIndex %d after a rejected register, want 6", got)
	}

	// Deregistering an unknown server is a no-op.
	if resp := f.Apply(entry(t, 8, fsm.ServerDeregisterType, fsm.ServerDeregisterRequest{ID: "nope"})); resp != nil {
		t.Fatalf("deregister unknown returned %v", resp)
	}
	if got := f.State().TableIndex("servers"); got != 6 {
		t.Fatalf("servers TableIndex %d after a no-op deregister, want 6", got)
	}
	if resp := f.Apply(entry(t, 9, fsm.ServerDeregisterType, fsm.ServerDeregisterRequest{ID: "srv-1"})); resp != nil {
		t.Fatalf("deregister returned %v", resp)
	}
	if idx, got, _ := f.State().Server(nil, "srv-1"); got != nil || idx != 9 {
		t.Fatalf("after deregister: idx %d server %+v", idx, got)
	}
	// Server entries leave the binding-rule table alone.
	if got := f.State().TableIndex(rulesTable); got != 1 {
		t.Fatalf("binding-rule TableIndex %d, want 1", got)
	}
}

func TestApplyServerUndecodableBodyIsAnError(t *testing.T) {
	for mt, want := range map[fsm.MessageType]string{
		fsm.ServerRegisterType:   "failed to decode server register at index 4: ",
		fsm.ServerDeregisterType: "failed to decode server deregister at index 4: ",
	} {
		f := newFSM()
		msg := wantRefused(t, f.Apply(&raft.Log{Index: 4, Data: []byte{byte(mt), 0xc1}}))
		if !strings.HasPrefix(msg, want) {
			t.Fatalf("type %d: %q, want prefix %q", mt, msg, want)
		}
	}
}

func TestDecodeSnapshot(t *testing.T) {
	src := seededWithServers(t)
	s, err := fsm.DecodeSnapshot(bytes.NewReader(persist(t, src)))
	if err != nil {
		t.Fatal(err)
	}
	if s == src.State() {
		t.Fatal("DecodeSnapshot returned the live store")
	}
	if !reflect.DeepEqual(allRules(t, s), allRules(t, src.State())) ||
		!reflect.DeepEqual(allServers(t, s), allServers(t, src.State())) ||
		!reflect.DeepEqual(indexes(t, s), indexes(t, src.State())) {
		t.Fatal("decoded store differs from the source")
	}

	for _, bad := range [][]byte{{0x09}, {0x02}, {0xc1}, nil, {0xa0}, {0xa0, 0x01}, {0xa0, 0x00, 0x00}} {
		s, err := fsm.DecodeSnapshot(bytes.NewReader(bad))
		if err == nil || s != nil {
			t.Fatalf("stream %x: store %v err %v, want nil and an error", bad, s, err)
		}
	}
	// An empty stream has no end record any more: it is refused.
	if _, err := fsm.DecodeSnapshot(bytes.NewReader(nil)); err == nil || err.Error() != "snapshot is truncated: it ends after 0 rows without its end record" {
		t.Fatalf("empty stream: err %v", err)
	}
	s, err = fsm.DecodeSnapshot(bytes.NewReader(endRecord(t, 0)))
	if err != nil || s == nil || len(allRules(t, s)) != 0 || s.TableIndex(rulesTable) != 1 {
		t.Fatalf("end record only: store %v err %v, want an empty store", s, err)
	}
}

// countingSink takes rows and refuses the one at failAt (counted from 1).
type countingSink struct {
	n      int
	failAt int
}

func (s *countingSink) Insert(table string, row any) error {
	s.n++
	if s.n == s.failAt {
		return fmt.Errorf("refused row %d", s.n)
	}
	return nil
}

// guardedReader fails the test when read after closed is set.
type guardedReader struct {
	t      *testing.T
	r      io.Reader
	closed atomic.Bool
	reads  atomic.Int64
}

func (g *guardedReader) Read(p []byte) (int, error) {
	if g.closed.Load() {
		g.t.Error("the stream was read after ReadSnapshot returned")
	}
	g.reads.Add(1)
	return g.r.Read(p[:min(len(p), 64)]) // small reads: many on the way
}

// manyRules is a snapshot stream of n rules (several decoder batches).
func manyRules(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	for i := 0; i < n; i++ {
		buf.Write(encodeRecord(t, rulesTable, &state.BindingRule{
			ID: fmt.Sprintf("%08x-0000-4000-8000-000000000000", i), AuthMethod: "m",
			Namespace: state.DefaultNamespace, BindType: state.BindTypeService, BindName: "b", CreateIndex: 1, ModifyIndex: 1,
		}))
	}
	buf.Write(endRecord(t, uint64(n)))
	return buf.Bytes()
}

func TestReadSnapshotPipelineOrderAndErrors(t *testing.T) {
	const n = 1000
	data := manyRules(t, n)

	// Every row reaches the sink, in order.
	r := state.NewRestore()
	if err := fsm.ReadSnapshot(bytes.NewReader(data), r); err != nil {
		t.Fatal(err)
	}
	if got := r.Commit().Counts()[rulesTable]; got != n {
		t.Fatalf("%d rules restored, want %d", got, n)
	}

	// A refused row stops the read: no row after it reaches the sink, and
	// the stream is no longer read once ReadSnapshot has returned.
	for _, failAt := range []int{1, 255, 256, 257, 700, n} {
		g := &guardedReader{t: t, r: bytes.NewReader(data)}
		sink := &countingSink{failAt: failAt}
		err := fsm.ReadSnapshot(g, sink)
		g.closed.Store(true)
		if want := fmt.Sprintf("refused row %d", failAt); err == nil || err.Error() != want {
			t.Fatalf("failAt %d: err %v, want %q", failAt, err, want)
		}
		if sink.n != failAt {
			t.Fatalf("failAt %d: the sink took %d rows", failAt, sink.n)
		}
	}

	// A row that does not decode is reported after the rows before it were
	// inserted; a refused row before it is reported instead.
	cut := bytes.Clone(data[:len(data)-len(endRecord(t, n))])
	cut = append(cut, encodeValue(t, rulesTable)...)
	cut = append(cut, 0xc1) // never used in msgpack
	sink := &countingSink{}
	err := fsm.ReadSnapshot(bytes.NewReader(cut), sink)
	if err == nil || !strings.HasPrefix(err.Error(), "failed reading a row of "+rulesTable) || sink.n != n {
		t.Fatalf("bad last row: err %v after %d rows, want a decode error after %d", err, sink.n, n)
	}
	sink = &countingSink{failAt: 600}
	if err := fsm.ReadSnapshot(bytes.NewReader(cut), sink); err == nil || err.Error() != "refused row 600" {
		t.Fatalf("refused row before a bad one: err %v", err)
	}
	// A truncated stream: every row before the cut, then the error.
	sink = &countingSink{}
	err = fsm.ReadSnapshot(bytes.NewReader(data[:len(data)-len(endRecord(t, n))]), sink)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("ends after %d rows", n)) || sink.n != n {
		t.Fatalf("truncated: err %v after %d rows", err, sink.n)
	}
}
