#!/bin/sh
# Every goal of the faster core, measured in one sitting: PDOM-1 hardware
# (clwb + sfence, regions in /dev/shm), each workload one pmtx-bench
# process that interleaves its systems, PMDK among them, so the ratios of
# a run hold on a noisy machine. Also SPS under PDOM-2 (nothing written
# back: the software's share) and this machine's barrier costs.
# usage: sh run.sh BENCH OUTDIR [SECONDS]  (BENCH: build/bench/pmtx-bench;
# SECONDS per round and system, 1 by default)
set -eu
b=$1 out=$2 secs=${3:-1}
mkdir -p "$out"
hw="--backend hardware --seconds $secs"
$b sps --system plain,pmtx-undo,pmtx-redo,pmtx-redo-async,pmtx-cow,pmtx-twin,pmdk \
	--domain pdom1 $hw --rounds 3 --p n=100000 --p k=1,8,64,1024 > "$out/sps-n100k-pdom1.jsonl"
$b sps --system plain,pmtx-undo,pmtx-redo,pmtx-redo-async,pmtx-cow,pmtx-twin --domain pdom2 $hw --rounds 3 \
	--p n=100000 --p k=1,8,64,1024 > "$out/sps-n100k-pdom2.jsonl"
$b sps --system plain,pmtx-redo,pmtx-twin,pmdk --domain pdom1 $hw --rounds 1 \
	--p n=10000000 --p k=1,8,64,1024 > "$out/sps-n10m-pdom1.jsonl"
for w in 1 8 32; do
	$b txn --system pmtx-undo,pmtx-redo,pmtx-redo-async,pmtx-twin,pmdk \
		--domain pdom1 $hw --rounds 3 --writes $w --allocs 0 >> "$out/txn-pdom1.jsonl"
done
$b array --system pmtx-undo,pmtx-redo,pmtx-twin,pmtx-auto,pmdk --domain pdom1 $hw --rounds 3 \
	--p slots=100000 --p slot=4 --p write_pct=10,20,30,50,70,100 > "$out/array-slot4-pdom1.jsonl"
$b alloc --system pmtx-undo,pmtx-redo,pmtx-twin,pmdk --domain pdom1 $hw --rounds 3 > "$out/alloc-pdom1.jsonl"
$b hashmap --system pmtx-undo,pmtx-redo,pmtx-twin,pmdk --domain pdom1 $hw --rounds 3 > "$out/hashmap-pdom1.jsonl"
$b costs --seconds 0.5 --rounds 3 > "$out/costs.jsonl"
