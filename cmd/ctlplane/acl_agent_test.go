package main

// Access control of the real agent process (design §7): a persistent agent
// is secure by default and, without -acl-initial-management-token, tells
// the anonymous caller how to bootstrap; PUT /v1/acl/bootstrap mints a
// management token once; -acl-enabled=false and -dev turn checks off.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	aaAnonymousFmt = "Permission denied: anonymous token lacks permission '%s'. The anonymous token is used implicitly when a request does not specify a token."
	aaHint         = " The ACL system has no management token yet: run `ctlplane acl bootstrap` (PUT /v1/acl/bootstrap) once to create one, or start the agents with -acl-initial-management-token=SECRET."
	aaRuleBody     = `{"AuthMethod":"m","BindType":"service","BindName":"web"}`
)

// aaStart runs `ctlplane agent args...` and waits until it logs its HTTP
// address and ready says "" (ready gets status and body of an anonymous
// GET /v1/acl/binding-rules).
func aaStart(t *testing.T, ready func(status int, body string) string, args ...string) *agent {
	t.Helper()
	a := &agent{proc: startProc(t, args...), client: &http.Client{Timeout: 30 * time.Second}}
	t.Cleanup(a.client.CloseIdleConnections)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("agent %v stderr:\n%s", args, logTail(a.stderr.String()))
		}
	})
	deadline := time.Now().Add(startTimeout)
	for {
		if m := listeningRE.FindStringSubmatch(a.stderr.String()); m != nil {
			a.url, a.nodeID = m[1], m[2]
			break
		}
		a.checkAlive(t, deadline, "log its HTTP address")
		time.Sleep(10 * time.Millisecond)
	}
	last := ""
	for {
		status, body, err := aaDo(a, "", http.MethodGet, "/v1/acl/binding-rules", "")
		if err == nil {
			if last = ready(status, body); last == "" {
				return a
			}
		}
		a.checkAlive(t, deadline, "be ready: "+last)
		time.Sleep(20 * time.Millisecond)
	}
}

// aaPersistentArgs is the command line of a persistent single-server agent
// on n's data directory, without an initial management token.
func aaPersistentArgs(n *node, extra ...string) []string {
	return append([]string{
		"agent",
		"-data-dir=" + n.dataDir,
		"-node=n1",
		"-bind=127.0.0.1:" + strconv.Itoa(n.raftPort),
		"-http-addr=127.0.0.1:0",
		"-bootstrap-expect=1",
		"-raft-timeout=200ms",
	}, extra...)
}

// aaDo sends a request with secret in X-Service-Token ("" sends none).
func aaDo(a *agent, secret, method, path, body string) (int, string, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		return 0, "", err
	}
	if secret != "" {
		req.Header.Set("X-Service-Token", secret)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	buf, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(buf), err
}

// aaExpect sends a request and checks the exact status and body ("" body:
// any body).
func aaExpect(t *testing.T, a *agent, secret, method, path, body string, status int, want string) string {
	t.Helper()
	code, got, err := aaDo(a, secret, method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if code != status || (want != "" && got != want) {
		t.Errorf("%s %s as %q: got %d %q, want %d %q", method, path, secret, code, got, status, want)
	}
	return got
}

// denied is ready when the anonymous token is refused with exactly want
// (before the leader has created the anonymous token the answer is
// `ACL not found`, or 503 before there is a leader).
func denied(want string) func(int, string) string {
	return func(status int, body string) string {
		if status == http.StatusForbidden && body == want {
			return ""
		}
		return fmt.Sprintf("anonymous read answered %d %q", status, body)
	}
}

func allowed(status int, body string) string {
	if status == http.StatusOK {
		return ""
	}
	return fmt.Sprintf("anonymous read answered %d %q", status, body)
}

func TestAgentACLBootstrap(t *testing.T) {
	n := newNode(t)
	readDenied := fmt.Sprintf(aaAnonymousFmt, "acl:read")
	a := aaStart(t, denied(readDenied+aaHint), aaPersistentArgs(n)...)

	// Secure by default: everything is refused, with the hint.
	aaExpect(t, a, "", "PUT", "/v1/acl/binding-rule", aaRuleBody, 403, fmt.Sprintf(aaAnonymousFmt, "acl:write")+aaHint)
	aaExpect(t, a, "", "GET", "/v1/snapshot", "", 403, fmt.Sprintf(aaAnonymousFmt, "management")+aaHint)
	aaExpect(t, a, "", "GET", "/v1/operator/raft/configuration", "", 403, fmt.Sprintf(aaAnonymousFmt, "operator:read")+aaHint)
	aaExpect(t, a, testManagementToken, "GET", "/v1/acl/binding-rules", "", 403, "ACL not found")
	aaExpect(t, a, "", "GET", "/v1/status/leader", "", 200, "")

	// Bootstrap once: a management token.
	var boot struct {
		AccessorID, SecretID, Description string
		Policies                          []struct{ ID, Name string }
		CreateIndex                       uint64
	}
	if err := json.Unmarshal([]byte(aaExpect(t, a, "", "PUT", "/v1/acl/bootstrap", "", 200, "")), &boot); err != nil {
		t.Fatalf("bootstrap answer: %v", err)
	}
	if boot.SecretID == "" || boot.Description != "Bootstrap Token (Global Management)" ||
		len(boot.Policies) != 1 || boot.Policies[0].Name != "global-management" {
		t.Fatalf("bootstrap token %+v", boot)
	}
	reset := fmt.Sprintf("Permission denied: ACL bootstrap no longer allowed (reset index: %d)", boot.CreateIndex)
	check := func(a *agent) {
		t.Helper()
		aaExpect(t, a, boot.SecretID, "GET", "/v1/acl/binding-rules", "", 200, "")
		aaExpect(t, a, boot.SecretID, "PUT", "/v1/acl/binding-rule", aaRuleBody, 200, "")
		aaExpect(t, a, boot.SecretID, "GET", "/v1/operator/raft/configuration", "", 200, "")
		aaExpect(t, a, boot.SecretID, "GET", "/v1/snapshot", "", 200, "")
		// Bootstrapped: the anonymous token is refused without the hint,
		// and bootstrap is closed.
		aaExpect(t, a, "", "GET", "/v1/acl/binding-rules", "", 403, readDenied)
		aaExpect(t, a, "", "PUT", "/v1/acl/bootstrap", "", 403, reset)
		aaExpect(t, a, boot.SecretID, "PUT", "/v1/acl/bootstrap", "", 403, reset)
	}
	check(a)

	// All of it survives a restart.
	a.stop(t)
	a = aaStart(t, denied(readDenied), aaPersistentArgs(n)...)
	check(a)
	a.stop(t)
}

func TestAgentACLDisabled(t *testing.T) {
	t.Run("persistent with -acl-enabled=false", func(t *testing.T) {
		n := newNode(t)
		a := aaStart(t, allowed, aaPersistentArgs(n, "-acl-enabled=false")...)
		aaExpect(t, a, "", "PUT", "/v1/acl/binding-rule", aaRuleBody, 200, "")
		aaExpect(t, a, "", "PUT", "/v1/acl/policy", `{"Name":"p"}`, 200, "")
		aaExpect(t, a, "", "GET", "/v1/snapshot", "", 200, "")
		// Any token is ignored, even one no token has.
		aaExpect(t, a, "no-such-secret", "PUT", "/v1/acl/binding-rule", aaRuleBody, 200, "")
		aaExpect(t, a, "", "PUT", "/v1/acl/bootstrap", "", 401, "ACL support disabled")
		a.stop(t)
	})
	t.Run("dev is off by default", func(t *testing.T) {
		a := aaStart(t, allowed, "agent", "-dev", "-http-addr=127.0.0.1:0")
		aaExpect(t, a, "", "PUT", "/v1/acl/binding-rule", aaRuleBody, 200, "")
		a.stop(t)
	})
	t.Run("dev with -acl-enabled=true", func(t *testing.T) {
		// A dev agent never gives the bootstrap hint.
		a := aaStart(t, denied(fmt.Sprintf(aaAnonymousFmt, "acl:read")), "agent", "-dev", "-http-addr=127.0.0.1:0", "-acl-enabled=true")
		aaExpect(t, a, "", "PUT", "/v1/acl/binding-rule", aaRuleBody, 403, fmt.Sprintf(aaAnonymousFmt, "acl:write"))
		a.stop(t)
	})
	t.Run("invalid -acl-enabled", func(t *testing.T) {
		p := startProc(t, aaPersistentArgs(newNode(t), "-acl-enabled=maybe")...)
		if code := p.wait(t); code != 1 {
			t.Fatalf("exit code %d, want 1", code)
		}
		if want := `invalid -acl-enabled "maybe": use true or false`; !strings.Contains(p.stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", p.stderr, want)
		}
	})
}
