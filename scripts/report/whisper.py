# SPDX-License-Identifier: BSD-3-Clause
"""The "WHISPER" section of the report (seed 002, sections 5-6), from the
lines of scripts/whisper.py: "whisper", one per traced (system,
workload) with `pmtx trace analyze --json` ("analyze") and `pmtx trace
hops --json` ("hops") of its trace; "whisper-costs", this machine's
`pmtx-bench costs` lines that hops was given.

    section(rows, plots, eval_mode) -> the section's markdown lines
    make_plots(rows, run_dir)       -> [(file name, caption)]
    write_report(run_dir, mode)     -> run_dir/report.md, from
                                       run_dir/whisper.jsonl

Every pmtx number comes from the JSON lines; the seed's numbers are a
fixed table quoted from its text, labelled as the paper's. A value the
lines do not have (no hops result, a tool without store kinds) is shown
as "missing", never as 0.
"""
import os
import statistics

from .common import (figure_lines, fmt_ns, load_jsonl, md_table, opening,
                     pyplot, save_figure)

JSONL = "whisper.jsonl"
LINK = ("WHISPER's analysis of pmtx's persistence traces, and the HOPS "
        "model: [its section](#whisper-pmtxs-persistence-behaviour).")

MISSING = "missing"
MODELS = ["x86_nvm", "x86_pwq", "hops_nvm", "hops_pwq", "ideal", "x86_here",
          "hops_nvm_eager", "hops_pwq_eager"]
# *_eager: HOPS draining from the first buffered entry (--pb-launch 1)
# instead of the seed's 16, from the row's "hops_eager" object.
EAGER = "_eager"
KINDS = ["log", "alloc", "desc", "object", "region", "unknown"]
WORKLOAD_ORDER = ["sps", "array", "hashmap", "alloc", "single-obj", "bbuf",
                  "pmcached", "sqlite-tpcc", "pmkv-store", "pmkv"]
SYSTEM_ORDER = ["pmtx-undo", "pmtx-redo", "pmtx-redo-async", "pmtx-cow",
                "pmtx-twin", "pmtx-auto", "pmtx-cltx", "pmdk"]
# The histogram buckets of the plots: the tool's buckets (0, 1, 2, 3-4,
# 5-8, ..., by lower bound) with everything from 65 up in one.
BUCKETS = [(0, "0"), (1, "1"), (2, "2"), (3, "3-4"), (5, "5-8"),
           (9, "9-16"), (17, "17-32"), (33, "33-64"), (65, "65+")]

# The seed's published numbers (seed 002, WHISPER, ASPLOS 2017), quoted
# from its text: these are the paper's, on its ten applications, never
# this machine's.
SEED = [
    ("epochs per transaction", "most transactions have 5 to 50 epochs; "
     "Echo and N-Store TPC-C well over a hundred", "5.1, Figure 3"),
    ("an ideal transaction", "3 epochs (Kolli et al.)", "5.1"),
    ("singleton epochs", "on average 75 % of the epochs of native and "
     "library applications are singletons (one 64 B line); PMFS about 30 %",
     "5.1, Figure 4"),
    ("small singletons", "60 % of the singletons update fewer than 10 bytes",
     "5.1"),
    ("self-dependencies", "25-55 % of epochs in native applications; 80 % "
     "in the NVML-based ones (Redis, C-tree, Hashmap)", "5.1, Figure 5"),
    ("cross-dependencies", "5 % for NFS, 1.16 % for Exim, less for the rest",
     "5.1, Figure 5"),
    ("x86 with a PWQ", "15.5 % faster than x86 without (NVM)",
     "6.4, Figure 10"),
    ("HOPS (NVM) against x86 (NVM)", "24.3 % faster", "6.4, Figure 10"),
    ("HOPS (NVM) against x86 with a PWQ", "10 % faster", "6.4, Figure 10"),
    ("HOPS with a PWQ against HOPS (NVM)", "1.4 % faster", "6.4"),
    ("ideal against x86 (NVM)", "40.7 % faster", "6.4, Figure 10"),
    ("ideal against HOPS (NVM)", "19.7 % faster", "6.4"),
]


# ---- the rows ----

def whisper_rows(rows):
    """The "whisper" lines in report order: the runtimes' workloads, then
    the applications, each by runtime."""
    def key(r):
        w, s = r.get("workload"), r.get("system")
        return (r.get("kind") != "runtime",
                WORKLOAD_ORDER.index(w) if w in WORKLOAD_ORDER else 99, w,
                SYSTEM_ORDER.index(s) if s in SYSTEM_ORDER else 99, s)
    return sorted((r for r in rows if r.get("bench") == "whisper"), key=key)


def short(system):
    return system[len("pmtx-"):] if system.startswith("pmtx-") else system


def label(r):
    return f"{r['workload']} / {short(r['system'])}"


def an(r, *path):
    """A value of the analyze object (None: missing)."""
    v = r.get("analyze")
    for k in path:
        if not isinstance(v, dict) or k not in v:
            return None
        v = v[k]
    return v


def hops_norm(r, model):
    """time(model) / time(x86_nvm) from the hops object (the hops_eager
    one for a *_eager model); None if missing."""
    h = r.get("hops")
    if model.endswith(EAGER):
        e = r.get("hops_eager")
        if not isinstance(h, dict) or not isinstance(e, dict):
            return None
        t = (e.get("time_ns") or {}).get(model[:-len(EAGER)])
        base = (h.get("time_ns") or {}).get("x86_nvm")
        return t / base if t is not None and base else None
    if not isinstance(h, dict):
        return None
    n = h.get("normalized") or {}
    if n.get(model) is not None:
        return n[model]
    t = h.get("time_ns") or {}
    if t.get(model) is not None and t.get("x86_nvm"):
        return t[model] / t["x86_nvm"]
    return None


def has_tx(r):
    return (an(r, "tx_committed") or 0) > 0


# ---- formatting ----

def pct(v, digits=0):
    return MISSING if v is None else f"{100 * v:.{digits}f} %"


def num(v, fmt="{:.2f}"):
    return MISSING if v is None else fmt.format(v)


def ratio(v):
    return MISSING if v is None else f"{v:.2f}" if v < 100 else f"{v:,.0f}"


def count(v):
    if v is None:
        return MISSING
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.1f}k" \
        if v >= 1e4 else str(int(v))


def nbytes(v):
    if v is None:
        return MISSING
    for div, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if v >= div:
            return f"{v / div:.1f} {unit}"
    return f"{int(v)} B"


# ---- tables ----

def table_epochs(ws):
    """Table 1, epochs: per runtime and workload."""
    out = []
    for r in ws:
        if r.get("analyze") is None:
            out.append([r["workload"], short(r["system"])] +
                       [MISSING] * 13)
            continue
        tx = has_tx(r)
        flushed = an(r, "flushed_lines")
        red = an(r, "redundant_flushed_lines")
        out.append([
            r["workload"], short(r["system"]),
            count(an(r, "tx_committed")),
            num(an(r, "epochs_per_tx", "median"), "{}") if tx else "no tx",
            num(an(r, "epochs_per_tx", "p95"), "{}") if tx else "no tx",
            count(an(r, "epochs_per_second")),
            num(an(r, "epoch_lines", "mean"), "{:.1f}"),
            num(an(r, "epoch_lines", "p95"), "{}"),
            pct(an(r, "singleton_share")),
            pct(an(r, "singleton_small_share")),
            pct(an(r, "self_dep_share")), pct(an(r, "cross_dep_share"), 1),
            pct(an(r, "nt_share")),
            num(an(r, "flushes_per_epoch")),
            MISSING if red is None or flushed is None else
            f"{red} ({100 * red / flushed:.1f} %)" if flushed else "0"])
    return md_table(
        ["workload", "runtime", "tx", "epochs/tx median", "p95",
         "epochs/s", "lines/epoch mean", "p95", "singletons",
         "small (< 10 B) of them", "self-dep", "cross-dep", "NT bytes",
         "flushed lines/epoch", "redundant flushes"], out)


# Below this share of the bytes stored, data bytes are too few for a
# ratio to them to mean anything (a runtime that writes its new versions
# as whole-object copies, recorded as another kind): such a ratio is
# marked and left out of the observations.
MIN_DATA_SHARE = 0.001


def data_share(r):
    k = an(r, "store_kinds") or {}
    total = sum(v or 0 for v in k.values())
    return (k.get("data") or 0) / total if total else 0.0


def kind_cells(r):
    """Bytes per data byte of each non-data kind; MISSING without store
    kinds, "-" without data bytes."""
    k = an(r, "store_kinds")
    if not isinstance(k, dict):
        return [MISSING] * (len(KINDS) + 2)
    data = k.get("data") or 0
    if not data:
        return ["0 (no data bytes)", "-"] + [
            nbytes(k.get(x)) if k.get(x) else "0" for x in KINDS]
    wa = an(r, "write_amplification")
    mark = " (*)" if data_share(r) < MIN_DATA_SHARE else ""
    return [nbytes(data), ratio(wa) + mark] + [
        ratio((k.get(x) or 0) / data) for x in KINDS]


def barrier_cells(r):
    b = an(r, "barrier_kinds")
    total = an(r, "barriers")
    tx = an(r, "tx_committed") or 0
    per_tx = f"{total / tx:.1f}" if total is not None and tx else "-"
    if not isinstance(b, dict):
        return [MISSING] * 3 + [count(total), per_tx]
    return [count(b.get("order")), count(b.get("durable")),
            count(b.get("unknown")), count(total), per_tx]


def table_writes(ws):
    """Table 1, write amplification by kind and barriers by kind."""
    out = []
    for r in ws:
        if r.get("analyze") is None:
            out.append([r["workload"], short(r["system"])] +
                       [MISSING] * (len(KINDS) + 7))
            continue
        out.append([r["workload"], short(r["system"])] + kind_cells(r) +
                   barrier_cells(r))
    return md_table(
        ["workload", "runtime", "data bytes", "write ampl."] +
        [f"{k} / data" for k in KINDS] +
        ["ORDER barriers", "DURABLE", "unknown", "all", "per tx"], out)


def table_hops(ws):
    """Figure 10 as a table: modelled run time / x86 (NVM)."""
    out = []
    for r in ws:
        if not isinstance(r.get("hops"), dict):
            why = next((e for e in r.get("errors", [])
                        if e.startswith("pmtx trace hops")), "no result")
            out.append([r["workload"], short(r["system"])] +
                       [MISSING] * len(MODELS) + [why])
            continue
        out.append([r["workload"], short(r["system"])] +
                   [num(hops_norm(r, m)) for m in MODELS] + [""])
    return md_table(["workload", "runtime"] + MODELS + ["note"], out)


def mean_or_missing(vals):
    vals = [v for v in vals if v is not None]
    return num(statistics.mean(vals)) if vals else MISSING


def table_hops_means(ws):
    """Figure 10 averaged per runtime (arithmetic mean of the normalized
    times of the traces that have a hops result)."""
    out = []
    for s, rs in by_system(ws).items():
        have = [r for r in rs if hops_norm(r, "x86_nvm") is not None]
        if not have:
            out.append([short(s), f"0 of {len(rs)}"] +
                       [MISSING] * len(MODELS))
            continue
        out.append([short(s), f"{len(have)} of {len(rs)}"] + [
            mean_or_missing([hops_norm(r, m) for r in have])
            for m in MODELS])
    return md_table(["runtime", "traces"] + MODELS, out)


def table_seed():
    return md_table(["what", "the seed's published number", "where"],
                    [list(x) for x in SEED])


def table_costs(rows):
    c = [r for r in rows if r.get("bench") == "whisper-costs"]
    if not c:
        return None
    out = []
    for r in c:
        what = r.get("what")
        if what == "barrier_fit":
            out.append([what, f"fence {r.get('fence_ns', 0):.1f} ns + "
                        f"{r.get('line_ns', 0):.1f} ns per line"])
        elif what == "barrier_lines":
            k = r.get("lines")
            out.append([f"barrier, {k} line{'' if k == 1 else 's'}",
                        f"{r.get('ns', 0):.1f} ns"])
        elif what == "msync_pages":
            k = r.get("pages")
            out.append([f"msync, {k} page{'' if k == 1 else 's'} "
                        f"({r.get('fs')})",
                        fmt_ns(r.get("ns"))])
        elif r.get("ns") is not None:
            out.append([what, f"{r['ns']:.1f} ns"])
    return md_table(["measurement (median)", "cost"], out)


# ---- observations, computed ----

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def by_system(ws, pred=lambda r: True):
    out = {}
    for r in ws:
        if r.get("analyze") is not None and pred(r):
            out.setdefault(r["system"], []).append(r)
    return {s: out[s] for s in sorted(out, key=lambda s: (
        SYSTEM_ORDER.index(s) if s in SYSTEM_ORDER else 99, s))}


def obs_epochs(ws):
    out = []
    for s, rs in by_system(ws, has_tx).items():
        ms = [an(r, "epochs_per_tx", "median") for r in rs]
        inside = sum(5 <= m <= 50 for m in ms)
        rng = f"range {min(ms)}-{max(ms)} over {len(ms)} traces" \
            if len(ms) > 1 else "one trace"
        out.append(f"{short(s)}: median {med(ms):g} epochs per transaction "
                   f"({rng}; {inside} of them within the seed's 5-50, "
                   f"{sum(m < 5 for m in ms)} below, "
                   f"{sum(m > 50 for m in ms)} above).")
    return out


def obs_undo_redo(ws):
    idx = {(r["workload"], r["system"]): r for r in ws if has_tx(r)}
    pairs = [(w, idx[(w, "pmtx-undo")], idx[(w, "pmtx-redo")])
             for w in dict.fromkeys(r["workload"] for r in ws)
             if (w, "pmtx-undo") in idx and (w, "pmtx-redo") in idx]
    if not pairs:
        return []
    more = [w for w, u, d in pairs if an(u, "epochs_per_tx", "median") >
            an(d, "epochs_per_tx", "median")]
    cells = ", ".join(f"{w} {an(u, 'epochs_per_tx', 'median')} vs "
                      f"{an(d, 'epochs_per_tx', 'median')}"
                      for w, u, d in pairs)
    return [f"undo against redo, median epochs per transaction: {cells}; "
            f"undo has more on {len(more)} of {len(pairs)} workloads (the "
            "seed: undo fragments a transaction into alternating log and "
            "data epochs, redo batches them)."]


def obs_singletons(ws):
    out = []
    rs = [r for r in ws if an(r, "epochs")]
    if not rs:
        return out
    sh = [an(r, "singleton_share") for r in rs]
    small = [an(r, "singleton_small_share") for r in rs
             if an(r, "singleton_share")]
    out.append(f"singleton epochs: {100 * statistics.mean(sh):.0f} % on "
               f"average over {len(rs)} traces (range "
               f"{100 * min(sh):.0f}-{100 * max(sh):.0f} %), vs the seed's "
               "~75 %" + (f"; of the singletons, "
                          f"{100 * statistics.mean(small):.0f} % write fewer "
                          "than 10 bytes on average (seed: 60 %)."
                          if small else "."))
    return out


def obs_deps(ws):
    out = []
    for s, rs in by_system(ws, lambda r: an(r, "epochs")).items():
        sd = [an(r, "self_dep_share") for r in rs]
        rng = f"{100 * min(sd):.0f}-{100 * max(sd):.0f} % (median " \
            f"{100 * med(sd):.0f} %)" if len(sd) > 1 else \
            f"{100 * sd[0]:.0f} %"
        out.append(f"{short(s)}: self-dependent epochs {rng} of "
                   f"{len(sd)} trace(s), vs the seed's 80 % for "
                   "NVML-based and 25-55 % for native applications.")
    cross = [(an(r, "cross_dep_share"), label(r)) for r in ws
             if an(r, "epochs")]
    if cross:
        v, who = max(cross)
        out.append(f"cross-dependent epochs: at most {100 * v:.2f} % "
                   f"({who}); the seed: 5 % (NFS) and less elsewhere.")
    return out


def largest_kind(rs):
    """The kind with the most stored bytes over rs, and its share."""
    tot = {}
    for r in rs:
        for k, v in (an(r, "store_kinds") or {}).items():
            tot[k] = tot.get(k, 0) + (v or 0)
    k = max(tot, key=tot.get)
    return f"{k} stores are {100 * tot[k] / sum(tot.values()):.0f} % of " \
        "the bytes stored"


def obs_writes(ws):
    out = []
    for s, rs in by_system(ws).items():
        wa = [(an(r, "write_amplification"), r["workload"]) for r in rs
              if (an(r, "store_kinds", "data") or 0) > 0 and
              data_share(r) >= MIN_DATA_SHARE]
        few = [r for r in rs if (an(r, "store_kinds", "data") or 0) > 0
               and data_share(r) < MIN_DATA_SHARE]
        if few:
            out.append(f"{short(s)}: data bytes are under "
                       f"{100 * MIN_DATA_SHARE:g} % of the bytes stored on "
                       f"{', '.join(r['workload'] for r in few)} (there, "
                       f"{largest_kind(few)}): no write amplification is "
                       "given for them.")
        if wa:
            lo, hi = min(wa), max(wa)
            rng = f"median of {len(wa)}; {ratio(lo[0])} on {lo[1]} to " \
                f"{ratio(hi[0])} on {hi[1]}" if len(wa) > 1 else wa[0][1]
            out.append(f"{short(s)}: write amplification "
                       f"{ratio(med([w for w, _ in wa]))} non-data bytes per "
                       f"data byte ({rng}); {largest_kind(rs)}.")
    return out


def obs_barriers(ws):
    out = []
    for s, rs in by_system(ws).items():
        o = sum(an(r, "barrier_kinds", "order") or 0 for r in rs)
        d = sum(an(r, "barrier_kinds", "durable") or 0 for r in rs)
        if o + d:
            out.append(f"{short(s)}: {100 * o / (o + d):.0f} % of the "
                       "barriers only order (a HOPS ofence), "
                       f"{100 * d / (o + d):.0f} % need durability "
                       "(dfence).")
    return out


# (faster, slower, the seed's figure): "faster is x % faster than slower"
HOPS_CLAIMS = [("x86_pwq", "x86_nvm", 15.5), ("hops_nvm", "x86_nvm", 24.3),
               ("hops_nvm", "x86_pwq", 10.0), ("hops_pwq", "hops_nvm", 1.4),
               ("ideal", "x86_nvm", 40.7), ("ideal", "hops_nvm", 19.7)]


def faster(g):
    """A run-time reduction g as "x % faster" (or slower)."""
    return f"{100 * abs(g):.1f} % {'faster' if g >= 0 else 'slower'}"


def hops_gain(ws, a, b):
    """1 - mean over rows of time(a)/time(b), and the rows used."""
    ratios = [hops_norm(r, a) / hops_norm(r, b) for r in ws
              if hops_norm(r, a) is not None and hops_norm(r, b)]
    return (1 - statistics.mean(ratios), len(ratios)) if ratios \
        else (None, 0)


def obs_hops(ws):
    have = [r for r in ws if hops_norm(r, "x86_nvm") is not None]
    miss = len(ws) - len(have)
    if not have:
        return [f"HOPS: missing for all {len(ws)} traces (no `pmtx trace "
                "hops` result): no Figure 10 numbers."]
    out = []
    for a, b, seed in HOPS_CLAIMS:
        g, n = hops_gain(have, a, b)
        if g is not None:
            out.append(f"{a} against {b}: {faster(g)} on average over "
                       f"{n} traces (the seed: {seed} % faster).")
    g, n = hops_gain(have, "hops_nvm_eager", "x86_nvm")
    if g is not None:
        out.append(f"hops_nvm_eager (draining from the first buffered "
                   f"entry, not the 16th) against x86_nvm: {faster(g)} on "
                   f"average over {n} traces.")
    g, n = hops_gain(have, "x86_here", "x86_nvm")
    if g is not None:
        out.append(f"x86_here (this machine's measured fence and flush "
                   f"costs) against the modelled x86_nvm: {faster(g)} "
                   f"on average over {n} traces.")
    if miss:
        out.append(f"HOPS results are missing for {miss} of {len(ws)} "
                   "traces (left out of these averages).")
    return out


def obs_no_tx(ws):
    no = [label(r) for r in ws if r.get("analyze") is not None and
          not has_tx(r) and an(r, "epochs")]
    return [f"no committed transaction in the trace of {', '.join(no)} "
            "(its epochs are outside transactions): left out of the "
            "epochs-per-transaction figures."] if no else []


def obs_read_only(ws):
    """Transactions with no epoch (read-only ones) pull the medians
    down: say where they are."""
    out = []
    for r in ws:
        h = an(r, "epochs_per_tx", "hist") or []
        n = sum(c for _, c in h)
        zero = sum(c for lo, c in h if lo == 0)
        if n and zero:
            out.append(f"{label(r)}: {100 * zero / n:.0f} %")
    return ["transactions with no epoch (read-only: no store to the "
            "region), counted in the epochs-per-transaction figures: " +
            ", ".join(out) + "."] if out else []


def observations(ws):
    return (obs_epochs(ws) + obs_no_tx(ws) + obs_read_only(ws) +
            obs_undo_redo(ws) + obs_singletons(ws) + obs_deps(ws) +
            obs_writes(ws) + obs_barriers(ws) + obs_hops(ws))


# ---- the section ----

def setup_lines(ws, eval_mode):
    out = []
    rt = [r for r in ws if r.get("kind") == "runtime"]
    if rt:
        out.append(f"- runtimes: pmtx-bench on PDOM-1 hardware, "
                   f"{rt[0].get('seconds')} s, one round, per workload "
                   "and runtime: " + "; ".join(
                       f"{w} ({', '.join(f'{k}={v}' for k, v in p.items())})"
                       for w, p in dict((r["workload"], r["params"])
                                        for r in rt).items()) +
                   ". A trace holds the set-up (region, fill) as well.")
    if any(r.get("system") == "pmdk" for r in ws):
        out.append("- PMDK (pmdk): pmtx-bench records libpmem's flushes, "
                   "drains and the ends of transactions (PMTX_PMDK_TRACE); "
                   "a flushed range stands for its stores, so PMDK's "
                   "epochs are those of its write-backs (stores never "
                   "flushed, and the time between a store and its flush, "
                   "are not seen); no store kinds.")
    ap = [r for r in ws if r.get("kind") == "app"]
    what = {"pmcached": "pmcached under mcload (a load, then YCSB A)",
            "sqlite-tpcc": "psq-tpcc on the pmtx VFS (loaded untraced)",
            "pmkv-store": "pmkv-storebench (one thread, 50 % reads, after "
                          "a population)",
            "pmkv": "the pmkv server under pmkv-load (2 clients, 50 % "
                    "reads, after a population)"}
    if ap:
        secs = dict((r["workload"], r.get("seconds")) for r in ap)
        out.append("- applications: " + "; ".join(
            f"{what.get(w, w)}, {s:g} s" for w, s in secs.items()) + ".")
    src = {r.get("costs") for r in ws}
    out.append("- HOPS model costs: " + ", ".join(
        "hops's defaults" if c is None else "measured by pmtx-bench costs"
        if c == "measured" else c for c in sorted(src, key=str)) + ".")
    for r in ws:
        errs = [e for e in r.get("errors", [])
                if not e.startswith("pmtx trace hops: not in")]
        if errs:
            out.append(f"- {label(r)}: {'; '.join(errs)}.")
    if any("pmtx trace hops: not in this build" in e
           for r in ws for e in r.get("errors", [])):
        out.append("- `pmtx trace hops` was not in the build: every HOPS "
                   "result is missing.")
    if eval_mode:
        out.append(f"- eval mode: {eval_mode}.")
    return out


INTRO = ("The seed's (002, WHISPER) trace analysis applied to pmtx: each "
         "runtime on the evaluation's workloads and each application, "
         "traced (PMTX_TRACE), then `pmtx trace analyze` (Table 1, "
         "Figures 3-5) and `pmtx trace hops` (Figure 10). Lines in "
         "whisper.jsonl (scripts/whisper.py).")


def section(rows, plots, eval_mode=None):
    ws = whisper_rows(rows)
    doc = opening("WHISPER: pmtx's persistence behaviour", INTRO,
                  setup_lines(ws, eval_mode))
    if not ws:
        return doc + ["(no traces)", ""]
    doc += trace_tables(ws)
    costs = table_costs(rows)
    if costs:
        doc += ["### This machine's costs (pmtx-bench costs)", "", costs,
                ""]
    doc += ["### The seed's published numbers (the paper's, not pmtx's)",
            "", table_seed(), "",
            "### Observations (computed from the traces)", ""]
    doc += [f"- {o}" for o in observations(ws)] + [""]
    doc += figure_lines("WHISPER", plots)
    return doc


def trace_tables(ws):
    """Table 1 (epochs; write amplification and barriers) and Figure 10
    as tables."""
    return ["### Table 1: epochs", "",
            "An epoch: a thread's stores up to its next barrier or the end "
            "of its transaction; sizes in 64-byte lines; dependencies "
            "within 50 us.", "", table_epochs(ws), "",
            "### Table 1: write amplification and barriers", "",
            "Bytes of each kind stored per data byte; barriers by what "
            "they are for (ORDER: a HOPS ofence would do; DURABLE: "
            f"dfence). (*): data bytes are under {100 * MIN_DATA_SHARE:g} "
            "% of the bytes stored, so the ratio to them says little.", "",
            table_writes(ws), "",
            "### Figure 10: modelled run time, normalized to x86 (NVM)",
            "", table_hops(ws), "",
            "Per runtime, the mean over its traces:", "",
            table_hops_means(ws), ""]


# ---- plots ----

def hist_shares(h):
    """The shares of BUCKETS from a tool histogram [[lo, count], ...]."""
    counts = [0] * len(BUCKETS)
    for lo, c in h or []:
        i = max(j for j, (b, _) in enumerate(BUCKETS) if lo >= b)
        counts[i] += c
    total = sum(counts)
    return [c / total for c in counts] if total else None


def draw_stacked(plt, ws, key, path, title, xlabel):
    rs = [(label(r), hist_shares(an(r, key, "hist"))) for r in ws]
    rs = [(n, s) for n, s in rs if s]
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(rs) + 1.6))
    cmap = plt.get_cmap("viridis")
    left = [0.0] * len(rs)
    for j, (_, name) in enumerate(BUCKETS):
        vals = [s[j] for _, s in rs]
        if not any(vals):
            continue
        ax.barh(range(len(rs)), vals, left=left, label=name,
                color=cmap(j / (len(BUCKETS) - 1)))
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(range(len(rs)))
    ax.set_yticklabels([n for n, _ in rs], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    save_figure(plt, fig, path, tight=True)


def draw_deps(plt, ws, path):
    rs = [r for r in ws if an(r, "epochs")]
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(rs) + 1.4))
    y = range(len(rs))
    ax.barh([i - 0.2 for i in y], [an(r, "self_dep_share") for r in rs],
            0.4, label="self")
    ax.barh([i + 0.2 for i in y], [an(r, "cross_dep_share") for r in rs],
            0.4, label="cross")
    ax.set_yticks(list(y))
    ax.set_yticklabels([label(r) for r in rs], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of epochs with a dependency within 50 us",
                  fontsize=8)
    ax.set_title("Figure 5 for pmtx: epoch dependencies", fontsize=9)
    ax.legend(fontsize=7)
    save_figure(plt, fig, path, tight=True)


def draw_hops(plt, ws, path):
    fig, ax = plt.subplots(figsize=(9, 0.5 * len(ws) + 1.4))
    w = 0.8 / len(MODELS)
    for j, m in enumerate(MODELS):
        ax.barh([i - 0.4 + w * (j + 0.5) for i in range(len(ws))],
                [hops_norm(r, m) or 0 for r in ws], w, label=m)
    for i, r in enumerate(ws):
        if hops_norm(r, "x86_nvm") is None:
            ax.text(0.02, i, "HOPS result missing", fontsize=7,
                    va="center")
    ax.set_yticks(range(len(ws)))
    ax.set_yticklabels([label(r) for r in ws], fontsize=7)
    ax.invert_yaxis()
    ax.axvline(1.0, color="grey", linewidth=0.8)
    ax.set_xlabel("run time / x86 (NVM), modelled", fontsize=8)
    ax.set_title("Figure 10 for pmtx: normalized run times", fontsize=9)
    ax.legend(fontsize=7, ncol=3)
    save_figure(plt, fig, path, tight=True)


def make_plots(rows, run_dir):
    plt = pyplot()
    ws = whisper_rows(rows)
    if not any(r.get("analyze") for r in ws):
        return []
    out = []
    draw_stacked(plt, [r for r in ws if has_tx(r)], "epochs_per_tx",
                 os.path.join(run_dir, "whisper-fig3.png"),
                 "Figure 3 for pmtx: epochs per committed transaction",
                 "share of transactions")
    out.append(("whisper-fig3.png", "Figure 3: epochs per transaction"))
    draw_stacked(plt, ws, "epoch_lines",
                 os.path.join(run_dir, "whisper-fig4.png"),
                 "Figure 4 for pmtx: epoch sizes (64 B lines)",
                 "share of epochs")
    out.append(("whisper-fig4.png", "Figure 4: epoch sizes"))
    draw_deps(plt, ws, os.path.join(run_dir, "whisper-fig5.png"))
    out.append(("whisper-fig5.png", "Figure 5: dependencies"))
    draw_hops(plt, ws, os.path.join(run_dir, "whisper-fig10.png"))
    out.append(("whisper-fig10.png", "Figure 10: normalized run times"))
    return out


def write_report(run_dir, mode=None):
    """run_dir/report.md with the section and its plots."""
    rows = load_jsonl(os.path.join(run_dir, "whisper.jsonl"))
    plots = make_plots(rows, run_dir)
    doc = ["# WHISPER's analysis of pmtx", ""] + section(rows, plots, mode)
    path = os.path.join(run_dir, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(doc) + "\n")
    return path
