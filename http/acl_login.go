package http

import (
	"errors"
	"net/http"

	"github.com/ctlplane/ctlplane/server/acl"
)

func (h *Handler) registerLogin() {
	h.handle("/v1/acl/login", methods{{http.MethodPost, h.login}})
	h.handle("/v1/acl/logout", methods{{http.MethodPost, h.logout}})
	h.handle("/v1/acl/login/explain", methods{{http.MethodPost, h.explain}})
}

// loginRequest is the body of a login.
type loginRequest struct {
	AuthMethod  string
	BearerToken string
	Meta        map[string]string
}

// explainRequest is the body of an explain: the method and exactly one of a
// bearer token or an identity (field path to value).
type explainRequest struct {
	AuthMethod  string
	BearerToken string
	Identity    map[string]any
	Meta        map[string]string
}

// explainResponse says what a login would do: LoginStatus and LoginError
// are the status and message login would answer with (200 and no error when
// it would mint Token).
type explainResponse struct {
	AuthMethod   string
	Namespace    string
	Identity     map[string]any
	BindingRules []acl.ExplainRule
	Token        *acl.ExplainToken
	LoginStatus  int
	LoginError   string `json:",omitempty"`
}

// errLoginACLDisabled: with access control off a token means nothing, so
// login and logout refuse as upstream does.
var errLoginACLDisabled = &apiError{code: http.StatusUnauthorized, msg: "ACL support disabled"}

// decodeLoginBody decodes a login or explain body strictly, with the
// upstream login message for a body that does not decode.
func decodeLoginBody(r *http.Request, out any) error {
	return decodeStrict(r, "Failed to decode request body", out)
}

// loginError gives a login refusal its status: a bearer token that did not
// validate is 401; an unknown secret is 403 `ACL not found`.
func loginError(err error) error {
	var ue *acl.UnauthorizedError
	switch {
	case errors.As(err, &ue):
		return &apiError{code: http.StatusUnauthorized, msg: ue.Msg}
	case errors.Is(err, acl.ErrTokenNotFound):
		return errACLNotFound
	}
	return err
}

// login validates a bearer token with an auth method, binds the identity
// through the method's binding rules and mints a token. No token is needed
// (any sent is ignored).
func (h *Handler) login(w http.ResponseWriter, r *http.Request) (any, error) {
	if !h.backend.ACLEnabled() {
		return nil, errLoginACLDisabled
	}
	var req loginRequest
	if err := decodeLoginBody(r, &req); err != nil {
		return nil, err
	}
	ns, given, err := loginNamespace(r)
	if err != nil {
		return nil, err
	}
	tok, err := h.services.ACL.Login(r.Context(), acl.LoginRequest{
		AuthMethod: req.AuthMethod, BearerToken: req.BearerToken, Meta: req.Meta, Namespace: ns, NamespaceGiven: given,
	})
	if err != nil {
		return nil, loginError(err)
	}
	return tok, nil
}

// logout deletes the request's token, which must have been created by login.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) (any, error) {
	if !h.backend.ACLEnabled() {
		return nil, errLoginACLDisabled
	}
	if err := h.services.ACL.Logout(requestToken(r)); err != nil {
		return nil, loginError(err)
	}
	return true, nil
}

// explain answers what a login would do, without minting anything. With
// access control off it still evaluates the rules, and says that login
// would be refused.
func (h *Handler) explain(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	var req explainRequest
	if err := decodeLoginBody(r, &req); err != nil {
		return nil, err
	}
	ns, given, err := loginNamespace(r)
	if err != nil {
		return nil, err
	}
	ex, err := h.services.ACL.Explain(r.Context(), id.caller(), acl.ExplainRequest{
		AuthMethod: req.AuthMethod, BearerToken: req.BearerToken, Identity: req.Identity, Meta: req.Meta,
		Namespace: ns, NamespaceGiven: given,
	})
	if err != nil {
		return nil, err
	}
	out := &explainResponse{
		AuthMethod: ex.AuthMethod, Namespace: ex.Namespace, Identity: ex.Identity,
		BindingRules: ex.BindingRules, Token: ex.Token, LoginStatus: http.StatusOK,
	}
	switch {
	case !h.backend.ACLEnabled():
		out.Token = nil
		out.LoginStatus, out.LoginError = errLoginACLDisabled.code, errLoginACLDisabled.msg
	case ex.LoginErr != nil:
		out.LoginStatus, out.LoginError = errorStatus(loginError(ex.LoginErr))
	}
	return out, nil
}

// loginNamespace is the namespace a login names (ns query parameter, then
// the X-Service-Namespace header); given is false when it names none.
// The caller's token plays no part: login needs none.
func loginNamespace(r *http.Request) (ns string, given bool, err error) {
	if r.URL.Query().Get("ns") == "" && r.Header.Get(servicePrefix+"Namespace") == "" {
		return "", false, nil
	}
	ns, err = resolveNamespace(r, "", &identity{}, false)
	return ns, true, err
}
