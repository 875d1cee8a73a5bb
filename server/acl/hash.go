package acl

import (
	"fmt"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// TokenHash is the one content hash of a token: what it grants and how it
// is described, never its secret, indexes or times. Every writer (token
// create and update, login, bootstrap, the built-in tokens) uses it, so an
// update that changes nothing keeps the Hash.
func TokenHash(t *state.ACLToken) []byte {
	fields := []string{t.Description, t.AuthMethod, fmt.Sprint(t.Local), t.Namespace}
	for _, l := range t.Policies {
		fields = append(fields, "p:"+l.ID)
	}
	for _, l := range t.Roles {
		fields = append(fields, "r:"+l.ID)
	}
	for _, si := range t.ServiceIdentities {
		fields = append(fields, "s:"+si.ServiceName+":"+strings.Join(si.Datacenters, ","))
	}
	for _, ni := range t.NodeIdentities {
		fields = append(fields, "n:"+ni.NodeName+":"+ni.Datacenter)
	}
	return state.HashOf(fields...)
}

// PolicyHash is the content hash of a policy.
func PolicyHash(p *state.ACLPolicy) []byte {
	return state.HashOf(append([]string{p.Name, p.Description, p.Rules}, p.Datacenters...)...)
}

// RoleHash is the content hash of a role.
func RoleHash(r *state.ACLRole) []byte {
	fields := []string{r.Name, r.Description}
	for _, l := range r.Policies {
		fields = append(fields, "p:"+l.ID)
	}
	for _, si := range r.ServiceIdentities {
		fields = append(fields, "s:"+si.ServiceName+":"+strings.Join(si.Datacenters, ","))
	}
	for _, ni := range r.NodeIdentities {
		fields = append(fields, "n:"+ni.NodeName+":"+ni.Datacenter)
	}
	return state.HashOf(fields...)
}

var globalManagementLink = state.ACLLink{ID: state.GlobalManagementPolicyID, Name: state.GlobalManagementPolicyName}

// GlobalManagementPolicy is the built-in policy that allows everything.
func GlobalManagementPolicy() state.ACLPolicy {
	p := state.ACLPolicy{
		ID:          state.GlobalManagementPolicyID,
		Name:        state.GlobalManagementPolicyName,
		Description: "Builtin Policy that grants unlimited access",
		Rules:       "acl = \"write\"\noperator = \"write\"\nnamespace \"*\" {\n  policy = \"write\"\n}\n",
	}
	p.Hash = PolicyHash(&p)
	return p
}

// AnonymousToken is the built-in token of requests that carry none.
func AnonymousToken(now time.Time) state.ACLToken {
	t := state.ACLToken{
		AccessorID:  state.AnonymousTokenID,
		SecretID:    state.AnonymousTokenSecret,
		Description: "Anonymous Token",
		Namespace:   state.DefaultNamespace,
		CreateTime:  now.UTC(),
	}
	t.Hash = TokenHash(&t)
	return t
}

// ManagementToken is a new global-management token: the bootstrap token or
// the configured initial one (secret "" generates one).
func ManagementToken(description, secret string, now time.Time) state.ACLToken {
	if secret == "" {
		secret = uuid.NewString()
	}
	t := state.ACLToken{
		AccessorID:  uuid.NewString(),
		SecretID:    secret,
		Description: description,
		Policies:    []state.ACLLink{globalManagementLink},
		Namespace:   state.DefaultNamespace,
		CreateTime:  now.UTC(),
	}
	t.Hash = TokenHash(&t)
	return t
}
