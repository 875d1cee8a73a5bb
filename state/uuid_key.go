package state

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// uuidNibbleIndex indexes a UUID field as one byte per hex digit (0–15,
// hyphens dropped) where memdb's UUIDFieldIndex takes one byte per two
// digits. The order and equality of keys are the same, and so are the
// inputs it accepts and its errors, but memdb's radix tree fans out 16
// ways per level instead of 256: an insert of a random ID into 100,000
// rules copied two nodes of ~256 edges (4 KiB each) for every index that
// holds the ID (the table's own and every non-unique one, which appends
// it), and copies four or five of 16 edges instead.
type uuidNibbleIndex struct {
	field func(obj any) string
}

func (u uuidNibbleIndex) FromObject(obj any) (bool, []byte, error) {
	id := u.field(obj)
	if id == "" {
		return false, nil, nil
	}
	key, err := uuidNibbles(id)
	return true, key, err
}

func (u uuidNibbleIndex) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("must provide only a single argument")
	}
	id, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("argument must be a string: %#v", args[0])
	}
	return uuidNibbles(id)
}

// uuidNibbles checks id as memdb's UUIDFieldIndex does (36 characters, at
// most four hyphens anywhere, an even number of hex digits), with its
// error messages, and returns one byte per hex digit.
func uuidNibbles(id string) ([]byte, error) {
	if len(id) != 36 {
		return nil, fmt.Errorf("UUID must be 36 characters")
	}
	hyphens := strings.Count(id, "-")
	if hyphens > 4 {
		return nil, fmt.Errorf(`UUID should have maximum of 4 "-"; got %d`, hyphens)
	}
	if (len(id)-hyphens)%2 != 0 {
		return nil, fmt.Errorf("Input (without hyphens) must be even length")
	}
	key := make([]byte, 0, len(id)-hyphens)
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c == '-':
			continue
		case '0' <= c && c <= '9':
			key = append(key, c-'0')
		case 'a' <= c && c <= 'f':
			key = append(key, c-'a'+10)
		case 'A' <= c && c <= 'F':
			key = append(key, c-'A'+10)
		default:
			return nil, fmt.Errorf("Invalid UUID: %v", hex.InvalidByteError(c))
		}
	}
	return key, nil
}
