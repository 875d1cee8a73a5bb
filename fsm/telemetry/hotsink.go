package telemetry

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	metrics "github.com/armon/go-metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// hotSink takes the label-less samples and counters, which is what
// hashicorp/raft and raft-boltdb report for every log entry (raft.apply,
// raft.commitTime, raft.boltdb.logSize) and every batch, in front of the
// in-memory and Prometheus sinks. Those built a string key from the parts
// for each sink, took each sink's locks and fed a Prometheus summary: 6.5%
// of a create's CPU, and a quarter of the Raft leader loop's work, which
// every write waits for. Here the parts are hashed without a copy to find
// the metric, which aggregates the interval as the in-memory sink would (the
// JSON summary shows it the same way) and feeds a Prometheus histogram of
// the same name. Gauges and anything with labels go to the other sinks.
type hotSink struct {
	next metrics.MetricSink
	reg  *prometheus.Registry

	mu   sync.RWMutex
	byID map[uint64][]*hotMetric
}

type hotKind int

const (
	hotSample hotKind = iota
	hotCounter
)

type hotMetric struct {
	parts []string
	kind  hotKind
	name  string // dotted, as the in-memory sink names it
	prom  prometheus.Metric
	obs   func(float64)
	window
}

var hotSeed = maphash.MakeSeed()

func newHotSink(next metrics.MetricSink, reg *prometheus.Registry) *hotSink {
	return &hotSink{next: next, reg: reg, byID: map[uint64][]*hotMetric{}}
}

func hotID(kind hotKind, parts []string) uint64 {
	var h maphash.Hash
	h.SetSeed(hotSeed)
	h.WriteByte(byte(kind))
	for _, p := range parts {
		h.WriteString(p)
		h.WriteByte(0)
	}
	return h.Sum64()
}

// metric finds (or makes) the metric of key.
func (s *hotSink) metric(kind hotKind, key []string) *hotMetric {
	id := hotID(kind, key)
	s.mu.RLock()
	for _, m := range s.byID[id] {
		if slices.Equal(m.parts, key) {
			s.mu.RUnlock()
			return m
		}
	}
	s.mu.RUnlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.byID[id] {
		if slices.Equal(m.parts, key) {
			return m
		}
	}
	m := &hotMetric{parts: slices.Clone(key), kind: kind, name: strings.Join(key, ".")}
	promName := promNameReplacer.Replace(strings.Join(key, "_"))
	help := promName // go-metrics' Prometheus sink uses the name as help too
	switch kind {
	case hotSample:
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: promName, Help: help, Buckets: hotBuckets})
		m.prom, m.obs = h, h.Observe
	case hotCounter:
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: promName, Help: help})
		m.prom, m.obs = c, c.Add
	}
	// A name Prometheus refuses (or one already taken) stays out of the
	// Prometheus text but is still in the JSON summary.
	if err := s.reg.Register(m.prom.(prometheus.Collector)); err != nil {
		m.obs = func(float64) {}
	}
	s.byID[id] = append(s.byID[id], m)
	return m
}

// hotBuckets cover milliseconds (MeasureSince), counts and bytes alike:
// 0.01 to 3.5e7 (ten hours in ms, 35 MB), a factor of 3 apart.
var hotBuckets = prometheus.ExponentialBuckets(0.01, 3, 21)

// promNameReplacer does what go-metrics' Prometheus sink does to a name.
var promNameReplacer = strings.NewReplacer(" ", "_", ".", "_", "=", "_", "-", "_", "/", "_", ":", "_")

func (s *hotSink) add(kind hotKind, key []string, val float32) {
	m := s.metric(kind, key)
	m.obs(float64(val))
	m.ingest(float64(val), time.Now())
}

func (s *hotSink) AddSample(key []string, val float32) { s.add(hotSample, key, val) }
func (s *hotSink) IncrCounter(key []string, val float32) {
	s.add(hotCounter, key, val)
}

func (s *hotSink) AddSampleWithLabels(key []string, val float32, labels []metrics.Label) {
	if len(labels) == 0 {
		s.add(hotSample, key, val)
		return
	}
	s.next.AddSampleWithLabels(key, val, labels)
}

func (s *hotSink) IncrCounterWithLabels(key []string, val float32, labels []metrics.Label) {
	if len(labels) == 0 {
		s.add(hotCounter, key, val)
		return
	}
	s.next.IncrCounterWithLabels(key, val, labels)
}

func (s *hotSink) SetGauge(key []string, val float32) { s.next.SetGauge(key, val) }
func (s *hotSink) SetGaugeWithLabels(key []string, val float32, labels []metrics.Label) {
	s.next.SetGaugeWithLabels(key, val, labels)
}
func (s *hotSink) EmitKey(key []string, val float32) { s.next.EmitKey(key, val) }

// summary adds the hot metrics' last interval to a JSON summary.
func (s *hotSink) summary(now time.Time, out *metrics.MetricsSummary) {
	s.mu.RLock()
	var all []*hotMetric
	for _, ms := range s.byID {
		all = append(all, ms...)
	}
	s.mu.RUnlock()
	for _, m := range all {
		agg := m.last(now)
		if agg.Count == 0 {
			continue
		}
		v := metrics.SampledValue{Name: m.name, Hash: m.name, AggregateSample: &agg, Mean: agg.Mean(), Stddev: agg.Stddev(),
			DisplayLabels: map[string]string{}}
		if m.kind == hotCounter {
			out.Counters = append(out.Counters, v)
		} else {
			out.Samples = append(out.Samples, v)
		}
	}
	byName := func(a, b metrics.SampledValue) int { return strings.Compare(a.Name, b.Name) }
	slices.SortStableFunc(out.Counters, byName)
	slices.SortStableFunc(out.Samples, byName)
}
