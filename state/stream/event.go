// Package stream is the event stream: the events the FSM derives from each
// Raft entry it applies, kept in a bounded buffer that subscribers read at
// their own pace (Nomad's event broker, GET /v1/event/stream).
package stream

import (
	"encoding/json"
	"sync"
)

// Topics, as Nomad's (api.Topic) plus the Consul half's ACL objects.
const (
	TopicDeployment     = "Deployment"
	TopicEvaluation     = "Evaluation"
	TopicAllocation     = "Allocation"
	TopicJob            = "Job"
	TopicNode           = "Node"
	TopicService        = "Service"
	TopicACLToken       = "ACLToken"
	TopicACLPolicy      = "ACLPolicy"
	TopicACLRole        = "ACLRole"
	TopicACLAuthMethod  = "ACLAuthMethod"
	TopicACLBindingRule = "ACLBindingRule"
	TopicAll            = "*"
)

// Event types, as Nomad's structs.Type* (the ACL ones as Nomad names its own).
const (
	TypeNodeRegistration              = "NodeRegistration"
	TypeNodeDeregistration            = "NodeDeregistration"
	TypeNodeEligibility               = "NodeEligibility"
	TypeNodeDrain                     = "NodeDrain"
	TypeNodeEvent                     = "NodeEvent"
	TypeDeploymentUpdate              = "DeploymentStatusUpdate"
	TypeDeploymentPromotion           = "DeploymentPromotion"
	TypeDeploymentAllocHealth         = "DeploymentAllocHealth"
	TypeAllocationUpdated             = "AllocationUpdated"
	TypeAllocationUpdateDesiredStatus = "AllocationUpdateDesiredStatus"
	TypePlanResult                    = "PlanResult"
	TypeEvalUpdated                   = "EvaluationUpdated"
	TypeJobRegistered                 = "JobRegistered"
	TypeJobDeregistered               = "JobDeregistered"
	TypeJobBatchDeregistered          = "JobBatchDeregistered"
	TypeACLTokenUpserted              = "ACLTokenUpserted"
	TypeACLTokenDeleted               = "ACLTokenDeleted"
	TypeACLPolicyUpserted             = "ACLPolicyUpserted"
	TypeACLPolicyDeleted              = "ACLPolicyDeleted"
	TypeACLRoleUpserted               = "ACLRoleUpserted"
	TypeACLRoleDeleted                = "ACLRoleDeleted"
	TypeACLAuthMethodUpserted         = "ACLAuthMethodUpserted"
	TypeACLAuthMethodDeleted          = "ACLAuthMethodDeleted"
	TypeACLBindingRuleUpserted        = "ACLBindingRuleUpserted"
	TypeACLBindingRuleDeleted         = "ACLBindingRuleDeleted"
	TypeServiceRegistration           = "ServiceRegistration"
	TypeServiceDeregistration         = "ServiceDeregistration"
)

// Event is one change to one object, as Nomad's structs.Event. Payload is
// a one-key map naming the object (e.g. {"Job": job}); the object is the
// stored one and must not be changed.
type Event struct {
	Topic      string
	Type       string
	Key        string
	Namespace  string
	FilterKeys []string
	Index      uint64
	Payload    map[string]any
}

// Batch is the events of one Raft entry.
type Batch struct {
	Index  uint64
	Events []Event

	encOnce sync.Once
	enc     [][]byte
	encErr  error
}

// Encoded is the JSON of each event, made once for every subscriber by
// view (which turns a stored object into what a read of it answers).
func (b *Batch) Encoded(view func(*Event) Event) ([][]byte, error) {
	b.encOnce.Do(func() {
		b.enc = make([][]byte, len(b.Events))
		for i := range b.Events {
			v := view(&b.Events[i])
			buf, err := json.Marshal(&v)
			if err != nil {
				b.encErr = err
				return
			}
			b.enc[i] = buf
		}
	})
	return b.enc, b.encErr
}
