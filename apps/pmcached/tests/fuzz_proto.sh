#!/usr/bin/env bash
# Fuzz pmcached's protocol parser: apps/pmcached/tests/fuzz_proto.sh
#                                  [--runs N | --time S] [-- libFuzzer options]
#
# Builds fuzz_proto in the clang tree build-fuzz (-DPMTX_FUZZ=ON) and runs
# it from the seed requests in tests/fuzz_seeds with memcached's
# dictionary. Default: 300,000 executions with a fixed seed (seconds);
# PMTX_LONG_TESTS=1: 10,000,000. Exits nonzero on any crash, hang,
# sanitizer report, leak or harness check (fuzz_proto.c), and prints the
# executions and exec/s at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
bdir=${PMTX_FUZZ_BUILD:-$root/build-fuzz}
limit=(-runs=300000 -seed=1)
[ "${PMTX_LONG_TESTS:-0}" = 1 ] && limit=(-runs=10000000)
while [ $# -gt 0 ]; do
	case $1 in
	--runs) limit=(-runs="$2"); shift 2 ;;
	--time) limit=(-max_total_time="$2"); shift 2 ;;
	--) shift; break ;;
	*) echo "usage: $0 [--runs N | --time S] [-- opts]" >&2; exit 2 ;;
	esac
done
command -v clang >/dev/null || { echo "fuzz: clang missing (scripts/setup.sh)" >&2; exit 1; }
cmake -S "$root" -B "$bdir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_C_COMPILER=clang -DPMTX_WERROR=ON -DPMTX_FUZZ=ON \
	-DPMTX_TESTS=OFF >/dev/null
ninja -C "$bdir" fuzz_proto >/dev/null
work=$bdir/fuzz-proto
rm -rf "$work/corpus"
mkdir -p "$work/corpus" "$work/artifacts"
log=$work/fuzz.log
set +e
nice -n 10 "$bdir/apps/pmcached/fuzz_proto" -dict="$here/fuzz_proto.dict" \
	-timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
	-artifact_prefix="$work/artifacts/" "${limit[@]}" "$@" \
	"$work/corpus" "$here/fuzz_seeds" >"$log" 2>&1
rc=$?
set -e
grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)" "$log" | tail -2 || true
grep -E "^stat::(number_of_executed_units|average_exec_per_sec)" "$log" || true
if [ $rc -ne 0 ]; then
	tail -60 "$log"
	echo "fuzz: FAILED (status $rc); the input is in $work/artifacts" >&2
fi
exit $rc
