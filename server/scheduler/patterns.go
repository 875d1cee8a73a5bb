package scheduler

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sync"
	"sync/atomic"

	metrics "github.com/armon/go-metrics"
	version "github.com/hashicorp/go-version"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Caps on what a job's patterns may cost to compile, counted in program
// instructions (RegexpCost), so that every server reaches the same verdict
// whatever its load. A 1,014-character regexp of repeated `(\pL{1,1000})`
// is a 156,080-instruction program that took 0.07 to 0.2 s to compile;
// `[a-z]{1,1000}` is 2,001 instructions.
const (
	// MaxPatternCost is the cost of one regexp constraint or affinity.
	MaxPatternCost = 10_000
	// MaxJobPatternCost is the cost of all of a job's regexps together
	// (each occurrence counts: a node is matched against each one).
	MaxJobPatternCost = 50_000
	// patternCacheEntries and patternCacheCost bound the compiled
	// patterns kept (about 40 bytes per instruction).
	patternCacheEntries = 4096
	patternCacheCost    = 1_000_000
)

// Pattern kinds: the operand a pattern is compiled for.
const (
	PatternRegexp = ConstraintRegex
	PatternSemver = ConstraintSemver
	// PatternVersion: go-version constraints (">= 1.2, < 2").
	PatternVersion = ConstraintVersion
)

type patternKey struct {
	kind, pattern string
}

// compiledPattern is one pattern compiled (or the reason it cannot be).
type compiledPattern struct {
	re      *regexp.Regexp
	version version.Constraints
	semver  []semverConstraint
	err     error
	cost    int
}

// patternCache holds the compiled patterns of every evaluation and of
// validation: Nomad compiles per evaluation (EvalContext's caches); here a
// pattern is compiled once while it is in use, whichever job, group, node
// class or evaluation asks.
type patternCache struct {
	mu       sync.Mutex // serializes additions (the cost total and eviction)
	lru      *lru.Cache[patternKey, *compiledPattern]
	cost     int
	maxCost  int
	compiles atomic.Uint64
}

var patterns = newPatternCache(patternCacheEntries, patternCacheCost)

func newPatternCache(entries, maxCost int) *patternCache {
	c := &patternCache{maxCost: maxCost}
	c.lru, _ = lru.NewWithEvict(entries, func(_ patternKey, v *compiledPattern) { c.cost -= v.cost })
	return c
}

// PatternCompiles is how many patterns were compiled since start (cache
// misses): a measure of the cache.
func PatternCompiles() uint64 { return patterns.compiles.Load() }

// get returns the compiled pattern, compiling it on a miss. Two callers
// missing at once may both compile; the first one stored stays.
func (c *patternCache) get(kind, pattern string) *compiledPattern {
	key := patternKey{kind, pattern}
	if v, ok := c.lru.Get(key); ok {
		return v
	}
	v := compilePattern(kind, pattern)
	c.compiles.Add(1)
	metrics.IncrCounter([]string{"scheduler", "pattern_compiles"}, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(key) {
		return v
	}
	c.cost += v.cost
	c.lru.Add(key, v)
	for c.cost > c.maxCost && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
	return v
}

func compilePattern(kind, pattern string) *compiledPattern {
	v := &compiledPattern{cost: 1 + len(pattern)/8}
	switch kind {
	case PatternRegexp:
		cost, err := RegexpCost(pattern)
		if err != nil {
			v.err = err
			return v
		}
		if cost > MaxPatternCost {
			v.err = &PatternCostError{Cost: cost, Max: MaxPatternCost}
			return v
		}
		v.re, v.err = regexp.Compile(pattern)
		v.cost = cost
	case PatternVersion:
		v.version, v.err = version.NewConstraint(pattern)
	case PatternSemver:
		v.semver, v.err = parseSemverConstraint(pattern)
	default:
		v.err = fmt.Errorf("unknown pattern kind %q", kind)
	}
	return v
}

// PatternCostError is a regexp whose program is over a cap.
type PatternCostError struct {
	Cost, Max int
}

func (e *PatternCostError) Error() string {
	return fmt.Sprintf("regexp pattern too costly to compile (a program of %d instructions: at most %d are allowed)", e.Cost, e.Max)
}

// CompiledRegexp is pattern compiled through the cache: an error for a
// malformed pattern or one costlier than MaxPatternCost (*PatternCostError).
func CompiledRegexp(pattern string) (*regexp.Regexp, error) {
	v := patterns.get(PatternRegexp, pattern)
	return v.re, v.err
}

// CompiledVersion is a go-version constraint parsed through the cache.
func CompiledVersion(pattern string) (version.Constraints, error) {
	v := patterns.get(PatternVersion, pattern)
	return v.version, v.err
}

func compiledSemver(pattern string) ([]semverConstraint, error) {
	v := patterns.get(PatternSemver, pattern)
	return v.semver, v.err
}

// RegexpCost is the size of the program pattern compiles to, estimated
// from its parse tree without expanding repetitions (which is what makes
// a costly pattern costly): the instructions, as Go's compiler emits them
// for each operator, plus a quarter of the character classes' ranges. It
// errs on the large side and is the same on every machine.
func RegexpCost(pattern string) (int, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0, err
	}
	// 3: the unanchored prefix's loop, the match and the failure.
	return int(min(3+progCost(re)+classRanges(re)/4, 1<<40)), nil
}

// classRanges counts the ranges of the parse tree's character classes:
// the memory a pattern of many large classes (`\pL` is 659 ranges) holds.
func classRanges(re *syntax.Regexp) int64 {
	n := int64(0)
	if re.Op == syntax.OpCharClass {
		n = int64(len(re.Rune) / 2)
	}
	for _, sub := range re.Sub {
		n += classRanges(sub)
	}
	return n
}

// progCost mirrors regexp/syntax's compiler (and the simplification of
// counted repetitions before it); sizes saturate far below overflow.
func progCost(re *syntax.Regexp) int64 {
	const ceiling = 1 << 40
	var size int64
	switch re.Op {
	case syntax.OpLiteral:
		size = int64(len(re.Rune))
	case syntax.OpCapture, syntax.OpStar:
		size = 2 + progCost(re.Sub[0])
	case syntax.OpPlus, syntax.OpQuest:
		size = 1 + progCost(re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			size += progCost(sub)
		}
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			size += progCost(sub)
		}
		size += int64(len(re.Sub) - 1)
	case syntax.OpRepeat:
		sub := progCost(re.Sub[0])
		switch {
		case re.Max == -1 && re.Min == 0:
			size = 2 + sub
		case re.Max == -1:
			size = 1 + int64(re.Min)*sub
		default:
			size = int64(re.Max)*sub + int64(re.Max-re.Min)
		}
	default:
		size = 1
	}
	return min(max(size, 1), ceiling)
}

// PatternCost is RegexpCost, read from the cache when the pattern is in
// it (a registered job's patterns are).
func PatternCost(pattern string) (int, error) {
	if v, ok := patterns.lru.Peek(patternKey{PatternRegexp, pattern}); ok {
		var costly *PatternCostError
		if v.err != nil && !errors.As(v.err, &costly) {
			return 0, v.err
		}
		if costly != nil {
			return costly.Cost, nil
		}
		return v.cost, nil
	}
	return RegexpCost(pattern)
}

// A regexp match costs up to its input's length times its program's size
// (Go's NFA): a 10,000-instruction pattern took 122 ms on a 1,024-character
// input, and an affinity matches once per node. Matches costlier than
// slowMatchWork are remembered (by a hash of pattern and input), so that
// each is done once while it stays in use, not once per node and
// evaluation.
const (
	slowMatchWork    = 100_000
	slowMatchEntries = 16_384
)

type matchKey [sha256.Size]byte

var (
	slowMatches, _ = lru.New[matchKey, bool](slowMatchEntries)
	slowMatchRuns  atomic.Uint64
)

// SlowMatches is how many costly matches were run (not remembered).
func SlowMatches() uint64 { return slowMatchRuns.Load() }

// matchRegexp says whether input matches pattern (false for a pattern
// that does not compile or is too costly).
func matchRegexp(pattern, input string) bool {
	v := patterns.get(PatternRegexp, pattern)
	if v.err != nil {
		return false
	}
	if len(input)*v.cost < slowMatchWork {
		return v.re.MatchString(input)
	}
	h := sha256.New()
	h.Write([]byte(pattern))
	h.Write([]byte{0})
	h.Write([]byte(input))
	var key matchKey
	h.Sum(key[:0])
	if ok, found := slowMatches.Get(key); found {
		return ok
	}
	slowMatchRuns.Add(1)
	metrics.IncrCounter([]string{"scheduler", "slow_regexp_matches"}, 1)
	ok := v.re.MatchString(input)
	slowMatches.Add(key, ok)
	return ok
}
