/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_heap.c - the persistent heap through the transaction API: no
 * barriers of its own, aligned disjoint blocks, persistence across reopen,
 * consistency after committed/aborted mixes, deferred reuse of freed
 * blocks, error statuses, exhaustion, and concurrent use.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "heap/heap.h"
#include "region/region.h"

#define MiB (1024u * 1024u)
#define HDR 16u /* struct pmtx_objhdr in front of every block */

/* ---- a set of live blocks ---- */

struct blk {
	pmtx_off off;
	size_t usable;
};

struct bset {
	struct blk *v;
	size_t n, cap;
};

static void bset_add(struct bset *s, pmtx_off off, size_t usable)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		assert_non_null(s->v);
	}
	s->v[s->n++] = (struct blk){off, usable};
}

static void bset_del(struct bset *s, size_t i)
{
	s->v[i] = s->v[--s->n];
}

static void bset_free(struct bset *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int blk_cmp(const void *a, const void *b)
{
	const struct blk *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

static void bset_sort(struct bset *s)
{
	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), blk_cmp);
}

static int walk_add(pmtx_off off, size_t usable, void *arg)
{
	bset_add(arg, off, usable);
	return 0;
}

/* ---- checks ---- */

static uint64_t heap_begin(const pmtx_region *r)
{
	return r->hdr->heap_off;
}

static uint64_t heap_end(const pmtx_region *r)
{
	return r->hdr->heap_off + r->hdr->nsb * (uint64_t)PMTX_SB_SIZE;
}

/* Blocks (user ranges plus their headers) are 16-aligned, inside the
 * heap and pairwise disjoint. Sorts s. */
static void assert_disjoint_in_heap(const pmtx_region *r, struct bset *s)
{
	bset_sort(s);
	for (size_t i = 0; i < s->n; i++) {
		const struct blk *b = &s->v[i];
		if (b->off % 16)
			fail_msg("block %llu is not 16-byte aligned",
			         (unsigned long long)b->off);
		if (b->off < heap_begin(r) + HDR ||
		    b->off + b->usable > heap_end(r))
			fail_msg("block %llu+%zu lies outside the heap",
			         (unsigned long long)b->off, b->usable);
		if (i + 1 < s->n && b->off + b->usable + HDR > s->v[i + 1].off)
			fail_msg("blocks %llu+%zu and %llu overlap",
			         (unsigned long long)b->off, b->usable,
			         (unsigned long long)s->v[i + 1].off);
	}
}

/* pmtx_heap_walk reports exactly the blocks of set, with their usable
 * sizes. Sorts set. */
static void assert_walk_matches(pmtx_region *r, struct bset *set)
{
	struct bset w = {0};
	assert_int_equal(pmtx_heap_walk(r, walk_add, &w), 0);
	bset_sort(&w);
	bset_sort(set);
	size_t n = MIN(w.n, set->n);
	for (size_t i = 0; i < n; i++)
		if (w.v[i].off != set->v[i].off ||
		    w.v[i].usable != set->v[i].usable)
			fail_msg("walk entry %zu is %llu+%zu, expected %llu+%zu",
			         i, (unsigned long long)w.v[i].off, w.v[i].usable,
			         (unsigned long long)set->v[i].off,
			         set->v[i].usable);
	if (w.n != set->n)
		fail_msg("walk reports %zu blocks, expected %zu", w.n, set->n);
	bset_free(&w);
}

/* pmtx_heap_check passes, and its counts agree with set (overall and per
 * size class). Blocks used by pmtx's own logs are counted separately. */
static void assert_heap_consistent(pmtx_region *r, const struct bset *set,
                                   pmtx_heap_stats *out)
{
	pmtx_heap_stats st;
	int rc = pmtx_heap_check(r, &st);
	if (rc)
		fail_msg("heap check: %s (%llu errors)", st.first_error,
		         (unsigned long long)st.errors);
	assert_int_equal(st.errors, 0);
	assert_int_equal(st.superblocks, r->hdr->nsb);
	assert_int_equal(st.allocated_blocks - st.internal_blocks, set->n);
	uint64_t want[PMTX_HEAP_MAX_CLASSES] = {0};
	for (size_t i = 0; i < set->n; i++) {
		uint64_t bs = set->v[i].usable + HDR;
		if (bs > 32768)
			continue; /* large */
		unsigned c;
		for (c = 0; c < st.nclasses; c++)
			if (st.cls[c].block_size == bs)
				break;
		if (c == st.nclasses)
			fail_msg("usable size %zu matches no size class",
			         set->v[i].usable);
		want[c]++;
	}
	for (unsigned c = 0; c < st.nclasses; c++)
		if (st.cls[c].allocated != want[c])
			fail_msg("class %u (%u bytes): %llu allocated, expected "
			         "%llu", c, st.cls[c].block_size,
			         (unsigned long long)st.cls[c].allocated,
			         (unsigned long long)want[c]);
	if (out)
		*out = st;
}

/* A deterministic pattern for block off (tag varies it). */
static unsigned char pat(pmtx_off off, uint64_t tag, size_t i)
{
	return (unsigned char)((off >> 4) * 131 + tag * 17 + i * 7 + (i >> 8));
}

static void fill(pmtx_region *r, pmtx_off off, size_t n, uint64_t tag)
{
	unsigned char *p = pmtx_ptr(r, off);
	for (size_t i = 0; i < n; i++)
		p[i] = pat(off, tag, i);
	pmtx_flush(r, p, n);
}

static int filled(pmtx_region *r, pmtx_off off, size_t n, uint64_t tag)
{
	const unsigned char *p = pmtx_ptr(r, off);
	for (size_t i = 0; i < n; i++)
		if (p[i] != pat(off, tag, i))
			return 0;
	return 1;
}

/* The heap is consistent with set, and its walk reports exactly set's
 * blocks. Sorts set. */
static void assert_heap_holds(pmtx_region *r, struct bset *set)
{
	assert_heap_consistent(r, set, NULL);
	assert_walk_matches(r, set);
}

/* The test's region, so that after a failing test its transaction is
 * aborted, the region closed and the file removed, instead of a
 * transaction left running in this thread failing every later test. */
static pmtx_region *cur_r;
static const char *cur_path;
static struct bset live; /* the blocks the test expects to be live */

/* The test's region: size bytes, at cur_path. */
static pmtx_region *mk(size_t size)
{
	cur_r = tu_create(&cur_path, size, 256, PMTX_PDOM1,
	                  PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
	return cur_r;
}

static pmtx_region *reopen(pmtx_region *r)
{
	cur_r = NULL;
	assert_int_equal(pmtx_close(r), 0);
	cur_r = tu_open(cur_path);
	return cur_r;
}

/* reopen, after which the heap must still hold set (assert_heap_holds). */
static pmtx_region *reopen_holding(pmtx_region *r, struct bset *set)
{
	r = reopen(r);
	assert_heap_holds(r, set);
	return r;
}

static void done(pmtx_region *r)
{
	tu_close_and_remove(r, cur_path);
	cur_r = NULL;
	cur_path = NULL;
}

static int cleanup(void **state)
{
	for (pmtx_tx *tx; (tx = pmtx_tx_current()) != NULL;)
		pmtx_abort(tx);
	if (cur_r)
		pmtx_close(cur_r);
	cur_r = NULL;
	if (cur_path) {
		unlink(cur_path);
		cur_path = NULL;
	}
	bset_free(&live);
	return 0;
}

static pmtx_tx *begin(pmtx_region *r)
{
	pmtx_tx *tx = NULL;
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	return tx;
}

/* Allocate n bytes in a transaction of its own and commit. */
static pmtx_off alloc1(pmtx_region *r, size_t n)
{
	pmtx_tx *tx = begin(r);
	pmtx_off off = 0;
	assert_int_equal(pmtx_alloc(tx, n, &off), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	return off;
}

static void free1(pmtx_region *r, pmtx_off off)
{
	pmtx_tx *tx = begin(r);
	assert_int_equal(pmtx_free(tx, off), 0);
	assert_int_equal(pmtx_commit(tx), 0);
}

static int walk_has(pmtx_off off, size_t usable, void *arg)
{
	(void)usable;
	return off == *(pmtx_off *)arg ? 1 : 0;
}

/* Does pmtx_heap_walk report the block at off? */
static int walk_reports(pmtx_region *r, pmtx_off off)
{
	return pmtx_heap_walk(r, walk_has, &off) == 1;
}

/* Can a block of n bytes at want be allocated now? Reserves blocks of n
 * bytes in one transaction until want comes up or the heap runs out,
 * then aborts, so the heap is left as it was. */
static int allocatable(pmtx_region *r, size_t n, pmtx_off want)
{
	pmtx_tx *tx = begin(r);
	int found = 0, rc = 0;
	while (!found && rc == 0) {
		pmtx_off o;
		rc = pmtx_alloc(tx, n, &o);
		found = rc == 0 && o == want;
	}
	if (rc && rc != PMTX_E_NOMEM)
		fail_msg("pmtx_alloc(%zu): %d", n, rc);
	assert_int_equal(pmtx_abort(tx), 0);
	return found;
}

/* ---- lazy persistence: no barriers ---- */

static void alloc_and_free_issue_no_persist_barriers(void **state)
{
	pmtx_region *r = mk(64 * MiB);
	static const size_t sizes[] = {1, 16, 100, 1000, 4000, 32752, 32753,
	                               65536, 200 * 1024};
	pmtx_off offs[ARRAY_SIZE(sizes)];
	pmtx_tx *tx = begin(r);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		tu_count_start();
		assert_int_equal(pmtx_alloc(tx, sizes[i], &offs[i]), 0);
		pmtx_counters c = tu_count();
		if (c.barriers || c.flushes)
			fail_msg("pmtx_alloc(%zu): %llu barriers, %llu flushes",
			         sizes[i], (unsigned long long)c.barriers,
			         (unsigned long long)c.flushes);
	}
	assert_int_equal(pmtx_commit(tx), 0);

	tx = begin(r);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		tu_count_start();
		assert_int_equal(pmtx_free(tx, offs[i]), 0);
		pmtx_counters c = tu_count();
		if (c.barriers)
			fail_msg("pmtx_free of a %zu-byte block: %llu barriers",
			         sizes[i], (unsigned long long)c.barriers);
	}
	/* Allocations mixed with the frees, in the same transaction. */
	for (size_t i = 0; i < 50; i++) {
		pmtx_off o;
		tu_count_start();
		assert_int_equal(pmtx_alloc(tx, 24 + i * 40, &o), 0);
		pmtx_counters c = tu_count();
		assert_int_equal(c.barriers, 0);
		assert_int_equal(c.flushes, 0);
	}
	assert_int_equal(pmtx_commit(tx), 0);

	/* zalloc flushes the zeroes, but issues no barrier either. */
	tx = begin(r);
	pmtx_off z;
	tu_count_start();
	assert_int_equal(pmtx_zalloc(tx, 5000, &z), 0);
	assert_int_equal(tu_count().barriers, 0);
	assert_int_equal(pmtx_commit(tx), 0);
	done(r);
}

static void zalloc_returns_zeroed_memory_even_over_old_contents(
	void **state)
{
	pmtx_region *r = mk(16 * MiB);
	/* Dirty a run of blocks of one class, then free them all. */
	pmtx_off offs[64];
	pmtx_tx *tx = begin(r);
	for (int i = 0; i < 64; i++) {
		assert_int_equal(pmtx_alloc(tx, 300, &offs[i]), 0);
		memset(pmtx_ptr(r, offs[i]), 0xee, 300);
		pmtx_flush(r, pmtx_ptr(r, offs[i]), 300);
	}
	assert_int_equal(pmtx_commit(tx), 0);
	tx = begin(r);
	for (int i = 0; i < 64; i++)
		assert_int_equal(pmtx_free(tx, offs[i]), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	tx = begin(r);
	for (int i = 0; i < 64; i++) {
		pmtx_off z;
		assert_int_equal(pmtx_zalloc(tx, 300, &z), 0);
		const unsigned char *p = pmtx_ptr(r, z);
		for (int k = 0; k < 300; k++)
			if (p[k])
				fail_msg("zalloc block %llu byte %d is %u",
				         (unsigned long long)z, k, p[k]);
	}
	assert_int_equal(pmtx_commit(tx), 0);
	done(r);
}

/* ---- placement ---- */

/* Sizes 1..512 each, then every 97 bytes to 40000, class edges, large. */
static size_t test_size(size_t i, size_t *count)
{
	static const size_t edges[] = {32767 - HDR, 32768 - HDR, 32769 - HDR,
	                               65536 - HDR, 65537 - HDR, 65536,
	                               131072, 200 * 1024, 1 * MiB};
	size_t n1 = 512, n2 = (40000 - 513) / 97 + 1;
	*count = n1 + n2 + ARRAY_SIZE(edges);
	if (i < n1)
		return i + 1;
	if (i < n1 + n2)
		return 513 + (i - n1) * 97;
	return edges[i - n1 - n2];
}

static void blocks_are_aligned_disjoint_in_heap_and_large_enough(
	void **state)
{
	pmtx_region *r = mk(128 * MiB);
	size_t count;
	test_size(0, &count);
	pmtx_tx *tx = NULL;
	for (size_t i = 0; i < count; i++) {
		if (i % 100 == 0)
			tx = begin(r);
		size_t n = test_size(i, &count);
		pmtx_off off;
		assert_int_equal(pmtx_alloc(tx, n, &off), 0);
		size_t u = pmtx_usable_size(r, off);
		if (u < n)
			fail_msg("usable size %zu < %zu requested", u, n);
		fill(r, off, u, 1);
		bset_add(&live, off, u);
		if (i % 100 == 99 || i + 1 == count)
			assert_int_equal(pmtx_commit(tx), 0);
	}
	assert_disjoint_in_heap(r, &live);
	/* Filling every usable byte of every block disturbed no other. */
	for (size_t i = 0; i < live.n; i++)
		if (!filled(r, live.v[i].off, live.v[i].usable, 1))
			fail_msg("block %llu was overwritten",
			         (unsigned long long)live.v[i].off);
	assert_heap_consistent(r, &live, NULL);
	done(r);
}

static void allocations_in_every_size_class_get_exactly_that_class(
	void **state)
{
	pmtx_region *r = mk(64 * MiB);
	pmtx_heap_stats st;
	assert_int_equal(pmtx_heap_check(r, &st), 0);
	/* For each class, a block size that fills it exactly; beyond one
	 * superblock's worth where that is at most 150 blocks. */
	for (unsigned c = 0; c < st.nclasses; c++) {
		size_t n = st.cls[c].block_size - HDR;
		size_t per_sb = PMTX_SB_SIZE / st.cls[c].block_size;
		size_t k = MIN(per_sb + 3, 150);
		pmtx_tx *tx = begin(r);
		for (size_t i = 0; i < k; i++) {
			pmtx_off off;
			assert_int_equal(pmtx_alloc(tx, n, &off), 0);
			assert_int_equal(pmtx_usable_size(r, off), n);
			bset_add(&live, off, n);
		}
		assert_int_equal(pmtx_commit(tx), 0);
	}
	assert_disjoint_in_heap(r, &live);
	assert_heap_consistent(r, &live, &st);
	assert_int_equal(st.internal_blocks, 0);
	assert_walk_matches(r, &live);
	done(r);
}

static void committed_blocks_and_contents_survive_close_and_reopen(
	void **state)
{
	pmtx_region *r = mk(64 * MiB);
	uint64_t seed = 1234;
	for (int t = 0; t < 20; t++) {
		pmtx_tx *tx = begin(r);
		for (int i = 0; i < 20; i++) {
			uint64_t x = tu_rand(&seed);
			size_t n = x % 16 == 0 ? 40000 + x % 200000
			                       : 1 + x % 3000;
			pmtx_off off;
			assert_int_equal(pmtx_alloc(tx, n, &off), 0);
			size_t u = pmtx_usable_size(r, off);
			fill(r, off, u, 7);
			bset_add(&live, off, u);
		}
		assert_int_equal(pmtx_commit(tx), 0);
	}
	assert_walk_matches(r, &live);

	r = reopen(r);
	assert_walk_matches(r, &live);
	assert_heap_consistent(r, &live, NULL);
	for (size_t i = 0; i < live.n; i++) {
		assert_int_equal(pmtx_usable_size(r, live.v[i].off),
		                 live.v[i].usable);
		if (!filled(r, live.v[i].off, live.v[i].usable, 7))
			fail_msg("block %llu lost its contents",
			         (unsigned long long)live.v[i].off);
	}
	/* And the reopened heap hands out none of them again. */
	pmtx_tx *tx = begin(r);
	struct bset fresh = {0};
	for (int i = 0; i < 200; i++) {
		pmtx_off off;
		assert_int_equal(pmtx_alloc(tx, 1 + (size_t)i * 13, &off), 0);
		bset_add(&fresh, off, pmtx_usable_size(r, off));
	}
	assert_int_equal(pmtx_commit(tx), 0);
	struct bset all = {0};
	for (size_t i = 0; i < live.n; i++)
		bset_add(&all, live.v[i].off, live.v[i].usable);
	for (size_t i = 0; i < fresh.n; i++)
		bset_add(&all, fresh.v[i].off, fresh.v[i].usable);
	assert_disjoint_in_heap(r, &all);
	bset_free(&all);
	bset_free(&fresh);
	done(r);
}

static void heap_check_passes_after_random_alloc_free_mix_and_reopen(
	void **state)
{
	pmtx_region *r = mk(64 * MiB);
	uint64_t seed = 99;
	int rounds = tu_long_mode() ? 3000 : 400;
	for (int t = 0; t < rounds; t++) {
		pmtx_tx *tx = begin(r);
		struct bset allocs = {0}, frees = {0};
		int ops = 1 + (int)(tu_rand(&seed) % 12);
		for (int k = 0; k < ops; k++) {
			uint64_t x = tu_rand(&seed);
			if (live.n > 0 && (x % 100 < 45 || live.n > 600)) {
				/* Out of live until the outcome is known, so
				 * it is not picked twice. */
				size_t i = (size_t)(x >> 8) % live.n;
				assert_int_equal(pmtx_free(tx, live.v[i].off), 0);
				bset_add(&frees, live.v[i].off, live.v[i].usable);
				bset_del(&live, i);
			} else {
				size_t n = x % 50 == 0 ? 33000 + (x >> 16) % 150000
				           : x % 5 == 0 ? 1 + (x >> 16) % 20000
				                        : 1 + (x >> 16) % 600;
				pmtx_off off;
				assert_int_equal(pmtx_alloc(tx, n, &off), 0);
				bset_add(&allocs, off, pmtx_usable_size(r, off));
			}
		}
		/* Committed: allocations live, frees gone. Aborted: the
		 * reverse. */
		int abort_it = tu_rand(&seed) % 8 == 0;
		struct bset *back = &allocs;
		if (abort_it) {
			assert_int_equal(pmtx_abort(tx), 0);
			back = &frees;
		} else {
			assert_int_equal(pmtx_commit(tx), 0);
		}
		for (size_t i = 0; i < back->n; i++)
			bset_add(&live, back->v[i].off, back->v[i].usable);
		bset_free(&allocs);
		bset_free(&frees);
		if (t % 50 == 49) {
			assert_heap_holds(r, &live);
		}
	}
	pmtx_heap_stats st;
	assert_heap_consistent(r, &live, &st);
	/* No transaction had enough entries to grow its logs. */
	assert_int_equal(st.internal_blocks, 0);
	assert_int_equal(st.allocated_blocks, live.n);
	assert_walk_matches(r, &live);
	assert_disjoint_in_heap(r, &live);

	r = reopen(r);
	assert_heap_consistent(r, &live, &st);
	assert_int_equal(st.allocated_blocks, live.n);
	assert_walk_matches(r, &live);
	done(r);
}

/* ---- abort ---- */

static void allocation_of_aborted_transaction_is_returned_to_the_heap(
	void **state)
{
	pmtx_region *r = mk(16 * MiB);
	pmtx_off keep = alloc1(r, 100); /* something live beside it */
	pmtx_tx *tx = begin(r);
	pmtx_off b, big;
	assert_int_equal(pmtx_alloc(tx, 100, &b), 0);
	assert_int_equal(pmtx_alloc(tx, 200 * 1024, &big), 0);
	assert_int_equal(pmtx_abort(tx), 0);
	assert_null(pmtx_tx_current());

	assert_false(walk_reports(r, b));
	assert_false(walk_reports(r, big));
	assert_true(walk_reports(r, keep));
	assert_int_equal(pmtx_usable_size(r, b), 0);
	assert_int_equal(pmtx_usable_size(r, big), 0);
	bset_add(&live, keep, pmtx_usable_size(r, keep));
	assert_heap_consistent(r, &live, NULL);

	/* The same blocks can be allocated again. */
	assert_true(allocatable(r, 100, b));
	assert_true(allocatable(r, 200 * 1024, big));

	/* Nothing of either aborted transaction after a reopen. */
	r = reopen(r);
	assert_false(walk_reports(r, b));
	assert_false(walk_reports(r, big));
	assert_heap_holds(r, &live);
	done(r);
}

static void heap_check_passes_after_aborted_allocation_in_fresh_superblock(
	void **state)
{
	pmtx_region *r = mk(16 * MiB);
	struct bset none = {0};
	/* The first block of a size class takes a superblock from the pool;
	 * aborting gives the block back, and the heap must check clean. */
	pmtx_tx *tx = begin(r);
	pmtx_off b;
	assert_int_equal(pmtx_alloc(tx, 100, &b), 0);
	assert_int_equal(pmtx_abort(tx), 0);
	assert_false(walk_reports(r, b));
	assert_heap_consistent(r, &none, NULL);
	done(r);
}

static void free_in_aborted_transaction_is_cancelled_also_after_reopen(
	void **state)
{
	pmtx_region *r = mk(16 * MiB);
	pmtx_off b = alloc1(r, 100), big = alloc1(r, 200 * 1024);
	size_t ub = pmtx_usable_size(r, b), ubig = pmtx_usable_size(r, big);
	fill(r, b, ub, 3);
	pmtx_tx *tx = begin(r);
	assert_int_equal(pmtx_free(tx, b), 0);
	assert_int_equal(pmtx_free(tx, big), 0);
	assert_int_equal(pmtx_abort(tx), 0);

	assert_true(walk_reports(r, b));
	assert_true(walk_reports(r, big));
	assert_int_equal(pmtx_usable_size(r, b), ub);
	assert_int_equal(pmtx_usable_size(r, big), ubig);
	bset_add(&live, b, ub);
	bset_add(&live, big, ubig);
	assert_heap_consistent(r, &live, NULL);

	/* Still allocated: never handed out again. */
	tx = begin(r);
	for (int i = 0; i < 200; i++) {
		pmtx_off o;
		assert_int_equal(pmtx_alloc(tx, 100, &o), 0);
		assert_true(o != b);
	}
	for (int i = 0; i < 10; i++) {
		pmtx_off o;
		assert_int_equal(pmtx_alloc(tx, 200 * 1024, &o), 0);
		assert_true(o != big);
	}
	assert_int_equal(pmtx_abort(tx), 0);

	r = reopen(r);
	assert_walk_matches(r, &live);
	assert_heap_consistent(r, &live, NULL);
	assert_true(filled(r, b, ub, 3));
	/* And it can still be freed, once. */
	free1(r, b);
	assert_false(walk_reports(r, b));
	done(r);
}

/* ---- reuse only after commit ---- */

static void freed_block_is_not_reused_before_the_freeing_tx_commits(
	void **state)
{
	pmtx_region *r = mk(4 * MiB);
	static const size_t sizes[] = {100, 5000, 200 * 1024};
	struct bset none = {0};
	for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
		size_t n = sizes[s];
		pmtx_off b = alloc1(r, n);
		/* While its free is pending, b is not handed out, however
		 * many blocks of its size the transaction takes. */
		pmtx_tx *tx = begin(r);
		assert_int_equal(pmtx_free(tx, b), 0);
		assert_true(pmtx_usable_size(r, b) >= n);
		int rc;
		size_t got = 0;
		for (;;) {
			pmtx_off o;
			if ((rc = pmtx_alloc(tx, n, &o)))
				break;
			got++;
			if (o == b)
				fail_msg("block %llu (%zu bytes) reused by "
				         "allocation %zu of the transaction "
				         "that frees it",
				         (unsigned long long)b, n, got);
		}
		assert_int_equal(rc, PMTX_E_NOMEM);
		assert_true(got > 0);
		assert_int_equal(pmtx_abort(tx), 0);
		assert_true(walk_reports(r, b));

		/* Once a freeing transaction has committed, it is free. */
		free1(r, b);
		assert_false(walk_reports(r, b));
		assert_int_equal(pmtx_usable_size(r, b), 0);
		assert_true(allocatable(r, n, b));
		assert_heap_consistent(r, &none, NULL);
	}
	done(r);
}

/* ---- errors ---- */

static void alloc_and_free_outside_a_transaction_fail_with_no_tx(
	void **state)
{
	pmtx_region *r = mk(16 * MiB);
	pmtx_off b = alloc1(r, 64);
	pmtx_off o = 777;
	assert_int_equal(pmtx_alloc(NULL, 64, &o), PMTX_E_NO_TX);
	assert_int_equal(o, 777);
	assert_int_equal(pmtx_free(NULL, b), PMTX_E_NO_TX);
	assert_int_equal(pmtx_zalloc(NULL, 64, &o), PMTX_E_NO_TX);
	/* A handle of a transaction that has ended is no transaction. */
	pmtx_tx *tx = begin(r);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_int_equal(pmtx_alloc(tx, 64, &o), PMTX_E_NO_TX);
	assert_int_equal(pmtx_free(tx, b), PMTX_E_NO_TX);
	tx = begin(r);
	assert_int_equal(pmtx_abort(tx), 0);
	assert_int_equal(pmtx_alloc(tx, 64, &o), PMTX_E_NO_TX);
	assert_int_equal(pmtx_free(tx, b), PMTX_E_NO_TX);
	/* Nothing happened to the heap. */
	assert_true(walk_reports(r, b));
	bset_add(&live, b, 64);
	assert_heap_holds(r, &live);
	done(r);
}

static void free_of_offset_that_is_not_a_block_fails_with_inval(
	void **state)
{
	pmtx_region *r = mk(16 * MiB);
	pmtx_off b = alloc1(r, 100), big = alloc1(r, 200 * 1024);
	pmtx_off root = pmtx_off_of(r, pmtx_root(r, NULL));
	const pmtx_off bad[] = {
		b + 8, b + 16, b - 8, b + 1, big + 16, big + PMTX_SB_SIZE,
		big - HDR + PMTX_SB_SIZE + HDR, root, root + 16, 12345, 8,
		PMTX_HDR_SIZE, heap_begin(r), heap_begin(r) + HDR + 1,
		heap_end(r) - 4096, heap_end(r), pmtx_region_size(r) + 16,
		UINT64_MAX - 15,
	};
	pmtx_tx *tx = begin(r);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (bad[i] != b && bad[i] != big) {
			int rc = pmtx_free(tx, bad[i]);
			if (rc != PMTX_E_INVAL)
				fail_msg("pmtx_free(%llu) returned %d",
				         (unsigned long long)bad[i], rc);
		}
	/* The transaction is still good and commits without freeing. */
	assert_int_equal(pmtx_commit(tx), 0);
	bset_add(&live, b, pmtx_usable_size(r, b));
	bset_add(&live, big, pmtx_usable_size(r, big));
	assert_heap_holds(r, &live);
	done(r);
}

static void free_of_block_never_allocated_fails_with_inval(void **state)
{
	pmtx_region *r = mk(16 * MiB);
	/* b's neighbour in the same superblock is a valid block start, but
	 * was never allocated. */
	pmtx_off b = alloc1(r, 100);
	size_t bs = pmtx_usable_size(r, b) + HDR;
	pmtx_tx *tx = begin(r);
	assert_int_equal(pmtx_free(tx, b + bs), PMTX_E_INVAL);
	assert_int_equal(pmtx_free(tx, b + 5 * bs), PMTX_E_INVAL);
	assert_int_equal(pmtx_commit(tx), 0);
	done(r);
}

static void double_free_in_one_transaction_fails_with_inval(void **state)
{
	pmtx_region *r = mk(16 * MiB);
	pmtx_off b = alloc1(r, 100), big = alloc1(r, 100 * 1024);
	pmtx_off keep = alloc1(r, 100);
	pmtx_tx *tx = begin(r);
	assert_int_equal(pmtx_free(tx, b), 0);
	assert_int_equal(pmtx_free(tx, b), PMTX_E_INVAL);
	assert_int_equal(pmtx_free(tx, big), 0);
	assert_int_equal(pmtx_free(tx, big), PMTX_E_INVAL);
	assert_int_equal(pmtx_free(tx, b), PMTX_E_INVAL);
	assert_int_equal(pmtx_commit(tx), 0);
	/* Freed once: the heap is consistent and only keep remains. */
	bset_add(&live, keep, pmtx_usable_size(r, keep));
	assert_heap_holds(r, &live);
	r = reopen_holding(r, &live);
	done(r);
}

/* The same past the length at which the transaction's frees are looked up
 * in an index instead of a scan (alog.c), with allocations between the
 * frees and an allocation taken back by a failed zalloc's path. */
static void double_free_in_a_long_transaction_fails_with_inval(void **state)
{
	enum { N = 300 };
	pmtx_region *r = mk(16 * MiB);
	pmtx_off b[N], fresh;
	for (int i = 0; i < N; i++)
		b[i] = alloc1(r, 48);
	pmtx_tx *tx = begin(r);
	for (int i = 0; i < N; i++) {
		assert_int_equal(pmtx_free(tx, b[i]), 0);
		if (i % 50 == 0)
			assert_int_equal(pmtx_alloc(tx, 48, &fresh), 0);
		if (i % 37 == 0) /* every block freed so far, once more */
			for (int j = 0; j <= i; j += 7)
				assert_int_equal(pmtx_free(tx, b[j]), PMTX_E_INVAL);
	}
	assert_int_equal(pmtx_free(tx, b[N - 1]), PMTX_E_INVAL);
	assert_int_equal(pmtx_free(tx, b[0]), PMTX_E_INVAL);
	assert_int_equal(pmtx_commit(tx), 0);
	pmtx_heap_stats st; /* freed once each: only the 6 fresh blocks */
	assert_int_equal(pmtx_heap_check(r, &st), 0);
	assert_int_equal(st.allocated_blocks - st.internal_blocks, N / 50);
	done(r);
}

static void free_of_block_freed_by_earlier_transaction_fails_with_inval(
	void **state)
{
	pmtx_region *r = mk(16 * MiB);
	pmtx_off keep = alloc1(r, 100); /* keeps b's superblock in use */
	pmtx_off b = alloc1(r, 100), big = alloc1(r, 100 * 1024);
	free1(r, b);
	free1(r, big);
	pmtx_tx *tx = begin(r);
	assert_int_equal(pmtx_free(tx, b), PMTX_E_INVAL);
	assert_int_equal(pmtx_free(tx, big), PMTX_E_INVAL);
	assert_int_equal(pmtx_commit(tx), 0);
	/* Also after a reopen. */
	r = reopen(r);
	tx = begin(r);
	assert_int_equal(pmtx_free(tx, b), PMTX_E_INVAL);
	assert_int_equal(pmtx_free(tx, big), PMTX_E_INVAL);
	assert_int_equal(pmtx_commit(tx), 0);
	bset_add(&live, keep, pmtx_usable_size(r, keep));
	assert_heap_holds(r, &live);
	done(r);
}

static void alloc_of_zero_bytes_fails_with_inval(void **state)
{
	pmtx_region *r = mk(16 * MiB);
	pmtx_tx *tx = begin(r);
	pmtx_off o = 555;
	assert_int_equal(pmtx_alloc(tx, 0, &o), PMTX_E_INVAL);
	assert_int_equal(o, 555);
	assert_int_equal(pmtx_zalloc(tx, 0, &o), PMTX_E_INVAL);
	assert_int_equal(pmtx_alloc(tx, 16, NULL), PMTX_E_INVAL);
	assert_int_equal(pmtx_commit(tx), 0);
	struct bset none = {0};
	assert_heap_holds(r, &none);
	done(r);
}

/* Allocate 16,000-byte blocks (16 KiB, four per superblock), one
 * transaction each, until the heap is full (PMTX_E_NOMEM); into live. */
static void fill_with_16k(pmtx_region *r, struct bset *set)
{
	int rc = 0;
	while (set->n <= 4 * r->hdr->nsb) {
		pmtx_tx *tx = begin(r);
		pmtx_off off;
		rc = pmtx_alloc(tx, 16000, &off);
		assert_int_equal(pmtx_commit(tx), 0);
		if (rc)
			break;
		bset_add(set, off, pmtx_usable_size(r, off));
	}
	assert_int_equal(rc, PMTX_E_NOMEM);
}

static void exhausting_small_region_gives_nomem_and_freeing_recovers(
	void **state)
{
	pmtx_region *r = mk(4 * MiB);
	uint64_t nsb = r->hdr->nsb;
	assert_true(nsb > 4);
	int rc = 0;
	fill_with_16k(r, &live);
	/* Every superblock was usable. */
	assert_int_equal(live.n, 4 * nsb);
	/* Other classes and large blocks have nothing left either. */
	pmtx_tx *tx = begin(r);
	pmtx_off o;
	assert_int_equal(pmtx_alloc(tx, 1, &o), PMTX_E_NOMEM);
	assert_int_equal(pmtx_alloc(tx, 1000, &o), PMTX_E_NOMEM);
	assert_int_equal(pmtx_alloc(tx, 100 * 1024, &o), PMTX_E_NOMEM);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_disjoint_in_heap(r, &live);
	assert_heap_holds(r, &live);

	/* Free everything (in transactions of 40 frees). */
	for (size_t i = 0; i < live.n; i += 40) {
		tx = begin(r);
		for (size_t k = i; k < live.n && k < i + 40; k++)
			assert_int_equal(pmtx_free(tx, live.v[k].off), 0);
		assert_int_equal(pmtx_commit(tx), 0);
	}
	live.n = 0;
	assert_heap_holds(r, &live);

	/* Allocation works again: a large block, small blocks of another
	 * class, and as many 16 KiB blocks as fit. */
	pmtx_off big = alloc1(r, 100 * 1024);
	bset_add(&live, big, pmtx_usable_size(r, big));
	tx = begin(r);
	for (int i = 0; i < 100; i++) {
		assert_int_equal(pmtx_alloc(tx, 100, &o), 0);
		bset_add(&live, o, pmtx_usable_size(r, o));
	}
	assert_int_equal(pmtx_commit(tx), 0);
	size_t again = 0;
	for (;;) {
		tx = begin(r);
		rc = pmtx_alloc(tx, 16000, &o);
		assert_int_equal(pmtx_commit(tx), 0);
		if (rc)
			break;
		bset_add(&live, o, pmtx_usable_size(r, o));
		again++;
	}
	assert_int_equal(rc, PMTX_E_NOMEM);
	/* All but the large run (2) and the small superblock (1). */
	assert_int_equal(again, 4 * (nsb - 3));
	assert_disjoint_in_heap(r, &live);
	assert_heap_consistent(r, &live, NULL);
	r = reopen_holding(r, &live);
	done(r);
}

/* Blocks freed by committed redo-async transactions whose truncation is
 * still queued are not lost to a full heap: the allocation that finds no
 * room truncates them and takes their space. */
static void full_heap_takes_back_blocks_of_queued_redo_async_frees(
	void **state)
{
	pmtx_region *r = mk(4 * MiB);
	pmtx_tx *tx;
	fill_with_16k(r, &live);
	/* Free them all, one redo-async transaction each: the truncations
	 * queue (at most one per descriptor in flight at a time). */
	for (size_t i = 0; i < live.n; i++) {
		assert_int_equal(pmtx_begin(r, PMTX_RT_REDO_ASYNC, &tx), 0);
		assert_int_equal(pmtx_free(tx, live.v[i].off), 0);
		assert_int_equal(pmtx_commit(tx), 0);
	}
	/* Every block can be allocated again at once, in one transaction
	 * (no begin in between to retire a queued one), under each runtime
	 * in turn. */
	pmtx_runtime rts[] = {PMTX_RT_REDO_ASYNC, PMTX_RT_UNDO, PMTX_RT_REDO};
	for (unsigned k = 0; k < 3; k++) {
		assert_int_equal(pmtx_begin(r, rts[k], &tx), 0);
		for (size_t i = 0; i < live.n; i++)
			assert_int_equal(pmtx_alloc(tx, 16000, &live.v[i].off), 0);
		assert_int_equal(pmtx_commit(tx), 0);
		assert_int_equal(pmtx_begin(r, PMTX_RT_REDO_ASYNC, &tx), 0);
		for (size_t i = 0; i < live.n; i++)
			assert_int_equal(pmtx_free(tx, live.v[i].off), 0);
		assert_int_equal(pmtx_commit(tx), 0);
	}
	live.n = 0;
	assert_heap_consistent(r, &live, NULL);
	done(r);
}

static void alloc_larger_than_the_heap_fails_with_nomem(void **state)
{
	pmtx_region *r = mk(16 * MiB);
	uint64_t heap = r->hdr->nsb * (uint64_t)PMTX_SB_SIZE;
	pmtx_tx *tx = begin(r);
	pmtx_off o = 0;
	const size_t too_big[] = {heap + 1, heap, heap - HDR + 1,
	                          pmtx_region_size(r), 1ull << 40, SIZE_MAX,
	                          SIZE_MAX - 8};
	for (size_t i = 0; i < ARRAY_SIZE(too_big); i++) {
		int rc = pmtx_alloc(tx, too_big[i], &o);
		if (rc != PMTX_E_NOMEM)
			fail_msg("pmtx_alloc(%zu) returned %d", too_big[i], rc);
	}
	/* The whole heap as one block does fit. */
	assert_int_equal(pmtx_alloc(tx, heap - HDR, &o), 0);
	assert_int_equal(pmtx_usable_size(r, o), heap - HDR);
	assert_int_equal(pmtx_commit(tx), 0);
	bset_add(&live, o, heap - HDR);
	assert_heap_holds(r, &live);
	free1(r, o);
	live.n = 0;
	assert_heap_consistent(r, &live, NULL);
	done(r);
}

/* ---- concurrency ---- */

#define NTHREADS 4

struct mt_arg {
	pmtx_region *r;
	unsigned id;
	int rounds;
	struct bset live;
	int err;       /* first failing status */
	int line;      /* where */
	unsigned long overwritten;
};

#define MT_CHECK(a, rc)                                                       \
	do {                                                                  \
		int rc_ = (rc);                                               \
		if (rc_ && !(a)->err) {                                       \
			(a)->err = rc_;                                       \
			(a)->line = __LINE__;                                 \
		}                                                             \
		if (rc_)                                                      \
			return NULL;                                          \
	} while (0)

static void *mt_worker(void *p)
{
	struct mt_arg *a = p;
	uint64_t seed = 1000 + a->id;
	for (int t = 0; t < a->rounds; t++) {
		pmtx_tx *tx;
		MT_CHECK(a, pmtx_begin(a->r, PMTX_RT_DEFAULT, &tx));
		struct blk added[16];
		size_t nadded = 0;
		int ops = 1 + (int)(tu_rand(&seed) % 8);
		for (int k = 0; k < ops; k++) {
			uint64_t x = tu_rand(&seed);
			if (a->live.n > 0 && (x % 100 < 40 || a->live.n > 300)) {
				size_t i = (size_t)(x >> 8) % a->live.n;
				/* The pattern must be intact before the free. */
				if (!filled(a->r, a->live.v[i].off,
				            MIN(a->live.v[i].usable, 256), a->id))
					a->overwritten++;
				MT_CHECK(a, pmtx_free(tx, a->live.v[i].off));
				bset_del(&a->live, i);
			} else {
				size_t n = x % 64 == 0 ? 40000 + (x >> 16) % 100000
				           : x % 8 == 0 ? 1 + (x >> 16) % 16000
				                        : 1 + (x >> 16) % 500;
				pmtx_off off;
				MT_CHECK(a, pmtx_alloc(tx, n, &off));
				size_t u = pmtx_usable_size(a->r, off);
				fill(a->r, off, MIN(u, 256), a->id);
				added[nadded++] = (struct blk){off, u};
			}
		}
		MT_CHECK(a, pmtx_commit(tx));
		for (size_t i = 0; i < nadded; i++)
			bset_add(&a->live, added[i].off, added[i].usable);
	}
	return NULL;
}

/* NTHREADS threads of fn in r, rounds each (ids from 1): none may fail. */
static void run_mt(pmtx_region *r, void *(*fn)(void *),
                   struct mt_arg args[NTHREADS], int rounds)
{
	memset(args, 0, NTHREADS * sizeof(*args));
	for (unsigned i = 0; i < NTHREADS; i++) {
		args[i].r = r;
		args[i].id = i + 1;
		args[i].rounds = rounds;
	}
	tu_run_threads(fn, args, sizeof(*args), NTHREADS);
	for (unsigned i = 0; i < NTHREADS; i++)
		if (args[i].err)
			fail_msg("thread %u: status %d (%s) at line %d", i,
			         args[i].err, pmtx_strerror(args[i].err),
			         args[i].line);
}

static void concurrent_alloc_free_leaves_heap_consistent_and_disjoint(
	void **state)
{
	pmtx_region *r = mk(128 * MiB);
	struct mt_arg args[NTHREADS];
	run_mt(r, mt_worker, args, tu_long_mode() ? 5000 : 600);
	struct bset all = {0};
	for (unsigned i = 0; i < NTHREADS; i++) {
		assert_int_equal(args[i].overwritten, 0);
		for (size_t k = 0; k < args[i].live.n; k++) {
			const struct blk *b = &args[i].live.v[k];
			if (!filled(r, b->off, MIN(b->usable, 256), args[i].id))
				fail_msg("thread %u's block %llu overwritten", i,
				         (unsigned long long)b->off);
			bset_add(&all, b->off, b->usable);
		}
	}
	assert_disjoint_in_heap(r, &all);
	assert_heap_holds(r, &all);
	r = reopen_holding(r, &all);
	for (unsigned i = 0; i < NTHREADS; i++)
		bset_free(&args[i].live);
	bset_free(&all);
	done(r);
}

/* Each round a thread fills whole superblocks with blocks of one class,
 * then frees them all, moving to another class next round: superblocks
 * keep going back to the shared pool and out again, under every class. */
#define CHURN_BLOCKS 120

static void *churn_worker(void *p)
{
	struct mt_arg *a = p;
	pmtx_off offs[CHURN_BLOCKS];
	for (int t = 0; t < a->rounds; t++) {
		size_t n = 200 + (size_t)((t * 7 + a->id * 3) % 16) * 120;
		pmtx_tx *tx;
		MT_CHECK(a, pmtx_begin(a->r, PMTX_RT_DEFAULT, &tx));
		for (int i = 0; i < CHURN_BLOCKS; i++) {
			MT_CHECK(a, pmtx_alloc(tx, n, &offs[i]));
			fill(a->r, offs[i], n, a->id * 1000 + (uint64_t)t);
		}
		MT_CHECK(a, pmtx_commit(tx));
		MT_CHECK(a, pmtx_begin(a->r, PMTX_RT_DEFAULT, &tx));
		for (int i = 0; i < CHURN_BLOCKS; i++) {
			if (!filled(a->r, offs[i], n, a->id * 1000 + (uint64_t)t))
				a->overwritten++;
			MT_CHECK(a, pmtx_free(tx, offs[i]));
		}
		MT_CHECK(a, pmtx_commit(tx));
	}
	return NULL;
}

static void concurrent_superblock_churn_never_hands_out_a_block_twice(
	void **state)
{
	pmtx_region *r = mk(64 * MiB);
	struct mt_arg args[NTHREADS];
	run_mt(r, churn_worker, args, tu_long_mode() ? 2000 : 150);
	for (unsigned i = 0; i < NTHREADS; i++) {
		if (args[i].overwritten)
			fail_msg("thread %u: %lu blocks overwritten by another "
			         "thread", i, args[i].overwritten);
	}
	struct bset none = {0};
	assert_heap_holds(r, &none);
	done(r);
}

static void usable_size_of_non_block_is_zero(void **state)
{
	pmtx_region *r = mk(16 * MiB);
	pmtx_off b = alloc1(r, 100), big = alloc1(r, 70000);
	assert_true(pmtx_usable_size(r, b) >= 100);
	assert_int_equal(pmtx_usable_size(r, big), 2 * PMTX_SB_SIZE - HDR);
	assert_int_equal(pmtx_usable_size(r, 0), 0);
	assert_int_equal(pmtx_usable_size(r, 12345), 0);
	assert_int_equal(pmtx_usable_size(r, b + 8), 0);
	assert_int_equal(pmtx_usable_size(r, big + PMTX_SB_SIZE), 0);
	assert_int_equal(pmtx_usable_size(r, heap_end(r)), 0);
	assert_int_equal(pmtx_usable_size(r, UINT64_MAX), 0);
	/* pmtx's own log chunks are not the user's blocks: an offset read
	 * from a region that names one must not pass as a block. */
	uint64_t ioff;
	struct pmtx_alog_entry ie;
	assert_int_equal(heap_reserve_internal(r->heap, 100000, &ioff, &ie), 0);
	assert_int_equal(pmtx_usable_size(r, ioff + HDR), 0);
	assert_int_equal(pmtx_usable_size(r, ioff), 0);
	heap_unreserve(r->heap, &ie);
	done(r);
}

#define T(f) cmocka_unit_test_teardown(f, cleanup)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(alloc_and_free_issue_no_persist_barriers),
		T(zalloc_returns_zeroed_memory_even_over_old_contents),
		T(blocks_are_aligned_disjoint_in_heap_and_large_enough),
		T(allocations_in_every_size_class_get_exactly_that_class),
		T(committed_blocks_and_contents_survive_close_and_reopen),
		T(heap_check_passes_after_random_alloc_free_mix_and_reopen),
		T(allocation_of_aborted_transaction_is_returned_to_the_heap),
		T(heap_check_passes_after_aborted_allocation_in_fresh_superblock),
		T(free_in_aborted_transaction_is_cancelled_also_after_reopen),
		T(freed_block_is_not_reused_before_the_freeing_tx_commits),
		T(alloc_and_free_outside_a_transaction_fail_with_no_tx),
		T(free_of_offset_that_is_not_a_block_fails_with_inval),
		T(free_of_block_never_allocated_fails_with_inval),
		T(double_free_in_one_transaction_fails_with_inval),
		T(double_free_in_a_long_transaction_fails_with_inval),
		T(free_of_block_freed_by_earlier_transaction_fails_with_inval),
		T(alloc_of_zero_bytes_fails_with_inval),
		T(exhausting_small_region_gives_nomem_and_freeing_recovers),
		T(full_heap_takes_back_blocks_of_queued_redo_async_frees),
		T(alloc_larger_than_the_heap_fails_with_nomem),
		T(concurrent_alloc_free_leaves_heap_consistent_and_disjoint),
		T(concurrent_superblock_churn_never_hands_out_a_block_twice),
		T(usable_size_of_non_block_is_zero),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
