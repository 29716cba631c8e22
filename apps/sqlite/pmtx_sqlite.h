/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmtx_sqlite.h - the "pmtx" SQLite VFS: a database file lives in a pmtx
 * region, and each SQLite commit is one failure-atomic pmtx transaction,
 * with no journal on disk (apps/sqlite/README.md).
 *
 * Loaded as an extension (libpmtx_sqlite.so), the VFS registers itself.
 * A program that links the static library calls pmtx_sqlite_register().
 * These functions return SQLite result codes (SQLITE_OK = 0).
 */
#ifndef PMTX_SQLITE_H
#define PMTX_SQLITE_H

#include <pmtx.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Register the VFS "pmtx" (make_default: as the default VFS). The SQL
 * function pmtx_errmsg() is added to every connection opened after. */
int pmtx_sqlite_register(int make_default);

/* Make the open region r the database file called path (an absolute
 * path): a connection that opens path with the pmtx VFS uses r, committing
 * with runtime rt. A fresh region is set up as an empty database. The
 * caller keeps r, and may close it once detached. SQLITE_CORRUPT (r is
 * not a pmtx-sqlite database), SQLITE_CANTOPEN (the name is taken). */
int pmtx_sqlite_attach(const char *path, pmtx_region *r, pmtx_runtime rt);
/* SQLITE_BUSY while a connection has it open; SQLITE_NOTFOUND. */
int pmtx_sqlite_detach(const char *path);

/* Why the last open or commit of a pmtx database failed in this thread,
 * or "". Also sent to sqlite3_log, and returned by SELECT pmtx_errmsg(). */
const char *pmtx_sqlite_errmsg(void);

#ifdef __cplusplus
}
#endif
#endif /* PMTX_SQLITE_H */
