package agent

import (
	"context"

	ctlhttp "github.com/ctlplane/ctlplane/http"
	"github.com/ctlplane/ctlplane/server/svc"
)

// wire builds the domain services and registers the leader routines.
func (a *Agent) wire(deps svc.Deps) ctlhttp.Services {
	return ctlhttp.Services{}
}

// startDevNodes starts the simulated client nodes of a dev agent.
func (a *Agent) startDevNodes(ctx context.Context, deps svc.Deps) error {
	return nil
}
