package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// compare runs this benchmark on this tree and on revision rev in turn,
// rounds times each, with the same flags (but -baseline and -rounds): the
// reference is measured in the same run. The baseline is built from rev's
// tree with this tree's scripts/orchbench and scripts/internal overlaid,
// so both sides run the same load generator.
func compare(rev string, rounds int) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "orchbench-")
	if err != nil {
		fail("%v", err)
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		fail("finding this binary: %v", err)
	}
	fmt.Fprintf(os.Stderr, "orchbench: building the benchmark at %s\n", rev)
	old, err := buildAt(ctx, dir, rev)
	if err != nil {
		fail("%v", err)
	}
	var args []string
	for i := 1; i < len(os.Args); i++ {
		a := os.Args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "baseline" || name == "rounds" {
			if !hasValue {
				i++ // -baseline REV: its value is the next argument
			}
			continue
		}
		args = append(args, a)
	}
	fmt.Printf("# orchbench %s, this tree and %s alternating, %d round(s)\n", strings.Join(args, " "), rev, rounds)
	for r := 1; r <= rounds; r++ {
		for _, side := range []struct{ name, bin string }{{"this tree", self}, {rev, old}} {
			fmt.Printf("## %s, round %d\n", side.name, r)
			cmd := exec.CommandContext(ctx, side.bin, args...)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Run(); err != nil {
				fail("%s, round %d: %v", side.name, r, err)
			}
		}
	}
}

// buildAt builds orchbench over revision rev's tree (see compare).
func buildAt(ctx context.Context, dir, rev string) (string, error) {
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		return cmd.Run()
	}
	if err := run("sh", "-c", `git archive --format=tar "$1" | tar -x -C "$2"`, "sh", rev, src); err != nil {
		return "", fmt.Errorf("extracting revision %s: %w", rev, err)
	}
	top, err := exec.CommandContext(ctx, "git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("finding the repository: %w", err)
	}
	for _, d := range []string{"scripts/orchbench", "scripts/internal"} {
		if err := os.RemoveAll(filepath.Join(src, d)); err != nil {
			return "", err
		}
		if err := run("cp", "-r", filepath.Join(strings.TrimSpace(string(top)), d), filepath.Join(src, d)); err != nil {
			return "", fmt.Errorf("copying %s: %w", d, err)
		}
	}
	bin := filepath.Join(dir, "orchbench-"+strings.NewReplacer("/", "_", "~", "_", "^", "_").Replace(rev))
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./scripts/orchbench")
	build.Dir, build.Stdout, build.Stderr = src, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building revision %s: %w", rev, err)
	}
	return bin, nil
}
