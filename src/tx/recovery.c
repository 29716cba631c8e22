/*
 * recovery.c - bring a region back to a transaction-consistent state when
 * it is opened (seed 000 sections 4 and 5).
 *
 * For each descriptor, with Vs and S the version and state in statever,
 * and Vl the version of the records at the head of its log:
 *   S == IDLE            nothing to do (the transaction Vs finished);
 *   no valid record      nothing to do (nothing was logged durably, so by
 *                        U1 nothing was stored in place);
 *   Vl <  Vs             the log belongs to an older transaction, which
 *                        finished before Vs began: nothing to do;
 *   Vl >  Vs             impossible (T2): PMTX_E_CORRUPT;
 *   Vl == Vs, committed  the runtime rolls forward (redo) or does nothing
 *                        (undo); the allocation log is replayed;
 *   Vl == Vs, otherwise  the runtime rolls back (undo) or discards (redo).
 * Whenever that wrote anything: barrier, descriptor IDLE, barrier.
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
 *  R2. A region with nothing to recover is not written at all, and costs a
 *      look at each descriptor's first record plus the heap metadata scan:
 *      O(heap metadata), not O(data).
 */
#include <errno.h>
#include <stdlib.h>

#include "tx.h"

struct recs {
	const struct pmtx_rec **v;
	size_t n, cap;
};

static int collect(pmtx_region *r, uint64_t head, struct recs *rs)
{
	struct logr rd;
	int rc = logr_init(r, &rd, head);
	rs->n = 0;
	while (!rc) {
		const struct pmtx_rec *h;
		if ((rc = logr_next(&rd, &h)) || !h)
			break;
		if (rs->n == rs->cap) {
			size_t cap = rs->cap ? rs->cap * 2 : 64;
			const struct pmtx_rec **nv = realloc(rs->v, cap * sizeof(*nv));
			if (!nv)
				return ENOMEM;
			rs->v = nv, rs->cap = cap;
		}
		rs->v[rs->n++] = h;
	}
	return rc;
}

static int desc_ok(pmtx_region *r, unsigned i)
{
	const struct pmtx_desc *d = region_desc(r, i);
	return d->log_head == region_log0(r, i) &&
	       d->alog_head == region_alog0(r, i) &&
	       log_chunk_ok(r, d->log_head) && log_chunk_ok(r, d->alog_head) &&
	       PMTX_SV_STATE(d->statever) <= PMTX_DS_COMMITTED;
}

/* Is the COMMIT record last, and the only one? */
static int committed_shape(const struct recs *rs, int *committed)
{
	*committed = rs->v[rs->n - 1]->type == PMTX_REC_COMMIT;
	for (size_t k = 0; k + 1 < rs->n; k++)
		if (rs->v[k]->type == PMTX_REC_COMMIT)
			return PMTX_E_CORRUPT;
	return 0;
}

static int finish(pmtx_region *r, unsigned i, uint64_t v, unsigned kind)
{
	struct persist *p = &r->persist;
	int rc = persist_barrier(p);
	if (rc)
		return rc;
	desc_set_idle(r, region_desc(r, i), v, (pmtx_runtime)kind);
	return persist_barrier(p);
}

static int recover_desc(pmtx_region *r, unsigned i, struct recs *rs)
{
	struct pmtx_desc *d = region_desc(r, i);
	uint64_t sv = d->statever, vs = PMTX_SV_VERSION(sv);
	if (PMTX_SV_STATE(sv) == PMTX_DS_IDLE)
		return 0;
	const struct tx_runtime *rt = tx_runtime_of(PMTX_SV_RUNTIME(sv));
	if (!rt) {
		pmtx__set_errmsg("descriptor %u: unknown runtime %u", i,
		                 PMTX_SV_RUNTIME(sv));
		return PMTX_E_CORRUPT;
	}
	int rc = collect(r, d->log_head, rs), committed, wrote = 0;
	if (rc || rs->n == 0 || rs->v[0]->version < vs)
		return rc;
	if (rs->v[0]->version > vs || (rc = committed_shape(rs, &committed))) {
		pmtx__set_errmsg("descriptor %u: log does not match its state", i);
		return PMTX_E_CORRUPT;
	}
	rc = rt->recover(r, i, rs->v, rs->n, committed, &wrote);
	uint64_t nalloc = committed ? rs->v[rs->n - 1]->off : 0;
	if (!rc && nalloc) {
		rc = alog_replay(r, i, nalloc);
		wrote = 1;
	}
	if (!rc && wrote)
		rc = finish(r, i, vs, PMTX_SV_RUNTIME(sv));
	return rc;
}

/* Chunks beyond the first of one chain: re-apply their allocation (L4).
 * mark != 0: only note them as internal in the DRAM heap. */
static int adopt_chain(pmtx_region *r, uint64_t head, int mark, int *wrote)
{
	uint64_t hops = 0;
	for (uint64_t c = ((struct pmtx_chunk *)region_at(r, head))->next; c;) {
		struct pmtx_alog_entry e;
		const struct pmtx_chunk *ch = region_at(r, c);
		if (!log_chunk_ok(r, c) || hops++ > r->hdr->nsb ||
		    heap_adopt_internal(r, c, ch->size, &e))
			return PMTX_E_CORRUPT;
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

int tx_recover_all(pmtx_region *r)
{
	struct recs rs = {0};
	int rc = 0, wrote = 0;
	for (unsigned i = 0; i < r->hdr->ndesc && !rc; i++) {
		if (!desc_ok(r, i)) {
			pmtx__set_errmsg("descriptor %u is corrupt", i);
			rc = PMTX_E_CORRUPT;
		} else {
			rc = recover_desc(r, i, &rs);
		}
	}
	free(rs.v);
	if (!rc)
		rc = for_each_chain(r, 0, &wrote);
	if (!rc && wrote)
		rc = persist_barrier(&r->persist);
	return rc;
}

int tx_mark_chunks(pmtx_region *r)
{
	int wrote = 0;
	return for_each_chain(r, 1, &wrote);
}
