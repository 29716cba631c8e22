"""Medians of ab.sh's runs: per point and system, ops/s of the old and the
new build, new/old, each build's ratio to PMDK, and barriers per op.
usage: python3 compare.py OUTDIR"""
import collections
import json
import statistics
import sys

out = sys.argv[1]
WORKLOADS = ["sps", "array", "alloc", "hashmap", "txn"]


def load(path):
    runs = collections.defaultdict(list)
    bars = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            d = json.loads(line)
            p = {k: v for k, v in d["params"].items() if k != "seed"}
            if d["workload"] == "txn":
                p["writes"] = d.get("writes", p.get("writes"))
            key = (json.dumps(p, sort_keys=True), d["system"])
            runs[key].append(d["ops_per_s"])
            bars[key] = (d["barriers_per_op"], d["flushes_per_op"])
    return ({k: statistics.median(v) for k, v in runs.items()}, bars,
            {k: len(v) for k, v in runs.items()})


for w in WORKLOADS:
    old, obar, _ = load(f"{out}/{w}-old.jsonl")
    new, nbar, cnt = load(f"{out}/{w}-new.jsonl")
    print(f"## {w}")
    print("| point | system | old ops/s | new ops/s | new/old | old/PMDK "
          "| new/PMDK | barriers old, new | runs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (pt, sysname) in sorted(new):
        if sysname == "pmdk" or (pt, sysname) not in old:
            continue
        o, n = old[(pt, sysname)], new[(pt, sysname)]
        po, pn = old.get((pt, "pmdk")), new.get((pt, "pmdk"))
        print(f"| {pt} | {sysname} | {o:,.0f} | {n:,.0f} | {n / o:.2f} "
              f"| {o / po:.2f}x | {n / pn:.2f}x | "
              f"{obar[(pt, sysname)][0]:.2f}, {nbar[(pt, sysname)][0]:.2f} "
              f"| {cnt[(pt, sysname)]} |")
    print()
