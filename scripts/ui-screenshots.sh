#!/usr/bin/env bash
# Regenerates the README's screenshots of the web UI (docs/ui-*.png): the
# canary test walks the rollout in headless Chromium and, with -ui-docs,
# saves the job page mid-rollout and the deployments page at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
make deps
go test -count=1 -run '^TestUICanaryRollout$' ./http/ui/ -ui-docs="$PWD/docs"
ls -l docs/ui-*.png
