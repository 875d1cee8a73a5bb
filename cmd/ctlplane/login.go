package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/ctlplane/ctlplane/api"
)

const loginUsage = `Usage: ctlplane login -method=NAME -bearer-token-file=FILE [-token-sink-file=FILE] [-meta=KEY=VALUE ...]

  Exchanges a bearer token (e.g. a JWT) for an ACL token through an auth
  method. Prints the new token's SecretID (-format=json: the whole token), or
  writes the SecretID to -token-sink-file (mode 0600) and prints nothing.
`

const logoutUsage = `Usage: ctlplane logout [-token=SECRET]

  Destroys the token given with -token (env CTLPLANE_TOKEN); it must have
  been created by ctlplane login.
`

// loginRequest is the body of POST /v1/acl/login.
type loginRequest struct {
	AuthMethod  string
	BearerToken string
	Meta        map[string]string `json:",omitempty"`
}

func runLogin(args []string, stdout, stderr io.Writer) int {
	c := newACLCmd("login", loginUsage, true, stdout, stderr)
	method := c.flags.String("method", "", "name of the auth method to log in with")
	bearerFile := c.flags.String("bearer-token-file", "", "file holding the bearer token")
	sink := c.flags.String("token-sink-file", "", "file to write the new token's SecretID to (mode 0600)")
	var meta stringList
	c.flags.Var(&meta, "meta", "KEY=VALUE to store in the token's description; repeatable")
	if !c.parse(args) {
		return 1
	}
	if *method == "" || *bearerFile == "" {
		return c.usageError("-method and -bearer-token-file are required")
	}
	req := loginRequest{AuthMethod: *method}
	for _, kv := range meta {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return c.usageError(fmt.Sprintf("invalid -meta %q: use KEY=VALUE", kv))
		}
		if req.Meta == nil {
			req.Meta = map[string]string{}
		}
		req.Meta[k] = v
	}
	b, err := os.ReadFile(*bearerFile)
	if err != nil {
		return c.done(err)
	}
	if req.BearerToken = strings.TrimSpace(string(b)); req.BearerToken == "" {
		return c.done(fmt.Errorf("the bearer token file %s is empty", *bearerFile))
	}
	// Login needs no token; a stale one in CTLPLANE_TOKEN must not get in the way.
	c.client.token = ""
	if *sink == "" {
		_, err := request(c, http.MethodPost, "/v1/acl/login", &req, func(kv *kvWriter, t *api.ACLToken) { kv.line(t.SecretID) })
		return c.done(err)
	}
	var tok api.ACLToken
	if _, err := c.client.call(http.MethodPost, "/v1/acl/login", &req, &tok); err != nil {
		return c.done(err)
	}
	return c.done(writeSink(*sink, tok.SecretID))
}

// writeSink writes the secret to file with mode 0600, replacing the file
// whole so that no reader ever sees a partial secret.
func writeSink(file, secret string) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".tmp-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(secret); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

func runLogout(args []string, stdout, stderr io.Writer) int {
	c := newACLCmd("logout", logoutUsage, false, stdout, stderr)
	if !c.parse(args) {
		return 1
	}
	if c.client.token == "" {
		return c.usageError("a token is required (-token or CTLPLANE_TOKEN)")
	}
	_, err := c.client.call(http.MethodPost, "/v1/acl/logout", nil, nil)
	return c.done(err)
}
