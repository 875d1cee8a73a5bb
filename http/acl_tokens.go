package http

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/gorilla/mux"
	"github.com/hashicorp/go-memdb"
)

// Token expiry bounds (Consul's defaults).
const (
	minTokenTTL = time.Minute
	maxTokenTTL = 24 * time.Hour
)

const hiddenSecret = "<hidden>"

func (h *Handler) registerTokens() {
	h.handle("/v1/acl/bootstrap", methods{{http.MethodPut, h.aclBootstrap}})
	h.handle("/v1/acl/tokens", methods{{http.MethodGet, h.tokenList}})
	h.handle("/v1/acl/token", methods{{http.MethodPut, h.tokenWrite}})
	h.handle("/v1/acl/token/self", methods{{http.MethodGet, h.tokenSelf}})
	h.handle("/v1/acl/token/{id:.+}", methods{
		{http.MethodGet, h.tokenRead},
		{http.MethodPut, h.tokenWrite},
		{http.MethodDelete, h.tokenDelete},
	})
}

// duration accepts a Go duration string ("1h") or a number of nanoseconds.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("invalid duration %q", s)
		}
		*d = duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("a duration is a string such as \"1h\" or a number of nanoseconds")
	}
	*d = duration(n)
	return nil
}

// tokenRequest is the body of token create and update. The output fields
// clients send back (the official client sends the whole object) are known
// and ignored.
type tokenRequest struct {
	AccessorID        string
	SecretID          string
	Description       string
	Policies          []state.ACLLink
	Roles             []state.ACLLink
	ServiceIdentities []*state.ACLServiceIdentity
	NodeIdentities    []*state.ACLNodeIdentity
	Local             bool
	AuthMethod        string
	ExpirationTime    *time.Time
	ExpirationTTL     duration
	Namespace         string
	CreateTime        time.Time
	Hash              []byte
	CreateIndex       uint64
	ModifyIndex       uint64
	Name              string
	Partition         string
}

// tokenView is a token as a caller may see it: link names resolved from
// the current policies and roles (links to deleted ones dropped), and the
// secret hidden from callers without acl:write.
func tokenView(s *state.Store, tok *state.ACLToken, showSecret bool) *state.ACLToken {
	out := *tok
	if !showSecret {
		out.SecretID = hiddenSecret
	}
	ws := memdb.NewWatchSet()
	out.Policies = nil
	for _, l := range tok.Policies {
		if _, p, err := s.ACLPolicy(ws, l.ID); err == nil && p != nil {
			out.Policies = append(out.Policies, state.ACLLink{ID: p.ID, Name: p.Name})
		}
	}
	out.Roles = nil
	for _, l := range tok.Roles {
		if _, r, err := s.ACLRole(ws, l.ID); err == nil && r != nil {
			out.Roles = append(out.Roles, state.ACLLink{ID: r.ID, Name: r.Name})
		}
	}
	return &out
}

func (h *Handler) tokenList(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	show := id.authz.ACLWrite()
	q := r.URL.Query()
	policy, role, method := q.Get("policy"), q.Get("role"), q.Get("authmethod")
	keep := func(t *state.ACLToken) bool {
		return (policy == "" || hasLink(t.Policies, policy)) &&
			(role == "" || hasLink(t.Roles, role)) &&
			(method == "" || t.AuthMethod == method)
	}
	var out []*state.ACLToken
	return h.aclRead(w, r, noNamespace, func(ws memdb.WatchSet, s *state.Store, _ string) (uint64, bool, error) {
		// Expired tokens are gone as far as clients can tell, reaped or not
		// (upstream's TokenList skips them too).
		now := time.Now()
		idx, tokens, err := s.ACLTokens(ws, func(t *state.ACLToken) bool { return !t.Expired(now) && keep(t) })
		out = make([]*state.ACLToken, len(tokens))
		for i, t := range tokens {
			out[i] = tokenView(s, t, show)
		}
		return idx, true, err
	}, func() any { return out }, "")
}

func hasLink(links []state.ACLLink, id string) bool {
	for _, l := range links {
		if strings.EqualFold(l.ID, id) {
			return true
		}
	}
	return false
}

func (h *Handler) tokenRead(w http.ResponseWriter, r *http.Request) (any, error) {
	accessor, err := pathID(r, "token")
	if err != nil {
		return nil, err
	}
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	show := id.authz.ACLWrite()
	var out *state.ACLToken
	return h.aclRead(w, r, noNamespace, func(ws memdb.WatchSet, s *state.Store, _ string) (uint64, bool, error) {
		idx, t, err := s.ACLTokenByAccessor(ws, accessor)
		if t != nil && t.Expired(time.Now()) {
			t = nil // not found, as upstream's TokenRead says until it is reaped
		}
		if t != nil {
			out = tokenView(s, t, show)
		}
		return idx, t != nil, err
	}, func() any { return out }, "Requested token does not exist: ACL not found")
}

// tokenSelf shows the caller its own token; it needs no permission. It is a
// read like the others (query options, blocking, the read headers), as
// upstream's is: the official client takes its QueryMeta from the headers.
func (h *Handler) tokenSelf(w http.ResponseWriter, r *http.Request) (any, error) {
	if !h.backend.ACLEnabled() {
		return nil, &apiError{code: http.StatusUnauthorized, msg: "ACL support disabled"}
	}
	opts, err := parseQueryOptions(r)
	if err != nil {
		return nil, err
	}
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	var out *state.ACLToken
	meta, err := h.blockingQuery(r, opts, func(ws memdb.WatchSet, s *state.Store) (uint64, error) {
		idx, t, err := s.ACLTokenByAccessor(ws, id.token.AccessorID)
		out = nil
		if t != nil && !t.Expired(time.Now()) {
			out = tokenView(s, t, true)
		}
		return idx, err
	})
	if err != nil {
		return nil, err
	}
	setMeta(w, r, meta)
	if out == nil {
		return nil, errACLNotFound // deleted or expired while the query waited
	}
	return out, nil
}

func (h *Handler) aclBootstrap(w http.ResponseWriter, r *http.Request) (any, error) {
	if !h.backend.ACLEnabled() {
		return nil, &apiError{code: http.StatusUnauthorized, msg: "ACL support disabled"}
	}
	tok := state.ACLToken{
		AccessorID:  uuid.NewString(),
		SecretID:    uuid.NewString(),
		Description: "Bootstrap Token (Global Management)",
		Policies:    []state.ACLLink{{ID: state.GlobalManagementPolicyID, Name: state.GlobalManagementPolicyName}},
		Namespace:   state.DefaultNamespace,
		CreateTime:  time.Now().UTC(),
	}
	tok.Hash = tokenHash(&tok)
	return h.backend.Apply(fsm.ACLBootstrapType, &fsm.ACLTokenSetRequest{Token: tok, Create: true})
}

func tokenHash(t *state.ACLToken) []byte {
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

var identityNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9\-_]*[a-z0-9])?$`)

// tokenWrite creates a token (no ID in the path) or replaces one.
func (h *Handler) tokenWrite(w http.ResponseWriter, r *http.Request) (any, error) {
	pathVal, update := mux.Vars(r)["id"]
	if update {
		if _, err := pathID(r, "token"); err != nil {
			return nil, err
		}
	}
	caller, err := h.require(r, permACLWrite)
	if err != nil {
		return nil, err
	}
	var req tokenRequest
	if err := decodeBody(r, "Token", &req); err != nil {
		return nil, err
	}
	s := h.backend.State()
	ns, err := resolveNamespace(r, req.Namespace, caller, false)
	if err != nil {
		return nil, err
	}
	tok := state.ACLToken{
		AccessorID:        req.AccessorID,
		SecretID:          req.SecretID,
		Description:       req.Description,
		ServiceIdentities: req.ServiceIdentities,
		NodeIdentities:    req.NodeIdentities,
		Local:             req.Local,
		Namespace:         ns,
	}
	if tok.Policies, err = resolveLinks(req.Policies, "policy", findPolicy(s)); err != nil {
		return nil, err
	}
	if tok.Roles, err = resolveLinks(req.Roles, "role", findRole(s)); err != nil {
		return nil, err
	}
	if err := validateIdentities(tok.ServiceIdentities, tok.NodeIdentities, "token"); err != nil {
		return nil, err
	}

	if update {
		_, existing, err := s.ACLTokenByAccessor(memdb.NewWatchSet(), pathVal)
		if err != nil {
			return nil, err
		}
		if existing == nil || existing.Expired(time.Now()) {
			return nil, notFound("Cannot find token " + pathVal)
		}
		if req.AccessorID != "" && !strings.EqualFold(req.AccessorID, existing.AccessorID) {
			return nil, badRequest("Token Accessor ID in URL and payload do not match")
		}
		if req.SecretID != "" && req.SecretID != existing.SecretID {
			return nil, badRequest("Changing a token's SecretID is not permitted")
		}
		if req.AuthMethod != "" && req.AuthMethod != existing.AuthMethod {
			return nil, badRequest("Cannot change AuthMethod of %s", existing.AccessorID)
		}
		if req.Local != existing.Local {
			return nil, badRequest("Cannot toggle local mode of %s", existing.AccessorID)
		}
		if (req.ExpirationTTL != 0 && time.Duration(req.ExpirationTTL) != existing.ExpirationTTL) ||
			(req.ExpirationTime != nil && (existing.ExpirationTime == nil || !req.ExpirationTime.Equal(*existing.ExpirationTime))) {
			return nil, badRequest("Cannot change expiration time of %s", existing.AccessorID)
		}
		tok.AccessorID = existing.AccessorID
		if req.Namespace == "" {
			// An update keeps the token's namespace unless the body names
			// one: it must not move to the caller's.
			tok.Namespace = existing.Namespace
		}
		tok.AuthMethod = existing.AuthMethod
		tok.ExpirationTime = existing.ExpirationTime
		tok.ExpirationTTL = existing.ExpirationTTL
	} else {
		if req.AuthMethod != "" {
			return nil, badRequest("AuthMethod field is disallowed outside of login")
		}
		if err := h.newTokenIDs(s, &tok); err != nil {
			return nil, err
		}
		tok.CreateTime = time.Now().UTC()
		if err := setExpiry(&tok, req.ExpirationTime, time.Duration(req.ExpirationTTL)); err != nil {
			return nil, err
		}
	}
	tok.Hash = tokenHash(&tok)
	resp, err := h.backend.Apply(fsm.ACLTokenSetType, &fsm.ACLTokenSetRequest{Token: tok, Create: !update})
	if err != nil {
		return nil, err
	}
	return tokenView(h.backend.State(), resp.(*state.ACLToken), true), nil
}

// newTokenIDs checks client-chosen IDs (UUIDs, unused) or generates them.
func (h *Handler) newTokenIDs(s *state.Store, tok *state.ACLToken) error {
	ws := memdb.NewWatchSet()
	if tok.AccessorID == "" {
		tok.AccessorID = uuid.NewString()
	} else if !uuidRE.MatchString(tok.AccessorID) {
		return badRequest("Invalid Token: AccessorID is not a valid UUID")
	} else if _, t, _ := s.ACLTokenByAccessor(ws, tok.AccessorID); t != nil {
		return badRequest("Invalid Token: AccessorID is already in use")
	}
	if tok.SecretID == "" {
		tok.SecretID = uuid.NewString()
	} else if !uuidRE.MatchString(tok.SecretID) {
		return badRequest("Invalid Token: SecretID is not a valid UUID")
	} else if _, t, _ := s.ACLTokenBySecret(ws, tok.SecretID); t != nil {
		return badRequest("Invalid Token: SecretID is already in use")
	}
	return nil
}

// setExpiry sets a new token's expiry from an absolute time or a TTL.
func setExpiry(tok *state.ACLToken, at *time.Time, ttl time.Duration) error {
	switch {
	case at != nil && ttl != 0:
		return badRequest("Expiration TTL and Expiration Time cannot both be set")
	case ttl < 0:
		return badRequest("Token Expiration TTL '%s' should be > 0", ttl)
	case ttl != 0 && (ttl < minTokenTTL || ttl > maxTokenTTL):
		return badRequest("Token Expiration TTL '%s' should be between %s and %s", ttl, minTokenTTL, maxTokenTTL)
	case ttl != 0:
		exp := tok.CreateTime.Add(ttl)
		tok.ExpirationTime, tok.ExpirationTTL = &exp, ttl
	case at != nil:
		if !at.After(tok.CreateTime) {
			return badRequest("ExpirationTime cannot be in the past")
		}
		if d := at.Sub(tok.CreateTime); d < minTokenTTL || d > maxTokenTTL {
			return badRequest("ExpirationTime must be between %s and %s from now", minTokenTTL, maxTokenTTL)
		}
		exp := at.UTC()
		tok.ExpirationTime = &exp
	}
	return nil
}

// resolveLinks turns links given by ID or name into stored links (ID and
// name), without duplicates; a link to nothing is an error.
func resolveLinks(links []state.ACLLink, kind string, find func(id, name string) (string, string, bool)) ([]state.ACLLink, error) {
	var out []state.ACLLink
	seen := map[string]bool{}
	for _, l := range links {
		if l.ID == "" && l.Name == "" {
			return nil, badRequest("%s link is missing both an ID and a Name", kind)
		}
		id, name, ok := find(l.ID, l.Name)
		if !ok {
			if l.ID != "" {
				return nil, badRequest("No such ACL %s with ID %q", kind, l.ID)
			}
			return nil, badRequest("No such ACL %s with name %q", kind, l.Name)
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, state.ACLLink{ID: id, Name: name})
		}
	}
	return out, nil
}

// findPolicy looks a policy link up by ID, else by name.
func findPolicy(s *state.Store) func(id, name string) (string, string, bool) {
	return func(id, name string) (string, string, bool) {
		var p *state.ACLPolicy
		if id != "" {
			_, p, _ = s.ACLPolicy(memdb.NewWatchSet(), id)
		} else {
			_, p, _ = s.ACLPolicyByName(memdb.NewWatchSet(), name)
		}
		if p == nil {
			return "", "", false
		}
		return p.ID, p.Name, true
	}
}

// findRole looks a role link up by ID, else by name.
func findRole(s *state.Store) func(id, name string) (string, string, bool) {
	return func(id, name string) (string, string, bool) {
		var r *state.ACLRole
		if id != "" {
			_, r, _ = s.ACLRole(memdb.NewWatchSet(), id)
		} else {
			_, r, _ = s.ACLRoleByName(memdb.NewWatchSet(), name)
		}
		if r == nil {
			return "", "", false
		}
		return r.ID, r.Name, true
	}
}

// validateIdentities checks service and node identities of a token or role.
func validateIdentities(services []*state.ACLServiceIdentity, nodes []*state.ACLNodeIdentity, owner string) error {
	for _, si := range services {
		if si == nil || si.ServiceName == "" {
			return badRequest("Service identity is missing the service name field on this %s", owner)
		}
		if len(si.ServiceName) > 256 || !identityNameRE.MatchString(si.ServiceName) {
			return badRequest("Service identity %q has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed", si.ServiceName)
		}
	}
	for _, ni := range nodes {
		if ni == nil || ni.NodeName == "" {
			return badRequest("Node identity is missing the node name field on this %s", owner)
		}
		if ni.Datacenter == "" {
			return badRequest("Node identity is missing the datacenter field on this %s", owner)
		}
		if len(ni.NodeName) > 256 || !identityNameRE.MatchString(ni.NodeName) {
			return badRequest("Node identity has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed")
		}
	}
	return nil
}

func (h *Handler) tokenDelete(w http.ResponseWriter, r *http.Request) (any, error) {
	accessor, err := pathID(r, "token")
	if err != nil {
		return nil, err
	}
	caller, err := h.require(r, permACLWrite)
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(accessor, state.AnonymousTokenID) {
		return nil, badRequest("Delete operation not permitted on the anonymous token")
	}
	if caller.token != nil && strings.EqualFold(caller.token.AccessorID, accessor) {
		return nil, badRequest("Deletion of the request's authorization token is not permitted")
	}
	if _, err := h.backend.Apply(fsm.ACLTokenDeleteType, &fsm.ACLTokenDeleteRequest{AccessorID: accessor}); err != nil {
		if isNotFound(err) {
			return nil, notFound("Cannot find token to delete")
		}
		return nil, err
	}
	return true, nil
}
