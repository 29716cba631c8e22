# SPDX-License-Identifier: BSD-3-Clause
"""The library workloads' figures and the "Plots" section: one figure
per workload and set of fixed parameters, one panel per domain
configuration, a line per system (PMDK and the uninstrumented `plain`
floor, dashed, in the PDOM-1 hardware panel); bbuf as bars per
scenario."""
import os
from collections import OrderedDict, defaultdict

from .common import (label_log_y, legend_handles, pyplot, save_figure,
                     style_of)
from .data import (cfg_of, config_key, config_label, pkey, system_key,
                   throughput)

# workload -> ([x parameter candidates], y metric, title). Every y axis is
# logarithmic; so is the x axis of a rate (its x, a size or a count,
# doubles from point to point), while a latency's x is a percentage or a
# count of writes.
PLOTS = {
    "array": (["write_pct"], "ns_per_op", "Array (seed 000 Fig. 5a-f)"),
    "array-raw": (["write_pct"], "ns_per_op",
                  "Array-RAW (seed 000 Fig. 5g-l)"),
    "alloc": (["x"], "allocs_per_s", "Alloc-X (seed 000 Fig. 6)"),
    "sps": (["k"], "swaps_per_s", "SPS"),
    "single-obj": (["size"], "ops_per_s", "single-obj (seed 004 Fig. 4-5)"),
    "multi-obj": (["size"], "ops_per_s", "multi-obj (seed 004 Fig. 4, 6)"),
    "hashmap": (["entry"], "ops_per_s", "hashmap inserts (seed 004 Fig. 7)"),
    "txn": (["writes"], "ns_per_op", "txn"),
}
XLABEL = {
    "array": "slots written (% of the 20 per transaction)",
    "array-raw": "slots written in place (% of the 20)",
    "alloc": "blocks allocated per transaction (X)",
    "sps": "swaps per transaction (k)",
    "single-obj": "log entry size (bytes)",
    "multi-obj": "log entry size (bytes)",
    "hashmap": "map entry size (bytes)",
    "txn": "8-byte ranges written per transaction",
}
YLABEL = {"ns_per_op": "latency per transaction (ns)",
          "allocs_per_s": "allocations per second",
          "swaps_per_s": "swaps per second",
          "ops_per_s": "transactions per second"}
YLABEL_OF = {"hashmap": "inserts per second"}  # its transactions insert


def spec_of(w):
    """A workload's figure: x parameter candidates, y metric, scales and
    labels (ns per op against the most varied parameter for a workload
    PLOTS does not name)."""
    if w not in PLOTS:
        return dict(y="ns_per_op", logy=True, ylabel="ns per op", title=w)
    xs, y, title = PLOTS[w]
    return dict(x=xs, y=y, logx=y != "ns_per_op", logy=True,
                xlabel=XLABEL[w], ylabel=YLABEL_OF.get(w, YLABEL[y]),
                title=title)


def x_param(w, rows):
    """The swept parameter a workload's plot puts on its x axis."""
    names = {k for r in rows for k in r["params"]}
    for c in spec_of(w).get("x", []):
        if c in names:
            return c
    varied = [(len({str(r["params"].get(k)) for r in rows}), k)
              for k in sorted(names)]
    return max(varied)[1] if varied else None


def figure_groups(rows, x):
    """Rows split by the values of every parameter but x: one figure
    each. Returns [(fixed params, rows)]."""
    groups = OrderedDict()
    for r in sorted(rows, key=lambda r: pkey(r["params"], (x,))):
        groups.setdefault(pkey(r["params"], (x,)), []).append(r)
    return [(dict(k), v) for k, v in groups.items()]


def fig_name(w, fixed, varying):
    """File name of a figure: the workload and the fixed parameters that
    vary between this workload's figures."""
    parts = [w] + [f"{k}{fixed[k]}" for k in sorted(fixed) if k in varying]
    return "-".join(parts).replace("/", "_") + ".png"


def plot_lines(ax, rows, x, y):
    """One line per system on one panel."""
    by_sys = defaultdict(dict)
    for r in rows:
        by_sys[r["system"]][r["params"][x]] = throughput(r, y) \
            if y != "ns_per_op" else r["ns_per_op"]
    for s in sorted(by_sys, key=system_key):
        xs = sorted(by_sys[s])
        colour, marker, ls = style_of(s)
        ax.plot(xs, [by_sys[s][v] for v in xs], label=s, color=colour,
                marker=marker or None, linestyle=ls,
                linewidth=2.2 if s == "pmdk" else 1.5, markersize=4)


def setup_axes(ax, spec, xs):
    """Scales and ticks. Minor ticks are few on purpose: each one is an
    object matplotlib lays out, and they dominate the drawing time."""
    from matplotlib.ticker import LogLocator, NullLocator
    if spec.get("logy"):
        ax.set_yscale("log")
        ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
    if spec.get("logx") and min(xs) > 0:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(xs)
        ax.set_xticklabels([str(v) for v in xs], fontsize=7,
                           rotation=45 if len(xs) > 6 else 0)
    ax.grid(True, which="major", alpha=0.35)
    ax.grid(True, which="minor", alpha=0.12)


def panel_grid(plt, n):
    """A figure with n panels sharing the y axis: one row up to three,
    2 x 2 for four. Returns (fig, [axes])."""
    ncols = 2 if n == 4 else max(n, 1)
    nrows = (n + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, sharey=True, squeeze=False,
                             figsize=(4.6 * ncols, 3.2 * nrows + 1.0))
    flat = [a for row in axes for a in row]
    for a in flat[n:]:
        a.set_visible(False)
    return fig, flat[:n]


def draw_line_figure(plt, w, spec, x, fixed, rows, path):
    cfgs = sorted({cfg_of(r) for r in rows}, key=config_key)
    fig, axes = panel_grid(plt, len(cfgs))
    xs = sorted({r["params"][x] for r in rows})
    for ax, cfg in zip(axes, cfgs):
        plot_lines(ax, [r for r in rows if cfg_of(r) == cfg], x, spec["y"])
        setup_axes(ax, spec, xs)
        ax.set_title(config_label(cfg), fontsize=10)
        ax.set_xlabel(spec.get("xlabel", x), fontsize=8)
        ax.set_ylabel(spec.get("ylabel", spec["y"]), fontsize=8)
    finish_figure(fig, axes, spec.get("title", w), fixed)
    save_figure(plt, fig, path)


def finish_figure(fig, axes, title, fixed):
    """Title with the fixed parameters, and one legend for all panels."""
    sub = ", ".join(f"{k}={v}" for k, v in sorted(fixed.items()))
    fig.suptitle(title + (f"  ({sub})" if sub else ""), fontsize=11)
    handles = legend_handles(axes)
    labels = sorted(handles, key=system_key)
    for ax in axes:
        label_log_y(ax)
    fig.legend([handles[name] for name in labels], labels, loc="lower center",
               ncol=min(len(labels), 8), fontsize=8, frameon=False)
    # Fixed margins, in inches: tight_layout costs a second per figure.
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=0.75 / w, right=1 - 0.15 / w,
                        bottom=1.0 / h, top=1 - 0.55 / h, wspace=0.08,
                        hspace=0.55)


def draw_bbuf(plt, rows, path):
    """Bounded buffer: bars of time per scenario run, one group per
    scenario, one bar per system (at the same place in every panel), one
    panel per configuration."""
    cfgs = sorted({cfg_of(r) for r in rows}, key=config_key)
    systems = sorted({r["system"] for r in rows}, key=system_key)
    fig, axes = panel_grid(plt, len(cfgs))
    floor = min(r["ns_per_op"] for r in rows) / 2
    for ax, cfg in zip(axes, cfgs):
        bbuf_panel(ax, [r for r in rows if cfg_of(r) == cfg], systems)
        ax.set_ylim(bottom=floor)
        ax.set_title(config_label(cfg), fontsize=10)
        ax.set_ylabel("time per scenario run (ns)", fontsize=8)
    finish_figure(fig, axes, "Bounded buffer (seed 003 Fig. 6-8)", {})
    save_figure(plt, fig, path)


def bbuf_panel(ax, rows, systems):
    scen = sorted({r["params"].get("scenario") for r in rows})
    width = 0.8 / max(len(systems), 1)
    for i, s in enumerate(systems):
        vals = {r["params"].get("scenario"): r["ns_per_op"] for r in rows
                if r["system"] == s}
        if not vals:
            continue
        xs = [j + i * width for j, sc in enumerate(scen) if sc in vals]
        colour, _, ls = style_of(s)
        ax.bar(xs, [vals[sc] for sc in scen if sc in vals], width,
               label=s, color=colour, hatch="//" if ls == "--" else None,
               alpha=0.85)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(scen))])
    ax.set_xticklabels([f"scenario {sc}" for sc in scen], fontsize=8)
    ax.set_yscale("log")
    ax.grid(True, axis="y", which="major", alpha=0.35)


def make_plots(data, run_dir):
    """Every figure; returns [(workload, file name, caption)]."""
    plt = pyplot()
    out = []
    for w in data.workloads():
        rows = [r for r in data.rows if r["workload"] == w]
        if w == "bbuf":
            draw_bbuf(plt, rows, os.path.join(run_dir, "bbuf.png"))
            out.append((w, "bbuf.png", "bounded buffer, per scenario"))
            continue
        out += line_figures(plt, w, rows, run_dir)
    return out


def line_figures(plt, w, rows, run_dir):
    spec = spec_of(w)
    x = x_param(w, rows)
    if x is None:
        return []
    rows = [r for r in rows if x in r["params"]]
    groups = figure_groups(rows, x)
    varying = {k for k in groups[0][0]
               if len({str(g[0].get(k)) for g in groups}) > 1} \
        if groups else set()
    out = []
    for fixed, grows in groups:
        name = fig_name(w, fixed, varying)
        draw_line_figure(plt, w, spec, x, fixed, grows,
                         os.path.join(run_dir, name))
        out.append((w, name, ", ".join(f"{k}={v}" for k, v in
                                       sorted(fixed.items()))))
    return out


def section(plots):
    """The "Plots" section: the figures of make_plots, by workload."""
    out = ["## Plots"]
    cur = None
    for w, name, caption in plots:
        if w != cur:
            out.append(f"\n### {w}\n")
            cur = w
        out.append(f"![{w} {caption}]({name})\n")
    return out
