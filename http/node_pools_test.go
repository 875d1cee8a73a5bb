package http_test

// Node pools (Nomad 1.6) through the unmodified nomad/api client against a
// real agent with simulated nodes in two pools.

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/nomad/api"
)

func poolNames(pools []*api.NodePool) []string {
	out := []string{}
	for _, p := range pools {
		out = append(out, p.Name)
	}
	return out
}

// expectAPIError checks a nomad/api error's status and body.
func expectAPIError(t *testing.T, err error, status int, body string) {
	t.Helper()
	var ue api.UnexpectedResponseError
	if !errors.As(err, &ue) {
		t.Fatalf("want a %d %q, got %v", status, body, err)
	}
	if ue.StatusCode() != status || strings.TrimSpace(ue.Body()) != body {
		t.Errorf("got %d %q, want %d %q", ue.StatusCode(), ue.Body(), status, body)
	}
}

// doNomad sends a request with a Nomad token.
func doNomad(t *testing.T, ts *servertest.TestServer, token, method, path, body string) *servertest.Response {
	t.Helper()
	return ts.Do(t, method, path, body, "X-Nomad-Token", token)
}

func TestNodePoolsNomadClient(t *testing.T) {
	const mgmt = "5d2b1f0e-3c4a-4e8b-9a6d-7f1e2c3b4a59"
	ts := servertest.Start(t, servertest.ACL(mgmt), servertest.DevNodes(1),
		servertest.DevNodeGroup(server.DevNodeGroup{Name: "gpu", Count: 2, NodePool: "gpu"}))
	c := nomadClient(t, ts, mgmt)
	waitReadyNodes(t, c, 3)
	pools := c.NodePools()

	// The built-ins and the pool the gpu nodes created by registering.
	list, qm, err := pools.List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := poolNames(list); strings.Join(got, ",") != "all,default,gpu" || qm.LastIndex == 0 {
		t.Fatalf("List: %v (index %d)", got, qm.LastIndex)
	}
	if list[0].Description != "Node pool with all nodes in the cluster." || list[1].Description != "Default node pool." || list[2].CreateIndex <= 1 {
		t.Errorf("List: %+v %+v %+v", list[0], list[1], list[2])
	}

	// Register (PUT /v1/node/pools), read, update.
	spread := &api.NodePoolSchedulerConfiguration{SchedulerAlgorithm: api.SchedulerAlgorithmSpread}
	wm, err := pools.Register(&api.NodePool{Name: "batch", Description: "batch work", Meta: map[string]string{"team": "data"}, SchedulerConfiguration: spread}, nil)
	if err != nil || wm.LastIndex == 0 {
		t.Fatalf("Register: %v %+v", err, wm)
	}
	p, _, err := pools.Info("batch", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Description != "batch work" || p.Meta["team"] != "data" || p.SchedulerConfiguration == nil ||
		p.SchedulerConfiguration.SchedulerAlgorithm != "spread" || p.CreateIndex != wm.LastIndex || p.ModifyIndex != wm.LastIndex {
		t.Errorf("Info: %+v (written at %d)", p, wm.LastIndex)
	}
	wm2, err := pools.Register(&api.NodePool{Name: "batch", Description: "batch jobs"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, _, err = pools.Info("batch", nil); err != nil || p.Description != "batch jobs" || p.CreateIndex != wm.LastIndex || p.ModifyIndex != wm2.LastIndex || p.SchedulerConfiguration != nil {
		t.Errorf("after update: %+v", p)
	}
	if got, _, err := pools.PrefixList("ba", nil); err != nil || strings.Join(poolNames(got), ",") != "batch" {
		t.Errorf("PrefixList: %v %v", poolNames(got), err)
	}
	if got, _, err := pools.List(&api.QueryOptions{Filter: `Name matches "^(all|gpu)$"`}); err != nil || strings.Join(poolNames(got), ",") != "all,gpu" {
		t.Errorf("filter: %v %v", poolNames(got), err)
	}

	// Refusals, with Nomad's texts.
	_, _, err = pools.Info("nope", nil)
	expectAPIError(t, err, 404, "node pool not found")
	for _, bad := range []struct {
		pool *api.NodePool
		msg  string
	}{
		{&api.NodePool{Name: "default", Description: "x"}, `modifying node pool "default" is not allowed`},
		{&api.NodePool{Name: "all"}, `modifying node pool "all" is not allowed`},
		{&api.NodePool{Name: "bad name"}, "invalid node pool \"bad name\": 1 error occurred:\n\t* invalid name \"bad name\", must match regex ^[a-zA-Z0-9-_]{1,128}$"},
		{&api.NodePool{Name: "bad name", Description: strings.Repeat("d", 257)},
			"invalid node pool \"bad name\": 2 errors occurred:\n\t* invalid name \"bad name\", must match regex ^[a-zA-Z0-9-_]{1,128}$\n\t* description longer than 256"},
		{&api.NodePool{Name: "x", Description: strings.Repeat("d", 257)}, "invalid node pool \"x\": 1 error occurred:\n\t* description longer than 256"},
		{&api.NodePool{Name: "x", SchedulerConfiguration: &api.NodePoolSchedulerConfiguration{SchedulerAlgorithm: "random"}},
			"invalid node pool \"x\": 1 error occurred:\n\t* invalid scheduler algorithm \"random\": must be binpack or spread"},
	} {
		_, err := pools.Register(bad.pool, nil)
		expectAPIError(t, err, 400, bad.msg)
	}
	resp := doNomad(t, ts, mgmt, "PUT", "/v1/node/pool/batch", `{"Name":"other"}`)
	if resp.Status != 400 || resp.Body != "Node pool name does not match request path" {
		t.Errorf("name mismatch: %s", resp)
	}

	// The pools' nodes.
	for pool, want := range map[string]int{"gpu": 2, "default": 1, "all": 3, "batch": 0, "nope": 0} {
		nodes, _, err := pools.ListNodes(pool, nil)
		if err != nil || len(nodes) != want {
			t.Errorf("ListNodes(%s): %d nodes (%v), want %d", pool, len(nodes), err, want)
		}
		for _, n := range nodes {
			if pool != "all" && n.NodePool != pool {
				t.Errorf("ListNodes(%s) lists %s of pool %s", pool, n.Name, n.NodePool)
			}
		}
	}
	_, _, err = pools.ListNodes("gpu", &api.QueryOptions{Prefix: "ab"})
	expectAPIError(t, err, 400, "prefix argument not allowed")

	// A job in the gpu pool is placed on its nodes only.
	job := nomadJob("train", 2)
	job.NodePool = new("gpu")
	job.Update = nil
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatal(err)
	}
	gpuNodes, _, _ := pools.ListNodes("gpu", nil)
	inGPU := map[string]bool{}
	for _, n := range gpuNodes {
		inGPU[n.ID] = true
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		allocs, _, err := c.Jobs().Allocations("train", false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(allocs) == 2 {
			for _, a := range allocs {
				if !inGPU[a.NodeID] {
					t.Errorf("allocation %s placed on %s, outside the gpu pool", a.Name, a.NodeID)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("train has %d allocations", len(allocs))
		}
		time.Sleep(50 * time.Millisecond)
	}
	stored, _, err := c.Jobs().Info("train", nil)
	if err != nil || stored.NodePool == nil || *stored.NodePool != "gpu" {
		t.Errorf("job's NodePool: %v %v", stored.NodePool, err)
	}
	if defJob, _, err := c.Jobs().Register(nomadJob("plain", 1), nil); err != nil || defJob == nil {
		t.Fatal(err)
	}
	if j, _, _ := c.Jobs().Info("plain", nil); j.NodePool == nil || *j.NodePool != "default" {
		t.Errorf("a job that names no pool is in %v", j.NodePool)
	}
	jobs, _, err := pools.ListJobs("gpu", nil)
	if err != nil || len(jobs) != 1 || jobs[0].ID != "train" {
		t.Errorf("ListJobs(gpu): %+v %v", jobs, err)
	}
	if jobs, _, err := pools.ListJobs("default", nil); err != nil || len(jobs) != 1 || jobs[0].ID != "plain" {
		t.Errorf("ListJobs(default): %+v %v", jobs, err)
	}
	missing := nomadJob("lost", 1)
	missing.NodePool = new("nope")
	_, _, err = c.Jobs().Register(missing, nil)
	expectAPIError(t, err, 400, `job "lost" is in nonexistent node pool "nope"`)

	// Delete: refused while in use (Nomad 1.6's RPC lists jobs, then
	// nodes), then unknown or built in (its state store); then a pool
	// nothing uses.
	for name, want := range map[string]struct {
		status int
		msg    string
	}{
		"gpu":     {409, "2 errors occurred:\n\t* node pool \"gpu\" has non-terminal jobs in regions: [global]\n\t* node pool \"gpu\" has nodes in regions: [global]"},
		"default": {409, "2 errors occurred:\n\t* node pool \"default\" has non-terminal jobs in regions: [global]\n\t* node pool \"default\" has nodes in regions: [global]"},
		"all":     {400, `deleting node pool "all" is not allowed`},
		"nope":    {404, `node pool nope not found`},
	} {
		_, err := pools.Delete(name, nil)
		expectAPIError(t, err, want.status, want.msg)
	}
	if _, _, err := c.Jobs().Deregister("train", true, nil); err != nil {
		t.Fatal(err)
	}
	_, err = pools.Delete("gpu", nil)
	expectAPIError(t, err, 409, "1 error occurred:\n\t* node pool \"gpu\" has nodes in regions: [global]")
	if _, err := pools.Delete("batch", nil); err != nil {
		t.Fatal(err)
	}
	list, _, _ = pools.List(nil)
	if got := poolNames(list); strings.Join(got, ",") != "all,default,gpu" {
		t.Errorf("after delete: %v", got)
	}

	// ACL: reads need node:read, writes operator:write.
	resp = doNomad(t, ts, mgmt, "PUT", "/v1/acl/policy", `{"Name":"node-reader","Rules":"node = \"read\""}`)
	if resp.Status != 200 {
		t.Fatal(resp)
	}
	const reader = "0e9b8c7d-6a5f-4e3d-8c2b-1a0f9e8d7c6b"
	if resp := doNomad(t, ts, mgmt, "PUT", "/v1/acl/token", `{"SecretID":"`+reader+`","Policies":[{"Name":"node-reader"}]}`); resp.Status != 200 {
		t.Fatal(resp)
	}
	rc := nomadClient(t, ts, reader)
	if got, _, err := rc.NodePools().List(nil); err != nil || len(got) != 3 {
		t.Errorf("node:read List: %v %v", poolNames(got), err)
	}
	_, err = rc.NodePools().Register(&api.NodePool{Name: "mine"}, nil)
	expectAPIError(t, err, 403, "Permission denied")
	_, err = rc.NodePools().Delete("gpu", nil)
	expectAPIError(t, err, 403, "Permission denied")
	_, _, err = nomadClient(t, ts, "").NodePools().List(nil)
	expectAPIError(t, err, 403, "Permission denied")
}

// TestNodePoolRegistration: a node cannot register in "all"; a node in a
// new pool creates it.
func TestNodePoolRegistration(t *testing.T) {
	ts := servertest.Start(t)
	resp := ts.Do(t, "PUT", "/v1/client/register", `{"ID":"8b1c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d","Name":"n1","Datacenter":"dc1","NodePool":"all"}`, "X-Ctlplane-Node-Secret", "9c2d4e5f-6071-4b8c-9d0e-1f2a3b4c5d6e")
	if resp.Status != http.StatusBadRequest || resp.Body != `node is not allowed to register in node pool "all"` {
		t.Errorf("register in all: %s", resp)
	}
}

// TestNodePoolJobPlan: planning a job in a pool that does not exist is
// refused as registering it would be.
func TestNodePoolJobPlan(t *testing.T) {
	ts := servertest.Start(t)
	c := nomadClient(t, ts, "")
	job := nomadJob("lost", 1)
	job.NodePool = new("nope")
	_, _, err := c.Jobs().Plan(job, false, nil)
	expectAPIError(t, err, 400, `job "lost" is in nonexistent node pool "nope"`)
	job.NodePool = new("all")
	if _, _, err := c.Jobs().Plan(job, false, nil); err != nil {
		t.Errorf("plan in all: %v", err)
	}
}
