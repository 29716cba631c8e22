# SPDX-License-Identifier: BSD-3-Clause
"""Real clients against the server: libmemcached's memccapable (its ASCII
and binary protocol conformance tests), libmemcached's command-line
tools over the binary protocol, and pymemcache (its own integration
tests, and a few direct calls, including a multi-threaded load)."""
import os
import re
import subprocess
import sys

import pytest

from apptest import run_threads  # on sys.path: mcserver.py

MEMCCAPABLE = "/usr/bin/memccapable"
PYMEMCACHE_TESTS = "/usr/lib/python3/dist-packages/pymemcache/test"
HERE = os.path.dirname(os.path.abspath(__file__))
ASCII_TESTS = 27        # what memccapable 1.1.x runs with -a
ALL_TESTS = 54          # ... and without: the binary protocol's 27 too


def run_memccapable(server, *args):
    if not os.access(MEMCCAPABLE, os.X_OK):
        pytest.skip("memccapable is not installed (libmemcached-tools)")
    r = subprocess.run([MEMCCAPABLE, "-h", "127.0.0.1", "-p",
                        str(server.port), "-t", "5", *args],
                       capture_output=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    out = r.stdout.decode(errors="replace")
    # One line per test: "ascii set noreply       [pass]".
    results = re.findall(r"^((?:ascii|binary) [\w ]+?)\s+\[(\w+)\]\s*$",
                         out, re.M)
    failed = [name for name, verdict in results if verdict != "pass"]
    assert failed == [], out
    assert "All tests passed" in out, out
    assert r.returncode == 0, out + r.stderr.decode(errors="replace")
    return [name for name, _ in results]


def test_memccapable_ascii_tests_all_pass(server):
    assert len(run_memccapable(server, "-a")) == ASCII_TESTS


def test_memccapable_ascii_and_binary_tests_all_pass(server):
    """Without -a: both protocols on a server started with the default
    -B (auto: each connection's first byte decides)."""
    names = run_memccapable(server)
    assert len(names) == ALL_TESTS
    assert sum(n.startswith("binary ") for n in names) == ALL_TESTS // 2


def libmemcached_tool(server, tool, *args):
    """One of libmemcached's tools (Debian names them memc*) over the
    binary protocol: (exit status, stdout)."""
    path = "/usr/bin/memc" + tool
    if not os.access(path, os.X_OK):
        pytest.skip("%s is not installed (libmemcached-tools)" % path)
    r = subprocess.run([path, "--servers=127.0.0.1:%d" % server.port,
                        "--binary", *args], capture_output=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout


def test_libmemcached_tools_over_the_binary_protocol(server, tmp_path):
    small, large = tmp_path / "alpha", tmp_path / "beta"
    small.write_bytes(b"hello world")
    large.write_bytes(bytes(range(256)) * 400)   # 100 KiB, every byte
    assert libmemcached_tool(server, "flush") == (0, b"")
    assert libmemcached_tool(server, "cp", "--flag=7", str(small),
                             str(large)) == (0, b"")
    assert libmemcached_tool(server, "cat", "-F", "alpha") == (
        0, b"7\nhello world\n")
    assert libmemcached_tool(server, "cat", "beta") == (
        0, large.read_bytes() + b"\n")
    c = server.connect()   # the text protocol sees what memccp stored
    assert c.get_value("alpha") == (7, b"hello world")
    assert libmemcached_tool(server, "rm", "alpha") == (0, b"")
    assert c.get_value("alpha") is None
    assert libmemcached_tool(server, "cat", "alpha")[0] != 0
    rc, out = libmemcached_tool(server, "stat")
    stats = dict(re.findall(r"^\t(\w+): (.*)$", out.decode(), re.M))
    assert rc == 0 and stats["version"] == "1.6.18", out
    assert int(stats["cmd_set"]) >= 2 and int(stats["get_hits"]) >= 2
    assert libmemcached_tool(server, "flush") == (0, b"")
    assert libmemcached_tool(server, "cat", "beta")[0] != 0
    assert c.get_value("beta") is None
    c.close()


def test_pymemcache_integration_tests_pass(server, tmp_path):
    path = os.path.join(PYMEMCACHE_TESTS, "test_integration.py")
    if not os.path.exists(path):
        pytest.skip("pymemcache's tests are not installed")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [HERE] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    # Its conftest.py (next to the file) adds --server and --port;
    # settle_plugin orders the tests' connections (see its docstring).
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
         "-p", "settle_plugin", "-q",
         "-W", "ignore::pytest.PytestUnknownMarkWarning",
         "--rootdir", PYMEMCACHE_TESTS, path, "-m", "integration",
         "--server", "127.0.0.1", "--port", str(server.port),
         "-k", "not tls"],
        cwd=str(tmp_path), capture_output=True, timeout=120, env=env,
        stdin=subprocess.DEVNULL)
    out = r.stdout.decode(errors="replace")
    tail = out[-3000:] + r.stderr.decode(errors="replace")[-1000:]
    m = re.search(r"(\d+) passed", out)
    assert r.returncode == 0, tail
    assert m and int(m.group(1)) >= 40, tail
    assert not re.search(r"\d+ (failed|error)", out), tail


def pymemcache_client(server, **kw):
    try:
        from pymemcache.client.base import Client
    except ImportError:
        pytest.skip("pymemcache is not installed")
    return Client(("127.0.0.1", server.port), connect_timeout=3, timeout=5,
                  **kw)


def test_pymemcache_calls(server):
    c = pymemcache_client(server)
    try:
        c.flush_all()
        assert c.set("a", b"1", expire=0, noreply=False)
        assert c.set_many({"b": b"2", "c": b"3"}, noreply=False) == []
        assert c.get_many(["a", "b", "c", "nope"]) == {
            "a": b"1", "b": b"2", "c": b"3"}
        assert c.incr("a", 41) == 42
        assert c.decr("a", 2) == 40
        value, cas = c.gets("b")
        assert c.cas("b", b"22", cas, noreply=False) is True
        assert c.cas("b", b"23", cas, noreply=False) is False
        assert c.add("b", b"x", noreply=False) is False
        assert c.append("b", b"!", noreply=False) is True
        assert c.get("b") == b"22!"
        assert c.touch("b", 100, noreply=False) is True
        assert c.delete("b", noreply=False) is True
        assert c.get("b") is None
        assert c.version()
        # flush_all is lazy: curr_items may still count flushed items.
        assert int(c.stats()[b"curr_items"]) >= 2
    finally:
        c.close()


def test_concurrent_clients_see_their_own_writes(server):
    errors = []

    def worker(n):
        c = pymemcache_client(server)
        try:
            for i in range(300):
                key = "t%d-%d" % (n, i % 40)
                value = b"%d:%d" % (n, i)
                c.set(key, value, noreply=False)
                got = c.get(key)
                if got != value:
                    errors.append((key, value, got))
                    return
        except Exception as e:          # reported below, not lost
            errors.append(repr(e))
        finally:
            c.close()

    run_threads(worker, 8, timeout=60)
    assert errors == []
