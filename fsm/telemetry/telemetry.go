// Package telemetry holds the process's metrics: hashicorp/raft and
// raft-boltdb report through armon/go-metrics' global, so ctlplane does too,
// into an in-memory sink (served as JSON, in the shape of Consul's
// /v1/agent/metrics) and a Prometheus registry (served as Prometheus text).
package telemetry

import (
	"net/http"
	"sync"
	"time"

	metrics "github.com/armon/go-metrics"
	metricsprom "github.com/armon/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

var (
	once        sync.Once
	inmem       *metrics.InmemSink
	registry    *prometheus.Registry
	hot         *hotSink
	hotRegistry = prometheus.NewRegistry()
)

// Init installs the global sinks once per process.
func Init() {
	once.Do(func() {
		inmem = metrics.NewInmemSink(10*time.Second, time.Minute)
		registry = prometheus.NewRegistry()
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
		hot = newHotSink(sinks, hotRegistry)
		metrics.NewGlobal(cfg, hot)
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
	now := time.Now()
	hot.summary(now, &summary)
	summary.Samples = append(summary.Samples, timerSamples(now)...)
	return summary, nil
}

// PrometheusHandler serves every metric in the Prometheus text format.
func PrometheusHandler() http.Handler {
	Init()
	return promhttp.HandlerFor(prometheus.Gatherers{registry, timerRegistry, hotRegistry}, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
