package fsm

import "github.com/ctlplane/ctlplane/state"

// Message types of the orchestrator half (jobs, evaluations, plans, nodes,
// allocations, deployments).
const (
	JobRegisterType           MessageType = 16
	JobPurgeType              MessageType = 17
	JobStableType             MessageType = 18
	EvalUpsertType            MessageType = 19
	PlanApplyType             MessageType = 20
	DeploymentStatusType      MessageType = 21
	DeploymentPromoteType     MessageType = 22
	DeploymentAllocHealthType MessageType = 23
	NodeRegisterType          MessageType = 24
	NodeStatusType            MessageType = 25
	AllocClientUpdateType     MessageType = 26
	GCType                    MessageType = 27
	// Numbered apart from the others so that types added beside it on
	// other branches do not collide.
	AllocDesiredTransitionType MessageType = 40
	// PlanApplyEvalsType: a plan with its evaluation's outcome (80–89 are
	// this branch's).
	PlanApplyEvalsType MessageType = 80
	// AllocClientUpdatesType: the reports of many nodes, group-committed
	// by the server that accepted them (90–99 are branch placements').
	AllocClientUpdatesType MessageType = 90
)

// Done is the answer of a write that has nothing to report but its success.
type Done struct{}

// Indexed is the answer of a write that reports only the Raft index it was
// applied at (the index a client's next blocking read waits past).
type Indexed struct {
	Index uint64
}

// JobRegisterRequest registers a job (a new version when its spec changed)
// with the evaluation that goes with it. Deregistering without purge is a
// registration with Stop set.
type JobRegisterRequest struct {
	Job  *state.Job
	Eval *state.Evaluation
	// NamespaceMustExist refuses a job in a namespace that does not exist
	// (Nomad's rule; entries from before namespaces have it false).
	NamespaceMustExist bool
}

// JobPurgeRequest removes a job and its versions.
type JobPurgeRequest struct {
	Namespace string
	JobID     string
	Eval      *state.Evaluation
}

// JobStableRequest marks one version of a job stable or not.
type JobStableRequest struct {
	Namespace string
	JobID     string
	Version   uint64
	Stable    bool
}

// AllocDesiredTransitionRequest sets desired transitions on allocations
// (the deployment watcher's Reschedule, the drainer's Migrate) with the
// evaluations that act on them.
type AllocDesiredTransitionRequest struct {
	Transitions map[string]state.DesiredTransition
	Evals       []*state.Evaluation
}

// EvalUpsertRequest creates or updates evaluations.
type EvalUpsertRequest struct {
	Evals []*state.Evaluation
}

// PlanApplyRequest applies one scheduler plan.
type PlanApplyRequest struct {
	Plan *state.Plan
}

// PlanApplyEvalsRequest applies one scheduler plan and, when it is
// applied, writes Evals with it (the evaluation complete, its blocked
// evaluation): a refused plan writes nothing, and the scheduler tries again.
type PlanApplyEvalsRequest struct {
	Plan  *state.Plan
	Evals []*state.Evaluation
}

// NodeRegisterRequest registers or re-registers a client node.
type NodeRegisterRequest struct {
	Node  *state.Node
	Evals []*state.Evaluation
}

// NodeStatusRequest changes a node's status (down marks its allocations lost).
type NodeStatusRequest struct {
	NodeID      string
	Status      string
	Description string
	Evals       []*state.Evaluation
	Now         int64
}

// AllocClientUpdateRequest is a batch of a client's allocation reports.
type AllocClientUpdateRequest struct {
	NodeID  string
	Updates []*state.AllocClientUpdate
	Evals   []*state.Evaluation
	Now     int64
}

// AllocClientUpdatesRequest is the reports of many nodes, each checked
// (the node's own allocations, valid values) by the server that accepted
// it, applied in one transaction.
type AllocClientUpdatesRequest struct {
	Nodes []*state.NodeAllocReports
}

// GCRequest is one batch of a garbage collection: candidates and the
// cutoffs they were chosen by.
type GCRequest struct {
	Request state.GCRequest
}

// The orchestrator's commands.
var (
	JobRegister = define(JobRegisterType, "job register", func(s *state.Store, idx uint64, r *JobRegisterRequest) (*state.JobRegisterResult, error) {
		if r.NamespaceMustExist {
			return s.JobRegisterInNamespace(idx, r.Job, r.Eval)
		}
		return s.JobRegister(idx, r.Job, r.Eval)
	})
	JobPurge = define(JobPurgeType, "job purge", func(s *state.Store, idx uint64, r *JobPurgeRequest) (Indexed, error) {
		return Indexed{Index: idx}, s.JobPurge(idx, r.Namespace, r.JobID, r.Eval)
	})
	JobStable = define(JobStableType, "job stable", func(s *state.Store, idx uint64, r *JobStableRequest) (Indexed, error) {
		return Indexed{Index: idx}, s.JobSetStable(idx, r.Namespace, r.JobID, r.Version, r.Stable)
	})
	AllocDesiredTransition = define(AllocDesiredTransitionType, "alloc desired transition", func(s *state.Store, idx uint64, r *AllocDesiredTransitionRequest) (Indexed, error) {
		return Indexed{Index: idx}, s.AllocsDesiredTransition(idx, r.Transitions, r.Evals)
	})
	EvalUpsert = define(EvalUpsertType, "eval upsert", func(s *state.Store, idx uint64, r *EvalUpsertRequest) (Done, error) {
		return Done{}, s.EvalsUpsert(idx, r.Evals)
	})
	PlanApply = define(PlanApplyType, "plan apply", func(s *state.Store, idx uint64, r *PlanApplyRequest) (*state.PlanResult, error) {
		return s.ApplyPlan(idx, r.Plan)
	})
	PlanApplyEvals = define(PlanApplyEvalsType, "plan apply with evals", func(s *state.Store, idx uint64, r *PlanApplyEvalsRequest) (*state.PlanResult, error) {
		return s.ApplyPlanWithEvals(idx, r.Plan, r.Evals)
	})
	DeploymentStatus = define(DeploymentStatusType, "deployment status", func(s *state.Store, idx uint64, r *state.DeploymentUpdateRequest) (*state.DeploymentUpdateResult, error) {
		return s.DeploymentUpdateStatus(idx, r)
	})
	DeploymentPromote = define(DeploymentPromoteType, "deployment promote", func(s *state.Store, idx uint64, r *state.DeploymentPromoteRequest) (*state.DeploymentUpdateResult, error) {
		return s.DeploymentPromote(idx, r)
	})
	DeploymentAllocHealth = define(DeploymentAllocHealthType, "deployment alloc health", func(s *state.Store, idx uint64, r *state.DeploymentAllocHealthRequest) (*state.DeploymentUpdateResult, error) {
		return s.DeploymentAllocHealth(idx, r)
	})
	NodeRegister = define(NodeRegisterType, "node register", func(s *state.Store, idx uint64, r *NodeRegisterRequest) (Done, error) {
		return Done{}, s.NodeRegister(idx, r.Node, r.Evals)
	})
	NodeStatus = define(NodeStatusType, "node status", func(s *state.Store, idx uint64, r *NodeStatusRequest) (Done, error) {
		return Done{}, s.NodeUpdateStatus(idx, r.NodeID, r.Status, r.Description, r.Evals, r.Now)
	})
	// GC deletes the finished objects a collection chose that still
	// qualify when it is applied (state.GCApply).
	GC = define(GCType, "gc", func(s *state.Store, idx uint64, r *GCRequest) (*state.GCResult, error) {
		return s.GCApply(idx, &r.Request)
	})
	AllocClientUpdate = define(AllocClientUpdateType, "alloc client update", func(s *state.Store, idx uint64, r *AllocClientUpdateRequest) (Done, error) {
		return Done{}, s.AllocsClientUpdate(idx, r.NodeID, r.Updates, r.Evals, r.Now)
	})
	AllocClientUpdates = define(AllocClientUpdatesType, "alloc client updates", func(s *state.Store, idx uint64, r *AllocClientUpdatesRequest) (Indexed, error) {
		return Indexed{Index: idx}, s.AllocsClientUpdates(idx, r.Nodes)
	})
)
