# SPDX-License-Identifier: BSD-3-Clause
"""pmkv's sorted sets against Redis 7.0, byte for byte (difftest.py's
machinery, as test_differential.py's).

Compared as test_differential.py compares, and also:

- ZSCAN from cursor 0: a full scan on each server, page after page, and
  the union of the member-score pairs compared (each page must be a
  cursor and an array of bulks of even length); from another cursor,
  each reply must be a page (the cursors are each server's own);
- ZRANDMEMBER: random. The sorted set is read (ZRANGE 0 -1 WITHSCORES)
  on both before, and the replies must have the same shape (nil or a
  member; an array of as many members, or member-score pairs, as Redis's
  rules give: distinct ones for a positive count), every member one of
  the set's with its score; an error or an empty reply the same bytes.

Where Redis's answer is its encoding's, the sequences stay where Redis
has one encoding: every random sorted set is small (a listpack: at most
128 members of at most 64 bytes), which stores -0 as 0 as pmkv does; the
large sets of the edge cases get no -0. The lex commands (BYLEX,
ZLEXCOUNT, ZREMRANGEBYLEX) run on sets whose members all have one score
(Redis documents no order otherwise): the random sequences send them to
keys of their own (LEX_KEYS), written only with score 0.

Two parts, marked features (conftest.py: run once, by
pmkv_server_features): hand-written edge cases (EDGE_CASES), then seeded
random sequences mixing the sorted set commands with SADD (sets are
inputs of ZUNION and its kin), SET, GET, DEL, EXISTS, TYPE, EXPIRE and
TTL on a few keys, so that WRONGTYPE happens both ways:
PMKV_DIFF_ZSET_COMMANDS commands in all (default 3,000, or 200,000 with
PMTX_LONG_TESTS=1) over PMKV_DIFF_SEEDS seeds. The keys are removed with
DEL between tests. The wrapped version holds strings only: there, one
test checks that a sorted set write is refused and a read finds none.
"""
import random

import pytest

from difftest import (  # noqa: F401 (redis_server: zpair's fixture)
    BIG, BIN, FIRST_SEED, KEEP_GOING, REFUSED, SEEDS, SMALL, Pair, b,
    break_arity, commands, drawn_ok, name_of, needs_redis, opt_only,
    pair_fixture, redis_server, run_batches, weighted, wrapped_only)
from rawresp import Conn, parse

COMMANDS = commands("PMKV_DIFF_ZSET_COMMANDS", 3000)

needs_opt = opt_only("test_wrapped_refuses_zsets")

# The other types' commands the tests send: one pmkv does not have yet is
# sent to neither server (the set inputs of ZUNION and its kin are then
# absent on both).
OTHERS = (b"sadd", b"smembers")


class ZsetPair(Pair):
    """Pair, with the comparisons the sorted sets need (the module
    docstring)."""

    def __init__(self, pmkv_port, redis_port):
        Pair.__init__(self, pmkv_port, redis_port)
        info = parse(self.ours.send([[b"COMMAND", b"INFO"] +
                                     list(OTHERS)])[0])
        self.missing = {n for n, i in zip(OTHERS, info) if i is None}

    def run(self, requests):
        Pair.run(self, [r for r in requests if isinstance(r, bytes)
                        or name_of(r) not in self.missing])

    def _special(self, req):
        if (not isinstance(req, bytes) and name_of(req) == b"zrandmember"
                and 2 <= len(req) <= 4):
            return self._random
        return Pair._special(self, req)

    def _random(self, req):
        v = self._read(b("ZRANGE", req[1], "0", "-1", "WITHSCORES"))
        before = dict(zip(v[0::2], v[1::2])) if isinstance(v, list) else {}
        ours, theirs = self._both(req)
        self._check(req, ours, theirs, drawn_ok(req, ours, theirs, before))


zpair = pair_fixture(ZsetPair)


# ---- the edge cases ---------------------------------------------------

LONGM = b"l" * 100  # longer than a listpack member: a skiplist in Redis


def zadd(key, pairs):
    """ZADD key with (score, member) pairs."""
    out = [b"ZADD", key]
    for s, m in pairs:
        out += [s if isinstance(s, bytes) else b"%r" % s, m]
    return out


# 200 members of distinct scores, and 150 of one score: skiplists in Redis
MANY = zadd(b"many", [(float(i * 7 % 200) / 4, b"m%03d" % i)
                      for i in range(200)])
SAME = zadd(b"same", [(b"0", b"w%03d" % i) for i in range(150)])

ARITY = [
    b("ZADD"), b("ZADD", "z"), b("ZADD", "z", "1"), b("ZINCRBY", "z", "1"),
    b("ZINCRBY", "z", "1", "a", "b"), b("ZSCORE", "z"),
    b("ZSCORE", "z", "a", "b"), b("ZMSCORE", "z"), b("ZCARD"),
    b("ZCARD", "a", "b"), b("ZRANK", "z"), b("ZREVRANK", "z", "a", "b"),
    b("ZRANGE", "z", "0"), b("ZRANGESTORE", "d", "z", "0"),
    b("ZREVRANGE", "z", "0"), b("ZRANGEBYSCORE", "z", "0"),
    b("ZREVRANGEBYSCORE", "z"), b("ZRANGEBYLEX", "z", "-"),
    b("ZREVRANGEBYLEX", "z", "+"), b("ZREM", "z"),
    b("ZREMRANGEBYRANK", "z", "0"), b("ZREMRANGEBYSCORE", "z", "0", "1", "2"),
    b("ZREMRANGEBYLEX", "z"), b("ZCOUNT", "z", "0"),
    b("ZLEXCOUNT", "z", "-", "+", "x"), b("ZPOPMIN"), b("ZPOPMAX"),
    b("ZMPOP", "1", "z"), b("ZRANDMEMBER"), b("ZUNION", "1"), b("ZINTER"),
    b("ZDIFF", "1"), b("ZUNIONSTORE", "d", "1"), b("ZINTERSTORE", "d"),
    b("ZDIFFSTORE", "d", "1"), b("ZINTERCARD", "1"), b("ZSCAN", "z"),
    b("zadd"), b("ZaDd", "z", "1"),
]

WRONG_TYPE = [
    # the sorted set commands on a string
    b("SET", "str", "v"), b("ZADD", "str", "1", "a"),
    b("ZADD", "str", "XX", "1", "a"), b("ZINCRBY", "str", "1", "a"),
    b("ZSCORE", "str", "a"), b("ZMSCORE", "str", "a", "b"),
    b("ZCARD", "str"), b("ZRANK", "str", "a"), b("ZREVRANK", "str", "a"),
    b("ZRANGE", "str", "0", "-1"), b("ZRANGE", "str", "0", "1", "BYSCORE"),
    b("ZRANGE", "str", "-", "+", "BYLEX"), b("ZREVRANGE", "str", "0", "1"),
    b("ZRANGEBYSCORE", "str", "0", "1"), b("ZREVRANGEBYLEX", "str", "+", "-"),
    b("ZRANGESTORE", "d", "str", "0", "-1"),
    b("ZRANGESTORE", "str", "nope", "0", "-1"), b("TYPE", "str"),
    b("SET", "str", "v"), b("ZREM", "str", "a"),
    b("ZREMRANGEBYRANK", "str", "0", "1"),
    b("ZREMRANGEBYSCORE", "str", "0", "1"),
    b("ZREMRANGEBYLEX", "str", "-", "+"), b("ZCOUNT", "str", "0", "1"),
    b("ZLEXCOUNT", "str", "-", "+"), b("ZPOPMIN", "str"),
    b("ZPOPMAX", "str", "0"), b("ZMPOP", "1", "str", "MIN"),
    b("ZMPOP", "2", "nope", "str", "MAX"), b("ZRANDMEMBER", "str"),
    b("ZRANDMEMBER", "str", "0"), b("ZRANDMEMBER", "str", "-3", "WITHSCORES"),
    b("ZUNION", "1", "str"), b("ZINTER", "2", "nope", "str"),
    b("ZDIFF", "2", "nope", "str"), b("ZUNIONSTORE", "d", "1", "str"),
    b("ZINTERCARD", "1", "str"), b("ZSCAN", "str", "0"),
    b("ZSCAN", "str", "0", "BOGUS"), b("ZSCAN", "str", "x"), b("GET", "str"),
    # the string commands on a sorted set
    b("ZADD", "z", "1", "a", "2", "b"), b("GET", "z"), b("APPEND", "z", "x"),
    b("INCR", "z"), b("STRLEN", "z"), b("GETRANGE", "z", "0", "-1"),
    b("GETSET", "z", "v"), b("GETDEL", "z"), b("SETNX", "z", "v"),
    b("SET", "z", "v", "GET"), b("MGET", "z", "str", "nope"), b("TYPE", "z"),
    b("SADD", "z", "a"), b("SMEMBERS", "z"), b("ZRANGE", "z", "0", "-1"),
    # a sorted set replaced by SET, and back
    b("SET", "z", "v"), b("TYPE", "z"), b("GET", "z"),
    b("ZADD", "z", "1", "a"),
    b("DEL", "z"), b("ZADD", "z", "1", "a"), b("TYPE", "z"), b("ZCARD", "z"),
]

ZADDS = [
    b("ZADD", "z", "1", "a", "2", "b", "3", "c"), b("ZADD", "z", "1", "a"),
    b("ZADD", "z", "CH", "1", "a", "5", "b", "0", "d"),
    b("ZRANGE", "z", "0", "-1", "WITHSCORES"),
    b("ZADD", "z", "NX", "9", "a", "9", "e"), b("ZADD", "z", "XX", "9", "a",
                                                  "9", "f"),
    b("ZADD", "z", "XX", "CH", "8", "a", "9", "f"),
    b("ZADD", "z", "GT", "CH", "1", "a", "20", "b", "1", "g"),
    b("ZADD", "z", "LT", "CH", "2", "a", "30", "b", "1", "h"),
    b("ZADD", "z", "GT", "XX", "CH", "100", "a", "1", "zz"),
    b("ZRANGE", "z", "0", "-1", "WITHSCORES"),
    b("ZADD", "z", "INCR", "5", "a"), b("ZADD", "z", "INCR", "5", "new"),
    b("ZADD", "z", "INCR", "NX", "5", "a"), b("ZADD", "z", "INCR", "XX", "5",
                                                "nope"),
    b("ZADD", "z", "INCR", "GT", "-5", "a"), b("ZADD", "z", "INCR", "LT", "-5",
                                                 "a"),
    b("ZADD", "z", "incr", "gt", "0", "a"), b("ZADD", "z", "INCR", "0", "a"),
    b("ZADD", "nope", "XX", "1", "a"), b("EXISTS", "nope"),
    b("ZADD", "nope", "XX", "INCR", "1", "a"), b("EXISTS", "nope"),
    b("ZADD", "nope", "GT", "1", "a"), b("ZSCORE", "nope", "a"),
    b("ZADD", "dup", "1", "a", "2", "a", "3", "b"),
    b("ZADD", "dup", "CH", "5", "a", "5", "a", "4", "b", "3", "b"),
    b("ZRANGE", "dup", "0", "-1", "WITHSCORES"),
    # the options refused, in Redis's order
    b("ZADD", "z", "NX", "XX", "1", "a"), b("ZADD", "z", "NX", "GT", "1", "a"),
    b("ZADD", "z", "LT", "NX", "1", "a"), b("ZADD", "z", "GT", "LT", "1", "a"),
    b("ZADD", "z", "INCR", "1", "a", "2", "b"), b("ZADD", "z", "1", "a", "2"),
    b("ZADD", "z", "NX"), b("ZADD", "z", "NX", "XX", "1"),
    b("ZADD", "z", "INCR", "GT", "LT", "1", "a", "2", "b"),
    b("ZADD", "z", "BOGUS", "1", "a"), b("ZADD", "z", "1", "a", "x", "b"),
    b("ZADD", "str", "x", "a"), b("ZADD", "str", "NX", "XX", "1", "a"),
    # floats as Redis reads them
    b("ZADD", "f", "nan", "a"), b("ZADD", "f", "NaN", "a"),
    b("ZADD", "f", "", "a"), b("ZADD", "f", " 1", "a"),
    b("ZADD", "f", "1 ", "a"), b("ZADD", "f", "1e400", "a"),
    b("ZADD", "f", "-1e400", "a"), b("ZADD", "f", "1e-400", "a"),
    b("ZADD", "f", b"1\x00", "a"), b("ZADD", "f", "abc", "a"),
    b("ZADD", "f", "0x10", "hex", "1e-310", "sub", "inf", "pinf",
      "-inf", "ninf", "+inf", "pinf2", "Infinity", "pinf3", "-0", "nz",
      "0.1", "tenth", "1e17", "big", "123456789012345678", "bigger",
      "-2.5e-7", "tiny", "1.7976931348623157e308", "max", "+5", "plus",
      ".5", "half", "5.", "five"),
    b("ZRANGE", "f", "0", "-1", "WITHSCORES"), b("ZSCORE", "f", "nz"),
    b("ZSCORE", "f", "tenth"), b("ZMSCORE", "f", "sub", "nope", "max"),
    # ZINCRBY, and NaN
    b("ZINCRBY", "f", "1", "tenth"), b("ZINCRBY", "f", "-inf", "pinf"),
    b("ZSCORE", "f", "pinf"), b("ZINCRBY", "f", "inf", "ninf"),
    b("ZADD", "f", "INCR", "inf", "ninf"), b("ZINCRBY", "f", "-0", "nz2"),
    b("ZSCORE", "f", "nz2"), b("ZINCRBY", "f", "0", "nz2"),
    b("ZINCRBY", "f", "x", "a"), b("ZINCRBY", "f", "nan", "a"),
    b("ZINCRBY", "f", "NX", "a"), b("ZINCRBY", "f", "1e308", "max"),
    b("ZINCRBY", "f", "1e308", "max"), b("ZINCRBY", "nope2", "2", "a"),
    b("ZINCRBY", "str", "2", "a"), b("ZSCORE", "nope2", "a"),
]

SINGLE = [
    b("ZADD", "s", "1", "a", "2", "b", "2", "c", "3", "", "4", BIN,
      "5", "a\x00b"),
    b("ZSCORE", "s", "a"), b("ZSCORE", "s", ""), b("ZSCORE", "s", BIN),
    b("ZSCORE", "s", "zz"), b("ZSCORE", "nope", "a"),
    b("ZMSCORE", "s", "a", "zz", "c", "a"), b("ZMSCORE", "nope", "a", "b"),
    b("ZCARD", "s"), b("ZCARD", "nope"),
    b("ZRANK", "s", "a"), b("ZRANK", "s", "c"), b("ZRANK", "s", "a\x00b"),
    b("ZRANK", "s", "zz"), b("ZRANK", "nope", "a"),
    b("ZREVRANK", "s", "a"), b("ZREVRANK", "s", "b"), b("ZREVRANK", "s", "zz"),
    b("ZREM", "s", "a", "zz", "a"), b("ZREM", "nope", "a"), b("ZCARD", "s"),
    # the key goes with its last member
    b("ZREM", "s", "b", "c", "", BIN, "a\x00b", "zz"), b("EXISTS", "s"),
    b("TYPE", "s"), b("ZCARD", "s"),
    b("ZADD", "one", "1", "x"), b("ZPOPMIN", "one"), b("EXISTS", "one"),
    b("ZADD", "one", "1", "x", "2", "y"), b("ZPOPMAX", "one", "5"),
    b("EXISTS", "one"), b("ZADD", "one", "1", "x"),
    b("ZREMRANGEBYRANK", "one", "0", "-1"), b("EXISTS", "one"),
    b("ZADD", "one", "1", "x"), b("ZREMRANGEBYSCORE", "one", "-inf", "inf"),
    b("EXISTS", "one"), b("ZADD", "one", "0", "x"),
    b("ZREMRANGEBYLEX", "one", "-", "+"), b("EXISTS", "one"),
    b("ZADD", "one", "0", "x"), b("ZMPOP", "1", "one", "MIN", "COUNT", "9"),
    b("EXISTS", "one"),
    # an empty key and members, long ones
    b("ZADD", "", "1", ""), b("ZRANGE", "", "0", "-1", "WITHSCORES"),
    b("ZADD", "lng", "1", "x" * 70000, "2", "y" * 5000),
    b("ZRANGE", "lng", "0", "-1"), b("ZSCORE", "lng", "x" * 70000),
]

RANGES = [
    b("ZADD", "r", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e",
      "-inf", "lo", "inf", "hi", "2", "bb"),
    # by rank: negative, out of range, reversed
    b("ZRANGE", "r", "0", "-1"), b("ZRANGE", "r", "0", "-1", "WITHSCORES"),
    b("ZRANGE", "r", "2", "4"), b("ZRANGE", "r", "-3", "-1"),
    b("ZRANGE", "r", "-100", "100"), b("ZRANGE", "r", "5", "2"),
    b("ZRANGE", "r", "100", "200"), b("ZRANGE", "r", "-1", "-3"),
    b("ZRANGE", "r", SMALL, BIG), b("ZRANGE", "r", "0", "0"),
    b("ZRANGE", "r", "0", "-1", "REV"), b("ZRANGE", "r", "1", "2", "REV",
                                            "WITHSCORES"),
    b("ZREVRANGE", "r", "0", "2"), b("ZREVRANGE", "r", "-2", "-1",
                                     "WITHSCORES"),
    b("ZREVRANGE", "r", "0", "-1", "withscores", "WITHSCORES"),
    b("ZRANGE", "r", "a", "1"), b("ZRANGE", "r", "0", "1.5"),
    b("ZRANGE", "nope", "0", "-1"), b("ZREVRANGE", "nope", "0", "-1"),
    # by score: exclusive bounds, infinities, LIMIT
    b("ZRANGE", "r", "2", "4", "BYSCORE"),
    b("ZRANGE", "r", "(2", "4", "BYSCORE", "WITHSCORES"),
    b("ZRANGE", "r", "2", "(4", "BYSCORE"), b("ZRANGE", "r", "(2", "(2",
                                                 "BYSCORE"),
    b("ZRANGE", "r", "2", "2", "BYSCORE"), b("ZRANGE", "r", "3", "2",
                                                "BYSCORE"),
    b("ZRANGE", "r", "-inf", "+inf", "BYSCORE"),
    b("ZRANGE", "r", "(-inf", "(+inf", "BYSCORE"),
    b("ZRANGE", "r", "(inf", "inf", "BYSCORE"),
    b("ZRANGE", "r", "-inf", "(-inf", "BYSCORE"),
    b("ZRANGE", "r", "-inf", "-inf", "BYSCORE"),
    b("ZRANGE", "r", "inf", "inf", "BYSCORE", "WITHSCORES"),
    b("ZRANGE", "r", "", "(", "BYSCORE"), b("ZRANGE", "r", " 1", "3 ",
                                               "BYSCORE"),
    b("ZRANGE", "r", "1e400", "-1e400", "BYSCORE"),
    b("ZRANGE", "r", "0x1", "0x3", "BYSCORE"),
    b("ZRANGE", "r", b"2\x00junk", "3", "BYSCORE"),
    b("ZRANGE", "r", "4", "2", "BYSCORE", "REV"),
    b("ZRANGE", "r", "(4", "-inf", "BYSCORE", "REV", "WITHSCORES"),
    b("ZRANGE", "r", "-inf", "inf", "BYSCORE", "LIMIT", "1", "2"),
    b("ZRANGE", "r", "-inf", "inf", "BYSCORE", "LIMIT", "1", "-1"),
    b("ZRANGE", "r", "-inf", "inf", "BYSCORE", "LIMIT", "0", "0"),
    b("ZRANGE", "r", "-inf", "inf", "BYSCORE", "LIMIT", "-1", "2"),
    b("ZRANGE", "r", "-inf", "inf", "BYSCORE", "LIMIT", "7", "5"),
    b("ZRANGE", "r", "-inf", "inf", "BYSCORE", "LIMIT", "8", "5"),
    b("ZRANGE", "r", "-inf", "inf", "BYSCORE", "LIMIT", "100", "5"),
    b("ZRANGE", "r", "-inf", "inf", "BYSCORE", "LIMIT", BIG, BIG),
    b("ZRANGE", "r", "inf", "-inf", "BYSCORE", "REV", "LIMIT", "2", "3",
      "WITHSCORES"),
    b("ZRANGE", "r", "1", "4", "LIMIT", "0", "2", "BYSCORE"),
    b("ZRANGE", "r", "1", "4", "BYSCORE", "LIMIT", "0", "1", "LIMIT", "1",
      "2"),
    b("ZRANGEBYSCORE", "r", "1", "3"), b("ZRANGEBYSCORE", "r", "(1", "(3",
                                           "WITHSCORES"),
    b("ZRANGEBYSCORE", "r", "-inf", "inf", "LIMIT", "2", "2", "WITHSCORES"),
    b("ZREVRANGEBYSCORE", "r", "3", "1"), b("ZREVRANGEBYSCORE", "r", "1", "3"),
    b("ZREVRANGEBYSCORE", "r", "+inf", "-inf", "WITHSCORES", "LIMIT", "1",
      "3"),
    b("ZRANGEBYSCORE", "nope", "0", "1"),
    # the family's options refused, in Redis's order
    b("ZRANGE", "r", "0", "-1", "LIMIT", "0", "1"),
    b("ZRANGE", "r", "0", "-1", "LIMIT", "0", "-1"),
    b("ZRANGE", "r", "a", "b", "LIMIT", "0", "1"),
    b("ZRANGE", "r", "0", "-1", "BYLEX", "WITHSCORES"),
    b("ZRANGE", "r", "[a", "[b", "BYLEX", "WITHSCORES", "LIMIT", "0", "1"),
    b("ZRANGE", "r", "0", "-1", "LIMIT", "0"),
    b("ZRANGE", "r", "0", "-1", "LIMIT", "x", "1"),
    b("ZRANGE", "r", "0", "-1", "LIMIT", "0", "x"),
    b("ZRANGE", "r", "0", "-1", "BYSCORE", "BYSCORE"),
    b("ZRANGE", "r", "0", "-1", "BYSCORE", "BYLEX"),
    b("ZRANGE", "r", "0", "-1", "REV", "REV"), b("ZRANGE", "r", "0", "-1",
                                                   "BOGUS"),
    b("ZRANGE", "str", "0", "-1", "BOGUS"), b("ZRANGE", "str", "a", "b"),
    b("ZRANGE", "str", "x", "1", "BYSCORE"), b("ZRANGE", "r", "x", "1",
                                                 "BYSCORE"),
    b("ZRANGE", "r", "nan", "1", "BYSCORE"), b("ZRANGE", "r", "(nan", "1",
                                                  "BYSCORE"),
    b("ZRANGE", "r", "[1", "2", "BYSCORE"), b("ZRANGE", "r", "1", "((2",
                                                 "BYSCORE"),
    b("ZRANGEBYSCORE", "r", "0", "1", "REV"),
    b("ZRANGEBYSCORE", "r", "0", "1", "BYSCORE"),
    b("ZREVRANGE", "r", "0", "1", "LIMIT", "0", "1"),
    b("ZREVRANGE", "r", "0", "1", "BYSCORE"),
    b("ZRANGEBYLEX", "r", "-", "+", "WITHSCORES"),
    b("ZRANGEBYLEX", "r", "a", "b"), b("ZRANGEBYLEX", "r", "[a", "b"),
    b("ZRANGEBYLEX", "r", "-", "+x"), b("ZRANGEBYLEX", "r", "", "+"),
    b("ZRANGEBYLEX", "r", "+", "-"),
    b("ZCOUNT", "r", "x", "1"), b("ZCOUNT", "str", "x", "1"),
    b("ZLEXCOUNT", "r", "a", "b"), b("ZREMRANGEBYRANK", "r", "a", "1"),
    b("ZREMRANGEBYSCORE", "str", "a", "1"),
    b("ZREMRANGEBYLEX", "str", "a", "1"),
    # ZCOUNT
    b("ZCOUNT", "r", "-inf", "+inf"), b("ZCOUNT", "r", "(1", "(3"),
    b("ZCOUNT", "r", "2", "2"), b("ZCOUNT", "r", "5", "1"),
    b("ZCOUNT", "r", "(inf", "inf"), b("ZCOUNT", "nope", "0", "1"),
    # ZRANGESTORE: the destination replaced, its expiry gone, or removed
    b("ZRANGESTORE", "d", "r", "0", "2"), b("ZRANGE", "d", "0", "-1",
                                               "WITHSCORES"),
    b("ZRANGESTORE", "d", "r", "(1", "inf", "BYSCORE", "REV", "LIMIT",
      "1", "3"),
    b("ZRANGE", "d", "0", "-1", "WITHSCORES"),
    b("SET", "sd", "v", "EX", "1000"), b("ZRANGESTORE", "sd", "r", "0", "0"),
    b("TTL", "sd"), b("TYPE", "sd"), b("EXPIRE", "d", "1000"),
    b("ZRANGESTORE", "d", "r", "-1", "-1"), b("TTL", "d"),
    b("ZRANGESTORE", "d", "r", "5", "2"), b("EXISTS", "d"),
    b("ZRANGESTORE", "sd", "nope", "0", "-1"), b("EXISTS", "sd"),
    b("ZRANGESTORE", "r2", "r", "0", "-1"), b("ZRANGESTORE", "r2", "r2", "1",
                                                "-2"),
    b("ZRANGE", "r2", "0", "-1", "WITHSCORES"),
    b("ZRANGESTORE", "d", "r", "0", "-1", "WITHSCORES"),
    b("ZRANGESTORE", "d", "r", "0", "-1", "LIMIT", "0", "1"),
    b("ZRANGESTORE", "d", "str", "0", "-1"), b("ZRANGESTORE", "d", "r", "x",
                                                 "1"),
    # ZREMRANGEBYRANK, ZREMRANGEBYSCORE
    b("ZREMRANGEBYRANK", "r2", "1", "2"), b("ZRANGE", "r2", "0", "-1"),
    b("ZREMRANGEBYRANK", "r2", "-1", "-1"), b("ZREMRANGEBYRANK", "r2", "5",
                                                "1"),
    b("ZREMRANGEBYRANK", "r2", "100", "200"), b("ZREMRANGEBYRANK", "nope",
                                                  "0", "1"),
    b("ZREMRANGEBYSCORE", "r2", "(2", "4"), b("ZRANGE", "r2", "0", "-1"),
    b("ZREMRANGEBYSCORE", "r2", "10", "20"), b("ZREMRANGEBYSCORE", "nope",
                                                 "0", "1"),
    b("ZREMRANGEBYSCORE", "r2", "-inf", "(2"),
    b("ZRANGE", "r2", "0", "-1", "WITHSCORES"),
]

LEX = [
    b("ZADD", "x", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e", "0",
      "ab", "0", "", "0", BIN, "0", "a\x00"),
    b("ZRANGEBYLEX", "x", "-", "+"), b("ZRANGEBYLEX", "x", "[b", "[d"),
    b("ZRANGEBYLEX", "x", "(b", "(d"), b("ZRANGEBYLEX", "x", "[a", "(b"),
    b("ZRANGEBYLEX", "x", "[", "+"), b("ZRANGEBYLEX", "x", "(", "+"),
    b("ZRANGEBYLEX", "x", "-", "[a"), b("ZRANGEBYLEX", "x", "-", "(a"),
    b("ZRANGEBYLEX", "x", "[d", "[b"), b("ZRANGEBYLEX", "x", "(b", "[b"),
    b("ZRANGEBYLEX", "x", "+", "+"), b("ZRANGEBYLEX", "x", "-", "-"),
    b("ZRANGEBYLEX", "x", "+", "-"), b("ZRANGEBYLEX", "x", "[z", "+"),
    b("ZRANGEBYLEX", "x", b"+\x00x", "+"), b("ZRANGEBYLEX", "x", b"-\x00",
                                               "+"),
    b("ZRANGEBYLEX", "x", "-", "+", "LIMIT", "2", "3"),
    b("ZRANGEBYLEX", "x", "-", "+", "LIMIT", "-1", "3"),
    b("ZRANGEBYLEX", "x", "-", "+", "LIMIT", "2", "-1"),
    b("ZRANGEBYLEX", "x", "-", "+", "LIMIT", "20", "1"),
    b("ZREVRANGEBYLEX", "x", "+", "-"), b("ZREVRANGEBYLEX", "x", "[d", "(a"),
    b("ZREVRANGEBYLEX", "x", "-", "+"),
    b("ZREVRANGEBYLEX", "x", "+", "-", "LIMIT", "1", "2"),
    b("ZRANGE", "x", "[b", "[d", "BYLEX"), b("ZRANGE", "x", "[d", "[b",
                                               "BYLEX", "REV"),
    b("ZRANGE", "x", "+", "-", "BYLEX", "REV", "LIMIT", "0", "4"),
    b("ZLEXCOUNT", "x", "-", "+"), b("ZLEXCOUNT", "x", "[b", "(d"),
    b("ZLEXCOUNT", "x", "(z", "+"), b("ZLEXCOUNT", "nope", "-", "+"),
    b("ZRANGESTORE", "xd", "x", "(a", "[c", "BYLEX"),
    b("ZRANGE", "xd", "0", "-1", "WITHSCORES"),
    b("ZREMRANGEBYLEX", "x", "[b", "[c"), b("ZRANGEBYLEX", "x", "-", "+"),
    b("ZREMRANGEBYLEX", "x", "(z", "+"), b("ZREMRANGEBYLEX", "nope", "-",
                                             "+"),
    b("ZREMRANGEBYLEX", "x", "-", "(a"), b("ZRANGEBYLEX", "x", "-", "+"),
]

POPS = [
    b("ZADD", "p", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"),
    b("ZPOPMIN", "p"), b("ZPOPMAX", "p"), b("ZPOPMIN", "p", "0"),
    b("ZPOPMIN", "p", "2"), b("ZPOPMAX", "p", "1"), b("ZCARD", "p"),
    b("ZPOPMIN", "p", "-1"), b("ZPOPMIN", "p", "x"), b("ZPOPMIN", "p", ""),
    b("ZPOPMIN", "p", "1", "2"), b("ZPOPMIN", "nope"), b("ZPOPMIN", "nope",
                                                          "0"),
    b("ZPOPMIN", "nope", "-1"), b("ZPOPMAX", "nope", "3"),
    b("ZPOPMAX", "p", BIG), b("EXISTS", "p"),
    b("ZADD", "p", "1", "a", "2", "b", "3", "c"), b("ZADD", "q", "9", "z"),
    b("ZMPOP", "1", "p", "MIN"), b("ZMPOP", "2", "nope", "p", "max"),
    b("ZMPOP", "2", "p", "q", "MAX", "COUNT", "5"), b("ZMPOP", "2", "p", "q",
                                                       "MIN", "COUNT", "5"),
    b("ZMPOP", "2", "p", "q", "MIN"), b("ZMPOP", "2", "nope", "nope2", "MIN"),
    b("ZMPOP", "0", "p", "MIN"), b("ZMPOP", "-1", "p", "MIN"),
    b("ZMPOP", "x", "p", "MIN"), b("ZMPOP", "3", "p", "MIN"),
    b("ZMPOP", BIG, "p", "MIN"), b("ZMPOP", "1", "p", "MID"),
    b("ZMPOP", "1", "p", "MIN", "COUNT"), b("ZMPOP", "1", "p", "MIN",
                                              "COUNT", "0"),
    b("ZMPOP", "1", "p", "MIN", "COUNT", "x"),
    b("ZMPOP", "1", "p", "MIN", "COUNT", "1", "COUNT", "1"),
    b("ZMPOP", "1", "p", "MIN", "BOGUS"), b("ZMPOP", "2", "str", "p", "MIN"),
    b("ZMPOP", "2", "nope", "str", "MIN"), b("ZMPOP", "1", "str", "MIN",
                                               "COUNT", "0"),
    b("ZADD", "p", "1", "a"), b("ZMPOP", "2", "p", "str", "MIN"),
    b("EXISTS", "p"),
]

RANDOMS = [
    b("ZADD", "rm", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"),
    b("ZRANDMEMBER", "nope"), b("ZRANDMEMBER", "nope", "0"),
    b("ZRANDMEMBER", "nope", "5"), b("ZRANDMEMBER", "nope", "-5",
                                     "WITHSCORES"),
    b("ZRANDMEMBER", "nope", "x"), b("ZRANDMEMBER", "nope", SMALL),
    b("ZRANDMEMBER", "rm", "x"), b("ZRANDMEMBER", "rm", "1.5"),
    b("ZRANDMEMBER", "rm", SMALL), b("ZRANDMEMBER", "rm", "1", "WITHSCORE"),
    b("ZRANDMEMBER", "rm", "1", "WITHSCORES", "x"),
    b("ZRANDMEMBER", "rm", "-9223372036854775807", "WITHSCORES"),
    b("ZRANDMEMBER", "rm", "-4611686018427387904", "WITHSCORES"),
    b("ZRANDMEMBER", "rm", "4611686018427387904", "WITHSCORES"),
    b("ZRANDMEMBER", "rm", "0"), b("ZRANDMEMBER", "rm", "0", "WITHSCORES"),
    b("ZRANDMEMBER", "rm"), b("ZRANDMEMBER", "rm", "1"),
    b("ZRANDMEMBER", "rm", "3"), b("ZRANDMEMBER", "rm", "3", "WITHSCORES"),
    b("ZRANDMEMBER", "rm", "5"), b("ZRANDMEMBER", "rm", "9", "withscores"),
    b("ZRANDMEMBER", "rm", BIG), b("ZRANDMEMBER", "rm", "-1"),
    b("ZRANDMEMBER", "rm", "-20", "WITHSCORES"),
]

SCANS = [
    b("ZSCAN", "nope", "0"), b("ZSCAN", "nope", "0", "COUNT", "x"),
    b("ZSCAN", "nope", "0", "BOGUS"), b("ZSCAN", "nope", "x"),
    b("ZADD", "sc", "1", "a", "2", "b", "1.5", "ab", "inf", "ba", "-1", "1",
      "0.1", "10", "0", ""),
    b("ZSCAN", "sc", "0"), b("ZSCAN", "sc", "0", "MATCH", "a*"),
    b("ZSCAN", "sc", "0", "MATCH", "*"), b("ZSCAN", "sc", "0", "MATCH", ""),
    b("ZSCAN", "sc", "0", "COUNT", "1"),
    b("ZSCAN", "sc", "0", "COUNT", "1", "MATCH", "?"),
    b("ZSCAN", "sc", "0", "match", "1*", "count", "100000000000"),
    b("ZSCAN", "sc", "0", "BOGUS"), b("ZSCAN", "sc", "0", "COUNT"),
    b("ZSCAN", "sc", "0", "COUNT", "0"), b("ZSCAN", "sc", "0", "COUNT", "-1"),
    b("ZSCAN", "sc", "0", "COUNT", "x"), b("ZSCAN", "sc", "0", "MATCH"),
    b("ZSCAN", "sc", "0", "TYPE", "zset"), b("ZSCAN", "sc", "0", "NOVALUES"),
    b("ZSCAN", "sc", "0", "MATCH", "a*", "COUNT", "x"),
    b("ZSCAN", "sc", "x"), b("ZSCAN", "sc", " 0"), b("ZSCAN", "sc", "1x"),
    b("ZSCAN", "sc", "-1"), b("ZSCAN", "sc", "18446744073709551616"),
    MANY, b("ZSCAN", "many", "0"), b("ZSCAN", "many", "0", "COUNT", "7"),
    b("ZSCAN", "many", "0", "MATCH", "m1*", "COUNT", "3"),
    # a small set's scores as its listpack holds them: integers up to 2^62
    b("ZADD", "sci", "1e17", "a", "4611686018427387904", "b",
      "-4611686018427387904", "c", "4611686018427387905", "d", "1e18", "e",
      "-1e19", "f", "12345678901234567", "g", "-0", "h", "2.5", "i",
      "inf", "j"),
    b("ZSCAN", "sci", "0"), b("ZRANGE", "sci", "0", "-1", "WITHSCORES"),
]

ALGEBRA = [
    b("ZADD", "A", "1", "a", "2", "b", "3", "c", "0.1", "d"),
    b("ZADD", "B", "10", "b", "20", "c", "30", "e", "0.2", "d"),
    b("ZADD", "C", "5", "c", "6", "e", "0.3", "d", "inf", "f"),
    b("SADD", "S", "a", "c", "x"),
    b("ZUNION", "2", "A", "B"), b("ZUNION", "2", "A", "B", "WITHSCORES"),
    b("ZUNION", "3", "A", "B", "C", "WITHSCORES"),
    b("ZUNION", "3", "C", "B", "A", "WITHSCORES"),
    b("ZUNION", "2", "A", "S", "WITHSCORES"),
    b("ZUNION", "2", "A", "B", "WEIGHTS", "2", "0.5", "WITHSCORES"),
    b("ZUNION", "2", "A", "C", "WEIGHTS", "0", "1", "WITHSCORES"),
    b("ZUNION", "2", "A", "C", "WEIGHTS", "1", "0", "WITHSCORES"),
    b("ZUNION", "2", "A", "C", "WEIGHTS", "-1", "-inf", "WITHSCORES"),
    b("ZUNION", "2", "C", "C", "WEIGHTS", "1", "-1", "WITHSCORES"),
    b("ZUNION", "1", "A", "WEIGHTS", "-1", "WITHSCORES"),
    b("ZUNION", "2", "A", "B", "AGGREGATE", "MIN", "WITHSCORES"),
    b("ZUNION", "2", "A", "B", "AGGREGATE", "max", "WITHSCORES"),
    b("ZUNION", "2", "A", "B", "AGGREGATE", "sum", "WEIGHTS", "1", "2",
      "AGGREGATE", "MAX", "WITHSCORES"),
    b("ZUNION", "2", "A", "nope", "WITHSCORES"),
    b("ZUNION", "2", "nope", "nope2", "WITHSCORES"),
    b("ZINTER", "2", "A", "B", "WITHSCORES"),
    b("ZINTER", "3", "A", "B", "C", "WITHSCORES"),
    b("ZINTER", "3", "C", "A", "B"), b("ZINTER", "2", "A", "S", "WITHSCORES"),
    b("ZINTER", "2", "A", "nope"), b("ZINTER", "2", "A", "A", "WITHSCORES"),
    b("ZINTER", "2", "A", "C", "WEIGHTS", "inf", "0", "WITHSCORES"),
    b("ZINTER", "2", "C", "C", "WEIGHTS", "0", "1", "AGGREGATE", "MIN",
      "WITHSCORES"),
    b("ZINTER", "2", "C", "C", "WEIGHTS", "1", "0", "AGGREGATE", "MAX",
      "WITHSCORES"),
    b("ZINTER", "2", "A", "B", "AGGREGATE", "MIN", "WITHSCORES"),
    b("ZDIFF", "2", "A", "B"), b("ZDIFF", "2", "A", "B", "WITHSCORES"),
    b("ZDIFF", "3", "C", "A", "B", "WITHSCORES"),
    b("ZDIFF", "2", "S", "A", "WITHSCORES"), b("ZDIFF", "2", "A", "A"),
    b("ZDIFF", "1", "A", "WITHSCORES"), b("ZDIFF", "2", "nope", "A"),
    b("ZINTERCARD", "2", "A", "B"), b("ZINTERCARD", "3", "A", "B", "C"),
    b("ZINTERCARD", "2", "A", "B", "LIMIT", "1"),
    b("ZINTERCARD", "2", "A", "B", "LIMIT", "0"),
    b("ZINTERCARD", "2", "A", "S"), b("ZINTERCARD", "1", "A", "LIMIT", "-1"),
    b("ZINTERCARD", "1", "A", "LIMIT", "x"), b("ZINTERCARD", "1", "A",
                                                 "WITHSCORES"),
    b("ZINTERCARD", "2", "str", "A", "LIMIT", "-1"),
    # float sums in Redis's order of the inputs (by size)
    b("ZADD", "F1", "0.1", "m"), b("ZADD", "F2", "0.2", "m", "1", "n"),
    b("ZADD", "F3", "0.3", "m", "1", "n", "2", "o"),
    b("ZUNION", "3", "F3", "F2", "F1", "WITHSCORES"),
    b("ZUNION", "3", "F1", "F3", "F2", "WITHSCORES"),
    b("ZINTER", "3", "F3", "F1", "F2", "WITHSCORES"),
    b("ZINTER", "3", "F3", "F2", "F1", "WEIGHTS", "3", "1e17", "7",
      "WITHSCORES"),
    # numkeys and the options refused, in Redis's order
    b("ZUNION", "0", "A"), b("ZUNION", "-1", "A"), b("ZUNION", "x", "A"),
    b("ZUNION", "3", "A", "B"), b("ZUNION", BIG, "A"),
    b("ZUNIONSTORE", "d", "0", "A"), b("ZDIFF", "0", "A"),
    b("ZINTERSTORE", "d", "0", "A"), b("ZDIFFSTORE", "d", "x", "A"),
    b("ZINTERCARD", "0", "A"),
    b("ZUNION", "2", "str", "A", "WEIGHTS", "x"),
    b("ZUNION", "2", "A", "B", "WEIGHTS", "x"),
    b("ZUNION", "2", "A", "B", "WEIGHTS", "1"),
    b("ZUNION", "2", "A", "B", "WEIGHTS", "1", "x"),
    b("ZUNION", "2", "A", "B", "WEIGHTS", "1", "nan"),
    b("ZUNION", "2", "A", "B", "WEIGHTS", "1", "1e400"),
    b("ZUNION", "1", "A", "WEIGHTS", "0x10", "WITHSCORES"),
    b("ZUNION", "2", "A", "B", "AGGREGATE"),
    b("ZUNION", "2", "A", "B", "AGGREGATE", "avg"),
    b("ZUNION", "2", "A", "B", "BOGUS"),
    b("ZUNION", "2", "A", "B", "WITHSCORES", "WITHSCORES"),
    b("ZUNIONSTORE", "d", "2", "A", "B", "WITHSCORES"),
    b("ZDIFF", "2", "A", "B", "WEIGHTS", "1", "1"),
    b("ZDIFF", "2", "A", "B", "AGGREGATE", "MIN"),
    b("ZINTER", "2", "A", "B", "LIMIT", "1"),
    b("ZUNION", "2", "A", "B", "WEIGHTS", "1", "2", "3"),
    b("ZUNION", "2", "nope", "str", "AGGREGATE", "avg"),
    # the stores: the destination replaced, its expiry gone, or removed
    b("ZUNIONSTORE", "D", "2", "A", "B"), b("ZRANGE", "D", "0", "-1",
                                               "WITHSCORES"),
    b("ZINTERSTORE", "D", "2", "A", "B", "WEIGHTS", "2", "3"),
    b("ZRANGE", "D", "0", "-1", "WITHSCORES"),
    b("ZDIFFSTORE", "D", "2", "A", "B"), b("ZRANGE", "D", "0", "-1",
                                              "WITHSCORES"),
    b("ZUNIONSTORE", "D", "1", "A", "WEIGHTS", "-1"),
    b("ZRANGE", "D", "0", "-1", "WITHSCORES"),
    b("ZUNIONSTORE", "D", "2", "C", "C", "WEIGHTS", "1", "-1"),
    b("ZRANGE", "D", "0", "-1", "WITHSCORES"),
    b("ZUNIONSTORE", "D", "2", "S", "A"), b("ZRANGE", "D", "0", "-1",
                                               "WITHSCORES"),
    b("SET", "sd", "v", "EX", "1000"), b("ZINTERSTORE", "sd", "2", "A", "B"),
    b("TTL", "sd"), b("TYPE", "sd"), b("ZRANGE", "sd", "0", "-1"),
    b("EXPIRE", "D", "1000"), b("ZUNIONSTORE", "D", "1", "C"), b("TTL", "D"),
    b("ZINTERSTORE", "D", "2", "A", "nope"), b("EXISTS", "D"),
    b("SET", "sd", "v"), b("ZDIFFSTORE", "sd", "2", "A", "A"),
    b("EXISTS", "sd"), b("ZUNIONSTORE", "D", "2", "nope", "nope2"),
    b("EXISTS", "D"), b("ZUNIONSTORE", "A2", "1", "A"),
    b("ZUNIONSTORE", "A2", "2", "A2", "B"), b("ZRANGE", "A2", "0", "-1",
                                                 "WITHSCORES"),
    b("ZINTERSTORE", "A2", "2", "A2", "A2"), b("ZRANGE", "A2", "0", "-1",
                                                  "WITHSCORES"),
    b("ZDIFFSTORE", "A2", "2", "A2", "C"), b("ZRANGE", "A2", "0", "-1",
                                                "WITHSCORES"),
    b("ZUNIONSTORE", "S", "1", "S"), b("TYPE", "S"), b("ZRANGE", "S", "0",
                                                         "-1", "WITHSCORES"),
    b("ZUNIONSTORE", "d", "2", "A", "str"), b("ZUNIONSTORE", "str", "1", "A"),
    b("TYPE", "str"), b("SET", "str", "v"),
]

LARGE = [
    # sets Redis keeps as skiplists: many members, or long ones
    MANY, SAME, b("ZCARD", "many"), b("ZRANGE", "many", "0", "9",
                                        "WITHSCORES"),
    b("ZRANGE", "many", "-10", "-1", "REV", "WITHSCORES"),
    b("ZRANGE", "many", "95", "105"), b("ZRANK", "many", "m100"),
    b("ZREVRANK", "many", "m100"), b("ZSCORE", "many", "m150"),
    b("ZRANGEBYSCORE", "many", "10", "(20", "WITHSCORES"),
    b("ZRANGEBYSCORE", "many", "(10", "20", "LIMIT", "3", "4"),
    b("ZREVRANGEBYSCORE", "many", "40", "30", "LIMIT", "1", "5",
      "WITHSCORES"),
    b("ZCOUNT", "many", "12.5", "37.25"), b("ZCOUNT", "many", "(12.5", "inf"),
    b("ZRANGEBYLEX", "same", "[w010", "(w020"),
    b("ZREVRANGEBYLEX", "same", "(w140", "[w130", "LIMIT", "2", "4"),
    b("ZLEXCOUNT", "same", "(w050", "+"), b("ZRANK", "same", "w077"),
    b("ZADD", "many", "CH", "1000", "m000", "-5", "m001", "7", "new"),
    b("ZRANGE", "many", "0", "2", "WITHSCORES"), b("ZINCRBY", "many", "0.25",
                                                     "m050"),
    b("ZRANK", "many", "m050"), b("ZPOPMIN", "many", "3"),
    b("ZPOPMAX", "many", "2"), b("ZREMRANGEBYRANK", "many", "10", "29"),
    b("ZREMRANGEBYSCORE", "many", "(20", "30"), b("ZCARD", "many"),
    b("ZREMRANGEBYLEX", "same", "[w100", "+"), b("ZCARD", "same"),
    b("ZUNIONSTORE", "mu", "2", "many", "same", "WEIGHTS", "2", "1"),
    b("ZCARD", "mu"), b("ZRANGE", "mu", "0", "20", "WITHSCORES"),
    b("ZINTER", "2", "many", "mu", "WITHSCORES"),
    b("ZDIFFSTORE", "md", "2", "mu", "same"), b("ZCARD", "md"),
    b("ZRANGESTORE", "mr", "many", "10", "60", "BYSCORE", "LIMIT", "5", "30"),
    b("ZRANGE", "mr", "0", "-1", "WITHSCORES"),
    b("ZRANDMEMBER", "many", "10"), b("ZRANDMEMBER", "many", "-10",
                                        "WITHSCORES"),
    b("ZRANDMEMBER", "many", "120", "WITHSCORES"),
    b("ZRANDMEMBER", "many", "1000"), b("ZRANDMEMBER", "many"),
    b("ZSCAN", "many", "0", "MATCH", "*1*", "COUNT", "5"),
    b("ZADD", "lm", "1", LONGM, "2", "a", "3", "b"),
    b("ZRANGE", "lm", "0", "-1", "WITHSCORES"), b("ZPOPMIN", "lm"),
    b("ZRANGE", "lm", "0", "-1", "WITHSCORES"),
    b("ZUNIONSTORE", "lu", "2", "lm", "many"), b("ZCARD", "lu"),
]

KEYSPACE = [
    # EXPIRE, TTL, RENAME, DEL and TYPE of a sorted set
    b("ZADD", "ks", "1", "a", "2", "b"), b("EXPIRE", "ks", "1000"),
    b("TTL", "ks"), b("ZADD", "ks", "3", "c"), b("ZREM", "ks", "a"),
    b("ZINCRBY", "ks", "1", "b"), b("TTL", "ks"), b("ZPOPMIN", "ks"),
    b("TTL", "ks"), b("PERSIST", "ks"), b("TTL", "ks"),
    b("RENAME", "ks", "ks2"), b("EXISTS", "ks"), b("TYPE", "ks2"),
    b("ZRANGE", "ks2", "0", "-1", "WITHSCORES"), b("SET", "str", "v"),
    b("RENAME", "ks2", "str"), b("TYPE", "str"), b("ZCARD", "str"),
    b("RENAMENX", "str", "ks2"), b("ZCARD", "ks2"), b("DEL", "ks2"),
    b("TYPE", "ks2"), b("EXISTS", "ks2"), b("ZADD", "ks2", "1", "z"),
    b("ZRANGE", "ks2", "0", "-1"),
    b("ZADD", "gone", "1", "a"), b("PEXPIRE", "gone", "0"),
    b("EXISTS", "gone"), b("ZADD", "gone", "1", "a"),
    b("EXPIREAT", "gone", "1"), b("ZCARD", "gone"), b("ZADD", "gone", "2",
                                                        "b"),
    b("ZRANGE", "gone", "0", "-1", "WITHSCORES"), b("TTL", "gone"),
    b("UNLINK", "gone", "ks2", "str"),
]

MULTI = [
    # a transaction: each command's mistake its own reply, the rest run
    b("MULTI"), b("ZADD", "mt", "1", "a", "2", "b"), b("ZINCRBY", "mt", "x",
                                                        "a"),
    b("ZADD", "str", "1", "a"), b("ZINCRBY", "mt", "5", "a"),
    b("ZRANGE", "mt", "0", "-1", "LIMIT", "0", "1"),
    b("ZPOPMIN", "mt"), b("ZUNIONSTORE", "mt2", "1", "mt"),
    b("ZRANGE", "mt", "0", "-1", "WITHSCORES"), b("EXEC"),
    b("ZRANGE", "mt2", "0", "-1", "WITHSCORES"),
    b("MULTI"), b("ZADD", "mt", "1"), b("EXEC"), b("ZCARD", "mt"),
]

EDGE_CASES = (ARITY + WRONG_TYPE + ZADDS + SINGLE + RANGES + LEX + POPS +
              RANDOMS + SCANS + ALGEBRA + LARGE + KEYSPACE + MULTI)


@pytest.mark.features
@needs_redis
@needs_opt
def test_zset_edge_cases(zpair):
    zpair.run(EDGE_CASES)


# ---- random sequences -------------------------------------------------

KEYS = [b"z1", b"z2", b"z3", b"", b"str", b"st"]
ZKEYS = KEYS[:4]  # the keys the Z commands mostly name
LEX_KEYS = [b"L1", b"L2"]
MEMBERS = [b"a", b"b", b"c", b"d", b"e", b"1", b"2", b"10", b"-1", b"",
           b"01", b"\x00\xff", b"m7", b"x" * 64]
SCORES = [b"0", b"1", b"2", b"3", b"-1", b"1.5", b"0.1", b"0.2", b"0.3",
          b"-2.5", b"1e10", b"1e-3", b"inf", b"-inf", b"+inf", b"-0",
          b"1e17", b"0x10", b"5", b"7", b"-3"]
BAD_SCORES = [b"abc", b"", b"nan", b" 1", b"1e400", b"(1"]
BOUNDS = [b"-inf", b"+inf", b"inf", b"0", b"1", b"2", b"(1", b"(2", b"1.5",
          b"(0", b"-1", b"(-inf", b"(inf", b"3", b"", b"(", b"(0.1",
          b"0.3", b"5", b"(-1"]
BAD_BOUNDS = [b"x", b"nan", b"[1", b"1x"]
LEXES = [b"-", b"+", b"[a", b"(a", b"[c", b"(c", b"[", b"(", b"[1", b"(m",
         b"[\x00", b"[b", b"(d", b"[x"]
BAD_LEXES = [b"a", b"", b"+x"]
INDEXES = [b"0", b"1", b"2", b"-1", b"-2", b"5", b"-5", b"100", b"-100",
           b"3", b"-3", b"9223372036854775807"]
COUNTS = [b"0", b"1", b"2", b"3", b"5", b"100", b"-1", b"-3", b"-7",
          b"9223372036854775807"]
BAD_COUNTS = [b"x", b"", b"1.5", b"-9223372036854775808"]
WEIGHTS = [b"1", b"2", b"0", b"-1", b"0.5", b"inf", b"-inf", b"x", b"nan",
           b"3", b"1", b"0.1"]


def _pick(rnd, good, bad, p_bad=0.08):
    return rnd.choice(bad if rnd.random() < p_bad else good)


def _bound(rnd):
    return _pick(rnd, BOUNDS, BAD_BOUNDS)


def _lex(rnd):
    return _pick(rnd, LEXES, BAD_LEXES)


def _count(rnd):
    return _pick(rnd, COUNTS, BAD_COUNTS, 0.1)


def _index(rnd):
    return _pick(rnd, INDEXES, [b"x", b"1.5"], 0.04)


def _members(rnd, lo, hi):
    return [rnd.choice(MEMBERS) for _ in range(rnd.randrange(lo, hi))]


def _score(rnd):
    if rnd.random() < 0.2:
        return b"%d" % rnd.randrange(-5, 6)
    return _pick(rnd, SCORES, BAD_SCORES)


def rand_zadd(rnd, key, lex):
    req = [b"ZADD", key]
    opts = [b"NX", b"XX", b"GT", b"LT", b"CH", b"INCR", b"nx", b"ch"]
    for _ in range(rnd.choice([0, 0, 0, 1, 1, 2])):
        req.append(rnd.choice(opts if not lex else opts[:5] + opts[6:]))
    for _ in range(1 if b"INCR" in req and rnd.random() < 0.9
                   else rnd.randrange(1, 4)):
        req += [b"0" if lex else _score(rnd), rnd.choice(MEMBERS)]
    return req


def rand_range(rnd, key, lex):
    """ZRANGE or one of its family, or ZRANGESTORE onto a key of the same
    kind."""
    kind = (rnd.choice([b"BYLEX", None]) if lex
            else rnd.choice([b"BYSCORE", None, None]))
    rev = rnd.random() < 0.3
    if kind == b"BYLEX":
        lo, hi = _lex(rnd), _lex(rnd)
    elif kind == b"BYSCORE":
        lo, hi = _bound(rnd), _bound(rnd)
    else:
        lo, hi = _index(rnd), _index(rnd)
    old = {b"BYLEX": [b"ZRANGEBYLEX", b"ZREVRANGEBYLEX"],
           b"BYSCORE": [b"ZRANGEBYSCORE", b"ZREVRANGEBYSCORE"],
           None: [b"ZRANGE", b"ZREVRANGE"]}[kind]
    opts = []
    if kind and rnd.random() < 0.4:
        opts += [b"LIMIT", _index(rnd), _index(rnd)]
    r = rnd.random()
    if r < 0.35:
        req = [old[rev], key, lo, hi]
    elif r < 0.8:
        req = [b"ZRANGE", key, lo, hi] + ([kind] if kind else [])
        opts += [b"REV"] if rev else []
    else:
        dst = rnd.choice(LEX_KEYS if lex else ZKEYS + KEYS)
        req = [b"ZRANGESTORE", dst, key, lo, hi] + ([kind] if kind else [])
        opts += [b"REV"] if rev else []
    if req[0] != b"ZRANGESTORE" and kind != b"BYLEX" and rnd.random() < 0.4:
        opts.append(b"WITHSCORES")
    if rnd.random() < 0.05:
        opts.append(rnd.choice([b"LIMIT", b"BYSCORE", b"REV", b"WITHSCORES",
                                b"BOGUS"]))
    if rnd.random() < 0.1:
        rnd.shuffle(opts)
    return req + opts


def rand_setop(rnd, lex):
    """ZUNION, ZINTER, ZDIFF, their STORE, ZINTERCARD (onto and from keys
    of the same kind)."""
    keys = (rnd.choice([LEX_KEYS, LEX_KEYS + [b"nope"]]) if lex
            else ZKEYS * 3 + KEYS)
    srcs = [rnd.choice(keys) for _ in range(rnd.randrange(1, 4))]
    name = rnd.choice([b"ZUNION", b"ZINTER", b"ZDIFF", b"ZUNIONSTORE",
                       b"ZINTERSTORE", b"ZDIFFSTORE", b"ZINTERCARD"])
    req = [name] + ([rnd.choice(LEX_KEYS if lex else ZKEYS)]
                    if name.endswith(b"STORE") else [])
    req += [b"%d" % len(srcs)] + srcs
    if name in (b"ZUNION", b"ZINTER", b"ZUNIONSTORE", b"ZINTERSTORE"):
        if rnd.random() < 0.4:
            req += [b"WEIGHTS"] + [rnd.choice(WEIGHTS) for _ in srcs]
        if rnd.random() < 0.3:
            req += [b"AGGREGATE", rnd.choice([b"SUM", b"MIN", b"MAX",
                                              b"max", b"avg"])]
    if not name.endswith(b"STORE") and name != b"ZINTERCARD" and \
            rnd.random() < 0.5:
        req.append(b"WITHSCORES")
    if name == b"ZINTERCARD" and rnd.random() < 0.4:
        req += [b"LIMIT", _count(rnd)]
    if rnd.random() < 0.03:
        req[req.index(b"%d" % len(srcs))] = _count(rnd)
    return req


def rand_zscan(rnd, key):
    req = [b"ZSCAN", key, b"0"]
    if rnd.random() < 0.4:
        req += [b"MATCH", rnd.choice([b"*", b"a*", b"?", b"1*", b"[a-c]"])]
    if rnd.random() < 0.4:
        req += [b"COUNT", rnd.choice([b"1", b"2", b"10", b"0", b"x"])]
    return req


def _pop(rnd, key):
    if rnd.random() < 0.3:
        keys = [rnd.choice([b"nope", key]) for _ in range(rnd.randrange(0, 2))]
        keys.append(key)
        req = [b"ZMPOP", b"%d" % len(keys)] + keys
        req.append(rnd.choice([b"MIN", b"MAX", b"max", b"mid"]))
        if rnd.random() < 0.5:
            req += [b"COUNT", _count(rnd)]
        return req
    req = [rnd.choice([b"ZPOPMIN", b"ZPOPMAX"]), key]
    if rnd.random() < 0.5:
        req.append(_count(rnd))
    return req


def _randmember(rnd, key):
    req = [b"ZRANDMEMBER", key]
    if rnd.random() < 0.7:
        req.append(_count(rnd))
        if rnd.random() < 0.5:
            req.append(b"WITHSCORES")
    return req


def _zrem_range(rnd, key, lex):
    r = rnd.random()
    if lex and r < 0.4:
        return [b"ZREMRANGEBYLEX", key, _lex(rnd), _lex(rnd)]
    if lex and r < 0.6:
        return [b"ZLEXCOUNT", key, _lex(rnd), _lex(rnd)]
    if r < 0.3:
        return [b"ZREMRANGEBYRANK", key, _index(rnd), _index(rnd)]
    name = b"ZREMRANGEBYSCORE" if r < 0.6 else b"ZCOUNT"
    return [name, key, _bound(rnd), _bound(rnd)]


def zset_request(rnd, key, lex):
    """A sorted set command on key (a lex key: lex)."""
    table = [
        (20, lambda: rand_zadd(rnd, key, lex)),
        (3, lambda: [b"ZINCRBY", key, b"0" if lex else _score(rnd),
                     rnd.choice(MEMBERS)]),
        (5, lambda: [b"ZREM", key] + _members(rnd, 1, 4)),
        (4, lambda: [b"ZSCORE", key, rnd.choice(MEMBERS)]),
        (2, lambda: [b"ZMSCORE", key] + _members(rnd, 1, 4)),
        (3, lambda: [b"ZCARD", key]),
        (4, lambda: [rnd.choice([b"ZRANK", b"ZREVRANK"]), key,
                     rnd.choice(MEMBERS)]),
        (14, lambda: rand_range(rnd, key, lex)),
        (6, lambda: _zrem_range(rnd, key, lex)),
        (4, lambda: _pop(rnd, key)),
        (3, lambda: _randmember(rnd, key)),
        (7, lambda: rand_setop(rnd, lex)),
        (2, lambda: rand_zscan(rnd, key)),
    ]
    return weighted(rnd, table)()


def other_request(rnd):
    """The commands of other types, mostly on their own keys: str holds a
    string and st a set (inputs of ZUNION and its kin), now and then a
    key of a sorted set (WRONGTYPE both ways)."""
    key = rnd.choice(KEYS + LEX_KEYS)
    mostly = (lambda k, ks: k if rnd.random() < 0.8 else rnd.choice(ks))
    st = mostly(b"st", KEYS)  # never a lex key: its scores would be 1
    return rnd.choice([
        [b"SET", mostly(b"str", KEYS + LEX_KEYS), rnd.choice(MEMBERS)],
        [b"GET", key], [b"DEL", key], [b"EXISTS", key, rnd.choice(KEYS)],
        [b"TYPE", key], [b"SADD", st] + _members(rnd, 1, 4),
        [b"SADD", st] + _members(rnd, 1, 4),
        [b"EXPIRE", key, b"%d" % rnd.randrange(1000, 100000)], [b"TTL", key],
    ])


def random_request(rnd):
    """One request; about one in 50 has its arity broken."""
    lex = False
    if rnd.random() < 0.2:
        req = other_request(rnd)
    else:
        lex = rnd.random() < 0.25
        keys = LEX_KEYS if lex else ZKEYS * 4 + KEYS
        req = zset_request(rnd, rnd.choice(keys), lex)
    # (a lex key's scores stay 0)
    return break_arity(rnd, req, lambda rnd: b"0" if lex
                       else rnd.choice(MEMBERS))


@pytest.mark.features
@needs_redis
@needs_opt
@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + SEEDS))
def test_zset_random(zpair, seed):
    rnd = random.Random(seed)
    reqs = [random_request(rnd) for _ in range(max(COMMANDS // SEEDS, 1))]
    run_batches(zpair, reqs, rnd)
    for k in KEYS + LEX_KEYS:  # the end state, key by key
        zpair.run([b("TYPE", k), b("ZRANGE", k, "0", "-1", "WITHSCORES"),
                   b("GET", k)])
    print("seed %d: %d requests compared%s" % (
        seed, zpair.compared, " (keep going)" if KEEP_GOING else ""))


# ---- the wrapped version ----------------------------------------------

@wrapped_only
def test_wrapped_refuses_zsets(server):
    """The wrapped version holds strings only: a write that would make a
    sorted set is refused with its own error, and nothing is made; a read
    finds none; a string is still the wrong type for the Z commands."""
    c = Conn(server.port)
    try:
        assert c.send([b("ZADD", "w", "1", "a"),
                       b("ZINCRBY", "w", "1", "a")]) == [REFUSED, REFUSED]
        assert c.send([b("ZADD", "w", "XX", "1", "a"), b("EXISTS", "w"),
                       b("ZRANGE", "w", "0", "-1"), b("ZCARD", "w"),
                       b("ZUNIONSTORE", "d", "1", "nope"),
                       b("ZPOPMIN", "w"), b("ZSCORE", "w", "a")]) == [
            b":0\r\n", b":0\r\n", b"*0\r\n", b":0\r\n", b":0\r\n",
            b"*0\r\n", b"$-1\r\n"]
        c.send([b("SET", "str", "v")])
        assert c.send([b("ZADD", "str", "1", "a")]) == [
            b"-WRONGTYPE Operation against a key holding the wrong kind of "
            b"value\r\n"]
    finally:
        c.close()
