package jobs

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// Caps on a job's size (design §9): each a 400 naming the field.
const (
	MaxNameLength       = 128
	MaxTaskGroups       = 100
	MaxTasksPerGroup    = 100
	MaxCount            = 10000
	MaxDatacenters      = 100
	MaxMetaKeys         = 64
	MaxMetaKeyLength    = 128
	MaxMetaValueLength  = 1024
	MaxEnvKeys          = 256
	MaxEnvValueLength   = 4096
	MaxConfigBytes      = 64 * 1024
	MaxConfigDepth      = 16
	MaxDriverLength     = 64
	MaxKillSignalLength = 32
	MaxRegions          = 100
	// A task's resources: sums over a group, a node or a plan stay far
	// from overflow (100 tasks of the most are under 2^37).
	MaxTaskCPU      = 1 << 24 // MHz
	MaxTaskMemoryMB = 1 << 30
	// A scaling event's Message and Meta (Nomad bounds them only by the
	// body: 60 events of 1 MiB took a server from 26 to 634 MiB). The
	// events kept per group are bounded in bytes too
	// (state.JobTrackedScalingEventBytes).
	MaxScalingMessageBytes = 1024
	MaxScalingMetaKeys     = MaxMetaKeys
	MaxScalingMetaBytes    = 4096
)

// RestartPolicyMinInterval is Nomad's lower bound for a restart interval.
const RestartPolicyMinInterval = 5 * time.Second

var namespaceRE = regexp.MustCompile(`^[a-zA-Z0-9\-_]{1,64}$`)

// Validate checks a canonical job with Nomad's rules and texts, plus
// ctlplane's caps. All problems are reported together, as Nomad's
// multierror does.
func Validate(job *state.Job) error {
	// Before anything is compiled (a job over its patterns' budget is
	// refused for that alone).
	if err := checkPatternCost(job); err != nil {
		return err
	}
	var errs errList
	switch {
	case job.ID == "":
		errs.add("Missing job ID")
	case strings.Contains(job.ID, " "):
		errs.add("Job ID contains a space")
	case strings.Contains(job.ID, "\x00"):
		errs.add("Job ID contains a null character")
	case strings.Contains(job.ID, "/"):
		// The router matches decoded paths: /v1/job/a%2Fb could never reach it.
		errs.add("Job ID contains a slash: the job could not be addressed by its URL path")
	case len(job.ID) > MaxNameLength:
		errs.add("Job ID is %d characters long: at most %d are allowed", len(job.ID), MaxNameLength)
	}
	switch {
	case job.Name == "":
		errs.add("Missing job name")
	case strings.Contains(job.Name, "\x00"):
		errs.add("Job Name contains a null character")
	case len(job.Name) > MaxNameLength:
		errs.add("Job Name is %d characters long: at most %d are allowed", len(job.Name), MaxNameLength)
	}
	if !namespaceRE.MatchString(job.Namespace) {
		errs.add("Invalid namespace %q: a namespace name is 1 to 64 letters, digits, '-' or '_'", job.Namespace)
	}
	if len(job.Region) > MaxNameLength {
		errs.add("Job Region is %d characters long: at most %d are allowed", len(job.Region), MaxNameLength)
	}
	if job.Type != state.JobTypeService {
		errs.add("Job type %q is not supported: only service jobs are supported for now", job.Type)
	}
	if len(job.Datacenters) > MaxDatacenters {
		errs.add("Job has %d datacenters: at most %d are allowed", len(job.Datacenters), MaxDatacenters)
	}
	for _, dc := range job.Datacenters {
		if dc == "" {
			errs.add("Job datacenter must be non-empty string")
		} else if len(dc) > MaxNameLength {
			errs.add("Job datacenter %.20q... is %d characters long: at most %d are allowed", dc, len(dc), MaxNameLength)
		}
	}
	checkStringMap(&errs, "Job Meta", job.Meta, MaxMetaKeys, MaxMetaValueLength)
	checkConstraints(&errs, job.Constraints, false)
	checkAffinities(&errs, job.Affinities)
	checkSpreads(&errs, job.Spreads)
	checkMultiregion(&errs, job.Multiregion)
	if len(job.TaskGroups) == 0 {
		errs.add("Missing job task groups")
	}
	if len(job.TaskGroups) > MaxTaskGroups {
		errs.add("Job has %d task groups: at most %d are allowed", len(job.TaskGroups), MaxTaskGroups)
		return errs.err()
	}
	seen := map[string]int{}
	for i, tg := range job.TaskGroups {
		if tg.Name == "" {
			errs.add("Job task group %d missing name", i+1)
		} else if prev, ok := seen[tg.Name]; ok {
			errs.add("Job task group %d redefines '%s' from group %d", i+1, tg.Name, prev+1)
		} else {
			seen[tg.Name] = i
		}
	}
	for _, tg := range job.TaskGroups {
		for _, e := range validateGroup(tg) {
			errs.add("Task group %s validation failed: %s", tg.Name, e)
		}
	}
	// Nomad 1.6's jobValidate admission check, after the job's own.
	if job.Priority < 1 || job.Priority > 100 {
		errs.add("job priority must be between [1, 100]")
	}
	return errs.err()
}

func validateGroup(tg *state.TaskGroup) []string {
	var errs errList
	if tg.Name == "" {
		errs.add("Missing task group name")
	} else if len(tg.Name) > MaxNameLength {
		errs.add("Task group name is %d characters long: at most %d are allowed", len(tg.Name), MaxNameLength)
	}
	checkPathName(&errs, "Task group", tg.Name)
	if tg.Count < 0 {
		errs.add("Task group count can't be negative")
	} else if tg.Count > MaxCount {
		errs.add("Task group Count %d is over the limit of %d", tg.Count, MaxCount)
	}
	if len(tg.Tasks) == 0 {
		errs.add("Missing tasks for task group")
	} else if len(tg.Tasks) > MaxTasksPerGroup {
		errs.add("Task group has %d tasks: at most %d are allowed", len(tg.Tasks), MaxTasksPerGroup)
		return errs
	}
	checkStringMap(&errs, "Task group Meta", tg.Meta, MaxMetaKeys, MaxMetaValueLength)
	checkConstraints(&errs, tg.Constraints, false)
	checkAffinities(&errs, tg.Affinities)
	checkSpreads(&errs, tg.Spreads)
	checkNetworks(&errs, tg.Networks)
	checkGroupServices(&errs, tg)
	if tg.RestartPolicy == nil {
		errs.add("Task Group %v should have a restart policy", tg.Name)
	} else {
		errs = append(errs, validateRestart(tg.RestartPolicy)...)
	}
	if tg.ReschedulePolicy == nil {
		errs.add("Task Group %v should have a reschedule policy", tg.Name)
	} else {
		errs = append(errs, ValidateReschedule(tg.ReschedulePolicy)...)
	}
	if tg.Update != nil {
		errs = append(errs, ValidateUpdate(tg.Update)...)
	}
	if tg.MaxClientDisconnect != nil && *tg.MaxClientDisconnect < 0 {
		errs.add("max_client_disconnect cannot be negative")
	}
	if tg.Migrate != nil {
		errs = append(errs, ValidateMigrate(tg.Migrate)...)
	}
	seen := map[string]int{}
	for i, t := range tg.Tasks {
		if t.Name == "" {
			errs.add("Task %d missing name", i+1)
		} else if prev, ok := seen[t.Name]; ok {
			errs.add("Task %d redefines '%s' from task %d", i+1, t.Name, prev+1)
		} else {
			seen[t.Name] = i
		}
	}
	for _, t := range tg.Tasks {
		for _, e := range validateTask(t) {
			errs.add("Task %s validation failed: %s", t.Name, e)
		}
		// Nomad's text, typo included.
		if u := tg.Update; u != nil && u.ProgressDeadline > 0 && t.KillTimeout > u.ProgressDeadline {
			errs.add("KillTimout (%s) longer than the group's ProgressDeadline (%s)", t.KillTimeout, u.ProgressDeadline)
		}
	}
	return errs
}

// ValidateUpdate is Nomad's UpdateStrategy.Validate.
func ValidateUpdate(u *state.UpdateStrategy) []string {
	var errs errList
	switch u.HealthCheck {
	case state.UpdateHealthChecks, state.UpdateHealthTaskStates, state.UpdateHealthManual:
	default:
		errs.add("Invalid health check given: %q", u.HealthCheck)
	}
	if u.MaxParallel < 0 {
		errs.add("Max parallel can not be less than zero: %d < 0", u.MaxParallel)
	}
	if u.Canary < 0 {
		errs.add("Canary count can not be less than zero: %d < 0", u.Canary)
	}
	if u.Canary == 0 && u.AutoPromote {
		errs.add("Auto Promote requires a Canary count greater than zero")
	}
	if u.MinHealthyTime < 0 {
		errs.add("Minimum healthy time may not be less than zero: %v", u.MinHealthyTime)
	}
	if u.HealthyDeadline <= 0 {
		errs.add("Healthy deadline must be greater than zero: %v", u.HealthyDeadline)
	}
	if u.ProgressDeadline < 0 {
		errs.add("Progress deadline must be zero or greater: %v", u.ProgressDeadline)
	}
	if u.MinHealthyTime >= u.HealthyDeadline {
		errs.add("Minimum healthy time must be less than healthy deadline: %v > %v", u.MinHealthyTime, u.HealthyDeadline)
	}
	if u.ProgressDeadline != 0 && u.HealthyDeadline >= u.ProgressDeadline {
		errs.add("Healthy deadline must be less than progress deadline: %v > %v", u.HealthyDeadline, u.ProgressDeadline)
	}
	if u.Stagger <= 0 {
		errs.add("Stagger must be greater than zero: %v", u.Stagger)
	}
	return errs
}

// validateRestart is Nomad's RestartPolicy.Validate.
func validateRestart(r *state.RestartPolicy) []string {
	var errs errList
	switch r.Mode {
	case "delay", "fail":
	default:
		errs.add("Unsupported restart mode: %q", r.Mode)
	}
	if r.Attempts == 0 && r.Mode != "fail" {
		errs.add("Restart policy %q with %d attempts is ambiguous", r.Mode, r.Attempts)
	}
	if r.Attempts < 0 {
		errs.add("Restart attempts can not be negative: %d", r.Attempts)
	}
	if r.Delay < 0 {
		errs.add("Restart delay can not be negative: %v", r.Delay)
	}
	if r.Interval < RestartPolicyMinInterval {
		errs.add("Interval can not be less than %v (got %v)", RestartPolicyMinInterval, r.Interval)
	}
	if time.Duration(r.Attempts)*r.Delay > r.Interval {
		errs.add("Nomad can't restart the TaskGroup %v times in an interval of %v with a delay of %v", r.Attempts, r.Interval, r.Delay)
	}
	return errs
}

func validateTask(t *state.Task) []string {
	var errs errList
	if t.Name == "" {
		errs.add("Missing task name")
	} else if len(t.Name) > MaxNameLength {
		errs.add("Task name is %d characters long: at most %d are allowed", len(t.Name), MaxNameLength)
	}
	checkPathName(&errs, "Task", t.Name)
	if t.Driver == "" {
		errs.add("Missing task driver")
	} else if len(t.Driver) > MaxDriverLength {
		errs.add("Task Driver is %d characters long: at most %d are allowed", len(t.Driver), MaxDriverLength)
	}
	if t.KillTimeout < 0 {
		errs.add("KillTimeout must be a positive value")
	}
	if len(t.KillSignal) > MaxKillSignalLength {
		errs.add("Task KillSignal is %d characters long: at most %d are allowed", len(t.KillSignal), MaxKillSignalLength)
	}
	if r := t.Resources; r == nil {
		errs.add("Missing task resources")
	} else {
		if r.CPU < 1 {
			errs.add("minimum CPU value is 1; got %d", r.CPU)
		} else if r.CPU > MaxTaskCPU {
			errs.add("maximum CPU value is %d; got %d", MaxTaskCPU, r.CPU)
		}
		if r.MemoryMB < 10 {
			errs.add("minimum MemoryMB value is 10; got %d", r.MemoryMB)
		} else if r.MemoryMB > MaxTaskMemoryMB {
			errs.add("maximum MemoryMB value is %d; got %d", MaxTaskMemoryMB, r.MemoryMB)
		}
	}
	checkStringMap(&errs, "Task Meta", t.Meta, MaxMetaKeys, MaxMetaValueLength)
	checkConstraints(&errs, t.Constraints, true)
	checkAffinities(&errs, t.Affinities)
	checkStringMap(&errs, "Task Env", t.Env, MaxEnvKeys, MaxEnvValueLength)
	if t.Config != nil {
		if b, err := json.Marshal(t.Config); err != nil {
			errs.add("Task Config is not valid JSON: %v", err)
		} else if len(b) > MaxConfigBytes {
			errs.add("Task Config is %d bytes: at most %d are allowed", len(b), MaxConfigBytes)
		}
		if depth(t.Config) > MaxConfigDepth {
			errs.add("Task Config is nested more than %d levels deep", MaxConfigDepth)
		}
	}
	return errs
}

func checkMultiregion(errs *errList, m *state.Multiregion) {
	if m == nil {
		return
	}
	if len(m.Regions) > MaxRegions {
		errs.add("Multiregion has %d regions: at most %d are allowed", len(m.Regions), MaxRegions)
		return
	}
	for i, r := range m.Regions {
		if r.Name == "" {
			errs.add("Multiregion region %d missing name", i+1)
		} else if len(r.Name) > MaxNameLength {
			errs.add("Multiregion region name is %d characters long: at most %d are allowed", len(r.Name), MaxNameLength)
		}
		if r.Count != nil && (*r.Count < 0 || *r.Count > MaxCount) {
			errs.add("Multiregion region %s Count %d is out of range [0, %d]", r.Name, *r.Count, MaxCount)
		}
		if len(r.Datacenters) > MaxDatacenters {
			errs.add("Multiregion region %s has %d datacenters: at most %d are allowed", r.Name, len(r.Datacenters), MaxDatacenters)
		}
		checkStringMap(errs, "Multiregion region Meta", r.Meta, MaxMetaKeys, MaxMetaValueLength)
	}
}

// checkStringMap applies the caps of a Meta or Env map, naming the field
// (keys in order, so that the message is stable).
func checkStringMap(errs *errList, field string, m map[string]string, maxKeys, maxValue int) {
	if len(m) > maxKeys {
		errs.add("%s has %d keys: at most %d are allowed", field, len(m), maxKeys)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case k == "":
			errs.add("%s has an empty key", field)
		case len(k) > MaxMetaKeyLength:
			errs.add("%s key %.20q... is %d characters long: at most %d are allowed", field, k, len(k), MaxMetaKeyLength)
		case len(m[k]) > maxValue:
			errs.add("%s value of %q is %d bytes: at most %d are allowed", field, k, len(m[k]), maxValue)
		}
	}
}

// depth is how deeply a decoded JSON value nests.
func depth(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	case []any:
		for _, e := range x {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}

// errList collects problems; err joins them like Nomad's multierror (one
// problem is reported as its sentence alone).
type errList []string

func (l *errList) add(format string, args ...any) { *l = append(*l, fmt.Sprintf(format, args...)) }

func (l errList) err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return invalid("%s", l[0])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d errors occurred:", len(l))
	for _, e := range l {
		b.WriteString("\n\t* " + e)
	}
	return invalid("%s", b.String())
}

// invalid is a 400: the request is malformed or fails validation.
// checkPathName refuses names that are not one plain path element: a
// task's name is its directory in the allocation directory ("." or ".."
// would make it the shared alloc dir or its parent).
func checkPathName(errs *errList, what, name string) {
	switch {
	case strings.ContainsAny(name, `/\`):
		errs.add("%s name cannot include slashes", what) // Nomad's text
	case strings.Contains(name, "\x00"):
		errs.add("%s name cannot include null characters", what)
	case name == "." || name == "..":
		errs.add("%s name cannot be %q: it must not be a relative directory name", what, name)
	}
}

func invalid(format string, args ...any) error {
	return &state.Error{Code: state.ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}
