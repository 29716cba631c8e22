#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The tables of README.md from sps-threads.jsonl (pmtx-bench sps with
--p threads=1,2 --p shared=0,1): per system and k, 1 against 2 threads
in each mode: swaps/s, their ratio, the CPU the runner's threads had per
second (cpu_per_s), the ratio of swaps per CPU second, and the counters
per transaction.

    python3 summary.py sps-threads.jsonl > summary.md
"""
import json
import sys

GOAL = 1.8
CONCURRENT = {"pmtx-undo", "pmtx-redo", "pmtx-redo-async", "pmtx-cow",
              "pmtx-auto", "pmdk", "plain"}  # twin: one writer at a time


def load(path):
    rows = [json.loads(x) for x in open(path) if x.strip()]
    by, order = {}, []
    for r in rows:
        p = r["params"]
        if (r["system"], p["k"]) not in order:
            order.append((r["system"], p["k"]))
        by[(r["system"], p["k"], p["shared"], p["threads"])] = r
    return by, order


def num(v):
    return "-" if v is None else f"{v:.2f}"


def table(by, order, mode):
    out = ["| system | k | 1 thread | 2 threads | 2T/1T | CPU/s 1T | "
           "CPU/s 2T | 2T/1T per CPU s | barriers/tx 1T, 2T | "
           "flushed lines/tx 1T, 2T |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s, k in order:
        a, b = by.get((s, k, mode, 1)), by.get((s, k, mode, 2))
        if not a or not b:
            continue
        ratio = b["swaps_per_s"] / a["swaps_per_s"]
        per_cpu = (b["swaps_per_s"] / b["cpu_per_s"]) / \
            (a["swaps_per_s"] / a["cpu_per_s"])
        mark = "" if s not in CONCURRENT else \
            (" (goal met)" if mode == 0 and ratio >= GOAL else "")
        out.append(
            f"| {s} | {k} | {a['swaps_per_s'] / 1e6:.3f}M | "
            f"{b['swaps_per_s'] / 1e6:.3f}M | {ratio:.2f}x{mark} | "
            f"{a['cpu_per_s']:.2f} | {b['cpu_per_s']:.2f} | "
            f"{per_cpu:.2f}x | {num(a['barriers_per_op'])}, "
            f"{num(b['barriers_per_op'])} | {num(a['flushes_per_op'])}, "
            f"{num(b['flushes_per_op'])} |")
    return "\n".join(out)


def main():
    by, order = load(sys.argv[1])
    print("Swaps per second (M = millions); CPU/s: the CPU seconds the "
          "runner's threads had per second of its runs; per CPU s: the "
          "ratio of swaps per CPU second.\n")
    print("## Disjoint (each thread on its own half of the array)\n")
    print(table(by, order, 0))
    print("\n## Shared (one array, a lock per slot held until the "
          "transaction is durable)\n")
    print(table(by, order, 1))


if __name__ == "__main__":
    main()
