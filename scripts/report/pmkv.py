# SPDX-License-Identifier: BSD-3-Clause
"""The "pmkv" section: pmkv (apps/pmkv) beside Redis, from
<run>/pmkv.jsonl (the lines of apps/pmkv/bench/kvbench.py: "pmkv-fig7",
one per pmkv-load run against a server; "pmkv-store", one per point of
pmkv-storebench, the same workload on the store in one process; and
"pmkv-vs-redis", one per redis-benchmark run): the goals against Redis,
SET and GET requests/s per configuration, the seed's Figure 7 as tables
(server and store), opt over wrapped, and the figures pmkv-fig7.png,
pmkv-store.png and pmkv-redis.png.

    section(rows, plots, eval_mode) -> the section's markdown lines
    make_plots(rows, run_dir)       -> [(file name, caption)]

Medians over rounds; every ratio compares configurations measured in the
same kvbench.py invocation, round by round interleaved.
"""
import os
import statistics
from collections import defaultdict

from .common import (figure_lines, fmt_rate, goal_cells, highest, md_table,
                     opening, pyplot, save_figure)

JSONL = "pmkv.jsonl"
LINK = "pmkv beside Redis: [its section](#pmkv)."

# The goals: pmkv-opt on /dev/shm (PDOM-1 hardware) against Redis
# with persistence off, SET and GET; pmkv on ext4 (file backend, and the
# journal backend) against Redis with AOF appendfsync always on ext4, SET.
# The pmkv side is the better of the configurations listed (a thread per
# client, the seed's; or one event loop).
GOALS = [(("pmkv-shm", "pmkv-shm-io1"), "redis-off", "set_rps", 1.0),
         (("pmkv-shm", "pmkv-shm-io1"), "redis-off", "get_rps", 1.0),
         (("pmkv-file-ext4", "pmkv-file-ext4-io1"), "redis-always-ext4",
          "set_rps", 2.0),
         (("pmkv-journal-ext4", "pmkv-journal-ext4-io1"),
          "redis-always-ext4", "set_rps", 2.0)]
ORDER = ["pmkv-shm", "pmkv-shm-io1", "pmkv-file-ext4", "pmkv-file-ext4-io1",
         "pmkv-journal-ext4", "pmkv-journal-ext4-io1", "redis-off",
         "redis-everysec-ext4", "redis-always-ext4", "redis-always-shm"]
WHAT = {"pmkv-shm": "pmkv (opt, redo), /dev/shm, PDOM-1 hardware",
        "pmkv-shm-io1": "the same, one event loop (--io-threads 1)",
        "pmkv-file-ext4": "pmkv (opt, redo), ext4, file backend",
        "pmkv-file-ext4-io1": "the same, one event loop (--io-threads 1)",
        "pmkv-journal-ext4": "pmkv (opt, redo), ext4, journal backend",
        "pmkv-journal-ext4-io1": "the same, one event loop "
                                 "(--io-threads 1)",
        "redis-off": "Redis 7.0, persistence off",
        "redis-everysec-ext4": "Redis, AOF appendfsync everysec, ext4",
        "redis-always-ext4": "Redis, AOF appendfsync always, ext4",
        "redis-always-shm": "Redis, AOF appendfsync always, /dev/shm"}


def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def redis_runs(rows):
    """{(config, pipeline): [row, ...]} of the successful runs."""
    out = defaultdict(list)
    for r in rows:
        if r.get("bench") == "pmkv-vs-redis" and r.get("ok"):
            out[(r["config"], r.get("pipeline"))].append(r)
    return out


# The seed's Figure 7 (seed 000, section 6.3): opt over wrapped.
SEED_OPT = ("the seed: opt +27% over wrapped at read-dominated mixes; "
            "at 50% reads about +8% under redo and +2% under undo")


def fig7_runs(rows, bench="pmkv-fig7"):
    """{(domain, version, runtime): {(clients, read_pct): [ops/s, ...]}}
    of bench's lines (pmkv-store's threads count as clients)."""
    out = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get("bench") == bench and not r.get("failed"):
            c = r.get("clients", r.get("threads"))
            out[(r["domain"], r.get("version", "opt"), r["runtime"])][
                (c, r["read_pct"])].append(r["ops_per_s"])
    return out


def best_of(runs, cfgs, pipeline, key):
    """(config, median) of the fastest of cfgs; (cfgs[0], None) if none
    was measured."""
    medians = [(c, med([r.get(key) for r in runs.get((c, pipeline), [])]))
               for c in cfgs]
    return highest(medians, cfgs[0])


def table_goals(runs):
    out = []
    for pipeline in sorted({p for _, p in runs}):
        for cfgs, base, key, goal in GOALS:
            cfg, a = best_of(runs, cfgs, pipeline, key)
            b = med([r.get(key) for r in runs.get((base, pipeline), [])])
            what = f"{cfg} / {base}, {key[:3].upper()}, -P {pipeline}"
            out.append([what] + goal_cells(a, b, goal))
    return md_table(["comparison", "pmkv req/s", "Redis req/s", "goal",
                     "measured"], out)


def table_redis(runs):
    out = []
    for pipeline in sorted({p for _, p in runs}):
        for cfg in ORDER:
            rs = runs.get((cfg, pipeline))
            if not rs:
                continue
            out.append([cfg, WHAT.get(cfg, cfg), pipeline, len(rs),
                        fmt_rate(med([r["set_rps"] for r in rs])),
                        fmt_rate(med([r["get_rps"] for r in rs])),
                        rs[0].get("requests")])
    return md_table(["configuration", "what", "-P", "rounds",
                     "SET req/s (median)", "GET req/s (median)",
                     "requests per test"], out)


def table_fig7(f7, unit="cl"):
    points = sorted({p for v in f7.values() for p in v})
    head = ["domain", "version", "runtime"] + [
        f"{c} {unit}, {r} % rd" for c, r in points]
    out = []
    for (domain, version, runtime), v in sorted(
            f7.items(), reverse=True,
            key=lambda kv: (kv[0][0] != "-", kv[0][0], kv[0][1] == "opt",
                            kv[0][2])):
        out.append([domain, version, runtime] + [
            fmt_rate(med(v[p])) if v.get(p) else "-" for p in points])
    return md_table(head, out)


def table_opt_over_wrapped(f7, unit="cl"):
    """opt / wrapped at every point, for each domain and runtime both
    versions ran."""
    points = sorted({p for v in f7.values() for p in v})
    out = []
    for (domain, version, runtime), v in sorted(f7.items()):
        w = f7.get((domain, "wrapped", runtime)) if version == "opt" \
            else None
        if not w:
            continue
        cells = []
        for p in points:
            a, b = med(v.get(p, [])), med(w.get(p, []))
            cells.append(f"{a / b:.2f}x" if a and b else "-")
        out.append([domain, runtime] + cells)
    if not out:
        return None
    return md_table(["domain", "runtime"] + [
        f"{c} {unit}, {r} % rd" for c, r in points], out)


def setup_lines(rows, eval_mode):
    f7 = [r for r in rows if r.get("bench") == "pmkv-fig7"]
    out = []
    if f7:
        pop = max(r.get("populate", 0) for r in f7)
        out.append(f"- Figure 7: pmkv-load, {f7[0].get('keys')} keys, "
                   f"{f7[0].get('value_size')}-byte values, pre-populated "
                   f"with {pop:,} random puts; each point "
                   f"{f7[0].get('seconds')} s, one request at a time per "
                   "client (no pipelining), GETs and SETs of uniform random "
                   "keys.")
    st = [r for r in rows if r.get("bench") == "pmkv-store"
          and not r.get("failed")]
    if st:
        out.append(f"- the store in one process: pmkv-storebench, the same "
                   f"keys, values and mixes, {st[0].get('populate'):,} "
                   f"random puts first, each point {st[0].get('seconds')} "
                   "s; threads call pmkv_get and pmkv_set (no sockets).")
    rs = [r for r in rows if r.get("bench") == "pmkv-vs-redis"]
    if rs:
        out.append("- beside Redis: redis-benchmark -t set,get -c 4 -r "
                   "238328 -d 64, -P 1 and -P 16; every configuration in "
                   "turn each round; the disk-bound ones (file backend, "
                   "AOF always on ext4) run a twentieth of the requests.")
    bad = [r for r in rows if r.get("bench") == "pmkv-vs-redis"
           and not r.get("ok")] + [
        r for r in rows if r.get("bench") in ("pmkv-fig7", "pmkv-store")
        and (r.get("failed") or r.get("errors"))]
    for r in bad:
        out.append(f"- a run failed: {r.get('config') or r.get('runtime')}"
                   f" (left out of the medians).")
    if eval_mode:
        out.append(f"- eval mode: {eval_mode}.")
    return out


INTRO = ("pmkv (apps/pmkv: a Redis-protocol server whose every write is "
         "one pmtx transaction, acknowledged after its commit) by "
         "apps/pmkv/bench/kvbench.py (lines in pmkv.jsonl).")


def section(rows, plots, eval_mode=None):
    runs, f7 = redis_runs(rows), fig7_runs(rows)
    doc = opening("pmkv", INTRO, setup_lines(rows, eval_mode))
    if runs:
        doc += ["### Goals (median requests per second)", "",
                table_goals(runs), "",
                "### Beside Redis", "", table_redis(runs), ""]
    if f7:
        doc += ["### The seed's Figure 7 (operations per second, median)",
                "", table_fig7(f7), ""]
    st = fig7_runs(rows, "pmkv-store")
    if st:
        doc += ["### The same workload on the store, in one process "
                "(operations per second, median)", "",
                table_fig7(st, "thr"), ""]
    for name, runs, unit in (("the server", f7, "cl"),
                             ("the store in one process", st, "thr")):
        t = table_opt_over_wrapped(runs, unit) if runs else None
        if t:
            doc += [f"### opt over wrapped, {name}", "", t, "",
                    SEED_OPT + ".", ""]
    doc += figure_lines("pmkv", plots)
    return doc


STYLE = {"opt": "-", "wrapped": "--", "redis": ":"}


def draw_fig7(plt, f7, path, title, xlabel="clients"):
    """One row of plots per domain, one column per mix; a line per version
    and runtime (opt solid, wrapped dashed, Redis dotted)."""
    mixes = sorted({r for v in f7.values() for _, r in v}, reverse=True)
    domains = sorted({d for d, _, _ in f7 if d != "-"}) or ["-"]
    fig, axes = plt.subplots(len(domains), len(mixes),
                             figsize=(4 * len(mixes), 3.2 * len(domains)),
                             squeeze=False)
    for row, domain in zip(axes, domains):
        for ax, mix in zip(row, mixes):
            for (d, version, runtime), v in sorted(f7.items()):
                if d not in (domain, "-"):
                    continue
                pts = sorted((c, med(o)) for (c, r), o in v.items()
                             if r == mix)
                if pts:
                    ax.plot([c for c, _ in pts], [y for _, y in pts],
                            marker="o", label=f"{version} {runtime}",
                            linestyle=STYLE.get(version, "-"))
            ax.set_title(f"{domain}, {mix} % reads", fontsize=9)
            ax.set_xlabel(xlabel, fontsize=8)
            ax.grid(True, alpha=0.35)
            ax.set_ylim(bottom=0)
        row[0].set_ylabel("operations per second", fontsize=8)
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    save_figure(plt, fig, path, tight=True)


def draw_redis(plt, runs, path):
    pipes = sorted({p for _, p in runs})
    cfgs = [c for c in ORDER if any((c, p) in runs for p in pipes)]
    fig, axes = plt.subplots(1, len(pipes), figsize=(6 * len(pipes), 3.8),
                             squeeze=False)
    for ax, p in zip(axes[0], pipes):
        for k, key in enumerate(("set_rps", "get_rps")):
            vals = [med([r[key] for r in runs.get((c, p), [])]) or 0
                    for c in cfgs]
            ax.bar([i + 0.4 * k for i in range(len(cfgs))], vals, 0.4,
                   label=key[:3].upper())
        ax.set_xticks([i + 0.2 for i in range(len(cfgs))])
        ax.set_xticklabels(cfgs, rotation=30, ha="right", fontsize=7)
        ax.set_yscale("log")
        ax.set_title(f"redis-benchmark -c 4, -P {p}", fontsize=9)
        ax.grid(True, axis="y", alpha=0.35)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("requests per second (median)", fontsize=8)
    save_figure(plt, fig, path, tight=True)


def make_plots(rows, run_dir):
    plt = pyplot()
    out = []
    runs, f7 = redis_runs(rows), fig7_runs(rows)
    if f7:
        draw_fig7(plt, f7, os.path.join(run_dir, "pmkv-fig7.png"),
                  "pmkv: the seed's Figure 7 on this machine (a server)")
        out.append(("pmkv-fig7.png", "Figure 7"))
    st = fig7_runs(rows, "pmkv-store")
    if st:
        draw_fig7(plt, st, os.path.join(run_dir, "pmkv-store.png"),
                  "pmkv: Figure 7's workload on the store in one process",
                  "threads")
        out.append(("pmkv-store.png", "the store in one process"))
    if runs:
        draw_redis(plt, runs, os.path.join(run_dir, "pmkv-redis.png"))
        out.append(("pmkv-redis.png", "beside Redis"))
    return out
