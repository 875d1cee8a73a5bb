package server

import (
	"sync"

	"github.com/hashicorp/raft"
)

// pipelineTransport is Raft's network transport with pipelines that cannot
// wedge. In raft's netPipeline a response waits to be handed to the
// pipeline's consumer, and a send waits for a free response slot; the
// consumer (raft's pipelineDecode) stops at the first unsuccessful response
// (a follower that failed to store the entries) while the sender may still
// send once more: the send then waits forever, replication to that follower
// stops for good (heartbeats go on, so no election repairs it) and Raft's
// Shutdown never returns (hashicorp/raft#612). Here every response is taken
// off the transport's pipeline at once and queued for the consumer.
type pipelineTransport struct {
	*raft.NetworkTransport
}

func (t pipelineTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	q := &queuedPipeline{AppendPipeline: p, out: make(chan raft.AppendFuture), stop: make(chan struct{})}
	go q.relay()
	return q, nil
}

// queuedPipeline relays the responses of a pipeline through an unbounded
// queue: at most the requests sent before raft noticed the failure wait in
// it.
type queuedPipeline struct {
	raft.AppendPipeline
	out      chan raft.AppendFuture
	stop     chan struct{}
	stopOnce sync.Once
}

func (q *queuedPipeline) relay() {
	in := q.AppendPipeline.Consumer()
	var queue []raft.AppendFuture
	for {
		var out chan raft.AppendFuture
		var head raft.AppendFuture
		if len(queue) > 0 {
			out, head = q.out, queue[0]
		}
		select {
		case f := <-in:
			queue = append(queue, f)
		case out <- head:
			queue[0] = nil
			queue = queue[1:]
		case <-q.stop:
			return
		}
	}
}

// Consumer is where the responses come out, in order.
func (q *queuedPipeline) Consumer() <-chan raft.AppendFuture { return q.out }

// Close closes the transport's pipeline and stops the relay.
func (q *queuedPipeline) Close() error {
	q.stopOnce.Do(func() { close(q.stop) })
	return q.AppendPipeline.Close()
}
