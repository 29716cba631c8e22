#!/usr/bin/env bash
# Fuzz pmkv's RESP2 parser: apps/pmkv/tests/fuzz_resp.sh
#                           [--runs N | --time S] [-- libFuzzer options]
#
# Builds pmkv-fuzz-resp in the clang tree build-fuzz (-DPMTX_FUZZ=ON) and
# runs it from the seed requests in tests/fuzz_seeds with the RESP
# dictionary. Default: 10,000 executions with a fixed seed (seconds);
# PMTX_LONG_TESTS=1: 10,000,000. Exits nonzero on any crash, hang,
# sanitizer report, leak or harness check (fuzz_resp.c F1-F7), and prints
# the executions and exec/s at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
bdir=${PMTX_FUZZ_BUILD:-$root/build-fuzz}
. "$root/tests/fuzz/common.sh"
fuzz_limits 10000 "$@" || exit 2
fuzz_build "$bdir" pmkv-fuzz-resp
work=$bdir/fuzz-pmkv-resp
rm -rf "$work/corpus"
mkdir -p "$work/corpus" "$work/artifacts"
set +e
fuzz_exec "$work/fuzz.log" "$bdir/apps/pmkv/pmkv-fuzz-resp" \
	-dict="$here/fuzz_resp.dict" -timeout=10 -rss_limit_mb=2048 \
	-max_len=4096 -artifact_prefix="$work/artifacts/" "${limit[@]}" "${extra[@]}" \
	"$work/corpus" "$here/fuzz_seeds"
rc=$?
[ $rc -ne 0 ] && echo "fuzz: the input is in $work/artifacts" >&2
exit $rc
