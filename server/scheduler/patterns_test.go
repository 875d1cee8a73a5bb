package scheduler

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/state"
	"github.com/google/uuid"
)

// TestPatternsCompiledOnce: a job's regexp, version and semver constraints
// and affinities are compiled once each, however many node classes and
// nodes are checked, groups use them and evaluations run: 21 nodes of 21
// classes, two groups, four evaluations and a second job with the same
// patterns compile each distinct pattern once (every evaluation is also
// computed a second time by the harness's cross-check).
func TestPatternsCompiledOnce(t *testing.T) {
	h := newHarness(t)
	for i := range 21 {
		h.fleetNode(fmt.Sprintf("n%d", i), "dc1", fmt.Sprintf("class-%d", i), "default",
			map[string]string{"kernel.name": "linux", "kernel.version": fmt.Sprintf("5.%d.0", i), "rack": fmt.Sprintf("r%d", i%3)}, nil)
	}
	// Distinct from every other test's patterns: the cache is the process's.
	salt := strings.ReplaceAll(uuid.NewString(), "-", "")
	distinct := 0
	regexp := func(p string) string { distinct++; return p + "|" + salt }
	aff := func(l, r string, w int8) *state.Affinity {
		return &state.Affinity{LTarget: l, Operand: ConstraintRegex, RTarget: regexp(r), Weight: w}
	}
	affinities := []*state.Affinity{
		aff("${attr.rack}", "^r0$", 50), aff("${attr.rack}", "^r1$", 20), aff("${node.class}", "^class-1", -30),
		aff("${attr.kernel.version}", `^5\.1\d`, 10), aff("${attr.kernel.name}", "^lin", 5),
	}
	cons := []*state.Constraint{
		con("${attr.kernel.name}", ConstraintRegex, regexp("^linux$")),
		con("${node.class}", ConstraintRegex, regexp("^class-")),
		con("${attr.rack}", ConstraintRegex, regexp("^r[0-9]$")),
	}
	distinct += 2
	jobCons := []*state.Constraint{
		con("${attr.kernel.version}", ConstraintVersion, ">= 5.0.0, != 0.0.0-"+salt),
		con("${attr.kernel.version}", ConstraintSemver, ">= 5.0.0, != 0.0.0-"+salt),
	}
	build := func(id string) *state.Job {
		j := testJob(id, 3)
		j.Constraints = jobCons
		web := j.TaskGroups[0]
		web.Constraints, web.Affinities = cons, affinities
		api := *web
		api.Name = "api"
		j.TaskGroups = append(j.TaskGroups, &api)
		return j
	}
	before := PatternCompiles()
	h.process(h.register(build("web")))
	for range 3 {
		h.run("web", state.EvalTriggerNodeUpdate)
	}
	h.process(h.register(build("other")))
	if got := len(h.live("web")) + len(h.live("other")); got != 12 {
		t.Fatalf("%d allocations placed, want 12", got)
	}
	if got := PatternCompiles() - before; got != uint64(distinct) {
		t.Errorf("%d compiles for %d distinct patterns", got, distinct)
	}
}

// TestRegexpCost: the estimate of a regexp's program follows what Go's
// compiler emits (never far below it), and a pattern over the cap is
// refused by the cache, which never compiles it.
func TestRegexpCost(t *testing.T) {
	costly := strings.Repeat(`(\pL{1,1000})`, 77) + strings.Repeat("a", 13) // 1,014 characters
	cases := []string{`^foo.*bar$`, `[a-z]{1,1000}`, `(a|b|c){1,1000}`, `.{1,1000}`, `(?i)abc{2,5}`, `(a+b*c?){3,}`,
		`x{0,}`, `a{5,}`, `[[:alpha:]]+\d{3}`, `(\pL{1,1000})`, `^(?:ab|cd)*(ef)+$`, costly}
	for _, p := range cases {
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		est, err := RegexpCost(p)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(prog.Inst); est < n*9/10 || est > n*12/10+8 {
			t.Errorf("%.30q: estimated %d instructions, compiled %d", p, est, n)
		}
	}
	before := PatternCompiles()
	_, err := CompiledRegexp(costly + uuid.NewString())
	var ce *PatternCostError
	if !errors.As(err, &ce) || ce.Max != MaxPatternCost || ce.Cost < 150_000 {
		t.Fatalf("costly pattern: %v", err)
	}
	if _, err := CompiledRegexp(`(`); err == nil {
		t.Error("a malformed pattern compiled")
	}
	if got := PatternCompiles() - before; got != 2 {
		t.Errorf("%d cache misses, want 2", got)
	}
}

// TestPatternCacheBounded: the cache keeps its patterns' cost under its
// bound, dropping the least recently used, and a pattern asked for again
// after being dropped is compiled again.
func TestPatternCacheBounded(t *testing.T) {
	c := newPatternCache(100, 10_000)
	pattern := func(i int) string { return fmt.Sprintf("%d[a-z]{1,1000}", i) } // ~2,000 each
	for i := range 12 {
		if v := c.get(PatternRegexp, pattern(i)); v.err != nil || !v.re.MatchString(fmt.Sprintf("%dabc", i)) {
			t.Fatalf("pattern %d: %+v", i, v)
		}
		c.mu.Lock()
		cost, n := c.cost, c.lru.Len()
		c.mu.Unlock()
		if cost > 10_000 || n > 5 {
			t.Fatalf("after %d patterns: cost %d in %d entries", i+1, cost, n)
		}
	}
	if got := c.compiles.Load(); got != 12 {
		t.Fatalf("%d compiles, want 12", got)
	}
	c.get(PatternRegexp, pattern(11)) // kept
	c.get(PatternRegexp, pattern(0))  // dropped long ago
	if got := c.compiles.Load(); got != 13 {
		t.Errorf("%d compiles, want 13", got)
	}
}

// TestSlowMatchesRemembered: a costly match (a long input, a large
// program) is run once, not once per node and evaluation: 21 nodes share
// a 300-character attribute that an anchored 8,000-instruction affinity
// reads, over three evaluations.
func TestSlowMatchesRemembered(t *testing.T) {
	h := newHarness(t)
	long := strings.Repeat("a", 300)
	for i := range 21 {
		h.fleetNode(fmt.Sprintf("n%d", i), "dc1", "same", "default", map[string]string{"kernel.name": "linux", "long": long}, nil)
	}
	salt := strings.ReplaceAll(uuid.NewString(), "-", "")
	pattern := "^(" + salt + ")?" + strings.Repeat("[a-z]{1,1000}", 4) + "$"
	j := testJob("web", 2)
	j.TaskGroups[0].Affinities = []*state.Affinity{{LTarget: "${attr.long}", Operand: ConstraintRegex, RTarget: pattern, Weight: 50}}
	before := SlowMatches()
	h.process(h.register(j))
	for range 2 {
		h.run("web", state.EvalTriggerNodeUpdate)
	}
	if got := len(h.live("web")); got != 2 {
		t.Fatalf("%d allocations placed, want 2", got)
	}
	if got := SlowMatches() - before; got != 1 {
		t.Errorf("%d slow matches run, want 1", got)
	}
	if !matchRegexp(pattern, long) || matchRegexp(pattern, long+"!") {
		t.Error("the remembered outcome is wrong")
	}
}
