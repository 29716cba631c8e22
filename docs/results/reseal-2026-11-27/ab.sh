#!/bin/sh
# Alternating runs of two pmtx-bench builds (the library is linked in),
# PDOM-1 hardware, regions in /dev/shm; each process interleaves its
# systems, PMDK among them, so each run's ratios to PMDK hold.
# usage: sh ab.sh OUTDIR ROUNDS OLD_BENCH NEW_BENCH
set -eu
out=$1 n=$2 old=$3 new=$4
mkdir -p "$out"
common="--domain pdom1 --backend hardware --seconds 1 --rounds 1"
i=0
while [ $i -lt "$n" ]; do
	for which in old new; do
		eval b=\$$which
		$b sps --system pmtx-redo,pmtx-twin,pmdk $common --p n=100000 --p k=1,8,64,1024 >> "$out/sps-$which.jsonl"
		$b array --system pmtx-undo,pmtx-redo,pmtx-twin,pmdk $common --p slot=4 --p write_pct=10,20,30,50,70,100 >> "$out/array-$which.jsonl"
		$b alloc --system pmtx-redo,pmtx-twin,pmdk $common >> "$out/alloc-$which.jsonl"
		$b hashmap --system pmtx-redo,pmtx-twin,pmdk $common >> "$out/hashmap-$which.jsonl"
		for w in 1 8 32; do
			$b txn --system pmtx-redo,pmtx-twin,pmdk $common --writes $w --allocs 0 >> "$out/txn-$which.jsonl"
		done
	done
	i=$((i + 1))
done
