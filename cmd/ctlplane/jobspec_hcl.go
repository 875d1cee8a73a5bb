package main

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Nomad's HCL2 job syntax, for the fields ctlplane supports, converted to
// the JSON job (Go field names, durations in nanoseconds):
//
//	job "web" {
//	  datacenters = ["dc1"]
//	  update { max_parallel = 1  canary = 1  auto_revert = true }
//	  group "app" {
//	    count = 3
//	    network {
//	      port "http" {}
//	      port "db" {
//	        static = 5432
//	        to     = 5432
//	      }
//	    }
//	    restart { attempts = 2  interval = "30m"  delay = "15s"  mode = "fail" }
//	    reschedule { attempts = 3  interval = "1h"  delay = "30s"  delay_function = "constant"  unlimited = false }
//	    migrate { max_parallel = 2  health_check = "checks"  min_healthy_time = "10s"  healthy_deadline = "5m" }
//	    task "srv" {
//	      driver = "raw_exec"
//	      config { command = "/bin/sleep"  args = ["3600"] }
//	      env { GREETING = "hi" }
//	      resources { cpu = 100  memory = 64 }
//	      constraint { attribute = "${attr.kernel.name}"  value = "linux" }
//	    }
//	  }
//	}
//
// Variables, functions and other blocks are refused with their position.

// hclField is one attribute of a block: its JSON name and kind.
type hclField struct {
	name string
	kind string // string, int, bool, duration, strings, map (string map), any
}

var (
	hclJobFields = map[string]hclField{
		"name": {"Name", "string"}, "type": {"Type", "string"}, "priority": {"Priority", "int"},
		"datacenters": {"Datacenters", "strings"}, "namespace": {"Namespace", "string"}, "region": {"Region", "string"},
		"node_pool": {"NodePool", "string"},
	}
	hclUpdateFields = map[string]hclField{
		"max_parallel": {"MaxParallel", "int"}, "health_check": {"HealthCheck", "string"},
		"min_healthy_time": {"MinHealthyTime", "duration"}, "healthy_deadline": {"HealthyDeadline", "duration"},
		"progress_deadline": {"ProgressDeadline", "duration"}, "auto_revert": {"AutoRevert", "bool"},
		"auto_promote": {"AutoPromote", "bool"}, "canary": {"Canary", "int"}, "stagger": {"Stagger", "duration"},
	}
	hclGroupFields   = map[string]hclField{"count": {"Count", "int"}, "max_client_disconnect": {"MaxClientDisconnect", "duration"}}
	hclRestartFields = map[string]hclField{
		"attempts": {"Attempts", "int"}, "interval": {"Interval", "duration"}, "delay": {"Delay", "duration"}, "mode": {"Mode", "string"},
	}
	hclRescheduleFields = map[string]hclField{
		"attempts": {"Attempts", "int"}, "interval": {"Interval", "duration"}, "delay": {"Delay", "duration"},
		"delay_function": {"DelayFunction", "string"}, "max_delay": {"MaxDelay", "duration"}, "unlimited": {"Unlimited", "bool"},
	}
	hclMigrateFields = map[string]hclField{
		"max_parallel": {"MaxParallel", "int"}, "health_check": {"HealthCheck", "string"},
		"min_healthy_time": {"MinHealthyTime", "duration"}, "healthy_deadline": {"HealthyDeadline", "duration"},
	}
	hclTaskFields = map[string]hclField{
		"driver": {"Driver", "string"}, "kill_timeout": {"KillTimeout", "duration"}, "kill_signal": {"KillSignal", "string"},
	}
	hclResourceFields = map[string]hclField{"cpu": {"CPU", "int"}, "memory": {"MemoryMB", "int"}}
)

// parseHCLJob converts an HCL2 job file to the JSON job object.
func parseHCLJob(filename string, src []byte) (map[string]any, error) {
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return nil, fmt.Errorf("Error parsing job file %s: %s", filename, diags.Error())
	}
	body := f.Body.(*hclsyntax.Body)
	keepRuntimeInterpolations(body, src)
	if len(body.Attributes) > 0 {
		for _, a := range body.Attributes {
			return nil, hclErr(a.SrcRange, "unsupported top-level attribute %q: only a job block is supported", a.Name)
		}
	}
	var job map[string]any
	for _, b := range body.Blocks {
		if b.Type != "job" {
			return nil, hclErr(b.TypeRange, "unsupported block %q: only job is supported (variables and locals are not)", b.Type)
		}
		if job != nil {
			return nil, hclErr(b.TypeRange, "only one job block is allowed")
		}
		var err error
		if job, err = hclJob(b); err != nil {
			return nil, err
		}
	}
	if job == nil {
		return nil, fmt.Errorf("Error parsing job file %s: no job block", filename)
	}
	return job, nil
}

func hclErr(r hcl.Range, format string, args ...any) error {
	return fmt.Errorf("%s: %s", r.String(), fmt.Sprintf(format, args...))
}

func oneLabel(b *hclsyntax.Block) (string, error) {
	if len(b.Labels) != 1 || b.Labels[0] == "" {
		return "", hclErr(b.TypeRange, "a %s block needs one name label, e.g. %s \"name\" { ... }", b.Type, b.Type)
	}
	return b.Labels[0], nil
}

func noLabels(b *hclsyntax.Block) error {
	if len(b.Labels) != 0 {
		return hclErr(b.TypeRange, "a %s block takes no label", b.Type)
	}
	return nil
}

func hclJob(b *hclsyntax.Block) (map[string]any, error) {
	id, err := oneLabel(b)
	if err != nil {
		return nil, err
	}
	job := map[string]any{"ID": id, "Name": id}
	if err := hclAttrs(b.Body, hclJobFields, job); err != nil {
		return nil, err
	}
	var groups []any
	for _, sub := range b.Body.Blocks {
		switch sub.Type {
		case "update":
			if job["Update"], err = hclSimpleBlock(sub, hclUpdateFields); err != nil {
				return nil, err
			}
		case "reschedule":
			if job["Reschedule"], err = hclSimpleBlock(sub, hclRescheduleFields); err != nil {
				return nil, err
			}
		case "migrate":
			if job["Migrate"], err = hclSimpleBlock(sub, hclMigrateFields); err != nil {
				return nil, err
			}
		case "meta":
			if job["Meta"], err = hclMap(sub); err != nil {
				return nil, err
			}
		case "constraint":
			if err := appendConstraint(job, sub); err != nil {
				return nil, err
			}
		case "affinity":
			if err := appendAffinity(job, sub); err != nil {
				return nil, err
			}
		case "spread":
			if err := appendSpread(job, sub); err != nil {
				return nil, err
			}
		case "group":
			g, err := hclGroup(sub)
			if err != nil {
				return nil, err
			}
			groups = append(groups, g)
		default:
			return nil, hclErr(sub.TypeRange, "unsupported block %q in job", sub.Type)
		}
	}
	job["TaskGroups"] = groups
	return job, nil
}

func hclGroup(b *hclsyntax.Block) (map[string]any, error) {
	name, err := oneLabel(b)
	if err != nil {
		return nil, err
	}
	g := map[string]any{"Name": name}
	if err := hclAttrs(b.Body, hclGroupFields, g); err != nil {
		return nil, err
	}
	var tasks []any
	for _, sub := range b.Body.Blocks {
		switch sub.Type {
		case "update":
			if g["Update"], err = hclSimpleBlock(sub, hclUpdateFields); err != nil {
				return nil, err
			}
		case "restart":
			if g["RestartPolicy"], err = hclSimpleBlock(sub, hclRestartFields); err != nil {
				return nil, err
			}
		case "reschedule":
			if g["ReschedulePolicy"], err = hclSimpleBlock(sub, hclRescheduleFields); err != nil {
				return nil, err
			}
		case "migrate":
			if g["Migrate"], err = hclSimpleBlock(sub, hclMigrateFields); err != nil {
				return nil, err
			}
		case "meta":
			if g["Meta"], err = hclMap(sub); err != nil {
				return nil, err
			}
		case "constraint":
			if err := appendConstraint(g, sub); err != nil {
				return nil, err
			}
		case "affinity":
			if err := appendAffinity(g, sub); err != nil {
				return nil, err
			}
		case "spread":
			if err := appendSpread(g, sub); err != nil {
				return nil, err
			}
		case "service":
			if err := appendService(g, sub); err != nil {
				return nil, err
			}
		case "network":
			n, err := hclNetwork(sub)
			if err != nil {
				return nil, err
			}
			nets, _ := g["Networks"].([]any)
			g["Networks"] = append(nets, n)
		case "task":
			t, err := hclTask(sub)
			if err != nil {
				return nil, err
			}
			tasks = append(tasks, t)
		default:
			return nil, hclErr(sub.TypeRange, "unsupported block %q in group %q", sub.Type, name)
		}
	}
	g["Tasks"] = tasks
	return g, nil
}

func hclTask(b *hclsyntax.Block) (map[string]any, error) {
	name, err := oneLabel(b)
	if err != nil {
		return nil, err
	}
	t := map[string]any{"Name": name}
	if err := hclAttrs(b.Body, hclTaskFields, t); err != nil {
		return nil, err
	}
	for _, sub := range b.Body.Blocks {
		switch sub.Type {
		case "config":
			if err := noLabels(sub); err != nil {
				return nil, err
			}
			if len(sub.Body.Blocks) > 0 {
				return nil, hclErr(sub.Body.Blocks[0].TypeRange, "nested blocks in a task's config are not supported")
			}
			cfg := map[string]any{}
			for _, a := range sub.Body.Attributes {
				v, err := hclValue(a)
				if err != nil {
					return nil, err
				}
				cfg[a.Name] = v
			}
			t["Config"] = cfg
		case "env":
			if t["Env"], err = hclMap(sub); err != nil {
				return nil, err
			}
		case "meta":
			if t["Meta"], err = hclMap(sub); err != nil {
				return nil, err
			}
		case "constraint":
			if err := appendConstraint(t, sub); err != nil {
				return nil, err
			}
		case "affinity":
			if err := appendAffinity(t, sub); err != nil {
				return nil, err
			}
		case "resources":
			if t["Resources"], err = hclSimpleBlock(sub, hclResourceFields); err != nil {
				return nil, err
			}
		case "service":
			if err := appendService(t, sub); err != nil {
				return nil, err
			}
		default:
			return nil, hclErr(sub.TypeRange, "unsupported block %q in task %q", sub.Type, name)
		}
	}
	return t, nil
}

// hclSimpleBlock converts a block of attributes only.
func hclSimpleBlock(b *hclsyntax.Block, fields map[string]hclField) (map[string]any, error) {
	if err := noLabels(b); err != nil {
		return nil, err
	}
	if len(b.Body.Blocks) > 0 {
		return nil, hclErr(b.Body.Blocks[0].TypeRange, "unsupported block %q in %s", b.Body.Blocks[0].Type, b.Type)
	}
	out := map[string]any{}
	return out, hclAttrs(b.Body, fields, out)
}

// hclMap converts a block of string attributes (env, meta).
func hclMap(b *hclsyntax.Block) (map[string]any, error) {
	if err := noLabels(b); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, a := range b.Body.Attributes {
		v, err := hclValue(a)
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case string:
			out[a.Name] = x
		case int64, float64, bool:
			out[a.Name] = fmt.Sprint(x)
		default:
			return nil, hclErr(a.SrcRange, "%s.%s: a string is needed", b.Type, a.Name)
		}
	}
	return out, nil
}

// hclAttrs converts a body's attributes by fields, refusing unknown ones.
func hclAttrs(body *hclsyntax.Body, fields map[string]hclField, out map[string]any) error {
	names := make([]string, 0, len(body.Attributes))
	for n := range body.Attributes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := body.Attributes[n]
		f, ok := fields[n]
		if !ok {
			return hclErr(a.NameRange, "unsupported argument %q", n)
		}
		v, err := hclValue(a)
		if err != nil {
			return err
		}
		if out[f.name], err = hclKind(a, f.kind, v); err != nil {
			return err
		}
	}
	return nil
}

func hclKind(a *hclsyntax.Attribute, kind string, v any) (any, error) {
	bad := func(what string) (any, error) { return nil, hclErr(a.SrcRange, "%s: %s is needed", a.Name, what) }
	switch kind {
	case "string":
		if s, ok := v.(string); ok {
			return s, nil
		}
		return bad("a string")
	case "int":
		if n, ok := v.(int64); ok {
			return n, nil
		}
		return bad("an integer")
	case "bool":
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return bad("true or false")
	case "duration":
		switch x := v.(type) {
		case string:
			d, err := time.ParseDuration(x)
			if err != nil {
				return bad(`a duration such as "10s"`)
			}
			return int64(d), nil
		case int64:
			return x, nil
		}
		return bad(`a duration such as "10s"`)
	case "strings":
		list, ok := v.([]any)
		if !ok {
			return bad("a list of strings")
		}
		for _, e := range list {
			if _, ok := e.(string); !ok {
				return bad("a list of strings")
			}
		}
		return list, nil
	}
	return v, nil
}

// hclValue evaluates an attribute (constants only) to a JSON-able value.
func hclValue(a *hclsyntax.Attribute) (any, error) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s", strings.TrimSpace(diags.Error()))
	}
	return ctyToGo(a, v)
}

func ctyToGo(a *hclsyntax.Attribute, v cty.Value) (any, error) {
	if v.IsNull() {
		return nil, nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString(), nil
	case t == cty.Bool:
		return v.True(), nil
	case t == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			n, acc := bf.Int64()
			if acc == big.Exact {
				return n, nil
			}
		}
		f, _ := bf.Float64()
		return f, nil
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		out := []any{}
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			g, err := ctyToGo(a, e)
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		}
		return out, nil
	case t.IsMapType() || t.IsObjectType():
		out := map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			g, err := ctyToGo(a, e)
			if err != nil {
				return nil, err
			}
			out[k.AsString()] = g
		}
		return out, nil
	}
	return nil, hclErr(a.SrcRange, "%s: unsupported value of type %s", a.Name, t.FriendlyName())
}
