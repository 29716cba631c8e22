# SPDX-License-Identifier: BSD-3-Clause
"""Every reference in the documentation resolves (CTest
docs_links_resolve): relative links and images, anchors into Markdown
files, and repository paths written as inline code, in README.md,
docs/**/*.md and apps/*/README.md. The rules are doclinks.py's; a
failure lists every broken reference as FILE:LINE: what."""
import os

import pytest

import doclinks

ROOT = os.environ.get("PMTX_SOURCE") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_every_reference_in_the_documentation_resolves():
    files = doclinks.default_files(os.path.abspath(ROOT))
    assert len(files) > 1, "no documentation found under " + ROOT
    problems = doclinks.check(ROOT, files)
    if problems:
        pytest.fail("\n" + doclinks.report(problems), pytrace=False)
