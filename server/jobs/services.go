package jobs

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// ServiceSpec is a service block (Nomad's api.Service). Only native
// service discovery (provider "nomad") is served; Consul's fields are
// refused when set.
type ServiceSpec struct {
	Name         string
	Tags         []string
	CanaryTags   []string
	PortLabel    string
	AddressMode  string
	Checks       []*ServiceCheckSpec
	CheckRestart *CheckRestartSpec
	TaskName     string
	OnUpdate     string
	Provider     string

	EnableTagOverride Unsupported
	Address           Unsupported
	Connect           Unsupported
	Meta              Unsupported
	CanaryMeta        Unsupported
	TaggedAddresses   Unsupported
	Identity          Unsupported
	Weights           Unsupported
	Cluster           Unsupported
	Kind              Unsupported
}

// ServiceCheckSpec is a check block (Nomad's api.ServiceCheck).
type ServiceCheckSpec struct {
	Name         string
	Type         string
	Path         string
	Protocol     string
	PortLabel    string
	AddressMode  string
	Interval     time.Duration
	Timeout      time.Duration
	Header       map[string][]string
	Method       string
	Body         string
	CheckRestart *CheckRestartSpec
	TaskName     string
	OnUpdate     string

	// Consul's check fields: refused by the nomad provider's validation,
	// as Nomad does, so they are kept to name them.
	Expose                 bool
	TLSServerName          string
	SuccessBeforePassing   int
	FailuresBeforeCritical int
	FailuresBeforeWarning  int

	Command       Unsupported
	Args          Unsupported
	Advertise     Unsupported
	InitialStatus Unsupported
	Notes         Unsupported
	TLSSkipVerify Unsupported
	GRPCService   Unsupported
	GRPCUseTLS    Unsupported
}

// CheckRestartSpec is a check_restart block (Nomad's api.CheckRestart).
type CheckRestartSpec struct {
	Limit          int
	Grace          *time.Duration
	IgnoreWarnings bool
}

// Nomad's bounds and ctlplane's caps on services.
const (
	minCheckInterval     = time.Second
	minCheckTimeout      = time.Second
	MaxServicesPerGroup  = 32
	MaxChecksPerService  = 16
	MaxServiceTags       = 64
	MaxServiceTagLength  = 256
	MaxCheckHeaderValues = 64
)

// checkUnsupportedServices refuses an unsupported field of a service or
// check that carries a value, naming where it is.
func checkUnsupportedServices(svcs []*ServiceSpec, where string) error {
	for i, s := range svcs {
		if s == nil {
			continue
		}
		name := s.Name
		if name == "" {
			name = strconv.Itoa(i + 1)
		}
		if f := firstSet(s); f != "" {
			return invalid("Services.%s is not supported (service %q in %s)", f, name, where)
		}
		for _, c := range s.Checks {
			if c == nil {
				continue
			}
			if f := firstSet(c); f != "" {
				return invalid("Services.Checks.%s is not supported (service %q in %s)", f, name, where)
			}
			// Nomad's texts for Consul's fields on a nomad check.
			switch {
			case c.Expose:
				return invalid("expose may only be set for Consul service checks (service %q in %s)", name, where)
			case c.SuccessBeforePassing != 0:
				return invalid("success_before_passing may only be set for Consul service checks (service %q in %s)", name, where)
			case c.FailuresBeforeCritical != 0:
				return invalid("failures_before_critical may only be set for Consul service checks (service %q in %s)", name, where)
			case c.FailuresBeforeWarning != 0:
				return invalid("failures_before_warning may only be set for Consul service checks (service %q in %s)", name, where)
			case c.TLSServerName != "":
				return invalid("tls_server_name may only be set for Consul service checks (service %q in %s)", name, where)
			}
		}
	}
	return nil
}

// canonicalServices applies Nomad's api and structs Canonicalize: the
// default name (job-group[-task]) and ${JOB}, ${TASKGROUP}, ${TASK},
// ${BASE} in it, the default provider (consul, refused later), address
// mode and on_update, check names, the service's check_restart merged
// into each check, and the namespace of a nomad service (the job's).
func canonicalServices(in []*ServiceSpec, job, group, task, ns string) []*state.Service {
	var out []*state.Service
	for _, s := range in {
		if s == nil {
			continue
		}
		svc := &state.Service{
			Name: s.Name, TaskName: s.TaskName, PortLabel: s.PortLabel, AddressMode: s.AddressMode,
			Tags: nilIfEmpty(s.Tags), CanaryTags: nilIfEmpty(s.CanaryTags), Provider: s.Provider, OnUpdate: s.OnUpdate,
		}
		if svc.Name == "" {
			svc.Name = job + "-" + group
			if task != "" {
				svc.Name += "-" + task
			}
		}
		t := task
		if t == "" {
			t = "group"
		}
		svc.Name = strings.NewReplacer("${JOB}", job, "${TASKGROUP}", group, "${TASK}", t,
			"${BASE}", job+"-"+group+"-"+t).Replace(svc.Name)
		if svc.TaskName == "" && task != "" {
			svc.TaskName = task
		}
		if svc.AddressMode == "" {
			svc.AddressMode = "auto"
		}
		if svc.OnUpdate == "" {
			svc.OnUpdate = state.OnUpdateRequireHealthy
		}
		if svc.Provider == "" {
			svc.Provider = "consul"
		}
		if svc.Provider == state.ServiceProviderNomad {
			svc.Namespace = ns
		}
		for _, c := range s.Checks {
			if c == nil {
				continue
			}
			chk := &state.ServiceCheck{
				Name: c.Name, Type: strings.ToLower(c.Type), Path: c.Path, Protocol: c.Protocol, Method: c.Method,
				Body: c.Body, PortLabel: c.PortLabel, AddressMode: c.AddressMode, Interval: c.Interval,
				Timeout: c.Timeout, TaskName: c.TaskName, OnUpdate: c.OnUpdate,
			}
			if len(c.Header) > 0 {
				chk.Header = c.Header
			}
			if chk.Name == "" {
				chk.Name = fmt.Sprintf("service: %q check", svc.Name)
			}
			if chk.TaskName == "" && task != "" {
				chk.TaskName = task
			}
			if chk.OnUpdate == "" {
				chk.OnUpdate = svc.OnUpdate
			}
			if cr := mergeCheckRestart(s.CheckRestart, c.CheckRestart); cr != nil {
				chk.CheckRestart = cr
			}
			svc.Checks = append(svc.Checks, chk)
		}
		out = append(out, svc)
	}
	return out
}

// mergeCheckRestart is Nomad's CheckRestart.Merge: the check's values
// over the service's (a zero Limit or nil Grace keeps the service's).
func mergeCheckRestart(svc, chk *CheckRestartSpec) *state.CheckRestart {
	if svc == nil && chk == nil {
		return nil
	}
	out := &state.CheckRestart{}
	for _, c := range []*CheckRestartSpec{svc, chk} {
		if c == nil {
			continue
		}
		if c.Limit > 0 {
			out.Limit = c.Limit
		}
		if c.Grace != nil {
			out.Grace = *c.Grace
		}
		if c.IgnoreWarnings {
			out.IgnoreWarnings = true
		}
	}
	if out.Grace == 0 && (svc == nil || svc.Grace == nil) && (chk == nil || chk.Grace == nil) {
		out.Grace = time.Second // Nomad's api default
	}
	return out
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}

// Nomad's service name rule (RFC 1123, 63 characters).
var serviceNameRE = regexp.MustCompile(`^(?i:[a-z0-9]|[a-z0-9][a-z0-9\-]{0,61}[a-z0-9])$`)

// checkGroupServices validates a group's and its tasks' services with
// Nomad's rules and texts (TaskGroup.validateServices, Service.Validate,
// ServiceCheck.validateNomad, validateServices' port labels).
func checkGroupServices(errs *errList, tg *state.TaskGroup) {
	total := len(tg.Services)
	for _, t := range tg.Tasks {
		total += len(t.Services)
	}
	if total > MaxServicesPerGroup {
		errs.add("Task group has %d services: at most %d are allowed", total, MaxServicesPerGroup)
		return
	}
	ports := map[string]bool{}
	for _, n := range tg.Networks {
		for _, p := range append(append([]state.Port{}, n.ReservedPorts...), n.DynamicPorts...) {
			ports[p.Label] = true
		}
	}
	tasks := map[string]bool{}
	for _, t := range tg.Tasks {
		tasks[t.Name] = true
	}
	type unique struct{ name, task, port string }
	seen := map[unique]bool{}
	var dups []string
	servicePorts := map[string][]string{}
	track := func(svc *state.Service, owner string) {
		u := unique{svc.Name, owner, svc.PortLabel}
		if seen[u] {
			d := owner + "->" + svc.Name
			if svc.PortLabel != "" {
				d += ":" + svc.PortLabel
			}
			dups = append(dups, d)
		}
		seen[u] = true
		if svc.PortLabel != "" {
			servicePorts[svc.PortLabel] = append(servicePorts[svc.PortLabel], svc.Name)
		}
		for _, c := range svc.Checks {
			if c.PortLabel != "" {
				servicePorts[c.PortLabel] = append(servicePorts[c.PortLabel], svc.Name)
			}
		}
	}
	for i, svc := range tg.Services {
		track(svc, "group")
		if e := validateService(svc); len(e) > 0 {
			errs.add("Service[%d] %s validation failed: %s", i, svc.Name, joinErrs(e))
			continue
		}
		for _, c := range svc.Checks {
			if c.TaskName != "" && !tasks[c.TaskName] {
				errs.add("Check %s invalid: refers to non-existent task %s", c.Name, c.TaskName)
			}
		}
	}
	for _, t := range tg.Tasks {
		for i, svc := range t.Services {
			track(svc, t.Name)
			if svc.TaskName != "" && svc.TaskName != t.Name {
				errs.add("Service %s is invalid: may only specify task the service belongs to, got %q", svc.Name, svc.TaskName)
			}
			for _, c := range svc.Checks {
				if c.TaskName != "" && c.TaskName != t.Name {
					errs.add("Check %s is invalid: only task group service checks can be assigned tasks", c.Name)
				}
			}
			if e := validateService(svc); len(e) > 0 {
				errs.add("Task %s validation failed: Service[%d] %s validation failed: %s", t.Name, i, svc.Name, joinErrs(e))
			}
		}
	}
	if len(dups) > 0 {
		sort.Strings(dups)
		errs.add("Services are not unique: %s", strings.Join(dups, ", "))
	}
	labels := make([]string, 0, len(servicePorts))
	for l := range servicePorts {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		if !ports[l] {
			errs.add("port label %q referenced by services %v does not exist", l, strings.Join(servicePorts[l], ", "))
		}
	}
}

// validateService is Nomad's Service.Validate for the nomad provider.
func validateService(s *state.Service) errList {
	var errs errList
	stripped := regexp.MustCompile(`\$\{[^}]*\}`).ReplaceAllString(s.Name, "ENV-VAR")
	if !serviceNameRE.MatchString(stripped) {
		errs.add("Service name must be valid per RFC 1123 and can contain only alphanumeric characters or dashes and must be no longer than 63 characters: %q", s.Name)
	}
	switch s.AddressMode {
	case "", "auto", "host":
	case "driver", "alloc", "alloc_ipv6":
		errs.add("Service address_mode %q is not supported: ctlplane runs tasks on the host (use \"auto\" or \"host\")", s.AddressMode)
	default:
		errs.add("Service address_mode must be %q, %q, or %q; not %q", "auto", "host", "driver", s.AddressMode)
	}
	switch s.OnUpdate {
	case "", state.OnUpdateIgnore, state.OnUpdateRequireHealthy, "ignore_warnings":
	default:
		errs.add("Service on_update must be %q, %q, or %q; not %q", state.OnUpdateRequireHealthy, "ignore_warnings", state.OnUpdateIgnore, s.OnUpdate)
	}
	switch s.Provider {
	case state.ServiceProviderNomad:
	case "consul":
		errs.add("Service provider \"consul\" is not supported: ctlplane serves only native service discovery (set provider = \"nomad\")")
		return errs
	default:
		errs.add("Service provider must be %q, or %q; not %q", "consul", state.ServiceProviderNomad, s.Provider)
		return errs
	}
	if len(s.Tags) > MaxServiceTags || len(s.CanaryTags) > MaxServiceTags {
		errs.add("Service has more than %d tags", MaxServiceTags)
	}
	for _, tag := range append(append([]string{}, s.Tags...), s.CanaryTags...) {
		if len(tag) > MaxServiceTagLength {
			errs.add("Service tag %.20q... is %d characters long: at most %d are allowed", tag, len(tag), MaxServiceTagLength)
		}
	}
	if len(s.Checks) > MaxChecksPerService {
		errs.add("Service has %d checks: at most %d are allowed", len(s.Checks), MaxChecksPerService)
		return errs
	}
	names := map[string]bool{}
	for _, c := range s.Checks {
		if names[c.Name] {
			errs.add("check %q is duplicate", c.Name)
		}
		names[c.Name] = true
		if s.PortLabel == "" && c.PortLabel == "" {
			errs.add("Check %s invalid: check requires a port but neither check nor service %+q have a port", c.Name, s.Name)
			continue
		}
		if e := validateCheck(c); e != "" {
			errs.add("%s", e)
		}
	}
	return errs
}

// validateCheck is Nomad's ServiceCheck.validateNomad (first problem).
func validateCheck(c *state.ServiceCheck) string {
	switch c.Type {
	case state.ServiceCheckHTTP:
		if c.Path == "" {
			return "http type must have http path"
		}
		u, err := url.Parse(c.Path)
		if err != nil {
			return "http type must have valid http path"
		}
		if u.IsAbs() {
			return "http type must have relative http path"
		}
		switch c.Protocol {
		case "", "http", "https":
		default:
			return fmt.Sprintf("http check protocol must be \"http\" or \"https\"; not %q", c.Protocol)
		}
	case state.ServiceCheckTCP:
	default:
		return fmt.Sprintf("invalid check type (%q), must be one of tcp, http", c.Type)
	}
	switch {
	case c.Interval == 0:
		return fmt.Sprintf("missing required value interval. Interval cannot be less than %v", minCheckInterval)
	case c.Interval < minCheckInterval:
		return fmt.Sprintf("interval (%v) cannot be lower than %v", c.Interval, minCheckInterval)
	case c.Timeout == 0:
		return fmt.Sprintf("missing required value timeout. Timeout cannot be less than %v", minCheckInterval)
	case c.Timeout < minCheckTimeout:
		return fmt.Sprintf("timeout (%v) is lower than required minimum timeout %v", c.Timeout, minCheckInterval)
	}
	switch c.AddressMode {
	case "", "host":
	case "auto":
		return fmt.Sprintf("invalid address_mode %q - %s only valid for services", c.AddressMode, "auto")
	case "driver":
		return "address_mode = driver may only be set for Consul service checks"
	case "alloc", "alloc_ipv6":
		return fmt.Sprintf("address_mode %q is not supported: ctlplane runs tasks on the host", c.AddressMode)
	default:
		return fmt.Sprintf("invalid address_mode %q", c.AddressMode)
	}
	switch c.OnUpdate {
	case "", state.OnUpdateIgnore, state.OnUpdateRequireHealthy:
	case "ignore_warnings":
		return "on_update may only be set to ignore_warnings for Consul service checks"
	default:
		return fmt.Sprintf("on_update must be %q, %q, or %q; got %q", state.OnUpdateRequireHealthy, "ignore_warnings", state.OnUpdateIgnore, c.OnUpdate)
	}
	if cr := c.CheckRestart; cr != nil {
		if c.OnUpdate == state.OnUpdateIgnore {
			return fmt.Sprintf("on_update value %q is not compatible with check_restart", c.OnUpdate)
		}
		if cr.IgnoreWarnings {
			return "ignore_warnings on check_restart only supported for Consul service checks"
		}
		if cr.Limit < 0 {
			return fmt.Sprintf("limit must be greater than or equal to 0 but found %d", cr.Limit)
		}
		if cr.Grace < 0 {
			return fmt.Sprintf("grace period must be greater than or equal to 0 but found %d", cr.Grace)
		}
	}
	if c.Type == state.ServiceCheckHTTP && c.Method != "" && !isHTTPMethod(c.Method) {
		return fmt.Sprintf("method type %q not supported in Nomad http check", c.Method)
	}
	if len(c.Header) > MaxCheckHeaderValues {
		return fmt.Sprintf("check header has %d keys: at most %d are allowed", len(c.Header), MaxCheckHeaderValues)
	}
	return ""
}

func isHTTPMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}
