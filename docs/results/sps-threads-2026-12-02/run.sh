#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The measurement of this folder: SPS at k = 1, 8, 64 (n = 1,000,000, the
# default), every runtime, PMDK and plain, on 1 and 2 threads, disjoint
# slices and one shared array, PDOM-1 hardware on /dev/shm, all 96
# runners of a k interleaved in 6 rounds (3 s each). About 6 minutes.
#   sh run.sh BENCH OUTDIR
set -e
bench=${1:-build/bench/pmtx-bench}
out=${2:-.}
echo "start $(date -Is) $(uptime)" > "$out/load.txt"
"$bench" --info > "$out/info.json"
"$bench" sps --domain pdom1 --backend hardware --p k=1,8,64 \
	--p threads=1,2 --p shared=0,1 --seconds 3 --rounds 6 --dir /dev/shm \
	> "$out/sps-threads.jsonl"
echo "end $(date -Is) $(uptime)" >> "$out/load.txt"
