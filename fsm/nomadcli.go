package fsm

import "github.com/ctlplane/ctlplane/state"

// Message types of Nomad's namespaces and allocation stops. They sit apart
// from the orchestrator's block so that other families can grow theirs.
const (
	NamespaceUpsertType MessageType = 48
	NamespaceDeleteType MessageType = 49
	AllocStopType       MessageType = 50
)

// NamespaceUpsertRequest creates or replaces Nomad namespaces.
type NamespaceUpsertRequest struct {
	Namespaces []*state.Namespace
}

// NamespaceDeleteRequest deletes Nomad namespaces, all or none.
type NamespaceDeleteRequest struct {
	Names []string
	// Region is named in the refusal of a namespace in use ("" in entries
	// written before it was sent: the default region).
	Region string
}

// AllocStopRequest stops one allocation and inserts the evaluation that
// replaces it.
type AllocStopRequest struct {
	AllocID string
	Eval    *state.Evaluation
	Now     int64
}

// The commands of namespaces and allocation stops.
var (
	NamespaceUpsert = define(NamespaceUpsertType, "namespace upsert", func(s *state.Store, idx uint64, r *NamespaceUpsertRequest) (Indexed, error) {
		return Indexed{Index: idx}, s.NamespaceUpsert(idx, r.Namespaces)
	})
	AllocStop = define(AllocStopType, "alloc stop", func(s *state.Store, idx uint64, r *AllocStopRequest) (Indexed, error) {
		_, err := s.AllocStop(idx, r.AllocID, r.Eval, r.Now)
		return Indexed{Index: idx}, err
	})
	NamespaceDelete = define(NamespaceDeleteType, "namespace delete", func(s *state.Store, idx uint64, r *NamespaceDeleteRequest) (Indexed, error) {
		return Indexed{Index: idx}, s.NamespaceDelete(idx, r.Names, regionOr(r.Region))
	})
)

// JobScaleType records a scaling event, with the job's new version and
// its evaluation when the count changes.
const JobScaleType MessageType = 51

// JobScaleRequest is one scaling action (Job nil: an event only).
type JobScaleRequest struct {
	Job       *state.Job
	Eval      *state.Evaluation
	Namespace string
	JobID     string
	Group     string
	Event     *state.ScalingEvent
}

// JobScale applies a JobScaleRequest.
var JobScale = define(JobScaleType, "job scale", func(s *state.Store, idx uint64, r *JobScaleRequest) (*state.JobRegisterResult, error) {
	return s.JobScale(idx, r.Job, r.Eval, r.Namespace, r.JobID, r.Group, r.Event)
})

// regionOr is region, or the default region for entries without one.
func regionOr(region string) string {
	if region == "" {
		return "global"
	}
	return region
}
