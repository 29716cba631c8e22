#!/bin/sh
# The containers' benchmarks at full size, as this folder's files were
# made:  sh docs/results/containers-2026-11-29/run.sh BENCH OUT
#   BENCH  a release build's pmtx-bench (default build/bench/pmtx-bench)
#   OUT    where the JSON lines go (default this folder)
# Regions go to /dev/shm (pmtx-bench's default). About 10 minutes on the
# 2-core machine. The load before and after each step goes to load.txt.
set -e
bench=${1:-build/bench/pmtx-bench}
out=${2:-$(dirname "$0")}
load() { echo "$1: $(uptime)" >> "$out/load.txt"; }
: > "$out/load.txt"
"$bench" --info > "$out/info.json"
load "before set"
# 1,000,000 keys of 2,000,000; 100, 10 and 1 % updates on the same
# runners; 5 s per ratio and system, in 5 interleaved rounds.
"$bench" set --p keys=1000000 --p update_pct=100,10,1 --seconds 5 \
	--rounds 5 > "$out/set.jsonl"
load "after set"
# Bytes per entry at 1,000,000 entries; each operation's barriers and
# lines under each runtime (10,000 of each, maps of 100,000 entries).
"$bench" containers --p entries=1000000 --p cost_entries=100000 \
	--p ops=10000 > "$out/containers.jsonl"
load "after containers"
