package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"time"
)

// The wire form of a job: Nomad's JSON job format (the api.Job shape of
// github.com/hashicorp/nomad/api, Go field names, durations in ns). Pointers
// tell "not given" from "given as zero", which the defaults and the
// job-to-group update merge depend on.
//
// Every field Nomad's structs have is a known field, so that the official
// client's bodies (full of nulls and zero values) decode. Fields ctlplane
// does not implement are Unsupported: accepted only when empty. Read-only
// fields (status, version, indexes) are ReadOnly: accepted and ignored.

// Unsupported holds a field Nomad has and ctlplane does not implement.
type Unsupported json.RawMessage

// UnmarshalJSON keeps the raw value for the emptiness check.
func (u *Unsupported) UnmarshalJSON(b []byte) error {
	*u = append((*u)[:0], b...)
	return nil
}

// ReadOnly holds a field the server sets (status, version, indexes): ignored.
type ReadOnly json.RawMessage

// UnmarshalJSON accepts any value.
func (r *ReadOnly) UnmarshalJSON(b []byte) error { return nil }

// JobSpec is a job as submitted.
type JobSpec struct {
	Region      *string
	Namespace   *string
	ID          *string
	Name        *string
	Type        *string
	Priority    *int
	Datacenters []string
	Meta        map[string]string
	Update      *UpdateSpec
	Multiregion *MultiregionSpec
	TaskGroups  []*GroupSpec
	Stop        *bool
	// Reschedule is the job's reschedule block, merged into every group's.
	Reschedule *RescheduleSpec
	// Migrate is the job's migrate block, merged into every group's.
	Migrate *MigrateSpec

	Constraints []*ConstraintSpec
	Affinities  []*AffinitySpec
	Spreads     []*SpreadSpec

	// NodePool is the pool the job places in (nil or "": "default").
	NodePool *string

	AllAtOnce                Unsupported
	Periodic                 Unsupported
	ParameterizedJob         Unsupported
	UI                       Unsupported
	ParentID                 Unsupported
	Dispatched               Unsupported
	DispatchIdempotencyToken Unsupported
	Payload                  Unsupported
	ConsulNamespace          Unsupported
	VaultNamespace           Unsupported
	NomadTokenID             Unsupported
	// Older clients still send these.
	VaultToken  Unsupported
	ConsulToken Unsupported

	Status            ReadOnly
	StatusDescription ReadOnly
	Stable            ReadOnly
	Version           ReadOnly
	SubmitTime        ReadOnly
	CreateIndex       ReadOnly
	ModifyIndex       ReadOnly
	JobModifyIndex    ReadOnly
	VersionTag        ReadOnly
}

// UpdateSpec is an update block; nil fields take the job's or the defaults.
type UpdateSpec struct {
	Stagger          *time.Duration
	MaxParallel      *int
	HealthCheck      *string
	MinHealthyTime   *time.Duration
	HealthyDeadline  *time.Duration
	ProgressDeadline *time.Duration
	Canary           *int
	AutoRevert       *bool
	AutoPromote      *bool
}

// MultiregionSpec is a multiregion block.
type MultiregionSpec struct {
	Strategy *struct {
		MaxParallel *int
		OnFailure   *string
	}
	Regions []*struct {
		Name        string
		Count       *int
		Datacenters []string
		Meta        map[string]string
		NodePool    Unsupported
	}
}

// GroupSpec is a task group as submitted.
type GroupSpec struct {
	Name             *string
	Count            *int
	Update           *UpdateSpec
	RestartPolicy    *RestartSpec
	ReschedulePolicy *RescheduleSpec
	Migrate          *MigrateSpec
	// MaxClientDisconnect: how long allocations on a disconnected node
	// stay unknown before they are lost (nil: lost at once).
	MaxClientDisconnect *time.Duration
	Meta                map[string]string
	Tasks               []*TaskSpec
	Constraints         []*ConstraintSpec
	Affinities          []*AffinitySpec
	Spreads             []*SpreadSpec

	Volumes                   Unsupported
	Disconnect                Unsupported
	EphemeralDisk             Unsupported
	Networks                  []*NetworkSpec
	Services                  []*ServiceSpec
	ShutdownDelay             Unsupported
	MaxRunDuration            Unsupported
	StopAfterClientDisconnect Unsupported
	Scaling                   Unsupported
	Consul                    Unsupported
	PreventRescheduleOnLost   Unsupported
}

// RescheduleSpec is a reschedule block; nil fields take the job's, then
// the defaults.
type RescheduleSpec struct {
	Attempts      *int
	Interval      *time.Duration
	Delay         *time.Duration
	DelayFunction *string
	MaxDelay      *time.Duration
	Unlimited     *bool
}

// MigrateSpec is a migrate block; nil fields take the job's, then the
// defaults.
type MigrateSpec struct {
	MaxParallel     *int
	HealthCheck     *string
	MinHealthyTime  *time.Duration
	HealthyDeadline *time.Duration
}

// RestartSpec is a restart block; nil fields take the defaults.
type RestartSpec struct {
	Interval        *time.Duration
	Attempts        *int
	Delay           *time.Duration
	Mode            *string
	RenderTemplates Unsupported
}

// TaskSpec is a task as submitted.
type TaskSpec struct {
	Name        string
	Driver      string
	Config      map[string]any
	Env         map[string]string
	Meta        map[string]string
	Resources   *ResourcesSpec
	KillTimeout *time.Duration
	KillSignal  string
	Constraints []*ConstraintSpec
	Affinities  []*AffinitySpec

	User            Unsupported
	Lifecycle       Unsupported
	Services        []*ServiceSpec
	RestartPolicy   Unsupported
	LogConfig       Unsupported
	Artifacts       Unsupported
	Vault           Unsupported
	Consul          Unsupported
	Templates       Unsupported
	DispatchPayload Unsupported
	VolumeMounts    Unsupported
	CSIPluginConfig Unsupported
	Leader          Unsupported
	ShutdownDelay   Unsupported
	Kind            Unsupported
	ScalingPolicies Unsupported
	Secrets         Unsupported
	Identity        Unsupported
	Identities      Unsupported
	Actions         Unsupported
	Schedule        Unsupported
}

// ConstraintSpec is Nomad's api.Constraint.
type ConstraintSpec struct {
	LTarget string
	RTarget string
	Operand string
}

// AffinitySpec is Nomad's api.Affinity (Weight defaults to 50).
type AffinitySpec struct {
	LTarget string
	RTarget string
	Operand string
	Weight  *int8
}

// SpreadSpec is Nomad's api.Spread (Weight defaults to 50).
type SpreadSpec struct {
	Attribute    string
	Weight       *int8
	SpreadTarget []*struct {
		Value   string
		Percent uint8
	}
}

// ResourcesSpec is a task's resources block.
type ResourcesSpec struct {
	CPU      *int
	MemoryMB *int

	Cores       Unsupported
	MemoryMaxMB Unsupported
	DiskMB      Unsupported
	Networks    Unsupported
	Devices     Unsupported
	NUMA        Unsupported
	SecretsMB   Unsupported
	IOPS        Unsupported
}

// DecodeSpec decodes a job in Nomad's JSON job format strictly: a key that
// is not a field of Nomad's job is an error that names it, and so is a
// field ctlplane does not implement that carries a value.
func DecodeSpec(raw []byte) (*JobSpec, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, invalid("Job must be specified")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var spec JobSpec
	if err := dec.Decode(&spec); err != nil {
		return nil, invalid("Job decoding failed: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalid("Job decoding failed: unexpected data after the JSON object")
	}
	if err := checkUnsupported(&spec); err != nil {
		return nil, err
	}
	return &spec, nil
}

// nomadDefaults are the values Nomad's own Canonicalize fills into fields
// ctlplane does not implement. A client that canonicalized its job first
// (as the Nomad CLI does) sends them; they ask for nothing beyond what
// ctlplane does, so they count as unset.
var nomadDefaults = map[string]map[string]any{
	"EphemeralDisk": {"SizeMB": 300.0},
	"LogConfig":     {"MaxFiles": 10.0, "MaxFileSizeMB": 10.0},
}

// checkUnsupported refuses the first unsupported field that carries a value,
// naming it and where it is.
func checkUnsupported(spec *JobSpec) error {
	if f := firstSet(spec); f != "" {
		return invalid("%s is not supported", f)
	}
	if m := spec.Multiregion; m != nil {
		for _, r := range m.Regions {
			if r != nil && !isEmptyJSON(r.NodePool) {
				return invalid("Multiregion.Regions.NodePool is not supported")
			}
		}
	}
	for gi, g := range spec.TaskGroups {
		if g == nil {
			continue
		}
		where := groupWhere(gi, g)
		if f := firstSet(g); f != "" {
			return invalid("%s is not supported (%s)", f, where)
		}
		for _, n := range g.Networks {
			if n == nil {
				continue
			}
			if f := firstSet(n); f != "" {
				return invalid("Networks.%s is not supported (%s)", f, where)
			}
			for _, p := range append(append([]*PortSpec{}, n.ReservedPorts...), n.DynamicPorts...) {
				if p == nil {
					continue
				}
				if f := firstSet(p); f != "" {
					return invalid("Networks.Ports.%s is not supported (%s)", f, where)
				}
			}
		}
		if err := checkUnsupportedServices(g.Services, where); err != nil {
			return err
		}
		if g.RestartPolicy != nil && !isEmptyJSON(g.RestartPolicy.RenderTemplates) {
			return invalid("RestartPolicy.RenderTemplates is not supported (%s)", where)
		}
		for ti, t := range g.Tasks {
			if t == nil {
				continue
			}
			name := t.Name
			if name == "" {
				name = fmt.Sprintf("%d", ti+1)
			}
			where := fmt.Sprintf("task %q in %s", name, where)
			if f := firstSet(t); f != "" {
				return invalid("%s is not supported (%s)", f, where)
			}
			if err := checkUnsupportedServices(t.Services, where); err != nil {
				return err
			}
			// Canonicalized clients copy the group's restart policy into each task.
			if !isDefaultJSON(t.RestartPolicy, groupRestart(g)) {
				return invalid("RestartPolicy is not supported (%s)", where)
			}
			if t.Resources != nil {
				if f := firstSet(t.Resources); f != "" {
					return invalid("Resources.%s is not supported (%s)", f, where)
				}
			}
		}
	}
	return nil
}

func groupWhere(i int, g *GroupSpec) string {
	if g.Name != nil && *g.Name != "" {
		return fmt.Sprintf("task group %q", *g.Name)
	}
	return fmt.Sprintf("task group %d", i+1)
}

var unsupportedType = reflect.TypeOf(Unsupported(nil))

// firstSet names the first Unsupported field of the struct *v that is not empty.
func firstSet(v any) string {
	rv := reflect.ValueOf(v).Elem()
	for i := 0; i < rv.NumField(); i++ {
		if rv.Field(i).Type() != unsupportedType {
			continue
		}
		name := rv.Type().Field(i).Name
		if name == "RestartPolicy" && rv.Type() == reflect.TypeOf(TaskSpec{}) {
			continue // checked against the group's
		}
		if !isDefaultJSON(rv.Field(i).Interface().(Unsupported), nomadDefaults[name]) {
			return name
		}
	}
	return ""
}

// groupRestart is the group's canonical restart policy, as JSON would show it.
func groupRestart(g *GroupSpec) map[string]any {
	rp := DefaultRestartPolicy()
	if r := g.RestartPolicy; r != nil {
		rp.Interval = num(r.Interval, rp.Interval)
		rp.Attempts = num(r.Attempts, rp.Attempts)
		rp.Delay = num(r.Delay, rp.Delay)
		rp.Mode = str(r.Mode, rp.Mode)
	}
	return map[string]any{"Interval": float64(rp.Interval), "Attempts": float64(rp.Attempts), "Delay": float64(rp.Delay), "Mode": rp.Mode}
}

// isDefaultJSON: empty, or an object each of whose members is empty or
// equal to its value in defaults.
func isDefaultJSON(raw []byte, defaults map[string]any) bool {
	if isEmptyJSON(raw) {
		return true
	}
	if defaults == nil {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return false
	}
	for k, v := range obj {
		if isEmptyValue(v) {
			continue
		}
		d, ok := defaults[k]
		if !ok {
			return false
		}
		if n, isNum := v.(json.Number); isNum {
			f, err := n.Float64()
			if err != nil || f != d {
				return false
			}
		} else if v != d {
			return false
		}
	}
	return true
}

// isEmptyJSON: absent, null, false, 0, "", [], or an object whose members
// are all empty (a client serialises an unset nested struct that way).
func isEmptyJSON(raw []byte) bool {
	if len(raw) == 0 {
		return true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return false
	}
	return isEmptyValue(v)
}

func isEmptyValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		for _, e := range x {
			if !isEmptyValue(e) {
				return false
			}
		}
		return true
	}
	return false
}
