package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/gorilla/mux"
)

// registerAuthMethodExplain adds the per-method explain route. It is
// registered before /v1/acl/auth-method/{name:.+}, which would otherwise
// take the path (method names cannot hold a "/").
func (h *Handler) registerAuthMethodExplain() {
	h.handle("/v1/acl/auth-method/{name}/explain", methods{{http.MethodPost, h.authMethodExplain}})
}

// methodExplainRequest is the body of an explain: exactly one of a bearer
// token or the claims of a test identity.
type methodExplainRequest struct {
	BearerToken string
	Claims      json.RawMessage
}

// methodExplainResponse says what a login would do. Error is what login
// would answer ("<status> <message>"), LoginStatus its status (200 when
// it would mint Token).
type methodExplainResponse struct {
	AuthMethod    string
	ProjectedVars map[string]any
	Rules         []acl.RuleExplanation
	Token         *acl.TokenPreview
	Error         string `json:",omitempty"`
	LoginStatus   int
}

// authMethodExplain answers which binding rules a login would match and
// the token it would mint, minting nothing. It needs acl:write: it is an
// oracle for bearer tokens and shows every rule of the method (README,
// Login explain).
func (h *Handler) authMethodExplain(w http.ResponseWriter, r *http.Request) (any, error) {
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	var req methodExplainRequest
	if err := decodeBody(r, "Explain", &req); err != nil {
		return nil, err
	}
	ns, err := resolveNamespace(r, "", id, false)
	if err != nil {
		return nil, err
	}
	claims := []byte(req.Claims)
	if len(claims) == 0 || bytes.Equal(bytes.TrimSpace(claims), []byte("null")) {
		claims = nil
	}
	ex, err := h.services.ACL.ExplainMethod(r.Context(), id.caller(), acl.MethodExplainRequest{
		AuthMethod: mux.Vars(r)["name"], Namespace: ns, BearerToken: req.BearerToken, Claims: claims,
	})
	if err != nil {
		return nil, err
	}
	out := &methodExplainResponse{
		AuthMethod: ex.AuthMethod, ProjectedVars: ex.ProjectedVars, Rules: ex.Rules, Token: ex.Token,
		LoginStatus: http.StatusOK,
	}
	loginErr := loginError(ex.LoginErr)
	if !h.backend.ACLEnabled() {
		loginErr = errLoginACLDisabled
	}
	if loginErr != nil {
		out.Token = nil
		status, msg := errorStatus(loginErr)
		out.LoginStatus, out.Error = status, fmt.Sprintf("%d %s", status, msg)
	}
	return out, nil
}
