#!/bin/sh
# Where the set benchmark's time goes: perf record -g on one system of
# `pmtx-bench set` at one update ratio, attached once its runners are
# ready (the prefill is left out), for SECONDS; then the symbols over
# 1 % of the samples, self time.
#   sh docs/results/containers-2026-11-29/profile.sh BENCH SYSTEM PCT \
#       [SECONDS] >> profile.txt
set -e
bench=${1:-build/bench/pmtx-bench}
system=$2
pct=$3
secs=${4:-10}
tmp=$(mktemp -d)
"$bench" set --p keys=1000000 --p update_pct="$pct" --p split=0 \
	--system "$system" --seconds $((secs + 5)) --rounds 1 \
	> "$tmp/out.jsonl" 2> "$tmp/err" &
pid=$!
until grep -q "runners ready" "$tmp/err" 2>/dev/null; do
	kill -0 $pid 2>/dev/null || { cat "$tmp/err"; exit 1; }
	sleep 0.2
done
perf record -q -g -p $pid -o "$tmp/perf.data" -- sleep "$secs" \
	> /dev/null 2>&1
wait $pid
echo "== $system, $pct % updates ($(uptime))"
cut -c1-200 "$tmp/out.jsonl"
perf report -i "$tmp/perf.data" --no-children --stdio -g none \
	--percent-limit 1 2> /dev/null | grep -v '^#' | grep -v '^$'
rm -rf "$tmp"
