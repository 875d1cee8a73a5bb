package jobs

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctlplane/ctlplane/state"
)

const minimal = `{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"mock_driver"}]}]}`

// TestParseDefaults: a minimal job gets every one of Nomad's defaults.
func TestParseDefaults(t *testing.T) {
	job, err := Parse([]byte(minimal), "")
	if err != nil {
		t.Fatal(err)
	}
	want := &state.Job{
		Region: "global", Namespace: "default", ID: "web", Name: "web", Type: "service", Priority: 50,
		Datacenters: []string{"*"}, NodePool: "default",
		Update: DefaultUpdateStrategy(),
		TaskGroups: []*state.TaskGroup{{
			Name: "g", Count: 1, Update: DefaultUpdateStrategy(),
			RestartPolicy:    &state.RestartPolicy{Attempts: 2, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "fail"},
			ReschedulePolicy: &state.ReschedulePolicy{Delay: 30 * time.Second, DelayFunction: "exponential", MaxDelay: time.Hour, Unlimited: true},
			Migrate:          &state.MigrateStrategy{MaxParallel: 1, HealthCheck: "checks", MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute},
			Tasks: []*state.Task{{
				Name: "t", Driver: "mock_driver", KillTimeout: 5 * time.Second,
				Resources: &state.Resources{CPU: 100, MemoryMB: 300},
			}},
		}},
	}
	if !reflect.DeepEqual(job, want) {
		t.Fatalf("got  %+v\nwant %+v", job, want)
	}
	if got := job.TaskGroups[0].Update; *got != (state.UpdateStrategy{Stagger: 30 * time.Second, MaxParallel: 1, HealthCheck: "checks",
		MinHealthyTime: 10 * time.Second, HealthyDeadline: 5 * time.Minute, ProgressDeadline: 10 * time.Minute}) {
		t.Errorf("default strategy: %+v", got)
	}
}

// TestParseCanonicalize: table of inputs and the canonical field they set.
func TestParseCanonicalize(t *testing.T) {
	group := func(extra string) string {
		return `{"ID":"web"` + extra + `,"TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]}]}`
	}
	cases := []struct {
		name  string
		body  string
		ns    string
		check func(*state.Job) bool
	}{
		{"name defaults to ID", minimal, "", func(j *state.Job) bool { return j.Name == "web" }},
		{"name kept", group(`,"Name":"other"`), "", func(j *state.Job) bool { return j.Name == "other" }},
		{"request namespace", minimal, "team", func(j *state.Job) bool { return j.Namespace == "team" }},
		{"body namespace wins", group(`,"Namespace":"body"`), "team", func(j *state.Job) bool { return j.Namespace == "body" }},
		{"region kept", group(`,"Region":"eu"`), "", func(j *state.Job) bool { return j.Region == "eu" }},
		{"datacenter globs kept", group(`,"Datacenters":["dc*","east"]`), "", func(j *state.Job) bool {
			return reflect.DeepEqual(j.Datacenters, []string{"dc*", "east"})
		}},
		{"empty meta is nil", group(`,"Meta":{}`), "", func(j *state.Job) bool { return j.Meta == nil }},
		{"partial job update filled", group(`,"Update":{"MaxParallel":3,"Canary":1}`), "", func(j *state.Job) bool {
			u := j.TaskGroups[0].Update
			return u.MaxParallel == 3 && u.Canary == 1 && u.Stagger == 30*time.Second && u.HealthCheck == "checks"
		}},
		{"group merges field by field", `{"ID":"web","Update":{"MaxParallel":3,"AutoRevert":true},"TaskGroups":[{"Name":"g","Update":{"Canary":2,"MaxParallel":5},"Tasks":[{"Name":"t","Driver":"d"}]}]}`, "", func(j *state.Job) bool {
			u := j.TaskGroups[0].Update
			return u.MaxParallel == 5 && u.Canary == 2 && u.AutoRevert && j.Update.MaxParallel == 3 && j.Update.Canary == 0
		}},
		{"empty job strategy not inherited", `{"ID":"web","Update":{"Stagger":0,"MaxParallel":0,"HealthCheck":"","MinHealthyTime":0,"HealthyDeadline":0,"ProgressDeadline":0},"TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]}]}`, "", func(j *state.Job) bool {
			return j.TaskGroups[0].Update == nil
		}},
		{"restart merged with defaults", `{"ID":"web","TaskGroups":[{"Name":"g","RestartPolicy":{"Attempts":5,"Mode":"delay"},"Tasks":[{"Name":"t","Driver":"d"}]}]}`, "", func(j *state.Job) bool {
			rp := j.TaskGroups[0].RestartPolicy
			return *rp == state.RestartPolicy{Attempts: 5, Interval: 30 * time.Minute, Delay: 15 * time.Second, Mode: "delay"}
		}},
		{"count zero kept", `{"ID":"web","TaskGroups":[{"Name":"g","Count":0,"Tasks":[{"Name":"t","Driver":"d"}]}]}`, "", func(j *state.Job) bool {
			return j.TaskGroups[0].Count == 0
		}},
		{"resources partially given", `{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d","Resources":{"MemoryMB":64}}]}]}`, "", func(j *state.Job) bool {
			return *j.TaskGroups[0].Tasks[0].Resources == state.Resources{CPU: 100, MemoryMB: 64}
		}},
		{"kill timeout kept", `{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d","KillTimeout":1000000000,"KillSignal":"SIGINT"}]}]}`, "", func(j *state.Job) bool {
			tk := j.TaskGroups[0].Tasks[0]
			return tk.KillTimeout == time.Second && tk.KillSignal == "SIGINT"
		}},
		{"multiregion counts default to 1", group(`,"Multiregion":{"Regions":[{"Name":"east"}]}`), "", func(j *state.Job) bool {
			return j.Multiregion.Strategy != nil && *j.Multiregion.Regions[0].Count == 1
		}},
		{"stop kept", group(`,"Stop":true`), "", func(j *state.Job) bool { return j.Stop }},
		{"read-only fields ignored", group(`,"Version":7,"Status":"running","Stable":true,"CreateIndex":9,"SubmitTime":5`), "", func(j *state.Job) bool {
			return j.Version == 0 && j.Status == "" && !j.Stable && j.CreateIndex == 0 && j.SubmitTime == 0
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job, err := Parse([]byte(c.body), c.ns)
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(job) {
				t.Errorf("unexpected canonical job: %+v", job)
			}
		})
	}
}

// TestParseErrors: every validation text, as Nomad words it, and the caps.
func TestParseErrors(t *testing.T) {
	task := func(fields string) string {
		return `{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"` + fields + `}]}]}`
	}
	group := func(fields string) string {
		return `{"ID":"web","TaskGroups":[{"Name":"g"` + fields + `,"Tasks":[{"Name":"t","Driver":"d"}]}]}`
	}
	job := func(fields string) string {
		return `{"ID":"web"` + fields + `,"TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]}]}`
	}
	update := func(u string) string { return group(`,"Update":` + u) }
	tg := "Task group g validation failed: "
	long := strings.Repeat("x", 129)
	cases := []struct{ body, want string }{
		{``, "Job must be specified"},
		{`null`, "Job must be specified"},
		{`{"TaskGroups":[]}`, "Job ID hasn't been provided"},
		{`{"ID":""}`, "Job ID hasn't been provided"},
		{`{"ID":"web","Foo":1}`, `Job decoding failed: json: unknown field "Foo"`},
		{task(`,"Bogus":true`), `Job decoding failed: json: unknown field "Bogus"`},
		{`{"ID":"web"} {}`, "Job decoding failed: unexpected data after the JSON object"},
		{`{"ID":"web","Priority":"high"}`, "Job decoding failed: json: cannot unmarshal string into Go struct field JobSpec.Priority of type int"},
		{`{"ID":"a b","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]}]}`, "Job ID contains a space"},
		{`{"ID":"a\u0000b","Name":"n","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]}]}`, "Job ID contains a null character"},
		{`{"ID":"a/b","Name":"n","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]}]}`, "Job ID contains a slash: the job could not be addressed by its URL path"},
		{`{"ID":"` + long + `","Name":"n","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]}]}`, "Job ID is 129 characters long: at most 128 are allowed"},
		{job(`,"Name":""`), "Missing job name"},
		{job(`,"Name":"` + long + `"`), "Job Name is 129 characters long: at most 128 are allowed"},
		{job(`,"Namespace":"a/b"`), `Invalid namespace "a/b": a namespace name is 1 to 64 letters, digits, '-' or '_'`},
		{job(`,"Type":"batch"`), `Job type "batch" is not supported: only service jobs are supported for now`},
		{job(`,"Type":"system"`), `Job type "system" is not supported: only service jobs are supported for now`},
		{job(`,"Priority":-1`), "job priority must be between [1, 100]"},
		{job(`,"Priority":101`), "job priority must be between [1, 100]"},
		{job(`,"Priority":101,"Name":""`), "2 errors occurred:\n\t* Missing job name\n\t* job priority must be between [1, 100]"},
		{job(`,"Datacenters":[""]`), "Job datacenter must be non-empty string"},
		{`{"ID":"web"}`, "Missing job task groups"},
		{`{"ID":"web","TaskGroups":[{"Tasks":[{"Name":"t","Driver":"d"}]}]}`, "2 errors occurred:\n\t* Job task group 1 missing name\n\t* Task group  validation failed: Missing task group name"},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]},{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]}]}`, "Job task group 2 redefines 'g' from group 1"},
		{group(`,"Count":-1`), tg + "Task group count can't be negative"},
		{group(`,"Count":10001`), tg + "Task group Count 10001 is over the limit of 10000"},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[]}]}`, tg + "Missing tasks for task group"},
		{update(`{"HealthCheck":"bogus"}`), tg + `Invalid health check given: "bogus"`},
		{update(`{"MaxParallel":-1}`), tg + "Max parallel can not be less than zero: -1 < 0"},
		{update(`{"Canary":-1}`), tg + "Canary count can not be less than zero: -1 < 0"},
		{update(`{"AutoPromote":true}`), tg + "Auto Promote requires a Canary count greater than zero"},
		{update(`{"MinHealthyTime":-1}`), tg + "Minimum healthy time may not be less than zero: -1ns"},
		{update(`{"HealthyDeadline":0}`), "2 errors occurred:\n\t* " + tg + "Healthy deadline must be greater than zero: 0s\n\t* " + tg + "Minimum healthy time must be less than healthy deadline: 10s > 0s"},
		{update(`{"ProgressDeadline":-1}`), "2 errors occurred:\n\t* " + tg + "Progress deadline must be zero or greater: -1ns\n\t* " + tg + "Healthy deadline must be less than progress deadline: 5m0s > -1ns"},
		{update(`{"MinHealthyTime":40000000000,"HealthyDeadline":30000000000}`), tg + "Minimum healthy time must be less than healthy deadline: 40s > 30s"},
		{update(`{"HealthyDeadline":30000000000,"ProgressDeadline":20000000000}`), tg + "Healthy deadline must be less than progress deadline: 30s > 20s"},
		{update(`{"Stagger":0}`), tg + "Stagger must be greater than zero: 0s"},
		{update(`{"MinHealthyTime":1000000000,"HealthyDeadline":3000000000,"ProgressDeadline":4000000000}`), tg + "KillTimout (5s) longer than the group's ProgressDeadline (4s)"},
		{group(`,"MaxClientDisconnect":-1`), tg + "max_client_disconnect cannot be negative"},
		{group(`,"RestartPolicy":{"Mode":"sometimes"}`), tg + `Unsupported restart mode: "sometimes"`},
		{group(`,"RestartPolicy":{"Mode":"delay","Attempts":0}`), tg + `Restart policy "delay" with 0 attempts is ambiguous`},
		{group(`,"RestartPolicy":{"Interval":1000000000,"Attempts":0}`), tg + "Interval can not be less than 5s (got 1s)"},
		{group(`,"RestartPolicy":{"Attempts":10,"Delay":60000000000,"Interval":300000000000}`), tg + "Nomad can't restart the TaskGroup 10 times in an interval of 5m0s with a delay of 1m0s"},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Driver":"d"}]}]}`, "2 errors occurred:\n\t* " + tg + "Task 1 missing name\n\t* " + tg + "Task  validation failed: Missing task name"},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"},{"Name":"t","Driver":"d"}]}]}`, tg + "Task 2 redefines 't' from task 1"},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"a/b","Driver":"d"}]}]}`, tg + "Task a/b validation failed: Task name cannot include slashes"},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t"}]}]}`, tg + "Task t validation failed: Missing task driver"},
		{task(`,"KillTimeout":-1`), tg + "Task t validation failed: KillTimeout must be a positive value"},
		{task(`,"Resources":{"CPU":0}`), tg + "Task t validation failed: minimum CPU value is 1; got 0"},
		{task(`,"Resources":{"MemoryMB":5}`), tg + "Task t validation failed: minimum MemoryMB value is 10; got 5"},
		{job(`,"Meta":{"":"x"}`), "Job Meta has an empty key"},
		{job(`,"Meta":{"k":"` + strings.Repeat("v", 1025) + `"}`), `Job Meta value of "k" is 1025 bytes: at most 1024 are allowed`},
		{task(`,"Env":{"` + long + `":"x"}`), tg + `Task t validation failed: Task Env key "xxxxxxxxxxxxxxxxxxxx"... is 129 characters long: at most 128 are allowed`},
		{task(`,"Config":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":{"a":1}}}}}}}}}}}}}}}}}`), tg + "Task t validation failed: Task Config is nested more than 16 levels deep"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.body), "")
		if err == nil {
			t.Errorf("%s: accepted, want %q", c.body, c.want)
			continue
		}
		se, ok := err.(*state.Error)
		if !ok || se.Code != state.ErrInvalid {
			t.Errorf("%s: error %T %v is not an ErrInvalid", c.body, err, err)
		}
		if err.Error() != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.body, err.Error(), c.want)
		}
	}
}

// TestParseCaps: the count caps (too big to write inline).
func TestParseCaps(t *testing.T) {
	var groups, tasks, meta []string
	for i := range 101 {
		groups = append(groups, `{"Name":"g`+itoa(i)+`","Tasks":[{"Name":"t","Driver":"d"}]}`)
		tasks = append(tasks, `{"Name":"t`+itoa(i)+`","Driver":"d"}`)
	}
	for i := range 65 {
		meta = append(meta, `"k`+itoa(i)+`":"v"`)
	}
	cases := []struct{ body, want string }{
		{`{"ID":"web","TaskGroups":[` + strings.Join(groups, ",") + `]}`, "Job has 101 task groups: at most 100 are allowed"},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[` + strings.Join(tasks, ",") + `]}]}`, "Task group g validation failed: Task group has 101 tasks: at most 100 are allowed"},
		{`{"ID":"web","Meta":{` + strings.Join(meta, ",") + `},"TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d"}]}]}`, "Job Meta has 65 keys: at most 64 are allowed"},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d","Config":{"x":"` + strings.Repeat("y", 70000) + `"}}]}]}`, "Task group g validation failed: Task t validation failed: Task Config is 70008 bytes: at most 65536 are allowed"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.body), "")
		if err == nil || err.Error() != c.want {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestParseUnsupported: fields Nomad has and ctlplane does not implement
// are accepted when empty and refused, by name, when they carry a value.
func TestParseUnsupported(t *testing.T) {
	accepted := []string{
		`{"ID":"web","Constraints":null,"AllAtOnce":false,"NodePool":"","Spreads":[],"Periodic":null,"Payload":null,"Dispatched":false,"ParentID":"","UI":{},"TaskGroups":[{"Name":"g","Networks":null,"EphemeralDisk":null,"ShutdownDelay":0,"Services":[],"Tasks":[{"Name":"t","Driver":"d","User":"","Leader":false,"ShutdownDelay":0,"Kind":"","Lifecycle":{"Hook":"","Sidecar":false},"Resources":{"Cores":0,"DiskMB":null,"Networks":[]}}]}]}`,
		`{"ID":"web","TaskGroups":[{"Name":"g","RestartPolicy":{"RenderTemplates":false},"Tasks":[{"Name":"t","Driver":"d"}]}]}`,
		// Nomad's own defaults, as a job canonicalized by its client carries them.
		`{"ID":"web","TaskGroups":[{"Name":"g","EphemeralDisk":{"Sticky":false,"Migrate":false,"SizeMB":300},` +
			`"ReschedulePolicy":{"Attempts":0,"Interval":0,"Delay":30000000000,"DelayFunction":"exponential","MaxDelay":3600000000000,"Unlimited":true},` +
			`"Migrate":{"MaxParallel":1,"HealthCheck":"checks","MinHealthyTime":10000000000,"HealthyDeadline":300000000000},` +
			`"RestartPolicy":{"Attempts":4},` +
			`"Tasks":[{"Name":"t","Driver":"d","LogConfig":{"MaxFiles":10,"MaxFileSizeMB":10,"Disabled":false},` +
			`"RestartPolicy":{"Interval":1800000000000,"Attempts":4,"Delay":15000000000,"Mode":"fail","RenderTemplates":false}}]}]}`,
	}
	for _, body := range accepted {
		if _, err := Parse([]byte(body), ""); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
	refused := []struct{ body, want string }{
		{`{"ID":"web","TaskGroups":[{"Name":"g","Networks":[{"DNS":{"Servers":["1.1.1.1"]}}],"Tasks":[]}]}`, `Networks.DNS is not supported (task group "g")`},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Networks":[{"DynamicPorts":[{"Label":"a","IgnoreCollision":true}]}],"Tasks":[]}]}`, `Networks.Ports.IgnoreCollision is not supported (task group "g")`},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d","Resources":{"Networks":[{"DynamicPorts":[{"Label":"http"}]}]}}]}]}`, `Resources.Networks is not supported (task "t" in task group "g")`},
		{`{"ID":"web","AllAtOnce":true}`, "AllAtOnce is not supported"},
		{`{"ID":"web","Periodic":{"Enabled":true}}`, "Periodic is not supported"},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Services":[{"Name":"s","Connect":{"Native":true}}],"Tasks":[]}]}`, `Services.Connect is not supported (service "s" in task group "g")`},
		{`{"ID":"web","TaskGroups":[{"Name":"g","EphemeralDisk":{"SizeMB":500},"Tasks":[]}]}`, `EphemeralDisk is not supported (task group "g")`},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d","LogConfig":{"MaxFiles":3}}]}]}`, `LogConfig is not supported (task "t" in task group "g")`},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d","RestartPolicy":{"Attempts":5}}]}]}`, `RestartPolicy is not supported (task "t" in task group "g")`},
		{`{"ID":"web","TaskGroups":[{"Name":"g","RestartPolicy":{"RenderTemplates":true},"Tasks":[]}]}`, `RestartPolicy.RenderTemplates is not supported (task group "g")`},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d","User":"root"}]}]}`, `User is not supported (task "t" in task group "g")`},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d","Lifecycle":{"Hook":"prestart"}}]}]}`, `Lifecycle is not supported (task "t" in task group "g")`},
		{`{"ID":"web","TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"d","Resources":{"DiskMB":10}}]}]}`, `Resources.DiskMB is not supported (task "t" in task group "g")`},
		{`{"ID":"web","Multiregion":{"Regions":[{"Name":"a","NodePool":"x"}]}}`, "Multiregion.Regions.NodePool is not supported"},
	}
	for _, c := range refused {
		_, err := Parse([]byte(c.body), "")
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: got %v, want %q", c.body, err, c.want)
		}
	}
}
