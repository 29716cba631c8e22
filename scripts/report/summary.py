# SPDX-License-Identifier: BSD-3-Clause
"""The report's title and its "Summary" section: for each library
workload, the best pmtx runtime against PMDK on PDOM-1 hardware (range
and geometric mean of the speed-up), the winning runtime per workload
and domain configuration, persist barriers per transaction per system,
and what each workload swept and held fixed."""
from collections import defaultdict

from .common import fmt_x, geomean, md_table
from .data import (HW, best_pmtx, cfg_of, config_key, config_label,
                   per_tx, short, system_key, vs_pmdk)


def title(data, links):
    """The title and the opening paragraph; links: the sentences that
    point to the applications' sections present."""
    return ["# pmtx evaluation report", "",
            f"{len(data.rows)} measurements, workloads: "
            f"{', '.join(data.workloads())}. Ratios are times: PMDK's time "
            "per op over pmtx's (higher is better for pmtx); every ratio "
            "compares systems measured interleaved in the same run." +
            "".join(" " + link for link in links), ""]


def section(data):
    return ["## Summary", "",
            "### Best pmtx runtime against PMDK (PDOM-1 hardware)", "",
            table_vs_pmdk(data), "",
            "### Winning pmtx runtime per workload and configuration", "",
            "Cells: the runtime fastest at the most sweep points (points "
            "won / points).", "", table_winners(data), "",
            "### Persist barriers per transaction (range over the sweep)",
            "", "PDOM-1 hardware; n/a: no counters (PMDK).", "",
            table_barriers(data), "",
            "### What ran", "", table_workloads(data), ""]


def most_common(names):
    counts = defaultdict(int)
    for n in names:
        counts[n] += 1
    top = max(counts.values())
    return [n for n in sorted(counts, key=system_key) if counts[n] == top], \
        top


def table_vs_pmdk(data):
    rows = []
    for w in data.workloads():
        v = vs_pmdk(data, w)
        if not v:
            rows.append([w, 0, "-", "-", "-", "-", "-"])
            continue
        rs = [x[2] for x in v]
        top, n = most_common([x[1] for x in v])
        lo = min(v, key=lambda x: x[2])
        rows.append([w, len(v), "/".join(short(t) for t in top) +
                     f" ({n}/{len(v)})", fmt_x(min(rs)), fmt_x(geomean(rs)),
                     fmt_x(max(rs)), data.show(w, lo[0])])
    return md_table(["workload", "points", "best pmtx runtime (points "
                     "won)", "speed-up over PMDK: min", "geo-mean", "max",
                     "point of the min"], rows)


def winner_cell(data, w, cfg):
    pts = data.points(w, cfg)
    wins = [best_pmtx(sr)[0] for sr in pts.values() if best_pmtx(sr)]
    if not wins:
        return "-"
    top, n = most_common(wins)
    cell = "/".join(short(t) for t in top) + f" ({n}/{len(wins)})"
    pmdk_wins = sum(1 for sr in pts.values() if "pmdk" in sr and
                    best_pmtx(sr) and sr["pmdk"]["ns_per_op"] <
                    best_pmtx(sr)[1]["ns_per_op"])
    return cell + (f"; PMDK faster at {pmdk_wins}" if pmdk_wins else "")


def table_winners(data):
    cfgs = sorted({c for w in data.workloads() for c in data.configs(w)},
                  key=config_key)
    rows = [[w] + [winner_cell(data, w, c) for c in cfgs]
            for w in data.workloads()]
    return md_table(["workload"] + [config_label(c) for c in cfgs], rows)


def fmt_count(v):
    """A per-transaction count: 2, 1.48, 1282."""
    if abs(v - round(v)) < 0.005 or v >= 100:
        return f"{v:.0f}"
    return f"{v:.2f}".rstrip("0").rstrip(".") if v < 10 else f"{v:.1f}"


def barrier_cell(rows):
    vals = [r["barriers_per_op"] / per_tx(r) for r in rows
            if r.get("barriers_per_op") is not None]
    if not rows:
        return ""
    if not vals:
        return "n/a"
    lo, hi = fmt_count(min(vals)), fmt_count(max(vals))
    return lo if lo == hi else f"{lo}-{hi}"


def table_barriers(data):
    systems = sorted({r["system"] for r in data.rows}, key=system_key)
    rows = []
    for w in data.workloads():
        cfg = HW if HW in data.configs(w) else data.configs(w)[0]
        rs = [r for r in data.rows if r["workload"] == w and cfg_of(r) == cfg]
        rows.append([w] + [barrier_cell([r for r in rs if r["system"] == s])
                           for s in systems])
    return md_table(["workload"] + [short(s) for s in systems], rows)


def table_workloads(data):
    """What each workload swept and held fixed, and what it ran."""
    rows = []
    for w in data.workloads():
        rs = [r for r in data.rows if r["workload"] == w]
        nvals = {k: len({r["params"].get(k) for r in rs})
                 for k in data.varying(w)}
        swept = ", ".join(f"{k} ({n})" for k, n in sorted(nvals.items()))
        fixed = ", ".join(f"{k}={v}" for k, v in
                          sorted(data.fixed(w).items()))
        cfgs = len(data.configs(w))
        rows.append([w, swept or "-", fixed or "-",
                     ", ".join(short(s) for s in data.systems(w)),
                     cfgs, len(rs)])
    return md_table(["workload", "swept (values)", "held fixed", "systems",
                     "configs", "rows"], rows)
