#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Run pmtx's evaluation: every workload of pmtx-bench, then the
applications' benchmarks (pmcached), then the report.

    scripts/eval.py [--smoke|--quick|--full] [--workloads a,b] [--systems a,b]
                    [--domains c,d] [--out DIR] [--bench PATH]
                    [--seconds T] [--rounds R] [--dir D] [--dry-run]
                    [--no-apps] [--no-report]

(scripts/eval.sh installs the packages, builds, and runs this.)

Modes (each covers every workload unless --workloads narrows it):
  --smoke   tiny sizes, one point per workload, pmtx on PDOM-1 hardware
            only: a few seconds; the CI test of the harness itself.
  --quick   reduced sizes and sweeps (array slots=100000 with 7 write
            percentages, sps n=100000 with k=1,2,8,64,1024, 3 entry sizes
            x 2 read ratios, ...), all four domain configurations: about
            3 minutes on a 2-core machine (plus the build), then
            about a minute of pmcached.
  (none)    the default: the seeds' sweeps at the pmtx-bench default
            sizes (array slots=1000000, slot 4 and 64, all 11 write
            percentages, every k, 5 entry sizes x 4 read ratios): about
            15 minutes, then about 5 of pmcached.
  --full    the seeds' sizes and every sweep point (array slots=10M,
            slot 1..64, entry sizes 128..16384 B, ...), plus the `txn`
            table: about an hour or more. Each point measures 0.6 s per
            runner in 3 rounds (seed 000 ran 3 x 10 s; --seconds brings
            it closer, at a proportional cost). Array sizes are capped so
            that every runner of a parameter point fits in half the
            available memory (10M slots of 64 integers are 5 GiB per
            runner): on 24 GiB, slot 16 gets 9.5M slots, 32 gets 4.7M and
            64 gets 2.3M. The caps are printed, kept in meta.json and the
            report, and visible in each row's params.

The applications: `pmcached` is a workload name too (in --workloads, and
run by default after pmtx-bench's workloads; --no-apps leaves it out). Its
stage runs apps/pmcached/bench/ycsb.py (memcached beside the pmcached
variants, YCSB A/B/C/F) and then warmup.py once per item count (exec to
first hit after a restart: memcached-graceful, memcached-kill9, and
pmcached-undo/redo/redo-async-kill9), with the pmcached and mcload of the
build tree that holds --bench:
  --smoke   ycsb.py --quick, 1 round, memcached and pmcached-redo, 500
            records, 2000 ops; warm-up: 1000 items, 1 restart, the two
            kill -9 cases: a few seconds.
  --quick   ycsb.py --quick (3 rounds, 5000 records, 30000 ops or 0.5 s
            per workload); warm-up 100000 items, 3 restarts: about a
            minute.
  (none)    ycsb.py --quick --ops 300000 --seconds 3; warm-up 100000 and
            1000000 items: about 5 minutes.
  --full    ycsb.py's default mode (100000 records, 500000 ops or 10 s;
            the file variant's load alone takes minutes a round); warm-up
            100000, 1000000 and 10000000 items (warmup.py skips, with a
            line saying why, a size that does not fit in memory): about
            20 minutes.
warmup.py's pmcached-redo-file case is left out: the file backend stores
a few hundred sets a second, so its fill alone would take minutes.
SQLite: `sqlite` is a workload name too (run by default after pmcached;
--no-apps leaves it out). Its stage runs apps/sqlite/bench/sqlbench.py:
TPC-C (psq-tpcc) and speedtest1 (psq-speedtest1, built when
scripts/eval.sh found the SQLite source) over :memory:, the pmtx VFS
(undo, redo; PDOM-1 hardware, PDOM-2, the file backend on ext4) and
stock SQLite (DELETE and WAL, synchronous FULL and NORMAL, /dev/shm and
ext4), every configuration in turn each round; lines in sqlite.jsonl:
  --smoke   TPC-C scale 0.02, 0.5 s, one round, three configurations.
  --quick   scale 0.1, 1 warehouse, 2 rounds of 3 s, speedtest1 --size
            25: about 3 minutes.
  (none)    scale 1.0 (80 MB), 1 warehouse, 3 rounds of 5 s, --size 50:
            about 9 minutes.
  --full    1 and 4 warehouses, 3 rounds of 10 s, --size 100.
pmkv: `pmkv` is a workload name too (run by default after sqlite;
--no-apps leaves it out). Its stage runs apps/pmkv/bench/kvbench.py all:
the seed's Figure 7 (pmkv-load: 1, 2 and 4 clients at 90/50/10 % reads
after 1,000,000 puts over 238,328 keys; the opt version under undo, redo,
redo-async and the wrapped one under undo, redo, cow; PDOM-2 and PDOM-1,
hardware backend), the same on the store in one process
(pmkv-storebench), and pmkv beside Redis 7.0 (redis-benchmark
-t set,get -c 4 -r 238328 -d 64, -P 1 and 16; pmkv on /dev/shm and on
ext4 with the file backend; Redis with persistence off, AOF everysec on
ext4, AOF always on ext4 and /dev/shm); lines in pmkv.jsonl:
  --smoke   5,000 puts: PDOM-1 redo, both versions, 1 client, 90 % reads,
            0.3 s; pmkv on /dev/shm and Redis without persistence, 1,000
            requests (20,000 with -P 16).
  --quick   kvbench.py --quick, PDOM-1 only: about a minute.
  (none)    3 s per point, 200,000 requests, 3 rounds: about 15 minutes.
  --full    5 rounds.
WHISPER: `whisper` is a workload name too (run by default after pmkv;
--no-apps leaves it out). Its stage runs scripts/whisper.py: each pmtx
runtime traced (PMTX_TRACE) on sps, array, hashmap, alloc, single-obj and
bbuf, and each application (pmcached, SQLite TPC-C, pmkv's store and
server), every trace analysed by `pmtx trace analyze` and `pmtx trace
hops` (with this machine's `pmtx-bench costs`); lines in whisper.jsonl,
and the section (report/whisper.py) with WHISPER's Table 1 and Figures
3, 4, 5 and 10:
  --smoke   sps under undo and redo, bbuf under cltx, pmkv's store under
            redo; 0.01 s runs: about 10 seconds.
  --quick   every runtime and application, 0.05 s per runtime workload,
            0.5 s per application: about a minute.
  (none), --full   0.2 s and 1 s: about two minutes.
The containers: `containers` is a workload name too (run by default
after pmtx-bench's workloads, before the applications; --no-apps keeps
it). Its stage runs `pmtx-bench set` (the PTM papers' set benchmark:
pmtx's ordered map and hash map under undo, redo, redo-async, twin and
auto beside PMDK's B-tree and hash map, PDOM-1 hardware, update ratios
100, 10 and 1 %, every system interleaved) and `pmtx-bench containers`
(bytes per entry of the map, the hash map and the list; barriers and
lines per operation of each container under each runtime); lines in
containers.jsonl, the section in report/containers.py:
  --smoke   2,000 keys, 100 and 1 % updates, 0.02 s per ratio; 2,000
            entries: a few seconds.
  --quick   100,000 keys, 0.5 s per ratio in 3 rounds; memory at
            100,000 entries: about 40 seconds.
  (none)    1,000,000 keys, 1 s per ratio in 5 rounds; memory at
            1,000,000 entries: about 2 minutes.
  --full    1,000,000 keys, 3 s per ratio in 5 rounds.
--systems, --domains, --seconds and --rounds apply to pmtx-bench's
workloads only (not to the containers' stage).
pmtx-bench's systems per workload are SYSTEMS below: every pmtx runtime
(undo, redo, redo-async, cow and twin, the Romulus design in a twin region
of twice the bytes; auto on array and sps; cltx on bbuf and txn), PMDK and
the plain floor.

Domain configurations (--domains, comma-separated): pdom1-hw (PDOM-1 on
the hardware backend: clwb + sfence, the like-for-like comparison with
PMDK), pdom0-emu, pdom1-emu, pdom2-emu (emulated barrier latencies of
500 / 100 / 0 ns); shortcuts: hardware, emulated, pdom0, pdom2 (their
emulated configuration), pdom1 (both). PMDK and the uninstrumented `plain`
floor always run on PDOM-1 hardware, so they run only when pdom1-hw is
selected.

Output, in --out (default results/<timestamp>, with results/latest
pointing at it):
  results.jsonl  every JSON line pmtx-bench printed (schema in
                 bench/bench.h), with the run's metadata added to each:
                 run, mode, date (ISO 8601), cpu_model, host_cores,
                 flush_instruction, pmtx_version.
  meta.json      the run: metadata, command line, the steps, their
                 times, and any step that failed.
  pmcached.jsonl every JSON line of ycsb.py and warmup.py (schemas in
                 apps/pmcached/bench/README.md), with the run's metadata
                 added where the tool did not print the field itself
                 (ycsb.py's "mode" is its own sizing: quick or default).
  bench.log      pmtx-bench's and the pmcached tools' stderr, per step.
  report.md, *.png   from scripts/report (the package).

Progress and an estimated time remaining go to stderr: a bar when stderr
is a terminal, otherwise a line per finished step (and every 30 s during
a long one). The estimate starts from a cost model (runners x (seconds +
set-up) per step) and is corrected by the rate measured so far.

Exit status: 0 if every step succeeded, 1 if any failed (a validator
failure makes its step fail; a pmcached step fails when ycsb.py or
warmup.py exits non-zero: a failed measurement, a server that did not
start), 2 on bad arguments or a missing binary, 130 on interruption.
"""
import argparse
import datetime
import glob
import importlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---- what pmtx-bench offers ----

CONFIGS = {  # label -> (domain, backend), in report order
    "pdom1-hw": ("pdom1", "hardware"),
    "pdom0-emu": ("pdom0", "emulated"),
    "pdom1-emu": ("pdom1", "emulated"),
    "pdom2-emu": ("pdom2", "emulated"),
}
CONFIG_ALIASES = {
    "hardware": ["pdom1-hw"], "hw": ["pdom1-hw"],
    "emulated": ["pdom0-emu", "pdom1-emu", "pdom2-emu"],
    "pdom0": ["pdom0-emu"], "pdom2": ["pdom2-emu"],
    "pdom1": ["pdom1-hw", "pdom1-emu"],
}
HW = "pdom1-hw"
# The runtimes every workload runs. pmtx-twin (PMTX_RT_TWIN) runs in a twin
# region, which holds a back copy of its data: twice the bytes (TWIN_SYSTEMS
# counts in the memory estimate).
PMTX = ["pmtx-undo", "pmtx-redo", "pmtx-redo-async", "pmtx-cow",
        "pmtx-twin"]
TWIN_SYSTEMS = {"pmtx-twin"}
FLOORS = ["pmdk", "plain"]  # run on PDOM-1 hardware only
SYSTEMS = {
    "array": PMTX + ["pmtx-auto"] + FLOORS,
    "array-raw": PMTX + ["pmtx-auto"] + FLOORS,
    "alloc": PMTX + ["pmtx-undo-eager"] + FLOORS,
    "sps": PMTX + ["pmtx-auto"] + FLOORS,
    "single-obj": PMTX + FLOORS,
    "multi-obj": PMTX + FLOORS,
    "hashmap": PMTX + FLOORS,
    "bbuf": ["pmtx-cltx"] + PMTX + FLOORS,
    "txn": PMTX + ["pmtx-cltx", "pmdk"],
}
WORKLOADS = ["array", "array-raw", "alloc", "sps", "single-obj",
             "multi-obj", "hashmap", "bbuf"]
EXTRA_WORKLOADS = ["txn"]  # full mode, or when asked for by name

# ---- the modes: per workload, parameter lists (a list is a sweep) ----

WPCT_ALL = [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
POW2_1K = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
SIZES_ALL = [128, 256, 512, 1024, 2048, 4096, 8192, 16384]

MODES = {
    "smoke": {
        "_run": {"seconds": 0.02, "rounds": 1, "configs": [HW]},
        "array": {"slots": [1000], "slot": [4], "write_pct": [50]},
        "array-raw": {"slots": [1000], "slot": [4], "write_pct": [50]},
        "alloc": {"x": [4]},
        "sps": {"n": [1000], "k": [8]},
        "single-obj": {"size": [256], "read_pct": [10]},
        "multi-obj": {"size": [256], "read_pct": [10]},
        "hashmap": {"entry": [256], "cap": [1000], "buckets": [1024]},
        "bbuf": {"scenario": [2]},
        "txn": {"writes": [4], "allocs": [0]},
    },
    "quick": {
        "_run": {"seconds": 0.1, "rounds": 2},
        "array": {"slots": [100000], "slot": [4, 64],
                  "write_pct": [0, 10, 20, 30, 50, 70, 100]},
        "array-raw": {"slots": [100000], "slot": [4, 64],
                      "write_pct": [0, 10, 30, 50, 100]},
        "alloc": {"x": [1, 4, 16, 32]},
        "sps": {"n": [100000], "k": [1, 2, 8, 64, 1024]},
        "single-obj": {"size": [128, 1024, 16384], "read_pct": [0, 50]},
        "multi-obj": {"size": [128, 1024, 16384], "read_pct": [0, 50]},
        "hashmap": {"entry": [128, 1024, 8192]},
        "bbuf": {"scenario": [1, 2, 3]},
        "txn": {"writes": [0, 1, 4, 32], "allocs": [0]},
    },
    "default": {
        "_run": {"seconds": 0.3, "rounds": 3},
        "array": {"slots": [1000000], "slot": [4, 64],
                  "write_pct": WPCT_ALL},
        "array-raw": {"slots": [1000000], "slot": [4, 64],
                      "write_pct": WPCT_ALL},
        "alloc": {"x": [1, 2, 4, 8, 16, 32]},
        "sps": {"n": [1000000], "k": POW2_1K},
        "single-obj": {"size": [128, 512, 2048, 8192, 16384],
                       "read_pct": [0, 10, 30, 50]},
        "multi-obj": {"size": [128, 512, 2048, 8192, 16384],
                      "read_pct": [0, 10, 30, 50]},
        "hashmap": {"entry": [128, 256, 512, 1024, 2048, 4096, 8192]},
        "bbuf": {"scenario": [1, 2, 3]},
        "txn": {"writes": [0, 1, 2, 3, 4, 16, 32], "allocs": [0]},
    },
    "full": {
        "_run": {"seconds": 0.6, "rounds": 3},
        "array": {"slots": [10000000], "slot": [1, 2, 4, 8, 16, 32, 64],
                  "write_pct": WPCT_ALL},
        "array-raw": {"slots": [10000000],
                      "slot": [1, 2, 4, 8, 16, 32, 64],
                      "write_pct": WPCT_ALL},
        "alloc": {"x": [1, 2, 4, 8, 16, 32]},
        "sps": {"n": [1000000], "k": POW2_1K},
        "single-obj": {"size": SIZES_ALL, "read_pct": [0, 10, 30, 50]},
        "multi-obj": {"size": SIZES_ALL, "read_pct": [0, 10, 30, 50]},
        "hashmap": {"entry": [128, 256, 512, 1024, 2048, 4096, 8192]},
        "bbuf": {"scenario": [1, 2, 3]},
        "txn": {"writes": [0, 1, 2, 3, 4, 16, 32], "allocs": [0]},
    },
}


# Parameters swept inside one invocation: pmtx-bench array builds its
# runners once per slot size and measures every write_pct on them.
INNER = {"array": ["write_pct"], "array-raw": ["write_pct"]}


def mode_workloads(mode):
    """The workloads a mode runs when --workloads is not given: pmtx-bench's,
    then the applications'."""
    return WORKLOADS + (EXTRA_WORKLOADS if mode == "full" else []) + \
        CONT_WORKLOADS + APP_WORKLOADS


# ---- steps: one pmtx-bench invocation each ----

class Step:
    """One pmtx-bench invocation: one parameter point of one workload (or
    an inner sweep, a list value), on one domain configuration or (cfg
    None) on all of them at once."""

    def __init__(self, workload, params, systems, cfg, seconds, rounds,
                 runners):
        self.workload, self.params = workload, params
        self.systems, self.cfg = systems, cfg
        self.seconds, self.rounds, self.runners = seconds, rounds, runners
        self.npoints = 1
        for v in params.values():
            self.npoints *= len(v) if isinstance(v, list) else 1
        self.expected_lines = runners * self.npoints
        self.est = estimate_cost(self)
        self.out_name = "results.jsonl"
        self.actual = None
        self.rc = None
        self.lines = 0

    def label(self):
        p = " ".join(f"{k}={fmt_value(v)}" for k, v in self.params.items())
        return f"{self.workload} {p}" + (f" [{self.cfg}]" if self.cfg else "")

    def argv(self, bench, pool_dir):
        a = [bench, self.workload, "--seconds", f"{self.seconds:g}",
             "--rounds", str(self.rounds), "--dir", pool_dir]
        if self.systems:
            a += ["--system", ",".join(self.systems)]
        if self.cfg:
            d, b = CONFIGS[self.cfg]
            a += ["--domain", d, "--backend", b]
        for k, v in self.params.items():
            v = ",".join(map(str, v)) if isinstance(v, list) else str(v)
            a += [f"--{k}", v] if self.workload == "txn" else \
                ["--p", f"{k}={v}"]
        return a

    def annotate(self, obj, meta):
        """The run's metadata on a result line."""
        obj.update(meta)

    def stop(self, proc, pool_dir):
        """Interrupted: kill pmtx-bench and delete the pools it left."""
        proc.kill()
        proc.wait()
        remove_pools(pool_dir, proc.pid)


def fmt_value(v):
    """A parameter value for a label: a list shows as first..last."""
    if isinstance(v, list):
        return f"{v[0]}..{v[-1]}" if len(v) > 2 else ",".join(map(str, v))
    return str(v)


def data_bytes(workload, params):
    """Persistent data one runner sets up (a guess used for estimates and
    the memory cap); small workloads count as 0."""
    if workload in ("array", "array-raw"):
        return int(params.get("slots", 0)) * int(params.get("slot", 0)) * 8
    if workload == "sps":
        return int(params.get("n", 0)) * 8
    if workload in ("single-obj", "multi-obj"):  # objects or log bytes
        return int(params.get("size", 0)) * 1000
    if workload == "hashmap":  # the map is filled to cap entries
        return int(params.get("cap", 20000)) * int(params.get("entry", 0))
    return 0


# Set-up seconds per runner beyond region creation, per byte of data
# (array: zeroing, filling, and COW's one object per slot).
SETUP_PER_BYTE = {"array": 4e-9, "array-raw": 4e-9, "sps": 3e-9,
                  "single-obj": 4e-9, "multi-obj": 5e-9, "hashmap": 3e-9}
SETUP_BASE = {"single-obj": 0.02, "multi-obj": 0.02, "hashmap": 0.1,
              "txn": 0.12}


def estimate_cost(step):
    """Seconds one step should take: each runner is set up once (region
    creation, data fill), then at each point warms up for a quarter of a
    round and runs `seconds`; plus the process start."""
    per_point = step.seconds * (1 + 0.25 / max(step.rounds, 1))
    data = data_bytes(step.workload, step.params)
    setup = SETUP_BASE.get(step.workload, 0.06) + \
        data * SETUP_PER_BYTE.get(step.workload, 0.0)
    return 0.05 + step.runners * (setup + step.npoints * per_point)


def count_runners(workload, systems, cfgs):
    """How many runners pmtx-bench sets up for these systems on cfgs."""
    pmtx = [s for s in systems if s.startswith("pmtx-")]
    floors = [s for s in systems if s in FLOORS]
    n = len(pmtx) * len(cfgs) + (len(floors) if HW in cfgs else 0)
    if workload == "txn" and len(cfgs) == len(CONFIGS):
        n += 2 * len(pmtx)  # txn also runs hardware PDOM-0 and PDOM-2
    return max(n, 1)


def mem_runners(workload, systems, cfgs):
    """Runners a step's memory estimate counts: a twin runner's region
    holds its data twice (the back copy), so it counts as two (txn's
    regions are the same size for every system)."""
    n = count_runners(workload, systems, cfgs)
    if workload != "txn":
        n += len([s for s in systems if s in TWIN_SYSTEMS]) * len(cfgs)
    return n


def mem_budget(pool_dir="/dev/shm"):
    """Bytes the pools of one step may take: half the available memory
    (pools in /dev/shm are RAM), and no more than 80 % of the free space
    of the pool directory."""
    budget = 4 << 30
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    budget = int(line.split()[1]) * 1024 // 2
    except OSError:
        pass
    try:
        st = os.statvfs(pool_dir)
        budget = min(budget, int(st.f_bavail * st.f_frsize * 0.8))
    except OSError:
        pass
    return budget


SLACK = 64 << 20  # region bytes beyond the data (logs), per runner


def mem_need(workload, point, runners):
    """Bytes of pools a step sets up: per runner, the data 1.5 times over
    (heap, COW's private copies; at least 48 bytes per array slot for
    COW's object headers and wrappers) plus the log slack."""
    data = data_bytes(workload, point)
    if workload in ("array", "array-raw"):
        data = max(data, int(point.get("slots", 0)) * 48)
    return runners * (1.5 * data + SLACK)


def cap_point(workload, point, runners, budget, notes):
    """Shrink an array point's slot count to fit the memory budget."""
    if workload not in ("array", "array-raw"):
        return point
    need = mem_need(workload, point, runners)
    if need <= budget:
        return point
    per_slot = (need - runners * SLACK) / point["slots"]
    slots = int((budget - runners * SLACK) / per_slot) // 100000 * 100000
    slots = max(slots, 100000)
    notes.add(f"{workload}: slot={point['slot']}: slots capped from "
              f"{point['slots']} to {slots} (memory)")
    return dict(point, slots=slots)


def expand(spec, inner=()):
    """The steps' parameter points of a spec {name: [values]}, in order:
    every combination of the outer parameters, each inner one whole."""
    names = [n for n in spec if n not in inner]
    for vals in itertools.product(*(spec[n] for n in names)):
        point = dict(zip(names, vals))
        point.update({n: list(spec[n]) for n in spec if n in inner})
        yield {n: point[n] for n in spec}


def pick_systems(workload, wanted):
    """The systems of a workload that --systems selects (None: all)."""
    known = SYSTEMS.get(workload, PMTX + FLOORS)
    return list(known) if not wanted else [s for s in known if s in wanted]


def config_groups(workload, cfgs, point, systems, budget):
    """Run all configurations in one invocation (interleaved, the best
    comparison) unless memory requires one invocation per config."""
    if len(cfgs) == len(CONFIGS):
        n = mem_runners(workload, systems, cfgs)
        if mem_need(workload, point, n) <= budget:
            return [None]
    return list(cfgs)


def plan(mode, workloads, systems_wanted, cfgs, seconds, rounds, notes,
         pool_dir="/dev/shm"):
    """The list of steps of a run."""
    spec = MODES[mode]
    run = spec["_run"]
    seconds = seconds or run["seconds"]
    rounds = rounds or run["rounds"]
    cfgs = [c for c in cfgs if c in (run.get("configs") or CONFIGS)]
    budget = mem_budget(pool_dir)
    steps = []
    for w in workloads:
        systems = pick_systems(w, systems_wanted)
        if systems and cfgs:
            steps += workload_steps(w, spec[w], systems, systems_wanted,
                                    cfgs, (seconds, rounds, budget), notes)
    return steps


def workload_steps(w, wspec, systems, systems_wanted, cfgs, how, notes):
    """The steps of one workload: each point, on all configs at once when
    it fits in memory, else on one config per step."""
    seconds, rounds, budget = how
    sysarg = systems if systems_wanted else None
    steps = []
    for point in expand(wspec, INNER.get(w, ())):
        groups = config_groups(w, cfgs, point, systems, budget)
        if not any(s.startswith("pmtx-") for s in systems):
            groups = [g for g in groups if g in (None, HW)]
        counts = [count_runners(w, systems, cfgs if g is None else [g])
                  for g in groups]
        mems = [mem_runners(w, systems, cfgs if g is None else [g])
                for g in groups]
        # One cap for every config of a point, so that they compare.
        p = cap_point(w, point, max(mems, default=1), budget, notes)
        steps += [Step(w, p, sysarg, g, seconds, rounds, n)
                  for g, n in zip(groups, counts)]
    return steps


# ---- the containers: pmtx-bench set and pmtx-bench containers ----

CONT_WORKLOADS = ["containers"]
# The two invocations' parameters at full size (--p; a list is a sweep in
# one run): the default and full modes' (full measures longer).
CONT_FULL_SIZE = {
    "set": {"keys": 1000000, "update_pct": [100, 10, 1], "split": 20000},
    "containers": {"entries": 1000000, "cost_entries": 100000,
                   "ops": 10000},
}
# Per mode: the measurement of each set ratio (seconds, rounds) and the
# two invocations' parameters.
CONTAINERS = {
    "smoke": {"_run": {"seconds": 0.02, "rounds": 1},
              "set": {"keys": 2000, "update_pct": [100, 1], "split": 200},
              "containers": {"entries": 2000, "cost_entries": 500,
                             "ops": 200}},
    "quick": {"_run": {"seconds": 0.5, "rounds": 3},
              "set": {"keys": 100000, "update_pct": [100, 10, 1],
                      "split": 5000},
              "containers": {"entries": 100000, "cost_entries": 20000,
                             "ops": 2000}},
    "default": {"_run": {"seconds": 1.0, "rounds": 5}, **CONT_FULL_SIZE},
    "full": {"_run": {"seconds": 3.0, "rounds": 5}, **CONT_FULL_SIZE},
}
SET_RUNNERS = 12  # pmtx's two maps under five runtimes, PMDK's two
COST_LINES = 3 + 5 * 9  # memory: 3 containers; cost: 9 ops x 5 runtimes
# Measured on the 2-core development VM: seconds per key of a set
# runner's prefill (pmtx's about 1 us, PMDK's B-tree about 3) and to
# make a runner's region or pool; per entry of the containers workload's
# fills and operations, and its regions.
SET_FILL_S = 2e-6
SET_RUNNER_S = 0.08
CONT_ENTRY_S = 8e-6
CONT_BASE_S = 0.5


class ContStep(Step):
    """One pmtx-bench invocation of the containers' stage (set or
    containers): its lines go to containers.jsonl."""

    def __init__(self, workload, params, run, est, lines):
        Step.__init__(self, workload, params, None, None, run["seconds"],
                      run["rounds"], 1)
        self.est, self.expected_lines = est, lines
        self.out_name = "containers.jsonl"


def cont_steps(mode):
    """The set benchmark, then the containers' memory and costs."""
    spec = CONTAINERS[mode]
    run, st, ct = spec["_run"], spec["set"], spec["containers"]
    ratios = len(st["update_pct"])
    set_est = SET_RUNNERS * (SET_RUNNER_S + st["keys"] * SET_FILL_S +
                             2 * st["split"] * SET_FILL_S +
                             ratios * run["seconds"] *
                             (1 + 0.25 / run["rounds"]))
    cont_est = CONT_BASE_S + CONT_ENTRY_S * (3 * ct["entries"] + 5 * (
        2 * ct["cost_entries"] + 9 * ct["ops"]))
    return [ContStep("set", st, run, set_est, SET_RUNNERS * ratios),
            ContStep("containers", ct, run, cont_est, COST_LINES)]


# ---- the applications: pmcached's benchmark scripts ----

APP_WORKLOADS = ["pmcached", "sqlite", "pmkv", "whisper"]
PMC_BENCH_DIR = os.path.join(ROOT, "apps", "pmcached", "bench")
WARMUP_CASES = ["memcached-graceful", "memcached-kill9",
                "pmcached-undo-kill9", "pmcached-redo-kill9",
                "pmcached-redo-async-kill9"]

# Per mode: ycsb.py's options (the ones not given are its own defaults,
# --quick's or the default mode's) and warmup.py's.
PMCACHED = {
    "smoke": {"ycsb": {"quick": True, "rounds": 1,
                       "variants": ["memcached", "pmcached-redo"],
                       "records": 500, "ops": 2000, "seconds": 0.2},
              "warmup": {"items": [1000], "repeat": 1,
                         "cases": ["memcached-kill9",
                                   "pmcached-redo-kill9"]}},
    "quick": {"ycsb": {"quick": True},
              "warmup": {"items": [100000], "repeat": 3,
                         "cases": WARMUP_CASES}},
    "default": {"ycsb": {"quick": True, "ops": 300000, "seconds": 3},
                "warmup": {"items": [100000, 1000000], "repeat": 3,
                           "cases": WARMUP_CASES}},
    "full": {"ycsb": {},
             "warmup": {"items": [100000, 1000000, 10000000], "repeat": 3,
                        "cases": WARMUP_CASES}},
}


def bench_tool(name):
    """pmcached's bench script `name` as a module (ycsb, warmup), for its
    defaults and variants."""
    if PMC_BENCH_DIR not in sys.path:
        sys.path.insert(0, PMC_BENCH_DIR)
    return importlib.import_module(name)


def app_binaries(bench):
    """The binaries the pmcached stage runs: pmcached and mcload from the
    build tree of pmtx-bench (<build>/bench/pmtx-bench), memcached from
    PATH."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(bench)))
    return {"pmcached": os.path.join(build, "apps", "pmcached", "pmcached"),
            "mcload": os.path.join(build, "apps", "pmcached", "bench",
                                   "mcload"),
            "memcached": shutil.which("memcached") or "/usr/bin/memcached"}


def option_args(opts):
    """{name: value} as command-line options: True is a bare flag, a
    list is comma-separated."""
    a = []
    for k, v in opts.items():
        flag = "--" + k.replace("_", "-")
        if v is True:
            a.append(flag)
        elif isinstance(v, list):
            a += [flag, ",".join(map(str, v))]
        else:
            a += [flag, f"{v:g}" if isinstance(v, float) else str(v)]
    return a


class AppStep:
    """One run of an application's benchmark script (ycsb.py, or
    warmup.py for one item count). Its JSON lines go to <workload>.jsonl;
    the interface is Step's, for the progress and the run log."""

    def __init__(self, workload, tool, opts, est, expected_lines, what):
        self.workload, self.tool, self.opts = workload, tool, opts
        self.out_name = workload + ".jsonl"
        self.est, self.expected_lines, self.what = est, expected_lines, what
        self.cfg = None
        self.actual = None
        self.rc = None
        self.lines = 0

    def label(self):
        return f"{self.workload} {self.tool} {self.what}"

    def argv(self, bench, _pool_dir):
        bins = app_binaries(bench)
        a = [sys.executable, os.path.join(PMC_BENCH_DIR, self.tool + ".py")]
        a += option_args(self.opts)
        a += ["--pmcached", bins["pmcached"], "--memcached",
              bins["memcached"]]
        return a + (["--mcload", bins["mcload"]] if self.tool == "ycsb"
                    else [])

    def annotate(self, obj, meta):
        """The run's metadata, where the tool did not print the field."""
        for k, v in meta.items():
            obj.setdefault(k, v)

    def stop(self, proc, _pool_dir):
        """Interrupted: let the script stop its servers and remove its
        regions (it does so on SIGINT and SIGTERM); SIGKILL is the last
        resort."""
        for signo, wait in ((None, 2), (signal.SIGTERM, 30),
                            (signal.SIGKILL, 10)):
            if signo:
                proc.send_signal(signo)
            try:
                proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                pass


# Measured on the 2-core development VM: loads of 1 KiB values (mcload,
# pipelined) and warm-up fills (noreply sets), per second.
YCSB_LOAD_RATE = {"hardware": 80e3, "file": 650.0}
YCSB_OPS_RATE = 90e3
FILL_RATE = {"memcached": 450e3, "pmcached": 100e3}


def ycsb_sizes(opts):
    """ycsb.py's effective records, ops, seconds, rounds, variants and
    workloads for these options."""
    ycsb = bench_tool("ycsb")
    sizes = dict(ycsb.QUICK if opts.get("quick") else ycsb.DEFAULT)
    sizes.update(rounds=3, variants=list(ycsb.VARIANTS),
                 workloads=list(ycsb.WORKLOADS))
    sizes.update({k: v for k, v in opts.items() if k in sizes})
    return sizes


def ycsb_cost(sz):
    """Seconds ycsb.py takes: per round and variant, a server start and
    stop, the load, and each workload (ops at YCSB_OPS_RATE, at most
    `seconds`; the file variant always runs into `seconds` on A, B, F)."""
    ycsb = bench_tool("ycsb")
    fast = min(sz["seconds"], sz["ops"] / YCSB_OPS_RATE)
    per_round = 0.0
    for v in sz["variants"]:
        file = ycsb.VARIANTS[v][3] == "file"
        load = sz["records"] / YCSB_LOAD_RATE["file" if file else
                                              "hardware"]
        runs = sum(sz["seconds"] if file and w != "c" else fast
                   for w in sz["workloads"])
        per_round += 0.3 + load + runs
    return sz["rounds"] * per_round


def warmup_cost(items, repeat, cases):
    """Seconds warmup.py takes for one item count: per case a start, the
    fill (before every restart for memcached-kill9), and each restart (a
    graceful one waits warmup.RESTART_GAP; the restore reads the items)."""
    gap = bench_tool("warmup").RESTART_GAP
    t = 0.0
    for c in cases:
        server = "memcached" if c.startswith("memcached") else "pmcached"
        fills = repeat if c == "memcached-kill9" else 1
        restart = gap + 0.05 if c.endswith("-graceful") else 0.05
        t += 0.5 + fills * items / FILL_RATE[server] + \
            repeat * (restart + items * 2.5e-7)
    return t


def app_steps(mode):
    """pmcached's steps: ycsb.py, then warmup.py per item count."""
    spec = PMCACHED[mode]
    sz = ycsb_sizes(spec["ycsb"])
    nv, nw = len(sz["variants"]), len(sz["workloads"])
    steps = [AppStep("pmcached", "ycsb", spec["ycsb"], ycsb_cost(sz),
                     sz["rounds"] * nv * (1 + nw) + nv * nw,
                     f"records={sz['records']}")]
    w = spec["warmup"]
    for n in w["items"]:
        opts = {"items": [n], "repeat": w["repeat"], "cases": w["cases"]}
        steps.append(AppStep("pmcached", "warmup", opts,
                             warmup_cost(n, w["repeat"], w["cases"]),
                             len(w["cases"]) * (w["repeat"] + 1),
                             f"items={n}"))
    return steps


# ---- the applications: pmtx-sqlite's benchmark (sqlbench.py) ----

SQL_BENCH = os.path.join(ROOT, "apps", "sqlite", "bench", "sqlbench.py")
HERE_BENCH_SQL = os.path.dirname(SQL_BENCH)
# Per mode: sqlbench.py's options. --quick's sizes are its own QUICK.
SQLITE = {
    "smoke": {"quick": True, "rounds": 1, "seconds": 0.5, "scale": 0.02,
              "size": 5, "configs": ["memory", "pmtx-redo-pdom1",
                                     "wal-full-shm"]},
    "quick": {"quick": True},
    "default": {},
    "full": {"seconds": 10.0, "warehouses": [1, 4], "size": 100},
}
# Measured on the 2-core development VM: copying a TPC-C database of one
# warehouse into a configuration (per unit of scale), and speedtest1's
# run time per unit of --size on the slowest configuration.
SQL_COPY_S = 2.0
SQL_ST1_S = 0.1


def sqlbench_sizes(opts):
    """sqlbench.py's effective sizes for these options."""
    if HERE_BENCH_SQL not in sys.path:
        sys.path.insert(0, HERE_BENCH_SQL)
    sb = importlib.import_module("sqlbench")
    sz = dict(sb.QUICK if opts.get("quick") else sb.DEFAULT)
    sz["configs"] = list(sb.CONFIGS)
    sz.update({k: v for k, v in opts.items() if k in sz})
    return sz


class SqlStep(AppStep):
    """sqlbench.py: TPC-C and speedtest1 over every SQLite configuration."""

    def argv(self, bench, _pool_dir):
        build = os.path.dirname(os.path.dirname(os.path.abspath(bench)))
        sq = os.path.join(build, "apps", "sqlite")
        return [sys.executable, SQL_BENCH] + option_args(self.opts) + [
            "--tpcc", os.path.join(sq, "bench", "psq-tpcc"),
            "--speedtest1", os.path.join(sq, "psq-speedtest1")]


def sql_steps(mode):
    opts = SQLITE[mode]
    sz = sqlbench_sizes(opts)
    n = len(sz["configs"]) * sz["rounds"]
    w = sz["warehouses"]
    est = sum(20 * sz["scale"] * x for x in w) + n * (
        sum(sz["seconds"] + SQL_COPY_S * sz["scale"] * x for x in w) +
        SQL_ST1_S * sz["size"])
    return [SqlStep("sqlite", "sqlbench", opts, est, n * (len(w) + 1),
                    f"warehouses={','.join(map(str, w))} "
                    f"scale={sz['scale']:g}")]


# ---- the applications: pmkv's benchmark (kvbench.py) ----

KV_BENCH = os.path.join(ROOT, "apps", "pmkv", "bench", "kvbench.py")
# Per mode: kvbench.py's options.
PMKV = {
    "smoke": {"quick": True, "populate": 5000, "seconds": 0.3,
              "clients": "1", "mixes": "90", "runtimes": "redo",
              "domains": "pdom1", "requests": 1000,
              "configs": "pmkv-shm,redis-off", "no_fig7_redis": True},
    "quick": {"quick": True, "domains": "pdom1"},
    "default": {},
    "full": {"rounds": 5},
}


def script_module(name, path):
    """A script of the project (an application's bench, whisper.py) as a
    module, for its tables and modes."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kvbench_module():
    """kvbench.py as a module (its VERSION_RUNTIMES)."""
    return script_module("kvbench", KV_BENCH)


class KvStep(AppStep):
    """kvbench.py all: Figure 7, the store in one process, then pmkv
    beside Redis."""

    def argv(self, bench, _pool_dir):
        build = os.path.dirname(os.path.dirname(os.path.abspath(bench)))
        return [sys.executable, KV_BENCH, "all"] + option_args(
            self.opts) + ["--build", build]


def kv_steps(mode):
    o = PMKV[mode]
    q = o.get("quick")
    n = lambda k, d: len(str(o.get(k, d)).split(","))  # noqa: E731
    points = (n("clients", "1,4" if q else "1,2,4") *
              n("mixes", "90,10" if q else "90,50,10"))
    rts = str(o.get("runtimes", "undo,redo,redo-async,cow")).split(",")
    vrt = kvbench_module().VERSION_RUNTIMES
    pmkvs = n("domains", "pdom2,pdom1") * sum(
        rt in vrt[v] for v in str(o.get("versions", "opt,wrapped"))
        .split(",") for rt in rts)
    servers = pmkvs + (0 if o.get("no_fig7_redis") else 1)
    seconds = o.get("seconds", 1.0 if q else 3.0)
    populate = o.get("populate", 100000 if q else 1000000)
    configs = (n("configs", "") if o.get("configs")
               else len(kvbench_module().CONFIGS))
    rounds = 1 if q else o.get("rounds", 3)
    requests = o.get("requests", 20000 if q else 200000)
    est = servers * (populate / 300e3 + points * seconds) + \
        pmkvs * (populate / 500e3 + points * seconds) + \
        rounds * configs * 2 * (2 * requests / 40e3 + 0.5)
    lines = (servers + pmkvs) * points + rounds * configs * 2
    return [KvStep("pmkv", "kvbench", o, est, lines,
                   f"{servers} servers and {pmkvs} stores x {points} "
                   "points, "
                   f"{rounds} round(s) beside Redis")]


# ---- the WHISPER stage: scripts/whisper.py ----

WHISPER_PY = os.path.join(ROOT, "scripts", "whisper.py")
# Per mode: whisper.py's options (the default mode is its own default).
WHISPER = {"smoke": {"smoke": True}, "quick": {"quick": True},
           "default": {}, "full": {}}
# Measured on the 2-core development VM: seconds per traced run beyond
# its own length (start, set-up, writing and analysing the trace), and
# for pmtx-bench costs.
WHISPER_RUN_S = {"runtime": 0.4, "app": 1.5}
WHISPER_COSTS_S = 6.0
WHISPER_COSTS_LINES = 17  # pmtx-bench costs' lines


def whisper_module():
    """scripts/whisper.py as a module (its targets and modes)."""
    return script_module("whisper", WHISPER_PY)


class WhisperStep(AppStep):
    """whisper.py: every traced run, its analyses, one line each."""

    def argv(self, bench, pool_dir):
        build = os.path.dirname(os.path.dirname(os.path.abspath(bench)))
        return [sys.executable, WHISPER_PY] + option_args(self.opts) + [
            "--build", build, "--tmp", pool_dir or "/dev/shm",
            "--no-report"]


def whisper_steps(mode):
    opts = WHISPER[mode]
    wm = whisper_module()
    wmode = "smoke" if opts.get("smoke") else \
        "quick" if opts.get("quick") else "default"
    m = wm.MODES[wmode]
    ts = wm.targets(wmode)
    est = WHISPER_COSTS_S + sum(
        WHISPER_RUN_S[t.kind] + (m["seconds"] if t.kind == "runtime" else
                                 m["app_seconds"] *
                                 wm.APP_SHARE.get(t.workload, 1.0))
        for t in ts)
    return [WhisperStep("whisper", "whisper", opts, est,
                        len(ts) + WHISPER_COSTS_LINES,
                        f"{len(ts)} traced runs ({wmode})")]


def missing_app_binaries(steps, bench):
    """The binaries the app steps need that are not there."""
    need = {}
    if any(s.workload == "pmcached" for s in steps):
        need.update(app_binaries(bench))
    if any(s.workload == "sqlite" for s in steps):
        build = os.path.dirname(os.path.dirname(os.path.abspath(bench)))
        need["psq-tpcc"] = os.path.join(build, "apps", "sqlite", "bench",
                                        "psq-tpcc")
    if any(s.workload == "pmkv" for s in steps):
        build = os.path.dirname(os.path.dirname(os.path.abspath(bench)))
        for b in ("pmkv", "pmkv-load", "pmkv-storebench"):
            need[b] = os.path.join(build, "apps", "pmkv", b)
        need["redis-server"] = shutil.which("redis-server") or \
            "redis-server (scripts/setup.sh)"
    if any(s.workload == "whisper" for s in steps):
        build = os.path.dirname(os.path.dirname(os.path.abspath(bench)))
        need["pmtx"] = os.path.join(build, "tools", "pmtx")
    return [f"{name} at {path}" for name, path in need.items()
            if not os.access(path, os.X_OK)]


# ---- metadata ----

def cpu_model():
    """The CPU's model name from /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def bench_info(bench):
    """pmtx-bench --info: flush instruction and pmtx version."""
    out = subprocess.run([bench, "--info"], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def run_metadata(bench, mode, run_id):
    """The fields added to every result line."""
    info = bench_info(bench)
    return {
        "run": run_id,
        "mode": mode,
        "date": datetime.datetime.now().astimezone().isoformat(
            timespec="seconds"),
        "cpu_model": cpu_model(),
        "host_cores": os.cpu_count(),
        "flush_instruction": info.get("flush_instruction"),
        "pmtx_version": info.get("pmtx_version"),
    }


# ---- progress ----

def fmt_time(s):
    """Seconds as m:ss or h:mm:ss."""
    s = int(max(s, 0) + 0.5)
    h, m = s // 3600, s // 60 % 60
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"


class Progress:
    """A progress bar with an ETA on stderr, corrected by measured rates:
    each workload's estimate is scaled by actual/estimated time of its
    finished steps (or of all finished steps, before it has any)."""

    PRIOR = 5.0  # seconds of estimate assumed exact, to damp early noise

    def __init__(self, steps, stream=sys.stderr, period=None):
        self.steps, self.stream = steps, stream
        self.tty = stream.isatty()
        self.period = period or (0.5 if self.tty else 30.0)
        self.t0 = time.monotonic()
        self.cur, self.cur_t0 = None, None
        self.last_line = 0.0
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.thread = threading.Thread(target=self._tick, daemon=True)

    def factor(self, workload=None):
        done = [s for s in self.steps if s.actual is not None and
                (workload is None or s.workload == workload)]
        if workload is not None and not done:
            return self.factor()
        est = sum(s.est for s in done)
        act = sum(s.actual for s in done)
        return (act + self.PRIOR) / (est + self.PRIOR)

    def remaining(self):
        """Estimated seconds left: pending steps, scaled, plus what is
        left of the running one."""
        left = sum(s.est * self.factor(s.workload) for s in self.steps
                   if s.actual is None and s is not self.cur)
        if self.cur is not None:
            left += self.current_left()
        return left

    def current_left(self):
        """What is left of the running step: its scaled estimate less the
        time spent, but no less than the share of its result lines still
        to come (a step that overruns its estimate)."""
        s = self.cur
        est = s.est * self.factor(s.workload)
        run = time.monotonic() - self.cur_t0
        done = min(s.lines / s.expected_lines, 1.0) if s.expected_lines \
            else 0.0
        by_lines = run / done - run if done > 0 else est * 0.1
        return max(est - run, min(by_lines, est * (1 - done)), 0.0)

    def status(self):
        """(fraction done, elapsed, eta, steps done, text)."""
        elapsed = time.monotonic() - self.t0
        eta = self.remaining()
        frac = elapsed / (elapsed + eta) if elapsed + eta > 0 else 1.0
        ndone = sum(s.actual is not None for s in self.steps)
        what = self.cur.label() if self.cur else ""
        return frac, elapsed, eta, ndone, what

    def render(self, final=False):
        """The bar, redrawn in place (terminal only)."""
        frac, elapsed, eta, ndone, what = self.status()
        width = shutil.get_terminal_size((100, 20)).columns
        bar_w = 24
        fill = int(frac * bar_w)
        bar = "=" * fill + (">" if fill < bar_w else "") + \
            " " * max(bar_w - fill - 1, 0)
        text = (f"eval [{bar}] {frac * 100:3.0f}% {ndone}/{len(self.steps)}"
                f" {fmt_time(elapsed)} elapsed, ETA {fmt_time(eta)}  {what}")
        self.stream.write("\r" + text[:width - 1].ljust(width - 1) +
                          ("\n" if final else ""))
        self.stream.flush()

    def line(self, what):
        """One progress line (not a terminal): counts, ETA, and what."""
        frac, elapsed, eta, ndone, _ = self.status()
        self.stream.write(f"eval: [{ndone}/{len(self.steps)}] "
                          f"{frac * 100:3.0f}%, {fmt_time(elapsed)} elapsed, "
                          f"ETA {fmt_time(eta)}: {what}\n")
        self.stream.flush()
        self.last_line = time.monotonic()

    def _tick(self):
        while not self.stop_ev.wait(min(self.period, 1.0)):
            with self.lock:
                if self.tty:
                    self.render()
                elif self.cur is not None and \
                        time.monotonic() - self.last_line >= self.period:
                    run = time.monotonic() - self.cur_t0
                    self.line(f"running {self.cur.label()} "
                              f"({fmt_time(run)})")

    def start(self):
        with self.lock:
            if self.tty:
                self.render()
            else:
                self.line("starting")
        self.thread.start()

    def begin(self, step):
        with self.lock:
            self.cur, self.cur_t0 = step, time.monotonic()
            if self.tty:
                self.render()

    def end(self, step):
        with self.lock:
            step.actual = time.monotonic() - self.cur_t0
            self.cur = None
            what = (f"{step.label()}: {step.lines} lines in "
                    f"{step.actual:.1f} s (est. {step.est:.1f} s)" +
                    (f", FAILED (exit {step.rc})" if step.rc else ""))
            if self.tty:
                if step.rc:
                    self.note(what)
                self.render()
            else:
                self.line(what)

    def note(self, msg):
        """A message line that does not break the bar."""
        if self.tty:
            self.stream.write("\r\033[K")
        self.stream.write(msg + "\n")
        self.stream.flush()

    def finish(self):
        self.stop_ev.set()
        self.thread.join(timeout=2)
        if self.tty:
            with self.lock:
                self.render(final=True)


# ---- running ----

def remove_pools(pool_dir, pid):
    """Delete pool files an interrupted pmtx-bench left behind."""
    for p in glob.glob(os.path.join(pool_dir, f"pmtx-bench-{pid}-*")):
        try:
            os.unlink(p)
        except OSError:
            pass


def run_step(step, bench, pool_dir, meta, out, log):
    """Run one step; append its JSON lines (with meta) to out and its
    stderr to log. Sets step.rc and step.lines."""
    argv = step.argv(bench, pool_dir)
    log.write(f"== {step.label()}\n$ {' '.join(argv)}\n")
    log.flush()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log,
                            text=True)
    log.write(f"pid {proc.pid}\n")
    log.flush()
    try:
        for line in proc.stdout:
            record_line(line, step, meta, out, log)
        step.rc = proc.wait()
    except BaseException:
        step.stop(proc, pool_dir)
        raise
    log.write(f"== exit {step.rc}\n")
    log.flush()


def record_line(line, step, meta, out, log):
    """One line of a step's stdout: a result, or noise for the log."""
    line = line.strip()
    if not line:
        return
    try:
        obj = json.loads(line)
    except ValueError:
        log.write(f"stdout: {line}\n")
        return
    if not isinstance(obj, dict):
        log.write(f"stdout: {line}\n")
        return
    step.annotate(obj, meta)
    out.write(json.dumps(obj, sort_keys=False) + "\n")
    out.flush()
    step.lines += 1


def run_all(steps, bench, pool_dir, meta, out_dir):
    """Run every step with progress; returns the failed steps. Each step's
    lines go to its out_name (results.jsonl, pmcached.jsonl, ...)."""
    prog = Progress(steps)
    prog.start()
    failed = []
    names = ["results.jsonl"] + sorted({s.out_name for s in steps})
    outs = {n: open(os.path.join(out_dir, n), "a") for n in names}
    try:
        with open(os.path.join(out_dir, "bench.log"), "a") as log:
            for s in steps:
                prog.begin(s)
                run_step(s, bench, pool_dir, meta, outs[s.out_name], log)
                if s.rc:
                    failed.append(s)
                prog.end(s)
    finally:
        prog.finish()
        for f in outs.values():
            f.close()
    return failed


# ---- arguments and the run directory ----

def parse_list(text):
    return [x.strip() for x in text.split(",") if x.strip()] if text else []


def parse_configs(text):
    """--domains: labels and shortcuts to config labels, in order."""
    if not text:
        return list(CONFIGS)
    chosen = set()
    for tok in parse_list(text):
        if tok in CONFIGS:
            chosen.add(tok)
        elif tok in CONFIG_ALIASES:
            chosen.update(CONFIG_ALIASES[tok])
        else:
            raise SystemExit(f"eval: unknown domain configuration {tok!r}; "
                             f"known: {', '.join(CONFIGS)}, "
                             f"{', '.join(CONFIG_ALIASES)}")
    return [c for c in CONFIGS if c in chosen]


def default_bench():
    """$PMTX_BENCH, else build/bench/pmtx-bench in the source tree."""
    return os.environ.get("PMTX_BENCH") or \
        os.path.join(ROOT, "build", "bench", "pmtx-bench")


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Run pmtx-bench's workloads and write a report.")
    m = ap.add_mutually_exclusive_group()
    for name in ("smoke", "quick", "full"):
        m.add_argument(f"--{name}", dest="mode", action="store_const",
                       const=name)
    ap.add_argument("--workloads", help="comma-separated subset")
    ap.add_argument("--systems", help="comma-separated subset")
    ap.add_argument("--domains", help="configs: pdom1-hw,pdom0-emu,...")
    ap.add_argument("--out", help="run directory (results/<timestamp>)")
    ap.add_argument("--bench", default=default_bench(),
                    help="pmtx-bench binary")
    ap.add_argument("--seconds", type=float,
                    help="per measurement (overrides the mode's)")
    ap.add_argument("--rounds", type=int, help="overrides the mode's")
    ap.add_argument("--dir", default="/dev/shm",
                    help="where pools go (default /dev/shm)")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the steps and the estimate, run nothing")
    ap.add_argument("--no-apps", action="store_true",
                    help="leave out the applications' benchmarks "
                    "(pmcached, sqlite, pmkv, whisper)")
    ap.add_argument("--no-report", action="store_true")
    a = ap.parse_args(argv)
    a.mode = a.mode or "default"
    return a


def check_workloads(names, mode):
    """--workloads, checked against what the modes know."""
    if not names:
        return mode_workloads(mode)
    known = WORKLOADS + EXTRA_WORKLOADS + CONT_WORKLOADS + APP_WORKLOADS
    bad = [w for w in names if w not in known]
    if bad:
        raise SystemExit(f"eval: unknown workload(s) {', '.join(bad)}; "
                         f"known: {', '.join(known)}")
    return names


def make_out_dir(out):
    """The run directory; a fresh results/<timestamp> by default, and
    results/latest pointing at it when it is under results/."""
    results = os.path.join(ROOT, "results")
    if not out:
        stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H-%M-%S")
        out = os.path.join(results, stamp)
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    if os.path.dirname(out) == results:
        link = os.path.join(results, "latest")
        if os.path.islink(link) or not os.path.exists(link):
            tmp = link + ".tmp"
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(os.path.basename(out), tmp)
            os.replace(tmp, link)
    return out


def print_plan(steps, notes, stream=sys.stderr):
    est = sum(s.est for s in steps)
    by_w = {}
    for s in steps:
        n, e = by_w.get(s.workload, (0, 0.0))
        by_w[s.workload] = (n + 1, e + s.est)
    stream.write(f"eval: {len(steps)} steps, estimated {fmt_time(est)}\n")
    for w, (n, e) in by_w.items():
        stream.write(f"  {w:11s} {n:4d} steps  ~{fmt_time(e)}\n")
    for n in sorted(notes):
        stream.write(f"  note: {n}\n")


def write_meta(out_dir, meta, args, steps, notes, failed, wall):
    doc = dict(meta)
    doc.update({
        "argv": sys.argv,
        "bench": os.path.abspath(args.bench),
        "apps": app_binaries(args.bench) if any(
            s.workload == "pmcached" for s in steps) else {},
        "wall_s": round(wall, 1),
        "notes": sorted(notes),
        "steps": [{"label": s.label(), "est_s": round(s.est, 2),
                   "actual_s": None if s.actual is None else
                   round(s.actual, 2), "exit": s.rc, "lines": s.lines}
                  for s in steps],
        "failed": [s.label() for s in failed],
    })
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def build_steps(args, notes):
    """pmtx-bench's steps, then the applications'."""
    workloads = check_workloads(parse_list(args.workloads), args.mode)
    if args.no_apps:
        workloads = [w for w in workloads if w not in APP_WORKLOADS]
    cfgs = parse_configs(args.domains)
    wanted = parse_list(args.systems) or None
    steps = plan(args.mode, [w for w in workloads
                             if w not in APP_WORKLOADS + CONT_WORKLOADS],
                 wanted, cfgs, args.seconds, args.rounds, notes, args.dir)
    if "containers" in workloads:
        steps += cont_steps(args.mode)
    if "pmcached" in workloads:
        steps += app_steps(args.mode)
    if "sqlite" in workloads:
        steps += sql_steps(args.mode)
    if "pmkv" in workloads:
        steps += kv_steps(args.mode)
    if "whisper" in workloads:
        steps += whisper_steps(args.mode)
    return steps


def on_sigterm(_signum, _frame):
    """SIGTERM ends a run as Ctrl-C does: kill the step, clean up, report."""
    raise KeyboardInterrupt


def main(argv=None):
    signal.signal(signal.SIGTERM, on_sigterm)
    args = parse_args(argv)
    if not args.no_report and not args.dry_run:
        report.ensure_matplotlib()
    notes = set()
    steps = build_steps(args, notes)
    if not steps:
        sys.stderr.write("eval: nothing to run\n")
        return 2
    print_plan(steps, notes)
    if args.dry_run:
        for s in steps:
            print(f"{s.est:7.2f}s  {' '.join(s.argv(args.bench, args.dir))}")
        return 0
    if not os.access(args.bench, os.X_OK):
        sys.stderr.write(f"eval: no pmtx-bench at {args.bench} "
                         "(build it: scripts/build.sh build)\n")
        return 2
    missing = missing_app_binaries(steps, args.bench)
    if missing:
        sys.stderr.write(f"eval: no {', no '.join(missing)} (build: "
                         "scripts/build.sh build; memcached: "
                         "scripts/setup.sh; or run with --no-apps)\n")
        return 2
    out_dir = make_out_dir(args.out)
    meta = run_metadata(args.bench, args.mode, os.path.basename(out_dir))
    sys.stderr.write(f"eval: writing {out_dir}\n")
    t0 = time.monotonic()
    failed, rc = [], 0
    try:
        failed = run_all(steps, args.bench, args.dir, meta, out_dir)
    except KeyboardInterrupt:
        sys.stderr.write("\neval: interrupted; reporting what was run\n")
        rc = 130
    write_meta(out_dir, meta, args, steps, notes, failed,
               time.monotonic() - t0)
    for s in failed:
        sys.stderr.write(f"eval: FAILED: {s.label()} (exit {s.rc}; "
                         f"see bench.log)\n")
    if not args.no_report:
        path = report.make_report(out_dir)
        sys.stderr.write(f"eval: report: {path}\n")
    sys.stderr.write(f"eval: done in {fmt_time(time.monotonic() - t0)}\n")
    return rc or (1 if failed else 0)


if __name__ == "__main__":
    sys.exit(main())
