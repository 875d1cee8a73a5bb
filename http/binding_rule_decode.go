package http

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// A binding rule's body is nearly always a flat object of plain strings
// (`{"AuthMethod":"k8s","BindType":"service","BindName":"svc-${value.name}"}`),
// and encoding/json's reflection was 5% of a create's CPU. decodeFlatRule
// reads exactly that form, with the fields' exact names; anything else
// (another spelling, a number, null, BindVars, an escape, a byte outside
// printable ASCII, any syntax error) makes it give up, and the same bytes go
// through encoding/json, which stays the definition: its result and its
// errors. FuzzDecodeFlatRule checks that what the fast path accepts
// encoding/json decodes to the same request.

// flatRuleMax bounds the bodies read whole for the fast path.
const flatRuleMax = 4 << 10

var flatRuleBodies = sync.Pool{New: func() any { return new([flatRuleMax]byte) }}

// decodeBindingRule is decodeBody for a binding rule.
func decodeBindingRule(r *http.Request, out *bindingRuleRequest) error {
	const prefix = "BindingRule decoding failed"
	if r.Body == nil || r.ContentLength <= 0 || r.ContentLength > flatRuleMax {
		return decodeStrict(r, prefix, out)
	}
	buf := flatRuleBodies.Get().(*[flatRuleMax]byte)
	defer flatRuleBodies.Put(buf)
	// With a Content-Length the body ends after that many bytes.
	n, err := io.ReadFull(r.Body, buf[:r.ContentLength])
	if err == nil && decodeFlatRule(buf[:n], out) {
		return nil
	}
	*out = bindingRuleRequest{}
	// The same byte stream as without the fast path: what was read, then
	// the rest of the body (a read error comes back again: MaxBytesReader
	// and net/http's body keep it).
	return decodeStrictFrom(io.MultiReader(bytes.NewReader(buf[:n]), r.Body), prefix, out)
}

// decodeFlatRule decodes b when it is a flat object of plain-ASCII string
// members named exactly as bindingRuleRequest's string fields, and says
// whether it did.
func decodeFlatRule(b []byte, out *bindingRuleRequest) bool {
	i := skipJSONSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipJSONSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipJSONSpace(b, i+1) == len(b)
	}
	for {
		key, j, ok := plainJSONString(b, i)
		if !ok {
			return false
		}
		j = skipJSONSpace(b, j)
		if j >= len(b) || b[j] != ':' {
			return false
		}
		val, k, ok := plainJSONString(b, skipJSONSpace(b, j+1))
		if !ok {
			return false
		}
		field := flatRuleField(out, key)
		if field == nil {
			return false
		}
		*field = string(val)
		i = skipJSONSpace(b, k)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipJSONSpace(b, i+1)
		case '}':
			return skipJSONSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

func flatRuleField(r *bindingRuleRequest, name []byte) *string {
	switch string(name) {
	case "ID":
		return &r.ID
	case "Description":
		return &r.Description
	case "AuthMethod":
		return &r.AuthMethod
	case "Selector":
		return &r.Selector
	case "BindType":
		return &r.BindType
	case "BindName":
		return &r.BindName
	case "Namespace":
		return &r.Namespace
	}
	return nil
}

// plainJSONString reads the string at b[i] when it has only printable ASCII
// and no escapes; it returns its contents and the index after it.
func plainJSONString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// skipJSONSpace skips JSON's white space (space, tab, CR, LF) from b[i].
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
