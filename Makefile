# ctlplane — see README.md.
GO      ?= go
VERSION ?= 0.1.0-dev
LDFLAGS := -X main.Version=$(VERSION)

.PHONY: build dev test bench lint fuzz

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ctlplane ./cmd/ctlplane

# An in-memory one-node server on 127.0.0.1:8500.
dev:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/ctlplane agent -dev

# Every test, through the real stack, with the race detector.
test:
	$(GO) test -race -count=1 -timeout 18m ./...

# Every benchmark (scripts/bench.sh): load tool, cluster, failover, snapshots, Go benchmarks.
bench:
	scripts/bench.sh

# Every fuzz target for FUZZTIME (default 10s) each.
fuzz:
	scripts/fuzz.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
