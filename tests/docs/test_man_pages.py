# SPDX-License-Identifier: BSD-3-Clause
"""The man pages agree with the project and with each other (CTest
docs_man_pages_agree): every page in docs/man names itself as its file
does, its footer carries the library's version (include/pmtx.h
PMTX_VERSION_STRING, which the top CMakeLists.txt holds equal to the
project's), every pmtx page it refers to as NAME(N) exists, and groff
formats it without a warning. The checker is then shown to catch each
of these on small pages of its own."""
import glob
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.environ.get("PMTX_SOURCE") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")

# .TH TITLE SECTION DATE "pmtx X.Y.Z" "MANUAL"
TH = re.compile(r'^\.TH\s+(\S+)\s+(\d)\s+\S+\s+"pmtx ([^"]*)"')
# .BR pmtx\-info (1), .BR pmtx_list (3) ... : a reference to a page
REF = re.compile(r'^\.BR?\s+"?(pmtx[A-Za-z0-9_\\.-]*)"?\s+\((\d)\)')
VERSION = re.compile(r'#define\s+PMTX_VERSION_STRING\s+"([^"]+)"')


def library_version(root):
    with open(os.path.join(root, "include", "pmtx.h")) as f:
        return VERSION.search(f.read()).group(1)


def pages(root):
    return sorted(glob.glob(os.path.join(root, "docs", "man", "*.[0-9]")))


def groff_warnings(path):
    """groff's warnings for the page, or [] without groff."""
    if not shutil.which("groff"):
        return []
    p = subprocess.run(["groff", "-man", "-ww", "-z", "-Tutf8", path],
                       capture_output=True, text=True)
    return [l for l in p.stderr.splitlines() if l.strip()]


def check(root, version):
    """Problems as "PAGE:LINE: what", for every page in ROOT/docs/man."""
    problems = []
    names = {os.path.basename(p) for p in pages(root)}
    for path in pages(root):
        page = os.path.basename(path)
        stem, sect = page.rsplit(".", 1)
        with open(path) as f:
            lines = f.read().splitlines()
        th = [(i, TH.match(l)) for i, l in enumerate(lines, 1)
              if l.startswith(".TH")]
        if len(th) != 1 or not th[0][1]:
            problems.append(f'{page}:1: no single .TH line with "pmtx '
                            f'VERSION" as its footer')
        else:
            i, m = th[0]
            if m.group(1).lower() != stem.lower() or m.group(2) != sect:
                problems.append(f"{page}:{i}: .TH names {m.group(1)}"
                                f"({m.group(2)}), the file {stem}({sect})")
            if m.group(3) != version:
                problems.append(f"{page}:{i}: footer says pmtx "
                                f"{m.group(3)}, the library is {version}")
        for i, l in enumerate(lines, 1):
            m = REF.match(l)
            if not m:
                continue
            ref = m.group(1).replace("\\", "") + "." + m.group(2)
            if ref not in names:
                problems.append(f"{page}:{i}: refers to "
                                f"{ref.rsplit('.', 1)[0]}({m.group(2)}), "
                                f"which is not a page in docs/man")
        problems += [f"{page}: groff: {w}" for w in groff_warnings(path)]
    return problems


def test_every_man_page_carries_the_version_and_its_references_exist():
    root = os.path.abspath(ROOT)
    assert pages(root), "no man pages under " + root
    problems = check(root, library_version(root))
    if problems:
        pytest.fail("\n" + "\n".join(problems), pytrace=False)


# ---- the checker catches what it is for ----

GOOD = """.TH PMTX-GOOD 1 2026-11-29 "pmtx 1.2.3" "pmtx manual"
.SH NAME
pmtx\\-good \\- a page
.SH SEE ALSO
.BR pmtx\\-good (1)
"""


def man_tree(tmp_path, files):
    os.makedirs(tmp_path / "docs" / "man")
    for name, text in files.items():
        (tmp_path / "docs" / "man" / name).write_text(text)
    return str(tmp_path)


def test_checker_passes_a_good_page(tmp_path):
    assert check(man_tree(tmp_path, {"pmtx-good.1": GOOD}), "1.2.3") == []


def test_checker_reports_a_footer_of_another_version(tmp_path):
    root = man_tree(tmp_path, {"pmtx-good.1": GOOD})
    assert check(root, "1.2.4") == [
        "pmtx-good.1:1: footer says pmtx 1.2.3, the library is 1.2.4"]


def test_checker_reports_a_page_without_a_versioned_footer(tmp_path):
    root = man_tree(tmp_path, {
        "pmtx-good.1": GOOD.replace('"pmtx 1.2.3"', '"pmtx manual"', 1)})
    assert [p.split(": ", 1)[0] for p in check(root, "1.2.3")] == [
        "pmtx-good.1:1"]


def test_checker_reports_a_title_that_is_not_the_file(tmp_path):
    root = man_tree(tmp_path, {"pmtx-other.3": GOOD})
    assert check(root, "1.2.3") == [
        "pmtx-other.3:1: .TH names PMTX-GOOD(1), the file pmtx-other(3)",
        "pmtx-other.3:5: refers to pmtx-good(1), which is not a page in "
        "docs/man"]


def test_checker_reports_a_reference_to_a_missing_page(tmp_path):
    root = man_tree(tmp_path, {
        "pmtx-good.1": GOOD + ".BR pmtx_map (3),\n.BR msync (2)\n"})
    assert check(root, "1.2.3") == [
        "pmtx-good.1:6: refers to pmtx_map(3), which is not a page in "
        "docs/man"]


@pytest.mark.skipif(not shutil.which("groff"), reason="no groff")
def test_checker_reports_a_groff_warning(tmp_path):
    root = man_tree(tmp_path, {"pmtx-good.1": GOOD + ".XX undefined\n"})
    problems = check(root, "1.2.3")
    assert len(problems) == 1 and problems[0].startswith(
        "pmtx-good.1: groff:"), problems
