package stream

import (
	"errors"
	"fmt"
	"sync"
)

// DefaultBufferSize is how many entries' batches a server keeps (Nomad's
// event_buffer_size default).
const DefaultBufferSize = 100

// Buffer keeps the last Size batches. Publishing never waits for a reader:
// a reader that falls behind the oldest kept batch is cut off, so memory is
// bounded by Size whatever the readers do.
type Buffer struct {
	mu     sync.RWMutex // readers share it: a publish wakes them all at once
	size   int
	ring   []*Batch
	first  uint64 // sequence number of ring[start]
	start  int
	count  int
	notify chan struct{} // closed and replaced on every publish
	closed error         // set by Close: every reader ends with it
	gen    uint64        // bumped by Reset: older cursors end with resetErr
	reset  error
}

// NewBuffer returns a buffer of size batches (DefaultBufferSize when 0 or less).
func NewBuffer(size int) *Buffer {
	if size <= 0 {
		size = DefaultBufferSize
	}
	return &Buffer{size: size, ring: make([]*Batch, size), notify: make(chan struct{})}
}

// Size is how many batches the buffer keeps.
func (b *Buffer) Size() int { return b.size }

// Publish appends the events of one entry; an entry without events is not kept.
func (b *Buffer) Publish(index uint64, events []Event) {
	if len(events) == 0 {
		return
	}
	batch := &Batch{Index: index, Events: events}
	b.mu.Lock()
	if b.count == b.size {
		b.ring[b.start] = nil
		b.start = (b.start + 1) % b.size
		b.first++
		b.count--
	}
	b.ring[(b.start+b.count)%b.size] = batch
	b.count++
	close(b.notify)
	b.notify = make(chan struct{})
	b.mu.Unlock()
}

// Close ends every subscription with err (e.g. the state was replaced by a
// snapshot restore, or the server shuts down).
func (b *Buffer) Close(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed == nil {
		b.closed = err
		close(b.notify)
		b.notify = make(chan struct{})
	}
}

// Reset drops every kept batch and ends every subscription made before it
// with err: the state they followed was replaced (a snapshot restore), so
// the entries they would miss will never be published.
func (b *Buffer) Reset(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.ring {
		b.ring[i] = nil
	}
	b.first += uint64(b.count)
	b.start, b.count = 0, 0
	b.gen++
	b.reset = err
	close(b.notify)
	b.notify = make(chan struct{})
}

// ErrLagging ends the subscription of a reader that fell behind the buffer.
var ErrLagging = errors.New("subscription closed by server: the client fell behind the event buffer (it reads too slowly); resubscribe with the index of the last event it received")

// Cursor is one reader's position in the buffer.
type Cursor struct {
	buf *Buffer
	gen uint64
	seq uint64 // sequence number of the next batch to read
	// Truncated says that the index asked for was older than the oldest
	// batch kept: the cursor starts at the oldest instead.
	Truncated bool
	// Oldest is the index of the oldest batch kept when the cursor was made.
	Oldest uint64
}

// Subscribe returns a cursor at the first kept batch whose index is at or
// after index (index 0: the oldest kept).
func (b *Buffer) Subscribe(index uint64) *Cursor {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := &Cursor{buf: b, gen: b.gen, seq: b.first + uint64(b.count)}
	if b.count > 0 {
		c.Oldest = b.ring[b.start].Index
	}
	for i := 0; i < b.count; i++ {
		if b.ring[(b.start+i)%b.size].Index >= index {
			c.seq = b.first + uint64(i)
			break
		}
	}
	// Older than what is kept, once something was dropped: say so.
	c.Truncated = index > 0 && b.count > 0 && index < c.Oldest && b.first > 0
	return c
}

// Next returns the batches published since the last call, or, when there
// are none, a channel closed on the next publish. It fails with ErrLagging
// once the reader has fallen behind the buffer, or with the buffer's Close error.
func (c *Cursor) Next() ([]*Batch, <-chan struct{}, error) {
	b := c.buf
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed != nil {
		return nil, nil, b.closed
	}
	if c.gen != b.gen {
		return nil, nil, b.reset
	}
	if c.seq < b.first {
		return nil, nil, fmt.Errorf("%w (%d batches kept)", ErrLagging, b.size)
	}
	end := b.first + uint64(b.count)
	if c.seq >= end {
		return nil, b.notify, nil
	}
	out := make([]*Batch, 0, end-c.seq)
	for s := c.seq; s < end; s++ {
		out = append(out, b.ring[(b.start+int(s-b.first))%b.size])
	}
	c.seq = end
	return out, nil, nil
}
