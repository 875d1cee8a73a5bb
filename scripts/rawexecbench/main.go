// Command rawexecbench measures the raw_exec client against a running
// agent, as issue 10 asks: time from register to successful for a
// 30-allocation job (MinHealthyTime 1s, MaxParallel 10) and for its rolling
// update; the client's CPU and memory with 100 running tasks; and the
// time from a task's exit to its replacement running (restarted in place,
// and replaced by the scheduler when its policy allows no restart).
//
//	ctlplane agent -dev -dev-nodes=0 -http-addr=127.0.0.1:8500 &
//	ctlplane agent -client -enable-raw-exec -servers=127.0.0.1:8500 -data-dir=/tmp/c1 -node=c1 &
//	go run ./scripts/rawexecbench -address=http://127.0.0.1:8500 -client-pid=$!
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

var (
	ac  *api.Client
	ctx = context.Background()
)

func main() {
	addr := flag.String("address", "http://127.0.0.1:8500", "server HTTP address")
	count := flag.Int("count", 30, "allocations of the rollout job")
	tasks := flag.Int("tasks", 100, "running tasks for the CPU and memory measurement")
	clientPid := flag.Int("client-pid", 0, "pid of the client agent process (CPU and memory are read from /proc)")
	sample := flag.Duration("sample", 20*time.Second, "how long to sample the client's CPU")
	flag.Parse()
	var err error
	if ac, err = api.NewClient(api.Config{Address: *addr, Token: os.Getenv("CTLPLANE_TOKEN")}); err != nil {
		fail(err)
	}
	pidDir, err := os.MkdirTemp("", "rawexecbench-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(pidDir)

	// Fresh job IDs per run: a job purged and registered again starts at
	// version 0 while its old deployments remain.
	suffix := "-" + strconv.FormatInt(time.Now().Unix()%100000, 10)
	rollout, restart, replace, many := "bench-rollout"+suffix, "bench-restart"+suffix, "bench-replace"+suffix, "bench-many"+suffix

	// 1. Register to successful, then a rolling update of every allocation.
	start := time.Now()
	register(job(rollout, *count, "exec sleep 3600", pidDir, "1", 0))
	waitDeployment(rollout, 0)
	fmt.Printf("register → successful, %d allocations (MinHealthyTime 1s, MaxParallel 10): %v\n", *count, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	register(job(rollout, *count, "exec sleep 3600", pidDir, "2", 0))
	waitDeployment(rollout, 1)
	fmt.Printf("rolling update → successful, %d allocations: %v\n", *count, time.Since(start).Round(time.Millisecond))
	stop(rollout)

	// 2. Exit to running again: in place (restart policy, Delay 0), and by
	// a replacement allocation (Attempts 0: the allocation fails).
	register(job(restart, 1, `echo $$ > "$PIDDIR/$NOMAD_ALLOC_ID"; exec sleep 3600`, pidDir, "1", 10))
	waitDeployment(restart, 0)
	var restarts []time.Duration
	for i := 0; i < 5; i++ {
		restarts = append(restarts, exitToRunning(restart, pidDir, false))
	}
	stop(restart)
	fmt.Printf("task exit → restarted in place and running (Delay 0), 5 trials: %v\n", summary(restarts))
	register(job(replace, 1, `echo $$ > "$PIDDIR/$NOMAD_ALLOC_ID"; exec sleep 3600`, pidDir, "1", 0))
	waitDeployment(replace, 0)
	var replaces []time.Duration
	for i := 0; i < 5; i++ {
		replaces = append(replaces, exitToRunning(replace, pidDir, true))
	}
	stop(replace)
	fmt.Printf("task exit → replacement allocation running (no restarts allowed), 5 trials: %v\n", summary(replaces))

	// 3. The client with many running tasks.
	if *clientPid > 0 {
		register(job(many, *tasks, "exec sleep 3600", pidDir, "1", 0))
		waitDeployment(many, 0)
		time.Sleep(2 * time.Second)
		t0, rss0 := procCPU(*clientPid)
		time.Sleep(*sample)
		t1, rss1 := procCPU(*clientPid)
		fmt.Printf("client with %d running tasks: CPU %.2f%% of one core over %v, RSS %d MiB (before the sample %d MiB)\n",
			*tasks, 100*float64(t1-t0)/float64(*sample), *sample, rss1>>20, rss0>>20)
		stop(many)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "rawexecbench:", err)
	os.Exit(1)
}

func job(id string, count int, script, pidDir, version string, attempts int) *api.Job {
	return &api.Job{ID: id, Name: id, Type: "service", Datacenters: []string{"dc1"},
		Update: &api.UpdateStrategy{MaxParallel: 10, HealthCheck: "task_states", MinHealthyTime: time.Second,
			HealthyDeadline: time.Minute, ProgressDeadline: 5 * time.Minute},
		TaskGroups: []*api.TaskGroup{{Name: "app", Count: count,
			RestartPolicy: &api.RestartPolicy{Attempts: attempts, Interval: time.Hour, Delay: 0, Mode: "fail"},
			Tasks: []*api.Task{{Name: "main", Driver: "raw_exec", KillTimeout: time.Second,
				Env:       map[string]string{"PIDDIR": pidDir, "VERSION": version},
				Config:    map[string]any{"command": "/bin/sh", "args": []string{"-c", script}},
				Resources: &api.Resources{CPU: 10, MemoryMB: 10}}}}}}
}

func register(j *api.Job) {
	if _, err := ac.RegisterJob(ctx, j); err != nil {
		fail(fmt.Errorf("registering %s: %w", j.ID, err))
	}
}

func stop(id string) {
	if _, err := ac.DeregisterJob(ctx, id, true); err != nil {
		fail(fmt.Errorf("stopping %s: %w", id, err))
	}
	// Wait for the tasks to be gone before the next measurement.
	for {
		allocs, _, err := ac.JobAllocations(ctx, id, nil)
		if err != nil || len(allocs) == 0 {
			return
		}
		live := 0
		for _, a := range allocs {
			if a.ClientStatus == api.AllocClientStatusRunning || a.ClientStatus == api.AllocClientStatusPending {
				live++
			}
		}
		if live == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitDeployment follows the job's deployment of version until it ends.
func waitDeployment(id string, version uint64) {
	var index uint64
	for {
		d, meta, err := ac.JobLatestDeployment(ctx, id, &api.QueryOptions{WaitIndex: index, WaitTime: 10 * time.Second})
		if err != nil {
			fail(fmt.Errorf("following %s: %w", id, err))
		}
		index = meta.LastIndex
		if d == nil || d.JobVersion != version {
			continue
		}
		switch d.Status {
		case api.DeploymentStatusSuccessful:
			return
		case api.DeploymentStatusFailed, api.DeploymentStatusCancelled:
			fail(fmt.Errorf("deployment of %s v%d: %s (%s)", id, version, d.Status, d.StatusDescription))
		}
	}
}

// exitToRunning kills the job's running task and measures until a task
// of the job runs again (replaced: in another allocation).
func exitToRunning(id, pidDir string, replaced bool) time.Duration {
	allocs, _, err := ac.JobAllocations(ctx, id, nil)
	if err != nil {
		fail(fmt.Errorf("allocations of %s: %w", id, err))
	}
	var cur *api.AllocationListStub
	for _, a := range allocs {
		if a.ClientStatus == api.AllocClientStatusRunning {
			cur = a
		}
	}
	if cur == nil {
		fail(errors.New("no running allocation"))
	}
	restarts := cur.TaskStates["main"].Restarts
	buf, err := os.ReadFile(pidDir + "/" + cur.ID)
	if err != nil {
		fail(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(buf)))
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		fail(err)
	}
	for {
		allocs, _, err := ac.JobAllocations(ctx, id, nil)
		if err != nil {
			fail(err)
		}
		for _, a := range allocs {
			ts := a.TaskStates["main"]
			if ts == nil || ts.State != api.TaskStateRunning || a.ClientStatus != api.AllocClientStatusRunning {
				continue
			}
			if (replaced && a.ID != cur.ID) || (!replaced && a.ID == cur.ID && ts.Restarts > restarts) {
				return time.Since(start)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func summary(ds []time.Duration) string {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return fmt.Sprintf("min %v, median %v, max %v", ds[0].Round(time.Millisecond), ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
}

// procCPU reads a process's CPU time (user+system) and RSS from /proc.
func procCPU(pid int) (time.Duration, int64) {
	buf, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		fail(err)
	}
	s := string(buf)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	rssPages, _ := strconv.ParseInt(f[21], 10, 64)
	const hz = 100 // USER_HZ
	return time.Duration(utime+stime) * time.Second / hz, rssPages * int64(os.Getpagesize())
}
