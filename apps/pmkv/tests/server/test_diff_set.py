# SPDX-License-Identifier: BSD-3-Clause
"""pmkv's sets against Redis 7.0, byte for byte (difftest.py's
machinery, as test_differential.py's).

Compared as test_differential.py compares, and also:

- SMEMBERS, SINTER, SUNION, SDIFF: the members sorted (Redis's order is
  its encoding's: an intset's is sorted, a hash table's is not);
- SSCAN from cursor 0: a full scan on each server, page after page, and
  the union of the members compared (each page must be a cursor and an
  array of bulks);
- SPOP and SRANDMEMBER: random. The set is read (SMEMBERS) on both
  before, the replies must have the same shape (nil or one member, or an
  array of as many members as Redis's rules give: distinct ones but for
  SRANDMEMBER's negative count), every member one of the set's, and an
  error or an empty reply the same bytes. After SPOP, Redis is told to
  put back what it took and take what pmkv took (SADD, SREM), and the
  sets are compared again, so that both go on from the same state.

Two parts, marked features (conftest.py: run once, by
pmkv_server_features): hand-written edge cases (EDGE_CASES), then seeded
random sequences mixing the set commands with SET, GET, DEL, EXISTS, TYPE and
EXPIRE on a few keys, so that WRONGTYPE happens both ways:
PMKV_DIFF_SET_COMMANDS commands in all (default 3,000, or 200,000 with
PMTX_LONG_TESTS=1) over PMKV_DIFF_SEEDS seeds. The keys are removed with
DEL between tests. The wrapped version holds strings only: there, one
test checks that a set write is refused and a read finds no set.
"""
import random

import pytest

from difftest import (  # noqa: F401 (redis_server: spair's fixture)
    BIG, BIN, FIRST_SEED, KEEP_GOING, REFUSED, SEEDS, SMALL, Pair, b,
    break_arity, commands, drawn_ok, name_of, needs_redis, opt_only,
    pair_fixture, redis_server, run_batches, wrapped_only)
from rawresp import Conn, parse

COMMANDS = commands("PMKV_DIFF_SET_COMMANDS", 3000)

needs_opt = opt_only("test_wrapped_refuses_sets")


class SetPair(Pair):
    """Pair, with the comparisons the sets need (module docstring)."""

    ORDERLESS = {**Pair.ORDERLESS, b"smembers": 1, b"sinter": 1,
                 b"sunion": 1, b"sdiff": 1}

    def _special(self, req):
        name = name_of(req)
        if name in (b"spop", b"srandmember") and len(req) in (2, 3):
            return self._random
        return Pair._special(self, req)

    def _members(self, key):
        """The set at key, read on both and compared: its members."""
        v = self._read(b("SMEMBERS", key))
        return set(v) if isinstance(v, list) else set()

    def _random(self, req):
        before = self._members(req[1])
        ours, theirs = self._both(req)
        pop = name_of(req) == b"spop"
        ok = drawn_ok(req, ours, theirs, before, distinct=pop)
        self._check(req, ours, theirs, ok)
        a, c = parse(ours), parse(theirs)
        if ok and pop and a != c:
            took_ours = a if isinstance(a, list) else [a]
            took_theirs = c if isinstance(c, list) else [c]
            self.theirs.send([[b"SADD", req[1]] + took_theirs,
                              [b"SREM", req[1]] + took_ours])
        self._members(req[1])


spair = pair_fixture(SetPair)


# ---- the edge cases ---------------------------------------------------

MANY = [b"m%d" % i for i in range(1000)]
INTS = [b"%d" % i for i in range(-20, 600, 3)]

ARITY = [
    b("SADD"), b("SADD", "s"), b("SREM"), b("SREM", "s"), b("SMEMBERS"),
    b("SMEMBERS", "a", "b"), b("SISMEMBER", "s"),
    b("SISMEMBER", "s", "a", "b"), b("SMISMEMBER", "s"), b("SCARD"),
    b("SCARD", "a", "b"), b("SPOP"), b("SRANDMEMBER"), b("SMOVE", "a", "b"),
    b("SMOVE", "a", "b", "c", "d"), b("SINTER"), b("SINTERCARD"),
    b("SINTERCARD", "1"), b("SUNION"), b("SDIFF"), b("SINTERSTORE"),
    b("SINTERSTORE", "d"), b("SUNIONSTORE", "d"), b("SDIFFSTORE", "d"),
    b("SSCAN"), b("SSCAN", "s"), b("sadd"), b("SaDd", "s"),
]

WRONG_TYPE = [
    # the set commands on a string
    b("SET", "str", "v"), b("SADD", "str", "a"), b("SREM", "str", "a"),
    b("SMEMBERS", "str"), b("SISMEMBER", "str", "a"),
    b("SMISMEMBER", "str", "a", "b"), b("SCARD", "str"), b("SPOP", "str"),
    b("SPOP", "str", "0"), b("SPOP", "str", "2"), b("SRANDMEMBER", "str"),
    b("SRANDMEMBER", "str", "0"), b("SRANDMEMBER", "str", "-3"),
    b("SMOVE", "str", "s", "a"), b("SMOVE", "str", "nope", "a"),
    b("SINTER", "str"), b("SINTER", "nope", "str"), b("SUNION", "str"),
    b("SDIFF", "nope", "str"), b("SINTERCARD", "2", "nope", "str"),
    b("SINTERSTORE", "d", "str"), b("SUNIONSTORE", "d", "nope", "str"),
    b("SDIFFSTORE", "d", "str", "nope"), b("SSCAN", "str", "0"),
    b("SSCAN", "str", "0", "BOGUS"), b("SSCAN", "str", "x"),
    b("EXISTS", "d"), b("GET", "str"),
    # the string commands on a set
    b("SADD", "s", "a", "b", "c"), b("GET", "s"), b("APPEND", "s", "x"),
    b("INCR", "s"), b("DECRBY", "s", "2"), b("STRLEN", "s"),
    b("GETRANGE", "s", "0", "-1"), b("GETSET", "s", "v"), b("GETDEL", "s"),
    b("GETEX", "s"), b("SETNX", "s", "v"), b("SET", "s", "v", "GET"),
    b("MGET", "s", "str", "nope"), b("TYPE", "s"), b("TYPE", "str"),
    b("SMEMBERS", "s"),
    # a set moved between types: SET replaces it
    b("SET", "s", "v"), b("TYPE", "s"), b("GET", "s"), b("SADD", "s", "a"),
    b("DEL", "s"), b("SADD", "s", "a"), b("TYPE", "s"), b("SCARD", "s"),
    # SMOVE: the source's type first, then the destination's
    b("SMOVE", "s", "str", "a"), b("SMOVE", "nope", "str", "a"),
    b("SMOVE", "s", "str", "zz"), b("SMEMBERS", "s"), b("GET", "str"),
]

BASICS = [
    b("SADD", "s", "a", "b", "c", "a", "b"), b("SADD", "s", "c", "d"),
    b("SCARD", "s"), b("SMEMBERS", "s"), b("SISMEMBER", "s", "a"),
    b("SISMEMBER", "s", "zz"), b("SISMEMBER", "nope", "a"),
    b("SMISMEMBER", "s", "a", "zz", "d", "a"),
    b("SMISMEMBER", "nope", "a", "b"), b("SREM", "s", "a", "a", "zz"),
    b("SREM", "nope", "a"), b("SMEMBERS", "s"), b("SMEMBERS", "nope"),
    b("SCARD", "nope"),
    # the key goes with its last member
    b("SREM", "s", "b", "c", "d", "e"), b("EXISTS", "s"), b("TYPE", "s"),
    b("SCARD", "s"), b("SADD", "one", "x"), b("SREM", "one", "x", "x"),
    b("EXISTS", "one"), b("SADD", "one", "x"), b("SPOP", "one"),
    b("EXISTS", "one"), b("SADD", "one", "x", "y"), b("SPOP", "one", "5"),
    b("EXISTS", "one"), b("SADD", "one", "x"), b("SMOVE", "one", "two", "x"),
    b("EXISTS", "one"), b("SMEMBERS", "two"), b("SPOP", "two", "1"),
    b("EXISTS", "two"),
    # empty, binary and integer members, an empty key
    b("SADD", "e", ""), b("SMEMBERS", "e"), b("SISMEMBER", "e", ""),
    b("SREM", "e", ""), b("EXISTS", "e"), b("SADD", "", "", BIN, "a\x00b"),
    b("SMEMBERS", ""), b("SISMEMBER", "", BIN), b("SCARD", ""),
    b("SADD", "i", "1", "2", "3", "-5", "10", "01", "+1", " 1", "1.0"),
    b("SMEMBERS", "i"), b("SISMEMBER", "i", "01"), b("SISMEMBER", "i", "1"),
    b("SREM", "i", "1", "01"), b("SMEMBERS", "i"),
    b("SADD", "i", BIG, SMALL, "9223372036854775808"), b("SMEMBERS", "i"),
    b("SADD", "lng", "x" * 70000, "y" * 5000), b("SMEMBERS", "lng"),
    # SMOVE
    b("SADD", "src", "a", "b"), b("SADD", "dst", "b", "c"),
    b("SMOVE", "src", "dst", "a"), b("SMOVE", "src", "dst", "a"),
    b("SMOVE", "src", "dst", "b"), b("EXISTS", "src"), b("SMEMBERS", "dst"),
    b("SMOVE", "dst", "dst", "b"), b("SMOVE", "dst", "dst", "zz"),
    b("SMOVE", "nope", "dst", "a"), b("SMOVE", "dst", "new", "c"),
    b("SMEMBERS", "dst"), b("SMEMBERS", "new"), b("TYPE", "new"),
    b("EXPIRE", "dst", "1000"), b("SMOVE", "new", "dst", "c"),
    b("TTL", "dst"), b("SMEMBERS", "dst"), b("EXISTS", "new"),
]

ALGEBRA = [
    b("SADD", "A", "a", "b", "c", "d", "1", "2"),
    b("SADD", "B", "c", "d", "e", "2", "3"), b("SADD", "C", "d", "e", "f"),
    b("SINTER", "A"), b("SINTER", "A", "B"), b("SINTER", "A", "B", "C"),
    b("SINTER", "A", "nope"), b("SINTER", "nope", "A"), b("SINTER", "A", "A"),
    b("SUNION", "A"), b("SUNION", "A", "B", "C"), b("SUNION", "A", "nope"),
    b("SUNION", "nope", "nope2"), b("SUNION", "A", "A", "B"),
    b("SDIFF", "A"), b("SDIFF", "A", "B"), b("SDIFF", "A", "B", "C"),
    b("SDIFF", "A", "A"), b("SDIFF", "nope", "A"), b("SDIFF", "A", "nope"),
    b("SDIFF", "B", "A", "C"),
    b("SINTERCARD", "1", "A"), b("SINTERCARD", "2", "A", "B"),
    b("SINTERCARD", "3", "A", "B", "C"), b("SINTERCARD", "2", "A", "nope"),
    b("SINTERCARD", "2", "A", "B", "LIMIT", "0"),
    b("SINTERCARD", "2", "A", "B", "LIMIT", "1"),
    b("SINTERCARD", "1", "A", "LIMIT", "3"),
    b("SINTERCARD", "1", "A", "LIMIT", "100"),
    b("SINTERCARD", "1", "A", "limit", "1", "LIMIT", "5"),
    b("SINTERCARD", "1", "A", "LIMIT", BIG),
    b("SINTERCARD", "3", "A", "B", "LIMIT"),
    b("SINTERCARD", "2", "A", "A"),
    # numkeys and LIMIT refused, in Redis's order
    b("SINTERCARD", "0", "A"), b("SINTERCARD", "-1", "A"),
    b("SINTERCARD", "x", "A"), b("SINTERCARD", "", "A"),
    b("SINTERCARD", "1.5", "A"), b("SINTERCARD", "2", "A"),
    b("SINTERCARD", BIG, "A"), b("SINTERCARD", "1", "A", "LIMIT"),
    b("SINTERCARD", "1", "A", "LIMIT", "-1"),
    b("SINTERCARD", "1", "A", "LIMIT", "x"),
    b("SINTERCARD", "1", "A", "LIMIT", "9223372036854775808"),
    b("SINTERCARD", "1", "A", "B"), b("SINTERCARD", "1", "A", "FOO", "1"),
    b("SINTERCARD", "1", "nope", "LIMIT", "-1"),
    b("SINTERCARD", "0", "str"),
    # the stores: the destination replaced, its expiry gone, or removed
    b("SINTERSTORE", "D", "A", "B"), b("SMEMBERS", "D"), b("TYPE", "D"),
    b("SUNIONSTORE", "D", "A", "C"), b("SMEMBERS", "D"), b("SCARD", "D"),
    b("SDIFFSTORE", "D", "A", "B"), b("SMEMBERS", "D"),
    b("SET", "sd", "v", "EX", "1000"), b("SINTERSTORE", "sd", "A", "B"),
    b("TTL", "sd"), b("TYPE", "sd"), b("SMEMBERS", "sd"),
    b("EXPIRE", "D", "1000"), b("SUNIONSTORE", "D", "C"), b("TTL", "D"),
    b("SINTERSTORE", "D", "A", "nope"), b("EXISTS", "D"),
    b("SET", "sd", "v"), b("SDIFFSTORE", "sd", "A", "A"), b("EXISTS", "sd"),
    b("SUNIONSTORE", "D", "nope", "nope2"), b("EXISTS", "D"),
    b("SINTERSTORE", "nope", "nope"), b("EXISTS", "nope"),
    b("SDIFFSTORE", "A2", "A"), b("SDIFFSTORE", "A2", "A2", "B"),
    b("SMEMBERS", "A2"), b("SUNIONSTORE", "A2", "A2", "C"),
    b("SMEMBERS", "A2"), b("SINTERSTORE", "A2", "A2", "A2"),
    b("SMEMBERS", "A2"), b("SINTERSTORE", "A2", "C", "A2"),
    b("SMEMBERS", "A2"),
    b("SET", "str", "v"), b("SINTERSTORE", "d", "A", "str"),
    b("SINTERSTORE", "str", "A", "B"), b("TYPE", "str"),
    b("SMEMBERS", "str"), b("SDIFFSTORE", "str", "nope", "A"),
    b("EXISTS", "str"), b("SET", "str", "v"), b("SUNIONSTORE", "str", "str"),
]

RANDOM = [
    # counts refused, in Redis's order (the count before the key)
    b("SADD", "r", "a", "b", "c", "d", "e"), b("SET", "str", "v"),
    b("SPOP", "r", "-1"), b("SPOP", "r", "x"), b("SPOP", "r", ""),
    b("SPOP", "r", "1.5"), b("SPOP", "r", " 1"), b("SPOP", "r", "+1"),
    b("SPOP", "r", "9223372036854775808"), b("SPOP", "str", "-1"),
    b("SPOP", "nope", "-1"), b("SPOP", "r", "1", "2"),
    b("SPOP", "nope", "1", "2"), b("SPOP", "nope"), b("SPOP", "nope", "0"),
    b("SPOP", "nope", "3"), b("SPOP", "r", "0"),
    b("SRANDMEMBER", "nope"), b("SRANDMEMBER", "nope", "0"),
    b("SRANDMEMBER", "nope", "-5"), b("SRANDMEMBER", "nope", "x"),
    b("SRANDMEMBER", "nope", SMALL),
    b("SRANDMEMBER", "nope", "-9223372036854775807"),
    b("SRANDMEMBER", "r", SMALL), b("SRANDMEMBER", "r", "x"),
    b("SRANDMEMBER", "r", "9223372036854775808"),
    b("SRANDMEMBER", "r", "1", "2"), b("SRANDMEMBER", "str", "x"),
    b("SRANDMEMBER", "r", "0"),
    # shapes and members
    b("SRANDMEMBER", "r"), b("SRANDMEMBER", "r", "1"),
    b("SRANDMEMBER", "r", "3"), b("SRANDMEMBER", "r", "5"),
    b("SRANDMEMBER", "r", "6"), b("SRANDMEMBER", "r", BIG),
    b("SRANDMEMBER", "r", "-1"), b("SRANDMEMBER", "r", "-20"),
    b("SPOP", "r"), b("SPOP", "r", "1"), b("SPOP", "r", "2"),
    b("SPOP", "r", "10"), b("EXISTS", "r"),
    b("SADD", "r", "x"), b("SRANDMEMBER", "r", "-3"), b("SPOP", "r", BIG),
    b("EXISTS", "r"),
    # a set of many members (its table split, a SSCAN of many pages), and
    # one of integers
    [b"SADD", b"many"] + MANY, b("SCARD", "many"),
    b("SRANDMEMBER", "many", "10"), b("SRANDMEMBER", "many", "-10"),
    b("SRANDMEMBER", "many", "400"), b("SRANDMEMBER", "many", "999"),
    b("SPOP", "many", "3"), b("SPOP", "many", "500"), b("SPOP", "many"),
    b("SCARD", "many"), b("SMEMBERS", "many"),
    [b"SADD", b"ints"] + INTS, b("SRANDMEMBER", "ints", "7"),
    b("SPOP", "ints", "50"), b("SMEMBERS", "ints"),
    [b"SADD", b"many2"] + MANY[::3], b("SINTER", "many", "many2"),
    b("SINTERCARD", "2", "many", "many2", "LIMIT", "17"),
    b("SDIFF", "many2", "many"), b("SUNIONSTORE", "u", "many", "many2"),
    b("SCARD", "u"),
]

SSCANS = [
    b("SSCAN", "nope", "0"), b("SSCAN", "nope", "0", "COUNT", "x"),
    b("SSCAN", "nope", "0", "BOGUS"), b("SSCAN", "nope", "x"),
    b("SADD", "sc", "a", "b", "ab", "ba", "1", "10", ""),
    b("SSCAN", "sc", "0"), b("SSCAN", "sc", "0", "MATCH", "a*"),
    b("SSCAN", "sc", "0", "MATCH", "*"), b("SSCAN", "sc", "0", "MATCH", ""),
    b("SSCAN", "sc", "0", "COUNT", "1"),
    b("SSCAN", "sc", "0", "COUNT", "1", "MATCH", "?"),
    b("SSCAN", "sc", "0", "match", "1*", "count", "100000000000"),
    b("SSCAN", "sc", "0", "MATCH", "a*", "MATCH", "b*"),
    b("SSCAN", "sc", "0", "BOGUS"), b("SSCAN", "sc", "0", "COUNT"),
    b("SSCAN", "sc", "0", "COUNT", "0"), b("SSCAN", "sc", "0", "COUNT", "-1"),
    b("SSCAN", "sc", "0", "COUNT", "x"), b("SSCAN", "sc", "0", "MATCH"),
    b("SSCAN", "sc", "0", "TYPE", "string"),
    b("SSCAN", "sc", "0", "MATCH", "a*", "COUNT", "x"),
    b("SSCAN", "sc", "x"), b("SSCAN", "sc", " 0"), b("SSCAN", "sc", "1x"),
    b("SSCAN", "sc", "18446744073709551616"), b("SSCAN", "str", "x"),
    [b"SADD", b"big"] + MANY, b("SSCAN", "big", "0"),
    b("SSCAN", "big", "0", "COUNT", "7"),
    b("SSCAN", "big", "0", "MATCH", "m1*", "COUNT", "3"),
]

KEYSPACE = [
    # EXPIRE, TTL, RENAME, DEL and TYPE of a set
    b("SADD", "ks", "a", "b"), b("EXPIRE", "ks", "1000"), b("TTL", "ks"),
    b("SADD", "ks", "c"), b("SREM", "ks", "a"), b("TTL", "ks"),
    b("SPOP", "ks", "0"), b("TTL", "ks"), b("PERSIST", "ks"), b("TTL", "ks"),
    b("RENAME", "ks", "ks2"), b("EXISTS", "ks"), b("TYPE", "ks2"),
    b("SMEMBERS", "ks2"), b("SET", "str", "v"), b("RENAME", "ks2", "str"),
    b("TYPE", "str"), b("SMEMBERS", "str"), b("RENAMENX", "str", "ks2"),
    b("SCARD", "ks2"), b("DEL", "ks2"), b("TYPE", "ks2"), b("EXISTS", "ks2"),
    b("SADD", "ks2", "z"), b("SMEMBERS", "ks2"),
    b("SADD", "gone", "a"), b("PEXPIRE", "gone", "0"), b("EXISTS", "gone"),
    b("SADD", "gone", "a"), b("EXPIREAT", "gone", "1"), b("SCARD", "gone"),
    b("SADD", "gone", "b"), b("SMEMBERS", "gone"), b("TTL", "gone"),
    b("UNLINK", "gone", "ks2", "str"),
]

EDGE_CASES = ARITY + WRONG_TYPE + BASICS + ALGEBRA + RANDOM + SSCANS + KEYSPACE


@pytest.mark.features
@needs_redis
@needs_opt
def test_set_edge_cases(spair):
    spair.run(EDGE_CASES)


# ---- random sequences -------------------------------------------------

KEYS = [b"s1", b"s2", b"s3", b"s4", b"", b"str"]
MEMBERS = [b"a", b"b", b"c", b"d", b"1", b"2", b"10", b"-1", b"", b"01",
           b"\x00\xff", b"x" * 100, b"m7", b"9223372036854775807"]
COUNTS = [b"0", b"1", b"2", b"3", b"5", b"100", b"-1", b"-3", b"-7", b"x",
          b"", b"1.5", b"9223372036854775807", b"-9223372036854775808"]


def _members(rnd, lo, hi):
    return [rnd.choice(MEMBERS) for _ in range(rnd.randrange(lo, hi))]


def _keys(rnd, lo, hi):
    return [rnd.choice(KEYS) for _ in range(rnd.randrange(lo, hi))]


def rand_sintercard(rnd):
    keys = _keys(rnd, 1, 4)
    req = [b"SINTERCARD", b"%d" % len(keys)] + keys
    if rnd.random() < 0.4:
        req += [b"LIMIT", rnd.choice(COUNTS)]
    if rnd.random() < 0.05:
        req[1] = rnd.choice(COUNTS)
    return req


def rand_sscan(rnd):
    req = [b"SSCAN", rnd.choice(KEYS), b"0"]
    if rnd.random() < 0.4:
        req += [b"MATCH", rnd.choice([b"*", b"a*", b"?", b"1*", b"[a-c]"])]
    if rnd.random() < 0.4:
        req += [b"COUNT", rnd.choice([b"1", b"2", b"10", b"0", b"x"])]
    return req


def _count_or_not(rnd, name):
    req = [name, rnd.choice(KEYS)]
    if rnd.random() < 0.6:
        req.append(rnd.choice(COUNTS))
    return req


# weight, request maker
MAKERS = [
    (20, lambda rnd: [b"SADD", rnd.choice(KEYS)] + _members(rnd, 1, 5)),
    (8, lambda rnd: [b"SREM", rnd.choice(KEYS)] + _members(rnd, 1, 4)),
    (5, lambda rnd: [b"SMEMBERS", rnd.choice(KEYS)]),
    (4, lambda rnd: [b"SISMEMBER", rnd.choice(KEYS), rnd.choice(MEMBERS)]),
    (3, lambda rnd: [b"SMISMEMBER", rnd.choice(KEYS)] + _members(rnd, 1, 4)),
    (4, lambda rnd: [b"SCARD", rnd.choice(KEYS)]),
    (5, lambda rnd: _count_or_not(rnd, b"SPOP")),
    (4, lambda rnd: _count_or_not(rnd, b"SRANDMEMBER")),
    (5, lambda rnd: [b"SMOVE", rnd.choice(KEYS), rnd.choice(KEYS),
                     rnd.choice(MEMBERS)]),
    (6, lambda rnd: [rnd.choice([b"SINTER", b"SUNION", b"SDIFF"])] +
     _keys(rnd, 1, 4)),
    (3, rand_sintercard),
    (5, lambda rnd: [rnd.choice([b"SINTERSTORE", b"SUNIONSTORE",
                                 b"SDIFFSTORE"]), rnd.choice(KEYS)] +
     _keys(rnd, 1, 4)),
    (2, rand_sscan),
    (4, lambda rnd: [b"SET", rnd.choice(KEYS), rnd.choice(MEMBERS)]),
    (3, lambda rnd: [b"GET", rnd.choice(KEYS)]),
    (3, lambda rnd: [b"DEL"] + _keys(rnd, 1, 3)),
    (2, lambda rnd: [b"EXISTS"] + _keys(rnd, 1, 3)),
    (3, lambda rnd: [b"TYPE", rnd.choice(KEYS)]),
    (1, lambda rnd: [b"EXPIRE", rnd.choice(KEYS),
                     b"%d" % rnd.randrange(1000, 100000)]),
    (1, lambda rnd: [b"TTL", rnd.choice(KEYS)]),
]


def random_request(rnd):
    """One request; about one in 50 has its arity broken: cut short, or
    a member or two more."""
    make = rnd.choices([m for _, m in MAKERS], [w for w, _ in MAKERS])[0]
    return break_arity(rnd, make(rnd), lambda rnd: rnd.choice(MEMBERS))


@pytest.mark.features
@needs_redis
@needs_opt
@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + SEEDS))
def test_set_random(spair, seed):
    rnd = random.Random(seed)
    reqs = [random_request(rnd) for _ in range(max(COMMANDS // SEEDS, 1))]
    run_batches(spair, reqs, rnd)
    for k in KEYS:  # the end state, key by key
        spair.run([b("TYPE", k), b("SMEMBERS", k), b("GET", k)])
    print("seed %d: %d requests compared%s" % (
        seed, spair.compared, " (keep going)" if KEEP_GOING else ""))


# ---- the wrapped version ----------------------------------------------

@wrapped_only
def test_wrapped_refuses_sets(server):
    """The wrapped version holds strings only: a write that would make a
    set is refused with its own error, and nothing is made; a read finds
    no set; a string is still the wrong type for the set commands."""
    c = Conn(server.port)
    try:
        assert c.send([b("SADD", "w", "a")]) == [REFUSED]
        assert c.send([b("SMOVE", "nope", "w", "a")]) == [b":0\r\n"]
        assert c.send([b("EXISTS", "w"), b("SMEMBERS", "w"),
                       b("SCARD", "w"), b("SINTERSTORE", "d", "nope"),
                       b("SPOP", "w")]) == [
            b":0\r\n", b"*0\r\n", b":0\r\n", b":0\r\n", b"$-1\r\n"]
        c.send([b("SET", "str", "v")])
        assert c.send([b("SADD", "str", "a")]) == [
            b"-WRONGTYPE Operation against a key holding the wrong kind of "
            b"value\r\n"]
    finally:
        c.close()
