#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Where the time goes on 1 and 2 threads (disjoint, k = 1, n = 1,000,000,
# PDOM-1 hardware): perf's cpu-clock samples (this VM has no hardware
# counters) of one pmtx-bench process per system and thread count, the
# top symbols; then the callers of the allocator's lock under pmtx-cow on
# 2 threads (DWARF call graphs).
#   sh profile.sh BENCH WORKDIR > profile.txt
set -e
bench=${1:-build/bench/pmtx-bench}
w=${2:-/tmp/sps-threads-profile}
mkdir -p "$w"
for s in pmtx-undo pmtx-redo pmtx-redo-async pmtx-cow pmtx-auto pmtx-twin \
	pmdk; do
	for t in 1 2; do
		perf record -q -F 1999 -o "$w/$s-$t.data" -- "$bench" sps \
			--system $s --domain pdom1 --backend hardware --p k=1 \
			--p threads=$t --p shared=0 --seconds 4 --rounds 4 \
			> "$w/$s-$t.jsonl" 2>/dev/null
		echo "== $s, $t thread(s): $(cut -c1-400 "$w/$s-$t.jsonl")"
		perf report -i "$w/$s-$t.data" --no-children --stdio \
			--sort dso,sym 2>/dev/null | grep -E '^ +[0-9]' | head -14
	done
done
perf record -q -F 499 --call-graph dwarf,16384 -o "$w/cow-2d.data" -- \
	"$bench" sps --system pmtx-cow --domain pdom1 --backend hardware \
	--p k=1 --p threads=2 --p shared=0 --seconds 2 --rounds 2 \
	> /dev/null 2>&1
echo "== pmtx-cow, 2 threads: the callers of pthread_mutex_lock"
perf report -i "$w/cow-2d.data" --no-children --stdio --sort sym \
	--call-graph=caller,1 -S 'pthread_mutex_lock@@GLIBC_2.2.5' 2>/dev/null |
	grep -v '^#' | grep -v '^$' | head -24
perf record -q -F 499 --call-graph dwarf,16384 -o "$w/ra-2d.data" -- \
	"$bench" sps --system pmtx-redo-async --domain pdom1 --backend hardware \
	--p k=1 --p threads=2 --p shared=0 --seconds 2 --rounds 2 \
	> /dev/null 2>&1
echo "== pmtx-redo-async, 2 threads: the callers of the context switches"
perf report -i "$w/ra-2d.data" --no-children --stdio --sort sym \
	--call-graph=caller,0.3 -S finish_task_switch.isra.0 2>/dev/null |
	grep -v '^#' | grep -v '^$' | head -90
