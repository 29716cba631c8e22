# SPDX-License-Identifier: BSD-3-Clause
"""`pmtx-bench sps` on two threads (bench/wl_sps.c): under every runtime,
PMDK and the plain floor, two threads swapping on disjoint slices and on
one shared array (a lock per slot, held until the transaction is durable)
leave the array a permutation of 0..n-1, checked after the run and again
after the region (pool) is closed and opened. The array is small (64
slots) so that the shared mode's threads collide in most transactions:
without the locks, two swaps of one slot at once lose one of them and
duplicate a value: with the locks taken out, every system but pmtx-twin
fails here (twin transactions run one at a time, so they need none).
Each run is bounded by its count (check mode, --p ops=); timings are
never asserted.

    PMTX_BENCH=build/bench/pmtx-bench python3 -m pytest -q \
        tests/python/test_bench_sps_threads.py
"""
import json
import os

import pytest

from benchbin import bench, needs_bench

SYSTEMS = ["pmtx-undo", "pmtx-redo", "pmtx-redo-async", "pmtx-cow",
           "pmtx-auto", "pmtx-twin", "pmdk", "plain"]
HW = ["--domain", "pdom1", "--backend", "hardware"]
CHECK = ["--p", "n=64", "--p", "k=1,8", "--p", "threads=2",
         "--p", "shared=0,1", "--p", "ops=40000"]


def run(d, *args, configs=HW):
    p = bench("sps", *configs, "--dir", str(d), *args)
    left = [f for f in os.listdir(d) if f.startswith(f"pmtx-bench-{p.pid}-")]
    assert not left, f"left behind: {left}"
    return p


@needs_bench
@pytest.mark.parametrize("system", SYSTEMS)
def test_two_threads_keep_the_array_a_permutation(system, tmp_path):
    p = run(tmp_path, "--system", system, *CHECK)
    assert p.returncode == 0, p.stderr
    assert "validation failed" not in p.stderr


@needs_bench
@pytest.mark.parametrize("system", SYSTEMS)
def test_check_mode_validates_every_runner(system, tmp_path):
    """An injected fault must fail the check mode's validation, so that
    the test above can fail."""
    p = run(tmp_path, "--system", system, *CHECK, "--inject-fault")
    assert p.returncode != 0
    assert "validation failed" in p.stderr


@needs_bench
def test_lines_give_threads_mode_and_every_thread_counters(tmp_path):
    """A line per system, thread count and mode; a runner's barriers are
    its threads' sum, so a barrier count that is fixed per transaction
    (redo: 2; PMDK: nearly so, as its undo log's snapshots vary a little)
    does not depend on the thread count."""
    p = run(tmp_path, "--system", "pmtx-redo,pmdk", "--p", "n=4096",
            "--p", "k=4", "--p", "threads=1,2", "--p", "shared=0,1",
            "--seconds", "0.04", "--rounds", "1")
    assert p.returncode == 0, p.stderr
    rows = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    seen = {(r["system"], r["params"]["threads"], r["params"]["shared"])
            for r in rows}
    assert seen == {(s, t, m) for s in ("pmtx-redo", "pmdk")
                    for t in (1, 2) for m in (0, 1)}, rows
    assert len(rows) == 8
    for r in rows:
        assert r["swaps_per_s"] > 0 and r["cpu_per_s"] > 0, r
        assert r["barriers_per_op"] is not None, r
    redo = [r["barriers_per_op"] for r in rows if r["system"] == "pmtx-redo"]
    assert redo == [2.0] * 4, rows
    pmdk = [r["barriers_per_op"] for r in rows if r["system"] == "pmdk"]
    assert min(pmdk) > 0 and max(pmdk) < 1.05 * min(pmdk), rows


@needs_bench
def test_too_many_runners_are_refused(tmp_path):
    """Every system in its four default configurations, at two thread
    counts and in two modes, is over the 48 runners of one point."""
    p = run(tmp_path, "--p", "n=64", "--p", "threads=1,2",
            "--p", "shared=0,1", "--seconds", "0.01", configs=[])
    assert p.returncode != 0 and "runners" in p.stderr
