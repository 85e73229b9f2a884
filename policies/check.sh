#!/bin/sh
# Checks the Rego bundles the way CI should: formatting, strict compile,
# tests, coverage floor. Run from anywhere: policies/check.sh
# Needs only the Go toolchain (the opa CLI is a Go tool in go.mod).
set -eu
cd "$(dirname "$0")/.."
min_coverage=${MIN_COVERAGE:-90}

unformatted=$(go tool opa fmt --list policies/)
if [ -n "$unformatted" ]; then
	echo "not formatted (run: go tool opa fmt -w policies/):" >&2
	echo "$unformatted" >&2
	exit 1
fi
go tool opa check --strict policies/
go tool opa test --timeout 5m policies/
# The gateway evaluates with strict builtin errors: evaluate every test (and
# so every fixture input, the malformed ones included) that way too.
go tool opa eval --strict-builtin-errors -d policies/ 'data.supacloud_test' >/dev/null
go tool opa eval --strict-builtin-errors -d policies/ 'data.ccserver_test' >/dev/null
coverage=$(go tool opa test --timeout 5m policies/ --coverage --format=json | sed -n 's/^  "coverage": \([0-9.]*\).*/\1/p' | tail -n 1)
echo "coverage: ${coverage}% (floor ${min_coverage}%)"
awk -v c="$coverage" -v m="$min_coverage" 'BEGIN { exit !(c >= m) }' || {
	echo "coverage ${coverage}% is below ${min_coverage}%" >&2
	exit 1
}
