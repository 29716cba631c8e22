# SPDX-License-Identifier: BSD-3-Clause
"""redis-cli and redis-benchmark (Debian's redis-tools) against pmkv."""
import shutil
import subprocess

import pytest
import redis

CLI = shutil.which("redis-cli")
BENCH = shutil.which("redis-benchmark")
pytestmark = pytest.mark.skipif(not CLI or not BENCH,
                                reason="redis-tools is not installed")


def cli(server, *args, stdin=None):
    r = subprocess.run([CLI, "-p", str(server.port)] + list(args),
                       input=stdin, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_commands(server, r):
    assert cli(server, "PING") == b"PONG\n"
    assert cli(server, "SET", "a", "hello world") == b"OK\n"
    assert cli(server, "GET", "a") == b"hello world\n"
    assert cli(server, "INCRBY", "n", "41") == b"41\n"
    assert cli(server, "GET", "nosuch") == b"\n"
    assert cli(server, "--no-raw", "GET", "nosuch") == b"(nil)\n"
    assert cli(server, "MGET", "a", "n") == b"hello world\n41\n"
    assert cli(server, "DBSIZE") == b"2\n"
    # byte for byte what redis-cli prints for Redis 7.0's own reply
    assert cli(server, "NOSUCH", "x") == (
        b"ERR unknown command 'NOSUCH', with args beginning with: 'x' \n\n")


def test_lines_from_stdin(server, r):
    out = cli(server, stdin=b"SET x 1\nINCR x\nGET x\nDEL x\n")
    assert out == b"OK\n2\n2\n1\n"


def test_value_from_stdin(server, r):
    cli(server, "-x", "SET", "blob", stdin=b"\x00\x01binary\n")
    assert r.get("blob") == b"\x00\x01binary\n"


def test_pipe_mass_insertion(server, r):
    n = 5000
    data = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\nkey:%d\r\n$%d\r\nv%d\r\n"
                    % (len(b"key:%d" % i), i, len(b"v%d" % i), i)
                    for i in range(n))
    out = cli(server, "--pipe", stdin=data)
    assert b"errors: 0, replies: %d" % n in out
    assert r.dbsize() == n
    assert r.get("key:4321") == b"v4321"


def test_scan_and_unix_socket(server, r):
    for i in range(50):
        r.set("s:%d" % i, i)
    r.set("other", 1)
    out = cli(server, "--scan", "--pattern", "s:*")
    assert sorted(out.split()) == sorted(b"s:%d" % i for i in range(50))
    r2 = subprocess.run([CLI, "-s", server.unixsocket, "GET", "s:7"],
                        capture_output=True, timeout=30)
    assert r2.stdout == b"7\n"


def test_info(server, r):
    out = cli(server, "INFO", "persistence")
    assert b"pmkv_every_write_durable:1" in out


@pytest.mark.parametrize("pipeline", ["1", "16"])
def test_redis_benchmark_runs_without_errors(server, r, pipeline):
    res = subprocess.run(
        [BENCH, "-p", str(server.port), "-t", "set,get", "-n", "3000",
         "-c", "4", "-r", "1000", "-d", "64", "-P", pipeline, "-q"],
        capture_output=True, timeout=120)
    assert res.returncode == 0, res.stderr
    out = res.stdout.decode()
    assert "SET:" in out and "GET:" in out and "requests per second" in out
    assert "ERR" not in out + res.stderr.decode()
    assert 0 < r.dbsize() <= 1000
    assert len(r.get(r.keys("key:*")[0])) == 64
