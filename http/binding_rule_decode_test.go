package http

import (
	"strings"
	"testing"
)

// What the fast path accepts, encoding/json (the definition) decodes to
// the same request without an error.
func FuzzDecodeFlatRule(f *testing.F) {
	for _, s := range []string{
		`{"AuthMethod":"k8s","BindType":"service","BindName":"svc7-${value.name}","Selector":"value.team==a"}`,
		" {\n\t\"Description\" : \"d\" ,\"Namespace\":\"ns\", \"ID\":\"x\"}\r\n",
		`{}`, `{"AuthMethod":"a","AuthMethod":"b"}`, `{"authmethod":"a"}`, `{"AuthMethod":"a",}`,
		`{"AuthMethod":"a"} x`, `{"AuthMethod":"\u0041"}`, `{"CreateIndex":1}`, `{"BindVars":{"Name":"x"}}`,
		`{"AuthMethod":null}`, "{\"AuthMethod\":\"caf\xc3\xa9\"}", `[]`, ``, `{"AuthMethod":"a"}{}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var fast bindingRuleRequest
		if !decodeFlatRule([]byte(body), &fast) {
			return
		}
		var ref bindingRuleRequest
		if err := decodeStrictFrom(strings.NewReader(body), "BindingRule decoding failed", &ref); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refuses it: %v", body, err)
		}
		if fast.BindVars != nil || ref.BindVars != nil || fast != ref {
			t.Fatalf("%q: fast path %+v, encoding/json %+v", body, fast, ref)
		}
	})
}

// The fast path takes the bodies clients send, and leaves the others to
// encoding/json.
func TestDecodeFlatRuleTakes(t *testing.T) {
	for body, want := range map[string]bool{
		`{"AuthMethod":"k8s","BindType":"service","BindName":"svc7-${value.name}","Selector":"value.team==a"}`:        true,
		`{"Description":"x","AuthMethod":"m","Selector":"","BindType":"role","BindName":"ops","Namespace":"default"}`: true,
		`{"authmethod":"m"}`: false, `{"CreateIndex":0}`: false, `{"BindName":"caf\u00e9"}`: false,
		`{"BindName":"a"} 1`: false, `{"BindName":"a"`: false,
	} {
		var r bindingRuleRequest
		if got := decodeFlatRule([]byte(body), &r); got != want {
			t.Errorf("decodeFlatRule(%s) = %v, want %v", body, got, want)
		}
	}
}
