package acl_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// storeFingerprint is every table's row count and index: a refused call
// must leave it as it was.
func storeFingerprint(st *state.Store) string {
	counts := st.Counts()
	names := make([]string, 0, len(counts))
	for name := range counts {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "%s:%d@%d ", name, counts[name], st.TableIndex(name))
	}
	return b.String()
}

func callerWithRules(t *testing.T, accessor, hcl string) acl.Caller {
	t.Helper()
	r, err := acl.Parse(hcl)
	if err != nil {
		t.Fatalf("rules %q: %v", hcl, err)
	}
	return acl.Caller{Authz: acl.NewAuthorizer([]*acl.Rules{r}), AccessorID: accessor}
}

// TestACLServiceChecksItsCaller: the ACL service decides itself, without
// HTTP in front of it. Every write refuses a caller without acl:write (a
// zero Caller fails closed) with a DeniedError naming the permission and
// the accessor, before it touches the store; reads refuse a caller without
// acl:read; token secrets are shown to acl:write only.
func TestACLServiceChecksItsCaller(t *testing.T) {
	env := startSvc(t)
	s := env.svc("dc1")
	ctx := context.Background()
	st := env.ts.Server.State()

	reader := callerWithRules(t, "reader-accessor", `acl = "read"`)
	writer := callerWithRules(t, "writer-accessor", `acl = "write"`)
	tok, err := s.CreateToken(writer, acl.TokenRequest{Description: "made by the writer"})
	if err != nil {
		t.Fatalf("acl:write creates a token: %v", err)
	}

	writes := map[string]func(acl.Caller) error{
		"write binding rule": func(c acl.Caller) error {
			_, err := s.WriteBindingRule(c, "", acl.BindingRuleRequest{AuthMethod: "m", BindType: "service", BindName: "x"})
			return err
		},
		"delete binding rule": func(c acl.Caller) error {
			return s.DeleteBindingRule(c, "00000000-0000-0000-0000-000000000001", "default")
		},
		"write auth method": func(c acl.Caller) error {
			_, err := s.WriteAuthMethod(c, false, acl.AuthMethodRequest{Name: "m", Type: "jwt"})
			return err
		},
		"delete auth method": func(c acl.Caller) error { return s.DeleteAuthMethod(c, "m", "default") },
		"write policy": func(c acl.Caller) error {
			_, err := s.WritePolicy(c, "", acl.PolicyRequest{Name: "p", Rules: `acl = "read"`})
			return err
		},
		"delete policy": func(c acl.Caller) error { return s.DeletePolicy(c, "00000000-0000-0000-0000-000000000001") },
		"write role": func(c acl.Caller) error {
			_, err := s.WriteRole(c, "", acl.RoleRequest{Name: "r"})
			return err
		},
		"delete role": func(c acl.Caller) error { return s.DeleteRole(c, "00000000-0000-0000-0000-000000000001") },
		"create token": func(c acl.Caller) error {
			_, err := s.CreateToken(c, acl.TokenRequest{Description: "t"})
			return err
		},
		"update token": func(c acl.Caller) error {
			_, err := s.UpdateToken(c, tok.AccessorID, acl.TokenRequest{Description: "changed"})
			return err
		},
		"delete token": func(c acl.Caller) error { return s.DeleteToken(c, tok.AccessorID) },
		"explain method": func(c acl.Caller) error {
			_, err := s.ExplainMethod(ctx, c, acl.MethodExplainRequest{AuthMethod: "m", Namespace: "default"})
			return err
		},
	}
	before := storeFingerprint(st)
	for name, call := range writes {
		for _, c := range []acl.Caller{{}, reader} {
			err := call(c)
			var denied *acl.DeniedError
			if !errors.As(err, &denied) || denied.Perm != acl.PermACLWrite || denied.AccessorID != c.AccessorID {
				t.Errorf("%s as %q: got %T %v, want a DeniedError for acl:write", name, c.AccessorID, err, err)
			}
			if !acl.IsPermissionDenied(err) {
				t.Errorf("%s as %q: IsPermissionDenied(%v) is false", name, c.AccessorID, err)
			}
		}
	}
	if _, err := s.Explain(ctx, acl.Caller{}, acl.ExplainRequest{AuthMethod: "m"}); !isDenied(err, acl.PermACLRead) {
		t.Errorf("explain as a zero caller: got %v, want a DeniedError for acl:read", err)
	}
	if _, err := s.Reader(acl.Caller{}); !isDenied(err, acl.PermACLRead) {
		t.Errorf("reader for a zero caller: got %v, want a DeniedError for acl:read", err)
	}
	if after := storeFingerprint(st); after != before {
		t.Errorf("refused calls changed the state:\nbefore %s\n after %s", before, after)
	}

	// Secrets: hidden from acl:read, shown to acl:write.
	for _, tc := range []struct {
		caller     acl.Caller
		wantSecret string
	}{{reader, acl.HiddenSecret}, {writer, tok.SecretID}} {
		rd, err := s.Reader(tc.caller)
		if err != nil {
			t.Fatalf("reader for %q: %v", tc.caller.AccessorID, err)
		}
		_, got, err := rd.On(st).Token(memdb.NewWatchSet(), tok.AccessorID)
		if err != nil || got == nil {
			t.Fatalf("token read as %q: %v %v", tc.caller.AccessorID, got, err)
		}
		if got.SecretID != tc.wantSecret {
			t.Errorf("token read as %q: SecretID %q, want %q", tc.caller.AccessorID, got.SecretID, tc.wantSecret)
		}
	}
	// The writer deletes the token; its own accessor comes from the Caller.
	if err := s.DeleteToken(writer, tok.AccessorID); err != nil {
		t.Fatalf("acl:write deletes a token: %v", err)
	}
	self := acl.Caller{Authz: writer.Authz, AccessorID: tok.AccessorID}
	wantCode(t, s.DeleteToken(self, tok.AccessorID), state.ErrInvalid, "Deletion of the request's authorization token is not permitted")
}

func isDenied(err error, perm string) bool {
	var denied *acl.DeniedError
	return errors.As(err, &denied) && denied.Perm == perm
}

// TestRequireOperatorWrite is the check of the cluster-wide writes
// (namespaces, node pools): operator:write or management, nothing less.
func TestRequireOperatorWrite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		caller acl.Caller
		allow  bool
	}{
		{"zero caller", acl.Caller{}, false},
		{"operator:read", callerWithRules(t, "r", `operator = "read"`), false},
		{"acl:write", callerWithRules(t, "a", `acl = "write"`), false},
		{"namespace write", callerWithRules(t, "n", `namespace "default" { policy = "write" }`), false},
		{"operator:write", callerWithRules(t, "w", `operator = "write"`), true},
		{"management", acl.Internal(), true},
	} {
		err := tc.caller.RequireOperatorWrite()
		if tc.allow && err != nil {
			t.Errorf("%s: refused: %v", tc.name, err)
		}
		if !tc.allow && err != acl.ErrPermissionDenied {
			t.Errorf("%s: got %v, want Permission denied", tc.name, err)
		}
	}
}

// TestRequireManagement: only a management caller; a refusal names the
// permission and the caller's accessor (Consul's deny text is built from them).
func TestRequireManagement(t *testing.T) {
	for _, tc := range []struct {
		name   string
		caller acl.Caller
		allow  bool
	}{
		{"zero caller", acl.Caller{}, false},
		{"operator:write", callerWithRules(t, "w", `operator = "write"`), false},
		{"acl:write", callerWithRules(t, "a", `acl = "write"`), false},
		{"management", acl.Internal(), true},
	} {
		err := tc.caller.RequireManagement()
		if tc.allow && err != nil {
			t.Errorf("%s: refused: %v", tc.name, err)
		}
		if !tc.allow && !isDenied(err, acl.PermManagement) {
			t.Errorf("%s: got %v, want a DeniedError for management", tc.name, err)
		}
	}
}

// TestRequireOperatorReadAndRaftWrite: the operator endpoints' rules refuse
// with a DeniedError naming the permission and the accessor (Consul's
// text); operator:write implies operator:read; a zero Caller fails closed.
func TestRequireOperatorReadAndRaftWrite(t *testing.T) {
	for _, tc := range []struct {
		name        string
		caller      acl.Caller
		read, write bool
	}{
		{"zero caller", acl.Caller{}, false, false},
		{"node:write", callerWithRules(t, "n", `node = "write"`), false, false},
		{"acl:write", callerWithRules(t, "a", `acl = "write"`), false, false},
		{"operator:read", callerWithRules(t, "r", `operator = "read"`), true, false},
		{"operator:write", callerWithRules(t, "w", `operator = "write"`), true, true},
		{"management", acl.Internal(), true, true},
	} {
		for _, check := range []struct {
			perm  string
			err   error
			allow bool
		}{
			{acl.PermOperatorRead, tc.caller.RequireOperatorRead(), tc.read},
			{acl.PermOperatorWrite, tc.caller.RequireRaftWrite(), tc.write},
		} {
			var d *acl.DeniedError
			switch {
			case check.allow && check.err != nil:
				t.Errorf("%s, %s: refused: %v", tc.name, check.perm, check.err)
			case !check.allow && (!errors.As(check.err, &d) || d.Perm != check.perm || d.AccessorID != tc.caller.AccessorID):
				t.Errorf("%s, %s: got %v, want a DeniedError naming it and %q", tc.name, check.perm, check.err, tc.caller.AccessorID)
			}
		}
	}
}

// TestReadIn: a read over one namespace is refused where may says no;
// over every namespace it is never refused and may filters.
func TestReadIn(t *testing.T) {
	may := func(ns string) bool { return ns == "web" }
	if _, err := acl.ReadIn("api", may); err != acl.ErrPermissionDenied {
		t.Fatalf("api: got %v, want Permission denied", err)
	}
	if visible, err := acl.ReadIn("web", may); err != nil || !visible("web") {
		t.Fatalf("web: %v", err)
	}
	visible, err := acl.ReadIn(state.AllNamespaces, may)
	if err != nil {
		t.Fatalf("every namespace refused: %v", err)
	}
	if !visible("web") || visible("api") {
		t.Fatalf("visible(web)=%v visible(api)=%v, want true false", visible("web"), visible("api"))
	}
}
