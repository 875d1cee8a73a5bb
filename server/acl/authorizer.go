package acl

import (
	"sort"
	"strings"
)

// Authorizer answers what one token may do. It is built from the rules of
// every policy the token has (directly or through its roles).
type Authorizer struct {
	management bool
	acl        string
	operator   string
	node       string
	// namespaces maps a name or glob to its merged capability set.
	namespaces map[string]map[string]bool
}

// ManageAll allows everything: the management token, and every request when
// ACLs are disabled.
func ManageAll() *Authorizer { return &Authorizer{management: true} }

// DenyAll allows nothing.
func DenyAll() *Authorizer { return &Authorizer{} }

// NewAuthorizer merges rules: for acl and operator an explicit deny wins,
// otherwise the most permissive level; namespace capabilities add up, and a
// deny capability in any of them denies the namespace.
func NewAuthorizer(rules []*Rules) *Authorizer {
	a := &Authorizer{namespaces: map[string]map[string]bool{}}
	for _, r := range rules {
		a.acl = mergeLevel(a.acl, r.ACL)
		a.operator = mergeLevel(a.operator, r.Operator)
		a.node = mergeLevel(a.node, r.Node)
		for _, ns := range r.Namespaces {
			set := a.namespaces[ns.Name]
			if set == nil {
				set = map[string]bool{}
				a.namespaces[ns.Name] = set
			}
			for _, c := range ns.capabilities() {
				set[c] = true
			}
		}
	}
	return a
}

func levelRank(l string) int {
	switch l {
	case PolicyDeny:
		return 3
	case PolicyWrite:
		return 2
	case PolicyRead:
		return 1
	}
	return 0
}

func mergeLevel(a, b string) string {
	if levelRank(b) > levelRank(a) {
		return b
	}
	return a
}

// IsManagement says whether the authorizer allows everything.
func (a *Authorizer) IsManagement() bool { return a.management }

// ACLRead allows reading ACL objects (policies, tokens, roles, auth methods, binding rules).
func (a *Authorizer) ACLRead() bool {
	return a.management || a.acl == PolicyRead || a.acl == PolicyWrite
}

// ACLWrite allows changing ACL objects.
func (a *Authorizer) ACLWrite() bool { return a.management || a.acl == PolicyWrite }

// OperatorRead allows reading the cluster's operator state.
func (a *Authorizer) OperatorRead() bool {
	return a.management || a.operator == PolicyRead || a.operator == PolicyWrite
}

// OperatorWrite allows changing the cluster's operator state.
func (a *Authorizer) OperatorWrite() bool { return a.management || a.operator == PolicyWrite }

// NodeRead allows reading client nodes (Nomad's `node = "read"`).
func (a *Authorizer) NodeRead() bool {
	return a.management || a.node == PolicyRead || a.node == PolicyWrite
}

// NodeWrite allows acting as a client node: registering, heartbeating and
// reporting allocation status (Nomad's `node = "write"`).
func (a *Authorizer) NodeWrite() bool { return a.management || a.node == PolicyWrite }

// NamespaceCapability says whether capability is granted in namespace ns.
func (a *Authorizer) NamespaceCapability(ns, capability string) bool {
	if a.management {
		return true
	}
	caps := a.namespaceCaps(ns)
	return caps != nil && !caps[CapDeny] && caps[capability]
}

// AllowsNamespace says whether anything at all is granted in namespace ns
// (for filtering lists across namespaces).
func (a *Authorizer) AllowsNamespace(ns string) bool {
	if a.management {
		return true
	}
	caps := a.namespaceCaps(ns)
	return len(caps) > 0 && !caps[CapDeny]
}

// namespaceCaps finds the rule for ns: an exact name beats every glob, and
// among globs the closest one wins (Nomad's rule: the smallest difference
// between the name's length and the glob's literal length).
func (a *Authorizer) namespaceCaps(ns string) map[string]bool {
	if caps, ok := a.namespaces[ns]; ok {
		return caps
	}
	type match struct {
		glob string
		diff int
	}
	var matches []match
	for glob := range a.namespaces {
		if strings.Contains(glob, "*") && globMatch(glob, ns) {
			matches = append(matches, match{glob, len(ns) - len(glob) + strings.Count(glob, "*")})
		}
	}
	if len(matches) == 0 {
		return nil
	}
	sort.Slice(matches, func(i, j int) bool {
		if matches[i].diff != matches[j].diff {
			return matches[i].diff < matches[j].diff
		}
		return matches[i].glob < matches[j].glob
	})
	return a.namespaces[matches[0].glob]
}

// globMatch matches s against a pattern in which * stands for any run of characters.
func globMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		// No star: only the same string matches (parts[1:0] below would panic).
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, last)
}
