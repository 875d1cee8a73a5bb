package jobs

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ctlplane/ctlplane/server/scheduler"
	"github.com/ctlplane/ctlplane/state"
)

// MaxJobPatternBytes caps the text of a job's regexps together: it bounds
// the parsing that measuring their cost takes (1 KB of `\pL` classes
// parses in about 4 ms).
const MaxJobPatternBytes = 16 * 1024

// MaxLiteralMatchWork caps a regexp matched against a literal LTarget (not
// a ${...} interpolation): its length times the pattern's program, the
// work of a match (a 10,000-instruction pattern took 122 ms against a
// 1,024-character literal). A literal's outcome is the same on every node:
// this refuses only patterns made to be slow.
const MaxLiteralMatchWork = 1_000_000

// checkRegexp is a regexp constraint's or affinity's own problem ("" for
// none): malformed (Nomad's text) or too costly on its own.
func checkRegexp(pattern string) string {
	_, err := scheduler.CompiledRegexp(pattern)
	var costly *scheduler.PatternCostError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &costly):
		return err.Error()
	}
	return fmt.Sprintf("Regular expression failed to compile: %v", err)
}

// checkPatternCost refuses a job whose regexps together are too long or
// compile to too large programs, naming the constraint or affinity that
// brings it over. It runs before anything is compiled: a job over the
// budget costs its parse, never its compilation. Patterns with a problem
// of their own are left to their constraint's validation.
func checkPatternCost(job *state.Job) error {
	var (
		bytes, cost int
		over        error
	)
	visit := func(where, operand, ltarget, pattern string) {
		if over != nil || operand != scheduler.ConstraintRegex {
			return
		}
		bytes += len(pattern)
		if bytes > MaxJobPatternBytes {
			over = invalid("%s: regexp patterns too long in all (the job's come to %d bytes with it: at most %d are allowed per job)", where, bytes, MaxJobPatternBytes)
			return
		}
		c, err := scheduler.PatternCost(pattern)
		if err != nil || c > scheduler.MaxPatternCost {
			return
		}
		if !strings.HasPrefix(ltarget, "${") && len(ltarget)*c > MaxLiteralMatchWork {
			over = invalid("%s: regexp pattern too costly to match against its %d-character literal LTarget (%d instructions times %d characters: at most %d are allowed)",
				where, len(ltarget), c, len(ltarget), MaxLiteralMatchWork)
			return
		}
		cost += c
		if cost > scheduler.MaxJobPatternCost {
			over = invalid("%s: regexp pattern too costly to compile (the job's regexps come to %d program instructions with it: at most %d are allowed per job)", where, cost, scheduler.MaxJobPatternCost)
		}
	}
	block := func(where string, cs []*state.Constraint, as []*state.Affinity) {
		for i, c := range cs {
			visit(fmt.Sprintf("%s constraint %d", where, i+1), c.Operand, c.LTarget, c.RTarget)
		}
		for i, a := range as {
			visit(fmt.Sprintf("%s affinity %d", where, i+1), a.Operand, a.LTarget, a.RTarget)
		}
	}
	block("Job", job.Constraints, job.Affinities)
	for _, tg := range job.TaskGroups {
		group := fmt.Sprintf("Task group %q", tg.Name)
		block(group, tg.Constraints, tg.Affinities)
		for _, t := range tg.Tasks {
			block(fmt.Sprintf("%s task %q", group, t.Name), t.Constraints, t.Affinities)
		}
	}
	return over
}
