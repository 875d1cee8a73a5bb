package jobs

import (
	"reflect"
	"testing"

	"github.com/ctlplane/ctlplane/state"
)

// TestParseNetworks: a group's network block in Nomad's JSON becomes the
// canonical network (host mode, default host network, dynamic ports
// without a value), and bad blocks are refused with Nomad's texts.
func TestParseNetworks(t *testing.T) {
	group := func(networks string) string {
		return `{"ID":"web","TaskGroups":[{"Name":"g","Networks":` + networks + `,"Tasks":[{"Name":"t","Driver":"raw_exec"}]}]}`
	}
	job, err := Parse([]byte(group(`[{"Mode":"","MBits":10,"Device":"","IP":"","CIDR":"","DNS":null,`+
		`"DynamicPorts":[{"Label":"http","Value":0,"To":0,"HostNetwork":"","IgnoreCollision":false},{"Label":"grpc","Value":12345,"To":-1}],`+
		`"ReservedPorts":[{"Label":"db","Value":5432,"To":5432,"HostNetwork":"default"}]}]`)), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []*state.NetworkResource{{Mode: "host",
		ReservedPorts: []state.Port{{Label: "db", Value: 5432, To: 5432, HostNetwork: "default"}},
		DynamicPorts:  []state.Port{{Label: "http", HostNetwork: "default"}, {Label: "grpc", To: -1, HostNetwork: "default"}},
	}}
	if got := job.TaskGroups[0].Networks; !reflect.DeepEqual(got, want) {
		t.Fatalf("networks %+v", got[0])
	}

	tg := "Task group g validation failed: "
	refused := []struct{ networks, want string }{
		{`[{"DynamicPorts":[{"Label":"http"},{"Label":"http"}]}]`, tg + "Port label http already in use"},
		{`[{"ReservedPorts":[{"Label":"http","Value":80}],"DynamicPorts":[{"Label":"http"}]}]`, tg + "Port label http already in use"},
		{`[{"ReservedPorts":[{"Label":"a","Value":80},{"Label":"b","Value":80}]}]`, tg + "Static port 80 already reserved by taskgroup network:a"},
		{`[{"ReservedPorts":[{"Label":"a","Value":70000}]}]`, tg + "Port a (70000) cannot be greater than 65535"},
		{`[{"ReservedPorts":[{"Label":"a","Value":0}]}]`, tg + "Port a has static value 0: it must be between 1 and 65535"},
		{`[{"DynamicPorts":[{"Label":"a","To":-2}]}]`, tg + `Port "a" cannot be mapped to negative value -2`},
		{`[{"DynamicPorts":[{"Label":"a","To":65536}]}]`, tg + `Port "a" cannot be mapped to a port (65536) greater than 65535`},
		{`[{"DynamicPorts":[{"Label":""}]}]`, tg + "Port label must not be empty"},
		{`[{},{}]`, tg + "Only one network resource is currently supported, found 2"},
		{`[{"Mode":"bridge"}]`, tg + `Network mode "bridge" is not supported: ctlplane runs tasks in host mode`},
		{`[{"DynamicPorts":[{"Label":"a","HostNetwork":"public"}]}]`, tg + `Port "a": host_network "public" is not supported (only the default host network)`},
	}
	for _, c := range refused {
		_, err := Parse([]byte(group(c.networks)), "")
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: got %v, want %q", c.networks, err, c.want)
		}
	}
}
