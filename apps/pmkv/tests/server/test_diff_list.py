# SPDX-License-Identifier: BSD-3-Clause
"""pmkv's lists against Redis 7.0, byte for byte (difftest.py's
machinery, as test_differential.py's).

Every reply is compared as test_differential.py compares them: a list's
replies are all ordered, so nothing is normalized.

Two parts, marked features (conftest.py: run once, by
pmkv_server_features): hand-written edge cases (EDGE_CASES: every
command's arity, wrong types both ways, bad numbers and options in
Redis's order of checks, empty results, negative and huge indexes and
counts, the key removed with its last element, EXPIRE, RENAME, DEL and
TYPE on a list, MULTI with a list command's mistake inside, lists of
many chunks), then seeded random sequences mixing the list commands with
SET, GET, DEL, EXISTS, TYPE, EXPIRE and RENAME on a few keys, so that
WRONGTYPE happens both ways: PMKV_DIFF_LIST_COMMANDS commands in all
(default 3,000, or 200,000 with PMTX_LONG_TESTS=1) over PMKV_DIFF_SEEDS
seeds, each ending with every key's type and contents compared. The
keys are removed with DEL between tests. In every suite: a move refused
for its destination key's length moves nothing, in a group too; and the
wrapped version, which holds strings only, refuses a list write and
finds no list.
"""
import random

import pytest

from difftest import (  # noqa: F401 (redis_server: lpair's fixture)
    BIG, BIN, FIRST_SEED, KEEP_GOING, REFUSED, SEEDS, SMALL, Pair, b,
    break_arity, clear, commands, needs_redis, opt_only, pair_fixture,
    redis_server, run_batches, weighted, wrapped_only)
from rawresp import Conn

COMMANDS = commands("PMKV_DIFF_LIST_COMMANDS", 3000)

needs_opt = opt_only("test_wrapped_refuses_lists")

lpair = pair_fixture(Pair)


# ---- the edge cases ---------------------------------------------------

OVER = b"9223372036854775808"
WRONG = b"-WRONGTYPE"

ARITY = [
    b("LPUSH"), b("LPUSH", "l"), b("RPUSH", "l"), b("LPUSHX", "l"),
    b("RPUSHX"), b("LPOP"), b("LPOP", "l", "1", "2"), b("RPOP"),
    b("RPOP", "l", "1", "x"), b("LRANGE", "l", "0"),
    b("LRANGE", "l", "0", "1", "2"), b("LINDEX", "l"),
    b("LINDEX", "l", "0", "1"), b("LSET", "l", "0"),
    b("LSET", "l", "0", "a", "b"), b("LINSERT", "l", "before", "a"),
    b("LINSERT", "l", "before", "a", "b", "c"), b("LREM", "l", "0"),
    b("LTRIM", "l", "0"), b("LTRIM", "l", "0", "1", "2"), b("LLEN"),
    b("LLEN", "a", "b"), b("LPOS", "l"), b("LMOVE", "a", "b", "left"),
    b("LMOVE", "a", "b", "left", "right", "x"), b("RPOPLPUSH", "a"),
    b("RPOPLPUSH", "a", "b", "c"), b("LMPOP"), b("LMPOP", "1", "l"),
    b("lpush"), b("LpUsH", "l"),
]

BASICS = [
    # pushes: many elements, the order they land in, X on absent keys
    b("LPUSH", "l", "a", "b", "c"), b("RPUSH", "l", "d", "e"),
    b("LRANGE", "l", "0", "-1"), b("LLEN", "l"), b("TYPE", "l"),
    b("LPUSHX", "nope", "a"), b("RPUSHX", "nope", "a", "b"),
    b("EXISTS", "nope"), b("LPUSHX", "l", "x", "y"),
    b("RPUSHX", "l", "z"), b("LRANGE", "l", "0", "-1"),
    b("lpush", "l", ""), b("RPUSH", "l", BIN), b("LRANGE", "l", "0", "-1"),
    b("RPUSH", "", "empty key"), b("LRANGE", "", "0", "-1"),
    b("RPUSH", BIN, "a"), b("LPOP", BIN), b("EXISTS", BIN),
    # pops: with and without a count, count 0, absent keys, bad counts
    b("LPOP", "l"), b("RPOP", "l"), b("LPOP", "l", "0"),
    b("RPOP", "l", "0"), b("LPOP", "l", "2"), b("RPOP", "l", "2"),
    b("LPOP", "nope"), b("RPOP", "nope"), b("LPOP", "nope", "0"),
    b("LPOP", "nope", "5"), b("RPOP", "nope", "1"),
    b("LPOP", "l", "-1"), b("LPOP", "nope", "-1"), b("RPOP", "l", "abc"),
    b("LPOP", "l", ""), b("LPOP", "l", "1.5"), b("LPOP", "l", "+1"),
    b("LPOP", "l", "-0"), b("LPOP", "l", " 1"), b("LPOP", "l", "01"),
    b("LPOP", "l", OVER), b("LPOP", "nope", SMALL),
    b("LRANGE", "l", "0", "-1"), b("RPOP", "l", BIG), b("EXISTS", "l"),
    b("TYPE", "l"), b("LLEN", "l"),
    b("RPUSH", "l", "a", "b", "c"), b("LPOP", "l", "3"), b("EXISTS", "l"),
    b("RPUSH", "l", "a"), b("RPOP", "l"), b("EXISTS", "l"),
    b("RPUSH", "l", "a", "b"), b("LPOP", "l", "1"), b("RPOP", "l", "1"),
    b("EXISTS", "l"), b("LPOP", "l", "0"),
    # LRANGE and LINDEX: negative, huge and inverted indexes
    b("RPUSH", "r", "0", "1", "2", "3", "4", "5", "6"),
    b("LRANGE", "r", "0", "0"), b("LRANGE", "r", "-1", "-1"),
    b("LRANGE", "r", "-3", "-1"), b("LRANGE", "r", "2", "4"),
    b("LRANGE", "r", "4", "2"), b("LRANGE", "r", "-1", "-2"),
    b("LRANGE", "r", "-100", "2"), b("LRANGE", "r", "-100", "-8"),
    b("LRANGE", "r", "-100", "-7"), b("LRANGE", "r", "6", "100"),
    b("LRANGE", "r", "7", "100"), b("LRANGE", "r", SMALL, BIG),
    b("LRANGE", "r", BIG, SMALL), b("LRANGE", "r", "0", OVER),
    b("LRANGE", "r", "a", "0"), b("LRANGE", "r", "0", "1.0"),
    b("LRANGE", "nope", "0", "-1"), b("LRANGE", "nope", "x", "0"),
    b("LINDEX", "r", "0"), b("LINDEX", "r", "6"), b("LINDEX", "r", "7"),
    b("LINDEX", "r", "-1"), b("LINDEX", "r", "-7"), b("LINDEX", "r", "-8"),
    b("LINDEX", "r", BIG), b("LINDEX", "r", SMALL), b("LINDEX", "r", OVER),
    b("LINDEX", "r", "x"), b("LINDEX", "nope", "0"),
    b("LINDEX", "nope", "x"), b("LINDEX", "r", ""),
    # LSET: no such key, then the type, then the index
    b("LSET", "r", "0", "zero"), b("LSET", "r", "-1", "last"),
    b("LSET", "r", "7", "x"), b("LSET", "r", "-8", "x"),
    b("LSET", "r", BIG, "x"), b("LSET", "r", SMALL, "x"),
    b("LSET", "r", "x", "x"), b("LSET", "nope", "0", "x"),
    b("LSET", "nope", "x", "x"), b("LSET", "r", "3", ""),
    b("LSET", "r", "2", "x" * 3000), b("LRANGE", "r", "0", "-1"),
    # LINSERT
    b("LINSERT", "r", "BEFORE", "zero", "a"),
    b("LINSERT", "r", "after", "last", "b"),
    b("LINSERT", "r", "AfTeR", "1", "c"), b("LINSERT", "r", "before", "no",
                                                 "c"),
    b("LINSERT", "r", "middle", "1", "c"), b("LINSERT", "nope", "before",
                                                 "1", "c"),
    b("LINSERT", "nope", "middle", "1", "c"), b("LINSERT", "r", "before",
                                                    "", "empty"),
    b("LRANGE", "r", "0", "-1"), b("EXISTS", "nope"),
    # LREM: from the head, from the tail, all
    b("DEL", "m"), b("RPUSH", "m", "a", "b", "a", "c", "a", "d", "a"),
    b("LREM", "m", "1", "a"), b("LRANGE", "m", "0", "-1"),
    b("LREM", "m", "-2", "a"), b("LRANGE", "m", "0", "-1"),
    b("LREM", "m", "0", "zz"), b("LREM", "m", "0", "a"),
    b("LRANGE", "m", "0", "-1"), b("LREM", "m", SMALL, "b"),
    b("LREM", "m", BIG, "c"), b("LREM", "m", "x", "d"),
    b("LREM", "m", OVER, "d"), b("LREM", "m", "1", "d"), b("EXISTS", "m"),
    b("LREM", "nope", "0", "a"), b("LREM", "nope", "x", "a"),
    # LTRIM
    b("RPUSH", "t", "0", "1", "2", "3", "4", "5"), b("LTRIM", "t", "1", "-2"),
    b("LRANGE", "t", "0", "-1"), b("LTRIM", "t", "-100", "100"),
    b("LRANGE", "t", "0", "-1"), b("LTRIM", "t", "0", "0"),
    b("LRANGE", "t", "0", "-1"), b("LTRIM", "t", "x", "0"),
    b("LTRIM", "t", "1", "0"), b("EXISTS", "t"), b("LTRIM", "nope", "0",
                                                      "1"),
    b("RPUSH", "t", "a", "b"), b("LTRIM", "t", "5", "10"), b("EXISTS", "t"),
    b("RPUSH", "t", "a", "b"), b("LTRIM", "t", "-1", "-2"), b("EXISTS", "t"),
    b("RPUSH", "t", "a", "b"), b("LTRIM", "t", SMALL, BIG),
    b("LRANGE", "t", "0", "-1"), b("LTRIM", "t", BIG, SMALL),
    b("EXISTS", "t"),
]

LPOS = [
    b("DEL", "p"), b("RPUSH", "p", "a", "b", "a", "c", "a", "d", "a"),
    b("LPOS", "p", "a"), b("LPOS", "p", "d"), b("LPOS", "p", "zz"),
    b("LPOS", "p", "a", "RANK", "2"), b("LPOS", "p", "a", "RANK", "-1"),
    b("LPOS", "p", "a", "RANK", "-3"), b("LPOS", "p", "a", "RANK", "5"),
    b("LPOS", "p", "a", "RANK", "-5"), b("LPOS", "p", "a", "COUNT", "0"),
    b("LPOS", "p", "a", "COUNT", "2"), b("LPOS", "p", "a", "COUNT", "9"),
    b("LPOS", "p", "a", "RANK", "-1", "COUNT", "0"),
    b("LPOS", "p", "a", "RANK", "-2", "COUNT", "2"),
    b("LPOS", "p", "a", "RANK", "2", "COUNT", "0"),
    b("LPOS", "p", "a", "RANK", "3", "COUNT", "5"),
    b("LPOS", "p", "a", "RANK", "5", "COUNT", "1"),
    b("LPOS", "p", "a", "MAXLEN", "3"), b("LPOS", "p", "a", "MAXLEN", "1"),
    b("LPOS", "p", "d", "MAXLEN", "5"), b("LPOS", "p", "a", "COUNT", "0",
                                         "MAXLEN", "3"),
    b("LPOS", "p", "a", "RANK", "-1", "COUNT", "0", "MAXLEN", "3"),
    b("LPOS", "p", "b", "RANK", "-1", "MAXLEN", "6"),
    b("LPOS", "p", "b", "RANK", "-1", "MAXLEN", "5"),
    b("LPOS", "p", "a", "MAXLEN", "0", "COUNT", "0"),
    b("LPOS", "p", "a", "RANK", "2", "RANK", "3"),
    b("LPOS", "p", "a", "count", "1", "COUNT", "2"),
    b("LPOS", "p", "a", "RANK", SMALL), b("LPOS", "p", "a", "RANK", SMALL,
                                          "COUNT", "1"),
    b("LPOS", "p", "a", "RANK", SMALL, "MAXLEN", "2"),
    b("LPOS", "p", "a", "RANK", SMALL, "COUNT", "1", "MAXLEN", "3"),
    b("LPOS", "p", "zz", "RANK", SMALL),
    b("LPOS", "p", "a", "RANK", "-" + BIG.decode()),
    b("LPOS", "p", "a", "RANK", BIG), b("LPOS", "p", "a", "COUNT", BIG),
    b("LPOS", "p", "a", "RANK", "2", "COUNT", BIG),
    b("LPOS", "p", "a", "MAXLEN", BIG),
    # its errors, in the order Redis reads the options
    b("LPOS", "p", "a", "RANK", "0"), b("LPOS", "p", "a", "RANK", "x"),
    b("LPOS", "p", "a", "RANK", OVER), b("LPOS", "p", "a", "COUNT", "-1"),
    b("LPOS", "p", "a", "COUNT", "x"), b("LPOS", "p", "a", "MAXLEN", "-1"),
    b("LPOS", "p", "a", "MAXLEN", "x"), b("LPOS", "p", "a", "MAXLEN", OVER),
    b("LPOS", "p", "a", "BOGUS"), b("LPOS", "p", "a", "RANK"),
    b("LPOS", "p", "a", "COUNT"), b("LPOS", "p", "a", "rank", "0", "BOGUS"),
    b("LPOS", "p", "a", "BOGUS", "rank", "0"),
    b("LPOS", "nope", "a"), b("LPOS", "nope", "a", "COUNT", "0"),
    b("LPOS", "nope", "a", "RANK", "0"), b("LPOS", "p", "zz", "COUNT", "0"),
    b("LPOS", "p", "", "COUNT", "0"),
]

MOVES = [
    b("DEL", "s", "d"), b("RPUSH", "s", "1", "2", "3"),
    b("LMOVE", "s", "d", "LEFT", "RIGHT"), b("LMOVE", "s", "d", "right",
                                              "left"),
    b("LRANGE", "s", "0", "-1"), b("LRANGE", "d", "0", "-1"),
    b("LMOVE", "s", "d", "LEFT", "LEFT"), b("EXISTS", "s"),
    b("LRANGE", "d", "0", "-1"), b("LMOVE", "s", "d", "LEFT", "LEFT"),
    b("LMOVE", "d", "d", "LEFT", "RIGHT"), b("LRANGE", "d", "0", "-1"),
    b("LMOVE", "d", "d", "RIGHT", "RIGHT"), b("LMOVE", "d", "d", "LEFT",
                                               "LEFT"),
    b("LRANGE", "d", "0", "-1"), b("RPOPLPUSH", "d", "d"),
    b("LRANGE", "d", "0", "-1"), b("RPOPLPUSH", "d", "s"),
    b("RPOPLPUSH", "nope", "s"), b("RPOPLPUSH", "nope", "nope"),
    b("LMOVE", "d", "s", "MIDDLE", "LEFT"), b("LMOVE", "d", "s", "LEFT", "x"),
    b("LMOVE", "nope", "s", "x", "LEFT"), b("LMOVE", "nope", "str", "LEFT",
                                             "LEFT"),
    b("SET", "str", "v"), b("LMOVE", "d", "str", "LEFT", "LEFT"),
    b("RPOPLPUSH", "d", "str"), b("LRANGE", "d", "0", "-1"),
    b("LMOVE", "str", "d", "LEFT", "LEFT"), b("LMOVE", "str", "str", "LEFT",
                                               "LEFT"),
    b("RPOPLPUSH", "nope", "str"), b("GET", "str"),
    b("DEL", "one"), b("RPUSH", "one", "x"), b("LMOVE", "one", "one",
                                                   "LEFT", "RIGHT"),
    b("LRANGE", "one", "0", "-1"), b("RPOPLPUSH", "one", "two"),
    b("EXISTS", "one"), b("LRANGE", "two", "0", "-1"),
    # LMPOP
    b("DEL", "a", "b"), b("RPUSH", "b", "1", "2", "3", "4"),
    b("LMPOP", "2", "a", "b", "LEFT"), b("LMPOP", "2", "a", "b", "RIGHT",
                                         "COUNT", "2"),
    b("LMPOP", "1", "b", "left", "count", "10"), b("EXISTS", "b"),
    b("LMPOP", "2", "a", "b", "LEFT"), b("RPUSH", "a", "x"),
    b("LMPOP", "3", "nope", "str", "a", "LEFT"),
    b("LMPOP", "3", "a", "str", "nope", "LEFT"), b("RPUSH", "a", "x", "y"),
    b("LMPOP", "2", "a", "str", "RIGHT"), b("LMPOP", "2", "str", "a", "LEFT"),
    b("LMPOP", "1", "a", "LEFT", "COUNT", BIG), b("EXISTS", "a"),
    b("LMPOP", "0", "a", "LEFT"), b("LMPOP", "-1", "a", "LEFT"),
    b("LMPOP", "x", "a", "LEFT"), b("LMPOP", "2", "a", "LEFT"),
    b("LMPOP", BIG, "a", "LEFT"), b("LMPOP", "1", "a", "MIDDLE"),
    b("LMPOP", "1", "a", "LEFT", "COUNT", "0"),
    b("LMPOP", "1", "a", "LEFT", "COUNT", "-1"),
    b("LMPOP", "1", "a", "LEFT", "COUNT", "x"),
    b("LMPOP", "1", "a", "LEFT", "COUNT", OVER),
    b("LMPOP", "1", "a", "LEFT", "COUNT", "1", "COUNT", "1"),
    b("LMPOP", "1", "a", "LEFT", "COUNT"), b("LMPOP", "1", "a", "LEFT", "x"),
    b("LMPOP", "2", "a", "a", "LEFT"), b("LMPOP", "1", "", "LEFT"),
]

TYPES = [
    # a list under the string commands, and a string under the list ones
    b("DEL", "l", "str"), b("RPUSH", "l", "a", "b"), b("SET", "str", "v"),
    b("GET", "l"), b("APPEND", "l", "x"), b("INCR", "l"), b("STRLEN", "l"),
    b("GETRANGE", "l", "0", "1"), b("GETSET", "l", "v"), b("GETDEL", "l"),
    b("MGET", "l", "str"), b("SETNX", "l", "v"), b("LLEN", "l"),
    b("LPUSH", "str", "a"), b("RPUSH", "str", "a"), b("LPUSHX", "str", "a"),
    b("RPUSHX", "str", "a"), b("LPOP", "str"), b("RPOP", "str", "2"),
    b("LPOP", "str", "0"), b("LPOP", "str", "-1"), b("LRANGE", "str", "0",
                                                    "-1"),
    b("LRANGE", "str", "x", "0"), b("LINDEX", "str", "0"),
    b("LINDEX", "str", "x"), b("LSET", "str", "0", "x"),
    b("LSET", "str", "x", "x"), b("LINSERT", "str", "BEFORE", "a", "b"),
    b("LINSERT", "str", "middle", "a", "b"), b("LREM", "str", "0", "a"),
    b("LREM", "str", "x", "a"), b("LTRIM", "str", "0", "1"),
    b("LTRIM", "str", "x", "1"), b("LLEN", "str"), b("LPOS", "str", "a"),
    b("LPOS", "str", "a", "RANK", "0"), b("GET", "str"),
    # SET over a list replaces it
    b("SET", "l", "now a string"), b("TYPE", "l"), b("LLEN", "l"),
    b("RPUSH", "l", "a"),
    # EXPIRE, TTL, PERSIST, RENAME, DEL then TYPE on a list
    b("DEL", "l"), b("RPUSH", "l", "a", "b", "c"),
    b("EXPIRE", "l", "1000"), b("TTL", "l"), b("RPUSH", "l", "d"),
    b("TTL", "l"), b("LPOP", "l"), b("TTL", "l"), b("PERSIST", "l"),
    b("TTL", "l"), b("PEXPIRE", "l", "5000000"), b("RENAME", "l", "l2"),
    b("TTL", "l2"), b("LRANGE", "l2", "0", "-1"), b("EXISTS", "l"),
    b("RENAMENX", "l2", "str"), b("RENAME", "l2", "str"), b("TYPE", "str"),
    b("LRANGE", "str", "0", "-1"), b("TTL", "str"), b("GET", "str"),
    b("RPUSH", "l3", "x"), b("RENAME", "l3", "str"),
    b("LRANGE", "str", "0", "-1"), b("DEL", "str"), b("TYPE", "str"),
    b("LLEN", "str"), b("EXISTS", "str"),
    b("RPUSH", "gone", "x"), b("EXPIRE", "gone", "-1"), b("EXISTS", "gone"),
    b("LLEN", "gone"), b("RPUSH", "gone", "y"), b("LRANGE", "gone", "0",
                                                  "-1"),
    # MULTI: a list command's mistake fails it alone
    b("DEL", "q"), b("SET", "qs", "v"), b("MULTI"), b("RPUSH", "q", "a",
                                                       "b"),
    b("LPOP", "qs"), b("LPOP", "q"), b("LSET", "q", "5", "x"),
    b("LMOVE", "q", "qs", "LEFT", "LEFT"), b("RPOPLPUSH", "q", "q2"),
    b("EXEC"), b("LRANGE", "q", "0", "-1"), b("LRANGE", "q2", "0", "-1"),
    b("EXISTS", "q"),
]


def _many(prefix, n):
    return [b"%s%d" % (prefix, i) for i in range(n)]


# lists of many chunks: long ones, large elements, changes in the middle
CHUNKS = [
    b("DEL", "big"), [b"RPUSH", b"big"] + _many(b"e", 3000),
    b("LLEN", "big"), b("LINDEX", "big", "1500"), b("LINDEX", "big", "-1500"),
    b("LRANGE", "big", "1000", "1100"), b("LRANGE", "big", "-60", "-1"),
    b("LSET", "big", "1234", "set"), b("LINDEX", "big", "1234"),
    b("LINSERT", "big", "BEFORE", "e2000", "ins"),
    b("LINSERT", "big", "AFTER", "e2999", "tail"),
    b("LPOS", "big", "ins"), b("LPOS", "big", "e1", "RANK", "-1"),
    b("LPOS", "big", "e1", "MAXLEN", "1"), b("LPOS", "big", "tail",
                                             "RANK", "-1"),
    [b"RPUSH", b"big"] + [b"m"] * 300, [b"LPUSH", b"big"] + [b"m"] * 300,
    b("LPOS", "big", "m", "RANK", "-1", "COUNT", "5"),
    b("LPOS", "big", "m", "RANK", "-250", "COUNT", "100"),
    b("LPOS", "big", "m", "RANK", "290", "COUNT", "20"),
    b("LPOS", "big", "m", "RANK", "-1", "COUNT", "0", "MAXLEN", "250"),
    b("LPOS", "big", "m", "COUNT", "0", "MAXLEN", "310"),
    b("LPOS", "big", "m", "RANK", "-301", "MAXLEN", "3000"),
    b("LPOS", "big", "m", "RANK", "-301"),
    b("LREM", "big", "100", "m"), b("LREM", "big", "-100", "m"),
    b("LREM", "big", "0", "m"), b("LLEN", "big"),
    b("LPOP", "big", "100"), b("RPOP", "big", "100"),
    b("LMPOP", "1", "big", "RIGHT", "COUNT", "70"),
    b("LTRIM", "big", "500", "-500"), b("LLEN", "big"),
    b("LRANGE", "big", "0", "5"), b("LRANGE", "big", "-5", "-1"),
    b("RPUSH", "big", "x" * 5000, "y" * 70000, "z" * 1000),
    b("LPUSH", "big", "w" * 2000), b("LINDEX", "big", "-2"),
    b("LPOS", "big", "y" * 70000), b("LREM", "big", "0", "x" * 5000),
    b("LSET", "big", "0", "v" * 100000), b("LINDEX", "big", "0"),
    b("RPOPLPUSH", "big", "big2"), b("LMOVE", "big", "big2", "LEFT",
                                     "RIGHT"),
    b("LRANGE", "big2", "0", "-1"), b("LTRIM", "big", "1", "0"),
    b("EXISTS", "big"), b("RPOP", "big2", "5"), b("EXISTS", "big2"),
]

EDGE_CASES = ARITY + BASICS + LPOS + MOVES + TYPES + CHUNKS


@pytest.mark.features
@needs_redis
@needs_opt
def test_list_edge_cases(lpair):
    lpair.run(EDGE_CASES)


# ---- random sequences -------------------------------------------------

KEYS = [b"l1", b"l2", b"l3", b"", b"l\x00b", b"str"]
ELEMS = [b"a", b"b", b"c", b"a", b"b", b"", b"1", b"-1", b"x" * 100,
         b"\x00\xff", b"y" * 1500, b"9223372036854775807"]
INDEXES = [b"0", b"1", b"2", b"-1", b"-2", b"-3", b"5", b"10", b"-10",
           b"50", b"-50", b"100", b"1000", b"-1000", b"9223372036854775807",
           b"-9223372036854775808"]
COUNTS = [b"0", b"1", b"2", b"3", b"5", b"20", b"100", b"-1", b"-2",
          b"9223372036854775807", b"-9223372036854775808"]
BAD = [b"x", b"", b"1.5", b"+1", b"01", b"9223372036854775808"]
ENDS = [b"LEFT", b"RIGHT", b"left", b"Right"]


def _num(rnd, good):
    """A number of the list good, or now and then one that is not."""
    return rnd.choice(BAD) if rnd.random() < 0.05 else rnd.choice(good)


def _end(rnd):
    return b"middle" if rnd.random() < 0.03 else rnd.choice(ENDS)


def _skey(rnd):
    """The key SET writes: mostly the string's own, so that lists live."""
    return b"str" if rnd.random() < 0.8 else rnd.choice(KEYS)


def _elems(rnd, lo, hi):
    return [rnd.choice(ELEMS) for _ in range(rnd.randrange(lo, hi))]


def _push(rnd):
    name = rnd.choice([b"LPUSH", b"RPUSH", b"LPUSH", b"RPUSH", b"LPUSHX",
                       b"RPUSHX"])
    n = 80 if rnd.random() < 0.1 else 5
    return [name, rnd.choice(KEYS)] + _elems(rnd, 1, n)


def _pop(rnd):
    req = [rnd.choice([b"LPOP", b"RPOP"]), rnd.choice(KEYS)]
    if rnd.random() < 0.5:
        req.append(_num(rnd, COUNTS))
    return req


def _lmpop(rnd):
    keys = [rnd.choice(KEYS) for _ in range(rnd.randrange(1, 4))]
    req = [b"LMPOP", b"%d" % len(keys)] + keys + [_end(rnd)]
    if rnd.random() < 0.5:
        req += [b"COUNT", _num(rnd, COUNTS)]
    if rnd.random() < 0.05:
        req[1] = rnd.choice(COUNTS + BAD)
    return req


def _lpos(rnd):
    req = [b"LPOS", rnd.choice(KEYS), rnd.choice(ELEMS)]
    opts = []
    if rnd.random() < 0.5:
        opts += [b"RANK", _num(rnd, [b"1", b"2", b"3", b"-1", b"-2", b"-3",
                                     b"10", b"-10", b"0"] + INDEXES[-2:])]
    if rnd.random() < 0.4:
        opts += [b"COUNT", _num(rnd, COUNTS)]
    if rnd.random() < 0.3:
        opts += [b"MAXLEN", _num(rnd, COUNTS)]
    if rnd.random() < 0.03:
        opts.insert(rnd.randrange(len(opts) + 1), b"BOGUS")
    return req + opts


def _range(rnd, name):
    return [name, rnd.choice(KEYS), _num(rnd, INDEXES), _num(rnd, INDEXES)]


# weight, request maker
MAKERS = [
    (25, _push),
    (10, _pop),
    (3, _lmpop),
    (4, lambda rnd: [b"LMOVE", rnd.choice(KEYS), rnd.choice(KEYS),
                     _end(rnd), _end(rnd)]),
    (2, lambda rnd: [b"RPOPLPUSH", rnd.choice(KEYS), rnd.choice(KEYS)]),
    (8, lambda rnd: _range(rnd, b"LRANGE")),
    (4, lambda rnd: [b"LINDEX", rnd.choice(KEYS), _num(rnd, INDEXES)]),
    (4, lambda rnd: [b"LSET", rnd.choice(KEYS), _num(rnd, INDEXES),
                     rnd.choice(ELEMS)]),
    (4, lambda rnd: [b"LINSERT", rnd.choice(KEYS),
                     rnd.choice([b"BEFORE", b"AFTER", b"after", b"before"])
                     if rnd.random() < 0.97 else b"x",
                     rnd.choice(ELEMS), rnd.choice(ELEMS)]),
    (4, lambda rnd: [b"LREM", rnd.choice(KEYS), _num(rnd, COUNTS),
                     rnd.choice(ELEMS)]),
    (2, lambda rnd: _range(rnd, b"LTRIM")),
    (4, lambda rnd: [b"LLEN", rnd.choice(KEYS)]),
    (5, _lpos),
    (2, lambda rnd: [b"SET", _skey(rnd), rnd.choice(ELEMS)]),
    (2, lambda rnd: [b"GET", rnd.choice(KEYS)]),
    (2, lambda rnd: [b"DEL"] + [rnd.choice(KEYS)
                                for _ in range(rnd.randrange(1, 3))]),
    (2, lambda rnd: [b"EXISTS"] + [rnd.choice(KEYS)
                                   for _ in range(rnd.randrange(1, 3))]),
    (2, lambda rnd: [b"TYPE", rnd.choice(KEYS)]),
    (1, lambda rnd: [b"EXPIRE", rnd.choice(KEYS),
                     b"%d" % rnd.randrange(1000, 100000)]),
    (1, lambda rnd: [b"TTL", rnd.choice(KEYS)]),
    (1, lambda rnd: [b"RENAME", rnd.choice(KEYS), rnd.choice(KEYS)]),
]


def random_request(rnd):
    """One request; about one in 50 has its arity broken."""
    return break_arity(rnd, weighted(rnd, MAKERS)(rnd),
                       lambda rnd: rnd.choice(ELEMS))


@pytest.mark.features
@needs_redis
@needs_opt
@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + SEEDS))
def test_list_random(lpair, seed):
    rnd = random.Random(seed)
    reqs = [random_request(rnd) for _ in range(max(COMMANDS // SEEDS, 1))]
    run_batches(lpair, reqs, rnd)
    for k in KEYS:  # the end state, key by key
        lpair.run([b("TYPE", k), b("LRANGE", k, "0", "-1"), b("GET", k)])
    print("seed %d: %d requests compared%s" % (
        seed, lpair.compared, " (keep going)" if KEEP_GOING else ""))


# ---- pmkv alone -------------------------------------------------------

TOOBIG = (b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)"
          b"\r\n")


@needs_opt
def test_a_refused_move_moves_nothing(server):
    """A move to a new key longer than pmkv's longest (64 KiB; Redis would
    take it) is refused before its pop, so in a group (pipelined, and in
    EXEC) the mistake fails that command alone and the source keeps its
    element (store.c S13)."""
    c = Conn(server.port)
    long_key = b"k" * 70000
    try:
        clear(c)
        assert c.send([b("RPUSH", "s", "a", "b"),
                       b("LMOVE", "s", long_key, "LEFT", "LEFT"),
                       b("RPOPLPUSH", "s", long_key),
                       b("LRANGE", "s", "0", "-1")]) == [
            b":2\r\n", TOOBIG, TOOBIG, b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"]
        assert c.send([b("MULTI"), b("LMOVE", "s", long_key, "RIGHT",
                                     "LEFT"),
                       b("LPOP", "s"), b("EXEC")])[-1] == (
            b"*2\r\n" + TOOBIG + b"$1\r\na\r\n")
        assert c.send([b("LRANGE", "s", "0", "-1"),
                       b("EXISTS", long_key)]) == [b"*1\r\n$1\r\nb\r\n",
                                                   b":0\r\n"]
    finally:
        c.close()


# ---- the wrapped version ----------------------------------------------

@wrapped_only
def test_wrapped_refuses_lists(server):
    """The wrapped version holds strings only: a write that would make a
    list is refused with its own error, and nothing is made; a read finds
    no list; a string is still the wrong type for the list commands."""
    c = Conn(server.port)
    try:
        assert c.send([b("RPUSH", "w", "a"), b("LPUSHX", "w", "a"),
                       b("LMOVE", "nope", "w", "LEFT", "LEFT")]) == [
            REFUSED, b":0\r\n", b"$-1\r\n"]
        assert c.send([b("EXISTS", "w"), b("LLEN", "w"),
                       b("LRANGE", "w", "0", "-1"), b("LPOP", "w", "1"),
                       b("LMPOP", "1", "w", "LEFT")]) == [
            b":0\r\n", b":0\r\n", b"*0\r\n", b"*-1\r\n", b"*-1\r\n"]
        c.send([b("SET", "str", "v")])
        assert c.send([b("RPUSH", "str", "a"), b("LLEN", "str")]) == [
            WRONG + b" Operation against a key holding the wrong kind of "
            b"value\r\n"] * 2
    finally:
        c.close()
