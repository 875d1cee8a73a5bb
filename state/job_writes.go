package state

// JobRegisterOptions are the optional parts of a job registration (Nomad's
// JobRegisterRequest fields besides the job).
type JobRegisterOptions struct {
	// EnforceIndex: register only if the job's JobModifyIndex is
	// JobModifyIndex (0: only if the job does not exist yet).
	EnforceIndex   bool
	JobModifyIndex uint64
	// PreserveCounts keeps the counts of the groups the job already has.
	PreserveCounts bool
	// EvalPriority overrides the job's priority for the evaluation (0: the job's).
	EvalPriority int
}

// JobWriteResult is what a job write (register, deregister, revert,
// stability) answers, in Nomad's field names.
type JobWriteResult struct {
	// EvalID is the evaluation created ("" when none was).
	EvalID          string
	EvalCreateIndex uint64
	JobModifyIndex  uint64
	// Index is the Raft index the write was applied at.
	Index uint64
	// JobVersion is the job's version after the write.
	JobVersion uint64
}
