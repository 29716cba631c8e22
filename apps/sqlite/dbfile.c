/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dbfile.c - a SQLite database file in a pmtx region (dbfile.h).
 *
 * Design
 * ------
 * SQLite changes its database file only between taking an EXCLUSIVE lock
 * and the sync that ends its commit (SQLITE_FCNTL_SYNC, then xSync; the
 * file control arrives even with synchronous=OFF). Writes in that window
 * (the commit's pages, a cache spill, a rollback's restored pages) go to
 * a DRAM overlay of whole chunks (overlay.h); reads look at the overlay
 * first. The sync applies the overlay to the region in one pmtx
 * transaction: that transaction is the commit point, and it replaces
 * SQLite's journal as the means of atomicity (seed 000 section 6.4: the
 * dirty list applied in a single transaction).
 *
 * Invariants
 *  D1. The region holds exactly the file as of the last commit: nothing
 *      of a commit reaches it outside that commit's transaction (S5). A
 *      crash at any moment leaves the file of some commit whose sync had
 *      begun, and every commit whose sync returned.
 *  D2. The overlay is written, read and applied under the database's
 *      write lock (rw); plain reads take it shared. Under SQLite's locks
 *      only the EXCLUSIVE holder writes, so the overlay is its own.
 *  D3. A failed commit leaves the region at the previous commit (pmtx
 *      aborts the transaction) and drops the overlay, so the file reads as
 *      that commit: SQLite, which saw its sync fail, rolls back to it.
 *  D4. size is the file's size with the overlay applied; root->size is
 *      the committed one; low is the least size the file has had since
 *      the last commit. A committed chunk at or past low's last chunk
 *      was truncated away: it reads as zero unless the overlay has it,
 *      and the commit frees it unless the overlay has it. A truncation
 *      zeroes the tail of its last chunk in the overlay (S4).
 *  D5. A commit writes only what changed: a chunk that is new is filled
 *      with naked stores (a block of this transaction, flushed: S5);
 *      a chunk that exists is compared with the overlay line by line, and
 *      only the runs of changed lines go through pmtx_write. An unchanged
 *      chunk costs a compare and nothing else. A chunk that becomes all
 *      zero is freed and its entry cleared (a hole): the pages SQLite's
 *      secure_delete zeroes give their space back to the region, and cost
 *      the commit one 8-byte entry instead of a chunk of log, so that a
 *      DELETE still commits in a region that is full.
 *  D6. Lock order: the registry lock, then a database's rw, then its lock
 *      mutex (lk_mu). db_commit is called with no lock held.
 *  D7. One region per process per file: connections to the same file
 *      (found by device and inode, or by an attached name) share one
 *      struct psq_db, its overlay and its locks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dbfile.h"
#include "overlay.h"

#define LINE 64
#define DIR_MIN 64

struct psq_db {
	struct psq_db *next;     /* registry list (reg_mu) */
	char *path;              /* name it was opened or attached by */
	dev_t dev;               /* identity of an opened file */
	ino_t ino;
	int refs;                /* connections (reg_mu) */
	int attached;            /* region owned by the caller */
	pmtx_region *r;
	struct psq_root *root;
	_Atomic int runtime;     /* pmtx_runtime of the commits */
	pthread_rwlock_t rw;     /* D2 */
	struct overlay ov;       /* rw */
	uint64_t size;           /* rw (D4) */
	uint64_t low;            /* rw (D4) */
	pthread_mutex_t lk_mu;
	struct psq_locks lk;     /* lk_mu */
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct psq_db *reg_head;
static _Atomic uint64_t st_commits, st_new, st_same, st_bytes;
static _Atomic uint64_t st_events[PSQ_EV_JOURNAL + 1];

static uint64_t nchunks(uint64_t size)
{
	return (size + PSQ_CHUNK - 1) >> PSQ_CHUNK_SHIFT;
}

static pmtx_off *dir_of(pmtx_region *r, const struct psq_root *root)
{
	return PMTX_PTR(r, root->dir, pmtx_off);
}

void db_config_init(struct psq_config *c)
{
	memset(c, 0, sizeof(*c));
	pmtx_options_init(&c->o);
	c->o.layout = PSQ_LAYOUT;
	c->o.root_size = sizeof(struct psq_root);
	c->o.max_size = (size_t)4 << 30;
	c->runtime = PMTX_RT_REDO;
	c->size = (size_t)8 << 20;
}

/* ---- validation (S1-S4, S6) ---- */

static int bad(char *msg, size_t len, const char *what, uint64_t v)
{
	snprintf(msg, len, "pmtx-sqlite region: %s (0x%llx)", what,
	         (unsigned long long)v);
	return PMTX_E_CORRUPT;
}

static int cmp_off(const void *a, const void *b)
{
	pmtx_off x = *(const pmtx_off *)a, y = *(const pmtx_off *)b;
	return (x > y) - (x < y);
}

/* S3: live entries are distinct chunk-sized blocks, none the directory. */
static int check_chunks(pmtx_region *r, const struct psq_root *root,
                        char *msg, size_t len)
{
	const pmtx_off *dir = dir_of(r, root);
	uint64_t n = nchunks(root->size), live = 0;
	pmtx_off *v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return ENOMEM;
	int rc = 0;
	for (uint64_t i = 0; i < root->dir_cap && !rc; i++) {
		if (!dir[i])
			continue;
		if (i >= n)
			rc = bad(msg, len, "chunk past the end of the file", i);
		else if (dir[i] == root->dir ||
		         pmtx_usable_size(r, dir[i]) < PSQ_CHUNK)
			rc = bad(msg, len, "chunk offset is not a chunk", dir[i]);
		else
			v[live++] = dir[i];
	}
	qsort(v, live, sizeof(*v), cmp_off);
	for (uint64_t i = 1; i < live && !rc; i++)
		if (v[i] == v[i - 1])
			rc = bad(msg, len, "chunk named twice", v[i]);
	free(v);
	return rc;
}

static int check_root(pmtx_region *r, const struct psq_root *root,
                      char *msg, size_t len)
{
	if (root->magic != PSQ_MAGIC)
		return bad(msg, len, "bad magic", root->magic);
	if (root->major != PSQ_FORMAT_MAJOR) {
		snprintf(msg, len, "pmtx-sqlite format %u.%u; this build "
		         "reads %u.x", root->major, root->minor,
		         PSQ_FORMAT_MAJOR);
		return PMTX_E_BAD_VERSION;
	}
	if (root->chunk_shift != PSQ_CHUNK_SHIFT)
		return bad(msg, len, "bad chunk size", root->chunk_shift);
	if (root->reserved[0] | root->reserved[1] | root->reserved[2])
		return bad(msg, len, "reserved root field set", 0);
	if ((root->dir == 0) != (root->dir_cap == 0))
		return bad(msg, len, "directory and capacity disagree",
		           root->dir);
	if (root->dir_cap > (UINT64_MAX >> PSQ_CHUNK_SHIFT) ||
	    root->size > (root->dir_cap << PSQ_CHUNK_SHIFT))
		return bad(msg, len, "size past the directory", root->size);
	if (root->dir && (root->dir_cap > SIZE_MAX / 8 ||
	    pmtx_usable_size(r, root->dir) < root->dir_cap * 8))
		return bad(msg, len, "directory is not a block of its size",
		           root->dir);
	return check_chunks(r, root, msg, len);
}

int db_validate(pmtx_region *r, char *msg, size_t len)
{
	size_t rsz;
	const struct psq_root *root = pmtx_root(r, &rsz);
	if (rsz < sizeof(*root))
		return bad(msg, len, "root object too small", rsz);
	if (root->magic == 0 && root->size == 0 && root->dir == 0 &&
	    root->dir_cap == 0)
		return 0; /* never set up: db_setup will */
	/* pmtx_usable_size is 0 for pmtx's own log chunks too: an entry
	 * naming one would have SQLite's pages written over a log. */
	return check_root(r, root, msg, len);
}

int db_walk(pmtx_region *r, int (*fn)(pmtx_off, void *), void *arg)
{
	const struct psq_root *root = pmtx_root(r, NULL);
	if (!root->dir)
		return 0;
	int rc = fn(root->dir, arg);
	const pmtx_off *dir = dir_of(r, root);
	for (uint64_t i = 0; i < root->dir_cap && !rc; i++)
		if (dir[i])
			rc = fn(dir[i], arg);
	return rc;
}

/* A fresh region (zero root) becomes an empty database file. */
static int db_setup(pmtx_region *r, pmtx_runtime rt)
{
	struct psq_root *root = pmtx_root(r, NULL);
	if (root->magic == PSQ_MAGIC)
		return 0;
	struct psq_root v = {
		.magic = PSQ_MAGIC, .major = PSQ_FORMAT_MAJOR,
		.minor = PSQ_FORMAT_MINOR, .chunk_shift = PSQ_CHUNK_SHIFT,
	};
	pmtx_tx *tx;
	int rc = pmtx_begin(r, rt, &tx);
	if (rc)
		return rc;
	if ((rc = pmtx_write(tx, root, &v, sizeof(v)))) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}

/* ---- the registry (D7) ---- */

static struct psq_db *db_new(const char *path, pmtx_region *r,
                             pmtx_runtime rt)
{
	struct psq_db *db = calloc(1, sizeof(*db));
	if (!db || !(db->path = strdup(path))) {
		free(db);
		return NULL;
	}
	db->r = r;
	db->root = pmtx_root(r, NULL);
	db->size = db->low = db->root->size;
	atomic_init(&db->runtime, rt);
	pthread_rwlock_init(&db->rw, NULL);
	pthread_mutex_init(&db->lk_mu, NULL);
	ov_init(&db->ov);
	return db;
}

static void db_destroy(struct psq_db *db)
{
	ov_free(&db->ov);
	pthread_rwlock_destroy(&db->rw);
	pthread_mutex_destroy(&db->lk_mu);
	free(db->path);
	free(db);
}

/* The registered database called path, or with path's device and inode. */
static struct psq_db *do_lookup(const char *path, const struct stat *st)
{
	for (struct psq_db *db = reg_head; db; db = db->next)
		if (!strcmp(db->path, path) ||
		    (st && !db->attached && db->dev == st->st_dev &&
		     db->ino == st->st_ino))
			return db;
	return NULL;
}

static void do_register(struct psq_db *db)
{
	db->next = reg_head;
	reg_head = db;
}

static void do_unregister(struct psq_db *db)
{
	struct psq_db **p = &reg_head;
	while (*p != db)
		p = &(*p)->next;
	*p = db->next;
}

/* Validate and set up an opened region as a database. */
static int db_adopt(const char *path, pmtx_region *r, pmtx_runtime rt,
                    struct psq_db **out, char *msg, size_t len)
{
	int rc = db_validate(r, msg, len);
	if (!rc && (rc = db_setup(r, rt)))
		snprintf(msg, len, "cannot set up the database: %s",
		         pmtx_strerror(rc));
	if (!rc && !(*out = db_new(path, r, rt)))
		rc = ENOMEM;
	return rc;
}

/* A twin region runs twin only, and twin runs in twin regions only. */
int db_runtime_fits(pmtx_region *r, pmtx_runtime rt, char *msg,
                    size_t len)
{
	int twin = pmtx_region_runtime(r) == PMTX_RT_TWIN;
	if (rt == PMTX_RT_DEFAULT || twin == (rt == PMTX_RT_TWIN))
		return 0;
	snprintf(msg, len, twin ? "runtime=%s: this database is a twin region, "
	                          "which runs runtime=twin only"
	                        : "runtime=%s: this database was not created "
	                          "with runtime=twin",
	         pmtx_runtime_name(rt));
	return PMTX_E_UNSUPPORTED;
}

static int open_region(const char *path, const struct psq_config *c,
                       int create, pmtx_region **r, char *msg, size_t len)
{
	int rc = pmtx_open(path, &c->o, r);
	if (rc == ENOENT && create) {
		pmtx_options o = c->o;
		size_t size = c->size;
		o.runtime = c->runtime == PMTX_RT_DEFAULT ? PMTX_RT_REDO
		                                          : c->runtime;
		if (o.max_size && o.max_size < size)
			o.max_size = size;
		if (o.runtime == PMTX_RT_TWIN) /* fixed: all of max_size */
			size = o.max_size ? o.max_size : size, o.max_size = 0;
		rc = pmtx_create(path, size, &o, r);
		if (rc == EEXIST) /* another process created it first */
			rc = pmtx_open(path, &c->o, r);
	}
	if (rc)
		snprintf(msg, len, "%s: %s%s%s", path, pmtx_strerror(rc),
		         *pmtx_errmsg() ? ": " : "", pmtx_errmsg());
	else if ((rc = db_runtime_fits(*r, c->runtime, msg, len)))
		pmtx_close(*r);
	return rc;
}

static int do_open(const char *path, const struct psq_config *c, int create,
                   struct psq_db **out, char *msg, size_t len)
{
	pmtx_region *r;
	int rc = open_region(path, c, create, &r, msg, len);
	if (rc)
		return rc;
	struct stat st;
	rc = stat(path, &st) ? errno
	     : db_adopt(path, r, c->runtime, out, msg, len);
	if (rc) {
		pmtx_close(r);
		return rc;
	}
	(*out)->dev = st.st_dev;
	(*out)->ino = st.st_ino;
	return 0;
}

int db_acquire(const char *path, const struct psq_config *c, int create,
               struct psq_db **out, char *msg, size_t len)
{
	struct stat st;
	int exists = stat(path, &st) == 0;
	pthread_mutex_lock(&reg_mu);
	struct psq_db *db = do_lookup(path, exists ? &st : NULL);
	int rc = 0;
	if (!db && !(rc = do_open(path, c, create, &db, msg, len)))
		do_register(db);
	if (!rc) {
		db->refs++;
		*out = db;
	}
	pthread_mutex_unlock(&reg_mu);
	return rc;
}

/* The last release closes the region under reg_mu: a db_acquire of the
 * same file meanwhile would find it unregistered but still open, and its
 * pmtx_open would fail (the region's lock is per open file). */
void db_release(struct psq_db *db)
{
	pthread_mutex_lock(&reg_mu);
	int last = --db->refs == 0 && !db->attached;
	if (last) {
		do_unregister(db);
		pmtx_close(db->r);
	}
	pthread_mutex_unlock(&reg_mu);
	if (last)
		db_destroy(db);
}

int db_attach(const char *path, pmtx_region *r, pmtx_runtime rt,
              char *msg, size_t len)
{
	struct psq_db *db;
	pthread_mutex_lock(&reg_mu);
	int rc = do_lookup(path, NULL) ? EEXIST
	         : db_adopt(path, r, rt, &db, msg, len);
	if (!rc) {
		db->attached = 1;
		do_register(db);
	}
	pthread_mutex_unlock(&reg_mu);
	return rc;
}

int db_detach(const char *path)
{
	pthread_mutex_lock(&reg_mu);
	struct psq_db *db = do_lookup(path, NULL);
	int rc = !db || !db->attached ? ENOENT : db->refs ? EBUSY : 0;
	if (!rc)
		do_unregister(db);
	pthread_mutex_unlock(&reg_mu);
	if (!rc)
		db_destroy(db);
	return rc;
}

/* ---- reading and writing through the overlay ---- */

/* The committed bytes of chunk i, or NULL where they are zero or were
 * truncated away (rw held; D4). */
static const char *committed(struct psq_db *db, uint64_t i)
{
	if (i >= nchunks(db->low) || i >= db->root->dir_cap)
		return NULL;
	pmtx_off off = dir_of(db->r, db->root)[i];
	return off ? pmtx_ptr(db->r, off) : NULL;
}

void db_read(struct psq_db *db, void *buf, size_t n, uint64_t off,
             size_t *got)
{
	char *out = buf;
	pthread_rwlock_rdlock(&db->rw);
	uint64_t size = db->size;
	size_t avail = off >= size ? 0
	               : (size_t)(size - off < n ? size - off : n);
	for (size_t done = 0; done < avail;) {
		uint64_t pos = off + done, i = pos >> PSQ_CHUNK_SHIFT;
		size_t in = pos & (PSQ_CHUNK - 1);
		size_t k = PSQ_CHUNK - in < avail - done ? PSQ_CHUNK - in
		                                         : avail - done;
		const char *src = ov_find(&db->ov, i);
		if (!src)
			src = committed(db, i);
		if (src)
			memcpy(out + done, src + in, k);
		else
			memset(out + done, 0, k);
		done += k;
	}
	pthread_rwlock_unlock(&db->rw);
	memset(out + avail, 0, n - avail);
	*got = avail;
}

/* Chunk i of the overlay, filled from the file on first use (rw held). */
static int do_chunk(struct psq_db *db, uint64_t i, char **buf)
{
	int fresh, rc = ov_get(&db->ov, i, buf, &fresh);
	if (rc || !fresh)
		return rc;
	const char *src = committed(db, i);
	if (src)
		memcpy(*buf, src, PSQ_CHUNK);
	else
		memset(*buf, 0, PSQ_CHUNK);
	return 0;
}

int db_write(struct psq_db *db, const void *buf, size_t n, uint64_t off)
{
	const char *in = buf;
	int rc = 0;
	pthread_rwlock_wrlock(&db->rw);
	for (size_t done = 0; done < n && !rc;) {
		uint64_t pos = off + done, i = pos >> PSQ_CHUNK_SHIFT;
		size_t at = pos & (PSQ_CHUNK - 1);
		size_t k = PSQ_CHUNK - at < n - done ? PSQ_CHUNK - at
		                                     : n - done;
		char *c;
		if (!(rc = do_chunk(db, i, &c)))
			memcpy(c + at, in + done, k);
		done += k;
	}
	if (!rc && off + n > db->size)
		db->size = off + n;
	pthread_rwlock_unlock(&db->rw);
	return rc;
}

int db_truncate(struct psq_db *db, uint64_t size)
{
	int rc = 0;
	pthread_rwlock_wrlock(&db->rw);
	if (size < db->size) {
		uint64_t n = nchunks(size);
		ov_drop_from(&db->ov, n);
		size_t tail = size & (PSQ_CHUNK - 1);
		char *c;
		if (tail && !(rc = do_chunk(db, n - 1, &c)))
			memset(c + tail, 0, PSQ_CHUNK - tail); /* S4 */
	}
	if (!rc) {
		db->size = size;
		if (size < db->low)
			db->low = size;
	}
	pthread_rwlock_unlock(&db->rw);
	return rc;
}

uint64_t db_size(struct psq_db *db)
{
	pthread_rwlock_rdlock(&db->rw);
	uint64_t s = db->size;
	pthread_rwlock_unlock(&db->rw);
	return s;
}

/* ---- the commit (D1, D3, D5) ---- */

/* What a commit knows of the directory. The root is not read back once
 * written: under redo it holds the old values until the commit. */
struct commit {
	struct psq_db *db;
	pmtx_tx *tx;
	pmtx_off *dir;  /* the directory the commit leaves */
	uint64_t cap;
	int fresh;      /* dir is this transaction's block (naked stores) */
};

/* A directory of at least n entries (a new block: naked stores, S5). */
static int grow_dir(struct commit *c, uint64_t n)
{
	struct psq_root *root = c->db->root;
	uint64_t cap = c->cap ? c->cap : DIR_MIN;
	while (cap < n)
		cap *= 2;
	pmtx_off off, old = root->dir;
	int rc = pmtx_alloc(c->tx, cap * sizeof(pmtx_off), &off);
	if (rc)
		return rc;
	pmtx_off *d = PMTX_PTR(c->db->r, off, pmtx_off);
	size_t keep = c->cap * sizeof(pmtx_off);
	if (keep)
		memcpy(d, c->dir, keep);
	memset((char *)d + keep, 0, cap * sizeof(pmtx_off) - keep);
	pmtx_flush(c->db->r, d, cap * sizeof(pmtx_off));
	if ((rc = PMTX_SET(c->tx, root->dir, off)) ||
	    (rc = PMTX_SET(c->tx, root->dir_cap, cap)))
		return rc;
	c->dir = d;
	c->cap = cap;
	c->fresh = 1;
	return old ? pmtx_free(c->tx, old) : 0;
}

/* Entry i of the directory takes off. */
static int set_entry(struct commit *c, uint64_t i, pmtx_off off)
{
	if (!c->fresh)
		return PMTX_SET(c->tx, c->dir[i], off);
	c->dir[i] = off;
	pmtx_flush(c->db->r, &c->dir[i], sizeof(off));
	return 0;
}

/* Chunk i becomes a hole: it reads as zero (S2, S3). */
static int drop_chunk(struct commit *c, uint64_t i)
{
	int rc = pmtx_free(c->tx, c->dir[i]);
	return rc ? rc : set_entry(c, i, 0);
}

/* Free the committed chunks that were truncated away (D4, S2): those
 * past low's last chunk, but for the ones the overlay brings back. */
static int drop_chunks(struct commit *c)
{
	struct psq_db *db = c->db;
	uint64_t n = nchunks(db->size), end = nchunks(db->root->size);
	int rc = 0;
	for (uint64_t i = nchunks(db->low); i < end && !rc; i++) {
		if (c->dir[i] && !(i < n && ov_find(&db->ov, i)))
			rc = drop_chunk(c, i);
	}
	return rc;
}

/* The first line at or after l where a and b differ, or the end. */
static size_t next_diff(const char *a, const char *b, size_t l)
{
	while (l < PSQ_CHUNK / LINE && !memcmp(a + l * LINE, b + l * LINE, LINE))
		l++;
	return l;
}

/* Write the changed runs of lines of an existing chunk (D5). Runs less
 * than two lines apart are written as one. */
static int patch_chunk(pmtx_tx *tx, char *dst, const char *src)
{
	const size_t nl = PSQ_CHUNK / LINE;
	size_t l = next_diff(dst, src, 0);
	if (l == nl)
		atomic_fetch_add_explicit(&st_same, 1, memory_order_relaxed);
	while (l < nl) {
		size_t end = l + 1, nx;
		while ((nx = next_diff(dst, src, end)) < nl && nx <= end + 1)
			end = nx + 1;
		size_t bytes = (end - l) * LINE;
		int rc = pmtx_write(tx, dst + l * LINE, src + l * LINE, bytes);
		if (rc)
			return rc;
		atomic_fetch_add_explicit(&st_bytes, bytes,
		                          memory_order_relaxed);
		l = nx;
	}
	return 0;
}

static int is_zero(const char *p)
{
	static const char zero[PSQ_CHUNK];
	return !memcmp(p, zero, PSQ_CHUNK);
}

/* Chunk i takes the overlay's bytes src. */
static int write_chunk(struct commit *c, uint64_t i, const char *src)
{
	pmtx_region *r = c->db->r;
	pmtx_off off = c->dir[i];
	if (is_zero(src)) /* a hole: frees what secure_delete zeroed */
		return off ? drop_chunk(c, i) : 0;
	if (off)
		return patch_chunk(c->tx, pmtx_ptr(r, off), src);
	int rc = pmtx_alloc(c->tx, PSQ_CHUNK, &off);
	if (rc)
		return rc;
	char *dst = pmtx_ptr(r, off);
	memcpy(dst, src, PSQ_CHUNK);
	pmtx_flush(r, dst, PSQ_CHUNK);
	atomic_fetch_add_explicit(&st_new, 1, memory_order_relaxed);
	return set_entry(c, i, off);
}

static int apply(struct psq_db *db, pmtx_tx *tx, const uint64_t *idx)
{
	struct commit c = {
		.db = db, .tx = tx, .dir = dir_of(db->r, db->root),
		.cap = db->root->dir_cap,
	};
	uint64_t n = nchunks(db->size);
	int rc = 0;
	if (n > c.cap)
		rc = grow_dir(&c, n);
	if (!rc)
		rc = drop_chunks(&c);
	for (size_t k = 0; k < db->ov.count && !rc; k++)
		if (idx[k] < n)
			rc = write_chunk(&c, idx[k], ov_find(&db->ov, idx[k]));
	if (!rc && db->size != db->root->size)
		rc = PMTX_SET(tx, db->root->size, db->size);
	return rc;
}

/* The commit itself (rw held for writing). */
static int do_commit(struct psq_db *db)
{
	uint64_t *idx;
	int rc = ov_sorted(&db->ov, &idx);
	pmtx_tx *tx;
	if (!rc && !(rc = pmtx_begin(db->r, db_runtime(db), &tx))) {
		rc = apply(db, tx, idx);
		if (rc)
			pmtx_abort(tx);
		else
			rc = pmtx_commit(tx);
	}
	free(idx);
	ov_clear(&db->ov);
	db->size = db->low = db->root->size; /* D3 on failure */
	if (!rc)
		atomic_fetch_add_explicit(&st_commits, 1,
		                          memory_order_relaxed);
	return rc;
}

static int do_dirty(const struct psq_db *db)
{
	return db->ov.count || db->size != db->root->size ||
	       db->low != db->root->size;
}

int db_commit(struct psq_db *db)
{
	int rc = 0;
	pthread_rwlock_wrlock(&db->rw);
	if (do_dirty(db))
		rc = do_commit(db);
	pthread_rwlock_unlock(&db->rw);
	return rc;
}

int db_dirty(struct psq_db *db)
{
	pthread_rwlock_rdlock(&db->rw);
	int dirty = do_dirty(db);
	pthread_rwlock_unlock(&db->rw);
	return dirty;
}

void db_discard(struct psq_db *db)
{
	pthread_rwlock_wrlock(&db->rw);
	ov_clear(&db->ov);
	db->size = db->low = db->root->size;
	pthread_rwlock_unlock(&db->rw);
}

/* ---- locks and accessors ---- */

int db_lock(struct psq_db *db, const void *who, int *level, int want)
{
	pthread_mutex_lock(&db->lk_mu);
	int rc = lk_lock(&db->lk, who, level, want);
	pthread_mutex_unlock(&db->lk_mu);
	return rc;
}

void db_unlock(struct psq_db *db, const void *who, int *level, int want)
{
	pthread_mutex_lock(&db->lk_mu);
	lk_unlock(&db->lk, who, level, want);
	pthread_mutex_unlock(&db->lk_mu);
}

int db_reserved(struct psq_db *db)
{
	pthread_mutex_lock(&db->lk_mu);
	int rc = lk_reserved(&db->lk);
	pthread_mutex_unlock(&db->lk_mu);
	return rc;
}

pmtx_region *db_region(struct psq_db *db)
{
	return db->r;
}

pmtx_runtime db_runtime(struct psq_db *db)
{
	return (pmtx_runtime)atomic_load_explicit(&db->runtime,
	                                          memory_order_relaxed);
}

void db_set_runtime(struct psq_db *db, pmtx_runtime rt)
{
	atomic_store_explicit(&db->runtime, rt, memory_order_relaxed);
}

void db_stats_get(struct psq_stats *st)
{
	st->commits = atomic_load(&st_commits);
	st->chunks_new = atomic_load(&st_new);
	st->chunks_same = atomic_load(&st_same);
	st->bytes_written = atomic_load(&st_bytes);
	st->batch_commits = atomic_load(&st_events[PSQ_EV_BATCH_COMMIT]);
	st->batch_rollbacks = atomic_load(&st_events[PSQ_EV_BATCH_ROLLBACK]);
	st->batch_refused = atomic_load(&st_events[PSQ_EV_BATCH_REFUSED]);
	st->journals = atomic_load(&st_events[PSQ_EV_JOURNAL]);
}

void db_stats_count(enum psq_event ev)
{
	atomic_fetch_add_explicit(&st_events[ev], 1, memory_order_relaxed);
}
