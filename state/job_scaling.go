package state

import (
	"encoding/json"
	"fmt"

	"github.com/hashicorp/go-memdb"
)

const jobScalingEventsTable = "job_scaling_events"

// JobTrackedScalingEvents is how many scaling events are kept per group
// (Nomad's number).
const JobTrackedScalingEvents = 20

// JobTrackedScalingEventBytes bounds the events kept per group by their
// size (scalingEventSize): the newest ones that fit are kept, at least
// one. The jobs service caps an event's Message and Meta well below it.
const JobTrackedScalingEventBytes = 32 * 1024

// ScalingEvent is one scaling action on a group, as Nomad records it.
type ScalingEvent struct {
	Time          uint64
	Count         *int64
	PreviousCount int64
	Message       string
	Error         bool
	Meta          map[string]any
	EvalID        *string
	CreateIndex   uint64
}

// JobScalingEvents are a job's scaling events per group, newest first.
type JobScalingEvents struct {
	Namespace     string
	JobID         string
	ScalingEvents map[string][]*ScalingEvent
	ModifyIndex   uint64
}

func init() {
	registerTable(&memdb.TableSchema{
		Name: jobScalingEventsTable,
		Indexes: map[string]*memdb.IndexSchema{
			"id": {Name: "id", Unique: true, Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
				&memdb.StringFieldIndex{Field: "Namespace"},
				&memdb.StringFieldIndex{Field: "JobID"},
			}}},
		},
	}, func() any { return new(JobScalingEvents) })
}

// ScalingEventsByJob returns a job's scaling events per group (nil: none).
func (s *Store) ScalingEventsByJob(ws memdb.WatchSet, ns, id string) (uint64, map[string][]*ScalingEvent, error) {
	txn := s.db.Txn(false)
	defer txn.Abort()
	ch, raw, err := txn.FirstWatch(jobScalingEventsTable, "id", ns, id)
	if err != nil {
		return 0, nil, fmt.Errorf("failed scaling event lookup: %w", err)
	}
	ws.Add(ch)
	idx := maxIndex(txn, jobScalingEventsTable)
	if raw == nil {
		return idx, nil, nil
	}
	return idx, raw.(*JobScalingEvents).ScalingEvents, nil
}

// JobScale records a scaling event of group, at idx, with the job's new
// version and its evaluation when the event changes the count (job nil:
// an event only). It answers what the registration did.
func (s *Store) JobScale(idx uint64, job *Job, eval *Evaluation, ns, jobID, group string, event *ScalingEvent) (*JobRegisterResult, error) {
	txn := s.orchTxn()
	defer txn.Abort()
	raw, err := txn.First(jobsTable, "id", ns, jobID)
	if err != nil {
		return nil, fmt.Errorf("failed job lookup: %w", err)
	}
	if raw == nil {
		return nil, errorf(ErrNotFound, "job %q not found", jobID)
	}
	res := &JobRegisterResult{JobModifyIndex: raw.(*Job).JobModifyIndex, Version: raw.(*Job).Version, Index: idx}
	if job != nil {
		if err := requireNamespaceTxn(txn, job); err != nil {
			return nil, err
		}
		if res, err = upsertJobTxn(txn, idx, job); err != nil {
			return nil, err
		}
		res.Index = idx
		if eval != nil {
			e := *eval
			e.JobModifyIndex = res.JobModifyIndex
			if err := upsertEvalTxn(txn, idx, &e); err != nil {
				return nil, err
			}
		}
	}
	if err := addScalingEventTxn(txn, idx, ns, jobID, group, event); err != nil {
		return nil, err
	}
	s.commitOrch(txn, idx)
	return res, nil
}

func addScalingEventTxn(txn *memdb.Txn, idx uint64, ns, jobID, group string, event *ScalingEvent) error {
	raw, err := txn.First(jobScalingEventsTable, "id", ns, jobID)
	if err != nil {
		return fmt.Errorf("failed scaling event lookup: %w", err)
	}
	row := &JobScalingEvents{Namespace: ns, JobID: jobID, ScalingEvents: map[string][]*ScalingEvent{}}
	if raw != nil {
		for k, v := range raw.(*JobScalingEvents).ScalingEvents {
			row.ScalingEvents[k] = v
		}
	}
	e := *event
	e.CreateIndex = idx
	events := append([]*ScalingEvent{&e}, row.ScalingEvents[group]...)
	if len(events) > JobTrackedScalingEvents {
		events = events[:JobTrackedScalingEvents]
	}
	size := 0
	for i, ev := range events {
		size += scalingEventSize(ev)
		if i > 0 && size > JobTrackedScalingEventBytes {
			events = events[:i]
			break
		}
	}
	row.ScalingEvents[group] = events
	row.ModifyIndex = idx
	if err := txn.Insert(jobScalingEventsTable, row); err != nil {
		return fmt.Errorf("failed inserting scaling events: %w", err)
	}
	return setIndex(txn, jobScalingEventsTable, idx)
}

// scalingEventSize is about what an event takes in a scale-status answer:
// its Message, its Meta as JSON and the rest of its fields. The same on
// every server (the FSM applies it).
func scalingEventSize(e *ScalingEvent) int {
	const fixed = 160
	size := fixed + len(e.Message)
	if e.Meta != nil {
		if b, err := json.Marshal(e.Meta); err == nil {
			size += len(b)
		} else {
			size += JobTrackedScalingEventBytes // unencodable: keep it alone
		}
	}
	return size
}

// deleteScalingEventsTxn drops a deleted job's scaling events (Nomad does
// it with the job).
func deleteScalingEventsTxn(txn *memdb.Txn, idx uint64, ns, jobID string) error {
	raw, err := txn.First(jobScalingEventsTable, "id", ns, jobID)
	if err != nil || raw == nil {
		return err
	}
	if err := txn.Delete(jobScalingEventsTable, raw); err != nil {
		return fmt.Errorf("failed deleting scaling events: %w", err)
	}
	return setIndex(txn, jobScalingEventsTable, idx)
}
