package main

import (
	"context"
	"strings"
	"testing"
)

// `alloc fs`, `alloc signal`, `alloc restart` and `node status -stats` on a
// dev agent: through the servers to the client's own API.
func TestCLIAllocFSSignalRestart(t *testing.T) {
	pids := taskPids(t)
	a, ac := devAgent(t)
	nodes := waitNodes(t, ac, 1)
	addr := "-address=" + a.url
	script := `echo $$ > "$PIDDIR/$NOMAD_ALLOC_ID.pid"; printf 'hi there\n' > "$NOMAD_TASK_DIR/note.txt"; trap 'echo got-usr1' USR1; echo "ready"; while true; do sleep 0.1; done`
	mustCode(t, 0, "job", "run", addr, jobSpec{id: "fsjob", count: 1, script: script}.write(t, pids))
	alloc := allocsOf(t, ac, "fsjob")[0]
	waitFor(t, "the task's file", func() bool {
		code, out, _ := ctl("alloc", "fs", addr, alloc.ID[:8], "main/note.txt")
		return code == 0 && out == "hi there\n"
	})
	if ls := mustCode(t, 0, "alloc", "fs", addr, alloc.ID[:8]); !strings.Contains(ls, "alloc/") || !strings.Contains(ls, "main/") || !strings.Contains(ls, "Modified Time") {
		t.Errorf("alloc fs /:\n%s", ls)
	}
	if st := mustCode(t, 0, "alloc", "fs", "-stat", addr, alloc.ID[:8], "main/note.txt"); !strings.Contains(st, "9 B") || !strings.Contains(st, "note.txt") {
		t.Errorf("alloc fs -stat:\n%s", st)
	}
	if code, _, errOut := ctl("alloc", "fs", addr, alloc.ID[:8], "../../"); code != 1 || !strings.Contains(errOut, `".." is not allowed`) {
		t.Errorf("alloc fs ../../: %d %s", code, errOut)
	}

	if out := mustCode(t, 0, "alloc", "signal", "-s", "SIGUSR1", addr, alloc.ID[:8], "main"); !strings.Contains(out, "Sent SIGUSR1") {
		t.Errorf("alloc signal: %s", out)
	}
	waitFor(t, "the trap's output", func() bool {
		return strings.Contains(mustCode(t, 0, "alloc", "logs", addr, alloc.ID[:8]), "got-usr1")
	})
	if code, _, errOut := ctl("alloc", "signal", "-s", "SIGNOPE", addr, alloc.ID[:8]); code != 1 || !strings.Contains(errOut, `invalid signal "SIGNOPE"`) {
		t.Errorf("alloc signal -s SIGNOPE: %d %s", code, errOut)
	}
	mustCode(t, 0, "alloc", "restart", addr, alloc.ID[:8])
	waitFor(t, "the restart", func() bool {
		al, _, err := ac.Allocation(context.Background(), alloc.ID, nil)
		return err == nil && al.TaskStates["main"].Restarts == 1 && al.TaskStates["main"].State == "running"
	})
	if st := mustCode(t, 0, "alloc", "status", addr, alloc.ID[:8]); !strings.Contains(st, "Restart Signaled") || !strings.Contains(st, "Total Restarts") {
		t.Errorf("alloc status after a restart:\n%s", st)
	}
	if ns := mustCode(t, 0, "node", "status", "-stats", addr, nodes[0].ID[:8]); !strings.Contains(ns, "Host Resource Utilization") || !strings.Contains(ns, "cpu0") {
		t.Errorf("node status -stats:\n%s", ns)
	}
}
