package fsm_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/fsm/raftfsm"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
)

const (
	policiesTable = "acl-policies"
	tokensTable   = "acl-tokens"
	rolesTable    = "acl-roles"
	methodsTable  = "acl-auth-methods"
	metaTable     = "acl-meta"
	idD           = "f0e1d2c3-0000-4000-8000-000000000004"
)

// Times as the server stores them: UTC, with nanoseconds, no monotonic reading.
var (
	created = time.Date(2026, 3, 4, 5, 6, 7, 891011, time.UTC)
	expires = created.Add(90 * time.Minute)
)

// apply applies one entry built with fsm.Encode and returns the response.
func apply(t *testing.T, f *raftfsm.FSM, idx uint64, mt fsm.MessageType, req any) any {
	t.Helper()
	return f.Apply(entry(t, idx, mt, req))
}

func policy(id, name string) state.ACLPolicy {
	return state.ACLPolicy{ID: id, Name: name, Description: "d " + name, Rules: `acl = "read"`,
		Datacenters: []string{"dc1", "dc2"}, Hash: []byte{0, 1, 2, 0xff}}
}

func token(accessor, secret, method string) state.ACLToken {
	exp := expires
	return state.ACLToken{
		AccessorID:        accessor,
		SecretID:          secret,
		Description:       "token " + secret,
		Policies:          []state.ACLLink{{ID: state.GlobalManagementPolicyID, Name: state.GlobalManagementPolicyName}},
		Roles:             []state.ACLLink{{ID: idB}},
		ServiceIdentities: []*state.ACLServiceIdentity{{ServiceName: "web", Datacenters: []string{"dc1"}}},
		NodeIdentities:    []*state.ACLNodeIdentity{{NodeName: "node-1", Datacenter: "dc1"}},
		Local:             true,
		AuthMethod:        method,
		ExpirationTime:    &exp,
		ExpirationTTL:     90 * time.Minute,
		CreateTime:        created,
		Hash:              []byte("hash of " + secret),
		Namespace:         "team1",
	}
}

func role(id, name string) state.ACLRole {
	return state.ACLRole{ID: id, Name: name, Description: "role " + name,
		Policies:          []state.ACLLink{{ID: idA, Name: "p"}},
		ServiceIdentities: []*state.ACLServiceIdentity{{ServiceName: "api"}},
		NodeIdentities:    []*state.ACLNodeIdentity{{NodeName: "n", Datacenter: "dc1"}},
		Hash:              []byte("r")}
}

// jwtConfig is a Config as the HTTP layer decodes it from JSON.
func jwtConfig() map[string]any {
	return map[string]any{
		"ClaimMappings":        map[string]any{"a": "b"},
		"BoundAudiences":       []any{"x"},
		"BoundIssuer":          "https://issuer.example",
		"ExpirationLeeway":     "30s",
		"JWTValidationPubKeys": []any{"-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n"},
		"ListClaimMappings":    map[string]any{"groups": "groups"},
		"NotBeforeLeeway":      float64(5),
		"Nested":               map[string]any{"deeper": map[string]any{"list": []any{"y", float64(2), true, nil}}},
		"Enabled":              true,
	}
}

func method(name string) state.ACLAuthMethod {
	return state.ACLAuthMethod{Name: name, Type: "jwt", DisplayName: "The " + name, Description: "method " + name,
		MaxTokenTTL: time.Hour, TokenLocality: "local", Config: jwtConfig(), Namespace: "default"}
}

func TestApplyACLPolicySetAndDelete(t *testing.T) {
	f := newFSM()
	p := policy(idA, "readers")
	p.CreateIndex, p.ModifyIndex = 99, 99 // ignored
	resp := apply(t, f, 5, fsm.ACLPolicySetType, fsm.ACLPolicySetRequest{Policy: p})
	want := policy(idA, "readers")
	want.CreateIndex, want.ModifyIndex = 5, 5
	if got, ok := resp.(*state.ACLPolicy); !ok || !reflect.DeepEqual(got, &want) {
		t.Fatalf("create returned %T %+v, want %+v", resp, resp, &want)
	}
	if _, got, _ := f.State().ACLPolicyByName(nil, "READERS"); !reflect.DeepEqual(got, &want) {
		t.Fatalf("stored %+v", got)
	}

	p.Rules = `acl = "write"`
	resp = apply(t, f, 6, fsm.ACLPolicySetType, fsm.ACLPolicySetRequest{Policy: p})
	if got, ok := resp.(*state.ACLPolicy); !ok || got.CreateIndex != 5 || got.ModifyIndex != 6 || got.Rules != `acl = "write"` {
		t.Fatalf("update returned %T %+v", resp, resp)
	}

	wantStateError(t, apply(t, f, 7, fsm.ACLPolicySetType, fsm.ACLPolicySetRequest{Policy: policy(idB, "Readers")}),
		state.ErrInvalid, `Invalid Policy: A Policy with Name "Readers" already exists`)
	wantStateError(t, apply(t, f, 7, fsm.ACLPolicySetType, fsm.ACLPolicySetRequest{}),
		state.ErrInvalid, "policy is missing its ID or name")
	wantStateError(t, apply(t, f, 7, fsm.ACLPolicyDeleteType, fsm.ACLPolicyDeleteRequest{ID: idMissing}),
		state.ErrNotFound, "policy does not exist")
	if got := f.State().TableIndex(policiesTable); got != 6 {
		t.Fatalf("TableIndex %d after rejected entries, want 6", got)
	}

	if resp := apply(t, f, 8, fsm.ACLPolicyDeleteType, fsm.ACLPolicyDeleteRequest{ID: idA}); resp != nil {
		t.Fatalf("delete returned %T %v, want nil", resp, resp)
	}
	if idx, got, _ := f.State().ACLPolicy(nil, idA); got != nil || idx != 8 {
		t.Fatalf("after delete: %d %+v", idx, got)
	}
}

func TestApplyACLTokenSetAndDelete(t *testing.T) {
	f := newFSM()
	if _, ok := apply(t, f, 2, fsm.ACLAuthMethodSetType, fsm.ACLAuthMethodSetRequest{Method: method("jwt"), Create: true}).(*state.ACLAuthMethod); !ok {
		t.Fatal("method create")
	}
	resp := apply(t, f, 5, fsm.ACLTokenSetType, fsm.ACLTokenSetRequest{Token: token(idA, "secret-a", "jwt"), Create: true})
	want := token(idA, "secret-a", "jwt")
	want.CreateIndex, want.ModifyIndex = 5, 5
	got, ok := resp.(*state.ACLToken)
	if !ok || !reflect.DeepEqual(got, &want) {
		t.Fatalf("create returned %T %+v,\nwant %+v", resp, resp, &want)
	}
	// time.Time and *time.Time survive the log entry exactly.
	if !got.ExpirationTime.Equal(expires) || *got.ExpirationTime != expires || got.CreateTime != created {
		t.Fatalf("times: expiry %v create %v", got.ExpirationTime, got.CreateTime)
	}
	if _, stored, _ := f.State().ACLTokenBySecret(nil, "secret-a"); !reflect.DeepEqual(stored, &want) {
		t.Fatalf("stored %+v", stored)
	}

	// An update keeps the secret, the times, the method and the expiry.
	upd := fsm.ACLTokenSetRequest{Token: state.ACLToken{AccessorID: idA, SecretID: "other", Description: "renamed", Namespace: "default"}}
	resp = apply(t, f, 6, fsm.ACLTokenSetType, upd)
	got, ok = resp.(*state.ACLToken)
	if !ok || got.SecretID != "secret-a" || got.AuthMethod != "jwt" || got.CreateTime != created ||
		got.ExpirationTime == nil || *got.ExpirationTime != expires || got.ExpirationTTL != 90*time.Minute ||
		got.CreateIndex != 5 || got.ModifyIndex != 6 || got.Description != "renamed" || got.Policies != nil {
		t.Fatalf("update returned %T %+v", resp, resp)
	}

	errs := []struct {
		name string
		req  fsm.ACLTokenSetRequest
		code state.ErrorCode
		msg  string
	}{
		{"duplicate accessor", fsm.ACLTokenSetRequest{Token: token(idA, "new", ""), Create: true}, state.ErrConflict, "Invalid Token: AccessorID is already in use"},
		{"duplicate secret", fsm.ACLTokenSetRequest{Token: token(idB, "secret-a", ""), Create: true}, state.ErrConflict, "Invalid Token: SecretID is already in use"},
		{"create without secret", fsm.ACLTokenSetRequest{Token: token(idB, "", ""), Create: true}, state.ErrInvalid, "token is missing its SecretID"},
		{"update of a missing token", fsm.ACLTokenSetRequest{Token: token(idMissing, "s", "")}, state.ErrNotFound, "Cannot find token " + idMissing},
		{"no accessor", fsm.ACLTokenSetRequest{Create: true}, state.ErrInvalid, "token is missing its AccessorID"},
	}
	for _, e := range errs {
		wantStateError(t, apply(t, f, 7, fsm.ACLTokenSetType, e.req), e.code, e.msg)
	}
	wantStateError(t, apply(t, f, 7, fsm.ACLTokenDeleteType, fsm.ACLTokenDeleteRequest{AccessorID: idMissing}),
		state.ErrNotFound, "Cannot find token to delete")
	if got := f.State().TableIndex(tokensTable); got != 6 {
		t.Fatalf("TableIndex %d after rejected entries, want 6", got)
	}

	if resp := apply(t, f, 8, fsm.ACLTokenDeleteType, fsm.ACLTokenDeleteRequest{AccessorID: idA}); resp != nil {
		t.Fatalf("delete returned %T %v", resp, resp)
	}
	if idx, got, _ := f.State().ACLTokenByAccessor(nil, idA); got != nil || idx != 8 {
		t.Fatalf("after delete: %d %+v", idx, got)
	}
}

func TestApplyACLTokenReap(t *testing.T) {
	f := newFSM()
	for i, id := range []string{idA, idB, idC} {
		tok := token(id, "s-"+id, "")
		if id == idC {
			tok.ExpirationTime = nil
		}
		if _, ok := apply(t, f, uint64(3+i), fsm.ACLTokenSetType, fsm.ACLTokenSetRequest{Token: tok, Create: true}).(*state.ACLToken); !ok {
			t.Fatal("create failed")
		}
	}
	ws := memdb.NewWatchSet()
	f.State().ACLTokens(ws, func(*state.ACLToken) bool { return true })

	// Before the expiry nothing goes: the response is 0 and nothing moves.
	resp := apply(t, f, 10, fsm.ACLTokenReapType, fsm.ACLTokenReapRequest{AccessorIDs: []string{idA, idB, idC}, Now: expires.Add(-time.Second)})
	if n, ok := resp.(int); !ok || n != 0 {
		t.Fatalf("early reap returned %T %v, want int 0", resp, resp)
	}
	if got := f.State().TableIndex(tokensTable); got != 5 {
		t.Fatalf("TableIndex %d after a reap that deleted nothing, want 5", got)
	}
	if fired := !ws.Watch(time.After(20 * time.Millisecond)); fired {
		t.Fatal("watch fired on a reap that deleted nothing")
	}

	// Now is a time.Time in the entry too: the exact expiry counts as expired.
	resp = apply(t, f, 11, fsm.ACLTokenReapType, fsm.ACLTokenReapRequest{AccessorIDs: []string{idA, idC, idMissing}, Now: expires})
	if n, ok := resp.(int); !ok || n != 1 {
		t.Fatalf("reap returned %T %v, want int 1", resp, resp)
	}
	if got := f.State().TableIndex(tokensTable); got != 11 {
		t.Fatalf("TableIndex %d, want 11", got)
	}
	_, left, _ := f.State().ACLTokens(nil, func(*state.ACLToken) bool { return true })
	if len(left) != 2 || left[0].AccessorID != idB || left[1].AccessorID != idC {
		t.Fatalf("left %+v", left)
	}

	// A malformed accessor fails the entry with a (non-state) error.
	resp = apply(t, f, 12, fsm.ACLTokenReapType, fsm.ACLTokenReapRequest{AccessorIDs: []string{idB, "nope"}, Now: expires.Add(time.Hour)})
	if err, ok := resp.(error); !ok || !strings.HasPrefix(err.Error(), "failed token lookup: ") {
		t.Fatalf("reap with a bad ID returned %T %v", resp, resp)
	}
	if n := f.State().Counts()[tokensTable]; n != 2 {
		t.Fatalf("%d tokens after a failed reap, want 2", n)
	}
}

func TestApplyACLRoleSetAndDelete(t *testing.T) {
	f := newFSM()
	resp := apply(t, f, 4, fsm.ACLRoleSetType, fsm.ACLRoleSetRequest{Role: role(idB, "deployers")})
	want := role(idB, "deployers")
	want.CreateIndex, want.ModifyIndex = 4, 4
	if got, ok := resp.(*state.ACLRole); !ok || !reflect.DeepEqual(got, &want) {
		t.Fatalf("create returned %T %+v, want %+v", resp, resp, &want)
	}
	resp = apply(t, f, 5, fsm.ACLRoleSetType, fsm.ACLRoleSetRequest{Role: role(idB, "deployers-2")})
	if got, ok := resp.(*state.ACLRole); !ok || got.CreateIndex != 4 || got.ModifyIndex != 5 {
		t.Fatalf("update returned %T %+v", resp, resp)
	}
	wantStateError(t, apply(t, f, 6, fsm.ACLRoleSetType, fsm.ACLRoleSetRequest{Role: role(idC, "DEPLOYERS-2")}),
		state.ErrInvalid, `Invalid Role: A Role with Name "DEPLOYERS-2" already exists`)
	wantStateError(t, apply(t, f, 6, fsm.ACLRoleSetType, fsm.ACLRoleSetRequest{}), state.ErrInvalid, "role is missing its ID or name")
	wantStateError(t, apply(t, f, 6, fsm.ACLRoleDeleteType, fsm.ACLRoleDeleteRequest{ID: idMissing}), state.ErrNotFound, "Cannot find role to delete")
	if got := f.State().TableIndex(rolesTable); got != 5 {
		t.Fatalf("TableIndex %d, want 5", got)
	}
	if resp := apply(t, f, 7, fsm.ACLRoleDeleteType, fsm.ACLRoleDeleteRequest{ID: idB}); resp != nil {
		t.Fatalf("delete returned %T %v", resp, resp)
	}
	if idx, got, _ := f.State().ACLRole(nil, idB); got != nil || idx != 7 {
		t.Fatalf("after delete: %d %+v", idx, got)
	}
}

func TestApplyACLAuthMethodSetAndDelete(t *testing.T) {
	f := newFSM()
	resp := apply(t, f, 3, fsm.ACLAuthMethodSetType, fsm.ACLAuthMethodSetRequest{Method: method("jwt"), Create: true})
	want := method("jwt")
	want.CreateIndex, want.ModifyIndex = 3, 3
	got, ok := resp.(*state.ACLAuthMethod)
	if !ok || !reflect.DeepEqual(got, &want) {
		t.Fatalf("create returned %T %+v,\nwant %+v", resp, resp, &want)
	}
	// The free-form Config decodes as JSON would: string-keyed maps, []any, strings.
	if !reflect.DeepEqual(got.Config, jwtConfig()) {
		t.Fatalf("Config after the log entry: %#v", got.Config)
	}
	if _, ok := got.Config["ClaimMappings"].(map[string]any); !ok {
		t.Fatalf("ClaimMappings is a %T", got.Config["ClaimMappings"])
	}

	upd := method("JWT")
	upd.Config = map[string]any{"BoundAudiences": []any{"y"}}
	resp = apply(t, f, 4, fsm.ACLAuthMethodSetType, fsm.ACLAuthMethodSetRequest{Method: upd})
	if got, ok := resp.(*state.ACLAuthMethod); !ok || got.Name != "jwt" || got.CreateIndex != 3 || got.ModifyIndex != 4 ||
		!reflect.DeepEqual(got.Config, map[string]any{"BoundAudiences": []any{"y"}}) {
		t.Fatalf("update returned %T %+v", resp, resp)
	}

	k8s := method("jwt")
	k8s.Type = "kubernetes"
	errs := []struct {
		name string
		req  fsm.ACLAuthMethodSetRequest
		code state.ErrorCode
		msg  string
	}{
		{"type change", fsm.ACLAuthMethodSetRequest{Method: k8s}, state.ErrInvalid, "the Type field of an Auth Method is immutable"},
		{"duplicate create", fsm.ACLAuthMethodSetRequest{Method: method("Jwt"), Create: true}, state.ErrConflict, `Invalid Auth Method: An Auth Method with Name "Jwt" already exists`},
		{"update of a missing method", fsm.ACLAuthMethodSetRequest{Method: method("other")}, state.ErrNotFound, `cannot find auth method "other"`},
		{"no name", fsm.ACLAuthMethodSetRequest{Create: true}, state.ErrInvalid, "auth method is missing its name or type"},
	}
	for _, e := range errs {
		wantStateError(t, apply(t, f, 5, fsm.ACLAuthMethodSetType, e.req), e.code, e.msg)
	}
	wantStateError(t, apply(t, f, 5, fsm.ACLAuthMethodDeleteType, fsm.ACLAuthMethodDeleteRequest{Name: "other"}),
		state.ErrNotFound, "Cannot find auth method to delete")
	if got := f.State().TableIndex(methodsTable); got != 4 {
		t.Fatalf("TableIndex %d after rejected entries, want 4", got)
	}

	// Delete cascades, in the one entry, to the method's rules and tokens.
	if r := apply(t, f, 6, fsm.ACLAuthMethodSetType, fsm.ACLAuthMethodSetRequest{Method: method("jwt-2"), Create: true}); r == nil {
		t.Fatal("create jwt-2")
	}
	applyRule(t, f, 7, setReq(idA, "default", "jwt", "a", true))
	applyRule(t, f, 8, setReq(idB, "default", "jwt-2", "b", true))
	for i, tc := range []struct{ id, method string }{{idA, "jwt"}, {idB, "jwt-2"}, {idC, ""}} {
		if _, ok := apply(t, f, uint64(9+i), fsm.ACLTokenSetType, fsm.ACLTokenSetRequest{Token: token(tc.id, "s-"+tc.id, tc.method), Create: true}).(*state.ACLToken); !ok {
			t.Fatalf("token %s", tc.id)
		}
	}
	if resp := apply(t, f, 20, fsm.ACLAuthMethodDeleteType, fsm.ACLAuthMethodDeleteRequest{Name: "jwt"}); resp != nil {
		t.Fatalf("delete returned %T %v", resp, resp)
	}
	s := f.State()
	if ids := ruleIDList(allRules(t, s)); !reflect.DeepEqual(ids, []string{idB}) {
		t.Fatalf("rules left %v", ids)
	}
	_, toks, _ := s.ACLTokens(nil, func(*state.ACLToken) bool { return true })
	if len(toks) != 2 || toks[0].AccessorID != idB || toks[1].AccessorID != idC {
		t.Fatalf("tokens left %+v", toks)
	}
	for _, table := range []string{methodsTable, rulesTable, tokensTable} {
		if got := s.TableIndex(table); got != 20 {
			t.Errorf("TableIndex(%s) = %d, want 20", table, got)
		}
	}
}

func TestApplyACLBootstrap(t *testing.T) {
	f := newFSM()
	tok := token(idA, "boot-secret", "")
	tok.ExpirationTime, tok.ExpirationTTL = nil, 0
	resp := apply(t, f, 12, fsm.ACLBootstrapType, fsm.ACLTokenSetRequest{Token: tok, Create: true})
	want := tok
	want.CreateIndex, want.ModifyIndex = 12, 12
	if got, ok := resp.(*state.ACLToken); !ok || !reflect.DeepEqual(got, &want) {
		t.Fatalf("bootstrap returned %T %+v", resp, resp)
	}
	if got := f.State().ACLBootstrapIndex(); got != 12 {
		t.Fatalf("ACLBootstrapIndex %d, want 12", got)
	}
	resp = apply(t, f, 13, fsm.ACLBootstrapType, fsm.ACLTokenSetRequest{Token: token(idB, "again", ""), Create: true})
	wantStateError(t, resp, state.ErrForbidden, "Permission denied: ACL bootstrap no longer allowed (reset index: 12)")
	if n := f.State().Counts()[tokensTable]; n != 1 {
		t.Fatalf("%d tokens after a refused bootstrap", n)
	}
	for _, table := range []string{tokensTable, metaTable} {
		if got := f.State().TableIndex(table); got != 12 {
			t.Errorf("TableIndex(%s) = %d, want 12", table, got)
		}
	}
}

func initReq(initial *state.ACLToken) fsm.ACLInitRequest {
	return fsm.ACLInitRequest{
		ManagementPolicy: state.ACLPolicy{ID: state.GlobalManagementPolicyID, Name: state.GlobalManagementPolicyName, Rules: `acl = "write"`},
		Anonymous:        state.ACLToken{AccessorID: state.AnonymousTokenID, SecretID: state.AnonymousTokenSecret, Namespace: "default", CreateTime: created},
		Initial:          initial,
	}
}

func TestApplyACLInit(t *testing.T) {
	f := newFSM()
	if resp := apply(t, f, 2, fsm.ACLInitType, initReq(nil)); resp != nil {
		t.Fatalf("init returned %T %v", resp, resp)
	}
	s := f.State()
	if _, p, _ := s.ACLPolicy(nil, state.GlobalManagementPolicyID); p == nil || p.CreateIndex != 2 {
		t.Fatalf("management policy %+v", p)
	}
	if _, anon, _ := s.ACLTokenByAccessor(nil, state.AnonymousTokenID); anon == nil || anon.CreateTime != created {
		t.Fatalf("anonymous token %+v", anon)
	}
	if got := s.ACLBootstrapIndex(); got != 0 {
		t.Fatalf("bootstrap closed without an initial token (%d)", got)
	}

	// With an initial token: it is added and bootstrapping closes.
	initial := token(idA, "initial", "")
	initial.ExpirationTime = nil
	if resp := apply(t, f, 3, fsm.ACLInitType, initReq(&initial)); resp != nil {
		t.Fatalf("init returned %T %v", resp, resp)
	}
	if _, tok, _ := s.ACLTokenBySecret(nil, "initial"); tok == nil || tok.CreateIndex != 3 {
		t.Fatalf("initial token %+v", tok)
	}
	if got := s.ACLBootstrapIndex(); got != 3 {
		t.Fatalf("ACLBootstrapIndex %d, want 3", got)
	}

	// Again: nothing changes, no index moves.
	before := indexes(t, s)
	if resp := apply(t, f, 4, fsm.ACLInitType, initReq(&initial)); resp != nil {
		t.Fatalf("second init returned %T %v", resp, resp)
	}
	if got := indexes(t, s); !reflect.DeepEqual(got, before) {
		t.Fatalf("indexes moved on a no-op init: %+v, want %+v", got, before)
	}
	wantStateError(t, apply(t, f, 5, fsm.ACLBootstrapType, fsm.ACLTokenSetRequest{Token: token(idB, "b", ""), Create: true}),
		state.ErrForbidden, "Permission denied: ACL bootstrap no longer allowed (reset index: 3)")

	// An init that cannot be applied is an error response, not a panic.
	g := newFSM()
	if _, ok := apply(t, g, 2, fsm.ACLPolicySetType, fsm.ACLPolicySetRequest{Policy: policy(idB, "GLOBAL-MANAGEMENT")}).(*state.ACLPolicy); !ok {
		t.Fatal("policy create")
	}
	wantStateError(t, apply(t, g, 3, fsm.ACLInitType, initReq(nil)), state.ErrInvalid,
		`Invalid Policy: A Policy with Name "global-management" already exists`)
	if n := g.State().Counts()[tokensTable]; n != 0 {
		t.Fatalf("a failed init created %d tokens", n)
	}
}

func TestApplyACLTypesWithIgnoreFlag(t *testing.T) {
	f := newFSM()
	resp := apply(t, f, 3, fsm.ACLPolicySetType|fsm.IgnoreUnknownTypeFlag, fsm.ACLPolicySetRequest{Policy: policy(idA, "p")})
	if _, ok := resp.(*state.ACLPolicy); !ok {
		t.Fatalf("flagged policy set returned %T %v", resp, resp)
	}
	if resp := apply(t, f, 4, fsm.ACLPolicyDeleteType|fsm.IgnoreUnknownTypeFlag, fsm.ACLPolicyDeleteRequest{ID: idA}); resp != nil {
		t.Fatalf("flagged delete returned %T %v", resp, resp)
	}
}

func TestApplyACLUndecodableBodyIsAnError(t *testing.T) {
	names := map[fsm.MessageType]string{
		fsm.ACLPolicySetType:        "policy set",
		fsm.ACLPolicyDeleteType:     "policy delete",
		fsm.ACLTokenSetType:         "token set",
		fsm.ACLTokenDeleteType:      "token delete",
		fsm.ACLRoleSetType:          "role set",
		fsm.ACLRoleDeleteType:       "role delete",
		fsm.ACLAuthMethodSetType:    "auth method set",
		fsm.ACLAuthMethodDeleteType: "auth method delete",
		fsm.ACLBootstrapType:        "ACL bootstrap",
		fsm.ACLInitType:             "ACL init",
		fsm.ACLTokenReapType:        "token reap",
	}
	for mt, name := range names {
		for _, body := range [][]byte{{0xc1}, {}, {0x81}} {
			f := newFSM()
			msg := wantRefused(t, f.Apply(&raft.Log{Index: 4, Data: append([]byte{byte(mt)}, body...)}))
			if want := fmt.Sprintf("failed to decode %s at index 4: ", name); !strings.HasPrefix(msg, want) {
				t.Fatalf("type %d body %x: %q, want prefix %q", mt, body, msg, want)
			}
		}
	}
}

// seededACL has an object in every ACL table: two auth methods, a binding
// rule, a policy, a role, the bootstrap token and two more tokens.
func seededACL(t *testing.T) *raftfsm.FSM {
	t.Helper()
	f := newFSM()
	steps := []struct {
		mt  fsm.MessageType
		req any
	}{
		{fsm.ACLAuthMethodSetType, fsm.ACLAuthMethodSetRequest{Method: method("jwt"), Create: true}},
		{fsm.ACLAuthMethodSetType, fsm.ACLAuthMethodSetRequest{Method: method("k8s"), Create: true}},
		{fsm.BindingRuleSetType, setReq(idA, "default", "jwt", "web", true)},
		{fsm.ACLPolicySetType, fsm.ACLPolicySetRequest{Policy: policy(idA, "readers")}},
		{fsm.ACLRoleSetType, fsm.ACLRoleSetRequest{Role: role(idB, "deployers")}},
		{fsm.ACLBootstrapType, fsm.ACLTokenSetRequest{Token: token(idD, "boot", ""), Create: true}},
		{fsm.ACLTokenSetType, fsm.ACLTokenSetRequest{Token: token(idB, "minted", "jwt"), Create: true}},
		{fsm.ACLTokenSetType, fsm.ACLTokenSetRequest{Token: token(idC, "plain", ""), Create: true}},
	}
	for i, st := range steps {
		if resp := apply(t, f, uint64(10+i), st.mt, st.req); resp == nil {
			t.Fatalf("step %d returned nil", i)
		} else if err, ok := resp.(error); ok {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	return f
}

func tableRows(t *testing.T, s *state.Store) map[string][]any {
	t.Helper()
	snap := s.Snapshot()
	defer snap.Close()
	out := map[string][]any{}
	for _, table := range state.Tables() {
		rows, err := snap.Rows(table)
		if err != nil {
			t.Fatal(err)
		}
		out[table] = rows
	}
	return out
}

func TestSnapshotRestoreACLRoundTrip(t *testing.T) {
	src := seededACL(t)
	data := persist(t, src)
	dst := seeded(t) // restored over existing state
	if err := dst.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	s := dst.State()

	// Every row of every table is deep-equal to the source's.
	want, got := tableRows(t, src.State()), tableRows(t, s)
	for _, table := range state.Tables() {
		if !reflect.DeepEqual(got[table], want[table]) {
			t.Errorf("table %s differs:\n got %+v\nwant %+v", table, got[table], want[table])
		}
	}
	if !reflect.DeepEqual(s.Counts(), src.State().Counts()) {
		t.Fatalf("Counts %v, want %v", s.Counts(), src.State().Counts())
	}
	for _, table := range []string{methodsTable, rulesTable, policiesTable, rolesTable, tokensTable, metaTable} {
		if s.Counts()[table] == 0 {
			t.Errorf("table %s is empty: the round trip does not cover it", table)
		}
	}

	// And to the objects as they were first written (two msgpack trips later).
	wantTok := token(idB, "minted", "jwt")
	wantTok.CreateIndex, wantTok.ModifyIndex = 16, 16
	if _, tok, _ := s.ACLTokenBySecret(nil, "minted"); !reflect.DeepEqual(tok, &wantTok) {
		t.Fatalf("restored token\n %+v\nwant %+v", tok, &wantTok)
	} else if *tok.ExpirationTime != expires || tok.ExpirationTime.Location() != time.UTC {
		t.Fatalf("restored expiry %v", tok.ExpirationTime)
	}
	wantM := method("jwt")
	wantM.CreateIndex, wantM.ModifyIndex = 10, 10
	if _, m, _ := s.ACLAuthMethod(nil, "jwt"); !reflect.DeepEqual(m, &wantM) {
		t.Fatalf("restored method\n %#v\nwant %#v", m, &wantM)
	} else if cm, ok := m.Config["ClaimMappings"].(map[string]any); !ok || cm["a"] != "b" {
		t.Fatalf("restored ClaimMappings %#v", m.Config["ClaimMappings"])
	} else if aud, ok := m.Config["BoundAudiences"].([]any); !ok || len(aud) != 1 || aud[0] != "x" {
		t.Fatalf("restored BoundAudiences %#v", m.Config["BoundAudiences"])
	}
	wantP := policy(idA, "readers")
	wantP.CreateIndex, wantP.ModifyIndex = 13, 13
	if _, p, _ := s.ACLPolicyByName(nil, "Readers"); !reflect.DeepEqual(p, &wantP) {
		t.Fatalf("restored policy %+v", p)
	}
	wantR := role(idB, "deployers")
	wantR.CreateIndex, wantR.ModifyIndex = 14, 14
	if _, r, _ := s.ACLRoleByName(nil, "DEPLOYERS"); !reflect.DeepEqual(r, &wantR) {
		t.Fatalf("restored role %+v", r)
	}
	if got := s.ACLBootstrapIndex(); got != 15 {
		t.Fatalf("restored bootstrap index %d, want 15", got)
	}
	if got := indexes(t, s); len(got) != 6 {
		t.Fatalf("restored index rows %+v", got)
	}

	// The restored state behaves: bootstrap stays closed, the cascade works.
	wantStateError(t, apply(t, dst, 30, fsm.ACLBootstrapType, fsm.ACLTokenSetRequest{Token: token(idMissing, "x", ""), Create: true}),
		state.ErrForbidden, "Permission denied: ACL bootstrap no longer allowed (reset index: 15)")
	if resp := apply(t, dst, 31, fsm.ACLAuthMethodDeleteType, fsm.ACLAuthMethodDeleteRequest{Name: "jwt"}); resp != nil {
		t.Fatalf("delete: %v", resp)
	}
	if c := dst.State().Counts(); c[rulesTable] != 0 || c[tokensTable] != 2 || c[methodsTable] != 1 {
		t.Fatalf("after the cascade on the restored state: %v", c)
	}
}

func TestSnapshotRestoreACLEveryTruncationRefused(t *testing.T) {
	// The same property as for binding rules, over a stream with every table.
	valid := persist(t, seededACL(t))
	for n := 0; n < len(valid); n++ {
		s, err := fsm.DecodeSnapshot(bytes.NewReader(valid[:n]))
		if err == nil || s != nil {
			t.Fatalf("truncated to %d of %d bytes: store %v err %v", n, len(valid), s, err)
		}
	}
	if _, err := fsm.DecodeSnapshot(bytes.NewReader(valid)); err != nil {
		t.Fatal(err)
	}
	var se *state.Error
	_, err := fsm.DecodeSnapshot(bytes.NewReader(valid[:len(valid)-1]))
	if errors.As(err, &se) {
		t.Fatalf("a decode error is a state.Error: %v", err)
	}
}
