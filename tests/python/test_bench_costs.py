# SPDX-License-Identifier: BSD-3-Clause
"""`pmtx-bench costs` (bench/wl_costs.c): every measurement of the shared
spec (hops_costs.md) is reported with its fixed keys, the library's
counters agree with the work asked for, and nothing is left behind.
Timings are never asserted.

    PMTX_BENCH=build/bench/pmtx-bench python3 -m pytest -q \
        tests/python/test_bench_costs.py
"""
import json
import math
import os

import pytest

from benchbin import bench, needs_bench

LINES = {0, 1, 2, 4, 8, 16, 32, 64}
PAGES = {1, 4, 16, 64}
WHATS = {"sfence", "clwb_clean", "barrier_lines", "barrier_fit",
         "msync_pages", "trace_record", "lock_after_flush"}


def costs(*extra):
    """Run pmtx-bench costs; the completed process, with its pid."""
    return bench("costs", "--seconds", "0.05", "--rounds", "1", *extra,
                 timeout=120)


def leftovers(pid):
    """The files of the run of that pid left in /dev/shm (other runs, of
    other tests, may be going on at the same time)."""
    return [f for f in os.listdir("/dev/shm")
            if f.startswith(f"pmtx-bench-costs-{pid}-") or
            f == f"pmtx-bench-costs-{pid}.trace"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("costs")
    p = costs("--dir", str(d))
    return p, [json.loads(x) for x in p.stdout.splitlines()], d


def number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and \
        math.isfinite(v)


@needs_bench
def test_costs_reports_every_measurement_with_the_fixed_keys(run):
    p, rows, d = run
    assert p.returncode == 0, p.stderr
    assert {r["what"] for r in rows} == WHATS
    for r in rows:
        assert r["workload"] == "costs"
        assert isinstance(r["rounds"], int) and isinstance(r["n"], int)
        assert r["rounds"] == 1 and r["n"] >= 1
        assert r["ns"] is None if r["what"] == "barrier_fit" \
            else number(r["ns"])
    assert {r["lines"] for r in rows if r["what"] == "barrier_lines"} \
        == LINES
    fit = [r for r in rows if r["what"] == "barrier_fit"]
    assert len(fit) == 1
    assert number(fit[0]["fence_ns"]) and number(fit[0]["line_ns"])
    ms = [r for r in rows if r["what"] == "msync_pages"]
    assert {r["pages"] for r in ms} == PAGES
    for r in ms:
        assert r["dir"] == str(d)
        assert r["fs"] in ("ext4", "tmpfs", "other")


@needs_bench
def test_costs_counters_match_lines_and_barriers(run):
    p, rows, _ = run
    assert p.returncode == 0, p.stderr
    for r in rows:
        if r["what"] == "barrier_lines":
            assert r["counters"] == "ok"
            assert r["flushes_per_op"] == r["lines"]
            assert r["barriers_per_op"] == 1
        if r["what"] == "msync_pages":
            assert r["counters"] == "ok"
            assert r["runs_per_op"] == r["pages"]
        if r["what"] == "trace_record":
            assert r["records_per_op"] >= 2


@needs_bench
def test_costs_removes_its_regions_and_trace(run):
    p, _, d = run
    assert p.returncode == 0, p.stderr
    assert os.listdir(d) == []
    assert leftovers(p.pid) == []


@needs_bench
def test_costs_refuses_a_line_count_beyond_its_buffer():
    p = costs("--p", "lines=257", "--p", "pages=1")
    assert p.returncode != 0
    assert "lines=257: 0..256" in p.stderr


@needs_bench
def test_costs_measures_up_to_256_lines():
    p = costs("--p", "lines=256", "--p", "pages=1")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(l) for l in p.stdout.splitlines()]
    big = [r for r in rows if r["what"] == "barrier_lines"]
    assert [r["lines"] for r in big] == [256]
    assert big[0]["flushes_per_op"] == 256 and big[0]["barriers_per_op"] == 1
