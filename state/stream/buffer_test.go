package stream

import (
	"errors"
	"fmt"
	"testing"
)

func ev(key string) []Event { return []Event{{Topic: TopicJob, Type: TypeJobRegistered, Key: key}} }

// The buffer keeps its last Size batches, a cursor resumes at the first
// index at or after the one asked for, says when that index has left the
// buffer, and a reader that falls behind is cut off instead of holding batches.
func TestBufferResumeTruncateLag(t *testing.T) {
	b := NewBuffer(3)
	for i := uint64(10); i <= 14; i++ {
		b.Publish(i, ev(fmt.Sprint(i)))
	}
	b.Publish(15, nil) // no events: not kept
	indexes := func(c *Cursor) []uint64 {
		batches, wait, err := c.Next()
		if err != nil || wait != nil {
			t.Fatalf("Next: %v %v", err, wait)
		}
		var out []uint64
		for _, x := range batches {
			out = append(out, x.Index)
		}
		return out
	}
	c := b.Subscribe(13)
	if got := fmt.Sprint(indexes(c)); got != "[13 14]" || c.Truncated {
		t.Errorf("from 13: %s truncated=%v", got, c.Truncated)
	}
	c = b.Subscribe(2)
	if got := fmt.Sprint(indexes(c)); got != "[12 13 14]" || !c.Truncated || c.Oldest != 12 {
		t.Errorf("from 2: %s truncated=%v oldest=%d", got, c.Truncated, c.Oldest)
	}
	if _, wait, err := c.Next(); err != nil || wait == nil {
		t.Fatalf("caught up: want a wait channel, got %v %v", wait, err)
	}
	// Nothing new: the wait channel closes on the next publish.
	_, wait, _ := c.Next()
	b.Publish(16, ev("16"))
	select {
	case <-wait:
	default:
		t.Fatal("publish did not wake the reader")
	}
	if got := fmt.Sprint(indexes(c)); got != "[16]" {
		t.Errorf("after 16: %s", got)
	}
	// The reader stops reading while 3 more batches come: it is cut off.
	for i := uint64(17); i <= 20; i++ {
		b.Publish(i, ev(fmt.Sprint(i)))
	}
	if _, _, err := c.Next(); !errors.Is(err, ErrLagging) {
		t.Fatalf("lagging reader: %v", err)
	}
	b.Close(errors.New("closed for the test"))
	if _, _, err := b.Subscribe(0).Next(); err == nil || err.Error() != "closed for the test" {
		t.Fatalf("after Close: %v", err)
	}
}

func TestFilterTopicsNamespaces(t *testing.T) {
	if _, err := ParseTopics([]string{"Nope:x"}); err == nil {
		t.Fatal("unknown topic accepted")
	}
	if _, err := ParseTopics([]string{":x"}); err == nil {
		t.Fatal("empty topic accepted")
	}
	topics, err := ParseTopics([]string{"Job:web", "Allocation", "Deployment:*"})
	if err != nil {
		t.Fatal(err)
	}
	f := &Filter{Topics: topics, Namespace: "default"}
	cases := []struct {
		e    Event
		want bool
	}{
		{Event{Topic: TopicJob, Key: "web", Namespace: "default"}, true},
		{Event{Topic: TopicJob, Key: "api", Namespace: "default"}, false},
		{Event{Topic: TopicJob, Key: "web", Namespace: "other"}, false},
		{Event{Topic: TopicAllocation, Key: "a1", Namespace: "default"}, true},
		{Event{Topic: TopicDeployment, Key: "d1", Namespace: "default"}, true},
		{Event{Topic: TopicEvaluation, Key: "e1", Namespace: "default"}, false},
		{Event{Topic: TopicNode, Key: "n1"}, false},
	}
	for _, c := range cases {
		if got := f.Match(&c.e); got != c.want {
			t.Errorf("%+v: %v, want %v", c.e, got, c.want)
		}
	}
	// A key matches FilterKeys too (an evaluation by its job's ID).
	f = &Filter{Topics: map[string][]string{TopicEvaluation: {"web"}}, Namespace: "*"}
	if !f.Match(&Event{Topic: TopicEvaluation, Key: "e1", Namespace: "x", FilterKeys: []string{"web"}}) {
		t.Error("FilterKeys not matched")
	}
	all, _ := ParseTopics(nil)
	f = &Filter{Topics: all, Namespace: "*"}
	if !f.Match(&Event{Topic: TopicNode, Key: "n"}) || !f.Match(&Event{Topic: TopicJob, Key: "j", Namespace: "x"}) {
		t.Error("no topic must mean every topic")
	}
}
