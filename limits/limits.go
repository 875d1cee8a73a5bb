// Package limits is the one set of bounds on what a write may carry, checked
// where a request body is decoded (HTTP JSON and the client protocol's
// msgpack), before any of it reaches Raft.
//
// A body that passes them encodes into a log entry and a snapshot row that
// the FSM's decoders take: the bounds here are far below the decoders'
// (LogMaxDepth, SnapshotMaxDepth), and TestEdgeValuesDecode in package fsm
// pins that. Before these bounds, a scaling Meta nested 1,100 levels deep
// was committed and then failed to decode on every server.
package limits

import (
	"fmt"
	"strconv"
	"strings"
)

// The bounds on a request body, whatever its route or type.
const (
	// MaxBodyBytes is the largest request body accepted (413 beyond): the
	// bound on the bytes of any value or string in it. Fields with a
	// meaning have tighter caps of their own, checked with the field (ACL
	// names, descriptions and rules, scaling messages): a bound on every
	// string here would answer before them, and say less.
	MaxBodyBytes = 1 << 20
	// MaxDepth bounds how deep objects and arrays nest in a body, the
	// body's own object counting as level 1. The deepest real request,
	// a job's task driver config, sits about 8 levels down and nests a few
	// more.
	MaxDepth = 64
	// MaxElements bounds the members of one object or elements of one
	// array. The longest real lists are a deployment's allocation IDs, at
	// most -max-job-allocs (10,000 by default).
	MaxElements = 16 << 10
)

// The FSM's decoders: how deep a log entry and a snapshot row may nest
// (go-msgpack counts every struct, map and slice). A log entry nests MaxDepth
// plus the few levels of the request structs around the body's value, far
// below LogMaxDepth. A snapshot row nests at most a few levels more than the
// entry it was applied from, so an entry that decodes (under LogMaxDepth)
// always gives a snapshot that decodes (under SnapshotMaxDepth). The
// margin is wide on purpose: a build before these bounds applied entries up
// to 1,021 levels of Meta, whose snapshots then failed at 1,024; they
// decode under SnapshotMaxDepth.
const (
	LogMaxDepth      = 1024 // go-msgpack's default, as every build had
	SnapshotMaxDepth = 2048
)

// Error is a body over one of the bounds. Path says where (the first few
// fields of it), Limit what was exceeded.
type Error struct {
	Path  string
	Bound string // "depth" or "elements"
	Limit int
}

func (e *Error) Error() string {
	at := e.Path
	if at == "" {
		at = "the body"
	}
	if e.Bound == "depth" {
		return fmt.Sprintf("%s nests objects and arrays more than %d levels deep; the limit is %d", at, e.Limit, e.Limit)
	}
	return fmt.Sprintf("%s has more than %d elements; the limit is %d", at, e.Limit, e.Limit)
}

// checker follows a scan through nested objects and arrays and refuses the
// first thing over a bound. The JSON and msgpack scanners drive it.
type checker struct {
	levels []level
}

// level is one open object or array.
type level struct {
	object   bool
	elements int    // members or elements seen so far
	key      []byte // the member being read (an object's), for the path
}

// pathSegments is how many fields of the path an error shows.
const pathSegments = 4

// maxKeyShown bounds a key as shown in a path.
const maxKeyShown = 64

// open enters an object or array (at the current position).
func (c *checker) open(object bool) error {
	if len(c.levels) >= MaxDepth {
		return c.fail("depth", MaxDepth)
	}
	c.levels = append(c.levels, level{object: object})
	return nil
}

// close leaves the innermost object or array (nothing when none is open).
func (c *checker) close() {
	if len(c.levels) > 0 {
		c.levels = c.levels[:len(c.levels)-1]
	}
}

// element counts one more member or element of the innermost container.
func (c *checker) element() error {
	if len(c.levels) == 0 {
		return nil
	}
	l := &c.levels[len(c.levels)-1]
	l.elements++
	if l.elements > MaxElements {
		return c.fail("elements", MaxElements)
	}
	if l.object {
		l.key = l.key[:0]
	}
	return nil
}

// keyBytes appends to the current member's key (as much as a path shows).
func (c *checker) keyBytes(b []byte) {
	if len(c.levels) == 0 {
		return
	}
	l := &c.levels[len(c.levels)-1]
	if room := maxKeyShown - len(l.key); room > 0 {
		l.key = append(l.key, b[:min(room, len(b))]...)
	}
}

// fail is the error at the current position; elements names the container
// itself, anything else the member being read.
func (c *checker) fail(bound string, limit int) error {
	levels := c.levels
	var b strings.Builder
	for i, l := range levels {
		if bound == "elements" && i == len(levels)-1 {
			break // the container, not its element
		}
		if i == pathSegments {
			b.WriteString("...")
			break
		}
		if l.object {
			if i > 0 {
				b.WriteByte('.')
			}
			b.Write(l.key)
		} else {
			b.WriteString("[" + strconv.Itoa(max(l.elements-1, 0)) + "]")
		}
	}
	return &Error{Path: b.String(), Bound: bound, Limit: limit}
}
