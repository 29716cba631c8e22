# SPDX-License-Identifier: BSD-3-Clause
"""Batch atomic writes (vfs.c, B1-B4): with a SQLite built with
SQLITE_ENABLE_BATCH_ATOMIC_WRITE, a commit writes its pages between
BEGIN_ATOMIC_WRITE and COMMIT_ATOMIC_WRITE and opens no journal; a spill
or a super-journal make it use the journal, synchronous=OFF and
journal_mode=OFF write without a batch; a failed batch leaves the last
commit. PRAGMA pmtx_stats shows which path each commit took.

tests/batch_atomic.sh runs this file twice: with the system SQLite (no
batch ever), then with $PSQ_BATCH_LIB, the directory of a batch-enabled
libsqlite3.so.0, first in LD_LIBRARY_PATH. There the batch tests fail,
not skip, if that SQLite is not the one loaded.
"""
import os
import re
import sqlite3
import subprocess
import sys

import pytest

import psq
from conftest import RUNTIMES

BATCH_LIB = os.environ.get("PSQ_BATCH_LIB", "")
OPTION = "ENABLE_BATCH_ATOMIC_WRITE"

batch = pytest.mark.skipif(
    not BATCH_LIB, reason="PSQ_BATCH_LIB is not set: the batch SQLite is "
    "not loaded (tests/batch_atomic.sh sets it)")
plain = pytest.mark.skipif(
    bool(BATCH_LIB), reason="PSQ_BATCH_LIB is set: this is the batch run")


def options(conn):
    return {r[0] for r in conn.execute("pragma compile_options")}


def stats(conn):
    """PRAGMA pmtx_stats as {"commits": n, "batch commits": n, ...}: the
    counters of this process, read through any pmtx connection."""
    s = conn.execute("pragma pmtx_stats").fetchone()[0]
    return {k: int(v) for k, v in
            (re.fullmatch(r"(.*) (\d+)", f).groups() for f in s.split(", "))}


class Delta:
    """What the counters did between its creation and a call."""

    def __init__(self, conn):
        self.conn = conn
        self.before = stats(conn)

    def __call__(self):
        now = stats(self.conn)
        return {k: now[k] - self.before[k] for k in now}


def one_transaction(c, *statements):
    """What the counters did over one transaction of the statements."""
    d = Delta(c)
    c.execute("begin")
    for s in statements:
        c.execute(s)
    c.execute("commit")
    return d()


def insert_400_rows(c):
    """About 360 KB: past a cache of 10 pages, so SQLite spills."""
    for i in range(400):
        c.execute("insert into t(x, v) values (?, ?)",
                  (i, bytes([i % 251]) * 900))


def fresh(tmp, name="app.db", **params):
    """A database whose first transaction is done: SQLite never batches
    the first (pager.c:1210, the database is empty), so it opens a
    journal."""
    p = os.path.join(tmp, name)
    c = psq.connect(p, **params)
    c.execute("create table t(k integer primary key, x int, v blob)")
    return p, c


def checksum(c):
    return c.execute("select count(*), total(x), total(length(v)), "
                     "group_concat(hex(substr(v, 1, 4))) from t").fetchone()


# ---- which SQLite is loaded ----

@plain
def test_the_system_sqlite_never_batches(tmp):
    """Debian's SQLite ignores SQLITE_IOCAP_BATCH_ATOMIC: every commit
    opens a DRAM journal, none is a batch."""
    p, c = fresh(tmp)
    if OPTION in options(c):
        pytest.skip("the system SQLite has %s" % OPTION)
    d = Delta(c)
    for i in range(10):
        c.execute("insert into t(x, v) values (?, randomblob(5000))", (i,))
    got = d()
    assert (got["commits"], got["batch commits"], got["batch rollbacks"],
            got["batches refused"], got["journals opened"]) \
        == (10, 0, 0, 0, 10), got
    c.close()


@batch
def test_the_loaded_sqlite_has_batch_atomic_write():
    c = sqlite3.connect(":memory:")
    assert OPTION in options(c), (
        "PSQ_BATCH_LIB=%s is set, but the SQLite loaded (%s) was built "
        "without SQLITE_%s" % (BATCH_LIB, sqlite3.sqlite_version, OPTION))
    c.close()


def system_options():
    """compile_options of the system's SQLite (without LD_LIBRARY_PATH)."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    out = subprocess.run(
        [sys.executable, "-c", "import sqlite3; print('\\n'.join(r[0] for r "
         "in sqlite3.connect(':memory:').execute('pragma compile_options')))"],
        env=env, check=True, capture_output=True, text=True).stdout
    return set(out.split())


@batch
def test_the_batch_sqlite_has_debians_compile_options():
    """The same SQLite as the system's but for batch atomic writes: a
    difference in another option could change what the tests see."""
    c = sqlite3.connect(":memory:")
    mine = options(c)
    c.close()
    theirs = system_options()
    assert OPTION not in theirs
    assert {o for o in mine if not o.startswith("COMPILER=")} - {OPTION} \
        == {o for o in theirs if not o.startswith("COMPILER=")}


def resolved(path):
    """Where the dynamic loader finds libsqlite3.so.0 for path, with this
    process's LD_LIBRARY_PATH."""
    out = subprocess.run(["ldd", path], check=True, capture_output=True,
                         text=True).stdout
    m = re.search(r"libsqlite3\.so\.0 => (\S+)", out)
    assert m, "%s does not load libsqlite3.so.0:\n%s" % (path, out)
    return os.path.realpath(m.group(1))


@batch
def test_every_program_of_the_run_loads_the_batch_sqlite():
    want = os.path.realpath(os.path.join(BATCH_LIB, "libsqlite3.so.0"))
    import _sqlite3
    progs = [os.environ.get("PSQ_EXPLORE", ""),
             os.environ.get("PSQ_KILL9_WRITER", ""), "/usr/bin/sqlite3",
             _sqlite3.__file__]
    for prog in progs:
        assert prog and os.path.exists(prog), \
            "PSQ_EXPLORE and PSQ_KILL9_WRITER must name the programs"
        assert resolved(prog) == want, prog
    shell = subprocess.run(["sqlite3", ":memory:", "pragma compile_options"],
                           check=True, capture_output=True, text=True)
    assert OPTION in shell.stdout.split()
    try:
        import apsw  # noqa: F401
    except ImportError:
        return
    out = subprocess.run(
        [sys.executable, "-c", "import apsw; print(apsw.compile_options)"],
        check=True, capture_output=True, text=True).stdout
    assert OPTION in out


# ---- the batch path ----

@batch
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_each_commit_is_one_batch_and_opens_no_journal(tmp, runtime):
    p, c = fresh(tmp, runtime=runtime)
    d = Delta(c)
    for i in range(20):
        c.execute("insert into t(x, v) values (?, randomblob(?))",
                  (i, 100 + 3000 * (i % 4)))
    c.execute("begin")
    c.execute("update t set x = x * 2 where k % 3 = 0")
    c.execute("savepoint s")
    c.execute("delete from t")
    c.execute("rollback to s")
    c.execute("delete from t where k % 5 = 0")
    c.execute("commit")
    c.execute("begin")
    c.execute("insert into t(x) values (-1)")
    c.execute("rollback")  # nothing was written: no commit, no batch
    got = d()
    assert (got["commits"], got["batch commits"], got["journals opened"],
            got["batch rollbacks"], got["batches refused"]) \
        == (21, 21, 0, 0, 0), got
    want = checksum(c)
    c.close()
    c = psq.connect(p)
    assert checksum(c) == want
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    c.close()


@batch
@pytest.mark.parametrize("setting,batched", [
    ("journal_mode=delete", True), ("journal_mode=truncate", True),
    ("journal_mode=persist", True), ("journal_mode=memory", True),
    ("journal_mode=off", False),        # no journal: never a batch
    ("synchronous=off", False),         # bBatch needs a sync (pager.c:6455)
    ("synchronous=normal", True),
])
def test_the_settings_under_which_sqlite_batches(tmp, setting, batched):
    p, c = fresh(tmp)
    c.execute("pragma " + setting)
    c.execute("insert into t(x) values (0)")  # settles the journal mode
    d = Delta(c)
    for i in range(5):
        c.execute("insert into t(x, v) values (?, randomblob(2000))", (i,))
    got = d()
    assert got["commits"] == 5
    assert got["batch commits"] == (5 if batched else 0), got
    assert checksum(c)[0] == 6
    c.close()


@batch
def test_a_transaction_that_spills_commits_through_a_journal(tmp):
    """A spill makes SQLite's journal a file (pagerStress, pager.c:4588):
    the commit is then the usual one, and the next is a batch again."""
    p, c = fresh(tmp)
    c.execute("pragma cache_size=10")
    d = Delta(c)
    c.execute("begin")
    insert_400_rows(c)
    c.execute("rollback")
    assert checksum(c)[0] == 0
    got = d()  # the rollback wrote the spilled pages back, and committed
    assert (got["batch commits"], got["journals opened"]) == (0, 1), got
    d = Delta(c)
    c.execute("begin")
    insert_400_rows(c)
    c.execute("commit")
    got = d()
    assert (got["commits"], got["batch commits"], got["journals opened"]) \
        == (1, 0, 1), got
    c.execute("update t set x = x + 1 where k = 1")
    assert d()["batch commits"] == 1
    want = checksum(c)
    c.close()
    c = psq.connect(p)
    assert checksum(c) == want and want[0] == 400
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    c.close()


@batch
def test_a_multi_database_transaction_uses_its_super_journal(tmp):
    """A super-journal rules out a batch (pager.c:6454): V5 as before."""
    p, c = fresh(tmp)
    q = os.path.join(tmp, "other.db")
    o = psq.connect(q)
    o.execute("create table u(y)")
    o.close()
    c.execute("attach database ? as o", (psq.uri(q),))
    got = one_transaction(c, "insert into t(x) values (1)",
                          "insert into o.u values (2)")
    assert (got["commits"], got["batch commits"]) == (2, 0), got
    assert got["journals opened"] >= 3  # two journals and the super-journal
    assert c.execute("select (select count(*) from t) + "
                     "(select count(*) from o.u)").fetchone()[0] == 2
    c.close()


@batch
def test_writes_after_the_batch_join_its_commit(tmp):
    """Without secure_delete, a page freed in the transaction is not
    written, and SQLite grows the file to its header's size after the
    batch (pager.c:6586-6591). B1: that write is in the same pmtx
    transaction, and the file has the size its header says."""
    p, c = fresh(tmp)
    c.execute("pragma secure_delete=off")
    c.execute("insert into t(x) values (0)")
    got = one_transaction(c,
                          "insert into t(x, v) values (1, randomblob(60000))",
                          "delete from t where x = 1",
                          "insert into t(x) values (2)")
    assert (got["commits"], got["batch commits"]) == (1, 1), got
    pages = c.execute("pragma page_count").fetchone()[0] * \
        c.execute("pragma page_size").fetchone()[0]
    info = c.execute("pragma pmtx_info").fetchone()[0]
    assert "file %d bytes" % pages in info, info
    c.close()
    c = psq.connect(p)
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    assert c.execute("select x from t order by k").fetchall() == [(0,), (2,)]
    c.close()


# ---- failures ----

def fill_until_full(c, sql, args=()):
    """Run sql until SQLITE_FULL; the checksum before the failed one."""
    for _ in range(2000):
        before = checksum(c)
        try:
            c.execute(sql, args)
        except sqlite3.OperationalError as e:
            assert "full" in str(e), e
            return before
    raise AssertionError("never full")


# Two ways to be full: the region cannot grow at the commit (the sync,
# B4), or a write of the batch passes max_size (B3). Zero blobs in 64 KiB
# pages are mostly zero chunks, which take no space (dbfile.c, D5): the
# file reaches max_size before the region fills.
FULL = {
    "region": (4096, "randomblob(100000)", "commit failed"),
    "file": (65536, "zeroblob(3000000)", "would pass"),
}


@batch
@pytest.mark.parametrize("runtime", ["undo", "redo"])
@pytest.mark.parametrize("where", sorted(FULL))
def test_sqlite_full_in_a_batch_leaves_the_last_commit_writable(
        tmp, runtime, where):
    page, blob, msg = FULL[where]
    p = os.path.join(tmp, "app.db")
    c = psq.connect(p, runtime=runtime, size="8M", max_size="12M")
    c.execute("pragma page_size=%d" % page)
    c.execute("pragma cache_size=-100000")  # no spill: every commit batches
    c.execute("create table t(k integer primary key, x int, v blob)")
    d = Delta(c)
    before = fill_until_full(
        c, "insert into t(x, v) values (1, %s)" % blob)
    assert msg in psq.errmsg(c)
    got = d()
    assert got["batch rollbacks"] == 1 and got["journals opened"] == 0, got
    assert got["batch commits"] == got["commits"] > 0, got
    assert checksum(c) == before
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    # Still writable: deleting gives space back, and then inserts fit.
    n = before[0]
    c.execute("delete from t where k > ?", (n - 3,))
    c.execute("insert into t(x, v) values (2, %s)" % blob)
    assert d()["batch commits"] == got["batch commits"] + 2
    want = checksum(c)
    c.close()
    c = psq.connect(p)
    assert checksum(c) == want and want[0] == n - 2
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    c.close()


@batch
def test_a_failure_after_the_batch_drops_it(tmp):
    """B4: the write that grows the file after the batch (see
    test_writes_after_the_batch_join_its_commit) passes max_size. SQLite
    reports SQLITE_FULL without a sync, and the unlock must drop the
    batch, not commit it (the file would be shorter than its header)."""
    p = os.path.join(tmp, "app.db")
    c = psq.connect(p, size="8M", max_size="12M")
    c.execute("pragma page_size=65536")
    c.execute("pragma cache_size=-100000")
    c.execute("pragma secure_delete=off")
    c.execute("create table t(k integer primary key, x int, v blob)")
    c.execute("insert into t(x) values (0)")
    before = checksum(c)
    d = Delta(c)
    c.execute("begin")
    c.execute("insert into t(x, v) values (1, zeroblob(13000000))")
    c.execute("delete from t where x = 1")
    c.execute("insert into t(x) values (2)")
    with pytest.raises(sqlite3.OperationalError, match="full"):
        c.execute("commit")
    assert "would pass the region's maximum size" in psq.errmsg(c)
    got = d()
    assert (got["commits"], got["batch commits"], got["batch rollbacks"]) \
        == (0, 0, 1), got
    assert checksum(c) == before
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    c.execute("insert into t(x) values (3)")
    c.close()
    c = psq.connect(p)
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    assert c.execute("select x from t order by k").fetchall() == [(0,), (3,)]
    c.close()


@batch
def test_a_spill_in_journal_mode_memory_refuses_the_batch(tmp):
    """journal_mode=MEMORY keeps the journal in SQLite's heap through a
    spill, so the batch would begin with the spilled pages written. B2:
    BEGIN_ATOMIC_WRITE refuses, SQLite writes without a batch, and a commit
    that fails (the region is full) leaves the last commit. (Committing
    the spilled pages at BEGIN, as vfs.c once did, left their updates of
    existing rows in while the transaction failed.)"""
    p, c = fresh(tmp, size="4M", max_size="8M")
    c.execute("pragma journal_mode=memory")
    c.execute("pragma cache_size=100")
    c.execute("begin")
    for _ in range(300):
        c.execute("insert into t(x, v) values (0, randomblob(3000))")
    c.execute("commit")
    d = Delta(c)
    # 20 pages updated first, so spilled first, then 90 new pages: the
    # spill writes the updates, the new pages wait in the cache.
    step = ("update t set x = x + 1 where k <= 20; "
            "insert into t(x, v) select 0, randomblob(3000) "
            "from (select 1 from t limit 90);")
    before = None
    for _ in range(200):
        before = checksum(c)
        try:
            c.executescript("begin; " + step + " commit;")
        except sqlite3.OperationalError as e:
            assert "full" in str(e), e
            break
    else:
        raise AssertionError("never full")
    if c.in_transaction:
        c.execute("rollback")
    assert checksum(c) == before
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    got = d()
    assert got["batches refused"] >= 1 and got["batch commits"] == 0, got
    c.close()
    c = psq.connect(p)
    assert checksum(c) == before
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    c.close()
