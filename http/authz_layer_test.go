package http_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// permissionQuestions are the methods that ask whether a caller holds a
// permission: the Authorizer's and the Caller's (Require*).
var permissionQuestions = map[string]bool{
	"NamespaceCapability": true, "AllowsNamespace": true, "IsManagement": true,
	"ACLRead": true, "ACLWrite": true, "NodeRead": true, "NodeWrite": true,
	"OperatorRead": true, "OperatorWrite": true,
}

// allowedQuestions are the exceptions, by file: ui.go reports what a token
// may do and refuses nothing; the event stream asks the ACL family's
// acl:read for the ACL topics (its other topics ask the families' rules).
var allowedQuestions = map[string]map[string]bool{
	"ui.go":           {"IsManagement": true, "ACLRead": true, "ACLWrite": true, "NodeRead": true, "NodeWrite": true, "OperatorRead": true, "OperatorWrite": true, "NamespaceCapability": true},
	"event_stream.go": {"RequireACLRead": true},
}

// TestHTTPAsksNoPermission: authorization is the services' (issue 32):
// no non-test file of http asks an Authorizer or a Caller for a
// permission, except the two listed above. A write's permission is its
// service's, a read's its family's read rule (jobs.ReadJob, ...).
func TestHTTPAsksNoPermission(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var found []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			// Calls and method values alike (a filter passed as
			// id.authz.AllowsNamespace asks as much as a call).
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			method := sel.Sel.Name
			if !permissionQuestions[method] && !strings.HasPrefix(method, "Require") {
				return true
			}
			if allowedQuestions[name][method] {
				return true
			}
			found = append(found, fset.Position(sel.Sel.Pos()).String()+": "+method)
			return true
		})
	}
	sort.Strings(found)
	if len(found) > 0 {
		t.Fatalf("http asks for permissions itself (a service or a family's read rule should):\n%s", strings.Join(found, "\n"))
	}
}
