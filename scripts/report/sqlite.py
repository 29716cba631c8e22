# SPDX-License-Identifier: BSD-3-Clause
"""The "SQLite" section: pmtx-sqlite (apps/sqlite) beside :memory: and
stock SQLite, from <run>/sqlite.jsonl (apps/sqlite/bench/sqlbench.py's
lines: one per TPC-C run, "sqlite-tpcc", and per speedtest1 run,
"sqlite-speedtest1"): the goals on TPC-C, per warehouse count each
configuration's medians, rounds' range, latencies and share of
:memory:, speedtest1's total times, and the figures sqlite-tpcc.png and
sqlite-speedtest1.png.

    section(rows, plots, eval_mode) -> the section's markdown lines
    make_plots(rows, run_dir)       -> [(file name, caption)]

Medians over rounds; every ratio compares configurations measured in the
same sqlbench.py invocation, round by round interleaved.
"""
import os
import statistics
from collections import OrderedDict, defaultdict

from .common import (bar_groups, figure_lines, fmt_eng, fmt_rate, fmt_us,
                     goal_cells, highest, md_table, opening, pyplot,
                     save_figure)

JSONL = "sqlite.jsonl"
LINK = "SQLite on pmtx beside stock SQLite: [its section](#sqlite)."

# The goals, on TPC-C: the best pmtx runtime on PDOM-1 hardware
# against :memory: (at least 90 %) and against stock WAL with
# synchronous=FULL on the same /dev/shm (at least 2x); the best pmtx
# runtime on a disk backend (file, journal) against WAL FULL on the disk
# (at least 1x).
GOALS = [("pmtx PDOM-1 hardware vs :memory:", ("pdom1",), "memory", 0.90),
         ("pmtx PDOM-1 hardware vs WAL FULL on /dev/shm", ("pdom1",),
          "wal-full-shm", 2.0),
         ("pmtx file backend vs WAL FULL on the disk", ("file",),
          "wal-full-disk", 1.0),
         ("pmtx journal backend vs WAL FULL on the disk", ("journal",),
          "wal-full-disk", 1.0)]

COLOURS = {"memory": "#000000", "pmtx-redo-pdom1": "#ff7f0e",
           "pmtx-undo-pdom1": "#1f77b4", "pmtx-redo-pdom2": "#ffbb78",
           "pmtx-undo-pdom2": "#aec7e8", "pmtx-redo-file": "#9467bd",
           "pmtx-undo-file": "#c5b0d5", "pmtx-redo-journal": "#e377c2",
           "pmtx-undo-journal": "#f7b6d2"}
# (journal, where): (synchronous=FULL, NORMAL)
STOCK_COLOURS = {("delete", "shm"): ("#8c564b", "#c49c94"),
                 ("wal", "shm"): ("#2ca02c", "#98df8a"),
                 ("delete", "disk"): ("#d62728", "#ff9896"),
                 ("wal", "disk"): ("#17becf", "#9edae5")}


def colour(cfg):
    if cfg in COLOURS:
        return COLOURS[cfg]
    j, s, where = (cfg.split("-") + ["", "", ""])[:3]
    return STOCK_COLOURS.get((j, where),
                             ("#7f7f7f", "#c7c7c7"))[s != "full"]


def config_order(rows):
    """Configurations in the order sqlbench.py ran them."""
    seen = OrderedDict()
    for r in rows:
        if r.get("config"):
            seen.setdefault(r["config"], None)
    return list(seen)


def tpcc_runs(rows):
    """{(warehouses, config): [run, ...]} of the TPC-C runs."""
    out = defaultdict(list)
    for r in rows:
        if r.get("bench") == "sqlite-tpcc" and r.get("tps") is not None:
            out[(r.get("warehouses"), r["config"])].append(r)
    return out


def st1_runs(rows):
    out = defaultdict(list)
    for r in rows:
        if r.get("bench") == "sqlite-speedtest1" and r.get("total_s"):
            out[r["config"]].append(r)
    return out


def med(runs, key):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def best_pmtx(runs, w, domains):
    """(config, median tps) of the fastest pmtx runtime in domains."""
    return highest((cfg, med(rs, "tps")) for (ww, cfg), rs in runs.items()
                   if ww == w and cfg.startswith("pmtx-") and
                   cfg.rsplit("-", 1)[1] in domains)


def table_goals(runs):
    rows = []
    for w in sorted({w for w, _ in runs}):
        for what, domains, base, goal in GOALS:
            cfg, t = best_pmtx(runs, w, domains)
            b = med(runs.get((w, base), []), "tps")
            rows.append([w, what, cfg or "-"] + goal_cells(t, b, goal))
    return md_table(["warehouses", "goal", "best pmtx", "its tx/s",
                     "baseline tx/s", "goal", "measured"], rows)


def table_tpcc(runs, order, w):
    mem = med(runs.get((w, "memory"), []), "tps")
    rows = []
    for cfg in order:
        rs = runs.get((w, cfg))
        if not rs:
            continue
        t = med(rs, "tps")
        tps = [r["tps"] for r in rs]
        errors = sum(r.get("errors") or 0 for r in rs)
        rows.append([cfg, rs[0].get("fs", "-"), len(rs), fmt_rate(t),
                     f"{fmt_rate(min(tps))}-{fmt_rate(max(tps))}",
                     f"{med(rs, 'tpmC') or 0:,.0f}",
                     fmt_us(med(rs, "p50_us")),
                     fmt_us(med(rs, "p99_us")),
                     f"{t / mem * 100:.1f} %" if mem and t else "-",
                     errors])
    return md_table(["configuration", "file system", "rounds",
                     "median tx/s", "rounds' range", "tpmC (median)",
                     "p50", "p99", "of :memory:", "errors"], rows)


def table_st1(st1, order):
    mem = med(st1.get("memory", []), "total_s")
    rows = []
    for cfg in order:
        rs = st1.get(cfg)
        if not rs:
            continue
        t = med(rs, "total_s")
        ts = [r["total_s"] for r in rs]
        rows.append([cfg, rs[0].get("fs", "-"), len(rs), f"{t:.3f} s",
                     f"{min(ts):.3f}-{max(ts):.3f} s",
                     f"{t / mem:.2f}x" if mem else "-"])
    return md_table(["configuration", "file system", "rounds",
                     "median total", "rounds' range",
                     "time / :memory:'s"], rows)


def setup_lines(rows, eval_mode):
    tp = [r for r in rows if r.get("bench") == "sqlite-tpcc"]
    st = [r for r in rows if r.get("bench") == "sqlite-speedtest1"]
    loads = [r for r in rows if r.get("bench") == "sqlite-tpcc-load"]
    out = []
    if tp:
        scale = sorted({r.get("scale") for r in tp}, key=str)
        secs = sorted({r.get("seconds_requested", r.get("seconds"))
                       for r in tp}, key=str)
        whs = sorted({r.get("warehouses") for r in tp})
        lengths = [f"{s:.1f}" if isinstance(s, float) else str(s)
                   for s in secs]
        out.append(f"- TPC-C (apps/sqlite/bench/psq-tpcc): warehouses "
                   f"{', '.join(str(w) for w in whs)}; "
                   f"scale {', '.join(map(str, scale))} (1.0: the "
                   "specification's table sizes); the standard mix, no "
                   "think time, one connection; runs of about "
                   f"{', '.join(lengths)} s.")
    for r in loads:
        secs = r.get("load_s", r.get("seconds"))
        size = r.get("db_bytes")
        out.append(f"- TPC-C load, {r.get('warehouses')} warehouse(s): "
                   + (f"{secs:.2f} s" if isinstance(secs, (int, float))
                      else "?") + ", " +
                   (f"{size / 2**20:.1f} MiB" if isinstance(size, int)
                    else "?") +
                   " (once, into a plain file; each configuration gets a "
                   "copy).")
    if st:
        out.append(f"- speedtest1 (SQLite's test/speedtest1.c, testset "
                   f"main) --size {st[0].get('size')}.")
    for r in rows:
        if r.get("bench") == "sqlite-skip":
            out.append(f"- left out: {r.get('what')}: {r.get('why')}.")
    dirs = sorted({(r.get("dir"), r.get("fs")) for r in tp + st})
    if dirs:
        out.append("- directories: " + ", ".join(f"{d} ({f})"
                                                 for d, f in dirs) + ".")
    if eval_mode:
        out.append(f"- eval mode: {eval_mode}.")
    return out


INTRO = ("pmtx-sqlite (apps/sqlite: a VFS whose every commit is one pmtx "
         "transaction, journals in DRAM) beside :memory: and stock SQLite "
         "3.40.1 (the default VFS: DELETE journal or WAL, synchronous "
         "FULL or NORMAL), by apps/sqlite/bench/sqlbench.py (lines in "
         "sqlite.jsonl). pmtx-R-pdom1 is PDOM-1 on real clwb + sfence, "
         "pmtx-R-pdom2 PDOM-2 (fences only), pmtx-R-file the file "
         "backend (the pages written, written back and flushed at "
         "each barrier: every commit durable), pmtx-R-journal the "
         "journal backend (each commit's lines appended to the "
         "region's journal and one fdatasync: every commit durable). "
         "Each round ran every configuration in turn.")


def section(rows, plots, eval_mode=None):
    runs, st1 = tpcc_runs(rows), st1_runs(rows)
    order = config_order(rows)
    doc = opening("SQLite", INTRO, setup_lines(rows, eval_mode))
    if runs:
        doc += ["### Goals (TPC-C, median transactions per second)", "",
                table_goals(runs), ""]
        for w in sorted({w for w, _ in runs}):
            doc += [f"### TPC-C, {w} warehouse(s)", "",
                    table_tpcc(runs, order, w), ""]
    if st1:
        doc += ["### speedtest1", "", "Total time of the main testset "
                "(lower is better).", "", table_st1(st1, order), ""]
    fails = [r for r in rows if r.get("bench") == "sqlite-tpcc" and
             r.get("errors")]
    if fails:
        doc += ["### Runs with errors", ""] + [
            f"- {r['config']} round {r.get('round')}: {r['errors']} errors"
            for r in fails] + [""]
    doc += figure_lines("SQLite", plots)
    return doc


def draw_tpcc(plt, runs, order, path):
    from matplotlib.ticker import FuncFormatter
    ws = sorted({w for w, _ in runs})
    cfgs = [c for c in order if any((w, c) in runs for w in ws)]
    fig, ax = plt.subplots(figsize=(11, 4.6))
    bar_groups(ax, ws, cfgs,
               lambda w, c: med(runs.get((w, c), []), "tps"), colour)
    ax.set_xticklabels([f"{w} warehouse(s)" for w in ws], fontsize=9)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(fmt_eng))
    ax.set_ylabel("TPC-C transactions per second (median)", fontsize=8)
    ax.set_title("TPC-C on SQLite: pmtx VFS, :memory: and stock journals",
                 fontsize=10)
    ax.legend(fontsize=7, ncol=5, loc="upper center",
              bbox_to_anchor=(0.5, -0.08))
    save_figure(plt, fig, path, tight=True)


def draw_st1(plt, st1, order, path):
    cfgs = [c for c in order if c in st1]
    fig, ax = plt.subplots(figsize=(11, 4.2))
    vals = [med(st1[c], "total_s") for c in cfgs]
    ax.bar(range(len(cfgs)), vals, color=[colour(c) for c in cfgs],
           alpha=0.85)
    ax.set_xticks(range(len(cfgs)))
    ax.set_xticklabels(cfgs, rotation=40, ha="right", fontsize=8)
    ax.set_ylabel("speedtest1 total time, s (median; lower is better)",
                  fontsize=8)
    ax.grid(True, axis="y", alpha=0.35)
    ax.set_title("SQLite speedtest1", fontsize=10)
    save_figure(plt, fig, path, tight=True)


def make_plots(rows, run_dir):
    plt = pyplot()
    out = []
    runs, st1, order = tpcc_runs(rows), st1_runs(rows), config_order(rows)
    if runs:
        draw_tpcc(plt, runs, order, os.path.join(run_dir, "sqlite-tpcc.png"))
        out.append(("sqlite-tpcc.png", "TPC-C throughput"))
    if st1:
        draw_st1(plt, st1, order, os.path.join(run_dir,
                                               "sqlite-speedtest1.png"))
        out.append(("sqlite-speedtest1.png", "speedtest1 total time"))
    return out
