package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startAgentEnv starts `ctlplane agent args...` with extra environment
// variables and waits until it logs its HTTP address.
func startAgentEnv(t *testing.T, env []string, args ...string) *agent {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(exe, append([]string{"agent"}, args...)...)
	p.cmd.Env = append(append(os.Environ(), agentEnv+"=1"), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	a := &agent{proc: p, client: &http.Client{Timeout: 30 * time.Second}}
	deadline := time.Now().Add(startTimeout)
	for {
		if m := listeningRE.FindStringSubmatch(p.stderr.String()); m != nil {
			a.url, a.nodeID = m[1], m[2]
			return a
		}
		a.checkAlive(t, deadline, "log its HTTP address")
		time.Sleep(10 * time.Millisecond)
	}
}

// tokenWorks waits until the agent leads and says whether secret is a
// token it knows.
func tokenWorks(t *testing.T, a *agent, secret string) bool {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		req, _ := http.NewRequest(http.MethodGet, a.url+"/v1/acl/token/self", nil)
		req.Header.Set("X-Service-Token", secret)
		resp, err := a.client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK:
				return true
			case resp.StatusCode == http.StatusForbidden && strings.Contains(string(body), "ACL not found"):
				return false
			}
		}
		a.checkAlive(t, deadline, "answer token/self")
		time.Sleep(50 * time.Millisecond)
	}
}

// nodeName is the Raft configuration, once it names the server (the
// server records itself just after it leads).
func nodeName(t *testing.T, a *agent, secret string) string {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		req, _ := http.NewRequest(http.MethodGet, a.url+"/v1/operator/raft/configuration", nil)
		req.Header.Set("X-Service-Token", secret)
		resp, err := a.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `"Node":""`) || time.Now().After(deadline) {
			return string(body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Issue 8, finding 7: the secret flags also read an environment variable
// and a file, an agent config file (HCL or JSON) sets any flag and the
// command line wins; secrets never appear in the log.
func TestAgentSecretsAndConfigFile(t *testing.T) {
	base := func() []string {
		return []string{"-data-dir=" + t.TempDir(), "-bind=127.0.0.1:0", "-http-addr=127.0.0.1:0", "-bootstrap-expect=1", "-raft-timeout=200ms"}
	}
	check := func(t *testing.T, a *agent, secret string) {
		t.Helper()
		if !tokenWorks(t, a, secret) {
			t.Fatalf("the initial management token from this source does not work")
		}
		if tokenWorks(t, a, testManagementToken) {
			t.Fatalf("an unrelated token works")
		}
		if strings.Contains(a.stderr.String(), secret) {
			t.Fatalf("the secret appears in the agent's log:\n%s", a.stderr.String())
		}
	}

	t.Run("environment", func(t *testing.T) {
		const secret = "11111111-aaaa-4bbb-8ccc-000000000001"
		check(t, startAgentEnv(t, []string{"CTLPLANE_ACL_INITIAL_MANAGEMENT_TOKEN=" + secret}, base()...), secret)
	})
	t.Run("file", func(t *testing.T) {
		const secret = "11111111-aaaa-4bbb-8ccc-000000000002"
		f := filepath.Join(t.TempDir(), "token")
		os.WriteFile(f, []byte(secret+"\n"), 0o600)
		// The file wins over the environment.
		check(t, startAgentEnv(t, []string{"CTLPLANE_ACL_INITIAL_MANAGEMENT_TOKEN=other"}, append(base(), "-acl-initial-management-token-file="+f)...), secret)
	})
	t.Run("HCL config file, flags win", func(t *testing.T) {
		const secret = "11111111-aaaa-4bbb-8ccc-000000000003"
		dir := t.TempDir()
		f := filepath.Join(dir, "agent.hcl")
		os.WriteFile(f, []byte(`
data_dir = "`+filepath.Join(dir, "data")+`"
node = "from-file"
bind = "127.0.0.1:0"
http_addr = "127.0.0.1:0"
bootstrap_expect = 1
raft_timeout = "200ms"
acl_enabled = true
acl_initial_management_token = "`+secret+`"
http_max_conns_per_client = 50
`), 0o600)
		a := startAgentEnv(t, nil, "-config-file="+f, "-node=from-flag")
		check(t, a, secret)
		if got := nodeName(t, a, secret); !strings.Contains(got, `"from-flag"`) {
			t.Fatalf("node name: %s, want the flag's from-flag", got)
		}
	})
	t.Run("JSON config file", func(t *testing.T) {
		const secret = "11111111-aaaa-4bbb-8ccc-000000000004"
		dir := t.TempDir()
		f := filepath.Join(dir, "agent.json")
		os.WriteFile(f, []byte(`{"data_dir": "`+filepath.Join(dir, "data")+`", "bind": "127.0.0.1:0", "http_addr": "127.0.0.1:0",
			"bootstrap_expect": 1, "acl_initial_management_token": "`+secret+`", "node": "json-node"}`), 0o600)
		a := startAgentEnv(t, nil, "-config-file="+f)
		check(t, a, secret)
		if got := nodeName(t, a, secret); !strings.Contains(got, `"json-node"`) {
			t.Fatalf("node name: %s, want json-node", got)
		}
	})
	t.Run("bad config", func(t *testing.T) {
		dir := t.TempDir()
		for name, tc := range map[string]struct{ content, want string }{
			"unknown key": {`data_dirr = "x"`, `unknown key "data_dirr"`},
			"block":       {"datacenter {\n name = \"x\"\n}", `key "datacenter": want a string, number, boolean or list`},
			"both":        {`acl_initial_management_token = "s3cr3t-value"` + "\n" + `acl_initial_management_token_file = "/nonexistent"`, "give -acl-initial-management-token or -acl-initial-management-token-file, not both"},
		} {
			f := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".hcl")
			os.WriteFile(f, []byte(tc.content), 0o600)
			p := startProc(t, "agent", "-config-file="+f)
			if code := p.wait(t); code != 1 || !strings.Contains(p.stderr.String(), tc.want) {
				t.Errorf("%s: exit %d, stderr %q, want %q", name, code, p.stderr.String(), tc.want)
			}
			if strings.Contains(p.stderr.String(), "s3cr3t-value") {
				t.Errorf("%s: the secret appears in the error: %q", name, p.stderr.String())
			}
		}
	})
}
