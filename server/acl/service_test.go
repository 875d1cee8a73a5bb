package acl_test

// The ACL service called directly, without HTTP, over a real single-node
// Raft server and a fake clock.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/servertest"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-memdb"
)

// clock is a fake clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// svcEnv is a running server (ACLs on) and services over it.
type svcEnv struct {
	ts    *servertest.TestServer
	clock *clock
}

func startSvc(t *testing.T) *svcEnv {
	t.Helper()
	ts := servertest.Start(t, servertest.ACL("root"))
	env := &svcEnv{ts: ts, clock: &clock{now: time.Now()}}
	// The leader creates the built-in objects just after its election.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, _, err := env.svc("dc1").Resolve("root"); err == nil {
			return env
		}
		if time.Now().After(deadline) {
			t.Fatal("the initial management token never resolved")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// svc is an ACL service of an agent in datacenter dc over the server.
func (e *svcEnv) svc(dc string) *acl.Service {
	return acl.NewService(svc.Deps{State: e.ts.Server.State, Raft: e.ts.Server, Now: e.clock.Now, Logger: hclog.NewNullLogger()}, dc)
}

func wantCode(t *testing.T, err error, code state.ErrorCode, msg string) {
	t.Helper()
	var se *state.Error
	if !errors.As(err, &se) || se.Code != code || se.Msg != msg {
		t.Fatalf("got %T %v, want state error %d %q", err, err, code, msg)
	}
}

// TestServiceTokenHash: every writer computes the Hash one way, so an
// update that changes nothing keeps it and one that changes something
// changes it.
func TestServiceTokenHash(t *testing.T) {
	env := startSvc(t)
	s := env.svc("dc1")
	if _, err := s.WritePolicy(acl.Internal(), "", acl.PolicyRequest{Name: "reader", Rules: `acl = "read"`}); err != nil {
		t.Fatal(err)
	}
	req := acl.TokenRequest{
		Description: "ci", Policies: []state.ACLLink{{Name: "reader"}}, Namespace: "default",
		ServiceIdentities: []*state.ACLServiceIdentity{{ServiceName: "web", Datacenters: []string{"dc1"}}},
		NodeIdentities:    []*state.ACLNodeIdentity{{NodeName: "n1", Datacenter: "dc1"}},
	}
	created, err := s.CreateToken(acl.Internal(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(created.Hash, acl.TokenHash(created)) {
		t.Error("a created token's Hash is not TokenHash")
	}
	// The same request again, and the token as read back (links by ID with
	// names, as clients send it back): the Hash stays.
	for _, upd := range []acl.TokenRequest{req, {
		Description: created.Description, Policies: created.Policies,
		ServiceIdentities: created.ServiceIdentities, NodeIdentities: created.NodeIdentities,
		SecretID: created.SecretID, AccessorID: created.AccessorID,
	}} {
		out, err := s.UpdateToken(acl.Internal(), created.AccessorID, upd)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(out.Hash, created.Hash) || out.ModifyIndex <= created.CreateIndex {
			t.Errorf("no-op update: Hash %x (was %x), ModifyIndex %d", out.Hash, created.Hash, out.ModifyIndex)
		}
	}
	req.Description = "ci 2"
	if out, err := s.UpdateToken(acl.Internal(), created.AccessorID, req); err != nil || reflect.DeepEqual(out.Hash, created.Hash) {
		t.Errorf("a changed description kept the Hash: %v", err)
	}

	// Login tokens, the bootstrap-style built-in tokens: the same function.
	_, anon, _ := env.ts.Server.State().ACLTokenByAccessor(memdb.NewWatchSet(), state.AnonymousTokenID)
	if anon == nil || !reflect.DeepEqual(anon.Hash, acl.TokenHash(anon)) {
		t.Errorf("the anonymous token's Hash is not TokenHash: %+v", anon)
	}
	root, _, err := s.Resolve("root")
	if err != nil || !reflect.DeepEqual(root.Hash, acl.TokenHash(root)) {
		t.Errorf("the initial management token's Hash is not TokenHash: %v", err)
	}
	key := newKey(t)
	loginMethod(t, s, key, "svc-${value.name}")
	tok, err := s.Login(context.Background(), acl.LoginRequest{AuthMethod: "m", BearerToken: key.sign(t, "web")})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tok.Hash, acl.TokenHash(tok)) {
		t.Error("a login token's Hash is not TokenHash")
	}
	out, err := s.UpdateToken(acl.Internal(), tok.AccessorID, acl.TokenRequest{Description: tok.Description, ServiceIdentities: tok.ServiceIdentities, Local: tok.Local})
	if err != nil || !reflect.DeepEqual(out.Hash, tok.Hash) {
		t.Errorf("a no-op update of a login token changed its Hash: %v", err)
	}
}

// TestServiceTokenExpiry: expiry is judged by the service's clock: read,
// list, resolve and reap.
func TestServiceTokenExpiry(t *testing.T) {
	env := startSvc(t)
	s := env.svc("dc1")
	tok, err := s.CreateToken(acl.Internal(), acl.TokenRequest{Description: "short", Namespace: "default", ExpirationTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !tok.CreateTime.Equal(env.clock.Now().UTC()) || !tok.ExpirationTime.Equal(tok.CreateTime.Add(time.Minute)) {
		t.Fatalf("CreateTime %v, ExpirationTime %v", tok.CreateTime, tok.ExpirationTime)
	}
	live := func() (read, listed, resolved bool) {
		st := env.ts.Server.State()
		_, r, err := s.ReadToken(memdb.NewWatchSet(), st, tok.AccessorID, false)
		if err != nil {
			t.Fatal(err)
		}
		_, list, err := s.ListTokens(memdb.NewWatchSet(), st, acl.TokenFilter{}, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range list {
			listed = listed || l.AccessorID == tok.AccessorID
		}
		_, _, err = s.Resolve(tok.SecretID)
		if err != nil && !errors.Is(err, acl.ErrTokenNotFound) {
			t.Fatal(err)
		}
		return r != nil, listed, err == nil
	}
	env.clock.Advance(time.Minute - time.Nanosecond)
	if r, l, res := live(); !r || !l || !res {
		t.Fatalf("a nanosecond before expiry: read %v, listed %v, resolved %v", r, l, res)
	}
	if n, err := s.ReapExpiredTokens(); n != 0 || err != nil {
		t.Fatalf("reaped %d, %v before expiry", n, err)
	}
	env.clock.Advance(time.Nanosecond)
	if r, l, res := live(); r || l || res {
		t.Fatalf("at expiry: read %v, listed %v, resolved %v", r, l, res)
	}
	if _, err := s.UpdateToken(acl.Internal(), tok.AccessorID, acl.TokenRequest{Description: "x"}); err == nil {
		t.Error("an expired token was updated")
	} else {
		wantCode(t, err, state.ErrNotFound, "Cannot find token "+tok.AccessorID)
	}
	if n, err := s.ReapExpiredTokens(); n != 1 || err != nil {
		t.Fatalf("reaped %d, %v at expiry; want 1", n, err)
	}
	if _, stored, _ := env.ts.Server.State().ACLTokenByAccessor(memdb.NewWatchSet(), tok.AccessorID); stored != nil {
		t.Error("the expired token is still stored after reaping")
	}
}

// TestServicePolicyDatacenters: a policy applies only where its
// Datacenters list is empty or names the agent's datacenter.
func TestServicePolicyDatacenters(t *testing.T) {
	env := startSvc(t)
	s1, s2 := env.svc("dc1"), env.svc("dc2")
	p, err := s1.WritePolicy(acl.Internal(), "", acl.PolicyRequest{Name: "dc2-reader", Rules: `acl = "read"`, Datacenters: []string{"dc2"}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s1.CreateToken(acl.Internal(), acl.TokenRequest{Policies: []state.ACLLink{{ID: p.ID}}, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	canRead := func(s *acl.Service) bool {
		_, authz, err := s.Resolve(tok.SecretID)
		if err != nil {
			t.Fatal(err)
		}
		return authz.ACLRead()
	}
	if canRead(s1) || !canRead(s2) {
		t.Errorf("Datacenters [dc2]: acl:read in dc1 %v, in dc2 %v; want false, true", canRead(s1), canRead(s2))
	}
	// Through a role too.
	role, err := s1.WriteRole(acl.Internal(), "", acl.RoleRequest{Name: "r", Policies: []state.ACLLink{{ID: p.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	viaRole, err := s1.CreateToken(acl.Internal(), acl.TokenRequest{Roles: []state.ACLLink{{ID: role.ID}}, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if _, authz, _ := s1.Resolve(viaRole.SecretID); authz.ACLRead() {
		t.Error("a dc2 policy granted in dc1 through a role")
	}
	// Naming both, or none: it applies (the change takes effect at once).
	for _, dcs := range [][]string{{"dc1", "dc2"}, nil} {
		if _, err := s1.WritePolicy(acl.Internal(), p.ID, acl.PolicyRequest{Name: "dc2-reader", Rules: `acl = "read"`, Datacenters: dcs}); err != nil {
			t.Fatal(err)
		}
		if !canRead(s1) {
			t.Errorf("Datacenters %v: no acl:read in dc1", dcs)
		}
	}
}

// TestServiceLoginInvalidBindName: the refusal is a 400-kind error naming
// the rendered value, nothing is written, and explain shows the verdict.
func TestServiceLoginInvalidBindName(t *testing.T) {
	env := startSvc(t)
	s := env.svc("dc1")
	key := newKey(t)
	loginMethod(t, s, key, "svc-${value.name}")
	const msg = `cannot compute "service" bind name for bind target: failed to validate bindType "service": invalid bind name: "svc-web server"`
	before := env.ts.Server.State().TableIndex("acl-tokens")
	_, err := s.Login(context.Background(), acl.LoginRequest{AuthMethod: "m", BearerToken: key.sign(t, "Web Server")})
	wantCode(t, err, state.ErrInvalid, msg)
	if after := env.ts.Server.State().TableIndex("acl-tokens"); after != before {
		t.Errorf("a refused login wrote: tokens index %d -> %d", before, after)
	}
	ex, err := s.Explain(context.Background(), acl.Internal(), acl.ExplainRequest{AuthMethod: "m", Identity: map[string]any{"value.name": "Web Server"}})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, ex.LoginErr, state.ErrInvalid, msg)
	if len(ex.BindingRules) != 1 || !ex.BindingRules[0].Matched || ex.BindingRules[0].SkipReason != `bind name invalid: failed to validate bindType "service": invalid bind name: "svc-web server"` || ex.Token != nil {
		t.Errorf("explain: %+v", ex)
	}
}

// TestServiceValidation: rejections come back as state errors with the
// upstream texts, so that http/ maps them in one place.
func TestServiceValidation(t *testing.T) {
	env := startSvc(t)
	s := env.svc("dc1")
	_, err := s.WriteBindingRule(acl.Internal(), "", acl.BindingRuleRequest{AuthMethod: "m", BindType: "service", BindName: "x", Selector: "a ==", Namespace: "default"})
	if se := new(state.Error); !errors.As(err, &se) || se.Code != state.ErrInvalid {
		t.Errorf("bad selector: %v", err)
	}
	_, err = s.CreateToken(acl.Internal(), acl.TokenRequest{Policies: []state.ACLLink{{ID: "not-a-uuid"}}, Namespace: "default"})
	wantCode(t, err, state.ErrInvalid, `No such ACL policy with ID "not-a-uuid"`)
	wantCode(t, s.DeleteToken(acl.Internal(), state.AnonymousTokenID), state.ErrInvalid, "Delete operation not permitted on the anonymous token")
	wantCode(t, s.DeletePolicy(acl.Internal(), state.GlobalManagementPolicyID), state.ErrInvalid, "Delete operation not permitted on the builtin global-management policy")
	wantCode(t, s.DeleteRole(acl.Internal(), "6f1d0c52-3b0e-4c8e-8f1e-2a3b4c5d6e7f"), state.ErrNotFound, "Cannot find role to delete")
	_, err = s.WriteAuthMethod(acl.Internal(), false, acl.AuthMethodRequest{Name: "x", Type: "jwt", Namespace: "default"})
	wantCode(t, err, state.ErrInvalid, `Invalid Auth Method: exactly one of 'JWTValidationPubKeys', 'JWKSURL', or 'OIDCDiscoveryURL' must be set for type "jwt"`)
	if _, err := s.Bootstrap(); err == nil {
		t.Error("bootstrap after the initial management token succeeded")
	}
}

// key is a signing key for login tests.
type key struct{ priv ed25519.PrivateKey }

func newKey(t *testing.T) *key {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &key{priv: priv}
}

func (k *key) pem(t *testing.T) string {
	der, err := x509.MarshalPKIXPublicKey(k.priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// sign makes a JWT for subject sub, issued now (the real clock: the fake
// one starts there).
func (k *key) sign(t *testing.T, sub string) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: k.priv}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(map[string]any{"sub": sub, "iat": time.Now().Unix()}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// loginMethod creates auth method "m" trusting key, mapping sub to
// value.name, with one service rule binding bindName.
func loginMethod(t *testing.T, s *acl.Service, k *key, bindName string) {
	t.Helper()
	_, err := s.WriteAuthMethod(acl.Internal(), false, acl.AuthMethodRequest{
		Name: "m", Type: "jwt", Namespace: "default",
		Config: map[string]any{"JWTValidationPubKeys": []any{k.pem(t)}, "ClaimMappings": map[string]any{"sub": "name"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteBindingRule(acl.Internal(), "", acl.BindingRuleRequest{AuthMethod: "m", BindType: "service", BindName: bindName, Namespace: "default"}); err != nil {
		t.Fatal(err)
	}
}

// TestServiceTokenReaper: the leader routine reaps what has expired by the
// service's clock, and returns when its context ends.
func TestServiceTokenReaper(t *testing.T) {
	env := startSvc(t)
	s := env.svc("dc1")
	tok, err := s.CreateToken(acl.Internal(), acl.TokenRequest{Namespace: "default", ExpirationTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.RunTokenReaper(ctx, 5*time.Millisecond)
		close(done)
	}()
	stored := func() bool {
		_, t, _ := env.ts.Server.State().ACLTokenByAccessor(memdb.NewWatchSet(), tok.AccessorID)
		return t != nil
	}
	// Several rounds pass before the clock moves: nothing is reaped.
	before := env.ts.Server.State().TableIndex("acl-tokens")
	time.Sleep(50 * time.Millisecond)
	if !stored() || env.ts.Server.State().TableIndex("acl-tokens") != before {
		t.Fatal("the reaper deleted or wrote before any token expired")
	}
	env.clock.Advance(time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for stored() {
		if time.Now().After(deadline) {
			t.Fatal("the reaper did not delete the expired token")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunTokenReaper did not return when its context ended")
	}
}
