# SPDX-License-Identifier: BSD-3-Clause
"""docs/getting-started.md works as written (CTest
docs_getting_started_runs, label install).

The page's marked blocks (docblocks.py) run in order in one bash script,
from the source tree, as a reader would run them after building it:
install into a prefix, compile the first program with pkg-config, run
it, kill it with kill -9, inspect the region with the installed `pmtx`,
run it again and check that every commit it printed is still there,
then remove the region. The page reads three variables with defaults;
the test sets them: PMTX_BUILD (this build tree), PMTX_REGION (a region
of its own in /dev/shm), and HOME (a scratch directory, so the default
prefix $HOME/.local and the program's directory ~/pmtx-counter are
scratch too). Everything is removed at the end.

Environment: PMTX_SOURCE (the source tree), PMTX_BUILD (the build tree).
"""
import os
import shutil

import docblocks


def test_the_first_program_survives_kill_9_as_the_page_says(trees, region,
                                                             tmp_path):
    src, build = trees
    page = os.path.join(src, "docs", "getting-started.md")
    with open(page) as f:
        text = f.read()
    marked = docblocks.blocks(text, "getting-started.md")
    # The page must keep doing what this test is for.
    assert ("file", "counter.c") in [(k, a) for k, a, *_ in marked]
    commands = [line.strip() for kind, _, body, _ in marked
                if kind == "run" for line in body.splitlines()]
    for step in ("cmake --install", "cc ", "kill -9 ", "pmtx info",
                 "pmtx check"):
        assert any(c.startswith(step) for c in commands), \
            f"the page no longer runs {step.strip()}"

    home = tmp_path / "home"
    home.mkdir()
    e = docblocks.reader_env(HOME=str(home), PMTX_BUILD=build,
                             PMTX_REGION=region)
    try:
        p = docblocks.run(text, cwd=src, env=e, timeout=900,
                          name="getting-started.md")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    left = os.path.exists(region)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    # The kill landed while the program had the region open, ...
    assert "closed           not cleanly" in p.stdout, out
    # ... and the next open found it whole, with every commit printed.
    assert "(consistent)" in p.stdout, out
    assert f"{region}: ok" in p.stdout, out
    assert "kept every commit that returned" in p.stdout, out
    assert "closed           cleanly" in p.stdout, out
    assert not left, "the page's last block should remove the region"
