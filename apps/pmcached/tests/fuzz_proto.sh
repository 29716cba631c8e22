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
. "$root/tests/fuzz/common.sh"
fuzz_limits 300000 "$@" || exit 2
fuzz_build "$bdir" fuzz_proto
work=$bdir/fuzz-proto
rm -rf "$work/corpus"
mkdir -p "$work/corpus" "$work/artifacts"
set +e
fuzz_exec "$work/fuzz.log" "$bdir/apps/pmcached/fuzz_proto" \
	-dict="$here/fuzz_proto.dict" -timeout=10 -rss_limit_mb=2048 \
	-max_len=4096 -artifact_prefix="$work/artifacts/" "${limit[@]}" "${extra[@]}" \
	"$work/corpus" "$here/fuzz_seeds"
rc=$?
[ $rc -ne 0 ] && echo "fuzz: the input is in $work/artifacts" >&2
exit $rc
