package agent_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
)

// Issue 31, finding 7: a dev agent answers only once its nodes are
// registered, so the first job run as soon as /v1/status/leader names a
// leader (what `nomad job run` right after `agent -dev` does) is placed at
// once: no "No nodes were eligible", no blocked evaluation.
func TestDevAgentAnswersOnceItsNodesAreReady(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d dev nodes", n), func(t *testing.T) {
			// As `agent -dev` does, without waiting for anything.
			ts := servertest.StartNoWait(t, servertest.DevNodes(n))
			deadline := time.Now().Add(20 * time.Second)
			for {
				r := ts.Do(t, http.MethodGet, "/v1/status/leader", "")
				if r.Status == http.StatusOK && r.Body != `""` {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no leader: %s", r)
				}
				time.Sleep(10 * time.Millisecond)
			}
			var nodes []*state.Node
			ts.Do(t, http.MethodGet, "/v1/nodes", "").JSON(t, &nodes)
			ready := 0
			for _, node := range nodes {
				if node.Status == state.NodeStatusReady {
					ready++
				}
			}
			if ready != n {
				t.Errorf("when the leader first answers: %d ready nodes, want %d", ready, n)
			}
			job := `{"Job":{"ID":"web","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Count":1,` +
				`"Tasks":[{"Name":"t","Driver":"mock_driver","Config":{}}]}]}}`
			if r := ts.Do(t, http.MethodPost, "/v1/jobs", job); r.Status != http.StatusOK {
				t.Fatalf("register: %s", r)
			}
			allocs, blocked := placement(t, ts, "web")
			var evals []struct {
				Status         string
				FailedTGAllocs map[string]any
			}
			ts.Do(t, http.MethodGet, "/v1/job/web/evaluations", "").JSON(t, &evals)
			if allocs != 1 || blocked || len(evals) != 1 || evals[0].Status != "complete" || len(evals[0].FailedTGAllocs) != 0 {
				t.Errorf("the first job: %d allocations, blocked %v, evaluations %+v; want one placed by one complete evaluation", allocs, blocked, evals)
			}
		})
	}
}
