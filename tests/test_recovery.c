/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_recovery.c - deterministic crash points, recovery idempotence, I/O
 * errors and barrier counts, by fault injection.
 *
 * The injection table (persist_override_ops) wraps the default table of
 * the region's (domain, backend) and counts barriers. In crash mode the
 * K-th barrier calls _exit() in a forked child: the process dies right
 * before that barrier takes effect. A region in /dev/shm keeps every store
 * made before the exit, so this checks process-crash consistency at every
 * barrier boundary exactly. In I/O mode the K-th barrier returns
 * PMTX_E_IO instead.
 *
 * A scenario is a setup (run once, uninterrupted) and a list of steps, each
 * one transaction. The state digest covers the root's data words and the
 * contents of every block referenced from the root's slots, but not the
 * slot offsets, so it does not depend on where the allocator put things;
 * reference digests ref[0..nsteps] come from an uninterrupted run. After a
 * crash in step i (steps 0..i-1 returned), recovery must give ref[i] or
 * ref[i+1], the heap check must pass, the heap's user blocks must be
 * exactly the slots' blocks, and a second open must not write the file.
 *
 * The copy-on-write runtime cannot write raw ranges, so every scenario has
 * a copy-on-write twin: the state is a set of copy-on-write objects named
 * by a directory object (itself copy-on-write, named by slot 0 of the
 * root), and the steps open, create and delete objects; digest and leak
 * check follow the directory instead of the slots.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "region/layout.h"
#include "testutil.h"
#include "persist/persist.h"

static const pmtx_runtime runtimes[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                        PMTX_RT_REDO_ASYNC, PMTX_RT_COW,
                                        PMTX_RT_AUTO, PMTX_RT_TWIN};
#define NRUNTIMES (sizeof(runtimes) / sizeof(runtimes[0]))

#define NDATA 1024
#define NSLOT 320
#define MANY_FIRST 10
#define MANY_N 300 /* more alloc-log entries than the first chunk holds */
#define REGION_SIZE (4u << 20)
#define NDESC 4
#define MAXSTEPS 8
#define MAX_BARRIERS 100000

/* Child exit codes. */
enum {
	EXIT_CRASHED = 42, /* died at the injected barrier */
	EXIT_COMPLETED,    /* ran to the end without reaching it */
	EXIT_OPEN_FAILED,
	EXIT_STEP_FAILED,
};

struct rroot {
	uint64_t data[NDATA];
	pmtx_off slot[NSLOT];
	uint64_t slot_len[NSLOT]; /* bytes of the block covered by the digest */
};

static int is_cow(pmtx_runtime rt)
{
	return rt == PMTX_RT_COW;
}

/* Set for the runtime being tested: digest and leak check follow the
 * copy-on-write directory instead of the slots. */
static int g_cow;

/* ---- copy-on-write objects ---- */

#define CDIR 16
struct cdir {
	pmtx_off w[CDIR];    /* wrappers, or 0 */
	uint64_t len[CDIR];  /* bytes covered by the digest */
};

/* ---- fault injection ---- */

enum inj_mode { INJ_CRASH, INJ_IO };

/* Barriers may come from another thread (redo-async truncation), so the
 * count is atomic, and an I/O failure notes whether it hit the thread
 * that armed the injection. */
static struct inj {
	int armed;
	enum inj_mode mode;
	uint64_t count, at;
	pthread_t caller;
	int failed_elsewhere;
} inj;

static void inj_flush(struct persist *p, const void *a, size_t n)
{
	persist_default_ops(p->domain, p->backend)->flush(p, a, n);
}

static int inj_barrier(struct persist *p)
{
	if (__atomic_load_n(&inj.armed, __ATOMIC_ACQUIRE) &&
	    __atomic_add_fetch(&inj.count, 1, __ATOMIC_ACQ_REL) == inj.at) {
		if (inj.mode == INJ_CRASH)
			_exit(EXIT_CRASHED);
		inj.failed_elsewhere = !pthread_equal(pthread_self(), inj.caller);
		return PMTX_E_IO;
	}
	return persist_default_ops(p->domain, p->backend)->barrier(p);
}

static void inj_copy_nt(struct persist *p, void *dst, const void *src,
                        size_t n)
{
	persist_default_ops(p->domain, p->backend)->copy_nt(p, dst, src, n);
}

static const persist_ops inj_ops = {"inject", inj_flush, inj_barrier,
                                    inj_copy_nt, NULL, NULL, NULL, NULL};

static void inj_install(enum inj_mode mode, uint64_t at, int armed)
{
	inj.mode = mode;
	inj.at = at;
	inj.count = 0;
	inj.caller = pthread_self();
	inj.failed_elsewhere = 0;
	inj.armed = armed;
	persist_override_ops(&inj_ops, &inj);
}

/* ---- files ---- */

static char paths[3][96]; /* pristine image, work copy, crashed image */
#define P_PRISTINE paths[0]
#define P_WORK paths[1]
#define P_IMAGE paths[2]

static int setup_paths(void **state)
{
	static const char *names[] = {"pristine.pmtx", "work.pmtx",
	                             "image.pmtx"};
	for (int i = 0; i < 3; i++)
		snprintf(paths[i], sizeof(paths[i]), "%s",
		         tu_path_in("/dev/shm", names[i]));
	return 0;
}

/* After every test, even a failed one: no injection stays installed. */
static int reset_inj(void **state)
{
	persist_override_ops(NULL, NULL);
	inj.armed = 0;
	return 0;
}

static int teardown_all(void **state)
{
	reset_inj(state);
	for (int i = 0; i < 3; i++)
		unlink(paths[i]);
	return 0;
}

static pmtx_region *create_region(const char *path, pmtx_domain d,
                                  pmtx_backend b, pmtx_runtime rt)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.root_size = sizeof(struct rroot);
	o.ndesc = NDESC;
	o.domain = d;
	o.backend = b;
	o.runtime = rt;
	unlink(path);
	pmtx_region *r = NULL;
	/* a twin region holds its back copy too */
	size_t size = rt == PMTX_RT_TWIN ? 2 * REGION_SIZE : REGION_SIZE;
	int rc = pmtx_create(path, size, &o, &r);
	if (rc)
		fail_msg("pmtx_create %s: %s %s", path, pmtx_strerror(rc),
		         pmtx_errmsg());
	return r;
}

static pmtx_region *open_region_ctx(const char *path, const char *ctx)
{
	pmtx_region *r = NULL;
	int rc = pmtx_open(path, NULL, &r);
	if (rc)
		fail_msg("%s: pmtx_open %s: %s %s", ctx, path, pmtx_strerror(rc),
		         pmtx_errmsg());
	return r;
}

static pmtx_region *open_region(const char *path)
{
	return open_region_ctx(path, "open");
}

/* The work copy of the pristine image, opened, with an I/O error armed
 * at its k-th barrier from now on. */
static pmtx_region *open_work_failing_at(uint64_t k)
{
	tu_copy_file(P_PRISTINE, P_WORK);
	inj_install(INJ_IO, k, 0);
	pmtx_region *r = open_region(P_WORK);
	inj.armed = 1;
	return r;
}

/* Remove the injection armed at barrier k: whether k was reached. */
static int inj_remove(uint64_t k)
{
	inj.armed = 0;
	int reached = inj.count >= k;
	persist_override_ops(NULL, NULL);
	return reached;
}

static struct rroot *root_of(pmtx_region *r)
{
	return pmtx_root(r, NULL);
}

/* ---- state: digest, heap check, leaks ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static const struct cdir *cdir_peek(pmtx_region *r, const char *ctx)
{
	const struct cdir *d = pmtx_cow_peek(r, root_of(r)->slot[0]);
	if (!d)
		fail_msg("%s: the directory object is gone", ctx);
	return d;
}

/* Object i of the state (a slot's block, or a copy-on-write object of the
 * directory): its reference (0: none), its bytes and their length. */
static pmtx_off object_of(pmtx_region *r, unsigned i, const char *ctx,
                          const void **p, uint64_t *len)
{
	if (g_cow) {
		const struct cdir *d = cdir_peek(r, ctx);
		*len = d->len[i];
		*p = d->w[i] ? pmtx_cow_peek(r, d->w[i]) : NULL;
		return d->w[i];
	}
	const struct rroot *rt = root_of(r);
	*len = rt->slot_len[i];
	*p = rt->slot[i] ? pmtx_ptr(r, rt->slot[i]) : NULL;
	return rt->slot[i];
}

/* The state: the data words (not under copy-on-write, which cannot
 * write the root), then each object: whether it is present, its length
 * and its bytes, which must be an allocated block of that length. */
static uint64_t digest(pmtx_region *r, const char *ctx)
{
	const struct rroot *rt = root_of(r);
	uint64_t h = 0xcbf29ce484222325ull;
	if (!g_cow)
		h = fnv(h, rt->data, sizeof(rt->data));
	for (unsigned i = 0; i < (g_cow ? CDIR : NSLOT); i++) {
		const void *p;
		uint64_t len;
		pmtx_off ref = object_of(r, i, ctx, &p, &len);
		uint64_t present = ref != 0;
		h = fnv(h, &present, 8);
		h = fnv(h, &len, 8);
		if (!present)
			continue;
		if (!p || pmtx_usable_size(r, pmtx_off_of(r, p)) < len)
			fail_msg("%s: %s %u (%#llx) is not an allocated block of "
			         "%llu bytes", ctx, g_cow ? "object" : "slot", i,
			         (unsigned long long)ref,
			         (unsigned long long)len);
		h = fnv(h, p, len);
	}
	return h;
}

static void check_heap_and_leaks(pmtx_region *r, const char *ctx)
{
	pmtx_heap_stats st;
	if (pmtx_heap_check(r, &st))
		fail_msg("%s: heap check: %s", ctx, st.first_error);
	struct tu_offs used = {0};
	const struct rroot *rt = root_of(r);
	if (g_cow) { /* wrapper and payload of the directory and objects */
		const struct cdir *d = cdir_peek(r, ctx);
		tu_offs_push(&used, rt->slot[0]);
		tu_offs_push(&used, pmtx_off_of(r, d));
		for (unsigned i = 0; i < CDIR; i++)
			if (d->w[i]) {
				tu_offs_push(&used, d->w[i]);
				tu_offs_push(&used, pmtx_off_of(
					r, pmtx_cow_peek(r, d->w[i])));
			}
	} else {
		for (unsigned i = 0; i < NSLOT; i++)
			if (rt->slot[i])
				tu_offs_push(&used, rt->slot[i]);
	}
	tu_assert_heap_blocks(r, &used, ctx);
	free(used.v);
}

/* ---- transaction steps ---- */

/* A step: the work of one transaction tx of runtime rtk (run_step begins
 * and ends it); 0 or a status. */
typedef int (*step_fn)(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx);

static void pattern(void *dst, size_t n, uint64_t seed)
{
	uint8_t *b = dst;
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)((seed >> (8 * (i % 8))) + i * 7);
}

static int step_ended; /* the step ended its transaction (abort_nested) */

/* Run step in a transaction of its own: abort it after an error (if it is
 * still running), else commit; *in_commit tells the caller where it
 * failed. */
static int run_step(step_fn step, pmtx_region *r, pmtx_runtime rtk,
                    int *in_commit)
{
	pmtx_tx *tx;
	int rc = pmtx_begin(r, rtk, &tx);
	if (rc)
		return rc;
	step_ended = 0;
	rc = step(r, rtk, tx);
	if (step_ended)
		return rc;
	if (rc) {
		if (pmtx_tx_current())
			pmtx_abort(tx);
		return rc;
	}
	rc = pmtx_commit(tx);
	if (rc)
		*in_commit = 1;
	return rc;
}

/* The end of a step that aborts from a nested level: inner (which ran
 * with status rc) aborts, and the outer commit must report
 * PMTX_E_ABORTED. */
static int abort_nested(pmtx_tx *tx, pmtx_tx *inner, int rc)
{
	if (!rc)
		rc = pmtx_abort(inner);
	else
		pmtx_abort(inner);
	int crc = pmtx_commit(tx);
	step_ended = 1;
	if (rc)
		return rc;
	return crc == PMTX_E_ABORTED ? 0 : PMTX_E_TX_STATE;
}

/* Reads inside a transaction go through pmtx_read: under a redo runtime
 * its own writes are not in place yet. */
static pmtx_off get_slot(pmtx_tx *tx, struct rroot *rt, unsigned i)
{
	pmtx_off off = 0;
	int rc = pmtx_read(tx, &off, &rt->slot[i], sizeof(off));
	assert_int_equal(rc, 0);
	return off;
}

static int set_slot(pmtx_tx *tx, struct rroot *rt, unsigned i, pmtx_off off,
                    uint64_t len)
{
	int rc = pmtx_write(tx, &rt->slot[i], &off, sizeof(off));
	return rc ? rc : pmtx_write(tx, &rt->slot_len[i], &len, sizeof(len));
}

enum { INIT_NAKED, INIT_WRITE, INIT_ZALLOC };

/* Replace slot i by a new block of len bytes (its offset in *out). */
static int slot_alloc_at(pmtx_region *r, pmtx_tx *tx, unsigned i, size_t len,
                         int how, uint64_t seed, pmtx_off *out)
{
	struct rroot *rt = root_of(r);
	pmtx_off off, old = get_slot(tx, rt, i);
	int rc = old ? pmtx_free(tx, old) : 0;
	if (!rc)
		rc = how == INIT_ZALLOC ? pmtx_zalloc(tx, len, &off)
		                        : pmtx_alloc(tx, len, &off);
	if (rc)
		return rc;
	void *p = pmtx_ptr(r, off);
	if (how == INIT_NAKED) {
		pattern(p, len, seed);
		pmtx_flush(r, p, len);
	} else if (how == INIT_WRITE) {
		void *tmp = malloc(len);
		if (!tmp)
			return ENOMEM;
		pattern(tmp, len, seed);
		rc = pmtx_write(tx, p, tmp, len);
		free(tmp);
	}
	*out = off;
	return rc ? rc : set_slot(tx, rt, i, off, len);
}

static int slot_alloc(pmtx_region *r, pmtx_tx *tx, unsigned i, size_t len,
                      int how, uint64_t seed)
{
	pmtx_off off;
	return slot_alloc_at(r, tx, i, len, how, seed, &off);
}

static int slot_free(pmtx_tx *tx, struct rroot *rt, unsigned i)
{
	pmtx_off old = get_slot(tx, rt, i);
	int rc = old ? pmtx_free(tx, old) : 0;
	return rc ? rc : set_slot(tx, rt, i, 0, 0);
}

/* Several ranges: one word, a word pair across a cache line, 200 bytes,
 * 5,600 bytes (a marked record under PDOM-1), the first word again,
 * pmtx_memset, and pmtx_add_range with direct stores. */
static int ranges_tx(pmtx_region *r, pmtx_tx *tx, uint64_t base)
{
	struct rroot *rt = root_of(r);
	static uint64_t buf[700];
	int rc = 0;
	for (unsigned i = 0; i < 700; i++)
		buf[i] = base + i * 0x10001;
	rc = pmtx_write(tx, &rt->data[0], &buf[0], 8);
	if (!rc)
		rc = pmtx_write(tx, &rt->data[7], &buf[1], 16);
	if (!rc)
		rc = pmtx_write(tx, &rt->data[16], &buf[3], 200);
	if (!rc)
		rc = pmtx_write(tx, &rt->data[100], buf, 5600);
	if (!rc)
		rc = pmtx_write(tx, &rt->data[0], &buf[9], 8);
	if (!rc)
		rc = pmtx_memset(tx, &rt->data[900], (int)(base & 0xff), 100);
	uint64_t direct[8];
	for (unsigned i = 0; i < 8; i++)
		direct[i] = base ^ i;
	if (!rc) {
		/* Direct stores where the runtime allows them (undo), else
		 * the same bytes through pmtx_write. */
		rc = pmtx_add_range(tx, &rt->data[1000], sizeof(direct));
		if (!rc)
			memcpy(&rt->data[1000], direct, sizeof(direct));
		else if (rc == PMTX_E_UNSUPPORTED)
			rc = pmtx_write(tx, &rt->data[1000], direct,
			                sizeof(direct));
	}
	return rc;
}

static int st_ranges_a(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	return ranges_tx(r, tx, 0xa0a0a0a000000000ull);
}

static int st_ranges_b(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	return ranges_tx(r, tx, 0xb1b1b1b100000000ull);
}

/* Frees, small and large allocations (naked, written, zeroed), and an
 * update of an existing block. */
static int st_alloc_free(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	struct rroot *rt = root_of(r);
	int rc = slot_free(tx, rt, 0);
	if (!rc)
		rc = slot_alloc(r, tx, 4, 100, INIT_NAKED, 0x44);
	pmtx_off big;
	if (!rc)
		rc = slot_alloc_at(r, tx, 5, 70000, INIT_ZALLOC, 0, &big);
	if (!rc) {
		uint8_t tmp[256];
		pattern(tmp, sizeof(tmp), 0x55);
		rc = pmtx_write(tx, pmtx_ptr(r, big), tmp, sizeof(tmp));
	}
	if (!rc)
		rc = slot_alloc(r, tx, 6, 3000, INIT_WRITE, 0x66);
	if (!rc) {
		uint8_t tmp[50];
		pattern(tmp, sizeof(tmp), 0x11);
		rc = pmtx_write(tx, (char *)pmtx_ptr(r, rt->slot[1]) + 10, tmp,
		                sizeof(tmp));
	}
	uint64_t v = 0x5151;
	if (!rc)
		rc = pmtx_write(tx, &rt->data[50], &v, sizeof(v));
	return rc;
}

/* Writes, an allocation and frees, then an abort from a nested level:
 * the outer commit must report PMTX_E_ABORTED. */
static int st_abort(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	struct rroot *rt = root_of(r);
	pmtx_tx *inner;
	uint64_t v = 0xdead;
	int rc = pmtx_write(tx, &rt->data[200], &v, sizeof(v));
	if (!rc)
		rc = pmtx_begin(r, rtk, &inner);
	if (rc)
		return rc;
	rc = slot_alloc(r, inner, 7, 500, INIT_NAKED, 0x77);
	if (!rc)
		rc = slot_free(inner, rt, 1);
	if (!rc)
		rc = slot_alloc(r, inner, 2, 1500, INIT_WRITE, 0x22);
	if (!rc)
		rc = pmtx_memset(inner, &rt->data[300], 0xee, 800);
	return abort_nested(tx, inner, rc);
}

/* 40 records of 512 bytes: more than the first log chunk, so the log
 * grows into a chunk taken from the heap. */
static int st_grow(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	struct rroot *rt = root_of(r);
	static uint8_t buf[512];
	int rc = 0;
	char *blk = pmtx_ptr(r, rt->slot[3]);
	for (unsigned i = 0; !rc && i < 40; i++) {
		pattern(buf, sizeof(buf), 0x3300 + i);
		rc = pmtx_write(tx, blk + i * 900, buf, sizeof(buf));
	}
	return rc;
}

/* MANY_N allocations: the allocation log grows past its first chunk. */
static int st_many_allocs(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	struct rroot *rt = root_of(r);
	static pmtx_off off[MANY_N];
	static uint64_t len[MANY_N];
	int rc = 0;
	for (unsigned i = 0; !rc && i < MANY_N; i++) {
		len[i] = 24 + i % 40;
		rc = pmtx_alloc(tx, len[i], &off[i]);
		if (!rc) {
			void *p = pmtx_ptr(r, off[i]);
			pattern(p, len[i], 0x9000 + i);
			pmtx_flush(r, p, len[i]);
		}
	}
	if (!rc)
		rc = pmtx_write(tx, &rt->slot[MANY_FIRST], off, sizeof(off));
	if (!rc)
		rc = pmtx_write(tx, &rt->slot_len[MANY_FIRST], len, sizeof(len));
	return rc;
}

static int st_free_many(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	struct rroot *rt = root_of(r);
	static const uint64_t zero[2 * MANY_N];
	int rc = 0;
	for (unsigned i = 0; !rc && i < MANY_N; i++)
		if (rt->slot[MANY_FIRST + i])
			rc = pmtx_free(tx, rt->slot[MANY_FIRST + i]);
	if (!rc)
		rc = pmtx_write(tx, &rt->slot[MANY_FIRST], zero,
		                MANY_N * sizeof(pmtx_off));
	if (!rc)
		rc = pmtx_write(tx, &rt->slot_len[MANY_FIRST], zero,
		                MANY_N * sizeof(uint64_t));
	return rc;
}

static void cow_setup(pmtx_region *r, pmtx_runtime rtk);

/* Initial state: data words, four blocks (one of them large). */
static void setup_state(pmtx_region *r, pmtx_runtime rtk)
{
	if (is_cow(rtk)) {
		cow_setup(r, rtk);
		return;
	}
	struct rroot *rt = root_of(r);
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(r, rtk, &tx), 0);
	static uint64_t d[NDATA];
	for (unsigned i = 0; i < NDATA; i++)
		d[i] = i * 3 + 1;
	assert_int_equal(pmtx_write(tx, rt->data, d, sizeof(d)), 0);
	static const size_t len[] = {64, 200, 1000, 40000};
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(slot_alloc(r, tx, i, len[i], INIT_NAKED,
		                            0x100 + i),
		                 0);
	assert_int_equal(pmtx_commit(tx), 0);
}

struct scenario {
	const char *name;
	size_t nsteps;
	step_fn step[MAXSTEPS];
	int aborts[MAXSTEPS]; /* the step leaves the state unchanged */
	/* Run on the pristine image after the setup, before the references
	 * (e.g. a transaction killed before it committed). */
	void (*pre)(const char *path, pmtx_runtime rt);
	/* The same scenario for the copy-on-write runtime. */
	const struct scenario *cow;
};

/* Steps from..to-1 of sc, each of which must succeed. */
static void run_steps(const struct scenario *sc, size_t from, size_t to,
                      pmtx_region *r, pmtx_runtime rtk)
{
	for (size_t i = from; i < to; i++) {
		int in_commit = 0;
		assert_int_equal(run_step(sc->step[i], r, rtk, &in_commit), 0);
	}
}

/* The steps of sc until one fails: its status (0 if none did), with the
 * number of steps that returned 0 in *done; none is left running. */
static int run_steps_until_error(const struct scenario *sc, pmtx_region *r,
                                 pmtx_runtime rtk, size_t *done,
                                 int *in_commit)
{
	int rc = 0;
	for (*done = 0; *done < sc->nsteps; ++*done)
		if ((rc = run_step(sc->step[*done], r, rtk, in_commit)))
			break;
	assert_null(pmtx_tx_current());
	return rc;
}

/* Three words, not in the ranges the other steps write. */
static int st_small(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	struct rroot *rt = root_of(r);
	int rc = 0;
	for (unsigned i = 0; !rc && i < 3; i++) {
		uint64_t v = 0x5a5a0000 + i;
		rc = pmtx_write(tx, &rt->data[600 + i * 8], &v, sizeof(v));
	}
	return rc;
}

/* A process that opens path and dies inside a transaction of runtime rtk
 * after step, before its commit. */
static void die_inside(const char *path, pmtx_runtime rtk, step_fn step)
{
	pid_t pid = tu_fork();
	if (pid == 0) {
		pmtx_region *r;
		pmtx_tx *tx;
		if (pmtx_open(path, NULL, &r) || pmtx_begin(r, rtk, &tx))
			_exit(EXIT_OPEN_FAILED);
		if (step(r, rtk, tx))
			_exit(EXIT_STEP_FAILED);
		_exit(EXIT_CRASHED);
	}
	assert_int_equal(tu_wait_exit(pid), EXIT_CRASHED);
}

/* 12 writes: more records than st_small makes. */
static int twelve_writes(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	int rc = 0;
	for (unsigned i = 0; !rc && i < 12; i++) {
		uint64_t v = 0xdead0000 + i;
		rc = pmtx_write(tx, &root_of(r)->data[500 + i * 8], &v, 8);
	}
	return rc;
}

/* A process that dies inside a transaction after 12 writes, before its
 * commit. */
static void pre_killed_uncommitted(const char *path, pmtx_runtime rtk)
{
	die_inside(path, rtk, twelve_writes);
}

/* ---- copy-on-write steps ---- */

static int cow_open_w(pmtx_tx *tx, pmtx_off w, void **p)
{
	return pmtx_cow_open(tx, w, PMTX_COW_WRITE, NULL, p);
}

/* The directory as this transaction sees it (its copy once written). */
static struct cdir *cdir_of(pmtx_region *r, pmtx_tx *tx, int write, int *rc)
{
	void *p = NULL;
	*rc = pmtx_cow_open(tx, root_of(r)->slot[0],
	                    write ? PMTX_COW_WRITE : PMTX_COW_READ, NULL, &p);
	return p;
}

/* Replace object i of the directory by a new one of len bytes. */
static int cow_replace(pmtx_region *r, pmtx_tx *tx, unsigned i, size_t len,
                       uint64_t seed)
{
	int rc;
	struct cdir *d = cdir_of(r, tx, 1, &rc);
	pmtx_off w;
	void *p;
	if (!rc && d->w[i])
		rc = pmtx_cow_delete(tx, d->w[i]);
	if (!rc)
		rc = pmtx_cow_new(tx, len, &w);
	if (!rc && seed && !(rc = cow_open_w(tx, w, &p)))
		pattern(p, len < 256 ? len : 256, seed);
	if (!rc)
		d->w[i] = w, d->len[i] = len;
	return rc;
}

static int cow_remove(pmtx_region *r, pmtx_tx *tx, unsigned i)
{
	int rc;
	struct cdir *d = cdir_of(r, tx, 1, &rc);
	if (!rc && d->w[i])
		rc = pmtx_cow_delete(tx, d->w[i]);
	if (!rc)
		d->w[i] = 0, d->len[i] = 0;
	return rc;
}

/* Change bytes of objects i (all present, at least 64 bytes long). */
static int cow_touch(pmtx_region *r, pmtx_tx *tx, const unsigned *objs,
                     size_t n, uint64_t seed)
{
	int rc;
	const struct cdir *d = cdir_of(r, tx, 0, &rc);
	for (size_t k = 0; !rc && k < n; k++) {
		void *p;
		if (!(rc = cow_open_w(tx, d->w[objs[k]], &p)))
			pattern((char *)p + 8, 48, seed + k);
	}
	return rc;
}

static const unsigned touched[] = {0, 2, 3};

static int cst_touch_a(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	return cow_touch(r, tx, touched, 3, 0xa0a0a0a000000000ull);
}

static int cst_touch_b(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	return cow_touch(r, tx, touched, 3, 0xb1b1b1b100000000ull);
}

/* Delete one object, create a small and a large one, touch another. */
static int cst_create_delete(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	static const unsigned objs[] = {2};
	int rc = cow_remove(r, tx, 1);
	if (!rc)
		rc = cow_replace(r, tx, 5, 100, 0x55);
	if (!rc)
		rc = cow_replace(r, tx, 6, 70000, 0x66);
	if (!rc)
		rc = cow_touch(r, tx, objs, 1, 0x22);
	return rc;
}

/* Touch, create and delete, then abort from a nested level. */
static int cst_abort(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	static const unsigned objs[] = {0, 3};
	pmtx_tx *inner;
	int rc = cow_touch(r, tx, objs, 2, 0xdead);
	if (!rc)
		rc = pmtx_begin(r, rtk, &inner);
	if (rc)
		return rc;
	rc = cow_replace(r, inner, 7, 500, 0x77);
	if (!rc)
		rc = cow_remove(r, inner, 2);
	return abort_nested(tx, inner, rc);
}

/* Eight new objects in one transaction, then all deleted in another. */
static int cst_many(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	int rc = 0;
	for (unsigned i = 8; !rc && i < CDIR; i++)
		rc = cow_replace(r, tx, i, 24 + i * 40, 0x9000 + i);
	return rc;
}

static int cst_unmany(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	int rc = 0;
	for (unsigned i = 8; !rc && i < CDIR; i++)
		rc = cow_remove(r, tx, i);
	return rc;
}

/* Initial state: the directory and four objects (one large), created in
 * one copy-on-write transaction; then an undo transaction names the
 * directory in the root (copy-on-write cannot write the root). */
static void cow_setup(pmtx_region *r, pmtx_runtime rtk)
{
	static const size_t len[] = {64, 200, 1000, 40000};
	pmtx_tx *tx;
	pmtx_off dw, w;
	void *p;
	struct cdir *d;
	assert_int_equal(pmtx_begin(r, rtk, &tx), 0);
	assert_int_equal(pmtx_cow_new(tx, sizeof(struct cdir), &dw), 0);
	assert_int_equal(cow_open_w(tx, dw, &p), 0);
	d = p;
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(pmtx_cow_new(tx, len[i], &w), 0);
		assert_int_equal(cow_open_w(tx, w, &p), 0);
		pattern(p, len[i], 0x100 + i);
		d->w[i] = w, d->len[i] = len[i];
	}
	assert_int_equal(pmtx_commit(tx), 0);
	assert_int_equal(pmtx_begin(r, PMTX_RT_UNDO, &tx), 0);
	assert_int_equal(PMTX_SET(tx, root_of(r)->slot[0], dw), 0);
	assert_int_equal(pmtx_commit(tx), 0);
}

static int touch_2_and_3(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	static const unsigned objs[] = {2, 3};
	return cow_touch(r, tx, objs, 2, 0xdead0000);
}

/* A process that dies inside a copy-on-write transaction that opened
 * objects 2 and 3 for writing and changed them, before its commit. */
static void cow_pre_killed_uncommitted(const char *path, pmtx_runtime rtk)
{
	die_inside(path, rtk, touch_2_and_3);
}

static int cow_follow_up(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	static const unsigned objs[] = {0};
	int rc = cow_replace(r, tx, 4, 128, 0x88);
	if (!rc)
		rc = cow_touch(r, tx, objs, 1, 0x1234);
	return rc;
}

static const struct scenario csc_touch = {"cow_touch", 1, {cst_touch_a},
                                          {0}, NULL, NULL};
static const struct scenario csc_create = {
	"cow_create_delete", 1, {cst_create_delete}, {0}, NULL, NULL};
static const struct scenario csc_abort = {"cow_abort", 1, {cst_abort}, {1},
                                          NULL, NULL};
static const struct scenario csc_seq = {
	"cow_sequence",
	6,
	{cst_touch_a, cst_create_delete, cst_abort, cst_many, cst_unmany,
	 cst_touch_b},
	{0, 0, 1, 0, 0, 0},
	NULL,
	NULL,
};
static const struct scenario csc_after_kill = {
	"cow_after_killed_tx", 2, {cst_touch_a, cst_create_delete}, {0, 0},
	cow_pre_killed_uncommitted, NULL};

static const struct scenario sc_ranges = {"ranges", 1, {st_ranges_a}, {0},
                                          NULL, &csc_touch};
static const struct scenario sc_alloc = {"alloc_free", 1, {st_alloc_free},
                                         {0}, NULL, &csc_create};
static const struct scenario sc_abort = {"abort", 1, {st_abort}, {1}, NULL,
                                         &csc_abort};
static const struct scenario sc_seq = {
	"sequence",
	7,
	{st_ranges_a, st_alloc_free, st_abort, st_grow, st_many_allocs,
	 st_free_many, st_ranges_b},
	{0, 0, 1, 0, 0, 0, 0},
	NULL,
	&csc_seq,
};
static const struct scenario sc_after_kill = {
	"after_killed_tx", 2, {st_small, st_ranges_a}, {0, 0},
	pre_killed_uncommitted, &csc_after_kill,
};

/* The scenario to run under rt (and the digest mode that goes with it). */
static const struct scenario *flavor(const struct scenario *sc,
                                     pmtx_runtime rt)
{
	g_cow = is_cow(rt);
	return g_cow ? sc->cow : sc;
}

static size_t committing_steps(const struct scenario *sc)
{
	size_t n = 0;
	for (size_t i = 0; i < sc->nsteps; i++)
		n += !sc->aborts[i];
	return n;
}

/* Build the pristine image and the reference digests ref[0..nsteps].
 * The heap is checked after a reopen: what the crash tests compare with is
 * the persistent state (the DRAM heap after an abort is the subject of
 * heap_check_passes_after_aborted_allocation_without_reopen). */
static void prepare(const struct scenario *sc, pmtx_runtime rtk,
                    uint64_t *ref)
{
	pmtx_region *r = create_region(P_PRISTINE, PMTX_PDOM1,
	                               PMTX_BACKEND_HARDWARE, rtk);
	setup_state(r, rtk);
	assert_int_equal(pmtx_close(r), 0);
	/* The references come from the image without the pre hook: what the
	 * hook did (a transaction that never committed) must leave no
	 * trace. */
	tu_copy_file(P_PRISTINE, P_WORK);
	if (sc->pre)
		sc->pre(P_PRISTINE, rtk);
	r = open_region(P_WORK);
	ref[0] = digest(r, sc->name);
	for (size_t i = 0; i < sc->nsteps; i++) {
		int in_commit = 0;
		assert_int_equal(run_step(sc->step[i], r, rtk, &in_commit), 0);
		ref[i + 1] = digest(r, sc->name);
		if (sc->aborts[i])
			assert_true(ref[i + 1] == ref[i]);
		else
			assert_true(ref[i + 1] != ref[i]);
		assert_int_equal(pmtx_close(r), 0);
		r = open_region(P_WORK);
		check_heap_and_leaks(r, sc->name);
	}
	assert_int_equal(pmtx_close(r), 0);
	if (!sc->pre)
		return;
	/* Uninterrupted, after the hook: the same states. */
	tu_copy_file(P_PRISTINE, P_WORK);
	r = open_region_ctx(P_WORK, "recovery after the pre hook");
	if (digest(r, sc->name) != ref[0])
		fail_msg("%s/%s: the transaction killed before its commit left "
		         "a trace", sc->name, pmtx_runtime_name(rtk));
	for (size_t i = 0; i < sc->nsteps; i++) {
		int in_commit = 0;
		assert_int_equal(run_step(sc->step[i], r, rtk, &in_commit), 0);
		if (digest(r, sc->name) != ref[i + 1])
			fail_msg("%s/%s: after a transaction killed before its "
			         "commit, step %zu (no crash) gives another state "
			         "than without it", sc->name,
			         pmtx_runtime_name(rtk), i);
		assert_int_equal(pmtx_close(r), 0);
		r = open_region_ctx(P_WORK, sc->name);
		check_heap_and_leaks(r, sc->name);
	}
	assert_int_equal(pmtx_close(r), 0);
}

/* An aborted allocation that took a fresh superblock leaves the DRAM heap
 * consistent with the persistent one, without a reopen. */
static void heap_check_passes_after_aborted_allocation_without_reopen(
	void **state)
{
	for (size_t ri = 0; ri < NRUNTIMES; ri++) {
		pmtx_runtime rtk = runtimes[ri];
		pmtx_region *r = create_region(P_WORK, PMTX_PDOM1,
		                               PMTX_BACKEND_HARDWARE, rtk);
		const struct scenario *sc = flavor(&sc_abort, rtk);
		setup_state(r, rtk);
		check_heap_and_leaks(r, "after setup");
		run_steps(sc, 0, 1, r, rtk);
		check_heap_and_leaks(r, "after an aborted transaction");
		assert_int_equal(pmtx_close(r), 0);
	}
}

/* Shared with the children: steps whose call returned. */
static volatile uint64_t *shared_done(void)
{
	static volatile uint64_t *p;
	if (!p) {
		void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		assert_true(m != MAP_FAILED);
		p = m;
	}
	return p;
}

/* In a child: path opened, with a crash at barrier k (counted from now
 * if armed, else once inj.armed is set). */
static pmtx_region *child_open_crashing_at(const char *path, uint64_t k,
                                           int armed)
{
	pmtx_region *r;
	inj_install(INJ_CRASH, k, armed);
	if (pmtx_open(path, NULL, &r))
		_exit(EXIT_OPEN_FAILED);
	return r;
}

/* The work copy of the pristine image; a child opens it, arms the crash
 * at barrier K and runs the steps. */
static int run_steps_crash_at(const struct scenario *sc, pmtx_runtime rtk,
                              uint64_t k)
{
	tu_copy_file(P_PRISTINE, P_WORK);
	volatile uint64_t *done = shared_done();
	*done = 0;
	pid_t pid = tu_fork();
	if (pid == 0) {
		pmtx_region *r = child_open_crashing_at(P_WORK, k, 0);
		inj.armed = 1;
		for (size_t i = 0; i < sc->nsteps; i++) {
			int in_commit = 0;
			if (run_step(sc->step[i], r, rtk, &in_commit))
				_exit(EXIT_STEP_FAILED);
			*done = i + 1;
		}
		_exit(EXIT_COMPLETED);
	}
	return tu_wait_exit(pid);
}

/* Child: open path (recovery) with a crash at recovery barrier M. */
static int recover_crash_at(const char *path, uint64_t m)
{
	pid_t pid = tu_fork();
	if (pid == 0) {
		pmtx_close(child_open_crashing_at(path, m, 1));
		_exit(EXIT_COMPLETED);
	}
	return tu_wait_exit(pid);
}

/* One more transaction: replace slots 8 and 9, write a data word. */
static int follow_up(pmtx_region *r, pmtx_runtime rtk, pmtx_tx *tx)
{
	uint64_t v = 0x1234;
	int rc = slot_alloc(r, tx, 8, 128, INIT_NAKED, 0x88);
	if (!rc)
		rc = slot_alloc(r, tx, 9, 40, INIT_WRITE, 0x99);
	if (!rc)
		rc = pmtx_write(tx, &root_of(r)->data[5], &v, 8);
	return rc;
}

static int follow_up_tx(pmtx_region *r, pmtx_runtime rtk)
{
	int in_commit = 0;
	return run_step(is_cow(rtk) ? cow_follow_up : follow_up, r, rtk,
	                &in_commit);
}

/* After a crash (or error) with `done` steps returned: recovery gives
 * ref[done], or ref[done+1] when the step in flight may have committed;
 * heap check and leaks; a second open writes nothing; the region still
 * runs transactions. Returns the index of the state found. */
static size_t check_recovered(const char *path, const struct scenario *sc,
                              pmtx_runtime rtk, const uint64_t *ref,
                              size_t done, int next_allowed,
                              const char *ctx)
{
	pmtx_region *r = open_region_ctx(path, ctx);
	uint64_t d = digest(r, ctx);
	size_t found = SIZE_MAX;
	size_t last = next_allowed && done < sc->nsteps ? done + 1 : done;
	for (size_t j = done; j <= last && found == SIZE_MAX; j++)
		if (d == ref[j])
			found = j;
	if (found == SIZE_MAX) {
		size_t other = SIZE_MAX;
		for (size_t j = 0; j <= sc->nsteps; j++)
			if (d == ref[j])
				other = j;
		fail_msg("%s: after recovery the state is %s%zd; steps returned: "
		         "%zu (allowed %zu..%zu)", ctx,
		         other == SIZE_MAX ? "none of the step states "
		                           : "the state after step ",
		         other == SIZE_MAX ? (ssize_t)-1 : (ssize_t)other, done,
		         done, last);
	}
	check_heap_and_leaks(r, ctx);
	assert_int_equal(pmtx_close(r), 0);
	uint64_t h1 = tu_file_hash(path);
	r = open_region(path);
	assert_int_equal(pmtx_close(r), 0);
	if (tu_file_hash(path) != h1)
		fail_msg("%s: a second open after recovery wrote the file", ctx);
	/* The recovered region runs transactions (versions, logs, heap). */
	r = open_region(path);
	assert_int_equal(follow_up_tx(r, rtk), 0);
	check_heap_and_leaks(r, ctx);
	assert_int_equal(pmtx_close(r), 0);
	return found;
}

static void crash_at_every_barrier(const struct scenario *scenario)
{
	for (size_t ri = 0; ri < NRUNTIMES; ri++) {
		pmtx_runtime rtk = runtimes[ri];
		const struct scenario *sc = flavor(scenario, rtk);
		uint64_t ref[MAXSTEPS + 1], k;
		size_t after[MAXSTEPS + 1] = {0};
		prepare(sc, rtk, ref);
		for (k = 1; k < MAX_BARRIERS; k++) {
			int st = run_steps_crash_at(sc, rtk, k);
			if (st == EXIT_COMPLETED)
				break;
			if (st != EXIT_CRASHED)
				fail_msg("%s: child exited with %d at K=%llu",
				         sc->name, st, (unsigned long long)k);
			char ctx[128];
			snprintf(ctx, sizeof(ctx), "%s/%s crash at barrier %llu",
			         sc->name, pmtx_runtime_name(rtk),
			         (unsigned long long)k);
			after[check_recovered(P_WORK, sc, rtk, ref,
			                      (size_t)*shared_done(), 1, ctx)]++;
		}
		print_message("%s (%s): %llu crash points\n", sc->name,
		              pmtx_runtime_name(rtk),
		              (unsigned long long)(k - 1));
		/* Every committing step takes at least one barrier. Under undo
		 * the first barrier precedes the commit, so some crash point
		 * recovers to the state before the first step (under redo the
		 * first barrier makes the COMMIT durable). */
		assert_true(k - 1 >= committing_steps(sc));
		if (rtk == PMTX_RT_UNDO && committing_steps(sc))
			assert_true(after[0] > 0);
	}
}

static void crash_at_every_barrier_of_multi_range_tx_is_atomic(void **state)
{
	crash_at_every_barrier(&sc_ranges);
}

static void crash_at_every_barrier_of_alloc_free_tx_is_atomic_without_leaks(
	void **state)
{
	crash_at_every_barrier(&sc_alloc);
}

static void crash_at_every_barrier_of_aborting_tx_restores_prior_state(
	void **state)
{
	crash_at_every_barrier(&sc_abort);
}

static void crash_at_every_barrier_of_tx_sequence_recovers_a_prefix(
	void **state)
{
	crash_at_every_barrier(&sc_seq);
}

/* Depth 2: a crash at every recovery barrier M of the recovery of a crash
 * at every barrier K ends in the same file as an uninterrupted recovery. */
/* A transaction killed before its commit leaves records in its
 * descriptor's log; the next transaction on that descriptor (in a new
 * process) writes fewer records, and must still recover atomically: the
 * old records must never pass as its continuation. */
static void crash_after_a_killed_uncommitted_tx_recovers_the_next_one(
	void **state)
{
	crash_at_every_barrier(&sc_after_kill);
}

static void crash_during_recovery_recovers_like_uninterrupted_recovery(
	void **state)
{
	for (size_t ri = 0; ri < NRUNTIMES; ri++) {
		pmtx_runtime rtk = runtimes[ri];
		const struct scenario *sc = flavor(&sc_seq, rtk);
		uint64_t ref[MAXSTEPS + 1], nested = 0;
		prepare(sc, rtk, ref);
		for (uint64_t k = 1; k < MAX_BARRIERS; k++) {
			int st = run_steps_crash_at(sc, rtk, k);
			if (st == EXIT_COMPLETED)
				break;
			assert_int_equal(st, EXIT_CRASHED);
			size_t done = (size_t)*shared_done();
			tu_copy_file(P_WORK, P_IMAGE);
			/* The uninterrupted recovery. */
			pmtx_region *r = open_region_ctx(P_WORK, "uninterrupted "
			                                         "recovery");
			uint64_t dref = digest(r, "uninterrupted recovery");
			assert_int_equal(pmtx_close(r), 0);
			uint64_t href = tu_file_hash(P_WORK);
			for (uint64_t m = 1; m < MAX_BARRIERS; m++) {
				char ctx[160];
				snprintf(ctx, sizeof(ctx),
				         "%s crash at barrier %llu, then at "
				         "recovery barrier %llu",
				         pmtx_runtime_name(rtk),
				         (unsigned long long)k,
				         (unsigned long long)m);
				tu_copy_file(P_IMAGE, P_WORK);
				st = recover_crash_at(P_WORK, m);
				if (st == EXIT_COMPLETED) {
					if (tu_file_hash(P_WORK) != href)
						fail_msg("%s: recovery in a child "
						         "wrote a different file",
						         ctx);
					break;
				}
				if (st != EXIT_CRASHED)
					fail_msg("%s: child exited with %d", ctx,
					         st);
				nested++;
				r = open_region_ctx(P_WORK, ctx);
				if (digest(r, ctx) != dref)
					fail_msg("%s: state differs from an "
					         "uninterrupted recovery", ctx);
				check_heap_and_leaks(r, ctx);
				assert_int_equal(pmtx_close(r), 0);
				if (tu_file_hash(P_WORK) != href)
					fail_msg("%s: file differs from an "
					         "uninterrupted recovery", ctx);
				check_recovered(P_WORK, sc, rtk, ref, done, 1,
				                ctx);
			}
		}
		print_message("%s: %llu crashes inside recovery\n",
		              pmtx_runtime_name(rtk),
		              (unsigned long long)nested);
		assert_true(nested > 0);
	}
}

static void open_of_cleanly_closed_region_writes_nothing(void **state)
{
	for (size_t ri = 0; ri < NRUNTIMES; ri++) {
		pmtx_runtime rtk = runtimes[ri];
		const struct scenario *sc = flavor(&sc_seq, rtk);
		pmtx_region *r = create_region(P_WORK, PMTX_PDOM1,
		                               PMTX_BACKEND_HARDWARE, rtk);
		setup_state(r, rtk);
		run_steps(sc, 0, sc->nsteps, r, rtk);
		assert_int_equal(pmtx_close(r), 0);
		uint64_t h0 = tu_file_hash(P_WORK);
		r = open_region(P_WORK);
		assert_int_equal(pmtx_close(r), 0);
		assert_true(tu_file_hash(P_WORK) == h0);
		/* Inspection writes nothing either. */
		r = open_region(P_WORK);
		check_heap_and_leaks(r, "clean open");
		(void)digest(r, "clean open");
		assert_int_equal(pmtx_close(r), 0);
		assert_true(tu_file_hash(P_WORK) == h0);
	}
}

static void second_open_after_crash_recovery_writes_nothing(void **state)
{
	for (size_t ri = 0; ri < NRUNTIMES; ri++) {
		pmtx_runtime rtk = runtimes[ri];
		const struct scenario *sc = flavor(&sc_alloc, rtk);
		uint64_t ref[MAXSTEPS + 1], k, worked = 0;
		prepare(sc, rtk, ref);
		for (k = 1; k < MAX_BARRIERS; k++) {
			int st = run_steps_crash_at(sc, rtk, k);
			if (st == EXIT_COMPLETED)
				break;
			assert_int_equal(st, EXIT_CRASHED);
			uint64_t h0 = tu_file_hash(P_WORK);
			pmtx_region *r = open_region(P_WORK);
			assert_int_equal(pmtx_close(r), 0);
			uint64_t h1 = tu_file_hash(P_WORK);
			worked += h1 != h0;
			r = open_region(P_WORK);
			assert_int_equal(pmtx_close(r), 0);
			if (tu_file_hash(P_WORK) != h1)
				fail_msg("%s crash at barrier %llu: the second open "
				         "wrote the file", pmtx_runtime_name(rtk),
				         (unsigned long long)k);
		}
		/* Some crash point left recovery something to do. */
		assert_true(worked > 0);
	}
}

/* I/O error at every barrier K of the sequence: the error is reported,
 * the transaction can be aborted, the region closes, and it reopens
 * consistent. */
static void io_error_at_every_barrier_is_reported_and_leaves_state_atomic(
	void **state)
{
	for (size_t ri = 0; ri < NRUNTIMES; ri++) {
		pmtx_runtime rtk = runtimes[ri];
		const struct scenario *sc = flavor(&sc_seq, rtk);
		uint64_t ref[MAXSTEPS + 1], k;
		prepare(sc, rtk, ref);
		for (k = 1; k < MAX_BARRIERS; k++) {
			char ctx[128];
			snprintf(ctx, sizeof(ctx), "%s I/O error at barrier %llu",
			         pmtx_runtime_name(rtk), (unsigned long long)k);
			pmtx_region *r = open_work_failing_at(k);
			size_t done;
			int in_commit = 0;
			int rc = run_steps_until_error(sc, r, rtk, &done,
			                               &in_commit);
			/* A barrier of a background truncation may fail after
			 * the last step: close is the last call to report it. */
			int crc = pmtx_close(r);
			int reached = inj_remove(k);
			if (!reached) {
				assert_int_equal(rc, 0);
				assert_int_equal(crc, 0);
				break;
			}
			if (rc != PMTX_E_IO && crc != PMTX_E_IO)
				fail_msg("%s%s: never reported (last step %zu "
				         "returned %s, close %s)", ctx,
				         inj.failed_elsewhere
				                 ? " (in another thread)"
				                 : "",
				         done, pmtx_strerror(rc),
				         pmtx_strerror(crc));
			if (crc && crc != PMTX_E_IO)
				fail_msg("%s: close returned %s", ctx,
				         pmtx_strerror(crc));
			check_recovered(P_WORK, sc, rtk, ref, done, in_commit,
			                ctx);
		}
		assert_true(k - 1 >= committing_steps(sc));
	}
}

/* An application may go on after a failed call. Whatever the failed
 * transaction left (applied or not), the transaction that follows in the
 * same process must not make the heap inconsistent or leak, and when the
 * failure hit a step and the next transaction committed, the state is
 * that step's (or, after a failed commit, the one after it) followed by
 * the next transaction. */
static void io_error_then_more_transactions_keeps_heap_consistent(
	void **state)
{
	for (size_t ri = 0; ri < NRUNTIMES; ri++) {
		pmtx_runtime rtk = runtimes[ri];
		const struct scenario *sc = flavor(&sc_seq, rtk);
		uint64_t ref[MAXSTEPS + 1], reff[MAXSTEPS + 1], k;
		prepare(sc, rtk, ref);
		/* reff[j]: steps 0..j-1, then the follow-up transaction. */
		for (size_t j = 0; j <= sc->nsteps; j++) {
			tu_copy_file(P_PRISTINE, P_WORK);
			pmtx_region *r = open_region(P_WORK);
			run_steps(sc, 0, j, r, rtk);
			assert_int_equal(follow_up_tx(r, rtk), 0);
			reff[j] = digest(r, "reference");
			assert_int_equal(pmtx_close(r), 0);
		}
		for (k = 1; k < MAX_BARRIERS; k++) {
			char ctx[128];
			snprintf(ctx, sizeof(ctx),
			         "%s I/O error at barrier %llu, then one more "
			         "transaction", pmtx_runtime_name(rtk),
			         (unsigned long long)k);
			pmtx_region *r = open_work_failing_at(k);
			size_t done;
			int in_commit = 0;
			int rc = run_steps_until_error(sc, r, rtk, &done,
			                               &in_commit);
			int frc = follow_up_tx(r, rtk);
			int crc = pmtx_close(r);
			int reached = inj_remove(k);
			if (!reached) {
				assert_int_equal(rc, 0);
				assert_int_equal(frc, 0);
				assert_int_equal(crc, 0);
				break;
			}
			if (rc != PMTX_E_IO && frc != PMTX_E_IO && crc != PMTX_E_IO)
				fail_msg("%s%s: never reported", ctx,
				         inj.failed_elsewhere
				                 ? " (in another thread)"
				                 : "");
			if (crc && crc != PMTX_E_IO)
				fail_msg("%s: close returned %s", ctx,
				         pmtx_strerror(crc));
			r = open_region_ctx(P_WORK, ctx);
			check_heap_and_leaks(r, ctx);
			uint64_t d = digest(r, ctx);
			int ok = d == reff[done] ||
			         (in_commit && done < sc->nsteps &&
			          d == reff[done + 1]);
			if (rc && frc == 0 && !ok)
				fail_msg("%s: state is not that of step %zu (or, "
				         "after a failed commit, %zu) followed by "
				         "the next transaction", ctx, done,
				         done + 1);
			assert_int_equal(pmtx_close(r), 0);
		}
		assert_true(k - 1 >= committing_steps(sc));
	}
}

/* ---- barrier counts (undo runtime) ---- */

static uint64_t tx_barriers(pmtx_region *r, unsigned nranges, int alloc,
                            int abort, int twice)
{
	struct rroot *rt = root_of(r);
	pmtx_tx *tx;
	pmtx_off off = 0;
	tu_count_start();
	assert_int_equal(pmtx_begin(r, PMTX_RT_UNDO, &tx), 0);
	for (unsigned i = 0; i < nranges; i++) {
		uint64_t v = rt->data[i * 2] + 1;
		assert_int_equal(pmtx_write(tx, &rt->data[i * 2], &v, 8), 0);
		if (twice)
			assert_int_equal(pmtx_write(tx, &rt->data[i * 2], &v, 8),
			                 0);
	}
	if (alloc) {
		assert_int_equal(pmtx_alloc(tx, 48, &off), 0);
		uint64_t *p = pmtx_ptr(r, off);
		p[0] = 1;
		pmtx_flush(r, p, 8);
	}
	if (abort)
		assert_int_equal(pmtx_abort(tx), 0);
	else
		assert_int_equal(pmtx_commit(tx), 0);
	uint64_t b = tu_count().barriers;
	if (alloc && !abort) { /* give the block back, uncounted */
		assert_int_equal(pmtx_begin(r, PMTX_RT_UNDO, &tx), 0);
		assert_int_equal(pmtx_free(tx, off), 0);
		assert_int_equal(pmtx_commit(tx), 0);
	}
	return b;
}

static const unsigned counts_n[] = {0, 1, 4, 16, 32};

static void warm_up(pmtx_region *r)
{
	(void)tx_barriers(r, 3, 1, 0, 0);
}

/* In every domain and backend, an undo transaction that writes n ranges
 * (and allocates a block, if alloc is set) costs cost(n) barriers, for
 * each n of counts_n. */
static void undo_costs_everywhere(int alloc, unsigned (*cost)(unsigned n))
{
	for (pmtx_domain d = PMTX_PDOM0; d <= PMTX_PDOM2; d++)
		for (pmtx_backend b = PMTX_BACKEND_HARDWARE;
		     b <= PMTX_BACKEND_FILE; b++) {
			pmtx_region *r = create_region(P_WORK, d, b,
			                               PMTX_RT_UNDO);
			warm_up(r);
			for (size_t i = 0; i < 5; i++) {
				unsigned n = counts_n[i];
				uint64_t got = tx_barriers(r, n, alloc, 0, 0);
				if (got != cost(n))
					fail_msg("%s/%s: %u ranges%s cost %llu "
					         "barriers, expected %u",
					         pmtx_domain_name(d),
					         pmtx_backend_name(b), n,
					         alloc ? " + 1 alloc" : "",
					         (unsigned long long)got, cost(n));
			}
			assert_int_equal(pmtx_close(r), 0);
		}
}

static unsigned n_plus_2_if_any(unsigned n)
{
	return n ? n + 2 : 0;
}

static unsigned n_plus_4(unsigned n)
{
	return n + 4;
}

static void undo_tx_writing_n_ranges_costs_n_plus_2_barriers(void **state)
{
	undo_costs_everywhere(0, n_plus_2_if_any);
}

static void undo_tx_with_one_allocation_costs_n_plus_4_barriers(void **state)
{
	undo_costs_everywhere(1, n_plus_4);
}

static void undo_same_range_written_twice_costs_one_record(void **state)
{
	pmtx_region *r = create_region(P_WORK, PMTX_PDOM1,
	                               PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
	warm_up(r);
	for (size_t i = 1; i < 5; i++) {
		unsigned n = counts_n[i];
		uint64_t once = tx_barriers(r, n, 0, 0, 0);
		uint64_t logged_once = tu_count().bytes_logged;
		uint64_t twice = tx_barriers(r, n, 0, 0, 1);
		assert_int_equal(twice, once);
		assert_int_equal(tu_count().bytes_logged, logged_once);
	}
	/* A sub-range of a logged range is covered too. */
	struct rroot *rt = root_of(r);
	pmtx_tx *tx;
	uint64_t v[4] = {1, 2, 3, 4};
	tu_count_start();
	assert_int_equal(pmtx_begin(r, PMTX_RT_UNDO, &tx), 0);
	assert_int_equal(pmtx_write(tx, &rt->data[40], v, sizeof(v)), 0);
	assert_int_equal(pmtx_write(tx, &rt->data[41], v, 8), 0);
	assert_int_equal(pmtx_write(tx, (char *)&rt->data[42] + 3, v, 5), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_int_equal(tu_count().barriers, 3);
	assert_int_equal(pmtx_close(r), 0);
}

static void undo_abort_costs_two_barriers_beyond_the_records(void **state)
{
	for (pmtx_domain d = PMTX_PDOM0; d <= PMTX_PDOM2; d++) {
		pmtx_region *r = create_region(P_WORK, d, PMTX_BACKEND_EMULATED,
		                               PMTX_RT_UNDO);
		warm_up(r);
		for (size_t i = 0; i < 5; i++) {
			unsigned n = counts_n[i];
			uint64_t got = tx_barriers(r, n, 0, 1, 0);
			assert_int_equal(got, n_plus_2_if_any(n));
			got = tx_barriers(r, n, 1, 1, 0); /* alloc: no cost */
			assert_int_equal(got, n_plus_2_if_any(n));
		}
		assert_int_equal(pmtx_close(r), 0);
	}
}

/* The twin state word as the file holds it (rstate.twin). */
static uint64_t file_twin_word(const char *path)
{
	struct pmtx_hdr h;
	uint64_t w = ~0ull;
	tu_pread(path, &h, sizeof(h), 0);
	tu_pread(path, &w, 8, h.rstate_off + offsetof(struct pmtx_rstate, twin));
	return w;
}

/* A new twin region whose first transaction, a small one storing 77 in
 * root word 0, fails at barrier (d) (after (a) and (b), its commit
 * point): commit says PMTX_E_IO, and the word holds 77. The injection
 * table stays installed (disarmed) for the region's life. */
static pmtx_region *twin_with_failed_back_barrier(const char **path)
{
	inj_install(INJ_IO, 3, 0);
	pmtx_region *r = tu_create(path, 2 * REGION_SIZE, 64, PMTX_PDOM1,
	                           PMTX_BACKEND_HARDWARE, PMTX_RT_TWIN);
	uint64_t *w = pmtx_root(r, NULL), v = 77;
	pmtx_tx *tx;
	inj.armed = 1;
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_write(tx, &w[0], &v, 8), 0);
	assert_int_equal(pmtx_commit(tx), PMTX_E_IO);
	inj.armed = 0;
	assert_int_equal(w[0], 77); /* committed at (b) */
	return r;
}

/* twin.c TW9: a small twin commit whose back-copy barrier (d) fails
 * reports the error, and close then leaves MUTATING and the seal, not
 * IDLE (a retried barrier would find nothing to write on the file
 * backend): the next open copies the sealed lines to the back copy. */
static void twin_close_after_a_failed_back_copy_barrier_is_not_idle(
	void **state)
{
	const char *path;
	pmtx_region *r = twin_with_failed_back_barrier(&path);
	uint64_t *w = pmtx_root(r, NULL), v = 77;
	pmtx_tx *tx;
	assert_int_equal(pmtx_close(r), 0);
	persist_override_ops(NULL, NULL);
	assert_int_equal(PMTX_TW_STATE(file_twin_word(path)),
	                 PMTX_TW_MUTATING);
	r = tu_open(path);
	assert_int_equal(((uint64_t *)pmtx_root(r, NULL))[0], 77);
	assert_int_equal(pmtx_close(r), 0);
	assert_int_equal(PMTX_TW_STATE(file_twin_word(path)), PMTX_TW_IDLE);
	unlink(path);
	/* The same failure, then another transaction in the same open: its
	 * first store writes back the whole back copy before MUTATING (the
	 * failed barrier's lines are not known any more), then its own 2:
	 * no MUTATING, the word and seal of the failed commit's are durable
	 * with that barrier (twin.c TW13). */
	r = twin_with_failed_back_barrier(&path);
	w = pmtx_root(r, NULL);
	struct pmtx_hdr h;
	tu_pread(path, &h, sizeof(h), 0);
	tu_count_start();
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_write(tx, &w[1], &v, 8), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	pmtx_counters c = tu_count();
	assert_int_equal(c.barriers, 3);
	assert_true(c.flushes >= (h.twin_off - h.root_off) / 64);
	assert_int_equal(pmtx_close(r), 0);
	persist_override_ops(NULL, NULL);
	unlink(path);
}

int main(void)
{
#define T(f) cmocka_unit_test_teardown(f, reset_inj)
	const struct CMUnitTest tests[] = {
		T(crash_at_every_barrier_of_multi_range_tx_is_atomic),
		T(crash_at_every_barrier_of_alloc_free_tx_is_atomic_without_leaks),
		T(crash_at_every_barrier_of_aborting_tx_restores_prior_state),
		T(crash_at_every_barrier_of_tx_sequence_recovers_a_prefix),
		T(crash_after_a_killed_uncommitted_tx_recovers_the_next_one),
		T(crash_during_recovery_recovers_like_uninterrupted_recovery),
		T(heap_check_passes_after_aborted_allocation_without_reopen),
		T(open_of_cleanly_closed_region_writes_nothing),
		T(second_open_after_crash_recovery_writes_nothing),
		T(io_error_at_every_barrier_is_reported_and_leaves_state_atomic),
		T(io_error_then_more_transactions_keeps_heap_consistent),
		T(undo_tx_writing_n_ranges_costs_n_plus_2_barriers),
		T(undo_tx_with_one_allocation_costs_n_plus_4_barriers),
		T(undo_same_range_written_twice_costs_one_record),
		T(undo_abort_costs_two_barriers_beyond_the_records),
		T(twin_close_after_a_failed_back_copy_barrier_is_not_idle),
	};
	return cmocka_run_group_tests(tests, setup_paths, teardown_all);
}
