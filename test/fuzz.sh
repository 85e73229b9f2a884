#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME ($1, default 1m), JOBS ($2, default 1)
# at a time. Each package's test binary is built once, with the fuzzing
# instrumentation go test -fuzz gives it (go test -c -fuzz), into
# build/fuzz/ of the clone, and runs each of its targets in the package's
# folder, as go test would: go test -fuzz takes one target per run, and
# relinked its package's binary for each. With JOBS above 1, targets run
# side by side with one fuzzing worker each (-test.parallel 1) instead of
# one target with a worker per core: make fuzz-short runs two at a time,
# so the start of one target (its baseline coverage) overlaps another's
# fuzzing. The corpus the fuzzer grows is kept in build/fuzz/cache/ (go test
# keeps it under $GOCACHE/fuzz), so a run writes nothing outside the clone
# but the Go build cache. An input that fails is written to the package's
# testdata/fuzz/<FuzzName>/, where plain go test runs it from then on.
set -uo pipefail
fuzztime=${1:-1m}
jobs=${2:-1}
go=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
# Every fuzz target of the module, found in its test files (func FuzzX(f
# *testing.F) at the start of a line), as ./pkg/:FuzzX in file order: a new
# target runs here without being listed.
mapfile -t targets < <(cd "$root" && grep -r --include='*_test.go' --exclude-dir=node_modules --exclude-dir=build \
	-o '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' . | sort -t: -k1,1 -s |
	sed -E 's|^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*$|\1/:\2|')
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no fuzz targets found under $root"
	exit 1
fi
out=$root/build/fuzz
mkdir -p "$out/cache"

# binary names the test binary of package $1 (./gateway/mcp/ -> gateway_mcp.test).
binary() { local p=${1#./}; p=${p%/}; echo "$out/${p//\//_}.test"; }

# One build per package, in the order the targets list them.
status=0
built=()
for t in "${targets[@]}"; do
	pkg=${t%%:*}
	[[ " ${built[*]} " == *" $pkg "* ]] && continue
	built+=("$pkg")
	fns=$(for u in "${targets[@]}"; do [ "${u%%:*}" = "$pkg" ] && printf '%s|' "${u##*:}"; done)
	echo "fuzz: building $pkg's test binary with fuzzing instrumentation"
	# -fuzz with the package's targets: go test instruments the package
	# and its dependencies only when it is given one.
	if ! (cd "$root" && "$go" test -c -fuzz "^(${fns%|})\$" -o "$(binary "$pkg")" "$pkg"); then
		echo "fuzz: building $pkg failed"
		status=1
	fi
done
[ $status -eq 0 ] || exit $status

# fuzz runs target $2 of package $1 and prints one line saying how it
# ended (the whole output when it failed); it returns 1 on a failure.
fuzz() {
	local pkg=$1 fn=$2 parallel=() rc res
	[ "$jobs" -gt 1 ] && parallel=(-test.parallel 1)
	# -test.timeout 0: go test's default 10m would end a longer run; the
	# fuzzer reports an input that hangs by itself.
	res=$(cd "$root/$pkg" && "$(binary "$pkg")" -test.run '^$' -test.fuzz "^$fn\$" -test.fuzztime "$fuzztime" \
		-test.fuzzcachedir "$out/cache/${pkg//\//_}" -test.timeout 0 -test.paniconexit0 "${parallel[@]}" 2>&1)
	rc=$?
	# Go's fuzz coordinator can report its own -fuzztime deadline as a
	# failure (golang/go#75804, not fixed in Go 1.26): "context deadline
	# exceeded", with no failing input written and no seed failing.
	if [ $rc -ne 0 ] && grep -qx '    context deadline exceeded' <<<"$res" &&
		! grep -q 'Failing input written' <<<"$res" && ! grep -q -- "--- FAIL: $fn/" <<<"$res"; then
		echo "$pkg:$fn: passed (the fuzzer's end-of-run deadline report, golang/go#75804, ignored)"
		return 0
	fi
	if [ $rc -ne 0 ]; then
		# One write, so that a target running beside it does not cut in.
		printf '%s\n' "$pkg:$fn failed:" "$(grep -v '^fuzz: elapsed' <<<"$res")"
		return 1
	fi
	echo "$pkg:$fn: $(grep -o 'execs: [0-9]*' <<<"$res" | tail -1) in $fuzztime, passed"
}

running=0
for t in "${targets[@]}"; do
	if [ "$running" -ge "$jobs" ]; then
		wait -n || status=1
		running=$((running - 1))
	fi
	echo "fuzz: $t for $fuzztime"
	fuzz "${t%%:*}" "${t##*:}" &
	running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
	wait -n || status=1
	running=$((running - 1))
done
exit $status
