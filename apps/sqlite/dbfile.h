/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dbfile.h - a SQLite database file kept in a pmtx region (layout.h), as
 * the VFS sees it: bytes to read and write, a size, a commit, and the
 * lock levels of the connections that share it. No SQLite dependency.
 *
 * Functions return 0, a positive errno value or a negative PMTX_E_*
 * status (pmtx.h); the VFS turns them into SQLite's codes.
 */
#ifndef PSQ_DBFILE_H
#define PSQ_DBFILE_H

#include <stddef.h>
#include <stdint.h>

#include <pmtx.h>

#include "layout.h"
#include "locks.h"

struct psq_db;

/* How to open or create a database's region. */
struct psq_config {
	pmtx_options o;        /* domain, backend, barrier, max_size, ... */
	pmtx_runtime runtime;  /* runtime of the commit transactions */
	size_t size;           /* create: initial region size */
};

void db_config_init(struct psq_config *c);
/* 0 if region r can run commit runtime rt (PMTX_RT_DEFAULT: its own),
 * else PMTX_E_UNSUPPORTED with msg: a twin region runs twin only, and
 * twin runs in twin regions only. */
int db_runtime_fits(pmtx_region *r, pmtx_runtime rt, char *msg,
                    size_t len);

/* The database at path, shared with every other connection of the process
 * that has it open: opened and recovered at the first acquire, created
 * (when create) if the file does not exist. msg gets the reason of a
 * failure. */
int db_acquire(const char *path, const struct psq_config *c, int create,
               struct psq_db **out, char *msg, size_t len);
void db_release(struct psq_db *db);

/* Make an already open region the database called path (the crash-state
 * explorer, or a program that manages its own regions); sets it up if it
 * is fresh. The caller keeps the region, and closes it after detach. */
int db_attach(const char *path, pmtx_region *r, pmtx_runtime rt,
              char *msg, size_t len);
int db_detach(const char *path);

/* Check a region's database against S1-S4 (layout.h); 0 or
 * PMTX_E_CORRUPT with msg. A region never set up passes. */
int db_validate(pmtx_region *r, char *msg, size_t len);
/* Call fn for every heap block the database owns (S3). */
int db_walk(pmtx_region *r, int (*fn)(pmtx_off off, void *arg), void *arg);

/* Read n bytes at off into buf, as SQLite sees the file (its writes not
 * yet committed included). *got < n at the end of the file (the rest of
 * buf is zeroed). */
void db_read(struct psq_db *db, void *buf, size_t n, uint64_t off,
             size_t *got);
int db_write(struct psq_db *db, const void *buf, size_t n, uint64_t off);
int db_truncate(struct psq_db *db, uint64_t size);
uint64_t db_size(struct psq_db *db);
/* Make every write since the last commit durable in one pmtx transaction
 * (the commit point). On failure nothing of them is applied and they are
 * dropped: the file reads as at the last commit. */
int db_commit(struct psq_db *db);
/* Drop the writes since the last commit (a batch-atomic rollback). */
void db_discard(struct psq_db *db);
/* Whether anything was written or truncated since the last commit. */
int db_dirty(struct psq_db *db);

/* Lock levels (locks.h) under the database's lock. */
int db_lock(struct psq_db *db, const void *who, int *level, int want);
void db_unlock(struct psq_db *db, const void *who, int *level, int want);
int db_reserved(struct psq_db *db);

pmtx_region *db_region(struct psq_db *db);
pmtx_runtime db_runtime(struct psq_db *db);
void db_set_runtime(struct psq_db *db, pmtx_runtime rt);

/* Counters of this process's commits (all databases). */
struct psq_stats {
	uint64_t commits;       /* pmtx transactions committed */
	uint64_t chunks_new;    /* chunks allocated */
	uint64_t chunks_same;   /* written chunks found unchanged */
	uint64_t bytes_written; /* bytes given to pmtx_write */
	/* Counted by the VFS (vfs.c, B1-B4): */
	uint64_t batch_commits;   /* batches committed (at their sync) */
	uint64_t batch_rollbacks; /* batches dropped: rolled back, their
	                           * commit failed or never came */
	uint64_t batch_refused;   /* BEGIN_ATOMIC_WRITEs refused (B2) */
	uint64_t journals;        /* DRAM journals opened */
};
enum psq_event {
	PSQ_EV_BATCH_COMMIT, PSQ_EV_BATCH_ROLLBACK, PSQ_EV_BATCH_REFUSED,
	PSQ_EV_JOURNAL,
};
void db_stats_get(struct psq_stats *st);
void db_stats_count(enum psq_event ev);

#endif /* PSQ_DBFILE_H */
