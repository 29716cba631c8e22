# SPDX-License-Identifier: BSD-3-Clause
"""The "The containers" section: pmtx's crash-safe containers, from
<run>/containers.jsonl (the lines of `pmtx-bench set`, the PTM papers'
set benchmark, and `pmtx-bench containers`, bench/wl_set.c and
wl_containers.c): a table per update ratio (operations per second, and
barriers and written-back lines per operation from the counters), the
goals against the Romulus family's anchor and against PMDK with
verdicts, bytes per entry, the persistence cost of each operation under
each runtime, and containers-set.png.

    section(rows, plots, eval_mode) -> the section's markdown lines
    make_plots(rows, run_dir)       -> [(file name, caption)]

Every ratio compares systems measured in the same pmtx-bench invocation,
round by round interleaved.
"""
import os
import statistics
from collections import defaultdict

from .common import (bar_groups, figure_lines, fmt_eng, fmt_rate,
                     goal_cells, md_table, opening, pyplot, save_figure)

JSONL = "containers.jsonl"
LINK = "The containers (the set benchmark, bytes per entry, persistence " \
    "cost per operation): [its section](#the-containers)."

RUNTIMES = ["undo", "redo", "redo-async", "twin", "auto"]
SYSTEMS = [f"pmtx-{c}-{rt}" for c in ("map", "hmap") for rt in RUNTIMES] \
    + ["pmdk-btree", "pmdk-hmap"]

# The Romulus family's B-tree set (the best of Trinity, Quadra-VR and
# RomLog), 1,000,000 keys of 2,000,000, one thread, measured on this
# machine: operations per second by update percentage.
ANCHOR_KEYS = 1000000
ANCHOR = {100: 1.11e6, 10: 1.69e6, 1: 1.91e6}
ANCHOR_WHAT = ("the Romulus family's B-tree set, best of Trinity, "
               "Quadra-VR and RomLog, measured on this machine")
# The goals: (pmtx family, what it is compared with, at least x).
GOALS = [("map", "anchor", 1.0), ("hmap", "anchor", 2.0),
         ("map", "pmdk-btree", 5.0), ("hmap", "pmdk-hmap", 5.0)]
# Bytes per entry: the ordered map (u64 keys and values) at most 32 in
# all; the hash map (16-byte keys, 64-byte values) at most 40 over its
# raw 80.
MEMORY_GOALS = {"map": ("bytes_per_entry", 32.0),
                "hmap": ("overhead_per_entry", 40.0)}
# Bar colours: the ordered map's runtimes in blues, the hash map's in
# greens, PMDK's in greys.
COLOURS = dict(zip(SYSTEMS, ["#08306b", "#2171b5", "#4292c6", "#6baed6",
                             "#9ecae1", "#00441b", "#238b45", "#41ab5d",
                             "#74c476", "#a1d99b", "#252525", "#969696"]))
COST_OPS = [("hmap", "insert"), ("hmap", "lookup"), ("hmap", "delete"),
            ("map", "insert"), ("map", "lookup"), ("map", "delete"),
            ("list", "push"), ("list", "pop"), ("str", "append")]


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def set_rows(rows):
    """{update_pct: {system: [row, ...]}} of the set benchmark."""
    out = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get("workload") == "set" and r.get("ops_per_s"):
            out[r["params"]["update_pct"]][r["system"]].append(r)
    return out


def system_order(names):
    known = [s for s in SYSTEMS if s in names]
    return known + sorted(n for n in names if n not in SYSTEMS)


def fmt_n(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def field(rs, key):
    return med([r.get(key) for r in rs])


def table_ratio(by_system):
    out = []
    for s in system_order(by_system):
        rs = by_system[s]
        out.append([s, fmt_rate(field(rs, "ops_per_s")),
                    fmt_rate(field(rs, "cpu_ops_per_s")),
                    fmt_n(field(rs, "ns_per_op"), 0),
                    fmt_n(field(rs, "barriers_per_op")),
                    fmt_n(field(rs, "flushes_per_op")),
                    fmt_n(field(rs, "update_barriers_per_op")),
                    fmt_n(field(rs, "update_flushes_per_op")),
                    fmt_n(field(rs, "lookup_barriers_per_op")),
                    fmt_n(field(rs, "lookup_flushes_per_op"))])
    return md_table(["system", "ops/s", "on-CPU ops/s", "ns/op",
                     "barriers/op",
                     "lines/op", "update: barriers", "update: lines",
                     "lookup: barriers", "lookup: lines"], out)


def best_family(by_system, family, key="ops_per_s"):
    """(system, rate) of the fastest pmtx system of a family (map,
    hmap) by key; (None, None) if none ran."""
    best = (None, None)
    for s, rs in by_system.items():
        if s.startswith(f"pmtx-{family}-"):
            v = field(rs, key)
            if v is not None and (best[1] is None or v > best[1]):
                best = (s, v)
    return best


def on_cpu_ratio(by, family, base, pct):
    """The same comparison by on-CPU operations per second (the anchor
    stays as measured)."""
    a = best_family(by, family, "cpu_ops_per_s")[1]
    b = ANCHOR.get(pct) if base == "anchor" else \
        field(by.get(base, []), "cpu_ops_per_s")
    return f"{a / b:.2f}x" if a and b else "-"


def table_goals(sets):
    out = []
    for pct in sorted(sets, reverse=True):
        by = sets[pct]
        for family, base, goal in GOALS:
            s, a = best_family(by, family)
            if base == "anchor":
                b, what = ANCHOR.get(pct), "Romulus family (anchor)"
            else:
                b, what = field(by.get(base, []), "ops_per_s"), base
            out.append([f"{pct} %", f"{s or 'pmtx-' + family}", what] +
                       goal_cells(a, b, goal) +
                       [on_cpu_ratio(by, family, base, pct)])
    return md_table(["updates", "pmtx (best runtime)", "against",
                     "pmtx ops/s", "their ops/s", "goal", "measured",
                     "on-CPU"], out)


def table_memory(rows):
    out = []
    for r in rows:
        if r.get("workload") != "containers" or r.get("what") != "memory":
            continue
        key, limit = MEMORY_GOALS.get(r["container"], (None, None))
        verdict = "for the record" if key is None else (
            f"{key.replace('_', ' ')} <= {limit:g}: " +
            ("**met**" if r[key] <= limit else "**MISSED**"))
        out.append([r["container"], f"{r['entries']:,}",
                    f"{r['key_bytes']} + {r['value_bytes']}",
                    fmt_n(r["bytes_per_entry"], 1),
                    fmt_n(r["overhead_per_entry"], 1),
                    fmt_n(r["superblock_bytes_per_entry"], 1), verdict])
    if not out:
        return None
    return md_table(["container", "entries", "raw key + value bytes",
                     "bytes/entry (blocks)", "overhead/entry",
                     "bytes/entry (superblocks)", "goal"], out)


def table_cost(rows):
    cells = {}
    for r in rows:
        if r.get("workload") == "containers" and r.get("what") == "cost":
            cells[(r["container"], r["op"], r["runtime"])] = \
                f"{r['barriers_per_op']:.2f} / {r['flushes_per_op']:.2f}"
    if not cells:
        return None
    rts = [rt for rt in RUNTIMES if any(k[2] == rt for k in cells)]
    out = [[c, op] + [cells.get((c, op, rt), "-") for rt in rts]
           for c, op in COST_OPS if any(k[:2] == (c, op) for k in cells)]
    return md_table(["container", "operation"] + rts, out)


def setup_lines(rows, sets, eval_mode):
    out = []
    s = [r for r in rows if r.get("workload") == "set"]
    if s:
        p = s[0]["params"]
        out.append(f"- set: {p['keys']:,} keys of {p['range']:,}, each "
                   "operation one transaction (lookups too: read_tx "
                   f"{p.get('read_tx')}), updates half adds and half "
                   f"removes; {s[0].get('domain')} {s[0].get('backend')}; "
                   f"{s[0].get('rounds')} interleaved rounds per ratio.")
        if p["keys"] != ANCHOR_KEYS:
            out.append(f"- the anchor was measured at {ANCHOR_KEYS:,} "
                       f"keys; this run has {p['keys']:,}: its verdicts "
                       "against the anchor are indicative only.")
    c = [r for r in rows if r.get("what") == "cost"]
    if c:
        out.append(f"- cost: {c[0]['n']:,} operations of each kind, each "
                   "its own transaction, on maps of "
                   f"{c[0]['params']['cost_entries']:,} entries; cells are "
                   "barriers / written-back lines per operation.")
    if eval_mode:
        out.append(f"- eval mode: {eval_mode}.")
    return out


INTRO = ("pmtx's crash-safe containers (include/pmtx_containers.h) by "
         "`pmtx-bench set` (the PTM papers' set benchmark: pmtx's ordered "
         "map and hash map under every runtime beside PMDK's B-tree and "
         "hash map on libpmemobj) and `pmtx-bench containers` (bytes per "
         "entry; barriers and lines per operation); lines in "
         "containers.jsonl.")


def section(rows, plots, eval_mode=None):
    sets = set_rows(rows)
    doc = opening("The containers", INTRO, setup_lines(rows, sets,
                                                       eval_mode))
    if sets:
        doc += ["### Goals", "", f"Anchor: {ANCHOR_WHAT}: " + ", ".join(
            f"{fmt_rate(v)} at {k} %" for k, v in sorted(
                ANCHOR.items(), reverse=True)) + ". Against PMDK: "
                "like for like (ordered with ordered, hash with hash).",
                "", "Verdicts are on operations per second (wall time); "
                "\"on-CPU\" gives the same ratio by each thread's CPU "
                "time per operation (time spent descheduled left out: "
                "the better estimate on a shared machine).", "",
                table_goals(sets), ""]
        for pct in sorted(sets, reverse=True):
            doc += [f"### The set, {pct} % updates", "",
                    table_ratio(sets[pct]), ""]
    t = table_memory(rows)
    if t:
        doc += ["### Bytes per entry", "", t, ""]
    t = table_cost(rows)
    if t:
        doc += ["### Persistence cost per operation (barriers / lines)",
                "", t, ""]
    doc += figure_lines("containers", plots)
    return doc


def draw_set(plt, sets, path):
    from matplotlib.ticker import FuncFormatter
    pcts = sorted(sets, reverse=True)
    systems = system_order({s for by in sets.values() for s in by})
    fig, ax = plt.subplots(figsize=(11, 4.2))
    width = bar_groups(ax, pcts, systems,
                       lambda p, s: field(sets[p].get(s, []), "ops_per_s"),
                       lambda s: COLOURS.get(s, "#bcbd22"))
    for j, p in enumerate(pcts):
        if p in ANCHOR:
            ax.hlines(ANCHOR[p], j - width / 2, j + 0.8 - width / 2,
                      colors="black", linestyles="dashed",
                      label="Romulus family (anchor)" if j == 0 else None)
    ax.set_xticklabels([f"{p} % updates" for p in pcts])
    ax.yaxis.set_major_formatter(FuncFormatter(fmt_eng))
    ax.set_ylabel("operations per second")
    ax.set_title("The set: 1 thread, each operation a transaction",
                 fontsize=10)
    ax.legend(fontsize=7, ncol=2, loc="upper left",
              bbox_to_anchor=(1.01, 1.0))
    save_figure(plt, fig, path, tight=True)


def make_plots(rows, run_dir):
    sets = set_rows(rows)
    if not sets:
        return []
    plt = pyplot()
    draw_set(plt, sets, os.path.join(run_dir, "containers-set.png"))
    return [("containers-set.png", "the set benchmark")]
