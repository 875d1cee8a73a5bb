package api

import (
	"context"
	"encoding/json"
)

// JobPlanResponse answers PUT /v1/job/:id/plan (Nomad's shape).
type JobPlanResponse struct {
	Annotations    *PlanAnnotations
	FailedTGAllocs map[string]*AllocationMetric
	JobModifyIndex uint64
	CreatedEvals   []*Evaluation
	Diff           *JobDiff
	Warnings       string
	Index          uint64
}

// PlanAnnotations say, per task group, what the plan would do.
type PlanAnnotations struct {
	DesiredTGUpdates map[string]*DesiredUpdates
}

// DesiredUpdates counts one group's planned changes.
type DesiredUpdates struct {
	Ignore            uint64
	Place             uint64
	Migrate           uint64
	Stop              uint64
	InPlaceUpdate     uint64
	DestructiveUpdate uint64
	Canary            uint64
	Preemptions       uint64
}

// AllocationMetric explains why allocations of a group found no node.
type AllocationMetric struct {
	NodesEvaluated     int
	NodesFiltered      int
	NodesAvailable     map[string]int
	ConstraintFiltered map[string]int
	NodesExhausted     int
	DimensionExhausted map[string]int
	CoalescedFailures  int
}

// JobDiff is Nomad's structured job diff.
type JobDiff struct {
	Type       string
	ID         string
	Fields     []*FieldDiff
	Objects    []*ObjectDiff
	TaskGroups []*TaskGroupDiff
}

// TaskGroupDiff is one group's diff; Updates counts the plan's updates.
type TaskGroupDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
	Tasks   []*TaskDiff
	Updates map[string]uint64
}

// TaskDiff is one task's diff.
type TaskDiff struct {
	Type        string
	Name        string
	Fields      []*FieldDiff
	Objects     []*ObjectDiff
	Annotations []string
}

// ObjectDiff is a nested block's diff.
type ObjectDiff struct {
	Type    string
	Name    string
	Fields  []*FieldDiff
	Objects []*ObjectDiff
}

// FieldDiff is one field's diff.
type FieldDiff struct {
	Type        string
	Name        string
	Old, New    string
	Annotations []string
}

// PlanJobJSON dry-runs registering job (Nomad's JSON job object) with its
// diff from the current version; nothing is written.
func (c *Client) PlanJobJSON(ctx context.Context, id string, job json.RawMessage) (*JobPlanResponse, error) {
	var out JobPlanResponse
	body := struct {
		Job  json.RawMessage
		Diff bool
	}{job, true}
	if err := c.write(ctx, "PUT", jobPath(id, "/plan"), &body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// JobVersionsWithDiffs lists a job's versions, newest first, with the diff
// from each version's predecessor to it (one fewer than the versions).
func (c *Client) JobVersionsWithDiffs(ctx context.Context, id string) ([]*Job, []*JobDiff, error) {
	var out struct {
		Versions []*Job
		Diffs    []*JobDiff
	}
	if _, err := c.query(ctx, jobPath(id, "/versions"), &QueryOptions{Params: map[string]string{"diffs": "true"}}, &out); err != nil {
		return nil, nil, err
	}
	return out.Versions, out.Diffs, nil
}
