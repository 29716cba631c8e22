# SPDX-License-Identifier: BSD-3-Clause
"""Worker threads (-t 4) under contention: 8 connections on a handful of
keys, so that most requests find their key's stripe (store_int.h), or
memcached's item lock, taken by another worker.

No update may be lost: every incr answers a distinct value and the
counters end at the number of increments sent; a cas succeeds only on the
unique it read, so of 8 cas sent at once with one unique exactly one is
STORED, and each key ends at its count of rounds; every STORED append is in the value once. Every loop is bounded in count, every
read has a timeout, the threads a join deadline (apptest.run_threads).
Against memcached the same assertions hold (the control that they are
the protocol's, not pmcached's).
"""
import random
import re
import threading

from apptest import run_threads  # on sys.path: mcserver.py

THREADS = "4"         # server worker threads
CONNS = 8             # client connections, one client thread each
KEYS = 3              # per test: few keys, many requests each
INCR_BATCHES = 60     # per connection: batches of ...
INCR_DEPTH = 8        # ... pipelined incr
CAS_ROUNDS = 90       # gets by all, then cas by all, at once
APPENDS = 150         # per connection
JOIN_TIMEOUT = 120    # seconds, per thread


def hammer(srv, work):
    """work(conn, n, rng) on CONNS connections at once; the errors."""
    errors = []

    def one(n):
        c = srv.connect()
        try:
            work(c, n, random.Random(n))
        except Exception as e:     # an assertion too: reported below
            errors.append("connection %d: %r" % (n, e))
        finally:
            c.close()

    run_threads(one, CONNS, timeout=JOIN_TIMEOUT)
    return errors


def seed_keys(srv, prefix, value=b"0"):
    c = srv.connect()
    keys = [b"%s%d" % (prefix, k) for k in range(KEYS)]
    for k in keys:
        c.set(k, value)
    return c, keys


def test_incr_loses_no_update_under_contention(make_server):
    srv = make_server("-t", THREADS)
    c, keys = seed_keys(srv, b"ctr")
    seen = {k: [] for k in keys}     # list.append is atomic in CPython

    def work(conn, n, rng):
        for _ in range(INCR_BATCHES):
            batch = [rng.choice(keys) for _ in range(INCR_DEPTH)]
            conn.send(b"".join(b"incr %s 1\r\n" % k for k in batch))
            for k in batch:
                line = conn.readline()
                assert re.fullmatch(rb"\d+\r\n", line), line
                seen[k].append(int(line))

    assert hammer(srv, work) == []
    total = 0
    for k in keys:
        n = len(seen[k])
        total += n
        # each increment answered a value of its own: 1 .. n, once each
        assert sorted(seen[k]) == list(range(1, n + 1)), k
        assert c.get_value(k) == (0, b"%d" % n)
    assert total == CONNS * INCR_BATCHES * INCR_DEPTH
    c.close()


def test_cas_succeeds_once_per_unique_under_contention(make_server):
    """Per round, every connection reads the key's unique, then all send
    their cas with it at once: exactly one may be STORED."""
    srv = make_server("-t", THREADS)
    c, keys = seed_keys(srv, b"cas")
    step = threading.Barrier(CONNS, timeout=JOIN_TIMEOUT / 4)
    results = []                      # (round, value read, stored)

    def work(conn, n, rng):
        for r in range(CAS_ROUNDS):
            k = keys[r % KEYS]
            conn.send(b"gets %s\r\n" % k)
            m = re.fullmatch(rb"VALUE \S+ 0 (\d+) (\d+)\r\n",
                             conn.readline())
            assert m
            value = int(conn.recv_exact(int(m.group(1)) + 2))
            conn.expect(b"END\r\n")
            new = b"%d" % (value + 1)
            step.wait()               # every unique read: now the cas
            conn.send(b"cas %s 0 0 %d %s\r\n%s\r\n"
                      % (k, len(new), m.group(2), new))
            reply = conn.readline()
            assert reply in (b"STORED\r\n", b"EXISTS\r\n"), reply
            results.append((r, value, reply == b"STORED\r\n"))
            step.wait()               # every cas answered: next round

    assert hammer(srv, work) == []
    assert len(results) == CONNS * CAS_ROUNDS
    for r in range(CAS_ROUNDS):
        mine = [(v, won) for rr, v, won in results if rr == r]
        assert [v for v, _ in mine] == [r // KEYS] * CONNS, r
        assert sum(won for _, won in mine) == 1, r
    for i, k in enumerate(keys):
        rounds = len(range(i, CAS_ROUNDS, KEYS))
        assert c.get_value(k) == (0, b"%d" % rounds)
    c.close()


def test_appends_are_all_kept_under_contention(make_server):
    srv = make_server("-t", THREADS)
    c, keys = seed_keys(srv, b"app", b"")
    sent = {k: [] for k in keys}

    def work(conn, n, rng):
        for i in range(APPENDS):
            k = rng.choice(keys)
            token = b"<%d.%d>" % (n, i)
            conn.send(b"append %s 0 0 %d\r\n%s\r\n" % (k, len(token), token))
            assert conn.readline() == b"STORED\r\n"
            sent[k].append(token)

    assert hammer(srv, work) == []
    for k in keys:
        value = c.get_value(k)[1]
        tokens = re.findall(rb"<\d+\.\d+>", value)
        assert len(value) == sum(len(t) for t in sent[k]), k
        assert sorted(tokens) == sorted(sent[k]), k
        # one connection's appends to one key stay in its order
        for n in range(CONNS):
            mine = [t for t in tokens if t.startswith(b"<%d." % n)]
            assert mine == [t for t in sent[k] if t.startswith(b"<%d." % n)]
    c.close()
