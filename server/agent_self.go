package server

// What an agent says about itself (Nomad's /v1/agent/self and members).

// NodeName is this server's name.
func (s *Server) NodeName() string { return s.config.NodeName }

// RaftStats are hashicorp/raft's statistics of this server.
func (s *Server) RaftStats() map[string]string { return s.raft.Stats() }

// LocalClientNodeName is the name of the simulated client node this agent
// runs (agent -dev with one node), "" when it runs none or a pool.
func (s *Server) LocalClientNodeName() string {
	if s.config.DevNodes == 1 {
		return s.config.NodeName + "-client"
	}
	return ""
}
