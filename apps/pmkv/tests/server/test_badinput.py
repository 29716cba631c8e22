# SPDX-License-Identifier: BSD-3-Clause
"""Bad input over raw sockets: huge and negative declared lengths, half
requests, garbage, inline quoting errors, and more clients than
--maxclients. Each gets Redis's error (or a silent wait for the rest of a
half request), the server stays up, and what was stored stays."""
import socket
import time

import pytest
import redis

from kvserver import raw, wait_until


@pytest.fixture
def stored(server):
    c = redis.Redis(port=server.port, socket_timeout=10)
    c.flushall()
    c.set("keep", "me")
    yield c
    # the server is up, and nothing stored was lost
    assert c.get("keep") == b"me"
    assert c.dbsize() == 1
    c.close()


@pytest.mark.parametrize("req,reply", [
    (b"*1\r\n$99999999999\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$-5\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*99999999999\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*2\r\nx\r\n", b"-ERR Protocol error: expected '$', got 'x'\r\n"),
    # as Redis, the two bytes after a bulk are skipped, not checked
    (b"*1\r\n$3\r\nSETx\r\n",
     b"-ERR wrong number of arguments for 'set' command\r\n"),
    (b"SET \"a b\r\n",
     b"-ERR Protocol error: unbalanced quotes in request\r\n"),
    (b"x" * (70 << 10), b"-ERR Protocol error: too big inline request\r\n"),
    (b"*" + b"1" * (70 << 10),
     b"-ERR Protocol error: too big mbulk count string\r\n"),
    (b"*1\r\n$" + b"1" * (70 << 10),
     b"-ERR Protocol error: too big bulk count string\r\n"),
])
def test_protocol_errors_close_only_that_client(server, stored, req, reply):
    assert raw(server.port, req, 1.0) == reply


def test_requests_before_an_error_are_run(server, stored):
    got = raw(server.port, b"SET a 1\r\nGET a\r\n*1\r\n$-7\r\nGET a\r\n")
    assert got == (b"+OK\r\n$1\r\n1\r\n"
                   b"-ERR Protocol error: invalid bulk length\r\n")
    assert stored.get("a") == b"1"
    stored.delete("a")


def test_half_request_waits_and_others_go_on(server, stored):
    with socket.create_connection(("127.0.0.1", server.port), 5) as s:
        s.sendall(b"*3\r\n$3\r\nSET\r\n$4\r\nhalf\r\n$10\r\n12345")
        time.sleep(0.2)
        assert stored.exists("half") == 0  # not run, not stored
        assert stored.get("keep") == b"me"  # others served meanwhile
        s.sendall(b"67890\r\n")
        s.settimeout(5)
        assert s.recv(100) == b"+OK\r\n"
    assert stored.get("half") == b"1234567890"
    stored.delete("half")


def test_byte_at_a_time(server, stored):
    req = b"*3\r\n$3\r\nSET\r\n$2\r\nbt\r\n$3\r\nv\x00v\r\n*2\r\n$3\r\nGET\r\n$2\r\nbt\r\n"
    with socket.create_connection(("127.0.0.1", server.port), 5) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(len(req)):
            s.sendall(req[i:i + 1])
        s.settimeout(5)
        want = b"+OK\r\n$3\r\nv\x00v\r\n"
        got = b""
        while len(got) < len(want):
            got += s.recv(100)
        assert got == want
    stored.delete("bt")


def test_garbage_then_clean_client(server, stored):
    import random
    rnd = random.Random(7)
    for _ in range(20):
        raw(server.port, bytes(rnd.randrange(256) for _ in range(300)), 0.05)
    assert stored.ping()


def test_more_clients_than_maxclients(make_server):
    s = make_server("--maxclients", "4")
    keep = redis.Redis(port=s.port)
    keep.set("k", "v")
    # the start-up probe's connection is gone: only `keep` is served
    assert wait_until(
        lambda: keep.info("clients")["connected_clients"] == 1, 5)
    held = [socket.create_connection(("127.0.0.1", s.port), 5)
            for _ in range(3)]
    for h in held:  # each is served
        h.sendall(b"PING\r\n")
        h.settimeout(5)
        assert h.recv(100) == b"+PONG\r\n"
    # read before writing: a request the refused client sent could reach
    # the server after it closed, and the reset lose the reply (as Redis)
    extra = raw(s.port, b"", 1.0)
    assert extra == b"-ERR max number of clients reached\r\n"
    assert keep.get("k") == b"v"  # the others are untouched
    for h in held:
        h.close()
    assert wait_until(
        lambda: keep.info("clients")["connected_clients"] == 1, 5)
    assert raw(s.port, b"PING\r\n", 0.5) == b"+PONG\r\n"
    info = keep.info("stats")
    assert info["rejected_connections"] == 1


def rss_anon_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    raise AssertionError("no RssAnon")


def test_closed_connections_leave_no_memory_behind(server, stored):
    """A connection that wrote a 100 KB value and closed leaves nothing
    behind: under a thread per client its thread's buffers (the journal
    backend's record and line list among them) are freed when it exits.
    300 such connections after 50 to warm up: a leak of 126 KB each would
    be 37 MB, and the bound is 8 MB."""
    value = b"v" * 100000

    def connections(n):
        for i in range(n):
            c = redis.Redis(port=server.port, socket_timeout=10)
            assert c.set("big%d" % (i % 4), value)
            c.close()

    try:
        connections(50)
        before = rss_anon_kb(server.proc.pid)
        connections(300)
        assert wait_until(lambda: rss_anon_kb(server.proc.pid) - before
                          < 8 << 10, 5), (before,
                                          rss_anon_kb(server.proc.pid))
    finally:
        stored.delete("big0", "big1", "big2", "big3")


def test_flood_of_connections(server, stored):
    socks = []
    try:
        for _ in range(200):
            socks.append(socket.create_connection(("127.0.0.1", server.port),
                                                  5))
        for s in socks[::20]:
            s.sendall(b"GET keep\r\n")
            s.settimeout(5)
            assert s.recv(100) == b"$2\r\nme\r\n"
    finally:
        for s in socks:
            s.close()
