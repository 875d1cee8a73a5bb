// Command failover measures how long a 3-node ctlplane cluster takes to
// accept writes again after its leader is killed, and checks that no
// acknowledged write is lost on the way.
//
// It builds ctlplane once, starts three persistent servers on free loopback
// ports (data in a temporary directory), writes a few rules, then per trial:
// starts -writers clients that create rules through all three servers
// without pause, finds the leader, SIGKILLs it while their writes are in
// flight, and times from the kill to the first
// binding-rule create that a surviving server answers with 200 (a new
// attempt every -interval, alternating between the survivors, each bounded
// by -request-timeout; attempts may overlap). Then it stops the writers
// and checks that every rule acknowledged so far (theirs too, including
// those the killed leader acknowledged just before it died) is listed, restarts the killed server on its data
// directory, and waits until that server lists as many rules as the leader.
//
//	go run ./scripts/failover                        # 10 trials, -raft-timeout=1s
//	go run ./scripts/failover -trials=3 -raft-timeout=300ms
//
// It exits 1 if an acknowledged rule is ever missing.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
)

const authMethod = "failover"

type config struct {
	trials         int
	raftTimeout    time.Duration
	interval       time.Duration
	requestTimeout time.Duration
	maxWait        time.Duration
	seed           int
	writers        int
	keep           bool
}

func main() {
	code, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "failover:", err)
	}
	os.Exit(code)
}

func run() (int, error) {
	var cfg config
	flag.IntVar(&cfg.trials, "trials", 10, "leader kills to measure")
	flag.DurationVar(&cfg.raftTimeout, "raft-timeout", time.Second, "passed to every server as -raft-timeout (the agent's default is 1s)")
	flag.DurationVar(&cfg.interval, "interval", 10*time.Millisecond, "time between write attempts after the kill")
	flag.DurationVar(&cfg.requestTimeout, "request-timeout", 500*time.Millisecond, "client timeout of each write attempt after the kill")
	flag.DurationVar(&cfg.maxWait, "max-wait", 60*time.Second, "give up on a trial when no write succeeds for this long after the kill")
	flag.IntVar(&cfg.seed, "seed-rules", 5, "rules written before the first trial")
	flag.IntVar(&cfg.writers, "writers", 4, "clients writing through every server, without pause, across each kill")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (data and server logs)")
	flag.Parse()
	if flag.NArg() > 0 {
		return 2, fmt.Errorf("unexpected arguments: %v", flag.Args())
	}
	if cfg.trials < 1 || cfg.interval <= 0 || cfg.requestTimeout <= 0 || cfg.raftTimeout <= 0 || cfg.writers < 1 || cfg.writers > 64 {
		return 2, errors.New("-trials, -interval, -request-timeout and -raft-timeout must be positive, -writers within 1..64")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir, err := os.MkdirTemp("", "ctlplane-failover-")
	if err != nil {
		return 1, err
	}
	fmt.Fprintln(os.Stderr, "failover: building ctlplane")
	bin, err := benchutil.Build(ctx, dir, os.Stderr)
	if err != nil {
		os.RemoveAll(dir)
		return 1, err
	}
	cl, err := startCluster(bin, dir, cfg)
	if cl != nil {
		defer cl.shutdown(cfg.keep)
	} else {
		defer os.RemoveAll(dir)
	}
	if err != nil {
		return 1, err
	}

	fmt.Printf("# ctlplane failover\n")
	fmt.Printf("# command:         %s %s\n", filepath.Base(os.Args[0]), strings.Join(os.Args[1:], " "))
	fmt.Printf("# go:              %s %s/%s  NumCPU=%d\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Printf("# cluster:         3 persistent servers on loopback, ACLs on (requests use a management token), data in %s\n", dir)
	fmt.Printf("# raft timeout:    %s (-raft-timeout of every server; leader lease %s)\n", cfg.raftTimeout, cfg.raftTimeout/2)
	fmt.Printf("# write attempts:  every %s, client timeout %s each, alternating between the survivors\n", cfg.interval, cfg.requestTimeout)
	fmt.Printf("# writes in flight: %d clients write through all three servers from before each kill until the failover is measured\n", cfg.writers)
	fmt.Printf("# started:         %s\n\n", time.Now().Format(time.RFC3339))

	b := &bench{cfg: cfg, cl: cl, acked: map[string]bool{}, failures: map[string]int{}}
	code, err := b.run(ctx)
	b.print()
	return code, err
}

type trial struct {
	n         int
	killed    string
	via       string // the survivor that answered the first 200
	newLeader string
	failover  time.Duration
	attempts  int
	failed    int
	listed    int // rules listed after the failover
	inflight  int // the writers' requests in flight at the kill
	written   int // the writers' acknowledged rules in the trial
	rejoin    time.Duration
	err       string
}

type bench struct {
	cfg      config
	cl       *cluster
	ackMu    sync.Mutex
	acked    map[string]bool // IDs of every rule a server answered 200 for
	failures map[string]int  // failed write attempts after kills, by reason
	trials   []*trial
	lost     bool
}

func (b *bench) run(ctx context.Context) (int, error) {
	fmt.Fprintln(os.Stderr, "failover: waiting for the cluster to form")
	if _, err := b.leader(ctx, 60*time.Second); err != nil {
		return 1, err
	}
	for i := range b.cfg.seed {
		n := b.cl.nodes[i%3]
		if err := b.writeUntilOK(ctx, n, 30*time.Second); err != nil {
			return 1, fmt.Errorf("seed write through %s: %w", n.Name, err)
		}
	}
	leader, err := b.leader(ctx, 30*time.Second)
	if err != nil {
		return 1, err
	}
	for _, n := range b.cl.nodes {
		if _, err := b.catchUp(ctx, n, leader, 60*time.Second); err != nil {
			return 1, err
		}
	}
	fmt.Fprintf(os.Stderr, "failover: cluster ready, leader %s, %d rules\n", leader.Name, len(b.acked))

	for i := 1; i <= b.cfg.trials; i++ {
		t := &trial{n: i}
		b.trials = append(b.trials, t)
		err := b.trial(ctx, t)
		if b.lost {
			return 1, fmt.Errorf("trial %d: ACKNOWLEDGED WRITES LOST (see above)", i)
		}
		if err != nil {
			t.err = err.Error()
			return 1, fmt.Errorf("trial %d: %w", i, err)
		}
		fmt.Fprintf(os.Stderr, "failover: trial %d: killed %s, first write after %s via %s, %s rejoined in %s\n",
			i, t.killed, benchutil.MS(t.failover), t.via, t.killed, benchutil.MS(t.rejoin))
	}
	// Final check: every server, from its own state, has every rule.
	leader, err = b.leader(ctx, 30*time.Second)
	if err != nil {
		return 1, err
	}
	for _, n := range b.cl.nodes {
		if _, err := b.verify(ctx, n, true, "final check"); err != nil {
			return 1, err
		}
	}
	if b.lost {
		return 1, errors.New("ACKNOWLEDGED WRITES LOST (see above)")
	}
	return 0, nil
}

func (b *bench) trial(ctx context.Context, t *trial) error {
	leader, err := b.leader(ctx, 30*time.Second)
	if err != nil {
		return err
	}
	var survivors []*node
	for _, n := range b.cl.nodes {
		if n != leader {
			survivors = append(survivors, n)
		}
	}
	t.killed = leader.Name

	type attempt struct {
		via  *node
		done time.Time
		id   string
		fail string
	}
	results := make(chan attempt, 64)
	inflight := 0
	launch := func() {
		via := survivors[t.attempts%len(survivors)]
		t.attempts++
		inflight++
		go func() {
			id, fail := b.create(ctx, via, b.cfg.requestTimeout, fmt.Sprintf("trial %d attempt %d", t.n, t.attempts))
			results <- attempt{via: via, done: time.Now(), id: id, fail: fail}
		}()
	}
	maxInflight := max(int(b.cfg.requestTimeout/b.cfg.interval)+2, 4)

	// The kill falls among writes in flight, some of them on the leader.
	w := b.startWriters(ctx, t.n)
	if err := w.waitInFlight(ctx, 10*time.Second); err != nil {
		w.finish()
		return err
	}
	killedAt := time.Now()
	t.inflight = int(w.inflight.Load())
	if err := leader.Kill(); err != nil {
		w.finish()
		return fmt.Errorf("killing %s: %w", leader.Name, err)
	}
	launch()
	tick := time.NewTicker(b.cfg.interval)
	defer tick.Stop()
	giveUp := time.NewTimer(b.cfg.maxWait)
	defer giveUp.Stop()
	var first *attempt
	for first == nil || inflight > 0 {
		select {
		case <-tick.C:
			if first == nil && inflight < maxInflight {
				launch()
			}
		case a := <-results:
			inflight--
			if a.fail != "" {
				t.failed++
				b.failures[a.fail]++
				continue
			}
			b.ack(a.id)
			if first == nil || a.done.Before(first.done) {
				first = &a
			}
		case <-giveUp.C:
			if first == nil {
				w.finish()
				return fmt.Errorf("no write succeeded within %s of killing %s", b.cfg.maxWait, leader.Name)
			}
		case <-ctx.Done():
			w.finish()
			return ctx.Err()
		}
	}
	t.written = w.finish()
	t.failover = first.done.Sub(killedAt)
	t.via = first.via.Name
	leader.Wait()
	for _, n := range survivors {
		if !n.Running() {
			return fmt.Errorf("%s exited unexpectedly (see its log)", n.Name)
		}
	}

	newLeader, err := b.leader(ctx, 30*time.Second)
	if err != nil {
		return err
	}
	t.newLeader = newLeader.Name
	// Every acknowledged rule must be there, read through the leader.
	if t.listed, err = b.verify(ctx, survivors[0], false, fmt.Sprintf("trial %d, after the failover", t.n)); err != nil {
		return err
	}

	// Bring the killed server back on its data and let it catch up.
	restarted := time.Now()
	if err := leader.Start(); err != nil {
		return fmt.Errorf("restarting %s: %w", leader.Name, err)
	}
	if _, err := b.catchUp(ctx, leader, newLeader, 60*time.Second); err != nil {
		return err
	}
	t.rejoin = time.Since(restarted)
	_, err = b.verify(ctx, leader, true, fmt.Sprintf("trial %d, %s after its restart", t.n, leader.Name))
	return err
}

// ack records a rule a server answered 200 for.
func (b *bench) ack(id string) {
	b.ackMu.Lock()
	b.acked[id] = true
	b.ackMu.Unlock()
}

// writers are clients creating rules through every server without pause.
type writers struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	inflight atomic.Int64
	acked    atomic.Int64
}

func (b *bench) startWriters(ctx context.Context, trial int) *writers {
	w := &writers{stop: make(chan struct{})}
	for i := range b.cfg.writers {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for k := 0; ; k++ {
				select {
				case <-w.stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				n := b.cl.nodes[(i+k)%len(b.cl.nodes)]
				if !n.Running() {
					continue
				}
				w.inflight.Add(1)
				id, fail := b.create(ctx, n, 2*time.Second, fmt.Sprintf("trial %d writer %d write %d", trial, i, k))
				w.inflight.Add(-1)
				if fail == "" {
					b.ack(id)
					w.acked.Add(1)
				} else {
					sleep(ctx, b.cfg.interval)
				}
			}
		}()
	}
	return w
}

// waitInFlight waits until the writers have had writes acknowledged and
// have one in flight.
func (w *writers) waitInFlight(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for w.acked.Load() < 10 || w.inflight.Load() == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the writers had %d writes acknowledged and %d in flight after %s", w.acked.Load(), w.inflight.Load(), timeout)
		}
		if err := sleep(ctx, time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// finish stops the writers, waits for their last requests and returns how
// many of their writes were acknowledged.
func (w *writers) finish() int {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	w.wg.Wait()
	return int(w.acked.Load())
}

// create sends one binding-rule create through n and returns the new rule's
// ID, or why it failed.
func (b *bench) create(ctx context.Context, n *node, timeout time.Duration, desc string) (string, string) {
	body := fmt.Appendf(nil, `{"AuthMethod":%q,"BindType":"service","BindName":"svc-${value.name}","Selector":"value.team == \"a\"","Description":%q}`,
		authMethod, desc)
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r := n.c.Do(rctx, http.MethodPut, "/v1/acl/binding-rule", body, nil)
	if r.Err != nil {
		switch {
		case errors.Is(r.Err, context.DeadlineExceeded):
			return "", "client timeout"
		case errors.Is(r.Err, syscall.ECONNREFUSED):
			return "", "connection refused"
		case errors.Is(r.Err, syscall.ECONNRESET):
			return "", "connection reset"
		}
		return "", benchutil.Truncate(r.Err.Error(), 100)
	}
	if r.Status != http.StatusOK {
		return "", fmt.Sprintf("HTTP %d: %s", r.Status, benchutil.Truncate(string(r.Body), 80))
	}
	var rule struct{ ID string }
	if err := json.Unmarshal(r.Body, &rule); err != nil || rule.ID == "" {
		return "", "200 without a rule ID: " + benchutil.Truncate(string(r.Body), 80)
	}
	return rule.ID, ""
}

// writeUntilOK creates one rule through n, retrying until it succeeds.
func (b *bench) writeUntilOK(ctx context.Context, n *node, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		id, fail := b.create(ctx, n, 5*time.Second, "seed")
		if fail == "" {
			b.ack(id)
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New(fail)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// leader asks the running servers who leads (each from its own view) until
// one names the Raft address of a running server, and returns that server.
func (b *bench) leader(ctx context.Context, timeout time.Duration) (*node, error) {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		for _, n := range b.cl.nodes {
			if !n.Running() {
				continue
			}
			r := n.c.Get(ctx, "/v1/status/leader?stale", 2*time.Second)
			if f := r.Failure(); f != "" {
				last = n.Name + ": " + f
				continue
			}
			var addr string
			if err := json.Unmarshal(r.Body, &addr); err != nil {
				last = fmt.Sprintf("%s: bad leader answer %q", n.Name, r.Body)
				continue
			}
			for _, l := range b.cl.nodes {
				if l.RaftAddr == addr && addr != "" {
					if l.Running() {
						return l, nil
					}
					last = fmt.Sprintf("%s names %s, which is down", n.Name, l.Name)
				}
			}
			if addr == "" {
				last = n.Name + ": no leader"
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no leader among the running servers after %s (last: %s)", timeout, last)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// list returns the IDs of the rules of authMethod as n sees them: from its
// own state when stale, else through the leader.
func (b *bench) list(ctx context.Context, n *node, stale bool) (int, map[string]bool, error) {
	path := "/v1/acl/binding-rules?authmethod=" + authMethod
	if stale {
		path += "&stale"
	}
	r := n.c.Get(ctx, path, 10*time.Second)
	if f := r.Failure(); f != "" {
		return 0, nil, fmt.Errorf("listing through %s: %s", n.Name, f)
	}
	var rules []struct{ ID string }
	if err := json.Unmarshal(r.Body, &rules); err != nil {
		return 0, nil, fmt.Errorf("listing through %s: %w", n.Name, err)
	}
	ids := make(map[string]bool, len(rules))
	for _, rule := range rules {
		ids[rule.ID] = true
	}
	return len(rules), ids, nil
}

// verify lists the rules through n and reports every acknowledged one that
// is missing, loudly. It returns how many rules are listed.
func (b *bench) verify(ctx context.Context, n *node, stale bool, when string) (int, error) {
	var count int
	var ids map[string]bool
	var err error
	for range 50 { // the list may meet a 503 while leadership settles
		if count, ids, err = b.list(ctx, n, stale); err == nil || ctx.Err() != nil {
			break
		}
		sleep(ctx, 100*time.Millisecond)
	}
	if err != nil {
		return 0, err
	}
	b.ackMu.Lock()
	acked := len(b.acked)
	var missing []string
	for id := range b.acked {
		if !ids[id] {
			missing = append(missing, id)
		}
	}
	b.ackMu.Unlock()
	if len(missing) > 0 || count < acked {
		b.lost = true
		slices.Sort(missing)
		msg := fmt.Sprintf("!!! DATA LOSS (%s): %s lists %d rules, %d were acknowledged, %d acknowledged rules missing: %s",
			when, n.Name, count, acked, len(missing), strings.Join(missing[:min(len(missing), 10)], " "))
		fmt.Println(msg)
		fmt.Fprintln(os.Stderr, "failover:", msg)
	}
	return count, nil
}

// catchUp waits until n, from its own state, lists as many rules as leader
// does from its own, and returns that count.
func (b *bench) catchUp(ctx context.Context, n, leader *node, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		if !n.Running() {
			return 0, fmt.Errorf("%s exited while catching up (see its log)", n.Name)
		}
		want, _, err1 := b.list(ctx, leader, true)
		got, _, err2 := b.list(ctx, n, true)
		if err := errors.Join(err1, err2); err != nil {
			last = err.Error()
		} else if got == want && want > 0 {
			return got, nil
		} else {
			last = fmt.Sprintf("%s lists %d rules, %s lists %d", n.Name, got, leader.Name, want)
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s did not catch up within %s: %s", n.Name, timeout, last)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func (b *bench) print() {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TRIAL\tKILLED\tIN FLIGHT AT KILL\tWRITERS' ACKS\tNEW LEADER\tFIRST 200 VIA\tKILL -> FIRST 200\tATTEMPTS\tFAILED\tRULES LISTED\tRESTART -> CAUGHT UP\t")
	var fo, rj []time.Duration
	for _, t := range b.trials {
		if t.err != "" || t.failover == 0 {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t-\t-\t-\t%d\t%d\t-\t-\t(failed: %s)\n", t.n, t.killed, t.inflight, t.written, t.attempts, t.failed, benchutil.Truncate(t.err, 100))
			continue
		}
		fo = append(fo, t.failover)
		rejoin := "-"
		if t.rejoin > 0 {
			rj = append(rj, t.rejoin)
			rejoin = benchutil.MS(t.rejoin)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t\n", t.n, t.killed, t.inflight, t.written, t.newLeader, t.via, benchutil.MS(t.failover), t.attempts, t.failed, t.listed, rejoin)
	}
	tw.Flush()
	fmt.Println()
	if s := benchutil.Summarize(fo); s != nil {
		fmt.Printf("kill -> first 200 (n=%d, raft timeout %s):  min %s  median %s  max %s  (mean %s)\n",
			s.N, b.cfg.raftTimeout, benchutil.MS(s.Min), benchutil.MS(s.P50), benchutil.MS(s.Max), benchutil.MS(s.Mean))
	}
	if s := benchutil.Summarize(rj); s != nil {
		fmt.Printf("restart -> caught up (n=%d):               min %s  median %s  max %s\n",
			s.N, benchutil.MS(s.Min), benchutil.MS(s.P50), benchutil.MS(s.Max))
	}
	fmt.Printf("acknowledged rules: %d", len(b.acked))
	if b.lost {
		fmt.Printf("  -- SOME WERE LOST\n")
	} else {
		fmt.Printf(", none missing at any check\n")
	}
	if len(b.failures) > 0 {
		fmt.Println("\nfailed write attempts after the kills (count  reason):")
		keys := make([]string, 0, len(b.failures))
		for k := range b.failures {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Printf("  %6d  %s\n", b.failures[k], k)
		}
	}
	fmt.Println("(median: nearest rank, the lower middle value for an even count)")
}
