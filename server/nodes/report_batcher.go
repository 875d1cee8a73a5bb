package nodes

import (
	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/groupcommit"
	"github.com/ctlplane/ctlplane/state"
)

// maxReportBatch bounds the reports of one Raft entry (a node's request
// alone may carry MaxAllocUpdates; it always goes whole).
const maxReportBatch = 4 * MaxAllocUpdates

// newReportBatcher writes the checked reports of many nodes in one Raft
// entry, as Nomad's Node.UpdateAlloc batches them: while one entry commits,
// the reports that arrive meanwhile wait, and the next entry carries all of
// them. Every caller returns when the entry holding its reports committed,
// with that entry's index, or its error (one error answers the whole batch).
func newReportBatcher(raft fsm.Applier) *groupcommit.Committer[*state.NodeAllocReports, uint64] {
	return groupcommit.New(maxReportBatch,
		func(r *state.NodeAllocReports) int { return len(r.Updates) },
		func(nodes []*state.NodeAllocReports) (uint64, error) {
			res, err := fsm.Apply(raft, fsm.AllocClientUpdates, &fsm.AllocClientUpdatesRequest{Nodes: nodes})
			return res.Index, err
		})
}

// PendingReports is how many nodes' reports wait for the next Raft entry
// (the group commit's queue; operators' gauge and tests' sync point).
func (s *Service) PendingReports() int { return s.reports.Pending() }
