# SPDX-License-Identifier: BSD-3-Clause
"""Random SQL workloads run side by side on the pmtx VFS and on SQLite's
default VFS must give the same result for every statement (rows, or the
same error) and the same .dump at the end, also after the pmtx database
is closed and opened again mid-way."""
import os
import random
import sqlite3

import pytest

import psq
from conftest import RUNTIMES

STEPS = int(os.environ.get("PSQ_DIFF_STEPS", "600"))


class Workload:
    """Statements chosen from a seed: tables with indexes, inserts of
    numbers, text and blobs (some spanning many pages), updates, deletes,
    transactions that commit or roll back, savepoints, VACUUM."""

    def __init__(self, seed):
        self.rnd = random.Random(seed)
        self.tables = []
        self.in_tx = False
        self.savepoints = 0

    def value(self):
        r = self.rnd
        kind = r.random()
        if kind < 0.3:
            return r.randrange(-1000, 1000)
        if kind < 0.55:
            return "".join(r.choice("abcdefgh ") for _ in
                           range(r.randrange(0, 60)))
        if kind < 0.9:
            return r.randbytes(r.choice((10, 500, 3000, 9000)))
        if kind < 0.97:
            return r.randbytes(r.choice((40000, 120000)))
        return None

    def create(self):
        name = "t%d" % len(self.tables)
        self.tables.append(name)
        sql = ["create table %s(id integer primary key, a, b, c unique)"
               % name]
        if self.rnd.random() < 0.7:
            sql.append("create index %s_a on %s(a)" % (name, name))
        return [(s, ()) for s in sql]

    def write(self):
        r, t = self.rnd, self.rnd.choice(self.tables)
        k = r.random()
        if k < 0.5:
            return [("insert into %s(a, b, c) values (?, ?, ?)" % t,
                     (self.value(), self.value(), r.randrange(300)))]
        if k < 0.75:
            return [("update %s set b = ?, a = a + 1 where id %% ? = ?" % t,
                     (self.value(), r.randrange(2, 9), r.randrange(2)))]
        if k < 0.9:
            return [("delete from %s where id %% ? = 0" % t,
                     (r.randrange(3, 12),))]
        return [("insert or replace into %s(a, c) select b, c + 1 from %s "
                 "where id %% 5 = ?" % (t, t), (r.randrange(5),))]

    def control(self):
        r = self.rnd
        if not self.in_tx:
            self.in_tx = True
            return [("begin", ())]
        k = r.random()
        if k < 0.25 and self.savepoints < 3:
            self.savepoints += 1
            return [("savepoint s%d" % self.savepoints, ())]
        if k < 0.4 and self.savepoints:
            n = self.savepoints
            self.savepoints -= 1
            verb = "rollback to s%d" if r.random() < 0.6 else "release s%d"
            out = [(verb % n, ())]
            if verb.startswith("rollback"):
                out.append(("release s%d" % n, ()))
            return out
        self.in_tx = False
        self.savepoints = 0
        return [("commit" if k < 0.75 else "rollback", ())]

    def query(self):
        t = self.rnd.choice(self.tables)
        return [("select count(*), sum(length(b)), total(a), "
                 "group_concat(c) from %s" % t, ()),
                ("select id, a, b, c from %s order by id" % t, ())]

    def step(self):
        r = self.rnd.random()
        if not self.tables or (r < 0.03 and len(self.tables) < 5):
            return self.create()
        if r < 0.6:
            return self.write()
        if r < 0.75:
            return self.control()
        if r < 0.77 and not self.in_tx:
            return [("vacuum", ())]
        return self.query()

    def finish(self):
        return [("commit", ())] if self.in_tx else []


def run(conn, sql, args):
    try:
        return ("ok", conn.execute(sql, args).fetchall())
    except sqlite3.Error as e:
        return ("error", type(e).__name__, str(e))


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_workloads_match_the_default_vfs(tmp, runtime, seed):
    pm_path = os.path.join(tmp, "pm.db")
    ref = psq.connect(os.path.join(tmp, "ref.db"), vfs=None)
    pm = psq.connect(pm_path, runtime=runtime)
    page = random.Random(seed).choice((1024, 4096, 8192))
    for c in (ref, pm):
        c.execute("pragma page_size=%d" % page)
        c.execute("pragma cache_size=%d" % (50 if seed == 2 else -2000))
    w = Workload(seed)
    seen = {"ok": 0, "error": 0, "rollback": 0, "reopen": 0}
    for i in range(STEPS):
        for sql, args in w.step():
            a, b = run(ref, sql, args), run(pm, sql, args)
            assert a == b, "step %d: %s" % (i, sql)
            seen[a[0]] += 1
            seen["rollback"] += sql.startswith("rollback")
        if i >= STEPS // 2 and not seen["reopen"] and not w.in_tx:
            pm.close()
            pm = psq.connect(pm_path)
            seen["reopen"] = 1
    # The workload did what it claims: errors, rollbacks, a reopen.
    assert seen["error"] and seen["rollback"] and seen["reopen"], seen
    for sql, args in w.finish():
        assert run(ref, sql, args) == run(pm, sql, args)
    assert psq.dump(pm) == psq.dump(ref)
    pm.close()
    pm = psq.connect(pm_path)
    assert pm.execute("pragma integrity_check").fetchone()[0] == "ok"
    assert psq.dump(pm) == psq.dump(ref)
    pm.close()
    ref.close()
