package acl

import (
	"context"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
)

// Token expiry bounds (Consul's defaults).
const (
	minTokenTTL = time.Minute
	maxTokenTTL = 24 * time.Hour
)

// HiddenSecret replaces a token's secret for callers without acl:write.
const HiddenSecret = "<hidden>"

// TokenRequest is a token create or update as a client asks for it.
type TokenRequest struct {
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
	ExpirationTTL     time.Duration
	// Namespace of the token; on update "" keeps the token's own (an
	// update must not move it to the caller's).
	Namespace string
}

// TokenView is a token as a caller may see it: link names resolved from the
// current policies and roles (links to deleted ones dropped), and the secret
// hidden unless showSecret. Linked objects are watched in ws.
func TokenView(ws memdb.WatchSet, st *state.Store, tok *state.ACLToken, showSecret bool) (*state.ACLToken, error) {
	out := *tok
	if !showSecret {
		out.SecretID = HiddenSecret
	}
	var err error
	if out.Policies, err = currentLinks(tok.Policies, policyName(ws, st)); err != nil {
		return nil, err
	}
	if out.Roles, err = currentLinks(tok.Roles, roleName(ws, st)); err != nil {
		return nil, err
	}
	return &out, nil
}

// TokenFilter selects tokens of a list ("" matches anything).
type TokenFilter struct{ Policy, Role, AuthMethod string }

// ListTokens lists the live tokens f accepts, as callers see them. Expired
// tokens are gone as far as clients can tell, reaped or not (upstream's
// TokenList skips them too).
func (s *Service) ListTokens(ws memdb.WatchSet, st *state.Store, f TokenFilter, showSecret bool) (uint64, []*state.ACLToken, error) {
	now := s.Now()
	idx, tokens, err := st.ACLTokens(ws, func(t *state.ACLToken) bool {
		return !t.Expired(now) &&
			(f.Policy == "" || HasLink(t.Policies, f.Policy)) &&
			(f.Role == "" || HasLink(t.Roles, f.Role)) &&
			(f.AuthMethod == "" || t.AuthMethod == f.AuthMethod)
	})
	if err != nil {
		return 0, nil, err
	}
	out := make([]*state.ACLToken, len(tokens))
	for i, t := range tokens {
		if out[i], err = TokenView(ws, st, t, showSecret); err != nil {
			return 0, nil, err
		}
	}
	return idx, out, nil
}

// ReadToken returns the live token with that AccessorID as the caller sees
// it, or nil: an expired token is not found until it is reaped, as
// upstream's TokenRead says.
func (s *Service) ReadToken(ws memdb.WatchSet, st *state.Store, accessor string, showSecret bool) (uint64, *state.ACLToken, error) {
	idx, t, err := st.ACLTokenByAccessor(ws, accessor)
	if err != nil || t == nil || t.Expired(s.Now()) {
		return idx, nil, err
	}
	view, err := TokenView(ws, st, t, showSecret)
	return idx, view, err
}

// Bootstrap creates the first management token; a second bootstrap is
// refused (ErrForbidden, with the reset index).
func (s *Service) Bootstrap() (*state.ACLToken, error) {
	tok := ManagementToken("Bootstrap Token (Global Management)", "", s.Now())
	return fsm.Apply(s.deps.Raft, fsm.ACLBootstrap, &fsm.ACLTokenSetRequest{Token: tok, Create: true})
}

// CreateToken validates and creates a token.
func (s *Service) CreateToken(caller Caller, req TokenRequest) (*state.ACLToken, error) {
	if err := caller.RequireACLWrite(); err != nil {
		return nil, err
	}
	return s.writeToken("", req)
}

// UpdateToken replaces what the token with that AccessorID grants; its
// secret, auth method, locality and expiry never change.
func (s *Service) UpdateToken(caller Caller, accessor string, req TokenRequest) (*state.ACLToken, error) {
	if err := caller.RequireACLWrite(); err != nil {
		return nil, err
	}
	return s.writeToken(accessor, req)
}

func (s *Service) writeToken(accessor string, req TokenRequest) (*state.ACLToken, error) {
	update := accessor != ""
	if err := checkLen("Invalid Token", "Description", req.Description, MaxDescriptionLength); err != nil {
		return nil, err
	}
	st := s.deps.State()
	tok := state.ACLToken{
		AccessorID:        req.AccessorID,
		SecretID:          req.SecretID,
		Description:       req.Description,
		ServiceIdentities: req.ServiceIdentities,
		NodeIdentities:    req.NodeIdentities,
		Local:             req.Local,
		Namespace:         req.Namespace,
	}
	var err error
	if tok.Policies, err = resolveLinks(req.Policies, "policy", findPolicy(st)); err != nil {
		return nil, err
	}
	if tok.Roles, err = resolveLinks(req.Roles, "role", findRole(st)); err != nil {
		return nil, err
	}
	if err := validateIdentities(tok.ServiceIdentities, tok.NodeIdentities, "token"); err != nil {
		return nil, err
	}
	if update {
		if err := s.checkTokenUpdate(st, accessor, req, &tok); err != nil {
			return nil, err
		}
	} else {
		if req.AuthMethod != "" {
			return nil, invalid("AuthMethod field is disallowed outside of login")
		}
		if tok.Namespace == "" {
			tok.Namespace = state.DefaultNamespace
		}
		if err := newTokenIDs(st, &tok); err != nil {
			return nil, err
		}
		tok.CreateTime = s.Now().UTC()
		if err := setExpiry(&tok, req.ExpirationTime, req.ExpirationTTL); err != nil {
			return nil, err
		}
	}
	tok.Hash = TokenHash(&tok)
	stored, err := fsm.Apply(s.deps.Raft, fsm.ACLTokenSet, &fsm.ACLTokenSetRequest{Token: tok, Create: !update})
	if err != nil {
		return nil, err
	}
	return TokenView(memdb.NewWatchSet(), s.deps.State(), stored, true)
}

// checkTokenUpdate applies upstream's immutability rules and copies what an
// update keeps from the existing token into tok.
func (s *Service) checkTokenUpdate(st *state.Store, accessor string, req TokenRequest, tok *state.ACLToken) error {
	_, existing, err := st.ACLTokenByAccessor(memdb.NewWatchSet(), accessor)
	if err != nil {
		return err
	}
	if existing == nil || existing.Expired(s.Now()) {
		return notFound("Cannot find token %s", accessor)
	}
	if req.AccessorID != "" && !strings.EqualFold(req.AccessorID, existing.AccessorID) {
		return invalid("Token Accessor ID in URL and payload do not match")
	}
	if req.SecretID != "" && req.SecretID != existing.SecretID {
		return invalid("Changing a token's SecretID is not permitted")
	}
	if req.AuthMethod != "" && req.AuthMethod != existing.AuthMethod {
		return invalid("Cannot change AuthMethod of %s", existing.AccessorID)
	}
	if req.Local != existing.Local {
		return invalid("Cannot toggle local mode of %s", existing.AccessorID)
	}
	if (req.ExpirationTTL != 0 && req.ExpirationTTL != existing.ExpirationTTL) ||
		(req.ExpirationTime != nil && (existing.ExpirationTime == nil || !req.ExpirationTime.Equal(*existing.ExpirationTime))) {
		return invalid("Cannot change expiration time of %s", existing.AccessorID)
	}
	tok.AccessorID = existing.AccessorID
	tok.SecretID = existing.SecretID
	if tok.Namespace == "" {
		tok.Namespace = existing.Namespace
	}
	tok.AuthMethod = existing.AuthMethod
	tok.CreateTime = existing.CreateTime
	tok.ExpirationTime = existing.ExpirationTime
	tok.ExpirationTTL = existing.ExpirationTTL
	return nil
}

// newTokenIDs checks client-chosen IDs (UUIDs, unused) or generates them.
func newTokenIDs(st *state.Store, tok *state.ACLToken) error {
	ws := memdb.NewWatchSet()
	if tok.AccessorID == "" {
		tok.AccessorID = uuid.NewString()
	} else if !uuidRE.MatchString(tok.AccessorID) {
		return invalid("Invalid Token: AccessorID is not a valid UUID")
	} else if _, t, err := st.ACLTokenByAccessor(ws, tok.AccessorID); err != nil {
		return err
	} else if t != nil {
		return invalid("Invalid Token: AccessorID is already in use")
	}
	if tok.SecretID == "" {
		tok.SecretID = uuid.NewString()
	} else if !uuidRE.MatchString(tok.SecretID) {
		return invalid("Invalid Token: SecretID is not a valid UUID")
	} else if _, t, err := st.ACLTokenBySecret(ws, tok.SecretID); err != nil {
		return err
	} else if t != nil {
		return invalid("Invalid Token: SecretID is already in use")
	}
	return nil
}

// setExpiry sets a new token's expiry from an absolute time or a TTL.
func setExpiry(tok *state.ACLToken, at *time.Time, ttl time.Duration) error {
	switch {
	case at != nil && ttl != 0:
		return invalid("Expiration TTL and Expiration Time cannot both be set")
	case ttl < 0:
		return invalid("Token Expiration TTL '%s' should be > 0", ttl)
	case ttl != 0 && (ttl < minTokenTTL || ttl > maxTokenTTL):
		return invalid("Token Expiration TTL '%s' should be between %s and %s", ttl, minTokenTTL, maxTokenTTL)
	case ttl != 0:
		exp := tok.CreateTime.Add(ttl)
		tok.ExpirationTime, tok.ExpirationTTL = &exp, ttl
	case at != nil:
		if !at.After(tok.CreateTime) {
			return invalid("ExpirationTime cannot be in the past")
		}
		if d := at.Sub(tok.CreateTime); d < minTokenTTL || d > maxTokenTTL {
			return invalid("ExpirationTime must be between %s and %s from now", minTokenTTL, maxTokenTTL)
		}
		exp := at.UTC()
		tok.ExpirationTime = &exp
	}
	return nil
}

// DeleteToken deletes a token. The anonymous token and the caller's own
// cannot be deleted.
func (s *Service) DeleteToken(caller Caller, accessor string) error {
	if err := caller.RequireACLWrite(); err != nil {
		return err
	}
	callerAccessor := caller.AccessorID
	if strings.EqualFold(accessor, state.AnonymousTokenID) {
		return invalid("Delete operation not permitted on the anonymous token")
	}
	if callerAccessor != "" && strings.EqualFold(callerAccessor, accessor) {
		return invalid("Deletion of the request's authorization token is not permitted")
	}
	_, err := fsm.Apply(s.deps.Raft, fsm.ACLTokenDelete, &fsm.ACLTokenDeleteRequest{AccessorID: accessor})
	if IsNotFound(err) {
		return notFound("Cannot find token to delete")
	}
	return err
}

// ReapExpiredTokens deletes the tokens that have expired by the service's
// clock and returns how many it deleted. Expired tokens are refused at once
// anyway; reaping frees the space. It runs on the leader.
func (s *Service) ReapExpiredTokens() (int, error) {
	now := s.Now()
	_, expired, err := s.deps.State().ACLTokens(memdb.NewWatchSet(), func(t *state.ACLToken) bool { return t.Expired(now) })
	if err != nil || len(expired) == 0 {
		return 0, err
	}
	ids := make([]string, len(expired))
	for i, t := range expired {
		ids[i] = t.AccessorID
	}
	return fsm.Apply(s.deps.Raft, fsm.ACLTokenReap, &fsm.ACLTokenReapRequest{AccessorIDs: ids, Now: now})
}

// RunTokenReaper reaps expired tokens every interval until ctx ends: a
// leader routine (registered with the server's leader-routine registry).
func (s *Service) RunTokenReaper(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			n, err := s.ReapExpiredTokens()
			if err != nil {
				s.deps.Logger.Warn("failed to reap expired tokens", "error", err)
			} else if n > 0 {
				s.deps.Logger.Debug("reaped expired tokens", "count", n)
			}
		}
	}
}
