package acl_test

import (
	"testing"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
)

// A binding rule is checked against its method's config as it is now: the
// parsed config kept per method is replaced when the method is updated,
// and a method deleted and created again under the same name is read anew.
func TestServiceRuleChecksFollowMethodUpdate(t *testing.T) {
	env := startSvc(t)
	s := env.svc("dc1")
	k := newKey(t)
	method := func(update bool, target string) {
		t.Helper()
		_, err := s.WriteAuthMethod(acl.Internal(), update, acl.AuthMethodRequest{
			Name: "m", Type: "jwt", Namespace: "default",
			Config: map[string]any{"JWTValidationPubKeys": []any{k.pem(t)}, "ClaimMappings": map[string]any{"sub": target}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rule := func(bindName, selector string) error {
		_, err := s.WriteBindingRule(acl.Internal(), "", acl.BindingRuleRequest{AuthMethod: "m", BindType: "service", BindName: bindName, Selector: selector, Namespace: "default"})
		return err
	}
	method(false, "name")
	for i, name := range []string{"svc1-${value.name}", "svc2-${value.name}"} {
		if err := rule(name, "value.name == a"); err != nil {
			t.Fatalf("rule %d: %v", i, err)
		}
	}
	wantCode(t, rule("svc3-${value.user}", ""), state.ErrInvalid,
		`Invalid Binding Rule: invalid BindName or BindVars: failed to validate bindType "service": error interpreting template: 1:8: unknown variable accessed: value.user`)

	method(true, "user")
	if err := rule("svc3-${value.user}", "value.user != b"); err != nil {
		t.Fatalf("after the method maps user: %v", err)
	}
	wantCode(t, rule("svc4-${value.name}", ""), state.ErrInvalid,
		`Invalid Binding Rule: invalid BindName or BindVars: failed to validate bindType "service": error interpreting template: 1:8: unknown variable accessed: value.name`)
	wantCode(t, rule("svc4", "value.name == a"), state.ErrInvalid,
		`invalid Binding Rule: Selector is invalid: Selector "value.name" is not valid`)

	if err := s.DeleteAuthMethod(acl.Internal(), "m", "default"); err != nil {
		t.Fatal(err)
	}
	method(false, "name")
	if err := rule("svc5-${value.name}", "value.name == a"); err != nil {
		t.Fatalf("after the method was made again: %v", err)
	}
}
