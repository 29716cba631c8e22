# SPDX-License-Identifier: BSD-3-Clause
"""memcached's binary protocol: pmcached against Debian's memcached 1.6.18,
both started by this module, byte for byte.

Each scenario is a list of steps sent to both servers over raw sockets.
A step's bytes go out, then a NOOP whose answer marks the step's end (so
that quiet opcodes, which may answer nothing, need no timeout); a step
that makes the server close the connection ends at EOF instead. The
responses of each step must be the same bytes from both servers, but for
the CAS field: uniques differ between servers, so each is replaced by its
rank among the scenario's uniques on that server (0 stays 0). Equal ranks
mean the same item version was seen, and the order of stores shows in
the order of ranks.

Skipped unless $PMCACHED_BIN names pmcached and memcached is installed.
The stats test compares each server's binary STAT with its own text
"stats" (the values differ between the two servers).
"""
import struct

import pytest

import time

from binproto import (AUTH_ERROR, E2BIG, KEY_ENOENT, NO_CREATE, OP,
                      SUCCESS, UNKNOWN_COMMAND, BinConn, arith, join,
                      request, store, touch)
from mcserver import START_TIMEOUT, ServerError, start_pair

BARRIER = 0x0b0b0b0b    # the opaque of a step's closing NOOP
ITEM_MAX = 1 << 20      # -I's default


def _wait_binary(server):
    """Ready: a binary VERSION answered (-B binary: no text "version")."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if not server.alive():
            raise ServerError("%r exited: %s" % (server,
                                                 server.stderr_tail()))
        try:
            c = BinConn.connect(server.port, timeout=1.0)
        except OSError:
            time.sleep(0.02)
            continue
        try:
            if c.ask(request("VERSION")) is not None:
                return
        finally:
            c.close()
    raise ServerError("%r not ready" % server)


def _start_pair(*args):
    text_only = "ascii" in args     # -B ascii: ready by the text "version"
    servers = start_pair(*args, wait=text_only)
    try:
        for s in servers:
            if not text_only:
                _wait_binary(s)
    except Exception:
        for s in servers:
            s.cleanup()
        raise
    return servers


@pytest.fixture(scope="module")
def pair():
    servers = _start_pair()
    yield servers
    for s in servers:
        s.cleanup()


@pytest.fixture
def make_pair():
    made = []

    def make(*args):
        made.extend(_start_pair(*args))
        return made[-2:]
    yield make
    for s in made:
        s.cleanup()


class Ctx:
    """What a step built at run time sees: its server's responses so far
    (for a unique to send back) and a source of fresh opaques, the same
    sequence on both servers."""

    def __init__(self):
        self.seen = []
        self._opaque = 0x100

    def opaque(self):
        self._opaque += 1
        return self._opaque

    def cas(self, back=1):
        """The unique of the back-th last response that has one."""
        withcas = [r.cas for r in self.seen if r.cas]
        return withcas[-back]


def _send_step(conn, ctx, step):
    data = step(ctx) if callable(step) else step
    conn.send(data + request("NOOP", opaque=BARRIER))
    got, closed = conn.until_noop(BARRIER)
    ctx.seen += got
    return got, closed


def run(server, steps):
    """The responses of each step: [([raw, ...], closed)]. A step after
    one that closed the connection runs on a new one."""
    ctx, out = Ctx(), []
    conn = BinConn.connect(server.port)
    try:
        for step in steps:
            if conn.eof:
                conn.close()
                conn = BinConn.connect(server.port)
            got, closed = _send_step(conn, ctx, step)
            out.append(([r.raw for r in got], closed))
    finally:
        conn.close()
    return out


def _ranked(transcript):
    """Each response's CAS field replaced by its rank (see the module)."""
    uniques = sorted({struct.unpack(">Q", raw[16:24])[0]
                      for raws, _ in transcript for raw in raws} - {0})
    rank = {u: i + 1 for i, u in enumerate(uniques)}
    rank[0] = 0
    return [([raw[:16] + struct.pack(">Q", rank[struct.unpack(
        ">Q", raw[16:24])[0]]) + raw[24:] for raw in raws], closed)
        for raws, closed in transcript]


def same(servers, steps):
    """Run steps on both servers; their responses must be the same."""
    mc, pm = (_ranked(run(s, steps)) for s in servers)
    for i, (want, got) in enumerate(zip(mc, pm)):
        assert got == want, "step %d:\nmemcached %r\npmcached  %r" % (
            i, want, got)
    return pm


def _flush(ctx):
    return request("FLUSH", opaque=ctx.opaque())


# ------------------------------------------------------------ retrieval

def _maker(op):
    if op in ("SET", "SETQ", "ADD", "ADDQ", "REPLACE", "REPLACEQ"):
        return store
    if op in ("INCREMENT", "INCREMENTQ", "DECREMENT", "DECREMENTQ"):
        return arith
    if op in ("TOUCH", "GAT", "GATQ", "GATK", "GATKQ"):
        return touch
    if op in ("APPEND", "APPENDQ", "PREPEND", "PREPENDQ"):
        return join
    return request


def R(op, *args, **kw):
    """A step: one request with a fresh opaque."""
    return lambda ctx: _maker(op)(op, *args, opaque=ctx.opaque(), **kw)


def RC(op, *args, back=1, plus=0, **kw):
    """R with the unique of the back-th last response that had one (plus
    plus, to make it wrong) as its cas."""
    return lambda ctx: _maker(op)(op, *args, opaque=ctx.opaque(),
                                  cas=ctx.cas(back) + plus, **kw)


def Many(*steps):
    """Several requests in one send (a pipeline)."""
    return lambda ctx: b"".join(s(ctx) if callable(s) else s for s in steps)


GETS = ("GET", "GETK", "GETQ", "GETKQ")


def test_get_family_hits_and_misses(pair):
    odd_key = bytes(range(256))[:250]   # binary keys: any byte goes
    steps = [_flush, R("SET", b"g1", b"hello", flags=0xdeadbeef)]
    steps += [R(op, b"g1") for op in GETS]
    steps += [R(op, b"nope") for op in GETS]
    steps += [R("SET", odd_key, b"\x00\r\n" * 10, flags=7), R("GETK", odd_key),
              R("SET", b"empty", b""), R("GETK", b"empty"),
              R("SET", b"big", b"v" * 500000), R("GET", b"big")]
    same(pair, steps)


def test_pipelined_quiet_gets_answer_only_hits(pair):
    sets = [R("SETQ", b"p%d" % i, b"value %d" % i, flags=i)
            for i in range(0, 40, 3)]
    gets = [R(("GETQ", "GETKQ")[i % 2], b"p%d" % i) for i in range(40)]
    same(pair, [_flush, Many(*sets), Many(*gets), Many(*gets, *gets)])


# -------------------------------------------------------------- storage

def test_set_add_replace_and_quiet_forms(pair):
    same(pair, [
        _flush,
        R("ADD", b"s1", b"a"), R("ADD", b"s1", b"b"), R("GET", b"s1"),
        R("REPLACE", b"s1", b"c", flags=3), R("REPLACE", b"s2", b"c"),
        R("GET", b"s1"), R("GET", b"s2"),
        R("ADDQ", b"s3", b"d"), R("ADDQ", b"s3", b"e"),
        R("REPLACEQ", b"s3", b"f"), R("REPLACEQ", b"s4", b"f"),
        R("SETQ", b"s5", b"g"), Many(R("GET", b"s3"), R("GET", b"s5")),
    ])


def test_cas_compare_and_swap(pair):
    same(pair, [
        _flush, R("SET", b"c1", b"v1"),
        RC("SET", b"c1", b"v2"),
        RC("SET", b"c1", b"v3", back=2),   # stale: EEXISTS
        R("GET", b"c1"),
        RC("ADD", b"c1", b"v4"),           # ADD with cas: swap
        RC("REPLACE", b"c1", b"v5", plus=1000),
        R("SET", b"c9", b"x", cas=12345),             # no item: ENOENT
        R("ADD", b"c9", b"x", cas=12345),
        R("SETQ", b"c1", b"x", cas=12345),            # quiet, but an error
        R("GETK", b"c1"),
    ])


def test_append_prepend_and_their_cas(pair):
    same(pair, [
        _flush,
        R("APPEND", b"a1", b"x"), R("PREPEND", b"a1", b"x"),
        R("SET", b"a1", b"mid", flags=9, exptime=0),
        R("APPEND", b"a1", b">>"), R("PREPEND", b"a1", b"<<"),
        R("APPENDQ", b"a1", b"!"), R("PREPENDQ", b"a1", b"!"),
        R("APPENDQ", b"a2", b"!"), R("GET", b"a1"),
        RC("APPEND", b"a1", b"+"),
        RC("PREPEND", b"a1", b"-", back=2),
        R("GET", b"a1"),
    ])


def test_too_large_values(pair):
    big = b"L" * (ITEM_MAX + 10)
    same(pair, [
        _flush, R("SET", b"t1", b"small"),
        R("SET", b"t1", big),          # refused: the old value goes too
        R("GET", b"t1"),
        R("SET", b"t2", b"small"), R("APPEND", b"t2", big),
        R("GET", b"t2"),               # an APPEND refused keeps it
        R("SETQ", b"t3", big),         # quiet: the error is sent
        R("PREPENDQ", b"t2", big),
        R("SET", b"t4", b"m" * (ITEM_MAX - 200)), R("GET", b"t4"),
    ])


# ----------------------------------------------------- delete and arith

def test_delete_and_its_cas(pair):
    same(pair, [
        _flush, R("SET", b"d1", b"v"), R("DELETE", b"d1"),
        R("DELETE", b"d1"), R("SET", b"d2", b"v"), R("DELETEQ", b"d2"),
        R("DELETEQ", b"d2"), R("SET", b"d3", b"v"),
        RC("DELETE", b"d3", plus=7),
        R("GET", b"d3"),
        RC("DELETE", b"d3"),
        R("GET", b"d3"),
    ])


def test_increment_decrement(pair):
    same(pair, [
        _flush,
        R("INCREMENT", b"n", delta=5, initial=40),      # created: 40
        R("INCREMENT", b"n", delta=5, initial=40),      # 45
        R("DECREMENT", b"n", delta=100),                 # stops at 0
        R("INCREMENT", b"n", delta=99), R("INCREMENT", b"n", delta=1),
        R("DECREMENT", b"n", delta=1), R("GET", b"n"),   # "99 " padded
        R("INCREMENT", b"m", exptime=NO_CREATE),          # miss
        R("DECREMENT", b"m", exptime=NO_CREATE),
        R("SET", b"w", b"18446744073709551615"),
        R("INCREMENT", b"w", delta=2), R("GET", b"w"),   # wraps
        R("SET", b"x", b"abc"), R("INCREMENT", b"x"),
        R("SET", b"e", b""), R("INCREMENT", b"e"),
        R("INCREMENTQ", b"q", initial=7), R("INCREMENTQ", b"q"),
        R("DECREMENTQ", b"q"), R("DECREMENTQ", b"qq", exptime=NO_CREATE),
        R("GET", b"q"),
        RC("INCREMENT", b"n", plus=3),
        R("INCREMENT", b"n"),
        RC("INCREMENT", b"n"),
        R("GETK", b"n"),
    ])


# ------------------------------------------------------- touch and gat

EXPIRED = 2592001   # absolute: 30 days and a second after 1970, long past


def test_touch_and_gat_family(pair):
    steps = [_flush, R("SET", b"t", b"val", flags=5)]
    for op in ("TOUCH", "GAT", "GATK", "GATQ", "GATKQ"):
        steps += [R(op, b"t", 3600), R(op, b"none", 3600)]
    steps += [R("SET", b"gone", b"v"), R("TOUCH", b"gone", EXPIRED),
              R("GET", b"gone"), R("SET", b"also", b"v"),
              R("GAT", b"also", EXPIRED), R("GET", b"also"),
              R("SET", b"dead", b"v", exptime=EXPIRED), R("GET", b"dead")]
    same(pair, steps)


# -------------------------------------------- flush, version, noop, quit

def test_flush_version_noop(pair):
    same(pair, [
        R("SET", b"f1", b"v"), R("FLUSH"), R("GET", b"f1"),
        R("SET", b"f2", b"v"), R("FLUSHQ"), R("GET", b"f2"),
        R("SET", b"f3", b"v"),
        R("FLUSH", extras=struct.pack(">I", 3600)),     # later: still here
        R("GET", b"f3"), R("FLUSH", extras=struct.pack(">I", 0)),
        R("GET", b"f3"), R("VERSION"), R("NOOP"),
    ])


def test_quit_and_quitq_close(pair):
    same(pair, [R("SET", b"q", b"v"), R("QUIT"), R("GET", b"q"),
                R("QUITQ"), R("GET", b"q")])


def test_flush_disabled_is_an_auth_error(make_pair):
    out = same(make_pair("-F"), [R("FLUSH"), R("FLUSHQ")])
    assert [struct.unpack(">H", raws[0][6:8])[0] for raws, _ in out] == [
        AUTH_ERROR, AUTH_ERROR]


# --------------------------------------------------------- sasl, unknown

def test_sasl_opcodes_answer_unknown_command(pair):
    same(pair, [
        R("SASL_LIST_MECHS"), R("SASL_AUTH", b"PLAIN", value=b"\0u\0p"),
        R("SASL_STEP", b"PLAIN", value=b"xyz"),
        R("SASL_LIST_MECHS", b"k"),                        # malformed: close
        R("SASL_AUTH", value=b"x"),
    ])


@pytest.mark.parametrize("first", range(0, 256, 32))
def test_every_opcode_with_an_empty_body(pair, first):
    """Each opcode, no extras, key or value, on a connection of its own
    (some close it), then a NOOP: unknown ones answer UNKNOWN_COMMAND,
    known ones their own reply or EINVAL and a close. (STAT's list is
    compared below: its values differ.)"""
    for op in range(first, first + 32):
        if op == OP["STAT"]:
            continue
        same(pair, [R("FLUSH"), R(op)])


def test_unknown_opcodes_swallow_their_body(pair):
    # memcached swallows bodylen bytes after the extras and key (it has
    # already read those): the padding stands for what it eats twice
    same(pair, [
        Many(R(0x30, b"abc"), b"pad"),
        Many(R(0x41, extras=b"12", value=b"xyz"), b"12"),
        R(0x50, bodylen=0x80000000),    # not positive as an int: none
        R(0xff),
    ])


# ---------------------------------------------------- malformed requests

MALFORMED = {
    "key longer than body": request("GET", b"ab", bodylen=1) + b"b",
    "extras and key longer than body": request(
        "SET", b"k", b"12345678", bodylen=8),
    "key of 251": request("GET", b"k" * 251),
    "unknown opcode, key of 251": request(0x30, b"k" * 251),
    "key of 16360 (header, key: 16384)": request("GET", b"k" * 16360),
    "get with extras": request("GET", b"k", b"1234"),
    "set without extras": request("SET", b"k", value=b"v"),
    "set with 4 extras": request("SET", b"k", b"1234", b"v"),
    "set without key": store("SET", b"", b"v"),
    "add without key": store("ADD", b"", b"v"),
    "delete with extras": request("DELETE", b"k", b"1234"),
    "delete without key": request("DELETE"),
    "incr with 8 extras": request("INCREMENT", b"k", b"12345678"),
    "incr with a value": request("INCREMENT", b"k", b"\0" * 20, b"v"),
    "append with extras": request("APPEND", b"k", b"1234", b"v"),
    "append without key": request("APPEND", value=b"v"),
    "touch without extras": request("TOUCH", b"k"),
    "gat without key": request("GAT", extras=b"1234"),
    "flush with 8 extras": request("FLUSH", extras=b"12345678"),
    "flush with a key": request("FLUSH", b"k", b"1234"),
    "stat with extras": request("STAT", extras=b"1234"),
    "version with a body": request("VERSION", value=b"x"),
    "noop with a key": request("NOOP", b"k"),
    "quit with a body": request("QUIT", value=b"x"),
    "getq without key": request("GETQ"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_requests_are_answered_and_closed(pair, name):
    out = same(pair, [R("NOOP"), MALFORMED[name], R("NOOP")])
    assert out[1][1], "the connection stays open"


def test_header_and_key_past_the_read_buffer_close_unanswered(pair):
    out = same(pair, [R("NOOP"), request("GET", b"k" * 16361)])
    assert out[1] == ([], True)


def test_bad_magic_after_binary_closes(pair):
    noop = request("NOOP")
    out = same(pair, [R("NOOP"), b"\x81" + noop[1:], R("NOOP"),
                      b"get a\r\n" + b" " * 30])
    assert out[1] == ([], True) and out[3] == ([], True)


def test_bytes_past_a_short_opcode_are_the_next_request(pair):
    # GAT, STAT and NOOP-sized opcodes read extras and key only: a body
    # length that says more leaves the rest to be parsed as a request
    noop = request("NOOP", opaque=0x77)
    same(pair, [
        _flush,
        Many(touch("GAT", b"k", 0, bodylen=5 + 24), noop),
        Many(request("STAT", b"sizes", bodylen=5 + 24), noop),
    ])


def test_datatype_and_vbucket_are_ignored(pair):
    same(pair, [
        R("SET", b"dv", b"v", datatype=1, vbucket=7),
        R("GET", b"dv", datatype=3, vbucket=0xffff),
    ])


def test_every_response_echoes_its_opaque(pair):
    for server in pair:
        c = BinConn.connect(server.port)
        ops = [store("SET", b"o", b"v", opaque=0xa1),
               request("GET", b"o", opaque=0xa2),
               request("GETK", b"none", opaque=0xa3),
               request("DELETE", b"none", opaque=0xa4),
               arith("INCREMENT", b"o", opaque=0xa5),
               request("VERSION", opaque=0xa6),
               request(0x55, opaque=0xa7),
               request("NOOP", opaque=0xfffffffe)]
        c.send(b"".join(ops))
        got = [c.read().opaque for _ in ops]
        assert got == [0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
                       0xfffffffe], server
        c.close()


# ----------------------------------------------------------------- stats

def _text_stats(server, group):
    c = server.connect()
    st = c.stats(group)
    c.close()
    return list(st)


@pytest.mark.parametrize("group", [b"", b"settings", b"items", b"slabs",
                                   b"sizes"])
def test_stat_lists_what_the_text_stats_list(pair, group):
    for server in pair:
        c = BinConn.connect(server.port)
        c.send(store("SET", b"st", b"v"))
        assert c.read().status == SUCCESS
        names = [name for name, _ in c.stat_list(group, opaque=0x5a)]
        c.close()
        assert names == _text_stats(server, group), server


def test_stat_detail_counts_per_prefix(pair):
    # memcached's binary "detail on|off|dump": the get family (TOUCH and
    # GAT too), every store (APPEND too) and DELETE are counted, the dump
    # is one "detailed" statistic in memcached's order
    same(pair, [R("STAT", b"reset"), R("STAT", b"detail on"),
                R("SET", b"a:1", b"x"), R("ADD", b"b:1", b"x"),
                R("GET", b"a:1"), R("GETK", b"c:1"), R("GAT", b"a:1", 10),
                R("APPEND", b"a:1", b"y"), R("DELETE", b"d:1"),
                R("INCREMENT", b"e:1"), R("TOUCH", b"f:1", 1),
                R("SETQ", b"g:1", b"x"), R("GETQ", b"h:1"),
                R("STAT", b"detail dump"), R("STAT", b"detail dumpx"),
                R("STAT", b"detail x"), R("STAT", b"detailed"),
                R("STAT", b"detail off"), R("GET", b"a:1"),
                R("STAT", b"detail dump"), R("STAT", b"reset"),
                R("STAT", b"detail dump")])


def test_stat_errors_and_reset(pair):
    same(pair, [R("STAT", b"bogus"), R("STAT", b"conns"),
                R("STAT", b"detail"), R("STAT", b"item"),
                R("STAT", b"reset"), R("STAT", b"resetting")])
    for server in pair:
        c = BinConn.connect(server.port)
        assert c.ask(request("STAT", b"conns")).status == KEY_ENOENT
        settings = dict(c.stat_list(b"settingsX"))  # a prefix, as memcached
        assert settings["item_size_max"] == str(ITEM_MAX)
        c.close()


# ---------------------------------------------------------- -B and -C

def test_B_binary_closes_a_text_client(make_pair):
    pair = make_pair("-B", "binary")
    out = same(pair, [R("VERSION"), b"version\r\n" + b" " * 20])
    assert out[1] == ([], True)
    for server in pair:
        c = BinConn.connect(server.port)
        st = dict(c.stat_list(b"settings"))
        assert st["binding_protocol"] == "binary"
        c.close()
        t = server.connect()
        t.send(b"version\r\n" + b" " * 20)
        assert t.closed()


def test_B_ascii_reads_binary_as_text(make_pair):
    got = []
    for server in make_pair("-B", "ascii"):
        c = server.connect()
        # a NOOP's header has a "\n" (its opcode 0x0a): two lines
        c.send(request("NOOP") + b"\r\n")
        got.append(c.read_available())
        c.close()
    assert got[0] == got[1] and got[0].startswith(b"ERROR\r\n"), got


def test_C_no_uniques(make_pair):
    out = same(make_pair("-C"), [
        R("SET", b"k", b"v"), R("GET", b"k"),
        R("SET", b"k", b"w", cas=5),          # ignored: a plain set
        R("APPEND", b"k", b"!", cas=5), R("GET", b"k"),
        R("DELETE", b"k", cas=5),             # no item has unique 5
        R("INCREMENT", b"n", initial=3), R("INCREMENT", b"n", cas=5),
        R("DELETE", b"k")])
    assert all(raw[16:24] == bytes(8) for raws, _ in out for raw in raws)


def test_first_byte_decides_per_connection(pair):
    """-B auto: a text client and a binary one side by side."""
    for server in pair:
        t = server.connect()
        b = BinConn.connect(server.port)
        t.call(b"set both 0 0 2\r\nhi\r\n", b"STORED\r\n")
        r = b.ask(request("GETK", b"both"))
        assert (r.status, r.key, r.value) == (SUCCESS, b"both", b"hi")
        b.ask(store("SET", b"both", b"yo", flags=2))
        t.call(b"get both\r\n", b"VALUE both 2 2\r\nyo\r\nEND\r\n")
        assert b.ask(request(0x60)).status == UNKNOWN_COMMAND
        t.close()
        b.close()


def test_value_at_the_item_limit(pair):
    # the largest value that fits (memcached's item header: 48 + 8 bytes
    # of cas, the key and its NUL, "\r\n") and one byte more
    key = b"lim"
    fits = ITEM_MAX - 56 - len(key) - 1 - 2
    out = same(pair, [R("SET", key, b"f" * fits), R("SET", key, b"f" * (fits + 1)),
                      R("GET", key)])
    assert struct.unpack(">H", out[1][0][0][6:8])[0] == E2BIG
    assert struct.unpack(">H", out[2][0][0][6:8])[0] == KEY_ENOENT
    assert OP["GET"] == out[2][0][0][1]
