package deployments

import (
	"container/heap"
	"time"
)

// deadlines are the watcher's next check time of each deployment, with the
// earliest found without a walk over all of them (a min-heap whose stale
// entries, superseded by a later set or a drop, are skipped when they
// surface).
type deadlines struct {
	at   map[string]time.Time
	heap deadlineHeap
}

type deadlineEntry struct {
	at time.Time
	id string
}

type deadlineHeap []deadlineEntry

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadlineEntry)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func newDeadlines() *deadlines { return &deadlines{at: map[string]time.Time{}} }

// set records a deployment's next check (zero: none).
func (d *deadlines) set(id string, at time.Time) {
	if at.IsZero() {
		d.drop(id)
		return
	}
	if cur, ok := d.at[id]; ok && cur.Equal(at) {
		return
	}
	d.at[id] = at
	heap.Push(&d.heap, deadlineEntry{at: at, id: id})
	// Stale entries are dropped when they surface; rebuild when they
	// outnumber the live ones, so that the heap stays bounded.
	if len(d.heap) > 2*len(d.at)+64 {
		d.heap = d.heap[:0]
		for id, at := range d.at {
			d.heap = append(d.heap, deadlineEntry{at: at, id: id})
		}
		heap.Init(&d.heap)
	}
}

func (d *deadlines) drop(id string) { delete(d.at, id) }

// live says whether a heap entry is still its deployment's deadline.
func (d *deadlines) live(e deadlineEntry) bool {
	at, ok := d.at[e.id]
	return ok && at.Equal(e.at)
}

// due removes and returns the deployments whose deadline is at or before now.
func (d *deadlines) due(now time.Time) []string {
	var out []string
	for len(d.heap) > 0 && !now.Before(d.heap[0].at) {
		e := heap.Pop(&d.heap).(deadlineEntry)
		if d.live(e) {
			delete(d.at, e.id)
			out = append(out, e.id)
		}
	}
	return out
}

// next is the earliest deadline (zero: none).
func (d *deadlines) next() time.Time {
	for len(d.heap) > 0 && !d.live(d.heap[0]) {
		heap.Pop(&d.heap)
	}
	if len(d.heap) == 0 {
		return time.Time{}
	}
	return d.heap[0].at
}
