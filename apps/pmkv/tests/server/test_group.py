# SPDX-License-Identifier: BSD-3-Clause
"""Group commit (group.c): pipelined requests and those of concurrent
clients share one transaction. Every reply is what the request would get
alone, in request order; a failing command fails alone (the group is
aborted and its requests run again one by one); commands that cannot run
in a group split it and still run in order."""
import socket
import threading
import time

import redis

from apptest import run_threads  # on sys.path: kvserver.py
from kvserver import Server, raw


def test_a_failing_command_fails_alone_in_a_pipeline(r):
    r.set("text", "abc")
    got = raw(r.connection_pool.connection_kwargs["port"],
              b"SET a 1\r\nINCR text\r\nSET b 2\r\nGET a\r\nINCR a\r\n"
              b"SET big x EX 0\r\nGET b\r\n")
    assert got == (b"+OK\r\n"
                   b"-ERR value is not an integer or out of range\r\n"
                   b"+OK\r\n$1\r\n1\r\n:2\r\n"
                   b"-ERR invalid expire time in 'set' command\r\n"
                   b"$1\r\n2\r\n")
    assert r.mget("a", "b", "text", "big") == [b"2", b"2", b"abc", None]


def test_a_pipeline_reads_its_own_writes(r):
    """Requests of one group read what the earlier ones wrote, whatever
    the runtime (store.c S3): format 1.x answered 6, 6, 6 under redo."""
    r.set("k", "xxxxx")
    r.set("c", "5")
    got = raw(r.connection_pool.connection_kwargs["port"],
              b"SET k yy\r\nGET k\r\nINCR c\r\nINCR c\r\nINCR c\r\n"
              b"GET c\r\nAPPEND k zz\r\nGET k\r\nSTRLEN k\r\n")
    assert got == (b"+OK\r\n$2\r\nyy\r\n:6\r\n:7\r\n:8\r\n$1\r\n8\r\n"
                   b":4\r\n$4\r\nyyzz\r\n:4\r\n")
    assert r.mget("k", "c") == [b"yyzz", b"8"]


def test_a_rerun_group_counts_its_commands_once(r):
    """A failing command aborts its group, whose requests run again one
    by one: INFO counts each request once all the same."""
    port = r.connection_pool.connection_kwargs["port"]
    r.set("text", "abc")
    before = r.info("stats")["total_commands_processed"]
    got = raw(port, b"SET a 1\r\nINCR text\r\nSET b 2\r\nGET a\r\n")
    assert got == (b"+OK\r\n"
                   b"-ERR value is not an integer or out of range\r\n"
                   b"+OK\r\n$1\r\n1\r\n")
    after = r.info("stats")["total_commands_processed"]
    # the pipeline's 4 requests and the INFO that reads the count
    assert after - before == 4 + 1


def test_ungroupable_commands_keep_their_place(r):
    """(A SCAN passes at most 10 x COUNT buckets, as Redis's: COUNT 1000
    covers the wrapped table's 4,096 in one call.)"""
    port = r.connection_pool.connection_kwargs["port"]
    got = raw(port, b"SET k 1\r\nDBSIZE\r\nFLUSHALL\r\nDBSIZE\r\nSET k 2\r\n"
                    b"KEYS *\r\nINCR k\r\nSCAN 0 COUNT 1000\r\nGET k\r\n")
    assert got == (b"+OK\r\n:1\r\n+OK\r\n:0\r\n+OK\r\n"
                   b"*1\r\n$1\r\nk\r\n:3\r\n"
                   b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n$1\r\n3\r\n")


def test_concurrent_pipelines_with_failures(r, server):
    """Eight clients pipeline INCRs of a shared counter, SETs of their own
    keys and, every tenth request, an INCR that must fail: every reply is
    right, and the counter counts every successful INCR."""
    r.set("bad", "not a number")
    rounds, per = 40, 30
    errors = []

    def client(t):
        c = redis.Redis(port=server.port, socket_timeout=30)
        try:
            for i in range(rounds):
                p = c.pipeline(transaction=False)
                for j in range(per):
                    if j % 10 == 9:
                        p.incr("bad")
                    elif j % 2:
                        p.set("k%d.%d" % (t, j), "%d.%d" % (i, j))
                    else:
                        p.incr("ctr")
                res = p.execute(raise_on_error=False)
                for j, v in enumerate(res):
                    if j % 10 == 9:
                        ok = isinstance(v, redis.ResponseError)
                    elif j % 2:
                        ok = v is True
                    else:
                        ok = isinstance(v, int) and v > 0
                    if not ok:
                        errors.append((t, i, j, v))
        finally:
            c.close()

    run_threads(client, 8, timeout=120)
    assert not errors
    incrs = sum(1 for j in range(per) if j % 10 != 9 and j % 2 == 0)
    assert int(r.get("ctr")) == 8 * rounds * incrs
    assert r.get("bad") == b"not a number"
    for t in range(8):
        assert r.get("k%d.1" % t) == b"%d.1" % (rounds - 1)


def test_connections_of_one_event_loop_share_group_commits(pmkv_bin,
                                                           tmp_path):
    """--io-threads 1: one event loop serves every connection. Requests
    that arrive on several connections in one turn of the loop run in one
    group commit (group.c G6), so some commit takes more than one
    connection; before, each connection committed alone in a loop."""
    s = Server(pmkv_bin, str(tmp_path), "--io-threads", "1").start()
    clients, per = 8, 200
    errors = []
    start = threading.Barrier(clients)

    def client(t):
        c = redis.Redis(port=s.port, socket_timeout=30)
        try:
            start.wait(30)
            for i in range(per):
                if c.set("k%d.%d" % (t, i), i) is not True:
                    errors.append((t, i))
        finally:
            c.close()

    try:
        run_threads(client, clients, timeout=120)
        assert not errors
        c = redis.Redis(port=s.port, socket_timeout=10)
        st = c.info("stats")
        assert st["pmkv_group_commands"] == clients * per
        assert st["pmkv_group_connections"] > st["pmkv_group_commits"]
        assert c.dbsize() == clients * per
        c.close()
    finally:
        s.kill()


def test_a_client_that_never_stops_sending_holds_up_no_one(pmkv_bin,
                                                           tmp_path):
    """--io-threads 1: a client streams pipelined PINGs (reading its
    replies on another thread) well past the query buffer limit (3 MiB
    with --proto-max-bulk-len 1mb). Its socket is readable in every turn
    of the loop, yet the loop's batch still runs: every PING is answered,
    the client is not cut off for an overfull buffer, and another
    client's SET is served meanwhile."""
    s = Server(pmkv_bin, str(tmp_path), "--io-threads", "1",
               "--proto-max-bulk-len", "1mb").start()
    chunk, chunks = b"PING\r\n" * 10000, 200  # 12 MB in all
    want = len(b"+PONG\r\n") * 10000 * chunks
    got = [0]
    sock = socket.create_connection(("127.0.0.1", s.port), 10)
    sock.settimeout(30)

    def read():
        while got[0] < want:
            b = sock.recv(1 << 20)
            if not b or b.startswith(b"-"):
                break
            got[0] += len(b)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        for i in range(chunks):
            sock.sendall(chunk)
            if i == chunks // 2:
                c = redis.Redis(port=s.port, socket_timeout=10)
                assert c.set("other", "served") is True
                c.close()
            assert time.monotonic() < deadline
        reader.join(60)
        assert got[0] == want
    finally:
        sock.close()
        reader.join(10)
        s.kill()


def test_a_client_that_sends_while_its_batch_waits_is_not_read_meanwhile(
        pmkv_bin, tmp_path):
    """--io-threads 1 with a commit delay (loop.c L5): a batch with a
    write waits for the loop's other connection (idle here) before it
    runs. A client that streams SETs past the query buffer limit (1 MiB
    and 2 KiB with --proto-max-bulk-len 1kb) meanwhile is not read until
    its batch has run (L4): it is not cut off for an overfull buffer, and
    every SET is answered."""
    s = Server(pmkv_bin, str(tmp_path), "--io-threads", "1",
               "--proto-max-bulk-len", "1kb", "--commit-delay",
               "10000").start()
    n = 400000  # 3.6 MB of inline SETs
    want = len(b"+OK\r\n") * n
    got = [0]
    idle = redis.Redis(port=s.port, socket_timeout=10)
    assert idle.ping()
    sock = socket.create_connection(("127.0.0.1", s.port), 10)
    sock.settimeout(60)

    def read():
        while got[0] < want:
            b = sock.recv(1 << 20)
            if not b or b"-" in b:
                break
            got[0] += len(b)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        sock.sendall(b"SET k v\r\n" * n)
        reader.join(90)
        assert got[0] == want
        assert idle.get("k") == b"v"
    finally:
        sock.close()
        reader.join(10)
        idle.close()
        s.kill()
