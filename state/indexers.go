package state

import (
	"encoding/binary"

	"github.com/hashicorp/go-memdb"
)

// The hot tables' indexers read their field through a typed accessor
// instead of memdb's reflection (their UUIDs: uuidNibbleIndex) (a FieldByName per index per write: 3% of
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
func (f uint64Field[T]) reflected() memdb.SingleIndexer { return f.UintFieldIndex }
