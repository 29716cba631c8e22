# SPDX-License-Identifier: BSD-3-Clause
"""The "Observations" section: facts computed from this run's library
workloads, one a line: where redo overtakes undo along the array sweep,
the PDOM-0 / PDOM-2 gap, cow's rank, eager against lazy persist,
cltx against PMDK, redo-async against redo, twin against the fastest
other runtime, and the distance to the uninstrumented floor."""
from .common import fmt_x, geomean
from .data import (CONFIG_ORDER, HW, NOT_RUNTIMES, best_pmtx, config_label,
                   ratio_of, series, short, system_key)


def section(data):
    obs = [f"- {o}" for o in observations(data)] or ["- (not enough data)"]
    return ["## Observations (computed from this run)", ""] + obs + [""]


def crossover(ser, a, b):
    """Where b becomes faster than a along x: ("from", x), ("all",),
    ("never",), ("mixed", [xs]), or None without data."""
    xs = sorted(x for x in ser if a in ser[x] and b in ser[x])
    if not xs:
        return None
    faster = [ser[x][b] < ser[x][a] for x in xs]
    if all(faster):
        return ("all",)
    if not any(faster):
        return ("never",)
    first = next(i for i in range(len(xs)) if all(faster[i:])) \
        if faster[-1] else None
    if first is not None:
        return ("from", xs[first])
    return ("mixed", [x for x, f in zip(xs, faster) if f])


def crossover_text(c, unit):
    if c[0] == "all":
        return "at every point"
    if c[0] == "never":
        return "at no point"
    if c[0] == "from":
        return f"from {c[1]}{unit} on"
    return "only at " + ", ".join(f"{x}{unit}" for x in c[1])


def obs_crossovers(data):
    out = []
    for w in ("array", "array-raw"):
        slots = sorted({dict(pk).get("slot") for c in data.configs(w)
                        for pk in data.points(w, c)} - {None})
        for slot in slots:
            parts = []
            for cfg in data.configs(w):
                ser = series(data, w, cfg, {"slot": slot}, "write_pct",
                             ["pmtx-undo", "pmtx-redo"])
                c = crossover(ser, "pmtx-undo", "pmtx-redo")
                if c:
                    parts.append(f"{config_label(cfg)} "
                                 f"{crossover_text(c, ' % writes')}")
            if parts:
                out.append(f"{w}, slot {slot}: redo beats undo: "
                           + "; ".join(parts) + ".")
    return out


def obs_domain_gap(data):
    """The PDOM-0 vs PDOM-2 gap per runtime at the most writes."""
    out = []
    p0, p2 = ("pdom0", "emulated"), ("pdom2", "emulated")
    for w in ("array",):
        for slot in (4, 64):
            s0 = series(data, w, p0, {"slot": slot}, "write_pct",
                        [s for s in data.systems(w)])
            s2 = series(data, w, p2, {"slot": slot}, "write_pct",
                        [s for s in data.systems(w)])
            xs = sorted(set(s0) & set(s2))
            if not xs:
                continue
            x = xs[-1]
            gaps = [f"{short(s)} {fmt_x(s0[x][s] / s2[x][s])}"
                    for s in sorted(s0[x], key=system_key) if s in s2[x]]
            out.append(f"{w}, slot {slot}, {x} % writes: PDOM-0 / PDOM-2 "
                       f"latency: " + ", ".join(gaps) + ".")
    return out


def obs_cltx(data):
    out = []
    for pk, sr in sorted(data.points("bbuf", HW).items()):
        r = ratio_of(sr, "pmdk", "pmtx-cltx")
        if r is not None:
            out.append(f"bbuf scenario {dict(pk).get('scenario')}: cltx is "
                       f"{fmt_x(r)} PMDK (PDOM-1 hardware).")
    return out


def obs_eager(data):
    out = []
    for cfg in data.configs("alloc"):
        rs = [ratio_of(sr, "pmtx-undo-eager", "pmtx-undo")
              for sr in data.points("alloc", cfg).values()]
        rs = [r for r in rs if r]
        if rs:
            out.append(f"alloc, {config_label(cfg)}: eager persist takes "
                       f"{fmt_x(min(rs))}-{fmt_x(max(rs))} the time of lazy "
                       f"persist (undo), geo-mean {fmt_x(geomean(rs))}.")
    return out


def obs_async(data):
    """Where redo-async beats redo, over all workloads on each config."""
    out = []
    for cfg in CONFIG_ORDER:
        n = wins = 0
        for w in data.workloads():
            for sr in data.points(w, cfg).values():
                r = ratio_of(sr, "pmtx-redo", "pmtx-redo-async")
                if r is not None:
                    n += 1
                    wins += r > 1
        if n:
            out.append(f"{config_label(cfg)}: redo-async is faster than "
                       f"redo at {wins} of {n} points (all workloads).")
    return out


def obs_twin(data):
    """Twin against the fastest other pmtx runtime, per workload on PDOM-1
    hardware: where it is the fastest, and its time relative to the best
    other one (< 1: twin faster)."""
    out = []
    for w in data.workloads():
        rs, n_best = [], 0
        for sr in data.points(w, HW).values():
            if "pmtx-twin" not in sr:
                continue
            others = {s: r for s, r in sr.items() if s != "pmtx-twin"}
            b = best_pmtx(others)
            if b:
                rs.append(sr["pmtx-twin"]["ns_per_op"] / b[1]["ns_per_op"])
                n_best += best_pmtx(sr)[0] == "pmtx-twin"
        if rs:
            out.append(f"{w}: twin is the fastest pmtx runtime at {n_best} "
                       f"of {len(rs)} points on PDOM-1 hardware; its time "
                       f"is {fmt_x(geomean(rs))} the best other runtime's "
                       f"(geo-mean, {fmt_x(min(rs))}-{fmt_x(max(rs))}).")
    return out


def obs_floor(data):
    """How far the best pmtx runtime is from the uninstrumented floor."""
    out = []
    for w in data.workloads():
        rs = [best_pmtx(sr)[1]["ns_per_op"] / sr["plain"]["ns_per_op"]
              for sr in data.points(w, HW).values()
              if "plain" in sr and best_pmtx(sr)]
        if rs:
            out.append(f"{w}: the best pmtx runtime costs {fmt_x(geomean(rs))}"
                       f" the time of plain stores (geo-mean, "
                       f"{fmt_x(min(rs))}-{fmt_x(max(rs))}).")
    return out


def obs_cow(data):
    out = []
    for w in ("array", "array-raw", "sps", "single-obj", "multi-obj"):
        n = slow = 0
        for cfg in data.configs(w):
            for sr in data.points(w, cfg).values():
                pm = {s: r["ns_per_op"] for s, r in sr.items()
                      if s.startswith("pmtx-") and s not in NOT_RUNTIMES}
                if "pmtx-cow" in pm and len(pm) > 1:
                    n += 1
                    slow += max(pm, key=pm.get) == "pmtx-cow"
        if n:
            out.append(f"{w}: cow is the slowest pmtx runtime at {slow} of "
                       f"{n} points.")
    return out


def observations(data):
    out = []
    for f in (obs_crossovers, obs_domain_gap, obs_cow, obs_eager, obs_cltx,
              obs_async, obs_twin, obs_floor):
        out += f(data)
    return out
