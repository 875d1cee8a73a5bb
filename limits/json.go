package limits

import (
	"bytes"
	"io"
)

// NewJSONReader returns a reader of r's bytes that fails with an *Error as
// soon as the JSON it carries goes over a bound: a decoder reading through
// it stops there, before it has built the value. It only follows strings
// and brackets; the syntax is the decoder's to check.
func NewJSONReader(r io.Reader) io.Reader {
	return &jsonReader{r: r}
}

type jsonReader struct {
	r   io.Reader
	c   checker
	err error // sticky: the first bound exceeded

	inString  bool
	escaped   bool // the byte before was a backslash, in a string
	stringKey bool // the string is an object's member name
	stringLen int
	// wantKey: the next string of the innermost object is a member name.
	wantKey bool
	// first: an object or array was just opened; its first byte that is
	// not white space starts its first element, or closes it.
	first bool
}

func (j *jsonReader) Read(p []byte) (int, error) {
	if j.err != nil {
		return 0, j.err
	}
	n, err := j.r.Read(p)
	if serr := j.scan(p[:n]); serr != nil {
		j.err = serr
		return 0, serr
	}
	return n, err
}

func (j *jsonReader) scan(b []byte) error {
	for i := 0; i < len(b); i++ {
		ch := b[i]
		if j.inString {
			if !j.escaped && !j.stringKey {
				// Skip to the string's next quote or backslash at once.
				k := bytes.IndexAny(b[i:], "\"\\")
				if k < 0 {
					j.stringLen += len(b) - i
					return nil
				}
				j.stringLen += k
				i += k
				ch = b[i]
			}
			switch {
			case j.escaped:
				j.escaped = false
			case ch == '\\':
				j.escaped = true
			case ch == '"':
				j.inString = false
				continue
			}
			if j.stringKey && j.stringLen < maxKeyShown {
				j.c.keyBytes(b[i : i+1])
			}
			j.stringLen++
			continue
		}
		if ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' {
			continue
		}
		if j.first {
			j.first = false
			if ch != ']' && ch != '}' {
				if err := j.c.element(); err != nil {
					return err
				}
			}
		}
		switch ch {
		case '"':
			j.inString, j.escaped, j.stringLen = true, false, 0
			j.stringKey = j.wantKey && j.inObject()
			j.wantKey = false
		case '{', '[':
			if err := j.c.open(ch == '{'); err != nil {
				return err
			}
			j.first, j.wantKey = true, ch == '{'
		case '}', ']':
			j.c.close()
			j.wantKey = false
		case ',':
			if err := j.c.element(); err != nil {
				return err
			}
			j.wantKey = j.inObject()
		case ':':
			j.wantKey = false
		}
	}
	return nil
}

func (j *jsonReader) inObject() bool {
	l := j.c.levels
	return len(l) > 0 && l[len(l)-1].object
}
