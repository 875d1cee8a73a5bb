package server

import (
	"fmt"
	"net"

	"github.com/ctlplane/ctlplane/api/webguard"
)

// checkDevAddrs refuses a dev agent (ACLs off by default, a client that
// runs raw_exec) listening beyond this machine, unless DevListenAny says
// that is meant; then it warns.
func checkDevAddrs(cfg *Config) error {
	if !cfg.Dev {
		return nil
	}
	for _, a := range []struct{ flag, addr string }{{"-http-addr", cfg.HTTPAddr}, {"-https-addr", cfg.HTTPSAddr}} {
		if a.addr == "" || webguard.LoopbackHost(a.addr) {
			continue
		}
		if !cfg.DevListenAny {
			return fmt.Errorf("-dev with %s=%s listens beyond this machine, and a dev agent runs anyone's commands (ACLs off, raw_exec on): use a loopback address (127.0.0.1), or add -dev-listen-any if this is really meant", a.flag, a.addr)
		}
		cfg.Logger.Warn("dev agent listening on a non-loopback address: anyone who reaches it can run commands on this machine", "flag", a.flag, "address", a.addr)
	}
	return nil
}

// listenerAddrs are the addresses the API listeners are bound to.
func (s *Server) listenerAddrs() []net.Addr {
	addrs := []net.Addr{s.httpListener.Addr()}
	if s.httpsListener != nil {
		addrs = append(addrs, s.httpsListener.Addr())
	}
	return addrs
}
