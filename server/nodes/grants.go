package nodes

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/state"
)

var errGrantDenied = forbidden("Permission denied")

// maxGrantPath bounds a file path in an allocation directory.
const maxGrantPath = 4096

// Signals a caller may send to a task (Nomad's CLI default is SIGKILL).
var Signals = map[string]bool{
	"SIGHUP": true, "SIGINT": true, "SIGQUIT": true, "SIGKILL": true, "SIGUSR1": true, "SIGUSR2": true,
	"SIGTERM": true, "SIGCONT": true, "SIGSTOP": true, "SIGTSTP": true, "SIGWINCH": true, "SIGALRM": true,
}

// NormalizeSignal is a signal's canonical name ("usr1" and "SIGUSR1" are
// SIGUSR1), or "" when it is not one a task may be sent.
func NormalizeSignal(s string) string {
	n := strings.ToUpper(strings.TrimSpace(s))
	if !strings.HasPrefix(n, "SIG") {
		n = "SIG" + n
	}
	if Signals[n] {
		return n
	}
	return ""
}

// capabilityOf is what each operation needs in the allocation's namespace
// (Nomad's: read-logs, read-fs, read-job, alloc-lifecycle).
func capabilityOf(op string) (string, bool) {
	switch op {
	case api.GrantLogs:
		return acl.CapReadLogs, true
	case api.GrantFSList, api.GrantFSStat, api.GrantFSCat, api.GrantFSReadAt, api.GrantFSStream:
		return acl.CapReadFS, true
	case api.GrantAllocStats:
		return acl.CapReadJob, true
	case api.GrantAllocRestart, api.GrantAllocSignal:
		return acl.CapAllocLifecycle, true
	}
	return "", false
}

// checkTaskName refuses what no task may be named.
func checkTaskName(task string) error {
	if strings.ContainsAny(task, "/\\\x00") || task == "." || task == ".." || len(task) > 128 {
		return invalid("invalid task name %q", task)
	}
	return nil
}

// checkGrant validates an operation's arguments (and normalizes them).
func checkGrant(g *api.Grant) error {
	switch g.Op {
	case api.GrantLogs:
		if g.Task == "" {
			return invalid("must include task name: ?task=NAME")
		}
		if err := checkTaskName(g.Task); err != nil {
			return err
		}
		if g.Stream != "stdout" && g.Stream != "stderr" {
			return invalid("invalid log type %q: must be stdout or stderr", g.Stream)
		}
	case api.GrantFSList, api.GrantFSStat, api.GrantFSCat, api.GrantFSReadAt, api.GrantFSStream:
		p, err := CleanAllocPath(g.Path)
		if err != nil {
			return err
		}
		g.Path = p
	case api.GrantAllocStats:
	case api.GrantAllocRestart:
		if g.AllTasks && g.Task != "" {
			return invalid("task name cannot be set when restarting all tasks")
		}
		if g.Task != "" {
			if err := checkTaskName(g.Task); err != nil {
				return err
			}
		}
	case api.GrantAllocSignal:
		if g.Task != "" {
			if err := checkTaskName(g.Task); err != nil {
				return err
			}
		}
		sig := NormalizeSignal(g.Signal)
		if sig == "" {
			return invalid("invalid signal %q: one of SIGHUP, SIGINT, SIGQUIT, SIGKILL, SIGUSR1, SIGUSR2, SIGTERM, SIGCONT, SIGSTOP, SIGTSTP, SIGWINCH, SIGALRM is needed", g.Signal)
		}
		g.Signal = sig
	default:
		return invalid("unknown operation %q", g.Op)
	}
	return nil
}

// CleanAllocPath is a path in an allocation directory, cleaned and rooted
// at "/" (its root). ".." is refused rather than resolved, so that a
// caller never names something outside; the node still resolves
// symlinks inside the directory only.
func CleanAllocPath(p string) (string, error) {
	if p == "" {
		p = "/"
	}
	if len(p) > maxGrantPath || strings.ContainsRune(p, 0) {
		return "", invalid("invalid path: at most %d bytes, no NUL", maxGrantPath)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", invalid("invalid path %q: \"..\" is not allowed (paths are inside the allocation directory)", p)
		}
	}
	return path.Clean("/" + p), nil
}

// Grant authorizes a caller for one operation on a node's API and mints
// its grant under the node's secret, valid api.GrantTTL to start the call.
// Host stats need node:read; an allocation's operations the capability
// of capabilityOf in the allocation's namespace (logs also node:read).
// g is checked and normalized; the target names the node to call.
func (s *Service) Grant(c Caller, g api.Grant) (*LogsTarget, error) {
	if c.ACL == nil {
		return nil, errGrantDenied
	}
	store := s.deps.State()
	var nodeID string
	if g.Op == api.GrantHostStats {
		if !c.ACL.NodeRead() {
			return nil, errGrantDenied
		}
		if !uuidRE.MatchString(g.NodeID) {
			return nil, invalid("Invalid node ID %q: a 36-character UUID is required", g.NodeID)
		}
		g = api.Grant{Op: g.Op, NodeID: strings.ToLower(g.NodeID)}
		nodeID = g.NodeID
	} else {
		capability, ok := capabilityOf(g.Op)
		if !ok {
			return nil, invalid("unknown operation %q", g.Op)
		}
		if g.Op == api.GrantLogs && !c.ACL.NodeRead() {
			return nil, errGrantDenied
		}
		if !uuidRE.MatchString(g.AllocID) {
			return nil, invalid("Invalid allocation ID %q: a 36-character UUID is required", g.AllocID)
		}
		g.AllocID, g.NodeID = strings.ToLower(g.AllocID), ""
		if err := checkGrant(&g); err != nil {
			return nil, err
		}
		_, a, err := store.Alloc(nil, g.AllocID)
		if err != nil {
			return nil, err
		}
		if a == nil {
			return nil, &state.Error{Code: state.ErrNotFound, Msg: fmt.Sprintf("Unknown allocation %q", g.AllocID)}
		}
		if !c.ACL.NamespaceCapability(a.Namespace, capability) {
			return nil, errGrantDenied
		}
		nodeID = a.NodeID
	}
	t := &LogsTarget{AllocID: g.AllocID, NodeID: nodeID}
	_, n, err := store.Node(nil, nodeID)
	if err != nil {
		return nil, err
	}
	if n == nil && g.Op == api.GrantHostStats {
		return nil, nodeNotFound(nodeID)
	}
	if n == nil || n.SecretID == "" {
		// Gone, or registered before node secrets: it could not verify a grant.
		return t, nil
	}
	t.NodeName, t.HTTPAddr = n.Name, n.HTTPAddr
	// Wall-clock time, not deps.Now (a test's clock): the node checks
	// the expiry against its own clock.
	t.Expires = time.Now().Add(api.GrantTTL)
	t.Grant = api.SignGrant(n.SecretID, g, t.Expires)
	return t, nil
}
