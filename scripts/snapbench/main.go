// Command snapbench measures snapshot restore, save and inspect of a
// ctlplane server holding many binding rules.
//
// Per -rules count N it starts a fresh persistent single-node server (ACLs
// on, as by default, with a management token; data in a temporary
// directory) and builds a snapshot archive of N rules without HTTP: it
// restores the real FSM in this process from the server's own (tiny)
// snapshot, so that the built-in ACL objects and the token are there as the
// server made them, applies N binding-rule creates to it, persists its
// snapshot and wraps that in the archive format. The build time is the
// applies, the persist and the archive write. Then it times:
//
//   - restore: PUT /v1/snapshot with the archive, until the 200 is read;
//     then it checks that one auth method's list has the expected count;
//   - save: GET /v1/snapshot into a file, until the body is fully read;
//   - inspect: `ctlplane snapshot inspect` of the saved archive (its rule
//     count is checked too);
//   - restart: the server stopped and started again on its data, until it
//     answers the list as leader.
//
// With -baseline=REV the same archive is also restored, saved, inspected
// and restarted on ctlplane built from git revision REV, right after, so
// that a change is measured against the code before it in the same run.
//
// and reads the server's peak RSS (VmHWM from /proc) before stopping it.
//
//	go run ./scripts/snapbench                      # -rules=100000,1000000
//	go run ./scripts/snapbench -rules=20000
//	go run ./scripts/snapbench -rules=1000000 -baseline=main
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/fsm/raftfsm"
	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
	"github.com/ctlplane/ctlplane/server/snapshot"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// authMethods are the auth methods the rules are spread over, round-robin.
var authMethods = []string{"minikube", "k8s-prod", "k8s-staging", "okta", "github-actions",
	"gitlab-ci", "azure-ad", "aws-iam", "gcp-iam", "vault-jwt"}

var teams = []string{"a", "b", "c", "payments", "search", "platform", "data", "web"}

const rulesTable = "acl-binding-rules" // the table name `snapshot inspect` prints

type result struct {
	server     string // "this tree" or the -baseline revision
	rules      int
	stateSize  int64 // state.bin
	archive    int64
	apply      time.Duration
	persist    time.Duration // FSM snapshot persist + archive write
	restore    time.Duration
	list       time.Duration
	listMethod string
	listCount  int
	save       time.Duration
	saved      int64
	inspect    time.Duration
	inspectRSS int64 // peak RSS of the inspect process
	agentRSS   int64 // peak RSS of the server, -1 unknown
	restart    time.Duration
}

// built is the archive of one rule count, made once and restored into
// every server measured (all started with the same management token).
type built struct {
	token     string
	archive   string
	perMethod map[string]int
	stateSize int64
	size      int64
	apply     time.Duration
	persist   time.Duration
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "snapbench:", err)
		os.Exit(1)
	}
}

func run() error {
	var rulesFlag string
	var keep bool
	var timeout time.Duration
	var baseline, summary string
	flag.StringVar(&summary, "summary", "", "append this tree's restore, save and restart seconds and peak RSS per rule count to this file as metric lines, for scripts/benchsummary")
	flag.StringVar(&rulesFlag, "rules", "100000,1000000", "rule counts to measure, comma-separated")
	flag.DurationVar(&timeout, "timeout", 15*time.Minute, "bound of each restore, save, list and inspect")
	flag.BoolVar(&keep, "keep", false, "keep the temporary directory (archives, data and server logs)")
	flag.StringVar(&baseline, "baseline", "", "also measure ctlplane built from this git revision, right after this tree's, on the same archive")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", flag.Args())
	}
	var counts []int
	for _, s := range strings.Split(rulesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("bad -rules value %q", s)
		}
		counts = append(counts, n)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir, err := os.MkdirTemp("", "ctlplane-snapbench-")
	if err != nil {
		return err
	}
	defer func() {
		if keep {
			fmt.Fprintf(os.Stderr, "snapbench: kept %s\n", dir)
		} else {
			os.RemoveAll(dir)
		}
	}()
	fmt.Fprintln(os.Stderr, "snapbench: building ctlplane")
	bin, err := benchutil.Build(ctx, dir, os.Stderr)
	if err != nil {
		return err
	}

	type server struct{ name, bin string }
	servers := []server{{thisTree, bin}}
	if baseline != "" {
		fmt.Fprintf(os.Stderr, "snapbench: building ctlplane at %s\n", baseline)
		bb, err := benchutil.BuildRev(ctx, dir, baseline, os.Stderr)
		if err != nil {
			return err
		}
		servers = append(servers, server{baseline, bb})
	}

	fmt.Printf("# ctlplane snapbench\n")
	fmt.Printf("# command:  %s %s\n", filepath.Base(os.Args[0]), strings.Join(os.Args[1:], " "))
	fmt.Printf("# go:       %s %s/%s  NumCPU=%d\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Printf("# server:   a fresh persistent single node per rule count (raft-boltdb, file snapshots, ACLs on), data in %s\n", dir)
	fmt.Printf("# rules:    spread over %d auth methods, Selector value.team == \"...\", BindName svc-${value.name}\n", len(authMethods))
	fmt.Printf("# started:  %s\n\n", time.Now().Format(time.RFC3339))

	var results []*result
	var runErr error
	for _, n := range counts {
		ndir := filepath.Join(dir, fmt.Sprintf("rules-%d", n))
		b := &built{token: benchutil.NewToken()}
		for i, sv := range servers {
			r, err := measure(ctx, sv.bin, filepath.Join(ndir, fmt.Sprint(i)), n, timeout, keep, b)
			if r != nil {
				r.server = sv.name
				results = append(results, r)
			}
			if err != nil {
				runErr = fmt.Errorf("%d rules, %s: %w", n, sv.name, err)
				break
			}
		}
		if !keep {
			os.RemoveAll(ndir) // the archives are large
		}
		if runErr != nil {
			break
		}
	}
	printResults(results)
	if summary != "" {
		if err := writeSummary(summary, results); err != nil {
			return err
		}
	}
	return runErr
}

// measure builds the archive of n rules in dir, then restores, lists, saves
// and inspects it against a fresh server.
func measure(ctx context.Context, bin, dir string, n int, timeout time.Duration, keep bool, b *built) (*result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &result{rules: n, agentRSS: -1}
	token := b.token
	a, err := startAgent(ctx, bin, dir, token)
	if err != nil {
		return r, err
	}
	defer func() {
		if code := a.Stop(60 * time.Second); code != 0 {
			fmt.Fprintf(os.Stderr, "snapbench: server exited with status %d\n", code)
		}
		lines, count := a.LogIssues(10)
		for _, l := range lines {
			fmt.Fprintln(os.Stderr, "snapbench: server log:", l)
		}
		fmt.Fprintf(os.Stderr, "snapbench: server logged %d warning/error lines\n", count)
	}()
	hc := &http.Client{Timeout: timeout}

	// The server's own snapshot seeds the FSM: with ACLs on, the restored
	// state must hold the built-in ACL objects and the management token,
	// exactly as the server created them.
	if b.archive == "" {
		seed := filepath.Join(dir, "seed.snap")
		if _, _, err := save(ctx, hc, a.URL, token, seed); err != nil {
			return r, fmt.Errorf("saving the seed snapshot: %w", err)
		}
		archive := filepath.Join(filepath.Dir(dir), "built.snap")
		perMethod, err := build(ctx, r, dir, seed, archive)
		if err != nil {
			return r, fmt.Errorf("building the archive: %w", err)
		}
		// The FSM is garbage now; give its memory back before the server needs its own.
		runtime.GC()
		debug.FreeOSMemory()
		fmt.Fprintf(os.Stderr, "snapbench: %d rules: applied in %s, persisted and archived in %s: state %s, archive %s\n",
			n, r.apply.Round(time.Millisecond), r.persist.Round(time.Millisecond), benchutil.Bytes(r.stateSize), benchutil.Bytes(r.archive))
		b.archive, b.perMethod, b.stateSize, b.size, b.apply, b.persist = archive, perMethod, r.stateSize, r.archive, r.apply, r.persist
	} else {
		r.stateSize, r.archive, r.apply, r.persist = b.stateSize, b.size, b.apply, b.persist
	}
	archive, perMethod := b.archive, b.perMethod

	// Restore.
	fmt.Fprintf(os.Stderr, "snapbench: %d rules: restoring\n", n)
	f, err := os.Open(archive)
	if err != nil {
		return r, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, a.URL+"/v1/snapshot", f)
	if err != nil {
		f.Close()
		return r, err
	}
	req.ContentLength = r.archive
	req.Header.Set("X-Service-Token", token)
	t := time.Now()
	resp, err := hc.Do(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	r.restore = time.Since(t)
	f.Close()
	if err != nil {
		return r, fmt.Errorf("restore: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("restore: HTTP %d after %s: %s", resp.StatusCode, r.restore, benchutil.Truncate(string(body), 200))
	}

	// The restore really happened: one auth method lists its rules.
	r.listMethod = authMethods[0]
	c := benchutil.NewClient(a.URL, 1)
	c.Token = token
	defer c.Transport.CloseIdleConnections()
	t = time.Now()
	lr := c.Get(ctx, "/v1/acl/binding-rules?authmethod="+r.listMethod, timeout)
	r.list = time.Since(t)
	if f := lr.Failure(); f != "" {
		return r, fmt.Errorf("listing %s after the restore: %s", r.listMethod, f)
	}
	var listed []json.RawMessage
	if err := json.Unmarshal(lr.Body, &listed); err != nil {
		return r, fmt.Errorf("listing %s after the restore: %w", r.listMethod, err)
	}
	r.listCount = len(listed)
	if r.listCount != perMethod[r.listMethod] {
		return r, fmt.Errorf("after the restore, auth method %s lists %d rules, expected %d", r.listMethod, r.listCount, perMethod[r.listMethod])
	}

	// Save.
	fmt.Fprintf(os.Stderr, "snapbench: %d rules: saving\n", n)
	saved := filepath.Join(dir, "saved.snap")
	if r.save, r.saved, err = save(ctx, hc, a.URL, token, saved); err != nil {
		return r, fmt.Errorf("save: %w", err)
	}

	// Inspect.
	fmt.Fprintf(os.Stderr, "snapbench: %d rules: inspecting\n", n)
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ictx, bin, "snapshot", "inspect", saved)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	t = time.Now()
	err = cmd.Run()
	r.inspect = time.Since(t)
	if err != nil {
		return r, fmt.Errorf("snapshot inspect: %w: %s", err, benchutil.Truncate(out.String(), 300))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.inspectRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	if got := inspectedRules(out.String()); got != n {
		return r, fmt.Errorf("snapshot inspect of the saved archive counts %d binding rules, expected %d:\n%s", got, n, out.String())
	}

	if rss, err := a.PeakRSS(); err == nil {
		r.agentRSS = rss
	} else {
		fmt.Fprintln(os.Stderr, "snapbench: reading the server's peak RSS:", err)
	}

	// Restart: stop, start on the same data (its snapshot and the log
	// after it) until it answers the list as leader, and list once more.
	fmt.Fprintf(os.Stderr, "snapbench: %d rules: restarting\n", n)
	if code := a.Stop(60 * time.Second); code != 0 {
		return r, fmt.Errorf("server exited with status %d before the restart", code)
	}
	t = time.Now()
	if err := a.Start(); err != nil {
		return r, fmt.Errorf("restart: %w", err)
	}
	if err := c.WaitReady(ctx, timeout, a.Exited()); err != nil {
		return r, fmt.Errorf("restart: %w", err)
	}
	r.restart = time.Since(t)
	lr = c.Get(ctx, "/v1/acl/binding-rules?authmethod="+r.listMethod, timeout)
	listed = nil
	if err := json.Unmarshal(lr.Body, &listed); err != nil || len(listed) != perMethod[r.listMethod] {
		return r, fmt.Errorf("after the restart, auth method %s lists %d rules, expected %d (%v)", r.listMethod, len(listed), perMethod[r.listMethod], err)
	}
	if rss, err := a.PeakRSS(); err == nil && rss > r.agentRSS {
		r.agentRSS = rss
	}
	return r, nil
}

// build restores a new FSM from the seed archive, applies r.rules
// binding-rule creates to it, persists its snapshot to dir/state.bin and
// writes the archive. It returns the rules per auth method.
func build(ctx context.Context, r *result, dir, seed, archive string) (map[string]int, error) {
	sf, err := os.Open(seed)
	if err != nil {
		return nil, err
	}
	sa, err := snapshot.Read(sf)
	sf.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the seed: %w", err)
	}
	defer sa.Close()
	seedState, err := sa.State()
	if err != nil {
		return nil, err
	}
	f := raftfsm.New(hclog.NewNullLogger())
	if err := f.Restore(io.NopCloser(seedState)); err != nil {
		return nil, fmt.Errorf("restoring the seed: %w", err)
	}
	base := sa.Meta.Index

	perMethod := map[string]int{}
	const applyBatch = 256
	batch := make([]*raft.Log, 0, applyBatch)
	t := time.Now()
	for i := 1; i <= r.rules; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		method := authMethods[i%len(authMethods)]
		bindType := state.BindTypeService
		if i%10 == 0 {
			bindType = state.BindTypeRole
		}
		data, err := fsm.Encode(fsm.BindingRuleSetType, &fsm.BindingRuleSetRequest{
			Rule: state.BindingRule{
				ID:          uuid.NewString(),
				Description: fmt.Sprintf("bench rule %d for %s", i, method),
				AuthMethod:  method,
				Selector:    fmt.Sprintf("value.team == %q", teams[i%len(teams)]),
				BindType:    bindType,
				BindName:    "svc-${value.name}",
				Namespace:   "default",
			},
			Create: true,
		})
		if err != nil {
			return nil, err
		}
		// In batches, as Raft hands a server's FSM the entries it commits.
		batch = append(batch, &raft.Log{Index: base + uint64(i), Term: max(sa.Meta.Term, 1), Type: raft.LogCommand, Data: data})
		if len(batch) == applyBatch || i == r.rules {
			for j, res := range f.ApplyBatch(batch) {
				if err, ok := res.(error); ok {
					return nil, fmt.Errorf("applying rule %d: %w", i-len(batch)+1+j, err)
				}
			}
			batch = batch[:0]
		}
		perMethod[method]++
	}
	r.apply = time.Since(t)

	t = time.Now()
	statePath := filepath.Join(dir, "state.bin")
	snap, err := f.Snapshot()
	if err != nil {
		return nil, err
	}
	sink, err := newFileSink(statePath)
	if err != nil {
		return nil, err
	}
	err = snap.Persist(sink)
	snap.Release()
	if err != nil {
		return nil, fmt.Errorf("persisting the FSM snapshot: %w", err)
	}
	info, err := os.Stat(statePath)
	if err != nil {
		return nil, err
	}
	r.stateSize = info.Size()

	stateFile, err := os.Open(statePath)
	if err != nil {
		return nil, err
	}
	defer stateFile.Close()
	out, err := os.Create(archive)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	meta := &raft.SnapshotMeta{Version: 1, ID: "bench", Index: base + uint64(r.rules) + 10, Term: max(sa.Meta.Term, 1), Size: r.stateSize}
	err = snapshot.Write(bw, meta, bufio.NewReaderSize(stateFile, 1<<20))
	if err == nil {
		err = bw.Flush()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing the archive: %w", err)
	}
	r.persist = time.Since(t)
	os.Remove(statePath)
	if info, err = os.Stat(archive); err != nil {
		return nil, err
	}
	r.archive = info.Size()
	return perMethod, nil
}

func printResults(results []*result) {
	sec := func(d time.Duration) string {
		if d == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	size := func(n int64) string {
		if n <= 0 {
			return "-"
		}
		return benchutil.Bytes(n)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SERVER\tRULES\tSTATE\tARCHIVE\tBUILD\tRESTORE\tLIST ONE METHOD\tSAVE\tSAVED\tINSPECT\tRESTART\tSERVER PEAK RSS\tINSPECT PEAK RSS\t")
	for _, r := range results {
		list := "-"
		if r.listCount > 0 {
			list = fmt.Sprintf("%s (%d)", sec(r.list), r.listCount)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.server, r.rules, size(r.stateSize), size(r.archive),
			sec(r.apply+r.persist), sec(r.restore), list, sec(r.save), size(r.saved), sec(r.inspect), sec(r.restart), size(r.agentRSS), size(r.inspectRSS))
	}
	tw.Flush()
	fmt.Println()
	for _, r := range results {
		fmt.Printf("%d rules: build = FSM apply %s + snapshot persist and archive %s\n", r.rules, sec(r.apply), sec(r.persist))
	}
	fmt.Println(`STATE: the FSM snapshot stream (state.bin); ARCHIVE: the built .snap (gzip tar); SAVED: GET /v1/snapshot's archive.
RESTORE: PUT /v1/snapshot sent -> 200 read; SAVE: GET sent -> body fully read; INSPECT: the ctlplane snapshot inspect process.
RESTART: the server stopped and started on its data (the restored snapshot, then the log) until it answers a list as leader.
SERVER PEAK RSS: VmHWM of the server after restore, list, save, and of the restarted one (a fresh server per row).`)
}

// writeSummary appends "metric NAME VALUE UNIT" lines (tab-separated) of
// this tree's results: snapshot.{restore,save,restart}.N seconds and
// snapshot.rss.N bytes for N rules.
func writeSummary(file string, results []*result) error {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	for _, r := range results {
		if r.server != thisTree {
			continue
		}
		for _, m := range []struct {
			name string
			d    time.Duration
		}{{"restore", r.restore}, {"save", r.save}, {"restart", r.restart}} {
			fmt.Fprintf(f, "metric\tsnapshot.%s.%d\t%.3f\ts\n", m.name, r.rules, m.d.Seconds())
		}
		fmt.Fprintf(f, "metric\tsnapshot.rss.%d\t%d\tB\n", r.rules, r.agentRSS)
	}
	return f.Close()
}

// thisTree names the server built from the working tree in the results.
const thisTree = "this tree"
