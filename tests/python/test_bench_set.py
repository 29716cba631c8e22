# SPDX-License-Identifier: BSD-3-Clause
"""`pmtx-bench set` (bench/wl_set.c) and `pmtx-bench containers`
(bench/wl_containers.c) at a tiny size: every system at every update
ratio with every field, the counters' per-kind split consistent with the
mix, the containers' memory and cost lines complete, the validator
failing on an injected fault, and nothing left behind. Timings are never
asserted.

    PMTX_BENCH=build/bench/pmtx-bench python3 -m pytest -q \
        tests/python/test_bench_set.py
"""
import json
import math
import os
import subprocess

import pytest

from benchbin import BENCH, ROOT, bench, needs_bench

RUNTIMES = ["undo", "redo", "redo-async", "twin", "auto"]
SYSTEMS = [f"pmtx-{c}-{rt}" for c in ("map", "hmap") for rt in RUNTIMES] \
    + ["pmdk-btree", "pmdk-hmap"]
RATIOS = [100, 10, 1]
FIELDS = ["ns_per_op", "ops_per_s", "barriers_per_op", "flushes_per_op",
          "update_barriers_per_op", "update_flushes_per_op",
          "lookup_barriers_per_op", "lookup_flushes_per_op", "set_size",
          "cpu_ns_per_op", "cpu_ops_per_s",
          "ns_per_op_sd", "ns_per_op_min", "ns_per_op_max", "rounds"]
KEYS = 2000
COST_OPS = {"hmap": {"insert", "lookup", "delete"},
            "map": {"insert", "lookup", "delete"},
            "list": {"push", "pop"}, "str": {"append"}}


def rows_of(p):
    return [json.loads(x) for x in p.stdout.splitlines() if x.strip()]


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and \
        math.isfinite(v)


def mine(d, pid):
    return [f for f in os.listdir(d) if f.startswith(f"pmtx-bench-{pid}-")]


@pytest.fixture(scope="module")
def set_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("set")
    p = bench("set", "--p", f"keys={KEYS}", "--p", "split=200",
              "--seconds", "0.02", "--rounds", "1", "--dir", str(d))
    return p, rows_of(p) if p.returncode == 0 else [], d


@needs_bench
def test_set_reports_every_system_at_every_ratio(set_run):
    p, rows, d = set_run
    assert p.returncode == 0, p.stderr
    got = [(r["system"], r["params"]["update_pct"]) for r in rows]
    assert sorted(got) == sorted((s, u) for s in SYSTEMS for u in RATIOS)
    for r in rows:
        assert r["workload"] == "set"
        assert (r["domain"], r["backend"]) == ("pdom1", "hardware")
        assert r["params"]["keys"] == KEYS
        assert r["params"]["range"] == 2 * KEYS
        assert r["params"]["read_tx"] == 1
        for f in FIELDS:
            assert number(r[f]), (r["system"], f)
        assert r["rounds"] == 1
        # a thread runs at most as long as the clock on the wall
        assert 0 < r["cpu_ns_per_op"] <= 2 * r["ns_per_op"], r["system"]
    assert os.listdir(d) == []


@needs_bench
def test_set_counters_split_by_kind_agree_with_the_mix(set_run):
    _, rows, _ = set_run
    for r in rows:
        # lookups write nothing back; pmtx's read transactions issue no
        # barrier either (PMDK's drain at TX_BEGIN and TX_END)
        assert r["lookup_flushes_per_op"] == 0, r["system"]
        if r["system"].startswith("pmtx-"):
            assert r["lookup_barriers_per_op"] == 0, r["system"]
        # an update that changed the set wrote something
        assert r["update_flushes_per_op"] > 0, r["system"]
        assert r["update_barriers_per_op"] > 0, r["system"]
        if r["system"].startswith("pmtx-") and \
                not r["system"].endswith("-auto"):
            # so the mix's barriers per operation are at most those of
            # its updates (auto's runtime changes as it measures)
            assert r["barriers_per_op"] <= \
                r["update_barriers_per_op"] * 1.2 + 0.05, r["system"]
        # the set stays near its size: as many adds as removes
        assert abs(r["set_size"] - KEYS) < KEYS // 4, r["system"]


@needs_bench
def test_set_update_share_lowers_the_barriers_per_operation(set_run):
    _, rows, _ = set_run
    by = {(r["system"], r["params"]["update_pct"]): r for r in rows}
    for s in SYSTEMS:
        if s.startswith("pmdk-"):
            continue  # PMDK's read transactions drain too
        assert by[(s, 100)]["barriers_per_op"] > \
            by[(s, 1)]["barriers_per_op"], s


@needs_bench
def test_set_validator_fails_on_a_lost_key(tmp_path):
    for system in ("pmtx-map-undo", "pmtx-hmap-redo", "pmdk-btree",
                   "pmdk-hmap"):
        p = bench("set", "--p", "keys=500", "--p", "split=10",
                  "--p", "update_pct=10", "--seconds", "0.01",
                  "--rounds", "1", "--system", system, "--dir",
                  str(tmp_path), "--inject-fault")
        assert p.returncode != 0, system
        assert "validation failed" in p.stderr, (system, p.stderr)
        assert mine(tmp_path, p.pid) == []


@needs_bench
def test_set_runs_one_system_on_another_domain(tmp_path):
    p = bench("set", "--p", "keys=500", "--p", "split=10",
              "--p", "update_pct=50", "--p", "read_tx=0",
              "--seconds", "0.01", "--rounds", "1",
              "--system", "pmtx-hmap-redo,pmdk-btree", "--domain", "pdom2",
              "--backend", "emulated", "--dir", str(tmp_path))
    assert p.returncode == 0, p.stderr
    rows = rows_of(p)
    assert [(r["system"], r["domain"], r["params"]["read_tx"])
            for r in rows] == [("pmtx-hmap-redo", "pdom2", 0)]


@needs_bench
def test_set_refuses_an_unknown_system():
    p = bench("set", "--p", "keys=100", "--system", "pmtx-map-cow")
    assert p.returncode != 0
    assert "unknown --system pmtx-map-cow" in p.stderr


@pytest.fixture(scope="module")
def cont_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("containers")
    p = bench("containers", "--p", "entries=3000", "--p", "cost_entries=500",
              "--p", "ops=200", "--dir", str(d))
    return p, rows_of(p) if p.returncode == 0 else [], d


@needs_bench
def test_containers_memory_has_each_container(cont_run):
    p, rows, d = cont_run
    assert p.returncode == 0, p.stderr
    mem = {r["container"]: r for r in rows if r["what"] == "memory"}
    assert set(mem) == {"map", "hmap", "list"}
    assert mem["map"]["raw_bytes_per_entry"] == 16
    assert mem["hmap"]["raw_bytes_per_entry"] == 80
    assert mem["list"]["raw_bytes_per_entry"] == 16
    for r in mem.values():
        assert r["entries"] == 3000
        # the heap holds at least the raw bytes, and its superblocks at
        # least its blocks
        assert r["bytes_per_entry"] >= r["raw_bytes_per_entry"]
        assert r["superblock_bytes_per_entry"] >= r["bytes_per_entry"]
        assert r["overhead_per_entry"] == pytest.approx(
            r["bytes_per_entry"] - r["raw_bytes_per_entry"], abs=0.01)
    assert os.listdir(d) == []


@needs_bench
def test_containers_cost_has_every_operation_under_every_runtime(cont_run):
    _, rows, _ = cont_run
    cost = [r for r in rows if r["what"] == "cost"]
    got = {(r["container"], r["op"], r["runtime"]) for r in cost}
    want = {(c, op, rt) for c, ops in COST_OPS.items() for op in ops
            for rt in RUNTIMES}
    assert got == want
    assert len(cost) == len(want)
    for r in cost:
        assert r["n"] == 200
        assert r["system"] == f"pmtx-{r['container']}-{r['runtime']}"
        for f in ("ns_per_op", "barriers_per_op", "flushes_per_op",
                  "bytes_logged_per_op"):
            assert number(r[f]), (r["system"], r["op"], f)
        if r["op"] == "lookup":
            assert r["barriers_per_op"] == 0 and r["flushes_per_op"] == 0
        else:  # every write is durable at its commit
            assert r["barriers_per_op"] >= 1, (r["system"], r["op"])
            assert r["flushes_per_op"] >= 1, (r["system"], r["op"])
        if r["runtime"] == "twin":  # no log: lines go to the back copy
            assert r["bytes_logged_per_op"] == 0


@needs_bench
def test_containers_refuses_bad_parameters():
    p = bench("containers", "--p", "what=speed")
    assert p.returncode != 0
    assert "what = memory and/or cost" in p.stderr


@needs_bench
def test_eval_stage_runs_both_invocations_into_containers_jsonl(tmp_path):
    """scripts/eval.py --smoke --workloads containers: the set and the
    containers lines in containers.jsonl (none in results.jsonl), and the
    report's section."""
    import sys
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts",
                                                     "eval.py"),
                        "--smoke", "--workloads", "containers", "--out",
                        str(out), "--bench", BENCH],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(x) for x in open(out / "containers.jsonl")]
    sets = [x for x in lines if x["workload"] == "set"]
    assert {(x["system"], x["params"]["update_pct"]) for x in sets} == \
        {(s, u) for s in SYSTEMS for u in (100, 1)}
    assert all(x["mode"] == "smoke" for x in lines)
    kinds = {x.get("what") for x in lines if x["workload"] == "containers"}
    assert kinds == {"memory", "cost"}
    assert open(out / "results.jsonl").read() == ""
    assert "## The containers" in open(out / "report.md").read()
