package client

import (
	"reflect"
	"testing"

	"github.com/ctlplane/ctlplane/api"
)

// TestInterpolateConfig: a task's config (any driver's: raw_exec's
// command and args, mock_driver's stdout_string) sees the task env's
// ${NOMAD_*} variables, ports included; unknown ones stay as written.
func TestInterpolateConfig(t *testing.T) {
	a := &api.Allocation{ID: "a1", Name: "web.g[0]", JobID: "web", TaskGroup: "g", Namespace: "default",
		AllocatedPorts: []api.PortMapping{{Label: "http", Value: 20001, HostIP: "127.0.0.1"}}}
	task := &api.Task{Name: "t", Env: map[string]string{"GREETING": "hi"}}
	env := taskEnvMap(a, task, taskPaths{allocDir: "/d/a1", taskDir: "/d/a1/t"})
	cfg := map[string]any{
		"command":       "/bin/echo",
		"args":          []any{"${NOMAD_PORT_http}", "${NOMAD_ADDR_http}-${NOMAD_IP_http}", "${NOMAD_ALLOC_ID}/${GREETING}", "${nope}", "${", 3.0},
		"stdout_string": "listening on ${NOMAD_HOST_PORT_http}",
		"nested":        map[string]any{"k": []string{"${NOMAD_JOB_NAME}"}},
	}
	got := interpolateConfig(cfg, env)
	want := map[string]any{
		"command":       "/bin/echo",
		"args":          []any{"20001", "127.0.0.1:20001-127.0.0.1", "a1/hi", "${nope}", "${", 3.0},
		"stdout_string": "listening on 20001",
		"nested":        map[string]any{"k": []any{"web"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v\nwant %#v", got, want)
	}
	mc, err := parseMockConfig(got.(map[string]any))
	if err != nil || mc.stdout != "listening on 20001" {
		t.Fatalf("mock config %+v %v", mc, err)
	}
}
