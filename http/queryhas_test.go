package http

import (
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
)

// queryHas and queryLookup answer as url.ParseQuery(raw).Has and Get do (URL.Query ignores the
// parse error and keeps the pairs that parsed), on a table of edge cases
// and on random queries built from the characters that matter.
func TestQueryHasMatchesParseQuery(t *testing.T) {
	cases := []string{
		"", "pretty", "pretty=", "pretty=1", "index=5&wait=10s", "index=5&pretty", "&&pretty&&", "=pretty",
		"prettyx", "xpretty", "pretty;x=1", "x=1;pretty", "pr%65tty", "pr%zztty", "pretty=%zz", "pretty=%41",
		"a+b=c&pretty", "pretty+", "%70retty", "a=1&b=2&c=3", "pretty&pretty=2", "pretty=a=b", strings.Repeat("a&", 150) + "pretty",
	}
	check := func(raw string) {
		v, _ := url.ParseQuery(raw)
		if got, want := queryHas(raw, "pretty"), v.Has("pretty"); got != want {
			t.Errorf("queryHas(%q, pretty) = %v, ParseQuery has %v", raw, got, want)
		}
		for _, name := range []string{"pretty", "index", "p", "a b", ""} {
			got, ok := queryLookup(raw, name)
			if want, wantOK := v.Get(name), v.Has(name); got != want || ok != wantOK {
				t.Errorf("queryLookup(%q, %q) = %q, %v; ParseQuery has %q, %v", raw, name, got, ok, want, wantOK)
			}
		}
	}
	for _, raw := range cases {
		check(raw)
	}
	parts := []string{"pretty", "p", "retty", "=", "&", ";", "%", "%65", "%zz", "+", "1", "index", "wait=5s", "a b", "%20", ""}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(8) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		check(b.String())
	}
}
