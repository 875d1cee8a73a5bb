package acl

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/ctlplane/ctlplane/server/acl/bindrule"
	"github.com/ctlplane/ctlplane/server/authmethod"
)

// benchJWTConfig is a jwt auth method's config with claim mappings, as the
// load generator's headline create load uses.
var benchJWTConfig = map[string]any{
	"JWTValidationPubKeys": []any{benchPubKey},
	"ClaimMappings":        map[string]any{"sub": "name", "team": "team"},
	"ListClaimMappings":    map[string]any{"groups": "groups"},
	"BoundAudiences":       []any{"ctlplane"},
}

var benchSeq atomic.Int64

// BenchmarkValidateDistinctBindName is what a create with a BindName never
// seen before costs to validate (issue 20's target: 10 µs): the rule's own
// fields, then against its jwt auth method, whose config the service parses
// once per method (methodConfigs). Nothing about the rule is cached. The
// same with the libraries parsing every field (the before) is bindrule's
// BenchmarkValidateDistinct.
func BenchmarkValidateDistinctBindName(b *testing.B) {
	cfg, err := authmethod.ParseConfig(benchJWTConfig)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		name := fmt.Sprintf("svc%d-${value.name}", benchSeq.Add(1))
		if err := bindrule.ValidateFields("value.team==a", "service", name); err != nil {
			b.Fatal(err)
		}
		if err := cfg.ValidateBindingRule("value.team==a", "service", name); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseMethodConfig is what parsing the method's config costs
// (once per method version; it was once per create).
func BenchmarkParseMethodConfig(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := authmethod.ParseConfig(benchJWTConfig); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPubKey is a P-256 public key in PEM, made once.
var benchPubKey = func() string {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}()
