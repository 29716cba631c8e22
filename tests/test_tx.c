/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tx.c - the transaction API's semantics under every runtime:
 * rollback, nesting, deferred operations, argument checks, macros, and
 * log growth. Barrier counts and crash behaviour are in test_recovery.c
 * and test_crash.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static const pmtx_runtime runtimes[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                        PMTX_RT_REDO_ASYNC, PMTX_RT_AUTO};
#define NRT (sizeof(runtimes) / sizeof(*runtimes))
#define ROOT 65536

struct fixture {
	const char *path;
	pmtx_region *r;
	unsigned char *root;
	pmtx_runtime rt; /* the region's default runtime */
	size_t next;     /* each_runtime: the index of the next one */
};

static struct fixture make(pmtx_runtime rt)
{
	struct fixture f = {.rt = rt};
	f.r = tu_create(&f.path, 32 << 20, ROOT, PMTX_PDOM1,
	                PMTX_BACKEND_HARDWARE, rt);
	f.root = pmtx_root(f.r, NULL);
	return f;
}

static void drop(struct fixture *f)
{
	tu_close_and_remove(f->r, f->path);
}

/* for (struct fixture f = {0}; each_runtime(&f);): f is a fresh region of
 * each runtime in turn, the one before dropped. */
static int each_runtime(struct fixture *f)
{
	size_t next = f->next;
	if (f->r)
		drop(f);
	if (next == NRT)
		return 0;
	*f = make(runtimes[next]);
	f->next = next + 1;
	return 1;
}

static void reopen(struct fixture *f)
{
	assert_int_equal(pmtx_close(f->r), 0);
	f->r = tu_open(f->path);
	f->root = pmtx_root(f->r, NULL);
}

static void fill_pattern(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + seed);
}

static void abort_restores_every_range(void **state)
{
	for (struct fixture f = {0}; each_runtime(&f);) {
		unsigned char before[ROOT], buf[3000];
		pmtx_tx *tx;
		fill_pattern(f.root, ROOT, 7);
		pmtx_persist(f.r, f.root, ROOT);
		memcpy(before, f.root, ROOT);
		assert_int_equal(pmtx_begin(f.r, f.rt, &tx), 0);
		uint64_t s = 42;
		for (int i = 0; i < 200; i++) {
			size_t off = tu_rand(&s) % (ROOT - 3000);
			size_t n = 1 + tu_rand(&s) % 3000;
			memset(buf, i, n);
			switch (i % 3) {
			case 0:
				assert_int_equal(pmtx_write(tx, f.root + off, buf, n), 0);
				break;
			case 1:
				assert_int_equal(pmtx_memset(tx, f.root + off, i, n), 0);
				break;
			default:
				if (f.rt == PMTX_RT_REDO ||
				    f.rt == PMTX_RT_REDO_ASYNC) {
					/* in-place stores need undo logging (AUTO
					 * turns to undo for them) */
					assert_int_equal(pmtx_add_range(tx, f.root + off, n),
					                 PMTX_E_UNSUPPORTED);
					assert_int_equal(pmtx_write(tx, f.root + off, buf, n),
					                 0);
					break;
				}
				assert_int_equal(pmtx_add_range(tx, f.root + off, n), 0);
				memset(f.root + off, i, n);
			}
		}
		/* the transaction sees its writes (in place or in its log) */
		static unsigned char seen[ROOT];
		assert_int_equal(pmtx_read(tx, seen, f.root, ROOT), 0);
		assert_memory_not_equal(before, seen, ROOT);
		assert_int_equal(pmtx_abort(tx), 0);
		assert_memory_equal(before, f.root, ROOT);
		reopen(&f);
		assert_memory_equal(before, f.root, ROOT);
	}
}

static void committed_writes_survive_reopen(void **state)
{
	for (struct fixture f = {0}; each_runtime(&f);) {
		unsigned char want[ROOT];
		memset(want, 0, sizeof(want));
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(f.r, f.rt, &tx), 0);
		fill_pattern(want + 100, 5000, 3);
		assert_int_equal(pmtx_write(tx, f.root + 100, want + 100, 5000), 0);
		/* overlapping write: the later one wins */
		memset(want + 4000, 0xee, 2000);
		assert_int_equal(pmtx_memset(tx, f.root + 4000, 0xee, 2000), 0);
		assert_int_equal(pmtx_commit(tx), 0);
		reopen(&f);
		assert_memory_equal(want, f.root, ROOT);
	}
}

static void nested_transactions_are_flattened(void **state)
{
	for (struct fixture f = {0}; each_runtime(&f);) {
		pmtx_tx *outer, *inner;
		uint64_t *v = (uint64_t *)f.root;
		assert_int_equal(pmtx_begin(f.r, f.rt, &outer), 0);
		assert_int_equal(PMTX_SET(outer, (v)[0], 1), 0);
		assert_int_equal(pmtx_begin(f.r, f.rt, &inner), 0);
		assert_ptr_equal(inner, outer);
		assert_int_equal(PMTX_SET(inner, (v)[1], 2), 0);
		assert_int_equal(pmtx_commit(inner), 0);
		/* the inner commit did not end the transaction */
		assert_ptr_equal(pmtx_tx_current(), outer);
		assert_int_equal(pmtx_abort(outer), 0);
		assert_null(pmtx_tx_current());
		assert_int_equal(v[0], 0);
		assert_int_equal(v[1], 0);

		/* an inner abort aborts everything; outer commit reports it */
		assert_int_equal(pmtx_begin(f.r, f.rt, &outer), 0);
		assert_int_equal(PMTX_SET(outer, (v)[0], 5), 0);
		assert_int_equal(pmtx_begin(f.r, f.rt, &inner), 0);
		assert_int_equal(PMTX_SET(inner, (v)[1], 6), 0);
		assert_int_equal(pmtx_abort(inner), 0);
		assert_int_equal(v[0], 0);
		assert_int_equal(pmtx_write(outer, &v[2], &(uint64_t){1}, 8),
		                 PMTX_E_ABORTED);
		assert_int_equal(pmtx_commit(outer), PMTX_E_ABORTED);
		assert_null(pmtx_tx_current());
		assert_int_equal(v[0] + v[1] + v[2], 0);
	}
}

static int order[16], norder;

static void record(void *arg)
{
	assert_null(pmtx_tx_current()); /* runs after the transaction */
	order[norder++] = (int)(intptr_t)arg;
}

static void deferred_ops_run_once_in_order_after_the_outermost_end(void **s)
{
	for (struct fixture f = {0}; each_runtime(&f);) {
		for (int abort_it = 0; abort_it < 2; abort_it++) {
			pmtx_tx *tx, *in;
			norder = 0;
			assert_int_equal(pmtx_begin(f.r, f.rt, &tx), 0);
			assert_int_equal(pmtx_defer(tx, record, (void *)1), 0);
			assert_int_equal(pmtx_begin(f.r, f.rt, &in), 0);
			assert_int_equal(pmtx_defer(in, record, (void *)2), 0);
			assert_int_equal(pmtx_commit(in), 0);
			assert_int_equal(norder, 0);
			assert_int_equal(pmtx_defer(tx, record, (void *)3), 0);
			if (abort_it)
				assert_int_equal(pmtx_abort(tx), 0);
			else
				assert_int_equal(pmtx_commit(tx), 0);
			assert_int_equal(norder, 3);
			for (int i = 0; i < 3; i++)
				assert_int_equal(order[i], i + 1);
		}
	}
}

static void deferred_unlock_holds_the_lock_until_commit(void **s)
{
	for (struct fixture f = {0}; each_runtime(&f);) {
		pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		pmtx_tx *tx;
		pthread_mutex_lock(&m);
		assert_int_equal(pmtx_begin(f.r, f.rt, &tx), 0);
		assert_int_equal(pmtx_defer_unlock(tx, &m), 0);
		assert_int_equal(PMTX_SET(tx, ((uint64_t *)f.root)[0], 9), 0);
		assert_int_equal(pthread_mutex_trylock(&m), EBUSY);
		assert_int_equal(pmtx_commit(tx), 0);
		assert_int_equal(pthread_mutex_trylock(&m), 0);
		pthread_mutex_unlock(&m);
	}
}

static void calls_outside_a_transaction_fail_with_no_tx(void **s)
{
	struct fixture f = make(PMTX_RT_UNDO);
	pmtx_tx *tx;
	uint64_t v = 1;
	pmtx_off off;
	assert_int_equal(pmtx_write(NULL, f.root, &v, 8), PMTX_E_NO_TX);
	assert_int_equal(pmtx_commit(NULL), PMTX_E_NO_TX);
	assert_int_equal(pmtx_abort(NULL), PMTX_E_NO_TX);
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_UNDO, &tx), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	/* a finished transaction's handle is dead */
	assert_int_equal(pmtx_write(tx, f.root, &v, 8), PMTX_E_NO_TX);
	assert_int_equal(pmtx_alloc(tx, 8, &off), PMTX_E_NO_TX);
	assert_int_equal(pmtx_commit(tx), PMTX_E_NO_TX);
	drop(&f);
}

static void writes_outside_user_data_fail_with_range(void **s)
{
	struct fixture f = make(PMTX_RT_UNDO);
	pmtx_tx *tx;
	uint64_t v = 1, stack = 0;
	unsigned char *base = (unsigned char *)f.root - 4096;
	assert_int_equal(pmtx_begin(f.r, PMTX_RT_UNDO, &tx), 0);
	/* the header, the descriptors, DRAM, past the root, past the end */
	assert_int_equal(pmtx_write(tx, pmtx_ptr(f.r, 4096), &v, 8), PMTX_E_RANGE);
	assert_int_equal(pmtx_write(tx, base, &v, 8), PMTX_E_RANGE);
	assert_int_equal(pmtx_write(tx, &stack, &v, 8), PMTX_E_RANGE);
	assert_int_equal(pmtx_write(tx, f.root + ROOT - 4, &v, 8), PMTX_E_RANGE);
	assert_int_equal(pmtx_add_range(tx, f.root, SIZE_MAX / 2), PMTX_E_RANGE);
	assert_int_equal(pmtx_write(tx, NULL, &v, 8), PMTX_E_INVAL);
	assert_int_equal(pmtx_write(tx, f.root, NULL, 8), PMTX_E_INVAL);
	assert_int_equal(pmtx_read(tx, &v, &stack, 8), PMTX_E_RANGE);
	/* the transaction is still usable */
	assert_int_equal(pmtx_write(tx, f.root + ROOT - 8, &v, 8), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_int_equal(*(uint64_t *)(f.root + ROOT - 8), 1);
	drop(&f);
}

static void one_transaction_per_thread_and_region(void **s)
{
	struct fixture a = make(PMTX_RT_UNDO), b = make(PMTX_RT_UNDO);
	pmtx_tx *tx, *tx2;
	assert_int_equal(pmtx_begin(a.r, PMTX_RT_UNDO, &tx), 0);
	assert_int_equal(pmtx_begin(b.r, PMTX_RT_UNDO, &tx2), PMTX_E_TX_STATE);
	assert_int_equal(pmtx_close(a.r), PMTX_E_TX_STATE);
	assert_int_equal(pmtx_commit(tx), 0);
	drop(&a);
	drop(&b);
}

struct pm_counter {
	int cnt;
};

/* The seed's Figure 3, with the macros. */
static void figure3_counter_increment(void **s)
{
	struct fixture f = make(PMTX_RT_UNDO);
	struct pm_counter *x = (struct pm_counter *)f.root;
	for (int i = 0; i < 10; i++) {
		pmtx_tx *txn;
		int status;
		do {
			assert_int_equal(TXN_BEGIN(f.r, txn), 0);
			int counter;
			assert_int_equal(TXN_READ(txn, x, cnt, &counter), 0);
			counter++;
			assert_int_equal(TXN_WRITE(txn, x, cnt, &counter), 0);
			status = TXN_COMMIT(txn);
		} while (status != 0);
	}
	reopen(&f);
	assert_int_equal(((struct pm_counter *)f.root)->cnt, 10);
	drop(&f);
}

/* Records bigger than a log chunk, and more records than fit in one,
 * grow the log; the grown log is reused without growing again. Undo logs
 * as it writes, so its aborted rounds grow the log; redo logs at commit,
 * so its rounds 0 and 2 commit and round 1 aborts. */
static void big_transactions_grow_the_log_and_roll_back(void **s)
{
	for (struct fixture f = {0}; each_runtime(&f);) {
		unsigned char before[ROOT];
		pmtx_tx *tx;
		pmtx_counters c;
		fill_pattern(f.root, ROOT, 1);
		memcpy(before, f.root, ROOT);
		for (int round = 0; round < 3; round++) {
			tu_count_start();
			assert_int_equal(pmtx_begin(f.r, f.rt, &tx), 0);
			/* AUTO: whichever it runs */
			int undo = pmtx_tx_runtime(tx) == PMTX_RT_UNDO;
			int commit = !undo && round != 1;
			/* one 40 KiB range, then 600 small ones */
			assert_int_equal(pmtx_memset(tx, f.root, round + 1, 40000),
			                 0);
			for (int i = 0; i < 600; i++)
				assert_int_equal(pmtx_memset(tx, f.root + 40000 + i * 40,
				                             round + 2, 8), 0);
			if (commit) {
				assert_int_equal(pmtx_commit(tx), 0);
				pmtx_drain(f.r);
				c = tu_count();
				assert_int_equal(f.root[39999], round + 1);
				assert_int_equal(f.root[40000 + 599 * 40], round + 2);
				memcpy(before, f.root, ROOT);
			} else {
				assert_int_equal(pmtx_abort(tx), 0);
				c = tu_count();
				assert_memory_equal(before, f.root, ROOT);
			}
			/* After the first round the log has grown: undo pays 2
			 * for the marked 40 KiB record, 1 per small one and 2
			 * for the abort; a redo abort pays nothing, and a redo
			 * commit 2 (redo-async: 1, and 1 for its truncation). */
			if (round > 0)
				assert_int_equal(c.barriers, undo     ? 2 + 600 + 2
				                             : commit ? 2
				                                      : 0);
		}
		reopen(&f);
		assert_memory_equal(before, f.root, ROOT);
		pmtx_heap_stats st;
		assert_int_equal(pmtx_heap_check(f.r, &st), 0);
		assert_true(st.internal_blocks >= 1);
	}
}

static void every_domain_and_backend_commits_and_aborts(void **s)
{
	for (int d = 0; d < 3; d++)
		for (int b = 0; b < 3; b++) {
			pmtx_options o;
			pmtx_options_init(&o);
			o.root_size = 4096;
			o.domain = (pmtx_domain)d;
			o.backend = (pmtx_backend)b;
			char path[128];
			snprintf(path, sizeof(path), "%s/pmtx-test-%d-dom%d-%d.pmtx",
			         b == PMTX_BACKEND_FILE ? "/var/tmp" : "/dev/shm",
			         (int)getpid(), d, b);
			unlink(path);
			pmtx_region *r;
			assert_int_equal(pmtx_create(path, 8 << 20, &o, &r), 0);
			uint64_t *v = pmtx_root(r, NULL);
			pmtx_tx *tx;
			pmtx_off off;
			assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
			assert_int_equal(PMTX_SET(tx, (v)[0], 11), 0);
			assert_int_equal(pmtx_alloc(tx, 100, &off), 0);
			assert_int_equal(PMTX_SET(tx, (v)[1], off), 0);
			assert_int_equal(pmtx_commit(tx), 0);
			assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
			assert_int_equal(PMTX_SET(tx, (v)[0], 12), 0);
			assert_int_equal(pmtx_abort(tx), 0);
			assert_int_equal(pmtx_close(r), 0);
			assert_int_equal(pmtx_open(path, &o, &r), 0);
			v = pmtx_root(r, NULL);
			assert_int_equal(v[0], 11);
			assert_int_equal(pmtx_usable_size(r, v[1]) >= 100, 1);
			assert_int_equal(pmtx_region_domain(r), d);
			assert_int_equal(pmtx_region_backend(r), b);
			tu_close_and_remove(r, path);
		}
}

/* Redo: reads inside the transaction see exactly the bytes last written,
 * across byte-granular, partially overlapping writes of any length,
 * checked against a plain DRAM model; after commit (or abort) memory is
 * the model (or the old state). */
static void redo_read_after_write_matches_a_model(void **s)
{
	static const pmtx_runtime rts[] = {PMTX_RT_REDO, PMTX_RT_REDO_ASYNC};
	for (size_t k = 0; k < 2; k++) {
		struct fixture f = make(rts[k]);
		static unsigned char model[ROOT], shadow[ROOT], buf[9000];
		uint64_t seed = 77 + k;
		fill_pattern(f.root, ROOT, 5);
		pmtx_persist(f.r, f.root, ROOT);
		memcpy(model, f.root, ROOT);
		for (int t = 0; t < 300; t++) {
			pmtx_tx *tx;
			memcpy(shadow, model, ROOT);
			assert_int_equal(pmtx_begin(f.r, rts[k], &tx), 0);
			int nops = 1 + (int)(tu_rand(&seed) % 60);
			for (int i = 0; i < nops; i++) {
				/* small ranges near each other, and a few big ones
				 * that cross 4 KiB segments */
				size_t n = tu_rand(&seed) % 8 == 0
				                   ? 1 + tu_rand(&seed) % 9000
				                   : 1 + tu_rand(&seed) % 40;
				size_t off = (tu_rand(&seed) % 8 == 0
				                      ? tu_rand(&seed) % (ROOT - n)
				                      : 30000 + tu_rand(&seed) % 300);
				if (tu_rand(&seed) % 3 == 0) {
					assert_int_equal(pmtx_read(tx, buf, f.root + off, n),
					                 0);
					assert_memory_equal(buf, shadow + off, n);
				} else {
					for (size_t j = 0; j < n; j++)
						buf[j] = (unsigned char)tu_rand(&seed);
					assert_int_equal(pmtx_write(tx, f.root + off, buf, n),
					                 0);
					memcpy(shadow + off, buf, n);
				}
			}
			/* a redo transaction stores nothing in place before commit */
			assert_memory_equal(f.root, model, ROOT);
			assert_int_equal(pmtx_read(tx, buf, f.root + 29000, 4000), 0);
			assert_memory_equal(buf, shadow + 29000, 4000);
			if (tu_rand(&seed) % 5 == 0) {
				assert_int_equal(pmtx_abort(tx), 0);
			} else {
				assert_int_equal(pmtx_commit(tx), 0);
				memcpy(model, shadow, ROOT);
			}
			assert_memory_equal(f.root, model, ROOT);
		}
		reopen(&f);
		assert_memory_equal(f.root, model, ROOT);
		drop(&f);
	}
}

/* More concurrent redo transactions than writers-bitmap bits: the ones
 * beyond 64 consult their log on every read, and still read their own
 * writes and nobody else's. */
#define NTHR 72
static pthread_barrier_t all_running;
static pmtx_region *many_r;
static int many_ok[NTHR];

static void *many_main(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	uint64_t *slot = (uint64_t *)pmtx_root(many_r, NULL);
	pmtx_tx *tx;
	uint64_t v = 1000 + t, got, other;
	int ok = pmtx_begin(many_r, PMTX_RT_REDO, &tx) == 0 &&
	         pmtx_write(tx, &slot[t * 8], &v, 8) == 0;
	pthread_barrier_wait(&all_running); /* NTHR transactions running */
	ok = ok && pmtx_read(tx, &got, &slot[t * 8], 8) == 0 && got == v &&
	     pmtx_read(tx, &other, &slot[((t + 1) % NTHR) * 8], 8) == 0 &&
	     other == 0;
	pthread_barrier_wait(&all_running);
	ok = ok && pmtx_commit(tx) == 0;
	many_ok[t] = ok;
	return NULL;
}

static void more_than_64_concurrent_redo_transactions_read_their_writes(
	void **s)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.root_size = NTHR * 64;
	o.ndesc = NTHR;
	const char *path = tu_path();
	assert_int_equal(pmtx_create(path, 32 << 20, &o, &many_r), 0);
	pthread_t th[NTHR];
	pthread_barrier_init(&all_running, NULL, NTHR);
	for (unsigned t = 0; t < NTHR; t++)
		pthread_create(&th[t], NULL, many_main, (void *)(uintptr_t)t);
	for (unsigned t = 0; t < NTHR; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&all_running);
	uint64_t *slot = pmtx_root(many_r, NULL);
	for (unsigned t = 0; t < NTHR; t++) {
		assert_true(many_ok[t]);
		assert_int_equal(slot[t * 8], 1000 + t);
	}
	tu_close_and_remove(many_r, path);
}

/* The allocator issues no barrier inside alloc and free, whatever the
 * runtime. */
static void alloc_and_free_cost_no_barrier_in_any_runtime(void **s)
{
	static const pmtx_runtime rts[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
	                                   PMTX_RT_REDO_ASYNC, PMTX_RT_COW};
	for (size_t k = 0; k < 4; k++) {
		struct fixture f = make(rts[k]);
		pmtx_tx *tx;
		pmtx_off offs[50];
		assert_int_equal(pmtx_begin(f.r, rts[k], &tx), 0);
		pmtx_counters c;
		tu_count_start();
		for (int i = 0; i < 50; i++)
			assert_int_equal(pmtx_alloc(tx, 1 + (size_t)i * 97, &offs[i]), 0);
		c = tu_count();
		assert_int_equal(c.barriers, 0);
		assert_int_equal(pmtx_commit(tx), 0);
		assert_int_equal(pmtx_begin(f.r, rts[k], &tx), 0);
		tu_count_start();
		for (int i = 0; i < 50; i++)
			assert_int_equal(pmtx_free(tx, offs[i]), 0);
		c = tu_count();
		assert_int_equal(c.barriers, 0);
		assert_int_equal(pmtx_commit(tx), 0);
		drop(&f);
	}
}

/* PMTX_TRUNC_LAZY: a redo-async commit costs its one barrier, which also
 * makes the previous transaction's data durable, so that commit retires
 * it with no barrier of its own (redo.c D12). The last one waits for
 * pmtx_drain (one barrier), in the calling thread, so the counts are
 * exact. A transaction of another thread is truncated with a barrier
 * when a descriptor is needed: see the second part. */
struct lazy_arg {
	pmtx_region *r;
	uint64_t *root;
};

static void *lazy_commit(void *arg)
{
	struct lazy_arg *a = arg;
	pmtx_tx *tx;
	if (pmtx_begin(a->r, PMTX_RT_REDO_ASYNC, &tx) ||
	    PMTX_SET(tx, a->root[100], a->root[100] + 1) || pmtx_commit(tx))
		abort();
	return NULL;
}

/* A region of 4 descriptors whose redo-async logs are truncated only
 * when needed (no truncation thread), so that barrier counts are exact. */
static pmtx_region *lazy_region(const char *path)
{
	pmtx_options o = tu_options(ROOT, PMTX_RT_UNDO); /* the default */
	o.ndesc = 4;
	o.truncation = PMTX_TRUNC_LAZY;
	return tu_create_at(path, 32 << 20, &o);
}

/* Transaction i of 10 sets word i * 8 to i + 1, under rt[i % 2]. */
static void ten_commits(pmtx_region *r, const pmtx_runtime rt[2])
{
	uint64_t *root = pmtx_root(r, NULL);
	for (uint64_t i = 0; i < 10; i++) {
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(r, rt[i % 2], &tx), 0);
		assert_int_equal(PMTX_SET(tx, root[i * 8], i + 1), 0);
		assert_int_equal(pmtx_commit(tx), 0);
		assert_int_equal(root[i * 8], i + 1); /* applied in memory */
	}
}

/* Close r, open it again, and find ten_commits' words. */
static void reopen_finds_ten_commits(pmtx_region *r, const char *path)
{
	assert_int_equal(pmtx_close(r), 0);
	r = tu_open(path);
	uint64_t *root = pmtx_root(r, NULL);
	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(root[i * 8], i + 1);
	assert_int_equal(pmtx_close(r), 0);
}

static void lazy_truncation_waits_for_a_descriptor_or_drain(void **s)
{
	const char *path = tu_path();
	pmtx_region *r = lazy_region(path);
	uint64_t *root = pmtx_root(r, NULL);
	static const pmtx_runtime rts[2] = {PMTX_RT_REDO_ASYNC,
	                                    PMTX_RT_REDO_ASYNC};
	tu_count_start();
	ten_commits(r, rts);
	/* 10 commits, each retiring the one before it */
	assert_int_equal(tu_count().barriers, 10);
	assert_int_equal(pmtx_drain(r), 0);
	assert_int_equal(tu_count().barriers, 10 + 1);
	assert_int_equal(pmtx_drain(r), 0); /* nothing left */
	assert_int_equal(tu_count().barriers, 11);
	/* 4 commits in 4 threads fill the 4 descriptors (no thread commits
	 * twice, so none is retired); the 5th, here, needs a descriptor and
	 * truncates the oldest, with a barrier, first. */
	pthread_t th[4];
	struct lazy_arg a = {r, root};
	for (int t = 0; t < 4; t++) {
		assert_int_equal(pthread_create(&th[t], NULL, lazy_commit, &a), 0);
		assert_int_equal(pthread_join(th[t], NULL), 0);
	}
	tu_count_start();
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(r, PMTX_RT_REDO_ASYNC, &tx), 0);
	assert_int_equal(tu_count().barriers, 1);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_int_equal(pmtx_drain(r), 0);
	reopen_finds_ten_commits(r, path);
	assert_int_equal(pmtx_drain(NULL), PMTX_E_INVAL);
	unlink(path);
}

/* A sync redo commit retires the redo-async transaction before it, in
 * the same thread, once its COMMIT barrier has made that one's data
 * durable (redo.c D12), as a redo-async commit does. So a thread that
 * alternates the two pays 1 barrier per redo-async commit and 2 per
 * redo commit, and leaves nothing for pmtx_drain. Without it, each redo
 * commit queues itself behind the pending truncation (D6, D13), and the
 * truncations cost barriers of their own, here when a descriptor is
 * needed and in pmtx_drain. */
static void a_sync_redo_commit_retires_the_redo_async_one_before_it(void **s)
{
	const char *path = tu_path();
	pmtx_region *r = lazy_region(path);
	static const pmtx_runtime rts[2] = {PMTX_RT_REDO_ASYNC, PMTX_RT_REDO};
	tu_count_start();
	ten_commits(r, rts);
	assert_int_equal(tu_count().barriers, 5 * 1 + 5 * 2);
	assert_int_equal(pmtx_drain(r), 0); /* nothing left */
	assert_int_equal(tu_count().barriers, 15);
	reopen_finds_ten_commits(r, path);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(abort_restores_every_range),
		cmocka_unit_test(committed_writes_survive_reopen),
		cmocka_unit_test(nested_transactions_are_flattened),
		cmocka_unit_test(deferred_ops_run_once_in_order_after_the_outermost_end),
		cmocka_unit_test(deferred_unlock_holds_the_lock_until_commit),
		cmocka_unit_test(calls_outside_a_transaction_fail_with_no_tx),
		cmocka_unit_test(writes_outside_user_data_fail_with_range),
		cmocka_unit_test(one_transaction_per_thread_and_region),
		cmocka_unit_test(figure3_counter_increment),
		cmocka_unit_test(big_transactions_grow_the_log_and_roll_back),
		cmocka_unit_test(every_domain_and_backend_commits_and_aborts),
		cmocka_unit_test(redo_read_after_write_matches_a_model),
		cmocka_unit_test(more_than_64_concurrent_redo_transactions_read_their_writes),
		cmocka_unit_test(alloc_and_free_cost_no_barrier_in_any_runtime),
		cmocka_unit_test(lazy_truncation_waits_for_a_descriptor_or_drain),
		cmocka_unit_test(a_sync_redo_commit_retires_the_redo_async_one_before_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
