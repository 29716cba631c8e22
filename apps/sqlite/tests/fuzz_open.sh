#!/usr/bin/env bash
# Fuzz the pmtx VFS's open of region files: apps/sqlite/tests/fuzz_open.sh
#                                  [--runs N | --time S] [-- libFuzzer options]
#
# Builds psq-fuzz-open in the clang tree build-fuzz (-DPMTX_FUZZ=ON) and
# runs it from the patch lists in tests/fuzz_open_seeds (the reproducers
# of bugs found are kept there too, as regress-*, and so are replayed by
# every run). Each input patches the root, the chunk directory or the
# chunks of a template database (fuzz_open.c). Default: 10,000 executions
# with a fixed seed (under a minute here); PMTX_LONG_TESTS=1: 10,000,000.
# Exits nonzero on any crash, hang, sanitizer report, leak or harness
# check (fuzz_open.c O6), and prints the executions and exec/s at the end.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
bdir=${PMTX_FUZZ_BUILD:-$root/build-fuzz}
. "$root/tests/fuzz/common.sh"
fuzz_limits 10000 "$@" || exit 2
fuzz_build "$bdir" psq-fuzz-open
work=$bdir/fuzz-sqlite-open
rm -rf "$work/corpus"
mkdir -p "$work/corpus" "$work/artifacts"
set +e
fuzz_exec "$work/fuzz.log" "$bdir/apps/sqlite/psq-fuzz-open" \
	-timeout=10 -rss_limit_mb=2048 -max_len=1025 \
	-artifact_prefix="$work/artifacts/" "${limit[@]}" "${extra[@]}" \
	"$work/corpus" "$here/fuzz_open_seeds"
rc=$?
[ $rc -ne 0 ] && echo "fuzz: the input is in $work/artifacts" >&2
exit $rc
