#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""warmup.py - how long a cache takes to serve its first hit after a restart.

    apps/pmcached/bench/warmup.py [--items 100000,1000000,10000000]
        [--repeat 3] [--cases memcached-graceful,memcached-kill9,
        pmcached-redo-kill9,...] [--value-size 1024] [--timeout 60]
        [--pmcached PATH] [--memcached PATH] [--out FILE] [--no-pin]

Warm-up is the time from the exec of the server to the first hit it
serves. For each case and each item count N:
  1. start the server, fill N items of --value-size bytes (keys "w:<i>",
     `set ... noreply` in batches of FILL_BATCH, then one `version` round
     trip so that every set has been processed), check `curr_items`;
  2. --repeat times: stop it (memcached-graceful: SIGUSR1, memcached's
     restartable-mode shutdown, then wait RESTART_GAP seconds, since
     memcached started again within the same second as the stop starts
     empty; *-kill9: SIGKILL), exec it again with the same arguments, and
     from just before the exec poll: connect (retrying every POLL_SLEEP
     seconds) and `get w:0`, until a VALUE comes back or --timeout;
     then read `curr_items`. memcached answers only after its restore, so
     its first reply is final (a miss after kill -9: no hit is possible);
     pmcached's gets are retried until a hit;
  3. memcached-kill9 refills before each repeat (a kill -9 empties it);
     the other cases restart the cache the previous restart left.

Cases: memcached-graceful and memcached-kill9 (Debian's memcached with
`-e /dev/shm/<file>`: its restartable mode), and <variant>-kill9 for every
pmcached variant of ycsb.py (pmcached-undo, -redo, -redo-async on PDOM-1
hardware with the region in /dev/shm, pmcached-redo-file and
pmcached-redo-journal on the file and journal backends under /var/tmp).
A pmcached case is skipped, with a note, when
--pmcached does not exist.

Output, one JSON line each, on stdout and appended to --out:
  per restart: {"bench":"warmup","server":...,"variant":...,"items":N,
    "restart":"graceful|kill9","repeat":k,"first_connect_ms":...,
    "first_hit_ms":... (null: no hit),"items_after":...,"fill_s":...}
  per (case, N): the same with "summary":true, the medians over the
    repeats, and "items_after" the smallest seen;
  a case skipped for lack of memory: {"bench":"warmup",...,"skipped":why}.
Memory: a case runs only if 1.25 times its -m fits in both MemAvailable
and the free space of the region's file system.

Pinning as in ycsb.py: the server under `taskset -c 0`, this script
(the client) on CPU 1 (sched_setaffinity), when there are two CPUs.
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ycsb  # noqa: E402  (shares its variants and server handling)

FILL_BATCH = 2000      # sets per sendall
RESTART_GAP = 1.5      # seconds between a graceful stop and the restart
POLL_SLEEP = 0.0002    # seconds between connection attempts
STOP_TIMEOUT = 300.0   # a graceful stop of a large cache
IO_TIMEOUT = 120.0     # any one socket operation
ITEM_OVERHEAD = 160    # memcached: header, key, slab rounding (upper)


class WarmupError(Exception):
    pass


def note(msg):
    print("warmup.py: " + msg, file=sys.stderr, flush=True)


# ---- protocol ----

def read_until(sock, buf, end):
    """Read until buf ends with end; the bytes."""
    deadline = time.monotonic() + IO_TIMEOUT
    while not buf.endswith(end):
        if time.monotonic() > deadline:
            raise WarmupError("no complete reply within %.0f s" % IO_TIMEOUT)
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise WarmupError("connection closed by the server")
        buf += chunk
    return buf


def stat(sock, name):
    sock.sendall(b"stats\r\n")
    for line in read_until(sock, b"", b"END\r\n").split(b"\r\n"):
        parts = line.split()
        if len(parts) == 3 and parts[1] == name.encode():
            return int(parts[2])
    raise WarmupError("no %s in stats" % name)


def fill(port, items, value_size):
    """Store items keys with noreply sets, then sync; the seconds taken."""
    t0 = time.monotonic()
    value = b"v" * value_size
    with socket.create_connection(("127.0.0.1", port),
                                  timeout=IO_TIMEOUT) as s:
        for start in range(0, items, FILL_BATCH):
            stop = min(items, start + FILL_BATCH)
            s.sendall(b"".join(
                b"set w:%d 0 0 %d noreply\r\n%s\r\n" % (i, value_size, value)
                for i in range(start, stop)))
        s.sendall(b"version\r\n")
        reply = read_until(s, b"", b"\r\n")
        if not reply.startswith(b"VERSION "):
            raise WarmupError("fill: unexpected reply %r" % reply[:80])
        have = stat(s, "curr_items")
    if have != items:
        raise WarmupError("fill: %d items stored of %d (raise -m?)" % (
            have, items))
    return time.monotonic() - t0


# ---- the restart probe ----

def try_connect(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.connect(("127.0.0.1", port))
    except OSError:
        s.close()
        return None
    s.settimeout(IO_TIMEOUT)
    return s


def get_known(sock, value_size):
    """True on a hit of w:0, False on a miss."""
    sock.sendall(b"get w:0\r\n")
    buf = read_until(sock, b"", b"\r\n")
    if buf.startswith(b"END\r\n"):
        return False
    if not buf.startswith(b"VALUE w:0 "):
        raise WarmupError("get: unexpected reply %r" % buf[:80])
    buf = read_until(sock, buf, b"END\r\n")
    if len(buf) < value_size:
        raise WarmupError("get: short value")
    return True


def probe(srv, port, t0, timeout, retry_miss, value_size):
    """(first_connect_ms, first_hit_ms or None, curr_items)."""
    deadline = t0 + timeout
    first_connect, sock = None, None
    try:
        while time.monotonic() < deadline:
            if srv.proc.poll() is not None:
                raise WarmupError("%s exited with status %d on restart: %s"
                                  % (srv.name, srv.proc.returncode,
                                     srv.log_tail()))
            sock = sock or try_connect(port)
            if sock is None:
                time.sleep(POLL_SLEEP)
                continue
            if first_connect is None:
                first_connect = (time.monotonic() - t0) * 1e3
            if get_known(sock, value_size):
                hit = (time.monotonic() - t0) * 1e3
                return first_connect, hit, stat(sock, "curr_items")
            if not retry_miss:
                return first_connect, None, stat(sock, "curr_items")
            time.sleep(POLL_SLEEP)
        if first_connect is None:
            raise WarmupError("no connection within %.0f s" % timeout)
        return first_connect, None, stat(sock, "curr_items")
    finally:
        if sock:
            sock.close()


# ---- one case ----

class Case:
    def __init__(self, name, args, tmpdirs):
        self.name = name
        self.restart = "graceful" if name.endswith("-graceful") else "kill9"
        self.variant = name.rsplit("-", 1)[0]
        self.server = ycsb.VARIANTS[self.variant][0]
        self.binary = (args.memcached if self.server == "memcached"
                       else args.pmcached)
        if self.server == "memcached":
            self.region = os.path.join(
                "/dev/shm", "memcached-warmup-%d" % os.getpid())
        else:
            self.region = ycsb.region_path(self.variant, tmpdirs)

    def argv(self, port, mem_mb, threads):
        a = ycsb.server_argv(self.variant, self.binary, port, threads,
                             mem_mb, self.region)
        return a + (["-e", self.region] if self.server == "memcached"
                    else [])

    def stop(self, srv):
        if self.restart == "graceful":
            srv.proc.send_signal(signal.SIGUSR1)
        else:
            srv.proc.kill()
        try:
            srv.proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise WarmupError("%s did not stop within %.0f s" % (
                self.name, STOP_TIMEOUT))
        if self.restart == "graceful":
            time.sleep(RESTART_GAP)


def mem_mb(items, value_size):
    return int(items * (value_size + ITEM_OVERHEAD) * 1.1 / (1 << 20)) + 64


def mem_available_mb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return 0


def room_mb(case):
    where = os.path.dirname(case.region)
    st = os.statvfs(where)
    disk = st.f_bavail * st.f_frsize // (1 << 20)
    # tmpfs: memory. pmcached's regions are in a directory under it.
    if (where + "/").startswith("/dev/shm/"):
        return min(disk, mem_available_mb())
    return disk


def one_restart(case, srv, port, args, k):
    """Stop, exec again, probe; the measurement."""
    case.stop(srv)
    t0 = time.monotonic()
    srv.start()
    connect_ms, hit_ms, after = probe(srv, port, t0, args.timeout,
                                      case.server != "memcached",
                                      args.value_size)
    return {"repeat": k, "first_connect_ms": round(connect_ms, 3),
            "first_hit_ms": None if hit_ms is None else round(hit_ms, 3),
            "items_after": after}


def summary(rows):
    def med(key):
        vals = [r[key] for r in rows if r[key] is not None]
        return round(statistics.median(vals), 3) if vals else None
    return {"summary": True, "repeats": len(rows),
            "first_connect_ms": med("first_connect_ms"),
            "first_hit_ms": med("first_hit_ms"),
            "hits": sum(r["first_hit_ms"] is not None for r in rows),
            "items_after": min(r["items_after"] for r in rows)}


def run_case(case, items, args, pins, emit):
    """Fill once (or per restart for memcached-kill9), restart --repeat
    times. Raises WarmupError; the server is always stopped."""
    base = {"bench": "warmup", "server": case.server,
            "variant": case.variant, "items": items,
            "restart": case.restart, "value_size": args.value_size,
            "pinning": pins[2], "server_threads": args.server_threads}
    m = mem_mb(items, args.value_size)
    if m * 1.25 > room_mb(case):
        why = "needs about %d MiB, %d MiB available" % (m * 1.25,
                                                        room_mb(case))
        emit(dict(base, skipped=why))
        return
    port = ycsb.free_port()
    srv = ycsb.Server(case.argv(port, m, args.server_threads), pins[0],
                      case.region, case.name)
    srv.remove_region()
    rows, fill_s = [], None
    try:
        srv.start().wait_ready(port)
        for k in range(1, args.repeat + 1):
            if fill_s is None or case.name == "memcached-kill9":
                fill_s = round(fill(port, items, args.value_size), 3)
            row = dict(base, fill_s=fill_s, **one_restart(
                case, srv, port, args, k))
            emit(row)
            rows.append(row)
        emit(dict(base, fill_s=fill_s, **summary(rows)))
    finally:
        srv.close()


# ---- command line ----

def all_cases():
    cases = ["memcached-graceful", "memcached-kill9"]
    return cases + [v + "-kill9" for v in ycsb.VARIANTS if v != "memcached"]


def parse_args(argv):
    ap = argparse.ArgumentParser(description="restart warm-up time")
    ap.add_argument("--items", default="100000,1000000,10000000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default="memcached-graceful,memcached-kill9,"
                    "pmcached-redo-kill9")
    ap.add_argument("--value-size", type=int, default=1024)
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds from exec to give up on a hit")
    ap.add_argument("--server-threads", type=int, default=1)
    ap.add_argument("--server-cpus", default="0")
    ap.add_argument("--client-cpus", default="1")
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--memcached", default=shutil.which("memcached") or
                    "/usr/bin/memcached")
    ap.add_argument("--pmcached", default=os.path.join(
        ycsb.ROOT, "build/apps/pmcached/pmcached"))
    args = ap.parse_args(argv)
    try:
        args.items = [int(x) for x in args.items.split(",") if x]
    except ValueError:
        ap.error("--items: a comma-separated list of numbers")
    args.cases = [c for c in args.cases.split(",") if c]
    bad = [c for c in args.cases if c not in all_cases()]
    if bad:
        ap.error("unknown case(s) %s; known: %s" % (",".join(bad),
                                                    ",".join(all_cases())))
    if not 1 <= args.repeat <= 100 or any(n < 1 for n in args.items):
        ap.error("--repeat must be 1..100 and --items positive")
    if not 0 < args.timeout <= 3600:
        ap.error("--timeout must be in (0, 3600]")
    return args


def pin_client(pins, client_cpus):
    if pins[1]:
        os.sched_setaffinity(0, {int(c) for c in client_cpus.split(",")})


def run(args, emit):
    pins = ycsb.pinning(args.no_pin, args.server_cpus, args.client_cpus)
    if pins[1]:
        pins = (pins[0], pins[1], "server cpu %s (taskset), client cpu %s "
                "(sched_setaffinity)" % (args.server_cpus, args.client_cpus))
    pin_client(pins, args.client_cpus)
    tmpdirs, ok = {}, True
    try:
        for items in args.items:
            for name in args.cases:
                case = Case(name, args, tmpdirs)
                if not os.access(case.binary, os.X_OK):
                    note("skipping %s: no executable %s" % (name,
                                                           case.binary))
                    continue
                try:
                    run_case(case, items, args, pins, emit)
                except (WarmupError, ycsb.BenchError, OSError) as e:
                    ok = False
                    note("%s, %d items: %s" % (name, items, e))
                    emit({"bench": "warmup", "variant": case.variant,
                          "restart": case.restart, "items": items,
                          "error": str(e)})
    finally:
        for d in tmpdirs.values():
            shutil.rmtree(d, ignore_errors=True)
    return ok


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, ycsb.on_sigterm)
    emit = ycsb.Emitter(args.out)
    try:
        return 0 if run(args, emit) else 1
    except KeyboardInterrupt:
        note("interrupted")
        return 130
    finally:
        emit.close()


if __name__ == "__main__":
    sys.exit(main())
