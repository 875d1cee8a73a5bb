package http

// Services are the domain operations of the orchestrator endpoints. Each
// interface is declared, with what its endpoints call, in the file of those
// endpoints; a nil service leaves its endpoints answering 501.
type Services struct {
	Jobs        JobService
	Deployments DeploymentService
	Nodes       NodeService
}
