#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""kill -9 during SQLite commits through the pmtx VFS.

A writer (psq-kill9-writer) commits numbered transactions and prints the
number of each one whose COMMIT returned; it is killed with SIGKILL at a
random moment (while opening and recovering, mid-transaction, mid-commit,
mid-spill). After each kill the database is opened in this process and:
  - PRAGMA integrity_check is ok;
  - the schema (tables t and meta, and meta's one row, which the writer
    creates in one transaction) is there whole or not at all;
  - meta.last >= every acknowledged number (no acknowledged commit lost);
  - the rows are exactly those of transactions (last-200, last], each with
    its full count and payloads (no transaction half there).
The next writer goes on from last + 1. The checker opens the database
with the writer's backend.

With --copy-checks, every other kill is checked on a copy of the files
(the region and what the backend keeps beside it, such as the journal
backend's "<db>.pmtxj"), made once the writer is dead; the files
themselves are left as the kill left them, so that the next writer
recovers them (and may be killed while it does). Recovery is
deterministic, so the copy's `last` is what the writer starts from.

    kill9.py --writer BIN [--kills N] [--backend hardware|file|journal]
             [--dir D] [--runtimes undo,redo,...] [--spill]
             [--copy-checks] [--expect-violation]

--expect-violation inverts the verdict: with a writer whose VFS was built
to commit every write at once (PSQ_MUTANT=write_through), the test must
find a half transaction, which shows it can fail.
"""
import glob
import os
import random
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "common")]
import psq  # noqa: E402
from apptest import kill9_options  # noqa: E402

KEEP = 200


class Violation(Exception):
    pass


def rows_of(n):
    return 150 if n % 23 == 0 else 3


def payload(n, i):
    width = 120 - 40
    return "row %d.%d %0*d" % (n, i, width, n * 7919 + i)


def check(path, acked, backend):
    """The checks above; a database SQLite finds malformed, or cannot
    read, is a violation too (not a crash of this script)."""
    try:
        return check_db(path, acked, backend)
    except sqlite3.DatabaseError as e:
        raise Violation("SQLite: %s" % e)


def copy_files(path, directory):
    """A copy of path and of the files beside it that share its name
    (path + suffix), in directory; the copy of path."""
    shutil.rmtree(directory, ignore_errors=True)
    os.mkdir(directory)
    for f in glob.glob(glob.escape(path) + "*"):
        shutil.copyfile(f, os.path.join(directory, os.path.basename(f)))
    return os.path.join(directory, os.path.basename(path))


def check_db(path, acked, backend):
    if not os.path.exists(path):
        # Killed before the region was made (its creation is atomic);
        # opening it here would create one of the default runtime.
        if acked:
            raise Violation("no database, acknowledged %d" % acked)
        return 0
    c = psq.connect(path, backend=backend)
    try:
        ic = c.execute("pragma integrity_check").fetchone()[0]
        if ic != "ok":
            raise Violation("integrity_check: %s" % ic)
        tables = {r[0] for r in c.execute(
            "select name from sqlite_master where type = 'table'")}
        if tables != {"t", "meta"}:
            # Killed before the schema's transaction committed.
            if tables or acked:
                raise Violation("schema half there: %s (acknowledged %d)"
                                % (sorted(tables), acked))
            return 0
        row = c.execute("select last from meta").fetchone()
        if row is None:
            # The writer creates the schema and this row in one commit.
            raise Violation("schema without its meta row")
        last = row[0]
        if last < acked:
            raise Violation("acknowledged %d, database has %d"
                            % (acked, last))
        got = dict(c.execute("select n, count(*) from t group by n"))
        want = {n: rows_of(n) for n in range(max(1, last - KEEP + 1),
                                             last + 1)}
        if got != want:
            extra = sorted(set(got.items()) ^ set(want.items()))[:5]
            raise Violation("rows after transaction %d: differ at %s"
                            % (last, extra))
        for n, i, v in c.execute("select n, i, v from t where n > ?",
                                 (last - 3,)):
            if v != payload(n, i):
                raise Violation("row %d.%d has %r" % (n, i, v[:40]))
        return last
    finally:
        c.close()


def one_kill(args, uri, first, rnd):
    cmd = [args.writer, uri, str(first)] + (["--spill"] if args.spill
                                            else [])
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=args.env)
    acked, buf = first - 1, b""
    deadline = time.monotonic() + rnd.choice((0, 0.002, 0.01, 0.03, 0.06))
    while time.monotonic() < deadline and p.poll() is None:
        r, _, _ = select.select([p.stdout], [], [],
                                max(0, deadline - time.monotonic()))
        if r:
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
    p.send_signal(signal.SIGKILL)
    buf += p.stdout.read()
    p.wait()
    if p.returncode not in (-signal.SIGKILL, None):
        raise RuntimeError("writer exited %s before the kill"
                           % p.returncode)
    lines = buf.split(b"\n")
    if lines[:-1]:
        acked = int(lines[-2])
    return acked


def run(args, runtime, directory):
    path = os.path.join(directory, "kill9-%s.db" % runtime)
    uri = psq.uri(path, runtime=runtime, backend=args.backend)
    rnd = random.Random(args.seed)
    last, total = 0, 0
    for k in range(args.kills):
        acked = one_kill(args, uri, last + 1, rnd)
        if args.copy_checks and k % 2 == 0:
            copy = copy_files(path, os.path.join(directory, "copy"))
            last = check(copy, acked, args.backend)
            shutil.rmtree(os.path.dirname(copy))
        else:
            last = check(path, acked, args.backend)
        total += 1
    return last, total


def main():
    ap = kill9_options(kills=500)
    ap.add_argument("--writer", required=True)
    ap.add_argument("--runtimes", default="redo,undo,redo-async,auto,twin")
    ap.add_argument("--spill", action="store_true")
    ap.add_argument("--copy-checks", action="store_true")
    ap.add_argument("--expect-violation", action="store_true")
    args = ap.parse_args()
    args.env = dict(os.environ)
    if args.expect_violation:
        args.env["PSQ_MUTANT"] = "write_through"
    d = tempfile.mkdtemp(prefix="psq-kill9-", dir=args.dir)
    try:
        for rt in args.runtimes.split(","):
            t0 = time.monotonic()
            try:
                last, n = run(args, rt, d)
            except Violation as v:
                if args.expect_violation:
                    print("kill9 %s: violation found, as expected: %s"
                          % (rt, v))
                    continue
                print("kill9 %s: VIOLATION: %s" % (rt, v))
                return 1
            if args.expect_violation:
                print("kill9 %s: no violation in %d kills with a broken "
                      "VFS" % (rt, n))
                return 1
            print("kill9 %s %s: %d kills, %d transactions committed, "
                  "0 violations (%.0f s)" % (rt, args.backend, n, last,
                                             time.monotonic() - t0))
        return 0
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
