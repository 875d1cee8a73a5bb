package state

// DeploymentActionResult is what a deployment control operation (fail,
// pause, promote, allocation-health, unblock) reports. The evaluation it
// creates is written in the same log entry as the deployment change, so
// EvalCreateIndex == DeploymentModifyIndex == Index (EvalCreateIndex is 0
// when no evaluation was created, as for pause).
type DeploymentActionResult struct {
	EvalID                string
	EvalCreateIndex       uint64
	DeploymentModifyIndex uint64
	// RevertedJobVersion is the stable job version registered again by a
	// rollback, or nil when nothing was reverted.
	RevertedJobVersion *uint64
	Index              uint64
}

// NewError is a rejection with a code, for domain packages that check a
// request against the state before writing it.
func NewError(code ErrorCode, format string, args ...any) *Error {
	return errorf(code, format, args...)
}
