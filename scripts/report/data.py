# SPDX-License-Identifier: BSD-3-Clause
"""The library workloads' measurements (pmtx-bench's lines in
results.jsonl): the systems and configurations in report order, loading,
the index by workload, configuration, point and system, and the metrics
the summary, targets, observations, claims and plots compute from it."""
import json
import os
from collections import OrderedDict, defaultdict

# ---- systems and configurations ----

CONFIG_ORDER = [("pdom1", "hardware"), ("pdom0", "emulated"),
                ("pdom1", "emulated"), ("pdom2", "emulated")]
HW = ("pdom1", "hardware")
SYSTEM_ORDER = ["pmtx-undo", "pmtx-redo", "pmtx-redo-async", "pmtx-cow",
                "pmtx-twin", "pmtx-auto", "pmtx-cltx", "pmtx-undo-eager",
                "pmdk", "plain"]
# Baselines that are not pmtx runtimes a user would pick.
NOT_RUNTIMES = {"pmtx-undo-eager"}


def config_label(cfg):
    d, b = cfg
    return f"{d.upper().replace('PDOM', 'PDOM-')} {b}"


def config_key(cfg):
    return (CONFIG_ORDER.index(cfg) if cfg in CONFIG_ORDER else 99, cfg)


def system_key(s):
    return (SYSTEM_ORDER.index(s) if s in SYSTEM_ORDER else 50, s)


def short(system):
    return system[5:] if system.startswith("pmtx-") else system


# ---- loading ----

def load_rows(path):
    """The result objects of a results.jsonl (measurements with a
    configuration; raw rows such as `checksum` are skipped)."""
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("workload") and r.get("system") and r.get("domain") \
                    and r.get("ns_per_op"):
                rows.append(r)
    return rows


def load_meta(run_dir):
    try:
        with open(os.path.join(run_dir, "meta.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def cfg_of(r):
    return (r["domain"], r["backend"])


def pkey(params, drop=()):
    """A hashable key of a parameter point, without the names in drop."""
    return tuple(sorted((k, v) for k, v in params.items() if k not in drop))


class Data:
    """Rows indexed by workload -> config -> point -> system (the last
    row wins when a point was measured twice)."""

    def __init__(self, rows):
        self.rows = rows
        self.idx = defaultdict(lambda: defaultdict(dict))
        for r in rows:
            self.idx[r["workload"]][cfg_of(r)].setdefault(
                pkey(r["params"]), {})[r["system"]] = r

    def workloads(self):
        seen = OrderedDict()
        for r in self.rows:
            seen[r["workload"]] = True
        order = ["array", "array-raw", "alloc", "sps", "single-obj",
                 "multi-obj", "hashmap", "bbuf", "txn"]
        return sorted(seen, key=lambda w: (order.index(w) if w in order
                                           else 99, w))

    def configs(self, w):
        return sorted(self.idx[w], key=config_key)

    def points(self, w, cfg):
        """{point key: {system: row}} of a workload on a config."""
        return self.idx[w].get(cfg, {})

    def param_values(self, w):
        """{name: {value, ...}} of a workload's parameters."""
        vals = defaultdict(set)
        for r in self.rows:
            if r["workload"] == w:
                for k, v in r["params"].items():
                    vals[k].add(v)
        return vals

    def varying(self, w):
        """The parameters of a workload that take several values."""
        return {k for k, v in self.param_values(w).items() if len(v) > 1}

    def fixed(self, w):
        """{name: value} of the parameters held constant in a workload."""
        return {k: next(iter(v)) for k, v in self.param_values(w).items()
                if len(v) == 1}

    def show(self, w, p):
        """A point as text, by the parameters that vary."""
        keys = self.varying(w) or set(p)
        return ", ".join(f"{k}={v}" for k, v in sorted(p.items())
                         if k in keys)

    def systems(self, w):
        return sorted({r["system"] for r in self.rows if r["workload"] == w},
                      key=system_key)


# ---- metrics ----

def per_tx(r):
    """Transactions per op (bbuf runs several per op)."""
    return r.get("tx_per_op") or 1


def throughput(r, name):
    """A throughput field, derived when the workload did not print it."""
    if r.get(name) is not None:
        return r[name]
    p = r["params"]
    if name == "allocs_per_s":
        return r["ops_per_s"] * p.get("x", 1)
    if name == "swaps_per_s":
        return r["ops_per_s"] * p.get("k", 1)
    if name == "tx_per_s":
        return r["ops_per_s"] * per_tx(r)
    return r["ops_per_s"]


def best_pmtx(sysrows):
    """(system, row) of the fastest pmtx runtime at one point, or None."""
    cands = [(r["ns_per_op"], s) for s, r in sysrows.items()
             if s.startswith("pmtx-") and s not in NOT_RUNTIMES]
    if not cands:
        return None
    ns, s = min(cands)
    return s, sysrows[s]


def vs_pmdk(data, w, where=None):
    """[(point, best system, PMDK ns / best pmtx ns)] on PDOM-1 hardware,
    for the points where both ran (and where(params) holds)."""
    out = []
    for pk, sysrows in data.points(w, HW).items():
        if "pmdk" not in sysrows or (where and not where(dict(pk))):
            continue
        b = best_pmtx(sysrows)
        if b:
            out.append((dict(pk), b[0],
                        sysrows["pmdk"]["ns_per_op"] / b[1]["ns_per_op"]))
    return out


def ratio_of(sysrows, a, b):
    """ns(a) / ns(b) at one point (> 1: b is faster), or None."""
    if a in sysrows and b in sysrows:
        return sysrows[a]["ns_per_op"] / sysrows[b]["ns_per_op"]
    return None


def series(data, w, cfg, fixed, x, systems):
    """{x: {system: ns}} for the points matching fixed."""
    out = defaultdict(dict)
    for pk, sr in data.points(w, cfg).items():
        p = dict(pk)
        if all(p.get(k) == v for k, v in fixed.items()) and x in p:
            for s in systems:
                if s in sr:
                    out[p[x]][s] = sr[s]["ns_per_op"]
    return out
