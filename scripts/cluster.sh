#!/usr/bin/env bash
# Starts or stops a local 3-node ctlplane cluster on loopback.
#   scripts/cluster.sh start [DIR]   build, start 3 servers in the background, wait for a leader
#   scripts/cluster.sh stop  [DIR]   SIGTERM them and wait until they have exited
#   scripts/cluster.sh status [DIR]  show who leads
# Servers: n1 http 127.0.0.1:8501 raft :8301, n2 :8502/:8302, n3 :8503/:8303.
# Data and logs live in DIR (default ./data/cluster).
# ACLs are on (the default of persistent agents): the servers are started with
# an initial management token, $CTLPLANE_TOKEN if set, else one generated once
# and kept in DIR/management-token; `start` prints the export line to use it.
# Raft between the servers is mutual TLS: `start` creates a CA and a server
# certificate once, with `ctlplane tls`, in DIR/tls. The HTTP addresses also
# answer HTTPS (CTLPLANE_CACERT=DIR/tls/ctlplane-agent-ca.pem).
# CLUSTER_TLS=0 starts them without TLS instead (-insecure-raft: Raft over
# plain TCP, HTTP only), to compare with an etcd whose peers run without TLS.
# CLUSTER_ARGS adds agent flags to every server (e.g. -raft-log-store=wal).
# CLUSTER_BIN runs that ctlplane binary instead of building this tree's (to
# compare with another revision's build).
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:-}
dir=${2:-data/cluster}
bin=${CLUSTER_BIN:-bin/ctlplane}

token() {
	if [ -n "${CTLPLANE_TOKEN:-}" ]; then
		echo "$CTLPLANE_TOKEN"
	elif [ -f "$dir/management-token" ]; then
		cat "$dir/management-token"
	else
		cat /proc/sys/kernel/random/uuid | tee "$dir/management-token"
	fi
}

certs() {
	mkdir -p "$dir/tls"
	if [ ! -f "$dir/tls/dc1-server-ctlplane-0.pem" ]; then
		(cd "$dir/tls" && "$abs_bin" tls ca create >/dev/null && "$abs_bin" tls cert create -server -dc dc1 >/dev/null)
	fi
}

start() {
	if [ -z "${CLUSTER_BIN:-}" ]; then go build -o "$bin" ./cmd/ctlplane; fi
	abs_bin=$(realpath "$bin")
	mkdir -p "$dir"
	tls_args=(-insecure-raft)
	if [ "${CLUSTER_TLS:-1}" != 0 ]; then
		certs
		tls_args=(-tls-ca-file="$dir/tls/ctlplane-agent-ca.pem"
			-tls-cert-file="$dir/tls/dc1-server-ctlplane-0.pem"
			-tls-key-file="$dir/tls/dc1-server-ctlplane-0-key.pem")
	fi
	tok=$(token)
	for i in 1 2 3; do
		if [ -f "$dir/n$i.pid" ] && kill -0 "$(cat "$dir/n$i.pid")" 2>/dev/null; then
			echo "n$i already running (pid $(cat "$dir/n$i.pid"))"
			continue
		fi
		"$bin" agent -data-dir="$dir/n$i" -node="n$i" \
			-bind="127.0.0.1:830$i" -http-addr="127.0.0.1:850$i" \
			-bootstrap-expect=3 -join=127.0.0.1:8501 -join=127.0.0.1:8502 -join=127.0.0.1:8503 \
			-acl-initial-management-token="$tok" "${tls_args[@]}" \
			${CLUSTER_ARGS:-} >"$dir/n$i.log" 2>&1 &
		echo $! >"$dir/n$i.pid"
	done
	for _ in $(seq 1 100); do
		leader=$(curl -sf http://127.0.0.1:8501/v1/status/leader 2>/dev/null || true)
		if [ -n "$leader" ] && [ "$leader" != '""' ]; then
			status
			return 0
		fi
		sleep 0.2
	done
	echo "no leader after 20s; see $dir/n*.log" >&2
	exit 1
}

stop() {
	pids=()
	for i in 1 2 3; do
		if [ -f "$dir/n$i.pid" ]; then
			pids+=("$(cat "$dir/n$i.pid")")
			kill -TERM "${pids[-1]}" 2>/dev/null || true
			rm -f "$dir/n$i.pid"
		fi
	done
	# Wait (at most 10 s) until they are gone, so a next start finds the ports free.
	for _ in $(seq 1 50); do
		alive=0
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ "$alive" = 0 ] && break
		sleep 0.2
	done
	echo "stopped"
}

status() {
	for i in 1 2 3; do
		pid=$(cat "$dir/n$i.pid" 2>/dev/null || echo -)
		echo "n$i  http://127.0.0.1:850$i  raft 127.0.0.1:830$i  pid $pid  log $dir/n$i.log"
	done
	echo "leader (Raft address): $(curl -s http://127.0.0.1:8501/v1/status/leader?stale || echo unknown)"
	[ -f "$dir/management-token" ] && echo "export CTLPLANE_HTTP_ADDR=http://127.0.0.1:8501 CTLPLANE_TOKEN=$(cat "$dir/management-token")"
	return 0
}

case "$cmd" in
start) start ;;
stop) stop ;;
status) status ;;
*) echo "usage: $0 start|stop|status [DIR]" >&2; exit 2 ;;
esac
