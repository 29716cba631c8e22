# SPDX-License-Identifier: BSD-3-Clause
"""Turn an evaluation run's JSON lines into report.md and PNG plots.

    python3 scripts/report results/<run>      # or results/latest

Reads <run>/results.jsonl (pmtx-bench's lines, schema in bench/bench.h,
with scripts/eval.py's metadata), <run>/pmcached.jsonl (ycsb.py's and
warmup.py's lines, apps/pmcached/bench/README.md), <run>/sqlite.jsonl
(apps/sqlite/bench/sqlbench.py's lines), <run>/pmkv.jsonl
(apps/pmkv/bench/kvbench.py's), <run>/whisper.jsonl (scripts/whisper.py's
traced runs) and <run>/meta.json if present, and writes report.md and
the plots into <run>. One module of this package writes each section,
in this order:

  summary.py       the title, and "Summary": the best pmtx runtime
                   against PMDK on PDOM-1 hardware per workload (range
                   and geometric mean), the winning runtime per workload
                   and domain configuration, persist barriers per
                   transaction per system, what each workload ran.
  targets.py       "Targets": met / missed, from the data.
  observations.py  "Observations": facts computed from the data.
  claims.py        "The seeds' claims and this machine".
  containers.py    "The containers" (when containers.jsonl exists):
                   the set benchmark per update ratio, its goals, bytes
                   per entry, persistence cost per operation;
                   containers-set.png.
  pmcached.py      "pmcached" (when pmcached.jsonl exists): pmcached
                   against memcached per YCSB workload, the goals met /
                   missed per variant, the restart warm-up;
                   pmcached-ycsb.png, pmcached-warmup.png.
  sqlite.py        "SQLite" (sqlite.jsonl): TPC-C and speedtest1;
                   sqlite-tpcc.png, sqlite-speedtest1.png.
  pmkv.py          "pmkv" (pmkv.jsonl): the seed's Figure 7 and Redis;
                   pmkv-fig7.png, pmkv-store.png, pmkv-redis.png.
  whisper.py       "WHISPER: pmtx's persistence behaviour"
                   (whisper.jsonl); whisper-fig*.png.
  plots.py         "Plots": <workload>[-<param><value>...].png, one
                   figure per workload and fixed parameters, one panel
                   per domain configuration; PMDK and the uninstrumented
                   `plain` floor (dashed) are measured on PDOM-1
                   hardware, so they appear in that panel.
  run.py           "Failed steps" and "Run" (meta.json).

Beside them: data.py (results.jsonl's rows, indexed, and the metrics)
and common.py (number formats, tables, JSON lines, matplotlib).

Importable: make_report(run_dir) returns the path of report.md; the
helpers other scripts use (fmt_rate, fmt_us, fmt_x, md_table,
json_objects, load_jsonl, ensure_matplotlib) are here too. Needs
matplotlib (Agg backend) and the standard library only.
"""
import os

from . import (claims, containers, observations, plots, pmcached, pmkv,
               run, sqlite, summary, targets, whisper)
from .common import (ensure_matplotlib, fmt_rate, fmt_us, fmt_x,
                     json_objects, load_jsonl, md_table)
from .data import Data, load_meta, load_rows

__all__ = ["make_report", "ensure_matplotlib", "fmt_rate", "fmt_us",
           "fmt_x", "json_objects", "load_jsonl", "md_table"]

# The containers' and the applications' sections in report order. Each
# module has JSONL (its lines' file in the run), LINK (the title's
# sentence that points to its section), make_plots(rows, run_dir) and
# section(rows, plots, mode).
APPS = [containers, pmcached, sqlite, pmkv, whisper]


def make_report(run_dir):
    """Write run_dir/report.md and the plots; return report.md's path."""
    path = os.path.join(run_dir, "results.jsonl")
    data = Data(load_rows(path) if os.path.exists(path) else [])
    meta = load_meta(run_dir)
    figures = plots.make_plots(data, run_dir) if data.rows else []
    apps = app_sections(run_dir, meta.get("mode"))
    path = os.path.join(run_dir, "report.md")
    with open(path, "w") as f:
        f.write(render(data, meta, figures, apps))
    return path


def app_sections(run_dir, mode):
    """[(module, its section's lines)] of the applications whose JSON
    lines the run has (their plots are written on the way)."""
    out = []
    for app in APPS:
        rows = load_jsonl(os.path.join(run_dir, app.JSONL))
        if rows:
            lines = app.section(rows, app.make_plots(rows, run_dir), mode)
            out.append((app, lines))
    return out


def render(data, meta, figures, apps):
    """report.md's text: every section in order."""
    doc = summary.title(data, [app.LINK for app, _ in apps])
    for part in (summary, targets, observations, claims):
        doc += part.section(data)
    for _, lines in apps:
        doc += lines
    return "\n".join(doc + plots.section(figures) + run.section(data, meta))
