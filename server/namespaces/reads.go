package namespaces

import "github.com/ctlplane/ctlplane/server/acl"

// ReadNamespace refuses unless c may see namespace name: any capability in
// it (Nomad's rule for reading and listing namespaces). The reads need no
// Service (every server answers them from its own store), so the rule is a
// function of the Caller; a list keeps the names it allows.
func ReadNamespace(c acl.Caller, name string) error { return c.RequireAnyInNamespace(name) }
