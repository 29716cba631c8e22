# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures of pmtx-sqlite's tests: a temporary directory on /dev/shm
(the hardware backend needs a memory-backed file to be fast, and any file
works), or in $PSQ_TMPDIR (/var/tmp, an ordinary disk, when the suite
runs on the journal backend), and the runtimes every test can be run
under. It puts apps/common on sys.path, for apptest.py (the helpers the
applications' tests share)."""
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "common"))

RUNTIMES = ("undo", "redo", "redo-async", "auto", "twin")


@pytest.fixture
def tmp(request):
    base = os.environ.get("PSQ_TMPDIR") or (
        "/dev/shm" if os.path.isdir("/dev/shm") else None)
    d = tempfile.mkdtemp(prefix="psq-test-", dir=base)
    yield d
    shutil.rmtree(d, ignore_errors=True)
