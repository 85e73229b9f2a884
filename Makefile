# mcpgate — the two commands a new user needs are `make run` and `make test`.
SHELL := /bin/bash
GO    ?= go
OPA   := $(GO) tool opa
export MCPGATE_TEST_DATABASE_URL ?= postgres://mcpgate:mcpgate@127.0.0.1:5432/mcpgate_test?sslmode=disable

.PHONY: run build test test-go test-rego lint bench pg clean

## run: start the gateway with the embedded store and the demo backend (no other service needed)
run:
	$(GO) run ./cmd/mcpgate serve --dev

## build: put the binary at bin/mcpgate
build:
	$(GO) build -o bin/mcpgate ./cmd/mcpgate

## test: every test — lint, Rego tests with coverage, Go tests (race) on SQLite and PostgreSQL
test: lint test-rego pg test-go

## pg: make sure the local PostgreSQL the tests use is installed, running and has the test role/database
pg:
	./test/pg-setup.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' ; git ls-files --others --exclude-standard '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@out=$$($(OPA) fmt --list policies); if [ -n "$$out" ]; then echo "opa fmt would change: $$out"; exit 1; fi
	$(OPA) check --strict policies

test-rego:
	$(OPA) test policies --coverage --threshold 90 --format json > /tmp/mcpgate-rego-coverage.json || { $(OPA) test policies -v; exit 1; }
	@python3 -c "import json;print('rego coverage: %.1f%%' % json.load(open('/tmp/mcpgate-rego-coverage.json'))['coverage'])" 2>/dev/null || true
	$(OPA) test policies

test-go:
	$(GO) test -race -count=1 ./...

## bench: decision, tools/list, transport and store benchmarks
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./gateway/... ./tools/...

clean:
	rm -rf bin mcpgate-dev.db*
