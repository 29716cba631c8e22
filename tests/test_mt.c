/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mt.c - transactions in several threads.
 *
 * Threads run transactions on disjoint data (a slice of their own and an
 * object of their own in the heap), and every transaction also increments
 * a counter shared by all of them (and sometimes replaces a shared "box"
 * object, so blocks are freed by other threads than their allocator),
 * under a mutex that is locked inside the transaction and released with
 * pmtx_defer_unlock(), i.e. only once the transaction has committed or
 * aborted. Some transactions abort. The deferred operations themselves
 * (order, once, in their own thread, after every barrier of the commit,
 * flat nesting) and descriptor exhaustion (PMTX_E_BUSY) are checked
 * separately.
 *
 * Data is reached through object references (struct ref): in place in the
 * root for the runtimes that write raw ranges, or copy-on-write objects
 * named from the root under the copy-on-write runtime, which can only
 * update objects through their wrappers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static const pmtx_runtime runtimes[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                        PMTX_RT_REDO_ASYNC, PMTX_RT_COW,
                                        PMTX_RT_AUTO};
#define NRUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))

#define NTHREADS 4
#define SLICE_WORDS 16
#define NDATA 64
#define REGION_SIZE (16u << 20)

struct slice {               /* thread t's own */
	uint64_t v[SLICE_WORDS];
	pmtx_off obj;            /* its heap object, or 0 */
	uint64_t objlen, objseed;
	uint64_t pad[5];
};

struct shared {              /* every thread's, under the lock */
	uint64_t counter;        /* committed increments of every thread */
	pmtx_off box;            /* replaced by any thread */
	uint64_t boxlen, boxseed;
	uint64_t pad[4];
};

struct data {                /* for the single-threaded checks */
	uint64_t w[NDATA];
};

struct mroot {
	struct shared sh;
	struct slice slice[NTHREADS];
	struct data data;
	/* copy-on-write: the wrappers of the same objects */
	pmtx_off cw_shared, cw_slice[NTHREADS], cw_data;
};

#define F_V(j) (offsetof(struct slice, v) + (size_t)(j) * 8)
#define F_W(j) (offsetof(struct data, w) + (size_t)(j) * 8)

static int is_cow(pmtx_runtime rt)
{
	return rt == PMTX_RT_COW;
}

static struct mroot *root_of(pmtx_region *r)
{
	return pmtx_root(r, NULL);
}

/* ---- object references, raw or copy-on-write ---- */

struct ref {
	void *raw;  /* the object in place (raw runtimes) */
	pmtx_off w; /* its wrapper (copy-on-write), or 0 */
};

static struct ref ref_shared(pmtx_region *r, pmtx_runtime rt)
{
	struct mroot *m = root_of(r);
	return (struct ref){&m->sh, is_cow(rt) ? m->cw_shared : 0};
}

static struct ref ref_slice(pmtx_region *r, pmtx_runtime rt, unsigned t)
{
	struct mroot *m = root_of(r);
	return (struct ref){&m->slice[t], is_cow(rt) ? m->cw_slice[t] : 0};
}

static struct ref ref_data(pmtx_region *r, pmtx_runtime rt)
{
	struct mroot *m = root_of(r);
	return (struct ref){&m->data, is_cow(rt) ? m->cw_data : 0};
}

/* The bytes of the object as tx sees them: raw, in place (read them with
 * pmtx_read); cow, the committed payload or tx's copy (write: make one). */
static int ref_at(pmtx_tx *tx, struct ref o, int write, char **p)
{
	if (!o.w) {
		*p = o.raw;
		return 0;
	}
	return pmtx_cow_open(tx, o.w, write ? PMTX_COW_WRITE : PMTX_COW_READ,
	                     NULL, (void **)p);
}

static int ref_get(pmtx_tx *tx, struct ref o, size_t field, uint64_t *x)
{
	char *p;
	int rc = ref_at(tx, o, 0, &p);
	if (rc)
		return rc;
	if (o.w) {
		memcpy(x, p + field, 8);
		return 0;
	}
	return pmtx_read(tx, x, p + field, 8);
}

static int ref_set(pmtx_tx *tx, struct ref o, size_t field, uint64_t x)
{
	char *p;
	int rc = ref_at(tx, o, 1, &p);
	if (rc)
		return rc;
	if (o.w) {
		memcpy(p + field, &x, 8); /* tx's copy: commit persists it */
		return 0;
	}
	return pmtx_write(tx, p + field, &x, 8);
}

/* The committed object, outside any transaction. */
static const void *ref_peek(pmtx_region *r, struct ref o)
{
	return o.w ? pmtx_cow_peek(r, o.w) : o.raw;
}

static uint64_t peek_word(pmtx_region *r, struct ref o, size_t field)
{
	uint64_t x;
	const char *p = ref_peek(r, o);
	assert_non_null(p);
	memcpy(&x, p + field, 8);
	return x;
}

/* Heap objects of the workload: a block (raw) or a copy-on-write object,
 * filled with a pattern of seed. */
static uint8_t obj_byte(uint64_t seed, uint64_t i)
{
	return (uint8_t)((seed >> (8 * (i % 8))) ^ (i * 13));
}

static int heap_obj_new(pmtx_region *r, pmtx_tx *tx, int cow, uint64_t len,
                        uint64_t seed, pmtx_off *out)
{
	uint8_t *p;
	int rc;
	if (cow) {
		if ((rc = pmtx_cow_new(tx, len, out)) ||
		    (rc = pmtx_cow_open(tx, *out, PMTX_COW_WRITE, NULL,
		                        (void **)&p)))
			return rc;
	} else {
		if ((rc = pmtx_alloc(tx, len, out)))
			return rc;
		p = pmtx_ptr(r, *out);
	}
	for (uint64_t i = 0; i < len; i++)
		p[i] = obj_byte(seed, i);
	if (!cow)
		pmtx_flush(r, p, len); /* naked init: durable at commit */
	return 0;
}

static int heap_obj_free(pmtx_tx *tx, int cow, pmtx_off h)
{
	return cow ? pmtx_cow_delete(tx, h) : pmtx_free(tx, h);
}

static const uint8_t *heap_obj_peek(pmtx_region *r, int cow, pmtx_off h)
{
	return cow ? pmtx_cow_peek(r, h) : pmtx_ptr(r, h);
}

/* ---- regions ---- */

/* Paths of the regions a test made, unlinked after it even if it fails. */
static char made[16][96];
static unsigned nmade;

static int unlink_made(void **state)
{
	for (unsigned i = 0; i < nmade; i++)
		unlink(made[i]);
	nmade = 0;
	return 0;
}

/* A region whose objects exist: under copy-on-write, the shared, slice
 * and data objects are created by one copy-on-write transaction and named
 * in the root by an undo one (copy-on-write cannot write the root). */
static pmtx_region *create_region(const char **path, unsigned ndesc,
                                  pmtx_runtime rt)
{
	pmtx_options o = tu_options(sizeof(struct mroot), rt);
	o.ndesc = ndesc;
	*path = tu_path();
	if (nmade < sizeof(made) / sizeof(made[0]))
		snprintf(made[nmade++], sizeof(made[0]), "%s", *path);
	pmtx_region *r = tu_create_at(*path, REGION_SIZE, &o);
	if (!is_cow(rt))
		return r;
	pmtx_off w[NTHREADS + 2];
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(r, rt, &tx), 0);
	assert_int_equal(pmtx_cow_new(tx, sizeof(struct shared), &w[0]), 0);
	for (unsigned t = 0; t < NTHREADS; t++)
		assert_int_equal(pmtx_cow_new(tx, sizeof(struct slice), &w[t + 1]),
		                 0);
	assert_int_equal(pmtx_cow_new(tx, sizeof(struct data), &w[NTHREADS + 1]),
	                 0);
	assert_int_equal(pmtx_commit(tx), 0);
	struct mroot *m = root_of(r);
	assert_int_equal(pmtx_begin(r, PMTX_RT_UNDO, &tx), 0);
	assert_int_equal(PMTX_SET(tx, m->cw_shared, w[0]), 0);
	for (unsigned t = 0; t < NTHREADS; t++)
		assert_int_equal(PMTX_SET(tx, m->cw_slice[t], w[t + 1]), 0);
	assert_int_equal(PMTX_SET(tx, m->cw_data, w[NTHREADS + 1]), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	return r;
}

/* ---- the workload ---- */

struct worker {
	pmtx_region *r;
	pmtx_runtime rt;
	pthread_mutex_t *lock;
	unsigned t;
	unsigned iters;
	int retry_busy;        /* retry pmtx_begin on PMTX_E_BUSY */
	/* results */
	uint64_t expect[SLICE_WORDS];
	uint64_t commits, aborts, busy;
	int err;               /* first unexpected status, or 0 */
	const char *where;
};

static void worker_fail(struct worker *w, int rc, const char *where)
{
	if (!w->err) {
		w->err = rc ? rc : -1;
		w->where = where;
	}
}

/* Replace the heap object named by fields (obj, len, seed) of o by a new
 * one. */
static int replace_obj(struct worker *w, pmtx_tx *tx, uint64_t *rs,
                       struct ref o, size_t f_obj, size_t f_len,
                       size_t f_seed)
{
	int cow = is_cow(w->rt);
	uint64_t len = 16 + tu_rand(rs) % 600, seed = tu_rand(rs), old;
	pmtx_off off;
	int rc = ref_get(tx, o, f_obj, &old);
	if (!rc)
		rc = heap_obj_new(w->r, tx, cow, len, seed, &off);
	if (!rc && old)
		rc = heap_obj_free(tx, cow, old);
	if (!rc)
		rc = ref_set(tx, o, f_obj, off);
	if (!rc)
		rc = ref_set(tx, o, f_len, len);
	if (!rc)
		rc = ref_set(tx, o, f_seed, seed);
	return rc;
}

/* A watchdog, not a timing check: a deferred unlock that never runs must
 * fail the test rather than hang it. */
#define LOCK_GIVE_UP_S 60

static int lock_shared(pthread_mutex_t *m)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += LOCK_GIVE_UP_S;
	return pthread_mutex_timedlock(m, &ts);
}

static int begin_retry(struct worker *w, pmtx_tx **tx)
{
	for (;;) {
		int rc = pmtx_begin(w->r, w->rt, tx);
		if (rc != PMTX_E_BUSY || !w->retry_busy)
			return rc;
		w->busy++;
		if (pmtx_tx_current())
			return PMTX_E_TX_STATE; /* BUSY must leave no tx */
		sched_yield();
	}
}

/* One transaction: slice updates, sometimes a new own object, the shared
 * counter (and sometimes a new shared box) under the deferred-release
 * lock; 1 in 8 aborts. */
static int one_tx(struct worker *w, uint64_t *rs, unsigned i,
                  const char **op)
{
	struct ref sl = ref_slice(w->r, w->rt, w->t);
	struct ref sh = ref_shared(w->r, w->rt);
	uint64_t next[SLICE_WORDS];
	pmtx_tx *tx;
	*op = "begin";
	int rc = begin_retry(w, &tx);
	if (rc)
		return rc;
	memcpy(next, w->expect, sizeof(next));
	unsigned nw = 1 + (unsigned)(tu_rand(rs) % 4);
	*op = "slice write";
	for (unsigned k = 0; !rc && k < nw; k++) {
		unsigned j = (unsigned)(tu_rand(rs) % SLICE_WORDS);
		next[j] += (uint64_t)(w->t + 1) * (i + 1);
		rc = ref_set(tx, sl, F_V(j), next[j]);
	}
	if (!rc && tu_rand(rs) % 4 == 0) {
		*op = "replace own object";
		rc = replace_obj(w, tx, rs, sl, offsetof(struct slice, obj),
		                 offsetof(struct slice, objlen),
		                 offsetof(struct slice, objseed));
	}
	if (!rc) {
		*op = "counter increment";
		if (lock_shared(w->lock)) {
			*op = "shared lock never released (deferred unlock lost)";
			pmtx_abort(tx);
			return PMTX_E_TX_STATE;
		}
		rc = pmtx_defer_unlock(tx, w->lock);
		if (rc) {
			pthread_mutex_unlock(w->lock);
		} else {
			uint64_t c;
			rc = ref_get(tx, sh, offsetof(struct shared, counter), &c);
			if (!rc)
				rc = ref_set(tx, sh,
				             offsetof(struct shared, counter),
				             c + 1);
		}
	}
	if (!rc && tu_rand(rs) % 4 == 0) {
		*op = "replace shared box";
		rc = replace_obj(w, tx, rs, sh, offsetof(struct shared, box),
		                 offsetof(struct shared, boxlen),
		                 offsetof(struct shared, boxseed));
	}
	if (rc) {
		pmtx_abort(tx);
		return rc;
	}
	if (tu_rand(rs) % 8 == 0) {
		*op = "abort";
		if ((rc = pmtx_abort(tx)))
			return rc;
		w->aborts++;
		return 0;
	}
	*op = "commit";
	if ((rc = pmtx_commit(tx)))
		return rc;
	memcpy(w->expect, next, sizeof(next));
	w->commits++;
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t rs = 0x1000 + w->t;
	for (unsigned i = 0; i < w->iters && !w->err; i++) {
		const char *op = "";
		int rc = one_tx(w, &rs, i, &op);
		if (rc)
			worker_fail(w, rc, op);
		else if (pmtx_tx_current())
			worker_fail(w, 0, "a transaction outlived its end");
	}
	return NULL;
}

static void run_workers(struct worker *w, unsigned n)
{
	tu_run_threads(worker_main, w, sizeof(*w), n);
	for (unsigned t = 0; t < n; t++)
		if (w[t].err)
			fail_msg("%s thread %u: %s: %s",
			         pmtx_runtime_name(w[t].rt), t, w[t].where,
			         pmtx_strerror(w[t].err));
}

/* ---- checks ---- */

/* The heap blocks an object uses: its block, or its wrapper and payload. */
static void expect_blocks(pmtx_region *r, int cow, pmtx_off h,
                          struct tu_offs *used)
{
	tu_offs_push(used, h);
	if (cow)
		tu_offs_push(used, pmtx_off_of(r, pmtx_cow_peek(r, h)));
}

static void check_obj(pmtx_region *r, int cow, pmtx_off h, uint64_t len,
                      uint64_t seed, const char *when, const char *what)
{
	const uint8_t *p = heap_obj_peek(r, cow, h);
	if (!p || pmtx_usable_size(r, pmtx_off_of(r, p)) < len)
		fail_msg("%s: %s is not an allocated object", when, what);
	for (uint64_t i = 0; i < len; i++)
		if (p[i] != obj_byte(seed, i))
			fail_msg("%s: %s byte %llu differs", when, what,
			         (unsigned long long)i);
}

/* Slices, counter, objects, no leak. The heap check's status is returned,
 * not asserted, so that a failure there does not hide the others. */
static int check_state(pmtx_region *r, pmtx_runtime rt,
                       const struct worker *w, unsigned n, const char *when)
{
	int cow = is_cow(rt);
	struct tu_offs used = {0};
	uint64_t total = 0;
	for (unsigned t = 0; t < n; t++) {
		struct ref sl = ref_slice(r, rt, t);
		const struct slice *s = ref_peek(r, sl);
		assert_non_null(s);
		for (unsigned j = 0; j < SLICE_WORDS; j++)
			if (s->v[j] != w[t].expect[j])
				fail_msg("%s: thread %u word %u is %llu, "
				         "expected %llu", when, t, j,
				         (unsigned long long)s->v[j],
				         (unsigned long long)w[t].expect[j]);
		total += w[t].commits;
		if (s->obj) {
			check_obj(r, cow, s->obj, s->objlen, s->objseed, when,
			          "a thread's object");
			expect_blocks(r, cow, s->obj, &used);
		}
		if (cow)
			expect_blocks(r, 1, sl.w, &used);
	}
	struct ref shr = ref_shared(r, rt);
	const struct shared *sh = ref_peek(r, shr);
	assert_non_null(sh);
	if (sh->counter != total)
		fail_msg("%s: shared counter %llu, committed increments %llu",
		         when, (unsigned long long)sh->counter,
		         (unsigned long long)total);
	if (sh->box) {
		check_obj(r, cow, sh->box, sh->boxlen, sh->boxseed, when,
		          "the shared box");
		expect_blocks(r, cow, sh->box, &used);
	}
	if (cow) {
		expect_blocks(r, 1, shr.w, &used);
		for (unsigned t = n; t < NTHREADS; t++)
			expect_blocks(r, 1, ref_slice(r, rt, t).w, &used);
		expect_blocks(r, 1, ref_data(r, rt).w, &used);
	}
	tu_assert_heap_blocks(r, &used, when);
	free(used.v);
	pmtx_heap_stats st;
	int rc = pmtx_heap_check(r, &st);
	if (rc)
		print_error("%s: heap check: %s\n", when, st.first_error);
	return rc;
}

/* Check live, close, reopen and check again; then the heap checks. */
static void check_live_and_reopened(pmtx_region *r, const char *path,
                                    pmtx_runtime rt, const struct worker *w)
{
	char when[64];
	snprintf(when, sizeof(when), "%s, before close", pmtx_runtime_name(rt));
	int hc_live = check_state(r, rt, w, NTHREADS, when);
	assert_int_equal(pmtx_close(r), 0);
	r = tu_open(path);
	snprintf(when, sizeof(when), "%s, after reopen", pmtx_runtime_name(rt));
	int hc_reopen = check_state(r, rt, w, NTHREADS, when);
	tu_close_and_remove(r, path);
	assert_int_equal(hc_reopen, 0);
	assert_int_equal(hc_live, 0);
}

static void threads_on_disjoint_data_with_shared_counter_stay_consistent(
	void **state)
{
	unsigned iters = tu_long_mode() ? 200000 : 20000;
	for (size_t ri = 0; ri < NRUNTIMES; ri++) {
		const char *path;
		pmtx_region *r = create_region(&path, 64, runtimes[ri]);
		pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
		struct worker w[NTHREADS];
		memset(w, 0, sizeof(w));
		for (unsigned t = 0; t < NTHREADS; t++)
			w[t] = (struct worker){.r = r, .rt = runtimes[ri],
			                       .lock = &lock, .t = t,
			                       .iters = iters};
		run_workers(w, NTHREADS);
		uint64_t aborts = 0;
		for (unsigned t = 0; t < NTHREADS; t++)
			aborts += w[t].aborts;
		assert_true(aborts > 0);
		/* The lock was released by every transaction. */
		assert_int_equal(pthread_mutex_trylock(&lock), 0);
		pthread_mutex_unlock(&lock);
		check_live_and_reopened(r, path, runtimes[ri], w);
	}
}

/* ---- deferred operations ---- */

struct drec {
	int n;
	int order[8];
	pmtx_tx *cur[8];
	uint64_t barriers[8]; /* barrier count when the op ran */
	uint64_t seen[8];     /* committed data word 0 seen by the op */
	pmtx_region *r;
	pmtx_runtime rt;
};

static struct drec dr;

static void note(int id)
{
	pmtx_counters c;
	pmtx_counters_get(&c);
	dr.order[dr.n] = id;
	dr.cur[dr.n] = pmtx_tx_current();
	dr.barriers[dr.n] = c.barriers;
	dr.seen[dr.n] = peek_word(dr.r, ref_data(dr.r, dr.rt), F_W(0));
	dr.n++;
}

static void d0(void *a) { (void)a; note(0); }
static void d1(void *a) { (void)a; note(1); }
static void d2(void *a) { (void)a; note(2); }

static void dr_reset(pmtx_region *r, pmtx_runtime rt)
{
	memset(&dr, 0, sizeof(dr));
	dr.r = r;
	dr.rt = rt;
	pmtx_counters_reset();
}

/* body in a fresh region (64 descriptors) of each runtime, with the
 * deferred operations' record and the counters reset; the region body
 * returns (it may reopen it) is closed and removed. */
static void in_each_runtime(pmtx_region *(*body)(pmtx_region *r,
                                                 pmtx_runtime rt,
                                                 const char *path))
{
	for (size_t ri = 0; ri < NRUNTIMES; ri++) {
		const char *path;
		pmtx_region *r = create_region(&path, 64, runtimes[ri]);
		dr_reset(r, runtimes[ri]);
		tu_close_and_remove(body(r, runtimes[ri], path), path);
	}
}

/* Deferred operations run after the whole commit (every barrier of it),
 * in registration order, with no transaction current; a deferred unlock
 * keeps the mutex held until then. */
static pmtx_region *commit_then_deferred_ops(pmtx_region *r, pmtx_runtime rt,
                                             const char *path)
{
	struct ref data = ref_data(r, rt);
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	for (int with_alloc = 0; with_alloc < 2; with_alloc++) {
		pmtx_tx *tx;
		pmtx_off off = 0;
		dr_reset(r, rt);
		assert_int_equal(pmtx_begin(r, rt, &tx), 0);
		pthread_mutex_lock(&m);
		assert_int_equal(pmtx_defer(tx, d0, NULL), 0);
		assert_int_equal(pmtx_defer_unlock(tx, &m), 0);
		assert_int_equal(pmtx_defer(tx, d1, NULL), 0);
		assert_int_equal(pmtx_defer(tx, d2, NULL), 0);
		for (unsigned i = 0; i < 4; i++)
			assert_int_equal(ref_set(tx, data, F_W(i * 8),
			                         100 + i +
			                                 (uint64_t)with_alloc),
			                 0);
		if (with_alloc)
			assert_int_equal(heap_obj_new(r, tx, is_cow(rt), 64,
			                              1, &off),
			                 0);
		assert_int_equal(dr.n, 0);
		assert_int_equal(pthread_mutex_trylock(&m), EBUSY);
		pmtx_counters c;
		pmtx_counters_get(&c);
		uint64_t before_commit = c.barriers;
		assert_int_equal(pmtx_commit(tx), 0);
		pmtx_counters_get(&c);
		assert_int_equal(dr.n, 3);
		for (int i = 0; i < 3; i++) {
			assert_int_equal(dr.order[i], i);
			assert_null(dr.cur[i]);
			/* every barrier of the commit came first */
			assert_int_equal(dr.barriers[i], c.barriers);
			assert_int_equal(dr.seen[i],
			                 100 + (uint64_t)with_alloc);
		}
		assert_true(c.barriers > before_commit);
		assert_int_equal(pthread_mutex_trylock(&m), 0);
		pthread_mutex_unlock(&m);
		if (off) {
			assert_int_equal(pmtx_begin(r, rt, &tx), 0);
			assert_int_equal(heap_obj_free(tx, is_cow(rt), off),
			                 0);
			assert_int_equal(pmtx_commit(tx), 0);
		}
	}
	return r;
}

/* After an abort, deferred operations see the rolled-back data: a
 * deferred unlock never exposes a value that was being rolled back. */
static pmtx_region *abort_then_deferred_ops(pmtx_region *r, pmtx_runtime rt,
                                            const char *path)
{
	struct ref data = ref_data(r, rt);
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pmtx_tx *tx;
	uint64_t seen = 0;
	assert_int_equal(pmtx_begin(r, rt, &tx), 0);
	pthread_mutex_lock(&m);
	assert_int_equal(pmtx_defer_unlock(tx, &m), 0);
	assert_int_equal(pmtx_defer(tx, d0, NULL), 0);
	assert_int_equal(ref_set(tx, data, F_W(0), 7), 0);
	assert_int_equal(ref_get(tx, data, F_W(0), &seen), 0);
	assert_int_equal(seen, 7);
	assert_int_equal(pmtx_abort(tx), 0);
	pmtx_counters c;
	pmtx_counters_get(&c);
	assert_int_equal(dr.n, 1);
	assert_null(dr.cur[0]);
	assert_int_equal(dr.seen[0], 0);
	assert_int_equal(dr.barriers[0], c.barriers);
	assert_null(pmtx_tx_current());
	assert_int_equal(pthread_mutex_trylock(&m), 0);
	pthread_mutex_unlock(&m);
	return r;
}

/* Nested begin/commit is flat: the inner begin returns the running
 * transaction, inner commits commit nothing and run no deferred op; the
 * outermost commit does both. */
static pmtx_region *nested_commits(pmtx_region *r, pmtx_runtime rt,
                                   const char *path)
{
	struct ref data = ref_data(r, rt);
	pmtx_tx *t1, *t2, *t3;
	assert_int_equal(pmtx_begin(r, rt, &t1), 0);
	assert_int_equal(ref_set(t1, data, F_W(8), 11), 0);
	assert_int_equal(pmtx_begin(r, rt, &t2), 0);
	assert_ptr_equal(t2, t1);
	assert_int_equal(pmtx_defer(t2, d0, NULL), 0);
	assert_int_equal(pmtx_begin(r, rt, &t3), 0);
	assert_ptr_equal(t3, t1);
	assert_int_equal(ref_set(t3, data, F_W(0), 12), 0);
	assert_int_equal(pmtx_defer(t3, d1, NULL), 0);
	pmtx_counters c0, c1;
	pmtx_counters_get(&c0);
	assert_int_equal(pmtx_commit(t3), 0);
	assert_int_equal(pmtx_commit(t2), 0);
	pmtx_counters_get(&c1);
	/* nothing committed, nothing run yet */
	assert_int_equal(c1.barriers, c0.barriers);
	assert_int_equal(dr.n, 0);
	assert_ptr_equal(pmtx_tx_current(), t1);
	assert_int_equal(pmtx_defer(t1, d2, NULL), 0);
	assert_int_equal(pmtx_commit(t1), 0);
	assert_null(pmtx_tx_current());
	assert_int_equal(dr.n, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(dr.order[i], i);
		assert_null(dr.cur[i]);
		assert_int_equal(dr.seen[i], 12);
	}
	pmtx_counters_get(&c1);
	assert_true(c1.barriers > c0.barriers);
	if (rt == PMTX_RT_UNDO) /* (i) and the COMMIT record */
		assert_int_equal(c1.barriers, c0.barriers + 2);
	/* A commit of an ended transaction is refused. */
	assert_int_equal(pmtx_commit(t1), PMTX_E_NO_TX);
	assert_int_equal(pmtx_close(r), 0);
	r = tu_open(path);
	data = ref_data(r, rt);
	assert_int_equal(peek_word(r, data, F_W(8)), 11);
	assert_int_equal(peek_word(r, data, F_W(0)), 12);
	return r;
}

/* An inner abort aborts the whole flat transaction (writes and
 * allocations), but deferred ops wait for the outermost end, whose commit
 * reports PMTX_E_ABORTED. */
static pmtx_region *nested_abort(pmtx_region *r, pmtx_runtime rt,
                                 const char *path)
{
	struct ref data = ref_data(r, rt);
	pmtx_tx *t1, *t2;
	pmtx_off off;
	assert_int_equal(pmtx_begin(r, rt, &t1), 0);
	assert_int_equal(ref_set(t1, data, F_W(0), 21), 0);
	assert_int_equal(pmtx_defer(t1, d0, NULL), 0);
	assert_int_equal(pmtx_begin(r, rt, &t2), 0);
	assert_int_equal(ref_set(t2, data, F_W(1), 22), 0);
	assert_int_equal(heap_obj_new(r, t2, is_cow(rt), 100, 1, &off), 0);
	assert_int_equal(pmtx_abort(t2), 0);
	/* rolled back at once, but still current; no deferred op yet */
	assert_int_equal(peek_word(r, data, F_W(0)), 0);
	assert_int_equal(peek_word(r, data, F_W(1)), 0);
	assert_int_equal(dr.n, 0);
	assert_ptr_equal(pmtx_tx_current(), t1);
	assert_int_equal(ref_set(t1, data, F_W(2), 23), PMTX_E_ABORTED);
	assert_int_equal(pmtx_alloc(t1, 100, &off), PMTX_E_ABORTED);
	assert_int_equal(pmtx_defer(t1, d1, NULL), 0);
	assert_int_equal(pmtx_commit(t1), PMTX_E_ABORTED);
	assert_null(pmtx_tx_current());
	assert_int_equal(dr.n, 2);
	assert_int_equal(dr.order[0], 0);
	assert_int_equal(dr.order[1], 1);
	assert_null(dr.cur[0]);
	assert_null(dr.cur[1]);
	assert_int_equal(peek_word(r, data, F_W(2)), 0);
	pmtx_heap_stats st;
	int hc = pmtx_heap_check(r, &st);
	if (hc)
		print_error("heap check after nested abort: %s\n",
		            st.first_error);
	struct tu_offs used = {0};
	if (is_cow(rt)) {
		expect_blocks(r, 1, ref_shared(r, rt).w, &used);
		for (unsigned t = 0; t < NTHREADS; t++)
			expect_blocks(r, 1, ref_slice(r, rt, t).w, &used);
		expect_blocks(r, 1, data.w, &used);
	}
	tu_assert_heap_blocks(r, &used, "after nested abort");
	assert_int_equal(pmtx_close(r), 0);
	r = tu_open(path);
	data = ref_data(r, rt);
	assert_int_equal(peek_word(r, data, F_W(0)), 0);
	assert_int_equal(peek_word(r, data, F_W(1)), 0);
	tu_assert_heap_blocks(r, &used, "after nested abort and reopen");
	free(used.v);
	assert_int_equal(pmtx_heap_check(r, &st), 0);
	assert_int_equal(hc, 0);
	return r;
}

/* The tests of the four scenarios above, each in every runtime. */
#define EACH_RUNTIME(test, body)                                             \
	static void test(void **state)                                        \
	{                                                                    \
		in_each_runtime(body);                                       \
	}
EACH_RUNTIME(deferred_ops_run_after_commit_in_registration_order,
             commit_then_deferred_ops)
EACH_RUNTIME(deferred_ops_after_abort_see_rolled_back_data,
             abort_then_deferred_ops)
EACH_RUNTIME(nested_commit_is_flat_and_defers_to_the_outermost_end,
             nested_commits)
EACH_RUNTIME(nested_abort_aborts_all_and_defers_to_the_outermost_end,
             nested_abort)

/* Deferred operations of concurrent transactions: each runs exactly once,
 * in the thread whose transaction registered it, after that transaction
 * ended (none is lost, duplicated, or run by another thread's end). */
struct dcount {
	pthread_t owner;
	uint64_t ran, foreign;
};

static void count_deferred(void *arg)
{
	struct dcount *c = arg;
	c->ran++;
	if (!pthread_equal(c->owner, pthread_self()) || pmtx_tx_current())
		__atomic_add_fetch(&c->foreign, 1, __ATOMIC_RELAXED);
}

static unsigned dworker_iters; /* transactions of each thread */

struct dworker {
	pmtx_region *r;
	pmtx_runtime rt;
	unsigned t, iters;
	struct dcount c;
	uint64_t registered;
	int err;
};

static void *dworker_main(void *arg)
{
	struct dworker *w = arg;
	struct ref sl = ref_slice(w->r, w->rt, w->t);
	w->c.owner = pthread_self();
	for (uint64_t i = 0; i < w->iters && !w->err; i++) {
		pmtx_tx *tx;
		int rc = pmtx_begin(w->r, w->rt, &tx);
		if (rc == PMTX_E_BUSY) {
			i--;
			sched_yield();
			continue;
		}
		if (!rc)
			rc = ref_set(tx, sl, F_V(i % SLICE_WORDS), i);
		if (!rc)
			rc = pmtx_defer(tx, count_deferred, &w->c);
		if (rc) {
			w->err = rc;
			pmtx_abort(tx);
			break;
		}
		w->registered++;
		rc = i % 8 == 7 ? pmtx_abort(tx) : pmtx_commit(tx);
		if (rc)
			w->err = rc;
	}
	return NULL;
}

/* NTHREADS threads, each with its own deferred operations. */
static pmtx_region *concurrent_deferred_ops(pmtx_region *r, pmtx_runtime rt,
                                            const char *path)
{
	struct dworker w[NTHREADS];
	for (unsigned t = 0; t < NTHREADS; t++)
		w[t] = (struct dworker){.r = r, .rt = rt, .t = t,
		                        .iters = dworker_iters};
	tu_run_threads(dworker_main, w, sizeof(*w), NTHREADS);
	for (unsigned t = 0; t < NTHREADS; t++) {
		if (w[t].err)
			fail_msg("%s thread %u: %s",
			         pmtx_runtime_name(rt), t,
			         pmtx_strerror(w[t].err));
		if (w[t].c.ran != w[t].registered || w[t].c.foreign)
			fail_msg("%s thread %u: %llu deferred ops "
			         "registered, %llu run, %llu of them by "
			         "another thread or inside a transaction",
			         pmtx_runtime_name(rt), t,
			         (unsigned long long)w[t].registered,
			         (unsigned long long)w[t].c.ran,
			         (unsigned long long)w[t].c.foreign);
	}
	return r;
}

static void deferred_ops_of_concurrent_txs_run_once_in_their_own_thread(
	void **state)
{
	dworker_iters = tu_long_mode() ? 2000000 : 200000;
	in_each_runtime(concurrent_deferred_ops);
}

/* ---- more threads than descriptors ---- */

static pthread_barrier_t bar1, bar2;

struct busy_ctx {
	pmtx_region *r;
	pmtx_runtime rt;
	unsigned t;
	int rc_first; /* status of the first pmtx_begin (and write) */
	int rc_final; /* 0 once the thread's transaction committed */
	int tx_left;  /* a transaction was current after PMTX_E_BUSY */
};

/* Threads 0 and 1 hold the two descriptors while 2 and 3 try to begin;
 * then 0 and 1 commit and 2 and 3 retry until they get one. */
static void *busy_main(void *arg)
{
	struct busy_ctx *c = arg;
	struct ref sl = ref_slice(c->r, c->rt, c->t);
	pmtx_tx *tx = NULL;
	uint64_t v = 1000 + c->t;
	if (c->t < 2) {
		int began = !(c->rc_first = pmtx_begin(c->r, c->rt, &tx));
		if (began)
			c->rc_first = ref_set(tx, sl, F_V(0), v);
		pthread_barrier_wait(&bar1);
		pthread_barrier_wait(&bar2);
		if (began && c->rc_first)
			pmtx_abort(tx);
		c->rc_final = c->rc_first ? c->rc_first : pmtx_commit(tx);
		return NULL;
	}
	pthread_barrier_wait(&bar1);
	c->rc_first = pmtx_begin(c->r, c->rt, &tx);
	c->tx_left = pmtx_tx_current() != NULL;
	if (c->rc_first == 0)
		pmtx_abort(tx);
	pthread_barrier_wait(&bar2);
	int rc;
	while ((rc = pmtx_begin(c->r, c->rt, &tx)) == PMTX_E_BUSY)
		sched_yield();
	if (rc) {
		c->rc_final = rc;
		return NULL;
	}
	rc = ref_set(tx, sl, F_V(0), v);
	if (rc)
		pmtx_abort(tx);
	c->rc_final = rc ? rc : pmtx_commit(tx);
	return NULL;
}

/* With both descriptors of a 2-descriptor region held, pmtx_begin in two
 * more threads returns PMTX_E_BUSY and leaves no transaction behind; a
 * retry succeeds once descriptors are free. Then 4 threads contend with
 * retries, and every committed increment counts. */
static void more_threads_than_descriptors_get_busy_then_retry(void **state)
{
	unsigned iters = tu_long_mode() ? 20000 : 2000;
	for (size_t ri = 0; ri < NRUNTIMES; ri++) {
		pmtx_runtime rt = runtimes[ri];
		const char *path;
		pmtx_region *r = create_region(&path, 2, rt);
		struct busy_ctx c[NTHREADS];
		pthread_t th[NTHREADS];
		assert_int_equal(pthread_barrier_init(&bar1, NULL, NTHREADS), 0);
		assert_int_equal(pthread_barrier_init(&bar2, NULL, NTHREADS), 0);
		for (unsigned t = 0; t < NTHREADS; t++) {
			c[t] = (struct busy_ctx){.r = r, .rt = rt, .t = t};
			assert_int_equal(pthread_create(&th[t], NULL, busy_main,
			                                &c[t]), 0);
		}
		for (unsigned t = 0; t < NTHREADS; t++)
			assert_int_equal(pthread_join(th[t], NULL), 0);
		pthread_barrier_destroy(&bar1);
		pthread_barrier_destroy(&bar2);
		for (unsigned t = 0; t < NTHREADS; t++) {
			assert_int_equal(c[t].rc_first,
			                 t < 2 ? 0 : PMTX_E_BUSY);
			assert_int_equal(c[t].tx_left, 0);
			assert_int_equal(c[t].rc_final, 0);
			assert_int_equal(peek_word(r, ref_slice(r, rt, t), F_V(0)),
			                 1000 + t);
		}
		/* Contention with retries. */
		pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
		struct worker w[NTHREADS];
		memset(w, 0, sizeof(w));
		for (unsigned t = 0; t < NTHREADS; t++) {
			w[t] = (struct worker){.r = r, .rt = rt, .lock = &lock,
			                       .t = t, .iters = iters,
			                       .retry_busy = 1};
			w[t].expect[0] = 1000 + t;
		}
		run_workers(w, NTHREADS);
		check_live_and_reopened(r, path, rt, w);
	}
}

int main(void)
{
#define T(f) cmocka_unit_test_teardown(f, unlink_made)
	const struct CMUnitTest tests[] = {
		T(threads_on_disjoint_data_with_shared_counter_stay_consistent),
		T(deferred_ops_run_after_commit_in_registration_order),
		T(deferred_ops_after_abort_see_rolled_back_data),
		T(nested_commit_is_flat_and_defers_to_the_outermost_end),
		T(nested_abort_aborts_all_and_defers_to_the_outermost_end),
		T(deferred_ops_of_concurrent_txs_run_once_in_their_own_thread),
		T(more_threads_than_descriptors_get_busy_then_retry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
