package http

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"

	"github.com/gorilla/mux"
	"github.com/hashicorp/go-hclog"
)

// The routes served without gorilla/mux are the ones mux would pick: for
// each, mux matches its path with that route and no other, whatever the
// method.
func TestExactRoutesAreMuxsChoice(t *testing.T) {
	st := state.NewStore()
	aclSvc := acl.NewService(svc.Deps{State: func() *state.Store { return st }, Now: time.Now}, "dc1")
	h := New(nil, hclog.NewNullLogger(), Services{ACL: aclSvc})
	if h.exact["/v1/acl/binding-rule"] == nil {
		t.Fatal("the binding-rule create route is not served directly")
	}
	for path := range h.exact {
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodOptions} {
			var match mux.RouteMatch
			if !h.router.Match(&http.Request{Method: method, URL: &url.URL{Path: path}}, &match) || match.Route == nil {
				t.Fatalf("%s %s: mux matches no route", method, path)
			}
			if tmpl, err := match.Route.GetPathTemplate(); err != nil || tmpl != path {
				t.Fatalf("%s %s: mux picks the route %q, not the one served directly", method, path, tmpl)
			}
		}
	}
	if len(h.exact) < 10 {
		t.Fatalf("only %d routes served directly", len(h.exact))
	}
}
