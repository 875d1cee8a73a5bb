package acl

import (
	"context"
	"errors"
	"time"

	"github.com/ctlplane/ctlplane/server/authmethod"
	"github.com/ctlplane/ctlplane/state"
)

// ExplainRequest asks what a login would do: the method and exactly one of
// a bearer token or an identity (field path to value).
type ExplainRequest struct {
	AuthMethod     string
	BearerToken    string
	Identity       map[string]any
	Meta           map[string]string
	Namespace      string
	NamespaceGiven bool
}

// ExplainRule is one binding rule's verdict.
type ExplainRule struct {
	ID           string
	Selector     string
	BindType     string
	BindName     string
	Matched      bool
	RenderedName string
	SkipReason   string
}

// ExplainToken is the token a login would create, without its secrets.
type ExplainToken struct {
	Description       string
	Roles             []state.ACLLink             `json:",omitempty"`
	ServiceIdentities []*state.ACLServiceIdentity `json:",omitempty"`
	NodeIdentities    []*state.ACLNodeIdentity    `json:",omitempty"`
	Local             bool
	AuthMethod        string
	ExpirationTime    *time.Time `json:",omitempty"`
	Namespace         string
}

// Explanation says what a login would do. LoginErr is the refusal login
// would answer with (nil when it would mint Token).
type Explanation struct {
	AuthMethod   string
	Namespace    string
	Identity     map[string]any
	BindingRules []ExplainRule
	Token        *ExplainToken
	LoginErr     error
}

// Explain runs the steps of login (method, validation, bind) without
// minting anything and reports the verdict of each. A login refusal is the
// explanation's LoginErr; an error return means the explain itself failed
// (a bad identity, keys that cannot be fetched, a store failure).
func (s *Service) Explain(ctx context.Context, caller Caller, req ExplainRequest) (*Explanation, error) {
	if err := caller.RequireACLRead(); err != nil {
		return nil, err
	}
	if (req.BearerToken == "") == (req.Identity == nil) {
		return nil, invalid("Explain needs exactly one of BearerToken or Identity")
	}
	if err := checkLoginMeta(req.Meta); err != nil {
		return nil, err
	}
	out := &Explanation{AuthMethod: req.AuthMethod, BindingRules: []ExplainRule{}}
	if req.NamespaceGiven {
		out.Namespace = req.Namespace
	}
	verdict := func(err error) (*Explanation, error) {
		if !isLoginRefusal(err) {
			return nil, err
		}
		out.LoginErr = err
		return out, nil
	}
	method, v, err := s.loginMethod(req.AuthMethod, req.Namespace, req.NamespaceGiven)
	if err != nil {
		return verdict(err)
	}
	out.AuthMethod, out.Namespace = method.Name, methodNamespace(method)
	var id *authmethod.Identity
	if req.Identity != nil {
		if id, err = v.Config().IdentityFromFields(req.Identity); err != nil {
			return nil, invalid("Invalid Identity: %v", err)
		}
	} else if id, err = validateBearer(ctx, v, req.BearerToken); err != nil {
		return verdict(err)
	}
	out.Identity = id.Fields()
	plan, err := s.bind(method, id, req.Meta)
	if plan != nil {
		for _, vd := range plan.bindings.Verdicts {
			out.BindingRules = append(out.BindingRules, ExplainRule{
				ID: vd.Rule.ID, Selector: vd.Rule.Selector, BindType: vd.Rule.BindType, BindName: vd.Rule.BindName,
				Matched: vd.Matched, RenderedName: vd.RenderedName, SkipReason: vd.SkipReason,
			})
		}
	}
	if err != nil {
		return verdict(err)
	}
	t := plan.token
	out.Token = &ExplainToken{
		Description: t.Description, Roles: t.Roles, ServiceIdentities: t.ServiceIdentities,
		NodeIdentities: t.NodeIdentities, Local: t.Local, AuthMethod: t.AuthMethod,
		ExpirationTime: t.ExpirationTime, Namespace: t.Namespace,
	}
	return out, nil
}

// isLoginRefusal says whether err is an answer login gives the client
// (unauthorized, forbidden, a bind name refused) rather than a failure of
// the server.
func isLoginRefusal(err error) bool {
	var ue *UnauthorizedError
	return errors.As(err, &ue) || hasCode(err, state.ErrForbidden) || hasCode(err, state.ErrInvalid)
}
