package http

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-memdb"
)

// watchSet wakes when any one of the set's channels closes, for every set
// size (up to four by its own select, more through memdb), and returns
// errWaitEnded when its timeout closes first, or the context's error when
// that ends first.
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
			if err := watchSet(context.Background(), make(chan struct{}), ws); err != nil {
				t.Errorf("%d channels, #%d closed: %v, want woken", n, fire, err)
			}
		}
		ws := memdb.NewWatchSet()
		for range n {
			ws.Add(make(chan struct{}))
		}
		timeout := make(chan struct{})
		close(timeout)
		if err := watchSet(context.Background(), timeout, ws); !errors.Is(err, errWaitEnded) {
			t.Errorf("%d channels, none closed, timeout closed: %v, want errWaitEnded", n, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := watchSet(ctx, make(chan struct{}), ws); !errors.Is(err, context.Canceled) {
			t.Errorf("%d channels, none closed, context ended: %v, want context.Canceled", n, err)
		}
	}
}

// A wait's channel closes no earlier than asked and at most a tick later
// (with the scheduler's slack); waits ending in one tick share a channel
// and a timer, and a fired tick is forgotten.
func TestDeadlinesAfter(t *testing.T) {
	var d deadlines
	start := time.Now()
	first := d.after(30 * time.Millisecond)
	if again := d.after(30 * time.Millisecond); again != first && d.pending() != 2 {
		t.Errorf("two waits asked at once: %d ticks pending, want them to share one (or straddle two)", d.pending())
	}
	later := d.after(time.Hour)
	select {
	case <-first:
		t.Fatal("closed at once")
	default:
	}
	<-first
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Errorf("closed after %v, want at least 30ms", waited)
	}
	select {
	case <-later:
		t.Fatal("the hour's wait closed with the first")
	default:
	}
	deadline := time.Now().Add(5 * time.Second)
	for d.pending() != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := d.pending(); n != 1 {
		t.Errorf("%d ticks pending after the first fired, want 1 (the hour's)", n)
	}
	if zero := d.after(0); zero == later {
		t.Error("a wait of 0 shares the hour's channel")
	} else {
		<-zero
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

// setMeta writes the read headers under every prefix the path's clients
// read; the prefixes share value slices, which an Add to one must not reach
// through to the other.
func TestSetMetaHeaders(t *testing.T) {
	for _, tc := range []struct {
		path  string
		other string // the upstream prefix, "" for none
	}{
		{"/v1/acl/binding-rules", "X-Consul-"},
		{"/v1/deployments", "X-Nomad-"},
		{"/v1/job/web", "X-Nomad-"},
		{"/v1/status/leader", ""},
	} {
		r := httptest.NewRequest(http.MethodGet, tc.path, nil)
		w := httptest.NewRecorder()
		setMeta(w, r, queryMeta{index: 42, knownLeader: true, lastContact: 1500 * time.Millisecond})
		want := http.Header{"X-Service-Index": {"42"}, "X-Service-Knownleader": {"true"}, "X-Service-Lastcontact": {"1500"}}
		if tc.other != "" {
			want[tc.other+"Index"] = []string{"42"}
			want[tc.other+"Knownleader"] = []string{"true"}
			want[tc.other+"Lastcontact"] = []string{"1500"}
		}
		if got := w.Header(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: headers %v, want %v", tc.path, got, want)
		}
		w.Header().Add("X-Service-Index", "43")
		if tc.other != "" {
			if got := w.Header().Values(tc.other + "Index"); !reflect.DeepEqual(got, []string{"42"}) {
				t.Errorf("%s: after an Add to X-Service-Index, %sIndex is %v", tc.path, tc.other, got)
			}
		}
		if got := headerPrefixes(r); len(got) != len(metaHeaderNames(r)) || got[0] != servicePrefix {
			t.Errorf("%s: prefixes %v against %d name sets", tc.path, got, len(metaHeaderNames(r)))
		}
	}
}
