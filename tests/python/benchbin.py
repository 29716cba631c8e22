# SPDX-License-Identifier: BSD-3-Clause
"""The pmtx-bench binary the tests of tests/python run: PMTX_BENCH (CTest
sets it), else build/bench/pmtx-bench in the source tree. Tests that
need it are marked needs_bench, and skipped without it."""
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BENCH = os.environ.get("PMTX_BENCH") or \
    os.path.join(ROOT, "build", "bench", "pmtx-bench")
needs_bench = pytest.mark.skipif(not os.access(BENCH, os.X_OK),
                                 reason=f"no pmtx-bench at {BENCH}")


def bench(*args, timeout=300):
    """Run pmtx-bench with args; the completed process, with its pid (the
    files a run makes carry it in their names)."""
    with subprocess.Popen([BENCH] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as p:
        out, err = p.communicate(timeout=timeout)
        done = subprocess.CompletedProcess(p.args, p.returncode, out, err)
        done.pid = p.pid
        return done
