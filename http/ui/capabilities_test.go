package ui_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/ctlplane/ctlplane/server/servertest"
)

type capsOut struct {
	ACLEnabled, Management         bool
	AccessorID, Description        string
	ACL, Node, Operator, Namespace string
	Capabilities                   []string
}

// GET /v1/ui/capabilities: what the token may do, as the authorizer says.
func TestUICapabilities(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(rootToken))
	root := []string{"X-Service-Token", rootToken}
	r := ts.Do(t, http.MethodPut, "/v1/acl/policy", `{"Name":"ro","Rules":"namespace \"default\" { policy = \"read\" }\nnode = \"read\"\nacl = \"read\""}`, root...)
	if r.Status != http.StatusOK {
		t.Fatalf("policy: %d %s", r.Status, r.Body)
	}
	r = ts.Do(t, http.MethodPut, "/v1/acl/token", `{"Description":"ro","Policies":[{"Name":"ro"}]}`, root...)
	var tok struct{ AccessorID, SecretID string }
	if err := json.Unmarshal([]byte(r.Body), &tok); err != nil || r.Status != http.StatusOK {
		t.Fatalf("token: %d %s", r.Status, r.Body)
	}
	get := func(query string, hdr ...string) (int, capsOut, string) {
		t.Helper()
		r := ts.Do(t, http.MethodGet, "/v1/ui/capabilities"+query, "", hdr...)
		var out capsOut
		if r.Status == http.StatusOK {
			r.JSON(t, &out)
		}
		return r.Status, out, r.Body
	}
	if s, c, b := get("", root...); s != http.StatusOK || !c.Management || c.ACL != "write" || c.Node != "write" || len(c.Capabilities) != 7 || !c.ACLEnabled {
		t.Errorf("root: %d %+v %s", s, c, b)
	}
	s, c, b := get("", "X-Service-Token", tok.SecretID)
	want := capsOut{ACLEnabled: true, AccessorID: tok.AccessorID, Description: "ro", ACL: "read", Node: "read", Namespace: "default",
		Capabilities: []string{"list-jobs", "read-job"}} // Nomad's read policy: no logs
	if s != http.StatusOK || !reflect.DeepEqual(c, want) {
		t.Errorf("read-only: %d %+v %s, want %+v", s, c, b, want)
	}
	if s, c, b := get("?namespace=prod", "X-Service-Token", tok.SecretID); s != http.StatusOK || c.Namespace != "prod" || len(c.Capabilities) != 0 {
		t.Errorf("read-only in prod: %d %+v %s", s, c, b)
	}
	if s, c, b := get(""); s != http.StatusOK || c.ACL != "" || c.Node != "" || len(c.Capabilities) != 0 || !c.ACLEnabled {
		t.Errorf("anonymous: %d %+v %s", s, c, b)
	}
	if s, _, b := get("", "X-Service-Token", "00000000-0000-0000-0000-000000000000"); s != http.StatusForbidden || b != "ACL not found" {
		t.Errorf("unknown token: %d %q", s, b)
	}
	if s, _, b := get("?namespace=a/b", root...); s != http.StatusBadRequest || b != `Invalid namespace "a/b": a namespace name is 1 to 64 letters, digits, '-' or '_'` {
		t.Errorf("bad namespace: %d %q", s, b)
	}
}
