package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
)

// requestTimeout bounds every non-blocking request.
const requestTimeout = 60 * time.Second

type bench struct {
	cfg config
	c   *benchutil.Client

	mu    sync.Mutex
	rows  []row
	notes map[string]int      // failure messages, "scenario: message" -> count
	ids   map[string][]string // system -> rules the create scenario made there
	etcd  *etcdRef            // nil: no etcd comparison
	// systems are the servers create measures, the target first.
	systems []system
	// consulDesc says what the -consul reference is, for the side-by-side
	// table ("": none).
	consulDesc string
}

// system is one server the create scenario measures.
type system struct {
	name string
	c    *benchutil.Client
	pid  int // the server's process, 0: unknown
}

func (b *bench) add(r row) { b.rows = append(b.rows, r) }

func (b *bench) note(scenario, msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.notes == nil {
		b.notes = map[string]int{}
	}
	b.notes[scenario+": "+benchutil.Truncate(msg, 200)]++
}

// repeatedBindName is the BindName of every rule of the repeated-template
// load and of the other scenarios.
const repeatedBindName = "svc-${value.name}"

func ruleBody(authMethod, description, bindName string) []byte {
	return fmt.Appendf(nil, `{"AuthMethod":%q,"BindType":"service","BindName":%q,"Selector":"value.team==a","Description":%q}`,
		authMethod, bindName, description)
}

// ruleSeq numbers the distinct BindNames (svc<N>-${value.name}).
var ruleSeq atomic.Int64

func distinctBindName() string { return fmt.Sprintf("svc%d-${value.name}", ruleSeq.Add(1)) }

func (b *bench) createRule(ctx context.Context, authMethod string) (string, benchutil.Response) {
	return b.createRuleOn(ctx, b.c, authMethod, repeatedBindName)
}

func (b *bench) createRuleOn(ctx context.Context, c *benchutil.Client, authMethod, bindName string) (string, benchutil.Response) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	r := c.Do(ctx, http.MethodPut, "/v1/acl/binding-rule", ruleBody(authMethod, "", bindName), nil)
	if r.Failure() != "" {
		return "", r
	}
	var rule struct{ ID string }
	if err := json.Unmarshal(r.Body, &rule); err != nil || rule.ID == "" {
		r.Err = fmt.Errorf("create answered 200 without a rule ID: %s", benchutil.Truncate(string(r.Body), 120))
	}
	return rule.ID, r
}

// load runs op from n goroutines until d has passed. It returns the
// latencies of the calls that succeeded, the number that failed, and the
// wall time from start until the last call returned.
func (b *bench) load(ctx context.Context, scenario string, n int, d time.Duration, op func(context.Context, int) benchutil.Response) ([]time.Duration, int, time.Duration) {
	start := time.Now()
	deadline := start.Add(d)
	lats := make([][]time.Duration, n)
	var errs atomic.Int64
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(deadline) {
				rctx, cancel := context.WithTimeout(ctx, requestTimeout)
				t := time.Now()
				r := op(rctx, w)
				lat := time.Since(t)
				cancel()
				if f := r.Failure(); f != "" {
					errs.Add(1)
					b.note(scenario, f)
					continue
				}
				lats[w] = append(lats[w], lat)
			}
		}()
	}
	wg.Wait()
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return all, int(errs.Load()), time.Since(start)
}

// fsync: write 4 KiB at a page offset of a preallocated file and fsync it,
// as bbolt writes pages into its file, in the directory the data lives in.
func (b *bench) fsync(ctx context.Context) error {
	f, err := os.CreateTemp(b.cfg.fsyncDir, "loadgen-fsync-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	const pages = 1024
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(rand.N(256))
	}
	for i := range pages {
		if _, err := f.WriteAt(buf, int64(i)*4096); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	lats := make([]time.Duration, 0, b.cfg.fsyncCount)
	for i := 0; i < b.cfg.fsyncCount && ctx.Err() == nil; i++ {
		t := time.Now()
		if _, err := f.WriteAt(buf, int64(i%pages)*4096); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		lats = append(lats, time.Since(t))
	}
	s := benchutil.Summarize(lats)
	if s == nil {
		return ctx.Err()
	}
	b.add(row{scenario: "fsync", what: "4 KiB write + fsync, serial (" + b.cfg.fsyncDir + ")", clients: 1,
		n: fmt.Sprint(len(lats)), rate: float64(time.Second) / float64(s.Mean), lat: s})
	b.add(row{scenario: "fsync", what: "ceiling, one fsync per write: 1/p50", rate: float64(time.Second) / float64(s.P50)})
	b.add(row{scenario: "fsync", what: "ceiling, one bbolt commit (2 fdatasync) per write: 1/(2*p50)", rate: float64(time.Second) / float64(2*s.P50)})
	return ctx.Err()
}

// create: PUT /v1/acl/binding-rule from n clients for -duration, per level,
// for each -templates load: "distinct" (the headline: every rule its own
// BindName, svc<N>-${value.name}) and "repeated" (every rule the same one),
// all against the jwt auth method "bench" with claim mappings, so that a
// create is checked against the method's identity fields. With an etcd
// reference, each level is followed at once by etcd puts from as many
// clients, and the whole is repeated -rounds times, so that all see the
// same machine load.
func (b *bench) create(ctx context.Context) error {
	for _, sys := range b.systems {
		if err := ensureBenchMethod(ctx, sys.c); err != nil {
			return fmt.Errorf("%s: %w", sys.name, err)
		}
	}
	for round := 1; round <= b.cfg.rounds; round++ {
		for _, n := range b.cfg.clients {
			for _, sys := range b.systems {
				for _, tmpl := range b.cfg.templates {
					name := createLabel(sys.name, tmpl, b.cfg.templates)
					cpu := startCPU(sys.pid)
					lats, errs, elapsed := b.load(ctx, "create", n, b.cfg.duration, func(ctx context.Context, _ int) benchutil.Response {
						bindName := repeatedBindName
						if tmpl == "distinct" {
							bindName = distinctBindName()
						}
						id, r := b.createRuleOn(ctx, sys.c, benchMethod, bindName)
						if id != "" {
							b.mu.Lock()
							b.ids[sys.name] = append(b.ids[sys.name], id)
							b.mu.Unlock()
						}
						return r
					})
					used := cpu.stop(elapsed)
					b.add(row{scenario: "create", what: name + ": PUT /v1/acl/binding-rule, " + tmpl + " BindName", clients: n, n: fmt.Sprint(len(lats)),
						rate: float64(len(lats)) / elapsed.Seconds(), lat: benchutil.Summarize(lats), errors: errs, round: round, system: name,
						cpuPerOp: used.perOp(len(lats))})
					b.add(used.row("create", fmt.Sprintf("%s: CPU at %d clients", name, n)))
					if ctx.Err() != nil {
						return ctx.Err()
					}
				}
			}
			if b.etcd == nil {
				continue
			}
			cpu := startCPU(b.etcd.pid)
			lats, errs, elapsed := b.load(ctx, "etcd", n, b.cfg.duration, b.etcd.put)
			used := cpu.stop(elapsed)
			b.add(used.row("etcd", fmt.Sprintf("etcd (leader): CPU at %d clients", n)))
			b.add(row{scenario: "etcd", what: fmt.Sprintf("etcd %s put 256 B (%d member, %s)", b.etcd.version, b.etcd.members, b.etcd.peers()), clients: n,
				n: fmt.Sprint(len(lats)), rate: float64(len(lats)) / elapsed.Seconds(), lat: benchutil.Summarize(lats), errors: errs, round: round,
				system: "etcd", cpuPerOp: used.perOp(len(lats))})
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	return nil
}

// createLabel names a server's create load in the tables: the server's
// name for the first -templates load (the headline), NAME/TEMPLATE for
// the others.
func createLabel(system, tmpl string, templates []string) string {
	if tmpl == templates[0] {
		return system
	}
	return system + "/" + tmpl
}

// benchMethod is the jwt auth method every create load names.
const benchMethod = "bench"

// ensureBenchMethod creates (or, on a server that has it, updates) the
// jwt auth method "bench": a static public key and claim mappings, so that
// a rule's Selector fields and BindName variables are checked against them.
func ensureBenchMethod(ctx context.Context, c *benchutil.Client) error {
	body, err := json.Marshal(map[string]any{
		"Name": benchMethod, "Type": "jwt",
		"Config": map[string]any{
			"JWTValidationPubKeys": []string{benchPubKey},
			"ClaimMappings":        map[string]string{"sub": "name", "team": "team"},
			"ListClaimMappings":    map[string]string{"groups": "groups"},
			"BoundAudiences":       []string{"ctlplane"},
		},
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	r := c.Do(ctx, http.MethodPut, "/v1/acl/auth-method", body, nil)
	if r.Failure() == "" {
		return nil
	}
	if u := c.Do(ctx, http.MethodPut, "/v1/acl/auth-method/"+benchMethod, body, nil); u.Failure() != "" {
		return fmt.Errorf("creating the auth method: %s; updating it: %s", r.Failure(), u.Failure())
	}
	return nil
}

// benchPubKey is a P-256 public key (PEM) the bench auth method trusts;
// nothing logs in with it.
const benchPubKey = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEETZi95sa/CS/sqMo5zOVSavI0LgN
WCztkgyjfVFMetq5J+gz6xZLZYjvpaiQg9Cf7zmviKAJwFmcTtwQyf7FbQ==
-----END PUBLIC KEY-----
`

// read: GET /v1/acl/binding-rule/<id> of random rules made by create (or
// 100 made here when create did not run), on every measured server in
// turn, -rounds times.
func (b *bench) read(ctx context.Context) error {
	ids := map[string][]string{}
	for _, sys := range b.systems {
		ids[sys.name] = b.idsOf(sys)
		for len(ids[sys.name]) < 100 {
			id, r := b.createRuleOn(ctx, sys.c, benchMethod, repeatedBindName)
			if f := r.Failure(); f != "" {
				return fmt.Errorf("creating rules to read on %s: %s", sys.name, f)
			}
			ids[sys.name] = append(ids[sys.name], id)
		}
	}
	n := b.cfg.readClients
	for round := 1; round <= b.cfg.rounds; round++ {
		for _, sys := range b.systems {
			list := ids[sys.name]
			cpu := startCPU(sys.pid)
			lats, errs, elapsed := b.load(ctx, "read", n, b.cfg.duration, func(ctx context.Context, _ int) benchutil.Response {
				return sys.c.Do(ctx, http.MethodGet, "/v1/acl/binding-rule/"+list[rand.N(len(list))], nil, nil)
			})
			b.add(row{scenario: "read", what: fmt.Sprintf("%s: GET /v1/acl/binding-rule/<id> (%d rules)", sys.name, len(list)), clients: n,
				n: fmt.Sprint(len(lats)), rate: float64(len(lats)) / elapsed.Seconds(), lat: benchutil.Summarize(lats), errors: errs,
				round: round, system: sys.name})
			b.add(cpu.stop(elapsed).row("read", sys.name+": CPU"))
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	return nil
}

// idsOf returns the rules the create scenario made on sys.
func (b *bench) idsOf(sys system) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.ids[sys.name]...)
}

// wake: park one blocked list query, create a rule it lists, and time the
// query's return from the create being sent and from its response.
func (b *bench) wake(ctx context.Context) error {
	const list = "/v1/acl/binding-rules?authmethod=bench-wake"
	var fromSend, fromResp, writes []time.Duration
	var errs int
	fail := func(msg string) { errs++; b.note("wake", msg) }
	for i := 0; i < b.cfg.wakeReps && ctx.Err() == nil; i++ {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		cur := b.c.Do(rctx, http.MethodGet, list, nil, nil)
		cancel()
		if f := cur.Failure(); f != "" {
			fail(f)
			continue
		}
		type result struct {
			at time.Time
			r  benchutil.Response
		}
		done := make(chan result, 1)
		written := make(chan struct{})
		var once sync.Once
		wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		go func() {
			r := b.c.Do(wctx, http.MethodGet, fmt.Sprintf("%s&index=%d&wait=60s", list, cur.Index), nil,
				func() { once.Do(func() { close(written) }) })
			done <- result{time.Now(), r}
		}()
		// Once the request is written, give the server a moment to park it.
		select {
		case <-written:
			time.Sleep(50 * time.Millisecond)
		case res := <-done:
			cancel()
			fail("blocked query failed before it was sent: " + res.r.Failure())
			continue
		}
		select {
		case res := <-done:
			cancel()
			fail(fmt.Sprintf("blocked query returned before the write (index %d, asked %d): %s", res.r.Index, cur.Index, res.r.Failure()))
			continue
		default:
		}
		sent := time.Now()
		_, w := b.createRule(ctx, "bench-wake")
		got := time.Now()
		if w.Failure() != "" {
			cancel() // nothing will wake the query
		}
		res := <-done
		cancel()
		switch {
		case w.Failure() != "":
			fail("create: " + w.Failure())
		case res.r.Failure() != "":
			fail("blocked query: " + res.r.Failure())
		case res.r.Index <= cur.Index:
			fail(fmt.Sprintf("blocked query returned index %d, not past %d", res.r.Index, cur.Index))
		default:
			fromSend = append(fromSend, res.at.Sub(sent))
			fromResp = append(fromResp, res.at.Sub(got))
			writes = append(writes, got.Sub(sent))
		}
	}
	n := fmt.Sprint(len(fromSend))
	b.add(row{scenario: "wake", what: "create: PUT sent -> response", clients: 1, n: n, lat: benchutil.Summarize(writes), errors: errs})
	b.add(row{scenario: "wake", what: "blocked list returns, after create sent", clients: 1, n: n, lat: benchutil.Summarize(fromSend), errors: errs})
	b.add(row{scenario: "wake", what: "blocked list returns, after create response (<0: before it)", clients: 1, n: n, lat: benchutil.Summarize(fromResp), errors: errs})
	return ctx.Err()
}

// fanout: park -watchers blocked reads of one rule, update the rule, and
// time every watcher's return; on every measured server in turn, -rounds
// times.
func (b *bench) fanout(ctx context.Context) error {
	for round := 1; round <= b.cfg.rounds; round++ {
		for _, sys := range b.systems {
			if sys.name == consulSystem {
				continue // its blocking queries answer X-Consul-Index: not measured here
			}
			for _, raw := range []bool{false, true} {
				if err := b.fanoutOn(ctx, sys, round, raw); err != nil {
					return fmt.Errorf("%s: %w", sys.name, err)
				}
			}
		}
	}
	return nil
}

// fanoutOn runs the fan-out scenario once on sys, with watchers on Go's
// net/http client or (raw) on plain connections that write the request and
// read the answer with no more than it takes: the generator shares the
// cores with the server, and net/http's client costs about as much CPU per
// answer as the server does to send it.
func (b *bench) fanoutOn(ctx context.Context, sys system, round int, raw bool) error {
	c := sys.c
	kind := "net/http client"
	var rawConns *rawWatchers
	if raw {
		kind = "raw HTTP/1.1 client"
		var err error
		if rawConns, err = newRawWatchers(c.Base, c.Token); err != nil {
			return err
		}
		defer rawConns.close()
	}
	id, r := b.createRuleOn(ctx, c, "bench-fanout", repeatedBindName)
	if f := r.Failure(); f != "" {
		return fmt.Errorf("creating the watched rule: %s", f)
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	cur := c.Do(rctx, http.MethodGet, "/v1/acl/binding-rule/"+id, nil, nil)
	cancel()
	if f := cur.Failure(); f != "" {
		return fmt.Errorf("reading the watched rule: %s", f)
	}
	path := fmt.Sprintf("/v1/acl/binding-rule/%s?index=%d&wait=120s", id, cur.Index)

	n := b.cfg.watchers
	type result struct {
		at time.Time
		r  benchutil.Response
	}
	results := make([]result, n)
	var returned atomic.Int64
	// At most cap(sem) requests are being connected and sent at once: a
	// burst of thousands of dials would overflow the listen backlog.
	sem := make(chan struct{}, 512)
	wctx, cancel := context.WithTimeout(ctx, 240*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			var once sync.Once
			release := func() { once.Do(func() { <-sem }) }
			finish := func(r benchutil.Response) {
				results[i] = result{time.Now(), r}
				returned.Add(1)
				release()
				wg.Done()
			}
			if raw {
				rawConns.start(wctx, path, release, finish)
				return
			}
			finish(c.Do(wctx, http.MethodGet, path, nil, release))
		}()
	}
	for range cap(sem) { // every request written (or failed)
		sem <- struct{}{}
	}
	opened := time.Since(start)
	time.Sleep(b.cfg.settle)
	early := returned.Load()

	profiled := make(chan error, 1)
	if b.cfg.fanoutProfile != "" {
		go func() { profiled <- b.serverProfile(ctx, c, fmt.Sprintf("%s.%d", b.cfg.fanoutProfile, round)) }()
		time.Sleep(50 * time.Millisecond) // the profiler has started
	} else {
		profiled <- nil
	}
	// The load generator shares the machine's cores with the server: it
	// does not collect its own garbage while the watchers come back, so
	// that what is measured is the server's work, not the generator's GC.
	gc := debug.SetGCPercent(-1)
	cpu := startCPU(sys.pid)
	sent := time.Now()
	body := fmt.Appendf(nil, `{"BindType":"service","BindName":"svc-fanout","Description":"fanout %d"}`, time.Now().UnixNano())
	wctx2, cancel2 := context.WithTimeout(ctx, requestTimeout)
	w := c.Do(wctx2, http.MethodPut, "/v1/acl/binding-rule/"+id, body, nil)
	cancel2()
	got := time.Now()
	wg.Wait()
	used := cpu.stop(time.Since(sent))
	debug.SetGCPercent(gc)
	if err := <-profiled; err != nil {
		b.note("fanout", "server profile: "+err.Error())
	}
	c.Transport.CloseIdleConnections()

	var fromSend, fromResp []time.Duration
	for _, res := range results {
		switch {
		case res.r.Failure() != "":
			b.note("fanout", res.r.Failure())
		case !res.at.After(sent):
			b.note("fanout", "watcher returned before the write")
		case res.r.Index <= cur.Index:
			b.note("fanout", "watcher returned without a higher index")
		default:
			fromSend = append(fromSend, res.at.Sub(sent))
			fromResp = append(fromResp, res.at.Sub(got))
		}
	}
	var werrs int
	if f := w.Failure(); f != "" {
		werrs = 1
		b.note("fanout", "update: "+f)
	}
	if early > 0 {
		b.note("fanout", fmt.Sprintf("%d watchers had returned before the write", early))
	}
	woke := fmt.Sprintf("%d/%d", len(fromSend), n)
	b.add(row{scenario: "fanout", what: sys.name + ": open watchers: every blocked GET written, " + kind, clients: n, n: fmt.Sprint(n),
		rate: float64(n) / opened.Seconds(), lat: benchutil.Single(opened)})
	b.add(row{scenario: "fanout", what: sys.name + ": update: PUT sent -> response", clients: 1, n: "1", lat: benchutil.Single(got.Sub(sent)), errors: werrs})
	b.add(row{scenario: "fanout", what: sys.name + ": watchers returned, after update sent (max: all back), " + kind, clients: n, n: woke,
		lat: benchutil.Summarize(fromSend), errors: n - len(fromSend)})
	b.add(row{scenario: "fanout", what: sys.name + ": watchers returned, after update response, " + kind, clients: n, n: woke,
		lat: benchutil.Summarize(fromResp), errors: n - len(fromSend)})
	b.add(used.row("fanout", sys.name+": CPU from update sent to all back, "+kind))
	if len(fromSend) < n && ctx.Err() == nil {
		return errors.New("not every watcher returned with a higher index (see the notes)")
	}
	return ctx.Err()
}

// serverProfile saves the server's CPU profile of the next second to file.
func (b *bench) serverProfile(ctx context.Context, c *benchutil.Client, file string) error {
	r := c.Do(ctx, http.MethodGet, "/debug/pprof/profile?seconds=1", nil, nil)
	if f := r.Failure(); f != "" {
		return errors.New(f)
	}
	return os.WriteFile(file, r.Body, 0o644)
}
