# SPDX-License-Identifier: BSD-3-Clause
"""Tests of the evaluation harness: pmtx-bench's output schema, its
invariant validators, the report step and an end-to-end smoke run.

    PMTX_BENCH=build/bench/pmtx-bench python3 -m pytest -q tests/python

PMTX_BENCH names the pmtx-bench binary (CTest sets it); without it the
tests look for build/bench/pmtx-bench. Pools go to /dev/shm.
"""
import json
import math
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "scripts")
sys.path.insert(0, SCRIPTS)

import eval as harness  # noqa: E402
import report  # noqa: E402
from benchbin import BENCH, needs_bench  # noqa: E402

# Tiny parameter points, one per workload (the smoke mode's).
TINY = {w: harness.MODES["smoke"][w]
        for w in harness.WORKLOADS + harness.EXTRA_WORKLOADS}
COMMON = ["--seconds", "0.01", "--rounds", "1", "--domain", "pdom1",
          "--backend", "hardware"]

REQUIRED = {  # field -> accepted types (None stands for JSON null)
    "workload": (str,), "system": (str,), "domain": (str,),
    "backend": (str,), "params": (dict,), "ns_per_op": (int, float),
    "ops_per_s": (int, float), "barriers_per_op": (int, float, None),
    "flushes_per_op": (int, float, None), "ns_per_op_sd": (int, float),
    "ns_per_op_min": (int, float), "ns_per_op_max": (int, float),
    "rounds": (int,),
}


def bench(*args, check=False):
    return subprocess.run([BENCH] + list(args), capture_output=True,
                          text=True, timeout=60, check=check)


def tiny_args(w):
    out = []
    for k, v in TINY[w].items():
        out += [f"--{k}", str(v[0])] if w == "txn" else \
            ["--p", f"{k}={v[0]}"]
    return out


def type_ok(v, types):
    return (v is None and None in types) or any(
        t is not None and isinstance(v, t) and not isinstance(v, bool)
        for t in types)


def check_schema(obj, workload):
    for field, types in REQUIRED.items():
        assert field in obj, f"{workload}: no {field} in {obj}"
        assert type_ok(obj[field], types), \
            f"{workload}: {field}={obj[field]!r} is not {types}"
    assert obj["workload"] == workload
    assert obj["ns_per_op"] > 0 and obj["ops_per_s"] > 0
    assert obj["ns_per_op_min"] <= obj["ns_per_op_max"]
    assert obj["rounds"] >= 1
    assert all(isinstance(v, (int, float)) for v in obj["params"].values())
    if obj["system"].startswith("pmtx-") or obj["system"] == "plain":
        assert obj["barriers_per_op"] is not None, obj


# ---- (a) the JSON schema of every workload ----

@needs_bench
@pytest.mark.parametrize("workload", harness.WORKLOADS)
def test_every_workload_prints_the_schema(workload):
    r = bench(workload, *COMMON, *tiny_args(workload))
    assert r.returncode == 0, f"{workload}: exit {r.returncode}: {r.stderr}"
    objs = [json.loads(line) for line in r.stdout.splitlines() if line]
    assert objs, f"{workload} printed nothing"
    for o in objs:
        check_schema(o, workload)
    systems = {o["system"] for o in objs}
    assert "pmdk" in systems and any(s.startswith("pmtx-") for s in systems)


@needs_bench
def test_info_names_flush_instruction_and_version():
    info = json.loads(bench("--info", check=True).stdout)
    assert info["flush_instruction"] and info["pmtx_version"]


@needs_bench
@pytest.mark.parametrize("workload", harness.WORKLOADS + ["txn"])
def test_every_workload_runs_the_systems_eval_names(workload):
    """pmtx-bench knows every system eval.py lists for a workload (an
    unknown --system fails the step), runs each, with counters for the
    pmtx ones (pmtx-twin included) and a passing validator."""
    systems = harness.SYSTEMS[workload]
    assert "pmtx-twin" in systems
    r = bench(workload, *COMMON, *tiny_args(workload), "--system",
              ",".join(systems))
    assert r.returncode == 0, f"{workload}: exit {r.returncode}: {r.stderr}"
    objs = [json.loads(line) for line in r.stdout.splitlines() if line]
    for o in objs:
        check_schema(o, workload)
    expect = set(systems)
    if workload == "txn":  # cltx runs 0-3 writes only; smoke has 4
        expect.discard("pmtx-cltx")
    assert {o["system"] for o in objs} == expect, objs
    twin = [o for o in objs if o["system"] == "pmtx-twin"]
    assert twin and all(o["barriers_per_op"] is not None and
                        o["flushes_per_op"] is not None for o in twin)


# ---- (b) the invariant validators catch corruption ----

VALIDATED = {
    "sps": ["--p", "n=1000", "--p", "k=4"],
    "array": ["--p", "slots=1000", "--p", "slot=4", "--p", "write_pct=50"],
    "array-raw": ["--p", "slots=1000", "--p", "slot=4",
                  "--p", "write_pct=50"],
    "alloc": ["--p", "x=4", "--p", "ring=256"],
    "hashmap": ["--p", "entry=128", "--p", "cap=500", "--p", "buckets=256"],
    "single-obj": ["--p", "size=256", "--p", "read_pct=50", "--p", "ops=50"],
    "multi-obj": ["--p", "size=256", "--p", "read_pct=50",
                  "--p", "objects=50"],
    "bbuf": ["--p", "scenario=2"],
    "txn": ["--writes", "4", "--allocs", "2"],
}
VALIDATED_SYSTEMS = ["pmtx-undo", "pmtx-twin"]


@needs_bench
@pytest.mark.parametrize("system", VALIDATED_SYSTEMS)
@pytest.mark.parametrize("workload", sorted(VALIDATED))
def test_validator_passes_on_intact_data(workload, system):
    r = bench(workload, *VALIDATED[workload], "--seconds", "0.02",
              "--rounds", "1", "--system", system)
    assert r.returncode == 0, r.stderr
    assert "validation failed" not in r.stderr


@needs_bench
@pytest.mark.parametrize("system", VALIDATED_SYSTEMS)
@pytest.mark.parametrize("workload", sorted(VALIDATED))
def test_validator_fails_on_injected_fault(workload, system):
    r = bench(workload, *VALIDATED[workload], "--seconds", "0.02",
              "--rounds", "1", "--system", system, "--inject-fault")
    assert r.returncode != 0
    assert "validation failed" in r.stderr


# ---- (c) the report step on synthetic data ----

def synthetic_rows():
    """Plausible rows for every workload: pmtx runtimes on the four
    configs, PMDK and plain on PDOM-1 hardware; undo pays per write,
    redo per transaction, and barriers cost more at PDOM-0."""
    cost = {("pdom1", "hardware"): 150, ("pdom0", "emulated"): 500,
            ("pdom1", "emulated"): 100, ("pdom2", "emulated"): 0}
    points = {
        "array": [{"slots": 1000, "slot": s, "write_pct": w}
                  for s in (4, 64) for w in (0, 20, 50, 100)],
        "array-raw": [{"slots": 1000, "slot": 4, "write_pct": w}
                      for w in (0, 50, 100)],
        "alloc": [{"x": x} for x in (1, 4, 32)],
        "sps": [{"n": 1000, "k": k} for k in (1, 8, 64)],
        "single-obj": [{"size": s, "read_pct": r} for s in (128, 4096)
                       for r in (0, 50)],
        "multi-obj": [{"size": s, "read_pct": r, "objects": 8}
                      for s in (128, 4096) for r in (0, 50)],
        "hashmap": [{"entry": e} for e in (128, 1024)],
        "bbuf": [{"scenario": s} for s in (1, 2, 3)],
    }
    rows = []
    for w, pts in points.items():
        for p in pts:
            writes = p.get("write_pct", 50) / 10 + p.get("k", 0) + \
                p.get("x", 0) + 1
            for cfg, b in cost.items():
                systems = ["pmtx-undo", "pmtx-redo", "pmtx-redo-async",
                           "pmtx-cow", "pmtx-twin"] + \
                    (["pmtx-cltx"] if w == "bbuf" else []) + \
                    (["pmtx-undo-eager"] if w == "alloc" else [])
                if cfg == ("pdom1", "hardware"):
                    systems += ["pmdk", "plain"]
                for s in systems:
                    rows.append(synthetic_row(w, s, cfg, p, writes, b))
    return rows


def synthetic_row(w, s, cfg, p, writes, b):
    barriers = {"pmtx-undo": writes + 2, "pmtx-redo": 2,
                "pmtx-redo-async": 1, "pmtx-cow": 4, "pmtx-cltx": 1,
                "pmtx-twin": 4,
                "pmtx-undo-eager": 2 * writes + 2, "pmdk": 2 * writes + 3,
                "plain": 0}[s]
    ns = 50 * writes + barriers * (b + 60)
    ns *= {"pmtx-cow": 3.0, "pmtx-twin": 1.3, "pmdk": 1.6,
           "plain": 0.1}.get(s, 1.0)
    tx = {1: 29, 2: 58, 3: 2}.get(p.get("scenario"), 1)
    r = {"workload": w, "system": s, "domain": cfg[0], "backend": cfg[1],
         "params": p, "ns_per_op": ns * tx, "ops_per_s": 1e9 / (ns * tx),
         "barriers_per_op": None if s == "pmdk" else barriers * tx,
         "flushes_per_op": None if s == "pmdk" else barriers * tx,
         "ns_per_op_sd": 1.0, "ns_per_op_min": ns * tx * 0.98,
         "ns_per_op_max": ns * tx * 1.02, "rounds": 2,
         "mode": "synthetic", "cpu_model": "test", "host_cores": 2}
    if w == "bbuf":
        r["tx_per_op"] = tx
    return r


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


@pytest.fixture(scope="module")
def synthetic_report(tmp_path_factory):
    """(run dir, rows, report.md text) of a report on synthetic rows."""
    d = tmp_path_factory.mktemp("synthetic")
    rows = synthetic_rows()
    write_jsonl(d / "results.jsonl", rows)
    return d, rows, open(report.make_report(str(d))).read()


def test_report_has_summary_tables_and_plots(synthetic_report):
    d, _, md = synthetic_report
    assert "twin is the fastest pmtx runtime at" in md
    for heading in ("## Summary", "Best pmtx runtime against PMDK",
                    "Winning pmtx runtime", "Persist barriers per "
                    "transaction", "## Targets", "## Observations",
                    "The seeds' claims"):
        assert heading in md, heading
    pngs = sorted(p.name for p in d.glob("*.png"))
    for w in ("array-slot4", "array-slot64", "array-raw", "alloc", "sps",
              "single-obj", "multi-obj", "hashmap", "bbuf"):
        assert any(p.startswith(w) for p in pngs), (w, pngs)
    for p in pngs:
        assert f"({p})" in md, f"{p} is not in report.md"
        assert (d / p).stat().st_size > 5000


def table_row(md, section, first_cell):
    """The cells of the row starting with first_cell in a section."""
    for line in md.split(section, 1)[1].splitlines():
        if line.startswith(f"| {first_cell}"):
            return [c.strip() for c in line.strip("|").split("|")]
    raise AssertionError(f"no row {first_cell!r} after {section!r}")


def hw_ratios(rows, workload, param):
    """{param value: PMDK ns / best pmtx ns} on PDOM-1 hardware."""
    at = {}
    for r in rows:
        if r["workload"] == workload and r["backend"] == "hardware":
            at.setdefault(r["params"][param], {})[r["system"]] = r
    out = {}
    for v, sr in at.items():
        best = min(r["ns_per_op"] for s, r in sr.items()
                   if s.startswith("pmtx-") and s != "pmtx-undo-eager")
        out[v] = sr["pmdk"]["ns_per_op"] / best
    return out


def test_report_numbers_come_from_the_data(synthetic_report):
    _, rows, md = synthetic_report
    ratios = list(hw_ratios(rows, "sps", "k").values())
    cells = table_row(md, "Best pmtx runtime against PMDK", "sps |")
    assert cells[3] == report.fmt_x(min(ratios))
    gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
    assert cells[4] == report.fmt_x(gm)


def test_report_judges_targets_from_the_data(synthetic_report, tmp_path):
    _, rows, md = synthetic_report
    alloc = min(hw_ratios(rows, "alloc", "x").values())
    verdict = table_row(md, "## Targets", "alloc:")[2]
    assert verdict == ("**met**" if alloc >= 3 else "**MISSED**")
    # The same run with a PMDK 100 times faster misses every ratio target.
    fast = [dict(r, ns_per_op=r["ns_per_op"] / 100) if r["system"] ==
            "pmdk" else r for r in rows]
    write_jsonl(tmp_path / "results.jsonl", fast)
    md2 = open(report.make_report(str(tmp_path))).read()
    for first in ("array, slot 4", "sps, k >= 8", "alloc:", "hashmap:",
                  "bbuf scenario 2", "bbuf scenario 3"):
        assert table_row(md2, "## Targets", first)[2] == "**MISSED**"


def test_report_finds_the_undo_redo_crossover(synthetic_report):
    _, rows, md = synthetic_report
    # Synthetic undo pays a barrier per write, redo two per transaction:
    # at PDOM-0 redo wins from some write percentage on.
    line = next(l for l in md.splitlines()
                if l.startswith("- array, slot 4: redo beats undo"))
    assert "PDOM-0 emulated from" in line or \
        "PDOM-0 emulated at every point" in line


def test_report_runs_as_a_script(tmp_path):
    write_jsonl(tmp_path / "results.jsonl", synthetic_rows()[:40])
    r = subprocess.run([sys.executable, os.path.join(SCRIPTS, "report"),
                        str(tmp_path)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert os.path.exists(tmp_path / "report.md")


# ---- the driver's plan ----

def quick_plan(monkeypatch, budget):
    """The quick mode's plan of every workload on every config, made with
    budget bytes of memory to spare. The plan depends on the memory free
    when it is made; the suite's other tests hold some of it, so the
    budget is fixed here."""
    monkeypatch.setattr(harness, "mem_budget", lambda pool_dir: budget)
    steps = harness.plan("quick", harness.WORKLOADS, None,
                         list(harness.CONFIGS), None, None, set())
    assert {s.workload for s in steps} == set(harness.WORKLOADS)
    return steps


def test_quick_plan_covers_every_workload_on_four_configs(monkeypatch):
    steps = quick_plan(monkeypatch, 8 << 30)
    assert all(s.cfg is None for s in steps)  # all configs, interleaved
    assert sum(s.est for s in steps) < 240


def test_plan_runs_one_config_per_step_when_memory_is_short(monkeypatch):
    steps = quick_plan(monkeypatch, 64 << 20)
    assert any(s.cfg is not None for s in steps)
    for w in {s.workload for s in steps if s.cfg is not None}:
        cfgs = {s.cfg for s in steps if s.workload == w}
        assert cfgs == set(harness.CONFIGS)


def load_script(path, name):
    return harness.script_module(name, path)


@pytest.mark.parametrize("mode", ["smoke", "quick", "default", "full"])
def test_application_stages_pass_options_their_scripts_accept(mode):
    """The command line of every application stage parses with its
    script's own parser (an option the script does not know would end
    the stage with a usage error)."""
    scripts = {"sqlbench": load_script(harness.SQL_BENCH, "sqlbench"),
               "kvbench": load_script(harness.KV_BENCH, "kvbench")}
    steps = harness.sql_steps(mode) + harness.kv_steps(mode)
    assert {s.tool for s in steps} == set(scripts)
    for s in steps:
        argv = s.argv("/x/build/bench/pmtx-bench", None)
        scripts[s.tool].parse_args(argv[2:])  # exits 2 if refused


def test_domain_subset_runs_one_config_per_step():
    steps = harness.plan("quick", ["sps"], ["pmtx-undo", "pmdk"],
                         ["pdom0-emu", "pdom1-hw"], None, None, set())
    argvs = [s.argv("pmtx-bench", "/dev/shm") for s in steps]
    assert {s.cfg for s in steps} == {"pdom0-emu", "pdom1-hw"}
    assert all("--system" in a and "pmtx-undo,pmdk" in a for a in argvs)


def test_default_run_dir_is_a_timestamp_with_a_latest_link(tmp_path,
                                                           monkeypatch):
    monkeypatch.setattr(harness, "ROOT", str(tmp_path))
    first = harness.make_out_dir(None)
    assert os.path.dirname(first) == str(tmp_path / "results")
    assert len(os.path.basename(first)) == len("2026-11-22T10-00-00")
    link = tmp_path / "results" / "latest"
    assert os.readlink(link) == os.path.basename(first)
    other = harness.make_out_dir(str(tmp_path / "results" / "other"))
    assert os.readlink(link) == "other" and os.path.isdir(other)


def test_progress_eta_follows_measured_rate():
    steps = harness.plan("quick", ["sps"], None, list(harness.CONFIGS),
                         None, None, set())

    class Quiet:
        def isatty(self):
            return False

        def write(self, s):
            pass

        def flush(self):
            pass

    prog = harness.Progress(steps, stream=Quiet())
    prog.PRIOR = 0.0
    for s in steps[:2]:
        s.actual = 2 * s.est  # twice as slow as estimated
    left = sum(s.est for s in steps[2:])
    assert abs(prog.remaining() - 2 * left) < 1e-6


# ---- (d) the smoke run, end to end ----

@needs_bench
def log_tail(out, n=40):
    """The last lines of a run's bench.log that are not JSON: what a
    failed step said."""
    try:
        with open(out / "bench.log") as f:
            lines = [l for l in f if not l.startswith("{")]
    except OSError:
        return ""
    return "\n--- bench.log:\n" + "".join(lines[-n:])


def test_smoke_run_end_to_end(tmp_path):
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, os.path.join(SCRIPTS, "eval.py"),
                        "--smoke", "--out", str(out), "--bench", BENCH],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:] + log_tail(out)
    rows = [json.loads(l) for l in open(out / "results.jsonl")]
    for w in harness.WORKLOADS:
        systems = {x["system"] for x in rows if x["workload"] == w}
        assert "pmdk" in systems, (w, systems)
        assert set(harness.SYSTEMS[w]) <= systems, (w, systems)
        assert "pmtx-twin" in systems, (w, systems)
    for x in rows:
        check_schema(x, x["workload"])
        for k in ("cpu_model", "flush_instruction", "date", "pmtx_version",
                  "mode", "host_cores"):
            assert x.get(k) is not None, k
        assert x["mode"] == "smoke"
    assert (out / "report.md").exists()
    assert (out / "meta.json").exists()
    assert "ETA" in r.stderr
    # The SQLite stage: TPC-C on its three smoke configurations.
    sql = [json.loads(l) for l in open(out / "sqlite.jsonl")]
    tpcc = {x["config"]: x for x in sql if x["bench"] == "sqlite-tpcc"}
    assert set(tpcc) == {"memory", "pmtx-redo-pdom1", "wal-full-shm"}
    for x in tpcc.values():
        assert x["tps"] > 0 and x["errors"] == 0, x
    assert "## SQLite" in open(out / "report.md").read()
    # The pmkv stage: Figure 7's one point per version, the same on the
    # store in one process, and pmkv beside Redis.
    kv = [json.loads(l) for l in open(out / "pmkv.jsonl")]
    for bench in ("pmkv-fig7", "pmkv-store"):
        f7 = [x for x in kv if x["bench"] == bench]
        assert sorted(x["version"] for x in f7) == ["opt", "wrapped"]
        for x in f7:
            assert x["ops_per_s"] > 0 and not x.get("failed"), x
    vs = {(x["config"], x["pipeline"]): x for x in kv
          if x["bench"] == "pmkv-vs-redis"}
    assert set(vs) == {(c, p) for c in ("pmkv-shm", "redis-off")
                       for p in (1, 16)}
    assert all(x["ok"] and x["set_rps"] > 0 for x in vs.values())
    assert "## pmkv" in open(out / "report.md").read()
