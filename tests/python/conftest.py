# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures shared by tests/python: scripts/ on the import path, and the
report (scripts/report) made from synthetic JSON lines."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


@pytest.fixture
def report_of(tmp_path):
    """report_of(name, rows): the report of a run directory (tmp_path,
    where its plots go too) whose file name holds rows, as text."""
    import report

    def make(name, rows):
        with open(tmp_path / name, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        with open(report.make_report(str(tmp_path))) as f:
            return f.read()
    return make
