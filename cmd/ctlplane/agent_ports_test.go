package main

import (
	"reflect"
	"testing"
)

// TestParseReservedPorts: Nomad's reserved_ports form, ports and ranges.
func TestParseReservedPorts(t *testing.T) {
	got, err := parseReservedPorts(" 22, 80,8000-8003 ,")
	if err != nil || !reflect.DeepEqual(got, []int{22, 80, 8000, 8001, 8002, 8003}) {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := parseReservedPorts(""); err != nil || got != nil {
		t.Fatalf("empty: %v %v", got, err)
	}
	for in, want := range map[string]string{
		"0":        `invalid -reserved-ports "0": "0" is not a port (1 to 65535) or a range of them`,
		"80-70":    `invalid -reserved-ports "80-70": "80-70" is not a port (1 to 65535) or a range of them`,
		"ssh":      `invalid -reserved-ports "ssh": "ssh" is not a port (1 to 65535) or a range of them`,
		"1-2000":   `invalid -reserved-ports "1-2000": at most 1024 ports`,
		"10-65536": `invalid -reserved-ports "10-65536": "10-65536" is not a port (1 to 65535) or a range of them`,
	} {
		if _, err := parseReservedPorts(in); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
