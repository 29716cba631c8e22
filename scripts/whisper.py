#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""WHISPER's analysis (seed 002, sections 4-6) of pmtx: trace every pmtx
runtime on the evaluation's workloads and each application, analyse the
traces (epochs, dependencies, write amplification, barriers) and model
them on HOPS, and write the report section.

    scripts/whisper.py [--smoke|--quick] [--out DIR] [--build DIR]
                       [--costs FILE] [--tmp DIR] [--only a,b]
                       [--seconds S] [--keep-traces] [--no-report]

What is traced (PMTX_TRACE=<trace> in the environment of the process;
pmtx starts the trace at the process's first pmtx_create/pmtx_open and
writes it out at exit):
  runtimes      pmtx-bench WORKLOAD --system S --domain pdom1 --backend
                hardware --seconds T --rounds 1, for sps (k=8), array
                (slots=20000, slot=4, write_pct=50), hashmap, alloc,
                single-obj (read_pct=0) and bbuf (scenario 2), under
                pmtx-undo, -redo, -redo-async, -cow, -twin, -auto (array,
                sps) and -cltx (bbuf). The trace holds the set-up (region,
                fill) too.
  pmcached      the server (runtime undo, redo) under mcload: a load
                phase, then YCSB A for 0.75 T_app; stopped by SIGTERM
                (its clean stop returns from main, so the trace is
                written at exit).
  sqlite-tpcc   psq-tpcc on the pmtx VFS (undo, redo): the database is
                loaded by an untraced process, the traced one runs TPC-C
                for T_app seconds.
  pmkv-store    pmkv-storebench (opt version, redo and undo; wrapped
                under cow): 1 thread, 50 % reads after half the
                server's population, for 0.15 T_app (it stores ten times
                as fast as a server, and its trace grows as fast).
  pmkv          the pmkv server (redo) under pmkv-load: 2 clients, 50 %
                reads; stopped by SIGTERM.
PMDK: pmtx-bench --system pmdk on the same workloads, where pmtx-bench
records PMDK's libpmem calls (PMTX_PMDK_TRACE=<trace>: flushes, drains,
transaction ends; a flushed range stands for its stores, so epochs are
those of the write-backs, not of the stores); left out otherwise.
For each trace: `pmtx trace analyze --json` and `pmtx trace hops --json
--costs COSTS` (COSTS: --costs, else `pmtx-bench costs` run once here);
then the trace is deleted (--keep-traces keeps it).

Modes: --smoke (a few seconds: sps under undo and redo, bbuf under cltx,
pmkv-store redo; for CI), --quick (every target, 0.05 s per runtime
workload, 0.5 s per application: about a minute), the default (0.2 s and
1 s: a few minutes). Traces grow about 50 bytes a record (up to about
170 MB for 1 s of TPC-C); they go to --tmp (default /dev/shm).

Output: one JSON line per (system, workload) on stdout:
  {"bench": "whisper", "kind": "runtime"|"app", "workload", "system",
   "params", "seconds", "trace_bytes", "run" (the traced program's own
   result line, or null), "analyze" (pmtx trace analyze's object, or
   null), "hops" (pmtx trace hops's object, or null), "costs" (where
   hops's costs came from: the --costs file, "measured", or null: hops's
   defaults), "errors": [text, ...]}
and one {"bench": "whisper-costs", ...} line per `pmtx-bench costs` line.
With --out DIR the same lines go to DIR/whisper.jsonl (and the costs to
DIR/costs.jsonl), and, unless --no-report, DIR/report.md and the plots
(scripts/report/whisper.py). Progress goes to stderr.

Exit status: 0; 1 if a target failed (its line says why; the others
still run); 2 on bad arguments or a missing binary.
"""
import argparse
import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report as R  # noqa: E402

# The pmtx runtimes traced on each workload (the evaluation's SYSTEMS in
# scripts/eval.py, less the floors and pmtx-undo-eager), and each
# workload's one parameter point.
# PMDK ("pmdk") is traced where pmtx-bench records its libpmem calls
# (PMTX_PMDK_TRACE, bench/pmdk_trace.c): flushes, drains and transaction
# ends, with each flushed range standing for its stores.
RUNTIMES = ["pmtx-undo", "pmtx-redo", "pmtx-redo-async", "pmtx-cow",
            "pmtx-twin"]
WORKLOADS = {
    # inplace=0: undo and twin store through pmtx_write, so the trace
    # sees the data bytes (pmtx_add_range's stores are the program's own)
    "sps": (RUNTIMES + ["pmtx-auto", "pmdk"],
            {"n": 100000, "k": 8, "inplace": 0}),
    "array": (RUNTIMES + ["pmtx-auto", "pmdk"],
              {"slots": 20000, "slot": 4, "write_pct": 50}),
    "hashmap": (RUNTIMES + ["pmdk"], {"entry": 256}),
    "alloc": (RUNTIMES + ["pmdk"], {"x": 4}),
    "single-obj": (RUNTIMES + ["pmdk"], {"size": 256, "read_pct": 0}),
    "bbuf": (["pmtx-cltx"] + RUNTIMES + ["pmdk"], {"scenario": 2}),
}
PMDK_TRACE_ENV = "PMTX_PMDK_TRACE"
# The applications: workload -> the pmtx runtimes traced.
APPS = {
    "pmcached": ["pmtx-undo", "pmtx-redo"],
    "sqlite-tpcc": ["pmtx-undo", "pmtx-redo"],
    "pmkv-store": ["pmtx-undo", "pmtx-redo", "pmtx-cow"],
    "pmkv": ["pmtx-redo"],
}

MODES = {
    "smoke": {"seconds": 0.01, "app_seconds": 0.2,
              "only": {"sps": ["pmtx-undo", "pmtx-redo"],
                       "bbuf": ["pmtx-cltx"], "pmkv-store": ["pmtx-redo"]},
              "records": 500, "populate": 2000, "scale": 0.02},
    "quick": {"seconds": 0.05, "app_seconds": 0.5, "only": None,
              "records": 5000, "populate": 20000, "scale": 0.02},
    "default": {"seconds": 0.2, "app_seconds": 1.0, "only": None,
                "records": 20000, "populate": 50000, "scale": 0.05},
}

# The share of the application seconds each one runs, to keep a trace
# under about 200 MB: pmkv-storebench stores about ten times as fast as a
# server, and its trace grows as fast (1 s would be about 400 MB under
# cow, most of it the population); pmcached under undo writes about 210
# MB a second.
APP_SHARE = {"pmkv-store": 0.15, "pmcached": 0.75}

START_TIMEOUT = 20.0
STOP_TIMEOUT = 30.0


def note(msg):
    sys.stderr.write("whisper: " + msg + "\n")
    sys.stderr.flush()


# ---- the targets ----

class Target:
    """One traced run: a pmtx runtime on a workload, or an application."""

    def __init__(self, kind, workload, system, params):
        self.kind, self.workload, self.system = kind, workload, system
        self.params = params

    def label(self):
        return f"{self.workload} {self.system}"

    def seconds(self, ctx):
        """How long the traced program runs (its load, for an app)."""
        if self.kind == "runtime":
            return ctx.seconds
        return ctx.app_seconds * APP_SHARE.get(self.workload, 1.0)


def targets(mode, only=None):
    """The targets of a mode, runtimes first; `only` (workload names)
    narrows them."""
    m = MODES[mode]
    out = []
    for w, (systems, params) in WORKLOADS.items():
        for s in systems:
            out.append(Target("runtime", w, s, dict(params)))
    for w, systems in APPS.items():
        for s in systems:
            out.append(Target("app", w, s, app_params(w, s, m)))
    if m["only"]:
        out = [t for t in out if t.system in m["only"].get(t.workload, ())]
    if only:
        out = [t for t in out if t.workload in only]
    return out


def app_params(w, system, m):
    rt = system[len("pmtx-"):]
    if w == "pmcached":
        return {"runtime": rt, "records": m["records"], "workload": "a",
                "value_size": 1024, "conns": 8}
    if w == "sqlite-tpcc":
        return {"runtime": rt, "warehouses": 1, "scale": m["scale"]}
    if w == "pmkv-store":  # half the server's population: see APP_SHARE
        return {"runtime": rt, "version": "wrapped" if rt == "cow"
                else "opt", "threads": 1, "read_pct": 50,
                "populate": m["populate"] // 2}
    return {"runtime": rt, "clients": 2, "read_pct": 50,
            "populate": m["populate"]}


# ---- running a traced program ----

class Ctx:
    """Paths and settings shared by the runners."""

    def __init__(self, args, seconds, app_seconds, log):
        b = os.path.abspath(args.build)
        self.build, self.tmp, self.log = b, args.tmp, log
        self.seconds, self.app_seconds = seconds, app_seconds
        self.bench = os.path.join(b, "bench", "pmtx-bench")
        self.pmtx = os.path.join(b, "tools", "pmtx")
        self.bins = {
            "pmcached": os.path.join(b, "apps", "pmcached", "pmcached"),
            "mcload": os.path.join(b, "apps", "pmcached", "bench",
                                   "mcload"),
            "psq-tpcc": os.path.join(b, "apps", "sqlite", "bench",
                                     "psq-tpcc"),
            "pmkv": os.path.join(b, "apps", "pmkv", "pmkv"),
            "pmkv-load": os.path.join(b, "apps", "pmkv", "pmkv-load"),
            "pmkv-storebench": os.path.join(b, "apps", "pmkv",
                                            "pmkv-storebench"),
        }

    def run(self, argv, env=None, timeout=600):
        """stdout of argv (stderr to the log); raises on failure."""
        self.log.write("$ " + " ".join(argv) + "\n")
        self.log.flush()
        r = spawn(lambda: subprocess.run(
            argv, stdout=subprocess.PIPE, stderr=self.log, text=True,
            env=env, timeout=timeout))
        if r.returncode:
            raise RuntimeError(f"{os.path.basename(argv[0])} exited "
                               f"{r.returncode}")
        return r.stdout


def spawn(start, tries=10):
    """start(), retried while the binary cannot be executed for a moment
    (being relinked by a concurrent build: EACCES, ETXTBSY)."""
    for i in range(tries):
        try:
            return start()
        except OSError as e:
            if e.errno not in (errno.EACCES, errno.ETXTBSY) or \
                    i == tries - 1:
                raise
            time.sleep(1.0)


json_lines = R.json_objects


def traced_env(trace, system=None):
    """The environment of a traced process: PMTX_TRACE, or PMDK's own
    switch for the pmdk system."""
    env = dict(os.environ)
    for k in ("PMTX_TRACE", "PMTX_TRACE_BYTES", PMDK_TRACE_ENV):
        env.pop(k, None)
    env[PMDK_TRACE_ENV if system == "pmdk" else "PMTX_TRACE"] = trace
    return env


def pmdk_traceable(bench):
    """True if this pmtx-bench records PMDK's persistence calls."""
    try:
        with open(bench, "rb") as f:
            return PMDK_TRACE_ENV.encode() in f.read()
    except OSError:
        return False


def run_runtime(t, ctx, trace, work):
    """pmtx-bench on one workload and one system, traced."""
    argv = [ctx.bench, t.workload, "--system", t.system, "--domain",
            "pdom1", "--backend", "hardware", "--seconds",
            f"{ctx.seconds:g}", "--rounds", "1", "--dir", work]
    for k, v in t.params.items():
        argv += ["--p", f"{k}={v}"]
    lines = json_lines(ctx.run(argv, traced_env(trace, t.system)))
    return lines[-1] if lines else None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(port, request, prefix):
    """True if a server on port answers request with prefix."""
    try:
        with socket.create_connection(("127.0.0.1", port),
                                      timeout=0.5) as s:
            s.sendall(request)
            return s.recv(256).startswith(prefix)
    except OSError:
        return False


class Server:
    """A traced server on a loopback port. stop() sends SIGTERM, whose
    clean stop returns from main (pmcached main.c invariant 5; pmkv
    main.c), so that the trace is written at exit."""

    def __init__(self, ctx, argv, env):
        ctx.log.write("$ " + " ".join(argv) + " &\n")
        ctx.log.flush()
        self.proc = spawn(lambda: subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=ctx.log, stderr=ctx.log,
            env=env))

    def wait_ready(self, port, request, prefix):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited "
                                   f"{self.proc.returncode}")
            if answers(port, request, prefix):
                return
            time.sleep(0.02)
        raise RuntimeError(f"the server did not answer on port {port}")

    def stop(self):
        """SIGTERM and wait; the exit status (SIGKILL after the timeout,
        and then the trace is lost)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("the server did not stop on SIGTERM")
        return self.proc.returncode


def run_pmcached(t, ctx, trace, work):
    """pmcached under mcload: load, then YCSB A for app_seconds."""
    p = t.params
    port = free_port()
    mem = max(64, int(p["records"] * (p["value_size"] + 200) * 1.5 /
                      (1 << 20)) + 64)
    argv = [ctx.bins["pmcached"], "-p", str(port), "-l", "127.0.0.1",
            "-t", "1", "-m", str(mem), "-U", "0", "-c", "1024",
            "-e", os.path.join(work, "mc.pmtx"), "--runtime=" + p["runtime"],
            "--domain=pdom1", "--backend=hardware"]
    if os.geteuid() == 0:
        argv += ["-u", "root"]
    return serve_and_load(
        ctx, "pmcached", argv, trace, port, (b"version\r\n", b"VERSION "),
        [ctx.bins["mcload"], "--port", str(port), "--load", "--workload",
         p["workload"], "--records", str(p["records"]), "--value-size",
         str(p["value_size"]), "--conns", str(p["conns"]), "--ops",
         "100000000", "--seconds", f"{t.seconds(ctx):g}"])


def serve_and_load(ctx, name, argv, trace, port, probe, load):
    """Start the server argv traced, wait until it answers probe (request,
    reply prefix), run the load generator, stop the server (SIGTERM: it
    writes its trace at exit); the load's last JSON line."""
    srv = Server(ctx, argv, traced_env(trace))
    try:
        srv.wait_ready(port, *probe)
        out = ctx.run(load)
    finally:
        rc = srv.stop()
    if rc:
        raise RuntimeError(f"{name} exited {rc} on SIGTERM")
    lines = json_lines(out)
    return lines[-1] if lines else None


def run_tpcc(t, ctx, trace, work):
    """psq-tpcc on the pmtx VFS: loaded untraced, run traced."""
    p = t.params
    db = (f"file:{os.path.join(work, 'tpcc.db')}?vfs=pmtx&runtime="
          f"{p['runtime']}&domain=pdom1&backend=hardware")
    ctx.run([ctx.bins["psq-tpcc"], "--db", db, "--warehouses",
             str(p["warehouses"]), "--scale", f"{p['scale']:g}",
             "--load-only", "--seed", "1"])
    lines = json_lines(ctx.run([ctx.bins["psq-tpcc"], "--db", db,
                                "--seconds", f"{t.seconds(ctx):g}",
                                "--seed", "2"], traced_env(trace)))
    return lines[-1] if lines else None


def run_kvstore(t, ctx, trace, work):
    """pmkv-storebench: the store in one process."""
    p = t.params
    out = ctx.run([ctx.bins["pmkv-storebench"], "--region",
                   os.path.join(work, "kv.region"), "--version",
                   p["version"], "--runtime", p["runtime"], "--domain",
                   "pdom1", "--threads", str(p["threads"]), "--read-pct",
                   str(p["read_pct"]), "--seconds", f"{t.seconds(ctx):g}",
                   "--populate", str(p["populate"])], traced_env(trace))
    lines = json_lines(out)
    return lines[-1] if lines else None


def run_pmkv(t, ctx, trace, work):
    """The pmkv server under pmkv-load."""
    p = t.params
    port = free_port()
    return serve_and_load(
        ctx, "pmkv",
        [ctx.bins["pmkv"], "--port", str(port), "--region",
         os.path.join(work, "kv.region"), "--runtime", p["runtime"],
         "--domain", "pdom1", "--backend", "hardware", "--maxmemory", "1gb"],
        trace, port, (b"PING\r\n", b"+PONG"),
        [ctx.bins["pmkv-load"], "--port", str(port), "--clients",
         str(p["clients"]), "--read-pct", str(p["read_pct"]), "--seconds",
         f"{t.seconds(ctx):g}", "--populate", str(p["populate"])])


RUNNERS = {"pmcached": run_pmcached, "sqlite-tpcc": run_tpcc,
           "pmkv-store": run_kvstore, "pmkv": run_pmkv}


# ---- analysis ----

def hops_available(ctx):
    r = subprocess.run([ctx.pmtx, "trace", "hops", "--help"],
                       capture_output=True, text=True)
    return r.returncode == 0


def analyze(ctx, trace, costs, have_hops, row):
    """pmtx trace analyze and hops on one trace, into row."""
    try:
        lines = json_lines(ctx.run([ctx.pmtx, "trace", "analyze", "--json",
                                    trace]))
        row["analyze"] = lines[0] if lines else None
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        row["errors"].append(f"pmtx trace analyze: {e}")
    if not have_hops:
        row["errors"].append("pmtx trace hops: not in this build")
        return
    argv = [ctx.pmtx, "trace", "hops", "--json", trace]
    if costs:
        argv += ["--costs", costs]
    # The seed launches draining at 16 buffered entries; "eager": from the
    # first one (pmtx's transactions often buffer fewer than 16 lines).
    for key, extra in (("hops", []), ("hops_eager", ["--pb-launch", "1"])):
        try:
            lines = json_lines(ctx.run(argv + extra))
            row[key] = lines[0] if lines else None
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            row["errors"].append(f"pmtx trace hops: {e}")


def trace_one(t, ctx, costs, have_hops):
    """Run one target traced, analyse its trace, delete it; the row."""
    seconds = t.seconds(ctx)
    row = {"bench": "whisper", "kind": t.kind, "workload": t.workload,
           "system": t.system, "params": t.params, "seconds": seconds,
           "trace_bytes": None, "run": None, "analyze": None,
           "hops": None, "hops_eager": None, "costs": ctx.costs_label, "errors": []}
    work = tempfile.mkdtemp(prefix="whisper-", dir=ctx.tmp)
    trace = os.path.join(work, "trace")
    try:
        runner = run_runtime if t.kind == "runtime" else \
            RUNNERS[t.workload]
        try:
            row["run"] = runner(t, ctx, trace, work)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            row["errors"].append(f"run: {e}")
        if os.path.exists(trace):
            row["trace_bytes"] = os.path.getsize(trace)
            analyze(ctx, trace, costs, have_hops, row)
        else:
            row["errors"].append("no trace was written")
        if ctx.keep and os.path.exists(trace):
            keep = os.path.join(ctx.keep, f"{t.workload}-{t.system}.trace")
            shutil.move(trace, keep)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return row


def machine_costs(ctx, given, out_dir):
    """(costs file for hops, its lines): --costs, else pmtx-bench costs
    run once (into out_dir, or a temporary file); (None, []) if neither
    works."""
    if given:
        with open(given) as f:
            return os.path.abspath(given), json_lines(f.read())
    try:
        text = ctx.run([ctx.bench, "costs"], timeout=300)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        note(f"pmtx-bench costs failed ({e}); hops uses its defaults")
        return None, []
    lines = [x for x in json_lines(text) if x.get("workload") == "costs"]
    if not lines:
        note("pmtx-bench costs printed no costs; hops uses its defaults")
        return None, []
    for x in lines:
        for k in ("ns", "fence_ns", "line_ns"):
            # A difference of two timings can come out below zero on a
            # busy machine; hops refuses a negative cost, so it gets 0.
            if isinstance(x.get(k), (int, float)) and x[k] < 0:
                note(f"pmtx-bench costs: {x['what']} {k} measured "
                     f"{x[k]} (below zero: noise); hops uses 0")
                x[k + "_measured"], x[k] = x[k], 0.0
    if out_dir:
        path = os.path.join(out_dir, "costs.jsonl")
    else:
        fd, path = tempfile.mkstemp(prefix="whisper-costs-",
                                    suffix=".jsonl", dir=ctx.tmp)
        os.close(fd)
        ctx.cleanup.append(path)
    with open(path, "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in lines)
    return path, lines


# ---- the command ----

def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="WHISPER's trace analysis of pmtx's runtimes and "
        "applications, and its report section.")
    m = ap.add_mutually_exclusive_group()
    for name in ("smoke", "quick"):
        m.add_argument(f"--{name}", dest="mode", action="store_const",
                       const=name)
    ap.add_argument("--out", help="write whisper.jsonl, report.md and the "
                    "plots here")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--costs", help="a `pmtx-bench costs` JSONL file (else "
                    "it is measured once)")
    ap.add_argument("--tmp", default="/dev/shm",
                    help="where regions and traces go (default /dev/shm)")
    ap.add_argument("--only", help="comma-separated workloads")
    ap.add_argument("--seconds", type=float,
                    help="per traced run (overrides the mode's)")
    ap.add_argument("--keep-traces", metavar="DIR",
                    help="move each trace into DIR instead of deleting it")
    ap.add_argument("--no-report", action="store_true")
    a = ap.parse_args(argv)
    a.mode = a.mode or "default"
    known = list(WORKLOADS) + list(APPS)
    a.only = [x for x in (a.only or "").split(",") if x]
    bad = [x for x in a.only if x not in known]
    if bad:
        ap.error(f"unknown workload(s) {', '.join(bad)}; known: "
                 f"{', '.join(known)}")
    if a.seconds is not None and not 0 < a.seconds <= 60:
        ap.error("--seconds must be in (0, 60]")
    return a


def needed_binaries(ctx, tlist, costs_given):
    need = [ctx.pmtx]
    if not costs_given or any(t.kind == "runtime" for t in tlist):
        need.append(ctx.bench)
    for t in tlist:
        if t.workload == "pmcached":
            need += [ctx.bins["pmcached"], ctx.bins["mcload"]]
        elif t.workload == "sqlite-tpcc":
            need.append(ctx.bins["psq-tpcc"])
        elif t.workload == "pmkv-store":
            need.append(ctx.bins["pmkv-storebench"])
        elif t.workload == "pmkv":
            need += [ctx.bins["pmkv"], ctx.bins["pmkv-load"]]
    return sorted({p for p in need if not os.access(p, os.X_OK)})


def emit(obj, out):
    line = json.dumps(obj)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    if out:
        out.write(line + "\n")
        out.flush()


def run_targets(tlist, ctx, costs, have_hops, out):
    failed = 0
    t0 = time.monotonic()
    for i, t in enumerate(tlist):
        row = trace_one(t, ctx, costs, have_hops)
        emit(row, out)
        bad = [e for e in row["errors"] if not e.startswith(
            "pmtx trace hops: not in")]
        failed += bool(bad) or row["analyze"] is None
        a = row["analyze"] or {}
        mb = (row["trace_bytes"] or 0) / 1e6
        note(f"[{i + 1}/{len(tlist)}] {t.label()}: {mb:.0f} MB trace, "
             f"{a.get('tx_committed', '-')} tx, {a.get('epochs', '-')} "
             f"epochs, {time.monotonic() - t0:.0f} s" +
             (f"; {'; '.join(bad)}" if bad else ""))
    return failed


def write_report(out_dir, mode):
    return R.whisper.write_report(out_dir, mode)


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    m = MODES[a.mode]
    out_dir = os.path.abspath(a.out) if a.out else None
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    log = open(os.path.join(out_dir, "whisper.log"), "a") if out_dir \
        else sys.stderr
    ctx = Ctx(a, a.seconds or m["seconds"], a.seconds or m["app_seconds"],
              log)
    ctx.keep = os.path.abspath(a.keep_traces) if a.keep_traces else None
    ctx.cleanup, ctx.costs_label = [], None
    if ctx.keep:
        os.makedirs(ctx.keep, exist_ok=True)
    tlist = targets(a.mode, a.only)
    missing = needed_binaries(ctx, tlist, a.costs)
    if missing:
        note(f"missing: {', '.join(missing)} (build: ninja -C build)")
        return 2
    if not pmdk_traceable(ctx.bench):
        tlist = [t for t in tlist if t.system != "pmdk"]
        note(f"this pmtx-bench does not record PMDK ({PMDK_TRACE_ENV}): "
             "no PMDK traces")
    have_hops = hops_available(ctx)
    if not have_hops:
        note("`pmtx trace hops` is not in this build: no HOPS results")
    note(f"{len(tlist)} traced runs, mode {a.mode}, traces in {a.tmp}")
    out = open(os.path.join(out_dir, "whisper.jsonl"), "w") \
        if out_dir else None
    try:
        costs, clines = machine_costs(ctx, a.costs, out_dir)
        ctx.costs_label = None if not costs else \
            os.path.abspath(a.costs) if a.costs else "measured"
        for c in clines:
            emit(dict(c, bench="whisper-costs"), out)
        failed = run_targets(tlist, ctx, costs, have_hops, out)
    finally:
        if out:
            out.close()
        for p in ctx.cleanup:
            try:
                os.unlink(p)
            except OSError:
                pass
    if out_dir and not a.no_report:
        note(f"report: {write_report(out_dir, a.mode)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
