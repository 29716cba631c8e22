#!/bin/sh
# paired.sh BEFORE AFTER OUTDIR - ../paired.py over two pmkv builds (each
# --io-threads 1, redo, PDOM-1 hardware, on /dev/shm, filled with
# 1,000,000 SETs), 10 alternating rounds of redis-benchmark -c 4
# -r 238328 -d 64: SET, GET and INCR, without pipelining (100,000
# requests a run) and with -P 16 (300,000). p-TEST-PIPELINE.jsonl holds
# the rounds, .err the medians of the ratios before/after.
set -e
P=$(dirname "$0")/../paired.py
B=before=$1,after=$2 OUT=$3
for spec in "set 1 100000" "get 1 100000" "incr 1 100000" \
            "set 16 300000" "get 16 300000" "incr 16 300000"; do
	set -- $spec
	/usr/bin/python3 "$P" "$B" 10 "$3" "$2" "$1" > "$OUT/p-$1-$2.jsonl" \
		2> "$OUT/p-$1-$2.err"
done
