#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""One-row transactions: the commit rate of one connection inserting one
row (a 100-byte blob) per transaction, in autocommit, for a given time.
sqlbench.py runs it for --benches inserts, one process per run.

    inserts.py --db PATH|URI [--ext libpmtx_sqlite.so] [--journal J
               --sync S] [--seconds T] [--max-tx N] [--label L]

--ext loads the pmtx VFS (needed for a URI with vfs=pmtx); --journal and
--sync set stock SQLite's journal_mode and synchronous. Prints one JSON
line: {"bench": "inserts", "tx": n, "seconds": s, "tps": n/s, "p50_us",
"p99_us", "max_us", "label"}. The loop is Python's (sqlite3 module): on
this VM it adds about 5 us to each transaction, next to nothing beside a
commit that reaches a disk. Run with /usr/bin/python3, whose sqlite3
module can load extensions.
"""
import argparse
import json
import sqlite3
import sys
import time


def pct(sorted_vals, q):
    if not sorted_vals:
        return None
    i = min(len(sorted_vals) - 1, int(q * len(sorted_vals)))
    return sorted_vals[i]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--ext")
    ap.add_argument("--journal")
    ap.add_argument("--sync")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--max-tx", type=int, default=10000000)
    ap.add_argument("--label", default="")
    a = ap.parse_args(argv)
    if a.ext:
        m = sqlite3.connect(":memory:")
        m.enable_load_extension(True)
        m.load_extension(a.ext)
        m.close()
    db = sqlite3.connect(a.db, uri=True, isolation_level=None)
    if a.journal:
        db.execute(f"pragma journal_mode={a.journal}").fetchall()
    if a.sync:
        db.execute(f"pragma synchronous={a.sync}")
    db.execute("create table t(k integer primary key, v blob)")
    payload = bytes(range(100))
    ins = "insert into t(v) values (?)"
    lat = []
    clock = time.perf_counter
    t0 = clock()
    end = t0 + a.seconds
    now = t0
    while len(lat) < a.max_tx and now < end:
        t = now
        db.execute(ins, (payload,))  # autocommit: one transaction
        now = clock()
        lat.append(now - t)
    elapsed = now - t0
    n = db.execute("select count(*) from t").fetchone()[0]
    db.close()
    if n != len(lat):
        sys.stderr.write(f"inserts: {len(lat)} committed, {n} rows\n")
        return 1
    lat.sort()
    us = 1e6
    print(json.dumps({"bench": "inserts", "label": a.label, "tx": n,
                      "seconds": elapsed, "tps": n / elapsed,
                      "p50_us": pct(lat, 0.50) * us,
                      "p99_us": pct(lat, 0.99) * us,
                      "max_us": lat[-1] * us}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
