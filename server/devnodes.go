package server

import (
	"fmt"
	"strconv"
	"strings"
)

// DevNodeGroup is a set of simulated client nodes that look alike: so a
// dev agent (or a test) can build a heterogeneous fleet. Count nodes are
// started, named <agent>-<Name>-<i>.
type DevNodeGroup struct {
	Name       string
	Count      int
	Datacenter string // the agent's when empty
	NodeClass  string
	NodePool   string
	Meta       map[string]string
	// Attributes override or add to the simulated fingerprint.
	Attributes map[string]string
	// CPU (MHz) and MemoryMB of each node; 0: the dev node default.
	CPU      int
	MemoryMB int
}

// ParseDevNodeGroup reads the -dev-node-group flag's form:
// comma-separated key=value pairs, keys count, name, dc, class, pool, cpu,
// memory, meta.<key> and attr.<key>; e.g.
// "count=2,class=gpu,dc=dc2,meta.rack=r1,attr.kernel.name=windows".
func ParseDevNodeGroup(s string) (DevNodeGroup, error) {
	g := DevNodeGroup{Count: 1}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return g, fmt.Errorf("invalid dev node group %q: %q is not key=value", s, kv)
		}
		var err error
		switch {
		case k == "count":
			g.Count, err = strconv.Atoi(v)
			if err == nil && (g.Count < 0 || g.Count > 10000) {
				err = fmt.Errorf("must be 0 to 10000")
			}
		case k == "cpu":
			g.CPU, err = strconv.Atoi(v)
		case k == "memory":
			g.MemoryMB, err = strconv.Atoi(v)
		case k == "name":
			g.Name = v
		case k == "dc":
			g.Datacenter = v
		case k == "class":
			g.NodeClass = v
		case k == "pool":
			g.NodePool = v
			if v == "all" {
				err = fmt.Errorf(`node is not allowed to register in node pool "all"`)
			}
		case strings.HasPrefix(k, "meta.") && len(k) > len("meta."):
			if g.Meta == nil {
				g.Meta = map[string]string{}
			}
			g.Meta[strings.TrimPrefix(k, "meta.")] = v
		case strings.HasPrefix(k, "attr.") && len(k) > len("attr."):
			if g.Attributes == nil {
				g.Attributes = map[string]string{}
			}
			g.Attributes[strings.TrimPrefix(k, "attr.")] = v
		default:
			return g, fmt.Errorf("invalid dev node group %q: unknown key %q (want count, name, dc, class, pool, cpu, memory, meta.<key>, attr.<key>)", s, k)
		}
		if err != nil {
			return g, fmt.Errorf("invalid dev node group %q: %s: %v", s, k, err)
		}
	}
	return g, nil
}
