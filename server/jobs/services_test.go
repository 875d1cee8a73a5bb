package jobs

import (
	"strings"
	"testing"
	"time"
)

func serviceJob(group, task string) string {
	return `{"ID":"web","TaskGroups":[{"Name":"g","Networks":[{"DynamicPorts":[{"Label":"http"}]}],"Services":[` + group +
		`],"Tasks":[{"Name":"t","Driver":"raw_exec","Services":[` + task + `]}]}]}`
}

// TestParseServices: Nomad's canonical service (default name, ${JOB}
// interpolation, address mode, on_update, the job's namespace, check names,
// task names, check_restart merged from the service with its 1s grace).
func TestParseServices(t *testing.T) {
	job, err := Parse([]byte(serviceJob(
		`{"Provider":"nomad","PortLabel":"http","CheckRestart":{"Limit":3},"Checks":[{"Type":"HTTP","Path":"/","Interval":1000000000,"Timeout":1000000000}]}`,
		`{"Name":"${JOB}-${TASK}","Provider":"nomad","PortLabel":"http","Checks":[{"Name":"tcp","Type":"tcp","Interval":1000000000,"Timeout":1000000000,"OnUpdate":"ignore"}]}`)), "ns1")
	if err != nil {
		t.Fatal(err)
	}
	g := job.TaskGroups[0].Services[0]
	if g.Name != "web-g" || g.AddressMode != "auto" || g.OnUpdate != "require_healthy" || g.Namespace != "ns1" || g.TaskName != "" {
		t.Fatalf("group service %+v", g)
	}
	c := g.Checks[0]
	if c.Name != `service: "web-g" check` || c.Type != "http" || c.OnUpdate != "require_healthy" || c.TaskName != "" ||
		c.CheckRestart == nil || c.CheckRestart.Limit != 3 || c.CheckRestart.Grace != time.Second {
		t.Fatalf("group check %+v %+v", c, c.CheckRestart)
	}
	ts := job.TaskGroups[0].Tasks[0].Services[0]
	if ts.Name != "web-t" || ts.TaskName != "t" || ts.Checks[0].TaskName != "t" || ts.Checks[0].OnUpdate != "ignore" || ts.Checks[0].CheckRestart != nil {
		t.Fatalf("task service %+v %+v", ts, ts.Checks[0])
	}
}

// TestValidateServices: Nomad's texts for invalid services and checks,
// and the refusal of the consul provider.
func TestValidateServices(t *testing.T) {
	chk := func(extra string) string {
		return `{"Name":"web","Provider":"nomad","PortLabel":"http","Checks":[{"Type":"http","Path":"/","Interval":1000000000,"Timeout":1000000000` + extra + `}]}`
	}
	cases := []struct{ group, task, want string }{
		{`{"Name":"web","PortLabel":"http"}`, ``, `Service[0] web validation failed: Service provider "consul" is not supported: ctlplane serves only native service discovery (set provider = "nomad")`},
		{`{"Name":"web","Provider":"etcd"}`, ``, `Service provider must be "consul", or "nomad"; not "etcd"`},
		{`{"Name":"web_1","Provider":"nomad"}`, ``, `Service name must be valid per RFC 1123 and can contain only alphanumeric characters or dashes and must be no longer than 63 characters: "web_1"`},
		{`{"Name":"web","Provider":"nomad","PortLabel":"nope"}`, ``, `port label "nope" referenced by services web does not exist`},
		{`{"Name":"web","Provider":"nomad","PortLabel":"http"}`, `{"Name":"web","Provider":"nomad","PortLabel":"other"}`, `port label "other" referenced by services web does not exist`},
		{`{"Name":"web","Provider":"nomad","PortLabel":"http"},{"Name":"web","Provider":"nomad","PortLabel":"http"}`, ``, `Services are not unique: group->web:http`},
		{`{"Name":"web","Provider":"nomad","Checks":[{"Name":"c","Type":"tcp","Interval":1000000000,"Timeout":1000000000}]}`, ``, `Check c invalid: check requires a port but neither check nor service "web" have a port`},
		{chk(`,"Path":""`), ``, `http type must have http path`},
		{chk(`,"Path":"http://x/"`), ``, `http type must have relative http path`},
		{`{"Name":"web","Provider":"nomad","PortLabel":"http","Checks":[{"Type":"grpc","Interval":1000000000,"Timeout":1000000000}]}`, ``, `invalid check type ("grpc"), must be one of tcp, http`},
		{`{"Name":"web","Provider":"nomad","PortLabel":"http","Checks":[{"Type":"tcp","Timeout":1000000000}]}`, ``, `missing required value interval. Interval cannot be less than 1s`},
		{`{"Name":"web","Provider":"nomad","PortLabel":"http","Checks":[{"Type":"tcp","Interval":100000000,"Timeout":1000000000}]}`, ``, `interval (100ms) cannot be lower than 1s`},
		{`{"Name":"web","Provider":"nomad","PortLabel":"http","Checks":[{"Type":"tcp","Interval":1000000000}]}`, ``, `missing required value timeout. Timeout cannot be less than 1s`},
		{chk(`,"Method":"BREW"`), ``, `method type "BREW" not supported in Nomad http check`},
		{chk(`,"OnUpdate":"ignore_warnings"`), ``, `on_update may only be set to ignore_warnings for Consul service checks`},
		{chk(`,"OnUpdate":"ignore","CheckRestart":{"Limit":2}`), ``, `on_update value "ignore" is not compatible with check_restart`},
		{chk(`,"CheckRestart":{"Limit":2,"IgnoreWarnings":true}`), ``, `ignore_warnings on check_restart only supported for Consul service checks`},
		{chk(`,"Expose":true`), ``, `expose may only be set for Consul service checks (service "web" in task group "g")`},
		{chk(`,"GRPCService":"x"`), ``, `Services.Checks.GRPCService is not supported (service "web" in task group "g")`},
		{``, `{"Name":"web","Provider":"nomad","PortLabel":"http","TaskName":"other"}`, `Service web is invalid: may only specify task the service belongs to, got "other"`},
		{`{"Name":"web","Provider":"nomad","AddressMode":"driver"}`, ``, `Service address_mode "driver" is not supported`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(serviceJob(c.group, c.task)), "")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s | %s: got %v, want %q", c.group, c.task, err, c.want)
		}
	}
}
