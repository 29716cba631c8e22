#!/usr/bin/python3
"""summary.py DIR: the medians (and ranges) of after / before, per round,
of the paired runs (p-*.jsonl: requests/s and the server's CPU time per
request) and of the storebench points (storebench.jsonl: operations/s)."""
import collections
import glob
import json
import os
import statistics
import sys


def line(what, ratios):
    return "%-44s %.2fx  (%.2f-%.2f, %d rounds)" % (
        what, statistics.median(ratios), min(ratios), max(ratios),
        len(ratios))


def paired(d):
    for f in sorted(glob.glob(os.path.join(d, "p-*.jsonl"))):
        runs = collections.defaultdict(dict)
        for r in map(json.loads, open(f)):
            runs[r["round"]][r["name"]] = r
        rows = [v for v in runs.values() if len(v) == 2]
        test = "%s -P %d" % (rows[0]["after"]["test"].upper(),
                             rows[0]["after"]["pipeline"])
        yield line(test + ", requests/s",
                   [v["after"]["rps"] / v["before"]["rps"] for v in rows])
        yield line(test + ", server CPU per request",
                   [v["after"]["cpu_us"] / v["before"]["cpu_us"]
                    for v in rows])


def storebench(d):
    pts = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in map(json.loads, open(os.path.join(d, "storebench.jsonl"))):
        key = (r["version"], r["read_pct"], r["group"], r["value_size"])
        pts[key][r["build"]].append(r["ops_per_s"])
    for (ver, rd, grp, vs), v in pts.items():
        what = "store %s, %d%% reads, %dB%s" % (
            ver, rd, vs, ", groups of %d, hints" % grp if grp > 1 else "")
        yield line(what, [a / b for a, b in zip(v["after"], v["before"])])


d = sys.argv[1]
for s in list(paired(d)) + list(storebench(d)):
    print(s)
