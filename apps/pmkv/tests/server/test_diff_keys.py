# SPDX-License-Identifier: BSD-3-Clause
"""pmkv's COPY, DUMP, RESTORE, OBJECT and LCS against Redis 7.0, byte for
byte (difftest.py's machinery, as test_diff_hash.py's).

Compared as test_differential.py compares, and also:

- SMEMBERS, HGETALL, HKEYS, HVALS: their elements sorted (the order is
  each server's own);
- DUMP: the payloads may differ (Redis compresses long strings with LZF,
  pmkv does not; a hash table's order is each server's), so each server's
  payload is restored into the other under a scratch key, and the scratch
  key's contents, TTL and encoding must be the original's (Redis's
  OBJECT ENCODING of pmkv's payload: the encoding pmkv's DUMP chose);
- OBJECT ENCODING: Redis's answer depends on the value's history (a
  hash that once held a long value stays a hash table), pmkv's on the
  value (README: differences), so pmkv's must be Redis's for a fresh copy
  of the value (Redis's DUMP restored under a scratch key: Redis then
  encodes by the value, as it does on loading);
- __RESTORE (a request of this test's only): a key's payload taken from
  one server (DUMP) and sent to both in one RESTORE with the options
  drawn, the replies compared byte for byte.

Hand-written edge cases (each command's errors in Redis's order, every
type small and large, corrupted payloads, Redis 6's ziplist payloads,
TTLs, IDLETIME and FREQ under the LRU and LFU policies), then seeded
random sequences over a few keys of every type: PMKV_DIFF_KEYS_COMMANDS
commands in all (default 3,000, or 200,000 with PMTX_LONG_TESTS=1) over
PMKV_DIFF_SEEDS seeds. Both servers are emptied (FLUSHALL) between
tests. The wrapped version holds strings only: there, one test checks
COPY, DUMP and RESTORE of strings against Redis.
"""
import random
import struct
import time

import pytest

from difftest import (  # noqa: F401 (redis_server: the pairs' fixture)
    BIN, FIRST_SEED, SEEDS, Pair, b, break_arity, commands, name_of,
    needs_redis, opt_only, pair_fixture, rand_value, redis_server,
    run_batches, weighted, wrapped_only)
from rawresp import parse

COMMANDS = commands("PMKV_DIFF_KEYS_COMMANDS", 3000)

needs_opt = opt_only("test_wrapped_strings")

SCRATCH = b"__scratch"


# ---- Redis's CRC-64 and payloads built by hand -------------------------

def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x95ac9329ac4bc9b5 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc_table()


def crc64(data):
    crc = 0
    for x in data:
        crc = CRC_TABLE[(crc ^ x) & 0xff] ^ (crc >> 8)
    return crc


def payload(body, version=10):
    """A DUMP payload: body (type byte and value), the version, the CRC."""
    p = body + struct.pack("<H", version)
    return p + struct.pack("<Q", crc64(p))


def rdb_len(n):
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | n >> 8, n & 0xff])
    return b"\x80" + struct.pack(">I", n)


def rdb_str(s):
    return rdb_len(len(s)) + s


def ziplist(elems):
    """Redis 6's ziplist of elems (bytes, or int)."""
    body, prev, tail = b"", 0, 10
    for e in elems:
        tail = 10 + len(body)
        pre = bytes([prev]) if prev < 254 else b"\xfe" + struct.pack("<I",
                                                                    prev)
        if isinstance(e, int):
            if 0 <= e <= 12:
                enc = bytes([0xf1 + e])
            else:
                enc = b"\xc0" + struct.pack("<h", e)
        elif len(e) < 64:
            enc = bytes([len(e)]) + e
        else:
            enc = bytes([0x40 | len(e) >> 8, len(e) & 0xff]) + e
        entry = pre + enc
        body += entry
        prev = len(entry)
    total = 10 + len(body) + 1
    return struct.pack("<IIH", total, tail, len(elems)) + body + b"\xff"


def check_crc():
    assert crc64(b"123456789") == 0xe9c6d914c4b8d9ca


# ---- the pair ---------------------------------------------------------

def _contents(conn, key):
    """A key's type, its whole value (sorted where its order is the
    server's own) and whether it has an expiry."""
    t = parse(conn.send([b("TYPE", key)])[0])
    reads = {b"string": [b("GET", key)],
             b"list": [b("LRANGE", key, "0", "-1")],
             b"set": [b("SMEMBERS", key)], b"hash": [b("HGETALL", key)],
             b"zset": [b("ZRANGE", key, "0", "-1", "WITHSCORES")]}
    if t not in reads:
        return (t,)
    v = parse(conn.send(reads[t])[0])
    if t == b"set":
        v = sorted(v)
    elif t == b"hash":
        v = sorted(zip(v[::2], v[1::2]))
    ttl = parse(conn.send([b("PTTL", key)])[0])
    return t, v, ttl >= 0


class KeysPair(Pair):
    """Pair, with the comparisons these commands need (module docstring)."""

    ORDERLESS = {**Pair.ORDERLESS, b"smembers": 1, b"hgetall": 2,
                 b"hkeys": 1, b"hvals": 1}

    def _special(self, req):
        name = name_of(req)
        if name == b"dump" and len(req) == 2:
            return self._dump
        if name == b"object" and len(req) == 3 and \
                req[1].lower() == b"encoding":
            return self._encoding
        if name == b"__restore":
            return self._restore
        return Pair._special(self, req)

    def _fresh_encoding(self, key):
        """Redis's encoding of a fresh copy of key's value (or its reply
        to OBJECT ENCODING when there is no value)."""
        dump = self.theirs.send([b("DUMP", key)])[0]
        if not dump.startswith(b"$") or dump == b"$-1\r\n":
            return self.theirs.send([b("OBJECT", "ENCODING", key)])[0]
        r = self.theirs.send([[b"RESTORE", SCRATCH, b"0", parse(dump),
                               b"REPLACE"],
                              b("OBJECT", "ENCODING", SCRATCH),
                              b("DEL", SCRATCH)])
        assert r[0] == b"+OK\r\n", r
        return r[1]

    def _encoding(self, req):
        ours = self.ours.send([req])[0]
        theirs = self._fresh_encoding(req[2])
        self._check(req, ours, theirs, ours == theirs)

    def _dump(self, req):
        """Each server's payload restored into the other (module
        docstring)."""
        ours, theirs = self._both(req)
        if ours == b"$-1\r\n" or theirs == b"$-1\r\n" or \
                not ours.startswith(b"$") or not theirs.startswith(b"$"):
            return self._check(req, ours, theirs, ours == theirs)
        key = req[1]
        want = _contents(self.ours, key), _contents(self.theirs, key)
        for dst, src_payload in ((self.ours, theirs), (self.theirs, ours)):
            r = dst.send([[b"RESTORE", SCRATCH, b"0", parse(src_payload),
                           b"REPLACE"]])[0]
            self._check([b"RESTORE", SCRATCH, b"0", b"<payload of %s>" % key],
                        r, b"+OK\r\n", r == b"+OK\r\n")
        got = (_contents(self.ours, SCRATCH), _contents(self.theirs, SCRATCH))
        # the expiry is not in a payload
        strip = [(w[0], w[1]) if len(w) == 3 else w for w in want]
        have = [(g[0], g[1]) if len(g) == 3 else g for g in got]
        self._check(req, repr(have[0]), repr(strip[1]), have[0] == strip[1])
        self._check(req, repr(have[1]), repr(strip[0]), have[1] == strip[0])
        # Redis holds pmkv's payload as pmkv says it would
        enc = [self.ours.send([b("OBJECT", "ENCODING", key)])[0],
               self.theirs.send([b("OBJECT", "ENCODING", SCRATCH)])[0]]
        self._check(b("OBJECT", "ENCODING", key), enc[0], enc[1],
                    enc[0] == enc[1])
        for c in (self.ours, self.theirs):
            c.send([b("DEL", SCRATCH)])

    def _restore(self, req):
        """__RESTORE side src dst ttl [options]: src's payload from one
        server, restored into dst on both."""
        side = self.ours if req[1] == b"pmkv" else self.theirs
        dump = parse(side.send([b("DUMP", req[2])])[0])
        real = [b"RESTORE", req[3], req[4], dump or b""] + req[5:]
        ours, theirs = self._both(real)
        shown = real[:3] + [b"<payload of %s from %s>" % (req[2], req[1])] \
            + real[4:]
        self._check(shown, ours, theirs, ours == theirs)


kpair = pair_fixture(KeysPair, fresh=lambda p: [
    c.send([b("FLUSHALL")]) for c in (p.ours, p.theirs)])


# ---- edge cases ---------------------------------------------------------

FAR = b"%d" % (int(time.time() * 1000) + 86400 * 1000)  # ms: ABSTTL
PAST = b"%d" % (int(time.time() * 1000) - 86400 * 1000)
MANY = [b"f%d" % i for i in range(300)]
MANY2 = [b"g%d" % i for i in range(300)]
LONGV = b"v" * 65

ARITY = [
    b("COPY"), b("COPY", "a"), b("DUMP"), b("DUMP", "a", "b"),
    b("RESTORE", "a", "0"), b("OBJECT"), b("OBJECT", "ENCODING"),
    b("OBJECT", "ENCODING", "a", "b"), b("OBJECT", "FREQ"),
    b("OBJECT", "IDLETIME", "a", "b"), b("OBJECT", "REFCOUNT"),
    b("OBJECT", "HELP", "x"), b("OBJECT", "BOGUS"), b("OBJECT", "bogus", "k"),
    b("object", "help"), b("LCS"), b("LCS", "a"),
]

COPIES = [
    # every type, its expiry, DB, REPLACE, and the errors in Redis's order
    b("SET", "s", "hello"), b("COPY", "s", "s2"), b("GET", "s2"),
    b("COPY", "s", "s2"), b("SET", "s", "world"), b("COPY", "s", "s2"),
    b("GET", "s2"), b("COPY", "s", "s2", "REPLACE"), b("GET", "s2"),
    b("COPY", "s", "s2", "replace", "REPLACE"), b("COPY", "nope", "s3"),
    b("EXISTS", "s3"), b("COPY", "s", "s"), b("COPY", "s", "s", "DB", "0"),
    b("COPY", "s", "s", "DB", "1"), b("COPY", "s", "s", "DB", "1"),
    b("COPY", "s", "s2", "DB"), b("COPY", "s", "s2", "DB", "x"),
    b("COPY", "s", "s2", "DB", "16"), b("COPY", "s", "s2", "DB", "-1"),
    b("COPY", "s", "s2", "DB", "99999999999"), b("COPY", "s", "s2", "BOGUS"),
    b("COPY", "s", "s", "BOGUS"), b("COPY", "nope", "nope"),
    b("COPY", "s", "s2", "DB", "16", "BOGUS"),
    b("COPY", "s", "s2", "BOGUS", "DB", "16"),
    b("RPUSH", "l", "a", "b", "1", "2", "c"), b("COPY", "l", "l2"),
    b("LRANGE", "l2", "0", "-1"), b("RPUSH", "l2", "x"), b("LLEN", "l"),
    b("SADD", "t", "1", "2", "x"), b("COPY", "t", "t2"), b("SMEMBERS", "t2"),
    b("SREM", "t2", "1"), b("SCARD", "t"),
    b("HSET", "h", "f", "v", "g", "1"), b("COPY", "h", "h2"),
    b("HGETALL", "h2"), b("HDEL", "h2", "f"), b("HLEN", "h"),
    b("ZADD", "z", "1", "a", "-2.5", "b", "inf", "c"), b("COPY", "z", "z2"),
    b("ZRANGE", "z2", "0", "-1", "WITHSCORES"), b("ZREM", "z2", "a"),
    b("ZCARD", "z"),
    # a copy over another type, with REPLACE only
    b("COPY", "h", "l"), b("TYPE", "l"), b("COPY", "h", "l", "REPLACE"),
    b("TYPE", "l"), b("HGETALL", "l"), b("COPY", "z", "s2", "REPLACE"),
    b("TYPE", "s2"),
    # expiries copied, none left on a copy of a key without one
    b("EXPIRE", "h", "1000"), b("COPY", "h", "h3"), b("TTL", "h3"),
    b("COPY", "s", "h3", "REPLACE"), b("TTL", "h3"),
    b("PEXPIRE", "l", "1"), b("COPY", "t", "l2", "REPLACE"),
    # large values: every encoding Redis would give them
    [b"HSET", b"bh"] + [x for f in MANY for x in (f, f)], b("COPY", "bh", "bh2"),
    b("HLEN", "bh2"), b("HGETALL", "bh2"),
    [b"ZADD", b"bz"] + [x for i, f in enumerate(MANY) for x in (b"%d" % i, f)],
    b("COPY", "bz", "bz2"), b("ZRANGE", "bz2", "0", "-1", "WITHSCORES"),
    [b"SADD", b"bt"] + [b"%d" % i for i in range(600)], b("COPY", "bt", "bt2"),
    b("SCARD", "bt2"), b("SMEMBERS", "bt2"),
    [b"RPUSH", b"bl"] + MANY * 10, b("COPY", "bl", "bl2"),
    b("LRANGE", "bl2", "0", "-1"),
    b("SET", "bin", BIN), b("COPY", "bin", ""), b("GET", ""),
]

IN_DB1 = [
    b("COPY", "h", "h", "DB", "1"), b("COPY", "bz", "z9", "DB", "1"),
    b("COPY", "s", "s", "DB", "1", "REPLACE"), b("SELECT", "1"),
    b("HGETALL", "h"), b("TTL", "h"), b("ZCARD", "z9"), b("GET", "s"),
    b("COPY", "s", "s", "DB", "0"), b("COPY", "s", "s", "DB", "0", "REPLACE"),
    b("COPY", "z9", "zz"), b("ZCARD", "zz"), b("SELECT", "0"),
    b("GET", "s"), b("EXISTS", "zz"),
]

ENCODINGS = [
    # strings: int, embstr (at most 44 bytes), raw
    b("SET", "e", "12"), b("OBJECT", "ENCODING", "e"), b("SET", "e", "-0"),
    b("OBJECT", "ENCODING", "e"), b("SET", "e", "9223372036854775807"),
    b("OBJECT", "ENCODING", "e"), b("SET", "e", "9223372036854775808"),
    b("OBJECT", "ENCODING", "e"), b("SET", "e", "x" * 44),
    b("OBJECT", "ENCODING", "e"), b("SET", "e", "x" * 45),
    b("OBJECT", "ENCODING", "e"), b("SET", "e", "01"),
    b("OBJECT", "ENCODING", "e"), b("SET", "e", ""),
    b("OBJECT", "ENCODING", "e"), b("INCR", "i"), b("OBJECT", "ENCODING", "i"),
    b("OBJECT", "ENCODING", "nope"), b("LPUSH", "el", "x"),
    b("OBJECT", "ENCODING", "el"),
    # sets: intset up to 512 integers
    [b"SADD", b"es"] + [b"%d" % i for i in range(512)],
    b("OBJECT", "ENCODING", "es"), b("SADD", "es", "512"),
    b("OBJECT", "ENCODING", "es"), b("SADD", "es2", "1", "-5"),
    b("OBJECT", "ENCODING", "es2"), b("SADD", "es2", "a"),
    b("OBJECT", "ENCODING", "es2"),
    # hashes and sorted sets: listpack up to 512 fields (Redis's default
    # without a configuration file) and 128 members, of 64 bytes
    [b"HSET", b"eh"] + [x for f in MANY + MANY2[:212] for x in (f, b"v")],
    b("OBJECT", "ENCODING", "eh"), b("HSET", "eh", "one", "more"),
    b("OBJECT", "ENCODING", "eh"), b("HSET", "eh2", "f", b"v" * 64),
    b("OBJECT", "ENCODING", "eh2"), b("HSET", "eh3", "f", LONGV),
    b("OBJECT", "ENCODING", "eh3"), b("HSET", "eh4", b"f" * 65, "v"),
    b("OBJECT", "ENCODING", "eh4"),
    [b"ZADD", b"ez"] + [x for f in MANY[:128] for x in (b"1", f)],
    b("OBJECT", "ENCODING", "ez"), b("ZADD", "ez", "2", "more"),
    b("OBJECT", "ENCODING", "ez"), b("ZADD", "ez2", "1", b"m" * 64),
    b("OBJECT", "ENCODING", "ez2"), b("ZADD", "ez3", "1", b"m" * 65),
    b("OBJECT", "ENCODING", "ez3"),
    # REFCOUNT: Redis's shared integers, 0 to 9,999
    b("SET", "r", "9999"), b("OBJECT", "REFCOUNT", "r"), b("SET", "r", "10000"),
    b("OBJECT", "REFCOUNT", "r"), b("SET", "r", "-1"),
    b("OBJECT", "REFCOUNT", "r"), b("SET", "r", "abc"),
    b("OBJECT", "REFCOUNT", "r"), b("OBJECT", "REFCOUNT", "eh"),
    b("OBJECT", "REFCOUNT", "nope"),
    # FREQ and IDLETIME under noeviction; HELP
    b("OBJECT", "FREQ", "r"), b("OBJECT", "FREQ", "nope"),
    b("OBJECT", "IDLETIME", "r"), b("OBJECT", "IDLETIME", "nope"),
    b("OBJECT", "HELP"), b("object", "Help"),
]

LCS = [
    b("SET", "a", "ohmytext"), b("SET", "b", "mynewtext"), b("LCS", "a", "b"),
    b("LCS", "a", "b", "LEN"), b("LCS", "a", "b", "IDX"),
    b("LCS", "a", "b", "IDX", "WITHMATCHLEN"),
    b("LCS", "a", "b", "IDX", "MINMATCHLEN", "4"),
    b("LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"),
    b("LCS", "a", "b", "IDX", "MINMATCHLEN", "-4"),
    b("LCS", "a", "b", "LEN", "IDX"), b("LCS", "a", "b", "IDX", "LEN"),
    b("LCS", "a", "b", "MINMATCHLEN"), b("LCS", "a", "b", "MINMATCHLEN", "x"),
    b("LCS", "a", "b", "BOGUS"), b("LCS", "a", "nope"),
    b("LCS", "nope", "nope", "IDX"), b("LCS", "a", "a", "IDX"),
    b("LCS", "a", "nope", "LEN"), b("SET", "c", ""), b("LCS", "c", "a", "IDX"),
    b("LPUSH", "lst", "x"), b("LCS", "a", "lst"), b("LCS", "lst", "a", "BOGUS"),
    b("LCS", "a", "lst", "LEN", "IDX"), b("SET", "n1", "12345"),
    b("SET", "n2", "2345"), b("LCS", "n1", "n2", "IDX", "WITHMATCHLEN"),
    b("SET", "x1", BIN), b("SET", "x2", BIN[::-1] + BIN),
    b("LCS", "x1", "x2", "IDX", "WITHMATCHLEN"),
    b("SET", "g1", "ACCGGTCGAGTGCGCGGAAGCCGGCCGAA" * 20),
    b("SET", "g2", "GTCGTTCGGAATGCCGTTGCTCTGTAAA" * 20),
    b("LCS", "g1", "g2"), b("LCS", "g1", "g2", "IDX", "MINMATCHLEN", "3"),
]

RESTORES = [
    # options and their errors in Redis's order: options, BUSYKEY, TTL,
    # the payload
    b("SET", "src", "v"), b("RESTORE", "k", "0", "x", "BOGUS"),
    b("RESTORE", "k", "0", "x", "IDLETIME"), b("RESTORE", "k", "0", "x",
                                               "IDLETIME", "x"),
    b("RESTORE", "k", "0", "x", "IDLETIME", "-1"),
    b("RESTORE", "k", "0", "x", "FREQ", "256"),
    b("RESTORE", "k", "0", "x", "FREQ", "-1"),
    b("RESTORE", "k", "0", "x", "FREQ", "x"),
    b("RESTORE", "k", "0", "x", "IDLETIME", "1", "FREQ", "1"),
    b("RESTORE", "k", "0", "x", "FREQ", "1", "IDLETIME", "1"),
    b("RESTORE", "src", "0", "x"), b("RESTORE", "src", "x", "x"),
    b("RESTORE", "src", "-1", "x", "REPLACE"),
    b("RESTORE", "src", "x", "x", "REPLACE"),
    b("RESTORE", "k", "x", "x"), b("RESTORE", "k", "-1", "x"),
    b("RESTORE", "k", "0", "x"), b("RESTORE", "k", "0", ""),
    b("RESTORE", "k", "0", b"\x00" * 10),
    # payloads made by hand
    [b"RESTORE", b"k", b"0", payload(b"\x00" + rdb_str(b"hand"))],
    b("GET", "k"),
    [b"RESTORE", b"k", b"0", payload(b"\x00" + rdb_str(b"x"))],
    [b"RESTORE", b"k", b"0", payload(b"\x00" + rdb_str(b"x")), b"REPLACE"],
    b("GET", "k"),
    [b"RESTORE", b"k9", b"0", payload(b"\x00" + rdb_str(b"v9"), 9)],
    b("GET", "k9"),
    [b"RESTORE", b"k11", b"0", payload(b"\x00" + rdb_str(b"x"), 11)],
    [b"RESTORE", b"k", b"0", payload(b"\x00" + rdb_str(b"x"))[:-1] + b"\x00",
     b"REPLACE"],
    [b"RESTORE", b"k", b"0", payload(b"\x63" + rdb_str(b"x")), b"REPLACE"],
    [b"RESTORE", b"k", b"0", payload(b"\x00\x3f" + b"x"), b"REPLACE"],
    [b"RESTORE", b"k", b"0", payload(b"\x00\xc0\x05"), b"REPLACE"],
    b("GET", "k"),
    [b"RESTORE", b"k", b"0", payload(b"\x00\xc1\x39\x30"), b"REPLACE"],
    b("GET", "k"),
    [b"RESTORE", b"k", b"0", payload(b"\x00\xc2\x00\x00\x00\x80"),
     b"REPLACE"], b("GET", "k"),
    [b"RESTORE", b"k", b"0", payload(b"\x00\xc4\x05"), b"REPLACE"],
    # an empty collection, a duplicate member
    [b"RESTORE", b"e", b"0", payload(b"\x02\x00")], b("EXISTS", "e"),
    [b"RESTORE", b"e", b"0", payload(b"\x01\x00")],
    [b"RESTORE", b"e", b"0", payload(b"\x04\x00")],
    [b"RESTORE", b"e", b"0", payload(b"\x02\x02" + rdb_str(b"a") +
                                     rdb_str(b"a"))],
    [b"RESTORE", b"e", b"0", payload(b"\x04\x02" + rdb_str(b"a") +
                                     rdb_str(b"1") + rdb_str(b"a") +
                                     rdb_str(b"2"))],
    b("EXISTS", "e"),
    # plain (old) types: a list, a set, a sorted set with scores as text
    [b"RESTORE", b"p1", b"0", payload(b"\x01\x03" + rdb_str(b"a") +
                                      rdb_str(b"") + b"\xc0\x07")],
    b("LRANGE", "p1", "0", "-1"),
    [b"RESTORE", b"p2", b"0", payload(b"\x02\x02" + rdb_str(b"7") +
                                      rdb_str(b"x"))], b("SMEMBERS", "p2"),
    [b"RESTORE", b"p3", b"0", payload(b"\x03\x03" + rdb_str(b"a") +
                                      b"\x031.5" + rdb_str(b"b") + b"\xfe" +
                                      rdb_str(b"c") + b"\xff")],
    b("ZRANGE", "p3", "0", "-1", "WITHSCORES"),
    # Redis 6's ziplists (RDB 9): a list, a sorted set, a hash, a
    # quicklist of two
    [b"RESTORE", b"z1", b"0", payload(
        b"\x0a" + rdb_str(ziplist([b"a", 5, b"x" * 70, -300])), 9)],
    b("LRANGE", "z1", "0", "-1"),
    [b"RESTORE", b"z2", b"0", payload(
        b"\x0c" + rdb_str(ziplist([b"m", b"1.5", b"n", 2])), 9)],
    b("ZRANGE", "z2", "0", "-1", "WITHSCORES"),
    [b"RESTORE", b"z3", b"0", payload(
        b"\x0d" + rdb_str(ziplist([b"f", b"v", b"g", 12])), 9)],
    b("HGETALL", "z3"),
    [b"RESTORE", b"z4", b"0", payload(
        b"\x0e\x02" + rdb_str(ziplist([b"a", b"b"])) +
        rdb_str(ziplist([1, 2, 3])), 9)],
    b("LRANGE", "z4", "0", "-1"),
    # TTLs: relative, absolute, past (nothing created; REPLACE removes)
    b("DUMP", "src"), b("SET", "t", "v"),
    [b"__RESTORE", b"redis", b"src", b"t1", b"5000"], b("PTTL", "t1"),
    [b"__RESTORE", b"pmkv", b"src", b"t2", FAR, b"ABSTTL"],
    b("PEXPIRETIME", "t2"),
    [b"__RESTORE", b"pmkv", b"src", b"t3", PAST, b"ABSTTL"], b("EXISTS", "t3"),
    [b"__RESTORE", b"redis", b"src", b"t", PAST, b"ABSTTL"],
    [b"__RESTORE", b"redis", b"src", b"t", PAST, b"ABSTTL", b"REPLACE"],
    b("EXISTS", "t"), [b"__RESTORE", b"pmkv", b"src", b"t", b"1", b"absttl"],
    b("EXISTS", "t"), [b"__RESTORE", b"pmkv", b"src", b"t", b"0",
                       b"IDLETIME", b"10", b"replace"],
    [b"__RESTORE", b"redis", b"src", b"t", b"0", b"FREQ", b"10", b"REPLACE",
     b"REPLACE"], b("OBJECT", "FREQ", "t"),
    [b"__RESTORE", b"pmkv", b"nope", b"t", b"0", b"REPLACE"],
]


def _big_values():
    """Every type in its small and its large encodings."""
    reqs = [b("SET", "vs", "x"), b("SET", "vi", "-12345"),
            b("SET", "vl", "y" * 5000), b("SET", "vc", "ab" * 400),
            b("SET", "vn", "4294967296"), b("SET", "vb", BIN * 3)]
    reqs.append([b"RPUSH", b"ll"] + [b"%d" % (i * 977) for i in range(3000)]
                + [b"s" * i for i in range(0, 300, 7)] + [b"z" * 9000])
    reqs.append([b"RPUSH", b"ls", b"1", b"a", b""])
    reqs.append([b"SADD", b"si"] + [b"%d" % (i * 65599 - 2 ** 40)
                                    for i in range(100)])
    reqs.append([b"SADD", b"sw"] + [b"%d" % i for i in range(-300, 300)])
    reqs.append([b"SADD", b"sm"] + MANY)
    reqs.append([b"HSET", b"hs"] + [x for f in MANY[:50] for x in
                                    (f, b"%d" % len(f))])
    reqs.append([b"HSET", b"hl"] + [x for f in MANY + MANY2
                                    for x in (f, f * 3)])
    reqs.append([b"HSET", b"hv", b"a", b"1", b"b", LONGV])
    reqs.append([b"ZADD", b"zs"] + [x for i, f in enumerate(MANY[:100])
                                    for x in (b"%r" % (i / 7 - 3), f)])
    reqs.append([b"ZADD", b"zl"] + [x for i, f in enumerate(MANY)
                                    for x in (b"%d" % (i % 13), f)])
    reqs.append([b"ZADD", b"zi", b"inf", b"a", b"-inf", b"b", b"0", b"c",
                 b"-0", b"d", b"1e300", b"e", b"4503599627370496", b"f"])
    return reqs


BIG_KEYS = [b"vs", b"vi", b"vl", b"vc", b"vn", b"vb", b"ll", b"ls", b"si",
            b"sw", b"sm", b"hs", b"hl", b"hv", b"zs", b"zl", b"zi"]

DUMPS = _big_values() + [b("DUMP", k) for k in BIG_KEYS] + [
    b("OBJECT", "ENCODING", k) for k in BIG_KEYS] + [
    [b"__RESTORE", side, k, k + b"_" + side, b"0"]
    for side in (b"redis", b"pmkv") for k in BIG_KEYS] + [
    b("LRANGE", "ll_pmkv", "0", "-1"), b("LRANGE", "ll_redis", "0", "-1"),
    b("HGETALL", "hl_pmkv"), b("ZRANGE", "zl_redis", "0", "-1", "WITHSCORES"),
    b("ZRANGE", "zi_pmkv", "0", "-1", "WITHSCORES"), b("SMEMBERS", "si_redis"),
    b("GET", "vc_pmkv"), b("GET", "vc_redis"), b("DUMP", "nope"),
    b("EXPIRE", "hl", "1000"), b("DUMP", "hl"),
]

EDGE_CASES = ARITY + COPIES + IN_DB1 + ENCODINGS + LCS + RESTORES + DUMPS


@pytest.mark.features
@needs_redis
@needs_opt
def test_edge_cases(kpair):
    check_crc()
    kpair.run(EDGE_CASES)


@pytest.mark.features
@needs_redis
@needs_opt
def test_clocks_under_lru_and_lfu(kpair):
    """RESTORE's IDLETIME under an LRU policy and FREQ under an LFU one,
    as OBJECT reads them; the other's error under each."""
    try:
        kpair.run([b("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"),
                   b("SET", "src", "v"),
                   [b"__RESTORE", b"redis", b"src", b"a", b"0", b"IDLETIME",
                    b"100"],
                   b("OBJECT", "IDLETIME", "a"), b("OBJECT", "FREQ", "a"),
                   [b"__RESTORE", b"redis", b"src", b"b", b"0", b"FREQ",
                    b"9"],
                   b("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"),
                   [b"__RESTORE", b"pmkv", b"src", b"c", b"0", b"FREQ",
                    b"9"],
                   b("OBJECT", "FREQ", "c"), b("OBJECT", "IDLETIME", "c"),
                   [b"__RESTORE", b"pmkv", b"src", b"d", b"0", b"IDLETIME",
                    b"5"], b("OBJECT", "FREQ", "nope")])
    finally:
        for c in (kpair.ours, kpair.theirs):
            c.send([b("CONFIG", "SET", "maxmemory-policy", "noeviction")])


# ---- random sequences -------------------------------------------------

KEYS = [b"a", b"b", b"c", b"d", b"", b"x\x00y"]
ALPHABETS = [b"ab", b"abc", b"acgt", b"0123456789", b"xyz "]


def _lcs_value(rnd):
    alpha = rnd.choice(ALPHABETS)
    return bytes(rnd.choice(alpha) for _ in range(rnd.randrange(0, 60)))


def _elems(rnd, lo, hi):
    return [rand_value(rnd) for _ in range(rnd.randrange(lo, hi))]


def _bulk(rnd):
    """Many elements at once: the large encodings."""
    k = rnd.choice(KEYS)
    n = rnd.randrange(100, 700)
    return rnd.choice([
        [b"RPUSH", k] + [b"e%d" % rnd.randrange(1000) for _ in range(n)],
        [b"SADD", k] + [b"%d" % rnd.randrange(-10 ** 6, 10 ** 6)
                        for _ in range(n)],
        [b"HSET", k] + [x for _ in range(n // 3)
                        for x in (b"f%d" % rnd.randrange(400),
                                  rand_value(rnd))],
        [b"ZADD", k] + [x for _ in range(n // 3)
                        for x in (b"%d" % rnd.randrange(-50, 50),
                                  b"m%d" % rnd.randrange(400))]])


def rand_copy(rnd):
    req = [b"COPY", rnd.choice(KEYS), rnd.choice(KEYS)]
    for _ in range(rnd.choice([0, 0, 1, 1, 2])):
        req += rnd.choice([[b"REPLACE"], [b"DB", b"0"], [b"DB", b"1"],
                           [b"DB", rnd.choice([b"16", b"x"])], [b"BOGUS"]])
    return req


def rand_lcs(rnd):
    req = [b"LCS", rnd.choice(KEYS), rnd.choice(KEYS)]
    for _ in range(rnd.choice([0, 1, 1, 2, 3])):
        req += rnd.choice([[b"LEN"], [b"IDX"], [b"IDX"], [b"WITHMATCHLEN"],
                           [b"MINMATCHLEN", rnd.choice([b"0", b"1", b"2",
                                                        b"3", b"-1", b"x"])]])
    return req


def rand_restore(rnd):
    req = [b"__RESTORE", rnd.choice([b"redis", b"pmkv"]), rnd.choice(KEYS),
           rnd.choice(KEYS), rnd.choice([b"0", b"0", b"100000", b"-1"])]
    for _ in range(rnd.choice([0, 1, 1, 2])):
        req += rnd.choice([[b"REPLACE"], [b"REPLACE"], [b"ABSTTL"],
                           [b"IDLETIME", b"5"], [b"FREQ", b"3"]])
    return req


def rand_read(rnd):
    k = rnd.choice(KEYS)
    return rnd.choice([b("GET", k), b("LRANGE", k, "0", "-1"),
                       b("SMEMBERS", k), b("HGETALL", k),
                       b("ZRANGE", k, "0", "-1", "WITHSCORES"),
                       b("TYPE", k), b("OBJECT", "REFCOUNT", k),
                       b("OBJECT", "FREQ", k), b("STRLEN", k)])


MAKERS = [
    (6, lambda rnd: [b"SET", rnd.choice(KEYS), rnd.choice(
        [rand_value(rnd), _lcs_value(rnd)])]),
    (3, lambda rnd: [b"APPEND", rnd.choice(KEYS), _lcs_value(rnd)]),
    (2, lambda rnd: [b"INCR", rnd.choice(KEYS)]),
    (4, lambda rnd: [rnd.choice([b"RPUSH", b"LPUSH"]), rnd.choice(KEYS)]
     + _elems(rnd, 1, 5)),
    (4, lambda rnd: [b"SADD", rnd.choice(KEYS)] + [
        rnd.choice([b"%d" % rnd.randrange(-99, 99), rand_value(rnd)])
        for _ in range(rnd.randrange(1, 5))]),
    (2, lambda rnd: [b"SREM", rnd.choice(KEYS)] + _elems(rnd, 1, 4)),
    (4, lambda rnd: [b"HSET", rnd.choice(KEYS)] + [
        x for _ in range(rnd.randrange(1, 4))
        for x in (b"f%d" % rnd.randrange(9), rand_value(rnd))]),
    (2, lambda rnd: [b"HDEL", rnd.choice(KEYS)] + [
        b"f%d" % rnd.randrange(9) for _ in range(rnd.randrange(1, 4))]),
    (4, lambda rnd: [b"ZADD", rnd.choice(KEYS)] + [
        x for _ in range(rnd.randrange(1, 4))
        for x in (rnd.choice([b"1", b"-2.5", b"0", b"1e10", b"inf"]),
                  b"m%d" % rnd.randrange(9))]),
    (1, _bulk),
    (6, rand_copy),
    (5, rand_lcs),
    (4, lambda rnd: [b"DUMP", rnd.choice(KEYS)]),
    (4, lambda rnd: [b"OBJECT", b"ENCODING", rnd.choice(KEYS)]),
    (5, rand_restore),
    (6, rand_read),
    (2, lambda rnd: [b"DEL", rnd.choice(KEYS)]),
    (1, lambda rnd: [b"EXPIRE", rnd.choice(KEYS), b"1000"]),
    (1, lambda rnd: [b"PTTL", rnd.choice(KEYS)]),
    (0.5, lambda rnd: [b"SELECT", rnd.choice([b"0", b"1"])]),
]


def random_request(rnd):
    """One request; about one in 50 has its arity broken."""
    req = weighted(rnd, MAKERS)(rnd)
    return req if req[0].startswith(b"__") else break_arity(rnd, req,
                                                            rand_value)


@pytest.mark.features
@needs_redis
@needs_opt
@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + SEEDS))
def test_random(kpair, seed):
    rnd = random.Random(seed * 104729)
    run_batches(kpair, [random_request(rnd)
                        for _ in range(max(COMMANDS // SEEDS, 1))], rnd)


# ---- the wrapped version ----------------------------------------------

@pytest.mark.features
@needs_redis
@wrapped_only
def test_wrapped_strings(kpair):
    """The wrapped version copies, dumps and restores strings as Redis
    does; a collection's payload is refused."""
    kpair.run([b("SET", "s", "v"), b("SET", "n", "77"), b("COPY", "s", "t"),
               b("GET", "t"), b("COPY", "s", "t", "REPLACE"),
               b("DUMP", "s"), b("DUMP", "n"), b("OBJECT", "ENCODING", "n"),
               [b"__RESTORE", b"redis", b"s", b"u", b"0"], b("GET", "u"),
               b("LCS", "s", "t", "IDX")])
    r = kpair.ours.send([[b"RESTORE", b"h", b"0", payload(
        b"\x04\x01" + rdb_str(b"f") + rdb_str(b"v"))]])[0]
    assert r.startswith(b"-ERR this store is pmkv's wrapped version"), r
