/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kill9_writer.c - the writer of pmtx-sqlite's kill -9 test (kill9.py):
 * commits numbered transactions through the pmtx VFS and acknowledges
 * each on standard output once its COMMIT has returned, until killed.
 *
 *   psq-kill9-writer URI FIRST [--spill]
 *
 * Transaction n (from FIRST on):
 *   - inserts rows (n, 0..k-1) into t, k = 3, or 150 when n % 23 == 0
 *     (a transaction larger than the page cache with --spill: its pages
 *     are written before the commit);
 *   - deletes the rows of transaction n - 200;
 *   - sets meta.last = n.
 * Row payloads are a function of (n, i), so the checker can tell a row
 * that is wrong from one that is missing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "pmtx_sqlite.h"

static void die(sqlite3 *db, const char *what)
{
	fprintf(stderr, "psq-kill9-writer: %s: %s (%s)\n", what,
	        sqlite3_errmsg(db), pmtx_sqlite_errmsg());
	exit(1);
}

static void exec(sqlite3 *db, const char *sql)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		die(db, sql);
}

static void payload(long n, int i, char *out, size_t len)
{
	snprintf(out, len, "row %ld.%d %0*ld", n, i, (int)(len - 40),
	         n * 7919 + i);
}

static void insert_rows(sqlite3 *db, sqlite3_stmt *ins, long n, int k)
{
	char buf[120];
	for (int i = 0; i < k; i++) {
		payload(n, i, buf, sizeof(buf));
		sqlite3_bind_int64(ins, 1, n);
		sqlite3_bind_int(ins, 2, i);
		sqlite3_bind_text(ins, 3, buf, -1, SQLITE_STATIC);
		if (sqlite3_step(ins) != SQLITE_DONE)
			die(db, "insert");
		sqlite3_reset(ins);
	}
}

static void one(sqlite3 *db, sqlite3_stmt *ins, long n)
{
	char sql[160];
	exec(db, "BEGIN IMMEDIATE");
	insert_rows(db, ins, n, n % 23 == 0 ? 150 : 3);
	snprintf(sql, sizeof(sql), "DELETE FROM t WHERE n = %ld", n - 200);
	exec(db, sql);
	snprintf(sql, sizeof(sql), "UPDATE meta SET last = %ld", n);
	exec(db, sql);
	exec(db, "COMMIT");
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: psq-kill9-writer URI FIRST [--spill]\n");
		return 2;
	}
	sqlite3 *db;
	if (pmtx_sqlite_register(0) != SQLITE_OK)
		return 1;
	if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE |
	                    SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
	                    "pmtx") != SQLITE_OK)
		die(db, "open");
	if (argc > 3 && !strcmp(argv[3], "--spill"))
		exec(db, "PRAGMA cache_size=8");
	/* One transaction: the checker takes a schema that is there in
	 * part, or without its meta row, for a torn commit. */
	exec(db, "BEGIN IMMEDIATE;"
	         "CREATE TABLE IF NOT EXISTS t(n, i, v, PRIMARY KEY(n, i));"
	         "CREATE TABLE IF NOT EXISTS meta(last);"
	         "INSERT INTO meta SELECT 0 WHERE NOT EXISTS "
	         "(SELECT 1 FROM meta);"
	         "COMMIT");
	sqlite3_stmt *ins;
	if (sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?, ?, ?)", -1, &ins,
	                       NULL) != SQLITE_OK)
		die(db, "prepare");
	for (long n = atol(argv[2]);; n++) {
		one(db, ins, n);
		printf("%ld\n", n);
		fflush(stdout);
	}
}
