# SPDX-License-Identifier: BSD-3-Clause
"""The runnable code blocks of a Markdown page, as one shell script.

A page marks a fenced code block with an HTML comment on the line before
it (blank lines between are allowed), which a reader does not see:

    <!-- test: run -->         the block is shell, run as it stands
    <!-- test: file NAME -->   the block is written to the file NAME, in
                               the shell's current directory at that point

Unmarked blocks (sample output, commands that need root or the network)
are not run. script() turns a page's marked blocks, in page order, into
one bash script, so that variables and `cd` carry from one block to the
next as they do in a reader's terminal; it runs under `set -euo
pipefail`, so a command that fails fails the script.
"""
import os
import re
import subprocess
import tempfile

MARK = re.compile(r"^<!--\s*test:\s*(run|file\s+(\S+))\s*-->\s*$")
FENCE = re.compile(r"^(`{3,}|~{3,})")


class MarkError(ValueError):
    """A marker that is not followed by a fenced code block."""


def blocks(text, name="page"):
    """[(kind, arg, body, line)] of the marked blocks: kind "run" (arg
    None) or "file" (arg the file's name); line is the block's first."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = MARK.match(lines[i].strip())
        if not m:
            i += 1
            continue
        mark_line = i + 1
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        f = FENCE.match(lines[i]) if i < len(lines) else None
        if not f:
            raise MarkError(f"{name}:{mark_line}: a test marker not "
                            f"followed by a fenced code block")
        fence, body, start = f.group(1), [], i + 2
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise MarkError(f"{name}:{start - 1}: a code block that does "
                            f"not end")
        i += 1
        kind = "run" if m.group(1) == "run" else "file"
        out.append((kind, m.group(2), "\n".join(body) + "\n", start))
    return out


def script(marked, name="page"):
    """One bash script running the marked blocks in order."""
    parts = ["set -euo pipefail"]
    for n, (kind, arg, body, line) in enumerate(marked):
        parts.append(f"echo '== {name}:{line}' >&2")
        if kind == "run":
            parts.append(body)
        else:
            eof = f"PMTX_DOC_BLOCK_{n}_EOF"
            assert eof not in body
            parts.append(f"cat > '{arg}' <<'{eof}'\n{body}{eof}")
    return "\n".join(parts) + "\n"


def reader_env(**values):
    """The environment of a reader's shell: this one without the variables
    that would point a page's commands at another pmtx (PMTX_PREFIX,
    PKG_CONFIG_PATH, LD_LIBRARY_PATH), then with values set."""
    e = dict(os.environ)
    for name in ("PMTX_PREFIX", "PKG_CONFIG_PATH", "LD_LIBRARY_PATH"):
        e.pop(name, None)
    e.update(values)
    return e


def run(text, cwd, env, timeout=600, name="page"):
    """Run a page's marked blocks with bash; the CompletedProcess."""
    with tempfile.NamedTemporaryFile("w", suffix=".sh",
                                     delete=False) as f:
        f.write(script(blocks(text, name), name))
        path = f.name
    try:
        return subprocess.run(["bash", path], cwd=cwd, env=env,
                              capture_output=True, text=True,
                              timeout=timeout)
    finally:
        os.unlink(path)
