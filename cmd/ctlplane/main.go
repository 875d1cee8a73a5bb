// Command ctlplane is the ctlplane server and its command-line client.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ctlplane/ctlplane/client"
)

// Version is set at build time with -ldflags "-X main.Version=...".
var Version = "0.1.0-dev"

const usage = `Usage: ctlplane <command> [flags]

Commands:
  agent      run a server (-dev: an in-memory server and client on 127.0.0.1:8500;
             -client -servers=HOST:PORT -data-dir=DIR: a client node)
  snapshot   save, restore or inspect a snapshot archive
  operator   raft list-peers / remove-peer
  acl        bootstrap; policies, tokens, roles, auth methods, binding rules
  login      exchange a bearer token for an ACL token through an auth method
  logout     destroy a token created by login
  tls        create a CA and server or client certificates
  job        run, status, stop, history, revert, scale (Nomad's verbs)
  deployment list, status [-monitor], fail, pause, resume, unblock, promote, allocation-health
  alloc      status, checks, logs, fs, restart, signal
  service    list, info, delete (native service discovery)
  node       status
  system     gc: garbage-collect finished objects now
  namespace  list, apply, delete (Nomad's namespaces)
  event      stream: print the event stream
  version    print the version
`

func main() {
	client.Version = Version
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 1
	}
	switch args[0] {
	case "agent":
		return runAgent(args[1:], stdout, stderr)
	case "snapshot":
		return runSnapshot(args[1:], stdout, stderr)
	case "operator":
		return runOperator(args[1:], stdout, stderr)
	case "acl":
		return runACL(args[1:], stdout, stderr)
	case "login":
		return runLogin(args[1:], stdout, stderr)
	case "logout":
		return runLogout(args[1:], stdout, stderr)
	case "tls":
		return runTLS(args[1:], stdout, stderr)
	case "job":
		return runJob(args[1:], stdout, stderr)
	case "deployment":
		return runDeployment(args[1:], stdout, stderr)
	case "alloc":
		return runAlloc(args[1:], stdout, stderr)
	case "node":
		return runNode(args[1:], stdout, stderr)
	case "system":
		return runSystem(args[1:], stdout, stderr)
	case "namespace":
		return runNamespace(args[1:], stdout, stderr)
	case "service":
		return runService(args[1:], stdout, stderr)
	case "event":
		return runEvent(args[1:], stdout, stderr)
	case "version", "-version", "--version", "-v":
		fmt.Fprintf(stdout, "ctlplane v%s\n", Version)
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
	return 1
}
