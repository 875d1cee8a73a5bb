package servicereg

import "github.com/ctlplane/ctlplane/server/acl"

// ReadServices refuses unless c may read the service registrations of
// namespace ns: read-job, as Nomad's ServiceRegistration reads. The reads
// need no Service (every server answers them from its own store), so the
// rule is a function of the Caller.
func ReadServices(c acl.Caller, ns string) error { return c.RequireNamespace(ns, acl.CapReadJob) }

// ReadServicesIn decides a list over ns, which may be "*" (acl.ReadIn).
func ReadServicesIn(c acl.Caller, ns string) (visible func(ns string) bool, err error) {
	return acl.ReadIn(ns, func(n string) bool { return ReadServices(c, n) == nil })
}
