package main

import (
	"context"
	"strings"
	"testing"
)

// node drain and node eligibility against a dev agent: the node's fields
// change as `node status` shows them; bad flag combinations are usage
// errors; eligible while draining is refused with Nomad's text.
func TestCLINodeDrainAndEligibility(t *testing.T) {
	a, ac := devAgent(t, "-dev-nodes=2")
	waitNodes(t, ac, 2)
	addr := "-address=" + a.url
	// An allocation that never moves (migrate MaxParallel 0) keeps the
	// drain going: the drain of an empty node completes at once.
	job := `{"Job":{"ID":"pinned","TaskGroups":[{"Name":"g","Count":1,"Migrate":{"MaxParallel":0},` +
		`"Tasks":[{"Name":"t","Driver":"mock_driver","Config":{"run_for":"1h"}}]}]}}`
	if _, err := ac.RegisterJobJSON(context.Background(), []byte(job)); err != nil {
		t.Fatal(err)
	}
	var id string
	waitFor(t, "the allocation to be placed", func() bool {
		if as := allocsOf(t, ac, "pinned"); len(as) == 1 {
			id = as[0].NodeID
		}
		return id != ""
	})
	prefix := id[:8]

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"node", "drain", addr, prefix}, "exactly one of -enable and -disable is required"},
		{[]string{"node", "drain", "-enable", "-disable", addr, prefix}, "exactly one of -enable and -disable is required"},
		{[]string{"node", "drain", "-enable", "-force", "-no-deadline", addr, prefix}, "-force and -no-deadline are mutually exclusive"},
		{[]string{"node", "drain", "-enable", "-force", "-deadline=5m", addr, prefix}, "-deadline cannot be combined with -force or -no-deadline"},
		{[]string{"node", "drain", "-disable", "-force", addr, prefix}, "apply to -enable only"},
		{[]string{"node", "drain", "-enable", "-keep-ineligible", addr, prefix}, "-keep-ineligible applies to -disable only"},
		{[]string{"node", "eligibility", addr, prefix}, "exactly one of -enable and -disable is required"},
	} {
		if code, _, errOut := ctl(c.args...); code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}

	out := mustCode(t, 0, "node", "drain", "-enable", "-no-deadline", "-m", "kernel upgrade", addr, prefix)
	if !strings.Contains(out, `Node "`+id+`" drain strategy set`) {
		t.Errorf("drain -enable: %s", out)
	}
	n, _, err := ac.Node(context.Background(), id, nil)
	if err != nil || !n.Drain || n.DrainStrategy == nil || n.DrainStrategy.Deadline != 0 || n.SchedulingEligibility != "ineligible" ||
		n.LastDrain == nil || n.LastDrain.Meta["message"] != "kernel upgrade" {
		t.Fatalf("drained node: %+v %v", n, err)
	}
	if st := mustCode(t, 0, "node", "status", addr, prefix); !strings.Contains(st, "true (no deadline)") || !strings.Contains(st, "ineligible") {
		t.Errorf("node status of the draining node:\n%s", st)
	}
	code, _, errOut := ctl("node", "eligibility", "-enable", addr, prefix)
	if code != 1 || !strings.Contains(errOut, "can not set node's scheduling eligibility to eligible while it is draining") {
		t.Errorf("eligible while draining: exit %d %q", code, errOut)
	}
	out = mustCode(t, 0, "node", "drain", "-disable", "-keep-ineligible", addr, prefix)
	if !strings.Contains(out, `Node "`+id+`" drain strategy unset`) {
		t.Errorf("drain -disable: %s", out)
	}
	if n, _, _ = ac.Node(context.Background(), id, nil); n.Drain || n.SchedulingEligibility != "ineligible" || n.LastDrain.Status != "canceled" {
		t.Fatalf("cancelled, kept ineligible: %+v", n)
	}
	out = mustCode(t, 0, "node", "eligibility", "-enable", addr, prefix)
	if out != `Node "`+id+`" scheduling eligibility set: eligible for scheduling`+"\n" {
		t.Errorf("eligibility -enable: %q", out)
	}
	if n, _, _ = ac.Node(context.Background(), id, nil); n.SchedulingEligibility != "eligible" {
		t.Fatalf("eligible: %+v", n)
	}
	mustCode(t, 0, "node", "eligibility", "-disable", addr, prefix)
	if n, _, _ = ac.Node(context.Background(), id, nil); n.SchedulingEligibility != "ineligible" {
		t.Fatalf("ineligible: %+v", n)
	}
	if ls := mustCode(t, 0, "node", "status", addr); strings.Count(ls, "false") != 2 || !strings.Contains(ls, "ineligible") {
		t.Errorf("node list:\n%s", ls)
	}
}
