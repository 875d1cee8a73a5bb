package main

import (
	"flag"
	"fmt"
	"io"
)

const systemUsage = `Usage: ctlplane system gc [flags]

  gc    garbage-collect now what is finished (evaluations, allocations,
        deployments, stopped jobs, long-down nodes), the thresholds ignored,
        as nomad system gc; a management token when ACLs are on
`

// gcResult is PUT /v1/system/gc's answer.
type gcResult struct {
	Evals, Allocs, Deployments, Jobs, Nodes, Batches int
	Index                                            uint64
}

func runSystem(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 || args[0] != "gc" {
		fmt.Fprint(stderr, systemUsage)
		return 1
	}
	flags := flag.NewFlagSet("system gc", flag.ContinueOnError)
	flags.SetOutput(stderr)
	client := clientFlags(flags)
	if flags.Parse(args[1:]) != nil {
		return 1
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(stderr, "Error: unexpected arguments %q\n\n%s", flags.Args(), systemUsage)
		return 1
	}
	var out gcResult
	if _, err := client.call("PUT", "/v1/system/gc", nil, &out); err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Garbage collected: %d evaluations, %d allocations, %d deployments, %d jobs, %d nodes (%d Raft entries, index %d)\n",
		out.Evals, out.Allocs, out.Deployments, out.Jobs, out.Nodes, out.Batches, out.Index)
	return 0
}
