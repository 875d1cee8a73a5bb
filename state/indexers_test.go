package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
)

// TestTypedIndexersMatchMemdb gives every typed indexer of the schema and
// memdb's reflecting indexer of the same field the same rows, with the
// strings an ID field may hold (canonical UUIDs in either case, malformed
// ones, empty), and wants the same answer: ok, bytes and error.
func TestTypedIndexersMatchMemdb(t *testing.T) {
	id := uuid.NewString()
	values := []string{"", id, strings.ToUpper(id), "x" + id[1:], id[:35], id + "0", strings.ReplaceAll(id, "-", ""),
		id[:8] + "0" + id[9:], id[:23] + "-" + id[24:], "default", "web", "a\x00b", "-" + id[1:], id[:18] + "g" + id[19:]}
	r := rand.New(rand.NewPCG(3, 4))
	checked := 0
	for table, ts := range tableSchemas {
		for name, is := range ts.Indexes {
			subs := []memdb.Indexer{is.Indexer}
			if c, ok := is.Indexer.(*memdb.CompoundIndex); ok {
				subs = c.Indexes
			}
			for _, ix := range subs {
				typed, ok := ix.(interface {
					memdb.SingleIndexer
					reflected() memdb.SingleIndexer
				})
				if !ok {
					continue
				}
				for i := range 200 {
					row := NewRow(table)
					v := reflect.ValueOf(row).Elem()
					for f := range v.NumField() {
						switch fv := v.Field(f); fv.Kind() {
						case reflect.String:
							fv.SetString(values[r.IntN(len(values))])
						case reflect.Uint64:
							fv.SetUint(r.Uint64() >> r.UintN(64))
						}
					}
					ok1, b1, err1 := typed.FromObject(row)
					ok2, b2, err2 := typed.reflected().FromObject(row)
					if ok1 != ok2 || !bytes.Equal(b1, b2) || fmt.Sprint(err1) != fmt.Sprint(err2) {
						t.Fatalf("%s.%s row %d: typed (%v, %x, %v), memdb (%v, %x, %v)", table, name, i, ok1, b1, err1, ok2, b2, err2)
					}
					checked++
				}
			}
		}
	}
	if checked < 200*15 {
		t.Fatalf("only %d rows checked: fewer typed indexers than the schema has", checked)
	}
}
