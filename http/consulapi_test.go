package http_test

// The official Consul Go client, unmodified, against a real server: the
// compatibility promise of design §2 ("the project's own tests use those
// clients as real clients").

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/consul/api"
)

var consulUUIDRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// newConsulAPIClient returns a stock client for ts. The CONSUL_* environment is
// cleared so that a developer's settings cannot leak into the test.
func newConsulAPIClient(t *testing.T, ts *servertest.TestServer) *api.Client {
	t.Helper()
	for _, k := range []string{
		api.HTTPAddrEnvName, api.HTTPTokenEnvName, api.HTTPTokenFileEnvName, api.HTTPAuthEnvName,
		api.HTTPSSLEnvName, api.HTTPNamespaceEnvName, api.HTTPPartitionEnvName, "CONSUL_DATACENTER",
	} {
		t.Setenv(k, "")
	}
	c, err := api.NewClient(&api.Config{Address: strings.TrimPrefix(ts.URL, "http://")})
	if err != nil {
		t.Fatalf("api.NewClient: %v", err)
	}
	return c
}

// consulServiceIndex is the X-Service-Index of a raw GET.
func consulServiceIndex(t *testing.T, ts *servertest.TestServer, path string) uint64 {
	t.Helper()
	resp := ts.Do(t, "GET", path, "")
	if resp.Status != 200 {
		t.Fatalf("GET %s: %s", path, resp)
	}
	idx, err := strconv.ParseUint(resp.Header.Get("X-Service-Index"), 10, 64)
	if err != nil {
		t.Fatalf("GET %s: X-Service-Index %q: %v", path, resp.Header.Get("X-Service-Index"), err)
	}
	return idx
}

func TestConsulAPIBindingRuleLifecycle(t *testing.T) {
	ts := servertest.Start(t)
	acl := newConsulAPIClient(t, ts).ACL()

	in := &api.ACLBindingRule{
		Description: "k8s services",
		AuthMethod:  "minikube",
		Selector:    "serviceaccount.namespace==default",
		BindType:    api.BindingRuleBindTypeService,
		BindName:    "k8s-${serviceaccount.name}",
	}
	created, wm, err := acl.BindingRuleCreate(in, nil)
	if err != nil {
		t.Fatalf("BindingRuleCreate: %v", err)
	}
	if wm == nil {
		t.Fatalf("BindingRuleCreate returned no WriteMeta")
	}
	if !consulUUIDRE.MatchString(created.ID) {
		t.Errorf("ID %q is not a lowercase v4 UUID", created.ID)
	}
	if created.Description != in.Description || created.AuthMethod != in.AuthMethod || created.Selector != in.Selector ||
		created.BindType != in.BindType || created.BindName != in.BindName || created.BindVars != nil ||
		created.Namespace != "default" || created.Partition != "" {
		t.Errorf("created %+v from %+v", created, in)
	}
	if created.CreateIndex == 0 || created.ModifyIndex != created.CreateIndex {
		t.Errorf("created indexes %d/%d, want equal and non-zero", created.CreateIndex, created.ModifyIndex)
	}

	// Read: the same rule, with query metadata that matches our headers.
	got, qm, err := acl.BindingRuleRead(created.ID, nil)
	if err != nil {
		t.Fatalf("BindingRuleRead: %v", err)
	}
	if got == nil || *got != *created {
		t.Errorf("read %+v, want %+v", got, created)
	}
	if want := consulServiceIndex(t, ts, "/v1/acl/binding-rule/"+created.ID); qm.LastIndex != want || qm.LastIndex != created.ModifyIndex {
		t.Errorf("read LastIndex %d, want X-Service-Index %d = ModifyIndex %d", qm.LastIndex, want, created.ModifyIndex)
	}
	if !qm.KnownLeader {
		t.Errorf("read KnownLeader false, want true")
	}
	if qm.LastContact != 0 {
		t.Errorf("read LastContact %v on the leader, want 0", qm.LastContact)
	}

	// Consistency modes pass through the client's own parameters.
	for _, q := range []*api.QueryOptions{{AllowStale: true}, {RequireConsistent: true}} {
		if got, _, err := acl.BindingRuleRead(created.ID, q); err != nil || got == nil || *got != *created {
			t.Errorf("read with %+v: %+v, %v", q, got, err)
		}
	}

	// Update: the client sends the whole object back, indexes included.
	upd := *got
	upd.Description = "now a role"
	upd.Selector = ""
	upd.BindType = api.BindingRuleBindTypeRole
	upd.BindName = "Role-${serviceaccount.name}"
	updated, _, err := acl.BindingRuleUpdate(&upd, nil)
	if err != nil {
		t.Fatalf("BindingRuleUpdate: %v", err)
	}
	want := upd
	want.ModifyIndex = updated.ModifyIndex
	if *updated != want {
		t.Errorf("updated %+v, want %+v", updated, want)
	}
	if updated.CreateIndex != created.CreateIndex || updated.ModifyIndex <= created.ModifyIndex {
		t.Errorf("update indexes %d/%d after %d/%d", updated.CreateIndex, updated.ModifyIndex, created.CreateIndex, created.ModifyIndex)
	}
	if got, _, err := acl.BindingRuleRead(created.ID, nil); err != nil || got == nil || *got != *updated {
		t.Errorf("read after update: %+v, %v; want %+v", got, err, updated)
	}

	// Update with AuthMethod left empty keeps the stored one.
	noMethod := *updated
	noMethod.AuthMethod = ""
	noMethod.Description = "no method sent"
	kept, _, err := acl.BindingRuleUpdate(&noMethod, nil)
	if err != nil {
		t.Fatalf("BindingRuleUpdate without AuthMethod: %v", err)
	}
	if kept.AuthMethod != "minikube" || kept.Description != "no method sent" || kept.ModifyIndex <= updated.ModifyIndex {
		t.Errorf("update without AuthMethod answered %+v", kept)
	}

	// AuthMethod is immutable.
	other := *kept
	other.AuthMethod = "other-method"
	if r, _, err := acl.BindingRuleUpdate(&other, nil); err == nil {
		t.Errorf("update changing AuthMethod succeeded: %+v", r)
	} else if !strings.Contains(err.Error(), "Unexpected response code: 400 (the AuthMethod field of an Binding Rule is immutable)") {
		t.Errorf("update changing AuthMethod: %v", err)
	}
	if got, _, _ := acl.BindingRuleRead(created.ID, nil); got == nil || *got != *kept {
		t.Errorf("a refused update changed the rule: %+v, want %+v", got, kept)
	}

	// Validation errors arrive as the client's StatusError with our text.
	bad := &api.ACLBindingRule{AuthMethod: "minikube", BindType: "bogus", BindName: "x"}
	if _, _, err := acl.BindingRuleCreate(bad, nil); err == nil || !strings.Contains(err.Error(), `Unexpected response code: 400 (Invalid Binding Rule: unknown BindType "bogus")`) {
		t.Errorf("create with a bad BindType: %v", err)
	}
	// The client's own refusals still happen before any request.
	if _, _, err := acl.BindingRuleCreate(&api.ACLBindingRule{ID: created.ID}, nil); err == nil || !strings.Contains(err.Error(), "Cannot specify an ID in Binding Rule Creation") {
		t.Errorf("create with an ID: %v", err)
	}

	// Update of a rule that does not exist.
	ghost := *kept
	ghost.ID = "00000000-0000-4000-8000-000000000000"
	if _, _, err := acl.BindingRuleUpdate(&ghost, nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 404 (cannot find binding rule 00000000-0000-4000-8000-000000000000)") {
		t.Errorf("update of a missing rule: %v", err)
	}

	// Delete, then the rule is gone; deleting again is a 404 error.
	if _, err := acl.BindingRuleDelete(created.ID, nil); err != nil {
		t.Fatalf("BindingRuleDelete: %v", err)
	}
	gone, qm, err := acl.BindingRuleRead(created.ID, nil)
	if err != nil || gone != nil || qm == nil {
		t.Fatalf("read after delete: %+v, %+v, %v; want nil, meta, nil", gone, qm, err)
	}
	if qm.LastIndex <= kept.ModifyIndex || !qm.KnownLeader {
		t.Errorf("read after delete: LastIndex %d (want above %d), KnownLeader %v", qm.LastIndex, kept.ModifyIndex, qm.KnownLeader)
	}
	if _, err := acl.BindingRuleDelete(created.ID, nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 404 (Cannot find binding rule to delete)") {
		t.Errorf("second delete: %v", err)
	}
}

func TestConsulAPIBindingRuleReadMissing(t *testing.T) {
	ts := servertest.Start(t)
	acl := newConsulAPIClient(t, ts).ACL()

	// On an empty table the index is 1, never 0.
	got, qm, err := acl.BindingRuleRead("5e2fd2ab-3d4a-4b2b-9c48-3a8b2c1f0e77", nil)
	if err != nil || got != nil || qm == nil {
		t.Fatalf("read of a missing rule: %+v, %+v, %v; want nil, meta, nil", got, qm, err)
	}
	if qm.LastIndex != 1 || !qm.KnownLeader {
		t.Errorf("read of a missing rule: LastIndex %d (want 1), KnownLeader %v", qm.LastIndex, qm.KnownLeader)
	}
	rules, qm, err := acl.BindingRuleList("", nil)
	if err != nil {
		t.Fatalf("BindingRuleList: %v", err)
	}
	if rules == nil || len(rules) != 0 {
		t.Errorf("empty list decoded as %#v, want an empty non-nil slice", rules)
	}
	if qm.LastIndex != 1 {
		t.Errorf("empty list LastIndex %d, want 1", qm.LastIndex)
	}
}

func TestConsulAPIBindingRuleList(t *testing.T) {
	ts := servertest.Start(t)
	acl := newConsulAPIClient(t, ts).ACL()

	byMethod := map[string][]*api.ACLBindingRule{}
	var all []*api.ACLBindingRule
	for i, method := range []string{"minikube", "jwt", "minikube", "oidc", "minikube", "jwt"} {
		r := &api.ACLBindingRule{
			AuthMethod: method,
			BindType:   api.BindingRuleBindTypeNode,
			BindName:   "node-" + strconv.Itoa(i),
		}
		if i%2 == 0 {
			r.Selector = "value.team==" + strconv.Itoa(i)
			r.Description = "rule " + strconv.Itoa(i)
		}
		out, _, err := acl.BindingRuleCreate(r, nil)
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		byMethod[method] = append(byMethod[method], out)
		all = append(all, out)
	}
	sortByID := func(rs []*api.ACLBindingRule) {
		sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
	}
	check := func(method string, want []*api.ACLBindingRule) {
		t.Helper()
		got, qm, err := acl.BindingRuleList(method, nil)
		if err != nil {
			t.Fatalf("BindingRuleList(%q): %v", method, err)
		}
		sortByID(want)
		if len(got) != len(want) {
			t.Fatalf("BindingRuleList(%q) has %d rules, want %d", method, len(got), len(want))
		}
		for i := range got {
			if *got[i] != *want[i] {
				t.Errorf("BindingRuleList(%q)[%d] = %+v, want %+v", method, i, got[i], want[i])
			}
		}
		path := "/v1/acl/binding-rules"
		if method != "" {
			path += "?authmethod=" + method
		}
		if idx := consulServiceIndex(t, ts, path); qm.LastIndex != idx || qm.LastIndex != all[len(all)-1].ModifyIndex {
			t.Errorf("BindingRuleList(%q) LastIndex %d, want X-Service-Index %d = last write %d", method, qm.LastIndex, idx, all[len(all)-1].ModifyIndex)
		}
		if !qm.KnownLeader {
			t.Errorf("BindingRuleList(%q) KnownLeader false", method)
		}
	}
	check("", append([]*api.ACLBindingRule(nil), all...))
	check("minikube", byMethod["minikube"])
	check("jwt", byMethod["jwt"])
	check("oidc", byMethod["oidc"])
	check("no-such-method", nil)
}

func TestConsulAPIBindingRuleBlockingList(t *testing.T) {
	ts := servertest.Start(t)
	acl := newConsulAPIClient(t, ts).ACL()

	first, _, err := acl.BindingRuleCreate(&api.ACLBindingRule{AuthMethod: "minikube", BindType: "service", BindName: "first"}, nil)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	_, meta, err := acl.BindingRuleList("", nil)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if meta.LastIndex != first.ModifyIndex {
		t.Fatalf("list LastIndex %d, want %d", meta.LastIndex, first.ModifyIndex)
	}

	type result struct {
		rules []*api.ACLBindingRule
		meta  *api.QueryMeta
		err   error
	}
	done := make(chan result, 1)
	go func() {
		rules, qm, err := acl.BindingRuleList("", &api.QueryOptions{WaitIndex: meta.LastIndex, WaitTime: 30 * time.Second})
		done <- result{rules, qm, err}
	}()
	// Nothing changed yet, so the query must still be waiting.
	select {
	case r := <-done:
		t.Fatalf("blocking list returned before any write: %+v %+v %v", r.rules, r.meta, r.err)
	case <-time.After(300 * time.Millisecond):
	}

	second, _, err := acl.BindingRuleCreate(&api.ACLBindingRule{AuthMethod: "minikube", BindType: "service", BindName: "second"}, nil)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("blocking list did not return after a write")
	}
	if r.err != nil {
		t.Fatalf("blocking list: %v", r.err)
	}
	if r.meta.LastIndex <= meta.LastIndex || r.meta.LastIndex != second.ModifyIndex {
		t.Errorf("blocking list LastIndex %d, want %d (above %d)", r.meta.LastIndex, second.ModifyIndex, meta.LastIndex)
	}
	if len(r.rules) != 2 {
		t.Errorf("blocking list has %d rules, want 2", len(r.rules))
	}

	// A blocking read of one rule wakes on its update, with the new version.
	go func() {
		rule, qm, err := acl.BindingRuleRead(first.ID, &api.QueryOptions{WaitIndex: r.meta.LastIndex, WaitTime: 30 * time.Second})
		var rules []*api.ACLBindingRule
		if rule != nil {
			rules = append(rules, rule)
		}
		done <- result{rules, qm, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("blocking read returned before any write: %+v %+v %v", r.rules, r.meta, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	upd := *first
	upd.Description = "woken"
	updated, _, err := acl.BindingRuleUpdate(&upd, nil)
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("blocking read did not return after an update")
	}
	if r.err != nil || len(r.rules) != 1 || *r.rules[0] != *updated || r.meta.LastIndex != updated.ModifyIndex {
		t.Errorf("blocking read: %+v %+v %v, want %+v at %d", r.rules, r.meta, r.err, updated, updated.ModifyIndex)
	}

	// A short wait with nothing new answers the current data at the old index.
	rules, qm, err := acl.BindingRuleList("", &api.QueryOptions{WaitIndex: updated.ModifyIndex, WaitTime: 50 * time.Millisecond})
	if err != nil || len(rules) != 2 || qm.LastIndex != updated.ModifyIndex {
		t.Errorf("timed-out blocking list: %d rules, %+v, %v; want 2 rules at %d", len(rules), qm, err, updated.ModifyIndex)
	}
}

func TestConsulAPIBindingRuleNamespaces(t *testing.T) {
	ts := servertest.Start(t)
	acl := newConsulAPIClient(t, ts).ACL()

	def, _, err := acl.BindingRuleCreate(&api.ACLBindingRule{AuthMethod: "minikube", BindType: "service", BindName: "in-default"}, nil)
	if err != nil {
		t.Fatalf("create in default: %v", err)
	}
	// Namespace from WriteOptions: the client sends ?ns=team-a.
	teamA, _, err := acl.BindingRuleCreate(&api.ACLBindingRule{AuthMethod: "minikube", BindType: "service", BindName: "in-team-a"}, &api.WriteOptions{Namespace: "team-a"})
	if err != nil {
		t.Fatalf("create with WriteOptions.Namespace: %v", err)
	}
	if teamA.Namespace != "team-a" {
		t.Errorf("created in namespace %q, want team-a", teamA.Namespace)
	}
	// Namespace in the body (the client's Namespace field).
	teamB, _, err := acl.BindingRuleCreate(&api.ACLBindingRule{AuthMethod: "jwt", BindType: "role", BindName: "in-team-b", Namespace: "team-b"}, nil)
	if err != nil {
		t.Fatalf("create with Namespace in the body: %v", err)
	}
	if teamB.Namespace != "team-b" {
		t.Errorf("created in namespace %q, want team-b", teamB.Namespace)
	}

	// Read finds a rule only in its own namespace.
	if got, _, err := acl.BindingRuleRead(teamA.ID, nil); err != nil || got != nil {
		t.Errorf("read of team-a's rule in default: %+v, %v; want not found", got, err)
	}
	if got, _, err := acl.BindingRuleRead(teamA.ID, &api.QueryOptions{Namespace: "team-b"}); err != nil || got != nil {
		t.Errorf("read of team-a's rule in team-b: %+v, %v; want not found", got, err)
	}
	if got, _, err := acl.BindingRuleRead(teamA.ID, &api.QueryOptions{Namespace: "team-a"}); err != nil || got == nil || *got != *teamA {
		t.Errorf("read of team-a's rule in team-a: %+v, %v; want %+v", got, err, teamA)
	}

	// List per namespace, and * for all of them.
	ids := func(q *api.QueryOptions) []string {
		t.Helper()
		rules, _, err := acl.BindingRuleList("", q)
		if err != nil {
			t.Fatalf("list %+v: %v", q, err)
		}
		var out []string
		for _, r := range rules {
			out = append(out, r.Namespace+"/"+r.BindName)
		}
		sort.Strings(out)
		return out
	}
	for _, tc := range []struct {
		q    *api.QueryOptions
		want string
	}{
		{nil, "default/in-default"},
		{&api.QueryOptions{Namespace: "default"}, "default/in-default"},
		{&api.QueryOptions{Namespace: "team-a"}, "team-a/in-team-a"},
		{&api.QueryOptions{Namespace: "team-b"}, "team-b/in-team-b"},
		{&api.QueryOptions{Namespace: "empty"}, ""},
		{&api.QueryOptions{Namespace: "*"}, "default/in-default team-a/in-team-a team-b/in-team-b"},
	} {
		if got := strings.Join(ids(tc.q), " "); got != tc.want {
			t.Errorf("list in %+v: %q, want %q", tc.q, got, tc.want)
		}
	}

	// Update and delete act in the namespace the options name.
	upd := *teamA
	upd.Namespace = "" // rely on WriteOptions alone
	upd.Description = "updated in team-a"
	if _, _, err := acl.BindingRuleUpdate(&upd, nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 404") {
		t.Errorf("update of team-a's rule in default: %v, want a 404", err)
	}
	updated, _, err := acl.BindingRuleUpdate(&upd, &api.WriteOptions{Namespace: "team-a"})
	if err != nil {
		t.Fatalf("update with WriteOptions.Namespace: %v", err)
	}
	if updated.Namespace != "team-a" || updated.Description != "updated in team-a" || updated.ModifyIndex <= teamA.ModifyIndex {
		t.Errorf("update in team-a answered %+v", updated)
	}
	if _, err := acl.BindingRuleDelete(teamA.ID, nil); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 404 (Cannot find binding rule to delete)") {
		t.Errorf("delete of team-a's rule in default: %v, want a 404", err)
	}
	if _, err := acl.BindingRuleDelete(teamA.ID, &api.WriteOptions{Namespace: "team-a"}); err != nil {
		t.Fatalf("delete with WriteOptions.Namespace: %v", err)
	}
	if got, _, err := acl.BindingRuleRead(teamA.ID, &api.QueryOptions{Namespace: "team-a"}); err != nil || got != nil {
		t.Errorf("read after delete in team-a: %+v, %v", got, err)
	}
	if got, _, err := acl.BindingRuleRead(def.ID, nil); err != nil || got == nil || *got != *def {
		t.Errorf("default's rule after team-a's delete: %+v, %v", got, err)
	}

	// A namespace name the server refuses is the client's 400 error.
	if _, _, err := acl.BindingRuleList("", &api.QueryOptions{Namespace: "bad name!"}); err == nil || !strings.Contains(err.Error(), "Unexpected response code: 400 (Invalid namespace") {
		t.Errorf("list in an invalid namespace: %v", err)
	}
}
