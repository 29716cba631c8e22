# SPDX-License-Identifier: BSD-3-Clause
"""WHISPER's analysis of pmtx (scripts/whisper.py, report/whisper.py):
the section from fixed JSON lines (Table 1's numbers, write amplification
by kind, Figure 10 from hops, a missing hops result shown as missing and
not as zero, observations computed from the data, the seed's numbers
labelled as the paper's), the eval stage's command line, and the smoke
run end to end."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "scripts")
sys.path.insert(0, SCRIPTS)

import eval as harness  # noqa: E402
from report import whisper as W  # noqa: E402
import whisper  # noqa: E402

BUILD = os.environ.get("PMTX_BUILD") or os.path.join(ROOT, "build")


def hist(pairs):
    """A tool histogram: every bucket lower bound, counts from pairs."""
    los = [0, 1, 2, 3, 5, 9, 17, 33, 65, 129, 257, 513, 1025]
    return [[lo, pairs.get(lo, 0)] for lo in los]


def analyze(tx, ept_median, epochs, singles=0.5, self_dep=0.9, data=1000,
            log=3000, order=30, durable=10, kinds=True):
    a = {"records": 1000, "threads": 1, "span_ns": 10 ** 9,
         "tx_committed": tx, "tx_aborted": 0, "tx_unfinished": 0,
         "epochs": epochs, "epochs_outside_tx": 0,
         "epochs_per_second": float(epochs),
         "epoch_lines": {"n": epochs, "mean": 2.5, "median": 2, "p95": 8,
                         "max": 9, "hist": hist({1: epochs // 2,
                                                 2: epochs // 4,
                                                 9: epochs // 4})},
         "singleton_share": singles, "singleton_small_share": 0.25,
         "epochs_per_tx": {"n": tx, "mean": float(ept_median),
                           "median": ept_median, "p95": ept_median + 2,
                           "max": ept_median + 3,
                           "hist": hist({9: tx} if tx else {})},
         "window_us": 50, "self_dep_share": self_dep,
         "cross_dep_share": 0.01, "store_bytes": data + log,
         "nt_bytes": 0, "nt_share": 0.0, "barriers": order + durable,
         "empty_barriers": 0, "flush_records": 100, "flushed_lines": 200,
         "flushes_per_epoch": 200 / epochs, "redundant_flushed_lines": 20,
         "critical_path_lines": {"n": tx, "mean": 3.0, "median": 3,
                                 "p95": 4, "max": 5, "hist": hist({})},
         "distinct_lines": 100, "pruned_lines": 0}
    if kinds:
        a["store_kinds"] = {"data": data, "log": log, "alloc": 500,
                            "desc": 0, "object": 0, "region": 8,
                            "unknown": 0}
        a["write_amplification"] = (log + 508) / data if data else 0
        a["barrier_kinds"] = {"order": order, "durable": durable,
                              "unknown": 0}
    return a


def hops(norm):
    t = {m: 1000.0 * v for m, v in norm.items()}
    return {"file": "t", "records": 1000, "threads": 1, "traced_ns": 10 ** 6,
            "barriers": {"order": 30, "durable": 10, "unknown": 0},
            "stores": 100, "pm_lines_stored": 50, "time_ns": t,
            "normalized": dict(norm),
            "hops": {"nvm": {}, "pwq": {}}, "params": {"ghz": 2.0}}


NORM_A = {"x86_nvm": 1.0, "x86_pwq": 0.8, "hops_nvm": 0.7, "hops_pwq": 0.7,
          "ideal": 0.5, "x86_here": 0.9}
NORM_B = {"x86_nvm": 1.0, "x86_pwq": 0.9, "hops_nvm": 0.8, "hops_pwq": 0.75,
          "ideal": 0.6, "x86_here": 1.1}


def row(workload, system, a, h, kind="runtime", errors=()):
    return {"bench": "whisper", "kind": kind, "workload": workload,
            "system": system, "params": {}, "seconds": 0.2,
            "trace_bytes": 10 ** 6, "run": None, "analyze": a, "hops": h,
            "costs": "measured", "errors": list(errors)}


def rows():
    return [
        row("sps", "pmtx-redo", analyze(100, 3, 300, singles=0.3,
                                        self_dep=0.7), hops(NORM_B)),
        dict(row("sps", "pmtx-undo", analyze(100, 18, 1800, singles=0.1),
                 hops(NORM_A)),
             hops_eager=hops(dict(NORM_A, hops_nvm=0.6, hops_pwq=0.55))),
        row("bbuf", "pmtx-cltx", analyze(0, 0, 500, singles=1.0, data=0),
            None, errors=["pmtx trace hops: exited 1"]),
        row("pmkv-store", "pmtx-redo", analyze(50, 60, 3000, kinds=False),
            None, kind="app"),
        {"bench": "whisper-costs", "workload": "costs",
         "what": "barrier_fit", "fence_ns": 150.0, "line_ns": 2.5},
    ]


def table_line(doc, heading, first_cells):
    part = doc.split(heading, 1)[1].split("\n### ", 1)[0]
    for line in part.splitlines():
        if line.startswith("| " + " | ".join(first_cells) + " |"):
            return [c.strip() for c in line.strip("|").split("|")]
    raise AssertionError(f"no row {first_cells} under {heading}")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = tmp_path_factory.mktemp("whisper")
    with open(d / "whisper.jsonl", "w") as f:
        for r in rows():
            f.write(json.dumps(r) + "\n")
    path = W.write_report(str(d), "default")
    return d, open(path).read()


def test_table1_numbers_come_from_the_lines(report):
    _, doc = report
    c = table_line(doc, "### Table 1: epochs", ["sps", "undo"])
    # tx, epochs/tx median and p95, ..., singletons, small, self, cross
    assert c[2:5] == ["100", "18", "20"]
    assert c[8:12] == ["10 %", "25 %", "90 %", "1.0 %"]
    assert c[14] == "20 (10.0 %)"
    c = table_line(doc, "### Table 1: epochs", ["bbuf", "cltx"])
    assert c[3] == "no tx"
    # rows come in report order: runtimes by workload, then apps
    order = [doc.index(f"| {w} | {s} |") for w, s in (
        ("sps", "undo"), ("sps", "redo"), ("bbuf", "cltx"),
        ("pmkv-store", "redo"))]
    assert order == sorted(order)


def test_write_amplification_is_split_by_kind(report):
    _, doc = report
    head = "### Table 1: write amplification"
    c = table_line(doc, head, ["sps", "redo"])
    # data 1000 B; log 3000 -> 3.00, alloc 500 -> 0.50, region 8 -> 0.01
    assert c[2:6] == ["1.0 kB", "3.51", "3.00", "0.50"]
    assert c[8] == "0.01"
    assert c[10:15] == ["30", "10", "0", "40", "0.4"]
    c = table_line(doc, head, ["bbuf", "cltx"])
    assert c[2] == "0 (no data bytes)"
    # a tool without store kinds: missing, not zero
    c = table_line(doc, head, ["pmkv-store", "redo"])
    assert c[2:4] == ["missing", "missing"]


def test_eager_draining_comes_from_its_own_hops_run(report):
    _, doc = report
    c = table_line(doc, "### Figure 10", ["sps", "undo"])
    # hops_eager's hops_nvm 600 ns, hops_pwq 550 ns over hops's x86_nvm
    # 1000 ns; the redo row has no eager run: missing
    assert c[8:10] == ["0.60", "0.55"]
    c = table_line(doc, "### Figure 10", ["sps", "redo"])
    assert c[8:10] == ["missing", "missing"]


def test_eager_draining_has_its_observation(report):
    _, doc = report
    # only sps / undo has an eager run: 0.6 / 1.0 -> 40.0 % faster
    assert "hops_nvm_eager (draining from the first buffered entry, not " \
        "the 16th) against x86_nvm: 40.0 % faster on average over 1 " \
        "traces." in doc


def test_missing_hops_is_reported_as_missing_not_zero(report):
    _, doc = report
    head = "### Figure 10"
    c = table_line(doc, head, ["sps", "undo"])
    assert c[2:8] == ["1.00", "0.80", "0.70", "0.70", "0.50", "0.90"]
    c = table_line(doc, head, ["bbuf", "cltx"])
    assert c[2:8] == ["missing"] * 6
    assert "pmtx trace hops: exited 1" in c[-1]
    c = table_line(doc, head, ["pmkv-store", "redo"])
    assert c[2:8] == ["missing"] * 6
    assert "HOPS results are missing for 2 of 4 traces" in doc


def test_hops_observations_average_the_measured_ratios(report):
    _, doc = report
    # hops_nvm / x86_nvm: 0.7 and 0.8 -> 25.0 % faster; the seed's 24.3
    assert "hops_nvm against x86_nvm: 25.0 % faster on average over 2 " \
        "traces (the seed: 24.3 % faster)" in doc
    # x86_here / x86_nvm: 0.9 and 1.1 -> 0.0 %; x86_here is not slower
    assert "x86_here (this machine's measured fence and flush costs) " \
        "against the modelled x86_nvm: 0.0 % faster" in doc
    # ideal: 0.5, 0.6 -> 45.0 %
    assert "ideal against x86_nvm: 45.0 % faster on average over 2" in doc
    # hops_nvm / x86_pwq: 0.875, 0.889 -> 11.8 %
    assert "hops_nvm against x86_pwq: 11.8 % faster" in doc


def test_epoch_observations_are_computed(report):
    _, doc = report
    assert "undo: median 18 epochs per transaction (one trace; 1 of them " \
        "within the seed's 5-50" in doc
    # redo: sps 3 and pmkv-store 60 -> median 31.5, one below, one above
    assert "redo: median 31.5 epochs per transaction (range 3-60 over 2 " \
        "traces; 0 of them within the seed's 5-50, 1 below, 1 above)" in doc
    assert "sps 18 vs 3; undo has more on 1 of 1 workloads" in doc
    assert "no committed transaction in the trace of bbuf / cltx" in doc


def test_seed_numbers_are_labelled_as_the_papers(report):
    _, doc = report
    assert "### The seed's published numbers (the paper's, not pmtx's)" \
        in doc
    for quote in ("5 to 50 epochs", "75 %", "80 %", "24.3 %", "10 %",
                  "40.7 %"):
        assert quote in doc.split("### The seed's published")[1].split(
            "### Observations")[0], quote


def test_plots_are_written(report):
    d, doc = report
    for name in ("whisper-fig3.png", "whisper-fig4.png", "whisper-fig5.png",
                 "whisper-fig10.png"):
        assert (d / name).stat().st_size > 0
        assert f"({name})" in doc


def test_no_lines_no_crash(tmp_path):
    (tmp_path / "whisper.jsonl").write_text("")
    doc = open(W.write_report(str(tmp_path))).read()
    assert "(no traces)" in doc


def test_traced_systems_are_ones_the_evaluation_runs():
    for w, (systems, _) in whisper.WORKLOADS.items():
        assert set(systems) <= set(harness.SYSTEMS[w]), w
    smoke = whisper.targets("smoke")
    assert {(t.workload, t.system) for t in smoke} == {
        ("sps", "pmtx-undo"), ("sps", "pmtx-redo"), ("bbuf", "pmtx-cltx"),
        ("pmkv-store", "pmtx-redo")}


@pytest.mark.parametrize("mode", ["smoke", "quick", "default", "full"])
def test_eval_stage_passes_options_whisper_accepts(mode):
    steps = harness.whisper_steps(mode)
    assert [s.workload for s in steps] == ["whisper"]
    argv = steps[0].argv("/x/build/bench/pmtx-bench", "/dev/shm")
    a = whisper.parse_args(argv[2:])
    assert a.build == "/x/build" and a.no_report
    assert a.mode == {"smoke": "smoke", "quick": "quick"}.get(mode,
                                                              "default")
    assert "whisper" in harness.APP_WORKLOADS


def have_binaries():
    return all(os.access(os.path.join(BUILD, p), os.X_OK) for p in (
        "bench/pmtx-bench", "tools/pmtx", "apps/pmkv/pmkv-storebench"))


@pytest.mark.skipif(not have_binaries(), reason="no build")
def test_smoke_run_end_to_end(tmp_path):
    out = tmp_path / "w"
    r = subprocess.run([sys.executable, os.path.join(SCRIPTS, "whisper.py"),
                        "--smoke", "--out", str(out), "--build", BUILD,
                        "--tmp", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    ws = [x for x in lines if x["bench"] == "whisper"]
    assert len(ws) == 4
    hops_ok = subprocess.run([os.path.join(BUILD, "tools", "pmtx"), "trace",
                              "hops", "--help"],
                             capture_output=True).returncode == 0
    for x in ws:
        assert x["analyze"]["epochs"] > 0, x
        assert x["trace_bytes"] > 0
        assert (x["hops"] is not None) == hops_ok, x
        if hops_ok:
            base = [m for m in W.MODELS if not m.endswith(W.EAGER)]
            assert set(x["hops"]["normalized"]) >= set(base)
            # the same trace with draining from the first entry
            assert x["hops_eager"]["params"]["pb_launch"] == 1
            assert x["hops"]["params"]["pb_launch"] == 16
    undo = next(x for x in ws if x["system"] == "pmtx-undo")
    assert undo["analyze"]["tx_committed"] > 0
    # every trace was deleted; the report and its plots are there
    assert not [p for p in os.listdir(tmp_path) if p != "w"]
    doc = (out / "report.md").read_text()
    assert "### Table 1: epochs" in doc
    assert (out / "whisper-fig10.png").exists()
    assert (out / "whisper.jsonl").read_text().count('"whisper"') == 4


def test_write_amplification_over_few_data_bytes_is_marked(tmp_path):
    """A runtime whose stores are nearly all of other kinds (copies of
    whole objects) gets its ratio marked, and no write amplification in
    the observations."""
    data = [row("hashmap", "pmtx-cow", analyze(10, 4, 40, data=8,
                                               log=100000), None),
            row("hashmap", "pmtx-redo", analyze(10, 3, 30), None)]
    with open(tmp_path / "whisper.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in data)
    doc = open(W.write_report(str(tmp_path))).read()
    c = table_line(doc, "### Table 1: write amplification",
                   ["hashmap", "cow"])
    assert c[3].endswith("(*)")
    assert "cow: data bytes are under 0.1 % of the bytes stored on " \
        "hashmap (there, log stores are 99 % of the bytes stored)" in doc
    assert "cow: write amplification" not in doc
    assert "redo: write amplification 3.51 non-data bytes per data byte " \
        "(hashmap)" in doc


def test_figure10_means_per_runtime_leave_missing_out(report):
    _, doc = report
    part = "Per runtime, the mean over its traces:"
    c = table_line(doc, part, ["undo"])
    assert c[1:4] == ["1 of 1", "1.00", "0.80"]
    c = table_line(doc, part, ["redo"])
    # sps has a hops result, pmkv-store does not: the mean is sps's
    assert c[1:5] == ["1 of 2", "1.00", "0.90", "0.80"]
    c = table_line(doc, part, ["cltx"])
    assert c[1:3] == ["0 of 1", "missing"]


def test_a_negative_measured_cost_reaches_hops_as_zero(tmp_path):
    """pmtx trace hops refuses a negative cost; a timing difference that
    noise took below zero is given to it as 0, and the file keeps what
    was measured."""
    lines = [{"workload": "costs", "what": "trace_record", "ns": -3.5},
             {"workload": "costs", "what": "clwb_clean", "ns": 1.25}]

    class Ctx:
        bench, tmp, cleanup = "pmtx-bench", str(tmp_path), []

        def run(self, argv, env=None, timeout=600):
            return "\n".join(json.dumps(x) for x in lines) + "\n"

    path, got = whisper.machine_costs(Ctx(), None, str(tmp_path))
    written = [json.loads(x) for x in open(path)]
    tr = next(x for x in written if x["what"] == "trace_record")
    assert tr["ns"] == 0.0 and tr["ns_measured"] == -3.5
    assert next(x for x in written if x["what"] == "clwb_clean")["ns"] == 1.25
