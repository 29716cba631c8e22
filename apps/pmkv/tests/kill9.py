#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""kill9.py - kill -9 pmkv under load, restart it, and check that every
acknowledged write is there.

Several client threads, each on its own keys and its own connection, keep
a window of pipelined writes in flight: SET (values derived from key and
version, so a value read back names the write it came from), DEL, INCR of
the thread's counter, MSET of two keys at once, SETs with an expiry an
hour away (they must stay like the others), and SETs of keys of their
own that expire at once, which the server's active expiry keeps removing
while it is killed (server.c V3), MULTI/EXEC blocks that SET two keys and
INCR the counter (whole or absent, as an MSET), and in the opt version
the collections: HSET/HDEL of a hash's fields and SADD/SREM of a set's
members (each field or member checked as a key is), ZADD/ZREM of a sorted
set's members with their version as the score, and RPUSH/LPOP of a list
of versions (a run of consecutive versions, from at most the pops acked
to at least the pushes acked). Each thread records,
per key, the last acknowledged state and the writes sent after it. After
`kill -9`, `pmkv --check` checks the region as the kill left it (after
recovery), and a restarted server must hold, for every key, its last
acknowledged state or one of its writes in flight; an MSET in flight is
whole or absent; a counter is at least its last acknowledged value.
Anything else is a lost acknowledged write. The runtime rotates (undo,
redo, redo-async, auto, and cow with --wrapped) at every restart, so each
runtime's log is recovered by a server running another. --wrapped runs
the wrapped version of the store.
--check-every N runs `pmkv --check` after every Nth kill only: under the
journal backend a check replays the journal and closes the region
cleanly, so the kills in between leave the journal's replay (and the
runtime's recovery) to the restarted server itself.

Prints one JSON line; exits 1 on any violation (0 with --expect-loss if
there was one: the control that shows the check can fail).
"""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "common"))
from apptest import (free_port, kill9_options,  # noqa: E402
                     version_of, versioned)

RUNTIMES = ["undo", "redo", "redo-async", "auto"]
KEYS_PER_THREAD = 40
WINDOW = 8
SPREAD = 700    # a value: its name, then up to 700 bytes


def value_of(key, version):
    return versioned(key, version, SPREAD)


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Reader:
    """Replies off a socket, one RESP value at a time."""

    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-"):
            return (t, rest)
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n + 2)[:-2]
        if t == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise ValueError("bad reply %r" % line)


MEMBERS = 12    # fields of a thread's hash, members of its set and zset


def coll_keys(t):
    """A thread's collections: hash, set, sorted set, list."""
    return (b"h%d" % t, b"s%d" % t, b"z%d" % t, b"l%d" % t)


class Loader(threading.Thread):
    """One client: its own keys k<t>:<i> and counter c<t>, and with
    collections its hash, set, sorted set and list (coll_keys)."""

    def __init__(self, port, t, seed, state, collections):
        super().__init__(daemon=True)
        self.port, self.t = port, t
        self.rnd = random.Random(seed)
        self.st = state  # persists across rounds: versions, acked state
        self.acked = 0
        self.collections = collections

    def key(self, i):
        return b"k%d_%d" % (self.t, i)

    def coll_op(self, r):
        """A write of one of the thread's collections; its model's key is
        (collection key, member) for the hash, set and sorted set, whose
        state is a version (hash, zset) or 1 (set), None when absent."""
        st = self.st
        h, sk, z, lk = coll_keys(self.t)
        m = b"m%d" % self.rnd.randrange(MEMBERS)
        st["version"] += 1
        v = st["version"]
        if r < 0.2:
            return ("set", [(h, m), v], resp("HSET", h, m, v))
        if r < 0.3:
            return ("del", [(h, m)], resp("HDEL", h, m))
        if r < 0.45:
            return ("set", [(sk, m), 1], resp("SADD", sk, m))
        if r < 0.55:
            return ("del", [(sk, m)], resp("SREM", sk, m))
        if r < 0.7:
            return ("set", [(z, m), v], resp("ZADD", z, v, m))
        if r < 0.8:
            return ("del", [(z, m)], resp("ZREM", z, m))
        if r < 0.93:
            st["pushed"] += 1
            return ("push", [st["pushed"]], resp("RPUSH", lk,
                                                 st["pushed"]))
        return ("pop", [], resp("LPOP", lk))

    def next_op(self):
        st, r = self.st, self.rnd.random()
        if self.collections and r < 0.3:
            return self.coll_op(r / 0.3)
        r = self.rnd.random()
        a = self.key(self.rnd.randrange(KEYS_PER_THREAD))
        if r < 0.1:
            return ("incr", [b"c%d" % self.t], resp("INCR", b"c%d" % self.t))
        if r < 0.2:
            return ("del", [a], resp("DEL", a))
        if r < 0.25:
            t = b"t%d_%d" % (self.t, self.rnd.randrange(1000))
            return ("ttl", [], resp("SET", t, b"x", b"PX", b"1"))
        st["version"] += 1
        v = st["version"]
        if r < 0.35:
            b = self.key(self.rnd.randrange(KEYS_PER_THREAD))
            if b != a and self.rnd.random() < 0.5:
                return ("mset", [a, b, v],
                        resp("MSET", a, value_of(a, v), b, value_of(b, v)))
            if b != a:  # the same as a transaction: 4 replies, EXEC's last
                return ("exec", [a, b, v],
                        resp("MULTI") + resp("SET", a, value_of(a, v)) +
                        resp("SET", b, value_of(b, v)) +
                        resp("INCR", b"c%d" % self.t) + resp("EXEC"))
        if r < 0.45:
            return ("set", [a, v],
                    resp("SET", a, value_of(a, v), b"EX", b"3600"))
        return ("set", [a, v], resp("SET", a, value_of(a, v)))

    def run(self):
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), 5)
        except OSError:
            return
        rd, sent = Reader(sock), []
        try:
            while True:
                while len(sent) < WINDOW:
                    op = self.next_op()
                    self.st["inflight"].append(op)
                    sent.append(op)
                    sock.sendall(op[2])
                rep = rd.reply()
                if sent[0][0] == "exec":  # +OK, 3 +QUEUED, then EXEC's
                    for _ in range(4):
                        rep = rd.reply()
                    if isinstance(rep, list):
                        rep = rep[2]  # the INCR's
                self.ack(sent.pop(0), rep)
        except (OSError, ConnectionError, ValueError):
            pass
        finally:
            sock.close()

    def ack(self, op, rep):
        st = self.st
        st["inflight"].remove(op)
        kind, args = op[0], op[1]
        if isinstance(rep, tuple) and rep[0] == b"-":
            st["errors"].append((kind, rep[1].decode(errors="replace")))
            return
        if kind == "set":
            st["acked"][args[0]] = args[1]
        elif kind == "del":
            st["acked"][args[0]] = None
        elif kind in ("mset", "exec"):
            st["acked"][args[0]] = args[2]
            st["acked"][args[1]] = args[2]
            if kind == "exec":
                st["counter"] = rep
        elif kind == "incr":
            st["counter"] = rep
        elif kind == "push":
            st["push_acked"] = max(st["push_acked"], args[0])
        elif kind == "pop" and rep is not None:
            st["pop_acked"] = max(st["pop_acked"], int(rep))
        self.acked += 1


def allowed(st, key):
    """The states key may be in: acknowledged, or any write in flight."""
    ok = {st["acked"].get(key)}
    for kind, args, _ in st["inflight"]:
        if kind == "set" and args[0] == key:
            ok.add(args[1])
        elif kind == "del" and args[0] == key:
            ok.add(None)
        elif kind in ("mset", "exec") and key in args[:2]:
            ok.add(args[2])
    return ok


def torn_msets(inflight, seen):
    """An MSET in flight is whole or absent: one key with its version and
    the other without is torn, unless a later write in flight touched the
    other key."""
    bad = []
    for i, (kind, args, _) in enumerate(inflight):
        if kind not in ("mset", "exec") or args[0] == args[1]:
            continue
        has = [seen.get(k) == args[2] for k in args[:2]]
        if has[0] == has[1]:
            continue
        other = args[1] if has[0] else args[0]
        if not any(other in later[1][:2] and later[0] != "incr"
                   for later in inflight[i + 1:]):
            bad.append("%s %s %s (version %d) torn" % (
                kind.upper(), args[0].decode(), args[1].decode(), args[2]))
    return bad


def verify_collections(rd, s, t, st):
    """The thread's collections against its model: each member's state
    acknowledged or in flight; the list a run of consecutive versions
    that holds every push acknowledged and no pop acknowledged."""
    bad = []
    h, sk, z, lk = coll_keys(t)
    s.sendall(resp("HGETALL", h) + resp("SMEMBERS", sk) +
              resp("ZRANGE", z, 0, -1, b"WITHSCORES") +
              resp("LRANGE", lk, 0, -1))
    hv, sv, zv, lv = rd.reply(), rd.reply(), rd.reply(), rd.reply()
    for reply in (hv, sv, zv, lv):
        if isinstance(reply, tuple):
            return ["collections of thread %d: %r" % (t, reply)]
    seen = {}
    for m in range(MEMBERS):
        name = b"m%d" % m
        seen[(h, name)] = None
        seen[(sk, name)] = None
        seen[(z, name)] = None
    for i in range(0, len(hv), 2):
        seen[(h, hv[i])] = int(hv[i + 1])
    for m in sv:
        seen[(sk, m)] = 1
    for i in range(0, len(zv), 2):
        seen[(z, zv[i])] = int(float(zv[i + 1]))
    for k, got in seen.items():
        if got not in allowed(st, k):
            bad.append("%s[%s]: holds %r, acknowledged %r" % (
                k[0].decode(), k[1].decode(), got, st["acked"].get(k)))
        st["acked"][k] = got
    vals = [int(x) for x in lv]
    pops = sum(1 for op in st["inflight"] if op[0] == "pop")
    name = lk.decode()
    if vals and vals != list(range(vals[0], vals[0] + len(vals))):
        bad.append("%s: not a run of consecutive versions: %r" % (
            name, vals[:20]))
    if vals and not st["pop_acked"] < vals[0] <= st["pop_acked"] + 1 + pops:
        bad.append("%s: starts at %d, pops acknowledged to %d, %d in "
                   "flight" % (name, vals[0], st["pop_acked"], pops))
    if vals and not st["push_acked"] <= vals[-1] <= st["pushed"]:
        bad.append("%s: ends at %d, pushes acknowledged to %d, sent to %d"
                   % (name, vals[-1], st["push_acked"], st["pushed"]))
    if not vals and st["push_acked"] > st["pop_acked"] + pops:
        bad.append("%s: empty, pushes acknowledged to %d, pops to %d" % (
            name, st["push_acked"], st["pop_acked"]))
    # what survived is the new truth: the next push follows the last
    # element (a push in flight that did not land is gone with the server)
    if vals:
        st["pushed"] = st["push_acked"] = vals[-1]
        st["pop_acked"] = vals[0] - 1
    else:
        st["push_acked"] = st["pop_acked"] = st["pushed"]
    return bad


def verify(port, states, collections):
    """Every violation, as text."""
    bad = []
    with socket.create_connection(("127.0.0.1", port), 10) as s:
        rd = Reader(s)
        for t, st in enumerate(states):
            keys = [b"k%d_%d" % (t, i) for i in range(KEYS_PER_THREAD)]
            s.sendall(resp("MGET", *keys) + resp("GET", b"c%d" % t))
            vals, ctr = rd.reply(), rd.reply()
            seen = {}
            for k, v in zip(keys, vals):
                got = None if v is None else version_of(k, v, SPREAD)
                seen[k] = got
                if got not in allowed(st, k):
                    bad.append("%s: holds %r, acknowledged %r, in flight "
                               "%r" % (k.decode(), got, st["acked"].get(k),
                                       sorted(allowed(st, k) - {got},
                                              key=str)))
            bad += torn_msets(st["inflight"], seen)
            if collections:
                bad += verify_collections(rd, s, t, st)
            c = int(ctr) if ctr is not None else 0
            if c < st["counter"]:
                bad.append("counter c%d: %d < acknowledged %d"
                           % (t, c, st["counter"]))
            st["counter"] = c  # in-flight INCRs may have landed
            for k, v in seen.items():  # what survived is the new truth
                st["acked"][k] = v
            st["inflight"].clear()
    return bad


def start(binary, port, region, runtime, extra, timeout=30):
    p = subprocess.Popen([binary, "--port", str(port), "--region", region,
                          "--runtime", runtime] + extra,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise SystemExit("pmkv exited: %s" % p.stderr.read().decode())
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return p
        except OSError:
            time.sleep(0.01)
    p.kill()
    raise SystemExit("pmkv did not start")


def check_region(binary, region, extra):
    r = subprocess.run([binary, "--check", "--region", region] + extra,
                       capture_output=True, text=True, timeout=120)
    return None if r.returncode == 0 else (r.stderr or r.stdout).strip()


def main():
    ap = kill9_options(kills=200)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--min-ms", type=int, default=5)
    ap.add_argument("--max-ms", type=int, default=60)
    ap.add_argument("--expect-loss", action="store_true")
    ap.add_argument("--check-every", type=int, default=1,
                    help="pmkv --check after every Nth kill only")
    ap.add_argument("--wrapped", action="store_true")
    ap.add_argument("--server-args", default="",
                    help="more pmkv flags, e.g. \"--io-threads 2\"")
    ap.add_argument("--runtimes", default=None,
                    help="comma-separated, instead of the rotation above "
                         "(twin: a twin region, which runs twin only)")
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    extra = ["--backend", a.backend, "--maxmemory",
             "256mb"] + a.server_args.split()
    runtimes = RUNTIMES + ["cow"] if a.wrapped else RUNTIMES
    if a.runtimes:
        runtimes = a.runtimes.split(",")
    if a.wrapped:
        extra.append("--wrapped")
    d = tempfile.mkdtemp(prefix="pmkv-kill9-", dir=a.dir)
    region = os.path.join(d, "pmkv.region")
    states = [{"version": 0, "acked": {}, "inflight": [], "counter": 0,
               "errors": [], "pushed": 0, "push_acked": 0, "pop_acked": 0}
              for _ in range(a.threads)]
    collections = not a.wrapped  # the wrapped version: strings only
    port = free_port()
    bad, acked, t0 = [], 0, time.monotonic()
    p = None
    try:
        for k in range(a.kills):
            p = start(a.bin, port, region, runtimes[k % len(runtimes)], extra)
            if k:
                bad += verify(port, states, collections)
                if bad:
                    break
            loaders = [Loader(port, t, rnd.random(), states[t], collections)
                       for t in range(a.threads)]
            for ld in loaders:
                ld.start()
            time.sleep(rnd.uniform(a.min_ms, a.max_ms) / 1000)
            p.send_signal(signal.SIGKILL)
            p.wait()
            for ld in loaders:
                ld.join(10)
                acked += ld.acked
            err = None
            if (k + 1) % a.check_every == 0 or k + 1 == a.kills:
                err = check_region(a.bin, region, extra)
            if err:
                bad.append("after kill %d: --check: %s" % (k + 1, err))
                break
        if not bad:
            last = "twin" if runtimes == ["twin"] else "redo"
            p = start(a.bin, port, region, last, extra)
            bad += verify(port, states, collections)
            p.kill()
            p.wait()
    finally:
        if p is not None and p.poll() is None:  # left by a break above
            p.kill()
            p.wait()
        subprocess.run(["rm", "-rf", d])
    errors = [e for st in states for e in st["errors"]]
    print(json.dumps({"test": "pmkv_kill9", "kills": a.kills,
                      "backend": a.backend, "check_every": a.check_every,
                      "version": "wrapped" if a.wrapped else "opt",
                      "acked_writes": acked,
                      "write_errors": len(errors), "violations": len(bad),
                      "seconds": round(time.monotonic() - t0, 1)}))
    for b in bad[:10]:
        print("VIOLATION", b, file=sys.stderr)
    for e in errors[:5]:
        print("ERROR REPLY", e, file=sys.stderr)
    lost = bool(bad) or bool(errors)
    if a.expect_loss:
        sys.exit(0 if bad else 1)
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
