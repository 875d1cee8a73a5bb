package acl

import (
	"testing"
)

// FuzzParse: Parse never panics, and whatever it accepts builds an
// authorizer that answers every question without panicking.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		`acl = "write"`,
		`acl = "list"`,
		"acl = \"read\"\noperator = \"write\"\nnamespace \"default\" { policy = \"read\" }",
		`namespace "prod-*" { policy = "deny" capabilities = ["read-job"] }`,
		`namespace "*" { policy = "scale" }`,
		`namespace "a*b*c" { capabilities = ["submit-job", "list-jobs"] }`,
		`{"acl":"write","namespace":{"default":{"policy":"read"}}}`,
		`{"namespace":[{"a":{"policy":"read"}},{"b":{"capabilities":["deny"]}}]}`,
		`{"namespace":{"x":null}}`,
		`namespace { policy = "read" }`,
		`namespace "a" "b" { policy = "read" }`,
		"acl = <<EOF\nwrite\nEOF\n",
		`acl = "read`,
		`[1]`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r, err := Parse(in)
		if err != nil {
			if r != nil {
				t.Fatalf("Parse returned rules and the error %v", err)
			}
			return
		}
		if r == nil {
			t.Fatal("Parse returned neither rules nor an error")
		}
		if !validLevel(r.ACL, false) || !validLevel(r.Operator, false) {
			t.Fatalf("accepted invalid levels %q %q", r.ACL, r.Operator)
		}
		names := []string{"", "default", "prod-api", "*"}
		for _, ns := range r.Namespaces {
			if ns == nil {
				t.Fatal("accepted a nil namespace rule")
			}
			names = append(names, ns.Name, ns.Name+"x", "x"+ns.Name)
		}
		for _, a := range []*Authorizer{NewAuthorizer([]*Rules{r}), NewAuthorizer([]*Rules{r, r})} {
			a.ACLRead()
			a.ACLWrite()
			a.OperatorRead()
			a.OperatorWrite()
			for _, ns := range names {
				a.AllowsNamespace(ns)
				for c := range validCapabilities {
					a.NamespaceCapability(ns, c)
				}
			}
		}
	})
}
