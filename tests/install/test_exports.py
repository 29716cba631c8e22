# SPDX-License-Identifier: BSD-3-Clause
"""libpmtx.so exports exactly what the public headers declare.

The library is compiled with -fvisibility=hidden and the public headers
(include/pmtx*.h) push default visibility around their declarations. The
allow-list is derived from the headers by the compiler itself: -aux-info
prints every function prototype of a translation unit with the file that
declares it; extern variables (pmtx__trace_on, read by pmtx_cltx.h's inline
code) are taken from the headers' text.

Environment: PMTX_SO (libpmtx.so), PMTX_STATIC (libpmtx.a),
PMTX_INCLUDE (include/), CC.
"""
import glob
import os
import re
import subprocess

import pytest

AUX_LINE = re.compile(r"^/\* (?P<file>.+?):\d+:N[CF] \*/ extern .*?"
                      r"\b(?P<name>\w+) \(")
EXTERN_VAR = re.compile(r"\bextern\s+[\w\s\*]*?\b(\w+)\s*;")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def env(name):
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set (run through CTest)")
    return value


def public_headers(include_dir):
    return sorted(glob.glob(os.path.join(include_dir, "pmtx*.h")))


def declared_functions(include_dir, cc, tmp_path):
    headers = public_headers(include_dir)
    src = tmp_path / "all_headers.c"
    src.write_text("".join(f'#include "{h}"\n' for h in headers))
    aux = tmp_path / "all_headers.aux"
    subprocess.run([cc, "-std=gnu11", "-fsyntax-only", "-I", include_dir,
                    "-aux-info", str(aux), str(src)], check=True)
    real = {os.path.realpath(h) for h in headers}
    names = set()
    for line in aux.read_text().splitlines():
        m = AUX_LINE.match(line)
        if m and os.path.realpath(m["file"]) in real:
            names.add(m["name"])
    return names


def declared_variables(include_dir):
    names = set()
    for h in public_headers(include_dir):
        with open(h) as f:
            names.update(EXTERN_VAR.findall(COMMENT.sub("", f.read())))
    return names


def nm_symbols(args):
    out = subprocess.run(["nm"] + args, check=True, capture_output=True,
                         text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        # "address type name"; global defined types are upper case.
        if len(parts) == 3 and parts[1] in "TDBRVWGS":
            names.add(parts[2])
    return names


def mismatch(declared, exported):
    """Problems, as text: exported but undeclared, declared but hidden."""
    problems = [f"exported but not declared in a public header: {s}"
                for s in sorted(exported - declared)]
    problems += [f"declared in a public header but not exported: {s}"
                 for s in sorted(declared - exported)]
    return problems


@pytest.fixture(scope="module")
def declared(tmp_path_factory):
    inc = env("PMTX_INCLUDE")
    tmp = tmp_path_factory.mktemp("exports")
    return declared_functions(inc, env("CC"), tmp) | declared_variables(inc)


def test_exported_symbols_are_exactly_the_public_declarations(declared):
    exported = nm_symbols(["-D", "--defined-only", env("PMTX_SO")])
    assert "pmtx_begin" in declared and "pmtx__trace_on" in declared
    assert mismatch(declared, exported) == []


def test_internal_symbols_of_the_library_are_hidden(declared):
    # The same objects make libpmtx.a, whose global symbols include the
    # internal ones (pmtx_checksum, ...): none of those may leak.
    internal = nm_symbols(["--defined-only", env("PMTX_STATIC")]) - declared
    exported = nm_symbols(["-D", "--defined-only", env("PMTX_SO")])
    assert "pmtx_checksum" in internal
    assert internal & exported == set()


def test_mismatch_reports_extra_and_missing_symbols():
    problems = mismatch({"pmtx_a", "pmtx_b"}, {"pmtx_a", "pmtx_leak"})
    assert problems == [
        "exported but not declared in a public header: pmtx_leak",
        "declared in a public header but not exported: pmtx_b"]


def test_aux_info_parser_ignores_static_inline_functions(tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "pmtx_probe.h").write_text(
        "int pmtx_probe_fn(int (*cb)(int x), void *arg);\n"
        "static inline int pmtx_probe_inline(void) { return 0; }\n"
        "extern int pmtx_probe_var;\n")
    work = tmp_path / "work"
    work.mkdir()
    assert declared_functions(str(inc), env("CC"), work) == {"pmtx_probe_fn"}
    assert declared_variables(str(inc)) == {"pmtx_probe_var"}
