package http

import (
	"net/http"
	"strconv"
	"time"

	"github.com/ctlplane/ctlplane/fsm/telemetry"
)

func (h *Handler) registerMetrics() {
	h.handleLocal("/v1/agent/metrics", methods{{http.MethodGet, h.operatorService(h.agentMetrics)}})
}

// agentMetrics serves the process's metrics: JSON by default (Consul's
// shape), Prometheus text with ?format=prometheus. Needs operator:read.
func (h *Handler) agentMetrics(w http.ResponseWriter, r *http.Request) (any, error) {
	if err := h.readAgent(r); err != nil {
		return nil, err
	}
	switch format := r.URL.Query().Get("format"); format {
	case "":
		return telemetry.Summary()
	case "prometheus":
		telemetry.PrometheusHandler().ServeHTTP(w, r)
		return written, nil
	default:
		return nil, badRequest("Invalid format %q: use prometheus, or leave it out for JSON", format)
	}
}

// measureRequest records a request's duration by route and status.
func measureRequest(r *http.Request, route string, start time.Time, status int) {
	requestTimer.Observe(time.Since(start), r.Method, route, statusLabel(status))
}

// requestTimer: only routes that matched reach serve, so method and route
// come from the registered set.
var requestTimer = telemetry.NewTimer("ctlplane.http.request", "HTTP request duration by method, route template and status.",
	"method", "route", "status")

// statusLabels are the status codes as strings, made once.
var statusLabels = func() (out [600]string) {
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}()

func statusLabel(code int) string {
	if code >= 0 && code < len(statusLabels) {
		return statusLabels[code]
	}
	return strconv.Itoa(code)
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flush, deadlines).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// readAgent resolves the caller of a read of the agent itself (metrics,
// its description), which the operator service decides.
func (h *Handler) readAgent(r *http.Request) error {
	id, err := h.identify(r)
	if err != nil {
		return err
	}
	return h.services.Operator.ReadAgent(id.caller())
}
