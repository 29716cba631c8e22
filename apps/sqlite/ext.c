/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ext.c - the loadable extension's entry point, and the SQL function
 * pmtx_errmsg().
 *
 *   sqlite3 shell   .load ./libpmtx_sqlite
 *                   .open file:app.db?vfs=pmtx
 *   Python          conn.load_extension("./libpmtx_sqlite")
 *                   sqlite3.connect("file:app.db?vfs=pmtx", uri=True)
 *
 * SQLite derives the entry point sqlite3_pmtxsqlite_init from the file
 * name; sqlite3_extension_init is the same function for other names.
 */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include "pmtx_sqlite.h"
#include "vfs.h"

static void fn_errmsg(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	sqlite3_result_text(ctx, pmtx_sqlite_errmsg(), -1, SQLITE_TRANSIENT);
}

static int add_functions(sqlite3 *db, char **err,
                         const sqlite3_api_routines *api)
{
	return sqlite3_create_function(db, "pmtx_errmsg", 0, SQLITE_UTF8,
	                               NULL, fn_errmsg, NULL, NULL);
}

int pmtx_sqlite_register(int make_default)
{
	int rc = vfs_register(make_default);
	return rc ? rc : sqlite3_auto_extension((void (*)(void))add_functions);
}

#ifndef SQLITE_CORE
static int init(sqlite3 *db, char **err, const sqlite3_api_routines *api)
{
	SQLITE_EXTENSION_INIT2(api);
	int rc = pmtx_sqlite_register(0);
	if (rc == SQLITE_OK)
		rc = add_functions(db, err, api);
	return rc == SQLITE_OK ? SQLITE_OK_LOAD_PERMANENTLY : rc;
}

__attribute__((visibility("default")))
int sqlite3_pmtxsqlite_init(sqlite3 *db, char **err,
                            const sqlite3_api_routines *api);
__attribute__((visibility("default")))
int sqlite3_extension_init(sqlite3 *db, char **err,
                           const sqlite3_api_routines *api);

int sqlite3_pmtxsqlite_init(sqlite3 *db, char **err,
                            const sqlite3_api_routines *api)
{
	return init(db, err, api);
}

int sqlite3_extension_init(sqlite3 *db, char **err,
                           const sqlite3_api_routines *api)
{
	return init(db, err, api);
}
#endif
