#!/bin/sh
# Benchmarks the supacloud policy on the inputs of
# supacloud/fixtures_test.rego: `opa bench` for the policy alone (median
# evaluation time and allocations), then the Go benchmarks of the prepared
# queries the gateway runs (including the Go API's overhead). "floor" is a
# one-comparison query: compare against it to tell the machine from the policy.
# Run from anywhere: policies/bench.sh   (COUNT=5 repeats each benchmark)
set -eu
cd "$(dirname "$0")/.."
count=${COUNT:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bench() { # name fixture query
	go tool opa eval -d policies/ --format raw "data.supacloud_test.$2" >"$tmp/$2.json"
	go tool opa bench -d policies/ --ignore '*_test.rego' --count "$count" \
		--input "$tmp/$2.json" --format gobench "$3" |
		awk -v name="$1" '/^Benchmark/ {
			for (i = 1; i <= NF; i++) {
				if ($i == "histogram_timer_rego_query_eval_ns_median") median = $(i - 1)
				if ($i == "allocs/op") allocs = $(i - 1)
			}
			printf "opa bench %-28s median %8.1f µs  %5d allocs/op\n", name, median / 1000, allocs
		}'
}
bench floor bench_read 'input.edition == "community"'
bench "decision/read allowed" bench_read data.supacloud.decision
bench "decision/script allowed" bench_call data.supacloud.decision
bench "decision/deploy denied" bench_denied data.supacloud.decision
bench "visible_tools/full" bench_list data.supacloud.visible_tools
bench "visible_tools/read and ops" bench_list_read data.supacloud.visible_tools

go test ./policies/ -run '^$' -bench BenchmarkPolicy -count "$count"
