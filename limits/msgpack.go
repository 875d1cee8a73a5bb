package limits

import "encoding/binary"

// CheckMsgpack checks a msgpack body against the bounds, before it is
// decoded. It reads only headers and lengths; what does not parse (a
// truncated body, a reserved byte) is left to the decoder to refuse.
func CheckMsgpack(b []byte) error {
	var c checker
	// remaining[i]: items left in the container of level i (a map's
	// members count twice: name and value).
	var remaining []int
	for pos := 0; pos < len(b); {
		// Leave the containers this item completes.
		for len(remaining) > 0 && remaining[len(remaining)-1] == 0 {
			remaining = remaining[:len(remaining)-1]
			c.close()
		}
		isKey := false
		if n := len(remaining); n > 0 {
			l := &c.levels[n-1]
			if !l.object || remaining[n-1]%2 == 0 {
				if err := c.element(); err != nil {
					return err
				}
				isKey = l.object
			}
			remaining[n-1]--
		} else if pos > 0 {
			return nil // a second value: the decoder refuses the extra data
		}
		typ, size, count, next, ok := msgpackHeader(b, pos)
		if !ok {
			return nil
		}
		switch typ {
		case mpString, mpBinary:
			if isKey && typ == mpString {
				c.keyBytes(b[next:min(next+size, next+maxKeyShown, len(b))])
			}
			pos = next + size
		case mpArray, mpMap:
			if err := c.open(typ == mpMap); err != nil {
				return err
			}
			if count > MaxElements {
				// Refused from its header, before its elements are read.
				c.levels[len(c.levels)-1].elements = count
				return c.fail("elements", MaxElements)
			}
			if typ == mpMap {
				count *= 2
			}
			remaining = append(remaining, count)
			pos = next
		default:
			pos = next + size
		}
	}
	return nil
}

type msgpackType int

const (
	mpScalar msgpackType = iota // size: bytes of payload after the header
	mpString
	mpBinary // bin and ext: size bytes of payload
	mpArray
	mpMap
)

// msgpackHeader reads the header of the item at pos: its kind, the bytes
// of payload after the header, an array's or map's count, and where the
// header ends. ok is false when the header is cut or the byte reserved.
func msgpackHeader(b []byte, pos int) (typ msgpackType, size, count, next int, ok bool) {
	t := b[pos]
	pos++
	// length reads an n-byte big-endian length at pos.
	length := func(n int) (int, bool) {
		if pos+n > len(b) {
			return 0, false
		}
		switch n {
		case 1:
			return int(b[pos]), true
		case 2:
			return int(binary.BigEndian.Uint16(b[pos:])), true
		default:
			return int(binary.BigEndian.Uint32(b[pos:])), true
		}
	}
	switch {
	case t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3: // fixint, nil, bool
		return mpScalar, 0, 0, pos, true
	case t >= 0xa0 && t <= 0xbf:
		return mpString, int(t & 0x1f), 0, pos, true
	case t >= 0x90 && t <= 0x9f:
		return mpArray, 0, int(t & 0x0f), pos, true
	case t >= 0x80 && t <= 0x8f:
		return mpMap, 0, int(t & 0x0f), pos, true
	}
	switch t {
	case 0xcc, 0xd0:
		return mpScalar, 1, 0, pos, true
	case 0xcd, 0xd1:
		return mpScalar, 2, 0, pos, true
	case 0xca, 0xce, 0xd2:
		return mpScalar, 4, 0, pos, true
	case 0xcb, 0xcf, 0xd3:
		return mpScalar, 8, 0, pos, true
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1-16: a type byte, then the data
		return mpBinary, 1 + 1<<(t-0xd4), 0, pos, true
	case 0xd9, 0xda, 0xdb: // str 8/16/32
		w := 1 << (t - 0xd9)
		n, ok := length(w)
		return mpString, n, 0, pos + w, ok
	case 0xc4, 0xc5, 0xc6: // bin 8/16/32
		w := 1 << (t - 0xc4)
		n, ok := length(w)
		return mpBinary, n, 0, pos + w, ok
	case 0xc7, 0xc8, 0xc9: // ext 8/16/32: a length, a type byte, the data
		w := 1 << (t - 0xc7)
		n, ok := length(w)
		return mpBinary, n + 1, 0, pos + w, ok
	case 0xdc, 0xdd:
		w := 2 << (t - 0xdc)
		n, ok := length(w)
		return mpArray, 0, n, pos + w, ok
	case 0xde, 0xdf:
		w := 2 << (t - 0xde)
		n, ok := length(w)
		return mpMap, 0, n, pos + w, ok
	}
	return 0, 0, 0, 0, false // 0xc1, reserved
}
