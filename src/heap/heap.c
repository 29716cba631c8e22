/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * heap.c - a Hoard-like persistent allocator with lazy persistence
 * (seed 000 section 5).
 *
 * Design
 * ------
 * The heap is nsb superblocks of 64 KiB. Each has an out-of-band
 * persistent metadata entry (struct pmtx_sb_meta: kind, size class, run,
 * allocation bitmap), and an in-DRAM twin (struct sb_rt plus a DRAM free
 * bitmap) that is rebuilt from the persistent one at every open.
 *
 *   small  a superblock dedicated to one size class (32 B .. 32 KiB blocks,
 *          the 16-byte object header included), one bitmap bit per block;
 *   large  a run of whole superblocks; its head's info records the run.
 *
 * Allocation and free touch DRAM only. A transaction's allocation log
 * (tx/alog.c) records each request; after the transaction's COMMITTED
 * point the runtime calls heap_apply() for every entry, then persists them
 * all with one barrier. That is the "lazy persist" of the seed: alloc and
 * free issue zero barriers.
 *
 * Invariants (H1-H3 are in layout.h, on struct pmtx_sb_meta)
 *  H4. A block is free in DRAM only if its persistent bit is clear and no
 *      running transaction has reserved it. Reserved blocks are taken out
 *      of DRAM at reserve time; freed blocks come back only in
 *      heap_release(), after the FREE has been applied and persisted. So no
 *      block can be handed out twice, before or after a crash.
 *  H5. A superblock goes back to the shared pool (and may change class or
 *      become part of a large run) only when all its blocks are free in
 *      DRAM, hence (H4) all its persistent bits are clear.
 *  H6. Lock order: a local heap's lock, then the pool lock. No thread
 *      holds two local heap locks. The owner of a small superblock changes
 *      only under both its old owner's lock and the pool lock.
 *  H7. heap_apply() is idempotent, so recovery can replay a committed
 *      allocation log any number of times.
 *  H8. Growth. When the pool has no run long enough (and, for a small
 *      block, no other local heap has a superblock of the class with a
 *      free block), the region grows (region_grow, G1) under the pool
 *      lock, and the new superblocks join the pool. nsb only increases;
 *      the heap reads the count from the region (r->nsb, set by
 *      region_grow), and the DRAM arrays are reserved for max_nsb at open (untouched pages
 *      cost nothing), so they never move and lock-free readers of rt[]
 *      stay valid. Open and rebuild read only the nsb superblocks in use.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../common/mutant.h"
#include "heap.h"

#define NLOCAL 8
#define OWNER_NONE 0xffffu
#define MAX_SMALL 32768u
#define BITWORDS (PMTX_SB_BITS / 64)

enum rt_state { RT_POOL = 0, RT_SMALL, RT_LARGE, RT_CONT };

struct sb_rt {
	uint8_t state;
	uint8_t cls;
	uint8_t internal; /* large block used for pmtx's logs */
	uint8_t pad;
	_Atomic uint16_t owner;
	uint16_t hint;    /* first bitmap word that may have a free bit */
	uint32_t nfree;
	uint32_t run;
	int32_t prev, next; /* owner's list of superblocks of this class */
};

struct local_heap {
	pthread_mutex_t lock;
	int32_t head[PMTX_HEAP_MAX_CLASSES]; /* superblocks with free blocks */
} __attribute__((aligned(64)));

struct heap {
	pmtx_region *r;
	struct pmtx_sb_meta *meta;
	char *sb0;
	uint64_t max_nsb;
	uint64_t heap_off;
	struct sb_rt *rt;
	uint64_t *freebits; /* DRAM, BITWORDS per superblock, 1 = free */
	pthread_mutex_t pool_lock;
	uint64_t *pool;     /* 1 bit per superblock, 1 = in the pool */
	uint64_t pool_hint;
	struct local_heap local[NLOCAL];
};

/* ---- size classes ---- */

static uint32_t class_size[PMTX_HEAP_MAX_CLASSES];
static unsigned nclasses;
static uint8_t class_of16[MAX_SMALL / 16 + 1]; /* by ceil(bytes/16) */
static pthread_once_t classes_once = PTHREAD_ONCE_INIT;

static void classes_init(void)
{
	for (uint32_t s = 32; s <= 128; s += 16)
		class_size[nclasses++] = s;
	for (uint32_t base = 128; base < MAX_SMALL; base *= 2)
		for (uint32_t q = 1; q <= 4; q++)
			class_size[nclasses++] = base + q * base / 4;
	unsigned c = 0;
	for (uint32_t i = 0; i <= MAX_SMALL / 16; i++) {
		while (class_size[c] < i * 16)
			c++;
		class_of16[i] = (uint8_t)c;
	}
}

static inline uint32_t blocks_per_sb(unsigned cls)
{
	return PMTX_SB_SIZE / class_size[cls];
}

/* ---- small helpers ---- */

static _Atomic unsigned next_local;
static _Thread_local unsigned tls_local = ~0u;

static unsigned my_local(void)
{
	if (unlikely(tls_local == ~0u))
		tls_local = atomic_fetch_add(&next_local, 1) % NLOCAL;
	return tls_local;
}

static inline uint64_t sb_off(const struct heap *h, uint64_t s)
{
	return h->heap_off + s * PMTX_SB_SIZE;
}

static inline uint64_t *dram_bits(struct heap *h, uint64_t s)
{
	return h->freebits + s * BITWORDS;
}

static void list_push(struct heap *h, struct local_heap *lh, int32_t s)
{
	struct sb_rt *x = &h->rt[s];
	x->prev = -1;
	x->next = lh->head[x->cls];
	if (x->next >= 0)
		h->rt[x->next].prev = s;
	lh->head[x->cls] = s;
}

static void list_unlink(struct heap *h, struct local_heap *lh, int32_t s)
{
	struct sb_rt *x = &h->rt[s];
	if (x->prev >= 0)
		h->rt[x->prev].next = x->next;
	else
		lh->head[x->cls] = x->next;
	if (x->next >= 0)
		h->rt[x->next].prev = x->prev;
	x->prev = x->next = -1;
}

static void set_dram_free(struct heap *h, uint64_t s, unsigned cls)
{
	uint64_t *b = dram_bits(h, s);
	uint32_t n = blocks_per_sb(cls);
	memset(b, 0, BITWORDS * 8);
	for (uint32_t w = 0; w < n / 64; w++)
		b[w] = ~0ull;
	if (n % 64)
		b[n / 64] = (1ull << (n % 64)) - 1;
}

/* ---- the shared pool of free superblocks (pool_lock held) ---- */

static int pool_test(const struct heap *h, uint64_t s)
{
	return (h->pool[s / 64] >> (s % 64)) & 1;
}

static void pool_put(struct heap *h, uint64_t s, uint32_t run)
{
	for (uint64_t i = s; i < s + run; i++) {
		h->pool[i / 64] |= 1ull << (i % 64);
		h->rt[i].state = RT_POOL;
		h->rt[i].internal = 0;
		atomic_store(&h->rt[i].owner, OWNER_NONE);
	}
}

/* First fit for run superblocks; single ones start at the rotating hint. */
static int64_t pool_take(struct heap *h, uint32_t run)
{
	uint64_t start = run == 1 ? h->pool_hint : 0;
	for (uint64_t pass = 0; pass < 2; pass++) {
		uint64_t len = 0;
		for (uint64_t s = start; s < h->r->nsb; s++) {
			if (len == 0 && (s % 64) == 0 && h->pool[s / 64] == 0) {
				s += 63;
				continue;
			}
			len = pool_test(h, s) ? len + 1 : 0;
			if (len == run) {
				uint64_t first = s + 1 - run;
				for (uint64_t i = first; i <= s; i++)
					h->pool[i / 64] &= ~(1ull << (i % 64));
				if (run == 1)
					h->pool_hint = first;
				return (int64_t)first;
			}
		}
		if (start == 0)
			break;
		start = 0;
	}
	return -1;
}

/* Free superblocks at the end of the heap (they can start a run that
 * continues into new space). */
static uint64_t pool_tail(const struct heap *h)
{
	uint64_t n = 0;
	while (n < h->r->nsb && pool_test(h, h->r->nsb - 1 - n))
		n++;
	return n;
}

/* H8: grow so that a run of run superblocks fits, then take it. */
static int64_t pool_take_growing(struct heap *h, uint32_t run, int *rc)
{
	int64_t s = pool_take(h, run);
	if (s >= 0)
		return s;
	uint64_t old = h->r->nsb, got;
	*rc = region_grow(h->r, old + run - MIN(pool_tail(h), run), &got);
	if (*rc)
		return -1;
	pool_put(h, old, (uint32_t)(got - old));
	return pool_take(h, run);
}

/* ---- small blocks ---- */

static int64_t take_from_pool(struct heap *h, unsigned cls, unsigned me,
                              int grow, int *rc)
{
	pthread_mutex_lock(&h->pool_lock);
	int64_t s = grow ? pool_take_growing(h, 1, rc) : pool_take(h, 1);
	pthread_mutex_unlock(&h->pool_lock);
	if (s < 0)
		return -1;
	struct sb_rt *x = &h->rt[s];
	x->state = RT_SMALL;
	x->cls = (uint8_t)cls;
	x->nfree = blocks_per_sb(cls);
	x->hint = 0;
	x->run = 1;
	atomic_store(&x->owner, (uint16_t)me);
	set_dram_free(h, (uint64_t)s, cls);
	return s;
}

/* Move a superblock of class cls with free blocks from another local heap
 * to ours (H6: one local lock at a time). */
static int64_t steal(struct heap *h, unsigned cls, unsigned me)
{
	for (unsigned k = 1; k < NLOCAL; k++) {
		unsigned o = (me + k) % NLOCAL;
		struct local_heap *lh = &h->local[o];
		pthread_mutex_lock(&lh->lock);
		int32_t s = lh->head[cls];
		if (s >= 0) {
			list_unlink(h, lh, s);
			atomic_store(&h->rt[s].owner, (uint16_t)me);
		}
		pthread_mutex_unlock(&lh->lock);
		if (s >= 0)
			return s;
	}
	return -1;
}

/* DRAM consistency of one small superblock: the free count matches the
 * free bits (for assert() in debug builds; caller holds the owner lock). */
__attribute__((unused)) static int sb_dram_ok(struct heap *h, int32_t s)
{
	const uint64_t *b = dram_bits(h, (uint64_t)s);
	uint32_t n = 0;
	for (unsigned w = 0; w < BITWORDS; w++)
		n += (uint32_t)__builtin_popcountll(b[w]);
	return n == h->rt[s].nfree && n <= blocks_per_sb(h->rt[s].cls);
}

static uint32_t take_block(struct heap *h, int32_t s)
{
	struct sb_rt *x = &h->rt[s];
	uint64_t *b = dram_bits(h, (uint64_t)s);
	unsigned w = x->hint;
	while (b[w] == 0)
		w++;
	unsigned bit = (unsigned)__builtin_ctzll(b[w]);
	b[w] &= ~(1ull << bit);
	x->hint = (uint16_t)w;
	x->nfree--;
	assert(sb_dram_ok(h, s));
	return w * 64 + bit;
}

static int reserve_small(struct heap *h, unsigned cls, uint64_t *boff)
{
	unsigned me = my_local();
	struct local_heap *lh = &h->local[me];
	pthread_mutex_lock(&lh->lock);
	int32_t s = lh->head[cls];
	if (s < 0) {
		pthread_mutex_unlock(&lh->lock);
		int rc = PMTX_E_NOMEM;
		int64_t ns = take_from_pool(h, cls, me, 0, &rc);
		if (ns < 0)
			ns = steal(h, cls, me);
		if (ns < 0)
			ns = take_from_pool(h, cls, me, 1, &rc);
		if (ns < 0)
			return rc;
		pthread_mutex_lock(&lh->lock);
		s = (int32_t)ns;
		list_push(h, lh, s);
	}
	uint32_t idx = take_block(h, s);
	if (h->rt[s].nfree == 0)
		list_unlink(h, lh, s);
	pthread_mutex_unlock(&lh->lock);
	*boff = sb_off(h, (uint64_t)s) + (uint64_t)idx * class_size[cls];
	return 0;
}

/* Lock the local heap that owns superblock s (its owner may change while
 * we wait for the lock, so re-check). Returns the locked heap. */
static struct local_heap *lock_owner(struct heap *h, uint64_t s)
{
	for (;;) {
		uint16_t o = atomic_load(&h->rt[s].owner);
		if (o == OWNER_NONE)
			return NULL;
		struct local_heap *lh = &h->local[o];
		pthread_mutex_lock(&lh->lock);
		if (atomic_load(&h->rt[s].owner) == o)
			return lh;
		pthread_mutex_unlock(&lh->lock);
	}
}

static void give_back_small(struct heap *h, uint64_t s, uint32_t idx)
{
	struct local_heap *lh = lock_owner(h, s);
	struct sb_rt *x = &h->rt[s];
	uint64_t *b = dram_bits(h, s);
	b[idx / 64] |= 1ull << (idx % 64);
	if (idx / 64 < x->hint)
		x->hint = (uint16_t)(idx / 64);
	if (x->nfree++ == 0)
		list_push(h, lh, (int32_t)s);
	assert(sb_dram_ok(h, (int32_t)s));
	/* H5: an empty superblock returns to the pool unless it is the
	 * only one of its class this heap has. */
	if (x->nfree == blocks_per_sb(x->cls) &&
	    (lh->head[x->cls] != (int32_t)s || x->next >= 0)) {
		list_unlink(h, lh, (int32_t)s);
		pthread_mutex_lock(&h->pool_lock);
		pool_put(h, s, 1);
		pthread_mutex_unlock(&h->pool_lock);
	}
	pthread_mutex_unlock(&lh->lock);
}

/* ---- public operations ---- */

static uint32_t large_run(size_t need)
{
	return (uint32_t)((need + PMTX_SB_SIZE - 1) / PMTX_SB_SIZE);
}

static int reserve_large(struct heap *h, uint32_t run, int internal,
                         uint64_t *boff)
{
	int rc = PMTX_E_NOMEM;
	pthread_mutex_lock(&h->pool_lock);
	int64_t s = pool_take_growing(h, run, &rc);
	if (s >= 0) {
		for (uint64_t i = (uint64_t)s; i < (uint64_t)s + run; i++) {
			h->rt[i].state = RT_CONT;
			h->rt[i].run = (uint32_t)(i - (uint64_t)s); /* to head */
		}
		h->rt[s].state = RT_LARGE;
		h->rt[s].run = run;
		h->rt[s].internal = (uint8_t)internal;
	}
	pthread_mutex_unlock(&h->pool_lock);
	if (s < 0)
		return rc;
	*boff = sb_off(h, (uint64_t)s);
	return 0;
}

int heap_reserve(struct heap *h, size_t n, uint64_t *user_off,
                 struct pmtx_alog_entry *e)
{
	if (n > h->max_nsb * (uint64_t)PMTX_SB_SIZE) {
		pmtx__set_errmsg("%zu bytes is more than the region can hold",
		                 n);
		return PMTX_E_NOMEM;
	}
	size_t need = n + sizeof(struct pmtx_objhdr);
	uint64_t boff;
	int rc;
	if (need <= MAX_SMALL) {
		unsigned cls = class_of16[(need + 15) / 16];
		rc = reserve_small(h, cls, &boff);
		e->info = PMTX_AE_INFO(PMTX_AE_ALLOC, cls, 0);
	} else {
		uint32_t run = large_run(need);
		rc = reserve_large(h, run, 0, &boff);
		e->info = PMTX_AE_INFO(PMTX_AE_ALLOC, 0, run);
	}
	if (rc)
		return rc;
	e->off = boff;
	*user_off = boff + sizeof(struct pmtx_objhdr);
	return 0;
}

int heap_reserve_internal(struct heap *h, size_t n, uint64_t *off,
                          struct pmtx_alog_entry *e)
{
	uint32_t run = large_run(n);
	int rc = reserve_large(h, run, 1, off);
	e->off = *off;
	e->info = PMTX_AE_INFO(PMTX_AE_ALLOC, 0, run);
	return rc;
}

static void release_block(struct heap *h, uint64_t boff, uint64_t info)
{
	uint64_t s = (boff - h->heap_off) / PMTX_SB_SIZE;
	if (PMTX_AE_RUN(info)) {
		pthread_mutex_lock(&h->pool_lock);
		pool_put(h, s, PMTX_AE_RUN(info));
		pthread_mutex_unlock(&h->pool_lock);
		return;
	}
	uint64_t idx = (boff - sb_off(h, s)) / class_size[h->rt[s].cls];
	give_back_small(h, s, (uint32_t)idx);
}

void heap_unreserve(struct heap *h, const struct pmtx_alog_entry *e)
{
	release_block(h, e->off, e->info);
}

void heap_release(struct heap *h, const struct pmtx_alog_entry *e)
{
	release_block(h, e->off, e->info);
}

/* The block starting at boff, if it is one, as (superblock, index). */
static int locate(struct heap *h, uint64_t boff, uint64_t *sp, uint32_t *ip)
{
	if (boff < h->heap_off || boff >= sb_off(h, h->r->nsb))
		return PMTX_E_INVAL;
	uint64_t s = (boff - h->heap_off) / PMTX_SB_SIZE;
	struct sb_rt *x = &h->rt[s];
	uint64_t in = boff - sb_off(h, s);
	if (x->state == RT_LARGE && in == 0) {
		*sp = s, *ip = 0;
		return 0;
	}
	if (x->state != RT_SMALL || in % class_size[x->cls] != 0 ||
	    in / class_size[x->cls] >= blocks_per_sb(x->cls))
		return PMTX_E_INVAL;
	*sp = s, *ip = (uint32_t)(in / class_size[x->cls]);
	return 0;
}

int heap_free_entry(struct heap *h, uint64_t user_off,
                    struct pmtx_alog_entry *e)
{
	uint64_t s;
	uint32_t idx;
	if (user_off < sizeof(struct pmtx_objhdr))
		return PMTX_E_INVAL;
	uint64_t boff = user_off - sizeof(struct pmtx_objhdr);
	if (locate(h, boff, &s, &idx))
		return PMTX_E_INVAL;
	struct sb_rt *x = &h->rt[s];
	if (x->state == RT_LARGE) {
		if (x->internal)
			return PMTX_E_INVAL;
		e->info = PMTX_AE_INFO(PMTX_AE_FREE, 0, x->run);
	} else {
		/* A block free in DRAM was never allocated (or is freed). */
		if ((dram_bits(h, s)[idx / 64] >> (idx % 64)) & 1)
			return PMTX_E_INVAL;
		e->info = PMTX_AE_INFO(PMTX_AE_FREE, x->cls, 0);
	}
	e->off = boff;
	return 0;
}

int heap_object_span(struct heap *h, uint64_t off, uint64_t *base,
                     uint64_t *end)
{
	if (off < h->heap_off || off >= sb_off(h, h->r->nsb))
		return PMTX_E_RANGE;
	uint64_t s = (off - h->heap_off) / PMTX_SB_SIZE;
	const struct sb_rt *x = &h->rt[s];
	if (x->state == RT_SMALL) {
		uint64_t in = off - sb_off(h, s), bs = class_size[x->cls];
		*base = sb_off(h, s) + in / bs * bs;
		*end = *base + bs;
		return 0;
	}
	if (x->state == RT_CONT)
		s -= x->run;
	if (h->rt[s].state != RT_LARGE)
		return PMTX_E_RANGE;
	*base = sb_off(h, s);
	*end = sb_off(h, s + h->rt[s].run);
	return 0;
}

size_t heap_usable_size(struct heap *h, uint64_t user_off)
{
	uint64_t s;
	uint32_t idx;
	if (user_off < sizeof(struct pmtx_objhdr) ||
	    locate(h, user_off - sizeof(struct pmtx_objhdr), &s, &idx))
		return 0;
	struct sb_rt *x = &h->rt[s];
	if (x->state == RT_LARGE && x->internal)
		return 0; /* pmtx's own log chunk: not a block of the user's */
	if (x->state == RT_LARGE)
		return (size_t)x->run * PMTX_SB_SIZE - sizeof(struct pmtx_objhdr);
	if ((dram_bits(h, s)[idx / 64] >> (idx % 64)) & 1)
		return 0;
	return class_size[x->cls] - sizeof(struct pmtx_objhdr);
}

/* ---- persistent side (H7) ---- */

/* Validate an entry against the geometry only (it may come from a region
 * being recovered, before any DRAM state exists). */
static int entry_target(const pmtx_region *r, const struct pmtx_alog_entry *e,
                        uint64_t *sp, uint32_t *ip)
{
	const struct pmtx_hdr *hd = r->hdr;
	unsigned op = PMTX_AE_OP(e->info), cls = PMTX_AE_CLASS(e->info);
	uint32_t run = PMTX_AE_RUN(e->info);
	if ((op != PMTX_AE_ALLOC && op != PMTX_AE_FREE) ||
	    e->off < hd->heap_off)
		return PMTX_E_CORRUPT;
	uint64_t nsb = atomic_load_explicit(&r->nsb, memory_order_acquire);
	uint64_t s = (e->off - hd->heap_off) / PMTX_SB_SIZE;
	uint64_t in = (e->off - hd->heap_off) % PMTX_SB_SIZE;
	if (s >= nsb)
		return PMTX_E_CORRUPT;
	if (run) {
		if (in != 0 || cls != 0 || run > nsb - s)
			return PMTX_E_CORRUPT;
		*sp = s, *ip = 0;
		return 0;
	}
	if (cls >= nclasses || in % class_size[cls] != 0 ||
	    in / class_size[cls] >= blocks_per_sb(cls))
		return PMTX_E_CORRUPT;
	*sp = s, *ip = (uint32_t)(in / class_size[cls]);
	return 0;
}

/* The stores of heap_apply(e), without flushes: the words written are
 * *info and *bitmap (NULL for a large run). */
static int apply_stores(pmtx_region *r, const struct pmtx_alog_entry *e,
                        uint64_t **info_w, uint64_t **bitmap_w)
{
	uint64_t s;
	uint32_t idx;
	pthread_once(&classes_once, classes_init);
	int rc = entry_target(r, e, &s, &idx);
	if (rc)
		return rc;
	struct pmtx_sb_meta *m =
		(struct pmtx_sb_meta *)(r->base + r->hdr->meta_off) + s;
	unsigned op = PMTX_AE_OP(e->info);
	uint32_t run = PMTX_AE_RUN(e->info);
	uint64_t info;
	*info_w = &m->info;
	*bitmap_w = NULL;
	if (run) {
		info = op == PMTX_AE_ALLOC ? PMTX_SB_INFO(PMTX_SB_LARGE, 0, run)
		                           : PMTX_SB_INFO(PMTX_SB_FREE, 0, 0);
		__atomic_store_n(&m->info, info, __ATOMIC_RELAXED);
		TRACE_STORE(&r->persist, &m->info, 8, ALLOC);
		return 0;
	}
	info = PMTX_SB_INFO(PMTX_SB_SMALL, PMTX_AE_CLASS(e->info), 0);
	if (op == PMTX_AE_ALLOC &&
	    __atomic_load_n(&m->info, __ATOMIC_RELAXED) != info) {
		__atomic_store_n(&m->info, info, __ATOMIC_RELAXED);
		TRACE_STORE(&r->persist, &m->info, 8, ALLOC);
	}
	uint64_t *w = &m->bitmap[idx / 64], bit = 1ull << (idx % 64);
	if (op == PMTX_AE_ALLOC)
		__atomic_fetch_or(w, bit, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(w, ~bit, __ATOMIC_RELAXED);
	TRACE_STORE(&r->persist, w, 8, ALLOC);
	*bitmap_w = w;
	return 0;
}

int heap_apply(pmtx_region *r, const struct pmtx_alog_entry *e)
{
	uint64_t *info, *bitmap;
	int rc = apply_stores(r, e, &info, &bitmap);
	if (rc)
		return rc;
	if (!bitmap) {
		MUT_FLUSH(MUT_HEAP_LARGE_FLUSH, &r->persist, info, 8);
		return 0;
	}
	/* The info word is flushed by every ALLOC, even when it already
	 * holds the right value: another thread may have written it and not
	 * reached its barrier yet, and ours must not depend on theirs. */
	if (PMTX_AE_OP(e->info) == PMTX_AE_ALLOC)
		MUT_FLUSH(MUT_HEAP_INFO_FLUSH, &r->persist, info, 8);
	MUT_FLUSH(MUT_HEAP_BITMAP_FLUSH, &r->persist, bitmap, 8);
	return 0;
}

int heap_apply_unflushed(pmtx_region *r, const struct pmtx_alog_entry *e,
                         void *words[2])
{
	uint64_t *info, *bitmap;
	int rc = apply_stores(r, e, &info, &bitmap);
	words[0] = info;
	words[1] = bitmap;
	return rc;
}

void heap_flush_entry(pmtx_region *r, const struct pmtx_alog_entry *e)
{
	uint64_t s;
	uint32_t idx;
	if (entry_target(r, e, &s, &idx))
		return;
	struct pmtx_sb_meta *m =
		(struct pmtx_sb_meta *)(r->base + r->hdr->meta_off) + s;
	MUT_FLUSH(MUT_HEAP_REFLUSH_INFO, &r->persist, &m->info, 8);
	if (!PMTX_AE_RUN(e->info))
		MUT_FLUSH(MUT_HEAP_REFLUSH_BITMAP, &r->persist,
		          &m->bitmap[idx / 64], 8);
}

int heap_adopt_internal(pmtx_region *r, uint64_t off, uint64_t size,
                        struct pmtx_alog_entry *e)
{
	if (size == 0 || size % PMTX_SB_SIZE)
		return PMTX_E_CORRUPT;
	e->off = off;
	e->info = PMTX_AE_INFO(PMTX_AE_ALLOC, 0, size / PMTX_SB_SIZE);
	uint64_t s;
	uint32_t idx;
	pthread_once(&classes_once, classes_init);
	return entry_target(r, e, &s, &idx);
}

void heap_mark_internal(struct heap *h, uint64_t off)
{
	uint64_t s = (off - h->heap_off) / PMTX_SB_SIZE;
	h->rt[s].internal = 1;
}

/* ---- setup ---- */

/* Zeroed DRAM for an array of the maximum heap (H8). A large array is
 * reserved with mmap, so that its pages are committed only when touched;
 * a small one (every fixed region of a few GiB or less) comes from
 * calloc, which costs an open no system call. Either way it never moves.
 * The size decides, so release needs no flag. */
#define DRAM_MMAP_MIN (1u << 20)

static void *dram_reserve(size_t n)
{
	if (n < DRAM_MMAP_MIN)
		return calloc(1, n ? n : 1);
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void dram_release(void *p, size_t n)
{
	if (p && n < DRAM_MMAP_MIN)
		free(p);
	else if (p)
		munmap(p, n);
}

int heap_create(pmtx_region *r)
{
	pthread_once(&classes_once, classes_init);
	struct heap *h = calloc(1, sizeof(*h));
	if (!h)
		return ENOMEM;
	h->r = r;
	h->max_nsb = r->hdr->max_nsb;
	h->heap_off = r->hdr->heap_off;
	h->meta = (struct pmtx_sb_meta *)(r->base + r->hdr->meta_off);
	h->sb0 = r->base + h->heap_off;
	h->rt = dram_reserve(h->max_nsb * sizeof(*h->rt));
	h->freebits = dram_reserve(h->max_nsb * BITWORDS * 8);
	h->pool = dram_reserve((h->max_nsb + 63) / 64 * 8);
	if (!h->rt || !h->freebits || !h->pool) {
		heap_destroy(h);
		return ENOMEM;
	}
	pthread_mutex_init(&h->pool_lock, NULL);
	for (unsigned i = 0; i < NLOCAL; i++) {
		pthread_mutex_init(&h->local[i].lock, NULL);
		for (unsigned c = 0; c < PMTX_HEAP_MAX_CLASSES; c++)
			h->local[i].head[c] = -1;
	}
	r->heap = h;
	return 0;
}

void heap_format(pmtx_region *r)
{
	struct pmtx_sb_meta *m = (struct pmtx_sb_meta *)(r->base +
	                                                 r->hdr->meta_off);
	memset(m, 0, r->nsb * sizeof(*m));
}

void heap_destroy(struct heap *h)
{
	if (!h)
		return;
	dram_release(h->rt, h->max_nsb * sizeof(*h->rt));
	dram_release(h->freebits, h->max_nsb * BITWORDS * 8);
	dram_release(h->pool, (h->max_nsb + 63) / 64 * 8);
	free(h);
}

static int corrupt(uint64_t s, const char *what)
{
	pmtx__set_errmsg("heap superblock %llu: %s", (unsigned long long)s,
	                 what);
	return PMTX_E_CORRUPT;
}

static int bitmap_empty(const struct pmtx_sb_meta *m)
{
	for (unsigned w = 0; w < BITWORDS; w++)
		if (m->bitmap[w])
			return 0;
	return 1;
}

/* One small superblock with allocated blocks: DRAM free bits are the
 * complement of the persistent ones. */
static int rebuild_small(struct heap *h, uint64_t s, unsigned cls)
{
	const struct pmtx_sb_meta *m = &h->meta[s];
	struct sb_rt *x = &h->rt[s];
	uint32_t n = blocks_per_sb(cls), used = 0;
	set_dram_free(h, s, cls);
	uint64_t *b = dram_bits(h, s);
	for (unsigned w = 0; w < BITWORDS; w++) {
		if (m->bitmap[w] & ~b[w])
			return corrupt(s, "bit set past the last block");
		b[w] &= ~m->bitmap[w];
		used += (uint32_t)__builtin_popcountll(m->bitmap[w]);
	}
	x->state = RT_SMALL;
	x->cls = (uint8_t)cls;
	x->nfree = n - used;
	x->run = 1;
	unsigned o = (unsigned)(s % NLOCAL);
	atomic_store(&x->owner, (uint16_t)o);
	if (x->nfree)
		list_push(h, &h->local[o], (int32_t)s);
	return 0;
}

uint64_t heap_meta_used(const struct pmtx_sb_meta *m, uint64_t left)
{
	unsigned kind = PMTX_SB_KIND(m->info);
	uint64_t run = PMTX_SB_RUN(m->info);
	if (kind == PMTX_SB_FREE && !m->info && bitmap_empty(m))
		return 0;
	if (kind == PMTX_SB_LARGE && run && run <= left)
		return run;
	if (kind == PMTX_SB_SMALL)
		return bitmap_empty(m) ? 0 : 1;
	return left;
}

int heap_rebuild(struct heap *h)
{
	for (uint64_t s = 0; s < h->r->nsb;) {
		uint64_t info = h->meta[s].info;
		unsigned kind = PMTX_SB_KIND(info);
		if (kind == PMTX_SB_LARGE) {
			uint32_t run = PMTX_SB_RUN(info);
			if (run == 0 || run > h->r->nsb - s || PMTX_SB_CLASS(info))
				return corrupt(s, "bad large run");
			if (!bitmap_empty(&h->meta[s]))
				return corrupt(s, "large head with bits set");
			for (uint64_t i = s; i < s + run; i++) {
				h->rt[i].state = RT_CONT;
				h->rt[i].run = (uint32_t)(i - s);
			}
			h->rt[s].state = RT_LARGE;
			h->rt[s].run = run;
			s += run;
			continue;
		}
		if (kind == PMTX_SB_SMALL && PMTX_SB_CLASS(info) >= nclasses)
			return corrupt(s, "bad size class");
		if (kind > PMTX_SB_LARGE || (kind == PMTX_SB_FREE && info))
			return corrupt(s, "bad kind");
		if (kind == PMTX_SB_FREE && !bitmap_empty(&h->meta[s]))
			return corrupt(s, "free superblock with bits set");
		if (kind == PMTX_SB_SMALL && !bitmap_empty(&h->meta[s])) {
			int rc = rebuild_small(h, s, PMTX_SB_CLASS(info));
			if (rc)
				return rc;
		} else {
			pool_put(h, s, 1);
		}
		s++;
	}
	return 0;
}

/* ---- inspection ---- */

static void check_error(pmtx_heap_stats *st, uint64_t s, const char *what)
{
	if (st->errors++ == 0)
		snprintf(st->first_error, sizeof(st->first_error),
		         "superblock %llu: %s", (unsigned long long)s, what);
}

/* A small superblock in use in DRAM. Its persistent class must match when
 * it has allocated blocks; an empty one may still carry an older class or
 * FREE on media (H2), so then the DRAM class is the one to check against. */
static void check_small(struct heap *h, uint64_t s, pmtx_heap_stats *st)
{
	const struct pmtx_sb_meta *m = &h->meta[s];
	struct sb_rt *x = &h->rt[s];
	unsigned cls = bitmap_empty(m) ? x->cls : PMTX_SB_CLASS(m->info);
	uint64_t *b = dram_bits(h, s);
	uint32_t n = blocks_per_sb(cls), used = 0;
	if (x->state != RT_SMALL || x->cls != cls)
		return check_error(st, s, "DRAM state disagrees with metadata");
	for (unsigned w = 0; w < BITWORDS; w++) {
		uint64_t valid = w < n / 64 ? ~0ull
		                 : w == n / 64 ? (1ull << (n % 64)) - 1 : 0;
		if (m->bitmap[w] & ~valid)
			check_error(st, s, "bit set past the last block");
		if (m->bitmap[w] & b[w])
			check_error(st, s, "allocated block is on a free list");
		if ((~m->bitmap[w] & ~b[w]) & valid)
			check_error(st, s, "free block missing from free lists");
		used += (uint32_t)__builtin_popcountll(m->bitmap[w] & valid);
	}
	if (x->nfree != n - used)
		check_error(st, s, "free count is wrong");
	st->cls[cls].allocated += used;
	st->cls[cls].free += n - used;
	st->allocated_blocks += used;
	st->allocated_bytes += (uint64_t)used * class_size[cls];
	st->free_bytes += (uint64_t)(n - used) * class_size[cls];
}

int heap_check(pmtx_region *r, pmtx_heap_stats *st)
{
	struct heap *h = r->heap;
	memset(st, 0, sizeof(*st));
	st->superblocks = h->r->nsb;
	st->nclasses = nclasses;
	for (unsigned c = 0; c < nclasses; c++)
		st->cls[c].block_size = class_size[c];
	pthread_mutex_lock(&h->pool_lock);
	for (uint64_t s = 0; s < h->r->nsb;) {
		const struct pmtx_sb_meta *m = &h->meta[s];
		unsigned kind = PMTX_SB_KIND(m->info);
		if (kind == PMTX_SB_LARGE) {
			uint32_t run = PMTX_SB_RUN(m->info);
			if (h->rt[s].state != RT_LARGE || h->rt[s].run != run) {
				check_error(st, s, "large block not in use in DRAM");
				run = 1;
			}
			st->allocated_blocks++;
			st->internal_blocks += h->rt[s].internal;
			st->allocated_bytes += (uint64_t)run * PMTX_SB_SIZE;
			s += run;
			continue;
		}
		if (kind == PMTX_SB_SMALL && !bitmap_empty(m))
			check_small(h, s, st);
		else if (h->rt[s].state == RT_POOL)
			st->free_superblocks++;
		else if (h->rt[s].state == RT_SMALL)
			check_small(h, s, st);
		else
			check_error(st, s, "superblock in use in DRAM only");
		s++;
	}
	pthread_mutex_unlock(&h->pool_lock);
	if (st->errors)
		pmtx__set_errmsg("%s", st->first_error);
	return st->errors ? PMTX_E_CORRUPT : 0;
}

int pmtx_heap_walk(pmtx_region *r,
                   int (*fn)(pmtx_off off, size_t usable, void *arg),
                   void *arg)
{
	struct heap *h = r->heap;
	const size_t hs = sizeof(struct pmtx_objhdr);
	for (uint64_t s = 0; s < h->r->nsb;) {
		const struct pmtx_sb_meta *m = &h->meta[s];
		unsigned kind = PMTX_SB_KIND(m->info);
		if (kind == PMTX_SB_LARGE) {
			uint32_t run = PMTX_SB_RUN(m->info);
			int rc = h->rt[s].internal
			                 ? 0
			                 : fn(sb_off(h, s) + hs,
			                      (size_t)run * PMTX_SB_SIZE - hs, arg);
			if (rc)
				return rc;
			s += run;
			continue;
		}
		unsigned cls = PMTX_SB_CLASS(m->info);
		for (unsigned w = 0; kind == PMTX_SB_SMALL && w < BITWORDS; w++)
			for (uint64_t v = m->bitmap[w]; v; v &= v - 1) {
				uint32_t i = w * 64 + (unsigned)__builtin_ctzll(v);
				int rc = fn(sb_off(h, s) +
				                    (uint64_t)i * class_size[cls] + hs,
				            class_size[cls] - hs, arg);
				if (rc)
					return rc;
			}
		s++;
	}
	return 0;
}
