# SPDX-License-Identifier: BSD-3-Clause
"""Big items under memory pressure: pmcached stores every item up to -I at
every -m at which memcached 1.6.18 stores it (both started by this
module with the same flags and sent the same requests), and an
acknowledged big item survives kill -9.

The cache is first filled past its limit with 1 KB items (eviction
pressure), then items of every size up to the largest -I allows are
stored, three rounds over. Where memcached answers STORED pmcached must
too (memcached's slab allocator refuses some sizes at small -m, "SERVER_
ERROR Out of memory during read": pmcached may store those). Every item
pmcached stored is read back whole right after. At -m 64 (memcached's
default) before the fix, a 100 KB item among 1 KB ones answered SERVER_
ERROR out of memory: the store's own transaction evicted eight items at
most (lru.c U4, U5).

Skipped unless $PMCACHED_BIN names pmcached and memcached is installed;
the kill -9 test is pmcached's only.
"""
import pytest

from mcserver import start_pair

SMALL = 1000
MAX_HEADER = 48 + 8 + 1 + 2   # memcached: header, CAS, key's NUL, "\r\n"


def pipeline(conn, requests, batch=500):
    """Send the requests (each answered by one line), batch at a time;
    their reply lines."""
    out = []
    for i in range(0, len(requests), batch):
        part = requests[i:i + batch]
        conn.send(b"".join(part))
        for _ in part:
            out.append(conn.readline(timeout=30))
    return out


def fill(conn, megabytes, tag):
    value = b"s" * SMALL
    reqs = [b"set %s%d 0 0 %d\r\n%s\r\n" % (tag, i, SMALL, value)
            for i in range(megabytes * 1024 * 1024 // SMALL)]
    assert set(pipeline(conn, reqs)) == {b"STORED\r\n"}


KEYLEN = 5    # b"b0_00": the keys of the big items


def big_sizes(item_max):
    top = item_max - MAX_HEADER - KEYLEN
    sizes = [100 << 10, 300 << 10, 500 << 10, 740 << 10, 800 << 10,
             1000 << 10, 1536 << 10, 2000 << 10, 3000 << 10, 4000 << 10]
    return [n for n in sizes if n < top] + [top]


def store_big(conn, key, n):
    conn.send(b"set %s 0 0 %d\r\n" % (key, n) + b"B" * n + b"\r\n")
    return conn.readline(timeout=30)


@pytest.mark.parametrize("flags,fill_mb,item_max", [
    (("-m", "64"), 80, 1 << 20),
    (("-m", "4", "-I", "2m"), 8, 2 << 20),
    (("-m", "8", "-I", "4m"), 16, 4 << 20),
    (("-m", "2", "-I", "1m"), 4, 1 << 20),
    (("-m", "1", "-I", "512k"), 2, 512 << 10),
], ids=["m64", "m4-I2m", "m8-I4m", "m2-I1m", "m1-I512k"])
def test_every_size_memcached_stores_pmcached_stores(flags, fill_mb,
                                                     item_max):
    servers = start_pair(*flags)
    try:
        conns = [s.connect(timeout=30) for s in servers]
        for rnd in range(3):
            for c in conns:
                fill(c, fill_mb, b"s%d_" % rnd)
            for i, n in enumerate(big_sizes(item_max)):
                key = b"b%d_%02d" % (rnd, i)
                mc, pm = (store_big(c, key, n) for c in conns)
                if mc == b"STORED\r\n":
                    assert pm == mc, (flags, rnd, n, pm)
                assert pm == b"STORED\r\n", (flags, rnd, n, pm)
                assert conns[1].get_value(key) == (0, b"B" * n)
        # one over the limit is refused by both, the same way
        n = big_sizes(item_max)[-1] + 1
        assert [store_big(c, b"b9_99", n) for c in conns] == \
            [b"SERVER_ERROR object too large for cache\r\n"] * 2
    finally:
        for s in servers:
            s.cleanup()


@pytest.mark.pmcached_only
def test_acknowledged_big_items_survive_kill9(make_server):
    srv = make_server("-m", "64")
    c = srv.connect(timeout=30)
    fill(c, 70, b"s")
    stored = {}
    for i, n in enumerate(big_sizes(1 << 20) * 2):
        key = b"b0_%02d" % i
        if store_big(c, key, n) == b"STORED\r\n":
            stored[key] = n
    assert len(stored) == 2 * len(big_sizes(1 << 20))
    # what the cache holds now (later stores may have evicted earlier
    # ones): every one of them is back after kill -9
    held = {k: n for k, n in stored.items() if c.get_value(k)}
    assert len(held) >= len(stored) // 2
    c.close()
    srv.restart()
    c = srv.connect(timeout=30)
    for key, n in held.items():
        assert c.get_value(key) == (0, b"B" * n), key
