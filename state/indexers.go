package state

import (
	"encoding/binary"

	"github.com/hashicorp/go-memdb"
)

// The hot tables' indexers read their field through a typed accessor
// instead of memdb's reflection (a FieldByName per index per write: 3% of
// the CPU of placing allocations). Each wraps memdb's own indexer of the
// same field, which still answers the queries (FromArgs, PrefixFromArgs),
// and FromObject gives the same bytes and errors as memdb's:
// TestTypedIndexersMatchMemdb compares them.

// stringField is memdb.StringFieldIndex (not lowercased) over get.
type stringField[T any] struct {
	*memdb.StringFieldIndex
	get func(*T) string
}

func stringIndex[T any](field string, get func(*T) string) stringField[T] {
	return stringField[T]{&memdb.StringFieldIndex{Field: field}, get}
}

func (f stringField[T]) FromObject(obj any) (bool, []byte, error) {
	o, ok := obj.(*T)
	if !ok {
		return f.StringFieldIndex.FromObject(obj)
	}
	v := f.get(o)
	if v == "" {
		return false, nil, nil
	}
	b := make([]byte, len(v)+1) // the terminating 0 memdb appends
	copy(b, v)
	return true, b, nil
}

// uuidField is memdb.UUIDFieldIndex over get.
type uuidField[T any] struct {
	*memdb.UUIDFieldIndex
	get func(*T) string
}

func uuidIndex[T any](field string, get func(*T) string) uuidField[T] {
	return uuidField[T]{&memdb.UUIDFieldIndex{Field: field}, get}
}

func (f uuidField[T]) FromObject(obj any) (bool, []byte, error) {
	o, ok := obj.(*T)
	if !ok {
		return f.UUIDFieldIndex.FromObject(obj)
	}
	v := f.get(o)
	if v == "" {
		return false, nil, nil
	}
	if b, ok := parseCanonicalUUID(v); ok {
		return true, b, nil
	}
	// Anything else gets memdb's answer, errors included.
	return f.UUIDFieldIndex.FromObject(obj)
}

// parseCanonicalUUID decodes the 8-4-4-4-12 hex form, as memdb's parse does
// for it; ok is false for any other string.
func parseCanonicalUUID(s string) ([]byte, bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return nil, false
	}
	out := make([]byte, 0, 16)
	for i := 0; i < 36; i += 2 {
		switch i {
		case 8, 13, 18, 23: // the pair starts one past the hyphen
			i++
		}
		hi, ok1 := fromHex(s[i])
		lo, ok2 := fromHex(s[i+1])
		if !ok1 || !ok2 {
			return nil, false
		}
		out = append(out, hi<<4|lo)
	}
	return out, true
}

func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// uint64Field is memdb.UintFieldIndex over a uint64 field.
type uint64Field[T any] struct {
	*memdb.UintFieldIndex
	get func(*T) uint64
}

func uint64Index[T any](field string, get func(*T) uint64) uint64Field[T] {
	return uint64Field[T]{&memdb.UintFieldIndex{Field: field}, get}
}

func (f uint64Field[T]) FromObject(obj any) (bool, []byte, error) {
	o, ok := obj.(*T)
	if !ok {
		return f.UintFieldIndex.FromObject(obj)
	}
	return true, binary.BigEndian.AppendUint64(make([]byte, 0, 8), f.get(o)), nil
}

// reflected is the memdb indexer a typed one stands for (its tests' oracle).
func (f stringField[T]) reflected() memdb.SingleIndexer { return f.StringFieldIndex }
func (f uuidField[T]) reflected() memdb.SingleIndexer   { return f.UUIDFieldIndex }
func (f uint64Field[T]) reflected() memdb.SingleIndexer { return f.UintFieldIndex }
