// Package gc garbage-collects what the orchestrator has finished with:
// terminal evaluations and allocations, finished deployments and their
// history, stopped dead jobs with everything of theirs, and nodes long
// down (Nomad's core scheduler GC). It runs on the leader, periodically
// (Run, a leader routine) and on demand (Collect, PUT /v1/system/gc). The
// rules are state.GCCandidates'; each batch is one Raft entry, and the
// FSM deletes only what still qualifies when it applies it.
package gc

import (
	"context"
	"sync"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
)

// Defaults (Nomad's server defaults).
const (
	DefaultInterval            = 5 * time.Minute
	DefaultEvalThreshold       = time.Hour
	DefaultDeploymentThreshold = time.Hour
	DefaultJobThreshold        = 4 * time.Hour
	DefaultNodeThreshold       = 24 * time.Hour
	DefaultBatchSize           = 1000
)

// maxBatches bounds one collection: at DefaultBatchSize, a million objects.
const maxBatches = 1000

// Config tunes the collector; zero values take the defaults.
type Config struct {
	// Interval is how often the leader collects.
	Interval time.Duration
	// Thresholds: how long an object must have been finished (by the
	// deps clock) before it is collected.
	EvalThreshold       time.Duration
	DeploymentThreshold time.Duration
	JobThreshold        time.Duration
	NodeThreshold       time.Duration
	// BatchSize bounds the objects of one Raft entry.
	BatchSize int
	// AllocsDeleted, when set, is told the index of every write that
	// deleted allocations (the evaluation broker's usage view rebuilds).
	AllocsDeleted func(index uint64)
}

func (c *Config) setDefaults() {
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.EvalThreshold <= 0 {
		c.EvalThreshold = DefaultEvalThreshold
	}
	if c.DeploymentThreshold <= 0 {
		c.DeploymentThreshold = DefaultDeploymentThreshold
	}
	if c.JobThreshold <= 0 {
		c.JobThreshold = DefaultJobThreshold
	}
	if c.NodeThreshold <= 0 {
		c.NodeThreshold = DefaultNodeThreshold
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
}

// Service is the collector.
type Service struct {
	deps svc.Deps
	cfg  Config
	// mu makes collections one at a time (the periodic one and forced ones).
	mu sync.Mutex
}

// New returns a collector over deps.
func New(deps svc.Deps, cfg Config) *Service {
	cfg.setDefaults()
	return &Service{deps: deps, cfg: cfg}
}

// Result is what one collection deleted, summed over its batches.
type Result struct {
	Evals       int
	Allocs      int
	Deployments int
	Jobs        int
	Nodes       int
	// Batches is how many Raft entries it wrote; Index the last one's.
	Batches int
	Index   uint64
}

// Total is how many objects were deleted.
func (r *Result) Total() int { return r.Evals + r.Allocs + r.Deployments + r.Jobs + r.Nodes }

// Params are the cutoffs a collection at now uses; a forced one ignores
// the thresholds (Nomad's forced GC: every finished object goes).
func (s *Service) Params(force bool) state.GCParams {
	if force {
		return state.GCForce
	}
	now := s.deps.Now()
	return state.GCParams{
		EvalCutoff:       now.Add(-s.cfg.EvalThreshold).UnixNano(),
		DeploymentCutoff: now.Add(-s.cfg.DeploymentThreshold).UnixNano(),
		JobCutoff:        now.Add(-s.cfg.JobThreshold).UnixNano(),
		NodeCutoff:       now.Add(-s.cfg.NodeThreshold).UnixNano(),
	}
}

// ForceCollect is an operator's forced collection (Nomad's PUT
// /v1/system/gc): Collect(true) for a management caller only.
func (s *Service) ForceCollect(caller acl.Caller) (*Result, error) {
	if err := caller.RequireManagement(); err != nil {
		return nil, err
	}
	return s.Collect(true)
}

// Collect runs one collection now, batch after batch until nothing more
// qualifies, and returns what it deleted. force ignores the thresholds.
func (s *Service) Collect(force bool) (*Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.Params(force)
	out := &Result{}
	for out.Batches < maxBatches {
		req, err := s.deps.State().GCCandidates(p, s.cfg.BatchSize)
		if err != nil {
			return out, err
		}
		if req.Size() == 0 {
			break
		}
		res, err := fsm.Apply(s.deps.Raft, fsm.GC, &fsm.GCRequest{Request: *req})
		if err != nil {
			return out, err
		}
		out.Batches++
		out.Index = res.Index
		out.Evals += res.Evals
		out.Allocs += res.Allocs
		out.Deployments += res.Deployments
		out.Jobs += res.Jobs
		out.Nodes += res.Nodes
		if res.Allocs > 0 && s.cfg.AllocsDeleted != nil {
			s.cfg.AllocsDeleted(res.Index)
		}
		if res.Total() == 0 {
			// Every candidate changed before the entry was applied: the
			// next round will see them as they are now.
			break
		}
	}
	if out.Total() > 0 {
		s.deps.Logger.Info("garbage collected", "forced", force, "evals", out.Evals, "allocs", out.Allocs,
			"deployments", out.Deployments, "jobs", out.Jobs, "nodes", out.Nodes, "batches", out.Batches)
	}
	return out, nil
}

// Run collects every Interval until ctx ends: a leader routine.
func (s *Service) Run(ctx context.Context) {
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := s.Collect(false); err != nil && ctx.Err() == nil {
				s.deps.Logger.Warn("garbage collection failed", "error", err)
			}
		}
	}
}
