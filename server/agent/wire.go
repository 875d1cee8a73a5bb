package agent

import (
	"context"
	"time"

	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server/deployments"
	"github.com/ctlplane/ctlplane/server/evals"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/server/scheduler"
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
	a.Broker = evals.New(deps, serviceScheduler, a.Config.SchedulerWorkers)
	a.AddLeaderRoutine("eval-broker", a.Broker.Run)

	watcher := deployments.NewWatcher(deps)
	a.AddLeaderRoutine("deployment-watcher", watcher.Run)

	nodeSvc := nodes.New(deps, nodes.Config{HeartbeatTTL: a.Config.HeartbeatTTL})
	a.AddLeaderRoutine("node-heartbeats", nodeSvc.RunHeartbeats)

	return ctlhttp.Services{
		Deployments: deployments.New(deps),
		Nodes:       nodeSvc,
	}
}

// startDevNodes starts the simulated client nodes of a dev agent.
func (a *Agent) startDevNodes(ctx context.Context, deps svc.Deps) error {
	return nil
}
