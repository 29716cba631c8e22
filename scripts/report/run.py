# SPDX-License-Identifier: BSD-3-Clause
"""The report's last sections: "Failed steps" (the steps scripts/eval.py
saw fail, from meta.json) and "Run" (the run's metadata: name, mode,
date, CPU, flush instruction, pmtx version, wall time and notes)."""


def section(data, meta):
    fails = failure_lines(meta)
    doc = ["", "## Failed steps", ""] + fails if fails else []
    return doc + ["", "## Run", ""] + meta_lines(data, meta) + [""]


def meta_lines(data, meta):
    first = data.rows[0] if data.rows else {}
    keys = ["run", "mode", "date", "cpu_model", "host_cores",
            "flush_instruction", "pmtx_version"]
    lines = [f"- {k}: {meta.get(k, first.get(k, '?'))}" for k in keys]
    if meta.get("wall_s") is not None:
        lines.append(f"- wall time: {meta['wall_s']} s")
    for n in meta.get("notes", []):
        lines.append(f"- note: {n}")
    return lines


def failure_lines(meta):
    return [f"- `{f}`: see bench.log" for f in meta.get("failed", [])]
