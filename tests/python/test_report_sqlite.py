# SPDX-License-Identifier: BSD-3-Clause
"""The SQLite section of the report (scripts/report/sqlite.py) on
synthetic sqlbench.py lines: medians, shares of :memory:, and goal
verdicts that follow the data."""
import report  # scripts/ is on the path (conftest.py)

# Three rounds; the median is the middle value of each list.
TPS = {"memory": [1000, 1100, 900], "pmtx-redo-pdom1": [950, 960, 940],
       "pmtx-undo-pdom1": [800, 700, 900], "pmtx-redo-file": [300, 290, 310],
       "wal-full-shm": [400, 420, 410], "wal-full-disk": [250, 260, 240]}


def rows(tps=TPS):
    out = [{"bench": "sqlite-tpcc-load", "warehouses": 1, "load_s": 1.5,
            "db_bytes": 123}]
    for rnd in range(3):
        for cfg, vals in tps.items():
            out.append({"bench": "sqlite-tpcc", "config": cfg, "round": rnd,
                        "warehouses": 1, "scale": 0.1, "tps": vals[rnd],
                        "tpmC": vals[rnd] * 27, "p50_us": 100.0,
                        "p99_us": 900.0, "errors": 0, "fs": "tmpfs",
                        "dir": "/dev/shm"})
            out.append({"bench": "sqlite-speedtest1", "config": cfg,
                        "round": rnd, "size": 5, "total_s": 1e3 / vals[rnd],
                        "fs": "tmpfs", "dir": "/dev/shm"})
    return out



def cells(md, first):
    for line in md.splitlines():
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) > 1 and (c[0] == first or c[1] == first):
            return c
    raise AssertionError(f"no row {first!r}")


def goal_row(md, what):
    for line in md.splitlines():
        if f"| {what} |" in line:
            return [x.strip() for x in line.strip().strip("|").split("|")]
    raise AssertionError(f"no goal row {what!r}")


def test_medians_and_shares_come_from_the_data(report_of, tmp_path):
    md = report_of("sqlite.jsonl", rows())
    assert "## SQLite" in md and "(#sqlite)" in md
    c = cells(md, "pmtx-redo-pdom1")
    assert c[3] == report.fmt_rate(950)
    assert c[-2] == f"{950 / 1000 * 100:.1f} %"
    assert (tmp_path / "sqlite-tpcc.png").stat().st_size > 1000
    assert (tmp_path / "sqlite-speedtest1.png").stat().st_size > 1000


def test_goal_verdicts_follow_the_data(report_of):
    md = report_of("sqlite.jsonl", rows())
    # best PDOM-1 runtime: redo (950) against :memory: (1000): 0.95 >= 0.9
    assert goal_row(md, "pmtx PDOM-1 hardware vs :memory:")[-1] == \
        "0.95x: **met**"
    # against WAL FULL on /dev/shm (410): 2.32x >= 2
    assert goal_row(md, "pmtx PDOM-1 hardware vs WAL FULL on /dev/shm"
                    )[-1] == "2.32x: **met**"
    # the file backend (300) against WAL FULL on the disk (250): 1.2x
    assert goal_row(md, "pmtx file backend vs WAL FULL on the disk"
                    )[-1] == "1.20x: **met**"
    slow = dict(TPS, **{"pmtx-redo-pdom1": [500, 500, 500],
                        "pmtx-redo-file": [100, 100, 100]})
    md = report_of("sqlite.jsonl", rows(slow))
    # undo (800) is now the best PDOM-1 runtime
    assert goal_row(md, "pmtx PDOM-1 hardware vs :memory:")[2] == \
        "pmtx-undo-pdom1"
    assert goal_row(md, "pmtx PDOM-1 hardware vs :memory:")[-1] == \
        "0.80x: **MISSED**"
    assert goal_row(md, "pmtx file backend vs WAL FULL on the disk"
                    )[-1] == "0.40x: **MISSED**"


def test_a_missing_baseline_is_not_a_verdict(report_of):
    data = [r for r in rows() if r.get("config") != "wal-full-disk"]
    md = report_of("sqlite.jsonl", data)
    assert goal_row(md, "pmtx file backend vs WAL FULL on the disk"
                    )[-1] == "not measured"
