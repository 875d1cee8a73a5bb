package acl

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctlplane/ctlplane/server/authmethod"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-memdb"
)

// MethodExplainRequest asks what a login with one auth method would do:
// exactly one of a bearer token (validated as login validates it) or the
// claims of a test identity (a JSON object, projected as login projects a
// token's claims). Namespace is the resolved namespace the method is
// looked up in.
type MethodExplainRequest struct {
	AuthMethod  string
	Namespace   string
	BearerToken string
	Claims      []byte
}

// RuleExplanation is one binding rule's verdict, with the reason in words.
type RuleExplanation struct {
	ID          string
	Description string
	BindType    string
	BindName    string
	Selector    string
	// Matched says whether the selector matched.
	Matched bool
	Reason  string
	// BoundName is the interpolated BindName of a rule that binds.
	BoundName string `json:",omitempty"`
}

// TokenPreview is the token a login would mint, without secrets. Policies
// are the ones its roles carry (login links no policy directly).
type TokenPreview struct {
	Roles             []state.ACLLink
	ServiceIdentities []*state.ACLServiceIdentity
	NodeIdentities    []*state.ACLNodeIdentity
	Policies          []state.ACLLink
	Local             bool
	// ExpirationTTL is the method's MaxTokenTTL ("" when tokens do not
	// expire).
	ExpirationTTL string
}

// MethodExplanation says what a login would do. LoginErr is the refusal
// login would answer with (nil when it would mint Token).
type MethodExplanation struct {
	AuthMethod    string
	ProjectedVars map[string]any
	Rules         []RuleExplanation
	Token         *TokenPreview
	LoginErr      error
}

// ExplainMethod runs login's steps for one auth method (lookup,
// validation or claim projection, bind) without minting anything. Input
// that is wrong (an unknown method, a token that does not validate, claims
// that do not project) is an error; a login refusal is the explanation's
// LoginErr.
func (s *Service) ExplainMethod(ctx context.Context, caller Caller, req MethodExplainRequest) (*MethodExplanation, error) {
	if err := caller.RequireACLWrite(); err != nil {
		return nil, err
	}
	if (req.BearerToken == "") == (req.Claims == nil) {
		return nil, invalid("Explain needs exactly one of BearerToken or Claims")
	}
	st := s.deps.State()
	_, method, err := st.ACLAuthMethod(memdb.NewWatchSet(), req.AuthMethod)
	if err != nil {
		return nil, err
	}
	if method == nil || methodNamespace(method) != req.Namespace {
		return nil, notFound("Requested auth method does not exist: ACL not found")
	}
	v, err := s.validators.get(st, method, s.deps.Now, s.allowHTTPKeyURLs)
	if err != nil {
		return nil, err
	}
	var id *authmethod.Identity
	if req.Claims != nil {
		if id, err = v.Config().IdentityFromClaimsJSON(req.Claims); err != nil {
			return nil, invalid("Invalid Claims: %v", err)
		}
	} else if id, err = validateBearer(ctx, v, req.BearerToken); err != nil {
		var ue *UnauthorizedError
		if errors.As(err, &ue) {
			return nil, invalid("BearerToken does not validate (login would answer 401): %s", ue.Msg)
		}
		return nil, err
	}
	out := &MethodExplanation{AuthMethod: method.Name, ProjectedVars: id.Fields(), Rules: []RuleExplanation{}}
	plan, err := s.bind(method, id, nil)
	if plan != nil {
		for _, vd := range plan.bindings.Verdicts {
			out.Rules = append(out.Rules, explainVerdict(vd, id))
		}
	}
	if err != nil {
		if !isLoginRefusal(err) {
			return nil, err
		}
		out.LoginErr = err
		return out, nil
	}
	if out.Token, err = s.tokenPreview(st, method, plan); err != nil {
		return nil, err
	}
	return out, nil
}

// explainVerdict words one rule's verdict: why the selector did or did
// not match and, for a match that binds nothing, why not.
func explainVerdict(vd authmethod.RuleVerdict, id *authmethod.Identity) RuleExplanation {
	r := vd.Rule
	out := RuleExplanation{
		ID: r.ID, Description: r.Description, BindType: r.BindType, BindName: r.BindName, Selector: r.Selector,
	}
	out.Matched, out.Reason = authmethod.ExplainSelector(r.Selector, id)
	if out.Matched != vd.Matched {
		// Bind decided; the wording must not contradict it.
		out.Matched, out.Reason = vd.Matched, vd.SkipReason
	}
	switch {
	case !vd.Matched:
	case vd.NameErr != nil:
		out.Reason += fmt.Sprintf("; but BindName %q interpolates to an invalid %s name (%v), so login is refused", r.BindName, r.BindType, vd.NameErr)
	case vd.SkipReason != "":
		out.Reason += fmt.Sprintf("; but %s, so the rule binds nothing", vd.SkipReason)
	default:
		out.BoundName = vd.RenderedName
	}
	return out
}

// tokenPreview is the token of a login plan as explain shows it.
func (s *Service) tokenPreview(st *state.Store, method *state.ACLAuthMethod, plan *loginPlan) (*TokenPreview, error) {
	t := plan.token
	out := &TokenPreview{
		Roles: nonNil(t.Roles), ServiceIdentities: nonNil(t.ServiceIdentities), NodeIdentities: nonNil(t.NodeIdentities),
		Policies: []state.ACLLink{}, Local: t.Local,
	}
	if method.MaxTokenTTL > 0 {
		out.ExpirationTTL = method.MaxTokenTTL.String()
	}
	ws := memdb.NewWatchSet()
	seen := map[string]bool{}
	for _, link := range t.Roles {
		_, role, err := st.ACLRole(ws, link.ID)
		if err != nil {
			return nil, err
		}
		if role == nil {
			continue // deleted since bind read it
		}
		for _, p := range role.Policies {
			if seen[p.ID] {
				continue
			}
			_, pol, err := st.ACLPolicy(ws, p.ID)
			if err != nil {
				return nil, err
			}
			if pol != nil {
				seen[p.ID] = true
				out.Policies = append(out.Policies, state.ACLLink{ID: pol.ID, Name: pol.Name})
			}
		}
	}
	return out, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
