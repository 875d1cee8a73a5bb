package jobs

import (
	"reflect"
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

// TestParseConstraints: constraints at job, group and task level are kept
// as given; invalid ones are refused with Nomad's Constraint.Validate texts.
func TestParseConstraints(t *testing.T) {
	job, err := Parse([]byte(`{"ID":"web","Constraints":[{"LTarget":"${attr.kernel.name}","RTarget":"linux","Operand":"="},{"Operand":"distinct_hosts"}],
		"TaskGroups":[{"Name":"g","Constraints":[{"LTarget":"${meta.rack}","RTarget":"2","Operand":"distinct_property"}],
		"Tasks":[{"Name":"t","Driver":"d","Constraints":[{"LTarget":"${attr.nomad.version}","RTarget":">= 1.6","Operand":"semver"}]}]}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	c := func(l, op, r string) *state.Constraint { return &state.Constraint{LTarget: l, Operand: op, RTarget: r} }
	if want := []*state.Constraint{c("${attr.kernel.name}", "=", "linux"), c("", "distinct_hosts", "")}; !reflect.DeepEqual(job.Constraints, want) {
		t.Errorf("job constraints %+v", job.Constraints)
	}
	if want := []*state.Constraint{c("${meta.rack}", "distinct_property", "2")}; !reflect.DeepEqual(job.TaskGroups[0].Constraints, want) {
		t.Errorf("group constraints %+v", job.TaskGroups[0].Constraints)
	}
	if want := []*state.Constraint{c("${attr.nomad.version}", "semver", ">= 1.6")}; !reflect.DeepEqual(job.TaskGroups[0].Tasks[0].Constraints, want) {
		t.Errorf("task constraints %+v", job.TaskGroups[0].Tasks[0].Constraints)
	}

	withJob := func(cons string) string {
		return `{"ID":"web","Constraints":[` + cons + `],"TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]}]}`
	}
	withTask := func(cons string) string {
		return `{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d","Constraints":[` + cons + `]}]}]}`
	}
	tg := "Task group g validation failed: "
	cases := []struct{ body, want string }{
		{withJob(`{"LTarget":"a","RTarget":"b"}`), "Constraint 1 validation failed: Missing constraint operand"},
		{withJob(`{"LTarget":"a","RTarget":"b","Operand":"~"}`), `Constraint 1 validation failed: Unknown constraint type "~"`},
		{withJob(`{"RTarget":"b","Operand":"="}`), "Constraint 1 validation failed: No LTarget provided but is required by constraint"},
		{withJob(`{"LTarget":"a","Operand":"="}`), `Constraint 1 validation failed: Operator "=" requires an RTarget`},
		{withJob(`{"LTarget":"a","Operand":"<="}`), `Constraint 1 validation failed: Operator "<=" requires an RTarget`},
		{withJob(`{"LTarget":"a","RTarget":"x","Operand":"is_set"}`), `Constraint 1 validation failed: Operator "is_set" does not support an RTarget`},
		{withJob(`{"LTarget":"a","Operand":"set_contains_any"}`), "Constraint 1 validation failed: Set contains constraint requires an RTarget"},
		{withJob(`{"LTarget":"a","RTarget":"(","Operand":"regexp"}`), "Constraint 1 validation failed: Regular expression failed to compile: error parsing regexp: missing closing ): `(`"},
		{withJob(`{"LTarget":"a","RTarget":"one","Operand":"version"}`), "Constraint 1 validation failed: Version constraint is invalid: Malformed constraint: one"},
		{withJob(`{"LTarget":"a","RTarget":"~> 1.2","Operand":"semver"}`), "Constraint 1 validation failed: Semver constraint is invalid: Malformed constraint: ~> 1.2"},
		{withJob(`{"LTarget":"a","RTarget":"two","Operand":"distinct_property"}`), `Constraint 1 validation failed: Failed to convert RTarget "two" to uint64: strconv.ParseUint: parsing "two": invalid syntax`},
		{withJob(`{"LTarget":"a","RTarget":"0","Operand":"distinct_property"}`), "Constraint 1 validation failed: Distinct Property must have an allowed count of 1 or greater: 0 < 1"},
		{withJob(`{"Operand":"distinct_hosts"},{"Operand":"="}`), "Constraint 2 validation failed: 2 errors occurred:\n\t* Operator \"=\" requires an RTarget\n\t* No LTarget provided but is required by constraint"},
		{withTask(`{"Operand":"distinct_hosts"}`), tg + "Task t validation failed: Constraint 1 has disallowed Operand at task level: distinct_hosts"},
		{withTask(`{"LTarget":"${meta.rack}","Operand":"distinct_property"}`), tg + "Task t validation failed: Constraint 1 has disallowed Operand at task level: distinct_property"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.body), "")
		if err == nil {
			t.Errorf("%s: accepted, want %q", c.body, c.want)
			continue
		}
		if se, ok := err.(*state.Error); !ok || se.Code != state.ErrInvalid || err.Error() != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.body, err.Error(), c.want)
		}
	}
}

// TestParseAffinities: affinities take Nomad's default weight 50 and are
// validated with Affinity.Validate's texts.
func TestParseAffinities(t *testing.T) {
	job, err := Parse([]byte(`{"ID":"web","Affinities":[{"LTarget":"${node.class}","RTarget":"big","Operand":"="}],
		"TaskGroups":[{"Name":"g","Affinities":[{"LTarget":"${meta.rack}","RTarget":"r1","Operand":"=","Weight":-20}],"Tasks":[{"Name":"t","Driver":"d"}]}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if a := job.Affinities; len(a) != 1 || *a[0] != (state.Affinity{LTarget: "${node.class}", RTarget: "big", Operand: "=", Weight: 50}) {
		t.Errorf("job affinities %+v", a)
	}
	if a := job.TaskGroups[0].Affinities; len(a) != 1 || a[0].Weight != -20 {
		t.Errorf("group affinities %+v", a)
	}
	body := func(a string) string {
		return `{"ID":"web","Affinities":[` + a + `],"TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]}]}`
	}
	cases := []struct{ body, want string }{
		{body(`{"LTarget":"a","RTarget":"b","Operand":"=","Weight":0}`), "Affinity 1 validation failed: Affinity weight cannot be zero"},
		{body(`{"LTarget":"a","RTarget":"b","Operand":"=","Weight":101}`), "Affinity 1 validation failed: Affinity weight must be within the range [-100,100]"},
		{body(`{"LTarget":"a","RTarget":"b","Operand":"distinct_hosts"}`), `Affinity 1 validation failed: Unknown affinity operator "distinct_hosts"`},
		{body(`{"RTarget":"b","Operand":"="}`), "Affinity 1 validation failed: No LTarget provided but is required"},
		{body(`{"LTarget":"a","Operand":"set_contains"}`), "Affinity 1 validation failed: Set contains operators require an RTarget"},
		{body(`{"LTarget":"a","RTarget":"x","Operand":"version"}`), "Affinity 1 validation failed: Version affinity is invalid: Malformed constraint: x"},
		{body(`{"LTarget":"a","RTarget":"b"}`), "Affinity 1 validation failed: Missing affinity operand"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.body), "")
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %q", c.body, err, c.want)
		}
	}
}

// TestParseSpreads: spreads take Nomad's default weight 50 and are
// validated with Spread.Validate's texts.
func TestParseSpreads(t *testing.T) {
	job, err := Parse([]byte(`{"ID":"web","Spreads":[{"Attribute":"${node.datacenter}","SpreadTarget":[{"Value":"dc1","Percent":70}]}],
		"TaskGroups":[{"Name":"g","Spreads":[{"Attribute":"${meta.rack}","Weight":100}],"Tasks":[{"Name":"t","Driver":"d"}]}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if s := job.Spreads; len(s) != 1 || s[0].Weight != 50 || len(s[0].SpreadTarget) != 1 || *s[0].SpreadTarget[0] != (state.SpreadTarget{Value: "dc1", Percent: 70}) {
		t.Errorf("job spreads %+v", s)
	}
	if s := job.TaskGroups[0].Spreads; len(s) != 1 || s[0].Weight != 100 || s[0].Attribute != "${meta.rack}" {
		t.Errorf("group spreads %+v", s)
	}
	body := func(s string) string {
		return `{"ID":"web","Spreads":[` + s + `],"TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]}]}`
	}
	cases := []struct{ body, want string }{
		{body(`{"Weight":10}`), "Spread 1 validation failed: Missing spread attribute"},
		{body(`{"Attribute":"a","Weight":-1}`), "Spread 1 validation failed: Spread stanza must have a positive weight from 0 to 100"},
		{body(`{"Attribute":"a","SpreadTarget":[{"Value":"x","Percent":10},{"Value":"x","Percent":10}]}`), `Spread 1 validation failed: Spread target value "x" already defined`},
		{body(`{"Attribute":"a","SpreadTarget":[{"Value":"x","Percent":101}]}`), "Spread 1 validation failed: 2 errors occurred:\n\t* Spread target percentage for value \"x\" must be between 0 and 100\n\t* Sum of spread target percentages must not be greater than 100%; got 101%"},
		{body(`{"Attribute":"a","SpreadTarget":[{"Value":"x","Percent":60},{"Value":"y","Percent":50}]}`), "Spread 1 validation failed: Sum of spread target percentages must not be greater than 100%; got 110%"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.body), "")
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %q", c.body, err, c.want)
		}
	}
}
