#!/bin/sh
# CPU profiles of SPS (n = 100,000, PDOM-1 hardware) under every runtime,
# k = 1, 8 and 64: the top symbols by self time and, for the top three,
# the instruction that took most of their samples (a wait for write-back
# is charged to the instruction after the barrier or locked instruction
# that waits).
# usage: sh profile.sh BENCH OUT.txt
set -eu
b=$1 out=$2
tmp=$(mktemp -d)
: > "$out"
for k in 1 8 64; do
	for s in undo redo redo-async cow twin; do
		perf record -q -g -o "$tmp/p.data" "$b" sps --system pmtx-$s \
			--domain pdom1 --backend hardware --p n=100000 --p k=$k \
			--seconds 2 --rounds 1 > /dev/null 2>&1
		echo "== pmtx-$s, k = $k" >> "$out"
		perf report -i "$tmp/p.data" --no-children --stdio --sort sym \
			2> /dev/null | grep -E '^ +[0-9]' | head -8 > "$tmp/top"
		cat "$tmp/top" >> "$out"
		for sym in $(head -3 "$tmp/top" | awk '{print $3}'); do
			printf '   hottest instruction of %s: ' "$sym" >> "$out"
			perf annotate -i "$tmp/p.data" --stdio -s "$sym" 2> /dev/null |
				grep -E '^ +[0-9]+\.[0-9]+ :' | sort -rn | head -1 |
				sed 's/  */ /g' >> "$out" || echo >> "$out"
		done
	done
done
rm -rf "$tmp"
