# SPDX-License-Identifier: BSD-3-Clause
"""The "Targets" section: each performance target of pmtx against PMDK
on PDOM-1 hardware (array, sps, alloc, hashmap, bbuf's cache-line
transactions, and auto within 5 % of the best fixed runtime), the value
measured and whether it is met, judged from this run's data."""
from .common import fmt_ns, fmt_rate, fmt_x, geomean, md_table
from .data import HW, best_pmtx, config_label, ratio_of, short, vs_pmdk


def section(data):
    return ["## Targets", "", table_targets(data), ""]


TARGETS = [  # (id, text, workload, check)
    ("array-4", "array, slot 4: best pmtx >= 3x PMDK at every write_pct "
     ">= 10", "array"),
    ("sps-k8", "sps, k >= 8: best pmtx >= 10x PMDK swaps/s", "sps"),
    ("sps-k1", "sps, k = 1: best pmtx >= 2M transactions/s", "sps"),
    ("alloc", "alloc: best pmtx >= 3x PMDK (every X)", "alloc"),
    ("hashmap", "hashmap: best pmtx >= 5x PMDK (every entry size)",
     "hashmap"),
    ("bbuf-2", "bbuf scenario 2: cltx >= 3x PMDK", "bbuf"),
    ("bbuf-3", "bbuf scenario 3: cltx >= 10x PMDK", "bbuf"),
    ("auto", "auto: within 5% of the best fixed runtime at every point of "
     "sps and array, in every configuration", "sps"),
]
# The fixed runtimes auto is judged against: those of an ordinary region.
# pmtx-twin is not one: it runs only in a twin region (created for it,
# twice the bytes), where auto means twin; it is a pmtx runtime everywhere
# else (best pmtx, winners, barriers, observations).
FIXED = ["pmtx-undo", "pmtx-redo", "pmtx-redo-async", "pmtx-cow"]


def auto_vs_fixed(data):
    """[(workload, config, point, best fixed system, auto ns / best ns)]."""
    out = []
    for w in ("sps", "array"):
        for cfg in data.configs(w) if w in data.idx else []:
            for pk, sr in data.points(w, cfg).items():
                fx = [(sr[s]["ns_per_op"], s) for s in FIXED if s in sr]
                if "pmtx-auto" in sr and fx:
                    ns, s = min(fx)
                    out.append((w, cfg, dict(pk), s,
                                sr["pmtx-auto"]["ns_per_op"] / ns))
    return out


def target_auto(data):
    v = auto_vs_fixed(data)
    if not v:
        return None
    worst = max(v, key=lambda x: x[4])
    gm = geomean([x[4] for x in v])
    over = [x for x in v if x[4] > 1.05]
    text = (f"worst {worst[4]:.2f}x the best fixed ({worst[0]}, "
            f"{config_label(worst[1])}, {data.show(worst[0], worst[2])}, "
            f"best {short(worst[3])}), geo-mean {gm:.3f}x, over {len(v)} "
            f"points; {len(over)} points over 1.05x")
    return text, not over


def target_min_ratio(data, w, goal, where):
    """(measured text, met?) for "best pmtx >= goal x PMDK at every
    point where `where` holds"."""
    v = vs_pmdk(data, w, where)
    if not v:
        return None
    lo = min(v, key=lambda x: x[2])
    gm = geomean([x[2] for x in v])
    text = (f"min {fmt_x(lo[2])} ({short(lo[1])}, {data.show(w, lo[0])}), "
            f"geo-mean {fmt_x(gm)}, over {len(v)} points")
    misses = [x for x in v if x[2] < goal]
    if misses:
        text += f"; below {goal}x at {len(misses)}: " + "; ".join(
            data.show(w, x[0]) for x in misses[:6])
        text += " ..." if len(misses) > 6 else ""
    return text, not misses


def target_sps_k1(data):
    best = []
    for pk, sr in data.points("sps", HW).items():
        if dict(pk).get("k") == 1 and best_pmtx(sr):
            s, r = best_pmtx(sr)
            best.append((r["ops_per_s"], s))
    if not best:
        return None
    tps, s = max(best)
    return f"{fmt_rate(tps)} ({short(s)})", tps >= 2e6


def target_cltx(data, scenario, goal):
    for pk, sr in data.points("bbuf", HW).items():
        if dict(pk).get("scenario") == scenario:
            r = ratio_of(sr, "pmdk", "pmtx-cltx")
            if r is not None:
                return f"{fmt_x(r)} ({fmt_ns(sr['pmtx-cltx']['ns_per_op'])}"\
                    f" vs {fmt_ns(sr['pmdk']['ns_per_op'])})", r >= goal
    return None


def check_target(data, tid):
    if tid == "array-4":
        return target_min_ratio(data, "array", 3, lambda p: p.get("slot") ==
                                4 and p.get("write_pct", 0) >= 10)
    if tid == "sps-k8":
        return target_min_ratio(data, "sps", 10, lambda p: p.get("k", 0) >= 8)
    if tid == "sps-k1":
        return target_sps_k1(data)
    if tid == "auto":
        return target_auto(data)
    if tid in ("alloc", "hashmap"):
        return target_min_ratio(data, tid, 3 if tid == "alloc" else 5, None)
    return target_cltx(data, int(tid[-1]), 3 if tid == "bbuf-2" else 10)


def table_targets(data):
    rows = []
    for tid, text, w in TARGETS:
        res = check_target(data, tid)
        if res is None:
            rows.append([text, "not measured", "-"])
        else:
            rows.append([text, res[0], "**met**" if res[1] else
                         "**MISSED**"])
    return md_table(["target (PDOM-1 hardware, vs PMDK in the same run)",
                     "measured", "verdict"], rows)
