// Command orchbench measures the orchestrator half on one in-process agent
// with many simulated client nodes (mock_driver), as issue 9 asks:
// placements per second, time from register to successful, evaluations per
// second, deployment list and read latency with many deployments, and
// memory per allocation.
//
//	go run ./scripts/orchbench -nodes=1000 -jobs=100 -count=1000
//
// With -nodes-process the simulated nodes run in a child process (talking
// to the agent over TCP), so that the heap printed is the server's alone;
// with -baseline=REV the same measurement also runs on ctlplane as it was
// at git revision REV, alternating with this tree's, in the same run (see
// compare.go).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/scripts/internal/benchutil"
	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/agent"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
)

func main() {
	nodes := flag.Int("nodes", 1000, "simulated client nodes")
	jobs := flag.Int("jobs", 100, "jobs in the placement run")
	count := flag.Int("count", 1000, "allocations per job in the placement run")
	rollout := flag.Int("rollout", 1000, "allocations of the rollout job (register to successful, then a new version)")
	maxParallel := flag.Int("max-parallel", 100, "MaxParallel of the rollout job")
	deployments := flag.Int("deployments", 10000, "deployments for the list/read latency run (one job of count 1 each)")
	reads := flag.Int("reads", 2000, "reads per latency measurement")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	evalProfile := flag.String("eval-cpuprofile", "", "write a CPU profile of the evaluation run (step 3) alone to this file")
	evalMemProfile := flag.String("eval-memprofile", "", "write heap profiles before (FILE.before) and after the evaluation run (step 3), to read what it allocated with pprof -base")
	dataDir := flag.Bool("data-dir", false, "run the agent as a server with its Raft log and snapshots on disk (a temporary directory) instead of in memory (-dev)")
	memProfile := flag.String("memprofile", "", "write a heap profile after the placements to this file")
	workers := flag.Int("scheduler-workers", 0, "the agent's scheduler workers (0: its default)")
	registerRate := flag.Int("register-rate", 0, "small jobs registered per second in the evaluation run (0: as fast as the clients go), to see the latency below saturation")
	registerClients := flag.Int("register-clients", 16, "concurrent clients registering the small jobs of the evaluation run")
	limited := flag.Bool("limited-placement", false, "the agent places as Nomad's service stack (server -limited-placement; a revision without it places as it always did)")
	gcFloorMB := flag.Int("gc-heap-floor-mb", 512, "the agent's GC tuner heap floor, as the ctlplane agent's flag of that name (0: Go's GOGC; a revision whose agent has no tuner runs without it)")
	gcWhenIdle := flag.Bool("gc-when-idle", true, "run the agent's idle collector, as the ctlplane agent's flag of that name (a revision without one runs without it)")
	nodesProcess := flag.Bool("nodes-process", false, "run the simulated nodes in a child process, so that the heap measured is the server's alone")
	baseline := flag.String("baseline", "", "also run this benchmark on ctlplane built from this git revision, alternating with this tree, in the same run")
	rounds := flag.Int("rounds", 1, "with -baseline: runs of each")
	simNodes := flag.Int("sim-nodes", 0, "(internal) run this many simulated nodes against -server until killed")
	serverURL := flag.String("server", "", "(internal) the agent's HTTP URL, with -sim-nodes")
	flag.Parse()
	if *simNodes > 0 {
		runSimNodes(*simNodes, *serverURL)
		return
	}
	if *baseline != "" {
		compare(*baseline, *rounds)
		return
	}
	if *cpuProfile != "" {
		defer startCPUProfile(*cpuProfile)()
	}

	cfg := server.DefaultConfig()
	cfg.Dev = true
	cfg.NodeName = "bench"
	cfg.BindAddr = "127.0.0.1:0"
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.RaftTimeout = 200 * time.Millisecond
	cfg.ACLEnabled = false
	cfg.DevNodes = *nodes
	cfg.SchedulerWorkers = *workers
	if *dataDir {
		// Raft's log on disk, as a server runs: the heap holds the state,
		// not every entry since the last snapshot (the in-memory store of
		// -dev keeps them, 10,240 and more).
		dir, err := os.MkdirTemp("", "orchbench-data-")
		if err != nil {
			fail("%v", err)
		}
		defer os.RemoveAll(dir)
		cfg.Dev, cfg.DataDir, cfg.BootstrapExpect = false, dir, 1
	}
	if *nodesProcess {
		cfg.DevNodes = 0
	}
	cfg.HeartbeatTTL = time.Minute
	if *limited {
		// By name: this file is also built over revisions without the field (-baseline).
		if f := reflect.ValueOf(cfg).Elem().FieldByName("LimitedPlacement"); f.IsValid() {
			f.SetBool(true)
			fmt.Println("orchbench: limited placement (Nomad's service stack)")
		} else {
			fmt.Println("orchbench: this revision has no limited placement: it places as it always did")
		}
	}
	// By name, as LimitedPlacement: the agent runs the binary's GC tuner
	// (ctlplane agent -gc-heap-floor-mb, 512 MiB by default) and idle
	// collector (-gc-when-idle, on) since the fields exist; before,
	// orchbench measured a configuration without them.
	if f := reflect.ValueOf(cfg).Elem().FieldByName("GCHeapFloor"); f.IsValid() {
		f.SetUint(uint64(*gcFloorMB) << 20)
		fmt.Printf("orchbench: GC tuner heap floor %d MiB\n", *gcFloorMB)
	} else {
		fmt.Println("orchbench: this revision's agent has no GC tuner: Go's GOGC")
	}
	if f := reflect.ValueOf(cfg).Elem().FieldByName("GCWhenIdle"); f.IsValid() {
		f.SetBool(*gcWhenIdle)
		fmt.Printf("orchbench: idle collector %v\n", *gcWhenIdle)
	} else {
		fmt.Println("orchbench: this revision's agent has no idle collector")
	}
	// The simulated nodes of -nodes-process share one client IP.
	cfg.HTTPMaxConnsPerClient = 0
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr})
	a, err := agent.New(cfg)
	if err != nil {
		fail("starting the agent: %v", err)
	}
	defer a.Shutdown()
	base := "http://" + a.HTTPAddr()
	where := "in the agent's process"
	if *nodesProcess {
		stop := startSimNodes(*nodes, base)
		defer stop()
		where = "in a child process"
	}
	fmt.Printf("orchbench: one agent, %d simulated nodes %s, %d CPUs, %s\n", *nodes, where, runtime.NumCPU(), runtime.Version())
	waitFor("nodes ready", 2*time.Minute, func() bool { return readyNodes(a) >= *nodes })

	heapBefore := heap()
	// 1. Placements: jobs × count allocations at once.
	start := time.Now()
	cpuStart := cpuNow()
	indexStart := a.State().AllocsIndex()
	for j := 0; j < *jobs; j++ {
		register(base, fmt.Sprintf("place-%d", j), *count, 1, 0)
	}
	total := *jobs * *count
	waitFor("placements", 30*time.Minute, func() bool { return placedAllocs(a, "place-", *jobs) >= total })
	placeTime := time.Since(start)
	cpu := cpuNow().since(cpuStart)
	fmt.Printf("placements:  %d allocations (%d jobs × %d) placed in %s: %.0f placements/s\n",
		total, *jobs, *count, placeTime.Round(time.Millisecond), float64(total)/placeTime.Seconds())
	fmt.Printf("             Raft log: %d entries (the index of the allocations' last write moved by that many)\n", a.State().AllocsIndex()-indexStart)
	fmt.Printf("             CPU: this process %.1f s (%.0f µs per placement), the nodes' process %.1f s (%.0f µs per placement)\n",
		cpu.self.Seconds(), float64(cpu.self.Microseconds())/float64(max(total, 1)),
		cpu.children.Seconds(), float64(cpu.children.Microseconds())/float64(max(total, 1)))
	waitFor("placement deployments successful", 30*time.Minute, func() bool { return successful(a, "place-") >= *jobs })
	fmt.Printf("             all %d deployments successful %s after the first register\n", *jobs, time.Since(start).Round(time.Millisecond))
	fmt.Printf("             evaluations of the placement jobs by trigger: %s\n", evalTriggers(a, "place-"))
	heapAfter := heap()
	if *memProfile != "" {
		writeHeapProfile(*memProfile)
	}
	whose := "server state and the simulated nodes' runners together"
	if *nodesProcess {
		whose = "the server's alone"
	}
	fmt.Printf("memory:      heap %s before, %s after %d allocations: %s per 100k allocations (%s)\n",
		benchutil.Bytes(int64(heapBefore)), benchutil.Bytes(int64(heapAfter)), total,
		benchutil.Bytes(int64(float64(heapAfter-min(heapBefore, heapAfter))*100000/float64(max(total, 1)))), whose)

	// 2. Rollout: register to successful, then a destructive new version
	// rolled MaxParallel at a time with MinHealthyTime 0.
	start = time.Now()
	register(base, "rollout", *rollout, *maxParallel, 0)
	waitFor("rollout v0", 30*time.Minute, func() bool { return versionSuccessful(a, "rollout", 0) })
	first := time.Since(start)
	start = time.Now()
	register(base, "rollout", *rollout, *maxParallel, 1)
	waitFor("rollout v1", 30*time.Minute, func() bool { return versionSuccessful(a, "rollout", 1) })
	fmt.Printf("rollout:     %d allocations, register → successful %s; new version, MaxParallel %d, MinHealthyTime 0: %s\n",
		*rollout, first.Round(time.Millisecond), *maxParallel, time.Since(start).Round(time.Millisecond))

	// 3. Evaluations per second: many small jobs.
	if *deployments > 0 {
		if *evalProfile != "" {
			stop := startCPUProfile(*evalProfile)
			defer stop()
		}
		if *evalMemProfile != "" {
			writeHeapProfile(*evalMemProfile + ".before")
		}
		evalsBefore := a.Broker.Stats().Processed
		cpuBefore := processCPU()
		start = time.Now()
		next := make(chan int)
		var wg sync.WaitGroup
		for range max(*registerClients, 1) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range next {
					register(base, fmt.Sprintf("small-%d", j), 1, 1, 0)
				}
			}()
		}
		var tick <-chan time.Time
		if *registerRate > 0 {
			t := time.NewTicker(time.Second / time.Duration(*registerRate))
			defer t.Stop()
			tick = t.C
		}
		for j := 0; j < *deployments; j++ {
			if tick != nil {
				<-tick
			}
			next <- j
		}
		close(next)
		wg.Wait()
		registered := time.Since(start)
		waitFor("small deployments", 30*time.Minute, func() bool { return successful(a, "small-") >= *deployments })
		el := time.Since(start)
		evals := a.Broker.Stats().Processed - evalsBefore
		cpu := processCPU() - cpuBefore
		if *evalMemProfile != "" {
			writeHeapProfile(*evalMemProfile)
		}
		paced := ""
		if *registerRate > 0 {
			paced = fmt.Sprintf(", paced at %d/s", *registerRate)
		}
		fmt.Printf("evaluations: %d jobs registered (%d clients%s, %s) to successful in %s: %d evaluations, %.0f evaluations/s\n",
			*deployments, *registerClients, paced, registered.Round(time.Millisecond), el.Round(time.Millisecond), evals, float64(evals)/el.Seconds())
		if s := evalLatency(a, "small-"); s != nil {
			fmt.Printf("             register → evaluation complete: p50 %s  p99 %s  max %s  (%d job-register evaluations)\n",
				benchutil.MS(s.P50), benchutil.MS(s.P99), benchutil.MS(s.Max), s.N)
		}
		fmt.Printf("             CPU: %s of this process (%s), %.2f ms per evaluation, %.0f%% of one core\n",
			cpu.Round(time.Millisecond), cpuWhose(*nodesProcess), float64(cpu)/float64(time.Millisecond)/float64(max(evals, 1)),
			100*cpu.Seconds()/el.Seconds())

		// 4. Deployment list and read latency.
		_, all, _ := a.State().Deployments(memdb.NewWatchSet(), state.AllNamespaces, "")
		fmt.Printf("latency with %d deployments:\n", len(all))
		for _, q := range []struct{ name, path string }{
			{"read one", "/v1/deployment/" + all[len(all)/2].ID},
			{"list, page of 100", "/v1/deployments?per_page=100"},
			{"list, all", "/v1/deployments"},
		} {
			n := *reads
			if q.name == "list, all" {
				n = max(*reads/100, 10)
			}
			var lat []time.Duration
			for i := 0; i < n; i++ {
				t0 := time.Now()
				get(base + q.path)
				lat = append(lat, time.Since(t0))
			}
			if len(lat) == 0 {
				continue // -reads=0
			}
			s := benchutil.Summarize(lat)
			fmt.Printf("             %-18s p50 %s  p99 %s  (%d requests, 1 client)\n", q.name, benchutil.MS(s.P50), benchutil.MS(s.P99), s.N)
		}
	}
	st := a.Broker.Stats()
	fmt.Printf("broker:      %d evaluations processed, %d failed, %d plans applied, %d refused as stale\n", st.Processed, st.Failed, st.PlansApplied, st.PlansRefused)
}

func register(base, id string, count, maxParallel, version int) {
	job := map[string]any{"ID": id, "Datacenters": []string{"dc1"}, "TaskGroups": []any{map[string]any{
		"Name": "g", "Count": count,
		"Update": map[string]any{"MaxParallel": maxParallel, "HealthCheck": "task_states", "MinHealthyTime": 0,
			"HealthyDeadline": int64(5 * time.Minute), "ProgressDeadline": int64(10 * time.Minute)},
		"Tasks": []any{map[string]any{"Name": "t", "Driver": "mock_driver", "KillTimeout": int64(time.Second),
			"Config": map[string]any{"stdout_string": fmt.Sprint(version)}, "Resources": map[string]any{"CPU": 10, "MemoryMB": 16}}},
	}}}
	buf, _ := json.Marshal(map[string]any{"Job": job})
	resp, err := httpClient.Post(base+"/v1/jobs", "application/json", strings.NewReader(string(buf)))
	if err != nil {
		fail("register %s: %v", id, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fail("register %s: %d %s", id, resp.StatusCode, body)
	}
}

// httpClient keeps a connection per concurrent register (the default
// transport keeps 2 idle, so 16 clients would dial anew on most requests).
var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

func get(url string) {
	resp, err := httpClient.Get(url)
	if err != nil {
		fail("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fail("GET %s: %d", url, resp.StatusCode)
	}
}

// evalLatency summarizes, over the complete job-register evaluations of
// the jobs named with prefix, the time from their creation (the register's
// Raft entry) to their completion.
func evalLatency(a *agent.Agent, prefix string) *benchutil.Summary {
	_, evals, _ := a.State().Evals(memdb.NewWatchSet(), state.AllNamespaces)
	var lat []time.Duration
	for _, ev := range evals {
		if strings.HasPrefix(ev.JobID, prefix) && ev.TriggeredBy == state.EvalTriggerJobRegister && ev.Status == state.EvalStatusComplete {
			lat = append(lat, time.Duration(ev.ModifyTime-ev.CreateTime))
		}
	}
	if len(lat) == 0 {
		return nil
	}
	return benchutil.Summarize(lat)
}

// evalTriggers counts the evaluations of the jobs named with prefix by
// what triggered them.
func evalTriggers(a *agent.Agent, prefix string) string {
	_, evals, _ := a.State().Evals(memdb.NewWatchSet(), state.AllNamespaces)
	n := map[string]int{}
	for _, ev := range evals {
		if strings.HasPrefix(ev.JobID, prefix) {
			n[ev.TriggeredBy]++
		}
	}
	var out []string
	for _, t := range slices.Sorted(maps.Keys(n)) {
		out = append(out, fmt.Sprintf("%s %d", t, n[t]))
	}
	return strings.Join(out, ", ")
}

func readyNodes(a *agent.Agent) int {
	_, nodes, _ := a.State().Nodes(memdb.NewWatchSet())
	n := 0
	for _, node := range nodes {
		if node.Status == state.NodeStatusReady {
			n++
		}
	}
	return n
}

// placedAllocs counts the live allocations of jobs prefix0..prefix<jobs-1>
// from their summaries (pending or running on the client): 100 reads, not
// a scan of every allocation per poll, which cost the server's process 11%
// of its CPU while 100,000 were placed.
func placedAllocs(a *agent.Agent, prefix string, jobs int) int {
	n := 0
	for j := range jobs {
		_, s, _ := a.State().JobSummary(nil, "default", fmt.Sprint(prefix, j))
		if s == nil {
			continue
		}
		for _, g := range s.Summary {
			n += g.Starting + g.Running
		}
	}
	return n
}

func successful(a *agent.Agent, prefix string) int {
	_, all, _ := a.State().Deployments(memdb.NewWatchSet(), state.AllNamespaces, "")
	n := 0
	for _, d := range all {
		if strings.HasPrefix(d.JobID, prefix) && d.Status == state.DeploymentStatusSuccessful {
			n++
		}
	}
	return n
}

func versionSuccessful(a *agent.Agent, job string, version uint64) bool {
	_, d, _ := a.State().LatestDeploymentByJob(memdb.NewWatchSet(), "default", job)
	return d != nil && d.JobVersion == version && d.Status == state.DeploymentStatusSuccessful
}

// waitFor polls cond (cheap reads of the in-process state) until it holds.
// waitFor polls cond every 20 ms at first, then every 1/200 of the time
// waited so far: the polls (a scan of every allocation or deployment) stay
// a small share of the CPU the benchmark measures, and the time measured
// is off by at most 0.5%.
func waitFor(what string, limit time.Duration, cond func() bool) {
	start := time.Now()
	deadline := start.Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			fail("timed out waiting for %s", what)
		}
		time.Sleep(max(20*time.Millisecond, time.Since(start)/200))
	}
}

// startCPUProfile profiles this process's CPU into path until the
// function it returns is called.
func startCPUProfile(path string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		fail("%v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fail("%v", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		fail("%v", err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		fail("writing the heap profile: %v", err)
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuWhose says what processCPU counts.
func cpuWhose(nodesProcess bool) string {
	if nodesProcess {
		return "the server and the load, not the simulated nodes"
	}
	return "the server, the simulated nodes and the load together"
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "orchbench: "+format+"\n", args...)
	os.Exit(1)
}
