package jobs

import (
	"time"

	"github.com/ctlplane/ctlplane/state"
)

// Nomad's defaults (api.Job.Canonicalize and friends).
const (
	DefaultRegion      = "global"
	DefaultPriority    = 50
	DefaultCount       = 1
	DefaultCPU         = 100
	DefaultMemoryMB    = 300
	DefaultKillTimeout = 5 * time.Second
)

// DefaultUpdateStrategy is what a service job without an update block gets.
func DefaultUpdateStrategy() *state.UpdateStrategy {
	return &state.UpdateStrategy{
		Stagger:          30 * time.Second,
		MaxParallel:      1,
		HealthCheck:      state.UpdateHealthChecks,
		MinHealthyTime:   10 * time.Second,
		HealthyDeadline:  5 * time.Minute,
		ProgressDeadline: 10 * time.Minute,
	}
}

// DefaultRestartPolicy is a service job's restart policy.
func DefaultRestartPolicy() *state.RestartPolicy {
	return &state.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"}
}

// DefaultReschedulePolicy is a service job's reschedule policy (Nomad's
// DefaultServiceJobReschedulePolicy; only service jobs are served).
func DefaultReschedulePolicy() *state.ReschedulePolicy {
	return &state.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true}
}

// reschedulePolicy is the default, overridden field by field by the job's
// block, then the group's (Nomad's api.TaskGroup.Canonicalize).
func reschedulePolicy(blocks ...*RescheduleSpec) *state.ReschedulePolicy {
	p := DefaultReschedulePolicy()
	for _, b := range blocks {
		if b == nil {
			continue
		}
		p.Attempts = num(b.Attempts, p.Attempts)
		p.Interval = num(b.Interval, p.Interval)
		p.Delay = num(b.Delay, p.Delay)
		p.DelayFunction = str(b.DelayFunction, p.DelayFunction)
		p.MaxDelay = num(b.MaxDelay, p.MaxDelay)
		if b.Unlimited != nil {
			p.Unlimited = *b.Unlimited
		}
	}
	return p
}

// migrateStrategy is the default, overridden field by field by the job's
// block, then the group's (Nomad's api.TaskGroup.Canonicalize: a service
// group always has one).
func migrateStrategy(blocks ...*MigrateSpec) *state.MigrateStrategy {
	m := state.DefaultMigrateStrategy()
	for _, b := range blocks {
		if b == nil {
			continue
		}
		m.MaxParallel = num(b.MaxParallel, m.MaxParallel)
		m.HealthCheck = str(b.HealthCheck, m.HealthCheck)
		m.MinHealthyTime = num(b.MinHealthyTime, m.MinHealthyTime)
		m.HealthyDeadline = num(b.HealthyDeadline, m.HealthyDeadline)
	}
	return m
}

// Canonicalize fills in Nomad's defaults: ns is the namespace of a job
// that names none (the request's). Groups inherit the job's update block,
// merged field by field with their own.
func Canonicalize(spec *JobSpec, ns string) *state.Job {
	job := &state.Job{
		Region:      str(spec.Region, ""),
		Namespace:   str(spec.Namespace, ""),
		ID:          str(spec.ID, ""),
		Type:        str(spec.Type, state.JobTypeService),
		Priority:    num(spec.Priority, DefaultPriority),
		Datacenters: append([]string(nil), spec.Datacenters...),
		NodePool:    str(spec.NodePool, state.NodePoolDefault),
		Meta:        stringMap(spec.Meta),
		Stop:        spec.Stop != nil && *spec.Stop,
	}
	job.Name = str(spec.Name, job.ID)
	if job.Region == "" {
		job.Region = DefaultRegion
	}
	if job.Namespace == "" {
		job.Namespace = ns
	}
	if job.Namespace == "" {
		job.Namespace = state.DefaultNamespace
	}
	// Nomad's jobCanonicalizer: a priority of 0 is the server's default.
	if job.Priority == 0 {
		job.Priority = DefaultPriority
	}
	if len(job.Datacenters) == 0 {
		job.Datacenters = []string{"*"}
	}
	if job.NodePool == "" {
		job.NodePool = state.NodePoolDefault
	}
	// Only service (and system) jobs get the default strategy.
	var jobUpdate *UpdateSpec
	if spec.Update != nil {
		jobUpdate = fillUpdate(spec.Update)
	} else if job.Type == state.JobTypeService {
		jobUpdate = fillUpdate(&UpdateSpec{})
	}
	if jobUpdate != nil {
		job.Update = toStrategy(jobUpdate)
	}
	job.Multiregion = canonicalMultiregion(spec.Multiregion)
	job.Constraints = canonicalConstraints(spec.Constraints)
	job.Affinities = canonicalAffinities(spec.Affinities)
	job.Spreads = canonicalSpreads(spec.Spreads)
	for _, g := range spec.TaskGroups {
		if g == nil {
			g = &GroupSpec{}
		}
		tg := canonicalGroup(g, jobUpdate)
		tg.Services = canonicalServices(g.Services, job.Name, tg.Name, "", job.Namespace)
		for i, t := range tg.Tasks {
			if i < len(g.Tasks) && g.Tasks[i] != nil {
				t.Services = canonicalServices(g.Tasks[i].Services, job.Name, tg.Name, t.Name, job.Namespace)
			}
		}
		tg.ReschedulePolicy = reschedulePolicy(spec.Reschedule, g.ReschedulePolicy)
		tg.Migrate = migrateStrategy(spec.Migrate, g.Migrate)
		job.TaskGroups = append(job.TaskGroups, tg)
	}
	return job
}

func canonicalGroup(g *GroupSpec, jobUpdate *UpdateSpec) *state.TaskGroup {
	tg := &state.TaskGroup{
		Name:  str(g.Name, ""),
		Count: num(g.Count, DefaultCount),
		Meta:  stringMap(g.Meta),

		Constraints: canonicalConstraints(g.Constraints),
		Affinities:  canonicalAffinities(g.Affinities),
		Spreads:     canonicalSpreads(g.Spreads),
		Networks:    canonicalNetworks(g.Networks),
	}
	switch {
	case jobUpdate != nil && g.Update != nil:
		tg.Update = toStrategy(fillUpdate(mergeUpdate(jobUpdate, g.Update)))
	case jobUpdate != nil && !updateEmpty(jobUpdate):
		tg.Update = toStrategy(jobUpdate)
	case g.Update != nil:
		tg.Update = toStrategy(fillUpdate(g.Update))
	}
	rp := DefaultRestartPolicy()
	if r := g.RestartPolicy; r != nil {
		rp.Interval = num(r.Interval, rp.Interval)
		rp.Attempts = num(r.Attempts, rp.Attempts)
		rp.Delay = num(r.Delay, rp.Delay)
		rp.Mode = str(r.Mode, rp.Mode)
	}
	tg.RestartPolicy = rp
	if g.MaxClientDisconnect != nil {
		d := *g.MaxClientDisconnect
		tg.MaxClientDisconnect = &d
	}
	for _, t := range g.Tasks {
		if t == nil {
			t = &TaskSpec{}
		}
		tg.Tasks = append(tg.Tasks, canonicalTask(t))
	}
	return tg
}

func canonicalTask(t *TaskSpec) *state.Task {
	task := &state.Task{
		Name:        t.Name,
		Driver:      t.Driver,
		Env:         stringMap(t.Env),
		Meta:        stringMap(t.Meta),
		KillTimeout: num(t.KillTimeout, DefaultKillTimeout),
		KillSignal:  t.KillSignal,
		Resources:   &state.Resources{CPU: DefaultCPU, MemoryMB: DefaultMemoryMB},
		Constraints: canonicalConstraints(t.Constraints),
		Affinities:  canonicalAffinities(t.Affinities),
	}
	if len(t.Config) > 0 {
		task.Config = t.Config
	}
	if r := t.Resources; r != nil {
		task.Resources.CPU = num(r.CPU, DefaultCPU)
		task.Resources.MemoryMB = num(r.MemoryMB, DefaultMemoryMB)
	}
	return task
}

func canonicalMultiregion(m *MultiregionSpec) *state.Multiregion {
	if m == nil {
		return nil
	}
	out := &state.Multiregion{Strategy: &state.MultiregionStrategy{}}
	if s := m.Strategy; s != nil {
		out.Strategy.MaxParallel = num(s.MaxParallel, 0)
		out.Strategy.OnFailure = str(s.OnFailure, "")
	}
	for _, r := range m.Regions {
		if r == nil {
			continue
		}
		count := num(r.Count, 1)
		out.Regions = append(out.Regions, &state.MultiregionRegion{
			Name:        r.Name,
			Count:       &count,
			Datacenters: append([]string(nil), r.Datacenters...),
			Meta:        stringMap(r.Meta),
		})
	}
	return out
}

// fillUpdate returns a copy of u with every unset field at its default.
func fillUpdate(u *UpdateSpec) *UpdateSpec {
	d := DefaultUpdateStrategy()
	c := *u
	c.Stagger = ptr(num(u.Stagger, d.Stagger))
	c.MaxParallel = ptr(num(u.MaxParallel, d.MaxParallel))
	c.HealthCheck = ptr(str(u.HealthCheck, d.HealthCheck))
	c.MinHealthyTime = ptr(num(u.MinHealthyTime, d.MinHealthyTime))
	c.HealthyDeadline = ptr(num(u.HealthyDeadline, d.HealthyDeadline))
	c.ProgressDeadline = ptr(num(u.ProgressDeadline, d.ProgressDeadline))
	c.Canary = ptr(num(u.Canary, d.Canary))
	c.AutoRevert = ptr(u.AutoRevert != nil && *u.AutoRevert)
	c.AutoPromote = ptr(u.AutoPromote != nil && *u.AutoPromote)
	return &c
}

// mergeUpdate is base with every field o sets taken from o.
func mergeUpdate(base, o *UpdateSpec) *UpdateSpec {
	c := *base
	override(&c.Stagger, o.Stagger)
	override(&c.MaxParallel, o.MaxParallel)
	override(&c.HealthCheck, o.HealthCheck)
	override(&c.MinHealthyTime, o.MinHealthyTime)
	override(&c.HealthyDeadline, o.HealthyDeadline)
	override(&c.ProgressDeadline, o.ProgressDeadline)
	override(&c.Canary, o.Canary)
	override(&c.AutoRevert, o.AutoRevert)
	override(&c.AutoPromote, o.AutoPromote)
	return &c
}

// override sets *dst to src when src is set.
func override[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}

// updateEmpty is api.UpdateStrategy.Empty: nothing set to a non-zero value.
// Groups do not inherit an empty job strategy.
func updateEmpty(u *UpdateSpec) bool {
	return num(u.Stagger, 0) == 0 && num(u.MaxParallel, 0) == 0 && str(u.HealthCheck, "") == "" &&
		num(u.MinHealthyTime, 0) == 0 && num(u.HealthyDeadline, 0) == 0 && num(u.ProgressDeadline, 0) == 0 &&
		num(u.Canary, 0) == 0 && !(u.AutoRevert != nil && *u.AutoRevert) && !(u.AutoPromote != nil && *u.AutoPromote)
}

// toStrategy converts a filled update block.
func toStrategy(u *UpdateSpec) *state.UpdateStrategy {
	return &state.UpdateStrategy{
		Stagger:          num(u.Stagger, 0),
		MaxParallel:      num(u.MaxParallel, 0),
		HealthCheck:      str(u.HealthCheck, ""),
		MinHealthyTime:   num(u.MinHealthyTime, 0),
		HealthyDeadline:  num(u.HealthyDeadline, 0),
		ProgressDeadline: num(u.ProgressDeadline, 0),
		AutoRevert:       u.AutoRevert != nil && *u.AutoRevert,
		AutoPromote:      u.AutoPromote != nil && *u.AutoPromote,
		Canary:           num(u.Canary, 0),
	}
}

// stringMap normalises an empty map to nil, so that "{}" and "null" are the
// same spec (no new version when only that differs).
func stringMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func str(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

func num[T int | time.Duration](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func ptr[T any](v T) *T { return &v }
