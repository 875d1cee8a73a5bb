package client

import (
	"net"
	"strconv"

	"github.com/ctlplane/ctlplane/api"
)

// portEnv sets Nomad's port variables for the allocation's host ports
// (taskenv's addPorts): NOMAD_PORT_<label> is the port to bind (to when
// set, else the host port), NOMAD_HOST_PORT_<label> the host port,
// NOMAD_IP_/NOMAD_HOST_IP_ the host IP, NOMAD_ADDR_/NOMAD_HOST_ADDR_
// ip:host port, NOMAD_ALLOC_PORT_ as NOMAD_PORT_.
func portEnv(env map[string]string, ports []api.PortMapping) {
	for _, p := range ports {
		label := envLabel(p.Label)
		host := strconv.Itoa(p.Value)
		bind := host
		if p.To > 0 {
			bind = strconv.Itoa(p.To)
		}
		env["NOMAD_ADDR_"+label] = net.JoinHostPort(p.HostIP, host)
		env["NOMAD_HOST_ADDR_"+label] = net.JoinHostPort(p.HostIP, host)
		env["NOMAD_IP_"+label] = p.HostIP
		env["NOMAD_HOST_IP_"+label] = p.HostIP
		env["NOMAD_PORT_"+label] = bind
		env["NOMAD_ALLOC_PORT_"+label] = bind
		env["NOMAD_HOST_PORT_"+label] = host
	}
}

// envLabel makes a port label fit an environment variable name: what is
// not a letter, digit or underscore becomes "_" (Nomad's CleanEnvVar).
func envLabel(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}
