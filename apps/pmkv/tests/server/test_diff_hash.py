# SPDX-License-Identifier: BSD-3-Clause
"""pmkv's hashes against Redis 7.0, byte for byte (difftest.py's
machinery, as test_differential.py's).

Compared as test_differential.py compares, and also:

- HKEYS, HVALS: the elements sorted; HGETALL: its field-value pairs
  sorted (Redis's order is its encoding's: a listpack's is the order of
  insertion, a hash table's is not, and pmkv's is its map's);
- HSCAN from cursor 0: a full scan on each server, page after page, and
  the union of the field-value pairs compared (each page must be a cursor
  and an array of bulks of even length); from another cursor, each reply
  must be a page (the cursors are each server's own);
- HRANDFIELD: random. The hash is read (HGETALL) on both before, and the
  replies must have the same shape (nil or a field; an array of as many
  fields, or field-value pairs, as Redis's rules give: distinct ones for
  a positive count), every field one of the hash's and every value its
  field's; an error or an empty reply the same bytes.

Two parts: hand-written edge cases (EDGE_CASES), then seeded random
sequences mixing the hash commands with SET, GET, DEL, EXISTS, TYPE,
EXPIRE, TTL and RENAME on a few keys, so that WRONGTYPE happens both ways:
PMKV_DIFF_HASH_COMMANDS commands in all (default 3,000, or 200,000 with
PMTX_LONG_TESTS=1) over PMKV_DIFF_SEEDS seeds. The keys are removed with
DEL between tests. The wrapped version holds
strings only: there, one test checks that a hash write is refused and a
read finds no hash.
"""
import random
import time

import pytest

from difftest import (  # noqa: F401 (redis_server: hpair's fixture)
    BIG, BIN, FIRST_SEED, NUMBERS, REFUSED, SEEDS, SMALL, Pair, b, clear,
    commands, drawn_ok, name_of, needs_redis, opt_only, pair_fixture,
    rand_value, redis_server, run_batches, wrapped_only)
from rawresp import Conn

COMMANDS = commands("PMKV_DIFF_HASH_COMMANDS", 3000)

needs_opt = opt_only("test_wrapped_refuses_hashes")


class HashPair(Pair):
    """Pair, with the comparisons the hashes need (module docstring)."""

    ORDERLESS = {**Pair.ORDERLESS, b"hkeys": 1, b"hvals": 1, b"hgetall": 2}

    def _special(self, req):
        if name_of(req) == b"hrandfield" and 2 <= len(req) <= 4:
            return self._random
        return Pair._special(self, req)

    def _random(self, req):
        v = self._read(b("HGETALL", req[1]))
        h = dict(zip(v[::2], v[1::2])) if isinstance(v, list) else {}
        ours, theirs = self._both(req)
        self._check(req, ours, theirs, drawn_ok(req, ours, theirs, h))


hpair = pair_fixture(HashPair)


# ---- the edge cases ---------------------------------------------------

MANY = [x for i in range(1000) for x in (b"f%d" % i, b"v%d" % i)]
FAR = b"%d" % (int(time.time()) + 86400)  # an expiry no run outlives

ARITY = [
    b("HSET"), b("HSET", "k"), b("HSET", "k", "f"),
    b("HSET", "k", "f", "v", "g"), b("HMSET", "k", "f"),
    b("HMSET", "k", "f", "v", "g"), b("HSETNX", "k", "f"),
    b("HSETNX", "k", "f", "v", "x"), b("HGET", "k"), b("HGET", "k", "f", "x"),
    b("HMGET", "k"), b("HDEL", "k"), b("HLEN"), b("HLEN", "k", "x"),
    b("HSTRLEN", "k"), b("HSTRLEN", "k", "f", "x"), b("HEXISTS", "k"),
    b("HEXISTS", "k", "f", "x"), b("HKEYS"), b("HKEYS", "k", "x"),
    b("HVALS"), b("HVALS", "k", "x"), b("HGETALL"), b("HGETALL", "k", "x"),
    b("HINCRBY", "k", "f"), b("HINCRBY", "k", "f", "1", "2"),
    b("HINCRBYFLOAT", "k", "f"), b("HINCRBYFLOAT", "k", "f", "1", "2"),
    b("HRANDFIELD"), b("HSCAN"), b("HSCAN", "k"),
    b("hset", "k", "f", "v"), b("HgEt", "k", "f"), b("DEL", "k"),
]

WRONG_TYPE = [
    # the hash commands on a string (an argument's error comes first
    # where Redis reads it before the key: HINCRBY's increment,
    # HRANDFIELD's count and option, HSCAN's cursor)
    b("SET", "str", "v"), b("HSET", "str", "f", "v"), b("HMSET", "str", "f", "v"),
    b("HSETNX", "str", "f", "v"), b("HGET", "str", "f"),
    b("HMGET", "str", "f", "g"), b("HDEL", "str", "f"), b("HLEN", "str"),
    b("HSTRLEN", "str", "f"), b("HEXISTS", "str", "f"), b("HKEYS", "str"),
    b("HVALS", "str"), b("HGETALL", "str"), b("HINCRBY", "str", "f", "1"),
    b("HINCRBY", "str", "f", "x"), b("HINCRBYFLOAT", "str", "f", "1.5"),
    b("HINCRBYFLOAT", "str", "f", "x"), b("HINCRBYFLOAT", "str", "f", "inf"),
    b("HRANDFIELD", "str"), b("HRANDFIELD", "str", "2"),
    b("HRANDFIELD", "str", "x"), b("HRANDFIELD", "str", "2", "bogus"),
    b("HRANDFIELD", "str", "-2", "WITHVALUES"), b("HSCAN", "str", "0"),
    b("HSCAN", "str", "x"), b("HSCAN", "str", "0", "BOGUS"),
    b("HSCAN", "str", "0", "COUNT", "0"), b("GET", "str"),
    # the string commands on a hash
    b("HSET", "h", "f", "v"), b("GET", "h"), b("INCR", "h"),
    b("DECRBY", "h", "2"), b("APPEND", "h", "x"), b("STRLEN", "h"),
    b("GETRANGE", "h", "0", "-1"), b("GETSET", "h", "v"), b("GETDEL", "h"),
    b("GETEX", "h"), b("SETNX", "h", "v"), b("SET", "h", "v", "GET"),
    b("SET", "h", "v", "NX"), b("MGET", "h", "str", "nope"), b("TYPE", "h"),
    b("TYPE", "str"), b("EXISTS", "h", "str"), b("HGET", "h", "f"),
    # SET replaces a hash, and a string's key takes a hash after DEL
    b("SET", "h", "s"), b("TYPE", "h"), b("HGET", "h", "f"), b("GET", "h"),
    b("DEL", "h"), b("HSET", "h", "f", "v"), b("TYPE", "h"),
    b("HSETNX", "h2", "f", "v"), b("TYPE", "h2"), b("DEL", "h", "h2"),
]

BASICS = [
    # HSET's reply: the fields added; a field twice in one request
    b("HSET", "d", "a", "1", "b", "2", "c", "3"), b("HSET", "d", "a", "9"),
    b("HSET", "d", "a", "1", "e", "5", "e", "6"), b("HGET", "d", "e"),
    b("HMSET", "d", "a", "x", "z", "y"), b("HMGET", "d", "a", "z", "q", "a"),
    b("HSETNX", "d", "a", "no"), b("HSETNX", "d", "n", "yes"),
    b("HGET", "d", "a"), b("HGET", "d", "n"), b("HGET", "d", "nope"),
    b("HGET", "nope", "a"), b("HMGET", "nope", "a", "b"), b("HLEN", "d"),
    b("HLEN", "nope"), b("HSTRLEN", "d", "a"), b("HSTRLEN", "d", "nope"),
    b("HSTRLEN", "nope", "a"), b("HEXISTS", "d", "a"),
    b("HEXISTS", "d", "nope"), b("HEXISTS", "nope", "a"), b("HKEYS", "d"),
    b("HVALS", "d"), b("HGETALL", "d"), b("HKEYS", "nope"),
    b("HVALS", "nope"), b("HGETALL", "nope"),
    # HDEL: several fields, twice, absent ones; the key goes with its last
    b("HDEL", "d", "a", "a", "nope", "b"), b("HDEL", "nope", "a"),
    b("HLEN", "d"), b("HDEL", "d", "c", "e", "z", "n"), b("EXISTS", "d"),
    b("TYPE", "d"), b("HLEN", "d"), b("HGETALL", "d"),
    b("HSET", "one", "f", "v"), b("HDEL", "one", "f"), b("EXISTS", "one"),
    # empty, binary and long fields and values, an empty key
    b("HSET", "", "", ""), b("HGET", "", ""), b("HSTRLEN", "", ""),
    b("HEXISTS", "", ""), b("HGETALL", ""), b("HSET", "bin", BIN, BIN),
    b("HGET", "bin", BIN), b("HSTRLEN", "bin", BIN),
    b("HSET", "bin", "nul", b"a\x00b\r\nc"), b("HGET", "bin", "nul"),
    b("HSET", "bin", "long", "x" * 70000), b("HSTRLEN", "bin", "long"),
    b("HSET", "bin", "f" * 5000, "short"), b("HGET", "bin", "f" * 5000),
    b("HGETALL", "bin"), b("DEL", "", "bin"),
]

INCRS = [
    # HINCRBY: new fields and keys, the increment's errors, overflow
    b("HINCRBY", "n", "a", "5"), b("HINCRBY", "n", "a", "-7"),
    b("HINCRBY", "n", "b", "0"), b("HGETALL", "n"),
    b("HINCRBY", "n", "a", "abc"), b("HINCRBY", "n", "a", "1.5"),
    b("HINCRBY", "n", "a", ""), b("HINCRBY", "n", "a", " 1"),
    b("HINCRBY", "n", "a", "+1"), b("HINCRBY", "n", "a", "01"),
    b("HINCRBY", "n", "a", "-0"), b("HINCRBY", "n", "a",
                                    "9223372036854775808"),
    b("HINCRBY", "new", "a", "abc"), b("EXISTS", "new"),
    b("HSET", "n", "max", BIG, "min", SMALL),
    b("HINCRBY", "n", "max", "1"), b("HINCRBY", "n", "max", "0"),
    b("HINCRBY", "n", "max", "-1"), b("HINCRBY", "n", "max", "1"),
    b("HINCRBY", "n", "min", "-1"), b("HINCRBY", "n", "min", SMALL),
    b("HINCRBY", "n", "min", BIG), b("HINCRBY", "n", "c", SMALL),
    b("HINCRBY", "n", "c", "-1"), b("HINCRBY", "n", "d", BIG),
    b("HINCRBY", "n", "d", BIG), b("HGETALL", "n"),
    # values that are not integers
    b("HSET", "n", "s", "1.5"), b("HINCRBY", "n", "s", "1"),
    b("HSET", "n", "s", " 1"), b("HINCRBY", "n", "s", "1"),
    b("HSET", "n", "s", "1 "), b("HINCRBY", "n", "s", "1"),
    b("HSET", "n", "s", "007"), b("HINCRBY", "n", "s", "1"),
    b("HSET", "n", "s", "-0"), b("HINCRBY", "n", "s", "1"),
    b("HSET", "n", "s", ""), b("HINCRBY", "n", "s", "1"),
    b("HSET", "n", "s", "+1"), b("HINCRBY", "n", "s", "1"),
    b("HSET", "n", "s", "9223372036854775808"), b("HINCRBY", "n", "s", "1"),
    b("HSET", "n", "s", "1" * 21), b("HINCRBY", "n", "s", "1"),
    b("HSET", "n", "s", "12\x00"), b("HINCRBY", "n", "s", "1"),
    b("HSET", "n", "s", "-12"), b("HINCRBY", "n", "s", "1"),
    # HINCRBYFLOAT: Redis's long double and its formatting
    b("HINCRBYFLOAT", "fl", "a", "0.1"), b("HINCRBYFLOAT", "fl", "a", "0.2"),
    b("HINCRBYFLOAT", "fl", "a", "-0.3"), b("HINCRBYFLOAT", "fl", "b", "1.5e3"),
    b("HINCRBYFLOAT", "fl", "b", "-1500"), b("HINCRBYFLOAT", "fl", "c", "-0"),
    b("HINCRBYFLOAT", "fl", "d", "1e-20"), b("HINCRBYFLOAT", "fl", "e",
                                            "-1e-20"),
    b("HINCRBYFLOAT", "fl", "f", "1e308"), b("HINCRBYFLOAT", "fl", "f", "1e308"),
    b("HINCRBYFLOAT", "fl", "g", "0x10"), b("HINCRBYFLOAT", "fl", "g", ".5"),
    b("HINCRBYFLOAT", "fl", "g", "5."), b("HINCRBYFLOAT", "fl", "g", "+1.5"),
    b("HINCRBYFLOAT", "fl", "h", "3.0e0"), b("HINCRBYFLOAT", "fl", "i",
                                            "123456789012345678901234567890"),
    b("HINCRBYFLOAT", "fl", "j", "0.1"), b("HINCRBYFLOAT", "fl", "j", "1e17"),
    b("HINCRBYFLOAT", "fl", "k", "1e4932"), b("HINCRBYFLOAT", "fl", "k", "1e4932"),
    b("HINCRBYFLOAT", "fl", "k", "-1e4932"), b("HGETALL", "fl"),
    # the increment refused
    b("HINCRBYFLOAT", "fl", "a", "inf"), b("HINCRBYFLOAT", "fl", "a", "-inf"),
    b("HINCRBYFLOAT", "fl", "a", "infinity"), b("HINCRBYFLOAT", "fl", "a", "nan"),
    b("HINCRBYFLOAT", "fl", "a", "1e5000"), b("HINCRBYFLOAT", "fl", "a", "1e-5000"),
    b("HINCRBYFLOAT", "fl", "a", "abc"), b("HINCRBYFLOAT", "fl", "a", ""),
    b("HINCRBYFLOAT", "fl", "a", " 1"), b("HINCRBYFLOAT", "fl", "a", "1 "),
    b("HINCRBYFLOAT", "fl", "a", "1e"), b("HINCRBYFLOAT", "fl", "a", "-"),
    b("HINCRBYFLOAT", "fl", "a", "1\x00"), b("HINCRBYFLOAT", "fl", "a", "1" * 5200),
    b("HINCRBYFLOAT", "fl", "a", "0." + "0" * 5000 + "1"),
    b("HINCRBYFLOAT", "nofl", "a", "nan"), b("EXISTS", "nofl"),
    # values that are not floats, or give NaN or infinity
    b("HSET", "fl", "s", "abc"), b("HINCRBYFLOAT", "fl", "s", "1"),
    b("HSET", "fl", "s", "nan"), b("HINCRBYFLOAT", "fl", "s", "1"),
    b("HSET", "fl", "s", " 1"), b("HINCRBYFLOAT", "fl", "s", "1"),
    b("HSET", "fl", "s", ""), b("HINCRBYFLOAT", "fl", "s", "1"),
    b("HSET", "fl", "s", "inf"), b("HINCRBYFLOAT", "fl", "s", "1"),
    b("HSET", "fl", "s", "-inf"), b("HINCRBYFLOAT", "fl", "s", "1"),
    b("HSET", "fl", "s", "1e4932"), b("HINCRBYFLOAT", "fl", "s", "1e4932"),
    b("HSET", "fl", "s", "1e5000"), b("HINCRBYFLOAT", "fl", "s", "1"),
    b("HSET", "fl", "s", BIG), b("HINCRBYFLOAT", "fl", "s", "1"),
    b("HSET", "fl", "s", SMALL), b("HINCRBYFLOAT", "fl", "s", "-1"),
    b("HSET", "fl", "s", "007"), b("HINCRBYFLOAT", "fl", "s", "1"),
    # one kind of increment on the other's result
    b("HINCRBY", "fl", "a", "1"), b("HINCRBY", "fl", "g", "1"),
    b("HINCRBY", "fl", "h", "1"), b("HINCRBYFLOAT", "n", "a", "1"),
    b("HGETALL", "fl"), b("DEL", "n", "fl"),
]

RANDOM = [
    # the count and its option refused, in Redis's order (before the key)
    b("HRANDFIELD", "r", "abc"), b("HRANDFIELD", "r", "1.5"),
    b("HRANDFIELD", "r", SMALL), b("HRANDFIELD", "r", "WITHVALUES"),
    b("HRANDFIELD", "r", "1", "bogus"), b("HRANDFIELD", "r", "1", "WITHVALUES",
                                          "x"),
    b("HRANDFIELD", "r", SMALL, "bogus"), b("HRANDFIELD", "r", BIG, "WITHVALUES"),
    b("HRANDFIELD", "r", "4611686018427387904", "WITHVALUES"),
    b("HRANDFIELD", "r", "-4611686018427387904", "WITHVALUES"),
    # an absent key
    b("HRANDFIELD", "r"), b("HRANDFIELD", "r", "3"),
    b("HRANDFIELD", "r", "-3", "WITHVALUES"), b("HRANDFIELD", "r", "0"),
    # shapes and fields
    b("HSET", "r", "a", "1", "b", "2", "c", "3"), b("HRANDFIELD", "r"),
    b("HRANDFIELD", "r", "0"), b("HRANDFIELD", "r", "0", "WITHVALUES"),
    b("HRANDFIELD", "r", "1"), b("HRANDFIELD", "r", "2"),
    b("HRANDFIELD", "r", "3"), b("HRANDFIELD", "r", "5"),
    b("HRANDFIELD", "r", BIG), b("HRANDFIELD", "r", "-1"),
    b("HRANDFIELD", "r", "-5"), b("HRANDFIELD", "r", "-20", "withvalues"),
    b("HRANDFIELD", "r", "2", "WITHVALUES"),
    b("HRANDFIELD", "r", "4611686018427387903", "WITHVALUES"),
    b("HSET", "r1", "only", "one"), b("HRANDFIELD", "r1"),
    b("HRANDFIELD", "r1", "1", "WITHVALUES"), b("HRANDFIELD", "r1", "-3"),
    # a hash of many fields
    [b"HSET", b"rm"] + MANY, b("HRANDFIELD", "rm"), b("HRANDFIELD", "rm", "7"),
    b("HRANDFIELD", "rm", "500", "WITHVALUES"), b("HRANDFIELD", "rm", "999"),
    b("HRANDFIELD", "rm", "1000"), b("HRANDFIELD", "rm", "-50", "WITHVALUES"),
    b("DEL", "r", "r1", "rm"),
]

HSCANS = [
    # the cursor, then the key, then the options (Redis's order)
    b("HSCAN", "sc", "abc"), b("HSCAN", "sc", " 1"), b("HSCAN", "sc", "1 "),
    b("HSCAN", "sc", "18446744073709551616"), b("HSCAN", "sc", "0"),
    b("HSCAN", "sc", "0", "BOGUS"), b("HSCAN", "sc", "0", "COUNT", "0"),
    b("HSCAN", "sc", "0", "COUNT", "abc"), b("HSCAN", "sc", "abc", "BOGUS"),
    b("HSET", "sc", "a", "1", "b", "2", "ab", "3"), b("HSCAN", "sc", "0"),
    b("HSCAN", "sc", "0", "BOGUS"), b("HSCAN", "sc", "0", "COUNT"),
    b("HSCAN", "sc", "0", "MATCH"), b("HSCAN", "sc", "0", "COUNT", "0"),
    b("HSCAN", "sc", "0", "COUNT", "-1"), b("HSCAN", "sc", "0", "COUNT", "abc"),
    b("HSCAN", "sc", "0", "COUNT", "1.5"), b("HSCAN", "sc", "0", "TYPE", "hash"),
    b("HSCAN", "sc", "0", "MATCH", "a*", "COUNT", "0"),
    b("HSCAN", "sc", "0", "COUNT", "abc", "BOGUS"),
    b("HSCAN", "sc", "0", "MATCH", "a*"), b("HSCAN", "sc", "0", "MATCH", "*"),
    b("HSCAN", "sc", "0", "MATCH", "z*"), b("HSCAN", "sc", "0", "match", "?",
                                             "count", "1"),
    b("HSCAN", "sc", "0", "MATCH", "z*", "MATCH", "a?"),
    b("HSCAN", "sc", "0", "COUNT", "1", "COUNT", "100"),
    b("HSCAN", "sc", "0", "COUNT", BIG),
    # many fields: a full scan of many pages, and pages from elsewhere
    [b"HSET", b"big"] + MANY, b("HSCAN", "big", "0"),
    b("HSCAN", "big", "0", "COUNT", "3"), b("HSCAN", "big", "0", "COUNT", "1"),
    b("HSCAN", "big", "0", "MATCH", "f1*", "COUNT", "7"),
    b("HSCAN", "big", "0", "MATCH", "f99?"), b("HSCAN", "big", "0", "COUNT",
                                                "100000"),
    b("HSCAN", "big", "5"), b("HSCAN", "big", "17", "COUNT", "3"),
    b("HSCAN", "big", "-1"), b("HSCAN", "big", ""),
    b("HSCAN", "big", "18446744073709551615", "MATCH", "f*"),
    b("DEL", "sc", "big"),
]

KEYSPACE = [
    # EXPIRE, TTL, PERSIST, RENAME, DEL and TYPE of a hash
    b("HSET", "ks", "f", "v"), b("EXPIRE", "ks", "1000"), b("TTL", "ks"),
    b("HSET", "ks", "g", "w"), b("HDEL", "ks", "f"), b("TTL", "ks"),
    b("HINCRBY", "ks", "n", "1"), b("HINCRBYFLOAT", "ks", "x", "1.5"),
    b("TTL", "ks"), b("PERSIST", "ks"), b("TTL", "ks"),
    b("EXPIREAT", "ks", FAR), b("EXPIRETIME", "ks"),
    b("RENAME", "ks", "ks2"), b("EXISTS", "ks"), b("TYPE", "ks2"),
    b("EXPIRETIME", "ks2"), b("HGETALL", "ks2"), b("HSET", "ks3", "a", "b"),
    b("RENAME", "ks3", "ks2"), b("HGETALL", "ks2"), b("TTL", "ks2"),
    b("SET", "str", "v"), b("RENAMENX", "str", "ks2"), b("RENAME", "ks2", "str"),
    b("TYPE", "str"), b("HGETALL", "str"), b("GET", "str"),
    b("RENAME", "str", "str"), b("HLEN", "str"), b("DEL", "str"),
    b("TYPE", "str"), b("HLEN", "str"), b("HSET", "gone", "f", "v"),
    b("EXPIRE", "gone", "-1"), b("EXISTS", "gone"), b("HGET", "gone", "f"),
    b("HSET", "gone", "g", "w"), b("HGETALL", "gone"),
    b("HSET", "gone", "f", "v"), b("PEXPIREAT", "gone", "1"),
    b("HLEN", "gone"), b("HINCRBY", "gone", "f", "2"), b("HGETALL", "gone"),
    b("UNLINK", "gone", "nope"), b("EXISTS", "gone"),
]

EDGE_CASES = ARITY + WRONG_TYPE + BASICS + INCRS + RANDOM + HSCANS + KEYSPACE


@pytest.mark.features
@needs_redis
@needs_opt
def test_edge_cases(hpair):
    hpair.run(EDGE_CASES)


# ---- random sequences -------------------------------------------------

KEYS = [b"h", b"h2", b"hash:1", b"", b"s", b"x\x00y"]
FIELDS = [b"f", b"g", b"", b"f1", b"f2", b"f10", b"\xff", b"a b", b"n",
          b"x" * 70]
FLOATS = [b"0.1", b"-0.1", b"1.5", b"3", b"-2.25", b"1e10", b"0", b"-0",
          b"abc", b"inf", b"1e308", b"-1e-3", b"0x1p3", b"", b" 1",
          b"12345.6789", b"nan"]
PATTERNS = [b"*", b"f*", b"f?", b"f1*", b"[fg]", b"", b"x*", b"*\\**",
            b"\xff", b"[^f]*", b"?", b"a b"]
COUNTS = [b"1", b"2", b"3", b"5", b"10", b"0", b"-1", b"-3", b"-10",
          b"200", b"-200", b"abc", b"1.5", b"9223372036854775807"]


def rand_field(rnd):
    return rnd.choice(FIELDS)


def _fields(rnd, lo, hi):
    return [rand_field(rnd) for _ in range(rnd.randrange(lo, hi))]


def _pairs(rnd):
    out = []
    for f in _fields(rnd, 1, 5):
        out += [f, rand_value(rnd)]
    return out


def _bulk(rnd):
    """Many fields at once (Redis's hash table, pmkv's splits)."""
    n = rnd.randrange(130, 200)
    return [b"HSET", rnd.choice(KEYS)] + [
        x for i in range(n) for x in (b"b%d" % rnd.randrange(300),
                                      rand_value(rnd))]


def rand_hrandfield(rnd):
    req = [b"HRANDFIELD", rnd.choice(KEYS)]
    if rnd.random() < 0.8:
        req.append(rnd.choice(COUNTS))
        if rnd.random() < 0.5:
            req.append(rnd.choice([b"WITHVALUES", b"withvalues", b"BOGUS"]))
    return req


def rand_hscan(rnd):
    cursor = b"0" if rnd.random() < 0.8 else rnd.choice(
        [b"1", b"7", b"abc", b"-1", b""])
    req = [b"HSCAN", rnd.choice(KEYS), cursor]
    if rnd.random() < 0.5:
        req += [b"MATCH", rnd.choice(PATTERNS)]
    if rnd.random() < 0.5:
        req += [b"COUNT", rnd.choice([b"1", b"3", b"10", b"1000", b"0",
                                      b"-1", b"abc"])]
    if rnd.random() < 0.03:
        req.append(rnd.choice([b"COUNT", b"BOGUS", b"TYPE"]))
    return req


def rand_expire(rnd):
    return rnd.choice([[b"EXPIRE", rnd.choice(KEYS), b"%d" % rnd.randrange(
        1000, 100000)], [b"PERSIST", rnd.choice(KEYS)]])


# weight, request maker
MAKERS = [
    (14, lambda rnd: [b"HSET", rnd.choice(KEYS)] + _pairs(rnd)),
    (3, lambda rnd: [b"HMSET", rnd.choice(KEYS)] + _pairs(rnd)),
    (3, lambda rnd: [b"HSETNX", rnd.choice(KEYS), rand_field(rnd),
                     rand_value(rnd)]),
    (10, lambda rnd: [b"HGET", rnd.choice(KEYS), rand_field(rnd)]),
    (4, lambda rnd: [b"HMGET", rnd.choice(KEYS)] + _fields(rnd, 1, 5)),
    (7, lambda rnd: [b"HDEL", rnd.choice(KEYS)] + _fields(rnd, 1, 4)),
    (3, lambda rnd: [b"HLEN", rnd.choice(KEYS)]),
    (3, lambda rnd: [rnd.choice([b"HSTRLEN", b"HEXISTS"]), rnd.choice(KEYS),
                     rand_field(rnd)]),
    (4, lambda rnd: [rnd.choice([b"HKEYS", b"HVALS", b"HGETALL"]),
                     rnd.choice(KEYS)]),
    (6, lambda rnd: [b"HINCRBY", rnd.choice(KEYS), rand_field(rnd),
                     rnd.choice(NUMBERS)]),
    (6, lambda rnd: [b"HINCRBYFLOAT", rnd.choice(KEYS), rand_field(rnd),
                     rnd.choice(FLOATS + NUMBERS[:6])]),
    (3, rand_hrandfield),
    (2, rand_hscan),
    (0.3, _bulk),
    (2, lambda rnd: [b"SET", rnd.choice(KEYS), rand_value(rnd)]),
    (3, lambda rnd: [b"GET", rnd.choice(KEYS)]),
    (4, lambda rnd: [b"DEL"] + [rnd.choice(KEYS)
                                for _ in range(rnd.randrange(1, 3))]),
    (2, lambda rnd: [b"EXISTS"] + [rnd.choice(KEYS)
                                   for _ in range(rnd.randrange(1, 4))]),
    (2, lambda rnd: [b"TYPE", rnd.choice(KEYS)]),
    (1, rand_expire),
    (1, lambda rnd: [rnd.choice([b"TTL", b"PTTL"]), rnd.choice(KEYS)]),
    (1, lambda rnd: [rnd.choice([b"RENAME", b"RENAMENX"]), rnd.choice(KEYS),
                     rnd.choice(KEYS)]),
]


def random_request(rnd):
    """One request; about one in 50 has its arity broken."""
    req = rnd.choices([m for _, m in MAKERS], [w for w, _ in MAKERS])[0](rnd)
    if rnd.random() < 0.01:
        return req[:rnd.randrange(1, len(req))]
    if rnd.random() < 0.01:
        return req + [rand_value(rnd)] * rnd.randrange(1, 3)
    return req


@pytest.mark.features
@needs_redis
@needs_opt
@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + SEEDS))
def test_random(hpair, seed):
    rnd = random.Random(seed * 7919)
    reqs = [random_request(rnd) for _ in range(max(COMMANDS // SEEDS, 1))]
    run_batches(hpair, reqs, rnd)
    print("seed %d: %d requests compared" % (seed, hpair.compared))


# ---- the wrapped version ----------------------------------------------

@wrapped_only
def test_wrapped_refuses_hashes(server):
    c = Conn(server.port)
    try:
        clear(c)
        for req in (b("HSET", "h", "f", "v"), b("HMSET", "h", "f", "v"),
                    b("HSETNX", "h", "f", "v"), b("HINCRBY", "h", "f", "1"),
                    b("HINCRBYFLOAT", "h", "f", "1.5")):
            assert c.send([req]) == [REFUSED], req
        reads = [(b("HGET", "h", "f"), b"$-1\r\n"),
                 (b("HLEN", "h"), b":0\r\n"), (b("HGETALL", "h"), b"*0\r\n"),
                 (b("HRANDFIELD", "h"), b"$-1\r\n"),
                 (b("HDEL", "h", "f"), b":0\r\n"),
                 (b("HSCAN", "h", "0"), b"*2\r\n$1\r\n0\r\n*0\r\n"),
                 (b("EXISTS", "h"), b":0\r\n")]
        for req, want in reads:
            assert c.send([req]) == [want], req
        c.send([b("SET", "s", "v")])
        assert c.send([b("HGET", "s", "f")])[0].startswith(b"-WRONGTYPE")
    finally:
        c.close()
