#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Turn `pmtx-bench txn` JSON lines into the README's markdown table.

    build/bench/pmtx-bench txn --domain pdom1 --backend hardware > r.jsonl
    scripts/txn_table.py r.jsonl

One row per (writes, allocs) point, one column per system: time per
transaction, barriers per transaction, and each system's speed-up over PMDK
measured in the same run.
"""
import json
import sys


def main(path):
    rows = {}
    systems = []
    for line in open(path):
        line = line.strip()
        if not line.startswith("{"):
            continue
        j = json.loads(line)
        key = (j["params"]["writes"], j["params"]["allocs"])
        rows.setdefault(key, {})[j["system"]] = j
        if j["system"] not in systems:
            systems.append(j["system"])
    head = "| writes | allocs | " + " | ".join(systems) + " |"
    print(head)
    print("|" + "---|" * (len(systems) + 2))
    for key in sorted(rows, key=lambda k: (k[1], k[0])):
        cells = []
        pmdk = rows[key].get("pmdk")
        for s in systems:
            j = rows[key].get(s)
            if not j:
                cells.append("")
                continue
            ns = j["ns_per_op"]
            cell = f"{ns / 1000:.2f} us" if ns >= 1000 else f"{ns:.0f} ns"
            if j["barriers_per_op"] is not None:
                cell += f", {j['barriers_per_op']:.0f} b"
            if pmdk and s != "pmdk" and ns > 0:
                cell += f", {pmdk['ns_per_op'] / ns:.1f}x"
            cells.append(cell)
        print(f"| {key[0]} | {key[1]} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
