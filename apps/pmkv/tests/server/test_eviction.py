# SPDX-License-Identifier: BSD-3-Clause
"""maxmemory-policy (store.c S16): a 16 MB region filled to twice its
size. noeviction refuses with Redis's OOM error and keeps every key; every
other policy evicts and the writes go on, each policy by its own rule:
the LRU ones keep a key read all along, volatile-* evict only keys with an
expiry (and refuse once none is left), volatile-ttl the soonest to expire
first. Every acknowledged write that was not evicted is there after a
kill -9."""
import signal

import pytest
import redis

pytestmark = pytest.mark.features

VALUE = b"v" * 3000
N = 7000  # 21 MB of values into a 16 MB region


def fill(c, volatile_every=0, hot=None):
    """SET N keys (every volatile_every-th with an expiry that grows with
    its number), reading hot now and then; the keys refused (OOM)."""
    oom = set()
    for i in range(N):
        try:
            if volatile_every and i % volatile_every == 0:
                c.set("k%d" % i, VALUE, ex=100000 + i)
            else:
                c.set("k%d" % i, VALUE)
        except redis.ResponseError as e:
            assert str(e).startswith("OOM command not allowed"), e
            oom.add(i)
        if hot and i % 20 == 0:
            assert c.get(hot) is not None
    return oom


def server_with(make_server, policy):
    s = make_server("--maxmemory", "16mb", "--maxmemory-policy", policy)
    return s, redis.Redis(port=s.port, socket_timeout=30)


def test_noeviction_refuses_and_keeps(make_server):
    s, c = server_with(make_server, "noeviction")
    oom = fill(c)
    assert oom
    n = c.dbsize()
    assert n + len(oom) == N
    assert c.info("stats")["evicted_keys"] == 0
    s.kill(signal.SIGKILL)
    s.start()
    assert redis.Redis(port=s.port).dbsize() == n


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu"])
def test_lru_and_lfu_keep_the_key_in_use(make_server, policy):
    s, c = server_with(make_server, policy)
    c.set("hot", b"h")
    assert not fill(c, hot="hot")
    assert c.info("stats")["evicted_keys"] > 0
    assert c.get("hot") == b"h"
    assert c.exists("k%d" % (N - 1))


def test_allkeys_random_evicts_and_goes_on(make_server):
    s, c = server_with(make_server, "allkeys-random")
    assert not fill(c)
    ev = c.info("stats")["evicted_keys"]
    assert ev > 0 and c.dbsize() + ev == N
    assert c.exists("k%d" % (N - 1))
    n = c.dbsize()
    s.kill(signal.SIGKILL)
    s.start()
    assert redis.Redis(port=s.port).dbsize() == n


@pytest.mark.parametrize("policy", ["volatile-lru", "volatile-lfu",
                                    "volatile-random", "volatile-ttl"])
def test_volatile_policies_evict_only_keys_with_an_expiry(make_server,
                                                          policy):
    s, c = server_with(make_server, policy)
    oom = fill(c, volatile_every=4)
    assert c.info("stats")["evicted_keys"] > 0
    # every key without an expiry that was acknowledged is still there
    kept = [i for i in range(N) if i % 4 and i not in oom]
    assert all(c.exists("k%d" % i) for i in kept)
    assert oom  # once no key with an expiry is left, writes are refused
    if policy == "volatile-ttl":  # the soonest to expire went first
        assert not c.exists("k0")
