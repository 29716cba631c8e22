# SPDX-License-Identifier: BSD-3-Clause
"""MULTI, EXEC, DISCARD, WATCH and UNWATCH.

Against Redis 7.0 byte for byte (test_differential's pair: one connection
to each server, the same requests), with a second pair of connections for
the writes of another client that WATCH must see; then pmkv's own
guarantee, which Redis's AOF does not give: an EXEC is one transaction,
so after a kill -9 all of it or none of it is there (multi.c M2).
"""
import os
import random
import signal
import socket
import threading
import time

import pytest
import redis

from rawresp import Conn, encode
from test_differential import Pair, b, pair, redis_server  # noqa: F401

pytestmark = pytest.mark.features

LONG = os.environ.get("PMTX_LONG_TESTS") == "1"
KILLS = int(os.environ.get("PMKV_MULTI_KILLS", 200 if LONG else 20))

CASES = [
    [b("MULTI"), b("SET", "a", "1"), b("INCR", "a"), b("GET", "a"),
     b("EXEC"), b("GET", "a")],
    # a command's own error is its reply; the others apply
    [b("SET", "s", "x"), b("MULTI"), b("INCR", "s"), b("SET", "t", "1"),
     b("INCRBY", "t", "x"), b("EXEC"), b("GET", "t")],
    # refused while queuing: EXECABORT, nothing runs
    [b("MULTI"), b("SET", "u", "1"), b("NOSUCH"), b("EXEC"), b("GET", "u")],
    [b("MULTI"), b("SET", "u", "1"), b("GET"), b("EXEC"), b("EXISTS", "u")],
    [b("MULTI"), b("MULTI"), b("SET", "v", "1"), b("EXEC"), b("GET", "v")],
    [b("EXEC"), b("DISCARD"), b("MULTI"), b("DISCARD"), b("EXEC")],
    [b("MULTI"), b("SET", "w", "1"), b("DISCARD"), b("EXISTS", "w")],
    [b("MULTI"), b("WATCH", "a"), b("EXEC")],
    [b("MULTI"), b("EXEC")],
    [b("MULTI"), b("PING"), b("ECHO", "hi"), b("DBSIZE"), b("EXEC")],
    # a FLUSHALL inside a transaction, and the writes after it
    [b("SET", "f", "1"), b("MULTI"), b("FLUSHALL"), b("SET", "g", "2"),
     b("EXEC"), b("DBSIZE"), b("EXISTS", "f"), b("GET", "g")],
    # WATCH: by this client's own writes too
    [b("WATCH", "x"), b("SET", "x", "1"), b("MULTI"), b("GET", "x"),
     b("EXEC")],
    [b("WATCH", "x"), b("UNWATCH"), b("SET", "x", "2"), b("MULTI"),
     b("GET", "x"), b("EXEC")],
    [b("WATCH", "x", "y"), b("MULTI"), b("SET", "y", "1"), b("EXEC"),
     b("GET", "y")],
    # EXEC and DISCARD end the watch
    [b("WATCH", "x"), b("MULTI"), b("EXEC"), b("SET", "x", "3"),
     b("MULTI"), b("GET", "x"), b("EXEC")],
    [b("WATCH", "x"), b("MULTI"), b("DISCARD"), b("SET", "x", "4"),
     b("MULTI"), b("GET", "x"), b("EXEC")],
    [b("WATCH"), b("UNWATCH", "x"), b("MULTI", "x"), b("EXEC", "x")],
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_case(pair, case):  # noqa: F811
    pair.run(CASES[case])


def test_watch_sees_another_client(pair, server, redis_server):  # noqa: F811
    other = Pair(server.port, redis_server.port)
    try:
        for watched, touch in [("k", b("SET", "k", "1")),
                               ("k", b("DEL", "k")),
                               ("k", b("INCR", "k")),
                               ("k", b("SET", "other", "1")),
                               ("k", b("FLUSHALL")),
                               ("k", b("EXPIRE", "k", "100"))]:
            pair.run([b("SET", "k", "0"), b("WATCH", watched)])
            other.run([touch])
            pair.run([b("MULTI"), b("INCR", "k"), b("EXEC"),
                      b("GET", "k")])
    finally:
        other.close()


def test_watch_sees_a_write_whose_keys_move(pair, server,  # noqa: F811
                                            redis_server):
    """LMPOP's keys follow numkeys (COMMAND's key positions are 0)."""
    other = Pair(server.port, redis_server.port)
    try:
        pair.run([b("RPUSH", "l", "a", "b"), b("WATCH", "l")])
        other.run([b("LMPOP", "1", "l", "LEFT")])
        pair.run([b("MULTI"), b("LLEN", "l"), b("EXEC")])
    finally:
        other.close()


def test_watched_key_that_expires(pair):  # noqa: F811
    pair.run([b("SET", "e", "1", "PX", "50"), b("WATCH", "e")])
    time.sleep(0.2)
    pair.run([b("MULTI"), b("SET", "z", "1"), b("EXEC"), b("EXISTS", "z")])


def test_exec_is_isolated(server):
    """No other client's command runs between two of an EXEC's (M2):
    a reader never sees a and b apart."""
    c = redis.Redis(port=server.port, socket_timeout=20)
    c.mset({"a": 0, "b": 0})
    stop = threading.Event()
    seen = []

    def reader():
        r = redis.Redis(port=server.port, socket_timeout=20)
        end = time.monotonic() + 20
        while not stop.is_set() and time.monotonic() < end:
            seen.append(tuple(r.mget("a", "b")))

    t = threading.Thread(target=reader)
    t.start()
    for _ in range(300):
        p = c.pipeline(transaction=True)
        p.incr("a").incr("b")
        p.execute()
    stop.set()
    t.join()
    assert seen and all(a == b for a, b in seen)
    assert c.mget("a", "b") == [b"300", b"300"]


def _exec_loop(port, n, acked, stop):
    """EXECs of n INCRs, one per key, over a raw socket (the request
    encoded once, so the server spends most of each round in the EXEC),
    until the server dies; acked[0]: the EXECs acknowledged."""
    req = encode(b("MULTI")) + b"".join(
        encode(b("INCR", "m%d" % i)) for i in range(n)) + encode(b("EXEC"))
    try:
        c = Conn(port, timeout=5)
        while not stop.is_set():
            c.sock.sendall(req)
            for _ in range(n + 1):
                c.reply()
            if not c.reply().startswith(b"*%d" % n):
                return
            acked[0] += 1
    except (ConnectionError, OSError, socket.timeout):
        pass


def all_or_nothing_after_kill9(make_server, loop, keys, seed, kills, what):
    """kill -9 kills times while loop(port, acked, stop) sends requests that
    each add 1 to every one of keys: after each restart every key holds
    the same value (all of a request or none of it), and no acknowledged
    one is lost (the one in flight may have landed)."""
    s = make_server()
    rnd = random.Random(seed)
    done = 0
    for _ in range(kills):
        acked, stop = [0], threading.Event()
        t = threading.Thread(target=loop, args=(s.port, acked, stop))
        t.start()
        time.sleep(rnd.uniform(0.02, 0.15))
        s.kill(signal.SIGKILL)
        stop.set()
        t.join(20)
        s.start()
        vals = redis.Redis(port=s.port).mget(keys)
        got = {int(v or 0) for v in vals}
        assert len(got) == 1, "%s applied in part: %r" % (what, sorted(got))
        v = got.pop()
        assert v >= done + acked[0], (v, done, acked[0])
        assert v <= done + acked[0] + 1  # the one in flight, at most
        done = v
    assert done > 0


def test_exec_all_or_nothing_after_kill9(make_server):
    """kill -9 while a client sends EXECs of 400 INCRs."""
    n = 400
    all_or_nothing_after_kill9(
        make_server, lambda port, acked, stop: _exec_loop(port, n, acked,
                                                          stop),
        ["m%d" % i for i in range(n)], 7, KILLS, "an EXEC")
