package fsm

import (
	"errors"

	"github.com/ctlplane/ctlplane/state"
	"github.com/ctlplane/ctlplane/state/stream"
	"github.com/hashicorp/go-memdb"
)

// EventSink takes the events of each applied entry (a stream.Buffer).
type EventSink interface {
	Publish(index uint64, events []stream.Event)
	// Reset ends the subscriptions of a state a snapshot restore replaced.
	Reset(err error)
}

// errRestored ends the event streams of a replaced state.
var errRestored = errors.New("subscription closed by server: its state was replaced by a snapshot restore; resubscribe (events of the entries the snapshot covers were not produced here)")

// SetEventSink makes the FSM derive events from every entry it applies
// (from the changes its write committed, state.Events) and hand them to
// sink. Call it before the first entry is applied.
func (f *FSM) SetEventSink(sink EventSink) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = sink
	f.state.TrackChanges()
}

// eventTypes is the one declaration a command needs for its events: the
// type of its events per topic, where it differs from the table's default
// (state.Events: a job JobRegistered, or JobDeregistered once stopped or
// purged; an evaluation EvaluationUpdated; an allocation
// AllocationUpdated; a deployment DeploymentStatusUpdate; a node
// NodeRegistration when new, NodeEvent when changed, NodeDeregistration;
// an ACL object <Topic>Upserted or <Topic>Deleted). A command that is not
// listed still gets events of the defaults.
var eventTypes = map[MessageType]state.EventTypes{
	// A job's status follows its allocations: the entry that moved it names the event.
	PlanApplyType:              {stream.TopicAllocation: stream.TypePlanResult, stream.TopicJob: stream.TypePlanResult},
	PlanApplyEvalsType:         {stream.TopicAllocation: stream.TypePlanResult, stream.TopicJob: stream.TypePlanResult},
	AllocClientUpdateType:      {stream.TopicJob: stream.TypeAllocationUpdated},
	AllocClientUpdatesType:     {stream.TopicJob: stream.TypeAllocationUpdated},
	DeploymentPromoteType:      {stream.TopicDeployment: stream.TypeDeploymentPromotion, stream.TopicAllocation: stream.TypeDeploymentPromotion},
	DeploymentAllocHealthType:  {stream.TopicDeployment: stream.TypeDeploymentAllocHealth, stream.TopicAllocation: stream.TypeDeploymentAllocHealth},
	AllocDesiredTransitionType: {stream.TopicAllocation: stream.TypeAllocationUpdateDesiredStatus},
	AllocStopType:              {stream.TopicAllocation: stream.TypeAllocationUpdateDesiredStatus},
	NodeRegisterType:           {stream.TopicNode: stream.TypeNodeRegistration},
	NodeStatusType:             {stream.TopicNode: stream.TypeNodeEvent},
	NodeUpdateDrainType:        {stream.TopicNode: stream.TypeNodeDrain},
	NodesDrainCompleteType:     {stream.TopicNode: stream.TypeNodeDrain},
	NodeUpdateEligibilityType:  {stream.TopicNode: stream.TypeNodeEligibility},
	GCType:                     {stream.TopicJob: stream.TypeJobBatchDeregistered},
}

// entryChanges is what one entry of a batch changed, kept until the batch commits.
type entryChanges struct {
	index   uint64
	typ     MessageType
	changes []memdb.Change
}

// publish hands the events of the entry at index to the sink.
func (f *FSM) publish(index uint64, t MessageType, changes []memdb.Change) {
	if f.events == nil || len(changes) == 0 {
		return
	}
	f.events.Publish(index, state.Events(index, changes, eventTypes[t]))
}
