"""The goals of the faster core against one sitting of run.sh.
usage: python3 summary.py OUTDIR  (prints Markdown)

REF holds figures that were not measured by run.sh: SPS, n = 100,000,
millions of swaps per second, measured on this machine when the goals
were set (PDOM-1 hardware, medians of 3): pmtx format 2.0, PMDK 1.12.1,
and the Romulus family, built from its published C++ code with real
clwb + sfence (that code is not part of this tree)."""
import collections
import json
import sys

KS = [1, 8, 64, 1024]
REF = {
    "pmtx-undo, format 2.0": [1.01, 1.68, 1.92, 1.97],
    "pmtx-redo, format 2.0": [1.02, 2.29, 3.39, 2.36],
    "pmtx-redo-async, format 2.0": [0.32, 0.78, 1.86, 2.27],
    "pmtx-cow, format 2.0": [0.42, 0.59, 0.68, 0.68],
    "PMDK 1.12.1, then": [0.67, 0.81, 0.77, 0.61],
    "RomulusLog": [1.25, 8.03, 23.5, 33.4],
    "Trinity": [1.89, 10.5, 44.0, 60.5],
    "Quadra (VR)": [4.68, 16.3, 25.3, 25.9],
    "OneFile": [1.63, 5.69, 11.3, 11.4],
    "RedoLog-FC": [1.39, 5.65, 13.0, 16.1],
}
GOAL = [4.68, 16.3, 44.0, 60.5]  # the best of the family at each k
PMTX = ["pmtx-undo", "pmtx-redo", "pmtx-redo-async", "pmtx-cow", "pmtx-twin",
        "pmtx-auto"]


def load(path):
    """{(point, system): record}; point is the params without the seed."""
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("{"):
                d = json.loads(line)
                p = {k: v for k, v in d.get("params", {}).items()
                     if k not in ("seed", "cow_slots", "per_tx", "ring",
                                  "max_size", "buckets", "cap")}
                if d["workload"] == "txn":
                    p["writes"] = d.get("writes", p.get("writes"))
                out[(json.dumps(p, sort_keys=True), d["system"])] = d
    return out


def swaps(d):
    """Millions of swaps per second."""
    return d["ops_per_s"] * d["params"]["k"] / 1e6


def sps_table(out):
    r = load(f"{out}/sps-n100k-pdom1.jsonl")
    systems = sorted({s for _, s in r}, key=lambda s: (s == "pmdk",
                                                      s == "plain", s))
    print("| n = 100,000, M swaps/s | k=1 | k=8 | k=64 | k=1024 |")
    print("|---|---|---|---|---|")
    for s in systems:
        row = [r.get((json.dumps({"k": k, "n": 100000}), s)) for k in KS]
        if None in row:
            continue
        print(f"| {s} (now) | " + " | ".join(f"{swaps(d):.2f}" for d in row)
              + " |")
    for name, v in REF.items():
        print(f"| {name} | " + " | ".join(f"{x:.2f}" for x in v) + " |")
    print()
    print("| k | best pmtx now | M swaps/s | goal | of the goal | x PMDK "
          "| barriers, lines per tx | pdom1 ns/tx | pdom2 ns/tx "
          "| plain ns/tx |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    r2 = load(f"{out}/sps-n100k-pdom2.jsonl")
    for k, goal in zip(KS, GOAL):
        pt = json.dumps({"k": k, "n": 100000})
        best = max((r[(pt, s)] for s in PMTX if (pt, s) in r),
                   key=lambda d: d["ops_per_s"])
        pm = r[(pt, "pmdk")]
        s2 = r2.get((pt, best["system"]))
        pl = r.get((pt, "plain"))
        if not s2 or not pl:
            continue
        print(f"| {k} | {best['system']} | {swaps(best):.2f} | {goal} "
              f"| {swaps(best) / goal:.2f} "
              f"| {best['ops_per_s'] / pm['ops_per_s']:.1f}x "
              f"| {best['barriers_per_op']:.2f}, {best['flushes_per_op']:.1f} "
              f"| {best['ns_per_op']:.0f} "
              f"| {s2['ns_per_op']:.0f} | {pl['ns_per_op']:.0f} |")
    print()
    r10 = load(f"{out}/sps-n10m-pdom1.jsonl")
    print("| n = 10,000,000, M swaps/s | k=1 | k=8 | k=64 | k=1024 |")
    print("|---|---|---|---|---|")
    for s in sorted({s for _, s in r10}):
        row = [r10.get((json.dumps({"k": k, "n": 10000000}), s)) for k in KS]
        if None not in row:
            print(f"| {s} | " + " | ".join(f"{swaps(d):.2f}" for d in row)
                  + " |")
    print()


def decomposition(out):
    """ns per transaction under PDOM-1 and PDOM-2 (nothing written back,
    barriers only order), per runtime: the share that is write-back."""
    r1 = load(f"{out}/sps-n100k-pdom1.jsonl")
    r2 = load(f"{out}/sps-n100k-pdom2.jsonl")
    print("| runtime | " + " | ".join(
        f"k={k}: pdom1, pdom2 ns/tx (write-back share)" for k in KS) + " |")
    print("|---|" + "---|" * len(KS))
    for s in ["plain"] + PMTX:
        cells = []
        for k in KS:
            pt = json.dumps({"k": k, "n": 100000})
            a, b = r1.get((pt, s)), r2.get((pt, s))
            if not a or not b:
                break
            share = 1 - b["ns_per_op"] / a["ns_per_op"]
            cells.append(f"{a['ns_per_op']:.0f}, {b['ns_per_op']:.0f} "
                         f"({100 * share:.0f} %)")
        if len(cells) == len(KS):
            print(f"| {s} | " + " | ".join(cells) + " |")
    print()


def ratios(out, name, label):
    """Per point: the best pmtx runtime over PMDK, and redo over PMDK."""
    r = load(f"{out}/{name}.jsonl")
    by = collections.defaultdict(dict)
    for (pt, s), d in r.items():
        by[pt][s] = d
    print(f"| {label} | best pmtx | x PMDK | redo x PMDK | barriers "
          "(best) |")
    print("|---|---|---|---|---|")
    for pt in sorted(by, key=lambda p: sorted(json.loads(p).items())):
        ds = by[pt]
        if "pmdk" not in ds:
            continue
        pm = ds["pmdk"]["ops_per_s"]
        best = max((ds[s] for s in PMTX if s in ds),
                   key=lambda d: d["ops_per_s"])
        redo = ds.get("pmtx-redo")
        if not redo:
            continue
        p = ", ".join(f"{k}={v}" for k, v in sorted(json.loads(pt).items()))
        print(f"| {p} | {best['system']} | {best['ops_per_s'] / pm:.2f}x "
              f"| {redo['ops_per_s'] / pm:.2f}x | "
              f"{best['barriers_per_op']:.2f} |")
    print()


def costs(out):
    with open(f"{out}/costs.jsonl") as f:
        for line in f:
            d = json.loads(line)
            if d["what"] == "barrier_lines":
                print(f"- barrier after {d['lines']} flushed lines: "
                      f"{d['ns']:.0f} ns")
            elif d["what"] == "lock_after_flush":
                print(f"- a locked instruction after one flushed line: "
                      f"{d['ns']:.0f} ns")
    print()


def one_wait(out):
    """one-wait.sh's output, if any: medians, released against one wait."""
    import os
    import statistics
    path = f"{out}/one-wait.jsonl"
    if not os.path.exists(path):
        return
    runs = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            key = (d["workload"], json.dumps(d["params"], sort_keys=True))
            runs[key + (d["one_wait"],)].append(
                (d["ns_per_op"], d["pmdk_ns_per_op"] / d["ns_per_op"]))
    print("| point | twin ns/tx | one wait (unsafe) ns/tx | saved "
          "| x PMDK | one wait x PMDK |")
    print("|---|---|---|---|---|---|")
    for key in sorted({k[:2] for k in runs}):
        a, b = runs[key + (0,)], runs[key + (1,)]
        na = statistics.median(x[0] for x in a)
        nb = statistics.median(x[0] for x in b)
        ra = statistics.median(x[1] for x in a)
        rb = statistics.median(x[1] for x in b)
        print(f"| {key[0]} {key[1]} | {na:.0f} | {nb:.0f} "
              f"| {100 * (1 - nb / na):.0f} % | {ra:.2f}x | {rb:.2f}x |")
    print()


out = sys.argv[1]
sps_table(out)
decomposition(out)
ratios(out, "txn-pdom1", "txn")
ratios(out, "array-slot4-pdom1", "array, slot 4")
ratios(out, "alloc-pdom1", "alloc")
ratios(out, "hashmap-pdom1", "hashmap")
costs(out)
one_wait(out)
