#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""ycsb.py - memcached and pmcached side by side under YCSB A, B, C and F.

    apps/pmcached/bench/ycsb.py [--quick] [--rounds R] [--out FILE]
        [--variants memcached,pmcached-redo,...] [--workloads a,b,c,f]
        [--pmcached PATH] [--mcload PATH] [--memcached PATH]
        [--records N] [--ops N] [--seconds S] [--value-size B]
        [--conns C] [--client-threads T] [--server-threads T[,T...]]
        [--protocol text[,binary]] [--placement 1cpu[,2cpu]] [--no-pin]

A configuration is one (protocol, server threads, placement) of the
lists given. For each round, each configuration (the order rotated every
round) and each variant (the order rotated every round): start the server
on a free loopback port, load --records records with mcload --load, run
each workload with mcload, stop the server and remove its region file.
Every measurement is one JSON line (mcload's, plus variant, round, server,
runtime, domain, backend, pinning, placement, protocol, server_threads,
mode; for pmcached the lock waits of the workload, lock_waits_*, from its
stats, reset before the workload); after the last round, one summary line
per (variant, workload, configuration) with the medians over the rounds,
"ratio_to_memcached": the variant's median ops/s over memcached's median
in the same configuration of this same invocation (null when memcached
did not run), and "round_ratios": the ratio of each round, the variant
over the memcached run of the same round (adjacent in time). Lines go to
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
  memcached-control    a second memcached, run like the first (not run
                       unless named): its ratio to memcached is the noise
                       floor of the machine, with no server difference
The pmcached variants are skipped, with a note on stderr, when the binary
(--pmcached, default build/apps/pmcached/pmcached) does not exist.

Placement (--placement): 1cpu, on a machine with two or more CPUs, runs
the server under `taskset -c 0` and mcload under `taskset -c 1`
(--server-cpus, --client-cpus); 2cpu pins nothing: the server's -t
workers and its other threads, and mcload, share every CPU as Linux
schedules them. The "pinning" field of every line says what was done.
--no-pin is --placement 2cpu.

Protocol (--protocol): mcload speaks memcached's text or binary protocol
to both servers (each detects it: -B auto, their default).

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
# Run only when named in --variants.
CONTROLS = {
    "memcached-control": ("memcached", None, None, None, None),
}
ALL_VARIANTS = dict(VARIANTS, **CONTROLS)
PROTOCOLS = ("text", "binary")
PLACEMENTS = ("1cpu", "2cpu")
LOCK_WAITS = ("lock_waits_table", "lock_waits_stripe",
              "lock_waits_stripe_max", "lock_waits_stripes",
              "lock_waits_lru", "lock_waits_pending")

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
        return [], [], "none (server and client share %d cpu%s)" % (
            ncpu, "" if ncpu == 1 else "s")
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


def stats_call(port, command, timeout=5.0):
    """Send a text stats command; {name: value} of its STAT lines."""
    out = {}
    with socket.create_connection(("127.0.0.1", port),
                                  timeout=timeout) as s:
        s.sendall(command + b"\r\n")
        buf = b""
        while not (buf.endswith(b"END\r\n") or buf.endswith(b"RESET\r\n")):
            chunk = s.recv(65536)
            if not chunk:
                raise BenchError("stats: connection closed")
            buf += chunk
    for line in buf.decode(errors="replace").splitlines():
        f = line.split(" ", 2)
        if len(f) == 3 and f[0] == "STAT":
            out[f[1]] = f[2]
    return out


def lock_waits(port):
    """pmcached's lock_waits_* stats (store_int.h), as ints."""
    st = stats_call(port, b"stats")
    return {k: int(st[k]) for k in LOCK_WAITS if k in st}


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
    kind, runtime, domain, backend, _ = ALL_VARIANTS[variant]
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
    kind, _, _, _, where = ALL_VARIANTS[variant]
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
                     "--protocol", args.protocol,
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


def run_workload(args, prefix, port, workload, label, server):
    """One workload; with pmcached, its lock waits (stats reset first)."""
    extra = ["--workload", workload, "--ops", str(args.ops),
             "--seconds", str(args.seconds), "--label", label]
    if server == "pmcached":
        stats_call(port, b"stats reset")
    res = run_mcload(args, prefix, port, extra, args.seconds + 60)[0]
    waits = lock_waits(port) if server == "pmcached" else {}
    res.update({k: waits.get(k) for k in LOCK_WAITS})
    return res


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


class Config:
    """One configuration: protocol, server threads (-t), placement."""

    def __init__(self, args, protocol, threads, placement):
        self.protocol, self.threads = protocol, threads
        self.placement = placement
        self.pins = pinning(placement == "2cpu", args.server_cpus,
                            args.client_cpus)

    def key(self):
        return (self.protocol, self.threads, self.placement)

    def fields(self):
        return {"protocol": self.protocol, "server_threads": self.threads,
                "placement": self.placement, "pinning": self.pins[2]}


def configs(args):
    return [Config(args, p, t, pl) for p in args.protocol
            for t in args.server_threads for pl in args.placement]


def context(args, variant, rnd, cfg):
    kind, runtime, domain, backend, _ = ALL_VARIANTS[variant]
    return dict({"variant": variant, "round": rnd, "server": kind,
                 "runtime": runtime, "domain": domain, "backend": backend,
                 "mode": args.mode}, **cfg.fields())


def server_binary(args, variant):
    kind = ALL_VARIANTS[variant][0]
    return args.memcached if kind == "memcached" else args.pmcached


def run_variant(args, variant, rnd, cfg, tmpdirs, emit, results):
    """Start, load, run every workload, stop. False if anything failed."""
    server_prefix, client_prefix, _ = cfg.pins
    ctx = context(args, variant, rnd, cfg)
    kind = ALL_VARIANTS[variant][0]
    port = free_port()
    region = region_path(variant, tmpdirs)
    args = argparse.Namespace(**dict(vars(args), protocol=cfg.protocol))
    argv = server_argv(variant, server_binary(args, variant), port,
                       cfg.threads, args.memory, region)
    srv = Server(argv, server_prefix, region, variant)
    srv.remove_region()
    label = "%s/r%d" % (variant, rnd)
    try:
        srv.start().wait_ready(port)
        emit(dict(load(args, client_prefix, port, label), **ctx))
        for w in args.workloads:
            res = run_workload(args, client_prefix, port, w, label, kind)
            if srv.proc.poll() is not None:
                raise BenchError("%s exited during workload %s" % (
                    variant, w))
            res["round"] = rnd
            results.setdefault((variant, w, cfg.key()), []).append(res)
            emit(dict(res, **ctx))
        return True
    except (BenchError, OSError) as e:
        emit(dict({"bench": "ycsb", "error": str(e)}, **ctx))
        note("%s round %d: %s" % (variant, rnd, e))
        return False
    finally:
        srv.close()


# ---- summary ----

def median_of(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(vals), 1) if vals else None


def round_ratios(rows, base_rows):
    """Per round: the variant's ops/s over memcached's of that round."""
    base = {r["round"]: r["ops_per_sec"] for r in base_rows}
    return [round(r["ops_per_sec"] / base[r["round"]], 3) for r in rows
            if base.get(r["round"])]


def summarize(args, results, cfgs, emit):
    for cfg in cfgs:
        for v in args.variants:
            for w in args.workloads:
                summarize_one(args, results, cfg, v, w, emit)


def summarize_one(args, results, cfg, v, w, emit):
    rows = results.get((v, w, cfg.key()), [])
    if not rows:
        return
    base_rows = results.get(("memcached", w, cfg.key()), [])
    base = median_of(base_rows, "ops_per_sec")
    med = median_of(rows, "ops_per_sec")
    kind, runtime, domain, backend, _ = ALL_VARIANTS[v]
    rr = round_ratios(rows, base_rows)
    out = {"bench": "ycsb", "summary": True, "variant": v,
           "workload": w, "rounds": len(rows),
           "median_ops_per_sec": med,
           "median_p50_us": median_of(rows, "p50_us"),
           "median_p99_us": median_of(rows, "p99_us"),
           "median_p999_us": median_of(rows, "p999_us"),
           "ratio_to_memcached": round(med / base, 3) if base else None,
           "round_ratios": rr,
           "median_round_ratio": round(statistics.median(rr), 3)
           if rr else None,
           "misses": sum(r["misses"] for r in rows),
           "errors": sum(r["errors"] for r in rows),
           "records": args.records, "value_size": args.value_size,
           "conns": args.conns, "client_threads": args.client_threads,
           "server": kind, "runtime": runtime, "domain": domain,
           "backend": backend, "mode": args.mode}
    out.update(cfg.fields())
    out.update({"median_" + k: median_of(rows, k) for k in LOCK_WAITS})
    emit(out)


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
    ap.add_argument("--server-threads", default="1",
                    help="server -t, or a list: 1,2")
    ap.add_argument("--protocol", default="text",
                    help="text, binary, or both: text,binary")
    ap.add_argument("--placement", default="1cpu",
                    help="1cpu (server on --server-cpus, client on "
                         "--client-cpus), 2cpu (no pinning), or both")
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
    bad = [v for v in args.variants if v not in ALL_VARIANTS]
    if bad:
        ap.error("unknown variant(s) %s; known: %s" % (
            ",".join(bad), ",".join(ALL_VARIANTS)))
    check_configs(ap, args)
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


def csv_list(ap, text, known, what):
    items = [x for x in text.split(",") if x]
    if not items or any(x not in known for x in items):
        ap.error("%s must be among %s" % (what, ",".join(known)))
    return list(dict.fromkeys(items))


def check_configs(ap, args):
    """--protocol, --server-threads, --placement as lists."""
    args.protocol = csv_list(ap, args.protocol, PROTOCOLS, "--protocol")
    args.placement = csv_list(ap, args.placement, PLACEMENTS,
                              "--placement")
    if args.no_pin:
        args.placement = ["2cpu"]
    try:
        threads = [int(t) for t in args.server_threads.split(",") if t]
    except ValueError:
        threads = []
    if not threads or any(not 1 <= t <= 64 for t in threads):
        ap.error("--server-threads: numbers from 1 to 64")
    args.server_threads = list(dict.fromkeys(threads))


def available_variants(args):
    """Drop the variants whose server binary is missing, with a note."""
    keep = []
    for v in args.variants:
        binary = server_binary(args, v)
        if os.access(binary, os.X_OK):
            keep.append(v)
        else:
            note("skipping %s: no executable %s" % (v, binary))
    return keep


def on_sigterm(_signum, _frame):
    raise KeyboardInterrupt


def rotated(items, rnd):
    k = (rnd - 1) % max(1, len(items))
    return items[k:] + items[:k]


def run(args, emit):
    cfgs = configs(args)
    variants = available_variants(args)
    results, tmpdirs, ok = {}, {}, True
    try:
        for rnd in range(1, args.rounds + 1):
            for cfg in rotated(cfgs, rnd):
                for v in rotated(variants, rnd):
                    ok &= run_variant(args, v, rnd, cfg, tmpdirs, emit,
                                      results)
    finally:
        for d in tmpdirs.values():
            shutil.rmtree(d, ignore_errors=True)
    args.variants = variants
    summarize(args, results, cfgs, emit)
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
