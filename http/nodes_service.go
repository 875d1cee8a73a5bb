package http

// NodeService is what the nodes endpoints call (see server/nodes).
type NodeService interface{}
