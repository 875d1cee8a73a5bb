package server

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Pipelined sends go on while nobody reads the responses, as after raft's
// pipelineDecode stopped at an unsuccessful one (hashicorp/raft#612): on
// raft's own netPipeline the third send waited forever.
func TestPipelineSendsDoNotWaitForTheConsumer(t *testing.T) {
	follower, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case rpc := <-follower.Consumer():
				req := rpc.Command.(*raft.AppendEntriesRequest)
				// Unsuccessful, as a follower whose disk failed answers.
				rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: req.PrevLogEntry}, nil)
			case <-done:
				return
			}
		}
	}()
	nt, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	leader := pipelineTransport{nt}
	defer leader.Close()
	p, err := leader.AppendEntriesPipeline("follower", follower.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	const n = 32
	sent := make(chan error, 1)
	go func() {
		for i := range n {
			req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("leader")}, Term: 1, PrevLogEntry: uint64(i)}
			if _, err := p.AppendEntries(req, &raft.AppendEntriesResponse{}); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("pipelined send: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%d pipelined sends did not go out while the responses were not read: the pipeline wedged", n)
	}
	// The responses then come out in order.
	for i := range n {
		select {
		case f := <-p.Consumer():
			if err := f.Error(); err != nil {
				t.Fatalf("response %d: %v", i, err)
			}
			if got := f.Response().LastLog; got != uint64(i) || f.Response().Success {
				t.Fatalf("response %d: LastLog %d success %v, want %d, false", i, got, f.Response().Success, i)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("response %d never came", i)
		}
	}
}
