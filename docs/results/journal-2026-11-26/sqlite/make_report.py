#!/usr/bin/python3
"""report.md of this directory, from sqlite.jsonl (the measurement),
tpcc-rerun.jsonl (the same comparison again, 5 rounds) and inserts.jsonl
(one-row transactions), through scripts/report/sqlite.py.

    /usr/bin/python3 docs/results/journal-2026-11-26/sqlite/make_report.py

This run measured the disk only, so the goals are limited to the disk
ones of scripts/report/sqlite.py.
"""
import json
import os
import statistics
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import report as R  # noqa: E402
from report import sqlite as S  # noqa: E402

S.GOALS = [g for g in S.GOALS if g[2] == "wal-full-disk"]


def rows_of(name):
    with open(os.path.join(HERE, name)) as f:
        return [json.loads(line) for line in f if line.strip()]


def per_round(rows, a, b):
    """a's tx/s over b's, round by round (the rounds interleave them)."""
    t = defaultdict(dict)
    for r in rows:
        if r.get("bench") == "sqlite-tpcc":
            t[r["round"]][r["config"]] = r["tps"]
    return [t[k][a] / t[k][b] for k in sorted(t) if a in t[k] and b in t[k]]


def longest(rows):
    """The longest transaction of each configuration's runs (max_us)."""
    t = defaultdict(list)
    for r in rows:
        if r.get("bench") == "sqlite-tpcc" and r.get("max_us") is not None:
            t[r["config"]].append(r["max_us"] / 1000)
    return "- the longest transaction of each run, ms: " + "; ".join(
        f"{c} " + ", ".join(f"{x:.0f}" for x in v) for c, v in t.items())


def inserts_table(rows):
    runs = defaultdict(list)
    order = []
    for r in rows:
        if r.get("bench") == "sqlite-inserts":
            if r["config"] not in runs:
                order.append(r["config"])
            runs[r["config"]].append(r)
    wal = statistics.median(x["tps"] for x in runs["wal-full-disk"]) \
        if runs.get("wal-full-disk") else None
    out = []
    for c in order:
        rs = runs[c]
        t = statistics.median(x["tps"] for x in rs)
        tps = [x["tps"] for x in rs]
        out.append([c, rs[0].get("fs", "-"), len(rs), R.fmt_rate(t),
                    f"{R.fmt_rate(min(tps))}-{R.fmt_rate(max(tps))}",
                    R.fmt_us(statistics.median(x["p50_us"] for x in rs)),
                    R.fmt_us(statistics.median(x["p99_us"] for x in rs)),
                    f"{t / wal:.2f}x" if wal else "-"])
    return R.md_table(["configuration", "file system", "rounds",
                       "median tx/s", "rounds' range", "p50", "p99",
                       "/ WAL FULL (disk)"], out)


def main():
    cmd = ("/usr/bin/python3 apps/sqlite/bench/sqlbench.py --benches tpcc "
           "--configs pmtx-redo-journal,pmtx-undo-journal,pmtx-redo-file,"
           "wal-full-disk,wal-normal-disk,delete-full-disk --rounds {r} "
           "--seconds 5")
    doc = ["# SQLite on the journal backend beside the file backend and "
           "stock SQLite on ext4 (2026-11-26)", "",
           "Made on the 2-core development VM, **not idle**: other "
           "jobs ran pmkv benchmarks and `tests/test_journal` on the "
           "same disk at the same time (load average 2-4.5, see "
           "`*.conditions.txt`). Each round runs every configuration in "
           "turn, so the load reaches them alike; the per-round ratios "
           "below compare runs seconds apart. This page is "
           "`make_report.py` (scripts/report_sqlite.py's section, with a "
           "goal row for the journal backend added at run time).", "",
           "Commands, from the repository's root:", "",
           "```sh", cmd.format(r=3) + " > sqlite.jsonl",
           cmd.format(r=5) + " > tpcc-rerun.jsonl",
           "/usr/bin/python3 apps/sqlite/bench/sqlbench.py --benches inserts "
           "--configs memory,pmtx-redo-journal,pmtx-undo-journal,"
           "pmtx-redo-file,wal-full-disk,wal-normal-disk,delete-full-disk "
           "--rounds 3 --seconds 3 > inserts.jsonl", "```", "",
           "pmtx-R-journal is the journal backend (`backend=journal`, PDOM-1, "
           "in /var/tmp, ext4): each commit appends its changed lines to "
           "`<db>.pmtxj` (64 MiB, the default) and fdatasyncs it once; the "
           "pages reach the database file at checkpoints. Every commit is "
           "durable when COMMIT returns, as on the file backend and with "
           "WAL or DELETE under synchronous=FULL; WAL with "
           "synchronous=NORMAL does not sync at commit.", ""]
    main_rows = rows_of("sqlite.jsonl")
    plots = S.make_plots(main_rows, HERE)
    sec = S.section(main_rows, plots)
    doc += ["# The measurement (3 rounds: sqlite.jsonl)", ""] + sec[2:]
    for a in ("pmtx-redo-journal", "pmtx-undo-journal", "pmtx-redo-file"):
        rr = per_round(main_rows, a, "wal-full-disk")
        doc.append(f"- {a} / wal-full-disk, round by round: "
                   + ", ".join(f"{x:.2f}x" for x in rr))
    doc.append(longest(main_rows))
    doc += ["", "# The same again (5 rounds: tpcc-rerun.jsonl)", ""]
    rerun = rows_of("tpcc-rerun.jsonl")
    runs = S.tpcc_runs(rerun)
    doc += ["### Goals", "", S.table_goals(runs), "",
            "### TPC-C, 1 warehouse(s)", "",
            S.table_tpcc(runs, S.config_order(rerun), 1), ""]
    for a in ("pmtx-redo-journal", "pmtx-undo-journal", "pmtx-redo-file"):
        rr = per_round(rerun, a, "wal-full-disk")
        doc.append(f"- {a} / wal-full-disk, round by round: "
                   + ", ".join(f"{x:.2f}x" for x in rr))
    doc.append(longest(rerun))
    doc += ["", "The journal backend's longest transactions (35-54 ms) are "
            "those that ran a checkpoint: the journal full, every page it "
            "covers written to the database file and synced, while the "
            "other commits wait.", ""]
    doc += ["", "# One-row transactions (inserts.jsonl)", "",
            "apps/sqlite/bench/inserts.py: one connection inserts one row "
            "(a 100-byte blob) per transaction, in autocommit, for 3 s; "
            "the loop is Python's (`memory` shows its own cost: about "
            "2 us a transaction).", "",
            inserts_table(rows_of("inserts.jsonl")), ""]
    with open(os.path.join(HERE, "report.md"), "w") as f:
        f.write("\n".join(doc) + "\n")


if __name__ == "__main__":
    main()
