# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures of the tests that run a page of docs/ as written: the trees
(CTest sets PMTX_SOURCE and PMTX_BUILD; without them the test is
skipped) and a region of the test's own for the page's commands."""
import os

import pytest


@pytest.fixture
def trees():
    """(the source tree, the build tree)."""
    src, build = os.environ.get("PMTX_SOURCE"), os.environ.get("PMTX_BUILD")
    if not (src and build):
        pytest.skip("PMTX_SOURCE and PMTX_BUILD are not set (run through "
                    "CTest)")
    return src, build


@pytest.fixture
def region():
    """A region's path in /dev/shm; whatever the page's commands leave
    there (the region, a half-made one) is removed at the end."""
    path = f"/dev/shm/pmtx-docs-{os.getpid()}.pmtx"
    yield path
    for f in (path, path + ".creating"):
        if os.path.exists(f):
            os.unlink(f)
