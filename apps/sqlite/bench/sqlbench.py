#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""SQLite on pmtx beside stock SQLite: TPC-C (psq-tpcc) and SQLite's own
speedtest1 (psq-speedtest1), every configuration side by side in one run;
and, when asked for (--benches inserts), one-row transactions (inserts.py).

    sqlbench.py [--quick] [--rounds R] [--seconds T] [--warehouses 1,4]
                [--scale F] [--size N] [--configs a,b,...]
                [--benches tpcc,speedtest1,inserts] [--shm-dir D]
                [--disk-dir D] [--tpcc BIN] [--speedtest1 BIN] [--ext SO]

Configurations (--configs; all by default):
  memory            :memory: (speedtest1 --memdb)
  pmtx-R-pdom1      the pmtx VFS, runtime R (undo, redo), PDOM-1 on the
                    hardware backend (clwb + sfence), in the shm dir
  pmtx-R-pdom2      the same under PDOM-2 (no write-back, fences only)
  pmtx-R-file       the file backend in the disk dir: every commit
                    durable on an ordinary file system, its pages written
                    back in place at each commit
  pmtx-R-journal    the journal backend in the disk dir: the same
                    guarantee, each commit appended to "<db>.pmtxj" (one
                    fdatasync), the pages written back at checkpoints
  pmtx-twin-pdom1   the twin runtime, PDOM-1 hardware, in a fixed twin
                    region of 2 GiB (max_size=2G); not in the default
                    list: name it
  J-S-shm, J-S-disk stock SQLite (the default VFS) with journal_mode J
                    (delete, wal) and synchronous S (full, normal), in the
                    shm dir (/dev/shm) or the disk dir (/var/tmp, ext4 here)

Each round runs every configuration once, in order, so that the machine's
drift reaches them alike; the report takes medians over the rounds. A
TPC-C database is loaded once per warehouse count (psq-tpcc --load-only
into a plain file) and copied into each configuration before its run
(--from: SQLite's backup API), so that a run measures transactions only.

inserts (not in the default --benches): each run inserts one row per
transaction, in autocommit, for --seconds (inserts.py, in a process of
its own: this Python, which must load the extension --ext).

Output: JSON lines on stdout, one per run, each psq-tpcc's, speedtest1's
or inserts.py's figures with "bench" ("sqlite-tpcc", "sqlite-speedtest1",
"sqlite-inserts"),
"config", "round", "dir", "fs" (the dir's file system type); and one
{"bench": "sqlite-skip", ...} line for a bench that cannot run (its
binary is missing). Progress goes to stderr. Every run is bounded in
time (psq-tpcc --seconds and --max-tx; speedtest1 --size) and killed
past a timeout. Exits 1 if any run failed.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

RUNTIMES = ["redo", "undo"]
# The pmtx configurations' last word: a domain on the hardware backend in
# the shm dir, or a backend for ordinary disks (PDOM-1) in the disk dir.
PMTX_DOMAINS = ["pdom1", "pdom2", "file", "journal"]
DISK_BACKENDS = ("file", "journal")
JOURNALS = ["delete", "wal"]
SYNCS = ["full", "normal"]


def all_configs():
    """{name: config} in the order of the report's tables."""
    cfgs = {"memory": {"kind": "memory", "where": "shm"}}
    for dom in PMTX_DOMAINS:
        for rt in RUNTIMES:
            disk = dom in DISK_BACKENDS
            cfgs[f"pmtx-{rt}-{dom}"] = {
                "kind": "pmtx", "runtime": rt,
                "domain": "pdom1" if disk else dom,
                "backend": dom if disk else "hardware",
                "where": "disk" if disk else "shm"}
    cfgs["pmtx-twin-pdom1"] = {"kind": "pmtx", "runtime": "twin",
                               "domain": "pdom1", "backend": "hardware",
                               "where": "shm", "max_size": "2G",
                               "optional": True}
    for where in ("shm", "disk"):
        for j in JOURNALS:
            for s in SYNCS:
                cfgs[f"{j}-{s}-{where}"] = {"kind": "stock", "journal": j,
                                            "sync": s, "where": where}
    return cfgs


CONFIGS = all_configs()

QUICK = {"rounds": 2, "seconds": 3.0, "warehouses": [1], "scale": 0.1,
         "size": 25, "max_tx": 2000000}
DEFAULT = {"rounds": 3, "seconds": 5.0, "warehouses": [1],
           "scale": 1.0, "size": 50, "max_tx": 10000000}


def db_uri(cfg, path):
    """What psq-tpcc --db and speedtest1's database argument get."""
    if cfg["kind"] == "pmtx":
        uri = (f"file:{path}?vfs=pmtx&runtime={cfg['runtime']}"
               f"&domain={cfg['domain']}&backend={cfg['backend']}")
        return uri + (f"&max_size={cfg['max_size']}"
                      if "max_size" in cfg else "")
    return path


def remove_db(path):
    """The database and every file SQLite or pmtx keeps beside it (the
    journal backend's "<db>.pmtxj", 64 MiB by default)."""
    for p in [path] + [path + s for s in ("-journal", "-wal", "-shm",
                                          ".pmtxj")]:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def fs_type(d):
    r = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", d],
                       capture_output=True, text=True)
    words = r.stdout.split()
    return words[0] if words else "unknown"


class Runner:
    def __init__(self, args):
        self.args = args
        self.failed = 0
        self.dirs = {"shm": args.shm_dir, "disk": args.disk_dir}
        self.fs = {k: fs_type(d) for k, d in self.dirs.items()}
        self.tag = f"psqbench-{os.getpid()}"

    def path(self, cfg, name):
        return os.path.join(self.dirs[cfg["where"]], f"{self.tag}-{name}")

    def emit(self, obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    def run(self, argv, timeout):
        """stdout of argv; None (and a message) if it failed."""
        t0 = time.monotonic()
        try:
            r = subprocess.run(argv, capture_output=True, text=True,
                               timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            sys.stderr.write(f"sqlbench: timed out after {timeout:.0f} s: "
                             f"{' '.join(argv)}\n")
            self.failed += 1
            return None
        if r.returncode != 0:
            sys.stderr.write(f"sqlbench: exit {r.returncode}: "
                             f"{' '.join(argv)}\n{r.stderr[-2000:]}\n")
            self.failed += 1
            return None
        sys.stderr.write(f"sqlbench: {time.monotonic() - t0:6.1f} s  "
                         f"{' '.join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv))}\n")
        return r.stdout

    # ---- TPC-C ----

    def load_templates(self):
        """{warehouses: plain database file} loaded once each."""
        a = self.args
        out = {}
        for w in a.warehouses:
            path = os.path.join(a.shm_dir, f"{self.tag}-tpcc-w{w}.db")
            remove_db(path)
            text = self.run([a.tpcc, "--db", path, "--warehouses", str(w),
                             "--scale", f"{a.scale:g}", "--load-only",
                             "--seed", "1"], timeout=3600)
            if text is None:
                continue
            for obj in parse_json_lines(text):
                obj.update(bench="sqlite-tpcc-load", warehouses=w)
                self.emit(obj)
            out[w] = path
        return out

    def tpcc(self, name, cfg, w, template, rnd):
        a = self.args
        path = self.path(cfg, f"tpcc-{name}.db")
        remove_db(path)
        argv = [a.tpcc, "--db", ":memory:" if cfg["kind"] == "memory"
                else db_uri(cfg, path), "--from", template,
                "--warehouses", str(w), "--scale", f"{a.scale:g}",
                "--seconds", f"{a.seconds:g}", "--max-tx", str(a.max_tx),
                "--seed", str(rnd + 1), "--label", name]
        self.run_client(argv, path, name, cfg, rnd, "tpcc", "sqlite-tpcc")

    def run_client(self, argv, path, name, cfg, rnd, want, bench):
        """Run a client (psq-tpcc, inserts.py) on one configuration,
        remove its database, and emit its JSON lines whose bench is want
        (any, if None) as bench."""
        if cfg["kind"] == "stock":
            argv += ["--journal", cfg["journal"], "--sync", cfg["sync"]]
        try:
            text = self.run(argv, timeout=self.args.seconds * 4 + 600)
        finally:
            remove_db(path)
        for obj in parse_json_lines(text or ""):
            if want is not None and obj.get("bench") != want:
                continue
            obj.update(bench=bench, config=name, round=rnd,
                       dir=self.dirs[cfg["where"]], fs=self.fs[cfg["where"]])
            self.emit(obj)

    # ---- speedtest1 ----

    def speedtest1(self, name, cfg, rnd):
        a = self.args
        path = self.path(cfg, f"st1-{name}.db")
        remove_db(path)
        argv = [a.speedtest1]
        if cfg["kind"] == "stock":
            argv += ["--synchronous", cfg["sync"], "--journal",
                     cfg["journal"]]
        argv += ["--size", str(a.size)]
        argv += ["--memdb", path] if cfg["kind"] == "memory" else \
            [db_uri(cfg, path)]
        try:
            text = self.run(argv, timeout=3600)
        finally:
            remove_db(path)
        if text is None:
            return
        tests, total = parse_speedtest1(text)
        if total is None:
            sys.stderr.write(f"sqlbench: no TOTAL line from speedtest1 "
                             f"({name})\n")
            self.failed += 1
            return
        self.emit({"bench": "sqlite-speedtest1", "config": name,
                   "round": rnd, "size": a.size, "total_s": total,
                   "tests": tests, "dir": self.dirs[cfg["where"]],
                   "fs": self.fs[cfg["where"]]})

    # ---- one-row transactions ----

    def inserts(self, name, cfg, rnd):
        a = self.args
        path = self.path(cfg, f"ins-{name}.db")
        remove_db(path)
        argv = [sys.executable, os.path.join(HERE, "inserts.py"),
                "--db", ":memory:" if cfg["kind"] == "memory"
                else db_uri(cfg, path), "--seconds", f"{a.seconds:g}",
                "--max-tx", str(a.max_tx), "--label", name]
        if cfg["kind"] == "pmtx":
            argv += ["--ext", a.ext]
        self.run_client(argv, path, name, cfg, rnd, None, "sqlite-inserts")

    def cleanup(self):
        for d in set(self.dirs.values()):
            for p in glob.glob(os.path.join(d, self.tag + "-*")):
                try:
                    os.unlink(p)
                except OSError:
                    pass


def parse_json_lines(text):
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


TEST_LINE = re.compile(r"^\s*(\d+) - (.*?)\.{3,}\s+([0-9.]+)s\s*$")
TOTAL_LINE = re.compile(r"^\s*TOTAL\.+\s+([0-9.]+)s\s*$")


def parse_speedtest1(text):
    """({test number: seconds}, total seconds) from speedtest1's output."""
    tests, total = {}, None
    for line in text.splitlines():
        m = TEST_LINE.match(line)
        if m:
            tests[m.group(1)] = float(m.group(3))
            continue
        m = TOTAL_LINE.match(line)
        if m:
            total = float(m.group(1))
    return tests, total


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--seconds", type=float, help="per TPC-C run")
    ap.add_argument("--warehouses", help="comma-separated, 1 to 4")
    ap.add_argument("--scale", type=float,
                    help="TPC-C scale (1.0: the specification's sizes)")
    ap.add_argument("--max-tx", type=int, help="bound on each TPC-C run")
    ap.add_argument("--size", type=int, help="speedtest1 --size")
    ap.add_argument("--configs", help="comma-separated subset")
    ap.add_argument("--benches", default="tpcc,speedtest1")
    ap.add_argument("--shm-dir", default="/dev/shm")
    ap.add_argument("--disk-dir", default="/var/tmp")
    build = os.environ.get("PSQ_BUILD", os.path.join(
        HERE, "..", "..", "..", "build", "apps", "sqlite"))
    ap.add_argument("--tpcc", default=os.path.join(build, "bench",
                                                   "psq-tpcc"))
    ap.add_argument("--speedtest1",
                    default=os.path.join(build, "psq-speedtest1"))
    ap.add_argument("--ext", default=os.path.join(build,
                                                  "libpmtx_sqlite.so"),
                    help="the extension, for --benches inserts")
    a = ap.parse_args(argv)
    base = QUICK if a.quick else DEFAULT
    for k, v in base.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if isinstance(a.warehouses, str):
        a.warehouses = [int(x) for x in a.warehouses.split(",") if x]
    if any(not 1 <= w <= 4 for w in a.warehouses):
        ap.error("--warehouses: 1 to 4")
    names = [x for x in (a.configs or "").split(",") if x] or \
        [n for n, c in CONFIGS.items() if not c.get("optional")]
    bad = [n for n in names if n not in CONFIGS]
    if bad:
        ap.error(f"unknown configuration(s) {', '.join(bad)}; known: "
                 f"{', '.join(CONFIGS)}")
    a.configs = names
    a.benches = [b for b in a.benches.split(",") if b]
    bad = [b for b in a.benches if b not in ("tpcc", "speedtest1",
                                             "inserts")]
    if bad:
        ap.error(f"unknown bench(es) {', '.join(bad)}; known: tpcc, "
                 f"speedtest1, inserts")
    return a


def main(argv=None):
    a = parse_args(argv)
    r = Runner(a)
    benches = []
    for b, binary in (("tpcc", a.tpcc), ("speedtest1", a.speedtest1),
                      ("inserts", a.ext)):
        if b not in a.benches:
            continue
        if os.access(binary, os.R_OK if b == "inserts" else os.X_OK):
            benches.append(b)
        else:
            r.emit({"bench": "sqlite-skip", "what": b, "binary": binary,
                    "why": "not built (psq-speedtest1 needs the SQLite "
                    "source: scripts/eval.sh fetches it)"
                    if b == "speedtest1" else "not built"})
    try:
        templates = r.load_templates() if "tpcc" in benches else {}
        for rnd in range(a.rounds):
            for name in a.configs:
                cfg = CONFIGS[name]
                for w, tpl in templates.items():
                    r.tpcc(name, cfg, w, tpl, rnd)
                if "speedtest1" in benches:
                    r.speedtest1(name, cfg, rnd)
                if "inserts" in benches:
                    r.inserts(name, cfg, rnd)
    finally:
        r.cleanup()
    return 1 if r.failed else 0


if __name__ == "__main__":
    sys.exit(main())
