#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""restart.py - how long pmkv and Redis take to serve again after kill -9,
and how much memory their data takes, side by side in one invocation.

Each server is loaded with the same keys (--keys, of --mix "strings" or
"mixed": 60 % strings of 64 bytes, and 10 % each hashes, lists, sets and
sorted sets of 5 elements), pipelined over a raw socket. Then:

  memory   pmkv: the heap bytes its blocks hold (`pmkv --check` after the
           load), per key; Redis: used_memory after the load minus before
           it, per key;
  restart  kill -9, start again, and time from the exec to the first
           +PONG (Redis answers -LOADING until its data is in).

Configurations: pmkv on /dev/shm (redo, PDOM-1, hardware: every write
durable at its reply), and Redis with an AOF (appendfsync everysec, its
RDB preamble written by a BGREWRITEAOF after the load, so that the restart
loads the compact form) in the same directory kind. Each round runs every
configuration; one JSON line per measurement.

  restart.py [--keys N] [--mix strings|mixed] [--rounds R] [--build DIR]
             [--dir DIR] [--out FILE]

Every server listens on 127.0.0.1 only; every wait is bounded in time.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "server"))
from kvserver import free_port  # noqa: E402

BATCH = 2000


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def requests(n, mix):
    """The load: one request per key."""
    for i in range(n):
        k = b"key:%d" % i
        kind = i % 10 if mix == "mixed" else 0
        if kind < 6:
            yield resp("SET", k, b"v" * 64)
        elif kind == 6:
            yield resp("HSET", k, *[x for j in range(5)
                                    for x in (b"f%d" % j, b"v%d" % j)])
        elif kind == 7:
            yield resp("RPUSH", k, *[b"e%d" % j for j in range(5)])
        elif kind == 8:
            yield resp("SADD", k, *[b"m%d" % j for j in range(5)])
        else:
            yield resp("ZADD", k, *[x for j in range(5)
                                    for x in (b"%d" % j, b"m%d" % j)])


def count_replies(sock, want, buf):
    """Read until want replies (each one line: the load's replies are
    integers and +OK) arrived; any error ends the run."""
    got = 0
    while got < want:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise SystemExit("the server closed the connection")
        buf += chunk
        lines = buf.split(b"\r\n")
        buf = lines.pop()
        for line in lines:
            if line.startswith(b"-"):
                raise SystemExit("error reply: %r" % line)
            got += 1
    return buf


def load(port, n, mix):
    s = socket.create_connection(("127.0.0.1", port), 30)
    buf, batch = b"", []
    for req in requests(n, mix):
        batch.append(req)
        if len(batch) == BATCH:
            s.sendall(b"".join(batch))
            buf = count_replies(s, len(batch), buf)
            batch = []
    if batch:
        s.sendall(b"".join(batch))
        count_replies(s, len(batch), buf)
    s.close()


def command(port, *args, timeout=30):
    s = socket.create_connection(("127.0.0.1", port), timeout)
    s.sendall(resp(*args))
    data = b""
    s.settimeout(timeout)
    while not data.endswith(b"\r\n") or (data.startswith(b"$") and
                                         data.count(b"\r\n") < 2):
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    s.close()
    return data


def first_pong(port, t0, timeout=600):
    """Seconds from t0 to the first +PONG on port."""
    deadline = t0 + timeout
    while time.monotonic() < deadline:
        try:
            s = socket.create_connection(("127.0.0.1", port), 1)
        except OSError:
            time.sleep(0.0002)
            continue
        try:
            s.sendall(b"PING\r\n")
            if s.recv(64).startswith(b"+PONG"):
                return time.monotonic() - t0
        except OSError:
            pass
        finally:
            s.close()
        time.sleep(0.0002)
    raise SystemExit("no PONG within %d s" % timeout)


def info_field(port, section, field):
    text = command(port, "INFO", section).decode(errors="replace")
    m = re.search(r"^%s:(\S+)" % re.escape(field), text, re.M)
    return m.group(1) if m else None


class Server:
    def __init__(self, argv, d):
        self.argv, self.d = argv, d
        self.port = free_port()
        self.p = None

    def start(self):
        t0 = time.monotonic()
        self.p = subprocess.Popen(self.argv(self.port, self.d),
                                  stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, cwd=self.d)
        return first_pong(self.port, t0)

    def kill(self):
        if self.p and self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
            self.p.wait()


def pmkv_argv(build):
    binary = os.path.join(build, "apps", "pmkv", "pmkv")

    def argv(port, d):
        return [binary, "--port", str(port), "--region",
                os.path.join(d, "kv.region"), "--maxmemory", "16gb"]
    return argv


def redis_argv(port, d):
    return ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
            "--dir", d, "--save", "", "--appendonly", "yes",
            "--appendfsync", "everysec", "--protected-mode", "yes"]


def pmkv_heap_bytes(build, d):
    binary = os.path.join(build, "apps", "pmkv", "pmkv")
    r = subprocess.run([binary, "--check", "--region",
                        os.path.join(d, "kv.region"), "--maxmemory",
                        "16gb"], capture_output=True, text=True,
                       timeout=3600)
    m = re.search(r"(\d+) heap bytes", r.stdout)
    return int(m.group(1)) if m else None


def wait_rewrite(port, timeout=3600):
    deadline = time.monotonic() + timeout
    time.sleep(0.2)
    while time.monotonic() < deadline:
        if info_field(port, "persistence",
                      "aof_rewrite_in_progress") == "0" and \
                info_field(port, "persistence",
                           "aof_rewrite_scheduled") == "0":
            return
        time.sleep(0.1)
    raise SystemExit("BGREWRITEAOF did not end")


def run_pmkv(a, rnd, out):
    d = tempfile.mkdtemp(prefix="pmkv-restart-", dir=a.dir)
    srv = Server(pmkv_argv(a.build), d)
    try:
        srv.start()
        t = time.monotonic()
        load(srv.port, a.keys, a.mix)
        loaded = time.monotonic() - t
        srv.kill()
        heap = pmkv_heap_bytes(a.build, d)
        restart = srv.start()
        keys = int(command(srv.port, "DBSIZE")[1:].strip())
        emit(out, {"bench": "pmkv-restart", "server": "pmkv-shm",
                   "round": rnd, "keys": keys, "mix": a.mix,
                   "load_s": round(loaded, 3),
                   "restart_ms": round(restart * 1000, 3),
                   "bytes": heap,
                   "bytes_per_key": round(heap / keys, 1) if heap else None})
    finally:
        srv.kill()
        shutil.rmtree(d, ignore_errors=True)


def run_redis(a, rnd, out):
    d = tempfile.mkdtemp(prefix="redis-restart-", dir=a.dir)
    srv = Server(redis_argv, d)
    try:
        srv.start()
        before = int(info_field(srv.port, "memory", "used_memory"))
        t = time.monotonic()
        load(srv.port, a.keys, a.mix)
        loaded = time.monotonic() - t
        used = int(info_field(srv.port, "memory", "used_memory")) - before
        command(srv.port, "BGREWRITEAOF")
        wait_rewrite(srv.port)
        srv.kill()
        restart = srv.start()
        keys = int(command(srv.port, "DBSIZE")[1:].strip())
        emit(out, {"bench": "pmkv-restart", "server": "redis-aof",
                   "round": rnd, "keys": keys, "mix": a.mix,
                   "load_s": round(loaded, 3),
                   "restart_ms": round(restart * 1000, 3),
                   "bytes": used, "bytes_per_key": round(used / keys, 1)})
    finally:
        srv.kill()
        shutil.rmtree(d, ignore_errors=True)


def emit(out, rec):
    line = json.dumps(rec)
    print(line, flush=True)
    if out:
        out.write(line + "\n")
        out.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--mix", choices=["strings", "mixed"], default="mixed")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--out")
    a = ap.parse_args()
    out = open(a.out, "a") if a.out else None
    for rnd in range(a.rounds):
        run_pmkv(a, rnd, out)
        if shutil.which("redis-server"):
            run_redis(a, rnd, out)


if __name__ == "__main__":
    main()
