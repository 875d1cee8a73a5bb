package http

// DeploymentService is what the deployments endpoints call (see server/deployments).
type DeploymentService interface{}
