#!/usr/bin/env bash
# Runs every Go fuzz target of the project for FUZZTIME each (default 10s).
# A crasher fails the run; go test writes it to the package's testdata/.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sort | while IFS=: read -r file decl; do
	fn=${decl#func }
	pkg=./$(dirname "${file#./}")
	echo "== $fn in $pkg ($fuzztime)"
	go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$fuzztime" "$pkg"
done
