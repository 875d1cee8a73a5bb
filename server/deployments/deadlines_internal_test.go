package deployments

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The heap's answers are a walk's over the latest deadline of each
// deployment, through random sets, drops and due reads.
func TestDeadlinesMatchAWalk(t *testing.T) {
	d := newDeadlines()
	want := map[string]time.Time{}
	base := time.Unix(1000, 0)
	rng := rand.New(rand.NewPCG(3, 4))
	now := base
	for step := range 5000 {
		id := fmt.Sprintf("d%d", rng.IntN(50))
		switch rng.IntN(4) {
		case 0, 1:
			at := now.Add(time.Duration(rng.IntN(100)) * time.Second)
			d.set(id, at)
			want[id] = at
		case 2:
			d.drop(id)
			delete(want, id)
		default:
			now = now.Add(time.Duration(rng.IntN(20)) * time.Second)
			got := d.due(now)
			var exp []string
			for id, at := range want {
				if !now.Before(at) {
					exp = append(exp, id)
					delete(want, id)
				}
			}
			slices.Sort(got)
			slices.Sort(exp)
			if !slices.Equal(got, exp) {
				t.Fatalf("step %d: due %v, want %v", step, got, exp)
			}
		}
		var earliest time.Time
		for _, at := range want {
			if earliest.IsZero() || at.Before(earliest) {
				earliest = at
			}
		}
		if got := d.next(); !got.Equal(earliest) {
			t.Fatalf("step %d: next %v, want %v", step, got, earliest)
		}
		if len(d.heap) > 2*len(d.at)+64+1 {
			t.Fatalf("step %d: %d heap entries for %d deadlines", step, len(d.heap), len(d.at))
		}
	}
}
