// Package ctlplane_test holds the checks that hold over the whole module.
package ctlplane_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ctlplane/ctlplane"

// layers is the import order docs/architecture.md draws: a package may import
// packages of its own layer or of a lower one, never of a higher one. A
// pattern "p/..." covers p and every package below it, a bare "p" only p; the
// most specific pattern a package matches decides its layer. The client agent
// sits beside the server rather than under it; numbering it below state says
// that it may import api and limits only.
var layers = []struct {
	name     string
	patterns []string
}{
	0: {"foundation", []string{"limits/...", "api/..."}},
	1: {"client agent", []string{"client/..."}},
	2: {"state", []string{"state/..."}},
	3: {"fsm", []string{"fsm/..."}},
	4: {"scheduler", []string{"server/scheduler/..."}},
	5: {"services", []string{"server/..."}},
	6: {"server", []string{"server"}},
	7: {"http", []string{"http/..."}},
	8: {"composition root", []string{"server/agent/...", "server/servertest/...", "server/deployments/deploytest/...", "cmd/...", "scripts/...", "internal/..."}},
}

// layerOf returns the layer of pkg (a path inside the module), or -1 when no
// pattern covers it.
func layerOf(pkg string) int {
	layer, best := -1, -1
	for l, def := range layers {
		for _, p := range def.patterns {
			base, tree := strings.CutSuffix(p, "/...")
			if pkg != base && !(tree && strings.HasPrefix(pkg, base+"/")) {
				continue
			}
			// Longer bases are more specific; at equal length "p" beats "p/...".
			score := 2 * len(base)
			if !tree {
				score++
			}
			if score > best {
				layer, best = l, score
			}
		}
	}
	return layer
}

// listedPackage is what `go list -json` says of a package that the check reads.
type listedPackage struct {
	ImportPath  string
	Imports     []string
	TestImports []string
	Error       *struct{ Err string }
}

// TestImportLayers: no package imports one of a higher layer. Both a
// package's own files and its in-package tests count; external test packages
// (package x_test) stand above everything, since they start real servers.
func TestImportLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,Error", "./...").Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	checked := 0
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		if p.Error != nil {
			t.Errorf("go list %s: %s", p.ImportPath, p.Error.Err)
			continue
		}
		if p.ImportPath == module {
			continue // this file
		}
		pkg := strings.TrimPrefix(p.ImportPath, module+"/")
		from := layerOf(pkg)
		if from < 0 {
			t.Errorf("%s is in no layer: add it to the layer table of docs/architecture.md and of this test", pkg)
			continue
		}
		checked++
		check := func(imp, where string) {
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				return // the standard library and other modules
			}
			if to := layerOf(dep); to > from {
				t.Errorf("%s (layer %d, %s) imports %s (layer %d, %s)%s: a package may import only its own layer or lower ones (docs/architecture.md)",
					pkg, from, layers[from].name, dep, to, layers[to].name, where)
			}
		}
		for _, imp := range p.Imports {
			check(imp, "")
		}
		for _, imp := range p.TestImports {
			if !slices.Contains(p.Imports, imp) {
				check(imp, " in its tests")
			}
		}
	}
	if checked == 0 {
		t.Fatal("go list reported no packages")
	}
}

// TestImportLayersDocumented: the layer table of docs/architecture.md is the
// one TestImportLayers enforces, row for row.
func TestImportLayersDocumented(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	// A row: | 2 | state | `state/...` | what it holds |
	row := regexp.MustCompile("(?m)^\\| (\\d+) \\| ([^|]+) \\| ([^|]+) \\|")
	code := regexp.MustCompile("`([^`]+)`")
	rows := row.FindAllSubmatch(doc, -1)
	if len(rows) != len(layers) {
		t.Fatalf("docs/architecture.md has %d layer rows, the test %d", len(rows), len(layers))
	}
	for i, r := range rows {
		n, _ := strconv.Atoi(string(r[1]))
		name := strings.TrimSpace(string(r[2]))
		var patterns []string
		for _, m := range code.FindAllSubmatch(r[3], -1) {
			patterns = append(patterns, string(m[1]))
		}
		if n != i || name != layers[i].name || !slices.Equal(patterns, layers[i].patterns) {
			t.Errorf("docs/architecture.md row %d is layer %d %q %q; the test has layer %d %q %q",
				i, n, name, patterns, i, layers[i].name, layers[i].patterns)
		}
	}
}
