# pushworker — the two set-up commands are `make demo` and `make test` (see README.md).
SHELL := /bin/bash
export PATH := $(PATH):/opt/swift/usr/bin
SWIFT ?= swift
SWIFT_BUILD_FLAGS ?= -j 2
BIN := .build/debug/pushworker
# The development executable (sandbox, dev-broker, demo, bench, chaos), built beside it.
DEV_BIN := .build/debug/pushworker-dev

.PHONY: deps build-info build release demo test test-swift test-ops test-fuzz test-api bench chaos clean

deps:
	@bash scripts/install-deps.sh

# The git commit `pushworker version` and pushworker_build_info report (a plain `swift build`
# says "unknown") and the VERSION release: Sources/CPushBuildInfo/generated.h, rewritten only
# when either changes.
build-info:
	@bash scripts/write-build-info.sh

# topics/*.json built into the binary (topics print|apply from any directory); a test fails
# while Sources/PushTools/Topics/EmbeddedTopics.swift and topics/ differ.
.PHONY: embed-topics
embed-topics:
	@bash scripts/embed-topics.sh

build: deps build-info
	@$(SWIFT) build $(SWIFT_BUILD_FLAGS) 2>&1 | grep -vE 'prohibited flag|^\[[0-9]+/[0-9]+\]' || true
	@test -x $(BIN) && test -x $(DEV_BIN)

release: deps build-info
	$(SWIFT) build -c release --static-swift-stdlib $(SWIFT_BUILD_FLAGS)

# Builds, starts embedded Redis, a Kafka broker and the provider sandbox, runs a sample
# campaign end to end, prints the summary and stops everything it started (the sandbox runs
# with its inbox: docs/sandbox.md).
# DEMO_ARGS=--keep leaves everything running (and the inbox open) until Ctrl-C.
DEMO_ARGS ?=
demo: build
	@$(DEV_BIN) demo $(DEMO_ARGS)

# Installs what is missing, starts nothing by hand: every test starts (and stops) the
# services it needs on free loopback ports.
test: deps test-swift test-ops test-fuzz test-api

test-swift: build-info
	@log=$$(mktemp); $(SWIFT) build --build-tests $(SWIFT_BUILD_FLAGS) > $$log 2>&1 || { cat $$log; rm -f $$log; exit 1; }; rm -f $$log
	$(SWIFT) test --skip-build

test-ops:
	@bash scripts/ops-checks.sh

# The HTTP API against its OpenAPI document (docs/reference/api.md): redis-server, a development
# broker and `pushworker api` on free loopback ports, schemathesis (PyPI, pinned in
# scripts/requirements-ci.txt) with a bearer token; API_EXAMPLES, API_SEED and API_CHECKS tune it.
test-api:
	@bash scripts/api-schemathesis.sh

# Every libFuzzer target (Tests/Fuzz) built and run briefly on its corpus (Tests/Fuzz/corpus):
# a target that does not compile or fails on its corpus or within FUZZ_SMOKE_SECONDS fails the test.
FUZZ_SMOKE_SECONDS ?= 4
test-fuzz:
	@FUZZ_SMOKE_SECONDS=$(FUZZ_SMOKE_SECONDS) bash scripts/fuzz-libfuzzer.sh smoke

clean:
	rm -rf .build

# Tracking endpoint benchmark (docs/events.md): `pushworker events` pinned to one core with
# taskset, driven by wrk from the other core(s). Needs the Debian package wrk.
.PHONY: bench-events
bench-events: deps build-info
	$(SWIFT) build -c release $(SWIFT_BUILD_FLAGS)
	.build/release/pushworker-dev bench events --duration 15

# Reliability drills against real processes (docs/reliability.md): worker SIGKILL/SIGTERM,
# broker outage, Redis restart, provider 429/503 storms, 410 flood, hostile jobs, fuzzing, and
# the worker on a Redis Cluster (a campaign, slots migrated, a master killed: cluster-* drills).
chaos: build
	@$(DEV_BIN) chaos --seconds 60

.PHONY: fuzz
# Seeded-random fuzzing in-process (FUZZ_SECONDS), then every libFuzzer target for
# FUZZ_SECONDS each (optimised build; docs/reliability.md "Fuzzing"). FUZZ_TARGETS picks targets.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz: build
	@$(DEV_BIN) chaos --drill fuzz --seconds $(FUZZ_SECONDS)
	@bash scripts/fuzz-libfuzzer.sh run $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# End-to-end benchmark on a release build (docs/performance.md): broker, Redis, sandbox and one
# `pushworker run` process, 50k notifications, then h2load against the same sandbox.
# Writes bench-report.json and bench-throughput.svg. BENCH_ARGS adds options (e.g. --workers 2).
BENCH_ARGS ?=
bench: release
	.build/release/pushworker-dev bench e2e --notifications 50000 --report bench-report.json --svg bench-throughput.svg $(BENCH_ARGS)

# The HTTP/2 client alone (docs/performance.md, "The HTTP client alone"): one APNs request sent
# 100k times through HTTP2Client against the sandbox, then h2load. Writes bench-http-report.json.
.PHONY: bench-http
bench-http: release
	.build/release/pushworker-dev bench http --report bench-http-report.json $(BENCH_ARGS)

# A peer beside h2load and the libcurl floors (docs/performance.md): Go's standard net/http
# HTTP/2 client — the transport gorush and apns2 are built on — from scripts/peers/go-h2-sender,
# built offline (standard library only, GOPROXY=off: no module is fetched) and run by
# `bench http` with h2load's arguments against the same sandbox, pinned like the others.
# Installs Debian's golang-go when `go` is missing. Never part of `make test`.
PEER_GO := .build/peers/go-h2-sender
.PHONY: bench-peers
bench-peers: release
	@command -v go >/dev/null 2>&1 || { echo "installing Debian's golang-go"; \
		SUDO=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
		$$SUDO apt-get install -y --no-install-recommends golang-go || { $$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends golang-go; }; }
	mkdir -p .build/peers
	cd scripts/peers/go-h2-sender && GOPROXY=off GOFLAGS= GOCACHE=$(CURDIR)/.build/peers/go-cache CGO_ENABLED=0 go build -o $(CURDIR)/$(PEER_GO) .
	.build/release/pushworker-dev bench http --client-cpus 1 --sandbox-cpus 0 --peer $(PEER_GO) --report bench-peers-report.json $(BENCH_ARGS)
