/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_open.c - libFuzzer harness: the pmtx VFS opening region files whose
 * database metadata (the root, the chunk directory, the chunks) is
 * corrupt, then SQLite using what it opened.
 *
 * Design
 *  O1. Templates. At the first call two real databases are built through
 *      the VFS in a directory of this process (/dev/shm/psq-fuzz-<pid>,
 *      removed at exit, left behind by a crash, as libFuzzer's abort
 *      skips atexit): tables, an index, a blob of 20,000 bytes (five
 *      chunks), rows deleted and a table dropped (secure_delete zeroes its
 *      pages, which become holes in the directory), and a commit large
 *      enough to grow a pmtx log (a log chunk in the heap, which is not a
 *      block of the user). Template 0 has 4 KiB pages and the redo
 *      runtime; template 1 has 1 KiB pages and undo. Their images are
 *      kept in memory; the data is deterministic.
 *  O2. An input is a prologue byte (bit 0: the template; bits 1-3: the
 *      runtime= of the open) and up to MAX_PATCHES patches of 16 bytes:
 *        target  0 the root, 1 the directory, 2 a chunk of the template,
 *                3 anywhere in the image
 *        op      0 an aligned word := a value, 1 1-8 raw bytes of arg,
 *                2 swap two aligned words, 3 zero up to 4 KiB
 *        kind    which value (value_of): 0, sizes, capacities, offsets of
 *                chunks, of the directory, of every user block, of every
 *                superblock and of pmtx's log chunks, a directory entry of
 *                the patched image, huge values, the old value plus a
 *                delta
 *        len, pos (u32), arg (u64)
 *      The region header is checksummed, the heap is not: patches of the
 *      root, the directory and the chunks reach the VFS as they are.
 *  O3. The oracle. Before the VFS sees the file, the harness opens it
 *      itself with PMTX_OPEN_PRIVATE (a private, read-only view: the file
 *      is not written) and checks rules S1-S3 of layout.h on its own,
 *      independently of db_validate: what is a block is what
 *      pmtx_heap_walk reports (the user's blocks; pmtx's log chunks are
 *      not). The same view gives the file's bytes as they should read (a
 *      shadow, chunk by chunk) and the blocks the database does not own.
 *  O4. The VFS is reached through a shim VFS "psq-fuzz", "pmtx" with
 *      its own xOpen, whose files forward every call to "pmtx"'s and
 *      check the main database file's answers against the shadow, which
 *      it keeps up to date with SQLite's writes and truncations:
 *      xFileSize is the shadow's size; xRead returns SQLITE_OK exactly
 *      when the read lies inside the file, and SQLITE_IOERR_SHORT_READ,
 *      with the rest zeroed, otherwise; every byte read is the shadow's.
 *      A failed commit (a sync, an unlock or a close that fails) reverts
 *      the file to its previous commit, which the shadow does not model:
 *      checking stops there.
 *  O5. After an open that succeeds: PRAGMA integrity_check, a SELECT over
 *      every table, a write transaction (a table, a blob spanning chunks,
 *      a deletion) and close. A progress handler bounds SQLite's own work
 *      on a corrupt schema; the VFS's work is bounded by -timeout only.
 *      Any SQLite status is allowed there.
 *  O6. What counts as a failure (abort, so that libFuzzer saves the
 *      input): a crash, a hang, a sanitizer report or a leak; and
 *      a. the VFS opening a file the oracle finds breaks S1-S3, or one
 *         that pmtx itself refuses;
 *      b. the VFS refusing a file the oracle finds sound, or refusing
 *         with a code other than SQLITE_CORRUPT (SQLITE_CANTOPEN for a
 *         format version) or without a message (pmtx_sqlite_errmsg);
 *      c. a shim check of O4;
 *      d. after close, a file that pmtx will not open, whose heap fails
 *         pmtx_heap_check, that breaks S1-S3, that has a block the
 *         database leaked which was not leaked before (the VFS's commits
 *         must keep S3), or, when every commit succeeded, whose bytes are
 *         not the shadow's (what SQLite last saw is what is durable);
 *      e. sqlite3_close failing (a statement left open is a harness bug).
 *  O7. A journal (a DRAM file of the VFS, by name) left after close would
 *      be rolled back into the next input's file: it is deleted, so that
 *      every execution starts from its input alone.
 *  O8. Found so far (reproducers in fuzz_open_seeds/regress-*): db_validate
 *      took pmtx_usable_size() != 0 for "a block", but it is also nonzero
 *      for pmtx's own log chunks, so a directory entry naming a log chunk
 *      was accepted; the next commit wrote SQLite's page over the log
 *      chunk's header and pmtx then refused the whole region ("log chunk
 *      ... is invalid"). db_validate now checks membership in the heap
 *      walk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmtx.h>
#include <sqlite3.h>

#include "layout.h"
#include "pmtx_sqlite.h"
#include "common/util.h"
#include "region/layout.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PATCHES 64
#define PATCH_BYTES 16
#define MAX_SHADOW_CHUNKS 65536u /* 256 MiB of file */
#define MAX_VM_STEPS 4000000     /* SQLite opcodes per input (O5) */
#define NTEMPLATES 2

/* What the inputs reached, printed at exit. */
static struct {
	unsigned long long inputs, pmtx_refused, vfs_refused, opened,
		integrity_ok, committed, unchecked, journals;
} stats;

static _Noreturn void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_open: %s%s%s\n", what, detail ? ": " : "",
	        detail ? detail : "");
	abort();
}

static uint64_t nchunks(uint64_t size)
{
	return (size >> PSQ_CHUNK_SHIFT) + !!(size & (PSQ_CHUNK - 1));
}

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		if (i % 8 == 0)
			seed = pmtx_mix64(seed);
		p[i] = (unsigned char)(seed >> (i % 8 * 8));
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* ---- the shadow: the file as it should read (O3, O4) ---- */

struct shadow {
	int on;              /* 0: not modelled (too large, or a failed commit) */
	uint64_t size;
	uint64_t cap;        /* entries of ch */
	unsigned char **ch;  /* chunk i, or NULL (zero) */
};

static void sh_free(struct shadow *s)
{
	for (uint64_t i = 0; i < s->cap; i++)
		free(s->ch[i]);
	free(s->ch);
	memset(s, 0, sizeof(*s));
}

static int sh_reserve(struct shadow *s, uint64_t n)
{
	if (n <= s->cap)
		return 0;
	if (n > MAX_SHADOW_CHUNKS)
		return -1;
	unsigned char **ch = realloc(s->ch, n * sizeof(*ch));
	if (!ch)
		fail("out of memory", NULL);
	memset(ch + s->cap, 0, (n - s->cap) * sizeof(*ch));
	s->ch = ch;
	s->cap = n;
	return 0;
}

static unsigned char *sh_chunk(struct shadow *s, uint64_t i)
{
	if (!s->ch[i] && !(s->ch[i] = calloc(1, PSQ_CHUNK)))
		fail("out of memory", NULL);
	return s->ch[i];
}

/* The k bytes at pos, inside one chunk, as the file reads them (zero
 * past the size) into out. */
static void sh_get(const struct shadow *s, uint64_t pos, size_t k,
                   unsigned char *out)
{
	uint64_t i = pos >> PSQ_CHUNK_SHIFT;
	size_t in = pos & (PSQ_CHUNK - 1), have = 0;
	if (pos < s->size && i < s->cap && s->ch[i])
		have = s->size - pos < k ? (size_t)(s->size - pos) : k;
	if (have)
		memcpy(out, s->ch[i] + in, have);
	memset(out + have, 0, k - have);
}

/* The bytes of the chunk segment at pos: at most to the chunk's end. */
static size_t seg(uint64_t pos, size_t left)
{
	size_t room = PSQ_CHUNK - (pos & (PSQ_CHUNK - 1));
	return room < left ? room : left;
}

static void sh_write(struct shadow *s, const void *buf, size_t n, uint64_t off)
{
	if (!s->on || sh_reserve(s, nchunks(off + n))) {
		s->on = 0;
		return;
	}
	const unsigned char *in = buf;
	for (size_t done = 0, k; done < n; done += k) {
		uint64_t pos = off + done;
		k = seg(pos, n - done);
		memcpy(sh_chunk(s, pos >> PSQ_CHUNK_SHIFT) +
		       (pos & (PSQ_CHUNK - 1)), in + done, k);
	}
	if (off + n > s->size)
		s->size = off + n;
}

/* A truncation drops the chunks past the new end and zeroes the tail of
 * the last one (layout.h S4, dbfile.c D4). */
static void sh_truncate(struct shadow *s, uint64_t size)
{
	if (!s->on || size >= s->size) {
		if (s->on && sh_reserve(s, nchunks(size)))
			s->on = 0;
		s->size = size > s->size ? size : s->size;
		return;
	}
	uint64_t n = nchunks(size);
	for (uint64_t i = n; i < s->cap; i++) {
		free(s->ch[i]);
		s->ch[i] = NULL;
	}
	size_t tail = size & (PSQ_CHUNK - 1);
	if (tail && s->ch[n - 1])
		memset(s->ch[n - 1] + tail, 0, PSQ_CHUNK - tail);
	s->size = size;
}

/* Do a and b hold the same file (bytes past the size aside)? */
static int sh_equal(const struct shadow *a, const struct shadow *b)
{
	static const unsigned char zero[PSQ_CHUNK];
	if (a->size != b->size)
		return 0;
	for (uint64_t i = 0; i < nchunks(a->size); i++) {
		uint64_t n = a->size - (i << PSQ_CHUNK_SHIFT);
		const unsigned char *x = i < a->cap && a->ch[i] ? a->ch[i] : zero;
		const unsigned char *y = i < b->cap && b->ch[i] ? b->ch[i] : zero;
		if (memcmp(x, y, n < PSQ_CHUNK ? n : PSQ_CHUNK))
			return 0;
	}
	return 1;
}

/* ---- the oracle: a private view of a region file (O3) ---- */

struct blk {
	pmtx_off off;
	size_t usable;
};

struct view {
	int open_rc;         /* pmtx_open's status; nothing else if nonzero */
	int heap_rc;         /* pmtx_heap_check's */
	const char *why;     /* the first of S1-S3 broken, or NULL */
	int bad_version;     /* the format major differs */
	int fresh;           /* a root never set up */
	int tail_dirty;      /* S4 broken (not checked at open: noted only) */
	uint64_t internal;   /* pmtx's own blocks (log chunks) */
	size_t nblk;         /* user blocks, sorted by offset */
	struct blk *blk;
	size_t nown;         /* blocks the database owns, sorted */
	pmtx_off *own;
	struct shadow sh;
};

static int collect_block(pmtx_off off, size_t usable, void *arg)
{
	struct view *v = arg;
	if (v->nblk % 256 == 0) {
		struct blk *b = realloc(v->blk, (v->nblk + 256) * sizeof(*b));
		if (!b)
			fail("out of memory", NULL);
		v->blk = b;
	}
	v->blk[v->nblk++] = (struct blk){ off, usable };
	return 0;
}

static int cmp_blk(const void *a, const void *b)
{
	return cmp_u64(&((const struct blk *)a)->off,
	               &((const struct blk *)b)->off);
}

/* The usable size of the user block at off, or 0 if there is none. */
static size_t block_size(const struct view *v, pmtx_off off)
{
	size_t lo = 0, hi = v->nblk;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v->blk[mid].off == off)
			return v->blk[mid].usable;
		if (v->blk[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static void own_add(struct view *v, pmtx_off off)
{
	pmtx_off *o = realloc(v->own, (v->nown + 1) * sizeof(*o));
	if (!o)
		fail("out of memory", NULL);
	v->own = o;
	v->own[v->nown++] = off;
}

/* The root's own fields (S1, S2 but the entries). */
static const char *root_rules(const struct view *v,
                              const struct psq_root *rt, size_t rsz)
{
	if (rt->magic != PSQ_MAGIC)
		return "bad magic";
	if (rt->chunk_shift != PSQ_CHUNK_SHIFT)
		return "bad chunk shift";
	if (rt->reserved[0] || rt->reserved[1] || rt->reserved[2])
		return "reserved field set";
	if ((rt->dir == 0) != (rt->dir_cap == 0))
		return "S1: directory and capacity disagree";
	if (nchunks(rt->size) > rt->dir_cap)
		return "S2: size past the directory";
	if (rt->dir && block_size(v, rt->dir) / 8 < rt->dir_cap)
		return "S1: directory is not a block of its capacity";
	return NULL;
}

/* S2 for the entries, S3; fills own and the shadow. */
static const char *entry_rules(struct view *v, pmtx_region *r,
                               const struct psq_root *rt)
{
	const pmtx_off *dir = pmtx_ptr(r, rt->dir);
	uint64_t n = nchunks(rt->size);
	v->sh.on = !sh_reserve(&v->sh, n);
	v->sh.size = rt->size;
	if (rt->dir)
		own_add(v, rt->dir);
	for (uint64_t i = 0; i < rt->dir_cap; i++) {
		if (!dir[i])
			continue;
		if (i >= n)
			return "S2: an entry past the end of the file";
		if (dir[i] == rt->dir || block_size(v, dir[i]) < PSQ_CHUNK)
			return "S3: an entry that is not a chunk-sized block";
		own_add(v, dir[i]);
		if (v->sh.on)
			memcpy(sh_chunk(&v->sh, i), pmtx_ptr(r, dir[i]),
			       PSQ_CHUNK);
	}
	if (v->nown > 1)
		qsort(v->own, v->nown, sizeof(*v->own), cmp_u64);
	for (size_t k = 1; k < v->nown; k++)
		if (v->own[k] == v->own[k - 1])
			return "S3: a block named twice";
	size_t tail = rt->size & (PSQ_CHUNK - 1);
	if (tail && dir[n - 1]) {
		const unsigned char *c = pmtx_ptr(r, dir[n - 1]);
		for (size_t k = tail; k < PSQ_CHUNK && !v->tail_dirty; k++)
			v->tail_dirty = c[k] != 0;
	}
	return NULL;
}

static void view_rules(struct view *v, pmtx_region *r)
{
	size_t rsz;
	const struct psq_root *rt = pmtx_root(r, &rsz);
	if (rsz < sizeof(*rt)) {
		v->why = "root object too small";
		return;
	}
	if (!rt->magic && !rt->size && !rt->dir && !rt->dir_cap) {
		v->fresh = 1; /* dbfile.h: a region never set up passes */
		v->sh.on = 1;
		return;
	}
	if (rt->magic == PSQ_MAGIC && rt->major != PSQ_FORMAT_MAJOR) {
		v->bad_version = 1;
		v->why = "format major";
		return;
	}
	if (!(v->why = root_rules(v, rt, rsz)))
		v->why = entry_rules(v, r, rt);
	if (v->why)
		v->sh.on = 0; /* nothing to check against: the open must fail */
}

static void view_load(const char *path, struct view *v)
{
	static pmtx_heap_stats st; /* large: not on the stack */
	pmtx_options o;
	pmtx_region *r;
	memset(v, 0, sizeof(*v));
	pmtx_options_init(&o);
	o.layout = PSQ_LAYOUT;
	o.backend = PMTX_BACKEND_EMULATED;
	o.barrier_ns = 0;
	o.truncation = PMTX_TRUNC_LAZY;
	o.flags = PMTX_OPEN_PRIVATE;
	if ((v->open_rc = pmtx_open(path, &o, &r)))
		return;
	v->heap_rc = pmtx_heap_check(r, &st);
	v->internal = st.internal_blocks;
	pmtx_heap_walk(r, collect_block, v);
	if (v->nblk > 1)
		qsort(v->blk, v->nblk, sizeof(*v->blk), cmp_blk);
	view_rules(v, r);
	if (pmtx_close(r))
		fail("closing the oracle's view", NULL);
}

static void view_free(struct view *v)
{
	free(v->blk);
	free(v->own);
	sh_free(&v->sh);
}

static int owns(const struct view *v, pmtx_off off)
{
	return v->nown && bsearch(&off, v->own, v->nown, sizeof(off), cmp_u64);
}

/* Is every block that after leaks one that before leaked (O6d)? */
static int leaks_kept(const struct view *before, const struct view *after)
{
	for (size_t k = 0; k < after->nblk; k++) {
		pmtx_off off = after->blk[k].off;
		if (!owns(after, off) &&
		    (!block_size(before, off) || owns(before, off)))
			return 0;
	}
	return 1;
}

/* ---- the shim VFS (O4) ---- */

struct shim_file {
	sqlite3_file base;
	sqlite3_file *real;  /* the pmtx VFS's file, right after this */
	int main;            /* the main database: checked */
};

static sqlite3_vfs *pmtx_vfs;
static struct shadow *cur_sh; /* the open main database's shadow */
static int main_open;

#define REAL(p) (((struct shim_file *)(p))->real)
#define CALL(p, m, ...) (REAL(p)->pMethods->m(REAL(p), ##__VA_ARGS__))
#define IS_MAIN(p) (((struct shim_file *)(p))->main)

static void check_read(const void *buf, int n, sqlite3_int64 off, int rc)
{
	static unsigned char want[PSQ_CHUNK];
	const struct shadow *s = cur_sh;
	int inside = (uint64_t)off + (uint64_t)n <= s->size;
	if (rc != SQLITE_OK && rc != SQLITE_IOERR_SHORT_READ)
		fail("xRead returned neither OK nor SHORT_READ", NULL);
	if (rc == SQLITE_OK && !inside)
		fail("xRead returned SQLITE_OK past the end of the file", NULL);
	if (rc != SQLITE_OK && inside)
		fail("xRead came up short inside the file", NULL);
	const unsigned char *b = buf;
	for (size_t done = 0, k; done < (size_t)n; done += k) {
		uint64_t pos = (uint64_t)off + done;
		k = seg(pos, (size_t)n - done);
		sh_get(s, pos, k, want);
		if (memcmp(b + done, want, k)) {
			char at[64];
			snprintf(at, sizeof(at), "bytes %llu-%llu",
			         (unsigned long long)pos,
			         (unsigned long long)(pos + k - 1));
			fail("xRead returned bytes the file does not hold", at);
		}
	}
}

static int shim_read(sqlite3_file *p, void *buf, int n, sqlite3_int64 off)
{
	int rc = CALL(p, xRead, buf, n, off);
	if (IS_MAIN(p) && cur_sh->on)
		check_read(buf, n, off, rc);
	return rc;
}

static int shim_write(sqlite3_file *p, const void *buf, int n,
                      sqlite3_int64 off)
{
	int rc = CALL(p, xWrite, buf, n, off);
	if (IS_MAIN(p) && rc == SQLITE_OK)
		sh_write(cur_sh, buf, (size_t)n, (uint64_t)off);
	else if (IS_MAIN(p))
		cur_sh->on = 0; /* a partial write is not modelled */
	return rc;
}

static int shim_truncate(sqlite3_file *p, sqlite3_int64 size)
{
	int rc = CALL(p, xTruncate, size);
	if (IS_MAIN(p) && rc == SQLITE_OK)
		sh_truncate(cur_sh, (uint64_t)size);
	else if (IS_MAIN(p))
		cur_sh->on = 0;
	return rc;
}

/* A call that may commit: a failure reverts the file (O4). */
static int committed(sqlite3_file *p, int rc)
{
	if (IS_MAIN(p) && rc != SQLITE_OK)
		cur_sh->on = 0;
	return rc;
}

static int shim_sync(sqlite3_file *p, int flags)
{
	return committed(p, CALL(p, xSync, flags));
}

static int shim_size(sqlite3_file *p, sqlite3_int64 *size)
{
	int rc = CALL(p, xFileSize, size);
	if (IS_MAIN(p) && cur_sh->on &&
	    (rc != SQLITE_OK || (uint64_t)*size != cur_sh->size))
		fail("xFileSize is not the file's size", NULL);
	return rc;
}

static int shim_lock(sqlite3_file *p, int level)
{
	return CALL(p, xLock, level);
}

static int shim_unlock(sqlite3_file *p, int level)
{
	return committed(p, CALL(p, xUnlock, level));
}

static int shim_reserved(sqlite3_file *p, int *out)
{
	return CALL(p, xCheckReservedLock, out);
}

static int shim_fcntl(sqlite3_file *p, int op, void *arg)
{
	int rc = CALL(p, xFileControl, op, arg);
	if (op == SQLITE_FCNTL_SYNC || op == SQLITE_FCNTL_COMMIT_ATOMIC_WRITE)
		return committed(p, rc);
	if (op == SQLITE_FCNTL_ROLLBACK_ATOMIC_WRITE && IS_MAIN(p))
		cur_sh->on = 0;
	return rc;
}

static int shim_sector(sqlite3_file *p)
{
	return CALL(p, xSectorSize);
}

static int shim_devchar(sqlite3_file *p)
{
	return CALL(p, xDeviceCharacteristics);
}

static int shim_close(sqlite3_file *p)
{
	int rc = committed(p, CALL(p, xClose));
	if (IS_MAIN(p))
		main_open = 0;
	return rc;
}

static const sqlite3_io_methods shim_methods = {
	.iVersion = 1,
	.xClose = shim_close, .xRead = shim_read, .xWrite = shim_write,
	.xTruncate = shim_truncate, .xSync = shim_sync,
	.xFileSize = shim_size, .xLock = shim_lock, .xUnlock = shim_unlock,
	.xCheckReservedLock = shim_reserved, .xFileControl = shim_fcntl,
	.xSectorSize = shim_sector, .xDeviceCharacteristics = shim_devchar,
};

static int shim_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *p,
                     int flags, int *out_flags)
{
	struct shim_file *f = (struct shim_file *)p;
	f->real = (sqlite3_file *)(f + 1);
	f->main = (flags & SQLITE_OPEN_MAIN_DB) != 0;
	if (f->main && main_open)
		fail("a second main database file was opened", name);
	int rc = pmtx_vfs->xOpen(pmtx_vfs, name, f->real, flags, out_flags);
	f->base.pMethods = rc == SQLITE_OK ? &shim_methods : NULL;
	if (rc == SQLITE_OK && f->main)
		main_open = 1;
	return rc;
}

static int shim_random(sqlite3_vfs *vfs, int n, char *out)
{
	memset(out, 0x5a, (size_t)n); /* executions stay reproducible */
	return n;
}

/* The pmtx VFS but for its name, xOpen and xRandomness (and a file of
 * the shim's size): filled in by LLVMFuzzerInitialize. */
static sqlite3_vfs shim_vfs;

/* ---- the templates (O1) ---- */

struct tmpl {
	unsigned char *img;
	size_t len;
	struct pmtx_hdr hdr;
	pmtx_off root, dir;      /* the root object (user offset), directory */
	uint64_t size, cap;
	size_t nchunk;           /* live entries of the directory */
	pmtx_off *chunk;
	size_t nblk;             /* user blocks */
	pmtx_off *blk;
	uint64_t nsb;            /* superblocks in the image */
	size_t nlog;             /* pmtx's log chunks (user offsets) */
	pmtx_off logc[8];
};

static struct tmpl tmpls[NTEMPLATES];
static char dir_path[64], db_path[96];

static void sql(sqlite3 *db, const char *s)
{
	char *err = NULL;
	if (sqlite3_exec(db, s, NULL, NULL, &err) != SQLITE_OK)
		fail("building a template", err ? err : s);
}

static void insert_blob(sqlite3 *db, const char *s, size_t n, uint64_t seed)
{
	static unsigned char buf[20000];
	sqlite3_stmt *st;
	fill(buf, n, seed);
	if (sqlite3_prepare_v2(db, s, -1, &st, NULL) != SQLITE_OK)
		fail("building a template", sqlite3_errmsg(db));
	sqlite3_bind_blob(st, 1, buf, (int)n, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		fail("building a template", sqlite3_errmsg(db));
	sqlite3_finalize(st);
}

/* The database of template t (O1). */
static void build_db(const char *path, int t)
{
	char uri[256];
	sqlite3 *db;
	snprintf(uri, sizeof(uri), "file:%s?vfs=pmtx&size=64K&max_size=4M"
	         "&backend=emulated&barrier_ns=0&runtime=%s", path,
	         t ? "undo" : "redo");
	if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READWRITE |
	                    SQLITE_OPEN_CREATE | SQLITE_OPEN_URI, NULL))
		fail("building a template", sqlite3_errmsg(db));
	sql(db, t ? "PRAGMA page_size=1024" : "PRAGMA page_size=4096");
	sql(db, "PRAGMA secure_delete=ON");
	sql(db, "BEGIN; CREATE TABLE a(k INTEGER PRIMARY KEY, v TEXT);"
	        "CREATE TABLE b(x INTEGER, y BLOB); CREATE INDEX bx ON b(x);"
	        "CREATE TABLE d(z TEXT);"
	        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c"
	        " WHERE i < 300) INSERT INTO a SELECT i, printf('%0*d', 40, i)"
	        " FROM c;"
	        "INSERT INTO d SELECT printf('%0*d', 900, k) FROM a"
	        " WHERE k <= 40");
	insert_blob(db, "INSERT INTO b VALUES (1, ?)", 20000, 1);
	sql(db, "COMMIT");
	/* a commit whose log outgrows its first chunk (a log chunk) */
	insert_blob(db, "UPDATE b SET y = ? WHERE x = 1", 20000, 2);
	insert_blob(db, "INSERT INTO b VALUES (2, ?)", 3000, 3);
	sql(db, "DELETE FROM a WHERE k % 3 = 0; DROP TABLE d");
	if (sqlite3_close(db) != SQLITE_OK)
		fail("building a template", "close");
}

static void read_image(const char *path, struct tmpl *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st))
		fail("reading a template", path);
	t->len = (size_t)st.st_size;
	if (!(t->img = malloc(t->len)) ||
	    pread(fd, t->img, t->len, 0) != (ssize_t)t->len)
		fail("reading a template", path);
	close(fd);
	memcpy(&t->hdr, t->img, sizeof(t->hdr));
}

/* The large blocks that are no block of the user: pmtx's log chunks. */
static void find_log_chunks(struct tmpl *t)
{
	const struct pmtx_sb_meta *m =
		(const void *)(t->img + t->hdr.meta_off);
	for (uint64_t s = 0; s < t->nsb && t->nlog < 8; s++) {
		pmtx_off off = t->hdr.heap_off + s * PMTX_SB_SIZE +
		               sizeof(struct pmtx_objhdr);
		int user = 0;
		for (size_t k = 0; k < t->nblk && !user; k++)
			user = t->blk[k] == off;
		if (PMTX_SB_KIND(m[s].info) == PMTX_SB_LARGE && !user)
			t->logc[t->nlog++] = off;
	}
}

/* Offsets of the template's structures, for patches and values (O2). */
static void locate(const char *path, struct tmpl *t)
{
	struct view v;
	view_load(path, &v);
	if (v.open_rc || v.heap_rc || v.why || v.fresh)
		fail("a template is not a sound database", v.why);
	t->root = t->hdr.root_off + sizeof(struct pmtx_objhdr);
	const struct psq_root *rt = (const void *)(t->img + t->root);
	t->dir = rt->dir;
	t->size = rt->size;
	t->cap = rt->dir_cap;
	const pmtx_off *dir = (const void *)(t->img + t->dir);
	t->chunk = calloc(t->cap, sizeof(*t->chunk));
	t->blk = calloc(v.nblk, sizeof(*t->blk));
	if (!t->chunk || !t->blk)
		fail("out of memory", NULL);
	for (uint64_t i = 0; i < t->cap; i++)
		if (dir[i])
			t->chunk[t->nchunk++] = dir[i];
	for (size_t k = 0; k < v.nblk; k++)
		t->blk[t->nblk++] = v.blk[k].off;
	t->nsb = (t->len - t->hdr.heap_off) / PMTX_SB_SIZE;
	find_log_chunks(t);
	if (t->nchunk >= nchunks(t->size))
		fail("a template has no hole in its directory", NULL);
	if (!t->nlog || t->nlog != v.internal)
		fail("a template's log chunks are not where expected", NULL);
	fprintf(stderr, "fuzz_open: template: %zu bytes of region, a file of "
	        "%llu bytes in %zu chunks and %llu holes, %zu user blocks, "
	        "%zu log chunks\n", t->len, (unsigned long long)t->size,
	        t->nchunk, (unsigned long long)(nchunks(t->size) - t->nchunk),
	        v.nblk, t->nlog);
	view_free(&v);
}

static void remove_files(void)
{
	fprintf(stderr, "fuzz_open: %llu inputs: %llu refused by pmtx, %llu "
	        "by the VFS, %llu opened (integrity_check ok %llu, write "
	        "transaction committed %llu, file checks stopped by a failed "
	        "commit %llu), %llu journals left\n", stats.inputs,
	        stats.pmtx_refused, stats.vfs_refused, stats.opened,
	        stats.integrity_ok, stats.committed, stats.unchecked,
	        stats.journals);
	char j[128];
	snprintf(j, sizeof(j), "%s-journal", db_path);
	unlink(j);
	unlink(db_path);
	rmdir(dir_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	snprintf(dir_path, sizeof(dir_path), "/dev/shm/psq-fuzz-%d",
	         (int)getpid());
	snprintf(db_path, sizeof(db_path), "%s/db", dir_path);
	if (mkdir(dir_path, 0700) && errno != EEXIST)
		fail("mkdir", dir_path);
	atexit(remove_files);
	if (pmtx_sqlite_register(0) != SQLITE_OK ||
	    !(pmtx_vfs = sqlite3_vfs_find("pmtx")))
		fail("registering the pmtx VFS", NULL);
	shim_vfs = *pmtx_vfs;
	shim_vfs.pNext = NULL;
	shim_vfs.zName = "psq-fuzz";
	shim_vfs.szOsFile = (int)sizeof(struct shim_file) + pmtx_vfs->szOsFile;
	shim_vfs.xOpen = shim_open;
	shim_vfs.xRandomness = shim_random;
	if (sqlite3_vfs_register(&shim_vfs, 0) != SQLITE_OK)
		fail("registering the shim VFS", NULL);
	for (int t = 0; t < NTEMPLATES; t++) {
		unlink(db_path);
		build_db(db_path, t);
		read_image(db_path, &tmpls[t]);
		locate(db_path, &tmpls[t]);
	}
	unlink(db_path);
	return 0;
}

/* ---- patches (O2) ---- */

struct patch {
	uint8_t target, op, kind, len;
	uint32_t pos;
	uint64_t arg;
};

struct area {
	uint64_t off, len;
};

static struct area area_of(const struct tmpl *t, const struct patch *p)
{
	switch (p->target % 4) {
	case 0: return (struct area){ t->root, sizeof(struct psq_root) };
	case 1: return (struct area){ t->dir, t->cap * 8 };
	case 2: return (struct area){ t->chunk[p->arg % t->nchunk],
	                              PSQ_CHUNK };
	default: return (struct area){ 0, t->len };
	}
}

static uint64_t get64(const unsigned char *img, uint64_t off)
{
	uint64_t v;
	memcpy(&v, img + off, 8);
	return v;
}

/* A value the formats use (O2). */
static uint64_t value_of(const struct tmpl *t, const unsigned char *img,
                         const struct patch *p, uint64_t old)
{
	static const int64_t delta[] = { 0, 0, 0, 1, -1, 8, -8, 16, -16,
		64, 4096, -4096, 5120, -5120, 65536, -65536 };
	static const uint64_t huge[] = { UINT64_MAX, 1ull << 63, INT64_MAX,
		UINT64_MAX >> PSQ_CHUNK_SHIFT, (UINT64_MAX >> PSQ_CHUNK_SHIFT) + 1,
		SIZE_MAX / 8 + 1, 1ull << 32, 1ull << 61, UINT32_MAX };
	const struct pmtx_hdr *h = &t->hdr;
	uint64_t a = p->arg, d = (uint64_t)delta[(a >> 56) % 16];
	uint64_t cap = get64(img, t->root + 32);
	switch (p->kind % 15) {
	case 0: return 0;
	case 1: return a & 0xff;
	case 2: return a;
	case 3: return t->chunk[a % t->nchunk] + d;
	case 4: return t->dir + d;
	case 5: return t->blk[a % t->nblk] + d;
	case 6: return h->heap_off + a % t->nsb * PMTX_SB_SIZE +
	               sizeof(struct pmtx_objhdr) + d;
	case 7: {
		uint64_t off[] = { t->root, h->desc_off, h->log0_off,
			h->meta_off, h->heap_off, t->len, t->len - 16,
			h->max_size };
		return off[a % 8] + d;
	}
	case 8: {
		uint64_t sz[] = { t->size, t->size * 2, cap << PSQ_CHUNK_SHIFT,
			(cap << PSQ_CHUNK_SHIFT) + 1, t->nchunk * PSQ_CHUNK };
		return sz[a % 5] + d;
	}
	case 9: return (cap ? cap : t->cap) * ((a & 3) + 1) / 2 + d;
	case 10: return huge[a % 9];
	case 11: return t->cap ? get64(img, t->dir + a % t->cap * 8) : 0;
	case 12: return old + d;
	case 13: return PSQ_MAGIC;
	default: return t->nlog ? t->logc[a % t->nlog] + d : a;
	}
}

static void apply(const struct tmpl *t, unsigned char *img,
                  const struct patch *p)
{
	struct area a = area_of(t, p);
	if (a.len < 8 || a.off + a.len > t->len)
		return;
	uint64_t word = a.off + p->pos % (a.len / 8) * 8;
	uint64_t v, other;
	switch (p->op % 4) {
	case 0:
		v = value_of(t, img, p, get64(img, word));
		memcpy(img + word, &v, 8);
		return;
	case 1:
		v = a.off + p->pos % a.len;
		memcpy(img + v, &p->arg,
		       p->len % 8 + 1 < a.off + a.len - v ? p->len % 8 + 1
		                                          : a.off + a.len - v);
		return;
	case 2:
		other = a.off + p->arg % (a.len / 8) * 8;
		v = get64(img, word);
		memcpy(img + word, img + other, 8);
		memcpy(img + other, &v, 8);
		return;
	default:
		v = a.off + p->pos % a.len;
		memset(img + v, 0, a.off + a.len - v < (p->arg & 0xfff) + 1
		                   ? a.off + a.len - v : (p->arg & 0xfff) + 1);
	}
}

static struct patch patch_at(const uint8_t *d)
{
	struct patch p = { d[0], d[1], d[2], d[3], 0, 0 };
	memcpy(&p.pos, d + 4, 4);
	memcpy(&p.arg, d + 8, 8);
	return p;
}

static void write_file(const unsigned char *img, size_t len)
{
	int fd = open(db_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)len) ||
	    pwrite(fd, img, len, 0) != (ssize_t)len || close(fd))
		fail("writing the input", db_path);
}

/* ---- SQLite over the opened file (O5) ---- */

static int progress(void *arg)
{
	return ++*(int *)arg > MAX_VM_STEPS / 1000;
}

/* Run s and step through every row, reading every column. */
static void query(sqlite3 *db, const char *s)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, s, -1, &st, NULL) != SQLITE_OK)
		return;
	while (sqlite3_step(st) == SQLITE_ROW)
		for (int c = 0; c < sqlite3_column_count(st); c++)
			(void)sqlite3_column_bytes(st, c);
	sqlite3_finalize(st);
}

static void integrity(sqlite3 *db)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st,
	                       NULL) != SQLITE_OK)
		return;
	int rows = 0, ok = 0;
	while (sqlite3_step(st) == SQLITE_ROW)
		ok = !rows++ && !strcmp((const char *)sqlite3_column_text(st, 0),
		                        "ok");
	sqlite3_finalize(st);
	stats.integrity_ok += ok && rows == 1;
}

static void select_all(sqlite3 *db)
{
	sqlite3_stmt *st;
	char *names[16];
	int n = 0;
	if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE "
	                       "type = 'table'", -1, &st, NULL) != SQLITE_OK)
		return;
	while (n < 16 && sqlite3_step(st) == SQLITE_ROW)
		names[n++] = sqlite3_mprintf("SELECT * FROM \"%w\"",
		                             sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	for (int k = 0; k < n; k++) {
		if (names[k])
			query(db, names[k]);
		sqlite3_free(names[k]);
	}
}

static void write_tx(sqlite3 *db)
{
	static unsigned char blob[9000];
	sqlite3_stmt *st;
	fill(blob, sizeof(blob), 7);
	if (sqlite3_exec(db, "BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS "
	                 "fz(k INTEGER PRIMARY KEY, v BLOB)", NULL, NULL,
	                 NULL) != SQLITE_OK)
		goto out;
	if (sqlite3_prepare_v2(db, "INSERT INTO fz(v) VALUES (?)", -1, &st,
	                       NULL) == SQLITE_OK) {
		sqlite3_bind_blob(st, 1, blob, sizeof(blob), SQLITE_STATIC);
		sqlite3_step(st);
		sqlite3_finalize(st);
	}
	sqlite3_exec(db, "DELETE FROM a WHERE k % 5 = 1", NULL, NULL, NULL);
	stats.committed += sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) ==
	                   SQLITE_OK;
out:
	if (!sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

static void use_db(sqlite3 *db)
{
	int steps = 0;
	sqlite3_progress_handler(db, 1000, progress, &steps);
	integrity(db);
	select_all(db);
	write_tx(db);
	if (sqlite3_close(db) != SQLITE_OK)
		fail("sqlite3_close", sqlite3_errmsg(db));
}

/* ---- one execution ---- */

static const char *const runtimes[] = { "", "&runtime=undo",
	"&runtime=redo", "&runtime=redo-async", "&runtime=auto" };

/* O6b: a refusal is CORRUPT (CANTOPEN for a version), with a reason. */
static void check_refusal(const struct view *v, int rc)
{
	if (!v->why)
		fail("the VFS refused a sound database", pmtx_sqlite_errmsg());
	if (rc != (v->bad_version ? SQLITE_CANTOPEN : SQLITE_CORRUPT))
		fail("the VFS refused a database with an unexpected code",
		     sqlite3_errstr(rc));
	if (!pmtx_sqlite_errmsg()[0])
		fail("the VFS refused a database without a reason", v->why);
}

/* O6d. */
static void check_after(const struct view *before, const struct shadow *sh)
{
	struct view v;
	view_load(db_path, &v);
	if (v.open_rc)
		fail("the file does not open after close",
		     pmtx_strerror(v.open_rc));
	if (v.heap_rc)
		fail("the heap fails its check after close", NULL);
	if (v.why)
		fail("the VFS's commits broke the layout", v.why);
	if (!leaks_kept(before, &v))
		fail("the VFS's commits leaked a block", NULL);
	if (sh->on && v.sh.on && !sh_equal(sh, &v.sh))
		fail("the file after close is not what SQLite last saw", NULL);
	view_free(&v);
}

/* O7. */
static void drop_journal(void)
{
	char j[128];
	int there = 0;
	snprintf(j, sizeof(j), "%s-journal", db_path);
	pmtx_vfs->xAccess(pmtx_vfs, j, SQLITE_ACCESS_EXISTS, &there);
	if (there) {
		stats.journals++;
		pmtx_vfs->xDelete(pmtx_vfs, j, 0);
	}
}

static void run(const struct tmpl *t, const char *runtime)
{
	struct view v;
	char uri[256];
	sqlite3 *db;
	view_load(db_path, &v);
	if (!v.open_rc && v.heap_rc)
		fail("pmtx opened a region whose heap fails its check", NULL);
	snprintf(uri, sizeof(uri), "file:%s?vfs=psq-fuzz&backend=emulated"
	         "&barrier_ns=0%s", db_path, runtime);
	cur_sh = &v.sh;
	int rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READWRITE |
	                         SQLITE_OPEN_URI, NULL);
	if (rc == SQLITE_OK && (v.open_rc || v.why))
		fail("the VFS opened a database that breaks its layout",
		     v.open_rc ? pmtx_strerror(v.open_rc) : v.why);
	stats.inputs++;
	if (rc != SQLITE_OK) {
		sqlite3_close(db);
		stats.pmtx_refused += v.open_rc != 0;
		stats.vfs_refused += v.open_rc == 0;
		if (!v.open_rc)
			check_refusal(&v, rc);
	} else {
		stats.opened++;
		use_db(db);
		stats.unchecked += !v.sh.on;
		if (main_open)
			fail("the main database is still open", NULL);
		check_after(&v, &v.sh);
	}
	cur_sh = NULL;
	drop_journal();
	view_free(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned char *img;
	static size_t cap;
	if (size < 1)
		return 0;
	const struct tmpl *t = &tmpls[data[0] % NTEMPLATES];
	if (cap < t->len) {
		free(img);
		if (!(img = malloc(cap = t->len)))
			fail("out of memory", NULL);
	}
	memcpy(img, t->img, t->len);
	size_t n = (size - 1) / PATCH_BYTES;
	for (size_t k = 0; k < n && k < MAX_PATCHES; k++) {
		struct patch p = patch_at(data + 1 + k * PATCH_BYTES);
		apply(t, img, &p);
	}
	write_file(img, t->len);
	run(t, runtimes[(data[0] >> 1) % 5]);
	return 0;
}
