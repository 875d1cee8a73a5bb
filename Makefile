# ctlplane — see README.md.
GO      ?= go
VERSION ?= 0.1.0-dev
LDFLAGS := -X main.Version=$(VERSION)

.PHONY: build dev test test-short deps bench lint fuzz chaos

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ctlplane ./cmd/ctlplane

# An in-memory one-node server on 127.0.0.1:8500.
dev:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/ctlplane agent -dev

# Every test, through the real stack, with the race detector. The web UI's
# tests drive a headless Chromium: deps installs Debian's when it is missing.
test: deps
	$(GO) test -race -count=1 -timeout 18m ./...
	cd third_party/go-immutable-radix && $(GO) test -race -count=1 .
	# checkptr off: upstream's migration test opens a v1 store on the old boltdb/bolt, which -race's checkptr rejects.
	cd third_party/raft-boltdb && $(GO) test -race -gcflags=all=-d=checkptr=0 -count=1 .

# The fast tier: every test that starts no process (no spawned ctlplane
# binary, no raw_exec task, no Chromium), without the race detector. It
# skips tests (go test -short), so it never replaces `make test`. Four packages
# at once: its tests mostly wait on timers (make test-short: 127 s with -p 2,
# 64 s with -p 4, 2 cores, warm cache).
test-short:
	$(GO) test -short -p 4 -count=1 -timeout 10m ./...

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
deps:
	@command -v chromium >/dev/null || ($(SUDO) apt-get update && $(SUDO) apt-get install -y chromium)

# Every benchmark (scripts/bench.sh), next to etcd in the same run: load tool,
# cluster, failover, snapshots, Go benchmarks. BENCH_QUICK=1: a few minutes.
bench: deps
	scripts/bench.sh

# The linearizability check over many histories (CHAOS_HISTORIES, default
# 100): prints the anomalies found in consistent mode and in default mode
# under partitions, and under disk faults, crashes and membership changes
# (TestLinearizabilityUnderFaults) the histories that were not linearizable
# or broke an FSM invariant.
CHAOS_HISTORIES ?= 100
chaos:
	CHAOS_HISTORIES=$(CHAOS_HISTORIES) $(GO) test -count=1 -timeout 120m -run 'TestLinearizability' -v ./server/ | grep --line-buffered -E '^(chaos:|--- FAIL|    --- FAIL|ok|FAIL)'

# Every fuzz target for FUZZTIME (default 10s) each, within FUZZ_TOTAL seconds (default 100) in all.
fuzz:
	scripts/fuzz.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
