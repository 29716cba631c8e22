#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fuzz region files: tests/fuzz/run.sh [--pmtx PMTX] [--runs N | --time S]
#                                      [-- libFuzzer options...]
#
# Configures and builds the clang tree build-fuzz (-DPMTX_FUZZ=ON) when
# needed, generates the seed corpus into build-fuzz/fuzz/seed (region
# images from fuzz_gen_corpus; power-failure crash images from
# `PMTX crashtest ... --save` when --pmtx names the pmtx command), and runs
# fuzz_region on a fresh working corpus. Default: 50,000 executions with a
# fixed seed (about a minute here); PMTX_LONG_TESTS=1: 10,000,000. Exits
# nonzero on any crash, hang (-timeout), sanitizer report or leak, and
# prints the executions, exec/s and coverage at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bdir=${PMTX_FUZZ_BUILD:-$root/build-fuzz}
pmtx=""
limit=(-runs=50000 -seed=1)
[ "${PMTX_LONG_TESTS:-0}" = 1 ] && limit=(-runs=10000000)
while [ $# -gt 0 ]; do
	case $1 in
	--pmtx) pmtx=$2; shift 2 ;;
	--runs) limit=(-runs="$2"); shift 2 ;;
	--time) limit=(-max_total_time="$2"); shift 2 ;;
	--) shift; break ;;
	*) echo "usage: $0 [--pmtx PMTX] [--runs N | --time S] [-- opts]" >&2
	   exit 2 ;;
	esac
done

. "$root/tests/fuzz/common.sh"
fuzz_build "$bdir" fuzz_region fuzz_gen_corpus

work=$bdir/fuzz
rm -rf "$work/seed" "$work/corpus"
mkdir -p "$work/seed" "$work/corpus" "$work/artifacts"
"$bdir/tests/fuzz/fuzz_gen_corpus" "$work/seed"
if [ -n "$pmtx" ]; then
	# Power-failure images (lines lost), mid-transaction, per runtime.
	for rt in undo redo redo-async cow; do
		for pt in 3; do
			"$pmtx" crashtest --workload list --runtime "$rt" \
				--domain pdom1 --ntx 4 --images 4 --point "$pt" \
				--image 1 --save "$work/seed/crash-list-$rt-$pt" \
				--no-progress --quiet >/dev/null 2>&1
		done
	done
fi
echo "fuzz: $(ls "$work/seed" | wc -l) seed images in $work/seed"

set +e
fuzz_exec "$work/fuzz.log" "$bdir/tests/fuzz/fuzz_region" \
	-dict="$root/tests/fuzz/pmtx.dict" -timeout=10 -rss_limit_mb=4096 \
	-artifact_prefix="$work/artifacts/" "${limit[@]}" "$@" \
	"$work/corpus" "$work/seed"
rc=$?
[ $rc -ne 0 ] && echo "fuzz: the input is in $work/artifacts" >&2
exit $rc
