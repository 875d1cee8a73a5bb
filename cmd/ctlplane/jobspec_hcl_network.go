package main

import (
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

var (
	hclNetworkFields = map[string]hclField{"mode": {"Mode", "string"}}
	hclPortFields    = map[string]hclField{"static": {"Value", "int"}, "to": {"To", "int"}, "host_network": {"HostNetwork", "string"}}
)

// hclNetwork converts a group's network block: a port with static goes to
// ReservedPorts, one without to DynamicPorts (as Nomad's parser does).
//
//	network {
//	  port "http" {}
//	  port "db" {
//	    static = 5432
//	    to     = 5432
//	  }
//	}
func hclNetwork(b *hclsyntax.Block) (map[string]any, error) {
	if err := noLabels(b); err != nil {
		return nil, err
	}
	n := map[string]any{}
	if err := hclAttrs(b.Body, hclNetworkFields, n); err != nil {
		return nil, err
	}
	reserved, dynamic := []any{}, []any{}
	for _, sub := range b.Body.Blocks {
		if sub.Type != "port" {
			return nil, hclErr(sub.TypeRange, "unsupported block %q in network", sub.Type)
		}
		label, err := oneLabel(sub)
		if err != nil {
			return nil, err
		}
		if len(sub.Body.Blocks) > 0 {
			return nil, hclErr(sub.Body.Blocks[0].TypeRange, "unsupported block %q in port %q", sub.Body.Blocks[0].Type, label)
		}
		p := map[string]any{"Label": label}
		if err := hclAttrs(sub.Body, hclPortFields, p); err != nil {
			return nil, err
		}
		if v, ok := p["Value"].(int64); ok && v != 0 {
			reserved = append(reserved, p)
		} else {
			dynamic = append(dynamic, p)
		}
	}
	n["ReservedPorts"], n["DynamicPorts"] = reserved, dynamic
	return n, nil
}
