package http

import (
	"context"
	"math"
	"time"

	"github.com/ctlplane/ctlplane/state/stream"
)

// watchToken keeps a long answer (a followed log or file) to what its
// caller's token allows, as the event stream does: the token is resolved
// again (reresolve) on every ACL change the event buffer publishes, and
// every heartbeat interval (an expiry publishes nothing), and allowed
// checks the permission again with what it resolves to. Once the token is
// gone or allowed fails, revoke is called with the reason and watchToken
// returns; it also returns when ctx ends. Without ACLs it returns at once.
func (h *Handler) watchToken(ctx context.Context, id *identity, allowed func(*identity) error, revoke func(reason string)) {
	if !h.backend.ACLEnabled() {
		return
	}
	var buf *stream.Buffer
	if src, ok := h.backend.(EventSource); ok {
		buf = src.EventBuffer()
	}
	// From now on: what came before is in the first check below.
	subscribe := func() *stream.Cursor {
		if buf == nil {
			return nil
		}
		return buf.Subscribe(math.MaxUint64)
	}
	cur := subscribe()
	check := func() bool {
		next, reason := h.reresolve(id)
		if reason == "" {
			if err := allowed(next); err != nil {
				reason = "the token may no longer read this: " + err.Error()
			}
		}
		if reason != "" {
			revoke(reason)
			return false
		}
		id = next
		return true
	}
	// A change between the caller's check and the subscription.
	if !check() {
		return
	}
	tick := time.NewTicker(h.events.heartbeat)
	defer tick.Stop()
	resubscribed := false
	for {
		var wait <-chan struct{}
		if cur != nil {
			batches, w, err := cur.Next()
			if err != nil {
				// Behind, or the state was replaced: check, follow
				// from now; a closed buffer leaves the ticks alone.
				if !check() {
					return
				}
				if cur = subscribe(); resubscribed {
					cur = nil
				}
				resubscribed = true
				continue
			}
			resubscribed = false
			for _, b := range batches {
				if aclChange(b) {
					if !check() {
						return
					}
					break
				}
			}
			if w == nil {
				continue
			}
			wait = w
		}
		select {
		case <-ctx.Done():
			return
		case <-wait:
		case <-tick.C:
			if !check() {
				return
			}
		}
	}
}
