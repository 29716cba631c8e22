# SPDX-License-Identifier: BSD-3-Clause
"""pmkv on the journal backend keeps no more anonymous memory than its
journal allows (persist/journal.c invariants 10-13): the pages a
checkpoint wrote into the region file are given back.

Run by the journal suites only (PMKV_ARGS with --backend journal), each
test with a server of its own and a 4 MiB journal. The server's RssAnon
(/proc/PID/status) is read once it accepts connections (its baseline)
and after every write; four journals' worth of 64 KiB values must leave
it under the baseline plus twice the journal. What the server keeps
beside the region's pages lies within the other journal's worth: the
backend's buffers (1.25 MiB, first touched by the first checkpoint), a
connection's query buffer (64 KiB), a thread's record buffer (one
transaction's lines). With PMTX_JOURNAL_DROP=0 (every page kept until
close) the same writes pass the bound: the measure can fail. Every value
is read back, and again after kill -9 and a restart (the journal
replayed).
"""
import os
import shlex
import signal

import pytest
import redis

JOURNAL = 4 << 20
VALUE = 64 << 10
NVALUES = 4 * JOURNAL // VALUE
BOUND = 2 * JOURNAL


def _on_journal():
    a = shlex.split(os.environ.get("PMKV_ARGS", ""))
    return any(x == "--backend" and y == "journal" for x, y in zip(a, a[1:]))


pytestmark = pytest.mark.skipif(not _on_journal(),
                                reason="a test of the journal backend")


def rss_anon(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) << 10
    raise AssertionError("no RssAnon for %d" % pid)


def value(i):
    return (b"%08d" % i) * (VALUE // 8)


def write_four_journals(make_server, monkeypatch, drop):
    """The server's largest RssAnon growth over its baseline while
    NVALUES values are written; every value read back, after a kill -9
    too."""
    monkeypatch.setenv("PMTX_JOURNAL_SIZE", str(JOURNAL))
    monkeypatch.setenv("PMTX_JOURNAL_DROP", "1" if drop else "0")
    s = make_server()
    c = redis.Redis(host="127.0.0.1", port=s.port, socket_timeout=30)
    assert c.ping()
    pid = s.proc.pid
    base = rss_anon(pid)
    peak = 0
    for i in range(NVALUES):
        assert c.set("v%d" % i, value(i))
        peak = max(peak, rss_anon(pid) - base)
    for i in range(NVALUES):
        assert c.get("v%d" % i) == value(i)
    c.close()
    s.kill(signal.SIGKILL)
    s.start()
    c = redis.Redis(host="127.0.0.1", port=s.port, socket_timeout=30)
    assert c.dbsize() == NVALUES
    for i in range(NVALUES):
        assert c.get("v%d" % i) == value(i)
    c.close()
    print("pages %s: RssAnon grew by at most %d KiB (bound %d KiB)"
          % ("given back" if drop else "kept", peak >> 10, BOUND >> 10))
    return peak


def test_anonymous_memory_stays_within_twice_the_journal(make_server,
                                                         monkeypatch):
    assert write_four_journals(make_server, monkeypatch, True) < BOUND


def test_without_the_give_back_the_same_writes_pass_the_bound(make_server,
                                                              monkeypatch):
    assert write_four_journals(make_server, monkeypatch, False) >= BOUND
