# SPDX-License-Identifier: BSD-3-Clause
"""memcached's meta protocol, every command and flag: pmcached against
Debian's memcached 1.6.18, both started by this module, byte for byte.

Each scenario is a list of steps sent to both servers over raw sockets,
each step's end marked by a miss that no step makes ("mg" of an unused
key with k and an opaque, which answers EN with both). The replies of
each step must be the same bytes from both servers but for what
legitimately differs:
  - CAS uniques: each "c<n>", "cas=<n>" and gets unique is replaced by
    its rank among the scenario's uniques on that server (0 stays 0), so
    equal ranks mean the same item version, and the order of stores shows;
  - times counted in seconds (t, l, me's exp and la) may differ by one,
    when a second ends between the two servers' answers.
A step may be a function of what its server answered so far (ctx), to
send back a unique it was given.

The store's state behind the flags (stale, token sent, binary key,
fetched, last access) survives a kill -9 of pmcached: the last tests
(pmcached only) check that.

Skipped unless $PMCACHED_BIN names pmcached and memcached is installed.
"""
import os
import random
import re

import pytest

from mcserver import start_pair

# memcached's LRU maintainer and crawler threads take references to items
# now and then, and incr/decr/ma rewrite a value in place only while no
# reference but their own is held (else a new item replaces it, which
# loses ma's T, the stale bit and the fetched bit): with them running,
# memcached itself answers a sequence one way or the other. They are off
# here (memcached's LRU is then not segmented: h and l as pmcached's).
MC_ARGS = ("-o", "no_lru_maintainer,no_lru_crawler")

END_KEY = b"__meta_step_end__"
END = b"mg %s k Oend\r\n" % END_KEY
END_REPLY = b"EN k%s Oend\r\n" % END_KEY


@pytest.fixture(scope="module")
def pair():
    servers = start_pair(*MC_ARGS)   # pmcached warns and ignores them
    yield servers
    for s in servers:
        s.cleanup()


class Ctx:
    """What a step built at run time sees: its server's replies so far."""

    def __init__(self):
        self.seen = b""

    def cas(self, back=1):
        """The back-th last unique the server returned (c flag)."""
        return int(re.findall(rb" c(\d+)", self.seen)[-back])


def run(server, steps):
    ctx, out = Ctx(), []
    conn = server.connect()
    try:
        conn.call(b"flush_all\r\n", b"OK\r\n")
        for step in steps:
            data = step(ctx) if callable(step) else step
            conn.send(data + END)
            got = conn.read_until(END_REPLY)[:-len(END_REPLY)]
            ctx.seen += got
            out.append(got)
        conn.sync()
    finally:
        conn.close()
    return out


CAS = re.compile(rb"( c|cas=)(\d+)|(VALUE \S+ \d+ \d+ )(\d+)")
TIME = re.compile(rb"( [tl]|exp=|la=)(-?\d+)")


def _ranked(replies):
    uniques = set()
    for r in replies:
        for m in CAS.finditer(r):
            uniques.add(int(m.group(2) or m.group(4)))
    rank = {u: i + 1 for i, u in enumerate(sorted(uniques - {0}))}
    rank[0] = 0

    def sub(m):
        if m.group(1):
            return m.group(1) + b"%d" % rank[int(m.group(2))]
        return m.group(3) + b"%d" % rank[int(m.group(4))]
    return [CAS.sub(sub, r) for r in replies]


def _close_in_time(want, got):
    """Equal but for second counts that differ by at most one."""
    if TIME.sub(b"", want) != TIME.sub(b"", got):
        return False
    a, b = TIME.findall(want), TIME.findall(got)
    return all(x[0] == y[0] and abs(int(x[1]) - int(y[1])) <= 1
               for x, y in zip(a, b))


def same(pair, steps):
    """Run steps on both servers; their replies must be the same."""
    mc, pm = (_ranked(run(s, steps)) for s in pair)
    for i, (want, got) in enumerate(zip(mc, pm)):
        assert got == want or _close_in_time(want, got), \
            "step %d:\nmemcached %r\npmcached  %r" % (i, want, got)
    return pm


def C(fmt, back=1, plus=0):
    """A step sending back the back-th last unique (plus plus)."""
    return lambda ctx: fmt % (ctx.cas(back) + plus)


# ------------------------------------------------------------------ mg

def test_mg_return_flags_on_hits_and_misses(pair):
    same(pair, [
        b"mg a v\r\n", b"mg a s v t f c k Oq1 h l\r\n", b"mg a q v k\r\n",
        b"ms a 3 F9 T0\r\nabc\r\n",
        b"mg a\r\n", b"mg a v\r\n", b"mg a s v t f c k Oq1\r\n",
        b"mg a k O1 c\r\n", b"mg a q v\r\n", b"mg a q k O2\r\n",
        b"set b 4294967295 100 2\r\nxy\r\n", b"mg b f t s v\r\n",
        b"mg b u v\r\n", b"mg b P L v\r\n",
    ])


def test_mg_h_and_l_report_the_state_before_the_read(pair):
    same(pair, [
        b"ms a 1\r\nx\r\n",
        b"mg a h l\r\n",          # never read: h0
        b"mg a h l\r\n",          # read once: h1
        b"ms a 1\r\ny\r\n",       # a new item: not fetched
        b"mg a u h\r\n", b"mg a u h\r\n",   # u reads without recording
        b"mg a h\r\n", b"mg a h v\r\n",
        b"ms b 1\r\nx\r\n", b"get b\r\n", b"mg b h\r\n",
        b"ms c 1\r\nx\r\n", b"touch c 100\r\n", b"mg c h t\r\n",
        b"ms d 1\r\nx\r\n", b"gat 0 d\r\n", b"mg d h t\r\n",
    ])


def test_mg_T_and_t_in_request_order(pair):
    same(pair, [
        b"ms a 1 T100\r\nx\r\n",
        b"mg a t T200\r\n", b"mg a t\r\n",
        b"mg a T300 t\r\n", b"mg a t T0 v\r\n", b"mg a t\r\n",
        b"mg a T-1 v\r\n", b"mg a v\r\n",
    ])


def test_mg_N_vivifies_a_miss_and_wins_its_token(pair):
    same(pair, [
        b"mg a N30 v c t s f\r\n",     # created: W
        b"mg a N30 v c t\r\n",         # Z for the others
        b"mg a v t k h\r\n",
        b"mg b t N30 s\r\n",           # t before N: the new item's -1
        b"mg b t\r\n",
        b"mg c N30 T60 t\r\n", b"mg c t\r\n",   # the later of N and T
        b"mg d T60 N30 t\r\n", b"mg d t\r\n",
        b"mg e N0 q k\r\n", b"mg e q\r\n",
        b"ms a 2\r\nok\r\n",           # a store ends the token
        b"mg a N30 v\r\n",
        b"mg YmluYXJ5 b N30 k v\r\n",  # vivified under a b key
        b"mg binary k v\r\n",
    ])


def test_mg_R_wins_a_recache_token_once(pair):
    same(pair, [
        b"ms a 1 T10\r\nx\r\n",
        b"mg a R5 v t\r\n",            # 10 s left, not below 5: nothing
        b"mg a R30 v t c\r\n",         # below 30: W
        b"mg a R30 v t\r\n",           # Z
        b"ms b 1 T0\r\nx\r\n", b"mg b R30 t\r\n",   # never expires
        b"ms c 1 T10\r\nx\r\n", b"mg c T100 R30 t\r\n",  # T first: 100
        b"ms d 1 T10\r\nx\r\n", b"mg d R30 T100 t\r\n",  # R first: 10, W
        b"mg d t\r\n", b"mg d R0 t\r\n", b"mg d R-1 t\r\n",
    ])


def test_stale_items_md_I_and_ms_I(pair):
    same(pair, [
        b"ms a 3 T100 F4\r\nold\r\n", b"mg a c\r\n",
        b"md a I T30\r\n",             # stale, new unique, new TTL
        b"mg a v c t f\r\n",           # X W: this client recaches
        b"mg a v c\r\n",               # Z X
        C(b"ms a 3 I C%d T999 c\r\nnew\r\n"),   # matching CAS: fresh
        b"mg a v t c\r\n",
        b"md a I\r\n", b"mg a c\r\n",
        C(b"ms a 3 I C%d\r\nxyz\r\n", plus=-1),  # older: stored stale
        b"mg a v c t\r\n", b"mg a v\r\n",
        C(b"ms a 3 C%d\r\nabc\r\n", plus=-1),    # older without I: EX
        C(b"ms a 3 I C%d\r\nabc\r\n", plus=1),   # newer: EX
        b"ms a 3 I\r\nfoo\r\n",        # I without C: a plain set
        b"mg a v c\r\n",
        b"md nope I\r\n", b"md nope I q\r\n", b"md a I q\r\n",
        b"mg a c\r\n", C(b"md a I C%d k\r\n", plus=5), C(b"md a I C%d\r\n"),
        b"mg a c v\r\n",
        b"md a\r\n", b"mg a v\r\n",
    ])


def test_k_and_b_keys_as_stored(pair):
    same(pair, [
        b"ms Zm9v 2 b k c\r\nhi\r\n",  # stored under a binary key
        b"mg foo k v\r\n", b"mg Zm9v b k v O1\r\n",
        b"mg Zm9v b O2 k\r\n", b"me foo\r\n",
        b"set bar 0 0 2\r\nhi\r\n",
        b"mg YmFy b k v\r\n", b"mg bar k\r\n", b"me bar\r\n",
        b"mg bm9wZQ== b k O3 v\r\n",   # a miss: the request's form
        b"md bm9wZQ== b O4 k\r\n", b"ma bm9wZQ== b k O5\r\n",
        b"md Zm9v b k q\r\n", b"md YmFy b k\r\n",
        b"ms YmFy 2 b k\r\nho\r\n", b"ma YmFy b k\r\n",
        b"ms YmFy 1 b MA k\r\n!\r\n", b"mg bar k v\r\n",  # mark lost
        b"ms YmFy 1 b MR k\r\n!\r\n", b"mg bar k v\r\n",
    ])


def test_flags_memcached_1_6_18_does_not_have(pair):
    same(pair, [
        b"mg a E5\r\n", b"mg a x\r\n", b"md a x\r\n", b"md a E5\r\n",
        b"ma a E5\r\n", b"ms a 1 E5\r\nx\r\n", b"ms a 1 x\r\nx\r\n",
        b"ms a 1\r\nx\r\n",
        b"mg a E5 v\r\n", b"md a x q\r\n", b"mg a v\r\n",
    ])


# ------------------------------------------------------------------ ms

def test_ms_modes_with_C_and_the_reply_flags(pair):
    same(pair, [
        b"ms a 2 c k s t f O1 b\r\nhi\r\n",
        b"ms a 2 c k s t f O1\r\nhi\r\n",
        b"ms a 2 ME c k O2\r\nhi\r\n",        # NS c0
        b"ms n 2 ME C1 c k\r\nhi\r\n",        # add ignores C
        b"ms a 2 MR C1 c\r\nhi\r\n",          # replace + C: a CAS, EX
        C(b"ms a 2 MR C%d c\r\nho\r\n", back=2),
        b"ms a 1 MA C1 c\r\n!\r\n",           # append compares: EX
        C(b"ms a 1 MA C%d c\r\n!\r\n"), C(b"ms a 1 MP C%d c\r\n<\r\n"),
        b"ms m 1 MA C1 c\r\n!\r\n",           # missing: NS
        b"mg a v\r\n",
        b"ms a 2 MS C1 c q\r\nzz\r\n", b"ms a 2 q\r\nzz\r\n",
        b"ms a 2 T30 F7 I\r\nab\r\n", b"mg a t f v\r\n",
        b"ms z 2 C99 c\r\nzz\r\n",            # no item: NF c0
    ])


# ------------------------------------------------------------------ md

def test_md_flags(pair):
    same(pair, [
        b"md a\r\n", b"md a q\r\n", b"md a k O1 q\r\n",
        b"ms a 1\r\nx\r\n", b"md a q\r\n", b"mg a v\r\n",
        b"ms a 1\r\nx\r\n", b"mg a c\r\n",
        C(b"md a C%d k O2\r\n", plus=1), C(b"md a C%d k O2\r\n"),
        b"ms a 1\r\nx\r\n", b"md a T30\r\n", b"mg a v\r\n",  # T alone
        b"md a c f h l s t u v L P\r\n",
    ])


# ------------------------------------------------------------------ ma

def test_ma_flags(pair):
    same(pair, [
        b"ma a\r\n", b"ma a q k O1\r\n",
        b"ma a N0 J10 v c t\r\n", b"ma a v c t k O2\r\n",
        b"ma a MD D3 v\r\n", b"ma a M- D100 v\r\n", b"ma a M+ D7 q\r\n",
        b"mg a v\r\n", b"mg a c\r\n",
        C(b"ma a C%d v c\r\n", plus=1),       # EX
        C(b"ma a C%d v c\r\n"),               # matches
        b"ma a T100 t v\r\n", b"ma a t v\r\n", b"ma a t T0 v\r\n",
        b"ma a t\r\n",
        b"ma b t N30 J1 v\r\n", b"ma c N30 t J1 v\r\n",
        b"ma d N30 T60 t v\r\n", b"ma d t\r\n",
        b"ms s 1\r\nx\r\n", b"ma s v\r\n", b"ma a f h l s u P L v\r\n",
        # a value that grows makes a new item: T lost, and the stale bit
        b"set n 0 0 1\r\n9\r\n", b"ma n T100 t v c\r\n", b"mg n t v c\r\n",
        b"set n 0 0 2\r\n99\r\n", b"md n I\r\n", b"ma n v\r\n",
        b"mg n v c\r\n", b"md n I\r\n", b"ma n v\r\n", b"mg n v\r\n",
    ])


# ------------------------------------------------------------- mn, me

def test_mn_orders_pipelined_quiet_replies(pair):
    same(pair, [
        b"ms a 1 q\r\n1\r\nms b 1 q\r\n2\r\nmg a q v\r\nmg x q v\r\n"
        b"mg b q k v\r\nmd x q\r\nmd b q\r\nma a q\r\nma x q\r\nmn\r\n"
        b"mg a v\r\nmn\r\nmn\r\n",
        b"mg x q v\r\nmg y q k O7\r\nmn\r\n",
        b"mn\r\nmg a v\r\nmn\r\n",
    ])


def test_me(pair):
    same(pair, [
        b"me a\r\n", b"ms a 5 T100\r\nhello\r\n", b"me a\r\n",
        b"ms b 2000 F1\r\n" + b"v" * 2000 + b"\r\n", b"me b\r\n",
        b"mg a v\r\n", b"me a\r\n", b"md a I\r\n", b"me a\r\n",
        b"ms a 1 T0\r\nx\r\n", b"me a\r\n",
    ])


# ------------------------------------------------------------- counters

COUNTERS = ("cmd_get get_hits get_misses cmd_touch touch_hits touch_misses "
            "cmd_set total_items delete_hits delete_misses incr_hits "
            "incr_misses decr_hits decr_misses cas_hits cas_misses "
            "cas_badval cmd_meta").split()


def _counters(server):
    c = server.connect()
    try:
        got = c.stats()
    finally:
        c.close()
    return {k: got[k] for k in COUNTERS}


def test_meta_commands_count_as_memcached_counts_them(pair):
    """stats after the meta commands: a mg with T is a touch only on a
    hit, md I counts as no delete, ma's hits and misses are incr's or
    decr's, ms's CAS ones CAS's (not append's), only me is cmd_meta."""
    for s in pair:
        c = s.connect()
        c.call(b"stats reset\r\n", b"RESET\r\n")
        c.close()
    same(pair, [
        b"mg a v\r\n", b"mg a T10 v\r\n", b"ms a 1\r\n5\r\n",
        b"mg a v\r\n", b"mg a T10 v\r\n", b"mg b N30 v\r\n",
        b"mg x O" + b"y" * 40 + b"\r\n", b"mg a O" + b"y" * 40 + b"\r\n",
        b"md a I\r\n", b"md b\r\n", b"md b\r\n", b"md a C1\r\n",
        b"ma a\r\n", b"ma a MD\r\n", b"ma c\r\n", b"ma c MD\r\n",
        b"ma c N0\r\n", b"ma a C1\r\n", b"ma a O" + b"y" * 40 + b"\r\n",
        b"ms d 1 C5\r\nx\r\n", b"mg a c\r\n", C(b"ms a 1 C%d\r\nx\r\n"),
        C(b"ms a 1 C%d\r\nx\r\n", plus=1), b"ms a 1 MA C1\r\nx\r\n",
        b"mg a c\r\n", C(b"ms a 1 I C%d\r\nx\r\n", plus=-1),
        b"me a\r\n", b"me nope\r\n", b"mn\r\n",
    ])
    mc, pm = (_counters(s) for s in pair)
    assert pm == mc


# ------------------------------------------------------- seeded sequences

B64 = {"a": "YQ==", "b": "Yg==", "c": "Yw=="}


def _flags(rnd, cmd):
    """Some of cmd's flags, each with a token where it takes one; "C%s"
    is filled with the unique last seen, give or take one."""
    pool = ["k", "O%d" % rnd.randrange(100), "q"]
    if cmd == "mg":
        pool += ["v", "c", "f", "h", "l", "s", "t", "u",
                 "N%d" % rnd.choice([0, 30, -1]),
                 "R%d" % rnd.choice([0, 5, 30, 100]),
                 "T%d" % rnd.choice([0, 10, 50, -1])]
    elif cmd == "ms":
        pool += ["c", "I", "F%d" % rnd.randrange(5), "C%s",
                 "T%d" % rnd.choice([0, 10, 50]), "M" + rnd.choice("EAPRS")]
    elif cmd == "md":
        pool += ["I", "T%d" % rnd.choice([0, 30]), "C%s"]
    else:
        pool += ["v", "c", "t", "C%s", "N%d" % rnd.choice([0, 30]),
                 "J%d" % rnd.randrange(20), "D%d" % rnd.randrange(5),
                 "T%d" % rnd.choice([0, 30]), "M" + rnd.choice("ID+-")]
    return rnd.sample(pool, rnd.randrange(0, 5))


def _random_step(rnd):
    """One request drawn from rnd (all draws made now, so that both
    servers get the same one), as a step."""
    cmd = rnd.choice(["mg", "mg", "ms", "md", "ma"])
    key = rnd.choice(sorted(B64))
    flags = _flags(rnd, cmd)
    if rnd.random() < 0.2:
        key, flags = B64[key], flags + ["b"]
    off = rnd.choice([0, 0, -1, 1])
    number = cmd == "ma" and rnd.random() < 0.3

    def build(ctx):
        try:
            unique = max(ctx.cas() + off, 1)
        except IndexError:
            unique = 1
        fl = [f % unique if "%s" in f else f for f in flags]
        line = " ".join([cmd, key] + (["2"] if cmd == "ms" else []) + fl)
        if cmd == "ms":
            return line.encode() + b"\r\nv1\r\n"
        pre = b"set %s 0 0 1\r\n5\r\n" % key.encode() if number else b""
        return pre + line.encode() + b"\r\n"
    return build


SEEDS = 60 if os.environ.get("PMTX_LONG_TESTS") == "1" else 6


@pytest.mark.parametrize("seed", range(SEEDS))
def test_seeded_random_meta_sequences(pair, seed):
    """400 requests of random flags on three keys (plain and base64):
    misses, stale items, tokens, vivified items, quiet replies (6 seeds,
    60 with PMTX_LONG_TESTS=1)."""
    rnd = random.Random(seed)
    same(pair, [_random_step(rnd) for _ in range(400)])


# -------------------------------------------------- the state after kill -9

@pytest.mark.pmcached_only
def test_stale_won_and_binary_state_survives_kill9(make_server):
    """Each acknowledged change of an item's meta state (stale, its token
    sent, a binary key, a vivified item) is in the region when the reply
    is sent: after kill -9 the items answer as before."""
    srv = make_server()
    c = srv.connect()
    c.call(b"ms s 3\r\nold\r\nmd s I\r\n", b"HD\r\nHD\r\n")
    c.call(b"ms w 3\r\nold\r\nmd w I\r\nmg w v\r\n",
           b"HD\r\nHD\r\nVA 3 X W\r\nold\r\n")
    c.call(b"mg v N0 s\r\n", b"HD s0 W\r\n")
    c.call(b"ms r 1 T100\r\nx\r\nmg r R200 t\r\n", b"HD\r\nHD t100 W\r\n")
    c.call(b"ms Ymlu 1 b\r\nx\r\n", b"HD\r\n")
    c.call(b"ms f 1\r\nx\r\nmg f\r\n", b"HD\r\nHD\r\n")
    srv.kill9()
    srv.start()
    c = srv.connect()
    c.call(b"mg s v\r\n", b"VA 3 X W\r\nold\r\n")   # its token still free
    c.call(b"mg w v\r\n", b"VA 3 Z X\r\nold\r\n")
    c.call(b"mg v s\r\n", b"HD s0 Z\r\n")
    c.call(b"mg r R200\r\n", b"HD Z\r\n")
    c.call(b"mg bin k\r\n", b"HD kYmlu b\r\n")
    # fetched and the last access are kept by naked stores (layout.h
    # L2c): on this backend the memory is the file, so they survive
    c.call(b"mg f h\r\n", b"HD h1\r\n")
