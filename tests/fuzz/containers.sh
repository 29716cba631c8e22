#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fuzz the containers: tests/fuzz/containers.sh [--runs N | --time S]
#                                             [-- libFuzzer options...]
#
# Builds fuzz_containers (programs of container operations checked
# against a model in DRAM) and fuzz_cont_corrupt (containers whose blocks
# the input corrupts) in the clang tree build-fuzz (-DPMTX_FUZZ=ON:
# ASan, UBSan; $PMTX_FUZZ_BUILD names another) and runs each from a
# fresh corpus and 16 seeds of pseudo-random bytes. Default: 5,000
# executions each with a fixed seed; PMTX_LONG_TESTS=1: 10,000,000 each.
# Exits nonzero on any crash, hang (-timeout), sanitizer report, leak or
# harness check, and prints the executions and exec/s of each.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bdir=${PMTX_FUZZ_BUILD:-$root/build-fuzz}
. "$root/tests/fuzz/common.sh"
fuzz_limits 5000 "$@" || exit 2
fuzz_build "$bdir" fuzz_containers fuzz_cont_corrupt
rc=0
for h in fuzz_containers fuzz_cont_corrupt; do
	work=$bdir/$h
	rm -rf "$work/corpus" "$work/seed"
	mkdir -p "$work/corpus" "$work/seed" "$work/artifacts"
	python3 -c '
import random, sys
for i in range(16):
    r = random.Random(i)
    n = r.choice([16, 64, 256, 1024, 3000])
    open("%s/seed-%02d" % (sys.argv[1], i), "wb").write(r.randbytes(n))
' "$work/seed"
	echo "fuzz: $h"
	fuzz_exec "$work/fuzz.log" "$bdir/tests/fuzz/$h" -timeout=10 \
		-rss_limit_mb=2048 -max_len=4096 \
		-artifact_prefix="$work/artifacts/" "${limit[@]}" \
		"${extra[@]}" "$work/corpus" "$work/seed" || {
		rc=$?
		echo "fuzz: the input is in $work/artifacts" >&2
	}
done
exit $rc
