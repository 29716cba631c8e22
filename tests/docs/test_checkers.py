# SPDX-License-Identifier: BSD-3-Clause
"""The documentation's checkers catch what they are for (CTest
docs_link_checker_finds_broken_references): doclinks.py on small pages
with broken links, anchors and paths, and docblocks.py on pages whose
marked blocks fail or are malformed."""
import os
import pathlib
import textwrap

import pytest

import docblocks
import doclinks


def tree(root, files):
    for path, text in files.items():
        p = pathlib.Path(root) / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return str(root)


def messages(root, files=None):
    return [(f, why) for f, _, why in doclinks.check(root, files)]


@pytest.fixture
def repo(tmp_path):
    """A repository of a few files, with one good page of every kind of
    reference."""
    return tree(tmp_path, {
        "src/tx/undo.c": "",
        "tests/test_tx.c": "",
        "docs/man/pmtx.1": "",
        "docs/other.md": """\
            # Other page
            ## Goals: share of memcached's throughput
            ## The `pmtx` command
            ## Twice
            ## Twice
            <a name="kept"></a>
            """,
        "docs/good.md": """\
            # Good

            [other](other.md), [man](man/pmtx.1), [dir](../src/tx/),
            [anchor](other.md#goals-share-of-memcacheds-throughput),
            [code](other.md#the-pmtx-command), [again](other.md#twice-1),
            [html](other.md#kept), [self](#good), [web](https://example.com),
            ![img](man/pmtx.1 "title")

            Paths: `src/tx/undo.c`, `src/tx/undo.c:12`, `tests/test_tx`
            (the program of tests/test_tx.c), `src/tx/*.c`, `docs/**/*.md`.
            Not paths: `build/tools/pmtx`, `results/<run>/report.md`,
            `$prefix/lib`, `/dev/shm/x.pmtx`, `cd build && tests/gone`,
            `PMTX_TRACE=file`, `layout.h`.

            ```sh
            cat src/tx/gone.c   # in a code block: not checked
            [x](gone.md)
            ```
            <!-- [x](gone.md) in a comment -->
            [ref]: other.md#twice
            """,
    })


def test_a_good_page_has_no_problem(repo):
    assert messages(repo, [os.path.join(repo, "docs/good.md")]) == []


def test_a_missing_link_target_is_reported(repo):
    tree(repo, {"docs/bad.md": "see [gone](gone.md) and [man](man/x.1)\n"})
    got = messages(repo, [os.path.join(repo, "docs/bad.md")])
    assert got == [("docs/bad.md", "link gone.md: no such file docs/gone.md"),
                   ("docs/bad.md", "link man/x.1: no such file docs/man/x.1")]


def test_an_anchor_that_names_no_heading_is_reported(repo):
    tree(repo, {"docs/bad.md": "# Here\n[a](other.md#goals) [b](#nowhere)\n"
                               "[c](other.md#twice-2)\n"})
    got = [why for _, why in
           messages(repo, [os.path.join(repo, "docs/bad.md")])]
    assert sorted(got) == [
        'link #nowhere: no heading with the id "nowhere" in docs/bad.md',
        'link other.md#goals: no heading with the id "goals" in '
        'docs/other.md',
        'link other.md#twice-2: no heading with the id "twice-2" in '
        'docs/other.md']


def test_a_missing_repository_path_is_reported_with_its_line(repo):
    tree(repo, {"docs/bad.md": "One\n\nThe undo log is `src/tx/undo.h`.\n"
                               "And `tests/fuzz/*.c`.\n"})
    got = doclinks.check(repo, [os.path.join(repo, "docs/bad.md")])
    assert [(f, n) for f, n, _ in got] == [("docs/bad.md", 3),
                                           ("docs/bad.md", 4)]
    assert "`src/tx/undo.h`: no such file" in got[0][2]


def test_paths_resolve_from_the_page_folder_too(repo):
    tree(repo, {"apps/kv/tests/kill9.py": "",
                "apps/kv/README.md": "`tests/kill9.py`, `tests/gone.py`\n"})
    got = messages(repo, [os.path.join(repo, "apps/kv/README.md")])
    assert [why.split(":")[0] for _, why in got] == ["path `tests/gone.py`"]


def test_the_default_files_are_the_readmes_and_the_guide(repo):
    tree(repo, {"README.md": "[guide](docs/good.md)\n",
                "apps/kv/README.md": "[up](../../README.md)\n",
                "docs/results/r1/README.md": "[x](missing.txt)\n"})
    assert messages(repo) == [
        ("docs/results/r1/README.md",
         "link missing.txt: no such file docs/results/r1/missing.txt")]


def test_the_command_line_lists_every_problem_and_fails(repo, capsys):
    tree(repo, {"docs/bad.md": "[gone](gone.md) `src/gone.c`\n"})
    rc = doclinks.main(["--root", repo, os.path.join(repo, "docs/bad.md")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "docs/bad.md:1: link gone.md" in out
    assert "docs/bad.md:1: path `src/gone.c`" in out
    assert out.rstrip().endswith("2 broken reference(s) in 1 file(s)")


PAGE = """\
# A page

<!-- test: run -->
```sh
mkdir -p work && cd work
```

<!-- test: file hello.txt -->

```text
hello from the page
```

Output, not run:

```
$ rm -rf /
```

<!-- test: run -->
```sh
cat hello.txt
{last}
```
"""


def test_marked_blocks_run_in_order_in_one_shell(tmp_path):
    p = docblocks.run(PAGE.format(last="pwd"), cwd=tmp_path,
                      env=dict(os.environ))
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"hello from the page\n{tmp_path}/work\n"
    assert [k for k, *_ in docblocks.blocks(PAGE)] == ["run", "file", "run"]


def test_a_failing_command_fails_the_page(tmp_path):
    p = docblocks.run(PAGE.format(last="false\necho not reached"),
                      cwd=tmp_path, env=dict(os.environ))
    assert p.returncode != 0
    assert "not reached" not in p.stdout


def test_a_marker_without_a_code_block_is_an_error():
    with pytest.raises(docblocks.MarkError, match="page:2: a test marker"):
        docblocks.blocks("text\n<!-- test: run -->\nno block here\n")
