package iradix

import "sync/atomic"

// ctlplane fork: a node's (and a leaf's) mutation channel is made when it
// is first asked for (GetWatch, SeekPrefixWatch) instead of with the node.
// Most nodes of a large tree are never watched, and an unbuffered channel
// takes 96 bytes: with two channels per node and per leaf, they were about
// 40% of the memory of a go-memdb table of a million rows.
//
// A mutation channel must be closed once its node is replaced. A
// transaction records the nodes it replaces and closes their channels on
// Notify; close also leaves an already-closed channel in the node, so that a
// reader asking for the channel of a replaced node afterwards gets one that
// is closed, as it would have before. The channel is swapped in and out
// atomically: readers of a committed tree may ask for it concurrently with
// the writer that replaces the node.
type mutateCh struct {
	p atomic.Pointer[chan struct{}]
}

// closedCh is what close leaves in a node.
var closedCh = func() *chan struct{} {
	c := make(chan struct{})
	close(c)
	return &c
}()

// ch returns the channel, making it if it was not yet.
func (m *mutateCh) ch() chan struct{} {
	if p := m.p.Load(); p != nil {
		return *p
	}
	c := make(chan struct{})
	if m.p.CompareAndSwap(nil, &c) {
		return c
	}
	return *m.p.Load()
}

// close closes the channel if it was made, and makes ch return a closed
// channel from now on. Closing twice is harmless.
func (m *mutateCh) close() {
	if p := m.p.Swap(closedCh); p != nil && p != closedCh {
		close(*p)
	}
}

// isClosed reports whether the channel was closed (for tests).
func (m *mutateCh) isClosed() bool {
	return m.p.Load() == closedCh
}
