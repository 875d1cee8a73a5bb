package agent_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// A 3-server cluster loses its leader mid-deployment: the client node fails
// over to the survivors, and the new leader's broker, scheduler and
// deployment watcher carry the rollout to the same end, successful.
func TestFailoverMidDeployment(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	nodes := servertest.StartCluster(t, 3, servertest.HeartbeatTTL(5*time.Second))
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.URL)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	c, err := client.New(client.Config{Servers: urls, NodeName: "worker", Datacenter: "dc1", TestDrivers: true,
		Resources: api.Resources{CPU: 4000, MemoryMB: 4096}})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); c.Run(ctx) }()

	leader := servertest.Leader(t, nodes)
	slow := update(map[string]any{"MinHealthyTime": int64(400 * time.Millisecond)})
	register(t, leader, jobSpec{count: 3, update: slow})
	waitDeployment(t, leader, 0, "successful", status(state.DeploymentStatusSuccessful))
	register(t, leader, jobSpec{count: 3, update: slow, config: map[string]any{"run_for": "1h", "stdout_string": "v1"}})
	d := waitDeployment(t, leader, 1, "its first replacement placed", func(d *state.Deployment) bool { return d.TaskGroups["web"].PlacedAllocs >= 1 })
	if d.Status != state.DeploymentStatusRunning {
		t.Fatalf("deployment before the failover: %s", d.Status)
	}

	if err := leader.Shutdown(); err != nil {
		t.Fatalf("stopping the leader: %v", err)
	}
	var survivors []*servertest.TestServer
	for _, n := range nodes {
		if n != leader {
			survivors = append(survivors, n)
		}
	}
	next := servertest.Leader(t, survivors)
	end := waitDeployment(t, next, 1, "successful after the failover", status(state.DeploymentStatusSuccessful))
	if end.ID != d.ID {
		t.Errorf("a new deployment %s replaced %s", end.ID, d.ID)
	}
	if g := end.TaskGroups["web"]; g.HealthyAllocs != 3 || g.PlacedAllocs != 3 {
		t.Errorf("deployment after the failover %+v", g)
	}
	waitLive(t, next, map[uint64]int{1: 3})
}

// A snapshot taken mid-deployment and restored on a new agent carries the
// deployment to the same end there: the snapshot's node is gone (it misses
// its heartbeats), its allocations are lost and replaced on the new agent's
// own node, and the deployment ends successful.
func TestSnapshotRestoreMidDeployment(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	src := devAgent(t)
	slow := update(map[string]any{"MinHealthyTime": int64(300 * time.Millisecond)})
	register(t, src, jobSpec{count: 2, update: slow})
	waitDeployment(t, src, 0, "successful", status(state.DeploymentStatusSuccessful))
	register(t, src, jobSpec{count: 2, update: slow, config: map[string]any{"run_for": "1h", "stdout_string": "v1"}})
	mid := waitDeployment(t, src, 1, "placing", func(d *state.Deployment) bool { return d.TaskGroups["web"].PlacedAllocs >= 1 })

	resp, err := http.Get(src.URL + "/v1/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	archive, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("snapshot save: %d %v", resp.StatusCode, err)
	}
	src.Shutdown()

	dst := devAgent(t, servertest.HeartbeatTTL(500*time.Millisecond))
	req, _ := http.NewRequest(http.MethodPut, dst.URL+"/v1/snapshot", strings.NewReader(string(archive)))
	rr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rr.Body)
	rr.Body.Close()
	if rr.StatusCode != http.StatusOK {
		t.Fatalf("snapshot restore: %d %s", rr.StatusCode, body)
	}
	restored, _ := latestByID(t, dst, mid.ID)
	if restored == nil || restored.JobVersion != 1 || !restored.Active() {
		t.Fatalf("restored deployment %+v", restored)
	}
	end := waitDeployment(t, dst, 1, "successful after the restore", status(state.DeploymentStatusSuccessful))
	if end.ID != mid.ID {
		t.Errorf("a new deployment %s replaced the restored %s", end.ID, mid.ID)
	}
	waitLive(t, dst, map[uint64]int{1: 2})
	var nodes []*state.Node
	dst.Do(t, http.MethodGet, "/v1/nodes", "").JSON(t, &nodes)
	down := 0
	for _, n := range nodes {
		if n.Status == state.NodeStatusDown {
			down++
		}
	}
	if down != 1 {
		t.Errorf("%d nodes down after the restore, want the source agent's one: %s", down, fmt.Sprint(len(nodes)))
	}
}
