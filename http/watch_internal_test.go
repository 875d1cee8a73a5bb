package http

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
)

// watchSet wakes when any one of the set's channels closes, for every set
// size (up to four by its own select, more through memdb), and returns the
// context's error when that ends first.
func TestWatchSetEveryChannelWakes(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 40} {
		for fire := 0; fire < n; fire++ {
			ws := memdb.NewWatchSet()
			chs := make([]chan struct{}, n)
			for i := range chs {
				chs[i] = make(chan struct{})
				ws.Add(chs[i])
			}
			close(chs[fire])
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := watchSet(ctx, ws); err != nil {
				t.Errorf("%d channels, #%d closed: %v, want woken", n, fire, err)
			}
			cancel()
		}
		ws := memdb.NewWatchSet()
		for range n {
			ws.Add(make(chan struct{}))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		if err := watchSet(ctx, ws); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%d channels, none closed: %v, want the deadline", n, err)
		}
		cancel()
	}
}

func TestHTTPDateCachedPerSecond(t *testing.T) {
	at := time.Date(2026, 11, 26, 5, 30, 0, 0, time.UTC)
	if got, want := httpDate(at), "Thu, 26 Nov 2026 05:30:00 GMT"; got != want {
		t.Fatalf("httpDate = %q, want %q", got, want)
	}
	if got := httpDate(at.Add(999 * time.Millisecond)); got != "Thu, 26 Nov 2026 05:30:00 GMT" {
		t.Errorf("same second: %q", got)
	}
	if got := httpDate(at.Add(time.Second).In(time.FixedZone("X", 3600))); got != "Thu, 26 Nov 2026 05:30:01 GMT" {
		t.Errorf("next second, another zone: %q", got)
	}
}

// A stored object is encoded once: the second answer is the same bytes
// (not re-encoded); another object, even with equal fields, is its own
// entry; ?pretty bypasses the cache.
func TestEncodeStoredOnce(t *testing.T) {
	type rule struct{ ID, Description string }
	a, b := &rule{"1", "x"}, &rule{"1", "x"}
	first, err := encodeStored(a)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := encodeStored(a)
	if &first[0] != &second[0] {
		t.Error("the same object was encoded twice")
	}
	other, _ := encodeStored(b)
	if &other[0] == &first[0] || string(other) != string(first) {
		t.Errorf("another object: %q (shared: %v), want its own encoding of equal JSON", other, &other[0] == &first[0])
	}
	if string(first) != `{"ID":"1","Description":"x"}` {
		t.Errorf("JSON %s", first)
	}
}
