package main

import (
	"context"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
)

// mockJob is a job of count mock_driver allocations as small as allowed.
func mockJob(ns, id string, count int) *api.Job {
	return &api.Job{Namespace: ns, ID: id, Name: id, Type: "service", Datacenters: []string{"dc1"},
		TaskGroups: []*api.TaskGroup{{Name: "g", Count: count, Tasks: []*api.Task{{Name: "t", Driver: "mock_driver",
			Config: map[string]any{}, Resources: &api.Resources{CPU: 1, MemoryMB: 10}}}}}}
}

// countClientStatus counts a job's allocations whose client status is status.
func countClientStatus(t *testing.T, ac *api.Client, ns, id, status string) int {
	t.Helper()
	allocs, _, err := ac.JobAllocations(context.Background(), id, &api.QueryOptions{Params: map[string]string{"namespace": ns}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range allocs {
		if status == "" || a.ClientStatus == status {
			n++
		}
	}
	return n
}

// Issue 31: SIGTERM ends a dev agent promptly while its client drops the
// allocations of a large purge. The purge's allocations end, then another
// namespace's job is placed: that change makes the client drop them all,
// and SIGTERM comes as it does. Before, each drop rewrote the whole state
// under the client's lock and the agent's shutdown waited for all of them.
func TestDevAgentSIGTERMDuringLargePurge(t *testing.T) {
	const n = 1500
	a, ac := devAgent(t)
	waitNodes(t, ac, 1)
	ctx := context.Background()
	if _, err := ac.RegisterJob(ctx, mockJob("default", "big", n)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every allocation running", func() bool {
		return countClientStatus(t, ac, "default", "big", api.AllocClientStatusRunning) == n
	})
	if _, err := ac.DeregisterJob(ctx, "big", true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every purged allocation complete", func() bool {
		return countClientStatus(t, ac, "default", "big", api.AllocClientStatusComplete) == n
	})
	if err := ac.ApplyNamespace(ctx, &api.Namespace{Name: "other"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ac.RegisterJob(ctx, mockJob("other", "small", 1)); err != nil {
		t.Fatal(err)
	}
	// Placed: the client's read of its changes wakes with the drops.
	waitFor(t, "the other job's allocation placed", func() bool {
		return countClientStatus(t, ac, "other", "small", "") == 1
	})
	begin := time.Now()
	a.stop(t) // SIGTERM, then a clean exit within stopTimeout
	t.Logf("the agent exited %v after SIGTERM", time.Since(begin).Round(time.Millisecond))
}
