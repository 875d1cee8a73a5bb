// Package telemetry holds the process's metrics: hashicorp/raft and
// raft-boltdb report through armon/go-metrics' global, so ctlplane does too,
// into an in-memory sink (served as JSON, in the shape of Consul's
// /v1/agent/metrics) and a Prometheus registry (served as Prometheus text).
package telemetry

import (
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	metrics "github.com/armon/go-metrics"
	metricsprom "github.com/armon/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

var (
	once     sync.Once
	inmem    *metrics.InmemSink
	registry *prometheus.Registry
)

// Init installs the global sinks once per process.
func Init() {
	once.Do(func() {
		inmem = metrics.NewInmemSink(10*time.Second, time.Minute)
		registry = prometheus.NewRegistry()
		registry.MustRegister(requestHist)
		sinks := metrics.FanoutSink{inmem}
		prom, err := metricsprom.NewPrometheusSinkFrom(metricsprom.PrometheusOpts{
			Expiration: time.Hour,
			Registerer: registry,
		})
		if err == nil {
			sinks = append(sinks, prom)
		}
		cfg := metrics.DefaultConfig("ctlplane")
		cfg.EnableHostname = false
		cfg.EnableHostnameLabel = false
		cfg.EnableRuntimeMetrics = true
		metrics.NewGlobal(cfg, sinks)
	})
}

// Summary is the latest interval of every metric (gauges, counters,
// samples with count/sum/min/max/mean), as JSON.
func Summary() (any, error) {
	Init()
	out, err := inmem.DisplayMetrics(nil, nil)
	if err != nil {
		return nil, err
	}
	summary, ok := out.(metrics.MetricsSummary)
	if !ok {
		return out, nil
	}
	summary.Samples = append(summary.Samples, requestSamples(time.Now())...)
	return summary, nil
}

// PrometheusHandler serves every metric in the Prometheus text format.
func PrometheusHandler() http.Handler {
	Init()
	return promhttp.HandlerFor(registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// HTTP request durations are kept apart from go-metrics: through its global
// and both sinks a sample costs a string key built from the labels and two
// locks, 12% of the CPU of a one-rule read. Here a request costs one
// Prometheus histogram observation and one short per-route lock.

// requestInterval is the JSON summary's interval, as the in-memory sink's.
const requestInterval = 10 * time.Second

type requestKey struct {
	method, route string
	status        int
}

type requestStat struct {
	obs prometheus.Observer

	mu       sync.Mutex
	interval int64 // start of cur, in units of requestInterval since the epoch
	cur      metrics.AggregateSample
	prev     metrics.AggregateSample // the interval before cur, if it was the one just before
}

var (
	requestStats sync.Map // requestKey -> *requestStat
	requestHist  = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ctlplane_http_request_seconds",
		Help:    "HTTP request duration by method, route template and status.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"method", "route", "status"})
)

// ObserveRequest records one HTTP request's duration.
func ObserveRequest(method, route string, status int, d time.Duration) {
	Init()
	k := requestKey{method, route, status}
	v, ok := requestStats.Load(k)
	if !ok {
		v, _ = requestStats.LoadOrStore(k, &requestStat{obs: requestHist.WithLabelValues(method, route, strconv.Itoa(status))})
	}
	st := v.(*requestStat)
	st.obs.Observe(d.Seconds())
	now := time.Now()
	iv := now.UnixNano() / int64(requestInterval)
	ms := float64(d) / float64(time.Millisecond)
	st.mu.Lock()
	if iv != st.interval {
		st.prev = metrics.AggregateSample{}
		if iv == st.interval+1 {
			st.prev = st.cur
		}
		st.cur, st.interval = metrics.AggregateSample{}, iv
	}
	st.cur.Ingest(ms, requestInterval.Seconds())
	st.mu.Unlock()
}

// requestSamples are the HTTP request samples of the last complete interval
// (of the current one while there is none), in the in-memory sink's shape.
func requestSamples(now time.Time) []metrics.SampledValue {
	iv := now.UnixNano() / int64(requestInterval)
	var out []metrics.SampledValue
	requestStats.Range(func(key, value any) bool {
		k, st := key.(requestKey), value.(*requestStat)
		st.mu.Lock()
		var agg metrics.AggregateSample
		switch {
		case st.interval == iv && st.prev.Count > 0:
			agg = st.prev
		case st.interval == iv, st.interval == iv-1:
			agg = st.cur
		}
		st.mu.Unlock()
		if agg.Count == 0 {
			return true
		}
		out = append(out, metrics.SampledValue{
			Name:            "ctlplane.http.request",
			AggregateSample: &agg,
			Mean:            agg.Mean(),
			Stddev:          agg.Stddev(),
			DisplayLabels:   map[string]string{"method": k.method, "route": k.route, "status": strconv.Itoa(k.status)},
		})
		return true
	})
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].DisplayLabels, out[j].DisplayLabels
		if a["route"] != b["route"] {
			return a["route"] < b["route"]
		}
		if a["method"] != b["method"] {
			return a["method"] < b["method"]
		}
		return a["status"] < b["status"]
	})
	return out
}
