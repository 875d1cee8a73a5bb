// Package search decides which of Nomad's search contexts a caller may
// search, and which objects of them it may see.
package search

import (
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/namespaces"
	"github.com/ctlplane/ctlplane/server/nodepools"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/state"
)

// Nomad 1.6's search contexts (api/contexts).
const (
	Allocs          = "allocs"
	Jobs            = "jobs"
	Nodes           = "nodes"
	NodePools       = "node_pools"
	Evals           = "evals"
	Deployments     = "deployment"
	Plugins         = "plugins"
	Volumes         = "volumes"
	ScalingPolicies = "scaling_policy"
	Variables       = "vars"
	Namespaces      = "namespaces"
	All             = "all"

	// The parts of a job fuzzy search reports on their own.
	Groups   = "groups"
	Services = "services"
	Tasks    = "tasks"
	Images   = "images"
	Commands = "commands"
	Classes  = "classes"
)

// Contexts are the contexts "all" searches, in Nomad 1.6's order.
var Contexts = []string{Allocs, Jobs, Nodes, NodePools, Evals, Deployments, Plugins, Volumes, ScalingPolicies, Variables, Namespaces}

// Known says whether context is one of Contexts.
func Known(context string) bool {
	for _, c := range Contexts {
		if c == context {
			return true
		}
	}
	return false
}

// MaySearch says whether c may search context in namespace ns (Nomad's
// sufficientSearchPerms). With ns "*" every namespaced context passes
// here and its objects are filtered one by one (Visible). Plugins,
// volumes, scaling policies and variables are not kept by this server:
// their contexts answer nothing, decided by the nearest rule Nomad has
// (plugins: management, as no plugin policy is kept).
func MaySearch(c acl.Caller, ns, context string) bool {
	inNS := func(rule func(n string) bool) bool { return ns == state.AllNamespaces || rule(ns) }
	readJob := func(n string) bool { return jobs.ReadJob(c, n) == nil }
	switch context {
	case Allocs, Jobs, Evals, Deployments, Variables:
		return inNS(readJob)
	case Volumes:
		return inNS(func(n string) bool {
			return readJob(n) || c.RequireNamespace(n, acl.CapListJobs) == nil ||
				c.RequireNamespace(n, acl.CapCSIListVolume) == nil || c.RequireNamespace(n, acl.CapCSIReadVolume) == nil
		})
	case ScalingPolicies:
		return inNS(func(n string) bool { return readJob(n) || c.RequireNamespace(n, acl.CapListScalingPolicies) == nil })
	case Namespaces:
		return inNS(func(n string) bool { return namespaces.ReadNamespace(c, n) == nil })
	case Nodes:
		return nodes.ReadNodes(c) == nil
	case NodePools:
		return nodepools.ReadPools(c) == nil
	case Plugins:
		return c.RequireManagement() == nil
	}
	return false
}

// Visible says whether c may see an object of context in namespace ns
// (namespace names for Namespaces; ns is ignored for nodes and pools).
func Visible(c acl.Caller, context, ns string) bool {
	switch context {
	case Namespaces:
		return namespaces.ReadNamespace(c, ns) == nil
	case Nodes:
		return nodes.ReadNodes(c) == nil
	case NodePools:
		return nodepools.ReadPools(c) == nil
	}
	return jobs.ReadJob(c, ns) == nil
}
