# SPDX-License-Identifier: BSD-3-Clause
"""The text protocol's errors and edge cases: pmcached against Debian's
memcached 1.6.18, both started by this module (with the same flags:
default, and -C), the same raw requests, byte for byte.

Covered: malformed numbers in every command that reads one (CLIENT_ERROR
bad command line format, invalid exptime, invalid delta, ...); negative
and overflowing lengths, flags, expiry times and uniques; noreply on
every command that takes it (and where memcached answers an error all
the same); flush_all now, with a delay, with an absolute time already
past, a pending delay replaced or dropped; CAS after flush_all (old and
new uniques, with and without CAS: -C); touch, gat and gats with bad
times; incr/decr on values memcached reads as numbers; stats detail,
stats cachedump, lru_crawler's and slabs' replies.

Each case runs on a connection of its own, after the keys it uses are
deleted, and ends with "mn" (MN marks its end). What legitimately
differs is masked: a gets unique is replaced by its rank among the
case's uniques on that server (0 stays 0). A case that depends on two
requests falling in the same second (flush_all and a store in one second)
is tried up to three times, since a second may end between them on
either server.

Skipped unless $PMCACHED_BIN names pmcached and memcached is installed.
"""
import re
import time

import pytest

from mcserver import start_pair

LONG = b"k" * 251
KEYS = (b"a", b"b", b"c", b"d", b"e", b"f", b"g", b"h", b"n", b"a:1",
        b"b:1", b"c:1")
RESET = b"".join(b"delete %s noreply\r\n" % k for k in KEYS)
SAME_SECOND = "same second"
# memcached reads a request pipelined after a metadump only once more
# input comes: the case's reply ends at its END, mn follows on its own.
DUMP = "dump"


@pytest.fixture(scope="module", params=[(), ("-C",)],
                ids=["cas", "no-cas"])
def pair(request):
    servers = start_pair(*request.param)
    yield servers
    for s in servers:
        s.cleanup()


GETS = re.compile(rb"(VALUE \S+ \d+ \d+ )(\d+)")


def _ranked(reply):
    uniques = sorted({int(m.group(2)) for m in GETS.finditer(reply)} - {0})
    rank = {u: i + 1 for i, u in enumerate(uniques)}
    rank[0] = 0
    return GETS.sub(lambda m: m.group(1) + b"%d" % rank[int(m.group(2))],
                    reply)


def exchange(server, data, closes=False, dump=False):
    """The reply to data on a fresh connection, up to mn's MN (or EOF;
    or, for a metadump, its END or its one-line refusal)."""
    conn = server.connect()
    try:
        conn.call(RESET + b"mn\r\n", b"MN\r\n")
        if closes:
            conn.send(data)
            conn.closed(timeout=5)
            return conn.buf
        if dump:
            conn.send(data)
            got = conn.read_until(b"\r\n")
            conn.sync()
            return got
        conn.send(data + b"mn\r\n")
        return conn.read_until(b"MN\r\n")[:-4]
    finally:
        conn.close()


BUSY = b"BUSY currently processing crawler request"


def _answer(server, data, closes, dump):
    """exchange(); while memcached's own crawler runs (it crawls by itself
    from time to time), a crawl or metadump answers BUSY: try again."""
    for _ in range(30):
        got = _ranked(exchange(server, data, closes, dump))
        if BUSY not in got:
            break
        time.sleep(0.2)
    return got


def same(pair, data, closes=False, tries=1, dump=False):
    for attempt in range(tries):
        mc, pm = (_answer(s, data, closes, dump) for s in pair)
        if mc == pm:
            return pm
    assert pm == mc, "memcached %r\npmcached  %r" % (mc, pm)


def case(data, *flags):
    return pytest.param(data, flags, id=repr(data[:60])[2:-1])


MALFORMED = [
    case(b"set a 0 0 1x\r\nx\r\n"),
    case(b"set a 0x 0 1\r\nx\r\n"),
    case(b"set a 0 1.5 1\r\nx\r\n"),
    case(b"set a 0 0 +1\r\nx\r\nget a\r\n"),
    case(b"set a 0 0 01\r\nx\r\nget a\r\n"),
    case(b"set a 0 0 1 2\r\nx\r\n"),
    case(b"cas a 0 0 1 1x\r\nx\r\n"),
    case(b"cas a 0 0 1 -1\r\nx\r\n"),
    case(b"cas a 0 0 1 18446744073709551616\r\nx\r\n"),
    case(b"cas a 0 0 1 9223372036854775808\r\nx\r\n"),
    case(b"incr a 1x\r\n"),
    case(b"incr a -1\r\n"),
    case(b"decr a 18446744073709551616\r\n"),
    case(b"touch a 1x\r\n"),
    case(b"touch a 1.5\r\n"),
    case(b"gat 1x a\r\n"),
    case(b"gats x a\r\n"),
    case(b"flush_all 1x\r\n"),
    case(b"flush_all 99999999999999999999\r\n"),
    case(b"verbosity 1x\r\n"),
    case(b"verbosity -1\r\n"),
    case(b"verbosity 99999999999999999999\r\n"),
    case(b"delete a x\r\n"),
    case(b"delete a 0 x\r\n"),
    case(b"slabs reassign 1x 2\r\n"),
    case(b"slabs reassign 1 2x\r\n"),
    case(b"slabs automove 1x\r\n"),
    case(b"slabs automove ratio x\r\n"),
    case(b"lru_crawler sleep 1x\r\n"),
    case(b"lru_crawler tocrawl 1x\r\n"),
    case(b"lru_crawler tocrawl -1\r\n"),
    case(b"lru_crawler crawl 1x\r\n"),
    case(b"lru_crawler crawl 0\r\n"),
    case(b"lru_crawler crawl 64\r\n"),
    case(b"lru_crawler metadump 1x\r\n"),
    case(b"lru_crawler metadump 1,x\r\n"),
    case(b"lru_crawler metadump 64\r\n"),
    case(b"stats cachedump 1x 1\r\n"),
    case(b"stats cachedump 1 x\r\n"),
    case(b"stats cachedump 64 0\r\n"),
    case(b"stats cachedump 1\r\n"),
]

LENGTHS = [
    case(b"set a 0 0 -1\r\nx\r\n"),
    case(b"set a 0 0 -2147483648\r\nx\r\n"),
    case(b"set a 0 0 2147483647\r\nx\r\n"),
    case(b"set a 0 0 4294967296\r\n\r\nget a\r\n"),
    case(b"set a 0 0 4294967297\r\nx\r\nget a\r\n"),
    case(b"set a 0 0 18446744073709551615\r\nx\r\n"),
    case(b"set a 0 0 99999999999999999999999\r\nx\r\n"),
    case(b"set a 0 0 -0\r\n\r\nget a\r\n"),
    case(b"set a 0 0 3\r\nx\r\n\r\n"),
    case(b"set a 4294967295 0 1\r\nx\r\nget a\r\n"),
    case(b"set a 4294967296 0 1\r\nx\r\nget a\r\n"),
    case(b"set a -1 0 1\r\nx\r\nget a\r\n"),
    case(b"set a 0 -1 1\r\nx\r\nget a\r\n"),
    case(b"set a 0 2147483648 1\r\nx\r\nget a\r\n"),
    case(b"set a 0 -2147483649 1\r\nx\r\nget a\r\n"),
    case(b"set a 0 4294967295 1\r\nx\r\nget a\r\n"),
    case(b"set a 0 9223372036854775807 1\r\nx\r\nget a\r\n"),
    case(b"set a 0 9223372036854775808 1\r\nx\r\nget a\r\n"),
    case(b"set " + LONG + b" 0 0 1\r\nx\r\n"),
    case(b"set a 0 0 1\r\n1\r\nincr a 18446744073709551615\r\n"),
    case(b"set a 0 0 1\r\n1\r\ndecr a 18446744073709551615\r\n"),
    case(b"set a 0 0 20\r\n18446744073709551615\r\nincr a 1\r\nget a\r\n"),
    case(b"set a 0 0 2\r\n10\r\ndecr a 1\r\nget a\r\n"),
    case(b"set a 0 0 1\r\n9\r\nincr a 1\r\nget a\r\n"),
]

NOREPLY = [
    case(b"set a 0 0 1 noreply\r\nx\r\nget a\r\n"),
    case(b"add a 0 0 1 noreply\r\nx\r\nadd a 0 0 1 noreply\r\ny\r\n"
         b"get a\r\n"),
    case(b"replace a 0 0 1 noreply\r\nx\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\nappend a 0 0 1 noreply\r\ny\r\n"
         b"prepend a 0 0 1 noreply\r\nz\r\nget a\r\n"),
    case(b"append a 0 0 1 noreply\r\nx\r\nprepend a 0 0 1 noreply\r\n"
         b"x\r\n"),
    case(b"cas a 0 0 1 1 noreply\r\nx\r\n"),
    case(b"set a 0 0 1\r\nx\r\ncas a 0 0 1 1 noreply\r\ny\r\nget a\r\n"),
    case(b"delete a noreply\r\n"),
    case(b"delete a 0 noreply\r\n"),
    case(b"delete a 1 noreply\r\n"),
    case(b"delete " + LONG + b" noreply\r\n"),
    case(b"incr a 1 noreply\r\ndecr a 1 noreply\r\n"),
    case(b"set a 0 0 1\r\n5\r\nincr a 1 noreply\r\ndecr a 3 noreply\r\n"
         b"get a\r\n"),
    case(b"set a 0 0 1\r\nx\r\nincr a 1 noreply\r\n"),
    case(b"incr a x noreply\r\n"),
    case(b"incr " + LONG + b" 1 noreply\r\n"),
    case(b"touch a 10 noreply\r\n"),
    case(b"set a 0 0 1\r\nx\r\ntouch a 10 noreply\r\n"),
    case(b"touch a x noreply\r\n"),
    case(b"touch " + LONG + b" 1 noreply\r\n"),
    case(b"flush_all noreply\r\n"),
    case(b"flush_all 0 noreply\r\n"),
    case(b"flush_all x noreply\r\n"),
    case(b"verbosity 0 noreply\r\n"),
    case(b"verbosity x noreply\r\n"),
    case(b"set a 0 0 x noreply\r\n"),
    case(b"set a 0 0 -1 noreply\r\n"),
    case(b"set " + LONG + b" 0 0 1 noreply\r\nx\r\n"),
    case(b"set a 0 0 1 noreply\r\nxyz\r\n"),
    case(b"set a 0 0 2000000 noreply\r\n" + b"x" * 2000000 + b"\r\n"),
    case(b"set a 0 0 1 NOREPLY\r\nx\r\n"),
    case(b"set a 0 0 1 noreply \r\nx\r\n"),
    case(b"get a noreply\r\n"),
    case(b"gets a noreply\r\n"),
    case(b"gat 1 a noreply\r\n"),
    case(b"stats noreply\r\n"),
    case(b"version noreply\r\n"),
    case(b"slabs automove 0 noreply\r\n"),
    case(b"slabs automove 1x noreply\r\n"),
    case(b"lru_crawler tocrawl 0 noreply\r\n"),
    case(b"lru_crawler enable noreply\r\n"),
]

FLUSH_AND_CAS = [
    case(b"set a 0 0 1\r\nx\r\nflush_all\r\nset b 0 0 1\r\ny\r\nget a b\r\n",
         SAME_SECOND),
    case(b"set a 0 0 1\r\nx\r\nflush_all\r\nadd a 0 0 1\r\nz\r\nget a\r\n",
         SAME_SECOND),
    case(b"set a 0 0 1\r\nx\r\nflush_all 0\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\nflush_all -1\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\nflush_all 1\r\nget a\r\nset b 0 0 1\r\ny\r\n"
         b"get b\r\n", SAME_SECOND),
    case(b"set a 0 0 1\r\nx\r\nflush_all 2592001\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\nflush_all 100\r\nflush_all 2592001\r\n"
         b"get a\r\n"),
    case(b"set a 0 0 1\r\nx\r\nflush_all 100\r\nget a\r\nflush_all\r\n"
         b"set b 0 0 1\r\ny\r\nget a b\r\n", SAME_SECOND),
    case(b"set a 0 0 1\r\nx\r\ngets a\r\nflush_all\r\ncas a 0 0 1 1\r\ny\r\n"
         b"get a\r\n"),
    case(b"set a 0 0 1\r\nx\r\nflush_all\r\nset a 0 0 1\r\ny\r\ngets a\r\n",
         SAME_SECOND),
    case(b"set a 0 0 1\r\nx\r\nflush_all\r\nincr a 1\r\ntouch a 0\r\n"
         b"append a 0 0 1\r\nz\r\nreplace a 0 0 1\r\nz\r\ndelete a\r\n"),
    case(b"set a 0 0 1\r\n5\r\nflush_all\r\nset a 0 0 1\r\n6\r\nincr a 1\r\n"
         b"gets a\r\n", SAME_SECOND),
]

TIMES = [
    case(b"set a 0 0 1\r\nx\r\ntouch a -1\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ntouch a 4294967296\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ntouch a 2147483648\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ntouch a -2147483649\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ntouch a 99999999999999999999\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ntouch a 2592001\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ntouch a\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ntouch a 1 2\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ngat -1 a\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ngat 2147483648 a\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ngat 4294967296 a\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ngat 2592001 a\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ngats -1 a\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ngat 1x a\r\nget a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ngat a\r\n"),
    case(b"set a 0 0 1\r\nx\r\ngat\r\n"),
    case(b"set a 0 0 1\r\nx\r\ngats 10 a a a\r\n"),
    case(b"gat 10\r\n"),
]

NUMBERS = [
    case(b"set a 0 0 2\r\n\t5\r\nincr a 1\r\n"),
    case(b"set a 0 0 2\r\n+5\r\nincr a 1\r\n"),
    case(b"set a 0 0 2\r\n-0\r\nincr a 1\r\n"),
    case(b"set a 0 0 2\r\n-5\r\nincr a 1\r\n"),
    case(b"set a 0 0 3\r\n5\r6\r\nincr a 1\r\n"),
    case(b"set a 0 0 24\r\n000000000000000000000005\r\nincr a 1\r\n"
         b"get a\r\n"),
    case(b"set a 0 0 1\r\n \r\nincr a 1\r\n"),
    case(b"set a 0 0 3\r\n5\t9\r\nincr a 1\r\n"),
    case(b"set a 0 0 3\r\n5 x\r\nincr a 1\r\nget a\r\n"),
    case(b"set a 0 0 2\r\n5\x00\r\nincr a 1\r\n"),
    case(b"set a 0 0 2\r\n5x\r\nincr a 1\r\n"),
    case(b"set a 0 0 0\r\n\r\nincr a 1\r\n"),
    case(b"set a 0 0 21\r\n018446744073709551615\r\nincr a 1\r\n"),
    case(b"set a 0 0 20\r\n18446744073709551616\r\nincr a 1\r\n"),
]

ADMIN = [
    case(b"stats detail\r\n"),
    case(b"stats detail foo\r\n"),
    case(b"stats detail dump x\r\n"),
    case(b"stats reset\r\nstats detail on x\r\nset a:1 0 0 1\r\nx\r\n"
         b"get a:1 b:1 a\r\ndelete c:1\r\nincr a:1 1\r\ntouch a:1 1\r\n"
         b"stats detail dump\r\nstats detail off\r\nget a:1\r\n"
         b"stats detail dump\r\nstats reset\r\nstats detail dump\r\n"),
    case(b"stats extstore\r\n"),
    case(b"stats sizes\r\n"),
    case(b"stats sizes_disable\r\n"),
    case(b"stats cachedump 63 0\r\n"),
    case(b"stats cachedump 1 0 0\r\n"),
    case(b"stats nosuch\r\n"),
    case(b"slabs reassign 1 1\r\n"),
    case(b"slabs reassign 1 99\r\n"),
    case(b"slabs reassign -1 2\r\n"),
    case(b"slabs reassign 1 2\r\n"),
    case(b"slabs automove 3\r\n"),
    case(b"slabs automove 1\r\n"),
    case(b"slabs automove ratio 0.5\r\n"),
    case(b"slabs automove ratio\r\n"),
    case(b"slabs foo\r\n"),
    case(b"slabs\r\n"),
    case(b"lru_crawler\r\n"),
    case(b"lru_crawler foo\r\n"),
    case(b"lru_crawler foo bar\r\n"),
    case(b"lru_crawler crawl\r\n"),
    case(b"lru_crawler crawl hash\r\n"),
    case(b"lru_crawler metadump all x\r\n"),
    case(b"lru_crawler sleep 1000001\r\n"),
    case(b"lru_crawler sleep 100\r\n"),
    case(b"lru_crawler tocrawl 0\r\n"),
    case(b"lru_crawler enable\r\n"),
    case(b"set a 0 0 1\r\nx\r\nlru_crawler metadump all\r\n"),
    case(b"lru_crawler metadump 63\r\n", DUMP),
    case(b"lru_crawler metadump 2,63\r\n", DUMP),
    case(b"lru_crawler metadump hash\r\n", DUMP),
]


@pytest.mark.parametrize("data,flags", MALFORMED + LENGTHS + NOREPLY +
                         FLUSH_AND_CAS + TIMES + NUMBERS + ADMIN)
def test_same_reply_as_memcached(pair, data, flags):
    same(pair, data, tries=3 if SAME_SECOND in flags else 1,
         dump=DUMP in flags)


def test_quit_and_its_noreply(pair):
    same(pair, b"set a 0 0 1 noreply\r\nx\r\nquit noreply\r\nget a\r\n",
         closes=True)
    same(pair, b"get a\r\nquit\r\nget a\r\n", closes=True)


def test_a_delayed_flush_all_takes_effect_when_due(pair):
    """flush_all 2: items stored until then stay until it is due, then go
    with those stored before; an item stored after it stays."""
    step1 = (b"set d 0 0 1\r\nx\r\nflush_all 2\r\nset e 0 0 1\r\ny\r\n"
             b"get d e\r\n")
    conns = [s.connect() for s in pair]
    try:
        out = []
        for c in conns:
            c.call(RESET + b"mn\r\n", b"MN\r\n")
            c.send(step1 + b"mn\r\n")
            out.append(c.read_until(b"MN\r\n"))
        assert out[0] == out[1]
        assert b"VALUE d" in out[0] and b"VALUE e" in out[0]
        time.sleep(3.5)
        step2 = b"get d e\r\nset f 0 0 1\r\nz\r\nget f\r\nmn\r\n"
        out = []
        for c in conns:
            c.send(step2)
            out.append(c.read_until(b"MN\r\n"))
        assert out[0] == out[1] == (b"END\r\nSTORED\r\nVALUE f 0 1\r\nz\r\n"
                                    b"END\r\nMN\r\n")
    finally:
        for c in conns:
            c.close()


def test_lru_crawler_disable_and_enable(pair):
    """memcached stops and starts its crawler thread in the background:
    each step is given time to be done."""
    steps = [(b"lru_crawler disable\r\n", b"OK\r\n"),
             (b"lru_crawler disable\r\nlru_crawler metadump all\r\n"
              b"lru_crawler crawl all\r\nlru_crawler crawl 1\r\n",
              b"OK\r\n" + b"CLIENT_ERROR lru crawler disabled\r\n" * 3),
             (b"lru_crawler enable\r\n", b"OK\r\n"),
             (b"lru_crawler enable\r\n",
              b"ERROR failed to start lru crawler thread\r\n")]
    for data, want in steps:
        got = [exchange(s, data) for s in pair]
        assert got == [want, want], data
        time.sleep(0.5)
