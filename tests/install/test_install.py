# SPDX-License-Identifier: BSD-3-Clause
"""pmtx installs, and a program builds and runs against the installed copy.

`cmake --install` puts pmtx into a prefix under the build tree; then
examples/list.c is built out of tree twice, with `cc $(pkg-config --cflags
--libs pmtx)` and with the CMake project beside this file
(find_package(pmtx), target pmtx::pmtx), and both programs run against the
prefix's libpmtx.so.0: the dynamic loader's own trace (LD_DEBUG=libs) must
show it initialising that file. examples/leaderboard.cpp (on the C++
header, pmtx.hpp) is built and run the same two ways. Everything is
removed at the end.

Environment: PMTX_BUILD (the build tree), PMTX_SOURCE (the source tree),
PMTX_LIBDIR (CMAKE_INSTALL_LIBDIR, relative to the prefix), CC, CXX, CMAKE.
"""
import glob
import os
import re
import shutil
import subprocess

import pytest

LIB = os.environ.get("PMTX_LIBDIR", "lib")


def env(name):
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set (run through CTest)")
    return value


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True,
                          **kw)


@pytest.fixture(scope="module")
def prefix():
    build = env("PMTX_BUILD")
    root = os.path.join(build, "_install")
    shutil.rmtree(root, ignore_errors=True)
    run([env("CMAKE"), "--install", build, "--prefix", root])
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def work():
    root = os.path.join(env("PMTX_BUILD"), "_install_test")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def example(name="list.c"):
    return os.path.join(env("PMTX_SOURCE"), "examples", name)


def loaded_objects(prog, args, extra_env):
    """Run prog; return (stdout, files the dynamic loader initialised)."""
    e = dict(os.environ, LD_DEBUG="libs")
    e.pop("LD_LIBRARY_PATH", None)
    e.update(extra_env)
    p = run([prog] + args, env=e)
    inits = re.findall(r"calling init: (\S+)", p.stderr)
    return p.stdout, [os.path.realpath(f) for f in inits]


def check_runs_on_installed_library(prog, prefix, work, extra_env):
    region = os.path.join(work, os.path.basename(prog) + ".pmtx")
    args = ["--path", region, "--count", "5"]
    installed = os.path.realpath(os.path.join(prefix, LIB, "libpmtx.so.0"))
    for count in (5, 10):  # the second run reopens and recovers the region
        out, inits = loaded_objects(prog, args, extra_env)
        assert installed in inits, inits
        assert f"count={count}" in out, out
    assert "nodes in list=5 (consistent)" in out, out
    os.unlink(region)


def undefined_symbols(prog):
    out = run(["nm", "-D", "--undefined-only", prog]).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def test_prefix_holds_headers_libraries_commands_pages_and_packages(prefix):
    src = env("PMTX_SOURCE")
    expect = ["include/pmtx.h", "include/pmtx_trace.h",
              "include/pmtx_cltx.h", f"{LIB}/libpmtx.a", f"{LIB}/libpmtx.so",
              f"{LIB}/libpmtx.so.0", f"{LIB}/pkgconfig/pmtx.pc",
              f"{LIB}/cmake/pmtx/pmtxConfig.cmake",
              f"{LIB}/cmake/pmtx/pmtxConfigVersion.cmake",
              "bin/pmtx", "bin/pmtx-bench", "share/man/man3/pmtx.3"]
    for page in glob.glob(os.path.join(src, "docs", "man", "*.[13]")):
        name = os.path.basename(page)
        expect.append(f"share/man/man{name[-1]}/{name}")
    for h in glob.glob(os.path.join(src, "include", "pmtx*.h*")):
        expect.append("include/" + os.path.basename(h))
    missing = [f for f in expect
               if not os.path.exists(os.path.join(prefix, f))]
    assert missing == []
    assert os.path.islink(os.path.join(prefix, LIB, "libpmtx.so.0"))


def test_prefix_holds_nothing_built_for_tests_only(prefix):
    names = [f for _, _, files in os.walk(prefix) for f in files]
    assert [n for n in names if "mut" in n] == []


def test_shared_library_soname_is_libpmtx_so_0(prefix):
    dyn = run(["readelf", "-d", os.path.join(prefix, LIB, "libpmtx.so")])
    assert "Library soname: [libpmtx.so.0]" in dyn.stdout


def test_pkg_config_build_runs_on_installed_shared_library(prefix, work):
    pc_env = dict(os.environ,
                  PKG_CONFIG_PATH=os.path.join(prefix, LIB, "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "pmtx"],
                env=pc_env).stdout.split()
    assert f"-I{prefix}/include" in flags
    prog = os.path.join(work, "list_pc")
    run([env("CC"), "-std=gnu11", "-o", prog, example()] + flags)
    # Linked to the library, not to a copy of it.
    assert "pmtx_begin" in undefined_symbols(prog)
    libdir = os.path.join(prefix, LIB)
    check_runs_on_installed_library(prog, prefix, work,
                                    {"LD_LIBRARY_PATH": libdir})


@pytest.fixture(scope="module")
def consumer(prefix, work):
    """The build tree of tests/install/CMakeLists.txt."""
    build = os.path.join(work, "consumer")
    cmake = env("CMAKE")
    run([cmake, "-S", os.path.join(env("PMTX_SOURCE"), "tests", "install"),
         "-B", build, "-G", "Ninja", f"-DCMAKE_C_COMPILER={env('CC')}",
         f"-DCMAKE_CXX_COMPILER={env('CXX')}",
         f"-DCMAKE_PREFIX_PATH={prefix}", f"-DPMTX_EXAMPLE={example()}",
         f"-DPMTX_EXAMPLE_CXX={example('leaderboard.cpp')}"])
    run([cmake, "--build", build])
    return build


def test_find_package_build_runs_on_installed_shared_library(prefix, work,
                                                             consumer):
    build = consumer
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        cache = f.read()
    assert f"pmtx_DIR:PATH={prefix}/{LIB}/cmake/pmtx" in cache
    prog = os.path.join(build, "list_shared")
    assert "pmtx_begin" in undefined_symbols(prog)
    # No LD_LIBRARY_PATH: CMake gives the program the run path.
    check_runs_on_installed_library(prog, prefix, work, {})


def test_find_package_static_target_needs_no_shared_library(work, consumer):
    prog = os.path.join(consumer, "list_static")
    assert "libpmtx" not in run(["readelf", "-d", prog]).stdout
    region = os.path.join(work, "static.pmtx")
    out = run([prog, "--path", region, "--count", "3"]).stdout
    assert "count=3" in out
    os.unlink(region)


def check_cpp_runs_on_installed_library(prog, prefix, work, extra_env):
    region = os.path.join(work, os.path.basename(prog) + ".pmtx")
    installed = os.path.realpath(os.path.join(prefix, LIB, "libpmtx.so.0"))
    for cmd in (["add", "ada", "36.5"], ["add", "bob", "12"]):
        loaded_objects(prog, ["--path", region] + cmd, extra_env)
    out, inits = loaded_objects(prog, ["--path", region, "top", "2"],
                                extra_env)
    assert installed in inits, inits
    assert out == "1 ada 36.5\n2 bob 12\n", out
    os.unlink(region)


def test_cpp_header_builds_with_pkg_config_and_runs(prefix, work):
    assert os.path.exists(os.path.join(prefix, "include", "pmtx.hpp"))
    pc_env = dict(os.environ,
                  PKG_CONFIG_PATH=os.path.join(prefix, LIB, "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "pmtx"],
                env=pc_env).stdout.split()
    prog = os.path.join(work, "leaderboard_pc")
    run([env("CXX"), "-std=c++17", "-Wall", "-Wextra", "-Werror", "-o",
         prog, example("leaderboard.cpp")] + flags)
    # The header adds no symbol of its own: pmtx's come from the library.
    assert "pmtx_map_put" in undefined_symbols(prog)
    libdir = os.path.join(prefix, LIB)
    check_cpp_runs_on_installed_library(prog, prefix, work,
                                        {"LD_LIBRARY_PATH": libdir})


def test_cpp_header_builds_with_find_package_and_runs(prefix, work,
                                                       consumer):
    prog = os.path.join(consumer, "cpp_shared")
    assert "pmtx_map_put" in undefined_symbols(prog)
    check_cpp_runs_on_installed_library(prog, prefix, work, {})
