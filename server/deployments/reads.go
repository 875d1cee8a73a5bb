package deployments

import "github.com/ctlplane/ctlplane/server/acl"

// Deployments are read with read-job in their namespace, as Nomad's
// Deployment endpoint reads them. The reads need no Service (every server
// answers them from its own store, with or without the control
// operations wired), so these rules are functions of the Caller alone.

// ReadDeployment refuses unless c may read the deployments of namespace ns.
func ReadDeployment(c acl.Caller, ns string) error { return c.RequireNamespace(ns, acl.CapReadJob) }

// ReadDeploymentsIn decides a list over ns, which may be "*" (acl.ReadIn).
func ReadDeploymentsIn(c acl.Caller, ns string) (visible func(ns string) bool, err error) {
	return acl.ReadIn(ns, func(n string) bool { return ReadDeployment(c, n) == nil })
}
