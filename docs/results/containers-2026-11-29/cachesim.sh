#!/bin/sh
# Instructions and cache misses per operation of the set benchmark's
# operations, counted the same whatever the machine's load: cachesim.c
# (this folder) under valgrind's callgrind, with a cache simulation of
# this CPU's L1d (48 KiB, 12-way) as D1 and its L2 (2 MiB, 16-way) as LL.
# (This VM has no hardware counters: perf stat's cycles and cache-misses
# are "not supported".) A prefetch is not an access to the simulation:
# these are the lines an operation reads that miss, not their latency.
#   sh docs/results/containers-2026-11-29/cachesim.sh SRC BUILD > cachesim.jsonl
#   SRC    the source tree (its include/), BUILD a build of it (libpmtx.a)
# 50,000 operations each (after 50,000 to warm the caches) on 1,000,000
# keys; about 90 s a line.
set -e
src=${1:-.}
build=${2:-build}
ops=${OPS:-50000}
tmp=$(mktemp -d)
gcc -O2 -g -I"$src/include" -o "$tmp/cachesim" "$(dirname "$0")/cachesim.c" \
	"$build/libpmtx.a" -lpthread -lm
for c in "map redo 1" "map redo 100" "hmap redo 1" "hmap redo 100"; do
	set -- $c
	valgrind --tool=callgrind --instr-atstart=no --collect-atstart=no \
		--cache-sim=yes --D1=49152,12,64 --LL=2097152,16,64 \
		--I1=32768,8,64 --callgrind-out-file="$tmp/cg.out" \
		"$tmp/cachesim" "$1" "$2" "$3" "$ops" > /dev/null 2> "$tmp/log"
	python3 - "$tmp/log" "$1" "$2" "$3" "$ops" <<'PY'
import json, re, sys
log, kind, rt, pct, ops = sys.argv[1:]
txt = open(log).read()
ev = re.search(r"Events\s*:\s*(.*)", txt).group(1).split()
n = [int(x) for x in re.search(r"Collected\s*:\s*(.*)", txt).group(1).split()]
c = dict(zip(ev, n))
ops = int(ops)
print(json.dumps({"container": kind, "runtime": rt, "update_pct": int(pct),
                  "ops": ops, "keys": 1000000,
                  "instructions_per_op": round(c["Ir"] / ops, 1),
                  "l1d_misses_per_op": round(c["D1mr"] / ops, 2),
                  "l2_misses_per_op": round(c["DLmr"] / ops, 2)}))
PY
done
rm -rf "$tmp"
