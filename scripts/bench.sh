#!/usr/bin/env bash
# Runs every benchmark of the project in one go and prints the numbers:
#   1. single persistent node: disk fsync, creates at 1/16/64 clients, reads,
#      blocked-query wake-up, 10,000-watcher fan-out (scripts/loadgen)
#   2. the same creates with ACLs off
#   3. creates through the leader of a local 3-node cluster (scripts/cluster.sh)
#   4. failover time over 10 leader kills (scripts/failover)
#   5. snapshot save/restore at 100k and 1M rules (scripts/snapbench)
#   6. Go benchmarks (token resolution, ...)
# Usage: scripts/bench.sh [quick]   ("quick": short durations, smaller sizes)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=${1:-}
dur=5s watchers=10000 trials=10 rules=100000,1000000
if [ "$quick" = quick ]; then dur=1s watchers=1000 trials=2 rules=20000; fi

echo "== ctlplane benchmarks, $(date -u +%FT%TZ), $(go version), $(nproc) cores"
echo "== 1. single node (ACLs on)"
go run ./scripts/loadgen -spawn -duration="$dur" -watchers="$watchers"
echo "== 2. single node, ACLs off (creates)"
go run ./scripts/loadgen -spawn -duration="$dur" -scenarios=create -agent-args=-acl-enabled=false
echo "== 3. 3-node cluster (creates through the leader)"
dir=$(mktemp -d)
trap 'scripts/cluster.sh stop "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
scripts/cluster.sh start "$dir" >/dev/null
leader=$(curl -s http://127.0.0.1:8501/v1/status/leader?stale | tr -d '"')
http="127.0.0.1:850${leader: -1}"
echo "leader raft $leader, http $http"
go run ./scripts/loadgen -addr="http://$http" -token="$(cat "$dir/management-token")" -duration="$dur" -scenarios=create
scripts/cluster.sh stop "$dir" >/dev/null
echo "== 4. failover"
go run ./scripts/failover -trials="$trials"
echo "== 5. snapshots"
go run ./scripts/snapbench -rules="$rules"
echo "== 6. Go benchmarks"
go test -run '^$' -bench . -benchtime 200000x ./server/acl/
