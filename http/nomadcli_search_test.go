package http_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/nomad/api"
	"github.com/hashicorp/nomad/api/contexts"
)

// TestSearchNomadClient: Search().PrefixSearch as `nomad status PREFIX`
// and the CLI's completions call it: each context found by prefix, "all"
// answering every context, 20 matches at most with the truncation flag,
// namespaces and the token's permissions respected.
func TestSearchNomadClient(t *testing.T) {
	const mgmt = "3b9e1c7d-2f4a-4b6c-8d0e-5f1a2b3c4d5e"
	ts := startJobs(t, servertest.ACL(mgmt))
	s := &acxServer{TestServer: ts, mgmt: mgmt}
	s.waitACLReady(t)
	c := nomadClient(t, ts, mgmt)
	mkNamespace(t, ts, "prod", "X-Nomad-Token", mgmt)
	web := nomadJob("web", 1)
	reg, _, err := c.Jobs().Register(web, nil)
	if err != nil {
		t.Fatal(err)
	}
	app := nomadJob("webapp", 1)
	app.Namespace = new("prod")
	if _, _, err := c.Jobs().Register(app, nil); err != nil {
		t.Fatal(err)
	}
	nodeID := cliNode(t, ts, "n1")
	_, stored, err := ts.Server.State().Job(nil, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	allocs, depID := ntPlace(t, ts, stored, nodeID, "n1", 1, time.Now())

	search := func(c *api.Client, prefix string, ctx contexts.Context, ns string) *api.SearchResponse {
		t.Helper()
		resp, qm, err := c.Search().PrefixSearch(prefix, ctx, &api.QueryOptions{Namespace: ns})
		if err != nil {
			t.Fatalf("PrefixSearch(%q, %s, %q): %v", prefix, ctx, ns, err)
		}
		if qm.LastIndex == 0 {
			t.Errorf("PrefixSearch(%q, %s): no index", prefix, ctx)
		}
		return resp
	}
	matches := func(r *api.SearchResponse, ctx contexts.Context) string { return strings.Join(r.Matches[ctx], ",") }

	if r := search(c, "we", contexts.Jobs, ""); matches(r, contexts.Jobs) != "web" || len(r.Matches) != 1 || r.Truncations[contexts.Jobs] {
		t.Errorf("jobs in default: %+v", r)
	}
	if r := search(c, "we", contexts.Jobs, "*"); matches(r, contexts.Jobs) != "web,webapp" {
		t.Errorf("jobs in every namespace: %+v", r)
	}
	for _, tc := range []struct {
		ctx contexts.Context
		id  string
	}{{contexts.Allocs, allocs[0].ID}, {contexts.Evals, reg.EvalID}, {contexts.Nodes, nodeID}, {contexts.Deployments, depID}} {
		r := search(c, tc.id[:8], contexts.All, "")
		if matches(r, tc.ctx) != tc.id {
			t.Errorf("all, prefix of a %s: %+v", tc.ctx, r.Matches)
		}
		for _, other := range []contexts.Context{contexts.Allocs, contexts.Deployments, contexts.Evals, contexts.Jobs, contexts.Nodes, contexts.Namespaces} {
			if got, ok := r.Matches[other]; !ok || (other != tc.ctx && len(got) != 0) {
				t.Errorf("all, prefix of a %s: %s has %v (present %v)", tc.ctx, other, got, ok)
			}
		}
	}
	if r := search(c, "pr", contexts.Namespaces, ""); matches(r, contexts.Namespaces) != "prod" {
		t.Errorf("namespaces: %+v", r)
	}

	// Truncation at 20.
	for i := range 25 {
		if _, _, err := c.Jobs().Register(nomadJob(fmt.Sprintf("t%02d", i), 1), nil); err != nil {
			t.Fatal(err)
		}
	}
	if r := search(c, "t", contexts.Jobs, ""); len(r.Matches[contexts.Jobs]) != 20 || !r.Truncations[contexts.Jobs] || r.Matches[contexts.Jobs][0] != "t00" {
		t.Errorf("truncated: %+v", r)
	}

	// A prod reader finds prod's job, not default's, and no nodes.
	reader := nomadClient(t, ts, s.tokenWithRules(t, "prod-reader", `namespace "prod" { policy = "read" }`, "").SecretID)
	r := search(reader, "we", contexts.All, "*")
	if matches(r, contexts.Jobs) != "webapp" || matches(r, contexts.Namespaces) != "" {
		t.Errorf("reader, all: %+v", r)
	}
	if _, ok := r.Matches[contexts.Nodes]; ok {
		t.Errorf("reader sees the nodes context: %+v", r)
	}
	if _, _, err := reader.Search().PrefixSearch("", contexts.Nodes, nil); err == nil || err.Error() != "Unexpected response code: 403 (Permission denied)" {
		t.Errorf("reader, nodes: %v", err)
	}
	if _, _, err := reader.Search().PrefixSearch("we", contexts.Jobs, nil); err == nil || err.Error() != "Unexpected response code: 403 (Permission denied)" {
		t.Errorf("reader, jobs in default: %v", err)
	}
	if _, _, err := c.Search().PrefixSearch("x", "bogus", nil); err == nil || !strings.Contains(err.Error(), `400 (context must be one of [allocs jobs nodes node_pools evals deployment plugins volumes scaling_policy vars namespaces] or 'all' for all contexts; got "bogus")`) {
		t.Errorf("bad context: %v", err)
	}
}
