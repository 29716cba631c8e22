# SPDX-License-Identifier: BSD-3-Clause
"""The blocking pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
BZPOPMAX, BZMPOP) against Redis 7.0, byte for byte: several clients,
each one connection to pmkv and one to Redis, send the same requests in
the same order, and every reply of one server is compared with the
other's. A step that needs a client to be blocked first waits until
INFO's blocked_clients says so on both servers; "still blocked" is that
count after a write (both servers serve before they reply to the write),
never a wait. Timeouts are short (0.1 s), and only their replies are
compared; the connections' own timeout (20 s) catches a hang. Each test
runs against pmkv with a thread per client and with two event loops.
pmkv's own: a blocked client's connection closed, killed or shut down
with the server, and a popped element gone after kill -9 while the
others stay."""
import signal
import socket

import pytest

from difftest import WRAPPED, b, needs_redis, redis_server  # noqa: F401
from kvserver import Server, wait_until
from rawresp import Conn, encode, parse

pytestmark = [pytest.mark.features, needs_redis,
              pytest.mark.skipif(WRAPPED, reason="the wrapped version holds "
                                 "strings only")]

MODES = {"threads": [], "io-threads": ["--io-threads", "2"]}


@pytest.fixture(scope="module", params=sorted(MODES))
def pmkv(request, pmkv_bin, tmp_path_factory):
    s = Server(pmkv_bin, str(tmp_path_factory.mktemp("pmkv")),
               *MODES[request.param])
    s.start()
    yield s
    s.kill()


class Client:
    """One client of each server: the same requests to both, each reply
    compared."""

    def __init__(self, ours, theirs):
        self.conns = [Conn(ours), Conn(theirs)]

    def send(self, *reqs):
        for c in self.conns:
            c.sock.sendall(b"".join(encode(r) for r in reqs))

    def read(self):
        ours, theirs = (c.reply() for c in self.conns)
        assert ours == theirs, "pmkv: %r\nredis: %r" % (ours, theirs)
        return ours

    def cmd(self, *args):
        self.send(b(*args))
        return self.read()

    def close(self):
        for c in self.conns:
            c.close()


class Pair:
    def __init__(self, ours, theirs):
        self.ports = (ours, theirs)
        self.clients = []
        self.ctl = self.client()

    def client(self):
        c = Client(*self.ports)
        self.clients.append(c)
        return c

    def blocked(self):
        """blocked_clients of each server."""
        out = []
        for c in self.ctl.conns:
            info = parse(c.send([b("INFO", "clients")])[0])
            line = [x for x in info.split(b"\r\n")
                    if x.startswith(b"blocked_clients:")]
            out.append(int(line[0].split(b":")[1]))
        return out

    def wait_blocked(self, n):
        assert wait_until(lambda: self.blocked() == [n, n], 10, step=0.005), \
            "blocked_clients %r, not %d" % (self.blocked(), n)

    def close(self):
        for c in self.clients:
            c.close()


@pytest.fixture
def pair(pmkv, redis_server):  # noqa: F811
    p = Pair(pmkv.port, redis_server.port)
    p.ctl.cmd("FLUSHALL")
    yield p
    p.close()


def test_immediate_serve_and_errors(pair):
    c = pair.ctl
    for name in ("blpop", "brpop", "blmove", "brpoplpush", "blmpop",
                 "bzpopmin", "bzpopmax", "bzmpop"):
        # Redis 6's six fields (pmkv's COMMAND has no more): name, arity,
        # flags and key positions
        c.send(b("COMMAND", "INFO", name))
        ours, theirs = (parse(x.reply())[0] for x in c.conns)
        assert ours == theirs[:6]
    c.cmd("RPUSH", "l", "a", "b", "c", "d", "e")
    c.cmd("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d")
    c.cmd("SET", "s", "v")
    for req in [("BLPOP", "none", "l", "0"), ("BRPOP", "l", "0"),
                ("BLMOVE", "l", "m", "LEFT", "RIGHT", "0"),
                ("BRPOPLPUSH", "m", "l", "0"), ("LRANGE", "l", "0", "-1"),
                ("BLMPOP", "0", "2", "none", "l", "RIGHT", "COUNT", "2"),
                ("BLMPOP", "0", "1", "l", "LEFT", "COUNT", "9"),
                ("BZPOPMIN", "z", "0"), ("BZPOPMAX", "none", "z", "0"),
                ("BZMPOP", "0", "1", "z", "MIN", "COUNT", "5"),
                ("RPUSH", "l", "x"), ("BRPOPLPUSH", "l", "l", "0"),
                ("BLPOP", "s", "0"), ("BLPOP", "none", "s", "l", "0"),
                ("BLPOP", "l", "s", "0"), ("BZPOPMIN", "s", "0"),
                ("RPUSH", "l", "x"), ("BLMOVE", "l", "s", "LEFT", "LEFT", "0"),
                ("BLMOVE", "s", "l", "LEFT", "LEFT", "0"),
                ("BZMPOP", "0", "1", "s", "MAX"),
                ("BLMPOP", "0", "1", "s", "LEFT")]:
        c.cmd(*req)
    # arguments, in Redis's order of checks
    for req in [("BLPOP", "k", "x"), ("BLPOP", "k", "-1"),
                ("BRPOP", "k", "1e400"), ("BLPOP", "k", "inf"),
                ("BLPOP", "k", "nan"), ("BLPOP", "k", " 1"),
                ("BLPOP", "k", ""), ("BLPOP", "k"), ("BZPOPMIN", "k"),
                ("BLMOVE", "k", "d", "up", "left", "x"),
                ("BLMOVE", "k", "d", "left", "down", "0"),
                ("BLMOVE", "k", "d", "left", "left", "-0.5"),
                ("BRPOPLPUSH", "k", "d", "x"), ("BRPOPLPUSH", "k", "d"),
                ("BLMPOP", "x", "0", "k", "LEFT"),
                ("BLMPOP", "-1", "1", "k", "UP"),
                ("BLMPOP", "x", "1", "k", "LEFT", "COUNT", "0"),
                ("BLMPOP", "x", "1", "k", "LEFT"),
                ("BLMPOP", "0", "5", "k", "LEFT"), ("BLMPOP", "0", "1", "k"),
                ("BZMPOP", "-1", "0", "z", "MIN"),
                ("BZMPOP", "x", "1", "z", "MAX", "COUNT", "-2"),
                ("BZMPOP", "-1", "1", "z", "MAX"),
                ("BZPOPMAX", "k", "k2", "-3")]:
        c.cmd(*req)


def test_wakeup_fifo_and_shapes(pair):
    """Waiters of one key served first come first served, each reply
    its own element: a wrong order gives other replies."""
    c, w = pair.ctl, [pair.client() for _ in range(4)]
    w[0].send(b("BLPOP", "k", "0"))
    pair.wait_blocked(1)
    w[1].send(b("BLPOP", "other", "k", "0"))
    pair.wait_blocked(2)
    w[2].send(b("BRPOP", "k", "0"))
    pair.wait_blocked(3)
    w[3].send(b("BLMPOP", "0", "1", "k", "LEFT", "COUNT", "2"))
    pair.wait_blocked(4)
    c.cmd("RPUSH", "k", "a", "b", "c", "d", "e", "f")
    for x in w:
        x.read()
    assert pair.blocked() == [0, 0]
    c.cmd("LRANGE", "k", "0", "-1")
    # sorted sets
    w[0].send(b("BZPOPMIN", "z", "0"))
    pair.wait_blocked(1)
    w[1].send(b("BZMPOP", "0", "2", "y", "z", "MAX", "COUNT", "2"))
    pair.wait_blocked(2)
    w[2].send(b("BZPOPMAX", "z", "0"))
    pair.wait_blocked(3)
    c.cmd("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
    for x in w[:3]:
        x.read()
    c.cmd("ZRANGE", "z", "0", "-1", "WITHSCORES")


def test_several_keys_first_with_data(pair):
    c, w = pair.ctl, pair.client()
    w.send(b("BLPOP", "a", "b", "0"))
    pair.wait_blocked(1)
    c.cmd("RPUSH", "b", "1")
    w.read()
    # in one transaction: the key that got data first serves
    w.send(b("BRPOP", "a", "b", "0"))
    pair.wait_blocked(1)
    c.send(b("MULTI"), b("RPUSH", "b", "1"), b("RPUSH", "a", "2"),
           b("EXEC"))
    for _ in range(4):
        c.read()
    w.read()
    c.cmd("LRANGE", "a", "0", "-1")
    c.cmd("LRANGE", "b", "0", "-1")


def test_served_in_the_writers_turn(pair):
    """A push's waiter is served before the pusher's next request; in
    MULTI, after the whole transaction."""
    c, w = pair.ctl, pair.client()
    w.send(b("BLPOP", "k", "0"))
    pair.wait_blocked(1)
    c.send(b("RPUSH", "k", "1"), b("LPOP", "k"))
    c.read(), c.read()
    w.read()
    w.send(b("BLPOP", "k", "0"))
    pair.wait_blocked(1)
    c.send(b("MULTI"), b("RPUSH", "k", "1"), b("LPOP", "k"), b("EXEC"))
    for _ in range(4):
        c.read()
    assert pair.blocked() == [1, 1]
    c.cmd("RPUSH", "k", "2")
    w.read()


def test_timeouts(pair):
    w = pair.client()
    for req in [("BLPOP", "k", "0.1"), ("BRPOP", "k", "k2", "0.1"),
                ("BLMOVE", "k", "d", "LEFT", "RIGHT", "0.1"),
                ("BRPOPLPUSH", "k", "d", "0.1"),
                ("BLMPOP", "0.1", "1", "k", "LEFT"),
                ("BZPOPMIN", "z", "0.1"), ("BZPOPMAX", "z", ".1"),
                ("BZMPOP", "0.1", "2", "z", "y", "MIN", "COUNT", "3")]:
        w.send(b(*req), b("PING"))  # the PING runs after the timeout
        w.read(), w.read()
    pair.wait_blocked(0)


def test_blmove_chain(pair):
    c, w1, w2 = pair.ctl, pair.client(), pair.client()
    w1.send(b("BLMOVE", "a", "b", "RIGHT", "LEFT", "0"))
    pair.wait_blocked(1)
    w2.send(b("BLPOP", "b", "0"))
    pair.wait_blocked(2)
    c.cmd("RPUSH", "a", "v1", "v2")
    w1.read(), w2.read()
    c.cmd("LRANGE", "a", "0", "-1")
    c.cmd("EXISTS", "b")
    w1.send(b("BRPOPLPUSH", "c", "d", "0"))
    pair.wait_blocked(1)
    w2.send(b("BLPOP", "d", "0"))
    pair.wait_blocked(2)
    c.cmd("BLMOVE", "a", "c", "LEFT", "LEFT", "0")  # served at once: wakes
    w1.read(), w2.read()
    c.cmd("KEYS", "*")


def test_in_multi_and_scripts(pair):
    c = pair.ctl
    c.send(b("MULTI"), b("BLPOP", "k", "0"),
           b("BLMOVE", "k", "d", "LEFT", "LEFT", "0"),
           b("BRPOPLPUSH", "k", "d", "0"), b("BLMPOP", "0", "1", "k", "LEFT"),
           b("BZPOPMIN", "z", "0"), b("BZMPOP", "0", "1", "z", "MIN"),
           b("BLPOP", "k", "x"), b("RPUSH", "k", "v"), b("BLPOP", "k", "0"),
           b("EXEC"))
    for _ in range(11):
        c.read()
    for script in ["return redis.call('blmpop','0','1','k','left')",
                   "return redis.call('bzmpop','0','1','k','min')",
                   "redis.call('rpush','k','v') "
                   "return redis.call('blmpop','0','1','k','left')",
                   "return redis.pcall('blpop','k','0')"]:
        c.cmd("EVAL", script, "0")
    assert pair.blocked() == [0, 0]


def test_type_changes_while_waiting(pair):
    """A waiter stays while its key holds another type, and is served
    once it holds its own; BLMOVE's destination of another type is its
    WRONGTYPE (the element stays)."""
    c, w = pair.ctl, pair.client()
    w.send(b("BLPOP", "k", "0"))
    pair.wait_blocked(1)
    c.cmd("ZADD", "k", "1", "a")
    assert pair.blocked() == [1, 1]
    c.cmd("DEL", "k")
    c.cmd("RPUSH", "k", "v")
    w.read()
    w.send(b("BZPOPMIN", "k", "0"))
    pair.wait_blocked(1)
    for req in [("SET", "k", "s"), ("DEL", "k"), ("RPUSH", "k", "v"),
                ("DEL", "k")]:
        c.cmd(*req)
    assert pair.blocked() == [1, 1]
    c.cmd("ZADD", "k", "5", "m")
    w.read()
    w.send(b("BLMOVE", "a", "d", "LEFT", "LEFT", "0"))
    pair.wait_blocked(1)
    c.cmd("SET", "d", "s")
    c.cmd("RPUSH", "a", "v")
    w.read()
    c.cmd("LRANGE", "a", "0", "-1")


def test_other_databases_and_swapdb(pair):
    c, w = pair.ctl, pair.client()
    w.cmd("SELECT", "1")
    w.send(b("BLPOP", "k", "0"))
    pair.wait_blocked(1)
    c.cmd("RPUSH", "k", "v0")  # database 0: not the waiter's
    assert pair.blocked() == [1, 1]
    c.cmd("SWAPDB", "0", "1")
    w.read()
    c.cmd("SELECT", "1")
    c.cmd("EXISTS", "k")
    c.cmd("SELECT", "0")


def test_closed_while_blocked(pair):
    """A closed waiter is gone: the next push is not lost to it."""
    c, w1, w2 = pair.ctl, pair.client(), pair.client()
    w1.send(b("BLPOP", "k", "0"))
    pair.wait_blocked(1)
    w2.send(b("BLPOP", "k", "0"))
    pair.wait_blocked(2)
    w1.close()
    pair.wait_blocked(1)
    c.cmd("RPUSH", "k", "a", "b")
    w2.read()
    c.cmd("LRANGE", "k", "0", "-1")
    w2.send(b("BLPOP", "k2", "0"))
    pair.wait_blocked(1)
    c.cmd("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
    pair.wait_blocked(0)
    c.cmd("RPUSH", "k2", "v")
    c.cmd("LLEN", "k2")


# ---- pmkv's own ----

def blpop_waiter(port, key):
    s = socket.create_connection(("127.0.0.1", port), 20)
    s.sendall(encode(b("BLPOP", key, "0")))
    return s


def blocked_clients(port):
    c = Conn(port)
    try:
        info = parse(c.send([b("INFO", "clients")])[0])
    finally:
        c.close()
    return int(info.split(b"blocked_clients:")[1].split(b"\r\n")[0])


def test_shutdown_with_blocked_clients(make_server):
    s = make_server()
    waiters = [blpop_waiter(s.port, "k%d" % i) for i in range(3)]
    assert wait_until(lambda: blocked_clients(s.port) == 3, 10, step=0.01)
    c = Conn(s.port)
    c.sock.sendall(encode(b("SHUTDOWN", "NOSAVE")))
    s.proc.wait(20)
    assert s.proc.returncode == 0, s.log_text()
    c.close()
    for w in waiters:
        w.close()


def test_popped_by_waiter_gone_after_kill9(make_server, tmp_path):
    """The element a woken waiter got is not in the list after kill -9
    and a restart, and the one nobody popped is."""
    s = make_server()
    w = Conn(s.port)
    w.sock.sendall(encode(b("BLPOP", "k", "0")))
    assert wait_until(lambda: blocked_clients(s.port) == 1, 10, step=0.01)
    c = Conn(s.port)
    assert c.send([b("RPUSH", "k", "e1", "e2")]) == [b":2\r\n"]
    assert w.reply() == b"*2\r\n$1\r\nk\r\n$2\r\ne1\r\n"
    s.kill(signal.SIGKILL)
    s.start()
    c = Conn(s.port)
    assert c.send([b("LRANGE", "k", "0", "-1")]) == [b"*1\r\n$2\r\ne2\r\n"]
    c.close()
