package client

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	bolt "go.etcd.io/bbolt"
)

func testSavedAlloc(id string, restarts uint64) *savedAlloc {
	return &savedAlloc{
		Alloc: &api.Allocation{ID: id, JobID: "web", TaskGroup: "g", DesiredStatus: api.AllocDesiredStatusRun},
		Group: &api.TaskGroup{Name: "g", Count: 1, Tasks: []*api.Task{{Name: "t", Driver: MockDriver}}},
		Tasks: []*savedTask{{Name: "t", State: &api.TaskState{State: api.TaskStateRunning, Restarts: restarts},
			Pid: 4242, StartTick: 99, Count: 1, WindowStart: time.Unix(1700000000, 0).UTC()}},
	}
}

// byID indexes a loaded state's allocations.
func byID(t *testing.T, s *savedState) map[string]*savedAlloc {
	t.Helper()
	out := map[string]*savedAlloc{}
	for _, sa := range s.Allocs {
		out[sa.Alloc.ID] = sa
	}
	return out
}

// The state DB keeps one record per allocation: a write puts and deletes
// only the records it names, and what is written survives a reopen.
func TestStateDBPutDeleteReopen(t *testing.T) {
	dir := t.TempDir()
	db, err := openStateDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.putNodeID("0b5a7e1c-0000-4000-8000-000000000001"); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		puts []*savedAlloc
		gone []string
		want map[string]uint64 // alloc → its task's Restarts
	}{
		{"first three", []*savedAlloc{testSavedAlloc("a1", 0), testSavedAlloc("a2", 0), testSavedAlloc("a3", 0)}, nil,
			map[string]uint64{"a1": 0, "a2": 0, "a3": 0}},
		{"one updated, the others untouched", []*savedAlloc{testSavedAlloc("a2", 5)}, nil,
			map[string]uint64{"a1": 0, "a2": 5, "a3": 0}},
		{"one deleted, one added, in one write", []*savedAlloc{testSavedAlloc("a4", 1)}, []string{"a1"},
			map[string]uint64{"a2": 5, "a3": 0, "a4": 1}},
		{"deleting what is not there", nil, []string{"a1", "nope"},
			map[string]uint64{"a2": 5, "a3": 0, "a4": 1}},
	}
	check := func(t *testing.T, db *stateDB, want map[string]uint64) {
		t.Helper()
		s, err := db.load()
		if err != nil {
			t.Fatal(err)
		}
		if s.NodeID != "0b5a7e1c-0000-4000-8000-000000000001" {
			t.Errorf("node ID %q", s.NodeID)
		}
		got := byID(t, s)
		if len(got) != len(want) {
			t.Fatalf("%d records, want %d", len(got), len(want))
		}
		for id, restarts := range want {
			sa := got[id]
			if sa == nil {
				t.Fatalf("no record of %s", id)
			}
			tk := sa.Tasks[0]
			if tk.State.Restarts != restarts || tk.Pid != 4242 || tk.StartTick != 99 || !tk.WindowStart.Equal(time.Unix(1700000000, 0)) ||
				sa.Group.Tasks[0].Driver != MockDriver {
				t.Errorf("%s: %+v (task %+v), want %d restarts", id, sa, tk, restarts)
			}
		}
		ids, err := db.allocIDs()
		if err != nil {
			t.Fatal(err)
		}
		var wantIDs []string
		for id := range want {
			wantIDs = append(wantIDs, id)
		}
		slices.Sort(wantIDs)
		if !slices.Equal(ids, wantIDs) {
			t.Errorf("allocIDs %v, want %v", ids, wantIDs)
		}
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := db.write(st.puts, st.gone); err != nil {
				t.Fatal(err)
			}
			check(t, db, st.want)
		})
	}
	if err := db.close(); err != nil {
		t.Fatal(err)
	}
	if m := fileMode(t, stateDBPath(dir)); m != 0o600 {
		t.Errorf("state DB mode %#o, want 0600", m)
	}
	db, err = openStateDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.close()
	check(t, db, steps[len(steps)-1].want)
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// An old-format state.json is read once into the DB and removed; it
// replaces what the DB held (it is what the last run saw).
func TestStateDBMigratesLegacyFile(t *testing.T) {
	dir := t.TempDir()
	legacyPath := filepath.Join(dir, "client", legacyStateFile)
	writeLegacy := func(t *testing.T, s *savedState) {
		t.Helper()
		buf, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(legacyPath), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(legacyPath, buf, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const nodeID = "0b5a7e1c-0000-4000-8000-000000000002"
	writeLegacy(t, &savedState{NodeID: nodeID, Allocs: []*savedAlloc{testSavedAlloc("old1", 2), testSavedAlloc("old2", 0)}})

	s, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.NodeID != nodeID || len(s.Allocs) != 2 || byID(t, s)["old1"].Tasks[0].State.Restarts != 2 {
		t.Fatalf("migrated state: %+v", s)
	}
	if _, err := os.Stat(legacyPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the old state file is still there: %v", err)
	}
	// Read again from the DB alone.
	if s, err = loadState(dir); err != nil || s.NodeID != nodeID || len(byID(t, s)) != 2 {
		t.Fatalf("after migration: %+v, %v", s, err)
	}

	// An old file found again (an older agent ran meanwhile) replaces the DB's allocations.
	writeLegacy(t, &savedState{NodeID: nodeID, Allocs: []*savedAlloc{testSavedAlloc("old3", 0)}})
	if s, err = loadState(dir); err != nil {
		t.Fatal(err)
	}
	if got := byID(t, s); len(got) != 1 || got["old3"] == nil {
		t.Fatalf("after a second migration: %v", got)
	}

	// A corrupt old file is refused, naming it, and left in place.
	if err := os.WriteFile(legacyPath, []byte(`{"NodeID":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadState(dir); err == nil || !strings.Contains(err.Error(), "client state "+legacyPath+" is corrupt") {
		t.Fatalf("corrupt old file: %v", err)
	}
	if _, err := os.Stat(legacyPath); err != nil {
		t.Fatalf("the corrupt old file was removed: %v", err)
	}
}

// A DB others may write, a corrupt record and another layout version are
// refused with what is wrong.
func TestStateDBRefusals(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		want    string
	}{
		{"writable by others", func(t *testing.T, dir string) {
			if err := os.Chmod(stateDBPath(dir), 0o666); err != nil {
				t.Fatal(err)
			}
		}, "is writable by its group or others (mode 0666)"},
		{"corrupt record", func(t *testing.T, dir string) {
			rawUpdate(t, dir, func(tx *bolt.Tx) error { return tx.Bucket(allocsBucket).Put([]byte("bad"), []byte("{")) })
		}, "the record of allocation bad is corrupt"},
		{"another layout", func(t *testing.T, dir string) {
			rawUpdate(t, dir, func(tx *bolt.Tx) error { return tx.Bucket(metaBucket).Put(versionKey, []byte("9")) })
		}, `has layout version "9"; this agent reads version 1`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := loadState(dir); err != nil {
				t.Fatal(err)
			}
			tc.prepare(t, dir)
			if _, err := loadState(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func rawUpdate(t *testing.T, dir string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(stateDBPath(dir), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
}
