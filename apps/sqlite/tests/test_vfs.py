# SPDX-License-Identifier: BSD-3-Clause
"""pmtx-sqlite as a SQLite user sees it: opening, committing, rolling back,
locks between connections and processes, bad files, a full region, WAL,
moving data in and out, and the sqlite3 shell."""
import os
import sqlite3
import subprocess
import sys

import pytest

import psq
from apptest import run_threads  # on sys.path: conftest.py
from conftest import RUNTIMES


def db_path(tmp, name="app.db"):
    return os.path.join(tmp, name)


def last_errmsg():
    """pmtx_errmsg() of this thread, read through a plain connection."""
    psq.load()
    m = sqlite3.connect(":memory:")
    try:
        return psq.errmsg(m)
    finally:
        m.close()


def small_db(tmp):
    """A database of one table and one row that spans several chunks."""
    p = db_path(tmp)
    c = psq.connect(p)
    c.execute("create table t(x)")
    c.execute("insert into t values (randomblob(20000))")
    c.close()
    return p


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_commits_survive_reopen_and_rollbacks_leave_nothing(tmp, runtime):
    p = db_path(tmp)
    c = psq.connect(p, runtime=runtime)
    c.execute("create table t(a integer primary key, b text)")
    c.execute("insert into t(b) values ('one'), ('two')")
    c.execute("begin")
    c.execute("insert into t(b) select b || '!' from t")
    c.execute("rollback")
    c.execute("begin")
    c.execute("insert into t(b) values ('three')")
    c.execute("savepoint s")
    c.execute("delete from t")
    c.execute("rollback to s")
    c.execute("commit")
    assert c.execute("pragma pmtx_runtime").fetchone()[0] == runtime
    c.close()
    c = psq.connect(p)
    assert c.execute("select b from t order by a").fetchall() == [
        ("one",), ("two",), ("three",)]
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    c.close()
    assert not os.path.exists(p + "-journal")


def test_no_journal_reaches_the_disk(tmp):
    # The journal backend's own journal (app.db.pmtxj) is the region's,
    # made when the region opens: no SQLite journal is ever written.
    files = sorted(["app.db"] + psq.sidecars("app.db"))
    p = db_path(tmp)
    c = psq.connect(p)
    c.execute("create table t(x)")
    c.execute("begin")
    c.execute("insert into t values (zeroblob(100000))")
    assert sorted(os.listdir(tmp)) == files
    c.execute("commit")
    for mode in ("delete", "truncate", "persist", "memory", "off"):
        assert c.execute("pragma journal_mode=%s" % mode).fetchone()[0] \
            == mode
        c.execute("insert into t values (1)")
        assert sorted(os.listdir(tmp)) == files
    c.close()


def test_wal_is_refused_with_a_message(tmp):
    c = psq.connect(db_path(tmp))
    with pytest.raises(sqlite3.DatabaseError, match="WAL is not supported"):
        c.execute("pragma journal_mode=wal")
    assert c.execute("pragma journal_mode").fetchone()[0] == "delete"
    c.close()


@pytest.mark.parametrize("page_size", [512, 4096, 65536])
def test_page_sizes_and_blobs_that_span_pages(tmp, page_size):
    p = db_path(tmp)
    c = psq.connect(p)
    c.execute("pragma page_size=%d" % page_size)
    c.execute("create table t(k integer primary key, v blob)")
    blobs = [os.urandom(n) for n in (1, 700, 5000, 70000, 300000)]
    for b in blobs:
        c.execute("insert into t(v) values (?)", (b,))
    c.execute("delete from t where k = 2")
    c.execute("vacuum")
    c.close()
    c = psq.connect(p)
    assert c.execute("pragma page_size").fetchone()[0] == page_size
    got = [r[0] for r in c.execute("select v from t order by k")]
    assert got == blobs[:1] + blobs[2:]
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    c.close()


def test_a_transaction_larger_than_the_cache_spills_and_reads_back(tmp):
    """A cache spill writes pages before the commit: reads in the same
    transaction must see them, and a rollback must undo them."""
    p = db_path(tmp)
    c = psq.connect(p)
    c.execute("pragma cache_size=10")
    c.execute("create table t(k integer primary key, v blob)")
    c.execute("begin")
    for i in range(400):
        c.execute("insert into t values (?, ?)", (i, bytes([i % 251]) * 900))
    assert c.execute("select count(*), sum(length(v)) from t").fetchone() \
        == (400, 360000)
    c.execute("rollback")
    assert c.execute("select count(*) from t").fetchone()[0] == 0
    c.execute("begin")
    for i in range(400):
        c.execute("insert into t values (?, ?)", (i, bytes([i % 251]) * 900))
    c.execute("commit")
    c.close()
    c = psq.connect(p)
    assert c.execute("select count(*) from t").fetchone()[0] == 400
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    c.close()


def test_connections_of_one_process_share_the_database_and_its_locks(tmp):
    p = db_path(tmp)
    a = psq.connect(p)
    b = psq.connect(p)
    a.execute("create table t(x)")
    a.execute("begin immediate")
    a.execute("insert into t values (1)")
    # A reader goes on reading the last commit while a writer is reserved.
    assert b.execute("select count(*) from t").fetchone()[0] == 0
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        b.execute("begin immediate")
    b.execute("begin")
    b.execute("select count(*) from t").fetchone()
    # The writer cannot commit while b reads (SHARED): busy, not corrupt.
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        a.execute("commit")
    b.execute("commit")
    a.execute("commit")
    assert b.execute("select count(*) from t").fetchone()[0] == 1
    a.close()
    b.close()


def test_threads_with_their_own_connections_lose_no_commit(tmp):
    p = db_path(tmp)
    c = psq.connect(p)
    c.execute("create table t(th, i)")
    c.close()
    errors = []

    def worker(n):
        try:
            w = psq.connect(p, timeout=30)
            for i in range(200):
                w.execute("begin immediate")
                w.execute("insert into t values (?, ?)", (n, i))
                w.execute("commit")
            w.close()
        except Exception as e:  # reported below
            errors.append(e)

    run_threads(worker, 4, timeout=120)
    assert not errors
    c = psq.connect(p)
    assert c.execute("select count(*), count(distinct th) from t") \
        .fetchone() == (800, 4)
    c.close()


HOLDER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import psq
c = psq.connect(sys.argv[2])
c.execute("select count(*) from sqlite_master").fetchone()
print("open", flush=True)
sys.stdin.readline()
"""


def test_a_second_process_gets_busy_not_corruption(tmp):
    p = db_path(tmp)
    c = psq.connect(p)
    c.execute("create table t(x)")
    c.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, os.path.dirname(__file__), p],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            psq.connect(p).execute("select 1")
    finally:
        holder.communicate("\n", timeout=30)
    c = psq.connect(p)
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    c.close()


def c_is(path):
    """The commit runtime a connection to path runs."""
    c = psq.connect(path)
    try:
        return c.execute("pragma pmtx_runtime").fetchone()[0]
    finally:
        c.close()


def test_twin_databases_run_twin_only(tmp):
    """runtime=twin creates a twin region of max_size bytes (64 MiB by
    default), which runs twin only: another runtime in its URI or its
    pmtx_runtime pragma is refused with a message, as twin is for a
    database created without it; the data stays as committed."""
    p = db_path(tmp, "twin.db")
    c = psq.connect(p, runtime="twin")
    c.execute("create table t(x)")
    c.execute("insert into t values (1), (2)")
    c.close()
    assert os.path.getsize(p) == 64 << 20
    assert c_is(p) == "twin"
    q = db_path(tmp, "plain.db")
    c = psq.connect(q)
    c.execute("create table t(x)")
    c.close()
    for path, other, why in ((p, "redo", "runs runtime=twin only"),
                             (q, "twin", "not created with runtime=twin")):
        c = psq.connect(path)
        with pytest.raises(sqlite3.OperationalError, match=why):
            c.execute("pragma pmtx_runtime=" + other)
        c.close()
        with pytest.raises(sqlite3.OperationalError, match="unable to open"):
            psq.connect(path, runtime=other)
        assert why in last_errmsg()
    c = psq.connect(p)
    assert c.execute("select x from t").fetchall() == [(1,), (2,)]
    c.close()


KILLED_WRITER = r"""
import os, signal, sys
sys.path.insert(0, sys.argv[1])
import psq
c = psq.connect(sys.argv[2], backend="journal")
c.execute("create table t(k integer primary key, v)")
for i in range(int(sys.argv[3])):
    c.execute("insert into t(v) values (?)", ("row %d" % i,))
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("backend", ["journal", "hardware", "file"])
def test_commits_only_in_the_journal_survive_kill9_under_any_backend(
        tmp, backend):
    """backend=journal: a commit is durable once its record is in
    "<db>.pmtxj"; the region file gets it at a checkpoint or at close.
    After kill -9 the next open replays the journal, whatever its
    backend; another backend then removes the journal."""
    p = db_path(tmp)
    out = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, os.path.dirname(__file__), p,
         "50"], capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PMTX_JOURNAL_SIZE="64M"))
    assert out.returncode == -9, out.stderr
    assert os.path.exists(p + ".pmtxj")
    c = psq.connect(p, backend=backend)
    assert c.execute("select count(*), max(v) from t").fetchone() == (
        50, "row 9")
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    assert ("backend %s," % backend) in c.execute(
        "pragma pmtx_info").fetchone()[0]
    c.execute("insert into t(v) values ('after')")
    c.close()
    assert os.path.exists(p + ".pmtxj") == (backend == "journal")
    c = psq.connect(p, backend="journal")
    assert c.execute("select count(*) from t").fetchone()[0] == 51
    c.close()


def test_a_database_made_again_drops_the_journal_of_the_old_one(tmp):
    """Deleting a database leaves its "<db>.pmtxj" if the user forgets
    it; a new database made at the same path, under any backend, drops
    it (pmtx_create) rather than refusing it or replaying it."""
    p = db_path(tmp)
    for backend in ("journal", "journal", "hardware"):
        c = psq.connect(p, backend=backend)
        assert c.execute("select count(*) from sqlite_master").fetchone() \
            == (0,)
        c.execute("create table t(x)")
        c.execute("insert into t values (?)", (backend,))
        c.close()
        c = psq.connect(p, backend=backend)
        assert c.execute("select x from t").fetchall() == [(backend,)]
        c.close()
        assert os.path.exists(p + ".pmtxj") == (backend == "journal")
        os.unlink(p)
    assert sorted(os.listdir(tmp)) == []


def test_an_empty_journal_of_another_database_is_dropped(tmp):
    """A database file put in the place of another (mv) while the old
    one's journal is still beside it: the journal is not this region's
    (its uuid differs). Closed cleanly, it holds no record, so it is
    nobody's and dropped; one holding records is refused, never applied
    (tests/test_journal.c)."""
    p, q = db_path(tmp), db_path(tmp, "other.db")
    for path in (p, q):
        c = psq.connect(path, backend="journal")
        c.execute("create table t(x)")
        c.execute("insert into t values (?)", (path,))
        c.close()
    os.replace(q, p)
    c = psq.connect(p, backend="journal")
    assert c.execute("select x from t").fetchall() == [(q,)]
    c.close()


def test_a_region_of_another_application_is_refused_by_layout(tmp):
    p = db_path(tmp, "other.region")
    subprocess.run([psq.PMTX_CMD, "create", p, "--size", "4M",
                    "--layout", "pmcached"], check=True)
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        psq.connect(p)
    assert "layout" in last_errmsg()


def region_root(path):
    import json
    out = subprocess.run([psq.PMTX_CMD, "info", "--json", path],
                         check=True, capture_output=True, text=True).stdout
    # The root object follows its 16-byte pmtx object header.
    return json.loads(out)["areas"]["root_off"] + 16


@pytest.mark.parametrize("field,value", [
    (0, b"XXXXXXXX"),                      # magic
    (12, (99).to_bytes(4, "little")),      # chunk shift
    (16, (1 << 50).to_bytes(8, "little")),  # size past the directory
    (24, (8).to_bytes(8, "little")),       # directory offset
    (40, (1).to_bytes(8, "little")),       # a reserved field
])
def test_a_corrupt_root_is_refused_as_corrupt(tmp, field, value):
    p = small_db(tmp)
    root = region_root(p)
    with open(p, "r+b") as f:
        f.seek(root + field)
        f.write(value)
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        psq.connect(p)
    assert "pmtx-sqlite region" in last_errmsg()


def test_a_chunk_offset_that_names_no_chunk_is_refused(tmp):
    p = small_db(tmp)
    root = region_root(p)
    with open(p, "r+b") as f:
        f.seek(root + 24)
        d = int.from_bytes(f.read(8), "little")
        f.seek(d + 8)                      # entry 1 := entry 0 + 8
        e0 = int.from_bytes(f.read(8), "little")
        f.seek(d + 8)
        f.write((e0 + 8).to_bytes(8, "little"))
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        psq.connect(p)


def test_the_size_limit_gives_sqlite_full_and_keeps_what_was_committed(tmp):
    p = db_path(tmp)
    c = psq.connect(p, size="8M", max_size="12M")
    c.execute("create table t(k integer primary key, v blob)")
    n = 0
    with pytest.raises(sqlite3.OperationalError, match="full"):
        for n in range(1, 1000):
            c.execute("insert into t(v) values (randomblob(100000))")
    assert "maximum size" in psq.errmsg(c)
    assert c.execute("select count(*) from t").fetchone()[0] == n - 1
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    # Deleting gives space back (secure_delete zeroes the pages, and a
    # zero chunk is freed), so the same connection can write again.
    c.execute("delete from t where k > %d" % (n - 4))
    c.execute("insert into t(v) values (randomblob(100000))")
    c.close()
    c = psq.connect(p)
    assert c.execute("select count(*) from t").fetchone()[0] == n - 3
    c.execute("delete from t where k > 2")
    for _ in range(20):
        c.execute("insert into t(v) values (randomblob(100000))")
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    c.close()


FILLER = r"""
import resource, signal, sys
sys.path.insert(0, sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
import psq
c = psq.connect(sys.argv[2], size="8M", max_size="1G")
c.execute("create table if not exists t(k integer primary key, v blob)")
resource.setrlimit(resource.RLIMIT_FSIZE, (40 << 20, 40 << 20))
n = 0
try:
    while n < 10000:
        c.execute("insert into t(v) values (randomblob(200000))")
        n += 1
except Exception as e:
    print(n, type(e).__name__, e, psq.errmsg(c), flush=True)
"""


def test_a_full_file_system_gives_sqlite_full_and_loses_nothing(tmp):
    """The file size limit stands in for a full disk: growing the region
    fails with EFBIG, as ENOSPC would."""
    p = db_path(tmp)
    out = subprocess.run(
        [sys.executable, "-c", FILLER, os.path.dirname(__file__), p],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    n, kind, *rest = out.stdout.split()
    assert kind == "OperationalError" and "full" in " ".join(rest)
    c = psq.connect(p)
    assert c.execute("select count(*) from t").fetchone()[0] == int(n)
    assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
    c.close()


def test_vacuum_into_imports_and_exports(tmp):
    plain = db_path(tmp, "plain.db")
    s = sqlite3.connect(plain)
    s.execute("create table t(a integer primary key, b text, c blob)")
    s.execute("create index tb on t(b)")
    for i in range(500):
        s.execute("insert into t(b, c) values (?, ?)",
                  ("row%d" % i, os.urandom(i * 10)))
    s.commit()
    want = psq.dump(s)
    pm = db_path(tmp, "pm.db")
    s.execute("vacuum into ?", (psq.uri(pm),))
    s.close()
    c = psq.connect(pm)
    assert psq.dump(c) == want
    back = db_path(tmp, "back.db")
    c.execute("vacuum into ?", (psq.uri(back, vfs="unix"),))
    c.close()
    b = sqlite3.connect(back)
    assert psq.dump(b) == want
    b.close()


def test_the_sqlite3_shell_loads_it(tmp):
    p = db_path(tmp)
    ext = os.path.splitext(psq.EXT)[0]
    script = (".load %s\n.open %s\ncreate table t(x);\n"
              "insert into t values (42);\nselect x from t;\n"
              % (ext, psq.uri(p)))
    out = subprocess.run(["sqlite3"], input=script, capture_output=True,
                         text=True, timeout=60)
    assert out.stdout.strip() == "42", out.stderr
    c = psq.connect(p)
    assert c.execute("select x from t").fetchone()[0] == 42
    c.close()


APSW = r"""
import sys
import apsw
logged = []
apsw.config(apsw.SQLITE_CONFIG_LOG, lambda code, msg: logged.append(msg))
m = apsw.Connection(":memory:")
m.enableloadextension(True)
m.loadextension(sys.argv[1])
c = apsw.Connection(sys.argv[2], vfs="pmtx")
c.execute("create table t(x); insert into t values (1)")
c.close()
try:
    apsw.Connection(sys.argv[3], vfs="pmtx")
except apsw.CantOpenError:
    print("cantopen")
print("\n".join(logged))
"""


def test_apsw_loads_it_and_logs_why_an_open_failed(tmp):
    """apsw in a process of its own: the log must be configured before
    SQLite starts, which the sqlite3 module of this process has done."""
    pytest.importorskip("apsw")
    bad = db_path(tmp, "bad.db")
    with open(bad, "wb") as f:
        f.write(b"not a region" * 1000)
    out = subprocess.run([sys.executable, "-c", APSW, psq.EXT,
                          db_path(tmp), bad], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "cantopen"
    assert any(s.startswith("pmtx: ") and "bad.db" in s for s in lines)


def test_bad_uri_parameters_are_refused(tmp):
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        psq.connect(db_path(tmp), runtime="fast")
    assert "runtime=fast" in last_errmsg()
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        psq.connect(db_path(tmp), runtime="cow")
    assert "runtime=cow" in last_errmsg()
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):
        psq.connect(db_path(tmp), backend="journal", domain="pdom2")
    assert "no PDOM-2" in last_errmsg()
    assert not os.path.exists(db_path(tmp))
