# SPDX-License-Identifier: BSD-3-Clause
"""docs/cpp.md's pmtx.hpp program builds and runs as the page says (CTest
docs_cpp_page_runs, label install).

The page's marked blocks (docblocks.py) run in order in one bash script,
in a scratch directory: install this build tree into a scratch prefix,
write visits.cpp, compile it with pkg-config and run it three times on a
region of its own; the output must be the page's. The variables the page
reads are set here: PMTX_BUILD (this build tree), PMTX_PREFIX and
PMTX_REGION (scratch). Everything is removed at the end.

Environment: PMTX_SOURCE (the source tree), PMTX_BUILD (the build tree).
"""
import os

import docblocks


def test_the_visits_program_runs_as_the_page_says(trees, region, tmp_path):
    src, build = trees
    with open(os.path.join(src, "docs", "cpp.md")) as f:
        text = f.read()
    marked = docblocks.blocks(text, "cpp.md")
    assert ("file", "visits.cpp") in [(k, a) for k, a, *_ in marked]
    e = docblocks.reader_env(PMTX_BUILD=build, PMTX_REGION=region,
                             PMTX_PREFIX=str(tmp_path / "prefix"))
    p = docblocks.run(text, cwd=tmp_path, env=e, timeout=600, name="cpp.md")
    left = os.path.exists(region)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout == "7: 1 of 1\n7: 2 of 2\n42: 1 of 3\n", p.stdout
    assert not left, "the page's block should remove the region"
