#!/usr/bin/env bash
# Runs every Go fuzz target of the project for FUZZTIME each (default 10s),
# within FUZZ_TOTAL seconds for all of them together (default 100): with
# many targets each gets FUZZ_TOTAL/count seconds when that is less than
# FUZZTIME (a FUZZTIME that is not in seconds, e.g. 1m or 500x, is used as
# it is). A crasher fails the run; go test writes it to the package's
# testdata/.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
total=${FUZZ_TOTAL:-100}
targets=$(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sort)
count=$(printf '%s\n' "$targets" | grep -c .)
if [[ $fuzztime =~ ^([0-9]+)s$ ]]; then
	per=$((total / count))
	((per < 2)) && per=2
	((per < BASH_REMATCH[1])) && fuzztime=${per}s
fi
echo "== $count fuzz targets, $fuzztime each"
printf '%s\n' "$targets" | while IFS=: read -r file decl; do
	fn=${decl#func }
	pkg=./$(dirname "${file#./}")
	echo "== $fn in $pkg ($fuzztime)"
	go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$fuzztime" "$pkg"
done
