// Package nodes is the server side of the client protocol: node
// registration, heartbeats (a leader routine that marks silent nodes down),
// and the allocation status reports of clients.
package nodes

import (
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/groupcommit"
	"github.com/ctlplane/ctlplane/server/svc"
	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
)

// DefaultHeartbeatTTL is how long a node may stay silent before it is down.
const DefaultHeartbeatTTL = 10 * time.Second

// Config tunes the service.
type Config struct {
	// HeartbeatTTL is answered to clients (they beat at half of it); a node
	// silent for longer is marked down. Default DefaultHeartbeatTTL.
	HeartbeatTTL time.Duration
	// Grace is the extra time every ready node gets when this server
	// becomes leader, since it never heard their heartbeats. Default: the TTL.
	Grace time.Duration
	// MaxNodes caps how many nodes may be registered (default DefaultMaxNodes).
	MaxNodes int
}

// Service implements node registration, heartbeats and allocation updates.
type Service struct {
	deps     svc.Deps
	ttl      time.Duration
	grace    time.Duration
	maxNodes int

	// reports group-commits the nodes' allocation reports.
	reports *groupcommit.Committer[*state.NodeAllocReports, uint64]

	mu sync.Mutex
	// hb is the heartbeat tracker while this server leads, else nil.
	hb *heartbeats
}

// New returns the service.
func New(deps svc.Deps, cfg Config) *Service {
	if cfg.HeartbeatTTL <= 0 {
		cfg.HeartbeatTTL = DefaultHeartbeatTTL
	}
	if cfg.Grace <= 0 {
		cfg.Grace = cfg.HeartbeatTTL
	}
	if cfg.MaxNodes <= 0 {
		cfg.MaxNodes = DefaultMaxNodes
	}
	return &Service{deps: deps, ttl: cfg.HeartbeatTTL, grace: cfg.Grace, maxNodes: cfg.MaxNodes,
		reports: newReportBatcher(deps.Raft)}
}

// HeartbeatTTL is the TTL the service answers.
func (s *Service) HeartbeatTTL() time.Duration { return s.ttl }

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._\-]{0,127}$`)

func invalid(format string, args ...any) error {
	return &state.Error{Code: state.ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}

func nodeNotFound(id string) error {
	return &state.Error{Code: state.ErrNotFound, Msg: fmt.Sprintf("node %s not found", id)}
}

// Registration answers a registration.
type Registration struct {
	NodeID string
	// SecretID is the node's secret, answered once: when it was minted
	// (the node's first registration), "" on re-registrations.
	SecretID     string
	HeartbeatTTL time.Duration
	Index        uint64
}

// Register registers a node, or re-registers it (same ID, or no ID and the
// same name and datacenter as a known node), and makes it ready. A new
// node needs node:write and gets a secret, minted here and written in the
// registration's Raft entry (so every server has it); an existing node
// needs its secret (mayRegister).
func (s *Service) Register(c Caller, node *state.Node) (*Registration, error) {
	if node == nil {
		return nil, invalid("missing node")
	}
	n := *node
	n.SecretID = ""
	if err := s.validNode(&n); err != nil {
		return nil, err
	}
	store := s.deps.State()
	var old *state.Node
	if n.ID != "" {
		_, existing, err := store.Node(nil, n.ID)
		if err != nil {
			return nil, err
		}
		old = existing
	} else {
		_, all, err := store.Nodes(nil)
		if err != nil {
			return nil, err
		}
		for _, e := range all {
			if e.Name == n.Name && e.Datacenter == n.Datacenter {
				old = e
				break
			}
		}
	}
	// Checked before the ID of a node found by name is used: the answer
	// must not tell it to a caller that is not that node.
	if err := mayRegister(c, old); err != nil {
		return nil, err
	}
	var minted string
	switch {
	case old == nil:
		if err := s.checkNodeCount(store); err != nil {
			return nil, err
		}
		if n.ID == "" {
			n.ID = uuid.NewString()
		}
		minted = uuid.NewString()
		n.SecretID = minted
	case old.SecretID == "":
		n.ID = old.ID
		minted = uuid.NewString()
		n.SecretID = minted
	default:
		n.ID = old.ID
		n.SecretID = old.SecretID
	}
	n.Status = state.NodeStatusReady
	n.StatusDescription = ""
	n.SchedulingEligibility = state.NodeSchedulingEligible
	n.StatusUpdatedAt = s.deps.NowNanos()
	if old != nil && old.SchedulingEligibility != "" {
		// Eligibility is an operator's decision; a re-registration keeps it.
		n.SchedulingEligibility = old.SchedulingEligibility
	}
	if _, err := fsm.Apply(s.deps.Raft, fsm.NodeRegister, &fsm.NodeRegisterRequest{Node: &n}); err != nil {
		return nil, err
	}
	s.resetTimer(n.ID)
	return &Registration{NodeID: n.ID, SecretID: minted, HeartbeatTTL: s.ttl, Index: s.indexOfNode(n.ID)}, nil
}

// indexOfNode is the index the node was last written at (the write just made).
func (s *Service) indexOfNode(id string) uint64 {
	_, n, err := s.deps.State().Node(nil, id)
	if err != nil || n == nil {
		return s.deps.State().NodesIndex()
	}
	return n.ModifyIndex
}

// Heartbeat records that a node is alive: a down node becomes ready again,
// and its TTL starts over. It answers the TTL and the nodes table's index.
// Only the node itself may (its secret).
func (s *Service) Heartbeat(c Caller, nodeID string) (time.Duration, uint64, error) {
	n, err := s.confine(s.deps.State(), c, nodeID)
	if err != nil {
		return 0, 0, err
	}
	if n.Status != state.NodeStatusReady {
		if err := s.markReady(nodeID); err != nil {
			return 0, 0, err
		}
	}
	s.resetTimer(nodeID)
	return s.ttl, s.indexOfNode(nodeID), nil
}

// Limits on one client report.
const (
	MaxAllocUpdates  = 1000
	MaxTaskStates    = 100
	MaxTaskEvents    = 200
	MaxCheckResults  = 256
	maxDescriptionSz = 1024
	// maxCheckOutput: the client keeps 3 KiB of a check's output (Nomad's
	// cap), plus room for its own "nomad: <error>" texts.
	maxCheckOutput = 4096
	maxCheckField  = 512
)

var checkStatuses = map[string]bool{"success": true, "failure": true, "pending": true}
var checkModes = map[string]bool{"healthiness": true, "readiness": true}

var clientStatuses = map[string]bool{
	state.AllocClientStatusPending: true, state.AllocClientStatusRunning: true,
	state.AllocClientStatusComplete: true, state.AllocClientStatusFailed: true,
	state.AllocClientStatusLost: true,
}

var taskStates = map[string]bool{state.TaskStatePending: true, state.TaskStateRunning: true, state.TaskStateDead: true}

// validUpdate checks one report against the value sets.
func validUpdate(i int, u *state.AllocClientUpdate) error {
	if u == nil {
		return invalid("Allocs[%d] is null", i)
	}
	if !uuidRE.MatchString(u.ID) {
		return invalid("Allocs[%d].ID %q is invalid: a 36-character UUID is required", i, u.ID)
	}
	if !clientStatuses[u.ClientStatus] {
		return invalid("Allocs[%d].ClientStatus %q is invalid: one of pending, running, complete, failed, lost", i, u.ClientStatus)
	}
	if len(u.ClientDescription) > maxDescriptionSz {
		return invalid("Allocs[%d].ClientDescription is longer than %d bytes", i, maxDescriptionSz)
	}
	if len(u.TaskStates) > MaxTaskStates {
		return invalid("Allocs[%d].TaskStates has %d tasks: at most %d are allowed", i, len(u.TaskStates), MaxTaskStates)
	}
	for name, ts := range u.TaskStates {
		if ts == nil {
			return invalid("Allocs[%d].TaskStates[%q] is null", i, name)
		}
		if !taskStates[ts.State] {
			return invalid("Allocs[%d].TaskStates[%q].State %q is invalid: one of pending, running, dead", i, name, ts.State)
		}
		if len(ts.Events) > MaxTaskEvents {
			return invalid("Allocs[%d].TaskStates[%q].Events has %d events: at most %d are allowed", i, name, len(ts.Events), MaxTaskEvents)
		}
		for k, e := range ts.Events {
			if e == nil {
				return invalid("Allocs[%d].TaskStates[%q].Events[%d] is null", i, name, k)
			}
		}
	}
	if len(u.CheckResults) > MaxCheckResults {
		return invalid("Allocs[%d].CheckResults has %d checks: at most %d are allowed", i, len(u.CheckResults), MaxCheckResults)
	}
	for id, cr := range u.CheckResults {
		switch {
		case cr == nil:
			return invalid("Allocs[%d].CheckResults[%q] is null", i, id)
		case !checkStatuses[cr.Status]:
			return invalid("Allocs[%d].CheckResults[%q].Status %q is invalid: one of success, failure, pending", i, id, cr.Status)
		case !checkModes[cr.Mode]:
			return invalid("Allocs[%d].CheckResults[%q].Mode %q is invalid: one of healthiness, readiness", i, id, cr.Mode)
		case len(cr.Output) > maxCheckOutput:
			return invalid("Allocs[%d].CheckResults[%q].Output is longer than %d bytes", i, id, maxCheckOutput)
		case len(id) > maxCheckField || len(cr.ID) > maxCheckField || len(cr.Check) > maxCheckField || len(cr.Group) > maxCheckField ||
			len(cr.Task) > maxCheckField || len(cr.Service) > maxCheckField:
			return invalid("Allocs[%d].CheckResults[%q] has a name longer than %d bytes", i, id, maxCheckField)
		}
	}
	return nil
}

// UpdateAllocs applies a batch of a node's allocation reports, with the
// evaluations Nomad's Node.UpdateAlloc creates: one per report that
// reconnects an unknown allocation or newly fails one its reschedule
// policy allows to replace (evalTrigger). Reports about allocations that
// are gone or on another node refuse the whole report (only the node
// itself reports, on its own allocations): all is checked before the
// reports join the Raft entry the reports of other nodes share
// (newReportBatcher). It answers the index of that entry.
func (s *Service) UpdateAllocs(c Caller, nodeID string, updates []*state.AllocClientUpdate) (uint64, error) {
	store := s.deps.State()
	if _, err := s.confine(store, c, nodeID); err != nil {
		return 0, err
	}
	if len(updates) > MaxAllocUpdates {
		return 0, invalid("Allocs has %d updates: at most %d are allowed", len(updates), MaxAllocUpdates)
	}
	for i, u := range updates {
		if err := validUpdate(i, u); err != nil {
			return 0, err
		}
	}
	allocs, err := checkOwnReports(store, nodeID, updates)
	if err != nil {
		return 0, err
	}
	now := s.deps.Now()
	keep := make([]*state.AllocClientUpdate, 0, len(updates))
	var evals []*state.Evaluation
	for i, u := range updates {
		a := allocs[i]
		if a == nil {
			continue
		}
		// The server's verdict "lost" stands: the client only confirms it stopped.
		if a.ClientStatus == state.AllocClientStatusLost {
			continue
		}
		keep = append(keep, u)
		// Only a failure or a reconnect can make one (saves the lookups).
		if u.ClientStatus != state.AllocClientStatusFailed && a.ClientStatus != state.AllocClientStatusUnknown {
			continue
		}
		_, job, err := store.Job(nil, a.Namespace, a.JobID)
		if err != nil {
			return 0, err
		}
		if job == nil {
			continue
		}
		tg := job.LookupTaskGroup(a.TaskGroup)
		if tg == nil {
			continue
		}
		if trigger := evalTrigger(a, u.ClientStatus, tg, now); trigger != "" {
			evals = append(evals, allocUpdateEval(job, trigger, now))
		}
	}
	if len(keep) == 0 {
		return store.AllocsIndex(), nil
	}
	return s.reports.Write(&state.NodeAllocReports{NodeID: nodeID, Updates: keep, Evals: evals, Now: now.UnixNano()})
}

// allocUpdateEval is the evaluation Nomad's UpdateAlloc writes: of the
// job's type and priority, with no node and no job modify index.
func allocUpdateEval(job *state.Job, trigger string, now time.Time) *state.Evaluation {
	typ := job.Type
	if typ == "" {
		typ = state.JobTypeService
	}
	return &state.Evaluation{
		ID:          uuid.NewString(),
		Namespace:   job.Namespace,
		Priority:    job.Priority,
		Type:        typ,
		TriggeredBy: trigger,
		JobID:       job.ID,
		Status:      state.EvalStatusPending,
		CreateTime:  now.UnixNano(),
		ModifyTime:  now.UnixNano(),
	}
}

// newEval is a pending service evaluation of job.
func newEval(job *state.Job, trigger, nodeID string, now time.Time) *state.Evaluation {
	return &state.Evaluation{
		ID:             uuid.NewString(),
		Namespace:      job.Namespace,
		Priority:       job.Priority,
		Type:           state.JobTypeService,
		TriggeredBy:    trigger,
		JobID:          job.ID,
		JobModifyIndex: job.JobModifyIndex,
		NodeID:         nodeID,
		Status:         state.EvalStatusPending,
		CreateTime:     now.UnixNano(),
		ModifyTime:     now.UnixNano(),
	}
}

// AllocsIndexForNode is the node's index that AllocChangesForNode reports,
// without reading the list: a node's blocking read waits on it.
func (s *Service) AllocsIndexForNode(c Caller, ws memdb.WatchSet, nodeID string) (uint64, error) {
	store := s.deps.State()
	if _, err := s.confine(store, c, nodeID); err != nil {
		return 0, err
	}
	return store.ClientAllocsIndex(ws, nodeID), nil
}

// AllocChangesForNode reads, for its client (the node itself only), what
// changed in the node's list of allocations after index since (0: the
// whole list): the allocations not ended on the client (complete, failed
// or lost), each with the task group of its job version, without the
// task states the client reported (its own news) and the scheduler's
// metrics. An unknown node is not found, so that its client registers
// again.
func (s *Service) AllocChangesForNode(c Caller, nodeID string, since uint64) (*state.ClientAllocChanges, error) {
	store := s.deps.State()
	if _, err := s.confine(store, c, nodeID); err != nil {
		return nil, err
	}
	return store.ClientAllocChanges(nodeID, since)
}
