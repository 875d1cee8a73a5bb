package telemetry

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metrics "github.com/armon/go-metrics"
	metricsprom "github.com/armon/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// Label-less samples and counters are aggregated by the hot sink (JSON as
// the in-memory sink shows them, Prometheus under go-metrics' names);
// gauges and labelled metrics still reach the sinks behind it.
func TestHotSink(t *testing.T) {
	inmem := metrics.NewInmemSink(timerInterval, time.Minute)
	reg := prometheus.NewRegistry()
	s := newHotSink(inmem, reg)
	cfg := metrics.DefaultConfig("ctlplane")
	cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
	m, err := metrics.New(cfg, s)
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				m.AddSample([]string{"raft", "commitTime"}, float32(g*100+i))
				m.IncrCounter([]string{"raft", "apply"}, 1)
			}
		}()
	}
	wg.Wait()
	m.AddSampleWithLabels([]string{"raft", "labelled"}, 7, []metrics.Label{{Name: "peer", Value: "a"}})
	m.SetGauge([]string{"raft", "peers"}, 3)

	var sum metrics.MetricsSummary
	s.summary(time.Now(), &sum)
	find := func(vals []metrics.SampledValue, name string) *metrics.SampledValue {
		for i := range vals {
			if vals[i].Name == name {
				return &vals[i]
			}
		}
		return nil
	}
	if v := find(sum.Samples, "ctlplane.raft.commitTime"); v == nil || v.Count != 800 || v.Min != 0 || v.Max != 799 {
		t.Fatalf("commitTime sample %+v, want 800 values from 0 to 799", v)
	}
	if v := find(sum.Counters, "ctlplane.raft.apply"); v == nil || v.Count != 800 || v.Sum != 800 {
		t.Fatalf("apply counter %+v, want 800 increments", v)
	}
	if v := find(sum.Samples, "ctlplane.raft.labelled"); v != nil {
		t.Fatalf("a labelled sample reached the hot sink: %+v", v)
	}

	prom := func(name string) string {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				return mf.String()
			}
		}
		return ""
	}
	if got := prom("ctlplane_raft_commitTime"); !strings.Contains(got, "sample_count:800") {
		t.Fatalf("Prometheus ctlplane_raft_commitTime: %q, want a histogram of 800", got)
	}
	if got := prom("ctlplane_raft_apply"); !strings.Contains(got, "counter:{value:800") {
		t.Fatalf("Prometheus ctlplane_raft_apply: %q, want a counter at 800", got)
	}

	// The sinks behind it got the gauge and the labelled sample.
	data := inmem.Data()
	cur := data[len(data)-1]
	cur.RLock()
	defer cur.RUnlock()
	var gauge, labelled bool
	for _, g := range cur.Gauges {
		gauge = gauge || (g.Name == "ctlplane.raft.peers" && g.Value == 3)
	}
	for _, sv := range cur.Samples {
		labelled = labelled || (sv.Name == "ctlplane.raft.labelled" && sv.Count == 1)
	}
	if !gauge || !labelled {
		t.Fatalf("in-memory sink: gauge %v, labelled sample %v; want both (gauges %v)", gauge, labelled, fmt.Sprint(cur.Gauges))
	}
}

// Keys that differ only in how their parts split stay apart.
func TestHotSinkKeysByParts(t *testing.T) {
	s := newHotSink(&metrics.BlackholeSink{}, prometheus.NewRegistry())
	a := s.metric(hotSample, []string{"ctlplane", "ab", "c"})
	b := s.metric(hotSample, []string{"ctlplane", "a", "bc"})
	if a == b || s.metric(hotSample, []string{"ctlplane", "ab", "c"}) != a {
		t.Fatal("metrics of different keys are shared, or a key found a new metric")
	}
}

// go test -run '^$' -bench Sinks -benchmem ./fsm/telemetry/: one
// raft-style sample through go-metrics into the in-memory and Prometheus
// sinks directly (before) and through the hot sink (after).
func BenchmarkSinks(b *testing.B) {
	fanout := func() metrics.FanoutSink {
		prom, err := metricsprom.NewPrometheusSinkFrom(metricsprom.PrometheusOpts{Registerer: prometheus.NewRegistry()})
		if err != nil {
			b.Fatal(err)
		}
		return metrics.FanoutSink{metrics.NewInmemSink(timerInterval, time.Minute), prom}
	}
	for _, c := range []struct {
		name string
		sink func() metrics.MetricSink
	}{
		{"inmem+prometheus", func() metrics.MetricSink { return fanout() }},
		{"hot", func() metrics.MetricSink { return newHotSink(fanout(), prometheus.NewRegistry()) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := metrics.DefaultConfig("ctlplane")
			cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
			m, err := metrics.New(cfg, c.sink())
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				m.AddSample([]string{"raft", "boltdb", "logSize"}, 210)
			}
		})
	}
}
