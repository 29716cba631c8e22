#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""kill9.py - kill -9 pmcached under load, restart it, and check that
every acknowledged write is there.

A loader drives several connections at once, each owning its own keys and
keeping a window of pipelined sets and deletes in flight. Values are
derived from (key, version), so a value read back names the write it came
from. The loader records, per key, the last acknowledged state and every
write sent after it (in flight when the server died). After `kill -9` and
a restart on the same region file, each key must hold its last
acknowledged state or one of its in-flight writes; anything else (an older
value, a lost key, a resurrected delete, a corrupt value) is a lost
acknowledged write. Before each restart, `pmcached --check` checks the
region as the kill left it (heap, hash table, LRU lists, no leaked block),
in a private view. The runtime is rotated (undo, redo, redo-async) at
every restart, so recovery of each runtime's log is exercised by the
others. Memory is sized so that nothing is evicted (checked with stats).
--binary makes every other connection speak memcached's binary protocol
(SET and DELETE, acknowledged by their responses), so that its writes are
held to the same promise. --check-every N checks after every Nth kill
only: on the journal backend
`--check` applies the journal's commits to the file first (the region is
opened once for writing), so the kills in between leave the journal's
replay and pmtx recovery to the restarted server itself. --meta makes the
text connections write with meta commands: ms, md, and md I, which
invalidates a key's item (it stays, stale: mg answers it with X); a key's
state is then its version and whether it is stale, both checked after
each restart (mg), so an acknowledged invalidation must survive as its
set does.

Prints one JSON line; exits 1 on any violation.
"""
import json
import os
import random
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "common"))
from apptest import (free_port, kill9_options,  # noqa: E402
                     version_of, versioned)

RUNTIMES = ["undo", "redo", "redo-async"]
SPREAD = 1600   # a value: its name, then up to 1.6 KB


def value_of(key, version):
    return versioned(key.encode(), version, SPREAD)


class Server:
    def __init__(self, binary, region, backend, threads, port, env=None,
                 memory=256):
        self.binary, self.region, self.backend = binary, region, backend
        self.threads, self.port, self.proc = threads, port, None
        self.memory = memory
        self.env = env

    def start(self, runtime, deadline=20.0):
        args = [self.binary, "-p", str(self.port), "-l", "127.0.0.1",
                "-U", "0", "-t", str(self.threads), "-m", str(self.memory),
                "-e", self.region, "--runtime", runtime,
                "--backend", self.backend]
        if os.geteuid() == 0:
            args += ["-u", "root"]
        t0 = time.monotonic()
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE,
                                     env=self.env)
        while time.monotonic() - t0 < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace")
                raise RuntimeError(f"pmcached exited: {err}")
            # Ready means answering: the listener is bound before the
            # region is opened (or created), so a connect alone is not.
            try:
                with socket.create_connection(("127.0.0.1", self.port),
                                              timeout=5) as s:
                    s.sendall(b"version\r\n")
                    if s.recv(64).startswith(b"VERSION"):
                        return time.monotonic() - t0
            except OSError:
                time.sleep(0.002)
        raise RuntimeError("pmcached did not start")

    def check(self):
        """pmcached --check on the region as the kill left it (a private
        view: recovery in memory, the file untouched). None if it is
        consistent, else what is wrong."""
        r = subprocess.run([self.binary, "--check", "-e", self.region],
                           capture_output=True, timeout=120, env=self.env)
        return None if r.returncode == 0 else \
            (r.stderr or r.stdout).decode(errors="replace").strip()

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        if self.proc:
            self.proc.wait(timeout=10)
            self.proc.stderr.close()
        self.proc = None


BIN_HEADER = struct.Struct(">BBHBBHIIQ")  # memcached's binary protocol
BIN_SET, BIN_DELETE = 0x01, 0x04


def bin_request(op, key, extras=b"", value=b""):
    return BIN_HEADER.pack(0x80, op, len(key), len(extras), 0, 0,
                           len(extras) + len(key) + len(value), 0,
                           0) + extras + key + value


def apply(version, stale, write):
    """A key's state (version or None, stale) after write: a version (a
    set), None (a delete) or "I" (md I: an item stays, stale)."""
    if write == "I":
        return version, version is not None
    return write, False


class Conn:
    """One loader connection: its keys, its window of writes in flight;
    text or binary protocol."""

    def __init__(self, port, keys, state, rng, binary=False, meta=False):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.setblocking(False)
        self.keys, self.state, self.rng = keys, state, rng
        self.binary = binary
        self.meta = meta and not binary
        self.pending = []   # (key, version or None) per unanswered write
        self.rbuf = b""
        self.out = b""
        self.dead = False

    def request(self, key, write):
        if self.binary and write is None:
            return bin_request(BIN_DELETE, key.encode())
        if self.binary:
            return bin_request(BIN_SET, key.encode(), bytes(8),
                               value_of(key, write))
        if self.meta and write in (None, "I"):
            return f"md {key}{' I' if write else ''}\r\n".encode()
        if write is None:
            return f"delete {key}\r\n".encode()
        data = value_of(key, write)
        if self.meta:
            return f"ms {key} {len(data)}\r\n".encode() + data + b"\r\n"
        return (f"set {key} 0 0 {len(data)}\r\n".encode() + data +
                b"\r\n")

    def queue_writes(self, n):
        for _ in range(n):
            key = self.rng.choice(self.keys)
            st = self.state[key]
            write = None
            dice = self.rng.random()
            if self.meta and dice >= 0.85:
                write = "I"     # md I: invalidate
            elif dice >= 0.15:
                st["next"] += 1
                write = st["next"]
            self.out += self.request(key, write)
            st["inflight"].append(write)
            self.pending.append((key, write))

    def replies(self):
        """The complete replies in rbuf, as text lines or (opcode,
        status) of binary responses."""
        out = []
        while not self.binary and b"\r\n" in self.rbuf:
            line, self.rbuf = self.rbuf.split(b"\r\n", 1)
            out.append(line)
        while self.binary and len(self.rbuf) >= 24:
            _, op, _, _, _, status, body = BIN_HEADER.unpack(
                self.rbuf[:24])[:7]
            if len(self.rbuf) < 24 + body:
                break
            self.rbuf = self.rbuf[24 + body:]
            out.append((op, status))
        return out

    def on_reply(self, line):
        key, write = self.pending.pop(0)
        st = self.state[key]
        ok = ((BIN_SET, 0), (BIN_DELETE, 0), (BIN_DELETE, 1)) \
            if self.binary else (b"HD", b"NF") if self.meta \
            else (b"STORED", b"DELETED", b"NOT_FOUND")
        if line not in ok:
            raise RuntimeError(f"unexpected reply {line!r} for {key}")
        # acknowledged: this write and those before it (a connection's
        # replies come in order) make the key's state; they are no longer
        # possible outcomes
        i = st["inflight"].index(write)
        for op in st["inflight"][:i + 1]:
            st["acked"], st["stale"] = apply(st["acked"], st["stale"], op)
        st["inflight"] = st["inflight"][i + 1:]
        return 1

    def read(self):
        acks = 0
        try:
            data = self.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError:
            data = b""
        if not data:
            self.dead = True
            return 0
        self.rbuf += data
        for reply in self.replies():
            acks += self.on_reply(reply)
        return acks

    def write(self):
        if not self.out:
            return
        try:
            n = self.sock.send(self.out)
            self.out = self.out[n:]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.dead = True


def load_and_kill(server, conns, window, kill_after, max_ops):
    """Drive the connections; kill -9 the server after kill_after seconds
    (or max_ops acks); read what was answered until every socket is
    closed. Returns the number of acknowledgements."""
    sel = selectors.DefaultSelector()
    for c in conns:
        sel.register(c.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
    acks, killed = 0, False
    t0 = time.monotonic()
    while not all(c.dead for c in conns):
        if time.monotonic() - t0 > kill_after + 30:
            raise RuntimeError("connections did not close after the kill")
        if not killed and (time.monotonic() - t0 >= kill_after or
                           acks >= max_ops):
            server.kill9()
            killed = True
        for c in conns:
            if not killed and not c.dead and len(c.pending) < window:
                c.queue_writes(window - len(c.pending))
        for skey, ev in sel.select(timeout=0.05):
            c = skey.data
            if c.dead:
                continue
            if ev & selectors.EVENT_WRITE:
                c.write()
            if ev & selectors.EVENT_READ:
                acks += c.read()
            if c.dead:
                sel.unregister(c.sock)
                c.sock.close()
    sel.close()
    return acks


def fetch(port, keys):
    """Current values of keys: {key: (bytes, stale)} for present ones
    (mg with k: a stale item answers X)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    found = {}
    for i in range(0, len(keys), 100):
        batch = keys[i:i + 100]
        s.sendall(b"".join(b"mg %s k v\r\n" % k.encode() for k in batch) +
                  b"mn\r\n")
        buf = b""
        while not buf.endswith(b"MN\r\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                raise RuntimeError("connection closed during verification")
            buf += chunk
        pos = 0
        while True:
            nl = buf.index(b"\r\n", pos)
            line = buf[pos:nl].split()
            pos = nl + 2
            if line == [b"MN"]:
                break
            if line[0] != b"VA":
                continue        # EN: absent
            n, key = int(line[1]), line[2][1:].decode()
            found[key] = (buf[pos:pos + n], b"X" in line[3:])
            pos += n + 2
    s.close()
    return found


def stat(port, name):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"stats\r\n")
    buf = b""
    while not buf.endswith(b"END\r\n"):
        buf += s.recv(1 << 16)
    s.close()
    for line in buf.decode().split("\r\n"):
        parts = line.split()
        if len(parts) == 3 and parts[1] == name:
            return int(parts[2])
    raise KeyError(name)


def verify(port, state):
    """Check every key; then make what is there the acknowledged state.
    Returns (acknowledged states checked, violations)."""
    keys = sorted(state)
    found = fetch(port, keys)
    bad = []
    for key in keys:
        st = state[key]
        data, stale = found.get(key, (None, False))
        got = None if data is None else version_of(key.encode(), data,
                                                   SPREAD)
        if got == "corrupt":
            bad.append(f"{key}: corrupt value {data[:40]!r}")
            continue
        allowed = [(st["acked"], st["stale"])]
        for op in st["inflight"]:
            allowed.append(apply(*allowed[-1], op))
        if (got, stale) not in allowed:
            bad.append(f"{key}: holds {got} (stale {stale}), acknowledged "
                       f"{st['acked']} (stale {st['stale']}), in flight "
                       f"{st['inflight']}")
        st["acked"], st["stale"], st["inflight"] = got, stale, []
        if got is not None:
            st["next"] = max(st["next"], got)
    return len(keys), bad


def run():
    ap = kill9_options(kills=200, seed=None)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--keys", type=int, default=4000)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--window", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory", type=int, default=256,
                    help="-m (MB); a twin region is fixed at 3 x -m + 128")
    ap.add_argument("--min-ms", type=int, default=20)
    ap.add_argument("--max-ms", type=int, default=250)
    ap.add_argument("--time-limit", type=float, default=1200)
    ap.add_argument("--check-every", type=int, default=1,
                    help="pmcached --check after every Nth kill only")
    ap.add_argument("--runtimes", default=",".join(RUNTIMES),
                    help="rotated at every restart")
    ap.add_argument("--binary", action="store_true",
                    help="every other connection speaks the binary "
                         "protocol")
    ap.add_argument("--meta", action="store_true",
                    help="the text connections write with ms, md and md "
                         "I (invalidate)")
    ap.add_argument("--mutant", default=None,
                    help="PMTX_MUTANT for a pmcached-mut binary: the run "
                         "must then find lost writes (exit 0 if it does)")
    a = ap.parse_args()
    runtimes = a.runtimes.split(",")
    env = dict(os.environ)
    if a.mutant:
        env["PMTX_MUTANT"] = a.mutant
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="pmcached-kill9-", dir=a.dir)
    region = os.path.join(tmp, "cache.region")
    port = free_port()
    server = Server(a.bin, region, a.backend, a.threads, port, env,
                    a.memory)
    keys = [f"k{i}_{rng.randrange(1 << 20)}" for i in range(a.keys)]
    state = {k: {"acked": None, "stale": False, "inflight": [], "next": 0}
             for k in keys}
    per_conn = [keys[i::a.conns] for i in range(a.conns)]
    totals = {"acks": 0, "checked": 0, "lost": 0, "kills": 0, "broken": 0}
    violations = []
    t_start = time.monotonic()
    try:
        server.start(runtimes[0])
        for k in range(a.kills):
            if time.monotonic() - t_start > a.time_limit:
                break
            conns = [Conn(port, per_conn[i], state, rng,
                          binary=a.binary and i % 2 == 1, meta=a.meta)
                     for i in range(a.conns)]
            kill_after = rng.uniform(a.min_ms, a.max_ms) / 1000
            totals["acks"] += load_and_kill(server, conns, a.window,
                                            kill_after, 1 << 30)
            totals["kills"] += 1
            KILLS_DONE[0] += 1
            last = k + 1 == a.kills
            broken = server.check() if (k + 1) % a.check_every == 0 or \
                last else None
            if broken:
                totals["broken"] += 1
                violations.append(f"kill {k}: structure: {broken}")
            server.start(runtimes[(k + 1) % len(runtimes)])
            checked, bad = verify(port, state)
            totals["checked"] += checked
            totals["lost"] += len(bad)
            violations += [f"kill {k}: {b}" for b in bad[:5]]
            if stat(port, "evictions"):
                violations.append(f"kill {k}: evictions (size -m up)")
            if a.mutant and violations:
                break  # caught: no need to go on
        present = sum(1 for s in state.values() if s["acked"] is not None)
        stale = sum(1 for s in state.values() if s["stale"])
    finally:
        server.kill9()
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)
    print(json.dumps({
        "test": "pmcached_kill9", "backend": a.backend, "dir": a.dir,
        "binary": a.binary, "meta": a.meta,
        "check_every": a.check_every,
        "seed": seed, "runtimes": runtimes, "mutant": a.mutant,
        "kills": totals["kills"],
        "acknowledged_writes": totals["acks"],
        "key_states_checked": totals["checked"],
        "keys_present_at_end": present, "keys_stale_at_end": stale,
        "lost": totals["lost"],
        "inconsistent_regions": totals["broken"],
        "seconds": round(time.monotonic() - t_start, 1)}))
    for v in violations[:20]:
        print("VIOLATION", v, file=sys.stderr)
    if totals["kills"] < a.kills and not a.mutant:
        print(f"only {totals['kills']} kills within the time limit",
              file=sys.stderr)
        return 1
    return 1 if violations else 0


KILLS_DONE = [0]  # an error before the first kill proves nothing


def main():
    mutant = "--mutant" in sys.argv
    try:
        rc = run()
    except (RuntimeError, OSError) as e:
        print(f"FAILED: {e}", file=sys.stderr)
        rc = 1 if KILLS_DONE[0] else 2
    if mutant and rc == 2:
        print("the run failed before any kill: nothing was tested",
              file=sys.stderr)
        return 1
    if mutant:  # the run must have failed: invert
        print("the mutant was " + ("caught" if rc else "NOT caught"),
              file=sys.stderr)
        return 0 if rc else 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
