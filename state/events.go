package state

import (
	"sync"

	"github.com/ctlplane/ctlplane/state/stream"
	"github.com/hashicorp/go-memdb"
)

// changeLog collects what committed write transactions changed while
// tracking is on: the FSM turns it on when it feeds an event stream, and
// takes the changes after each entry it applies (as Nomad derives its
// events from memdb's tracked changes).
type changeLog struct {
	mu      sync.Mutex
	on      bool
	changes []memdb.Change
}

// TrackChanges turns change tracking on for every later write.
func (s *Store) TrackChanges() {
	s.changes.mu.Lock()
	s.changes.on = true
	s.changes.mu.Unlock()
}

func (s *Store) tracking() bool {
	s.changes.mu.Lock()
	defer s.changes.mu.Unlock()
	return s.changes.on
}

// writeTxn opens the write transaction of every store write but the
// orchestrator's (orchTxn); with tracking on, its changes are logged when
// (and only if) it commits.
func (s *Store) writeTxn() *memdb.Txn {
	txn := s.db.Txn(true)
	if s.tracking() {
		txn.TrackChanges()
		txn.Defer(func() { s.logChanges(txn.Changes()) })
	}
	return txn
}

// orchTxn opens a write transaction of the orchestrator's tables; commit it
// with commitOrch (and only with it), which derives the job summaries from
// what it changed and hands the changes to the nodes' usage and the log.
func (s *Store) orchTxn() *memdb.Txn {
	txn := s.db.Txn(true)
	txn.TrackChanges()
	return txn
}

// logChanges adds a committed transaction's changes to the log.
func (s *Store) logChanges(cs memdb.Changes) {
	s.changes.mu.Lock()
	s.changes.changes = append(s.changes.changes, cs...)
	s.changes.mu.Unlock()
}

// TakeChanges returns and forgets the changes committed since the last call.
func (s *Store) TakeChanges() []memdb.Change {
	s.changes.mu.Lock()
	defer s.changes.mu.Unlock()
	out := s.changes.changes
	s.changes.changes = nil
	return out
}

// NewEntriesBatch is NewBatch for a transaction over many entries: memdb
// would merge the changes of different entries, so each batch write
// records its own (record) and the FSM takes them after each entry
// (TakeEntryChanges). Every write allowed in such a batch must record.
func (s *Store) NewEntriesBatch() *Batch {
	return &Batch{txn: s.db.Txn(true), indexes: map[string]uint64{}, explicit: s.tracking()}
}

// record notes one change of the current entry of an entries batch.
func (b *Batch) record(table string, before, after any) {
	if b.explicit {
		b.entry = append(b.entry, memdb.Change{Table: table, Before: before, After: after})
	}
}

// TakeEntryChanges returns and forgets the changes recorded since the last call.
func (b *Batch) TakeEntryChanges() []memdb.Change {
	out := b.entry
	b.entry = nil
	return out
}

// EventTypes names, per topic, the event type of an entry's changes (e.g.
// a plan's allocations are PlanResult); a topic it leaves out gets its
// table's default (see Events).
type EventTypes map[string]string

// Events turns the changes of the entry at index into events. Tables that
// are no topic (indexes, versions, summaries, history) give none.
func Events(index uint64, changes []memdb.Change, types EventTypes) []stream.Event {
	var out []stream.Event
	for _, c := range changes {
		conv := eventOf[c.Table]
		if conv == nil {
			continue
		}
		ev, ok := conv(c)
		if !ok {
			continue
		}
		if t := types[ev.Topic]; t != "" {
			ev.Type = t
		}
		ev.Index = index
		out = append(out, ev)
	}
	return out
}

// eventOf makes the event of one change of a table, with its default type.
var eventOf = map[string]func(c memdb.Change) (stream.Event, bool){
	jobsTable: func(c memdb.Change) (stream.Event, bool) {
		if c.Deleted() {
			j := c.Before.(*Job)
			return stream.Event{Topic: stream.TopicJob, Type: stream.TypeJobDeregistered, Key: j.ID, Namespace: j.Namespace,
				Payload: map[string]any{"Job": j, "Deleted": true}}, true
		}
		j := c.After.(*Job)
		typ := stream.TypeJobRegistered
		if j.Stop {
			typ = stream.TypeJobDeregistered
		}
		return stream.Event{Topic: stream.TopicJob, Type: typ, Key: j.ID, Namespace: j.Namespace, Payload: map[string]any{"Job": j}}, true
	},
	evalsTable: func(c memdb.Change) (stream.Event, bool) {
		if c.Deleted() {
			return stream.Event{}, false // garbage collection
		}
		e := c.After.(*Evaluation)
		return stream.Event{Topic: stream.TopicEvaluation, Type: stream.TypeEvalUpdated, Key: e.ID, Namespace: e.Namespace,
			FilterKeys: filterKeys(e.JobID, e.DeploymentID), Payload: map[string]any{"Evaluation": e}}, true
	},
	allocsTable: func(c memdb.Change) (stream.Event, bool) {
		if c.Deleted() {
			return stream.Event{}, false
		}
		a := c.After.(*Allocation)
		return stream.Event{Topic: stream.TopicAllocation, Type: stream.TypeAllocationUpdated, Key: a.ID, Namespace: a.Namespace,
			FilterKeys: filterKeys(a.JobID, a.DeploymentID), Payload: map[string]any{"Allocation": a}}, true
	},
	deploymentsTable: func(c memdb.Change) (stream.Event, bool) {
		if c.Deleted() {
			return stream.Event{}, false
		}
		d := c.After.(*Deployment)
		return stream.Event{Topic: stream.TopicDeployment, Type: stream.TypeDeploymentUpdate, Key: d.ID, Namespace: d.Namespace,
			FilterKeys: filterKeys(d.JobID), Payload: map[string]any{"Deployment": d}}, true
	},
	nodesTable: func(c memdb.Change) (stream.Event, bool) {
		if c.Deleted() {
			n := publicNode(c.Before.(*Node))
			return stream.Event{Topic: stream.TopicNode, Type: stream.TypeNodeDeregistration, Key: n.ID, Payload: map[string]any{"Node": n}}, true
		}
		typ := stream.TypeNodeEvent
		if c.Created() {
			typ = stream.TypeNodeRegistration
		}
		n := publicNode(c.After.(*Node))
		return stream.Event{Topic: stream.TopicNode, Type: typ, Key: n.ID, Payload: map[string]any{"Node": n}}, true
	},
	servicesTable: func(c memdb.Change) (stream.Event, bool) {
		r, typ := c.After, stream.TypeServiceRegistration
		if c.Deleted() {
			r, typ = c.Before, stream.TypeServiceDeregistration
		}
		reg := r.(*ServiceRegistration)
		return stream.Event{Topic: stream.TopicService, Type: typ, Key: reg.ID, Namespace: reg.Namespace,
			FilterKeys: filterKeys(reg.JobID, reg.ServiceName), Payload: map[string]any{"Service": reg}}, true
	},
	aclTokensTable: aclEvent(stream.TopicACLToken, stream.TypeACLTokenUpserted, stream.TypeACLTokenDeleted, func(obj any) (string, any) {
		t := *obj.(*ACLToken)
		t.SecretID = "" // never in an event
		t.Hash = nil
		return t.AccessorID, &t
	}),
	aclPoliciesTable: aclEvent(stream.TopicACLPolicy, stream.TypeACLPolicyUpserted, stream.TypeACLPolicyDeleted, func(obj any) (string, any) {
		return obj.(*ACLPolicy).ID, obj
	}),
	aclRolesTable: aclEvent(stream.TopicACLRole, stream.TypeACLRoleUpserted, stream.TypeACLRoleDeleted, func(obj any) (string, any) {
		return obj.(*ACLRole).ID, obj
	}),
	aclAuthMethodsTable: aclEvent(stream.TopicACLAuthMethod, stream.TypeACLAuthMethodUpserted, stream.TypeACLAuthMethodDeleted, func(obj any) (string, any) {
		return obj.(*ACLAuthMethod).Name, obj
	}),
	bindingRulesTable: aclEvent(stream.TopicACLBindingRule, stream.TypeACLBindingRuleUpserted, stream.TypeACLBindingRuleDeleted, func(obj any) (string, any) {
		return obj.(*BindingRule).ID, obj
	}),
}

// publicNode is a node without its secret (as reads answer it).
func publicNode(n *Node) *Node {
	c := *n
	c.SecretID = ""
	return &c
}

// aclEvent makes the event of an ACL object; view gives its key and the
// payload (without secrets). The payload key is the topic (e.g. ACLToken).
func aclEvent(topic, upserted, deleted string, view func(obj any) (string, any)) func(c memdb.Change) (stream.Event, bool) {
	return func(c memdb.Change) (stream.Event, bool) {
		obj, typ := c.After, upserted
		if c.Deleted() {
			obj, typ = c.Before, deleted
		}
		key, payload := view(obj)
		return stream.Event{Topic: topic, Type: typ, Key: key, Payload: map[string]any{topic: payload}}, true
	}
}

func filterKeys(keys ...string) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if k != "" {
			out = append(out, k)
		}
	}
	return out
}
