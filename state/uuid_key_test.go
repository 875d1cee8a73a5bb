package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/hashicorp/go-memdb"
)

// agreeWithUUIDIndex checks that the nibble key of id and memdb's
// UUIDFieldIndex key accept and reject alike, with the same message, and
// that the nibble key is the UUID key's digits.
func agreeWithUUIDIndex(t *testing.T, id string) []byte {
	t.Helper()
	want, wantErr := (&memdb.UUIDFieldIndex{Field: "ID"}).FromArgs(id)
	got, gotErr := uuidNibbleIndex{}.FromArgs(id)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("%q: nibble key error %v, UUID index error %v", id, gotErr, wantErr)
	}
	if wantErr != nil {
		return nil
	}
	if len(got) != 2*len(want) {
		t.Fatalf("%q: %d nibbles for %d bytes", id, len(got), len(want))
	}
	for i, b := range want {
		if got[2*i] != b>>4 || got[2*i+1] != b&0x0f {
			t.Fatalf("%q: nibbles %x are not the digits of %x", id, got, want)
		}
	}
	return got
}

func TestUUIDNibbleIndexAgreesWithUUIDIndex(t *testing.T) {
	for _, id := range []string{
		"4D6E0B2A-1C3F-4A5B-9C8D-7E6F5A4B3C2D", // upper case: the same key as lower
		"4d6e0b2a1c3f4a5b9c8d7e6f5a4b3c2d----", // hyphens anywhere
		"4d6e0b2a1c3f4a5b9c8d7e6f5a4b3c2d12--", // 34 digits
		"4d6e0b2a-1c3f-4a5b-9c8d-7e6f5a4b3c2",  // short
		"4d6e0b2a-1c3f-4a5b-9c8d-7e6f5a4b3c2dd",
		"4d6e0b2a-1c3f-4a5b-9c8d-7e6f5a4b3c-d",
		"4d6e0b2a-1c3f-4a5b-9c8d-7e6f5a4b-3-2",
		"4d6e0b2a-1c3f-4a5b-9c8d-7e6f5a4b3cxg",
		"g4d6e0b2-1c3f-4a5b-9c8d-7e6f5a4b3c2d",
		"4d6e0b2a-1c3f-4a5b-9c8d-7e6f5a4b3c2\xff",
		"", "not a uuid",
	} {
		agreeWithUUIDIndex(t, id)
	}
	upper := agreeWithUUIDIndex(t, "4D6E0B2A-1C3F-4A5B-9C8D-7E6F5A4B3C2D")
	if lower := agreeWithUUIDIndex(t, "4d6e0b2a-1c3f-4a5b-9c8d-7e6f5a4b3c2d"); !bytes.Equal(upper, lower) {
		t.Fatal("upper and lower case IDs have different keys")
	}

	// The keys of random IDs sort as the UUID index's do.
	r := rand.New(rand.NewPCG(1, 2))
	type pair struct{ nib, raw []byte }
	var keys []pair
	for range 2000 {
		var b [16]byte
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		id := uuid.UUID(b).String()
		raw, _ := (&memdb.UUIDFieldIndex{Field: "ID"}).FromArgs(id)
		keys = append(keys, pair{agreeWithUUIDIndex(t, id), raw})
	}
	byNib := slices.Clone(keys)
	slices.SortFunc(byNib, func(a, b pair) int { return bytes.Compare(a.nib, b.nib) })
	slices.SortFunc(keys, func(a, b pair) int { return bytes.Compare(a.raw, b.raw) })
	for i := range keys {
		if !bytes.Equal(keys[i].raw, byNib[i].raw) {
			t.Fatalf("position %d: nibble order differs from the UUID index's order", i)
		}
	}
}

func FuzzUUIDNibbleIndex(f *testing.F) {
	f.Add("4d6e0b2a-1c3f-4a5b-9c8d-7e6f5a4b3c2d")
	f.Add("4d6e0b2a1c3f4a5b9c8d7e6f5a4b3c2d12--")
	f.Add("4d6e0b2a-1c3f-4a5b-9c8d-7e6f5a4b3cxg")
	f.Fuzz(func(t *testing.T, id string) { agreeWithUUIDIndex(t, id) })
}

// uuidForm is the regexp IsUUID replaced.
var uuidForm = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func FuzzIsUUID(f *testing.F) {
	for _, s := range []string{"4d6e0b2a-1c3f-4a5b-9c8d-7e6f5a4b3c2d", "4D6E0B2A-1C3F-4A5B-9C8D-7E6F5A4B3C2D",
		"4d6e0b2a1c3f-4a5b-9c8d-7e6f5a4b3c2d-", "4d6e0b2a-1c3f-4a5b-9c8d-7e6f5a4b3c2g", "", "4d6e0b2a-1c3f-4a5b-9c8d-7e6f5a4b3c2d\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := IsUUID(s), uuidForm.MatchString(s); got != want {
			t.Fatalf("IsUUID(%q) = %v, the regexp says %v", s, got, want)
		}
	})
}
