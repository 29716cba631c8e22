# SPDX-License-Identifier: BSD-3-Clause
"""Publish/subscribe (pubsub.c): SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE,
PUNSUBSCRIBE, PUBLISH and PUBSUB.

Against Redis 7.0 byte for byte where the order is defined: each role
(a subscriber, a second one, a publisher) is a connection to each server,
and a step sends one request and then PING <token>, taking every reply up
to the PING's: a message published before the step (its PUBLISH answered)
comes before that reply on both servers, so the replies and the messages
of a step are the same bytes. Normalized only where Redis's order is its
hash table's: UNSUBSCRIBE with no channel (its channels sorted, its counts
in order), PUBSUB CHANNELS (sorted), and the messages of one PUBLISH that
several patterns of one client match (sorted).

Every test runs in both of pmkv's server architectures (a thread per
client, and --io-threads 2); marked features (conftest.py): pub/sub keeps
nothing in the region, so one run, not one per runtime. Then pmkv alone:
redis-py's PubSub (get_message, listen, psubscribe), two publishers at
once (each one's order kept), 50 subscribers, and a subscriber that never
reads: closed once its pending output passes the 32 MiB hard limit
(pubsub.c P3), while the publisher and a subscriber that reads go on (the
same test passes against Redis 7.0).
"""
import os
import shlex
import socket
import threading
import time

import pytest
import redis

from difftest import BIN, b, needs_redis, redis_server  # noqa: F401
from kvserver import Server, wait_until
from rawresp import Conn, encode, parse

pytestmark = pytest.mark.features

MODES = [(), ("--io-threads", "2")]
MODE_IDS = ["threads", "io-threads"]


# ---- the differential steps --------------------------------------------

class Role:
    """One client, as a connection to each server. step(req) sends req
    (a request, or a list of them) and PING <token> to both, and returns
    each server's replies before the PING's (the requests', and the
    messages that came)."""

    def __init__(self, ports):
        self.conns = [Conn(p, timeout=20) for p in ports]
        self.token = 0

    def step(self, req):
        self.token += 1
        tok = b"sync%d" % self.token
        ends = (b"*2\r\n$4\r\npong\r\n$%d\r\n%s\r\n" % (len(tok), tok),
                b"$%d\r\n%s\r\n" % (len(tok), tok))
        out = []
        for c in self.conns:
            reqs = req if isinstance(req[0], list) else [req]
            c.sock.sendall(b"".join(map(encode, reqs))
                           + encode([b"PING", tok]))
            got = []
            for _ in range(100000):
                r = c.reply()
                if r in ends:
                    break
                got.append(r)
            out.append(got)
        return out

    def close(self):
        for c in self.conns:
            c.close()


def _unsubscribe_all(replies):
    """UNSUBSCRIBE's replies with no channel named: Redis takes its
    channels in hash order. The channels sorted, the counts in order."""
    vals = [parse(r) for r in replies]
    subs = [v for v in vals if isinstance(v, list) and len(v) == 3
            and v[0] == b"unsubscribe"]
    rest = [v for v in vals if v not in subs]
    return (sorted(v[1] or b"" for v in subs), [v[2] for v in subs], rest)


def normalize(req, replies, unordered):
    if isinstance(req[0], list):
        return replies
    name = req[0].lower()
    if unordered:
        return sorted(replies)
    if name == b"unsubscribe" and len(req) == 1:
        return _unsubscribe_all(replies)
    if name == b"pubsub" and len(req) > 1 and req[1].lower() in (
            b"channels", b"shardchannels"):
        return [sorted(v) if isinstance(v, list) else v
                for v in map(parse, replies)]
    return replies


def run_case(ports, steps):
    roles = {}
    try:
        for i, step in enumerate(steps):
            who, req = step[0], step[1]
            unordered = len(step) > 2 and step[2] == "unordered"
            if who not in roles:
                roles[who] = Role(ports)
            ours, theirs = roles[who].step(req)
            if normalize(req, ours, unordered) != normalize(req, theirs,
                                                            unordered):
                raise AssertionError(
                    "step %d (%s %r) differs:\n  pmkv:  %r\n  redis: %r\n"
                    "  the steps before it: %r"
                    % (i, who, req, ours, theirs, steps[max(0, i - 6):i]))
    finally:
        for r in roles.values():
            r.close()


def quiet(ports):
    """Wait until no channel and no pattern has a subscriber on either
    server (the connections of an earlier test close asynchronously)."""
    def idle():
        for p in ports:
            c = Conn(p, timeout=5)
            try:
                chans, pats = c.send([b("PUBSUB", "CHANNELS"),
                                      b("PUBSUB", "NUMPAT")])
            finally:
                c.close()
            if chans != b"*0\r\n" or pats != b":0\r\n":
                return False
        return True
    assert wait_until(idle, 20, step=0.02), "subscribers left behind"


P = "p"  # a publisher
S = "s"  # a subscriber
T = "t"  # another subscriber

CASES = {
    "publish_without_subscribers": [
        (P, b("PUBLISH", "nobody", "x")), (P, b("PUBSUB", "NUMSUB")),
        (P, b("PUBSUB", "NUMSUB", "nobody", "x")),
        (P, b("PUBSUB", "CHANNELS")), (P, b("PUBSUB", "NUMPAT"))],
    "subscribe_counts": [
        (S, b("SUBSCRIBE", "a", "b", "a")), (S, b("SUBSCRIBE", "b")),
        (S, b("PSUBSCRIBE", "x*", "y?", "x*")),
        (P, b("PUBSUB", "NUMSUB", "a", "b", "c", "a")),
        (P, b("PUBSUB", "NUMPAT")), (P, b("PUBSUB", "CHANNELS")),
        (P, b("PUBSUB", "CHANNELS", "a*"))],
    "messages": [
        (S, b("SUBSCRIBE", "news", "")), (P, b("PUBLISH", "news", "hello")),
        (P, b("PUBLISH", "news", "")), (P, b("PUBLISH", "", "to empty")),
        (P, b("PUBLISH", "other", "not for s")),
        (S, b("PING")), (S, b("PING", "hi")),
        (P, b("PUBLISH", "news", "after ping")), (S, b("PING"))],
    "binary": [
        (S, b("SUBSCRIBE", BIN, b"a\r\nb\x00")),
        (S, b("PSUBSCRIBE", b"\x00*")),
        (P, b("PUBLISH", BIN, BIN)), (P, b("PUBLISH", b"a\r\nb\x00", BIN)),
        (S, b("PING")), (P, b("PUBSUB", "NUMSUB", BIN)),
        (S, b("UNSUBSCRIBE", BIN)), (P, b("PUBLISH", BIN, "gone")),
        (S, b("PING"))],
    "patterns": [
        (S, b("PSUBSCRIBE", "h?llo")), (T, b("PSUBSCRIBE", "h[ae]llo")),
        (P, b("PUBLISH", "hello", "1")), (P, b("PUBLISH", "hallo", "2")),
        (P, b("PUBLISH", "hxllo", "3")), (P, b("PUBLISH", "hllo", "4")),
        (S, b("PING")), (T, b("PING")),
        (S, b("PSUBSCRIBE", "h[^e]llo", r"h\*", "*")),
        (P, b("PUBLISH", "h*", "5")), (P, b("PUBLISH", "", "6")),
        (S, b("PING"), "unordered"),
        (P, b("PUBLISH", "hallo", "7")), (S, b("PING"), "unordered"),
        (P, b("PUBSUB", "NUMPAT")),
        (S, b("PUNSUBSCRIBE", "h?llo", "nope")), (S, b("PUNSUBSCRIBE")),
        (P, b("PUBSUB", "NUMPAT")), (T, b("PUNSUBSCRIBE")),
        (P, b("PUBSUB", "NUMPAT"))],
    "channel_and_pattern_both_count": [
        (S, b("SUBSCRIBE", "c1")), (S, b("PSUBSCRIBE", "c*")),
        (T, b("SUBSCRIBE", "c1")),
        (P, b("PUBLISH", "c1", "m")), (P, b("PUBLISH", "c2", "n")),
        (S, b("PING")), (T, b("PING"))],
    "subscribed_context": [
        (S, b("SUBSCRIBE", "ctx")), (S, b("GET", "x")),
        (S, b("SET", "x", "1")), (S, b("CONFIG", "GET", "save")),
        (S, b("CONFIG", "GET")), (S, b("CLIENT", "NOSUCH")),
        (S, b("PUBSUB", "NUMSUB")), (S, b("PUBSUB", "NUMPAT", "x")),
        (S, b("PUBSUB", "NOSUCH")), (S, b("PUBLISH", "ctx", "x")),
        (S, b("MULTI")), (S, b("EXEC")), (S, b("NOSUCH", "a")),
        (S, b("GET")), (S, b("PING", "a", "b")), (S, b("ECHO", "x")),
        (S, b("SUBSCRIBE")), (S, b("PSUBSCRIBE")),
        (S, b("UNSUBSCRIBE", "ctx")), (S, b("GET", "x")), (S, b("PING"))],
    "unsubscribe_all": [
        (S, b("UNSUBSCRIBE")), (S, b("PUNSUBSCRIBE")),
        (S, b("UNSUBSCRIBE", "never", "subscribed")),
        (S, b("PUNSUBSCRIBE", "never")),
        (S, b("SUBSCRIBE", "u1", "u2", "u3")), (S, b("PSUBSCRIBE", "u*")),
        (S, b("UNSUBSCRIBE")), (S, b("PING")),
        (P, b("PUBLISH", "u1", "via pattern")), (S, b("UNSUBSCRIBE")),
        (S, b("PUNSUBSCRIBE")), (S, b("PING")),
        (P, b("PUBLISH", "u1", "none")), (S, b("GET", "x")),
        (S, b("PSUBSCRIBE", "v1", "v2")), (S, b("SUBSCRIBE", "v")),
        (S, b("PUNSUBSCRIBE")), (S, b("UNSUBSCRIBE"))],
    "subscribe_inside_multi": [
        (S, [b("MULTI"), b("SUBSCRIBE", "m"), b("GET", "x"), b("PING"),
             b("EXEC")]), (S, b("GET", "x")),
        (P, b("PUBLISH", "m", "1")), (S, b("PING"))],
    "pubsub_command": [
        (P, b("PUBSUB")), (P, b("PUBSUB", "NOSUCH")),
        (P, b("PUBSUB", "CHANNELS", "a", "b")),
        (P, b("PUBSUB", "channels", "*")),
        (P, b("PUBSUB", "NUMPAT", "x")), (P, b("PUBSUB", "HELP")),
        (P, b("PUBSUB", "help", "x")), (P, b("PUBSUB", "SHARDCHANNELS")),
        (P, b("PUBSUB", "SHARDCHANNELS", "a", "b")),
        (P, b("PUBSUB", "SHARDNUMSUB", "a", "b")),
        (P, b("PUBSUB", "SHARDNUMSUB")),
        (S, b("SUBSCRIBE", "", "x")),
        (P, b("PUBSUB", "CHANNELS")), (P, b("PUBSUB", "CHANNELS", "*")),
        (P, b("PUBSUB", "CHANNELS", "")), (P, b("PUBLISH")),
        (P, b("PUBLISH", "x")), (P, b("PUBLISH", "x", "y", "z"))],
    "order_of_one_publisher": (
        [(S, b("SUBSCRIBE", "seq")), (T, b("PSUBSCRIBE", "se?"))]
        + [(P, b("PUBLISH", "seq", "m%d" % i)) for i in range(50)]
        + [(S, b("PING")), (T, b("PING"))]),
}


@pytest.fixture(scope="module", params=MODES, ids=MODE_IDS)
def pm(request, pmkv_bin, tmp_path_factory):
    """A pmkv of each architecture for the differential tests."""
    extra = shlex.split(os.environ.get("PMKV_ARGS", ""))
    s = Server(pmkv_bin, str(tmp_path_factory.mktemp("pmkv")),
               *(list(request.param) + extra))
    s.start()
    yield s
    s.kill()


@needs_redis
@pytest.mark.parametrize("case", sorted(CASES))
def test_against_redis(pm, redis_server, case):  # noqa: F811
    ports = (pm.port, redis_server.port)
    quiet(ports)
    run_case(ports, CASES[case])


@needs_redis
def test_quit_while_subscribed(pm, redis_server):  # noqa: F811
    ports = (pm.port, redis_server.port)
    quiet(ports)
    out = []
    for p in ports:
        c = Conn(p)
        out.append(c.send([b("SUBSCRIBE", "q"), b("QUIT")]))
        assert c.sock.recv(10) == b""
        c.close()
    assert out[0] == out[1]
    quiet(ports)  # the subscription went with the connection


# ---- pmkv in both architectures -----------------------------------------

@pytest.fixture(params=MODES, ids=MODE_IDS)
def srv(request, make_server):
    return make_server(*request.param)


def client(s, **kw):
    return redis.Redis(host="127.0.0.1", port=s.port, socket_timeout=20,
                       **kw)


def numsub(r, ch):
    return dict(r.pubsub_numsub(ch)).get(ch.encode(), 0)


def next_message(p, timeout=20):
    """The next message or pmessage of the PubSub p (the (un)subscribe
    confirmations passed over), or None after timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = p.get_message(timeout=max(0.0, deadline - time.monotonic()))
        if m and m["type"] in ("message", "pmessage"):
            return m
    return None


def test_redis_py_pubsub(srv):
    r = client(srv)
    p = r.pubsub()
    p.subscribe("news")
    p.psubscribe("n*")
    assert p.get_message(timeout=10)["type"] == "subscribe"
    assert p.get_message(timeout=10)["type"] == "psubscribe"
    assert p.get_message(timeout=0.05) is None  # nothing published
    assert r.publish("news", "one") == 2
    m = p.get_message(timeout=10)
    assert (m["type"], m["channel"], m["data"]) == ("message", b"news",
                                                    b"one")
    m = p.get_message(timeout=10)
    assert (m["type"], m["pattern"], m["channel"], m["data"]) == (
        "pmessage", b"n*", b"news", b"one")
    p.ping()
    assert p.get_message(timeout=10)["type"] == "pong"
    assert r.pubsub_numsub("news") == [(b"news", 1)]
    assert r.pubsub_numpat() == 1
    assert r.pubsub_channels() == [b"news"]
    p.unsubscribe()
    p.punsubscribe()
    assert p.get_message(timeout=10)["type"] == "unsubscribe"
    assert p.get_message(timeout=10)["type"] == "punsubscribe"
    assert r.publish("news", "two") == 0
    p.close()
    r.close()


def test_listen_wakes_on_publish(srv):
    """A subscriber blocked waiting (its thread in poll, or its loop
    idle) gets a message published later, without sending anything."""
    r = client(srv)
    p = client(srv).pubsub(ignore_subscribe_messages=True)
    p.subscribe("wake")
    assert wait_until(lambda: numsub(r, "wake") == 1, 10, step=0.01)
    got = []

    def listen():
        for m in p.listen():
            if m["type"] == "message":
                got.append(m["data"])
                if len(got) == 3:
                    return

    t = threading.Thread(target=listen)
    t.start()
    for i in range(3):
        time.sleep(0.05)  # the listener is blocked again
        assert r.publish("wake", "m%d" % i) == 1
    t.join(30)
    assert not t.is_alive() and got == [b"m0", b"m1", b"m2"]
    p.close()


def test_publishers_keep_their_order(srv):
    """Two publishers at once, 500 messages each: one subscriber on the
    channel and one on a pattern get all 1000, each publisher's in the
    order it published them."""
    n = 500
    r = client(srv)
    subs = [client(srv).pubsub() for _ in range(2)]
    subs[0].subscribe("ord")
    subs[1].psubscribe("o*")
    assert wait_until(lambda: numsub(r, "ord") == 1
                      and r.pubsub_numpat() == 1, 10, step=0.01)

    def publish(who):
        c = client(srv)
        for i in range(n):
            assert c.publish("ord", "%d:%d" % (who, i)) == 2
        c.close()

    ts = [threading.Thread(target=publish, args=(w,)) for w in range(2)]
    for t in ts:
        t.start()
    for p in subs:
        seen = {0: -1, 1: -1}
        for _ in range(2 * n):
            m = next_message(p)
            assert m is not None, "a message is missing"
            who, i = map(int, m["data"].split(b":"))
            assert i == seen[who] + 1, (who, i, seen)
            seen[who] = i
        assert seen == {0: n - 1, 1: n - 1}
    for t in ts:
        t.join(30)
        assert not t.is_alive()


def test_fifty_subscribers(srv):
    """50 subscribers, half of them on a pattern too: every one gets
    every message, in order; PUBLISH counts them."""
    n, msgs = 50, 20
    r = client(srv)
    socks = []
    for i in range(n):
        c = Conn(srv.port)
        req = [b("SUBSCRIBE", "fan")]
        if i % 2:
            req.append(b("PSUBSCRIBE", "f*"))
        c.send(req)
        socks.append(c)
    for i in range(msgs):
        assert r.publish("fan", "m%d" % i) == n + n // 2
    for i, c in enumerate(socks):
        for j in range(msgs):
            assert parse(c.reply()) == [b"message", b"fan", b"m%d" % j]
            if i % 2:
                assert parse(c.reply()) == [b"pmessage", b"f*", b"fan",
                                            b"m%d" % j]
    for c in socks:
        c.close()
    assert wait_until(lambda: numsub(r, "fan") == 0
                      and r.pubsub_numpat() == 0, 20, step=0.02)


def test_subscriber_leaves_with_its_connection(srv):
    r = client(srv)
    c = Conn(srv.port)
    c.send([b("SUBSCRIBE", "gone", "gone2"), b("PSUBSCRIBE", "g*")])
    assert numsub(r, "gone") == 1 and r.pubsub_numpat() == 1
    c.close()
    assert wait_until(lambda: numsub(r, "gone") == 0
                      and r.pubsub_numpat() == 0
                      and r.pubsub_channels() == [], 20, step=0.02)
    assert r.publish("gone", "x") == 0


# ---- a subscriber that never reads ----------------------------------------

HARD = 32 << 20
CHUNK = 64 << 10


def _never_reads(port):
    """A subscriber with a small receive buffer that will not read."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(20)
    s.connect(("127.0.0.1", port))
    s.sendall(encode(b("SUBSCRIBE", "flood")))
    return s


def slow_subscriber_closed(port):
    """Publish 64 KiB messages, at most three times the hard limit's
    worth, while one subscriber never reads and another reads them all:
    the first is closed (NUMSUB falls to 1), the publisher never waits
    for it, and the reader gets every message in order."""
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=20)
    slow = _never_reads(port)
    reader = Conn(port)
    reader.send([b("SUBSCRIBE", "flood")])
    assert wait_until(lambda: numsub(r, "flood") == 2, 10, step=0.01)
    got = []

    def read_all():
        for _ in range(3 * HARD // CHUNK + 10):
            v = parse(reader.reply())
            if v[2] == b"end":
                return
            got.append(int(v[2][:8]))

    t = threading.Thread(target=read_all)
    t.start()
    payload = b"x" * (CHUNK - 8)
    sent, closed = 0, False
    deadline = time.monotonic() + 120
    while sent < 3 * HARD // CHUNK and time.monotonic() < deadline:
        r.publish("flood", b"%08d" % sent + payload)
        sent += 1
        if sent % 16 == 0 and numsub(r, "flood") == 1:
            closed = True
            break
    assert closed, "the subscriber that never reads is still there"
    assert sent * CHUNK > HARD  # it was closed past the limit, not before
    for i in range(10):  # the publisher goes on
        assert r.publish("flood", b"%08d" % (sent + i) + payload) == 1
    r.publish("flood", "end")
    t.join(60)
    assert not t.is_alive()
    assert got == list(range(sent + 10))
    # what the closed one had not taken is gone, and then the socket ends
    slow.settimeout(20)
    total = 0
    for _ in range(100000):
        try:
            k = len(slow.recv(1 << 20))
        except ConnectionResetError:
            break
        if not k:
            break
        total += k
    assert total < sent * CHUNK
    slow.close()
    reader.close()
    r.close()


def test_subscriber_that_never_reads_is_closed(srv):
    slow_subscriber_closed(srv.port)


@needs_redis
def test_redis_closes_it_too(redis_server):  # noqa: F811
    """The same test against Redis 7.0 (its client-output-buffer-limit
    pubsub 32mb 8mb 60)."""
    slow_subscriber_closed(redis_server.port)
