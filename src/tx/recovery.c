/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * recovery.c - bring a region back to a transaction-consistent state when
 * it is opened (seed 000 sections 4 and 5).
 *
 * For each descriptor, with Vs and S the version and state in statever,
 * and Vl the version of the records at the head of its log:
 *   S == IDLE            nothing to do (the transaction Vs finished);
 *   S == COMMITTED       (undo only, undo.c U6) nothing to do;
 *   no valid record      nothing to do (nothing was logged durably, so by
 *                        U1 nothing was stored in place);
 *   Vl != Vs             nothing to do: the log belongs either to an older
 *                        transaction, which finished before Vs began, or
 *                        to a newer one that never reached its commit
 *                        barrier (the barrier that makes a redo or
 *                        copy-on-write COMMIT durable also makes its
 *                        statever durable, and undo writes statever
 *                        before its first record: T2), so a redo or
 *                        copy-on-write transaction with nothing in place;
 *   Vl == Vs, committed  the runtime rolls forward (redo) or does nothing
 *                        (undo); the allocation log is replayed;
 *   Vl == Vs, otherwise  the runtime rolls back (undo) or discards (redo).
 * Uncommitted transactions are handled first; committed ones are then
 * rolled forward in commit-sequence order (D3), so that of two unretired
 * redo logs the newer one's bytes win. Whenever that wrote anything: one
 * barrier, then the descriptors written are marked IDLE, each with a
 * barrier of its own (R3).
 *
 * Then every log chunk linked from a descriptor beyond its first is
 * marked allocated in the heap (L4), and the DRAM heap is rebuilt.
 *
 * Invariants
 *  R1. Recovery is idempotent: every step rewrites values that do not
 *      depend on what an interrupted earlier recovery did (old contents
 *      from undo records, new contents from redo records, bitmap bits from
 *      allocation-log entries), and IDLE is written only after they are
 *      durable. A crash during recovery leaves a state that recovers to the
 *      same result.
 *  R2. A region with nothing to recover is not written at all (but for
 *      its open mark, layout.h G4), and, when it was closed cleanly,
 *      costs a look at each descriptor's first record plus the heap
 *      metadata scan: O(heap metadata), not O(data), and no barrier.
 *  R3. The IDLE marks are made durable one at a time, in commit order,
 *      as redo retirements are (redo.c D4a, D6): were a newer log retired
 *      and an older one not when recovery itself crashes, the next
 *      recovery would replay the older log alone, over the newer data.
 *      Rolled-back and discarded logs come first (their CSN is 0).
 *  R4. When the last process to have the region open did not close it
 *      (layout.h G4), before recovery reads anything it makes durable
 *      what it will read (sweep): everything before the heap (header,
 *      descriptors, first log chunks, root, the metadata of the
 *      superblocks there are), every log chunk linked from a descriptor,
 *      and in a twin region the back copy of the root and the metadata,
 *      the seal and both copies of the lines it lists; then one barrier.
 *      The heap itself is not swept: undo, redo and redo-async recovery
 *      write the bytes of their logs blind and flush them, copy-on-write
 *      recovery flushes every wrapper of a committed log (cow.c), and
 *      twin's passes flush every line they cover in the copy they write
 *      (twin.c TW8). After a process crash the cache may hold stores
 *      that are visible and not durable: without the sweep,
 *      recovery would decide from a commit record, a seal, a state word
 *      or data that a power failure during or after it could still lose,
 *      and would not flush a line it finds already right (explore.c E9).
 *      With it, recovery starts from the image in which every store made
 *      before the crash persisted, one a power failure could leave too.
 *      Not under PDOM-2 (the caches are durable), nor in a private view
 *      (nothing reaches the file). The journal backend maps the file
 *      privately and reads what the page cache holds: there the sweep is
 *      an fdatasync of the file, for a region the last process used
 *      through another backend.
 *      Its cost follows the areas before the heap, not the heap
 *      (docs/results/sweep-2026-11-27: 103,431 lines, 1.5 ms, for a
 *      1 GiB region with all of its heap in use), and a region closed
 *      cleanly is not swept. A superblock is never flushed whole by it:
 *      a flush faults a page in, and a tmpfs hole with it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tx.h"

/* What recovery found in one descriptor's log. */
struct found {
	unsigned i;
	uint64_t vs;              /* version in statever */
	unsigned kind;            /* runtime in statever */
	const struct pmtx_rec **v;
	size_t n, cap;
	int committed;
	uint64_t csn;             /* from the COMMIT record */
};

static int collect(pmtx_region *r, uint64_t head, struct found *f)
{
	struct logr rd;
	int rc = logr_init(r, &rd, head);
	/* L2: only records of statever's version belong to this log. The
	 * first record may have gone to a later chunk (L3), leaving an older
	 * transaction's first record, of the same sequence number 0, at the
	 * head: without the version it would pass for this log's start. */
	rd.version = f->vs;
	rd.batch = f->kind == PMTX_RT_REDO || f->kind == PMTX_RT_REDO_ASYNC;
	f->n = 0;
	while (!rc) {
		const struct pmtx_rec *h;
		if ((rc = logr_next(&rd, &h)) || !h)
			break;
		if (pmtx_reserve(&f->v, f->n, 1, &f->cap, sizeof(*f->v), 64))
			return ENOMEM;
		f->v[f->n++] = h;
	}
	return rc;
}

static int desc_ok(pmtx_region *r, unsigned i)
{
	const struct pmtx_desc *d = region_desc(r, i);
	return d->log_head == region_log0(r, i) &&
	       d->alog_head == region_alog0(r, i) &&
	       log_chunk_ok(r, d->log_head) && log_chunk_ok(r, d->alog_head) &&
	       PMTX_SV_STATE(d->statever) <= PMTX_DS_COMMITTED &&
	       /* twin transactions never leave their descriptor */
	       (!r->twin || PMTX_SV_STATE(d->statever) == PMTX_DS_IDLE);
}

/* A redo COMMIT counts only if its second word is the checksum of the
 * records' spans and the allocation-log entries (redo.c D1, D9). */
static int batch_ok(pmtx_region *r, const struct found *f)
{
	const struct pmtx_rec *last = f->v[f->n - 1];
	struct pmtx_hasher h;
	if (f->kind != PMTX_RT_REDO && f->kind != PMTX_RT_REDO_ASYNC)
		return 1;
	pmtx_hash_init(&h, PMTX_CSUM_SEED_REC);
	for (size_t k = 0; k + 1 < f->n; k++)
		pmtx_hash_update(&h, f->v[k], log_rec_span(f->v[k]->len));
	uint64_t want;
	if (last->len < 16 || alog_hash(r, f->i, last->off, &h))
		return 0;
	memcpy(&want, (const char *)rec_payload(last) + 8, 8);
	return want == pmtx_hash_digest(&h);
}

/* The COMMIT record, if any, must be last and unique. */
static int committed_shape(pmtx_region *r, struct found *f)
{
	const struct pmtx_rec *last = f->v[f->n - 1];
	for (size_t k = 0; k + 1 < f->n; k++)
		if (f->v[k]->type == PMTX_REC_COMMIT)
			return PMTX_E_CORRUPT;
	f->committed = last->type == PMTX_REC_COMMIT;
	f->csn = 0;
	if (f->committed && last->len >= 8)
		memcpy(&f->csn, rec_payload(last), 8);
	if (f->committed && !batch_ok(r, f)) {
		/* a torn record (D1), or overwritten by the next transaction
		 * (D9): not to be replayed */
		f->committed = 0;
		f->n--;
	}
	return 0;
}

/* Does descriptor i need recovery? 1 = yes (f filled), 0 = no. */
static int examine(pmtx_region *r, unsigned i, struct found *f)
{
	struct pmtx_desc *d = region_desc(r, i);
	uint64_t sv = d->statever;
	f->i = i;
	f->vs = PMTX_SV_VERSION(sv);
	f->kind = PMTX_SV_RUNTIME(sv);
	if (PMTX_SV_STATE(sv) == PMTX_DS_IDLE)
		return 0;
	if (PMTX_SV_STATE(sv) == PMTX_DS_COMMITTED &&
	    f->kind == PMTX_RT_UNDO)
		return 0; /* undo.c U6: committed, and nothing to replay */
	if (!tx_runtime_of((pmtx_runtime)f->kind)) {
		pmtx__set_errmsg("descriptor %u: unknown runtime %u", i, f->kind);
		return PMTX_E_CORRUPT;
	}
	int rc = collect(r, d->log_head, f);
	if (rc == PMTX_E_CORRUPT)
		pmtx__set_errmsg("descriptor %u: log chunk chain is corrupt", i);
	/* T2: a log of another version than statever's is either older
	 * (finished) or newer and never committed (redo, copy-on-write). */
	if (rc || f->n == 0 || f->v[0]->version != f->vs)
		return rc;
	if (committed_shape(r, f)) {
		pmtx__set_errmsg("descriptor %u: log does not match its state", i);
		return PMTX_E_CORRUPT;
	}
	return 1;
}

static int recover_one(pmtx_region *r, struct found *f, int *wrote)
{
	const struct tx_runtime *rt = tx_runtime_of((pmtx_runtime)f->kind);
	int w = 0, rc = rt->recover(r, f->i, f->v, f->n, f->committed, &w);
	uint64_t nalloc = f->committed ? f->v[f->n - 1]->off : 0;
	if (rc == PMTX_E_CORRUPT)
		pmtx__set_errmsg("descriptor %u: a %s log record names no valid "
		                 "target", f->i,
		                 pmtx_runtime_name(rt->kind));
	if (!rc && nalloc) {
		rc = alog_replay(r, f->i, nalloc);
		w = 1;
		if (rc == PMTX_E_CORRUPT)
			pmtx__set_errmsg("descriptor %u: allocation log of %llu "
			                 "entries is corrupt", f->i,
			                 (unsigned long long)nalloc);
	}
	if (!w)
		f->n = 0; /* nothing written: leave the descriptor as it is */
	*wrote |= w;
	return rc;
}

static int by_csn(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	return x->csn < y->csn ? -1 : x->csn > y->csn;
}

/* Uncommitted logs first (rolled back), then committed ones in commit
 * order (rolled forward), then one barrier, then each IDLE mark with a
 * barrier (R3). */
static int recover_found(pmtx_region *r, struct found *fs, unsigned nf)
{
	int rc = 0, wrote = 0;
	for (unsigned k = 0; k < nf && !rc; k++)
		if (!fs[k].committed)
			rc = recover_one(r, &fs[k], &wrote);
	qsort(fs, nf, sizeof(*fs), by_csn);
	for (unsigned k = 0; k < nf && !rc; k++) {
		if (fs[k].committed)
			rc = recover_one(r, &fs[k], &wrote);
		r->csn_floor = MAX(r->csn_floor, fs[k].csn);
	}
	r->recovery_wrote |= wrote;
	if (rc || !wrote)
		return rc;
	if ((rc = MUT_ORDER(MUT_RECOVERY_DATA_BARRIER, &r->persist)))
		return rc;
	/* R3: one at a time, in commit order (fs is sorted by CSN). */
	for (unsigned k = 0; k < nf && !rc; k++)
		if (fs[k].n) {
			desc_set_state(r, region_desc(r, fs[k].i), fs[k].vs,
			               (pmtx_runtime)fs[k].kind, PMTX_DS_IDLE,
			               MUT_RECOVERY_IDLE_MARK,
			               MUT_RECOVERY_IDLE_FLUSH);
			rc = MUT_ORDER(MUT_RECOVERY_IDLE_BARRIER,
			                 &r->persist);
		}
	return rc;
}

/* Chunks beyond the first of one chain: re-apply their allocation (L4).
 * mark != 0: only note them as internal in the DRAM heap. */
static int adopt_chain(pmtx_region *r, uint64_t head, int mark, int *wrote)
{
	uint64_t hops = 0;
	for (uint64_t c = ((struct pmtx_chunk *)region_at(r, head))->next; c;) {
		struct pmtx_alog_entry e;
		/* c becomes a pointer only once it is known to be in range */
		int ok = log_chunk_ok(r, c) && hops++ <= r->nsb;
		const struct pmtx_chunk *ch = ok ? region_at(r, c) : NULL;
		if (!ok || heap_adopt_internal(r, c, ch->size, &e)) {
			pmtx__set_errmsg("log chunk %llu linked from %llu is "
			                 "invalid", (unsigned long long)c,
			                 (unsigned long long)head);
			return PMTX_E_CORRUPT;
		}
		if (mark) {
			heap_mark_internal(r->heap, c);
		} else {
			const struct pmtx_sb_meta *m =
				(const struct pmtx_sb_meta *)(r->base +
				                              r->hdr->meta_off) +
				(c - r->hdr->heap_off) / PMTX_SB_SIZE;
			if (m->info != PMTX_SB_INFO(PMTX_SB_LARGE, 0,
			                            PMTX_AE_RUN(e.info))) {
				heap_apply(r, &e);
				*wrote = 1;
			}
		}
		c = ch->next;
	}
	return 0;
}

static int for_each_chain(pmtx_region *r, int mark, int *wrote)
{
	for (unsigned i = 0; i < r->hdr->ndesc; i++) {
		const struct pmtx_desc *d = region_desc(r, i);
		int rc = adopt_chain(r, d->log_head, mark, wrote);
		if (!rc)
			rc = adopt_chain(r, d->alog_head, mark, wrote);
		if (rc)
			return rc;
	}
	return 0;
}

/* R4: the log chunks of the chain at head beyond its first (the first
 * lies before the heap), as far as they are valid. */
static void sweep_chain(pmtx_region *r, uint64_t head)
{
	uint64_t hops = 0;
	if (!log_chunk_ok(r, head)) /* desc_ok refuses it later */
		return;
	const struct pmtx_chunk *ch = region_at(r, head);
	for (uint64_t c = ch->next; c && log_chunk_ok(r, c) && hops++ <= r->nsb;
	     c = ch->next) {
		ch = region_at(r, c);
		MUT_FLUSH(MUT_RECOVERY_SWEEP_FLUSH, &r->persist, ch, ch->size);
	}
}

/* R4: a twin region's back copy of the root and the metadata, and the
 * seal with its lines (the passes of twin.c flush the heap they cover). */
static void sweep_twin(pmtx_region *r, uint64_t meta_end)
{
	const struct pmtx_hdr *h = r->hdr;
	MUT_FLUSH(MUT_RECOVERY_SWEEP_FLUSH, &r->persist,
	          r->base + h->root_off + region_twin_delta(r),
	          meta_end - h->root_off);
	twin_sweep_seal(r, MUT_RECOVERY_SWEEP_FLUSH);
}

/* R4: what recovery reads, durable. */
static int sweep(pmtx_region *r)
{
	const struct pmtx_hdr *h = r->hdr;
	struct persist *p = &r->persist;
	if (r->private_view || p->domain == PMTX_PDOM2)
		return 0;
	if (p->backend == PMTX_BACKEND_JOURNAL) /* the page cache, durable */
		return fdatasync(r->fd) ? errno : 0;
	const struct pmtx_sb_meta *m = region_at(r, h->meta_off);
	uint64_t meta_end = h->meta_off + r->nsb * sizeof(*m);
	MUT_FLUSH(MUT_RECOVERY_SWEEP_FLUSH, p, r->base, meta_end);
	for (unsigned i = 0; i < h->ndesc; i++) {
		sweep_chain(r, region_desc(r, i)->log_head);
		sweep_chain(r, region_desc(r, i)->alog_head);
	}
	if (r->twin)
		sweep_twin(r, meta_end);
	return MUT_ORDER(MUT_RECOVERY_SWEEP_BARRIER, p);
}

int tx_recover_all(pmtx_region *r)
{
	unsigned nd = r->hdr->ndesc, nf = 0;
	pmtx__mutant_init(); /* PMTX_MUTANT, read once: before any site */
	/* R4: only when the last process to open it did not close it */
	int rc = region_mark_open(r) ? sweep(r) : 0;
	if (rc)
		return rc;
	struct found *fs = calloc(nd, sizeof(*fs));
	int wrote = 0;
	rc = fs ? 0 : ENOMEM;
	if (!rc && r->twin) { /* twin.c TW8; its descriptors are IDLE */
		r->recovery_wrote = PMTX_TW_STATE(region_rstate(r)->twin) !=
		                    PMTX_TW_IDLE;
		rc = twin_recover_copies(r);
	}
	for (unsigned i = 0; i < nd && !rc; i++) {
		if (!desc_ok(r, i)) {
			pmtx__set_errmsg("descriptor %u is corrupt", i);
			rc = PMTX_E_CORRUPT;
			break;
		}
		rc = examine(r, i, &fs[nf]);
		if (rc == 1) {
			nf++;
			rc = 0;
		}
	}
	if (!rc)
		rc = recover_found(r, fs, nf);
	for (unsigned i = 0; fs && i < nd; i++)
		free(fs[i].v);
	free(fs);
	/* No barrier after: every open adopts again (L4). */
	if (!rc)
		rc = for_each_chain(r, 0, &wrote);
	r->recovery_wrote |= wrote;
	return rc;
}

int tx_mark_chunks(pmtx_region *r)
{
	int wrote = 0;
	return for_each_chain(r, 1, &wrote);
}
