// Package agent is ctlplane's composition root: it builds a server, its
// domain services, leader routines and HTTP API, and (in dev mode) the
// in-process client nodes, in one place that the binary and the test helper
// both use.
package agent

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/ctlplane/ctlplane/client"
	"github.com/ctlplane/ctlplane/fsm/telemetry"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server"
	"github.com/ctlplane/ctlplane/server/evals"
	"github.com/ctlplane/ctlplane/server/gc"
	"github.com/ctlplane/ctlplane/server/gctuner"
	"github.com/ctlplane/ctlplane/server/svc"
)

// Agent is a running server with its services.
type Agent struct {
	*server.Server
	Config *server.Config
	Broker *evals.Broker
	// GC is the garbage collector (a leader routine; PUT /v1/system/gc).
	GC *gc.Service

	cancel context.CancelFunc
	wg     sync.WaitGroup
	// gcTuner is the process's GC tuner (nil when Config.GCHeapFloor is 0).
	gcTuner *gctuner.Tuner
	// idleGC is the process's idle collector (nil unless Config.GCWhenIdle).
	idleGC *gctuner.Idle
	// devDataDir is the dev client's temporary data directory.
	devDataDir string
	// devNodes are the simulated client nodes (DevNodes > 1).
	devNodes []*client.Client
}

// DevNodes are the simulated client nodes of a dev agent started with
// more than one (tests cut them off with SetPartitioned).
func (a *Agent) DevNodes() []*client.Client { return a.devNodes }

// New starts the server and its services and serves the HTTP API.
func New(cfg *server.Config) (*Agent, error) {
	cfg.SetDefaults()
	telemetry.Init()
	srv, err := server.New(cfg)
	if err != nil {
		return nil, err
	}
	a := &Agent{Server: srv, Config: cfg}
	deps := svc.Deps{State: srv.State, Raft: srv, Now: cfg.Now, Logger: cfg.Logger}
	services := a.wire(deps)
	h := ctlhttp.New(srv, cfg.Logger, services)
	h.SetEventStream(cfg.EventHeartbeat, cfg.EventWriteTimeout)
	// A dev agent answers once its nodes are registered: a job run as soon
	// as it answers is placed, not blocked for want of a node. Not when it
	// joins others (it forms a cluster through their APIs and its own), nor
	// when its nodes have no token to register with.
	var release func()
	if hasDevNodes(cfg) && len(cfg.Join) == 0 && (!cfg.ACLEnabled || cfg.ACLInitialManagementToken != "") {
		release = srv.HoldAPI()
	}
	if err := srv.Serve(h); err != nil {
		srv.Shutdown()
		return nil, err
	}
	if cfg.GCHeapFloor > 0 {
		// Process-wide (one tuner a process: a second agent's replaces the
		// first's): garbage collection was ~30% of a create's CPU with Go's
		// default percent and a small live heap.
		a.gcTuner = gctuner.Start(cfg.GCHeapFloor)
	}
	if cfg.GCWhenIdle {
		a.idleGC = gctuner.StartIdle(gctuner.DefaultIdle)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	nodes, err := a.startDevNodes(ctx, deps)
	if err != nil {
		a.Shutdown()
		return nil, fmt.Errorf("failed to start the dev client nodes: %w", err)
	}
	if release != nil {
		// Only when held: nodes without a token never register, so waiting
		// for them would only delay the start (and a SIGTERM) by the timeout.
		a.awaitRegistered(nodes)
		release()
	}
	return a, nil
}

// devNodesTimeout bounds the wait for the dev nodes' registration: past
// it the API answers anyway (a job then waits in a blocked evaluation).
const devNodesTimeout = 30 * time.Second

// hasDevNodes says whether the agent starts simulated client nodes.
func hasDevNodes(cfg *server.Config) bool {
	n := cfg.DevNodes
	for _, g := range cfg.DevNodeGroups {
		n += max(g.Count, 0)
	}
	return n > 0
}

// awaitRegistered waits until every node is registered (ready), at most
// devNodesTimeout.
func (a *Agent) awaitRegistered(nodes []*client.Client) {
	timeout := time.NewTimer(devNodesTimeout)
	defer timeout.Stop()
	for i, c := range nodes {
		select {
		case <-c.Registered():
		case <-timeout.C:
			a.Config.Logger.Warn("the dev nodes did not all register in time: answering anyway", "registered", i, "nodes", len(nodes), "timeout", devNodesTimeout)
			return
		}
	}
}

// Shutdown stops the client nodes, then the server, then the GC tuner and
// the idle collector.
func (a *Agent) Shutdown() error {
	if a.cancel != nil {
		a.cancel()
	}
	a.wg.Wait()
	if a.devDataDir != "" {
		_ = os.RemoveAll(a.devDataDir)
	}
	err := a.Server.Shutdown()
	a.gcTuner.Stop()
	a.idleGC.Stop()
	return err
}
