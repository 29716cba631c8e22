"""Medians of reopen.jsonl: open_ms, barriers and flushed lines by
runtime, exit, heap and build. usage: python3 summary.py reopen.jsonl"""
import collections
import json
import statistics
import sys

rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    rows[(r["runtime"], r["exit"], r["heap"], r["build"])].append(r)
print("| runtime | exit | heap in use (MiB) | open, old (ms) | open, new (ms) "
      "| new: barriers | new: flushed lines |")
print("|---|---|---|---|---|---|---|")
for rt in ("undo", "twin"):
    for ex in ("kill", "clean"):
        for heap in ("empty", "full"):
            o, n = rows[(rt, ex, heap, "old")], rows[(rt, ex, heap, "new")]
            med = lambda v, k: statistics.median(x[k] for x in v)
            print(f"| {rt} | {ex} | {med(n, 'heap_used_mib'):.1f} "
                  f"| {med(o, 'open_ms'):.2f} | {med(n, 'open_ms'):.2f} "
                  f"| {med(n, 'barriers'):.0f} | {med(n, 'flushes'):.0f} |")
