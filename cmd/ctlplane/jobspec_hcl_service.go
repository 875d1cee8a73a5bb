package main

import (
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

var (
	hclServiceFields = map[string]hclField{
		"name": {"Name", "string"}, "port": {"PortLabel", "string"}, "provider": {"Provider", "string"},
		"tags": {"Tags", "strings"}, "canary_tags": {"CanaryTags", "strings"}, "address_mode": {"AddressMode", "string"},
		"on_update": {"OnUpdate", "string"}, "task": {"TaskName", "string"},
	}
	hclCheckFields = map[string]hclField{
		"name": {"Name", "string"}, "type": {"Type", "string"}, "path": {"Path", "string"},
		"protocol": {"Protocol", "string"}, "method": {"Method", "string"}, "body": {"Body", "string"},
		"port": {"PortLabel", "string"}, "address_mode": {"AddressMode", "string"},
		"interval": {"Interval", "duration"}, "timeout": {"Timeout", "duration"},
		"on_update": {"OnUpdate", "string"}, "task": {"TaskName", "string"},
	}
	hclCheckRestartFields = map[string]hclField{
		"limit": {"Limit", "int"}, "grace": {"Grace", "duration"}, "ignore_warnings": {"IgnoreWarnings", "bool"},
	}
)

// appendService converts a group's or task's service block:
//
//	service {
//	  name     = "web"
//	  port     = "http"
//	  provider = "nomad"
//	  tags     = ["v1"]
//	  check {
//	    type     = "http"
//	    path     = "/"
//	    interval = "5s"
//	    timeout  = "2s"
//	    header { X-Probe = ["ctlplane"] }
//	    check_restart {
//	      limit = 3
//	      grace = "10s"
//	    }
//	  }
//	}
func appendService(into map[string]any, b *hclsyntax.Block) error {
	if err := noLabels(b); err != nil {
		return err
	}
	s := map[string]any{}
	if err := hclAttrs(b.Body, hclServiceFields, s); err != nil {
		return err
	}
	checks := []any{}
	for _, sub := range b.Body.Blocks {
		switch sub.Type {
		case "check":
			c, err := hclCheck(sub)
			if err != nil {
				return err
			}
			checks = append(checks, c)
		case "check_restart":
			cr, err := hclSimpleBlock(sub, hclCheckRestartFields)
			if err != nil {
				return err
			}
			s["CheckRestart"] = cr
		default:
			return hclErr(sub.TypeRange, "unsupported block %q in service (connect, meta and the other Consul blocks are not supported)", sub.Type)
		}
	}
	if len(checks) > 0 {
		s["Checks"] = checks
	}
	list, _ := into["Services"].([]any)
	into["Services"] = append(list, s)
	return nil
}

func hclCheck(b *hclsyntax.Block) (map[string]any, error) {
	if err := noLabels(b); err != nil {
		return nil, err
	}
	c := map[string]any{}
	if err := hclAttrs(b.Body, hclCheckFields, c); err != nil {
		return nil, err
	}
	for _, sub := range b.Body.Blocks {
		switch sub.Type {
		case "check_restart":
			cr, err := hclSimpleBlock(sub, hclCheckRestartFields)
			if err != nil {
				return nil, err
			}
			c["CheckRestart"] = cr
		case "header":
			if err := noLabels(sub); err != nil {
				return nil, err
			}
			h := map[string]any{}
			for _, a := range sub.Body.Attributes {
				v, err := hclValue(a)
				if err != nil {
					return nil, err
				}
				if h[a.Name], err = hclKind(a, "strings", v); err != nil {
					return nil, err
				}
			}
			c["Header"] = h
		default:
			return nil, hclErr(sub.TypeRange, "unsupported block %q in check", sub.Type)
		}
	}
	return c, nil
}
