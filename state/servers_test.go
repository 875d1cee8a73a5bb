package state

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-memdb"
)

func srv(id, name string) *ServerInfo {
	return &ServerInfo{ID: id, Name: name, RaftAddr: "10.0.0.1:8300", HTTPAddr: "10.0.0.1:8500"}
}

func serverIDs(list []*ServerInfo) []string {
	out := []string{}
	for _, s := range list {
		out = append(out, s.ID)
	}
	return out
}

func TestServerSetAndRead(t *testing.T) {
	s := NewStore()
	idx, got, err := s.Server(nil, "s1")
	if err != nil || got != nil || idx != 1 {
		t.Fatalf("empty store: idx %d server %v err %v, want 1 nil nil", idx, got, err)
	}

	in := srv("s1", "node-1")
	in.CreateIndex, in.ModifyIndex = 77, 78
	if err := s.ServerSet(4, in); err != nil {
		t.Fatal(err)
	}
	if in.CreateIndex != 77 || in.ModifyIndex != 78 {
		t.Fatalf("ServerSet modified its argument: %+v", in)
	}
	want := &ServerInfo{ID: "s1", Name: "node-1", RaftAddr: "10.0.0.1:8300", HTTPAddr: "10.0.0.1:8500", CreateIndex: 4, ModifyIndex: 4}
	idx, got, err = s.Server(nil, "s1")
	if err != nil || idx != 4 || !reflect.DeepEqual(got, want) {
		t.Fatalf("read: idx %d server %+v err %v, want 4 %+v", idx, got, err, want)
	}

	// Update keeps CreateIndex and replaces the rest.
	upd := &ServerInfo{ID: "s1", Name: "node-1b", RaftAddr: "10.0.0.9:8300"}
	if err := s.ServerSet(9, upd); err != nil {
		t.Fatal(err)
	}
	want = &ServerInfo{ID: "s1", Name: "node-1b", RaftAddr: "10.0.0.9:8300", CreateIndex: 4, ModifyIndex: 9}
	idx, got, _ = s.Server(nil, "s1")
	if idx != 9 || !reflect.DeepEqual(got, want) {
		t.Fatalf("after update: idx %d server %+v, want 9 %+v", idx, got, want)
	}
	if got := s.TableIndex(serversTable); got != 9 {
		t.Fatalf("servers TableIndex %d, want 9", got)
	}
	// Tables have separate indexes.
	if got := s.TableIndex(bindingRulesTable); got != 1 {
		t.Fatalf("binding-rule TableIndex %d after server writes, want 1", got)
	}
	// IDs are exact strings.
	if _, got, _ := s.Server(nil, "S1"); got != nil {
		t.Fatalf("lookup is case-insensitive: %+v", got)
	}
}

func TestServerSetMissingID(t *testing.T) {
	s := NewStore()
	if err := s.ServerSet(3, srv("s1", "a")); err != nil {
		t.Fatal(err)
	}
	wantStateError(t, s.ServerSet(5, srv("", "b")), ErrInvalid, "server is missing its ID")
	if got := s.TableIndex(serversTable); got != 3 {
		t.Fatalf("TableIndex %d after a rejected write, want 3", got)
	}
	_, list, _ := s.Servers(nil)
	if !reflect.DeepEqual(serverIDs(list), []string{"s1"}) {
		t.Fatalf("servers %v", serverIDs(list))
	}
}

func TestServersList(t *testing.T) {
	s := NewStore()
	idx, list, err := s.Servers(nil)
	if err != nil || idx != 1 || list == nil || len(list) != 0 {
		t.Fatalf("empty: idx %d list %#v err %v", idx, list, err)
	}
	for i, id := range []string{"c", "a", "b"} {
		if err := s.ServerSet(uint64(10+i), srv(id, "n-"+id)); err != nil {
			t.Fatal(err)
		}
	}
	idx, list, err = s.Servers(nil)
	if err != nil || idx != 12 {
		t.Fatalf("idx %d err %v", idx, err)
	}
	if got := serverIDs(list); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Fatalf("order %v, want a b c", got)
	}
	if list[0].CreateIndex != 11 || list[1].CreateIndex != 12 || list[2].CreateIndex != 10 {
		t.Fatalf("create indexes %d %d %d", list[0].CreateIndex, list[1].CreateIndex, list[2].CreateIndex)
	}
}

func TestServerDelete(t *testing.T) {
	s := NewStore()
	for i, id := range []string{"a", "b"} {
		if err := s.ServerSet(uint64(3+i), srv(id, id)); err != nil {
			t.Fatal(err)
		}
	}
	// Forgetting an unknown server is a no-op that does not move the index.
	if err := s.ServerDelete(7, "zzz"); err != nil {
		t.Fatalf("delete unknown: %v", err)
	}
	if got := s.TableIndex(serversTable); got != 4 {
		t.Fatalf("TableIndex %d after no-op delete, want 4", got)
	}
	if err := s.ServerDelete(8, "a"); err != nil {
		t.Fatal(err)
	}
	idx, got, _ := s.Server(nil, "a")
	if got != nil || idx != 8 {
		t.Fatalf("after delete: idx %d server %v, want 8 nil", idx, got)
	}
	_, list, _ := s.Servers(nil)
	if !reflect.DeepEqual(serverIDs(list), []string{"b"}) {
		t.Fatalf("remaining %v", serverIDs(list))
	}
}

func TestServerWatches(t *testing.T) {
	s := NewStore()
	if err := s.ServerSet(2, srv("a", "a")); err != nil {
		t.Fatal(err)
	}
	if err := s.ServerSet(3, srv("b", "b")); err != nil {
		t.Fatal(err)
	}

	one := memdb.NewWatchSet()
	s.Server(one, "a")
	list := memdb.NewWatchSet()
	s.Servers(list)
	if fired(one) || fired(list) {
		t.Fatal("watch fired before any write")
	}
	// Another server's update: the list wakes, the single read does not.
	if err := s.ServerSet(4, srv("b", "b2")); err != nil {
		t.Fatal(err)
	}
	if fired(one) {
		t.Fatal("read of server a woke on a write to server b")
	}
	if !fired(list) {
		t.Fatal("list did not wake on an update")
	}
	if err := s.ServerDelete(5, "a"); err != nil {
		t.Fatal(err)
	}
	if !fired(one) {
		t.Fatal("read of server a did not wake on its delete")
	}

	// A binding-rule write does not wake server reads, nor the reverse.
	ws := memdb.NewWatchSet()
	s.Servers(ws)
	mustCreate(t, s, 6, newRule(idA, DefaultNamespace, "m", "a"))
	if fired(ws) {
		t.Fatal("server list woke on a binding-rule write")
	}
	rw := memdb.NewWatchSet()
	if _, r, _ := s.BindingRule(rw, idMissing, DefaultNamespace); r != nil {
		t.Fatal("unexpected rule")
	}
	if err := s.ServerSet(7, srv("c", "c")); err != nil {
		t.Fatal(err)
	}
	if fired(rw) {
		t.Fatal("missing binding-rule read woke on a server write")
	}
}

func TestServerInfoSame(t *testing.T) {
	base := ServerInfo{ID: "a", Name: "n", RaftAddr: "r", HTTPAddr: "h", CreateIndex: 1, ModifyIndex: 2}
	tests := []struct {
		name   string
		change func(*ServerInfo)
		want   bool
	}{
		{"identical", func(*ServerInfo) {}, true},
		{"indexes ignored", func(o *ServerInfo) { o.CreateIndex, o.ModifyIndex = 9, 10 }, true},
		{"ID", func(o *ServerInfo) { o.ID = "b" }, false},
		{"Name", func(o *ServerInfo) { o.Name = "x" }, false},
		{"RaftAddr", func(o *ServerInfo) { o.RaftAddr = "x" }, false},
		{"HTTPAddr", func(o *ServerInfo) { o.HTTPAddr = "x" }, false},
	}
	for _, tc := range tests {
		o := base
		tc.change(&o)
		if got := base.Same(&o); got != tc.want {
			t.Errorf("%s: Same = %v, want %v", tc.name, got, tc.want)
		}
		if got := o.Same(&base); got != tc.want {
			t.Errorf("%s: Same (reversed) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestServersSnapshotRestore(t *testing.T) {
	s := NewStore()
	for i, id := range []string{"b", "a"} {
		if err := s.ServerSet(uint64(5+i), srv(id, id)); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, s, 9, newRule(idA, DefaultNamespace, "m", "a"))
	snap := s.Snapshot()
	defer snap.Close()
	servers, err := snap.Servers()
	if err != nil || !reflect.DeepEqual(serverIDs(servers), []string{"a", "b"}) {
		t.Fatalf("snapshot servers %v err %v", serverIDs(servers), err)
	}
	indexes, err := snap.Indexes()
	if err != nil {
		t.Fatal(err)
	}
	wantIdx := []*IndexEntry{{Key: bindingRulesTable, Value: 9}, {Key: serversTable, Value: 6}}
	if !reflect.DeepEqual(indexes, wantIdx) {
		t.Fatalf("indexes %+v, want %+v", indexes, wantIdx)
	}

	r := NewRestore()
	for _, e := range indexes {
		if err := r.Index(e); err != nil {
			t.Fatal(err)
		}
	}
	for _, sv := range servers {
		if err := r.Server(sv); err != nil {
			t.Fatal(err)
		}
	}
	dst := r.Commit()
	_, got, _ := dst.Servers(nil)
	if !reflect.DeepEqual(got, servers) {
		t.Fatalf("restored servers %+v, want %+v", got, servers)
	}
	if dst.TableIndex(serversTable) != 6 || dst.TableIndex(bindingRulesTable) != 9 {
		t.Fatalf("restored indexes %d %d", dst.TableIndex(serversTable), dst.TableIndex(bindingRulesTable))
	}

	bad := NewRestore()
	defer bad.Abort()
	if err := bad.Server(&ServerInfo{}); err == nil || !strings.HasPrefix(err.Error(), "failed restoring server : ") {
		t.Fatalf("empty server ID: err %v", err)
	}
}

func TestCounts(t *testing.T) {
	// checkCounts compares the two tables this test writes and wants every
	// other table (tables may be added later) empty.
	checkCounts := func(got map[string]int, rules, servers int) {
		t.Helper()
		if _, ok := got[indexTable]; ok {
			t.Fatal("Counts includes the index table")
		}
		for name, n := range got {
			want := 0
			switch name {
			case bindingRulesTable:
				want = rules
			case serversTable:
				want = servers
			}
			if n != want {
				t.Errorf("Counts[%q] = %d, want %d", name, n, want)
			}
		}
		if _, ok := got[bindingRulesTable]; !ok {
			t.Errorf("Counts lacks %q: %v", bindingRulesTable, got)
		}
		if _, ok := got[serversTable]; !ok {
			t.Errorf("Counts lacks %q: %v", serversTable, got)
		}
	}
	s := NewStore()
	checkCounts(s.Counts(), 0, 0)
	mustCreate(t, s, 2, newRule(idA, DefaultNamespace, "m", "a"))
	mustCreate(t, s, 3, newRule(idB, "team1", "m", "b"))
	mustCreate(t, s, 4, newRule(idC, DefaultNamespace, "j", "c"))
	if err := s.BindingRuleDelete(5, idC, DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	if err := s.ServerSet(6, srv("s1", "n")); err != nil {
		t.Fatal(err)
	}
	checkCounts(s.Counts(), 2, 1)
}
