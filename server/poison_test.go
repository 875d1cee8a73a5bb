package server_test

// Issue 31: a log that holds an entry no server can decode, as a build
// before the edge limits wrote it, no longer stops the servers; nor does
// one whose value applied but nested too deep for the snapshot decoder.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// nestedMeta is {"a": {"a": ... 1}}, levels maps deep.
func nestedMeta(levels int) map[string]any {
	m := map[string]any{"a": 1}
	for i := 1; i < levels; i++ {
		m = map[string]any{"a": m}
	}
	return m
}

// stateFingerprint is the row count and index of the tables a job write
// or a scale changes (the scheduler, running beside, writes the others).
func stateFingerprint(s *state.Store) string {
	counts := s.Counts()
	var b strings.Builder
	for _, name := range []string{"jobs", "job_versions", "job_scaling_events"} {
		fmt.Fprintf(&b, "%s:%d@%d ", name, counts[name], s.TableIndex(name))
	}
	return b.String()
}

// scaleEntry is the log entry of a scaling event on web's group, as the
// scale endpoint writes it, with Meta as given.
func scaleEntry(t *testing.T, meta map[string]any) []byte {
	t.Helper()
	buf, err := fsm.JobScale.Encode(&fsm.JobScaleRequest{Namespace: "default", JobID: "web", Group: "web",
		Event: &state.ScalingEvent{Time: 1, Error: true, Message: "raw", Meta: meta}})
	if err != nil {
		t.Fatal(err)
	}
	return buf
}

// scalingMessages are the messages of web's scaling events, newest first.
func scalingMessages(t *testing.T, ts *servertest.TestServer) []string {
	t.Helper()
	var st struct {
		TaskGroups map[string]struct{ Events []struct{ Message string } }
	}
	if err := json.Unmarshal([]byte(must(t, ts, "GET", "/v1/job/web/scale", "").Body), &st); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range st.TaskGroups["web"].Events {
		out = append(out, e.Message)
	}
	return out
}

// TestPoisonEntriesInTheLog writes, through Raft, the entries a build
// before the edge limits could commit: the finding's scaling Meta nested
// 1,100 levels (which stopped every server, at every start), garbage and an
// unknown type, and a Meta nested 1,021 levels, which applied but made
// snapshots that did not decode. Each undecodable entry is an error result
// and changes nothing; the server takes a snapshot, restarts from its
// snapshot and its log (with a poison entry after the snapshot) to the same
// state, serves, and restores the saved archive.
func TestPoisonEntriesInTheLog(t *testing.T) {
	dir, bind := t.TempDir(), servertest.FreeAddr(t)
	opts := []servertest.Option{servertest.Persistent(dir), servertest.BindAddr(bind)}
	ts := servertest.Start(t, opts...)
	job := `{"Job":{"ID":"web","TaskGroups":[{"Name":"web","Count":1,"Tasks":[{"Name":"app","Driver":"mock_driver","Config":{"run_for":"1h"}}]}]}}`
	write(t, ts, "PUT", "/v1/jobs", job)

	poison := []struct {
		name  string
		entry []byte
		want  string
	}{
		{"Meta 1,100 levels", scaleEntry(t, nestedMeta(1100)), "failed to decode job scale at index %d: msgpack decode error [pos 3130]: maximum decoding depth exceeded"},
		{"garbage", []byte{byte(fsm.JobScaleType), 0xc1}, "failed to decode job scale at index %d: msgpack decode error [pos 1]: "},
		{"unknown type", []byte{99, 0x80}, "failed to apply request: unknown message type 99 at index %d"},
	}
	applyPoison := func(ts *servertest.TestServer) {
		t.Helper()
		for _, p := range poison {
			before := stateFingerprint(ts.State())
			resp, err := ts.Server.ApplyEntry(p.entry)
			if err == nil {
				t.Fatalf("%s: applied, answered %T %v", p.name, resp, resp)
			}
			want := "^" + strings.Replace(regexp.QuoteMeta(p.want), "%d", `\d+`, 1)
			if !regexp.MustCompile(want).MatchString(err.Error()) {
				t.Fatalf("%s: %q, want %q", p.name, err, p.want)
			}
			if after := stateFingerprint(ts.State()); after != before {
				t.Fatalf("%s changed the state: %s -> %s", p.name, before, after)
			}
		}
	}
	applyPoison(ts)
	// What the old edge let through at 1,021 levels applies as it did.
	if _, err := ts.Server.ApplyEntry(scaleEntry(t, nestedMeta(1021))); err != nil {
		t.Fatalf("Meta at 1,021 levels: %v", err)
	}
	write(t, ts, "POST", "/v1/job/web/scale", `{"Target":{"Group":"web"},"Error":true,"Message":"after","Meta":{"k":"v"}}`)
	want := []string{"after", "raw"}
	if got := scalingMessages(t, ts); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scaling events %q, want %q", got, want)
	}
	// A snapshot of the 1,021-level Meta, then poison after it in the log.
	archive := must(t, ts, "GET", "/v1/snapshot", "").Body
	applyPoison(ts)
	before := stateFingerprint(ts.State())
	if err := ts.Shutdown(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	ts = servertest.Start(t, opts...)
	if after := stateFingerprint(ts.State()); after != before {
		t.Fatalf("after a restart: %s, want %s", after, before)
	}
	if got := scalingMessages(t, ts); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scaling events after a restart %q, want %q", got, want)
	}
	write(t, ts, "POST", "/v1/job/web/scale", `{"Target":{"Group":"web"},"Error":true,"Message":"restarted"}`)
	if got := scalingMessages(t, ts); len(got) != 3 || got[0] != "restarted" {
		t.Fatalf("scaling events after a write %q", got)
	}
	if r := call(t, ts, "PUT", "/v1/snapshot", archive); r.Status != 200 || r.Body != "true" {
		t.Fatalf("restoring the archive with the 1,021-level Meta: %s", r)
	}
	if got := scalingMessages(t, ts); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scaling events after the restore %q, want %q", got, want)
	}
}
