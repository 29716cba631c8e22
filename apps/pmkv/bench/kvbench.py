#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""kvbench.py - pmkv's benchmarks, each printed as JSON lines.

  fig7    the seed's Figure 7 on this machine: pre-populate with 1,000,000
          random puts over 238,328 keys, then 1, 2 and 4 clients at 90%,
          50% and 10% reads (pmkv-load, no pipelining), for the opt
          version under undo, redo and redo-async and the wrapped version
          under undo, redo and cow, in PDOM-2 and PDOM-1 (hardware
          backend, /dev/shm).
  store   the same workload on the store in one process, without sockets
          (pmkv-storebench: 1, 2 and 4 threads), for the same versions,
          runtimes and domains: what the two versions cost, which the
          server's round trips hide.
  redis   pmkv beside Redis (Debian's redis-server) in one invocation:
          redis-benchmark -t set,get (--tests: any list, or all of
          its tests) -c 4 (--bench-clients) -r 238328 -d 64, without
          pipelining and with -P 16, against pmkv-opt on /dev/shm (PDOM-1,
          hardware), pmkv on ext4 (file backend, and journal backend: each
          commit appended to the region's journal), and Redis with
          persistence off, AOF everysec on ext4, AOF always on ext4 and on
          /dev/shm. Every configuration runs once per round, rounds
          interleaved, so that ratios survive a noisy machine.

  kvbench.py fig7|store|redis|all [--quick] [--rounds N] [--out FILE]
             [--tests set,get|all] [--bench-clients N]
             [--build DIR] [--ext4 DIR] [--populate N] [--seconds S]
             [--clients 1,2,4] [--mixes 90,50,10] [--runtimes ...]
             [--versions opt,wrapped]
             [--domains pdom2,pdom1] [--requests N] [--configs ...]

--quick: 100,000 puts, 1 s per run, clients 1 and 4, mixes 90 and 10,
20,000 requests per redis-benchmark test, 1 round. Configurations of the
redis comparison: pmkv-shm, pmkv-shm-io1 (one event loop instead of a
thread per client), pmkv-file-ext4, pmkv-file-ext4-io1,
pmkv-journal-ext4, pmkv-journal-ext4-io1, redis-off, redis-everysec-ext4,
redis-always-ext4, redis-always-shm. The journal configurations use the
journal's default size (64 MiB) unless PMTX_JOURNAL_SIZE is set.

Every server listens on 127.0.0.1 only; every load is bounded in requests
and time. Exits 1 if any run reported an error.
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


def wait_port(port, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited with %s" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("server did not start")


class Running:
    """A server process on a free port, in a directory of its own."""

    def __init__(self, argv_of, workdir):
        self.port = free_port()
        self.dir = workdir
        self.proc = subprocess.Popen(argv_of(self.port, workdir),
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


# The runtimes each version runs under (cow writes only through wrappers).
VERSION_RUNTIMES = {"opt": ("undo", "redo", "redo-async"),
                    "wrapped": ("undo", "redo", "cow")}


def pmkv_argv(build, runtime, domain, backend, extra=()):
    binary = os.path.join(build, "apps", "pmkv", "pmkv")

    def argv(port, d):
        return [binary, "--port", str(port), "--region",
                os.path.join(d, "kv.region"), "--runtime", runtime,
                "--domain", domain, "--backend", backend,
                "--maxmemory", "2gb"] + list(extra)
    return argv


def redis_argv(appendonly, fsync):
    def argv(port, d):
        return ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                "--dir", d, "--save", "", "--appendonly", appendonly,
                "--appendfsync", fsync, "--daemonize", "no",
                "--protected-mode", "yes"]
    return argv


def emit(out, rec):
    line = json.dumps(rec, sort_keys=True)
    print(line, flush=True)
    if out:
        out.write(line + "\n")
        out.flush()


# ---- fig7 ----

def fig7_points(a, out, argv, tags):
    """Every (clients, mix) point against one server; 0 or the number of
    runs that failed."""
    load = os.path.join(a.build, "apps", "pmkv", "pmkv-load")
    d = tempfile.mkdtemp(prefix="kvbench-", dir="/dev/shm")
    srv = Running(argv, d)
    bad, first = 0, True
    try:
        for c in a.clients:
            for r in a.mixes:
                res = subprocess.run(
                    [load, "--port", str(srv.port), "--clients", str(c),
                     "--read-pct", str(r), "--seconds", str(a.seconds),
                     "--populate", str(a.populate if first else 0)],
                    capture_output=True, text=True, timeout=600)
                first = False
                rec = json.loads(res.stdout)
                rec.update(bench="pmkv-fig7", **tags)
                bad += res.returncode != 0
                emit(out, rec)
    finally:
        srv.stop()
    return bad


def fig7(a, out):
    """pmkv in each domain, version and runtime, then Redis without
    persistence at the same points, as the machine's reference."""
    bad = 0
    for domain, version, runtime in configs(a):
        bad += fig7_points(
            a, out, pmkv_argv(a.build, runtime, domain, "hardware",
                              ["--" + version]),
            {"version": version, "runtime": runtime, "domain": domain,
             "backend": "hardware"})
    if a.fig7_redis:
        bad += fig7_points(a, out, redis_argv("no", "no"),
                           {"version": "redis", "runtime": "redis-off",
                            "domain": "-", "backend": "-"})
    return bad


def configs(a):
    """(domain, version, runtime) of every pmkv configuration asked for."""
    return [(d, v, rt) for d in a.domains for v in a.versions
            for rt in a.runtimes if rt in VERSION_RUNTIMES[v]]


def store(a, out):
    """pmkv-storebench for every configuration: every point after one
    population, in a fresh region each."""
    binary = os.path.join(a.build, "apps", "pmkv", "pmkv-storebench")
    bad = 0
    for domain, version, runtime in configs(a):
        d = tempfile.mkdtemp(prefix="kvbench-", dir="/dev/shm")
        try:
            res = subprocess.run(
                [binary, "--region", os.path.join(d, "kv.region"),
                 "--version", version, "--runtime", runtime, "--domain",
                 domain, "--threads", ",".join(map(str, a.clients)),
                 "--read-pct", ",".join(map(str, a.mixes)),
                 "--seconds", str(a.seconds), "--populate",
                 str(a.populate)],
                capture_output=True, text=True, timeout=1800)
        finally:
            shutil.rmtree(d, ignore_errors=True)
        bad += res.returncode != 0
        for line in res.stdout.splitlines():
            emit(out, json.loads(line))
        if res.returncode:
            emit(out, {"bench": "pmkv-store", "version": version,
                       "runtime": runtime, "domain": domain,
                       "failed": True, "stderr": res.stderr[-300:]})
    return bad


# ---- redis ----

def parse_csv(text):
    """redis-benchmark --csv: "test","rps",... per line (a test's name as
    redis-benchmark prints it, e.g. "LPUSH", "LRANGE_100 (first 100
    elements)", "MSET (10 keys)": its first word)."""
    res = {}
    for line in text.splitlines():
        m = re.match(r'"([A-Z_0-9]+)[^"]*","([0-9.]+)"', line)
        if m:
            res[m.group(1)] = float(m.group(2))
    return res


# redis-benchmark's -t tests (its default list but PING's)
ALL_TESTS = ("set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,"
             "zpopmin,lrange_100,lrange_300,lrange_500,lrange_600,mset")


CONFIGS = ["pmkv-shm", "pmkv-shm-io1", "pmkv-file-ext4",
           "pmkv-file-ext4-io1", "pmkv-journal-ext4",
           "pmkv-journal-ext4-io1", "redis-off", "redis-everysec-ext4",
           "redis-always-ext4", "redis-always-shm"]
NAMED_ONLY = ["pmkv-journal-ext4-io1-nodelay"]  # not in the default list


def redis_configs(a):
    """(id, where, argv, disk-bound) of each configuration chosen."""
    every = {
        "pmkv-shm": ("/dev/shm", pmkv_argv(a.build, "redo", "pdom1",
                                           "hardware"), False),
        "pmkv-shm-io1": ("/dev/shm", pmkv_argv(
            a.build, "redo", "pdom1", "hardware", ["--io-threads", "1"]),
            False),
        "pmkv-file-ext4": (a.ext4, pmkv_argv(a.build, "redo", "pdom1",
                                             "file"), True),
        "pmkv-file-ext4-io1": (a.ext4, pmkv_argv(
            a.build, "redo", "pdom1", "file", ["--io-threads", "1"]), True),
        "pmkv-journal-ext4": (a.ext4, pmkv_argv(a.build, "redo", "pdom1",
                                                "journal"), True),
        "pmkv-journal-ext4-io1": (a.ext4, pmkv_argv(
            a.build, "redo", "pdom1", "journal", ["--io-threads", "1"]),
            True),
        # the same without the loop's commit delay (loop.c L5), named only
        "pmkv-journal-ext4-io1-nodelay": (a.ext4, pmkv_argv(
            a.build, "redo", "pdom1", "journal",
            ["--io-threads", "1", "--commit-delay", "0"]), True),
        "redis-off": ("/dev/shm", redis_argv("no", "no"), False),
        "redis-everysec-ext4": (a.ext4, redis_argv("yes", "everysec"),
                                False),
        "redis-always-ext4": (a.ext4, redis_argv("yes", "always"), True),
        "redis-always-shm": ("/dev/shm", redis_argv("yes", "always"),
                             False),
    }
    return [(c,) + every[c] for c in a.configs]


PIPELINED_MIN = 20000


def redis_round(a, out, rnd):
    n = a.requests
    bad = 0
    for name, where, argv, slow in redis_configs(a):
        for pipeline in (1, 16):
            # fewer requests where each one waits for a disk; enough
            # pipelined ones in memory that a test lasts several ms
            # (redis-benchmark's clock is in ms: a shorter one is "inf")
            reqs = max(n // 20, 100) if slow else n
            if pipeline > 1 and not slow:
                reqs = max(reqs, PIPELINED_MIN)
            d = tempfile.mkdtemp(prefix="kvbench-", dir=where)
            srv = Running(argv, d)
            try:
                res = subprocess.run(
                    ["redis-benchmark", "-h", "127.0.0.1", "-p",
                     str(srv.port), "-t", a.tests, "-c",
                     str(a.bench_clients), "-r", "238328", "-d", "64",
                     "-n", str(reqs), "-P", str(pipeline), "--csv"],
                    capture_output=True, text=True, timeout=1800)
            finally:
                srv.stop()
            rps = parse_csv(res.stdout)
            want = [t.split("_")[0].upper() if not t.startswith("lrange")
                    else t.upper() for t in a.tests.split(",")]
            ok = res.returncode == 0 and all(t in rps for t in want)
            bad += not ok
            emit(out, {"bench": "pmkv-vs-redis", "config": name,
                       "pipeline": pipeline, "requests": reqs,
                       "clients": a.bench_clients, "round": rnd,
                       "set_rps": rps.get("SET"),
                       "get_rps": rps.get("GET"), "rps": rps, "ok": ok})
    return bad


def on_sigterm(_signum, _frame):
    """SIGTERM ends the run as Ctrl-C does: the servers are stopped and
    their directories removed (the finally clauses)."""
    raise KeyboardInterrupt


def parse_args(argv=None):
    """The options, with the defaults of --quick or of a full run."""
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["fig7", "store", "redis", "all"])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ext4", default="/var/tmp")
    ap.add_argument("--populate", type=int)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--clients")
    ap.add_argument("--mixes")
    ap.add_argument("--runtimes", default="undo,redo,redo-async,cow")
    ap.add_argument("--versions", default="opt,wrapped")
    ap.add_argument("--domains", default="pdom2,pdom1")
    ap.add_argument("--requests", type=int)
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--tests", default="set,get",
                    help="redis: redis-benchmark's -t list, or 'all' "
                         "(every test but PING)")
    ap.add_argument("--bench-clients", type=int, default=4,
                    help="redis: redis-benchmark's -c")
    ap.add_argument("--no-fig7-redis", dest="fig7_redis",
                    action="store_false",
                    help="leave Redis out of Figure 7's points")
    a = ap.parse_args(argv)
    q = a.quick
    a.populate = a.populate if a.populate is not None else (
        100000 if q else 1000000)
    a.seconds = a.seconds or (1.0 if q else 3.0)
    a.clients = [int(x) for x in (a.clients or ("1,4" if q else "1,2,4"))
                 .split(",")]
    a.mixes = [int(x) for x in (a.mixes or ("90,10" if q else "90,50,10"))
               .split(",")]
    a.runtimes = a.runtimes.split(",")
    a.versions = a.versions.split(",")
    if set(a.versions) - set(VERSION_RUNTIMES):
        ap.error("versions: opt, wrapped")
    a.domains = a.domains.split(",")
    a.requests = a.requests or (20000 if q else 200000)
    a.configs = a.configs.split(",")
    if a.tests == "all":
        a.tests = ALL_TESTS
    known = set(CONFIGS) | set(NAMED_ONLY)
    if set(a.configs) - known:
        ap.error("unknown configuration: %s" % ", ".join(
            sorted(set(a.configs) - known)))
    return a


def main():
    a = parse_args()
    signal.signal(signal.SIGTERM, on_sigterm)
    out = open(a.out, "a") if a.out else None
    bad = 0
    if a.what in ("fig7", "all"):
        bad += fig7(a, out)
    if a.what in ("store", "all"):
        bad += store(a, out)
    if a.what in ("redis", "all"):
        for rnd in range(1 if a.quick else a.rounds):
            bad += redis_round(a, out, rnd)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
