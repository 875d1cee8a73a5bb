package http

import (
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/operator"
)

// Services are the domain operations of the orchestrator endpoints. Each
// interface is declared, with what its endpoints call, in the file of those
// endpoints; a nil service leaves its endpoints answering 501.
type Services struct {
	// ACL serves the /v1/acl endpoints and resolves every request's token (required).
	ACL *acl.Service
	// Operator serves Raft's configuration and peers, snapshots and the
	// agent's own reads.
	Operator    *operator.Service
	NodePools   NodePoolService
	Jobs        JobService
	Deployments DeploymentService
	Nodes       NodeService
	NodeDrain   NodeDrainService
	System      SystemService
	Namespaces  NamespaceService
	// Services deletes native service registrations.
	Services ServiceRegistrationService
}
