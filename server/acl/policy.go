// Package acl is ctlplane's policy language and the authorizer built from
// it: Consul's `acl` and `operator` rules and Nomad's `namespace` rules with
// their capabilities, in one HCL or JSON document.
package acl

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl"
	"github.com/hashicorp/hcl/hcl/ast"
)

// Policy levels.
const (
	PolicyDeny  = "deny"
	PolicyRead  = "read"
	PolicyWrite = "write"
	PolicyScale = "scale"
)

// Namespace capabilities (Nomad's).
const (
	CapDeny                 = "deny"
	CapListJobs             = "list-jobs"
	CapParseJob             = "parse-job"
	CapReadJob              = "read-job"
	CapSubmitJob            = "submit-job"
	CapDispatchJob          = "dispatch-job"
	CapReadLogs             = "read-logs"
	CapReadFS               = "read-fs"
	CapAllocExec            = "alloc-exec"
	CapAllocNodeExec        = "alloc-node-exec"
	CapAllocLifecycle       = "alloc-lifecycle"
	CapCSIRegisterPlugin    = "csi-register-plugin"
	CapCSIWriteVolume       = "csi-write-volume"
	CapCSIReadVolume        = "csi-read-volume"
	CapCSIListVolume        = "csi-list-volume"
	CapCSIMountVolume       = "csi-mount-volume"
	CapListScalingPolicies  = "list-scaling-policies"
	CapReadScalingPolicy    = "read-scaling-policy"
	CapReadJobScaling       = "read-job-scaling"
	CapScaleJob             = "scale-job"
	CapSubmitRecommendation = "submit-recommendation"
)

var validCapabilities = map[string]bool{}

func init() {
	for _, c := range []string{CapDeny, CapListJobs, CapParseJob, CapReadJob, CapSubmitJob, CapDispatchJob,
		CapReadLogs, CapReadFS, CapAllocExec, CapAllocNodeExec, CapAllocLifecycle, CapCSIRegisterPlugin,
		CapCSIWriteVolume, CapCSIReadVolume, CapCSIListVolume, CapCSIMountVolume, CapListScalingPolicies,
		CapReadScalingPolicy, CapReadJobScaling, CapScaleJob, CapSubmitRecommendation} {
		validCapabilities[c] = true
	}
}

// expandNamespacePolicy is what a namespace `policy` level grants (Nomad's table).
func expandNamespacePolicy(level string) []string {
	read := []string{CapListJobs, CapParseJob, CapReadJob, CapCSIListVolume, CapCSIReadVolume,
		CapReadJobScaling, CapListScalingPolicies, CapReadScalingPolicy}
	switch level {
	case PolicyDeny:
		return []string{CapDeny}
	case PolicyRead:
		return read
	case PolicyWrite:
		return append(read, CapScaleJob, CapSubmitJob, CapDispatchJob, CapReadLogs, CapReadFS,
			CapAllocExec, CapAllocLifecycle, CapCSIMountVolume, CapCSIWriteVolume, CapSubmitRecommendation)
	case PolicyScale:
		return []string{CapListScalingPolicies, CapReadScalingPolicy, CapReadJobScaling, CapScaleJob}
	}
	return nil
}

// NamespaceRule is one `namespace "<name or glob>" { ... }` block.
type NamespaceRule struct {
	Name         string   `hcl:",key"`
	Policy       string   `hcl:"policy"`
	Capabilities []string `hcl:"capabilities"`
}

// Rules is a parsed policy document.
type Rules struct {
	ACL        string           `hcl:"acl"`
	Operator   string           `hcl:"operator"`
	Node       string           `hcl:"node"`
	Namespaces []*NamespaceRule `hcl:"namespace,expand"`
}

var topLevelKeys = map[string]bool{"acl": true, "operator": true, "node": true, "namespace": true}

// Parse parses policy rules written in HCL or JSON. The errors name the
// problem in the texts users of the upstream systems know.
func Parse(rules string) (*Rules, error) {
	p := &Rules{}
	if strings.TrimSpace(rules) == "" {
		return p, nil
	}
	if err := decodeHCL(rules, p); err != nil {
		return nil, err
	}
	if !validLevel(p.ACL, false) {
		return nil, fmt.Errorf("Invalid acl policy: %q", p.ACL)
	}
	if !validLevel(p.Operator, false) {
		return nil, fmt.Errorf("Invalid operator policy: %q", p.Operator)
	}
	if !validLevel(p.Node, false) {
		return nil, fmt.Errorf("Invalid node policy: %q", p.Node)
	}
	for _, ns := range p.Namespaces {
		if ns.Name == "" {
			return nil, fmt.Errorf("Invalid namespace rule: a namespace block needs a name or glob")
		}
		if ns.Policy != "" && !validLevel(ns.Policy, true) {
			return nil, fmt.Errorf("Invalid namespace policy: %q", ns.Policy)
		}
		for _, c := range ns.Capabilities {
			if !validCapabilities[c] {
				return nil, fmt.Errorf("Invalid namespace capability: %q", c)
			}
		}
		if ns.Policy == "" && len(ns.Capabilities) == 0 {
			return nil, fmt.Errorf("Invalid namespace rule %q: it needs a policy or capabilities", ns.Name)
		}
	}
	return p, nil
}

// decodeHCL parses rules into p. hcl v1 panics on some malformed input
// (e.g. `{"namespace":[{}""]}`): such a panic is a syntax error too.
func decodeHCL(rules string, p *Rules) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Failed to parse ACL rules: malformed rules")
		}
	}()
	root, err := hcl.Parse(rules)
	if err != nil {
		return fmt.Errorf("Failed to parse ACL rules: %v", err)
	}
	list, ok := root.Node.(*ast.ObjectList)
	if !ok {
		return fmt.Errorf("Failed to parse ACL rules: the rules must be an object")
	}
	for _, item := range list.Items {
		if len(item.Keys) == 0 {
			continue
		}
		key := strings.Trim(item.Keys[0].Token.Text, `"`)
		if !topLevelKeys[key] {
			return fmt.Errorf("Failed to parse ACL rules: unknown rule %q (known: acl, operator, node, namespace)", key)
		}
	}
	if err := hcl.DecodeObject(p, root); err != nil {
		return fmt.Errorf("Failed to parse ACL rules: %v", err)
	}
	return nil
}

// validLevel: "" (not set), deny, read, write; and scale for namespaces.
func validLevel(level string, namespace bool) bool {
	switch level {
	case "", PolicyDeny, PolicyRead, PolicyWrite:
		return true
	case PolicyScale:
		return namespace
	}
	return false
}

// capabilities of one namespace rule, with its policy expanded.
func (n *NamespaceRule) capabilities() []string {
	caps := append([]string{}, n.Capabilities...)
	caps = append(caps, expandNamespacePolicy(n.Policy)...)
	sort.Strings(caps)
	return caps
}
