package agent

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/client"
	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/deployments"
	"github.com/ctlplane/ctlplane/server/drainer"
	"github.com/ctlplane/ctlplane/server/evals"
	"github.com/ctlplane/ctlplane/server/gc"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/namespaces"
	"github.com/ctlplane/ctlplane/server/nodepools"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/server/operator"
	"github.com/ctlplane/ctlplane/server/scheduler"
	"github.com/ctlplane/ctlplane/server/servicereg"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/go-hclog"
)

// serviceScheduler adapts the scheduler package to the broker.
func serviceScheduler(logger hclog.Logger, snap *state.Store, planner evals.Planner, now func() time.Time) evals.Scheduler {
	return scheduler.NewServiceScheduler(logger, snap, planner, now)
}

// wire builds the domain services and registers the leader routines.
func (a *Agent) wire(deps svc.Deps) ctlhttp.Services {
	// Plain http key URLs only in -dev (README, Security).
	aclSvc := acl.NewService(deps, a.Config.Datacenter, acl.AllowHTTPKeyURLs(a.Config.Dev))
	a.AddLeaderRoutine("acl-token-reaper", func(ctx context.Context) {
		aclSvc.RunTokenReaper(ctx, a.Config.TokenReapInterval)
	})

	a.Broker = evals.New(deps, serviceScheduler, a.Config.SchedulerWorkers, evals.LimitedPlacement(a.Config.LimitedPlacement))
	a.AddLeaderRoutineErr("eval-broker", a.Broker.Run)

	watcher := deployments.NewWatcher(deps)
	a.AddLeaderRoutineErr("deployment-watcher", watcher.Run)

	nodeSvc := nodes.New(deps, nodes.Config{HeartbeatTTL: a.Config.HeartbeatTTL, MaxNodes: a.Config.MaxNodes})
	a.AddLeaderRoutine("node-heartbeats", nodeSvc.RunHeartbeats)

	nodeDrainer := drainer.New(deps)
	a.AddLeaderRoutineErr("node-drainer", nodeDrainer.Run)

	a.GC = gc.New(deps, gc.Config{
		Interval:            a.Config.GCInterval,
		EvalThreshold:       a.Config.EvalGCThreshold,
		DeploymentThreshold: a.Config.DeploymentGCThreshold,
		JobThreshold:        a.Config.JobGCThreshold,
		NodeThreshold:       a.Config.NodeGCThreshold,
		AllocsDeleted:       a.Broker.AllocsDeleted,
	})
	a.AddLeaderRoutine("gc", a.GC.Run)

	return ctlhttp.Services{
		System:      a.GC,
		ACL:         aclSvc,
		Jobs:        jobs.New(deps, jobs.MaxJobAllocs(a.Config.MaxJobAllocs)),
		Deployments: deployments.New(deps),
		Nodes:       nodeSvc,
		NodeDrain:   nodeSvc,
		Namespaces:  namespaces.New(deps),
		NodePools:   nodepools.New(deps),
		Services:    servicereg.New(deps),
		Operator:    operator.New(a.Server),
	}
}

// Resources of a simulated dev node: enough for many small tasks.
const (
	devNodeCPU      = 64000
	devNodeMemoryMB = 256 << 10
)

// startDevNodes starts the simulated client nodes (mock_driver) of a dev
// agent, talking to this server over its own HTTP API like any client.
func (a *Agent) startDevNodes(ctx context.Context, deps svc.Deps) ([]*client.Client, error) {
	started, err := a.startDevNodeGroups(ctx, deps)
	if err != nil {
		return nil, err
	}
	n := a.Config.DevNodes
	if n <= 0 {
		return started, nil
	}
	name := a.Config.NodeName + "-client"
	if n > 1 {
		name = a.Config.NodeName + "-node"
	}
	base := client.Config{
		Servers:    []string{"http://" + a.HTTPAddr()},
		HTTPClient: a.InProcessHTTPClient(),
		Token:      a.Config.ACLInitialManagementToken,
		NodeName:   name,
		Datacenter: a.Config.Datacenter,
		Resources:  api.Resources{CPU: devNodeCPU, MemoryMB: devNodeMemoryMB},
		Logger:     deps.Logger.Named("client"),
		Now:        deps.Now,
		// A dev agent's nodes offer the test drivers (mock_driver, mock).
		TestDrivers:   true,
		ReservedPorts: a.listenerPorts(),
	}
	if n == 1 {
		// The dev client runs real processes too (raw_exec), in a
		// temporary data directory removed at shutdown; its tasks die with it.
		dir, err := os.MkdirTemp("", "ctlplane-dev-client-")
		if err != nil {
			return nil, err
		}
		a.devDataDir = dir
		base.DataDir, base.RawExec, base.KillTasksOnShutdown, base.HTTPAddr = dir, true, true, "127.0.0.1:0"
		base.MinDynamicPort, base.MaxDynamicPort = a.Config.DevMinDynamicPort, a.Config.DevMaxDynamicPort
		c, err := client.New(base)
		if err != nil {
			return nil, err
		}
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			if err := c.Run(ctx); err != nil && ctx.Err() == nil {
				deps.Logger.Error("dev client node stopped", "error", err)
			}
		}()
		return append(started, c), nil
	}
	nodes, err := client.StartPool(ctx, n, base, &a.wg)
	a.devNodes = nodes
	return append(started, nodes...), err
}

// listenerPorts are the ports this agent listens on (HTTP, HTTPS, Raft):
// its dev nodes share its host, so they reserve them and no allocation is
// given one, as a dynamic port or a static one.
func (a *Agent) listenerPorts() []int {
	var out []int
	for _, addr := range []string{a.HTTPAddr(), a.HTTPSAddr(), a.RaftAddr()} {
		if _, p, err := net.SplitHostPort(addr); err == nil {
			if n, err := strconv.Atoi(p); err == nil && n > 0 && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// startDevNodeGroups starts the simulated nodes of each DevNodeGroup.
func (a *Agent) startDevNodeGroups(ctx context.Context, deps svc.Deps) ([]*client.Client, error) {
	var started []*client.Client
	for i, g := range a.Config.DevNodeGroups {
		if g.Count <= 0 {
			continue
		}
		name := g.Name
		if name == "" {
			name = fmt.Sprintf("group%d", i+1)
		}
		base := client.Config{
			Servers:       []string{"http://" + a.HTTPAddr()},
			HTTPClient:    a.InProcessHTTPClient(),
			Token:         a.Config.ACLInitialManagementToken,
			NodeName:      a.Config.NodeName + "-" + name,
			Datacenter:    g.Datacenter,
			NodeClass:     g.NodeClass,
			NodePool:      g.NodePool,
			Meta:          g.Meta,
			Attributes:    g.Attributes,
			Resources:     api.Resources{CPU: devNodeCPU, MemoryMB: devNodeMemoryMB},
			Logger:        deps.Logger.Named("client"),
			Now:           deps.Now,
			TestDrivers:   true,
			ReservedPorts: a.listenerPorts(),
		}
		if base.Datacenter == "" {
			base.Datacenter = a.Config.Datacenter
		}
		if g.CPU > 0 {
			base.Resources.CPU = g.CPU
		}
		if g.MemoryMB > 0 {
			base.Resources.MemoryMB = g.MemoryMB
		}
		nodes, err := client.StartPool(ctx, g.Count, base, &a.wg)
		if err != nil {
			return nil, err
		}
		started = append(started, nodes...)
	}
	return started, nil
}
