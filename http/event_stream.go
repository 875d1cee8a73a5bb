package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ctlplane/ctlplane/server/acl"
	"github.com/ctlplane/ctlplane/server/deployments"
	"github.com/ctlplane/ctlplane/server/jobs"
	"github.com/ctlplane/ctlplane/server/nodes"
	"github.com/ctlplane/ctlplane/server/servicereg"
	"github.com/ctlplane/ctlplane/state"
	"github.com/ctlplane/ctlplane/state/stream"
)

// EventSource is what the event stream needs from a server: the buffer its
// own FSM publishes to (so a follower serves the stream itself).
type EventSource interface {
	EventBuffer() *stream.Buffer
}

// Defaults of the event stream (SetEventStream changes them).
const (
	// DefaultEventHeartbeat is how often an idle stream sends `{}` (Nomad's 10 s).
	DefaultEventHeartbeat = 10 * time.Second
	// DefaultEventWriteTimeout bounds one write to a subscriber: one that
	// does not read is cut off instead of holding its batches.
	DefaultEventWriteTimeout = 10 * time.Second
	// eventLinger is how long a woken subscriber waits for more entries
	// before it writes: with a thousand subscribers, one wake-up and one
	// write per entry each would cost more than the entries themselves.
	eventLinger = 30 * time.Millisecond
)

type eventStreamConfig struct {
	heartbeat    time.Duration
	writeTimeout time.Duration
}

// SetEventStream sets the heartbeat interval and the write timeout of the
// event stream (0 keeps the default); call it before serving.
func (h *Handler) SetEventStream(heartbeat, writeTimeout time.Duration) {
	if heartbeat > 0 {
		h.events.heartbeat = heartbeat
	}
	if writeTimeout > 0 {
		h.events.writeTimeout = writeTimeout
	}
}

func (h *Handler) registerEventStream() {
	h.events = eventStreamConfig{heartbeat: DefaultEventHeartbeat, writeTimeout: DefaultEventWriteTimeout}
	h.handleLocal("/v1/event/stream", methods{{http.MethodGet, h.eventStream}})
}

// eventStream serves GET /v1/event/stream as Nomad's: newline-delimited
// JSON {"Index": N, "Events": [...]}, `{}` heartbeats, each event only if
// the caller's token may read its object.
func (h *Handler) eventStream(w http.ResponseWriter, r *http.Request) (any, error) {
	src, ok := h.backend.(EventSource)
	if !ok || src.EventBuffer() == nil {
		return nil, &apiError{code: http.StatusNotImplemented, msg: "The event stream is not served by this agent (its event buffer is off)"}
	}
	q := r.URL.Query()
	topics, err := stream.ParseTopics(q["topic"])
	if err != nil {
		return nil, badRequest("%s", err.Error())
	}
	var index uint64
	if v := q.Get("index"); v != "" {
		if index, err = strconv.ParseUint(v, 10, 64); err != nil {
			return nil, badRequest("Invalid index %q: it must be a non-negative integer", v)
		}
	}
	id, err := h.identify(r)
	if err != nil {
		return nil, err
	}
	ns, err := resolveNamespace(r, q.Get("namespace"), id, true)
	if err != nil {
		return nil, err
	}
	filter := &stream.Filter{Topics: topics, Namespace: ns}
	cur := src.EventBuffer().Subscribe(index)

	w.Header().Set("Content-Type", "application/json")
	// Not chunked: the body ends when the connection closes (HTTP/1.1's
	// close-delimited body), so a write is one syscall instead of three
	// (chunk header, data, chunk end) — what bounds a large fan-out.
	w.Header().Set("Transfer-Encoding", "identity")
	if cur.Truncated {
		// The index asked for has left the buffer: say where it starts.
		w.Header().Set(servicePrefix+"Event-Truncated", "true")
		w.Header().Set(servicePrefix+"Event-Oldest-Index", strconv.FormatUint(cur.Oldest, 10))
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if err := rc.Flush(); err != nil {
		return written, nil
	}
	s := &subscriber{h: h, w: w, rc: rc, id: id, filter: filter}
	s.run(r, cur)
	return written, nil
}

// subscriber is one open stream.
type subscriber struct {
	h      *Handler
	w      http.ResponseWriter
	rc     *http.ResponseController
	id     *identity
	filter *stream.Filter
	line   bytes.Buffer
}

func (s *subscriber) run(r *http.Request, cur *stream.Cursor) {
	tick := time.NewTicker(s.h.events.heartbeat)
	defer tick.Stop()
	for {
		batches, wait, err := cur.Next()
		if err != nil {
			s.end(err.Error())
			return
		}
		if wait != nil {
			select {
			case <-r.Context().Done():
				return
			case <-wait:
				select {
				case <-r.Context().Done():
					return
				case <-time.After(eventLinger):
				}
				continue
			case <-tick.C:
				if !s.reauthorize() {
					return
				}
				if !s.write([]byte("{}\n")) {
					return
				}
				continue
			}
		}
		// Everything that has come is sent in one write and one flush.
		s.line.Reset()
		for _, b := range batches {
			if aclChange(b) && !s.reauthorize() {
				return
			}
			if !s.add(b) {
				return
			}
		}
		if s.line.Len() > 0 && !s.write(s.line.Bytes()) {
			return
		}
	}
}

// aclChange says whether a batch may change what a token may read.
func aclChange(b *stream.Batch) bool {
	for i := range b.Events {
		switch b.Events[i].Topic {
		case stream.TopicACLToken, stream.TopicACLPolicy, stream.TopicACLRole:
			return true
		}
	}
	return false
}

// reauthorize resolves the stream's token again: a token that lost a
// permission stops getting those events, a deleted one ends the stream.
func (s *subscriber) reauthorize() bool {
	id, reason := s.h.reresolve(s.id)
	if reason != "" {
		s.end(reason)
		return false
	}
	s.id = id
	return true
}

// reresolve resolves a long answer's token again (what it may do now);
// reason, when not "", says why the answer ends instead.
func (h *Handler) reresolve(id *identity) (_ *identity, reason string) {
	if !h.backend.ACLEnabled() {
		return id, ""
	}
	tok, authz, err := h.services.ACL.Resolve(id.secret)
	if errors.Is(err, acl.ErrTokenNotFound) {
		return nil, "ACL token not found: the stream's token was deleted or has expired"
	}
	if err != nil {
		return nil, fmt.Sprintf("failed to resolve the stream's token: %v", err)
	}
	return &identity{token: tok, authz: authz, secret: id.secret}, ""
}

// add appends the line of b's events that the filter keeps and the token
// may read (none: no line).
func (s *subscriber) add(b *stream.Batch) bool {
	enc, err := b.Encoded(eventView)
	if err != nil {
		s.end(fmt.Sprintf("failed to encode the events of index %d: %v", b.Index, err))
		return false
	}
	caller := s.id.caller()
	n := 0
	for i := range b.Events {
		e := &b.Events[i]
		if !s.filter.Match(e) || mayRead(caller, e) != nil {
			continue
		}
		if n == 0 {
			fmt.Fprintf(&s.line, `{"Index":%d,"Events":[`, b.Index)
		} else {
			s.line.WriteByte(',')
		}
		s.line.Write(enc[i])
		n++
	}
	if n > 0 {
		s.line.WriteString("]}\n")
	}
	return true
}

// write sends one line within the write timeout: a subscriber that does
// not read is cut off.
func (s *subscriber) write(p []byte) bool {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.h.events.writeTimeout))
	if _, err := s.w.Write(p); err != nil {
		return false
	}
	return s.rc.Flush() == nil
}

// end sends the reason the server ends the stream, as the last line.
func (s *subscriber) end(msg string) {
	line, err := json.Marshal(map[string]string{"Error": msg})
	if err != nil {
		return // a string always encodes
	}
	s.write(append(line, '\n'))
}

// mayRead refuses unless the caller may read the object of e: the read
// rule of the object's family, as a read of it would ask.
func mayRead(caller acl.Caller, e *stream.Event) error {
	switch e.Topic {
	case stream.TopicJob, stream.TopicAllocation, stream.TopicEvaluation:
		return jobs.ReadJob(caller, e.Namespace)
	case stream.TopicDeployment:
		return deployments.ReadDeployment(caller, e.Namespace)
	case stream.TopicService:
		return servicereg.ReadServices(caller, e.Namespace)
	case stream.TopicNode:
		return nodes.ReadNodes(caller)
	case stream.TopicACLToken, stream.TopicACLPolicy, stream.TopicACLRole, stream.TopicACLAuthMethod, stream.TopicACLBindingRule:
		return caller.RequireACLRead()
	}
	return acl.ErrPermissionDenied // a topic without a rule is read by no one
}

// eventView is an event as the stream sends it: its object as a read of it
// answers.
func eventView(e *stream.Event) stream.Event {
	v := *e
	if ev, ok := e.Payload["Evaluation"].(*state.Evaluation); ok {
		v.Payload = map[string]any{"Evaluation": viewEval(ev)}
	}
	return v
}
