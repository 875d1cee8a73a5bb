package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
)

// TestNodePoolCLI: node pool apply (HCL and JSON), list, info, nodes, jobs
// and delete against a real agent with a node in the "gpu" pool.
func TestNodePoolCLI(t *testing.T) {
	ts := servertest.Start(t, servertest.DevNodeGroup(server.DevNodeGroup{Name: "gpu", Count: 1, NodePool: "gpu"}))
	addr := "-address=" + ts.URL
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(ts.Do(t, "GET", "/v1/node/pool/gpu/nodes", "").Body, `"Status":"ready"`) {
		if time.Now().After(deadline) {
			t.Fatal("the gpu node did not register")
		}
		time.Sleep(20 * time.Millisecond)
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hclFile := write("batch.hcl", `node_pool "batch" {
  description = "batch work"
  meta {
    team = "data"
  }
  scheduler_config {
    scheduler_algorithm = "spread"
  }
}`)
	if out := mustCode(t, 0, "node", "pool", "apply", addr, hclFile); out != "Successfully applied node pool \"batch\"!\n" {
		t.Errorf("apply printed %q", out)
	}
	mustCode(t, 0, "node", "pool", "apply", addr, write("web.json", `{"Name":"web","Description":"front"}`))
	out := mustCode(t, 0, "node", "pool", "list", addr)
	for _, want := range []string{"Name     Description", "all      Node pool with all nodes in the cluster.", "batch    batch work", "default  Default node pool.", "gpu", "web      front"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	out = mustCode(t, 0, "node", "pool", "info", addr, "batch")
	for _, want := range []string{"Name        = batch", "Description = batch work", "team = data", "Scheduler Algorithm             = spread"} {
		if !strings.Contains(out, want) {
			t.Errorf("info lacks %q:\n%s", want, out)
		}
	}
	if out := mustCode(t, 0, "node", "pool", "nodes", addr, "gpu"); !strings.Contains(out, "gpu        dc1") || !strings.Contains(out, "ready") {
		t.Errorf("nodes:\n%s", out)
	}
	if out := mustCode(t, 0, "node", "pool", "nodes", addr, "batch"); out != "No nodes\n" {
		t.Errorf("nodes of an empty pool: %q", out)
	}
	if out := mustCode(t, 0, "node", "pool", "jobs", addr, "gpu"); out != "No jobs\n" {
		t.Errorf("jobs: %q", out)
	}
	job := `{"Job":{"ID":"train","NodePool":"gpu","TaskGroups":[{"Name":"g","Count":1,"Tasks":[{"Name":"t","Driver":"mock_driver","Config":{"run_for":"1h"}}]}]}}`
	if resp := ts.Do(t, "PUT", "/v1/jobs", job); resp.Status != 200 {
		t.Fatalf("register: %s", resp)
	}
	if out := mustCode(t, 0, "node", "pool", "jobs", addr, "gpu"); !strings.Contains(out, "train  default    service") {
		t.Errorf("jobs of gpu:\n%s", out)
	}
	if out := mustCode(t, 0, "job", "status", addr, "train"); !strings.Contains(out, "Node Pool   = gpu") {
		t.Errorf("job status:\n%s", out)
	}
	if out := mustCode(t, 0, "node", "pool", "delete", addr, "web"); out != "Successfully deleted node pool \"web\"!\n" {
		t.Errorf("delete printed %q", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"delete", addr, "gpu"}, "Error: 409 2 errors occurred:\n\t* node pool \"gpu\" has non-terminal jobs in regions: [global]\n\t* node pool \"gpu\" has nodes in regions: [global]\n"},
		{[]string{"info", addr, "web"}, "Error: 404 node pool not found"},
		{[]string{"apply", addr, write("bad.hcl", `node_pool "x" { colour = "red" }`)}, `unsupported argument "colour"`},
		{[]string{"apply", addr, write("two.hcl", "node_pool \"a\" {}\nnode_pool \"b\" {}")}, "exactly one node_pool block is needed"},
		{[]string{"apply", addr, write("all.hcl", `node_pool "all" {}`)}, `Error: 400 modifying node pool "all" is not allowed`},
	} {
		code, _, errOut := ctl(append([]string{"node", "pool"}, c.args...)...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
}
