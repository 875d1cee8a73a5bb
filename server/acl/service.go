package acl

import (
	"errors"
	"fmt"
	"time"

	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
)

// Service is the ACL domain: tokens, policies, roles, auth methods, binding
// rules, login and explain. It validates, hashes and resolves links, writes
// through Raft and reads from the state store; it knows nothing of HTTP, so
// tests, leader routines and handlers call the same operations.
//
// Rejections are *state.Error (ErrInvalid, ErrNotFound, ErrConflict,
// ErrForbidden) or *UnauthorizedError; any other error is the server's
// (a store or Raft failure) and carries its cause.
type Service struct {
	deps       svc.Deps
	datacenter string
	resolver   Resolver
	validators validatorCache
	configs    methodConfigs
	// allowHTTPKeyURLs: auth methods may fetch keys over plain http.
	allowHTTPKeyURLs bool
	// newID makes new object IDs (tests make it collide).
	newID func() string
}

// Option changes a Service.
type Option func(*Service)

// AllowHTTPKeyURLs lets auth methods name, and fetch keys from, plain http
// JWKSURL and OIDCDiscoveryURL; only a -dev agent should (README, Security).
func AllowHTTPKeyURLs(allow bool) Option { return func(s *Service) { s.allowHTTPKeyURLs = allow } }

// NewService returns the ACL service of an agent in datacenter.
func NewService(deps svc.Deps, datacenter string, opts ...Option) *Service {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = hclog.NewNullLogger()
	}
	s := &Service{deps: deps, datacenter: datacenter, newID: uuid.NewString}
	for _, o := range opts {
		o(s)
	}
	s.resolver.Now = deps.Now
	s.resolver.Datacenter = datacenter
	return s
}

// Now is the service's clock.
func (s *Service) Now() time.Time { return s.deps.Now() }

// State is the current state store.
func (s *Service) State() *state.Store { return s.deps.State() }

// Datacenter is the agent's datacenter.
func (s *Service) Datacenter() string { return s.datacenter }

// Resolve finds the token of secret ("" is the anonymous token) and what it
// may do; an unknown or expired secret is ErrTokenNotFound.
func (s *Service) Resolve(secret string) (*state.ACLToken, *Authorizer, error) {
	return s.resolver.Resolve(s.deps.State(), secret)
}

// UnauthorizedError is a login whose bearer token did not validate.
type UnauthorizedError struct{ Msg string }

func (e *UnauthorizedError) Error() string { return e.Msg }

func invalid(format string, args ...any) error {
	return &state.Error{Code: state.ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &state.Error{Code: state.ErrNotFound, Msg: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) error {
	return &state.Error{Code: state.ErrForbidden, Msg: fmt.Sprintf(format, args...)}
}

// IsNotFound says whether err is a not-found rejection.
func IsNotFound(err error) bool { return hasCode(err, state.ErrNotFound) }

func hasCode(err error, code state.ErrorCode) bool {
	var se *state.Error
	return errors.As(err, &se) && se.Code == code
}
