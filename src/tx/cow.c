/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cow.c - the copy-on-write runtime (seed 000 section 4.3).
 *
 * An object is a wrapper (struct pmtx_cow_wrapper, layout.h) naming its
 * current payload. Opening it for writing allocates a private copy (made
 * by the caller's copy constructor, or memcpy), records it in the wrapper
 * (next, old_backup = cur, writer) and in the transaction's write set;
 * the caller then stores into the copy freely. Nothing is logged per
 * store. Reads go to the copy if this transaction writes the object, else
 * to the current payload.
 *
 * Barrier sequence of a commit with a non-empty write set:
 *   1. flush every new payload and wrapper, append one COW record per
 *      written wrapper to the log, log a FREE of each old payload in the
 *      allocation log                                           -> 1 barrier
 *   2. COMMIT record (CSN, allocation count)                   -> 1 barrier
 *   3. cleanup: cur := next in every wrapper, apply the allocation log
 *      (new payloads allocated, old ones freed)                 -> 1 barrier
 *   4. descriptor IDLE                                          -> 1 barrier
 *   then, in DRAM only: writer := 0, freed blocks to the free lists.
 *   So 4 barriers per commit. An abort costs none: cur was never touched
 *   (K1), and the new payloads were only reserved in DRAM.
 *
 * Invariants (K1-K3 are in layout.h)
 *  K4. A crash before the COMMIT is durable leaves every cur as it was; the
 *      copies were never marked allocated, so nothing leaks and recovery
 *      has nothing to do.
 *  K5. A crash after it: recovery walks the COW records, sets cur := next
 *      where cur == old_backup (not swapped yet), and replays the
 *      allocation log, which frees each old payload exactly once, through
 *      the persistent old_backup, whichever cleanup step the crash
 *      interrupted (the FREE entries name the same blocks as old_backup).
 *      Both are idempotent.
 *  K6. The seed's fourth cleanup step (clearing the writer id) needs no
 *      persistence here: a writer id is only believed if it names a
 *      transaction running now (K3).
 *
 * Limits, as the seed found: the runtime works only through wrappers.
 * pmtx_write, pmtx_read, pmtx_add_range and pmtx_memset fail with
 * PMTX_E_UNSUPPORTED in a copy-on-write transaction, rather than writing
 * raw ranges in place with no way to undo them. Objects that must be
 * updated in place (the root, a raw page) need the undo or redo runtime;
 * a transaction's runtime is chosen per transaction, so both can be used
 * on one region.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tx.h"

#define VERSION_MASK ((1ull << 48) - 1)

static uint64_t writer_id(const struct pmtx_tx *tx)
{
	return ((uint64_t)(tx->idx + 1) << 48) | (tx->version & VERSION_MASK);
}

/* K3: does w name a transaction running now, other than tx? */
static int live_other_writer(const struct pmtx_tx *tx, uint64_t w)
{
	struct txm *m = tx->r->txm;
	uint64_t i = w >> 48;
	if (w == 0 || w == writer_id(tx) || i == 0 || i > m->ndesc)
		return 0;
	const struct pmtx_tx *o = &m->txs[i - 1];
	return o->state == TX_RUNNING && o->kind == PMTX_RT_COW &&
	       (o->version & VERSION_MASK) == (w & VERSION_MASK);
}

static struct pmtx_cow_wrapper *wrapper_at(pmtx_region *r, pmtx_off w)
{
	if (heap_usable_size(r->heap, w) < sizeof(struct pmtx_cow_wrapper))
		return NULL;
	struct pmtx_cow_wrapper *W = region_at(r, w);
	return heap_usable_size(r->heap, W->cur) ? W : NULL;
}

static int ws_push(struct pmtx_tx *tx, struct cow_ent e)
{
	if (pmtx_reserve(&tx->ws, tx->nws, 1, &tx->capws, sizeof(*tx->ws), 16))
		return ENOMEM;
	tx->ws[tx->nws++] = e;
	return 0;
}

int pmtx_cow_new(pmtx_tx *tx, size_t size, pmtx_off *wrapper)
{
	pmtx_off w, payload;
	int rc = pmtx_zalloc(tx, size, &payload);
	if (!rc)
		rc = pmtx_alloc(tx, sizeof(struct pmtx_cow_wrapper), &w);
	if (rc)
		return rc;
	struct pmtx_cow_wrapper *W = region_at(tx->r, w);
	*W = (struct pmtx_cow_wrapper){.cur = payload};
	TRACE_STORE(&tx->r->persist, W, sizeof(*W), OBJECT);
	if (!MUT_ON(MUT_COW_NEW_FLUSH)) /* fresh: durable at commit */
		pmtx_flush(tx->r, W, sizeof(*W));
	*wrapper = w;
	return 0;
}

/* First open for writing: make the private copy. */
static int open_write(struct pmtx_tx *tx, pmtx_off w,
                      struct pmtx_cow_wrapper *W, pmtx_copy_fn copy)
{
	size_t size = heap_usable_size(tx->r->heap, W->cur);
	pmtx_off fresh;
	if (live_other_writer(tx, W->writer))
		return PMTX_E_BUSY;
	int rc = pmtx_alloc(tx, size, &fresh);
	if (rc)
		return rc;
	void *dst = region_at(tx->r, fresh);
	const void *src = region_at(tx->r, W->cur);
	if (copy)
		copy(dst, src, size);
	else
		memcpy(dst, src, size);
	W->next = fresh;
	W->old_backup = W->cur;
	W->writer = writer_id(tx);
	TRACE_STORE(&tx->r->persist, &W->next, 16, OBJECT);
	TRACE_VSTORE(&tx->r->persist, &W->writer, sizeof(W->writer));
	return ws_push(tx, (struct cow_ent){w, fresh, W->cur, 0});
}

int pmtx_cow_open(pmtx_tx *tx, pmtx_off w, int mode, pmtx_copy_fn copy,
                  void **payload)
{
	int rc = tx_check(tx);
	if (rc)
		return rc;
	struct pmtx_cow_wrapper *W = wrapper_at(tx->r, w);
	if (!W || !payload || (mode != PMTX_COW_READ && mode != PMTX_COW_WRITE))
		return PMTX_E_INVAL;
	int mine = W->writer == writer_id(tx) && tx->kind == PMTX_RT_COW;
	if (mode == PMTX_COW_WRITE && !mine) {
		if (tx->kind != PMTX_RT_COW)
			return PMTX_E_UNSUPPORTED;
		if ((rc = open_write(tx, w, W, copy)))
			return rc;
		mine = 1;
	}
	*payload = region_at(tx->r, mine ? W->next : W->cur);
	return 0;
}

int pmtx_cow_delete(pmtx_tx *tx, pmtx_off w)
{
	int rc = tx_check(tx);
	if (rc)
		return rc;
	struct pmtx_cow_wrapper *W = wrapper_at(tx->r, w);
	if (!W)
		return PMTX_E_INVAL;
	for (size_t i = 0; i < tx->nws; i++)
		if (tx->ws[i].wrapper == w && !tx->ws[i].deleted) {
			tx->ws[i].deleted = 1;
			if ((rc = pmtx_free(tx, tx->ws[i].fresh)))
				return rc;
		}
	if (live_other_writer(tx, W->writer))
		return PMTX_E_BUSY;
	if (!(rc = pmtx_free(tx, W->cur)))
		rc = pmtx_free(tx, w);
	return rc;
}

const void *pmtx_cow_peek(pmtx_region *r, pmtx_off w)
{
	struct pmtx_cow_wrapper *W = wrapper_at(r, w);
	return W ? region_at(r, W->cur) : NULL;
}

/* ---- the runtime ---- */

static int cow_begin(struct pmtx_tx *tx)
{
	logw_reset(tx->r, &tx->log, tx->d->log_head);
	tx->nws = 0;
	return 0;
}

/* Raw ranges: not supported (see the limits above). */
static int cow_write(struct pmtx_tx *tx, void *dst, const void *src,
                     size_t n)
{
	(void)tx, (void)dst, (void)src, (void)n;
	return PMTX_E_UNSUPPORTED;
}

static int cow_add_range(struct pmtx_tx *tx, void *p, size_t n)
{
	return cow_write(tx, p, NULL, n);
}

/* Step 1's writes: persist copies and wrappers, log the write set and the
 * frees of the old payloads. Nothing durable yet depends on them. */
static int stage(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	for (size_t i = 0; i < tx->nws; i++) {
		const struct cow_ent *e = &tx->ws[i];
		uint64_t rec;
		struct pmtx_alog_entry fe;
		if (e->deleted)
			continue;
		MUT_FLUSH(MUT_COW_PAYLOAD_FLUSH, &r->persist,
		          region_at(r, e->fresh),
		          heap_usable_size(r->heap, e->fresh));
		MUT_FLUSH(MUT_COW_WRAPPER_FLUSH, &r->persist,
		          region_at(r, e->wrapper),
		          sizeof(struct pmtx_cow_wrapper));
		int rc = logw_reserve(r, &tx->log, 0, &rec);
		if (rc)
			return rc;
		log_put(r, &tx->log, rec, PMTX_REC_COW, tx->version, e->wrapper,
		        NULL, 0, LOG_CSUM);
		if ((rc = heap_free_entry(r->heap, e->old, &fe)) ||
		    (rc = alog_append(tx, &fe)))
			return rc;
	}
	uint64_t rec;
	return logw_reserve(r, &tx->log, sizeof(uint64_t), &rec);
}

static void swap_payloads(struct pmtx_tx *tx)
{
	for (size_t i = 0; i < tx->nws; i++) {
		if (tx->ws[i].deleted)
			continue;
		struct pmtx_cow_wrapper *W = region_at(tx->r, tx->ws[i].wrapper);
		__atomic_store_n(&W->cur, W->next, __ATOMIC_RELAXED);
		TRACE_STORE(&tx->r->persist, &W->cur, 8, OBJECT);
		MUT_FLUSH(MUT_COW_SWAP_FLUSH, &tx->r->persist, &W->cur, 8);
	}
}

static void clear_writers(struct pmtx_tx *tx)
{
	for (size_t i = 0; i < tx->nws; i++) {
		struct pmtx_cow_wrapper *W = region_at(tx->r, tx->ws[i].wrapper);
		if (!tx->ws[i].deleted && W->writer == writer_id(tx)) {
			W->writer = 0;
			TRACE_VSTORE(&tx->r->persist, &W->writer,
			             sizeof(W->writer));
		}
	}
}

static int cow_commit(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	struct persist *p = &r->persist;
	if (tx->nws == 0 && tx->alog.n == 0)
		return tx->unfenced ? MUT_BARRIER(MUT_COW_NAKED_BARRIER, p) : 0;
	int rc = stage(tx);
	if (!rc) {
		alog_flush(tx);
		retire_cover_begin(tx);
		tx_mark_running(tx);
		rc = MUT_ORDER(MUT_COW_STAGE_BARRIER, p); /* 1 */
	}
	if (rc) {
		tx->rt->abort(tx);
		alog_unreserve(tx);
		return rc;
	}
	retire_cover_end(tx);
	/* Past the COMMIT record, failures do not stop the steps (as undo.c
	 * U5): the first error is returned. */
	uint64_t rec;
	logw_reserve(r, &tx->log, sizeof(uint64_t), &rec); /* reserved above */
	tx->csn = atomic_fetch_add(&r->txm->next_csn, 1);
	log_put(r, &tx->log, rec, PMTX_REC_COMMIT, tx->version, tx->alog.n,
	        &tx->csn, sizeof(tx->csn), LOG_CSUM);
	rc = MUT_BARRIER(MUT_COW_COMMIT_BARRIER, p); /* 2 */
	swap_payloads(tx);
	int rc2 = alog_commit_apply(tx); /* 3 and 4 */
	clear_writers(tx);
	return rc ? rc : rc2;
}

static int cow_abort(struct pmtx_tx *tx)
{
	clear_writers(tx);
	return 0;
}

static int cow_recover(pmtx_region *r, unsigned i, const struct pmtx_rec **recs,
                       size_t n, int committed, int *wrote)
{
	(void)i;
	/* A wrapper is a heap block's payload: 16-byte aligned, so its
	 * words are read as words (an odd offset is not a wrapper). */
	for (size_t k = 0; k + committed < n; k++)
		if (recs[k]->type != PMTX_REC_COW || recs[k]->len != 0 ||
		    recs[k]->off > r->size || recs[k]->off % 16 ||
		    !tx_data_range_ok(r, region_at(r, recs[k]->off),
		                      sizeof(struct pmtx_cow_wrapper)))
			return PMTX_E_CORRUPT;
	if (!committed)
		return 0; /* K4 */
	/* Retired (IDLE) even when every wrapper was already swapped and
	 * nothing is written here: left live, the log would be rolled
	 * forward again by a later recovery, over a newer transaction's
	 * next/old_backup (K2 holds only until the cleanup). A real commit
	 * always logs FREEs, so only a corrupt log gets here with nothing to
	 * write. */
	*wrote = 1;
	for (size_t k = 0; k + 1 < n; k++) {
		struct pmtx_cow_wrapper *W = region_at(r, recs[k]->off);
		if (W->cur == W->old_backup && W->next != 0) {
			if (!tx_data_range_ok(r, region_at(r, MIN(W->next,
			                                          r->size)), 1))
				return PMTX_E_CORRUPT;
			W->cur = W->next;
			TRACE_STORE(&r->persist, &W->cur, 8, OBJECT);
		}
		/* swapped or not, by this pass or by a process that died
		 * with the store in its cache: durable before the log is
		 * retired (a wrapper the transaction allocated may lie where
		 * the open's sweep did not look, recovery.c R4) */
		MUT_FLUSH(MUT_COW_RECOVER_FLUSH, &r->persist, &W->cur, 8);
	}
	return 0;
}

static int cow_read(struct pmtx_tx *tx, void *dst, const void *src, size_t n)
{
	return cow_write(tx, dst, src, n);
}

const struct tx_runtime cow_runtime = TX_RUNTIME(PMTX_RT_COW, cow, cow_read);
