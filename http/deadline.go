package http

import (
	"sync"
	"time"
)

// deadlineTick is how finely the ends of blocking queries' waits are kept:
// a wait ends at most this much later than asked (against a random extra
// of up to wait/16).
const deadlineTick = 10 * time.Millisecond

// deadlines hands out channels that close when a wait ends, one channel and
// one timer per tick for every query whose wait ends in it. A timer and a
// context per query cost each watcher that one write wakes a timer stop and
// an unlinking from its request's context: with 10,000 watchers, about 6%
// of the server's CPU in the wake-up. The zero value is ready to use.
type deadlines struct {
	mu    sync.Mutex
	start time.Time // the ticks count from here, on the monotonic clock
	due   map[int64]chan struct{}
}

// after returns a channel that closes once wait has passed, at the end of
// the tick it falls in.
func (d *deadlines) after(wait time.Duration) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.due == nil {
		d.start = time.Now()
		d.due = make(map[int64]chan struct{})
	}
	tick := int64((time.Since(d.start) + wait + deadlineTick - 1) / deadlineTick)
	ch, ok := d.due[tick]
	if !ok {
		ch = make(chan struct{})
		d.due[tick] = ch
		time.AfterFunc(time.Duration(tick)*deadlineTick-time.Since(d.start), func() {
			d.mu.Lock()
			delete(d.due, tick)
			d.mu.Unlock()
			close(ch)
		})
	}
	return ch
}

// pending is how many ticks have a timer set (tests).
func (d *deadlines) pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.due)
}
