/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * explore_sqlite.c - the power-failure crash-state explorer over SQLite
 * commits through the pmtx VFS (pmtx_explore.h).
 *
 * The workload drives real SQLite: the explorer's region is attached as a
 * database (pmtx_sqlite_attach) and every operation is one SQLite write
 * transaction on a fresh connection:
 *   setup    a table t(k INTEGER PRIMARY KEY, v BLOB), page size 1024
 *            (four pages to a 4 KiB chunk, so commits patch parts of
 *            chunks) and, with a seed whose low bit is set, 4096;
 *   run i    by the seed: insert 1-3 rows with blobs of 16 to 6,000
 *            bytes (overflow pages), update every row whose key is
 *            congruent to c mod 5, or delete those congruent to c mod 7;
 *            inside a savepoint that is rolled back, rows that must never
 *            appear; some transactions free most of the table, and the
 *            next ones reuse its pages;
 *   observe  PRAGMA integrity_check (a violation unless "ok"), then
 *            [rows, key1, hash1, key2, hash2, ...] in key order;
 *   model    the same vector computed in DRAM from the same choices;
 *   walk     the chunk directory and every chunk (dbfile.c, S3).
 *
 *   psq-explore [pmtx crashtest options]        (--help lists them)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmtx.h>
#include <pmtx_explore.h>
#include <sqlite3.h>

#include "common/util.h"
#include "dbfile.h"
#include "pmtx_sqlite.h"

#define NAME "/pmtx-explore-sqlite.db"
#define MAX_ROWS 2000
#define MAX_NTX 200

/* ---- the operations, as run and as modelled ---- */

struct op {
	int kind;        /* 0 insert, 1 update, 2 delete */
	unsigned nrows;  /* insert: rows */
	unsigned mod, c; /* update/delete: keys with k % mod == c */
	size_t size;     /* bytes of each new value */
};

static struct op op_of(const pmtx_explore_env *e, uint64_t i)
{
	static const size_t sizes[] = { 16, 300, 2000, 6000 };
	uint64_t r = pmtx_mix64(e->seed ^ pmtx_mix64(i + 1));
	struct op o = { .kind = r % 5 < 3 ? 0 : r % 5 == 3 ? 1 : 2 };
	o.nrows = 1 + (unsigned)(r >> 8) % 3;
	o.mod = o.kind == 1 ? 5 : (r >> 16) % 4 == 0 ? 1 : 7;
	o.c = (unsigned)(r >> 24) % o.mod;
	o.size = sizes[(r >> 32) % 4];
	return o;
}

/* The bytes of value j of operation i, and their hash. */
static void value(const pmtx_explore_env *e, uint64_t i, unsigned j,
                  unsigned char *out, size_t n)
{
	uint64_t s = pmtx_mix64(e->seed ^ (i << 8) ^ j);
	for (size_t b = 0; b < n; b++) {
		if (b % 8 == 0)
			s = pmtx_mix64(s);
		out[b] = (unsigned char)(s >> (b % 8 * 8));
	}
}

static uint64_t hash(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	for (size_t k = 0; k < n; k++)
		h = (h ^ b[k]) * 0x100000001b3ull;
	return h;
}

/* ---- SQLite over the explorer's region ---- */

static int with_db(const pmtx_explore_env *e, pmtx_region *r, sqlite3 **db)
{
	int rc = pmtx_sqlite_register(0);
	if (!rc)
		rc = pmtx_sqlite_attach(NAME, r, e->runtime);
	if (rc)
		return PMTX_E_CORRUPT;
	rc = sqlite3_open_v2(NAME, db, SQLITE_OPEN_READWRITE, "pmtx");
	if (rc) {
		sqlite3_close(*db);
		pmtx_sqlite_detach(NAME);
		return PMTX_E_CORRUPT;
	}
	return 0;
}

static int done_db(sqlite3 *db, int rc)
{
	if (sqlite3_close(db) != SQLITE_OK && !rc)
		rc = PMTX_E_INVAL;
	pmtx_sqlite_detach(NAME);
	return rc;
}

static int exec(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL) ? PMTX_E_IO : 0;
}

static int insert(const pmtx_explore_env *e, sqlite3 *db, uint64_t key,
                  uint64_t i, unsigned j, size_t n)
{
	unsigned char buf[6000];
	sqlite3_stmt *st;
	value(e, i, j, buf, n);
	if (sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?, ?)", -1, &st,
	                       NULL))
		return PMTX_E_IO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)key);
	sqlite3_bind_blob(st, 2, buf, (int)n, SQLITE_STATIC);
	int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : PMTX_E_IO;
	sqlite3_finalize(st);
	return rc;
}

static int update(const pmtx_explore_env *e, sqlite3 *db, uint64_t i,
                  const struct op *o)
{
	unsigned char buf[6000];
	sqlite3_stmt *st;
	value(e, i, 99, buf, o->size);
	if (sqlite3_prepare_v2(db, o->kind == 1
	        ? "UPDATE t SET v = ?3 WHERE k % ?1 = ?2"
	        : "DELETE FROM t WHERE k % ?1 = ?2", -1, &st, NULL))
		return PMTX_E_IO;
	sqlite3_bind_int(st, 1, (int)o->mod);
	sqlite3_bind_int(st, 2, (int)o->c);
	if (o->kind == 1)
		sqlite3_bind_blob(st, 3, buf, (int)o->size, SQLITE_STATIC);
	int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : PMTX_E_IO;
	sqlite3_finalize(st);
	return rc;
}

/* The rows a savepoint adds and rolls back: keys never used otherwise. */
static int doomed(const pmtx_explore_env *e, sqlite3 *db, uint64_t i)
{
	int rc = exec(db, "SAVEPOINT s");
	for (unsigned j = 0; j < 2 && !rc; j++)
		rc = insert(e, db, 1000000 + i * 4 + j, i, 50 + j, 3000);
	if (!rc)
		rc = exec(db, "ROLLBACK TO s");
	return rc ? rc : exec(db, "RELEASE s");
}

static int op_body(const pmtx_explore_env *e, sqlite3 *db, uint64_t i)
{
	struct op o = op_of(e, i);
	int rc = 0;
	if (i % 3 == 1)
		rc = doomed(e, db, i);
	if (o.kind != 0)
		return rc ? rc : update(e, db, i, &o);
	for (unsigned j = 0; j < o.nrows && !rc; j++)
		rc = insert(e, db, i * 4 + j, i, j, o.size);
	return rc;
}

static int sq_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	sqlite3 *db;
	int rc = with_db(e, r, &db);
	if (rc)
		return rc;
	rc = exec(db, e->seed & 1 ? "PRAGMA page_size=4096"
	                          : "PRAGMA page_size=1024");
	if (!rc)
		rc = exec(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)");
	return done_db(db, rc);
}

static int sq_run(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
                  uint64_t i)
{
	sqlite3 *db;
	int rc = with_db(e, r, &db);
	if (rc)
		return rc;
	rc = exec(db, "BEGIN IMMEDIATE");
	if (!rc)
		rc = op_body(e, db, i);
	rc = rc ? (exec(db, "ROLLBACK"), rc) : exec(db, "COMMIT");
	return done_db(db, rc);
}

static size_t observe_rows(sqlite3 *db, uint64_t *out, size_t max,
                           char *msg, size_t len)
{
	sqlite3_stmt *st;
	size_t n = 1;
	if (sqlite3_prepare_v2(db, "SELECT k, v FROM t ORDER BY k", -1, &st,
	                       NULL)) {
		snprintf(msg, len, "sqlite: %s", sqlite3_errmsg(db));
		return (size_t)-1;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (n + 2 > max) {
			sqlite3_finalize(st);
			return 0;
		}
		out[n++] = (uint64_t)sqlite3_column_int64(st, 0);
		out[n++] = hash(sqlite3_column_blob(st, 1),
		                (size_t)sqlite3_column_bytes(st, 1));
	}
	sqlite3_finalize(st);
	out[0] = (n - 1) / 2;
	return n;
}

static size_t sq_observe(const pmtx_explore_env *e, pmtx_region *r,
                         unsigned t, uint64_t *out, size_t max, char *msg,
                         size_t len)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	if (with_db(e, r, &db)) {
		snprintf(msg, len, "cannot open: %s", pmtx_sqlite_errmsg());
		return (size_t)-1;
	}
	size_t n = (size_t)-1;
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL)) {
		snprintf(msg, len, "sqlite: %s", sqlite3_errmsg(db));
	} else if (sqlite3_step(st) != SQLITE_ROW ||
	           strcmp((const char *)sqlite3_column_text(st, 0), "ok")) {
		snprintf(msg, len, "integrity_check: %s",
		         sqlite3_column_text(st, 0) ?
		         (const char *)sqlite3_column_text(st, 0) :
		         sqlite3_errmsg(db));
		sqlite3_finalize(st);
	} else {
		sqlite3_finalize(st);
		n = observe_rows(db, out, max, msg, len);
	}
	done_db(db, 0);
	return n;
}

/* ---- the model ---- */

struct row {
	uint64_t k, h;
};

static int cmp_row(const void *a, const void *b)
{
	uint64_t x = ((const struct row *)a)->k, y = ((const struct row *)b)->k;
	return (x > y) - (x < y);
}

static size_t model_apply(const pmtx_explore_env *e, uint64_t i,
                          struct row *rows, size_t n)
{
	unsigned char buf[6000];
	struct op o = op_of(e, i);
	if (o.kind == 0) {
		for (unsigned j = 0; j < o.nrows && n < MAX_ROWS; j++) {
			value(e, i, j, buf, o.size);
			rows[n++] = (struct row){ i * 4 + j, hash(buf, o.size) };
		}
		return n;
	}
	value(e, i, 99, buf, o.size);
	uint64_t h = hash(buf, o.size);
	size_t m = 0;
	for (size_t k = 0; k < n; k++) {
		if (rows[k].k % o.mod != o.c)
			rows[m++] = rows[k];
		else if (o.kind == 1)
			rows[m++] = (struct row){ rows[k].k, h };
	}
	return m;
}

static size_t sq_model(const pmtx_explore_env *e, unsigned t, uint64_t k,
                       uint64_t *out, size_t max)
{
	static struct row rows[MAX_ROWS];
	size_t n = 0;
	for (uint64_t i = 0; i < k; i++)
		n = model_apply(e, i, rows, n);
	qsort(rows, n, sizeof(rows[0]), cmp_row);
	if (1 + 2 * n > max)
		return 0;
	out[0] = n;
	for (size_t j = 0; j < n; j++) {
		out[1 + 2 * j] = rows[j].k;
		out[2 + 2 * j] = rows[j].h;
	}
	return 1 + 2 * n;
}

static int sq_walk(const pmtx_explore_env *e, pmtx_region *r,
                   pmtx_explore_block_fn fn, void *arg)
{
	return db_walk(r, fn, arg);
}

static const pmtx_explore_workload sqlite_wl = {
	.name = "sqlite",
	.help = "SQLite transactions through the pmtx VFS",
	.root_size = sizeof(struct psq_root),
	.region_size = 2u << 20,
	.layout = PSQ_LAYOUT,
	.runtimes = PMTX_EXPLORE_LOGGING | PMTX_EXPLORE_TWIN,
	.max_ntx = MAX_NTX,
	.setup = sq_setup,
	.run = sq_run,
	.observe = sq_observe,
	.model = sq_model,
	.walk = sq_walk,
};

int main(int argc, char **argv)
{
	const pmtx_explore_workload *const wls[] = {&sqlite_wl};
	return pmtx_explore_main(argc, argv, wls, 1);
}
