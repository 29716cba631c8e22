/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * psq-speedtest1: SQLite's own speedtest1 (test/speedtest1.c of the
 * SQLite source tree, compiled unchanged with main renamed) with the pmtx
 * VFS registered first, so that `--vfs pmtx` and a database name such as
 * `file:/dev/shm/st.db?vfs=pmtx&runtime=redo&domain=pdom1` select it.
 * Debian's SQLite has SQLITE_USE_URI on, so the URI parameters reach the
 * VFS although speedtest1 opens without SQLITE_OPEN_URI.
 *
 * One option of its own, which must come first and is not passed on:
 *   --synchronous MODE   PRAGMA synchronous=MODE on every connection as
 *                        it opens (speedtest1 itself offers only OFF)
 */
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "pmtx_sqlite.h"

int speedtest1_main(int argc, char **argv);

static const char *synchronous;

static int set_synchronous(sqlite3 *db, char **err,
                           const sqlite3_api_routines *api)
{
	char sql[64];
	snprintf(sql, sizeof sql, "PRAGMA synchronous=%s", synchronous);
	return sqlite3_exec(db, sql, 0, 0, err);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "--synchronous")) {
		synchronous = argv[2];
		argv[2] = argv[0];
		argv += 2;
		argc -= 2;
		sqlite3_auto_extension((void (*)(void))set_synchronous);
	}
	int rc = pmtx_sqlite_register(0);
	if (rc != SQLITE_OK) {
		fprintf(stderr, "psq-speedtest1: cannot register the pmtx VFS: "
		        "%s\n", sqlite3_errstr(rc));
		return 1;
	}
	return speedtest1_main(argc, argv);
}
