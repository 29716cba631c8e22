/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * alog.c - a transaction's persistent allocation log (seed 000 section 5).
 *
 * pmtx_alloc and pmtx_free reserve in DRAM (heap.c) and append a 16-byte
 * entry here: to a DRAM vector, and to the descriptor's alloc-log chunks,
 * with no flush and no barrier. The runtime's commit flushes the entries
 * before its first barrier, and records their number in its commit mark.
 *
 * Invariants
 *  A1. Entries of one transaction are contiguous from the first slot of the
 *      descriptor's first alloc-log chunk, following chunk links; the
 *      commit mark holds their count, so no stale entry is ever read.
 *  A2. Entries are durable before the commit mark (the commit's first
 *      barrier), and applied to the heap metadata only after it.
 *  A3. Commit with allocations ends with two more barriers: (iii) after
 *      every entry has been applied, (iv) after the descriptor is IDLE.
 *      Until (iv), recovery re-applies the log (heap_apply is idempotent);
 *      after (iv), it never does, so a block freed by a later transaction
 *      cannot be resurrected. Freed blocks return to DRAM only after (iv).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tx.h"

#define ENTRY_SIZE sizeof(struct pmtx_alog_entry)

static inline struct pmtx_chunk *chunk_at(const pmtx_region *r, uint64_t off)
{
	return (struct pmtx_chunk *)region_at(r, off);
}

/* Forget the index of freed blocks (the log was emptied). */
static void forget_freed(struct alog *a)
{
	if (a->indexed)
		u64map_clear(&a->freed);
	a->indexed = 0;
}

void alog_reset(struct pmtx_tx *tx)
{
	struct alog *a = &tx->alog;
	a->n = 0;
	forget_freed(a);
	a->flushed = 0;
	a->chunk = tx->d->alog_head;
	a->slot = a->chunk + sizeof(struct pmtx_chunk);
	a->chunk_end = a->chunk + chunk_at(tx->r, a->chunk)->size;
}

int alog_append(struct pmtx_tx *tx, const struct pmtx_alog_entry *e)
{
	struct alog *a = &tx->alog;
	if (pmtx_reserve(&a->e, a->n, 1, &a->cap, sizeof(*a->e), 64))
		return ENOMEM;
	if (tx->kind == PMTX_RT_TWIN) { /* DRAM only (twin.c TW6) */
		a->e[a->n++] = *e;
		return 0;
	}
	if (a->slot + ENTRY_SIZE > a->chunk_end) {
		uint64_t next;
		int rc = log_chunk_next(tx->r, a->chunk, 4096, &next);
		if (rc)
			return rc;
		alog_flush(tx); /* entries so far, while we know where */
		a->chunk = next;
		a->slot = next + sizeof(struct pmtx_chunk);
		a->chunk_end = next + chunk_at(tx->r, next)->size;
	}
	memcpy(region_at(tx->r, a->slot), e, ENTRY_SIZE);
	TRACE_STORE(&tx->r->persist, region_at(tx->r, a->slot), ENTRY_SIZE,
	            ALLOC);
	a->slot += ENTRY_SIZE;
	a->e[a->n++] = *e;
	return 0;
}

/* Flush the entries written since the last flush. They are contiguous in
 * the current chunk, because alog_append flushes before changing chunk. */
void alog_flush(struct pmtx_tx *tx)
{
	struct alog *a = &tx->alog;
	size_t k = a->n - a->flushed;
	uint64_t first = a->chunk + sizeof(struct pmtx_chunk);
	if (k == 0)
		return;
	if (a->slot - k * ENTRY_SIZE < first)
		k = (a->slot - first) / ENTRY_SIZE;
	MUT_FLUSH(MUT_ALOG_FLUSH, &tx->r->persist,
	          region_at(tx->r, a->slot - k * ENTRY_SIZE), k * ENTRY_SIZE);
	a->flushed = a->n;
}

int alog_commit_apply(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	struct alog *a = &tx->alog;
	for (size_t i = 0; i < a->n; i++)
		heap_apply(r, &a->e[i]); /* entries built by the heap: valid */
	/* Past the commit mark, a failed barrier does not stop the steps
	 * (undo.c U5): the first error is returned at the end. */
	int rc = MUT_ORDER(MUT_ALOG_APPLY_BARRIER, &r->persist); /* (iii) */
	desc_set_state(r, tx->d, tx->version, tx->kind, PMTX_DS_IDLE,
	               MUT_ALOG_IDLE_MARK, MUT_ALOG_IDLE_FLUSH);
	int rc2 = MUT_ORDER(MUT_ALOG_IDLE_BARRIER, &r->persist); /* (iv) */
	for (size_t i = 0; i < a->n; i++)
		if (PMTX_AE_OP(a->e[i].info) == PMTX_AE_FREE)
			heap_release(r->heap, &a->e[i]);
	return rc ? rc : rc2;
}

/* Give back the reservations of a transaction that did not commit. */
void alog_unreserve(struct pmtx_tx *tx)
{
	struct alog *a = &tx->alog;
	for (size_t i = a->n; i-- > 0;)
		if (PMTX_AE_OP(a->e[i].info) == PMTX_AE_ALLOC)
			heap_unreserve(tx->r->heap, &a->e[i]);
	a->n = 0;
	forget_freed(a);
}

/* Take back the last entry, an allocation just made (tx.c). */
void alog_drop_last(struct pmtx_tx *tx)
{
	struct alog *a = &tx->alog;
	a->n--;
	heap_unreserve(tx->r->heap, &a->e[a->n]);
	if (a->indexed > a->n)
		forget_freed(a);
}

#define FREES_SCAN_MAX 64 /* a log this short is scanned, not indexed */

static int scan_frees(const struct alog *a, uint64_t boff)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->e[i].off == boff && PMTX_AE_OP(a->e[i].info) == PMTX_AE_FREE)
			return 1;
	return 0;
}

/* Is off freed by an entry already in this transaction? A long log
 * (a transaction that frees a whole container) is looked up in an index
 * of its FREE entries, extended on each call, so that n frees cost O(n)
 * and not O(n^2); an index that cannot grow falls back to the scan. */
int alog_frees(struct pmtx_tx *tx, uint64_t boff)
{
	struct alog *a = &tx->alog;
	if (a->n <= FREES_SCAN_MAX)
		return scan_frees(a, boff);
	if (!a->freed.slot && u64map_init(&a->freed))
		return scan_frees(a, boff);
	for (int fresh; a->indexed < a->n; a->indexed++) {
		const struct pmtx_alog_entry *e = &a->e[a->indexed];
		if (PMTX_AE_OP(e->info) == PMTX_AE_FREE &&
		    !u64map_insert(&a->freed, e->off, &fresh))
			return scan_frees(a, boff);
	}
	return u64map_find(&a->freed, boff) != NULL;
}

/* Call fn on each of the first n entries of descriptor i's allocation
 * log; stop at the first error. */
static int alog_walk(pmtx_region *r, unsigned i, uint64_t n,
                     int (*fn)(pmtx_region *, const struct pmtx_alog_entry *,
                               uint64_t, void *),
                     void *arg)
{
	uint64_t chunk = region_desc(r, i)->alog_head, hops = 0;
	while (n > 0) {
		if (!log_chunk_ok(r, chunk) || hops++ > r->nsb + 1)
			return PMTX_E_CORRUPT;
		const struct pmtx_chunk *c = chunk_at(r, chunk);
		uint64_t k = MIN((c->size - sizeof(*c)) / ENTRY_SIZE, n);
		int rc = fn(r, region_at(r, chunk + sizeof(*c)), k, arg);
		if (rc)
			return rc;
		n -= k;
		chunk = c->next;
	}
	return 0;
}

static int apply_run(pmtx_region *r, const struct pmtx_alog_entry *e,
                     uint64_t k, void *arg)
{
	(void)arg;
	for (uint64_t j = 0; j < k; j++) {
		int rc = heap_apply(r, &e[j]);
		if (rc)
			return rc;
	}
	return 0;
}

static int hash_run(pmtx_region *r, const struct pmtx_alog_entry *e,
                    uint64_t k, void *arg)
{
	(void)r;
	pmtx_hash_update(arg, e, k * ENTRY_SIZE);
	return 0;
}

int alog_replay(pmtx_region *r, unsigned i, uint64_t nentries)
{
	return alog_walk(r, i, nentries, apply_run, NULL);
}

int alog_hash(pmtx_region *r, unsigned i, uint64_t nentries,
              struct pmtx_hasher *h)
{
	return alog_walk(r, i, nentries, hash_run, h);
}
