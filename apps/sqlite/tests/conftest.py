"""Fixtures of pmtx-sqlite's tests: a temporary directory on /dev/shm
(the hardware backend needs a memory-backed file to be fast, and any file
works), or in $PSQ_TMPDIR (/var/tmp, an ordinary disk, when the suite
runs on the journal backend), and the runtimes every test can be run
under."""
import os
import shutil
import tempfile

import pytest

RUNTIMES = ("undo", "redo", "redo-async", "auto", "twin")


@pytest.fixture
def tmp(request):
    base = os.environ.get("PSQ_TMPDIR") or (
        "/dev/shm" if os.path.isdir("/dev/shm") else None)
    d = tempfile.mkdtemp(prefix="psq-test-", dir=base)
    yield d
    shutil.rmtree(d, ignore_errors=True)
