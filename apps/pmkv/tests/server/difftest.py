# SPDX-License-Identifier: BSD-3-Clause
"""What the differential tests share (test_differential.py and the
test_diff_*.py of each type): pmkv and Redis 7.0 sent the same requests,
their replies compared byte for byte.

- Pair: one connection to each server; run() sends requests to both
  (pipelined in batches) and compares each pair of replies, except:
  the replies whose order is undefined (ORDERLESS: KEYS, and what a
  subclass adds) are compared as sorted elements; a SCAN, SSCAN, HSCAN
  or ZSCAN from cursor 0 runs as a full scan on each server (scan_all)
  and the union of what they gave is compared, and from another cursor
  each reply must be a page (the cursors are each server's own); TTL,
  PTTL, EXPIRETIME and PEXPIRETIME within the time between the two
  servers' clocks; DELIBERATE's differences. A subclass takes requests
  of its own aside (_special).
- the fixtures: redis_server (a module's Redis), and pair_fixture(cls),
  a cls of the module's servers for one test (each emptied first).
- the random sequences' helpers: weighted(), break_arity(),
  run_batches(), rand_value(), and drawn_ok() for the random draws
  (HRANDFIELD, SRANDMEMBER, SPOP, ZRANDMEMBER).

Environment: PMKV_DIFF_SEEDS seeds (default 4; PMKV_DIFF_SEED picks the
first); PMKV_DIFF_KEEP_GOING=1 prints every difference instead of
stopping at the first; PMKV_ARGS with --wrapped: the wrapped version,
which holds strings only (opt_only skips the tests of the types).
"""
import os
import shlex
import shutil
import time

import pytest

from rawresp import Conn, RedisServer, parse

LONG = os.environ.get("PMTX_LONG_TESTS") == "1"
SEEDS = int(os.environ.get("PMKV_DIFF_SEEDS", 4))
FIRST_SEED = int(os.environ.get("PMKV_DIFF_SEED", 1))
KEEP_GOING = os.environ.get("PMKV_DIFF_KEEP_GOING") == "1"
WRAPPED = "--wrapped" in shlex.split(os.environ.get("PMKV_ARGS", ""))
SCAN_PAGES = 100000  # a full scan must end within this many pages

BIG = b"9223372036854775807"
SMALL = b"-9223372036854775808"
BIN = bytes(range(256))

needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None,
                                 reason="redis-server is not installed")
wrapped_only = pytest.mark.skipif(not WRAPPED,
                                  reason="the wrapped version only")

# the wrapped version's refusal of a write that would make a collection
REFUSED = (b"-ERR this store is pmkv's wrapped version, which holds "
           b"strings only\r\n")


def opt_only(refusal_test):
    """Skip in the wrapped version, whose refusal refusal_test checks."""
    return pytest.mark.skipif(WRAPPED, reason="the wrapped version holds "
                              "strings only (%s)" % refusal_test)


def commands(env, default, long=200000):
    """How many random commands a test sends: $env, or default (long
    with PMTX_LONG_TESTS=1)."""
    return int(os.environ.get(env, long if LONG else default))


def b(*args):
    """A request from str or bytes arguments."""
    return [a.encode() if isinstance(a, str) else a for a in args]


def name_of(req):
    if isinstance(req, bytes):
        return req.split(None, 1)[0].lower() if req.split() else b""
    return req[0].lower() if req else b""


def int_or_none(x):
    try:
        return int(x)
    except ValueError:
        return None


# ---- deliberate differences -------------------------------------------

# name: (does this request's pair of replies match the difference,
#        a request Redis is sent afterwards to stay in step, or None);
# none today: pmkv answers every request these tests send as Redis does
DELIBERATE = {}


# ---- comparing replies ------------------------------------------------

class Differ(AssertionError):
    pass


# The SCAN family: where the cursor stands, and how many bulks of a page
# make one element (HSCAN's field and value, ZSCAN's member and score).
SCANS = {b"scan": (1, 1), b"sscan": (2, 1), b"hscan": (2, 2),
         b"zscan": (2, 2)}


def _ttl_close(ours, theirs, tol_ms, unit_ms):
    a, c = parse(ours), parse(theirs)
    if not isinstance(a, int) or not isinstance(c, int) or a < 0 or c < 0:
        return ours == theirs
    return abs(a - c) * unit_ms <= tol_ms + unit_ms


def _page(v, per=1):
    """Is v one of the SCAN family's pages: a cursor, and an array of
    bulks, per of them to an element?"""
    return (isinstance(v, list) and len(v) == 2 and isinstance(v[0], bytes)
            and v[0].isdigit() and isinstance(v[1], list)
            and len(v[1]) % per == 0
            and all(isinstance(k, bytes) for k in v[1]))


def _elements(v, per):
    return sorted(tuple(v[i:i + per]) for i in range(0, len(v), per))


def same(req, ours, theirs, tol_ms):
    """Do pmkv's and Redis's replies to req agree (module docstring; the
    orderless ones are Pair's)?"""
    if ours == theirs:
        return True
    name = name_of(req)
    if name in SCANS:  # a page from a cursor other than "0"
        per = SCANS[name][1]
        return _page(parse(ours), per) and _page(parse(theirs), per)
    if name in (b"ttl", b"pttl", b"expiretime", b"pexpiretime"):
        unit = 1 if name.startswith(b"p") else 1000
        return _ttl_close(ours, theirs, tol_ms, unit)
    return False


def scan_all(conn, req):
    """req (SCAN, SSCAN, HSCAN or ZSCAN) from cursor 0 with req's key and
    options, page after page until cursor 0: the set of its elements
    (tuples where an element is several bulks), or the first reply's
    bytes if it is not a page."""
    at, per = SCANS[name_of(req)]
    found, cursor = set(), b"0"
    for page in range(SCAN_PAGES):
        raw = conn.send([req[:at] + [cursor] + req[at + 1:]])[0]
        v = parse(raw)
        if page == 0 and not (isinstance(v, list) and len(v) == 2):
            return raw
        assert _page(v, per), raw
        cursor = v[0]
        found.update(v[1] if per == 1 else zip(*[iter(v[1])] * per))
        if cursor == b"0":
            return frozenset(found)
    raise AssertionError("%s did not end after %d pages"
                         % (name_of(req).upper().decode(), SCAN_PAGES))


def is_full_scan(req):
    """A request of the SCAN family from cursor 0."""
    if isinstance(req, bytes) or name_of(req) not in SCANS:
        return False
    at = SCANS[name_of(req)][0]
    return len(req) > at and req[at] == b"0"


def drawn_ok(req, ours, theirs, before, distinct=False):
    """Are two replies to a random draw (HRANDFIELD, SRANDMEMBER, SPOP,
    ZRANDMEMBER: key [count [WITHVALUES|WITHSCORES]]) alike, drawn from
    `before` (a dict element -> its value, or a set)? Nil or an element
    without a count; else an array of as many elements as Redis's rules
    give (distinct ones for a positive count, or always if distinct),
    each of before, with its value after it when req has a fourth
    argument."""
    if ours == theirs:
        return True
    a, c = parse(ours), parse(theirs)
    if len(req) == 2:
        return a in before and c in before
    count = int_or_none(req[2])
    if count is None or not isinstance(a, list) or not isinstance(c, list):
        return False
    per = 2 if len(req) == 4 else 1
    distinct = distinct or count >= 0
    want = min(count, len(before)) if distinct else -count
    for v in (a, c):
        elems = v[::per]
        if (len(v) != want * per or any(e not in before for e in elems)
                or (per == 2 and any(before[e] != x
                                     for e, x in zip(elems, v[1::2])))
                or (distinct and len(set(elems)) != len(elems))):
            return False
    return True


class Pair:
    """pmkv and Redis, one connection each, sent the same requests."""

    # the replies whose order is undefined: how many bulks make one element
    ORDERLESS = {b"keys": 1}

    def __init__(self, pmkv_port, redis_port):
        self.ours = Conn(pmkv_port)
        self.theirs = Conn(redis_port)
        self.history = []
        self.span = 0.0  # the longest batch so far, in seconds
        self.compared = 0
        self.differences = []

    def close(self):
        self.ours.close()
        self.theirs.close()

    def run(self, requests):
        """Send requests (pipelined; those _special names alone) to both;
        compare."""
        batch = []
        for req in requests:
            special = self._special(req)
            if special:
                self._batch(batch)
                batch = []
                special(req)
            else:
                batch.append(req)
        self._batch(batch)

    def _special(self, req):
        """How req is sent alone, or None: in a batch."""
        if is_full_scan(req):
            return self._scan
        if name_of(req) == b"select":  # it may need Redis resynced
            return lambda r: self._batch([r])
        return None

    def _both(self, req):
        """req sent to each: the two replies."""
        return self.ours.send([req])[0], self.theirs.send([req])[0]

    def _read(self, req):
        """req sent to each and compared: pmkv's reply, parsed."""
        ours, theirs = self._both(req)
        self._check(req, ours, theirs, ours == theirs)
        return parse(ours)

    def _batch(self, batch):
        if not batch:
            return
        t0 = time.monotonic()
        ours = self.ours.send(batch)
        theirs = self.theirs.send(batch)
        self.span = max(self.span, time.monotonic() - t0)
        tol_ms = 2000 * self.span + 1000
        for req, a, c in zip(batch, ours, theirs):
            self._check(req, a, c, same(req, a, c, tol_ms))

    def _scan(self, req):
        a, c = scan_all(self.ours, req), scan_all(self.theirs, req)
        show = [x if isinstance(x, bytes) else sorted(x) for x in (a, c)]
        self._check(req, show[0], show[1], a == c)

    def _orderless_same(self, req, ours, theirs):
        per = self.ORDERLESS.get(name_of(req))
        if not per or not isinstance(ours, bytes) or \
                not isinstance(theirs, bytes):
            return False
        a, c = parse(ours), parse(theirs)
        return (isinstance(a, list) and isinstance(c, list)
                and _elements(a, per) == _elements(c, per))

    def _check(self, req, ours, theirs, ok):
        self.history.append(req)
        self.compared += 1
        if ok or self._orderless_same(req, ours, theirs):
            return
        for name, (matches, resync) in DELIBERATE.items():
            if matches(req, ours, theirs):
                if resync:
                    self.theirs.send([resync])
                return
        msg = ("request %d differs: %r\n  pmkv:  %r\n  redis: %r\n"
               "  the requests before it: %r"
               % (len(self.history), req, ours, theirs, self.history[-8:-1]))
        if not KEEP_GOING:
            raise Differ(msg)
        print(msg)
        self.differences.append(msg)


# ---- fixtures (a test module imports them: pytest finds them there) ---

@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    s = RedisServer(str(tmp_path_factory.mktemp("redis")))
    s.start()
    yield s
    s.kill()


def clear(conn):
    """Every key removed (DEL, not FLUSHALL: the keys are few)."""
    keys = parse(conn.send([b("KEYS", "*")])[0])
    if keys:
        conn.send([[b"DEL"] + keys])


def _clear_both(p):
    clear(p.ours)
    clear(p.theirs)


def pair_fixture(cls, fresh=_clear_both):
    """A fixture: a cls (a Pair) of the module's pmkv (conftest's server)
    and Redis, made fresh by fresh(pair) (every key removed with DEL),
    closed after the test, which fails if it kept differences
    (PMKV_DIFF_KEEP_GOING)."""
    def fixture(server, redis_server):  # noqa: F811
        p = cls(server.port, redis_server.port)
        fresh(p)
        yield p
        p.close()
        assert not p.differences, "%d differences" % len(p.differences)
    return pytest.fixture(fixture)


# ---- random sequences -------------------------------------------------

NUMBERS = [b"0", b"1", b"-1", b"7", b"-42", b"100", b"9223372036854775807",
           b"-9223372036854775808", b"9223372036854775806",
           b"-9223372036854775807", b"9223372036854775808", b"+1", b" 1",
           b"01", b"1.5", b"abc", b"", b"-0", b"4611686018427387904"]


def rand_value(rnd):
    r = rnd.random()
    if r < 0.35:
        return rnd.choice(NUMBERS)
    if r < 0.45:
        return b""
    if r < 0.55:
        return bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 40)))
    if r < 0.6:
        return rnd.choice([b"v", b"w"]) * rnd.choice([200, 300, 5000])
    return b"v%d" % rnd.randrange(1000)


def weighted(rnd, table):
    """The second of a (weight, x) of table, drawn by weight."""
    w = rnd.random() * sum(t[0] for t in table)
    for weight, x in table:
        w -= weight
        if w < 0:
            break
    return x


def break_arity(rnd, req, extra):
    """req, or about one time in 50 a new request, req with its arity
    broken: cut short, or an argument (extra(rnd)) once or twice more."""
    if rnd.random() < 0.02:
        if len(req) > 1 and rnd.random() < 0.5:
            return req[:rnd.randrange(1, len(req))]
        return req + [extra(rnd)] * rnd.randrange(1, 3)
    return req


def run_batches(pair, reqs, rnd):
    """reqs run on pair, pipelined in batches of 1 to 32 (rnd's sizes)."""
    at = 0
    while at < len(reqs):
        n = rnd.randrange(1, 33)
        pair.run(reqs[at:at + n])
        at += n
