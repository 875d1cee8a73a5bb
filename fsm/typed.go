package fsm

import (
	"fmt"

	"github.com/ctlplane/ctlplane/state"
)

// Command is a typed log entry: a request of type Req, applied by the FSM,
// answers a Resp. A request can only be sent with its own message type.
type Command[Req, Resp any] struct {
	Type MessageType
	Name string
}

// define registers a typed command with the FSM.
func define[Req, Resp any](t MessageType, name string, apply func(s *state.Store, idx uint64, req *Req) (Resp, error)) Command[Req, Resp] {
	register(t, name, func(s *state.Store, idx uint64, req *Req) any {
		resp, err := apply(s, idx, req)
		if err != nil {
			return err
		}
		if _, done := any(resp).(Done); done {
			return nil // nothing to report: the FSM answers nil, as it always has
		}
		return resp
	})
	return Command[Req, Resp]{Type: t, Name: name}
}

// defineBatch is define for a write that can share a batch's transaction
// with the entries around it (see FSM.ApplyEntries).
func defineBatch[Req, Resp any](t MessageType, name string, apply func(b *state.Batch, idx uint64, req *Req) (Resp, error)) Command[Req, Resp] {
	registerBatch(t, name, func(b *state.Batch, idx uint64, req *Req) any {
		resp, err := apply(b, idx, req)
		if err != nil {
			return err
		}
		if _, done := any(resp).(Done); done {
			return nil // as define answers
		}
		return resp
	})
	return Command[Req, Resp]{Type: t, Name: name}
}

// Applier commits an encoded log entry and returns what the FSM returned.
type Applier interface {
	ApplyEntry(entry []byte) (any, error)
}

// Apply commits req through a and returns the FSM's typed answer, or the
// state store's rejection as an error.
func Apply[Req, Resp any](a Applier, c Command[Req, Resp], req *Req) (Resp, error) {
	var zero Resp
	buf, err := Encode(c.Type, req)
	if err != nil {
		return zero, err
	}
	out, err := a.ApplyEntry(buf)
	if err != nil {
		return zero, err
	}
	if err, ok := out.(error); ok {
		return zero, err
	}
	if out == nil {
		if _, done := any(zero).(Done); done {
			return zero, nil
		}
	}
	resp, ok := out.(Resp)
	if !ok {
		return zero, fmt.Errorf("%s: the FSM answered %T, not %T", c.Name, out, zero)
	}
	return resp, nil
}

// Encode makes the log entry of req (for tools that write entries directly).
func (c Command[Req, Resp]) Encode(req *Req) ([]byte, error) { return Encode(c.Type, req) }
