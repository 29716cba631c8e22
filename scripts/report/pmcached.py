# SPDX-License-Identifier: BSD-3-Clause
"""The "pmcached" section: pmcached (apps/pmcached) beside memcached,
from <run>/pmcached.jsonl (the lines of apps/pmcached/bench/ycsb.py and
warmup.py): each variant's share of memcached's throughput against the
goals, per YCSB workload the medians, the rounds' range and latencies,
the restart warm-up, and the figures pmcached-ycsb.png and
pmcached-warmup.png."""
import os
from collections import OrderedDict, defaultdict

from .common import (bar_groups, figure_lines, fmt_eng, fmt_ms, fmt_rate,
                     fmt_us, label_log_y, legend_handles, md_table, opening,
                     pyplot, save_figure, style_of)

JSONL = "pmcached.jsonl"
LINK = "pmcached beside memcached: [its section](#pmcached)."

PMC_VARIANTS = ["memcached", "pmcached-undo", "pmcached-redo",
                "pmcached-redo-async", "pmcached-twin", "pmcached-redo-file"]
PMC_COLOURS = {"memcached": "#000000", "memcached-graceful": "#000000",
               "memcached-kill9": "#7f7f7f", "pmcached-undo": "#1f77b4",
               "pmcached-redo": "#ff7f0e", "pmcached-redo-async": "#2ca02c",
               "pmcached-twin": "#d62728", "pmcached-redo-file": "#9467bd"}
PMC_WORKLOADS = OrderedDict([
    ("a", "A: 50 % reads, 50 % updates"),
    ("b", "B: 95 % reads, 5 % updates"),
    ("c", "C: reads only"),
    ("f", "F: 50 % reads, 50 % read-modify-writes")])
# The goals: pmcached's throughput as a share of memcached's in
# the same ycsb.py invocation.
PMC_GOALS = {"a": 0.75, "b": 0.90, "c": 0.90, "f": 0.75}
# Rounds further apart than this (highest / lowest ops/s, the variant's or
# memcached's) make a verdict noisy: on the idle 2-core development VM
# they stay within 1.3x (memcached within 1.05x); with another job on the
# machine they were 1.9x-3.6x apart.
PMC_NOISY = 1.5


def pmc_key(variant):
    return (PMC_VARIANTS.index(variant) if variant in PMC_VARIANTS else 50,
            variant)


def pmc_colour(variant):
    return PMC_COLOURS.get(variant) or style_of(variant)[0]


def pmc_ycsb(rows):
    """ycsb.py's summary lines: {(variant, workload): row}."""
    return {(r["variant"], r["workload"]): r for r in rows
            if r.get("bench") == "ycsb" and r.get("summary")}


def pmc_rounds(rows):
    """ycsb.py's per-round ops/s: {(variant, workload): [ops/s]}."""
    out = defaultdict(list)
    for r in rows:
        if r.get("bench") == "ycsb" and not r.get("summary") and \
                r.get("ops_per_sec") is not None:
            out[(r["variant"], r["workload"])].append(r["ops_per_sec"])
    return out


def spread(vals):
    """Highest over lowest of a variant's rounds (1 for fewer than 2)."""
    vals = [v for v in vals if v]
    return max(vals) / min(vals) if len(vals) >= 2 else 1.0


def pmc_spread(rounds, v, w):
    """The larger spread of variant v's and memcached's rounds on w."""
    return max(spread(rounds.get((v, w), [])),
               spread(rounds.get(("memcached", w), [])))


def fmt_range(vals):
    """The rounds' lowest and highest ops/s: 76.1k-118k."""
    if len(vals) < 2:
        return "-"
    return f"{fmt_eng(float(f'{min(vals):.3g}'))}-" \
        f"{fmt_eng(float(f'{max(vals):.3g}'))}"


def pmc_warmup(rows):
    """warmup.py's summary, skipped and error lines, by (items, case)."""
    out = OrderedDict()
    for r in rows:
        if r.get("bench") == "warmup" and (r.get("summary") or
                                           r.get("skipped") or
                                           r.get("error")):
            out[(r["items"], warm_case(r))] = r
    return out


def warm_case(r):
    return f"{r.get('variant')}-{r.get('restart')}"


def fmt_share(r):
    """A throughput ratio as a share of memcached's: 93.4 % (ycsb.py
    rounds the ratio to 3 digits; one decimal keeps 89.8 % from showing
    as a goal of 90 % met)."""
    return "-" if r is None else f"{r * 100:.1f} %"


def goal_verdict(r, w, sp=1.0):
    """(met?, text) of a variant's ratio against workload w's goal; sp is
    the rounds' spread (pmc_spread)."""
    ratio = r.get("ratio_to_memcached")
    if ratio is None:
        return None, "no memcached baseline"
    met = ratio >= PMC_GOALS[w]
    text = "**met**" if met else "**MISSED**"
    return met, text + (f" (noisy: {sp:.1f}x)"
                        if sp > PMC_NOISY else "")


def table_pmc_workload(summ, rounds, w):
    """One YCSB workload: each variant's medians, the rounds' range, and
    its goal verdict."""
    rows = []
    for v in sorted({v for v, ww in summ if ww == w}, key=pmc_key):
        r = summ[(v, w)]
        verdict = "-" if v == "memcached" else \
            goal_verdict(r, w, pmc_spread(rounds, v, w))[1]
        rows.append([v, r.get("backend") or "-", r.get("rounds"),
                     fmt_rate(r.get("median_ops_per_sec")),
                     fmt_range(rounds.get((v, w), [])),
                     fmt_us(r.get("median_p50_us")),
                     fmt_us(r.get("median_p99_us")),
                     fmt_us(r.get("median_p999_us")),
                     fmt_share(r.get("ratio_to_memcached")), verdict])
    return md_table(["variant", "backend", "rounds", "median ops/s",
                     "rounds' range", "p50",
                     "p99", "p99.9", "of memcached's ops/s",
                     f"goal >= {PMC_GOALS[w] * 100:.0f} %"], rows)


def table_pmc_goals(summ, rounds, variants):
    """Per pmcached variant that ran (even if it failed): its share of
    memcached's throughput on each workload against the goal, and how
    many goals it meets."""
    ws = [w for w in PMC_WORKLOADS if any(ww == w for _, ww in summ)]
    rows = []
    for v, backend in variants.items():
        cells = [goal_cell(summ.get((v, w)), w, pmc_spread(rounds, v, w))
                 for w in ws]
        met = sum(bool(ok) for ok, _ in cells)
        rows.append([v, backend or "-"] + [c for _, c in cells] +
                    [f"{met}/{len(ws)}"])
    head = [f"{w.upper()} (goal >= {PMC_GOALS[w] * 100:.0f} %)" for w in ws]
    return md_table(["variant", "backend"] + head + ["goals met"], rows)


def goal_cell(r, w, sp):
    """(met?, cell) of one variant's summary row r (None: it failed) on
    workload w."""
    if not r:
        return None, "**not measured** (failed)"
    ok, text = goal_verdict(r, w, sp)
    return ok, f"{fmt_share(r.get('ratio_to_memcached'))} {text}"


def pmc_variants(rows):
    """{variant: backend} of the pmcached variants ycsb.py ran, failed
    ones included, in report order."""
    seen = {r["variant"]: r.get("backend") for r in rows
            if r.get("bench") == "ycsb" and
            r.get("variant", "memcached") != "memcached"}
    return OrderedDict((v, seen[v]) for v in sorted(seen, key=pmc_key))


def pmc_values(rows, key):
    """The distinct values of a field, in order of appearance."""
    return list(OrderedDict((r[key], 1) for r in rows
                            if r.get(key) is not None))


def pmc_setup_lines(rows, summ, eval_mode):
    """How ycsb.py and warmup.py ran: sizes and the pinning, from the
    JSON lines."""
    ys = list(summ.values())
    ws = [r for r in rows if r.get("bench") == "warmup"]
    out = ["- A smoke run (a test of the harness): each measurement is a "
           "few milliseconds long; do not read the numbers."] \
        if eval_mode == "smoke" else []
    if ys:
        r = ys[0]
        n = max(x.get("rounds", 0) for x in ys)
        out.append(f"- ycsb.py ({r.get('mode')} sizes): "
                   f"{r.get('records')} records of {r.get('value_size')} B, "
                   f"{r.get('conns')} connections from "
                   f"{r.get('client_threads')} client thread(s), server "
                   f"-t {r.get('server_threads')}; medians over {n} "
                   f"round{'s' if n != 1 else ''}, variants interleaved "
                   "round-robin.")
        out.append("- ycsb.py pinning: " +
                   "; ".join(pmc_values(ys, "pinning")) + ".")
    if ws:
        out.append("- warmup.py pinning: " +
                   "; ".join(pmc_values(ws, "pinning")) + ".")
    return out


def table_pmc_warmup(warm):
    rows = []
    for (items, case), r in warm.items():
        if r.get("error"):
            rows.append([f"{items:,}", case, "**failed** (below)", "-",
                         "-", "-", "-"])
            continue
        if r.get("skipped"):
            rows.append([f"{items:,}", case, f"skipped: {r['skipped']}",
                         "-", "-", "-", "-"])
            continue
        hit = fmt_ms(r.get("first_hit_ms")) if r.get("hits") else \
            "no hit (restarts empty)"
        rows.append([f"{items:,}", case, hit,
                     fmt_ms(r.get("first_connect_ms")),
                     f"{r.get('hits')}/{r.get('repeats')}",
                     f"{r.get('items_after'):,}", f"{r.get('fill_s')} s"])
    return md_table(["items", "case", "first hit (median)", "first connect",
                     "restarts with a hit", "items after (min)",
                     "fill"], rows)


def pmc_error_lines(rows):
    """Failed measurements (lines with "error")."""
    out = []
    for r in rows:
        if r.get("error"):
            where = ", ".join(f"{k}={r[k]}" for k in
                              ("variant", "round", "restart", "items")
                              if r.get(k) is not None)
            out.append(f"- {r.get('bench')} {where}: {r['error']}")
    return out


def pmc_seed_line(summ):
    """Seed 001's result beside this run's best pmcached variant."""
    best = {}
    for (v, w), r in summ.items():
        rr = r.get("ratio_to_memcached")
        if v != "memcached" and rr is not None and rr > best.get(w, (0,))[0]:
            best[w] = (rr, v)
    if not best:
        return []
    here = ", ".join(f"{w.upper()} {fmt_share(best[w][0])} "
                     f"({best[w][1][9:]})" for w in PMC_WORKLOADS
                     if w in best)
    return ["Seed 001 (pmemcached: undo logging on Intel's emulator) "
            "reports throughput 10-15 % below memcached's on the "
            "read-heavy workloads (B, C), 40-60 % below on the write-heavy "
            "ones (F), and a sub-millisecond warm-up. The best pmcached "
            f"variant here, as a share of memcached's throughput: {here}.",
            ""]


def noisy_note(summ, rounds):
    """A warning when some verdicts rest on rounds far apart."""
    if not any(pmc_spread(rounds, v, w) > PMC_NOISY for v, w in summ):
        return ""
    return (" \"noisy: Nx\" marks a verdict where the fastest round (of "
            "the variant or of memcached) was N times the slowest, N above "
            f"{PMC_NOISY:g} (an idle machine stays within 1.3x): something "
            "else used the CPUs or the disk during the run; measure again "
            "on a quiet machine before reading it.")


INTRO = ("pmcached (apps/pmcached) beside Debian's memcached over "
         "loopback sockets, by apps/pmcached/bench/ycsb.py and "
         "warmup.py (lines in pmcached.jsonl). The ratios compare "
         "servers measured in the same invocation; anything else running "
         "on the machine shares their CPUs.")


def section(rows, plots, eval_mode=None):
    """The "pmcached" section of report.md."""
    summ = pmc_ycsb(rows)
    warm = pmc_warmup(rows)
    doc = opening("pmcached", INTRO, pmc_setup_lines(rows, summ, eval_mode))
    if summ:
        doc += ycsb_lines(rows, summ)
    if warm:
        doc += ["### Warm-up: exec to the first hit after a restart", "",
                "memcached-graceful: SIGUSR1 (restartable mode, -e), "
                "memcached-kill9 and pmcached-*-kill9: SIGKILL; medians "
                "over the restarts.", "", table_pmc_warmup(warm), ""]
    errs = pmc_error_lines(rows)
    if errs:
        doc += ["### Failed measurements", ""] + errs + [""]
    doc += figure_lines("pmcached", plots)
    return doc


def ycsb_lines(rows, summ):
    """The goals, seed 001's result, and a table per YCSB workload."""
    rounds = pmc_rounds(rows)
    doc = ["### Goals: share of memcached's throughput", "",
           "The goals: pmcached's median throughput at least 90 % of "
           "memcached's on YCSB B and C (read-heavy), at least 75 % "
           "on A and F (write-heavy), memcached measured in the same "
           "invocation." + noisy_note(summ, rounds), "",
           table_pmc_goals(summ, rounds, pmc_variants(rows)), ""]
    doc += pmc_seed_line(summ)
    for w, title in PMC_WORKLOADS.items():
        if any(ww == w for _, ww in summ):
            doc += [f"### YCSB {title}", "",
                    table_pmc_workload(summ, rounds, w), ""]
    return doc


def draw_pmc_ycsb(plt, summ, path):
    """Median ops/s (linear: the goals are shares of memcached's) and p99
    latency (log) per workload, one bar per variant; each workload's goal
    as a dashed line over its group, each variant's share above its bar."""
    from matplotlib.ticker import FuncFormatter
    ws = [w for w in PMC_WORKLOADS if any(ww == w for _, ww in summ)]
    vs = sorted({v for v, _ in summ}, key=pmc_key)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    for ax, key, ylabel in ((axes[0], "median_ops_per_sec",
                             "operations per second (median)"),
                            (axes[1], "median_p99_us",
                             "p99 latency (us, median)")):
        width = bar_groups(
            ax, ws, vs, lambda w, v: (summ.get((v, w)) or {}).get(key),
            pmc_colour)
        ax.set_xticklabels([f"YCSB {w.upper()}" for w in ws], fontsize=9)
        ax.set_ylabel(ylabel, fontsize=8)
    axes[0].yaxis.set_major_formatter(FuncFormatter(fmt_eng))
    axes[1].set_yscale("log")
    label_log_y(axes[1])
    pmc_goal_marks(axes[0], summ, ws, vs, width)
    pin = pmc_values(list(summ.values()), "pinning")
    finish_pmc_figure(fig, axes, "pmcached vs memcached, YCSB" +
                      (f"  ({pin[0]})" if pin else ""))
    save_figure(plt, fig, path)


def pmc_goal_marks(ax, summ, ws, vs, width):
    """The goal line over each workload's bars, and each pmcached bar's
    share of memcached's throughput above it."""
    for j, w in enumerate(ws):
        base = (summ.get(("memcached", w)) or {}).get("median_ops_per_sec")
        if base:
            ax.hlines(base * PMC_GOALS[w], j - width / 2,
                      j + 0.8 - width / 2, colors="#d62728",
                      linestyles="--", linewidth=1.2,
                      label="goal" if j == 0 else None)
        for i, v in enumerate(vs):
            r = summ.get((v, w)) or {}
            if v != "memcached" and r.get("ratio_to_memcached") is not None:
                ax.text(j + i * width, r["median_ops_per_sec"],
                        fmt_share(r["ratio_to_memcached"]), ha="center",
                        va="bottom", fontsize=6, rotation=90)
    ax.set_ylim(top=ax.get_ylim()[1] * 1.12)


def finish_pmc_figure(fig, axes, title, ncol=6):
    fig.suptitle(title, fontsize=11)
    handles = legend_handles(axes)
    fig.legend(list(handles.values()), list(handles), loc="lower center",
               ncol=min(len(handles), ncol), fontsize=8, frameon=False)
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=0.75 / w, right=1 - 0.15 / w, bottom=1.0 / h,
                        top=1 - 0.55 / h, wspace=0.25)


def draw_pmc_warmup(plt, warm, path):
    """First hit after a restart per item count, one bar per case; a case
    without a hit (memcached after kill -9 restarts empty) shows its first
    connection, hatched."""
    items = sorted({n for n, _ in warm})
    cases = list(OrderedDict((c, 1) for _, c in warm))
    fig, ax = plt.subplots(figsize=(8, 4.8))
    width = 0.8 / max(len(cases), 1)
    low = []
    for i, c in enumerate(cases):
        label = c
        for j, n in enumerate(items):
            r = warm.get((n, c))
            if r and r.get("summary"):
                low.append(warm_bar(ax, j + i * width, width, r, label))
                label = None
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(items))])
    ax.set_xticklabels([f"{n:,} items" for n in items], fontsize=9)
    ax.set_yscale("log")
    ax.set_ylim(bottom=min(low) / 3, top=ax.get_ylim()[1] * 2)
    ax.set_ylabel("exec to first hit (ms, median)", fontsize=8)
    ax.grid(True, axis="y", which="major", alpha=0.35)
    label_log_y(ax)
    finish_pmc_figure(fig, [ax], "Restart warm-up (hatched: no hit, the "
                      "bar is the first connection)", ncol=3)
    save_figure(plt, fig, path)


def warm_bar(ax, x, width, r, label):
    """One warm-up bar, its value above it; returns the value."""
    hit = r.get("first_hit_ms") if r.get("hits") else None
    y = hit or r.get("first_connect_ms")
    ax.bar(x, y, width, color=pmc_colour(warm_case(r)
                                         if r.get("server") == "memcached"
                                         else r.get("variant")), alpha=0.85,
           hatch=None if hit else "//", edgecolor="white", label=label)
    ax.text(x, y, fmt_ms(hit) if hit else "no hit", ha="center",
            va="bottom", fontsize=7)
    return y


def make_plots(rows, run_dir):
    """pmcached's figures; returns [(file name, caption)]."""
    plt = pyplot()
    out = []
    summ, warm = pmc_ycsb(rows), pmc_warmup(rows)
    if summ:
        draw_pmc_ycsb(plt, summ, os.path.join(run_dir, "pmcached-ycsb.png"))
        out.append(("pmcached-ycsb.png", "YCSB throughput and p99"))
    if any(r.get("summary") for r in warm.values()):
        draw_pmc_warmup(plt, warm, os.path.join(run_dir,
                                                "pmcached-warmup.png"))
        out.append(("pmcached-warmup.png", "restart warm-up"))
    return out
