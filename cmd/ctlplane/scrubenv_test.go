package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The introduction token leaves /proc/PID/environ, not only Go's copy.
func TestScrubInitialEnviron(t *testing.T) {
	if os.Getenv("SCRUB_CHILD") == "1" {
		if err := scrubInitialEnviron("SCRUB_SECRET", "SCRUB_ABSENT"); err != nil {
			os.Stdout.WriteString("error: " + err.Error())
			os.Exit(2)
		}
		buf, _ := os.ReadFile("/proc/self/environ")
		os.Stdout.Write(buf)
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestScrubInitialEnviron$")
	cmd.Env = append(os.Environ(), "SCRUB_CHILD=1", "SCRUB_SECRET=s3cr3t-intro-token", "SCRUB_KEEP=visible")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v %s", err, out)
	}
	if strings.Contains(string(out), "s3cr3t-intro-token") || strings.Contains(string(out), "SCRUB_SECRET") {
		t.Fatalf("the secret is still in /proc/self/environ")
	}
	if !strings.Contains(string(out), "SCRUB_KEEP=visible") || !strings.Contains(string(out), "SCRUB_CHILD=1") {
		t.Fatalf("other variables were lost: %q", out)
	}
}
