/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mutant.c - every mutation site (src/common/mutant.h) is live: the
 * site is reached, and disabling it removes exactly what it issues.
 *
 * Linked with pmtx_mut (PMTX_MUTATION). For each site, a small fixed
 * workload that reaches it runs twice, on a fresh region each time: with
 * no site disabled, then with that site disabled. The difference must be
 *   flush site    exactly the lines it flushes fewer, nothing else;
 *   barrier site  exactly the barriers it issues fewer, nothing else;
 *   nt-copy site  exactly the bytes it copies fewer non-temporal bytes;
 *   store site    the same counters, but the persistent value it writes
 *                 (a descriptor state, the number of valid log records,
 *                 the log tail, a batch checksum, the twin state word)
 *                 differs.
 * Counters are this thread's (pmtx_counters_get), so every workload runs
 * its persist steps in this thread (redo-async truncation included). For
 * flush and barrier sites, the probed persistent values must also be
 * equal: the mutant changes what is persisted, not what is stored.
 *
 * The twin state word (rstate.twin) is probed at every barrier as well as
 * at the end: its marks are overwritten within one transaction, so only
 * the states it held while the barriers ran show that each was stored.
 *
 * Sites that only recovery reaches run on a crash image: the region file
 * (in /dev/shm, so it holds every store made) copied in the middle of a
 * transaction, at a chosen barrier. The image is made with no site
 * disabled; only opening it runs with the mutant.
 *
 * The journal backend's give-back sites (persist/journal.c invariants
 * 10-12) run tests/jgive.c's cases: the store each invariant keeps must
 * be read back without the mutant and lost with it.
 *
 * The table has one case per site, and the test fails if a site has no
 * case (so a site cannot be added without showing that it is live), or if
 * its workload does not change what the case expects.
 *
 * The same file, linked with pmtx (test_mutant_release), checks the other
 * side: there no site can be disabled, by the API or the environment, and
 * every case's two runs are alike.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jgive.h"
#include "testutil.h"

#include "common/mutant.h"
#include "containers/hmap.h"
#include "persist/persist.h"
#include "region/region.h"
#include "tx/tx.h"

#ifdef PMTX_MUTATION
#define MUTATION_BUILD 1
#else
#define MUTATION_BUILD 0
#endif
/* What pmtx__mutant_set returns in this build. */
#define SET_OK (MUTATION_BUILD ? 0 : PMTX_E_UNSUPPORTED)

#define REGION_SIZE (8u << 20)
#define ROOT_SIZE (64u << 10)

/* What a run observed: counters over the workload, persistent values. */
enum probe {
	P_NONE = -1,
	P_STATE,
	P_NREC,
	P_BATCH,
	P_TWIN,
	P_OPEN,
	P_JKEPT,
	NPROBE
};
static const char *const probe_names[] = {"descriptor state",
                                          "valid log records",
                                          "batch checksum set",
                                          "twin states (at barriers, end)",
                                          "open mark",
                                          "store a give-back keeps"};

struct obs {
	pmtx_counters c;
	uint64_t p[NPROBE];
};

static unsigned g_mutant; /* the site this run disables (0: none) */
static unsigned g_idx;    /* descriptor of the last transaction begun */

/* ---- helpers ---- */

/* Start measuring, with the site of this run disabled. */
static void arm(void)
{
	assert_int_equal(pmtx__mutant_set(g_mutant), SET_OK);
	tu_count_start();
}

static void disarm(struct obs *o)
{
	o->c = tu_count();
	assert_int_equal(pmtx__mutant_set(MUT_NONE), SET_OK);
}

static pmtx_region *make(const char **path)
{
	return tu_create(path, REGION_SIZE, ROOT_SIZE, PMTX_PDOM1,
	                 PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
}

/* A twin region's state word, watched at every barrier (twin_ops). */
static struct {
	const uint64_t *word; /* rstate.twin of the watched region, or NULL */
	unsigned seen;        /* 1 << state, for each barrier */
} twatch;

static void drop(pmtx_region *r, const char *path)
{
	memset(&twatch, 0, sizeof(twatch)); /* before the mapping goes */
	tu_close_and_remove(r, path);
}

static pmtx_tx *begin(pmtx_region *r, pmtx_runtime rt)
{
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(r, rt, &tx), 0);
	g_idx = tx->idx;
	return tx;
}

/* Write 8 bytes at root + off (off a multiple of 64: one line each). */
static void put(pmtx_tx *tx, pmtx_region *r, size_t off)
{
	uint64_t v = off + 1;
	assert_int_equal(pmtx_write(tx, (char *)pmtx_root(r, NULL) + off, &v,
	                            sizeof(v)), 0);
}

struct elsewhere {
	pmtx_region *r;
	pmtx_runtime rt;
	size_t off;
};

static void *elsewhere_main(void *arg)
{
	const struct elsewhere *e = arg;
	pmtx_tx *tx;
	uint64_t v = e->off + 1;
	if (pmtx_begin(e->r, e->rt, &tx) ||
	    pmtx_write(tx, (char *)pmtx_root(e->r, NULL) + e->off, &v, 8) ||
	    pmtx_commit(tx))
		return arg;
	return NULL;
}

/* A transaction of runtime rt that writes 8 bytes at root + off,
 * committed in a thread of its own (not counted by this thread's
 * counters). */
static void commit_elsewhere(pmtx_region *r, pmtx_runtime rt, size_t off)
{
	struct elsewhere e = {r, rt, off};
	pthread_t t;
	void *failed;
	assert_int_equal(pthread_create(&t, NULL, elsewhere_main, &e), 0);
	assert_int_equal(pthread_join(t, &failed), 0);
	assert_null(failed);
}

static pmtx_off alloc(pmtx_tx *tx, size_t n)
{
	pmtx_off off;
	assert_int_equal(pmtx_alloc(tx, n, &off), 0);
	return off;
}

/* The persistent values of descriptor g_idx. */
static void probe(pmtx_region *r, struct obs *o)
{
	const struct pmtx_desc *d = region_desc(r, g_idx);
	const struct pmtx_rec *h, *last = NULL;
	struct logr rd;
	uint64_t n = 0, batch[2] = {0, 0};
	o->p[P_STATE] = PMTX_SV_STATE(d->statever);
	o->p[P_OPEN] = region_rstate(r)->open;
	assert_int_equal(logr_init(r, &rd, d->log_head), 0);
	while (logr_next(&rd, &h) == 0 && h) {
		n++;
		last = h;
	}
	o->p[P_NREC] = n;
	if (last && last->type == PMTX_REC_COMMIT && last->len >= 16)
		memcpy(batch, rec_payload(last), 16);
	o->p[P_BATCH] = batch[1] != 0;
	o->p[P_TWIN] = twatch.seen |
	               PMTX_TW_STATE(region_rstate(r)->twin) << 8;
}

/* ---- crash images: copy the region file at the at-th barrier ---- */

static struct snap {
	int armed, taken;
	uint64_t count, at;
	const char *src, *dst;
} snap;

static void snap_flush(struct persist *p, const void *a, size_t n)
{
	persist_default_ops(p->domain, p->backend)->flush(p, a, n);
}

/* Runs before the barrier: the image has every store made before it,
 * none of the ones after (a crash right before the barrier). */
static int snap_barrier(struct persist *p)
{
	if (snap.armed && ++snap.count == snap.at) {
		tu_copy_file(snap.src, snap.dst);
		snap.taken = 1;
	}
	return persist_default_ops(p->domain, p->backend)->barrier(p);
}

static void snap_copy_nt(struct persist *p, void *dst, const void *src,
                         size_t n)
{
	persist_default_ops(p->domain, p->backend)->copy_nt(p, dst, src, n);
}

static const persist_ops snap_ops = {.name = "snapshot",
                                     .flush = snap_flush,
                                     .barrier = snap_barrier,
                                     .copy_nt = snap_copy_nt};

/* A region whose at-th barrier after snap_at() copies it to image. */
static pmtx_region *make_snap(const char **path, const char *image)
{
	memset(&snap, 0, sizeof(snap));
	persist_override_ops(&snap_ops, NULL);
	pmtx_region *r = make(path);
	persist_override_ops(NULL, NULL);
	snap.src = *path;
	snap.dst = image;
	return r;
}

static void snap_at(uint64_t at)
{
	snap.count = 0;
	snap.at = at;
	snap.armed = 1;
}

/* ---- twin regions: the state word at each barrier ---- */

static int twin_barrier(struct persist *p)
{
	if (twatch.word)
		twatch.seen |= 1u << PMTX_TW_STATE(__atomic_load_n(
			twatch.word, __ATOMIC_RELAXED));
	return persist_default_ops(p->domain, p->backend)->barrier(p);
}

static const persist_ops twin_ops = {.name = "twin-watch",
                                     .flush = snap_flush,
                                     .barrier = twin_barrier,
                                     .copy_nt = snap_copy_nt};

/* A twin region whose barriers note the state word (P_TWIN). */
static pmtx_region *make_twin(const char **path)
{
	persist_override_ops(&twin_ops, NULL);
	pmtx_region *r = tu_create(path, REGION_SIZE, ROOT_SIZE, PMTX_PDOM1,
	                           PMTX_BACKEND_HARDWARE, PMTX_RT_TWIN);
	persist_override_ops(NULL, NULL);
	twatch.word = &region_rstate(r)->twin;
	twatch.seen = 0;
	return r;
}

/* Open the crash image with the mutant: the measured part. */
static void recover_image(const char *image, struct obs *o)
{
	assert_true(snap.taken);
	arm();
	pmtx_region *r = tu_open(image);
	probe(r, o);
	drop(r, image);
	disarm(o);
}

/* ---- workloads ---- */

/* Run body on a region made by mk, measured with this run's site
 * disabled, and probe the region after it. */
static void measure(struct obs *o, pmtx_region *(*mk)(const char **),
                    void (*body)(pmtx_region *r))
{
	const char *path;
	arm();
	pmtx_region *r = mk(&path);
	body(r);
	probe(r, o);
	drop(r, path);
	disarm(o);
}

/* MEASURED(wl_x, mk) { body }: the workload wl_x, whose body (on r, a
 * region made by mk) measure() runs. */
#define MEASURED(name, mk)                                                 \
	static void name##_body(pmtx_region *r);                             \
	static void name(struct obs *o)                                      \
	{                                                                    \
		measure(o, mk, name##_body);                                 \
	}                                                                    \
	static void name##_body(pmtx_region *r)

/* A transaction of runtime rt writes two lines. */
static pmtx_tx *two_lines(pmtx_region *r, pmtx_runtime rt)
{
	pmtx_tx *tx = begin(r, rt);
	put(tx, r, 0);
	put(tx, r, 64);
	return tx;
}

/* One transaction of n bytes from the root (n > a line). */
static void write_bytes(pmtx_region *r, size_t n)
{
	static char big[20000];
	pmtx_tx *tx = begin(r, PMTX_RT_UNDO);
	assert_true(n <= sizeof(big));
	assert_int_equal(pmtx_write(tx, pmtx_root(r, NULL), big, n), 0);
	assert_int_equal(pmtx_commit(tx), 0);
}

/* An undo transaction writes two lines and commits: 2 records, commit
 * (i) and (ii), no allocation (the descriptor stays RUNNING). */
MEASURED(wl_undo_commit, make)
{
	assert_int_equal(pmtx_commit(two_lines(r, PMTX_RT_UNDO)), 0);
}

/* An undo transaction seen after its first record, then aborted. */
static void wl_undo_running(struct obs *o)
{
	const char *path;
	arm();
	pmtx_region *r = make(&path);
	pmtx_tx *tx = begin(r, PMTX_RT_UNDO);
	put(tx, r, 0);
	o->p[P_STATE] = PMTX_SV_STATE(region_desc(r, g_idx)->statever);
	assert_int_equal(pmtx_abort(tx), 0);
	drop(r, path);
	disarm(o);
}

/* Undo transactions that allocate (a 100-byte block, a large block and a
 * zeroed 64-byte block: three superblocks) and then free two of them:
 * two commits through the allocation log, (iii) and (iv) each. */
MEASURED(wl_undo_alloc_free, make)
{
	pmtx_tx *tx = begin(r, PMTX_RT_UNDO);
	pmtx_off small = alloc(tx, 100), large = alloc(tx, 40000), z;
	assert_int_equal(pmtx_zalloc(tx, 64, &z), 0);
	put(tx, r, 0);
	assert_int_equal(pmtx_commit(tx), 0);
	tx = begin(r, PMTX_RT_UNDO);
	assert_int_equal(pmtx_free(tx, small), 0);
	assert_int_equal(pmtx_free(tx, large), 0);
	assert_int_equal(pmtx_commit(tx), 0);
}

/* An undo record above the checksum threshold (4 KiB under PDOM-1) is
 * marked: body, barrier, mark, barrier. */
MEASURED(wl_undo_marked, make)
{
	write_bytes(r, 5000);
}

/* An undo transaction writes two lines and aborts. */
MEASURED(wl_undo_abort, make)
{
	assert_int_equal(pmtx_abort(two_lines(r, PMTX_RT_UNDO)), 0);
}

/* A record larger than the first log chunk (16 KiB) grows the log. */
MEASURED(wl_log_grow, make)
{
	write_bytes(r, 20000);
}

/* A region of one superblock's heap: a transaction allocates a 100 KiB
 * block (a run of two superblocks) that only growth can give. */
static pmtx_region *make_one_superblock(const char **path)
{
	pmtx_options opt;
	pmtx_options_init(&opt);
	opt.root_size = 64;
	opt.max_size = 64u << 20;
	pmtx_region *r = NULL;
	*path = tu_path();
	assert_int_equal(pmtx_create(*path, 1, &opt, &r), 0);
	return r;
}

MEASURED(wl_region_grow, make_one_superblock)
{
	size_t before = pmtx_region_size(r);
	pmtx_tx *tx = begin(r, PMTX_RT_UNDO);
	alloc(tx, 100u << 10);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_true(pmtx_region_size(r) > before);
}

/* One transaction per runtime that only flushes a line (naked). */
MEASURED(wl_naked, make)
{
	static const pmtx_runtime rts[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
	                                   PMTX_RT_COW};
	for (size_t k = 0; k < ARRAY_SIZE(rts); k++) {
		pmtx_tx *tx = begin(r, rts[k]);
		pmtx_flush(r, pmtx_root(r, NULL), 8);
		assert_int_equal(pmtx_commit(tx), 0);
	}
	/* a redo transaction that writes and flushes (D10) */
	pmtx_tx *tx = begin(r, PMTX_RT_REDO);
	uint64_t *root = pmtx_root(r, NULL);
	pmtx_flush(r, root + 1, 8);
	assert_int_equal(PMTX_SET(tx, *root, 7), 0);
	assert_int_equal(pmtx_commit(tx), 0);
}

/* A naked store of 1 at p, flushed and fenced. */
static void naked_store(pmtx_region *r, char *p)
{
	*p = 1;
	pmtx_flush(r, p, 8);
	assert_int_equal(pmtx_barrier(r), 0);
}

/* The naked-persistence API outside a transaction. */
MEASURED(wl_api, make)
{
	static const char bytes[64] = "non-temporal";
	char *root = pmtx_root(r, NULL);
	naked_store(r, root);
	root[64] = 1;
	assert_int_equal(pmtx_persist(r, root + 64, 8), 0);
	pmtx_memcpy_nt(r, root + 128, bytes, sizeof(bytes));
	assert_memory_equal(root + 128, bytes, sizeof(bytes));
}

/* A redo transaction's writes: two lines and a 100-byte block. */
static pmtx_tx *redo_writes(pmtx_region *r, pmtx_runtime rt, pmtx_off *b)
{
	pmtx_tx *tx = two_lines(r, rt);
	*b = alloc(tx, 100);
	return tx;
}

/* A redo transaction writes and allocates; a second one frees the block
 * (no write: its commit applies only the allocation log). */
MEASURED(wl_redo, make)
{
	pmtx_off b;
	pmtx_tx *tx = redo_writes(r, PMTX_RT_REDO, &b);
	put(tx, r, 64); /* the newest range again: rewritten (D11) */
	assert_int_equal(pmtx_commit(tx), 0);
	tx = begin(r, PMTX_RT_REDO);
	assert_int_equal(pmtx_free(tx, b), 0);
	assert_int_equal(pmtx_commit(tx), 0);
}

/* redo-async. Its truncation normally runs in the region's truncation
 * thread, whose counters this thread cannot read: with the thread marked
 * as stopping before it ever starts, async_enqueue truncates inline, in
 * the committing thread (what pmtx_close does with a stopped thread). */
MEASURED(wl_redo_async, make)
{
	pmtx_off b;
	pthread_mutex_lock(&r->txm->q_lock);
	r->txm->thr_stop = 1;
	pthread_mutex_unlock(&r->txm->q_lock);
	assert_int_equal(pmtx_commit(redo_writes(r, PMTX_RT_REDO_ASYNC, &b)),
	                 0);
}

/* Runtimes mixed (redo.c D13): a redo-async log still queued when a redo
 * transaction commits, then an undo transaction over the redo's data,
 * which truncates both before it writes. The redo-async transaction is
 * another thread's: one of this thread's own would be retired by the redo
 * commit (D12), and nothing would queue. */
static void wl_mix_queue(struct obs *o)
{
	const char *path;
	pmtx_options opt;
	pmtx_options_init(&opt);
	opt.root_size = ROOT_SIZE;
	opt.truncation = PMTX_TRUNC_LAZY; /* the redo-async log stays queued */
	arm();
	pmtx_region *r = tu_create_with(&path, REGION_SIZE, &opt);
	commit_elsewhere(r, PMTX_RT_REDO_ASYNC, 0); /* left queued */
	static const pmtx_runtime rts[] = {PMTX_RT_REDO, PMTX_RT_UNDO};
	for (size_t i = 0; i < ARRAY_SIZE(rts); i++) {
		pmtx_tx *tx = begin(r, rts[i]);
		put(tx, r, 64);
		assert_int_equal(pmtx_commit(tx), 0);
	}
	probe(r, o);
	disarm(o); /* before close, which truncates what is still queued */
	drop(r, path);
}

/* Copy-on-write: a new object committed, then opened for writing and
 * changed (its commit frees the old payload). */
static pmtx_tx *cow_new_then_change(pmtx_region *r)
{
	pmtx_off w;
	uint64_t *p;
	pmtx_tx *tx = begin(r, PMTX_RT_COW);
	assert_int_equal(pmtx_cow_new(tx, 64, &w), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	tx = begin(r, PMTX_RT_COW);
	assert_int_equal(pmtx_cow_open(tx, w, PMTX_COW_WRITE, NULL,
	                               (void **)&p), 0);
	p[0] = 42;
	return tx;
}

MEASURED(wl_cow, make)
{
	assert_int_equal(pmtx_commit(cow_new_then_change(r)), 0);
}

/* Retire cover: another thread's redo log is retired (IDLE stored and
 * flushed, no barrier) while this thread's undo transaction runs; this
 * thread's commit flushes that descriptor's line before its barrier. */
MEASURED(wl_cover, make)
{
	pmtx_tx *tx = begin(r, PMTX_RT_UNDO); /* holds its descriptor */
	commit_elsewhere(r, PMTX_RT_REDO, 128);
	put(tx, r, 0);
	assert_int_equal(pmtx_commit(tx), 0);
}

/* Recovery of a transaction of runtime rt, in a region made by mk,
 * caught after it wrote two lines (the image), then aborted; if after is
 * set, a transaction that wrote one other line committed before it. */
static void recover_two_lines(struct obs *o,
                              pmtx_region *(*mk)(const char **),
                              pmtx_runtime rt, int after)
{
	const char *path, *image = tu_path();
	pmtx_region *r = mk(&path);
	if (after) {
		pmtx_tx *tx = begin(r, rt);
		put(tx, r, 256);
		assert_int_equal(pmtx_commit(tx), 0);
	}
	pmtx_tx *tx = two_lines(r, rt);
	tu_copy_file(path, image);
	snap.taken = 1;
	assert_int_equal(pmtx_abort(tx), 0);
	drop(r, path);
	recover_image(image, o);
}

/* Recovery rolls back an undo transaction caught after two records. */
static void wl_recover_undo(struct obs *o)
{
	recover_two_lines(o, make, PMTX_RT_UNDO, 0);
}

/* Recovery of the commit of tx (begun in a region of make_snap) caught
 * at its second barrier. */
static void recover_commit(struct obs *o,
                           pmtx_tx *(*start)(pmtx_region *r))
{
	const char *path, *image = tu_path();
	pmtx_region *r = make_snap(&path, image);
	pmtx_tx *tx = start(r);
	snap_at(2);
	assert_int_equal(pmtx_commit(tx), 0);
	drop(r, path);
	recover_image(image, o);
}

static pmtx_tx *redo_start(pmtx_region *r)
{
	pmtx_off b;
	return redo_writes(r, PMTX_RT_REDO, &b);
}

/* Recovery rolls a redo transaction forward: caught at its second
 * barrier (durable, applied in memory, not retired). */
static void wl_recover_redo(struct obs *o)
{
	recover_commit(o, redo_start);
}

/* Recovery completes a copy-on-write commit caught at its second barrier
 * (COMMIT written, cur not swapped yet). */
static void wl_recover_cow(struct obs *o)
{
	recover_commit(o, cow_new_then_change);
}

/* A twin transaction writes two lines and commits by its seal: MUTATING
 * (a), the lines and the seal (b), the back copy in non-temporal stores
 * (d); close stores IDLE and flushes it. */
MEASURED(wl_twin_commit, make_twin)
{
	assert_int_equal(pmtx_commit(two_lines(r, PMTX_RT_TWIN)), 0);
}

/* A twin transaction too large for a seal (49 lines) commits with
 * COPYING: MUTATING (a), the lines (b), COPYING (c), the back copy (d),
 * IDLE. */
MEASURED(wl_twin_commit_large, make_twin)
{
	pmtx_tx *tx = begin(r, PMTX_RT_TWIN);
	for (size_t i = 0; i < 49; i++)
		put(tx, r, i * 64);
	assert_int_equal(pmtx_commit(tx), 0);
}

/* A twin transaction writes two lines and aborts: they are restored from
 * the back copy. */
MEASURED(wl_twin_abort, make_twin)
{
	assert_int_equal(pmtx_abort(two_lines(r, PMTX_RT_TWIN)), 0);
}

/* A naked store outside any transaction in a twin region, flushed (to the
 * back copy too) and fenced. */
MEASURED(wl_twin_naked, make_twin)
{
	naked_store(r, pmtx_root(r, NULL));
}

/* Recovery copies the back copy over the two lines of a twin transaction
 * caught MUTATING. */
static void wl_recover_twin(struct obs *o)
{
	recover_two_lines(o, make_twin, PMTX_RT_TWIN, 0);
}

/* The same, caught under the MUTATING word and the seal of the small
 * commit before it (twin.c TW13): the seal is accepted, its line copied
 * to the back copy, and the back copy copied over the two lines. */
static void wl_recover_twin_reseal(struct obs *o)
{
	recover_two_lines(o, make_twin, PMTX_RT_TWIN, 1);
}

/* ---- the containers: fresh blocks flushed before they are linked
 * (cont.h C2) ---- */

/* An undo transaction creates a hash map (a fixed hash seed, so that both
 * runs split alike) and puts 9 entries of 2 + 5 bytes: the ninth splits
 * a bucket, which makes the segment table. */
MEASURED(wl_cont_hmap, make)
{
	pmtx_tx *tx = begin(r, PMTX_RT_UNDO);
	pmtx_hmap *m;
	pmtx_off off;
	hmap_fix_seed(1);
	assert_int_equal(pmtx_hmap_create(tx, 0, &off), 0);
	hmap_fix_seed(0);
	assert_int_equal(pmtx_hmap_open(r, off, NULL, &m), 0);
	for (unsigned k = 0; k < 9; k++) {
		char key[2] = {'k', (char)('0' + k)};
		assert_int_equal(pmtx_hmap_put(tx, m, key, 2, "value", 5, 0,
		                               NULL), 0);
	}
	assert_int_equal(pmtx_commit(tx), 0);
	pmtx_hmap_close(m);
}

/* An undo transaction creates a list, pushes a 1-byte element (a fresh
 * chunk) and inserts one of 1,000 bytes before it: the chunk splits into
 * two fresh ones, the big element's and the small one's. */
MEASURED(wl_cont_list, make)
{
	static const char big[1000];
	pmtx_tx *tx = begin(r, PMTX_RT_UNDO);
	pmtx_list *l;
	pmtx_off off;
	assert_int_equal(pmtx_list_create(tx, &off), 0);
	assert_int_equal(pmtx_list_open(r, off, NULL, &l), 0);
	assert_int_equal(pmtx_list_push(tx, l, PMTX_LIST_TAIL, "x", 1), 0);
	assert_int_equal(pmtx_list_insert(tx, l, "x", 1, 0, big, sizeof(big)),
	                 0);
	assert_int_equal(pmtx_commit(tx), 0);
	pmtx_list_close(l);
}

/* An undo transaction sets a string in the root to 100 bytes: a fresh
 * block. */
MEASURED(wl_cont_str, make)
{
	static const char bytes[100];
	pmtx_tx *tx = begin(r, PMTX_RT_UNDO);
	assert_int_equal(pmtx_str_set(r, tx, pmtx_root(r, NULL), bytes,
	                              sizeof(bytes)), 0);
	assert_int_equal(pmtx_commit(tx), 0);
}

/* The pairs of a bulk load: keys "load-NN", values of 3 bytes. */
static int load_next(void *arg, pmtx_bytes *k, pmtx_bytes *v)
{
	static char key[16];
	unsigned *i = arg;
	if (*i == 60)
		return 0;
	snprintf(key, sizeof(key), "load-%02u", (*i)++);
	*k = (pmtx_bytes){key, strlen(key), 0};
	*v = (pmtx_bytes){"val", 3, 0};
	return 1;
}

/* An undo transaction creates an ordered map of byte keys (its header
 * and an empty leaf) and puts 49 keys: the 49th splits the leaf (a new
 * leaf, a new root, a separator item); then it creates a second map and
 * bulk-loads 60 pairs into it (two leaves and their parent). */
MEASURED(wl_cont_map, make)
{
	pmtx_tx *tx = begin(r, PMTX_RT_UNDO);
	pmtx_map *m;
	pmtx_off off;
	unsigned i = 0;
	assert_int_equal(pmtx_map_create(tx, PMTX_MAP_BYTES, &off), 0);
	assert_int_equal(pmtx_map_open(r, off, NULL, &m), 0);
	for (unsigned k = 0; k < 49; k++) {
		char key[4] = {'k', (char)('0' + k / 10), (char)('0' + k % 10)};
		assert_int_equal(pmtx_map_put(tx, m, key, 3, "value", 5, 0,
		                              NULL), 0);
	}
	pmtx_map_close(m);
	assert_int_equal(pmtx_map_create(tx, PMTX_MAP_BYTES, &off), 0);
	assert_int_equal(pmtx_map_open(r, off, NULL, &m), 0);
	assert_int_equal(pmtx_map_load(tx, m, load_next, &i, 100), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	pmtx_map_close(m);
}

/* The journal backend's give-back (jgive.c): the store its invariant
 * keeps, which the mutant loses. */
static void jgive(struct obs *o, uint64_t (*run)(void))
{
	arm();
	o->p[P_JKEPT] = run();
	disarm(o);
}

static void wl_jgive_failed_sync(struct obs *o)
{
	jgive(o, jgive_failed_sync);
}

static void wl_jgive_after_copy(struct obs *o)
{
	jgive(o, jgive_store_after_copy);
}

static void wl_jgive_racing(struct obs *o)
{
	jgive(o, jgive_store_racing);
}

/* ---- the cases: one per site ---- */

struct site_case {
	unsigned id;
	void (*run)(struct obs *o);
	/* expected (mutant) - (no mutant) */
	int64_t barriers, flushes, nt_bytes;
	int probe; /* store site: the value that must differ; else P_NONE */
	int64_t (*lines)(void); /* flush site: the lines it flushes, when
	                         * they follow the region's geometry */
};

/* The lines the open of a recover_two_lines image sweeps (recovery.c
 * R4): everything before the heap, the heap metadata of the superblocks
 * there are included, in a region of make() (no log chunk beyond the
 * first). */
static int64_t sweep_lines(void)
{
	const char *path;
	pmtx_region *r = make(&path);
	const struct pmtx_hdr *h = r->hdr;
	uint64_t meta_end = h->meta_off + r->nsb * sizeof(struct pmtx_sb_meta);
	drop(r, path);
	return (int64_t)((meta_end + CACHE_LINE - 1) / CACHE_LINE);
}

#define BARRIER(id, wl, n) {id, wl, -(n), 0, 0, P_NONE, NULL}
#define FLUSH(id, wl, lines) {id, wl, 0, -(lines), 0, P_NONE, NULL}
#define STORE(id, wl, probe) {id, wl, 0, 0, 0, probe, NULL}
#define FLUSH_GEOMETRY(id, wl, fn) {id, wl, 0, 0, 0, P_NONE, fn}

/* The lines a twin recovery pass flushes in the copy it writes when the
 * region was left open (twin.c TW8, recovery.c R4: all it covers): the
 * root and the heap metadata, in a region of make_twin() whose heap holds
 * nothing. */
static int64_t twin_pass_lines(void)
{
	const char *path;
	pmtx_region *r = make_twin(&path);
	int64_t n = (int64_t)((r->hdr->heap_off - r->hdr->root_off) /
	                      CACHE_LINE);
	drop(r, path);
	return n;
}

static const struct site_case cases[] = {
	/* tx.c */
	STORE(MUT_TX_RUNNING_MARK, wl_undo_running, P_STATE),
	FLUSH(MUT_TX_RUNNING_FLUSH, wl_undo_commit, 1),
	FLUSH(MUT_TX_COVER_FLUSH, wl_cover, 1),
	FLUSH(MUT_TX_ZALLOC_FLUSH, wl_undo_alloc_free, 2), /* 64 B at +16 */
	FLUSH(MUT_API_FLUSH, wl_api, 1),
	BARRIER(MUT_API_BARRIER, wl_api, 1),
	FLUSH(MUT_API_PERSIST_FLUSH, wl_api, 1),
	BARRIER(MUT_API_PERSIST_BARRIER, wl_api, 1),
	{MUT_API_COPY_NT, wl_api, 0, 0, -64, P_NONE, NULL},
	/* log.c: growth */
	FLUSH(MUT_LOG_GROW_CHUNK_FLUSH, wl_log_grow, 1),
	BARRIER(MUT_LOG_GROW_CHUNK_BARRIER, wl_log_grow, 1),
	FLUSH(MUT_LOG_GROW_LINK_FLUSH, wl_log_grow, 1),
	BARRIER(MUT_LOG_GROW_LINK_BARRIER, wl_log_grow, 1),
	/* log.c: records (each record of these fits one line) */
	STORE(MUT_UNDO_REC_CHECK, wl_undo_commit, P_NREC),
	FLUSH(MUT_UNDO_REC_FLUSH, wl_undo_commit, 2),
	STORE(MUT_UNDO_MARK_STORE, wl_undo_marked, P_NREC),
	FLUSH(MUT_UNDO_MARK_FLUSH, wl_undo_marked, 1),
	FLUSH(MUT_REDO_REC_FLUSH, wl_redo, 2),
	STORE(MUT_COW_REC_CHECK, wl_cow, P_NREC),
	FLUSH(MUT_COW_REC_FLUSH, wl_cow, 1),
	STORE(MUT_LOG_COMMIT_CHECK, wl_undo_commit, P_NREC),
	FLUSH(MUT_LOG_COMMIT_FLUSH, wl_undo_commit, 1),
	/* alog.c: two commits with allocation-log entries */
	FLUSH(MUT_ALOG_FLUSH, wl_undo_alloc_free, 2),
	BARRIER(MUT_ALOG_APPLY_BARRIER, wl_undo_alloc_free, 2),
	STORE(MUT_ALOG_IDLE_MARK, wl_undo_alloc_free, P_STATE),
	FLUSH(MUT_ALOG_IDLE_FLUSH, wl_undo_alloc_free, 2),
	BARRIER(MUT_ALOG_IDLE_BARRIER, wl_undo_alloc_free, 2),
	/* undo.c */
	BARRIER(MUT_UNDO_REC_BARRIER, wl_undo_commit, 2),
	BARRIER(MUT_UNDO_MARK_BARRIER, wl_undo_marked, 1),
	FLUSH(MUT_UNDO_DATA_FLUSH, wl_undo_commit, 2),
	BARRIER(MUT_UNDO_DATA_BARRIER, wl_undo_commit, 1),
	BARRIER(MUT_UNDO_COMMIT_BARRIER, wl_undo_commit, 1),
	STORE(MUT_UNDO_COMMITTED_MARK, wl_undo_commit, P_STATE),
	FLUSH(MUT_UNDO_COMMITTED_FLUSH, wl_undo_commit, 1),
	BARRIER(MUT_UNDO_NAKED_BARRIER, wl_naked, 1),
	FLUSH(MUT_UNDO_ABORT_FLUSH, wl_undo_abort, 2),
	BARRIER(MUT_UNDO_ABORT_BARRIER, wl_undo_abort, 1),
	STORE(MUT_UNDO_ABORT_IDLE_MARK, wl_undo_abort, P_STATE),
	FLUSH(MUT_UNDO_ABORT_IDLE_FLUSH, wl_undo_abort, 1),
	BARRIER(MUT_UNDO_ABORT_IDLE_BARRIER, wl_undo_abort, 1),
	FLUSH(MUT_UNDO_RECOVER_FLUSH, wl_recover_undo, 2),
	/* redo.c: two commits, the second one only frees */
	STORE(MUT_REDO_BATCH_CHECK, wl_redo, P_BATCH),
	BARRIER(MUT_REDO_COMMIT_BARRIER, wl_redo, 2),
	FLUSH(MUT_REDO_DATA_FLUSH, wl_redo, 2),
	BARRIER(MUT_REDO_APPLY_BARRIER, wl_redo, 2),
	BARRIER(MUT_REDO_NAKED_BARRIER, wl_naked, 1),
	BARRIER(MUT_REDO_NAKED_ORDER_BARRIER, wl_naked, 1),
	STORE(MUT_REDO_IDLE_MARK, wl_redo, P_STATE),
	BARRIER(MUT_REDO_COVER_WAIT, wl_redo_async, 1),
	FLUSH(MUT_REDO_TRUNC_DATA_FLUSH, wl_redo_async, 2),
	BARRIER(MUT_REDO_TRUNC_BARRIER, wl_redo_async, 1),
	FLUSH(MUT_REDO_RECOVER_FLUSH, wl_recover_redo, 2),
	/* redo.c: runtimes mixed */
	/* the redo log's truncation: its barrier, and its retire cover's
	 * flush of the redo-async log's IDLE */
	{MUT_MIX_QUEUE_OWN, wl_mix_queue, -1, -1, 0, P_NONE, NULL},
	/* cow.c: two commits (new object, changed object) */
	FLUSH(MUT_COW_NEW_FLUSH, wl_cow, 1),
	FLUSH(MUT_COW_PAYLOAD_FLUSH, wl_cow, 2), /* 64 B at +96 */
	FLUSH(MUT_COW_WRAPPER_FLUSH, wl_cow, 1),
	BARRIER(MUT_COW_STAGE_BARRIER, wl_cow, 2),
	BARRIER(MUT_COW_COMMIT_BARRIER, wl_cow, 2),
	FLUSH(MUT_COW_SWAP_FLUSH, wl_cow, 1),
	BARRIER(MUT_COW_NAKED_BARRIER, wl_naked, 1),
	FLUSH(MUT_COW_RECOVER_FLUSH, wl_recover_cow, 1),
	/* twin.c: a commit and an abort of two lines each, and a commit
	 * of 49 lines */
	STORE(MUT_TWIN_MUTATING_MARK, wl_twin_commit, P_TWIN),
	FLUSH(MUT_TWIN_MUTATING_FLUSH, wl_twin_commit, 1),
	BARRIER(MUT_TWIN_MUTATING_BARRIER, wl_twin_commit, 1),
	FLUSH(MUT_TWIN_DATA_FLUSH, wl_twin_commit, 2),
	BARRIER(MUT_TWIN_DATA_BARRIER, wl_twin_commit, 1),
	{MUT_TWIN_SEAL_NT, wl_twin_commit, 0, 0, -(64 + 2 * 8), P_NONE, NULL},
	STORE(MUT_TWIN_COPYING_MARK, wl_twin_commit_large, P_TWIN),
	FLUSH(MUT_TWIN_COPYING_FLUSH, wl_twin_commit_large, 1),
	BARRIER(MUT_TWIN_COMMIT_BARRIER, wl_twin_commit_large, 1),
	{MUT_TWIN_BACK_COPY_NT, wl_twin_commit, 0, 0, -128, P_NONE, NULL},
	BARRIER(MUT_TWIN_BACK_BARRIER, wl_twin_commit, 1),
	STORE(MUT_TWIN_IDLE_MARK, wl_twin_commit_large, P_TWIN),
	FLUSH(MUT_TWIN_IDLE_FLUSH, wl_twin_commit, 1), /* at close */
	FLUSH(MUT_TWIN_ABORT_FLUSH, wl_twin_abort, 2),
	BARRIER(MUT_TWIN_ABORT_BARRIER, wl_twin_abort, 1),
	/* the images are copies of a region still open: the passes flush
	 * all they cover */
	FLUSH_GEOMETRY(MUT_TWIN_RECOVER_FLUSH, wl_recover_twin, twin_pass_lines),
	BARRIER(MUT_TWIN_RECOVER_BARRIER, wl_recover_twin, 1),
	FLUSH_GEOMETRY(MUT_TWIN_RECOVER_REST, wl_recover_twin_reseal,
	               twin_pass_lines),
	FLUSH(MUT_TWIN_NAKED_FLUSH, wl_twin_naked, 1),
	/* recovery.c */
	BARRIER(MUT_RECOVERY_DATA_BARRIER, wl_recover_undo, 1),
	STORE(MUT_RECOVERY_IDLE_MARK, wl_recover_undo, P_STATE),
	FLUSH(MUT_RECOVERY_IDLE_FLUSH, wl_recover_undo, 1),
	BARRIER(MUT_RECOVERY_IDLE_BARRIER, wl_recover_undo, 1),
	/* heap.c: two small classes, one large run, allocated then freed */
	FLUSH(MUT_HEAP_LARGE_FLUSH, wl_undo_alloc_free, 2),
	FLUSH(MUT_HEAP_INFO_FLUSH, wl_undo_alloc_free, 2),
	FLUSH(MUT_HEAP_BITMAP_FLUSH, wl_undo_alloc_free, 3),
	FLUSH(MUT_HEAP_REFLUSH_INFO, wl_redo_async, 1),
	FLUSH(MUT_HEAP_REFLUSH_BITMAP, wl_redo_async, 1),
	FLUSH(MUT_REGION_GROW_FLUSH, wl_region_grow, 1),
	BARRIER(MUT_REGION_GROW_BARRIER, wl_region_grow, 1),
	STORE(MUT_REGION_OPEN_MARK, wl_undo_commit, P_OPEN),
	/* tx.c R3: the last redo commit's IDLE, at close */
	FLUSH(MUT_TX_CLOSE_COVER_FLUSH, wl_redo, 1),
	BARRIER(MUT_TX_CLOSE_COVER_BARRIER, wl_redo, 1),
	/* recovery.c R4: the image was copied from a region still open */
	FLUSH_GEOMETRY(MUT_RECOVERY_SWEEP_FLUSH, wl_recover_undo, sweep_lines),
	BARRIER(MUT_RECOVERY_SWEEP_BARRIER, wl_recover_undo, 1),
	/* containers: a block's user bytes start 16 bytes into a line */
	FLUSH(MUT_HMAP_CREATE_FLUSH, wl_cont_hmap, 2), /* 56 B at +16 */
	/* 23 B each, two of them across a line boundary */
	FLUSH(MUT_HMAP_ENTRY_FLUSH, wl_cont_hmap, 11),
	FLUSH(MUT_LIST_CREATE_FLUSH, wl_cont_list, 1), /* 48 B at +16 */
	FLUSH(MUT_LIST_PUSH_HEAD_FLUSH, wl_cont_list, 1), /* 40 B at +16 */
	FLUSH(MUT_LIST_PUSH_DATA_FLUSH, wl_cont_list, 1), /* 2 B */
	FLUSH(MUT_LIST_SPLIT_DATA_FLUSH, wl_cont_list, 18), /* 1,002 B, 2 B */
	FLUSH(MUT_LIST_SPLIT_HEAD_FLUSH, wl_cont_list, 1),
	FLUSH(MUT_LIST_SPLIT_LAST_FLUSH, wl_cont_list, 1),
	FLUSH(MUT_STR_MOVED_FLUSH, wl_cont_str, 2), /* 100 B at +16 */
	FLUSH(MUT_MAP_CREATE_FLUSH, wl_cont_map, 2), /* 48 B at +16, twice */
	/* two first leaves and a split's (880 B at +16: 14 lines each),
	 * a new root and a loaded leaves' parent (816 B at +16: 13 each) */
	FLUSH(MUT_MAP_NODE_FLUSH, wl_cont_map, 68),
	/* 49 put, 60 loaded, 2 separators; 15 of them across a line */
	FLUSH(MUT_MAP_ITEM_FLUSH, wl_cont_map, 126),
	FLUSH(MUT_MAP_LOAD_FLUSH, wl_cont_map, 28), /* two leaves */
	/* persist/journal.c: the give-back */
	STORE(MUT_JOURNAL_DROP_AFTER_SYNC, wl_jgive_failed_sync, P_JKEPT),
	STORE(MUT_JOURNAL_DROP_COMPARE, wl_jgive_after_copy, P_JKEPT),
	STORE(MUT_JOURNAL_DROP_PROTECT, wl_jgive_racing, P_JKEPT),
};

static int64_t diff(uint64_t on, uint64_t off)
{
	return (int64_t)(on - off);
}

/* 0 if the case holds; else prints why. */
static int check_case(const struct site_case *c)
{
	struct obs off, on;
	const char *name = pmtx__mutant_name(c->id);
	memset(&off, 0, sizeof(off));
	memset(&on, 0, sizeof(on));
	g_mutant = MUT_NONE;
	c->run(&off);
	g_mutant = c->id;
	c->run(&on);
	g_mutant = MUT_NONE;
	/* Without PMTX_MUTATION, nothing may change. */
	int64_t eb = MUTATION_BUILD ? c->barriers : 0;
	int64_t ef = !MUTATION_BUILD ? 0 : c->lines ? -c->lines() : c->flushes;
	int64_t en = MUTATION_BUILD ? c->nt_bytes : 0;
	int ep = MUTATION_BUILD ? c->probe : P_NONE;
	int64_t db = diff(on.c.barriers, off.c.barriers);
	int64_t df = diff(on.c.flushes, off.c.flushes);
	int64_t dn = diff(on.c.nt_bytes, off.c.nt_bytes);
	int bad = db != eb || df != ef || dn != en ||
	          on.c.bytes_logged != off.c.bytes_logged;
	if (bad)
		print_error("%s: barriers %+lld flushes %+lld nt %+lld "
		            "logged %+lld, expected %+lld %+lld %+lld 0\n",
		            name, (long long)db, (long long)df, (long long)dn,
		            (long long)diff(on.c.bytes_logged,
		                            off.c.bytes_logged),
		            (long long)eb, (long long)ef, (long long)en);
	for (int k = 0; k < NPROBE; k++) {
		int differs = on.p[k] != off.p[k];
		if (differs == (k == ep))
			continue;
		print_error("%s: %s %llu without, %llu with the mutant (%s)\n",
		            name, probe_names[k], (unsigned long long)off.p[k],
		            (unsigned long long)on.p[k],
		            differs ? "must be equal" : "must differ");
		bad = 1;
	}
	return bad;
}

static int cleanup(void **state)
{
	pmtx__mutant_set(MUT_NONE);
	persist_override_ops(NULL, NULL);
	snap.armed = 0;
	memset(&twatch, 0, sizeof(twatch));
	return 0;
}

/* ---- tests ---- */

static void every_site_has_exactly_one_case(void **state)
{
	unsigned n = pmtx__mutant_count(), seen[MUT_END_] = {0};
	assert_int_equal(n, MUT_NSITES);
	assert_int_equal(ARRAY_SIZE(cases), n);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_true(cases[i].id >= 1 && cases[i].id <= n);
		seen[cases[i].id]++;
	}
	for (unsigned id = 1; id <= n; id++) {
		if (seen[id] != 1)
			print_error("%s has %u cases\n", pmtx__mutant_name(id),
			            seen[id]);
		assert_int_equal(seen[id], 1);
	}
}

static void every_site_is_live_and_removes_only_what_it_issues(void **state)
{
	int failed = 0;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		failed += check_case(&cases[i]);
	assert_int_equal(failed, 0);
}

static void sites_have_unique_names_and_descriptions(void **state)
{
	unsigned n = pmtx__mutant_count();
	assert_string_equal(pmtx__mutant_name(0), "none");
	assert_null(pmtx__mutant_name(n + 1));
	assert_null(pmtx__mutant_desc(n + 1));
	for (unsigned i = 1; i <= n; i++) {
		const char *a = pmtx__mutant_name(i), *d = pmtx__mutant_desc(i);
		assert_non_null(a);
		assert_non_null(d);
		assert_non_null(strchr(a, '.'));
		assert_true(strlen(d) > 20);
		for (unsigned j = 1; j < i; j++)
			assert_string_not_equal(a, pmtx__mutant_name(j));
	}
}

static void lookup_accepts_names_symbols_and_numbers(void **state)
{
	unsigned n = pmtx__mutant_count();
	char num[16];
	for (unsigned i = 0; i <= n; i++) {
		snprintf(num, sizeof(num), "%u", i);
		assert_int_equal(pmtx__mutant_lookup(pmtx__mutant_name(i)), i);
		assert_int_equal(pmtx__mutant_lookup(num), i);
	}
	assert_int_equal(pmtx__mutant_lookup("MUT_UNDO_REC_FLUSH"),
	                 MUT_UNDO_REC_FLUSH);
	assert_int_equal(pmtx__mutant_lookup("undo.rec_flush"),
	                 MUT_UNDO_REC_FLUSH);
	assert_int_equal(pmtx__mutant_lookup(""), MUT_NONE);
	assert_int_equal(pmtx__mutant_lookup(NULL), MUT_NONE);
	snprintf(num, sizeof(num), "%u", n + 1);
	assert_int_equal(pmtx__mutant_lookup(num), MUT_INVALID);
	assert_int_equal(pmtx__mutant_lookup("undo.no_such_site"), MUT_INVALID);
	assert_int_equal(pmtx__mutant_lookup("99999999999"), MUT_INVALID);
	assert_int_equal(pmtx__mutant_lookup("-1"), MUT_INVALID);
}

static void set_rejects_unknown_sites_and_keeps_the_last_one(void **state)
{
	unsigned n = pmtx__mutant_count();
	if (!MUTATION_BUILD) {
		assert_int_equal(pmtx__mutant_set(MUT_UNDO_DATA_FLUSH),
		                 PMTX_E_UNSUPPORTED);
		assert_int_equal(pmtx__mutant_set(MUT_NONE),
		                 PMTX_E_UNSUPPORTED);
		assert_int_equal(pmtx__mutant_active(), MUT_NONE);
		return;
	}
	assert_int_equal(pmtx__mutant_set(MUT_UNDO_DATA_FLUSH), 0);
	assert_int_equal(pmtx__mutant_active(), MUT_UNDO_DATA_FLUSH);
	assert_int_equal(pmtx__mutant_set(n + 1), PMTX_E_INVAL);
	assert_int_equal(pmtx__mutant_set(MUT_INVALID), PMTX_E_INVAL);
	assert_int_equal(pmtx__mutant_active(), MUT_UNDO_DATA_FLUSH);
	assert_int_equal(pmtx__mutant_set(MUT_NONE), 0);
	assert_int_equal(pmtx__mutant_active(), MUT_NONE);
}

/* The child (main, --env-child PATH): the first create reads
 * PMTX_MUTANT; exit with the disabled site's id as seen by the sites
 * themselves. PATH is the parent's, which removes it (the child may abort
 * in pmtx_create). */
static int env_child(const char *path)
{
	pmtx_options o;
	pmtx_region *r;
	pmtx_options_init(&o);
	o.root_size = 4096;
	o.ndesc = 2;
	if (pmtx_create(path, 2u << 20, &o, &r))
		return 255;
#ifdef PMTX_MUTATION
	unsigned seen = __atomic_load_n(&pmtx__mutant, __ATOMIC_RELAXED);
#else
	unsigned seen = pmtx__mutant_active();
#endif
	pmtx_close(r);
	unlink(path);
	return (int)seen;
}

/* Runs this program as an env child; returns its wait status. */
static int run_env_child(const char *value)
{
	const char *path = tu_path();
	pid_t pid = tu_fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 2); /* the expected complaint */
		setenv("PMTX_MUTANT", value, 1);
		execl("/proc/self/exe", "test_mutant", "--env-child", path,
		      (char *)NULL);
		_exit(254);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	unlink(path);
	return st;
}

static void env_variable_is_read_at_the_first_create(void **state)
{
	static const char *const vals[] = {"undo.commit_barrier",
	                                   "MUT_HEAP_BITMAP_FLUSH", "3", "none",
	                                   "0"};
	for (size_t i = 0; i < ARRAY_SIZE(vals); i++) {
		int st = run_env_child(vals[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), MUTATION_BUILD
		                 ? pmtx__mutant_lookup(vals[i]) : MUT_NONE);
	}
	/* A name that matches no site must not run the unmutated code; a
	 * build without sites ignores the variable (with a warning). */
	int st = run_env_child("undo.no_such_site");
	if (MUTATION_BUILD)
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	else
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == MUT_NONE);
}

#define T(f) cmocka_unit_test_teardown(f, cleanup)

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--env-child") == 0)
		return env_child(argv[2]);
	const struct CMUnitTest tests[] = {
		T(every_site_has_exactly_one_case),
		T(sites_have_unique_names_and_descriptions),
		T(lookup_accepts_names_symbols_and_numbers),
		T(set_rejects_unknown_sites_and_keeps_the_last_one),
		T(env_variable_is_read_at_the_first_create),
		T(every_site_is_live_and_removes_only_what_it_issues),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
