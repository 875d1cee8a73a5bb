package groupcommit

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// While a batch commits, the items written meanwhile wait and go out
// together in the next, bounded by weight (an item heavier than the bound
// goes alone); every caller gets its own batch's result or error.
func TestCommitterBatchesWhileOneCommits(t *testing.T) {
	started, gate := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	c := New(5, func(n int) int { return n }, func(items []int) (string, error) {
		mu.Lock()
		batches = append(batches, append([]int(nil), items...))
		n := len(batches)
		mu.Unlock()
		if n == 1 {
			close(started)
			<-gate // hold the first batch while the others queue
		}
		for _, it := range items {
			if it == 9 {
				return "", errors.New("refused")
			}
		}
		return fmt.Sprint("batch", n), nil
	})
	type answer struct {
		value string
		err   error
	}
	answers := map[int]chan answer{}
	write := func(item int) {
		ch := make(chan answer, 1)
		answers[item] = ch
		go func() {
			v, err := c.Write(item)
			ch <- answer{v, err}
		}()
	}
	write(1)
	<-started
	write(2)
	write(3)
	waitFor(t, "two queued", func() bool { return c.Pending() == 2 })
	write(9)
	waitFor(t, "three queued", func() bool { return c.Pending() == 3 })
	close(gate)
	got := map[int]answer{}
	for item, ch := range answers {
		select {
		case got[item] = <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("write %d did not return", item)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// 2 and 3 (in either order) weigh 5 and share the second batch; 9
	// weighs more than the bound and goes alone in the third.
	if len(batches) != 3 || len(batches[1]) != 2 || batches[1][0]+batches[1][1] != 5 || len(batches[2]) != 1 || batches[2][0] != 9 {
		t.Fatalf("batches %v, want [[1] [2 3] [9]] (2 and 3 in either order)", batches)
	}
	want := map[int]answer{1: {"batch1", nil}, 2: {"batch2", nil}, 3: {"batch2", nil}}
	for item, w := range want {
		if got[item] != w {
			t.Errorf("write %d answered %+v, want %+v", item, got[item], w)
		}
	}
	if got[9].err == nil || got[9].err.Error() != "refused" {
		t.Errorf("write 9 answered %+v, want the batch's error", got[9])
	}
	if c.Pending() != 0 {
		t.Errorf("%d still pending", c.Pending())
	}
}

// A lone write goes out at once, in a batch of its own.
func TestCommitterLoneWrite(t *testing.T) {
	c := New[string, int](10, nil, func(items []string) (int, error) { return len(items), nil })
	for i := 0; i < 3; i++ {
		n, err := c.Write("x")
		if err != nil || n != 1 {
			t.Fatalf("write %d: batch of %d, %v; want 1, nil", i, n, err)
		}
	}
}
