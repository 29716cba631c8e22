/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mixed.c - one region, every runtime at once: recovery after a crash
 * that leaves in-flight transactions of undo, redo, redo-async and
 * copy-on-write, some committed and some not, rolls each one back or
 * forward correctly; and runtimes can follow each other on the same data.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "persist/persist.h"
#include "region/region.h"
#include "testutil.h"
#include "tx/objbits.h"

struct thing {
	uint64_t v[8];
};
PMTX_DEFINE_PM_TYPE(thing)

struct root {
	uint64_t undo_open[8], redo_open[8], async_done[8], undo_done[8];
	uint64_t redo_done[8];
	pm_thing cow_open, cow_done;
};

static pmtx_region *R;
static pthread_barrier_t ready;

static void fill(pmtx_tx *tx, uint64_t *dst, uint64_t v)
{
	uint64_t buf[8];
	for (int i = 0; i < 8; i++)
		buf[i] = v + (uint64_t)i;
	assert_int_equal(pmtx_write(tx, dst, buf, sizeof(buf)), 0);
}

/* Start a transaction of runtime rt, write, and stop there. */
static void *open_and_hang(void *arg)
{
	pmtx_runtime rt = (pmtx_runtime)(intptr_t)arg;
	struct root *root = pmtx_root(R, NULL);
	pmtx_tx *tx;
	pmtx_off extra;
	assert_int_equal(pmtx_begin(R, rt, &tx), 0);
	assert_int_equal(pmtx_alloc(tx, 100, &extra), 0); /* must not leak */
	if (rt == PMTX_RT_COW) {
		struct thing *t;
		assert_int_equal(pm_thing_open(tx, root->cow_open, PMTX_COW_WRITE,
		                               NULL, &t), 0);
		for (int i = 0; i < 8; i++)
			t->v[i] = 999;
	} else {
		fill(tx, rt == PMTX_RT_UNDO ? root->undo_open : root->redo_open,
		     999);
	}
	pthread_barrier_wait(&ready);
	for (;;)
		pause();
	return NULL;
}

static void commit_one(pmtx_runtime rt, uint64_t *dst)
{
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(R, rt, &tx), 0);
	fill(tx, dst, 500);
	assert_int_equal(pmtx_commit(tx), 0);
}

static void child(const char *path)
{
	R = tu_open(path);
	struct root *root = pmtx_root(R, NULL);
	pthread_t t[3];
	pthread_barrier_init(&ready, NULL, 4);
	pthread_create(&t[0], NULL, open_and_hang, (void *)PMTX_RT_UNDO);
	pthread_create(&t[1], NULL, open_and_hang, (void *)PMTX_RT_REDO);
	pthread_create(&t[2], NULL, open_and_hang, (void *)PMTX_RT_COW);
	pthread_barrier_wait(&ready);
	commit_one(PMTX_RT_REDO_ASYNC, root->async_done);
	commit_one(PMTX_RT_UNDO, root->undo_done);
	commit_one(PMTX_RT_REDO, root->redo_done);
	pmtx_tx *tx;
	struct thing *th;
	assert_int_equal(pmtx_begin(R, PMTX_RT_COW, &tx), 0);
	assert_int_equal(pm_thing_open(tx, root->cow_done, PMTX_COW_WRITE, NULL,
	                               &th), 0);
	for (int i = 0; i < 8; i++)
		th->v[i] = 500 + (uint64_t)i;
	assert_int_equal(pmtx_commit(tx), 0);
	_exit(0); /* a crash: nothing closed, three transactions open */
}

static void check_block(const uint64_t *v, uint64_t base)
{
	for (int i = 0; i < 8; i++)
		assert_int_equal(v[i], base ? base + (uint64_t)i : 0);
}

static int count(pmtx_off off, size_t n, void *arg)
{
	(void)off, (void)n;
	(*(int *)arg)++;
	return 0;
}

static void recovery_handles_every_runtime_in_flight_at_once(void **s)
{
	for (int round = 0; round < 5; round++) {
		const char *path;
		pmtx_region *r = tu_create(&path, 16 << 20, sizeof(struct root),
		                           PMTX_PDOM1, PMTX_BACKEND_HARDWARE,
		                           PMTX_RT_UNDO);
		struct root *root = pmtx_root(r, NULL);
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(r, PMTX_RT_UNDO, &tx), 0);
		pm_thing a, b;
		assert_int_equal(pm_thing_new(tx, &a), 0);
		assert_int_equal(pm_thing_new(tx, &b), 0);
		assert_int_equal(PMTX_SET(tx, root->cow_open, a), 0);
		assert_int_equal(PMTX_SET(tx, root->cow_done, b), 0);
		assert_int_equal(pmtx_commit(tx), 0);
		pmtx_close(r);

		pid_t pid = fork();
		if (pid == 0)
			child(path);
		int st;
		waitpid(pid, &st, 0);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

		r = tu_open(path);
		root = pmtx_root(r, NULL);
		check_block(root->undo_open, 0);
		check_block(root->redo_open, 0);
		check_block(pm_thing_peek(r, root->cow_open)->v, 0);
		check_block(root->async_done, 500);
		check_block(root->undo_done, 500);
		check_block(root->redo_done, 500);
		check_block(pm_thing_peek(r, root->cow_done)->v, 500);
		pmtx_heap_stats hs;
		assert_int_equal(pmtx_heap_check(r, &hs), 0);
		int blocks = 0;
		pmtx_heap_walk(r, count, &blocks);
		assert_int_equal(blocks, 4); /* two wrappers, two payloads */
		pmtx_close(r);
		unlink(path);
	}
}

/* The same bytes written by each runtime in turn, committed or aborted,
 * read back right by every other. */
static void runtimes_take_turns_on_the_same_data(void **s)
{
	static const pmtx_runtime rts[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
	                                   PMTX_RT_REDO_ASYNC};
	const char *path;
	pmtx_region *r = tu_create(&path, 16 << 20, 4096, PMTX_PDOM1,
	                           PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
	uint64_t *v = pmtx_root(r, NULL), model[512] = {0};
	uint64_t seed = 9;
	for (int i = 0; i < 3000; i++) {
		pmtx_tx *tx;
		pmtx_runtime rt = rts[tu_rand(&seed) % 3];
		int abort_it = tu_rand(&seed) % 4 == 0;
		uint64_t shadow[512];
		memcpy(shadow, model, sizeof(model));
		assert_int_equal(pmtx_begin(r, rt, &tx), 0);
		for (int k = 0; k < 4; k++) {
			unsigned at = (unsigned)(tu_rand(&seed) % 500);
			unsigned n = 1 + (unsigned)(tu_rand(&seed) % 12);
			uint64_t cur[12];
			assert_int_equal(pmtx_read(tx, cur, &v[at], n * 8), 0);
			assert_memory_equal(cur, &shadow[at], n * 8);
			for (unsigned j = 0; j < n; j++)
				cur[j] += (uint64_t)i;
			assert_int_equal(pmtx_write(tx, &v[at], cur, n * 8), 0);
			memcpy(&shadow[at], cur, n * 8);
		}
		if (abort_it) {
			assert_int_equal(pmtx_abort(tx), 0);
		} else {
			assert_int_equal(pmtx_commit(tx), 0);
			memcpy(model, shadow, sizeof(model));
		}
		assert_memory_equal(v, model, sizeof(model));
	}
	pmtx_close(r);
	r = tu_open(path);
	assert_memory_equal(pmtx_root(r, NULL), model, sizeof(model));
	pmtx_close(r);
	unlink(path);
}

/* ---- D1: a torn redo record voids the COMMIT that follows it ---- */

static const persist_ops *real;
static persist_ops tear_ops;
static int tear_byte; /* -1: crash without tearing */
static pmtx_region *tear_r;

static void tear_flush(struct persist *p, const void *a, size_t n)
{
	real->flush(p, a, n);
}

static void tear_copy(struct persist *p, void *d, const void *s, size_t n)
{
	real->copy_nt(p, d, s, n);
}

/* The redo commit's first barrier: the records and the COMMIT are in
 * place. Damage one byte of the first record, as a power loss that kept
 * the COMMIT's line but not all of the record's would, and die. */
static int tear_barrier(struct persist *p)
{
	if (tear_byte >= 0) {
		const struct pmtx_desc *d = region_desc(tear_r, 0);
		char *rec = (char *)tear_r->base + d->log_head + 64;
		rec[tear_byte] ^= 0x5a;
	}
	_exit(0);
	return real->barrier(p);
}

/* A closed 8 MiB region (root 4096 bytes, ndesc descriptors; 0: the
 * default) at a fresh path. */
static const char *closed_region(unsigned ndesc)
{
	const char *path;
	pmtx_options o = tu_options(4096, PMTX_RT_UNDO); /* the default */
	if (ndesc)
		o.ndesc = ndesc;
	pmtx_close(tu_create_with(&path, 8 << 20, &o));
	return path;
}

/* In a child: the hardware ops, but barrier (the point of the crash). */
static void crash_at_barrier(const char *name,
                             int (*barrier)(struct persist *))
{
	real = persist_default_ops(PMTX_PDOM1, PMTX_BACKEND_HARDWARE);
	tear_ops = (persist_ops){name, tear_flush, barrier, tear_copy,
	                         NULL, NULL, NULL, NULL};
}

static void a_torn_redo_record_voids_the_commit(void **s)
{
	static const int bytes[] = {-1, 0, 20, 40, 44};
	for (unsigned k = 0; k < sizeof(bytes) / sizeof(*bytes); k++) {
		const char *path = closed_region(1);
		pid_t pid = fork();
		if (pid == 0) {
			crash_at_barrier("tear", tear_barrier);
			tear_byte = bytes[k];
			tear_r = tu_open(path);
			persist_set_ops(&tear_r->persist, &tear_ops, NULL);
			uint64_t *v = pmtx_root(tear_r, NULL);
			pmtx_tx *tx;
			pmtx_begin(tear_r, PMTX_RT_REDO, &tx);
			for (int i = 0; i < 4; i++)
				PMTX_SET(tx, v[i * 8], 77);
			pmtx_commit(tx);
			_exit(3);
		}
		int st;
		waitpid(pid, &st, 0);
		assert_int_equal(WEXITSTATUS(st), 0);
		pmtx_region *r = tu_open(path);
		uint64_t *v = pmtx_root(r, NULL);
		uint64_t want = bytes[k] < 0 ? 77 : 0; /* torn: not committed */
		for (int i = 0; i < 4; i++)
			assert_int_equal(v[i * 8], want);
		pmtx_close(r);
		unlink(path);
	}
}

/* ---- redo-async: a crash after commit returned, before the background
 * truncation made the log's effects durable and retired it ---- */

static int async_barriers;

static int count_then_die(struct persist *p)
{
	/* barrier 1 is the commit's; the next one is the truncation's */
	if (++async_barriers == 2)
		_exit(0);
	return real->barrier(p);
}

static void redo_async_crash_between_commit_and_truncation_loses_nothing(
	void **s)
{
	for (int round = 0; round < 3; round++) {
		const char *path = closed_region(0);
		pmtx_region *r;
		pid_t pid = fork();
		if (pid == 0) {
			crash_at_barrier("die", count_then_die);
			persist_override_ops(&tear_ops, NULL);
			r = tu_open(path);
			uint64_t *v = pmtx_root(r, NULL);
			pmtx_tx *tx;
			pmtx_off off;
			pmtx_begin(r, PMTX_RT_REDO_ASYNC, &tx);
			for (int i = 0; i < 4; i++)
				PMTX_SET(tx, v[i * 8], 55 + (uint64_t)i);
			pmtx_alloc(tx, 200, &off);
			PMTX_SET(tx, v[40], off);
			if (pmtx_commit(tx) != 0)
				_exit(4);
			for (;;) /* the truncation thread dies at its barrier */
				pause();
		}
		int st;
		waitpid(pid, &st, 0);
		assert_int_equal(WEXITSTATUS(st), 0);
		r = tu_open(path);
		uint64_t *v = pmtx_root(r, NULL);
		for (int i = 0; i < 4; i++)
			assert_int_equal(v[i * 8], 55 + (uint64_t)i);
		assert_true(pmtx_usable_size(r, v[40]) >= 200);
		pmtx_heap_stats hs;
		assert_int_equal(pmtx_heap_check(r, &hs), 0);
		assert_int_equal(hs.allocated_blocks - hs.internal_blocks, 1);
		pmtx_close(r);
		unlink(path);
	}
}

/* A process killed while it reset an object's writers bitmap leaves the
 * header's busy marker behind; the next open must treat it as stale, not
 * wait for it forever (objbits.h W2). */
static void a_stale_busy_marker_does_not_block_writers(void **s)
{
	const char *path;
	pmtx_region *r = tu_create(&path, 8 << 20, 4096, PMTX_PDOM1,
	                           PMTX_BACKEND_HARDWARE, PMTX_RT_REDO);
	struct pmtx_objhdr *h = (struct pmtx_objhdr *)pmtx_root(r, NULL) - 1;
	pmtx_tx *tx;
	uint64_t *v = pmtx_root(r, NULL);
	assert_int_equal(pmtx_begin(r, PMTX_RT_REDO, &tx), 0);
	assert_int_equal(PMTX_SET(tx, v[0], 1), 0); /* sets this open's gen */
	assert_int_equal(pmtx_commit(tx), 0);
	/* what a kill between the two stores of a reset leaves */
	h->gen = obj_gen_busy(r);
	h->writers = ~0ull;
	pmtx_close(r);
	r = tu_open(path);
	v = pmtx_root(r, NULL);
	alarm(20); /* a hang fails the test */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(pmtx_begin(r, PMTX_RT_REDO, &tx), 0);
		assert_int_equal(PMTX_SET(tx, v[0], 2 + (uint64_t)i), 0);
		uint64_t got;
		assert_int_equal(pmtx_read(tx, &got, &v[0], 8), 0);
		assert_int_equal(got, 2 + (uint64_t)i);
		assert_int_equal(pmtx_commit(tx), 0);
	}
	alarm(0);
	assert_int_equal(v[0], 4);
	pmtx_close(r);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(recovery_handles_every_runtime_in_flight_at_once),
		cmocka_unit_test(runtimes_take_turns_on_the_same_data),
		cmocka_unit_test(a_torn_redo_record_voids_the_commit),
		cmocka_unit_test(redo_async_crash_between_commit_and_truncation_loses_nothing),
		cmocka_unit_test(a_stale_busy_marker_does_not_block_writers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
