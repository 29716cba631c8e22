/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * undo.c - the undo-log runtime (seed 000 section 4.1).
 *
 * A write first logs the old contents of its range in a record, makes the
 * record durable, then stores in place. Reads are plain loads.
 *
 * Barrier sequence of a transaction that writes N distinct ranges:
 *   per range  record (prolog, version, seq, old bytes, checksum)  -> 1 barrier
 *   commit (i)   flush every written line, the allocation log and any
 *                naked flushes                                     -> 1 barrier
 *          (ii)  COMMIT record: allocation count, commit sequence
 *                number (CSN, the order recovery replays logs in);
 *                without allocations, also the descriptor
 *                COMMITTED (U6)                                    -> 1 barrier
 *          (iii) only with allocations: apply them to the heap     -> 1 barrier
 *          (iv)  only with allocations: descriptor IDLE            -> 1 barrier
 *   total N + 2, or N + 4 with allocations; 0 for a transaction that
 *   writes and allocates nothing. Abort: restore every range in reverse
 *   order, flush -> 1 barrier; descriptor IDLE -> 1 barrier (none if
 *   nothing was logged).
 *
 * Records larger than the checksum threshold are written in two steps
 * instead (body -> barrier -> mark -> barrier): hashing more than the
 * threshold costs more than a second barrier. The thresholds come from
 * `pmtx-bench checksum` and `pmtx-bench txn` on the development machine:
 * XXH3 hashes 4 KiB in 252 ns and 16 KiB in 940 ns (about 17 bytes/ns),
 * and a barrier with one written-back line costs about 180-220 ns under
 * PDOM-1 with clwb, 500 ns more under PDOM-0. So: PDOM-1 4 KiB, PDOM-0
 * 12 KiB. Under PDOM-2 a barrier is only a compiler fence, so any checksum
 * costs more than a second barrier; 1 KiB keeps small records (the common
 * case) at one logical barrier each, which is what the counts report.
 *
 * Invariants
 *  U1. A range is stored to only after a durable record holds its old
 *      contents (or an earlier record of the same transaction covers it:
 *      the lineset). Hence rolling the records back newest first restores
 *      exactly the state before the transaction.
 *  U2. No tail pointer is kept: recovery finds the end of the log from
 *      sequence numbers, versions and check words (log.c L1-L3). This
 *      departs from the seed, whose recovery starts from a tail it must
 *      flush after every record, a second written-back line in every
 *      record's barrier (measured: 4 writes took 1.52 us with it, 1.32 us
 *      without, `pmtx-bench txn --writes 4 --domain pdom1 --backend
 *      hardware`). The descriptor's log_tail field is left as formatted.
 *  U3. The COMMIT record is written only after every written line is
 *      durable (i), so a durable COMMIT means the new data is durable.
 *      Barrier (i) also covers the IDLE marks of retired redo logs (tx.c
 *      R3), so no redo log older than this transaction can be replayed
 *      over data this transaction made durable.
 *  U5. A failed barrier (PMTX_E_IO, file backend) before the COMMIT record
 *      is written rolls the transaction back. After it is written, the
 *      transaction may already be durable, so the commit is completed in
 *      memory (allocation log applied, frees released) and PMTX_E_IO is
 *      returned: the transaction is visible, and survives a crash only if
 *      a later barrier succeeds.
 *  U6. The next transaction on the descriptor reuses the log, and its
 *      first records may persist before its RUNNING mark does (they share
 *      an epoch). If the descriptor still said RUNNING for this one, a
 *      crash could keep this log's first records but lose later ones or
 *      the COMMIT under the newcomer's bytes, and recovery would roll a
 *      committed transaction back. So commit leaves the descriptor
 *      durably COMMITTED (no allocations: barrier (ii)) or IDLE (with
 *      allocations: barrier (iv)), and recovery does nothing for an undo
 *      descriptor in either state.
 *  U4. After an abort, the restored data is durable before the descriptor
 *      is IDLE, and IDLE is durable before abort returns: recovery cannot
 *      roll the aborted transaction back a second time over data another
 *      transaction has written since.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tx.h"

static size_t csum_max(const pmtx_region *r)
{
	static const size_t by_domain[] = {12288, 4096, 1024};
	return by_domain[r->persist.domain];
}

static int undo_begin(struct pmtx_tx *tx)
{
	logw_reset(tx->r, &tx->log, tx->d->log_head);
	lineset_clear(&tx->lines);
	return 0;
}

/* Append one record and make it durable (1 barrier, or 2 if marked). */
static int append_durable(struct pmtx_tx *tx, uint16_t type, uint64_t off,
                          const void *payload, size_t len)
{
	pmtx_region *r = tx->r;
	struct persist *p = &r->persist;
	uint64_t rec;
	int mark = len > csum_max(r);
	int rc = logw_reserve(r, &tx->log, len, &rec);
	if (rc)
		return rc;
	tx_mark_running(tx);
	log_put(r, &tx->log, rec, type, tx->version, off, payload, len,
	        mark ? LOG_MARK : LOG_CSUM);
	/* (ii) of commit is this barrier too: a site of its own. The
	 * barrier that makes a COMMIT valid makes it durable; the others
	 * only order a record before the data it covers. */
	int commit = type == PMTX_REC_COMMIT;
	unsigned last = commit ? PMTX_TBK_DURABLE : PMTX_TBK_ORDER;
	if ((rc = MUT_BARRIER_KIND(commit ? MUT_UNDO_COMMIT_BARRIER
	                                  : MUT_UNDO_REC_BARRIER,
	                           p, mark ? PMTX_TBK_ORDER : last)))
		return rc;
	if (mark) {
		log_put_mark(r, rec);
		if ((rc = MUT_BARRIER_KIND(MUT_UNDO_MARK_BARRIER, p, last)))
			return rc;
	}
	/* (Mutants that skip the check word make the record invalid.) */
	assert(MUT_ON(MUT_UNDO_REC_CHECK) || MUT_ON(MUT_UNDO_MARK_STORE) ||
	       MUT_ON(MUT_LOG_COMMIT_CHECK) ||
	       log_rec_check(r, rec, tx->log.seq - 1, tx->version));
	return tx_recs_push(tx, rec);
}

static int undo_add_range(struct pmtx_tx *tx, void *p, size_t n)
{
	if (lineset_covered(&tx->lines, p, n))
		return 0;
	/* Re-logging bytes already logged is harmless (rollback runs newest
	 * first), so one record covers the whole call. */
	int rc = append_durable(tx, PMTX_REC_UNDO, region_off(tx->r, p), p, n);
	if (!rc)
		rc = lineset_mark(&tx->lines, p, n);
	return rc;
}

static int undo_write(struct pmtx_tx *tx, void *dst, const void *src,
                      size_t n)
{
	return tx_write_in_place(tx, dst, src, n, undo_add_range);
}

static void flush_written(struct pmtx_tx *tx)
{
	struct persist *p = &tx->r->persist;
	for (uint32_t i = 0; i < lineset_count(&tx->lines); i++)
		MUT_FLUSH(MUT_UNDO_DATA_FLUSH, p,
		          (const void *)lineset_line(&tx->lines, i),
		          CACHE_LINE);
}

static int undo_commit(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	size_t nalloc = tx->alog.n;
	if (tx->nrecs == 0 && nalloc == 0)
		return tx->unfenced
		       ? MUT_BARRIER(MUT_UNDO_NAKED_BARRIER, &r->persist)
		       : 0;
	/* Room for the COMMIT record first: after (i) nothing may fail
	 * except a barrier (U5). */
	uint64_t rec;
	int rc = logw_reserve(r, &tx->log, sizeof(tx->csn), &rec);
	if (!rc) {
		flush_written(tx);
		alog_flush(tx);
		retire_cover_begin(tx);
		tx_mark_running(tx);
		rc = MUT_ORDER(MUT_UNDO_DATA_BARRIER, &r->persist); /* (i) */
	}
	if (rc) {
		tx->rt->abort(tx);
		alog_unreserve(tx);
		return rc;
	}
	retire_cover_end(tx);
	tx->csn = atomic_fetch_add(&r->txm->next_csn, 1);
	if (nalloc == 0) /* U6 */
		desc_set_state(r, tx->d, tx->version, tx->kind,
		               PMTX_DS_COMMITTED, MUT_UNDO_COMMITTED_MARK,
		               MUT_UNDO_COMMITTED_FLUSH);
	rc = append_durable(tx, PMTX_REC_COMMIT, nalloc, &tx->csn,
	                    sizeof(tx->csn)); /* (ii) */
	int rc2 = nalloc ? alog_commit_apply(tx) : 0; /* (iii), (iv) */
	return rc ? rc : rc2;
}

/* site: the mutation site of the flush (abort or recovery). */
static void restore(pmtx_region *r, const struct pmtx_rec *h, unsigned site)
{
	void *dst = region_at(r, h->off);
	memcpy(dst, rec_payload(h), h->len);
	TRACE_STORE(&r->persist, dst, h->len, DATA);
	MUT_FLUSH(site, &r->persist, dst, h->len);
}

static int undo_abort(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	if (tx->nrecs == 0)
		return 0;
	for (size_t i = tx->nrecs; i-- > 0;)
		restore(r, region_at(r, tx->recs[i]), MUT_UNDO_ABORT_FLUSH);
	/* Like commit (U5), an abort that has begun restoring completes. */
	int rc = MUT_ORDER(MUT_UNDO_ABORT_BARRIER, &r->persist);
	desc_set_state(r, tx->d, tx->version, tx->kind, PMTX_DS_IDLE,
	               MUT_UNDO_ABORT_IDLE_MARK, MUT_UNDO_ABORT_IDLE_FLUSH);
	int rc2 = MUT_ORDER(MUT_UNDO_ABORT_IDLE_BARRIER, &r->persist);
	return rc ? rc : rc2;
}

static int undo_recover(pmtx_region *r, unsigned i,
                        const struct pmtx_rec **recs, size_t n,
                        int committed, int *wrote)
{
	(void)i;
	for (size_t k = 0; k + committed < n; k++)
		if (recs[k]->type != PMTX_REC_UNDO || recs[k]->off > r->size ||
		    !tx_data_range_ok(r, region_at(r, recs[k]->off),
		                      recs[k]->len))
			return PMTX_E_CORRUPT;
	if (committed)
		return 0;
	for (size_t k = n; k-- > 0;)
		restore(r, recs[k], MUT_UNDO_RECOVER_FLUSH);
	*wrote = 1;
	return 0;
}

const struct tx_runtime undo_runtime =
	TX_RUNTIME(PMTX_RT_UNDO, undo, tx_read_in_place);
