package state

import "math"

// MaxCountedResource is the most one allocation's CPU (MHz) or memory (MB)
// counts for in the sums of what a node holds. Validation caps a group far
// below it (100 tasks of the largest are under 2^37); only an allocation
// written before those caps can be over it, and a negative value can only
// be such an allocation's wrapped sum (three tasks of 2^62 MHz summed to a
// negative number, which made a 2,000 MHz node look empty). Sums of
// counted values cannot wrap before 2^23 allocations on one node.
const MaxCountedResource = 1 << 40

// Counted is r as node usage sums it: each dimension in
// [0, MaxCountedResource], a negative one counted as the most.
func (r Resources) Counted() Resources {
	return Resources{CPU: countedResource(r.CPU), MemoryMB: countedResource(r.MemoryMB)}
}

func countedResource(v int) int {
	if v < 0 || v > MaxCountedResource {
		return MaxCountedResource
	}
	return v
}

// Plus is r with o's counted resources added (sign -1: taken away).
func (r Resources) Plus(o Resources, sign int) Resources {
	o = o.Counted()
	return Resources{CPU: r.CPU + sign*o.CPU, MemoryMB: r.MemoryMB + sign*o.MemoryMB}
}

// Room says whether want more fits on a node of capacity where used is
// taken (capacity <= 0: unlimited), without ever wrapping: left is what
// would remain (0 when it does not fit or the capacity is unlimited).
func Room(capacity, used, want int) (left int, ok bool) {
	if capacity <= 0 {
		return 0, true
	}
	if used < 0 || want < 0 {
		// Counted sums are never negative: a wrapped sum fits nothing.
		return 0, false
	}
	if used > capacity || want > capacity-used {
		return 0, false
	}
	return capacity - used - want, true
}

// satAdd is a+b for non-negative values, at most math.MaxInt.
func satAdd(a, b int) int {
	if b > math.MaxInt-a {
		return math.MaxInt
	}
	return a + b
}
