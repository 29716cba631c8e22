/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vfs.c - the "pmtx" SQLite VFS: SQLite's file interface over dbfile.c
 * (the database), memfile.c (its journals) and the default VFS (all else).
 *
 * Design
 * ------
 * Files by the flags SQLite opens them with:
 *   MAIN_DB            a pmtx region (dbfile.c), opened once per process
 *                      and shared by its connections (D7);
 *   MAIN_JOURNAL,      DRAM files by name (memfile.c): never on disk;
 *   SUPER_JOURNAL
 *   WAL                refused (SQLITE_CANTOPEN), and PRAGMA journal_mode=WAL
 *                      fails with a message (file control PRAGMA);
 *   anything else      (temporary databases, statement journals) the
 *                      default VFS, opened in place in the same
 *                      sqlite3_file, so its own methods serve it.
 *
 * Why a journal in DRAM is enough (the argument for V1-V3)
 *  V1. The commit point of a write transaction is its database sync: the
 *      SQLITE_FCNTL_SYNC file control, or xSync, whichever comes first
 *      (SQLite sends the file control even with synchronous=OFF), or, if
 *      neither came, the unlock below EXCLUSIVE. There db_commit applies
 *      every write since the last commit in one pmtx transaction.
 *  V2. Before that point the region holds the previous commit whole (D1).
 *      A crash then loses the DRAM journal and the DRAM overlay together,
 *      and the previous commit is what SQLite's hot-journal rollback
 *      would have restored: there is nothing to roll back.
 *  V3. After that point the region holds the new commit. SQLite deletes
 *      (or zeroes) the journal afterwards; a crash in between finds the
 *      new commit and no journal, which is the state SQLite reaches when
 *      the deletion completes. An acknowledged commit (its COMMIT
 *      returned) is therefore never lost, and an unacknowledged one is
 *      there whole or not at all.
 *  V4. Within a running process the journal is SQLite's own: statement
 *      and transaction rollbacks write the journal's pages back through
 *      the overlay, and the sync that follows commits them (or finds them
 *      unchanged, D5).
 *  V5. A multi-database transaction (ATTACH) commits each database in its
 *      own pmtx transaction: atomic per database, not across them (the
 *      super-journal is in DRAM too).
 *
 * Batch atomic writes (B1-B4; line numbers are SQLite 3.40.1's)
 * The VFS advertises SQLITE_IOCAP_BATCH_ATOMIC. A SQLite built without
 * SQLITE_ENABLE_BATCH_ATOMIC_WRITE (Debian's) ignores it. One built with
 * it keeps the journal of a transaction in its own heap when the database
 * was not empty (pager.c:1209-1213, used at 5793), and at the commit, if
 * that journal is still in the heap, there is no super-journal and
 * synchronous is not OFF (bBatch, pager.c:6452-6457), it writes the dirty
 * pages between BEGIN_ATOMIC_WRITE and COMMIT_ATOMIC_WRITE instead of
 * journalling them (6545-6568): no journal is opened through this VFS. A
 * cache spill first makes the journal a file (pagerStress, 4586-4591), so
 * a transaction that spilled commits the usual way; except in
 * journal_mode=MEMORY, whose heap journal never becomes a file, so that
 * there a batch can begin with the spilled pages already written (B2).
 *  B1. A batch does not move V1's commit point. COMMIT_ATOMIC_WRITE only
 *      marks the batch complete. SQLite may still write after it: the page
 *      that grows the file to the size its header gives (6586-6591), or a
 *      backup's pages of another page size (backup.c:505-531). Then it
 *      sends the sync (6594-6595), whose db_commit applies all of it in one
 *      pmtx transaction. Committing at COMMIT_ATOMIC_WRITE would leave
 *      those writes to a second transaction; a crash between the two would
 *      leave a file shorter than its header says, which SQLite refuses as
 *      corrupt (btree.c:3295). (SQLite's documentation says the file
 *      control commits. The pager does not depend on that: it closes
 *      its heap journal after the batch either way, and a failed sync
 *      ends the transaction as a failed COMMIT_ATOMIC_WRITE would, B4.)
 *  B2. A batch must begin at the last commit. BEGIN_ATOMIC_WRITE with
 *      writes pending returns SQLITE_IOERR_BEGIN_ATOMIC, and SQLite writes
 *      the same pages without a batch (6558-6564; its journal stays in the
 *      heap); the sync commits the transaction whole. (Committing the
 *      pending writes at BEGIN made two pmtx transactions of one SQLite
 *      transaction, and a batch that then failed left the first one in.)
 *  B3. SQLite sends ROLLBACK_ATOMIC_WRITE on any failure after BEGIN
 *      (6553-6555): it drops the overlay, which by B2 holds the batch's
 *      writes alone, so the file reads as at the last commit. On an IOERR
 *      (not IOERR_NOMEM) SQLite then makes its journal a file (DRAM, V2)
 *      and writes its dirty pages, all still dirty, again without a batch
 *      (6558-6564, 6571): the sync commits them. On any other code
 *      (SQLITE_FULL past max_size, NOMEM) it closes the heap journal
 *      (6566) and returns the code to the application; the rollback finds
 *      no journal and drops its page cache (6706-6718), which is then read
 *      again from the file: the last commit.
 *  B4. After the batch the heap journal is gone (6566). If the commit at
 *      the sync fails (SQLITE_FULL: the region is full), D3 drops the
 *      overlay, and SQLite, with no journal, drops its cache as in B3. If
 *      SQLite fails before the sync (the growing write of B1 past
 *      max_size), the unlock or close that ends the transaction drops the
 *      batch (settle()). V1 would commit it: the application told
 *      SQLITE_FULL would find its transaction in, in a file shorter than
 *      its header (as when COMMIT_ATOMIC_WRITE committed, before B1).
 *      Not closed: under locking_mode=EXCLUSIVE no unlock comes, so the
 *      failed batch stays in the overlay and the connection reads it
 *      (SQLITE_CORRUPT: its header counts more pages than the file has)
 *      until it closes, which drops it. Nothing acknowledged is lost.
 * PRAGMA pmtx_stats counts batch commits (B1), batch rollbacks (B3, B4),
 * batches refused (B2) and the DRAM journals opened, so the path a commit
 * took is visible: a batch opens no journal.
 *
 * Errors are pmtx statuses below this file and SQLite codes above it:
 * sqlite_rc() is the one translation, and fail() records the message.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3

#include "dbfile.h"
#include "memfile.h"
#include "pmtx_sqlite.h"
#include "vfs.h"

enum { PF_DB = 1, PF_MEM };

struct psq_file {
	sqlite3_file base;
	int kind;
	struct psq_db *db;   /* PF_DB */
	int lock;            /* PF_DB: this connection's level (LK_*) */
	int batch;           /* PF_DB: a batch awaits its commit (B1, B4) */
	struct memfile *mf;  /* PF_MEM */
};

static sqlite3_vfs *dflt; /* the VFS everything else goes to */
static _Thread_local char tls_msg[512];

const char *pmtx_sqlite_errmsg(void)
{
	return tls_msg;
}

/* ---- errors ---- */

static int sqlite_rc(int status, int io_default)
{
	switch (status) {
	case 0:
		return SQLITE_OK;
	case PMTX_E_NOMEM: case PMTX_E_NO_SPACE: case ENOSPC: case EFBIG:
		return SQLITE_FULL;
	case ENOMEM:
		return SQLITE_NOMEM;
	case PMTX_E_LOCKED: case EBUSY: case EAGAIN:
		return SQLITE_BUSY;
	case PMTX_E_CORRUPT: case PMTX_E_BAD_CHECKSUM: case PMTX_E_TRUNCATED:
		return SQLITE_CORRUPT;
	case PMTX_E_BAD_MAGIC: case PMTX_E_BAD_LAYOUT: case PMTX_E_BAD_VERSION:
	case PMTX_E_TOO_SMALL: case ENOENT: case EACCES: case EISDIR:
		return SQLITE_CANTOPEN;
	default:
		return io_default;
	}
}

/* Record why, tell sqlite3_log, and return the SQLite code. */
static int fail(int status, int io_default, const char *msg)
{
	int rc = sqlite_rc(status, io_default);
	if (msg && *msg)
		snprintf(tls_msg, sizeof(tls_msg), "%s", msg);
	else
		snprintf(tls_msg, sizeof(tls_msg), "%s", pmtx_strerror(status));
	sqlite3_log(rc, "pmtx: %s", tls_msg);
	return rc;
}

static int commit(struct psq_file *f, int io_default)
{
	int batch = f->batch;
	f->batch = 0;
	int st = db_commit(f->db);
	if (batch)
		db_stats_count(st ? PSQ_EV_BATCH_ROLLBACK : PSQ_EV_BATCH_COMMIT);
	if (!st)
		return SQLITE_OK;
	char msg[256];
	snprintf(msg, sizeof(msg), "commit failed, the database is as at "
	         "its previous commit: %s%s%s", pmtx_strerror(st),
	         *pmtx_errmsg() ? ": " : "", pmtx_errmsg());
	int rc = fail(st, io_default, msg);
	/* Never BUSY: SQLite would retry the COMMIT, find nothing dirty
	 * (the overlay is gone, D3) and report success. */
	return rc == SQLITE_BUSY ? io_default : rc;
}

/* The end of a write transaction that no sync ended (V1): commit, unless
 * it is a batch, whose sync would have come but for a failure (B4). */
static int settle(struct psq_file *f, int io_default)
{
	if (!f->batch)
		return commit(f, io_default);
	f->batch = 0;
	db_discard(f->db);
	db_stats_count(PSQ_EV_BATCH_ROLLBACK);
	return SQLITE_OK;
}

/* ---- the database file ---- */

static int db_close(sqlite3_file *p)
{
	struct psq_file *f = (struct psq_file *)p;
	int rc = SQLITE_OK;
	if (f->lock >= LK_EXCLUSIVE)
		rc = settle(f, SQLITE_IOERR_CLOSE);
	db_unlock(f->db, f, &f->lock, LK_NONE);
	db_release(f->db);
	f->db = NULL;
	return rc;
}

static int db_xread(sqlite3_file *p, void *buf, int n, sqlite3_int64 off)
{
	struct psq_file *f = (struct psq_file *)p;
	size_t got;
	db_read(f->db, buf, (size_t)n, (uint64_t)off, &got);
	return got == (size_t)n ? SQLITE_OK : SQLITE_IOERR_SHORT_READ;
}

static int db_xwrite(sqlite3_file *p, const void *buf, int n,
                     sqlite3_int64 off)
{
	struct psq_file *f = (struct psq_file *)p;
	size_t max = pmtx_region_max_size(db_region(f->db));
	if ((uint64_t)off + (uint64_t)n > max) {
		char msg[160];
		snprintf(msg, sizeof(msg), "the database would pass the "
		         "region's maximum size (%zu bytes; URI max_size=)",
		         max);
		return fail(PMTX_E_NOMEM, SQLITE_FULL, msg);
	}
	int st = db_write(f->db, buf, (size_t)n, (uint64_t)off);
#ifdef PSQ_MUTATION
	/* Tests only: commit every write at once, breaking V1, so that the
	 * kill -9 test is seen to catch a half transaction. */
	if (!st && getenv("PSQ_MUTANT") &&
	    !strcmp(getenv("PSQ_MUTANT"), "write_through"))
		st = db_commit(f->db);
#endif
	return st ? fail(st, SQLITE_IOERR_WRITE, NULL) : SQLITE_OK;
}

static int db_xtruncate(sqlite3_file *p, sqlite3_int64 size)
{
	struct psq_file *f = (struct psq_file *)p;
	int st = db_truncate(f->db, (uint64_t)size);
	return st ? fail(st, SQLITE_IOERR_TRUNCATE, NULL) : SQLITE_OK;
}

static int db_xsync(sqlite3_file *p, int flags)
{
	return commit((struct psq_file *)p, SQLITE_IOERR_FSYNC);
}

static int db_xsize(sqlite3_file *p, sqlite3_int64 *size)
{
	*size = (sqlite3_int64)db_size(((struct psq_file *)p)->db);
	return SQLITE_OK;
}

static int db_xlock(sqlite3_file *p, int level)
{
	struct psq_file *f = (struct psq_file *)p;
	int st = db_lock(f->db, f, &f->lock, level);
	return st == EBUSY ? SQLITE_BUSY : st ? SQLITE_IOERR_LOCK : SQLITE_OK;
}

static int db_xunlock(sqlite3_file *p, int level)
{
	struct psq_file *f = (struct psq_file *)p;
	int rc = SQLITE_OK;
	if (f->lock >= LK_EXCLUSIVE)
		rc = settle(f, SQLITE_IOERR_UNLOCK); /* V1: no sync came */
	db_unlock(f->db, f, &f->lock, level);
	return rc;
}

static int db_xreserved(sqlite3_file *p, int *out)
{
	*out = db_reserved(((struct psq_file *)p)->db);
	return SQLITE_OK;
}

static int db_xsector(sqlite3_file *p)
{
	return PSQ_CHUNK;
}

static int db_xdevchar(sqlite3_file *p)
{
	return SQLITE_IOCAP_POWERSAFE_OVERWRITE | SQLITE_IOCAP_BATCH_ATOMIC;
}

/* B2: a batch starts at the last commit, or SQLite writes without one. */
static int batch_begin(struct psq_file *f)
{
	if (!db_dirty(f->db))
		return SQLITE_OK;
	db_stats_count(PSQ_EV_BATCH_REFUSED);
	return SQLITE_IOERR_BEGIN_ATOMIC;
}

/* The commit file controls, the pmtx_* pragmas (config.c) and PRAGMA
 * journal_mode=WAL. */
static int db_xfcntl(sqlite3_file *p, int op, void *arg)
{
	struct psq_file *f = (struct psq_file *)p;
	switch (op) {
	case SQLITE_FCNTL_SYNC:
		return commit(f, SQLITE_IOERR_FSYNC);
	case SQLITE_FCNTL_BEGIN_ATOMIC_WRITE:
		return batch_begin(f);
	case SQLITE_FCNTL_COMMIT_ATOMIC_WRITE:
		f->batch = 1; /* B1: the sync that follows commits it */
		return SQLITE_OK;
	case SQLITE_FCNTL_ROLLBACK_ATOMIC_WRITE:
		f->batch = 0;
		db_discard(f->db); /* B3 */
		db_stats_count(PSQ_EV_BATCH_ROLLBACK);
		return SQLITE_OK;
	case SQLITE_FCNTL_VFSNAME:
		*(char **)arg = sqlite3_mprintf("pmtx");
		return SQLITE_OK;
	case SQLITE_FCNTL_SIZE_HINT:
	case SQLITE_FCNTL_COMMIT_PHASETWO:
		return SQLITE_OK;
	case SQLITE_FCNTL_HAS_MOVED:
		*(int *)arg = 0;
		return SQLITE_OK;
	case SQLITE_FCNTL_PRAGMA:
		return vfs_pragma(f->db, (char **)arg);
	default:
		return SQLITE_NOTFOUND;
	}
}

static const sqlite3_io_methods db_methods = {
	.iVersion = 1, /* no shared memory: no WAL */
	.xClose = db_close, .xRead = db_xread, .xWrite = db_xwrite,
	.xTruncate = db_xtruncate, .xSync = db_xsync,
	.xFileSize = db_xsize, .xLock = db_xlock, .xUnlock = db_xunlock,
	.xCheckReservedLock = db_xreserved, .xFileControl = db_xfcntl,
	.xSectorSize = db_xsector, .xDeviceCharacteristics = db_xdevchar,
};

static int open_db(struct psq_file *f, const char *name, int flags)
{
	struct psq_config c;
	char msg[384] = "";
	int st = vfs_config(name, &c, msg, sizeof(msg));
	if (!st)
		st = db_acquire(name, &c, !!(flags & SQLITE_OPEN_CREATE),
		                &f->db, msg, sizeof(msg));
	if (st)
		return fail(st, SQLITE_CANTOPEN, msg);
	f->kind = PF_DB;
	f->lock = LK_NONE;
	f->base.pMethods = &db_methods;
	return SQLITE_OK;
}

/* ---- journals in DRAM ---- */

static int mem_close(sqlite3_file *p)
{
	mf_close(((struct psq_file *)p)->mf);
	return SQLITE_OK;
}

static int mem_read(sqlite3_file *p, void *buf, int n, sqlite3_int64 off)
{
	size_t got = mf_read(((struct psq_file *)p)->mf, buf, (size_t)n,
	                     (uint64_t)off);
	return got == (size_t)n ? SQLITE_OK : SQLITE_IOERR_SHORT_READ;
}

static int mem_write(sqlite3_file *p, const void *buf, int n,
                     sqlite3_int64 off)
{
	return mf_write(((struct psq_file *)p)->mf, buf, (size_t)n,
	                (uint64_t)off) ? SQLITE_IOERR_NOMEM : SQLITE_OK;
}

static int mem_truncate(sqlite3_file *p, sqlite3_int64 size)
{
	return mf_truncate(((struct psq_file *)p)->mf, (uint64_t)size)
	       ? SQLITE_IOERR_NOMEM : SQLITE_OK;
}

static int mem_sync(sqlite3_file *p, int flags)
{
	return SQLITE_OK; /* V2: a journal promises nothing across a crash */
}

static int mem_size(sqlite3_file *p, sqlite3_int64 *size)
{
	*size = (sqlite3_int64)mf_size(((struct psq_file *)p)->mf);
	return SQLITE_OK;
}

static int mem_lock(sqlite3_file *p, int level)
{
	return SQLITE_OK; /* the database's locks cover its journal */
}

static int mem_reserved(sqlite3_file *p, int *out)
{
	*out = 0;
	return SQLITE_OK;
}

static int mem_fcntl(sqlite3_file *p, int op, void *arg)
{
	return SQLITE_NOTFOUND;
}

static int mem_sector(sqlite3_file *p)
{
	return PSQ_CHUNK;
}

static int mem_devchar(sqlite3_file *p)
{
	return SQLITE_IOCAP_POWERSAFE_OVERWRITE | SQLITE_IOCAP_SAFE_APPEND |
	       SQLITE_IOCAP_SEQUENTIAL;
}

static const sqlite3_io_methods mem_methods = {
	.iVersion = 1,
	.xClose = mem_close, .xRead = mem_read, .xWrite = mem_write,
	.xTruncate = mem_truncate, .xSync = mem_sync, .xFileSize = mem_size,
	.xLock = mem_lock, .xUnlock = mem_lock,
	.xCheckReservedLock = mem_reserved, .xFileControl = mem_fcntl,
	.xSectorSize = mem_sector, .xDeviceCharacteristics = mem_devchar,
};

static int open_mem(struct psq_file *f, const char *name, int flags)
{
	int st = mf_open(name, !!(flags & SQLITE_OPEN_CREATE), &f->mf);
	if (st)
		return st == ENOENT ? SQLITE_CANTOPEN : SQLITE_NOMEM;
	f->kind = PF_MEM;
	f->base.pMethods = &mem_methods;
	db_stats_count(PSQ_EV_JOURNAL);
	return SQLITE_OK;
}

/* ---- the VFS ---- */

static int is_journal_name(const char *name)
{
	static const char *const sfx[] = { "-journal", "-wal", "-shm" };
	size_t n = strlen(name);
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		size_t k = strlen(sfx[i]);
		if (n > k && !strcmp(name + n - k, sfx[i]))
			return 1;
	}
	return 0;
}

static int vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *p,
                    int flags, int *out_flags)
{
	struct psq_file *f = (struct psq_file *)p;
	memset(f, 0, sizeof(*f));
	if (out_flags)
		*out_flags = flags;
	if (name && (flags & SQLITE_OPEN_MAIN_DB))
		return open_db(f, name, flags);
	if (name && (flags & (SQLITE_OPEN_MAIN_JOURNAL |
	                      SQLITE_OPEN_SUPER_JOURNAL)))
		return open_mem(f, name, flags);
	if (flags & SQLITE_OPEN_WAL)
		return fail(PMTX_E_UNSUPPORTED, SQLITE_CANTOPEN,
		            "a pmtx database has no write-ahead log");
	return dflt->xOpen(dflt, name, p, flags, out_flags);
}

static int vfs_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	if (!mf_delete(name) || is_journal_name(name))
		return SQLITE_OK;
	return dflt->xDelete(dflt, name, sync_dir);
}

static int vfs_access(sqlite3_vfs *vfs, const char *name, int flags,
                      int *out)
{
	/* A journal or WAL name is answered by the DRAM files alone: a
	 * stale file of that name on disk is not this database's. */
	*out = mf_exists(name);
	if (*out || is_journal_name(name))
		return SQLITE_OK;
	return dflt->xAccess(dflt, name, flags, out);
}

static int vfs_fullpath(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	return dflt->xFullPathname(dflt, name, n, out);
}

static void *vfs_dlopen(sqlite3_vfs *vfs, const char *path)
{
	return dflt->xDlOpen(dflt, path);
}

static void vfs_dlerror(sqlite3_vfs *vfs, int n, char *msg)
{
	dflt->xDlError(dflt, n, msg);
}

static void (*vfs_dlsym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
	return dflt->xDlSym(dflt, h, sym);
}

static void vfs_dlclose(sqlite3_vfs *vfs, void *h)
{
	dflt->xDlClose(dflt, h);
}

static int vfs_random(sqlite3_vfs *vfs, int n, char *out)
{
	return dflt->xRandomness(dflt, n, out);
}

static int vfs_sleep(sqlite3_vfs *vfs, int us)
{
	return dflt->xSleep(dflt, us);
}

static int vfs_time(sqlite3_vfs *vfs, double *out)
{
	return dflt->xCurrentTime(dflt, out);
}

static int vfs_lasterror(sqlite3_vfs *vfs, int n, char *out)
{
	return dflt->xGetLastError(dflt, n, out);
}

static int vfs_time64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	return dflt->xCurrentTimeInt64(dflt, out);
}

static sqlite3_vfs pmtx_vfs = {
	.iVersion = 2, .mxPathname = 512, .zName = "pmtx",
	.xOpen = vfs_open, .xDelete = vfs_delete, .xAccess = vfs_access,
	.xFullPathname = vfs_fullpath, .xDlOpen = vfs_dlopen,
	.xDlError = vfs_dlerror, .xDlSym = vfs_dlsym,
	.xDlClose = vfs_dlclose, .xRandomness = vfs_random,
	.xSleep = vfs_sleep, .xCurrentTime = vfs_time,
	.xGetLastError = vfs_lasterror, .xCurrentTimeInt64 = vfs_time64,
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;

int vfs_register(int make_default)
{
	int rc = SQLITE_OK;
	pthread_mutex_lock(&reg_mu);
	if (!dflt) {
		dflt = sqlite3_vfs_find(NULL);
		if (!dflt || dflt->iVersion < 2) {
			dflt = NULL;
			rc = SQLITE_ERROR;
		} else {
			pmtx_vfs.szOsFile = dflt->szOsFile >
			        (int)sizeof(struct psq_file)
			        ? dflt->szOsFile : (int)sizeof(struct psq_file);
			pmtx_vfs.mxPathname = dflt->mxPathname;
		}
	}
	if (!rc)
		rc = sqlite3_vfs_register(&pmtx_vfs, make_default);
	pthread_mutex_unlock(&reg_mu);
	return rc;
}

int pmtx_sqlite_attach(const char *path, pmtx_region *r, pmtx_runtime rt)
{
	char msg[256] = "";
	int st = db_attach(path, r, rt, msg, sizeof(msg));
	return st ? fail(st, SQLITE_CANTOPEN, msg) : SQLITE_OK;
}

int pmtx_sqlite_detach(const char *path)
{
	int st = db_detach(path);
	return st == EBUSY ? SQLITE_BUSY : st ? SQLITE_NOTFOUND : SQLITE_OK;
}
