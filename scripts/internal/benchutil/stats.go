package benchutil

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Summary is the distribution of a set of durations.
type Summary struct {
	N                        int
	Min, P50, Mean, P99, Max time.Duration
}

// Summarize returns nearest-rank percentiles of d, nil when d is empty.
func Summarize(d []time.Duration) *Summary {
	if len(d) == 0 {
		return nil
	}
	s := slices.Clone(d)
	slices.Sort(s)
	rank := func(q float64) time.Duration {
		return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)]
	}
	var sum time.Duration
	for _, v := range s {
		sum += v
	}
	return &Summary{N: len(s), Min: s[0], P50: rank(0.50), Mean: sum / time.Duration(len(s)), P99: rank(0.99), Max: s[len(s)-1]}
}

// Single is the summary of one observation.
func Single(d time.Duration) *Summary { return &Summary{1, d, d, d, d, d} }

// MS formats d in milliseconds with three decimals.
func MS(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond)) }

// Bytes formats a size in binary units.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
