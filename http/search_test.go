package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/nomad/api/contexts"
)

// TestSearchAsNomad: PUT /v1/search and /v1/search/fuzzy answer as Nomad
// 1.6 does, byte for byte: every context of "all" (node_pools included;
// plugins, volumes, scaling policies and variables empty), a prefix that
// cannot start a UUID leaving the UUID contexts out, null for a context
// without matches; fuzzy matches of names with their Scope, best first;
// Nomad's texts for a short term and an unknown context; a context the
// token may not search is 403 when named and left out of "all".
func TestSearchAsNomad(t *testing.T) {
	const mgmt = "4c1d2e3f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
	ts := startJobs(t, servertest.ACL(mgmt))
	s := &acxServer{TestServer: ts, mgmt: mgmt}
	s.waitACLReady(t)
	for _, ns := range []string{"prod", "webteam", "aweb"} {
		mkNamespace(t, ts, ns, "X-Nomad-Token", mgmt)
	}
	reader := s.tokenWithRules(t, "default-reader", `namespace "default" { policy = "read" }`, "").SecretID
	register := func(body string) {
		t.Helper()
		if r := ts.Do(t, "PUT", "/v1/jobs", body, "X-Nomad-Token", mgmt); r.Status != http.StatusOK {
			t.Fatalf("register: %s", r)
		}
	}
	register(`{"Job":{"ID":"web","Name":"web","Datacenters":["dc1"],"TaskGroups":[{"Name":"web","Count":1,` +
		`"Services":[{"Name":"web-http","Provider":"nomad"}],` +
		`"Tasks":[{"Name":"server","Driver":"raw_exec","Config":{"command":"webserver"}}]}]}}`)
	register(`{"Job":{"ID":"db","Name":"database","Namespace":"prod","Datacenters":["dc1"],"TaskGroups":[{"Name":"db","Count":1,` +
		`"Tasks":[{"Name":"postgres","Driver":"raw_exec","Config":{"command":"pg"}}]}]}}`)
	if _, err := fsm.Apply(ts.Server, fsm.NodePoolUpsert, &fsm.NodePoolUpsertRequest{NodePools: []*state.NodePool{{Name: "web-pool"}}}); err != nil {
		t.Fatal(err)
	}
	nodeID := cliNode(t, ts, "web-node")
	_, job, err := ts.Server.State().Job(nil, "default", "web")
	if err != nil || job == nil {
		t.Fatalf("job: %v %v", job, err)
	}
	allocs, _ := ntPlace(t, ts, job, nodeID, "web-node", 1, time.Now())
	allocID := allocs[0].ID

	fuzzyWeb := fmt.Sprintf(`{"Matches":{`+
		`"allocs":[{"ID":"web.web[0]","Scope":["default",%q]}],`+
		`"commands":[{"ID":"webserver","Scope":["default","web","web","server"]}],`+
		`"deployment":[],"evals":[],`+
		`"groups":[{"ID":"web","Scope":["default","web"]}],`+
		`"jobs":[{"ID":"web","Scope":["default","web"]}],`+
		`"namespaces":[{"ID":"webteam"},{"ID":"aweb"}],`+
		`"node_pools":[{"ID":"web-pool","Scope":["web-pool"]}],`+
		`"nodes":[{"ID":"web-node","Scope":[%q]}],`+
		`"scaling_policy":[],`+
		`"services":[{"ID":"web-http","Scope":["default","web","web"]}],`+
		`"volumes":[]},`+
		`"Truncations":{"allocs":false,"deployment":false,"evals":false,"jobs":false,"namespaces":false,"node_pools":false,`+
		`"nodes":false,"plugins":false,"scaling_policy":false,"vars":false,"volumes":false}}`, allocID, nodeID)
	badContext := `context must be one of [allocs jobs nodes node_pools evals deployment plugins volumes scaling_policy vars namespaces] or 'all' for all contexts; got "bogus"`
	for _, c := range []struct {
		name, token, path, body string
		status                  int
		want                    string
	}{
		{"prefix, jobs", mgmt, "/v1/search", `{"Prefix":"we","Context":"jobs"}`, 200,
			`{"Matches":{"jobs":["web"]},"Truncations":{"jobs":false}}`},
		{"prefix, all: UUID contexts left out for a non-hex prefix", mgmt, "/v1/search", `{"Prefix":"we","Context":"all"}`, 200,
			`{"Matches":{"jobs":["web"],"namespaces":["webteam"],"node_pools":["web-pool"],"plugins":null,"scaling_policy":null,"vars":null,"volumes":null},` +
				`"Truncations":{"jobs":false,"namespaces":false,"node_pools":false,"plugins":false,"scaling_policy":false,"vars":false,"volumes":false}}`},
		{"prefix, node by an odd-length prefix", mgmt, "/v1/search", `{"Prefix":"` + nodeID[:7] + `","Context":"nodes"}`, 200,
			`{"Matches":{"nodes":["` + nodeID + `"]},"Truncations":{"nodes":false}}`},
		{"prefix, alloc in its namespace", mgmt, "/v1/search", `{"Prefix":"` + allocID[:8] + `","Context":"allocs"}`, 200,
			`{"Matches":{"allocs":["` + allocID + `"]},"Truncations":{"allocs":false}}`},
		{"prefix, not a UUID prefix", mgmt, "/v1/search", `{"Prefix":"zz","Context":"allocs"}`, 200,
			`{"Matches":{},"Truncations":{}}`},
		{"prefix, no match", mgmt, "/v1/search", `{"Prefix":"zz","Context":"node_pools"}`, 200,
			`{"Matches":{"node_pools":null},"Truncations":{"node_pools":false}}`},
		{"prefix, unknown context", mgmt, "/v1/search", `{"Prefix":"we","Context":"bogus"}`, 400, badContext},
		{"prefix, reader's all", reader, "/v1/search", `{"Prefix":"we","Context":"all"}`, 200,
			`{"Matches":{"jobs":["web"],"namespaces":null,"scaling_policy":null,"vars":null,"volumes":null},` +
				`"Truncations":{"jobs":false,"namespaces":false,"scaling_policy":false,"vars":false,"volumes":false}}`},
		{"prefix, reader's nodes", reader, "/v1/search", `{"Prefix":"we","Context":"nodes"}`, 403, "Permission denied"},
		{"prefix, reader's node pools", reader, "/v1/search", `{"Prefix":"we","Context":"node_pools"}`, 403, "Permission denied"},
		{"prefix, anonymous all", "", "/v1/search", `{"Prefix":"we","Context":"all"}`, 403, "Permission denied"},

		{"fuzzy, all", mgmt, "/v1/search/fuzzy", `{"Text":"WEB","Context":"all"}`, 200, fuzzyWeb},
		{"fuzzy, jobs of every namespace", mgmt, "/v1/search/fuzzy?namespace=*", `{"Text":"data","Context":"jobs"}`, 200,
			`{"Matches":{"jobs":[{"ID":"database","Scope":["prod","db"]}]},"Truncations":{"jobs":false}}`},
		{"fuzzy, reader's jobs of every namespace", reader, "/v1/search/fuzzy?namespace=*", `{"Text":"data","Context":"jobs"}`, 200,
			`{"Matches":{},"Truncations":{"jobs":false}}`},
		{"fuzzy, reader's jobs of prod", reader, "/v1/search/fuzzy?namespace=prod", `{"Text":"data","Context":"jobs"}`, 403, "Permission denied"},
		{"fuzzy, evaluations by ID prefix", mgmt, "/v1/search/fuzzy", `{"Text":"zz","Context":"evals"}`, 200,
			`{"Matches":{"evals":[]},"Truncations":{"evals":false}}`},
		{"fuzzy, a term too short", mgmt, "/v1/search/fuzzy", `{"Text":"w","Context":"all"}`, 400,
			"fuzzy search query must be at least 2 characters, got 1"},
		{"fuzzy, unknown context", mgmt, "/v1/search/fuzzy", `{"Text":"we","Context":"bogus"}`, 400, badContext},
	} {
		r := ts.Do(t, "PUT", c.path, c.body, "X-Nomad-Token", c.token)
		if r.Status != c.status || strings.TrimSpace(r.Body) != c.want {
			t.Errorf("%s: %d %s\nwant %d %s", c.name, r.Status, r.Body, c.status, c.want)
		}
		if c.status == 200 && (r.Header.Get("X-Nomad-Index") == "" || r.Header.Get("X-Nomad-Index") == "0") {
			t.Errorf("%s: X-Nomad-Index %q", c.name, r.Header.Get("X-Nomad-Index"))
		}
	}

	// The unmodified nomad/api client.
	c := nomadClient(t, ts, mgmt)
	resp, _, err := c.Search().FuzzySearch("web", contexts.All, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := resp.Matches[contexts.Commands]; len(m) != 1 || m[0].ID != "webserver" || strings.Join(m[0].Scope, "/") != "default/web/web/server" {
		t.Errorf("FuzzySearch commands: %+v", resp.Matches)
	}
	if m := resp.Matches[contexts.NodePools]; len(m) != 1 || m[0].ID != "web-pool" {
		t.Errorf("FuzzySearch node pools: %+v", resp.Matches)
	}
	pr, _, err := c.Search().PrefixSearch("web", contexts.NodePools, nil)
	if err != nil || len(pr.Matches[contexts.NodePools]) != 1 || pr.Matches[contexts.NodePools][0] != "web-pool" {
		t.Errorf("PrefixSearch node pools: %v %+v", err, pr)
	}
}

// TestFuzzySearchLimits: a fuzzy search scans the first 20 objects of a
// context (Nomad's limit_query) and, as Nomad's, marks the context
// truncated when the 20th matched and more remain; matches are ordered by
// where the term occurs, then length, then name.
func TestFuzzySearchLimits(t *testing.T) {
	ts := startJobs(t)
	for i := range 22 {
		mkNamespace(t, ts, fmt.Sprintf("team-%02d", i))
	}
	mkNamespace(t, ts, "a-team")
	var scanned []string
	scanned = append(scanned, `{"ID":"a-team"}`)
	for i := range 18 { // "a-team", "default", team-00..team-17 are the 20 scanned
		scanned = append(scanned, fmt.Sprintf(`{"ID":"team-%02d"}`, i))
	}
	// team-* match at 0 and sort first; a-team matches at 2.
	ordered := append(scanned[1:len(scanned):len(scanned)], scanned[0])
	for _, c := range []struct{ text, want string }{
		{"team", `{"Matches":{"namespaces":[` + strings.Join(ordered, ",") + `]},"Truncations":{"namespaces":true}}`},
		{"team-0", `{"Matches":{"namespaces":[` + strings.Join(scanned[1:11], ",") + `]},"Truncations":{"namespaces":false}}`},
		{"UL", `{"Matches":{"namespaces":[{"ID":"default"}]},"Truncations":{"namespaces":false}}`},
	} {
		r := ts.Do(t, "PUT", "/v1/search/fuzzy", `{"Text":"`+c.text+`","Context":"namespaces"}`)
		if r.Status != 200 || strings.TrimSpace(r.Body) != c.want {
			t.Errorf("%s: %d %s\nwant %s", c.text, r.Status, r.Body, c.want)
		}
	}
}
