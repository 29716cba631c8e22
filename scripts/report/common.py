# SPDX-License-Identifier: BSD-3-Clause
"""What every section of the report shares: the systems' plot styles,
number formats, markdown tables, reading JSON lines, and matplotlib (the
Agg backend, log-axis labels, grouped bars)."""
import json
import math
import os
import sys
from collections import OrderedDict

# ---- the systems' plot styles ----

STYLE = {  # colour, marker, line style: the same in every plot
    "pmtx-undo": ("#1f77b4", "o", "-"),
    "pmtx-redo": ("#ff7f0e", "s", "-"),
    "pmtx-redo-async": ("#2ca02c", "^", "-"),
    "pmtx-cow": ("#d62728", "v", "-"),
    "pmtx-twin": ("#e377c2", "h", "-"),
    "pmtx-cltx": ("#9467bd", "D", "-"),
    "pmtx-auto": ("#17becf", "*", "--"),
    "pmtx-undo-eager": ("#8c564b", "x", ":"),
    "pmdk": ("#000000", "P", "-"),
    "plain": ("#7f7f7f", "", "--"),
}
EXTRA_COLOURS = ["#bcbd22", "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5"]


def style_of(system, _cache={}):
    if system in STYLE:
        return STYLE[system]
    if system not in _cache:
        _cache[system] = (EXTRA_COLOURS[len(_cache) % len(EXTRA_COLOURS)],
                          "*", "-")
    return _cache[system]


# ---- numbers and tables ----

def fmt_ns(ns):
    if ns is None:
        return "-"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} us"
    return f"{ns:.0f} ns"


def fmt_rate(r):
    if r is None:
        return "-"
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if r >= div:
            return f"{r / div:.2f}{unit}/s"
    return f"{r:.0f}/s"


def fmt_x(r):
    return "-" if r is None else f"{r:.2f}x" if r < 10 else f"{r:.1f}x"


def fmt_pct(r):
    """A ratio r as a signed percentage change (r - 1)."""
    return "-" if r is None else f"{(r - 1) * 100:+.0f} %"


def fmt_us(us):
    return "-" if us is None else fmt_ns(us * 1e3)


def fmt_ms(ms):
    if ms is None:
        return "-"
    if ms >= 1e4:
        return f"{ms / 1e3:.1f} s"
    return f"{ms:.2f} ms" if ms < 100 else f"{ms:.0f} ms"


def fmt_eng(v, _pos=None):
    """An axis label: 200, 5k, 1.2M."""
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:g}{unit}"
    return f"{v:g}"


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def md_table(head, rows):
    lines = ["| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def highest(pairs, default=None):
    """(key, value) of the highest value of pairs [(key, value or None)],
    the first one on a tie; (default, None) when every value is None."""
    best = (default, None)
    for k, v in pairs:
        if v is not None and (best[1] is None or v > best[1]):
            best = (k, v)
    return best


def opening(title, intro, setup):
    """An application section's first lines: its heading, a paragraph on
    what ran, and the set-up's bullets."""
    return [f"## {title}", "", intro, ""] + setup + [""]


def figure_lines(label, plots):
    """A section's figures, [(file name, caption)], as images."""
    return [f"![{label} {caption}]({name})\n" for name, caption in plots]


def goal_cells(a, b, goal):
    """[a, b, the goal, the verdict] of a goal "a >= goal x b" on two
    rates (per second; None: not measured)."""
    if a is None or b is None:
        return ["-", "-", f">= {goal:g}x", "not measured"]
    ratio = a / b
    return [fmt_rate(a), fmt_rate(b), f">= {goal:g}x", f"{ratio:.2f}x: " +
            ("**met**" if ratio >= goal else "**MISSED**")]


# ---- JSON lines ----

def json_objects(text):
    """Every JSON object of text, one a line; other lines are skipped."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        try:
            obj = json.loads(line) if line.startswith("{") else None
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            out.append(obj)
    return out


def load_jsonl(path):
    """Every JSON object of a JSON-lines file ([] when it is missing)."""
    try:
        with open(path) as f:
            return json_objects(f.read())
    except OSError:
        return []


# ---- matplotlib ----

def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def label_log_y(ax):
    """Engineering labels on a log y axis; the minor ticks (2, 5) get
    labels too when the axis spans few decades."""
    from matplotlib.ticker import FuncFormatter, NullFormatter
    if ax.get_yscale() != "log":
        return
    lo, hi = ax.get_ylim()
    ax.yaxis.set_major_formatter(FuncFormatter(fmt_eng))
    few = lo > 0 and math.log10(hi / lo) <= 2.5
    ax.yaxis.set_minor_formatter(FuncFormatter(fmt_eng) if few else
                                 NullFormatter())
    ax.tick_params(axis="y", which="minor", labelsize=7)


def save_figure(plt, fig, path, tight=False):
    """Write a figure (100 dpi) and free it; tight: lay it out first."""
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def legend_handles(axes):
    """{label: handle} of every panel's lines and bars, first one wins."""
    handles = OrderedDict()
    for ax in axes:
        for h, name in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(name, h)
    return handles


def bar_groups(ax, groups, series, value, colour):
    """Grouped bars: one group per entry of groups, one bar per series
    (at the same place in every group). value(group, series) is a number
    or None (no bar). Returns the bar width."""
    width = 0.8 / max(len(series), 1)
    for i, s in enumerate(series):
        xs = [j + i * width for j, g in enumerate(groups)
              if value(g, s) is not None]
        ys = [value(g, s) for g in groups if value(g, s) is not None]
        ax.bar(xs, ys, width, label=s, color=colour(s), alpha=0.85)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(groups))])
    ax.grid(True, axis="y", which="major", alpha=0.35)
    return width


def ensure_matplotlib():
    """Re-run under Debian's python3 when this one lacks matplotlib (e.g.
    a pyenv python3 ahead of /usr/bin in PATH); exit when neither has
    it."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    syspy = "/usr/bin/python3"
    if os.path.exists(syspy) and os.path.realpath(sys.executable) != \
            os.path.realpath(syspy) and not os.environ.get("PMTX_EVAL_REEXEC"):
        os.environ["PMTX_EVAL_REEXEC"] = "1"
        os.execv(syspy, [syspy] + sys.argv)
    raise SystemExit("report: matplotlib is missing (scripts/setup.sh)")
