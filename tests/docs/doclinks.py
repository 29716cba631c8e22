#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check that the references in the documentation resolve.

    python3 tests/docs/doclinks.py [--root DIR] [FILE.md ...]

Without FILEs it checks README.md, docs/**/*.md (the result folders'
READMEs and reports included) and apps/*/README.md under the root (by
default the repository this file is in). It prints one line per broken
reference, FILE:LINE: what, and exits 1 if there is any, else 0.

What counts as a reference, outside fenced code blocks and HTML comments:

 1. A link or image whose target is relative: [text](target),
    ![alt](target), or a reference definition "[label]: target". Targets
    with a scheme (https:, mailto:) and absolute paths are not checked.
    The file or directory must exist, relative to the Markdown file.
 2. A #fragment in such a link to a Markdown file, or a bare #fragment
    (the file itself), must name one of that file's headings by GitHub's
    rule for heading ids: the heading's text without its markup, in lower
    case, every character but letters, digits, "_", "-" and spaces
    dropped, spaces turned into "-"; a heading repeated in the same file
    gets "-1", "-2", ... An <a name="..."> or id="..." also counts.
 3. Inline code that names a repository path: one word (no spaces)
    containing "/", with none of the placeholder characters < > $ { } ~ =
    (so `results/<run>/` and `$prefix/lib` are not paths), not absolute,
    whose first component is a top-level directory the repository tracks
    (src, docs, tests, ...; from `git ls-files`, or without git every
    directory but hidden ones, build* and results) or a directory beside
    the Markdown file. It must exist relative to the repository root or
    to the Markdown file's own folder (the applications' READMEs spell
    paths from their folder). With * or ? it is a pattern that must match
    something. A ":LINE" suffix is ignored. A path with no extension
    also resolves to a source file of that name (.c, .cpp, .py, .sh):
    `tests/test_journal` is the program built from tests/test_journal.c.
    Left alone: code in fenced blocks (commands and their output), inline
    code with spaces (a command line), and paths under untracked
    top-level directories: build trees (build/, build-fuzz/) and the
    evaluation's results/, which exist only once something has run.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import urllib.parse

FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
COMMENT = re.compile(r"<!--.*?-->", re.S)
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.M)
ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
HTML_ID = re.compile(r"""<a\s[^>]*name=["']([^"']+)["']|\sid=["']([^"']+)["']""")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
PLACEHOLDER = set("<>${}~=")
LINE_SUFFIX = re.compile(r":\d+(-\d+)?$")


def default_files(root):
    """README.md, docs/**/*.md and apps/*/README.md, sorted."""
    files = [os.path.join(root, "README.md")]
    files += glob.glob(os.path.join(root, "docs", "**", "*.md"),
                       recursive=True)
    files += glob.glob(os.path.join(root, "apps", "*", "README.md"))
    return sorted(f for f in files if os.path.isfile(f))


def top_dirs(root):
    """The top-level directories the repository tracks."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], check=True,
                             capture_output=True, text=True).stdout
        dirs = {p.split("/", 1)[0] for p in out.splitlines() if "/" in p}
        if dirs:
            return dirs
    except (OSError, subprocess.CalledProcessError):
        pass
    return {d for d in os.listdir(root)
            if os.path.isdir(os.path.join(root, d))
            and not d.startswith((".", "build")) and d != "results"}


def blank_fences(text):
    """The text with every fenced code block's lines emptied (line numbers
    kept), HTML comments blanked, and the lines of the fences dropped."""
    out, fence = [], None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
        elif fence is not None:
            if m and m.group(1)[0] == fence[0] and \
                    len(m.group(1)) >= len(fence) and \
                    line.strip() == m.group(1):
                fence = None
            out.append("")
        else:
            out.append(line)
    text = "\n".join(out)
    return COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def code_spans(text):
    """(offset, content) of each inline code span."""
    return [(m.start(), m.group(2)) for m in CODE_SPAN.finditer(text)]


def without_code(text):
    """The text with inline code spans blanked (offsets kept)."""
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def plain_heading(text):
    """A heading's text as GitHub renders it (markup dropped)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("`", "")


def slug(text):
    s = plain_heading(text).strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path, cache={}):
    """Every id a link may name in the Markdown file at path."""
    if path in cache:
        return cache[path]
    with open(path, encoding="utf-8") as f:
        lines = blank_fences(f.read()).split("\n")
    ids, seen = set(), {}
    prev = ""
    for line in lines:
        m = ATX.match(line)
        heading = m.group(2) if m else None
        if heading is None and prev.strip() and SETEXT.match(line) and \
                not ATX.match(prev) and "|" not in prev:
            heading = prev
        if heading is not None:
            base = slug(heading)
            n = seen.get(base, 0)
            seen[base] = n + 1
            ids.add(base if n == 0 else f"{base}-{n}")
        for a, b in HTML_ID.findall(line):
            ids.add(a or b)
        prev = line
    cache[path] = ids
    return ids


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def rel(root, path):
    return os.path.relpath(path, root)


def check_link(root, md, target):
    """What is wrong with a link target in the file md, or None."""
    target = target.strip("<>")
    if not target or SCHEME.match(target) or target.startswith("/"):
        return None
    path, _, frag = target.partition("#")
    path = urllib.parse.unquote(path)
    here = os.path.dirname(md)
    dest = os.path.normpath(os.path.join(here, path)) if path else md
    if not os.path.exists(dest):
        return f"link {target}: no such file {rel(root, dest)}"
    if frag and dest.endswith(".md") and os.path.isfile(dest):
        if urllib.parse.unquote(frag) not in anchors(dest):
            return (f"link {target}: no heading with the id \"{frag}\" "
                    f"in {rel(root, dest)}")
    return None


def path_candidate(word, tops, here):
    """Whether an inline code word names a repository path."""
    if "/" not in word or word.startswith(("/", "./")) or \
            any(c in PLACEHOLDER for c in word) or any(c.isspace()
                                                       for c in word):
        return False
    if ":" in word or SCHEME.match(word):
        return False
    first = word.split("/", 1)[0]
    if first.startswith("build") or first == "results":
        return False
    return first in tops or (first not in ("", ".", "..") and
                             os.path.isdir(os.path.join(here, first)))


SOURCE_EXTS = (".c", ".cpp", ".py", ".sh")


def path_exists(root, here, word):
    program = "." not in os.path.basename(word.rstrip("/"))
    for base in (root, here):
        p = os.path.join(base, word)
        if any(c in word for c in "*?["):
            if glob.glob(p, recursive=True):
                return True
        elif os.path.exists(p):
            return True
        elif program and any(os.path.isfile(p + e) for e in SOURCE_EXTS):
            return True
    return False


def check_file(root, md, tops):
    """[(line, message)] for the broken references of one Markdown file."""
    with open(md, encoding="utf-8") as f:
        text = blank_fences(f.read())
    here = os.path.dirname(md)
    problems = []
    for off, code in code_spans(text):
        word = LINE_SUFFIX.sub("", code.strip())
        if path_candidate(word, tops, here) and \
                not path_exists(root, here, word):
            problems.append((line_of(text, off),
                             f"path `{code.strip()}`: no such file from the "
                             f"repository root or from "
                             f"{rel(root, here) or '.'}/"))
    plain = without_code(text)
    for m in list(INLINE_LINK.finditer(plain)) + \
            list(REF_DEF.finditer(plain)):
        why = check_link(root, md, m.group(1))
        if why:
            problems.append((line_of(plain, m.start()), why))
    return sorted(problems)


def check(root, files=None):
    """[(file relative to root, line, message)] over every file."""
    root = os.path.abspath(root)
    tops = top_dirs(root)
    out = []
    for md in files or default_files(root):
        md = os.path.abspath(md)
        out += [(rel(root, md), line, why)
                for line, why in check_file(root, md, tops)]
    return out


def report(problems):
    lines = [f"{f}:{n}: {why}" for f, n, why in problems]
    nfiles = len({f for f, _, _ in problems})
    lines.append(f"{len(problems)} broken reference(s) in {nfiles} file(s)")
    return "\n".join(lines)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("files", nargs="*")
    args = ap.parse_args(argv)
    problems = check(args.root, args.files)
    if problems:
        print(report(problems))
        return 1
    n = len(args.files or default_files(os.path.abspath(args.root)))
    print(f"doclinks: {n} file(s), every reference resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
