# SPDX-License-Identifier: BSD-3-Clause
"""The report package (scripts/report/) on a stored run,
docs/results/quick-2026-11-27: every section in order, the title's
count and links that follow the data and the headings, every figure
linked and written, a row per target and per claim, the run's metadata;
a run without the applications' lines has none of their sections; and
the command line."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "scripts")
sys.path.insert(0, SCRIPTS)

import report  # noqa: E402
from report import claims, targets  # noqa: E402

RUN = os.path.join(ROOT, "docs", "results", "quick-2026-11-27")
APP_LINES = ["pmcached.jsonl", "sqlite.jsonl", "pmkv.jsonl",
             "whisper.jsonl"]
LIBRARY_SECTIONS = ["Summary", "Targets",
                    "Observations (computed from this run)",
                    "The seeds' claims and this machine"]
APP_SECTIONS = ["pmcached", "SQLite", "pmkv",
                "WHISPER: pmtx's persistence behaviour"]


def copy_run(dst, names):
    for name in names:
        shutil.copy(os.path.join(RUN, name), dst)


def measurements(path):
    """The rows of a results.jsonl the report counts, read here apart
    from the package's own loader."""
    n = 0
    with open(path) as f:
        for line in f:
            r = json.loads(line) if line.startswith("{") else {}
            n += all(r.get(k) for k in ("workload", "system", "domain",
                                        "ns_per_op"))
    return n


def headings(md, level="## "):
    return [line[len(level):] for line in md.splitlines()
            if line.startswith(level)]


def anchor(heading):
    """The anchor a markdown renderer (GitHub's) gives a heading."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.lower()).replace(" ", "-")


def table_rows(md, section):
    """The body rows of the first table under a "## " heading."""
    part = md.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in part.splitlines() if line.startswith("|")]
    return rows[2:]


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """(run dir, report.md) of the whole stored run."""
    d = tmp_path_factory.mktemp("full")
    copy_run(d, ["results.jsonl", "meta.json"] + APP_LINES)
    return d, open(report.make_report(str(d))).read()


def test_every_section_comes_in_order(full):
    _, md = full
    assert headings(md, "# ") == ["pmtx evaluation report"]
    assert headings(md) == LIBRARY_SECTIONS + APP_SECTIONS + ["Plots",
                                                              "Run"]


def test_title_counts_the_measurements_and_links_each_section(full):
    d, md = full
    title = md.splitlines()[2]
    assert title.startswith(
        f"{measurements(d / 'results.jsonl')} measurements, workloads: ")
    links = re.findall(r"\[its section\]\(#([^)]*)\)", title)
    assert links == [anchor(h) for h in APP_SECTIONS]


def test_every_figure_is_linked_and_written(full):
    d, md = full
    linked = re.findall(r"!\[[^]]*\]\(([^)]*)\)", md)
    written = sorted(p.name for p in d.iterdir() if p.suffix == ".png")
    assert sorted(linked) == written
    for prefix in ("pmcached-", "sqlite-", "pmkv-", "whisper-"):
        assert any(n.startswith(prefix) for n in written), prefix
    plotted = headings(md.split("\n## Plots\n", 1)[1], "### ")
    assert plotted == ["array", "array-raw", "alloc", "sps", "single-obj",
                       "multi-obj", "hashmap", "bbuf"]


def test_targets_and_claims_have_a_row_each(full):
    _, md = full
    assert len(table_rows(md, "Targets")) == len(targets.TARGETS)
    rows = table_rows(md, "The seeds' claims and this machine")
    assert len(rows) == len(claims.CLAIMS)
    assert all(r.split("|")[-2].strip() in
               ("agrees", "partly", "disagrees", "no data") for r in rows)


def test_run_section_is_the_metadata(full):
    _, md = full
    with open(os.path.join(RUN, "meta.json")) as f:
        meta = json.load(f)
    run = md.split("\n## Run\n", 1)[1]
    assert f"- run: {meta['run']}\n" in run
    assert f"- mode: {meta['mode']}\n" in run
    assert f"- wall time: {meta['wall_s']} s\n" in run


def test_without_application_lines_their_sections_are_absent(tmp_path):
    with open(os.path.join(RUN, "results.jsonl")) as f:
        keep = [line for line in f if '"workload": "bbuf"' in line]
    assert keep
    (tmp_path / "results.jsonl").write_text("".join(keep))
    md = open(report.make_report(str(tmp_path))).read()
    assert headings(md) == LIBRARY_SECTIONS + ["Plots", "Run"]
    assert "[its section]" not in md
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["bbuf.png"]


def test_command_line_writes_the_report(tmp_path):
    copy_run(tmp_path, ["sqlite.jsonl"])
    r = subprocess.run([sys.executable, os.path.join(SCRIPTS, "report"),
                        str(tmp_path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "report.md")
    assert headings((tmp_path / "report.md").read_text()) == \
        LIBRARY_SECTIONS + ["SQLite", "Plots", "Run"]


def test_command_line_without_a_run_prints_its_usage():
    r = subprocess.run([sys.executable, os.path.join(SCRIPTS, "report")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "python3 scripts/report results/<run>" in r.stderr
