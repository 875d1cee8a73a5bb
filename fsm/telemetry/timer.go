package telemetry

import (
	"sort"
	"strings"
	"sync"
	"time"

	metrics "github.com/armon/go-metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// The hot paths' durations (every HTTP request, every FSM apply) are kept
// apart from go-metrics: through its global and both sinks a sample costs a
// string key built from the labels and two locks (12% of the CPU of a
// one-rule read, 4% of a create's FSM apply). A Timer observation is one
// Prometheus histogram observation and one short per-label-set lock.

// timerInterval is the JSON summary's interval, as the in-memory sink's.
const timerInterval = 10 * time.Second

// maxLabels is how many labels a Timer may have.
const maxLabels = 3

// timerRegistry holds the Timers' histograms; PrometheusHandler gathers it
// with the go-metrics one.
var timerRegistry = prometheus.NewRegistry()

var timers struct {
	mu  sync.Mutex
	all []*Timer
}

// Timer is a duration metric with fixed label names (at most three), shown
// in the JSON summary as NAME (dotted, like go-metrics' samples, in
// milliseconds) and in Prometheus as a histogram NAME_seconds
// (underscored). The label values must come from a small fixed set (route
// templates, methods, statuses, message types): each set is kept forever.
type Timer struct {
	name   string
	labels []string
	hist   *prometheus.HistogramVec
	stats  sync.Map // [maxLabels]string -> *timerStat
}

type timerStat struct {
	obs    prometheus.Observer
	values [maxLabels]string
	window
}

// window aggregates the values of the current interval and keeps the one
// before, as go-metrics' in-memory sink does.
type window struct {
	mu       sync.Mutex
	interval int64 // start of cur, in timerIntervals since the epoch
	cur      metrics.AggregateSample
	prev     metrics.AggregateSample // the interval just before cur, if any
}

// ingest adds v to the interval of now.
func (w *window) ingest(v float64, now time.Time) {
	iv := now.UnixNano() / int64(timerInterval)
	w.mu.Lock()
	if iv != w.interval {
		w.prev = metrics.AggregateSample{}
		if iv == w.interval+1 {
			w.prev = w.cur
		}
		w.cur, w.interval = metrics.AggregateSample{}, iv
	}
	w.cur.Ingest(v, timerInterval.Seconds())
	w.mu.Unlock()
}

// last is the aggregate of the last complete interval (of the current one
// while there is none); its Count is 0 when there is nothing recent.
func (w *window) last(now time.Time) metrics.AggregateSample {
	iv := now.UnixNano() / int64(timerInterval)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.interval == iv && w.prev.Count > 0:
		return w.prev
	case w.interval == iv, w.interval == iv-1:
		return w.cur
	}
	return metrics.AggregateSample{}
}

// NewTimer registers a Timer; name is dotted ("ctlplane.http.request").
func NewTimer(name, help string, labels ...string) *Timer {
	if len(labels) > maxLabels {
		panic("telemetry: too many labels for " + name)
	}
	t := &Timer{name: name, labels: labels, hist: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    strings.ReplaceAll(name, ".", "_") + "_seconds",
		Help:    help,
		Buckets: []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, labels)}
	timerRegistry.MustRegister(t.hist)
	timers.mu.Lock()
	timers.all = append(timers.all, t)
	timers.mu.Unlock()
	return t
}

// Observe records one duration with the label values, in the order of the
// Timer's label names.
func (t *Timer) Observe(d time.Duration, values ...string) {
	var key [maxLabels]string
	copy(key[:], values)
	v, ok := t.stats.Load(key)
	if !ok {
		v, _ = t.stats.LoadOrStore(key, &timerStat{obs: t.hist.WithLabelValues(values...), values: key})
	}
	st := v.(*timerStat)
	st.obs.Observe(d.Seconds())
	st.ingest(float64(d)/float64(time.Millisecond), time.Now())
}

// samples are the Timer's samples of the last complete interval (of the
// current one while there is none), in the in-memory sink's shape.
func (t *Timer) samples(now time.Time) []metrics.SampledValue {
	var out []metrics.SampledValue
	t.stats.Range(func(_, value any) bool {
		st := value.(*timerStat)
		agg := st.last(now)
		if agg.Count == 0 {
			return true
		}
		labels := map[string]string{}
		for i, name := range t.labels {
			labels[name] = st.values[i]
		}
		out = append(out, metrics.SampledValue{Name: t.name, AggregateSample: &agg, Mean: agg.Mean(), Stddev: agg.Stddev(),
			DisplayLabels: labels})
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		for _, name := range t.labels {
			if a, b := out[i].DisplayLabels[name], out[j].DisplayLabels[name]; a != b {
				return a < b
			}
		}
		return false
	})
	return out
}

func timerSamples(now time.Time) []metrics.SampledValue {
	timers.mu.Lock()
	all := append([]*Timer(nil), timers.all...)
	timers.mu.Unlock()
	var out []metrics.SampledValue
	for _, t := range all {
		out = append(out, t.samples(now)...)
	}
	return out
}
