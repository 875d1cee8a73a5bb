package evals

import (
	"github.com/ctlplane/ctlplane/fsm"
	"github.com/ctlplane/ctlplane/server/groupcommit"
	"github.com/ctlplane/ctlplane/state"
)

// maxEvalBatch bounds the evaluations of one Raft entry.
const maxEvalBatch = 1024

// newEvalBatcher writes evaluation updates from any number of workers, as
// Nomad's eval batcher does: while one entry commits, the updates that
// arrive meanwhile wait, and the next entry carries all of them. Each
// caller returns when the entry holding its update committed, with that
// entry's error.
func newEvalBatcher(raft fsm.Applier) *groupcommit.Committer[*state.Evaluation, struct{}] {
	return groupcommit.New(maxEvalBatch, nil, func(evals []*state.Evaluation) (struct{}, error) {
		_, err := fsm.Apply(raft, fsm.EvalUpsert, &fsm.EvalUpsertRequest{Evals: evals})
		return struct{}{}, err
	})
}
