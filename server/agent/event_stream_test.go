package agent_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
	"github.com/hashicorp/nomad/api"
)

// A canary rollout as Nomad's own client sees it on the event stream: the
// registration and its evaluation in one entry, the plan's allocations,
// the deployment's progress, the promotion, in Raft order; then a second
// subscriber resuming at the canary version's index sees the same events
// from there.
func TestEventStreamCanaryRollout(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: a long test (it waits out real deadlines, delays or elections); make test runs it")
	}
	ts := devAgent(t, eventConfig(1000, 0))
	c := nomadEvents(t, ts, "")
	topics := map[api.Topic][]string{api.TopicJob: {"web"}, api.TopicEvaluation: {"web"},
		api.TopicAllocation: {"web"}, api.TopicDeployment: {"web"}}
	col := collect(t, c, topics, 0, nil)

	register(t, ts, jobSpec{count: 2, update: update(nil)})
	waitDeployment(t, ts, 0, "successful", status(state.DeploymentStatusSuccessful))
	canary := update(map[string]any{"Canary": 1, "MinHealthyTime": int64(300 * time.Millisecond)})
	register(t, ts, jobSpec{count: 2, update: canary, config: map[string]any{"run_for": "1h", "stdout_string": "v1"}})
	d1 := waitDeployment(t, ts, 1, "its canary healthy", func(d *state.Deployment) bool { return d.TaskGroups["web"].HealthyAllocs == 1 })
	operate(t, ts, "promote", d1.ID, fmt.Sprintf(`{"DeploymentID":%q,"All":true}`, d1.ID), http.StatusOK)
	waitDeployment(t, ts, 1, "successful", status(state.DeploymentStatusSuccessful))

	deploymentDone := func(version uint64) func(api.Event) bool {
		return func(e api.Event) bool {
			if e.Topic != api.TopicDeployment {
				return false
			}
			d, err := e.Deployment()
			return err == nil && d.JobVersion == version && d.Status == "successful"
		}
	}
	evs := col.waitFor(t, "of the promoted deployment's success", deploymentDone(1))
	if col.err != nil {
		t.Fatalf("stream: %v", col.err)
	}
	// Raft order, and each event decodes as Nomad's client expects.
	for i, e := range evs {
		if i > 0 && e.Index < evs[i-1].Index {
			t.Fatalf("index %d after %d:%s", e.Index, evs[i-1].Index, summary(evs))
		}
		var key string
		switch e.Topic {
		case api.TopicJob:
			j, err := e.Job()
			if err != nil || j == nil {
				t.Fatalf("job payload: %v %v", j, err)
			}
			key = *j.ID
		case api.TopicEvaluation:
			ev, err := e.Evaluation()
			if err != nil || ev == nil || ev.JobID != "web" {
				t.Fatalf("evaluation payload: %+v %v", ev, err)
			}
			key = ev.ID
		case api.TopicAllocation:
			a, err := e.Allocation()
			if err != nil || a == nil || a.JobID != "web" {
				t.Fatalf("allocation payload: %+v %v", a, err)
			}
			key = a.ID
		case api.TopicDeployment:
			d, err := e.Deployment()
			if err != nil || d == nil || d.JobID != "web" {
				t.Fatalf("deployment payload: %+v %v", d, err)
			}
			key = d.ID
		default:
			t.Fatalf("topic %s not subscribed to", e.Topic)
		}
		if key != e.Key {
			t.Errorf("event key %q, payload's %q", e.Key, key)
		}
	}
	// The story, in order: each step found after the previous one.
	steps := []struct {
		what string
		ok   func(e api.Event) bool
	}{
		{"JobRegistered v0", func(e api.Event) bool { return e.Type == "JobRegistered" }},
		{"its EvaluationUpdated in the same entry", func(e api.Event) bool {
			return e.Topic == api.TopicEvaluation && e.Type == "EvaluationUpdated" && e.Index == evs[0].Index
		}},
		{"PlanResult", func(e api.Event) bool { return e.Topic == api.TopicAllocation && e.Type == "PlanResult" }},
		{"DeploymentStatusUpdate", func(e api.Event) bool { return e.Type == "DeploymentStatusUpdate" }},
		{"AllocationUpdated (client)", func(e api.Event) bool { return e.Topic == api.TopicAllocation && e.Type == "AllocationUpdated" }},
		{"v0 successful", deploymentDone(0)},
		{"JobRegistered v1", func(e api.Event) bool {
			j, _ := e.Job()
			return e.Type == "JobRegistered" && j != nil && *j.Version == 1
		}},
		{"canary PlanResult", func(e api.Event) bool { return e.Type == "PlanResult" }},
		{"DeploymentPromotion", func(e api.Event) bool { return e.Topic == api.TopicDeployment && e.Type == "DeploymentPromotion" }},
		{"v1 successful", deploymentDone(1)},
	}
	pos, v1 := 0, uint64(0)
	for _, s := range steps {
		found := false
		for ; pos < len(evs); pos++ {
			if s.ok(evs[pos]) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("no %s in order:%s", s.what, summary(evs))
		}
		if s.what == "JobRegistered v1" {
			v1 = evs[pos].Index
		}
	}
	if evs[0].Topic != api.TopicJob || evs[0].Key != "web" {
		t.Errorf("first event %+v", evs[0])
	}

	// Resume at the canary version's index: the same events from there.
	again := collect(t, c, topics, v1, nil)
	want := []api.Event{}
	for _, e := range evs {
		if e.Index >= v1 {
			want = append(want, e)
		}
	}
	got := again.waitFor(t, "of the promoted deployment's success (resumed)", deploymentDone(1))
	if len(got) < len(want) || summary(got[:len(want)]) != summary(want) {
		t.Errorf("resumed at %d:%s\nwant:%s", v1, summary(got), summary(want))
	}
}

// topic=Topic:Key and namespace select events; an unknown topic or a bad
// index is a 400 with a message.
func TestEventStreamFilters(t *testing.T) {
	ts := devAgent(t, eventConfig(1000, 0))
	c := nomadEvents(t, ts, "")
	if _, err := c.Namespaces().Register(&api.Namespace{Name: "other"}, nil); err != nil {
		t.Fatal(err)
	}
	webOnly := collect(t, c, map[api.Topic][]string{api.TopicJob: {"web"}}, 0, nil)
	other := collect(t, c, map[api.Topic][]string{api.TopicJob: {"*"}}, 0, &api.QueryOptions{Namespace: "other"})
	all := collect(t, c, map[api.Topic][]string{api.TopicJob: {}}, 0, &api.QueryOptions{Namespace: "*"})
	nodes := collect(t, c, map[api.Topic][]string{api.TopicNode: {}}, 0, nil)

	for _, j := range []struct{ ns, id string }{{"default", "web"}, {"default", "api"}, {"other", "web"}, {"other", "db"}} {
		body := strings.Replace(jobSpec{count: 1}.body(), `"ID":"web"`, fmt.Sprintf(`"ID":%q,"Namespace":%q`, j.id, j.ns), 1)
		if r := ts.Do(t, http.MethodPut, "/v1/jobs", body); r.Status != http.StatusOK {
			t.Fatalf("register %s/%s: %d %s", j.ns, j.id, r.Status, r.Body)
		}
	}
	keys := func(col *collector) string {
		var out []string
		for _, e := range col.snapshot() {
			if e.Type != "JobRegistered" {
				if e.Type != "PlanResult" {
					t.Errorf("job event of type %s", e.Type)
				}
				continue // the job's status, as its allocations are placed
			}
			j, err := e.Job()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, *j.Namespace+"/"+e.Key)
		}
		return strings.Join(out, " ")
	}
	all.waitFor(t, "of other/db", func(e api.Event) bool { return e.Key == "db" })
	other.waitFor(t, "of other/db", func(e api.Event) bool { return e.Key == "db" })
	webOnly.waitFor(t, "of default/web", func(e api.Event) bool { return e.Key == "web" })
	time.Sleep(200 * time.Millisecond) // anything wrongly delivered would be in by now
	if got := keys(all); got != "default/web default/api other/web other/db" {
		t.Errorf("namespace=*: %s", got)
	}
	if got := keys(webOnly); got != "default/web" {
		t.Errorf("topic=Job:web: %s", got)
	}
	if got := keys(other); got != "other/web other/db" {
		t.Errorf("namespace=other: %s", got)
	}
	// The dev node registered before the stream opened: in the buffer (index 0).
	if evs := nodes.waitFor(t, "of the dev node", func(e api.Event) bool { return e.Type == "NodeRegistration" }); len(evs) == 0 {
		t.Fatal("no node event")
	} else if n, err := evs[0].Node(); err != nil || n == nil || n.Name == "" {
		t.Errorf("node payload %+v %v", n, err)
	}
	for _, e := range nodes.snapshot() {
		if e.Topic != api.TopicNode {
			t.Errorf("topic=Node gave %s", e.Topic)
		}
	}

	for _, q := range []struct{ query, want string }{
		{"topic=Nope", `Invalid topic "Nope"`},
		{"topic=:x", "Invalid topic query"},
		{"index=-1", `Invalid index "-1"`},
		{"namespace=bad%20ns", `Invalid namespace "bad ns"`},
	} {
		r := ts.Do(t, http.MethodGet, "/v1/event/stream?"+q.query, "")
		if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, q.want) {
			t.Errorf("%s: %d %q, want 400 with %q", q.query, r.Status, r.Body, q.want)
		}
	}
}
