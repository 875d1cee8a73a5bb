package limits_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/limits"
	"github.com/hashicorp/go-msgpack/v2/codec"
)

// nestedMeta is {"Meta": {"a": {"a": ... 1}}} with the Meta value nesting
// levels objects deep (the body's own object adds one).
func nestedMeta(levels int) map[string]any {
	var v any = 1.0
	for i := 0; i < levels; i++ {
		v = map[string]any{"a": v}
	}
	return map[string]any{"Meta": v}
}

func list(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = 1.0
	}
	return out
}

// cases are bodies at and just over each bound, and the error each gets.
var cases = []struct {
	name string
	body any
	want string // "" accepted
}{
	{"depth at the limit", nestedMeta(limits.MaxDepth - 1), ""},
	{"depth over the limit", nestedMeta(limits.MaxDepth), "Meta.a.a.a... nests objects and arrays more than 64 levels deep; the limit is 64"},
	{"the poison: Meta 1,100 levels", nestedMeta(1100), "Meta.a.a.a... nests objects and arrays more than 64 levels deep; the limit is 64"},
	{"shallow depth over", map[string]any{"Job": map[string]any{"TaskGroups": []any{nestedMeta(limits.MaxDepth)}}},
		"Job.TaskGroups[0].Meta... nests objects and arrays more than 64 levels deep; the limit is 64"},
	{"array at the limit", map[string]any{"IDs": list(limits.MaxElements)}, ""},
	{"array over the limit", map[string]any{"IDs": list(limits.MaxElements + 1)}, "IDs has more than 16384 elements; the limit is 16384"},
	{"object over the limit", map[string]any{"Meta": func() map[string]any {
		m := map[string]any{}
		for i := 0; i <= limits.MaxElements; i++ {
			m[strconv.Itoa(i)] = 1.0
		}
		return m
	}()}, "Meta has more than 16384 elements; the limit is 16384"},
	{"a long key is shown cut", map[string]any{strings.Repeat("k", 100): nestedMeta(limits.MaxDepth)},
		strings.Repeat("k", 64) + ".Meta.a.a... nests objects and arrays more than 64 levels deep; the limit is 64"},
	{"long strings", map[string]any{"Config": map[string]any{"s": strings.Repeat("x", 512<<10)}}, ""},
	{"unicode and numbers", map[string]any{"Meta": map[string]any{"ключ ✓": "значение 🚀", "n": 1.7976931348623157e308, "m": -9007199254740993.0}}, ""},
}

// TestJSONReader: every bound, through a decoder reading the body in one
// piece and a byte at a time; the decoder stops at the error.
func TestJSONReader(t *testing.T) {
	for _, c := range cases {
		body, err := json.Marshal(c.body)
		if err != nil {
			t.Fatal(err)
		}
		for _, chunked := range []bool{false, true} {
			var src io.Reader = bytes.NewReader(body)
			if chunked {
				src = iotest.OneByteReader(src)
			}
			var out map[string]any
			err := json.NewDecoder(limits.NewJSONReader(src)).Decode(&out)
			checkResult(t, c.name, err, c.want)
		}
	}
}

// TestCheckMsgpack: the same bodies in the client protocol's msgpack.
func TestCheckMsgpack(t *testing.T) {
	for _, c := range cases {
		var body []byte
		if err := codec.NewEncoderBytes(&body, api.NewMsgpackHandle()).Encode(c.body); err != nil {
			t.Fatal(err)
		}
		checkResult(t, c.name, limits.CheckMsgpack(body), c.want)
	}
}

func checkResult(t *testing.T, name string, err error, want string) {
	t.Helper()
	var le *limits.Error
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: %v, want it accepted", name, err)
	case want != "" && !errors.As(err, &le):
		t.Errorf("%s: %v, want %q", name, err, want)
	case want != "" && le.Error() != want:
		t.Errorf("%s: %q, want %q", name, le.Error(), want)
	}
}

// TestJSONReaderStrings: brackets, quotes and backslashes inside strings
// are text, not structure.
func TestJSONReaderStrings(t *testing.T) {
	deepText := strings.Repeat(`[{\"`, 200)
	for _, body := range []string{
		`{"Meta":{"a":"` + deepText + `"}}`,
		`{"Meta":{"` + strings.Repeat(`{[`, 200) + `":"\\"}}`,
	} {
		var out map[string]any
		if err := json.NewDecoder(limits.NewJSONReader(strings.NewReader(body))).Decode(&out); err != nil {
			t.Errorf("%.60s: %v", body, err)
		}
	}
}

// TestCheckMsgpackHeaders: a declared count over the bound is refused from
// the header alone, before the elements (which are not there) are read.
func TestCheckMsgpackHeaders(t *testing.T) {
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"array32 of 2^32-1", []byte{0x81, 0xa2, 'I', 'D', 0xdd, 0xff, 0xff, 0xff, 0xff}, "ID has more than 16384 elements; the limit is 16384"},
		{"map16 of 65535", []byte{0xde, 0xff, 0xff}, "the body has more than 16384 elements; the limit is 16384"},
		{"str32 of 1 GiB, cut", []byte{0x81, 0xa1, 'k', 0xdb, 0x40, 0, 0, 0}, ""},
		{"truncated", []byte{0x82, 0xa1}, ""},
		{"reserved byte", []byte{0x81, 0xc1}, ""},
		{"ext and fixext", []byte{0x92, 0xd4, 1, 2, 0xc7, 2, 5, 1, 2}, ""},
	} {
		checkResult(t, c.name, limits.CheckMsgpack(c.body), c.want)
	}
}

// FuzzJSONReader: for any valid JSON, the reader refuses exactly the bodies
// whose decoded value nests deeper or holds more elements than the bounds,
// and never refuses a body within them.
func FuzzJSONReader(f *testing.F) {
	for _, c := range cases[:4] {
		b, _ := json.Marshal(c.body)
		f.Add(b)
	}
	f.Add([]byte(`{"a":[1,2,{"b":"c\"]"}],"d":{}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var ref any
		if json.Unmarshal(body, &ref) != nil {
			return
		}
		var got any
		err := json.NewDecoder(limits.NewJSONReader(bytes.NewReader(body))).Decode(&got)
		depth, elements := shape(ref)
		over := depth > limits.MaxDepth || elements > limits.MaxElements
		var le *limits.Error
		switch {
		case over && !errors.As(err, &le):
			t.Fatalf("depth %d, elements %d accepted (%v)", depth, elements, err)
		case !over && err != nil:
			t.Fatalf("depth %d, elements %d refused: %v", depth, elements, err)
		}
	})
}

// shape is a decoded JSON value's nesting depth and its largest container.
func shape(v any) (depth, elements int) {
	var kids []any
	switch v := v.(type) {
	case map[string]any:
		elements = len(v)
		for _, k := range v {
			kids = append(kids, k)
		}
	case map[any]any: // msgpack's, with keys that are not strings
		elements = len(v)
		for _, k := range v {
			kids = append(kids, k)
		}
	case []any:
		elements = len(v)
		kids = v
	default:
		return 0, 0
	}
	inner := 0
	for _, k := range kids {
		d, e := shape(k)
		inner = max(inner, d)
		elements = max(elements, e)
	}
	return inner + 1, elements
}

// BenchmarkJSONReader: the reader's cost over a job-like body, beside the
// decoding it guards.
func BenchmarkJSONReader(b *testing.B) {
	body, _ := json.Marshal(map[string]any{"Job": map[string]any{"ID": "web", "TaskGroups": []any{map[string]any{
		"Name": "web", "Count": 3, "Tasks": []any{map[string]any{"Name": "app", "Driver": "mock_driver",
			"Config": map[string]any{"run_for": "1h", "args": list(50), "s": strings.Repeat("é", 2000)}}}}}}})
	for _, c := range []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{{"plain", func(r io.Reader) io.Reader { return r }}, {"bounded", limits.NewJSONReader}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				var out map[string]any
				if err := json.NewDecoder(c.wrap(bytes.NewReader(body))).Decode(&out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzCheckMsgpack: CheckMsgpack takes any bytes without failing, and a
// body it accepts that decodes is within the bounds. (That it refuses what
// is over them is TestCheckMsgpack's: decoding a refused body to compare,
// one that declares 2^32 elements say, is what the check is there to spare.)
func FuzzCheckMsgpack(f *testing.F) {
	for _, c := range cases[:4] { // the small ones: large seeds slow the fuzzer down
		var b []byte
		_ = codec.NewEncoderBytes(&b, api.NewMsgpackHandle()).Encode(c.body)
		f.Add(b)
	}
	f.Add([]byte{0x92, 0xd4, 1, 2, 0xc7, 2, 5, 1, 2})
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, body []byte) {
		if limits.CheckMsgpack(body) != nil {
			return
		}
		var ref any
		dec := codec.NewDecoderBytes(body, api.NewMsgpackHandle())
		if dec.Decode(&ref) != nil || dec.NumBytesRead() != len(body) {
			return
		}
		if depth, elements := shape(ref); depth > limits.MaxDepth || elements > limits.MaxElements {
			t.Fatalf("depth %d, elements %d accepted", depth, elements)
		}
	})
}
