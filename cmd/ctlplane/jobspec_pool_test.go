package main

import (
	"testing"
)

// TestHCLNodePool: a job's node_pool reaches the JSON job as NodePool.
func TestHCLNodePool(t *testing.T) {
	job, err := parseHCLJob("job.hcl", []byte("job \"a\" {\n node_pool = \"gpu\"\n group \"g\" {\n task \"t\" {\n driver = \"raw_exec\"\n }\n }\n}"))
	if err != nil {
		t.Fatal(err)
	}
	if job["NodePool"] != "gpu" {
		t.Errorf("NodePool: %#v", job["NodePool"])
	}
	if _, err := parseHCLJob("job.hcl", []byte("job \"a\" {\n node_pool = 3\n}")); err == nil {
		t.Error("a numeric node_pool was accepted")
	}
}
