package http_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestNodeRegisterPorts: a client registers its dynamic port range and
// reserved ports; the node read answers them as Nomad's NodeResources and
// ReservedResources; bad ranges and ports are refused with a 400 saying
// what is wrong.
func TestNodeRegisterPorts(t *testing.T) {
	env := ntStart(t, time.Minute)
	c := env.client(t, "")
	reg := ntNode("ports")
	reg.MinDynamicPort, reg.MaxDynamicPort, reg.ReservedPorts = 30000, 30100, []int{22, 8080}
	ntRegister(t, c, reg)
	var n struct {
		NodeResources     struct{ MinDynamicPort, MaxDynamicPort int }
		ReservedResources struct {
			Networks struct{ ReservedHostPorts string }
		}
	}
	env.srv.Do(t, "GET", "/v1/node/"+reg.ID, "").JSON(t, &n)
	if n.NodeResources.MinDynamicPort != 30000 || n.NodeResources.MaxDynamicPort != 30100 || n.ReservedResources.Networks.ReservedHostPorts != "22,8080" {
		t.Fatalf("node read %+v", n)
	}
	plain := ntNode("plain")
	ntRegister(t, c, plain)
	env.srv.Do(t, "GET", "/v1/node/"+plain.ID, "").JSON(t, &n)
	if n.NodeResources.MinDynamicPort != 20000 || n.NodeResources.MaxDynamicPort != 32000 || n.ReservedResources.Networks.ReservedHostPorts != "" {
		t.Fatalf("default node read %+v", n)
	}

	for _, c2 := range []struct {
		min, max int
		reserved []int
		want     string
	}{
		{70000, 0, nil, "MinDynamicPort 70000 is out of range: ports are 1 to 65535 (0: Nomad's default)"},
		{0, 10000, nil, "MinDynamicPort 20000 is above MaxDynamicPort 10000"},
		{0, 0, []int{0}, "ReservedPorts: 0 is not a port (1 to 65535)"},
		{0, 0, make([]int, 1025), "ReservedPorts has 1025 ports: at most 1024 are allowed"},
	} {
		bad := ntNode("bad")
		bad.MinDynamicPort, bad.MaxDynamicPort, bad.ReservedPorts = c2.min, c2.max, c2.reserved
		_, err := c.RegisterNode(context.Background(), bad)
		if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), c2.want) {
			t.Errorf("%+v: %v, want 400 %q", c2, err, c2.want)
		}
	}
}
