package http_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/hashicorp/nomad/api"
)

// TestNamespacesNomadClient: Namespaces().List/Info/Register/Delete of the
// official client, as `nomad namespace list|status|apply|delete` call them:
// default always there and undeletable, Enterprise fields accepted and not
// kept, a job refused in a namespace that does not exist, a namespace with
// a live job not deleted, reads filtered by the token's namespaces, writes
// for management or operator:write.
func TestNamespacesNomadClient(t *testing.T) {
	const mgmt = "5c0a6a3e-8d2b-4f61-9a57-0c6b9d1e2f30"
	ts := startJobs(t, servertest.ACL(mgmt))
	s := &acxServer{TestServer: ts, mgmt: mgmt}
	s.waitACLReady(t)
	c := nomadClient(t, ts, mgmt)
	nss := c.Namespaces()

	list, qm, err := nss.List(nil)
	if err != nil || len(list) != 1 || list[0].Name != "default" || list[0].Description != "Default shared namespace" || qm.LastIndex == 0 {
		t.Fatalf("List: %v %+v", err, list)
	}
	// A blocked list wakes on the creation.
	done := make(chan []*api.Namespace, 1)
	go func() {
		l, _, err := nss.List(&api.QueryOptions{WaitIndex: qm.LastIndex, WaitTime: 10 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- l
	}()
	time.Sleep(50 * time.Millisecond)
	wm, err := nss.Register(&api.Namespace{Name: "prod", Description: "production", Quota: "q1", Meta: map[string]string{"team": "a"},
		Capabilities: &api.NamespaceCapabilities{EnabledTaskDrivers: []string{"docker"}}}, nil)
	if err != nil || wm.LastIndex == 0 {
		t.Fatalf("Register: %v", err)
	}
	if l := <-done; nsNames(l) != "default,prod" {
		t.Fatalf("blocked List: %s", nsNames(l))
	}
	ns, _, err := nss.Info("prod", nil)
	if err != nil || ns.Description != "production" || ns.Meta["team"] != "a" || ns.Quota != "" || ns.Capabilities != nil ||
		ns.CreateIndex != wm.LastIndex || ns.ModifyIndex != wm.LastIndex {
		t.Fatalf("Info: %v %+v", err, ns)
	}
	wm2, err := nss.Register(&api.Namespace{Name: "prod", Description: "production, v2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ns, _, err = nss.Info("prod", nil); err != nil || ns.Description != "production, v2" || ns.Meta != nil ||
		ns.CreateIndex != wm.LastIndex || ns.ModifyIndex != wm2.LastIndex {
		t.Fatalf("Info after update: %v %+v", err, ns)
	}
	if pl, _, err := nss.PrefixList("pr", nil); err != nil || len(pl) != 1 || pl[0].Name != "prod" {
		t.Fatalf("PrefixList: %v %+v", err, pl)
	}
	if _, _, err := nss.Info("nope", nil); err == nil || err.Error() != "Unexpected response code: 404 (Namespace not found)" {
		t.Fatalf("Info of a missing namespace: %v", err)
	}

	// Jobs: refused in a namespace that does not exist, kept in one that does.
	job := nomadJob("web", 1)
	job.Namespace = new("missing")
	if _, _, err := c.Jobs().Register(job, nil); err == nil || err.Error() != `Unexpected response code: 400 (job "web" is in nonexistent namespace "missing")` {
		t.Fatalf("Register in a missing namespace: %v", err)
	}
	job.Namespace = new("prod")
	if _, _, err := c.Jobs().Register(job, nil); err != nil {
		t.Fatalf("Register in prod: %v", err)
	}
	// Nomad 1.6's texts (the client trims the body's trailing newlines).
	if _, err := nss.Delete("prod", nil); err == nil || err.Error() != "Unexpected response code: 409 (1 error occurred:\n\t* namespace \"prod\" has non-terminal jobs in regions: [global])" {
		t.Fatalf("Delete with a live job: %v", err)
	}
	if _, err := nss.Delete("default", nil); err == nil || err.Error() != "Unexpected response code: 400 (can not delete default namespace)" {
		t.Fatalf("Delete default: %v", err)
	}
	if _, err := nss.Register(&api.Namespace{Name: "bad_name"}, nil); err == nil || err.Error() != "Unexpected response code: 400 (Invalid namespace \"bad_name\": 1 error occurred:\n\t* invalid name \"bad_name\". Must match regex ^[a-zA-Z0-9-]{1,128}$)" {
		t.Fatalf("Register bad name: %v", err)
	}

	// Tokens: a prod reader sees prod only and writes nothing; operator:write writes.
	reader := s.tokenWithRules(t, "prod-reader", `namespace "prod" { policy = "read" }`, "").SecretID
	op := s.tokenWithRules(t, "op", `operator = "write"`, "").SecretID
	rc := nomadClient(t, ts, reader)
	if l, _, err := rc.Namespaces().List(nil); err != nil || len(l) != 1 || l[0].Name != "prod" {
		t.Fatalf("reader List: %v %+v", err, l)
	}
	if _, _, err := rc.Namespaces().Info("default", nil); err == nil || err.Error() != "Unexpected response code: 403 (Permission denied)" {
		t.Fatalf("reader Info default: %v", err)
	}
	if _, err := rc.Namespaces().Register(&api.Namespace{Name: "dev"}, nil); err == nil || err.Error() != "Unexpected response code: 403 (Permission denied)" {
		t.Fatalf("reader Register: %v", err)
	}
	if _, err := nomadClient(t, ts, op).Namespaces().Register(&api.Namespace{Name: "dev"}, nil); err != nil {
		t.Fatalf("operator Register: %v", err)
	}

	// Once its job is stopped (dead), prod can go.
	if _, _, err := c.Jobs().Deregister("web", false, &api.WriteOptions{Namespace: "prod"}); err != nil {
		t.Fatal(err)
	}
	if _, err := nss.Delete("prod", nil); err != nil {
		t.Fatalf("Delete prod: %v", err)
	}
	if _, err := nss.Delete("prod", nil); err == nil || err.Error() != "Unexpected response code: 404 (namespace not found)" {
		t.Fatalf("Delete again: %v", err)
	}
	if l, _, err := nss.List(nil); err != nil || nsNames(l) != "default,dev" {
		t.Fatalf("List at the end: %v %s", err, nsNames(l))
	}
}

// nsNames lists namespace names, sorted (the client sorts by CreateIndex).
func nsNames(l []*api.Namespace) string {
	var names []string
	for _, ns := range l {
		names = append(names, ns.Name)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
