// Command purgebench measures issue 31's large purge against a running
// agent with one client node (agent -dev): it places -count cheap
// mock_driver allocations of one job, purges the job and, once the client
// reported every allocation complete, registers a one-allocation job in
// another namespace (the change that makes the client drop the purged
// allocations). It reports how long the client took to end every purged
// allocation, how long the other job's allocation took to run, and whether
// the node stayed ready throughout.
// Loopback only; every wait is bounded by -timeout.
//
//	ctlplane agent -dev -http-addr=127.0.0.1:8500 &
//	go run ./scripts/purgebench -address=http://127.0.0.1:8500 -count=10000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

func main() {
	addr := flag.String("address", "http://127.0.0.1:8500", "server HTTP address (loopback)")
	count := flag.Int("count", 1000, "allocations of the purged job (1-10000)")
	timeout := flag.Duration("timeout", 20*time.Minute, "bound on each wait")
	during := flag.Bool("during", false, "register the other job right after the purge request (while the client stops the purged allocations) instead of after they all ended")
	sigterm := flag.Int("sigterm-pid", 0, "when set: once the other job is placed, send SIGTERM to this pid (the agent) and time its exit instead")
	flag.Parse()
	if *count < 1 || *count > 10000 {
		fail(fmt.Errorf("-count %d: 1 to 10000", *count))
	}
	u, err := url.Parse(*addr)
	if err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost" && u.Hostname() != "::1") {
		fail(fmt.Errorf("-address %q: a loopback address is needed", *addr))
	}
	ac, err := api.NewClient(api.Config{Address: *addr, Token: os.Getenv("CTLPLANE_TOKEN")})
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	nodes, _, err := ac.Nodes(ctx, nil)
	if err != nil || len(nodes) != 1 {
		fail(fmt.Errorf("one client node is needed: %d nodes, %v", len(nodes), err))
	}
	nodeID := nodes[0].ID
	suffix := "-" + strconv.FormatInt(time.Now().Unix()%100000, 10)
	big, other, otherNS := "purge-big"+suffix, "purge-other"+suffix, "purge-ns"+suffix
	if err := ac.ApplyNamespace(ctx, &api.Namespace{Name: otherNS}); err != nil {
		fail(err)
	}

	start := time.Now()
	if _, err := ac.RegisterJob(ctx, job("default", big, *count)); err != nil {
		fail(err)
	}
	waitUntil(*timeout, time.Second, fmt.Sprintf("%d allocations running", *count), func() bool {
		return countStatus(ac, "default", big, api.AllocClientStatusRunning) == *count
	})
	fmt.Printf("%d allocations placed and running: %v\n", *count, time.Since(start).Round(time.Millisecond))

	// The node's status, sampled until the end.
	var mu sync.Mutex
	notReady := map[string]int{}
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopWatch:
				return
			case <-t.C:
			}
			n, _, err := ac.Node(ctx, nodeID, nil)
			if err == nil && n.Status != api.NodeStatusReady {
				mu.Lock()
				notReady[n.Status]++
				mu.Unlock()
			}
		}
	}()

	// The purge: the client stops every allocation and reports it complete.
	purged := time.Now()
	if _, err := ac.DeregisterJob(ctx, big, true); err != nil {
		fail(err)
	}
	if *during {
		registered := time.Now()
		if _, err := ac.RegisterJob(ctx, job(otherNS, other+"-during", 1)); err != nil {
			fail(err)
		}
		waitUntil(*timeout, 5*time.Millisecond, "the other job's allocation placed", func() bool {
			return countStatus(ac, otherNS, other+"-during", "") == 1
		})
		placed := time.Since(registered)
		waitUntil(*timeout, 5*time.Millisecond, "the other job's allocation running", func() bool {
			return countStatus(ac, otherNS, other+"-during", api.AllocClientStatusRunning) == 1
		})
		fmt.Printf("another job (namespace %s) registered right after the purge: placed after %v, running after %v\n", otherNS,
			placed.Round(time.Millisecond), time.Since(registered).Round(time.Millisecond))
	}
	waitUntil(*timeout, time.Second, "every purged allocation complete", func() bool {
		return countStatus(ac, "default", big, api.AllocClientStatusComplete) == *count
	})
	purgeTime := time.Since(purged)
	// The next change to the node's list (this placement) tells the client
	// that the servers no longer list the purged allocations: it drops them
	// while it starts the other job's.
	registered := time.Now()
	if _, err := ac.RegisterJob(ctx, job(otherNS, other, 1)); err != nil {
		fail(err)
	}
	if *sigterm > 0 {
		waitUntil(*timeout, 20*time.Millisecond, "the other job's allocation placed", func() bool {
			return countStatus(ac, otherNS, other, "") == 1
		})
		close(stopWatch)
		<-watched
		fmt.Printf("purge of %d allocations, until the client reported every one complete: %v (polled each second)\n", *count, purgeTime.Round(time.Millisecond))
		begin := time.Now()
		if err := syscall.Kill(*sigterm, syscall.SIGTERM); err != nil {
			fail(err)
		}
		waitUntil(*timeout, 20*time.Millisecond, "the agent's exit", func() bool { return exited(*sigterm) })
		fmt.Printf("SIGTERM once the other job was placed (the client dropping the purged allocations): the agent exited after %v\n", time.Since(begin).Round(time.Millisecond))
		return
	}
	waitUntil(*timeout, 20*time.Millisecond, "the other job's allocation running", func() bool {
		return countStatus(ac, otherNS, other, api.AllocClientStatusRunning) == 1
	})
	otherLatency := time.Since(registered)
	close(stopWatch)
	<-watched
	fmt.Printf("purge of %d allocations, until the client reported every one complete: %v (polled each second)\n", *count, purgeTime.Round(time.Millisecond))
	fmt.Printf("another job (namespace %s) registered after it: running after %v\n", otherNS, otherLatency.Round(time.Millisecond))
	fmt.Printf("node samples not ready (every 200ms): %v\n", notReady)
}

func job(ns, id string, count int) *api.Job {
	return &api.Job{Namespace: ns, ID: id, Name: id, Type: "service", Datacenters: []string{"dc1"},
		TaskGroups: []*api.TaskGroup{{Name: "g", Count: count,
			RestartPolicy: &api.RestartPolicy{Attempts: 0, Interval: time.Minute, Delay: time.Second, Mode: "fail"},
			Tasks: []*api.Task{{Name: "t", Driver: "mock_driver", Config: map[string]any{},
				Resources: &api.Resources{CPU: 1, MemoryMB: 10}}}}}}
}

// exited says whether the process is gone (or a zombie its parent has
// not reaped yet).
func exited(pid int) bool {
	buf, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(buf)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// countStatus counts the job's allocations of a client status ("": all).
func countStatus(ac *api.Client, ns, id, status string) int {
	allocs, _, err := ac.JobAllocations(context.Background(), id, &api.QueryOptions{Params: map[string]string{"namespace": ns}})
	if err != nil {
		return -1
	}
	n := 0
	for _, a := range allocs {
		if status == "" || a.ClientStatus == status {
			n++
		}
	}
	return n
}

func waitUntil(timeout, every time.Duration, what string, cond func() bool) {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			fail(errors.New("timed out waiting for " + what))
		}
		time.Sleep(every)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "purgebench:", err)
	os.Exit(1)
}
