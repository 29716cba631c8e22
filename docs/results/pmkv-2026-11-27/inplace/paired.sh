#!/bin/sh
# paired.sh BEFORE AFTER OUTDIR - ../paired.py over two pmkv builds
# (--io-threads 1, redo, PDOM-1 hardware, /dev/shm, filled with 1,000,000
# SETs), 6 alternating rounds of redis-benchmark -c 4 -r 238328 -d 64:
# SET and INCR with -P 16 (300,000 requests a run) and without (100,000).
set -e
P=$(dirname "$0")/../paired.py
B=before=$1,after=$2 OUT=$3
for spec in "set 16 300000" "incr 16 300000" "set 1 100000" "incr 1 100000"; do
	set -- $spec
	/usr/bin/python3 "$P" "$B" 6 "$3" "$2" "$1" > "$OUT/p-$1-$2.jsonl" \
		2> "$OUT/p-$1-$2.err"
done
