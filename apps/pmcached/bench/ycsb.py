#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""ycsb.py - memcached and pmcached side by side under YCSB A, B, C and F.

    apps/pmcached/bench/ycsb.py [--quick] [--rounds R] [--out FILE]
        [--variants memcached,pmcached-redo,...] [--workloads a,b,c,f]
        [--pmcached PATH] [--mcload PATH] [--memcached PATH]
        [--records N] [--ops N] [--seconds S] [--value-size B]
        [--conns C] [--client-threads T] [--server-threads T] [--no-pin]

For each round and each variant (round-robin, the order rotated by one
variant every round): start the server on a free loopback port, load
--records records with mcload --load, run each workload with mcload, stop
the server and remove its region file. Every measurement is one JSON line
(mcload's, plus variant, round, server, runtime, domain, backend, pinning,
server_threads, mode); after the last round, one summary line per
(variant, workload) with the medians over the rounds and
"ratio_to_memcached": the variant's median ops/s over memcached's median
in this same invocation (null when memcached did not run). Lines go to
stdout and, with --out, are appended to FILE too.

Variants:
  memcached            Debian's memcached (-t T -m M -U 0 -l 127.0.0.1)
  pmcached-undo        pmcached, --runtime=undo, PDOM-1 hardware, /dev/shm
  pmcached-redo        the same with --runtime=redo
  pmcached-redo-async  the same with --runtime=redo-async
  pmcached-twin        the same with --runtime=twin (a twin region)
  pmcached-redo-file   --runtime=redo on the file backend, region in a
                       temporary directory under /var/tmp (a disk)
  pmcached-redo-journal  --runtime=redo on the journal backend (each
                       commit appended to the region's journal, <region>.pmtxj,
                       and fdatasync'd), region and journal under /var/tmp
The pmcached variants are skipped, with a note on stderr, when the binary
(--pmcached, default build/apps/pmcached/pmcached) does not exist.

Pinning: on a machine with two or more CPUs the server runs under
`taskset -c 0` and mcload under `taskset -c 1` (--server-cpus,
--client-cpus); the "pinning" field of every line says what was done.

Exit status: 0 when every measurement succeeded, 1 when one failed (its
JSON line has "error"; the other variants still run), 2 on bad arguments,
130 on interruption. Servers are always stopped and region files removed.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
START_TIMEOUT = 20.0   # seconds for a server to answer `version`
STOP_TIMEOUT = 10.0    # seconds after SIGTERM before SIGKILL
WORKLOADS = ("a", "b", "c", "f")

# name -> (server, runtime, domain, backend, region directory)
VARIANTS = {
    "memcached": ("memcached", None, None, None, None),
    "pmcached-undo": ("pmcached", "undo", "pdom1", "hardware", "/dev/shm"),
    "pmcached-redo": ("pmcached", "redo", "pdom1", "hardware", "/dev/shm"),
    "pmcached-redo-async": ("pmcached", "redo-async", "pdom1", "hardware",
                            "/dev/shm"),
    "pmcached-twin": ("pmcached", "twin", "pdom1", "hardware", "/dev/shm"),
    "pmcached-redo-file": ("pmcached", "redo", "pdom1", "file", "/var/tmp"),
    "pmcached-redo-journal": ("pmcached", "redo", "pdom1", "journal",
                              "/var/tmp"),
}

# --quick: the file backend stores about 600 sets/s on this kind of
# machine (an msync per transaction), so its load bounds the records.
QUICK = {"records": 5000, "ops": 30000, "seconds": 0.5}
DEFAULT = {"records": 100000, "ops": 500000, "seconds": 10.0}


class BenchError(Exception):
    pass


def note(msg):
    print("ycsb.py: " + msg, file=sys.stderr, flush=True)


# ---- helpers shared with warmup.py ----

def free_port():
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pinning(no_pin, server_cpus, client_cpus):
    """(server prefix, client prefix, description)."""
    ncpu = len(os.sched_getaffinity(0))
    if no_pin:
        return [], [], "none (--no-pin)"
    if ncpu < 2 or not shutil.which("taskset"):
        return [], [], "none (%d cpu%s%s)" % (
            ncpu, "" if ncpu == 1 else "s",
            "" if shutil.which("taskset") else ", no taskset")
    return (["taskset", "-c", server_cpus], ["taskset", "-c", client_cpus],
            "server cpu %s, client cpu %s (taskset)" % (server_cpus,
                                                        client_cpus))


def memory_mb(records, value_size):
    """-m for records of value_size bytes, with room for slab waste."""
    need = records * (value_size + 200) * 1.5 / (1 << 20)
    return max(64, int(need) + 64)


def version_ok(port, timeout=0.5):
    """True if a server on port answers `version`."""
    try:
        with socket.create_connection(("127.0.0.1", port),
                                      timeout=timeout) as s:
            s.sendall(b"version\r\n")
            return s.recv(256).startswith(b"VERSION ")
    except OSError:
        return False


class Server:
    """One server process on a loopback port; stop() always cleans up."""

    def __init__(self, argv, prefix, region=None, name="server"):
        self.argv, self.prefix, self.region = argv, prefix, region
        self.name = name
        self.proc = None
        self.log = tempfile.TemporaryFile(prefix="pmcached-bench-log-")

    def start(self):
        self.proc = subprocess.Popen(self.prefix + self.argv,
                                     stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log)
        return self

    def wait_ready(self, port, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError("%s exited with status %d: %s" % (
                    self.name, self.proc.returncode, self.log_tail()))
            if version_ok(port):
                return
            time.sleep(0.01)
        raise BenchError("%s did not answer on port %d within %.0f s" % (
            self.name, port, timeout))

    def log_tail(self, n=400):
        self.log.seek(0)
        text = self.log.read().decode(errors="replace").strip()
        return text[-n:] if text else "(no output)"

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(STOP_TIMEOUT)
        self.proc = None
        self.remove_region()

    def remove_region(self):
        if not self.region:
            return
        for path in (self.region, self.region + ".meta",
                     self.region + ".pmtxj"):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def close(self):
        self.stop()
        self.log.close()


def server_argv(variant, binary, port, threads, mem_mb, region):
    """The command line of a variant (pmcached takes memcached's flags)."""
    kind, runtime, domain, backend, _ = VARIANTS[variant]
    argv = [binary, "-p", str(port), "-l", "127.0.0.1", "-t", str(threads),
            "-m", str(mem_mb), "-U", "0", "-c", "1024"]
    if os.geteuid() == 0:
        argv += ["-u", "root"]
    if kind == "pmcached":
        argv += ["-e", region, "--runtime=" + runtime,
                 "--domain=" + domain, "--backend=" + backend]
    return argv


def region_path(variant, tmpdirs):
    """Where a variant's region file goes (None for memcached)."""
    kind, _, _, _, where = VARIANTS[variant]
    if kind != "pmcached":
        return None
    if where not in tmpdirs:
        tmpdirs[where] = tempfile.mkdtemp(prefix="pmcached-bench-",
                                          dir=where)
    return os.path.join(tmpdirs[where], variant + ".pmtx")


# ---- mcload ----

def run_mcload(args, prefix, port, extra, timeout):
    """Run mcload; its JSON lines, or BenchError with its stderr."""
    argv = prefix + [args.mcload, "--port", str(port),
                     "--records", str(args.records),
                     "--value-size", str(args.value_size),
                     "--conns", str(args.conns),
                     "--threads", str(args.client_threads)] + extra
    try:
        p = subprocess.run(argv, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError("mcload %s timed out after %.0f s" % (
            " ".join(extra), timeout))
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    if p.returncode != 0:
        raise BenchError("mcload %s: exit %d: %s" % (
            " ".join(extra), p.returncode, p.stderr.strip()[-400:]))
    return lines


def load(args, prefix, port, label):
    timeout = 120 + args.records / 100  # the file backend is slow
    out = run_mcload(args, prefix, port, ["--load", "--label", label],
                     timeout)
    return out[0]


def run_workload(args, prefix, port, workload, label):
    extra = ["--workload", workload, "--ops", str(args.ops),
             "--seconds", str(args.seconds), "--label", label]
    return run_mcload(args, prefix, port, extra, args.seconds + 60)[0]


# ---- one round of one variant ----

class Emitter:
    def __init__(self, out_path):
        self.out = open(out_path, "a") if out_path else None

    def __call__(self, obj):
        line = json.dumps(obj)
        print(line, flush=True)
        if self.out:
            self.out.write(line + "\n")
            self.out.flush()

    def close(self):
        if self.out:
            self.out.close()


def context(args, variant, rnd, pin_desc):
    kind, runtime, domain, backend, _ = VARIANTS[variant]
    return {"variant": variant, "round": rnd, "server": kind,
            "runtime": runtime, "domain": domain, "backend": backend,
            "pinning": pin_desc, "server_threads": args.server_threads,
            "mode": args.mode}


def run_variant(args, variant, rnd, pins, tmpdirs, emit, results):
    """Start, load, run every workload, stop. False if anything failed."""
    server_prefix, client_prefix, desc = pins
    ctx = context(args, variant, rnd, desc)
    port = free_port()
    region = region_path(variant, tmpdirs)
    binary = args.memcached if variant == "memcached" else args.pmcached
    argv = server_argv(variant, binary, port, args.server_threads,
                       args.memory, region)
    srv = Server(argv, server_prefix, region, variant)
    srv.remove_region()
    label = "%s/r%d" % (variant, rnd)
    try:
        srv.start().wait_ready(port)
        emit(dict(load(args, client_prefix, port, label), **ctx))
        for w in args.workloads:
            res = run_workload(args, client_prefix, port, w, label)
            if srv.proc.poll() is not None:
                raise BenchError("%s exited during workload %s" % (
                    variant, w))
            results.setdefault((variant, w), []).append(res)
            emit(dict(res, **ctx))
        return True
    except BenchError as e:
        emit(dict({"bench": "ycsb", "error": str(e)}, **ctx))
        note("%s round %d: %s" % (variant, rnd, e))
        return False
    finally:
        srv.close()


# ---- summary ----

def median_of(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(vals), 1) if vals else None


def summarize(args, results, pin_desc, emit):
    base = {w: median_of(results.get(("memcached", w), []), "ops_per_sec")
            for w in args.workloads}
    for v in args.variants:
        for w in args.workloads:
            rows = results.get((v, w), [])
            if not rows:
                continue
            med = median_of(rows, "ops_per_sec")
            ratio = round(med / base[w], 3) if base[w] else None
            kind, runtime, domain, backend, _ = VARIANTS[v]
            emit({"bench": "ycsb", "summary": True, "variant": v,
                  "workload": w, "rounds": len(rows),
                  "median_ops_per_sec": med,
                  "median_p50_us": median_of(rows, "p50_us"),
                  "median_p99_us": median_of(rows, "p99_us"),
                  "median_p999_us": median_of(rows, "p999_us"),
                  "ratio_to_memcached": ratio,
                  "misses": sum(r["misses"] for r in rows),
                  "errors": sum(r["errors"] for r in rows),
                  "records": args.records, "value_size": args.value_size,
                  "conns": args.conns, "client_threads": args.client_threads,
                  "server": kind, "runtime": runtime, "domain": domain,
                  "backend": backend, "pinning": pin_desc,
                  "server_threads": args.server_threads, "mode": args.mode})


# ---- command line ----

def default_path(*candidates):
    for c in candidates:
        p = os.path.join(ROOT, c)
        if os.path.exists(p):
            return p
    return os.path.join(ROOT, candidates[0])


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="memcached and pmcached side by side, YCSB A/B/C/F")
    ap.add_argument("--quick", action="store_true",
                    help="small records/ops: the whole run in about a "
                         "minute")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--records", type=int)
    ap.add_argument("--ops", type=int)
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--value-size", type=int, default=1024)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--client-threads", type=int, default=1)
    ap.add_argument("--server-threads", type=int, default=1)
    ap.add_argument("--memory", type=int,
                    help="server -m in MB (default: from records)")
    ap.add_argument("--server-cpus", default="0")
    ap.add_argument("--client-cpus", default="1")
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--out", help="append the JSON lines to this file too")
    ap.add_argument("--memcached", default=shutil.which("memcached") or
                    "/usr/bin/memcached")
    ap.add_argument("--pmcached",
                    default=os.path.join(ROOT, "build/apps/pmcached/pmcached"))
    ap.add_argument("--mcload", default=default_path(
        "build/apps/pmcached/bench/mcload",
        "build-bench/apps/pmcached/bench/mcload"))
    args = ap.parse_args(argv)
    return check_args(ap, args)


def check_args(ap, args):
    args.mode = "quick" if args.quick else "default"
    for k, v in (QUICK if args.quick else DEFAULT).items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    args.variants = [v for v in args.variants.split(",") if v]
    args.workloads = [w for w in args.workloads.lower().split(",") if w]
    bad = [v for v in args.variants if v not in VARIANTS]
    if bad:
        ap.error("unknown variant(s) %s; known: %s" % (
            ",".join(bad), ",".join(VARIANTS)))
    if any(w not in WORKLOADS for w in args.workloads):
        ap.error("workloads are a, b, c, f")
    if not 1 <= args.rounds <= 100:
        ap.error("--rounds must be 1..100")
    if args.records < 1 or args.ops < 1 or args.seconds <= 0:
        ap.error("--records, --ops and --seconds must be positive")
    if args.memory is None:
        args.memory = memory_mb(args.records, args.value_size)
    if not os.access(args.mcload, os.X_OK):
        ap.error("no mcload at %s (build it: scripts/build.sh build, or "
                 "give --mcload)" % args.mcload)
    return args


def available_variants(args):
    """Drop the variants whose server binary is missing, with a note."""
    keep = []
    for v in args.variants:
        binary = args.memcached if v == "memcached" else args.pmcached
        if os.access(binary, os.X_OK):
            keep.append(v)
        else:
            note("skipping %s: no executable %s" % (v, binary))
    return keep


def on_sigterm(_signum, _frame):
    raise KeyboardInterrupt


def run(args, emit):
    pins = pinning(args.no_pin, args.server_cpus, args.client_cpus)
    variants = available_variants(args)
    results, tmpdirs, ok = {}, {}, True
    try:
        for rnd in range(1, args.rounds + 1):
            k = (rnd - 1) % max(1, len(variants))
            for v in variants[k:] + variants[:k]:
                ok &= run_variant(args, v, rnd, pins, tmpdirs, emit,
                                  results)
    finally:
        for d in tmpdirs.values():
            shutil.rmtree(d, ignore_errors=True)
    args.variants = variants
    summarize(args, results, pins[2], emit)
    return ok and bool(variants)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, on_sigterm)
    emit = Emitter(args.out)
    t0 = time.monotonic()
    try:
        ok = run(args, emit)
    except KeyboardInterrupt:
        note("interrupted")
        return 130
    finally:
        emit.close()
    note("done in %.1f s" % (time.monotonic() - t0))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
