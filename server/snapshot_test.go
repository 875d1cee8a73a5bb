package server_test

// Snapshot save and restore through the HTTP API on multi-node clusters:
// restoring onto another cluster, refusing bad archives without touching
// the state, restoring while writes are in flight, and waking blocked queries.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/snapshot"
)

// save takes a snapshot through ts and checks that it is a valid archive.
func save(t testing.TB, ts *servertest.TestServer, query string) ([]byte, *snapshot.Meta) {
	t.Helper()
	r := must(t, ts, http.MethodGet, "/v1/snapshot"+query, "")
	if ct := r.Header.Get("Content-Type"); ct != "application/x-gzip" {
		t.Errorf("snapshot Content-Type %q, want application/x-gzip", ct)
	}
	a, err := snapshot.Read(strings.NewReader(r.Body))
	if err != nil {
		t.Fatalf("saved snapshot does not read back: %v", err)
	}
	defer a.Close()
	m := a.Meta
	return []byte(r.Body), &m
}

// restore puts an archive through ts.
func restore(t testing.TB, ts *servertest.TestServer, archive []byte) *servertest.Response {
	t.Helper()
	return call(t, ts, http.MethodPut, "/v1/snapshot", string(archive))
}

// restoreRetry restores, retrying while an election answers 503.
func restoreRetry(t testing.TB, ts *servertest.TestServer, archive []byte) *servertest.Response {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r := restore(t, ts, archive)
		// No leader yet, or it lost leadership mid-restore on a loaded
		// machine: restoring the same archive again is idempotent.
		transient := (r.Status == http.StatusServiceUnavailable && r.Body == noLeader) ||
			(r.Status == http.StatusInternalServerError && strings.Contains(r.Body, "leadership lost"))
		if transient && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		return r
	}
}

// tarFile is one file of a hand-made archive.
type tarFile struct {
	name string
	body []byte
}

// untar splits a valid archive into its files.
func untar(t testing.TB, archive []byte) []tarFile {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []tarFile
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarFile{hdr.Name, body})
	}
}

// mkArchive writes files as a gzip tar.
func mkArchive(t testing.TB, files []tarFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o600, Size: int64(len(f.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// rebuild re-packs an archive's files after edit changes them, with
// SHA256SUMS recomputed (so the archive passes the checksum test).
func rebuild(t testing.TB, archive []byte, edit func(files map[string][]byte)) []byte {
	t.Helper()
	files := map[string][]byte{}
	for _, f := range untar(t, archive) {
		files[f.name] = f.body
	}
	edit(files)
	files["SHA256SUMS"] = []byte(fmt.Sprintf("%s  meta.json\n%s  state.bin\n", sha(files["meta.json"]), sha(files["state.bin"])))
	return mkArchive(t, []tarFile{{"meta.json", files["meta.json"]}, {"state.bin", files["state.bin"]}, {"SHA256SUMS", files["SHA256SUMS"]}})
}

// badArchives are archives a restore must refuse, with a part of the reason
// the refusal must give.
func badArchives(t testing.TB, good []byte) []struct {
	name, why string
	archive   []byte
} {
	t.Helper()
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 0xff
	files := untar(t, good)
	var meta, state []byte
	for _, f := range files {
		switch f.name {
		case "meta.json":
			meta = f.body
		case "state.bin":
			state = f.body
		}
	}
	wrongSums := mkArchive(t, []tarFile{
		{"meta.json", meta}, {"state.bin", state},
		{"SHA256SUMS", []byte(fmt.Sprintf("%s  meta.json\n%s  state.bin\n", sha(meta), sha([]byte("something else"))))},
	})
	flippedState := append([]byte(nil), state...)
	flippedState[len(flippedState)/2] ^= 0x01
	stateEdited := mkArchive(t, []tarFile{
		{"meta.json", meta}, {"state.bin", flippedState},
		{"SHA256SUMS", []byte(fmt.Sprintf("%s  meta.json\n%s  state.bin\n", sha(meta), sha(state)))},
	})
	return []struct {
		name, why string
		archive   []byte
	}{
		{"corrupt (a byte flipped in the middle)", "(truncated or corrupt?)", flipped},
		{"truncated", "(truncated or corrupt?)", good[:len(good)*2/3]},
		{"cut just before the end", "(truncated or corrupt?)", good[:len(good)-4]},
		{"empty", "not a gzip stream", nil},
		{"not gzip", "not a gzip stream", []byte("hello, this is not a snapshot\n")},
		{"foreign gzip tar", `unexpected file "hello.txt"`, mkArchive(t, []tarFile{{"hello.txt", []byte("hi")}, {"data.json", []byte("{}")}})},
		{"gzip of plain text", "(truncated or corrupt?)", func() []byte {
			var b bytes.Buffer
			gz := gzip.NewWriter(&b)
			gz.Write([]byte("just text, not a tar archive at all, but long enough to look like one maybe"))
			gz.Close()
			return b.Bytes()
		}()},
		{"wrong SHA256SUMS", "checksum mismatch for state.bin", wrongSums},
		{"state edited, sums not", "checksum mismatch for state.bin", stateEdited},
		{"state.bin missing", "state.bin is missing", mkArchive(t, []tarFile{{"meta.json", meta}, {"SHA256SUMS", []byte(sha(meta) + "  meta.json\n")}})},
		{"SHA256SUMS missing", "SHA256SUMS is missing", mkArchive(t, []tarFile{{"meta.json", meta}, {"state.bin", state}})},
		{"state that does not decode, sums right", "the state does not decode", rebuild(t, good, func(f map[string][]byte) {
			f["state.bin"] = []byte("\xc1\xc1\xc1 garbage, not msgpack")
			var m map[string]any
			json.Unmarshal(f["meta.json"], &m)
			m["Size"] = len(f["state.bin"])
			f["meta.json"], _ = json.Marshal(m)
		})},
		{"another product's archive", "not a ctlplane snapshot", rebuild(t, good, func(f map[string][]byte) {
			f["meta.json"] = bytes.Replace(f["meta.json"], []byte(`"ctlplane"`), []byte(`"consul"`), 1)
		})},
		{"size in meta wrong", "metadata says", rebuild(t, good, func(f map[string][]byte) {
			var m map[string]any
			json.Unmarshal(f["meta.json"], &m)
			m["Size"] = 12345678
			f["meta.json"], _ = json.Marshal(m)
		})},
	}
}

func TestSnapshotRestoreOntoAnotherCluster(t *testing.T) {
	a := startCluster(t, 3)
	aLeader := servertest.Leader(t, a)
	aFollower := followers(a, aLeader)[0]
	seedRules(t, aFollower, "a", 25)
	want := listQ(t, aLeader, "")
	wantRules := rulesOf(t, want.Body)

	// Through a follower (forwarded), on the leader, and ?stale on a
	// follower (its own state): all are valid archives of the same state.
	archive, meta := save(t, aFollower, "")
	if meta.Index < want.Index {
		t.Errorf("snapshot index %d is below the state's index %d", meta.Index, want.Index)
	}
	save(t, aLeader, "")
	waitConverged(t, a, want)
	save(t, followers(a, aLeader)[1], "?stale")

	b := startCluster(t, 3)
	waitNamed(t, b)
	bLeader := servertest.Leader(t, b)
	seedRules(t, bLeader, "b", 5) // to be replaced
	before := listQ(t, bLeader, "")

	r := restoreRetry(t, followers(b, bLeader)[0], archive)
	if r.Status != 200 || r.Body != "true" {
		t.Fatalf("restore through a follower: %s, want 200 true", r)
	}
	// Every node of the new cluster has exactly the saved state: the same
	// rules, fields and indexes, and the same list index.
	waitConverged(t, b, want)
	for _, n := range b {
		if got := listQ(t, n, ""); got.Body != want.Body || got.Index != want.Index {
			t.Errorf("default read through %s after restore: %v, want %v", n.Config.NodeName, got, want)
		}
		for id, wr := range wantRules {
			got := decodeRule(t, must(t, n, http.MethodGet, rulePath+"/"+id+"?stale&ns="+wr.Namespace, "").Body)
			if got != wr {
				t.Errorf("rule %s on %s after restore: %+v, want %+v", id, n.Config.NodeName, got, wr)
			}
		}
	}
	for id, old := range rulesOf(t, before.Body) {
		if r := call(t, bLeader, http.MethodGet, rulePath+"/"+id+"?ns="+old.Namespace, ""); r.Status != http.StatusNotFound {
			t.Errorf("rule %s of the replaced state: %s, want 404", id, r)
		}
	}

	// The new cluster keeps its own membership and goes on taking writes,
	// through every node, at indexes above the restored ones.
	waitNamed(t, b)
	servertest.WaitForCluster(t, b)
	checkOneCluster(t, b)
	for _, n := range b {
		nr := create(t, n, "after-restore-"+n.Config.NodeName)
		if nr.CreateIndex <= want.Index {
			t.Errorf("write after restore got index %d, not above the restored %d", nr.CreateIndex, want.Index)
		}
	}
	waitFor(t, 10*time.Second, "the other cluster's server records to be dropped", func() string {
		names := bLeader.ServerNames()
		for _, n := range a {
			if _, ok := names[n.NodeID()]; ok {
				return "still has " + n.Config.NodeName
			}
		}
		if len(names) != 3 {
			return fmt.Sprintf("records %v", names)
		}
		return ""
	})
	waitConverged(t, b, listQ(t, bLeader, ""))
}

func TestSnapshotRestoreRejectsBadArchives(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := servertest.Leader(t, nodes)
	seedRules(t, leader, "keep", 10)
	good, _ := save(t, leader, "")
	create(t, leader, "after-save") // so a wrong restore would show
	want := listQ(t, leader, "")
	waitConverged(t, nodes, want)

	for i, bad := range badArchives(t, good) {
		n := nodes[i%len(nodes)] // the leader and, forwarded, the followers
		r := restore(t, n, bad.archive)
		if r.Status != http.StatusBadRequest || r.Header.Get("Content-Type") != textType ||
			!strings.HasPrefix(r.Body, "invalid snapshot archive: ") || !strings.Contains(r.Body, bad.why) {
			t.Errorf("restore of %s through %s: %s (%s), want 400 invalid snapshot archive: ...%s...",
				bad.name, n.Config.NodeName, r, r.Header.Get("Content-Type"), bad.why)
		} else {
			t.Logf("%s: %s", bad.name, r.Body)
		}
	}
	// Nothing changed, on any node.
	waitConverged(t, nodes, want)
	if got := listQ(t, leader, ""); got != want {
		t.Errorf("state after refused restores: %v, want %v", got, want)
	}
	if r := call(t, leader, http.MethodPost, "/v1/snapshot", ""); r.Status != http.StatusMethodNotAllowed {
		t.Errorf("POST /v1/snapshot: %s, want 405", r)
	}
	// The good archive still restores.
	if r := restoreRetry(t, nodes[1], good); r.Status != 200 {
		t.Fatalf("restore of the good archive: %s", r)
	}
	if got := listQ(t, leader, ""); got.Index >= want.Index || strings.Contains(got.Body, "after-save") {
		t.Errorf("after restoring the earlier snapshot: %v", got)
	}
}

func TestSnapshotRestoreWakesBlockedQueries(t *testing.T) {
	nodes := startCluster(t, 3)
	leader := servertest.Leader(t, nodes)
	fs := followers(nodes, leader)
	seedRules(t, leader, "old", 6)
	archive, _ := save(t, leader, "")
	saved := listQ(t, leader, "")
	seedRules(t, leader, "new", 4)
	cur := listQ(t, leader, "")
	waitConverged(t, nodes, cur)

	// The restored index is below the one the queries wait past: only the
	// restore itself can wake them.
	type result struct {
		name string
		r    *servertest.Response
		err  error
	}
	results := make(chan result, 3)
	queries := []struct {
		name  string
		node  *servertest.TestServer
		query string
	}{
		{"default through a follower", fs[0], ""},
		{"stale on a follower", fs[1], "&stale"},
		{"default on the leader", leader, ""},
	}
	for _, q := range queries {
		go func() {
			r, err := tryCall(client, q.node, http.MethodGet, fmt.Sprintf("%s?ns=*&index=%d&wait=60s%s", rulesPath, cur.Index, q.query), "")
			results <- result{q.name, r, err}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	select {
	case res := <-results:
		t.Fatalf("%s answered before the restore: %v %v", res.name, res.r, res.err)
	default:
	}
	start := time.Now()
	if r := restoreRetry(t, fs[1], archive); r.Status != 200 {
		t.Fatalf("restore: %s", r)
	}
	for range queries {
		select {
		case res := <-results:
			if res.err != nil || res.r.Status != 200 {
				t.Errorf("%s: %v %v", res.name, res.r, res.err)
				continue
			}
			got := toListing(t, res.r)
			if got.Body != saved.Body || got.Index != saved.Index {
				t.Errorf("%s woke with %v, want the restored %v", res.name, got, saved)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("a blocked query did not wake within 20s of the restore (wait was 60s)")
		}
	}
	t.Logf("blocked queries woke %v after the restore started", time.Since(start))
}

// A restore while writes are in flight through every node leaves every node
// with the same state: the snapshot's, plus writes made after it.
func TestSnapshotRestoreDuringWrites(t *testing.T) {
	src := startCluster(t, 3)
	srcLeader := servertest.Leader(t, src)
	seedRules(t, srcLeader, "snap", 15)
	archive, _ := save(t, srcLeader, "")
	snapList := listQ(t, srcLeader, "")
	snapRules := rulesOf(t, snapList.Body)

	nodes := startCluster(t, 3)
	waitNamed(t, nodes)

	type write struct {
		name          string
		start, end    time.Time
		status        int
		body          string
		err           error
		rule          rule
		throughLeader bool
	}
	var (
		mu     sync.Mutex
		writes []*write
	)
	var restoreStart, restoreEnd time.Time
	restored := make(chan struct{})
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			after := 0 // acknowledged writes started after the restore was acknowledged
			for k := 0; after < 15 && k < 2000; k++ {
				isAfter := false
				select {
				case <-restored:
					isAfter = true
				default:
				}
				w := &write{name: fmt.Sprintf("w%d-%d", i, k), start: time.Now()}
				r, err := tryCall(client, n, http.MethodPut, rulePath, ruleBody("", "m", "", "service", w.name, ""))
				w.end, w.err = time.Now(), err
				if err == nil {
					w.status, w.body = r.Status, r.Body
					if r.Status == 200 {
						json.Unmarshal([]byte(r.Body), &w.rule)
						if isAfter {
							after++
						}
					}
				}
				mu.Lock()
				writes = append(writes, w)
				mu.Unlock()
			}
		}()
	}
	// Let writes run, restore in the middle of them, let more run.
	waitFor(t, 30*time.Second, "writes before the restore", func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(writes) < 30 {
			return fmt.Sprintf("%d writes", len(writes))
		}
		return ""
	})
	restoreStart = time.Now()
	r := restoreRetry(t, nodes[2], archive)
	restoreEnd = time.Now()
	close(restored)
	if r.Status != 200 {
		t.Fatalf("restore: %s", r)
	}
	wg.Wait()

	leader := servertest.Leader(t, nodes)
	final := listQ(t, leader, "")
	waitConverged(t, nodes, final)
	rules := rulesOf(t, final.Body)
	byName := map[string]rule{}
	for _, r := range rules {
		byName[r.BindName] = r
	}
	// Everything the snapshot held is there, unchanged.
	for id, want := range snapRules {
		if rules[id] != want {
			t.Errorf("snapshot rule %+v is %+v after the restore", want, rules[id])
		}
	}
	var before, during, after, failed int
	for _, w := range writes {
		got, present := byName[w.name]
		overlaps := !w.end.Before(restoreStart) && !w.start.After(restoreEnd)
		switch {
		case overlaps && w.err == nil && w.status == http.StatusServiceUnavailable && strings.Contains(w.body, "a snapshot restore replaced the state while it was being committed"):
			// Raft drops a write that was not committed when the restore
			// went in; the client is told it failed.
			failed++
		case w.err == nil && w.status == http.StatusServiceUnavailable && w.body == noLeader:
			// An election (short timeouts, loaded machine): not acknowledged.
			failed++
		case w.err != nil || w.status != 200:
			failed++
			t.Errorf("write %s (%v..%v, restore 0..%v): %d %q %v", w.name, w.start.Sub(restoreStart), w.end.Sub(restoreStart),
				restoreEnd.Sub(restoreStart), w.status, w.body, w.err)
		case w.end.Before(restoreStart):
			// Acknowledged before the restore began: the restore replaced it.
			before++
			if present {
				t.Errorf("write %s acknowledged before the restore survived it: %+v", w.name, got)
			}
		case w.start.After(restoreEnd):
			// Made after the restore was acknowledged: it must be there.
			after++
			if !present || got != w.rule {
				t.Errorf("write %s made after the restore: acknowledged %+v, list has %+v", w.name, w.rule, got)
			}
			if w.rule.CreateIndex <= snapList.Index {
				t.Errorf("write %s after the restore has index %d, not above the restored %d", w.name, w.rule.CreateIndex, snapList.Index)
			}
		default:
			// Overlapping the restore: either outcome, but if present, as acknowledged.
			during++
			if present && got != w.rule {
				t.Errorf("write %s overlapping the restore: acknowledged %+v, list has %+v", w.name, w.rule, got)
			}
		}
	}
	// Nothing else is there.
	names := map[string]bool{}
	for _, w := range writes {
		names[w.name] = true
	}
	for id, r := range rules {
		if _, ok := snapRules[id]; !ok && !names[r.BindName] {
			t.Errorf("rule %+v is neither from the snapshot nor written", r)
		}
	}
	t.Logf("writes: %d before the restore, %d overlapping, %d after, %d failed", before, during, after, failed)
	if after != 45 {
		t.Errorf("%d writes after the restore, want 45", after)
	}
}
