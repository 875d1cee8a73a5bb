package http_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/server/servertest"
)

// A scrape after a write finds the counters moved: the HTTP request, the
// FSM apply of its message type, and Raft's own commit metrics.
func TestAgentMetrics(t *testing.T) {
	ts := servertest.Start(t)
	put := ts.Do(t, http.MethodPut, "/v1/acl/binding-rule", `{"AuthMethod":"m","BindType":"service","BindName":"web"}`)
	if put.Status != http.StatusOK {
		t.Fatalf("create: %d %s", put.Status, put.Body)
	}
	resp := ts.Do(t, http.MethodGet, "/v1/agent/metrics", "")
	if resp.Status != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("metrics: %d %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	var summary struct {
		Samples []struct {
			Name   string
			Count  int
			Labels map[string]string
		}
	}
	if err := json.Unmarshal([]byte(resp.Body), &summary); err != nil {
		t.Fatalf("decoding %s: %v", resp.Body, err)
	}
	found := map[string]bool{}
	for _, s := range summary.Samples {
		switch {
		case s.Name == "ctlplane.http.request" && s.Labels["route"] == "/v1/acl/binding-rule" && s.Labels["status"] == "200" && s.Count >= 1:
			found["http"] = true
		case s.Name == "ctlplane.fsm.apply" && s.Labels["type"] == "binding rule set" && s.Count >= 1:
			found["fsm"] = true
		case strings.HasPrefix(s.Name, "ctlplane.raft.") && s.Count >= 1:
			found["raft"] = true
		}
	}
	for _, want := range []string{"http", "fsm", "raft"} {
		if !found[want] {
			t.Errorf("no %s sample after a write in %.2000s", want, resp.Body)
		}
	}

	prom := ts.Do(t, http.MethodGet, "/v1/agent/metrics?format=prometheus", "")
	if prom.Status != http.StatusOK || !strings.Contains(prom.Body, "ctlplane_fsm_apply") {
		t.Errorf("prometheus: %d, no ctlplane_fsm_apply in %.300s", prom.Status, prom.Body)
	}
	if want := `ctlplane_http_request_seconds_count{method="PUT",route="/v1/acl/binding-rule",status="200"} `; !strings.Contains(prom.Body, want) {
		t.Errorf("prometheus: no %q", want)
	}
	bad := ts.Do(t, http.MethodGet, "/v1/agent/metrics?format=xml", "")
	if bad.Status != http.StatusBadRequest || bad.Body != `Invalid format "xml": use prometheus, or leave it out for JSON` {
		t.Errorf("bad format: %d %q", bad.Status, bad.Body)
	}
}

// With ACLs on, the metrics need operator:read.
func TestAgentMetricsNeedsOperatorRead(t *testing.T) {
	ts := servertest.Start(t, servertest.ACL("root"))
	anon := ts.Do(t, http.MethodGet, "/v1/agent/metrics", "")
	if anon.Status != http.StatusForbidden {
		t.Errorf("anonymous: %d %s", anon.Status, anon.Body)
	}
	mgmt := ts.Do(t, http.MethodGet, "/v1/agent/metrics", "", "X-Service-Token", "root")
	if mgmt.Status != http.StatusOK {
		t.Errorf("management: %d %s", mgmt.Status, mgmt.Body)
	}
}

// The blocked-query gauge shows a parked query, and goes back to zero once
// it has returned.
func TestAgentMetricsBlockedQueriesGauge(t *testing.T) {
	ts := servertest.Start(t)
	list := ts.Do(t, http.MethodGet, "/v1/acl/binding-rules", "")
	// The Prometheus text, not the JSON: the JSON shows the last finished
	// 10 s interval once there is one.
	gauge := func() (float64, bool) {
		resp := ts.Do(t, http.MethodGet, "/v1/agent/metrics?format=prometheus", "")
		for _, line := range strings.Split(resp.Body, "\n") {
			if v, ok := strings.CutPrefix(line, "ctlplane_http_blocking_queries "); ok {
				f, err := strconv.ParseFloat(v, 64)
				return f, err == nil
			}
		}
		return 0, false
	}
	waitGauge := func(want float64) {
		t.Helper()
		var last float64
		for range 200 {
			v, ok := gauge()
			if ok && v == want {
				return
			}
			last = v
			time.Sleep(25 * time.Millisecond)
		}
		t.Fatalf("blocking_queries gauge stayed at %v, want %v", last, want)
	}
	done := make(chan *servertest.Response, 1)
	go func() {
		done <- ts.Do(t, http.MethodGet, "/v1/acl/binding-rules?index="+list.Header.Get("X-Service-Index")+"&wait=30s", "")
	}()
	waitGauge(1)
	if put := ts.Do(t, http.MethodPut, "/v1/acl/binding-rule", `{"AuthMethod":"m","BindType":"service","BindName":"web"}`); put.Status != http.StatusOK {
		t.Fatalf("create: %d %s", put.Status, put.Body)
	}
	if r := <-done; r.Status != http.StatusOK {
		t.Fatalf("blocked list: %d %s", r.Status, r.Body)
	}
	waitGauge(0)
}
