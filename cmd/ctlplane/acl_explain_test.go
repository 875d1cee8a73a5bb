package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// TestAuthMethodExplainCLI runs `acl auth-method explain` against a real
// server, from a claims file and from a signed JWT.
func TestAuthMethodExplainCLI(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL(mgmtSecret))
	acl := func(args ...string) cliResult { return cliAt(ts.URL, mgmtSecret, append([]string{"acl"}, args...)...) }
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	config, _ := json.Marshal(map[string]any{
		"JWTValidationPubKeys": []string{string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))},
		"ClaimMappings":        map[string]string{"sub": "name"},
		"ListClaimMappings":    map[string]string{"groups": "groups"},
	})
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	acl("auth-method", "create", "-name=k8s", "-type=jwt", "-max-token-ttl=30m", "-config=@"+write("config.json", string(config))).ok(t)
	acl("binding-rule", "create", "-method=k8s", "-selector=value.name == web", "-bind-type=service", "-bind-name=svc-${value.name}").ok(t)
	acl("binding-rule", "create", "-method=k8s", `-selector="admin" in list.groups`, "-bind-type=role", "-bind-name=admins").ok(t)

	out := acl("auth-method", "explain", "-name=k8s", "-claims-file="+write("claims.json", `{"sub":"web","groups":["dev"]}`)).ok(t)
	mustContain(t, out,
		"Auth method:  k8s",
		"Login:        would mint the token below",
		`   list.groups  ["dev"]`,
		`   value.name   "web"`,
		"Bind Type  Bind Name          Matched  Bound Name  Reason",
		"service    svc-${value.name}  yes      svc-web     selector matched",
		`role       admins             no       -           "admin" in list.groups is false: list.groups is ["dev"]`,
		"   Service identities:        svc-web",
		"   Roles:                     (none)",
		"   Expiration TTL:            30m0s",
	)

	// A signed JWT: validated first; a role that does not exist binds nothing.
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	jwtText, err := jwt.Signed(signer).Claims(map[string]any{
		"sub": "db", "groups": []string{"admin"}, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	out = acl("auth-method", "explain", "-name=k8s", "-bearer-token-file="+write("jwt", jwtText+"\n")).ok(t)
	mustContain(t, out,
		"Login:        refused: 403 Permission denied",
		`value.name == "web" is false: value.name is "db"`,
		`selector matched; but role "admins" does not exist, so the rule binds nothing`,
	)
	if strings.Contains(out, "Token:") {
		t.Errorf("a refused login shows a token:\n%s", out)
	}
	var ex explainAnswer
	jsonOut(t, acl("auth-method", "explain", "-name=k8s", "-format=json", "-bearer-token-file="+write("jwt", jwtText)).ok(t), &ex)
	if ex.LoginStatus != 403 || len(ex.Rules) != 2 || ex.ProjectedVars["value.name"] != "db" {
		t.Errorf("json: %+v", ex)
	}

	acl("auth-method", "explain", "-name=k8s", "-bearer-token-file="+write("bad", "not-a-jwt")).
		fails(t, "Error: 400 BearerToken does not validate (login would answer 401): error parsing token: ")
	acl("auth-method", "explain", "-name=nope", "-claims-file="+write("c2", `{}`)).
		fails(t, "Error: 404 Requested auth method does not exist: ACL not found\n")
	acl("auth-method", "explain", "-name=k8s").fails(t, "Error: exactly one of -bearer-token-file and -claims-file is required")
	acl("auth-method", "explain", "-name=k8s", "-claims-file="+write("c3", `{`)).fails(t, "Error: "+filepath.Join(dir, "c3")+" does not hold JSON\n")
	cliAt(ts.URL, "", "acl", "auth-method", "explain", "-name=k8s", "-claims-file="+write("c4", `{}`)).
		fails(t, "Error: 403 Permission denied: anonymous token lacks permission 'acl:write'")
}
