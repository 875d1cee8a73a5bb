// Package wireparity holds the test that api/'s wire types agree with the
// state types the servers encode. api/ may never import state (api's
// TestNoStateImports), so the two are kept as two definitions and this
// test-only package, which imports both, holds them together.
package wireparity

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ctlplane/ctlplane/api"
	"github.com/ctlplane/ctlplane/state"
)

// roots are the mirrored types the walk starts from; every struct reached
// from them through fields of the same name is compared too (nested pairs
// such as TaskGroup, Task, DeploymentState are found that way).
var roots = []struct{ api, state any }{
	{api.Job{}, state.Job{}},
	{api.Allocation{}, state.Allocation{}},
	{api.Deployment{}, state.Deployment{}},
	{api.DeploymentEvent{}, state.DeploymentEvent{}},
	{api.Evaluation{}, state.Evaluation{}},
	{api.Node{}, state.Node{}},
	{api.DrainSpec{}, state.DrainSpec{}},
	{api.ServiceRegistration{}, state.ServiceRegistration{}},
	{api.Namespace{}, state.Namespace{}},
	{api.ACLPolicy{}, state.ACLPolicy{}},
	{api.ACLRole{}, state.ACLRole{}},
	{api.ACLToken{}, state.ACLToken{}},
	{api.ACLAuthMethod{}, state.ACLAuthMethod{}},
	{api.BindingRule{}, state.BindingRule{}},
	{api.PlanAnnotations{}, state.PlanAnnotations{}},
	// api's NetworkResource is read from GET /v1/allocation/:id's
	// AllocatedResources, state's is a group's network block: not reached
	// through the same field, so compared as a root.
	{api.NetworkResource{}, state.NetworkResource{}},
	{api.ClientAlloc{}, state.ClientAlloc{}},
	{api.ClientAllocChanges{}, state.ClientAllocChanges{}},
	{api.AllocClientUpdate{}, state.AllocClientUpdate{}},
}

// notMirrored are the types both packages name alike that are not the
// same thing on the wire.
var notMirrored = map[string]string{
	"Error": "api.Error is an HTTP answer's status and message; state.Error is a write's error code, never encoded",
}

// exception is a known, intended difference of one field, keyed by the
// api type's name, the field's Go name and what differs.
type exception struct{ typ, field, what string }

// Kinds of difference (the "what" of an exception).
const (
	onlyInState  = "only in state"
	onlyInAPI    = "only in api"
	jsonName     = "json name"
	jsonOmit     = "json omitempty"
	codecName    = "codec name"
	typeMismatch = "type"
)

// exceptions list every intended difference with its reason. An exception
// the walk does not meet fails the test too, so the list stays true.
var exceptions = map[exception]string{
	// Request-side defaults: api leaves zero values out so that the servers
	// apply Nomad's defaults, as Nomad's client does (api/jobs.go).
	{"Job", "Name", jsonOmit}:                       apiDefaults,
	{"Job", "Type", jsonOmit}:                       apiDefaults,
	{"Job", "Priority", jsonOmit}:                   apiDefaults,
	{"Job", "NodePool", jsonOmit}:                   apiDefaults,
	{"UpdateStrategy", "Stagger", jsonOmit}:         apiDefaults,
	{"UpdateStrategy", "HealthCheck", jsonOmit}:     apiDefaults,
	{"UpdateStrategy", "HealthyDeadline", jsonOmit}: apiDefaults,
	{"RestartPolicy", "Mode", jsonOmit}:             apiDefaults,
	{"TaskGroup", "MaxClientDisconnect", jsonOmit}:  "api leaves an unset disconnect timeout out rather than sending null; the servers read both as unset",
	{"Namespace", "Meta", jsonOmit}:                 "api leaves empty meta out of a namespace write; the servers read it as none",

	// Fields api's client does not send or read yet (the servers accept
	// and answer them in Nomad's JSON; RegisterJobJSON keeps them).
	{"Job", "Constraints", onlyInState}:                 apiSubset,
	{"Job", "Affinities", onlyInState}:                  apiSubset,
	{"Job", "Spreads", onlyInState}:                     apiSubset,
	{"TaskGroup", "Constraints", onlyInState}:           apiSubset,
	{"TaskGroup", "Affinities", onlyInState}:            apiSubset,
	{"TaskGroup", "Spreads", onlyInState}:               apiSubset,
	{"TaskGroup", "Migrate", onlyInState}:               apiSubset,
	{"TaskGroup", "Networks", onlyInState}:              apiSubset,
	{"Task", "Constraints", onlyInState}:                apiSubset,
	{"Task", "Affinities", onlyInState}:                 apiSubset,
	{"Evaluation", "ClassEligibility", onlyInState}:     apiSubset,
	{"Evaluation", "EscapedComputedClass", onlyInState}: apiSubset,
	{"Evaluation", "SnapshotIndex", onlyInState}:        apiSubset,

	// http turns these into another shape before they go out.
	{"Evaluation", "WaitUntil", typeMismatch}:       "http/evals.go's evalView sends state's Unix nanoseconds as a time, as Nomad does",
	{"NetworkResource", "IP", onlyInAPI}:            "http/allocs_detail.go fills it from the allocation's host ports; a group's network block has no IP",
	{"Allocation", "AllocatedResources", onlyInAPI}: "http/allocs_detail.go builds it from the allocation's ports and its group's network",
	{"Allocation", "AllocatedPorts", jsonOmit}:      "api leaves it out when empty; absent, null and [] decode alike into a Go slice",
	{"Allocation", "AllocStates", jsonOmit}:         "api leaves it out when empty; absent, null and [] decode alike into a Go slice",
	{"AllocClientUpdate", "CheckResults", jsonOmit}: "the client leaves it out when it has no check results; the servers read both as none",

	// Server-side bookkeeping that is never sent to a client.
	{"Node", "SecretID", onlyInState}:            "the node's secret: http/nodes.go blanks it; a node learns it once, from NodeRegisterResponse",
	{"Node", "MinDynamicPort", onlyInState}:      nodePorts,
	{"Node", "MaxDynamicPort", onlyInState}:      nodePorts,
	{"Node", "ReservedPorts", onlyInState}:       nodePorts,
	{"ClientAllocChanges", "Index", onlyInState}: "http/client_protocol.go sends the index in the X-Nomad-Index header, not in the body",
}

const (
	nodePorts   = "a node sends it in api.NodeRegistration; http/nodes_detail.go answers it in Nomad's NodeResources shape, which api.Node does not read"
	apiDefaults = "api leaves the zero value out so that the servers apply Nomad's default"
	apiSubset   = "the servers accept and answer it; api's Go client has no use for it yet"
)

// wireTag is how one encoding (key "json" or "codec") names a field.
type wireTag struct {
	name string
	omit bool
	skip bool
}

// tagOf reads the field's tag the way encoding/json (key "json") or
// go-msgpack (key "codec", falling back to "json") does.
func tagOf(f reflect.StructField, key string) wireTag {
	tag, ok := f.Tag.Lookup(key)
	if !ok && key == "codec" {
		tag, ok = f.Tag.Lookup("json")
	}
	if !ok {
		return wireTag{name: f.Name}
	}
	if tag == "-" {
		return wireTag{skip: true}
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	omit := false
	for _, o := range strings.Split(opts, ",") {
		omit = omit || o == "omitempty"
	}
	return wireTag{name: name, omit: omit}
}

// onWire: the field is encoded by at least one of the two encodings.
func onWire(f reflect.StructField) bool {
	return f.IsExported() && !(tagOf(f, "json").skip && tagOf(f, "codec").skip)
}

type walker struct {
	seen  map[[2]reflect.Type]bool
	used  map[exception]bool
	drift []string
	// pairs are the named struct pairs compared, api name → state name.
	pairs map[string]string
}

func (w *walker) differ(typ, field, what, path, detail string) {
	key := exception{typ, field, what}
	if _, ok := exceptions[key]; ok {
		w.used[key] = true
		return
	}
	w.drift = append(w.drift, fmt.Sprintf("%s: %s differs: %s", path, what, detail))
}

// ours says whether t is declared by api or state (a type the walk pairs
// field by field); any other named type must be the same on both sides.
func ours(t reflect.Type) bool {
	p := t.PkgPath()
	return strings.HasSuffix(p, "/ctlplane/api") || strings.HasSuffix(p, "/ctlplane/state")
}

// walk compares a (api's) with s (state's) at path.
func (w *walker) walk(path string, a, s reflect.Type, typ, field string) {
	if a == s {
		return
	}
	if a.Kind() != s.Kind() {
		w.differ(typ, field, typeMismatch, path, fmt.Sprintf("api %s, state %s", a, s))
		return
	}
	switch a.Kind() {
	case reflect.Pointer:
		w.walk(path, a.Elem(), s.Elem(), typ, field)
	case reflect.Slice, reflect.Array:
		w.walk(path+"[]", a.Elem(), s.Elem(), typ, field)
	case reflect.Map:
		w.walk(path+"{key}", a.Key(), s.Key(), typ, field)
		w.walk(path+"{}", a.Elem(), s.Elem(), typ, field)
	case reflect.Struct:
		if !ours(a) || !ours(s) {
			w.differ(typ, field, typeMismatch, path, fmt.Sprintf("api %s, state %s", a, s))
			return
		}
		w.walkStruct(path, a, s)
	case reflect.Interface:
		if a.NumMethod() != 0 || s.NumMethod() != 0 {
			w.differ(typ, field, typeMismatch, path, fmt.Sprintf("api %s, state %s", a, s))
		}
	default:
		// Same basic kind (e.g. time.Duration and int64): the same on both wires.
	}
}

func (w *walker) walkStruct(path string, a, s reflect.Type) {
	key := [2]reflect.Type{a, s}
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	w.pairs[a.Name()] = s.Name()
	typ := a.Name()
	for i := 0; i < a.NumField(); i++ {
		af := a.Field(i)
		if !onWire(af) {
			continue
		}
		fpath := path + "." + af.Name
		sf, ok := s.FieldByName(af.Name)
		if !ok || !onWire(sf) {
			w.differ(typ, af.Name, onlyInAPI, fpath, "state has no such field on the wire")
			continue
		}
		if af.Anonymous != sf.Anonymous {
			w.differ(typ, af.Name, typeMismatch, fpath, "embedded on one side only (JSON flattens an embedded struct)")
		}
		aj, sj := tagOf(af, "json"), tagOf(sf, "json")
		if aj.skip != sj.skip || aj.name != sj.name {
			w.differ(typ, af.Name, jsonName, fpath, fmt.Sprintf("api %+v, state %+v", aj, sj))
		}
		if aj.omit != sj.omit {
			w.differ(typ, af.Name, jsonOmit, fpath, fmt.Sprintf("api %v, state %v", aj.omit, sj.omit))
		}
		// Msgpack's omitempty is not compared: the state types' codec tags
		// shape the Raft log, and a Go decoder reads an omitted field as
		// its zero value, so it never changes what the other side gets.
		ac, sc := tagOf(af, "codec"), tagOf(sf, "codec")
		if ac.skip != sc.skip || ac.name != sc.name {
			w.differ(typ, af.Name, codecName, fpath, fmt.Sprintf("api %+v, state %+v", ac, sc))
		}
		w.walk(fpath, af.Type, sf.Type, typ, af.Name)
	}
	for i := 0; i < s.NumField(); i++ {
		sf := s.Field(i)
		if !onWire(sf) {
			continue
		}
		if af, ok := a.FieldByName(sf.Name); !ok || !onWire(af) {
			w.differ(typ, sf.Name, onlyInState, path+"."+sf.Name, "api has no such field")
		}
	}
}

// TestWireTypesMatchState walks every mirrored api/state type pair and
// fails naming the path of each field whose name, JSON or msgpack name,
// omitempty or type differs, unless exceptions lists it with its reason.
func TestWireTypesMatchState(t *testing.T) {
	w := &walker{seen: map[[2]reflect.Type]bool{}, used: map[exception]bool{}, pairs: map[string]string{}}
	for _, r := range roots {
		a, s := reflect.TypeOf(r.api), reflect.TypeOf(r.state)
		w.walkStruct(a.Name(), a, s)
	}
	sort.Strings(w.drift)
	for _, d := range w.drift {
		t.Error(d)
	}
	var stale []string
	for e := range exceptions {
		if !w.used[e] {
			stale = append(stale, fmt.Sprintf("%s.%s (%s)", e.typ, e.field, e.what))
		}
	}
	sort.Strings(stale)
	for _, e := range stale {
		t.Errorf("exception %s no longer differs: remove it", e)
	}

	// Every type both packages declare must be reached as a pair (or be
	// listed as not mirrored), so a new mirrored type cannot be missed.
	apiTypes, stateTypes := structTypes(t, "../../api"), structTypes(t, "../../state")
	for name := range apiTypes {
		if !stateTypes[name] {
			continue
		}
		if _, ok := notMirrored[name]; ok {
			continue
		}
		if w.pairs[name] != name {
			t.Errorf("api.%s and state.%s are not compared: add them to roots (or to notMirrored with the reason)", name, name)
		}
	}
	for name := range notMirrored {
		if !apiTypes[name] || !stateTypes[name] {
			t.Errorf("notMirrored lists %s, which is no longer declared by both api and state", name)
		}
	}
}

// structTypes lists the exported struct types declared in dir (tests aside).
func structTypes(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, sp := range g.Specs {
				ts := sp.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() && ts.Assign == 0 {
					out[ts.Name.Name] = true
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no struct types found in %s", dir)
	}
	return out
}
