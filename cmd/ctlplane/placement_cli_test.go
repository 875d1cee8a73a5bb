package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIPlacementOnDevFleet: a dev agent started with -dev-node-group
// runs two classes of simulated nodes; `node status -verbose` shows a
// node's class, pool and fingerprint; a job constrained to one class is
// placed there and `alloc status` explains the placement; `job plan` of
// an impossible constraint says which constraint filtered the nodes.
func TestCLIPlacementOnDevFleet(t *testing.T) {
	a, ac := devAgent(t, "-dev-nodes=0", "-dev-node-group=count=2,name=web,class=web,meta.tier=front",
		"-dev-node-group=count=1,name=gpu,class=gpu,attr.gpu.count=1")
	addr := "-address=" + a.url
	nodes := waitNodes(t, ac, 3)
	var gpu string
	for _, n := range nodes {
		if strings.Contains(n.Name, "-gpu-") {
			gpu = n.ID
		}
	}
	if gpu == "" {
		t.Fatalf("no gpu node among %d", len(nodes))
	}
	st := mustCode(t, 0, "node", "status", "-verbose", addr, gpu[:8])
	for _, want := range []string{"Class", "= gpu", "Node Pool", "= default", "gpu.count", "kernel.name", "= linux", "driver.mock_driver", "nomad.version"} {
		if !strings.Contains(st, want) {
			t.Errorf("node status -verbose lacks %q:\n%s", want, st)
		}
	}

	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	job := write("gpu.hcl", `job "train" {
  group "g" {
    constraint {
      attribute = "${node.class}"
      value     = "gpu"
    }
    network {
      port "http" {}
      port "db" {
        static = 5432
        to     = 6432
      }
    }
    task "t" {
      driver = "mock_driver"
      config { run_for = "1h" }
    }
  }
}`)
	mustCode(t, 0, "job", "run", "-detach", addr, job)
	var allocID string
	waitFor(t, "the allocation", func() bool {
		as := allocsOf(t, ac, "train")
		if len(as) == 1 {
			allocID = as[0].ID
		}
		return allocID != ""
	})
	as := allocsOf(t, ac, "train")
	if as[0].NodeID != gpu {
		t.Fatalf("placed on %s, want the gpu node %s", as[0].NodeID, gpu)
	}
	st = mustCode(t, 0, "alloc", "status", addr, allocID[:8])
	for _, want := range []string{"Placement Metrics", `* Class "web": 2 nodes excluded by filter`, "binpack", "final score", gpu,
		`Allocation Addresses (mode = "host"):`, "*http  yes      127.0.0.1:20000", "*db    no       127.0.0.1:5432 -> 6432"} {
		if !strings.Contains(st, want) {
			t.Errorf("alloc status lacks %q:\n%s", want, st)
		}
	}

	bad := write("bad.hcl", `job "nowhere" {
  constraint {
    attribute = "${attr.kernel.name}"
    value     = "windows"
  }
  group "g" {
    task "t" {
      driver = "mock_driver"
    }
  }
}`)
	code, out, errOut := ctl("job", "plan", addr, bad)
	defer func() {
		// job run monitors the evaluation: it says why nothing was placed
		// and which evaluation waits for capacity.
		code, out, errOut := ctl("job", "run", addr, bad)
		if code != exitFailed {
			t.Errorf("job run of an unplaceable job: exit %d, want %d (Nomad's placement failure)", code, exitFailed)
		}
		for _, want := range []string{`finished with status "complete" but failed to place all allocations:`,
			`Task Group "g" (failed to place 1 allocation):`, `* Constraint "${attr.kernel.name} = windows": 2 nodes excluded by filter`,
			"waiting for additional capacity to place remainder"} {
			if !strings.Contains(out, want) {
				t.Errorf("job run lacks %q: exit %d\n%s\n%s", want, code, out, errOut)
			}
		}
	}()
	if code != 1 || !strings.Contains(out, `Task Group "g" (failed to place 1 allocation)`) ||
		!strings.Contains(out, `* Constraint "${attr.kernel.name} = windows": 2 nodes excluded by filter`) ||
		!strings.Contains(out, `* Constraint "computed class ineligible": 1 nodes excluded by filter`) {
		t.Errorf("job plan: exit %d\n%s\n%s", code, out, errOut)
	}
}
