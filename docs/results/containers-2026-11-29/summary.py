#!/usr/bin/env python3
"""The tables of this folder's README from its JSON lines: set.jsonl
(`pmtx-bench set`) and containers.jsonl (`pmtx-bench containers`); and
the report's figure of the set, containers-set.png, beside them.

    /usr/bin/python3 docs/results/containers-2026-11-29/summary.py \
        docs/results/containers-2026-11-29 > summary.md

The goals, the per-ratio tables, bytes per entry and the cost table are
the report's own (scripts/report/containers.py); the overview puts every
system's operations per second at each ratio side by side.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "scripts"))
from report import containers as ct  # noqa: E402
from report.common import fmt_rate, load_jsonl, md_table  # noqa: E402


def overview(sets):
    pcts = sorted(sets, reverse=True)
    systems = ct.system_order({s for by in sets.values() for s in by})
    rows = [[s] + [fmt_rate(ct.field(sets[p].get(s, []), "ops_per_s"))
                   for p in pcts] for s in systems]
    rows.append(["Romulus family (anchor)"] +
                [fmt_rate(ct.ANCHOR.get(p)) for p in pcts])
    return md_table(["system"] + [f"{p} % updates" for p in pcts], rows)


def main(d):
    rows = load_jsonl(os.path.join(d, "set.jsonl")) + \
        load_jsonl(os.path.join(d, "containers.jsonl"))
    sets = ct.set_rows(rows)
    ct.make_plots(rows, d)
    out = ["## The set: operations per second", "", overview(sets), "",
           "## Goals", "", ct.table_goals(sets), ""]
    for p in sorted(sets, reverse=True):
        out += [f"## The set, {p} % updates", "", ct.table_ratio(sets[p]),
                ""]
    for title, t in (("Bytes per entry", ct.table_memory(rows)),
                     ("Barriers / written-back lines per operation",
                      ct.table_cost(rows))):
        if t:
            out += [f"## {title}", "", t, ""]
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else HERE)
