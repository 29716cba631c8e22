/*
 * redo.c - the redo-log runtimes (seed 000 section 4.2; asynchronous
 * truncation from seed 004): `redo` and `redo-async`.
 *
 * A write appends a record holding the NEW bytes to the descriptor's log
 * and flushes it (an asynchronous write-back), with no barrier; the data
 * in place is untouched until commit. A read of something this
 * transaction wrote must see the new bytes: every object header holds a
 * 64-bit writers bitmap (objbits.h), and a read whose object does not
 * carry this transaction's bit is a plain load. Otherwise a DRAM map,
 * keyed by object segment, gives the newest record for that segment, and
 * records of one segment are chained newest to oldest, so a lookup never
 * looks at unrelated records; bytes are taken from the newest record that
 * covers them, the rest from memory. Transactions on descriptors >= 64
 * have no bit and always consult their map.
 *
 * Raw ranges. A segment is 4 KiB of one object, counted from the start of
 * its data: a write is split at segment boundaries, so a large raw range
 * (a page of a database file inside one big block, say) is indexed page by
 * page, and reading a page never walks the records of the others. Any
 * address in the root or in an allocated block belongs to exactly one
 * object, so no range goes unindexed; writes to memory that belongs to no
 * block fail with PMTX_E_RANGE.
 *
 * Barrier sequence, `redo` (synchronous truncation):
 *   writes      records flushed as they are written          -> 0 barriers
 *   commit  1.  COMMIT record (CSN, allocation count), allocation-log
 *               entries, descriptor RUNNING                  -> 1 barrier
 *               (the transaction is durable here)
 *           2.  apply every record in place in log order, apply the
 *               allocation log to the heap, flush            -> 1 barrier
 *           3.  descriptor IDLE: a store, no flush, no barrier (tx.c R3)
 *   abort       drop the log: nothing was written in place   -> 0 barriers
 *   So 2 barriers per commit, whatever the number of writes and
 *   allocations, plus 1 before step 1 if the transaction made naked
 *   flushes (D10); none for a transaction that wrote and allocated
 *   nothing.
 *
 * `redo-async`: step 1, then the records and the allocation log are
 * applied in place with plain stores before commit returns, so every
 * thread sees the new data at once: 1 barrier on the critical path. The
 * write-back, its barrier and the retirement run later, in the region's
 * truncation thread, or earlier in a thread that needs the descriptor or
 * one of its objects (tx.c: drain_until).
 *
 * Invariants
 *  D1. Redo records carry no checksum of their own: the COMMIT record
 *      holds one checksum over all of them (PMTX_RF_BATCH), computed
 *      once at commit, and recovery counts a log as committed only if
 *      the COMMIT is valid and that checksum matches. Records and COMMIT
 *      are made durable by the same barrier, so the transaction is durable
 *      exactly when its COMMIT is; recovery replays committed logs.
 *  D2. Nothing is stored in place before the COMMIT is durable, so an
 *      uncommitted transaction needs no rollback.
 *  D3. Replaying a committed log is idempotent, and recovery replays every
 *      log not yet marked IDLE in commit-sequence (CSN) order, so the
 *      newest value of every byte wins.
 *  D4. A replay must never overwrite data that a LATER transaction made
 *      durable, unless that transaction is replayed after it.
 *      (a) IDLE marks of redo logs become durable in commit order: a
 *          retirement is either done inline when no truncation is pending,
 *          or queued behind the pending ones (D6); and every commit's
 *          first barrier covers the IDLE marks written before it (retire
 *          cover, tx.c R3). So when recovery finds a log not retired, every
 *          later redo log that could overlap it is not retired either, and
 *          is replayed after it.
 *      (b) An undo transaction has no log to replay, so before it writes
 *          or frees an object that carries the bit of a redo-async
 *          transaction not yet truncated, it drains the truncation queue
 *          up to that transaction (W1, tx_resolve_conflicts). Descriptors
 *          >= 64 have no bit, so their redo-async transactions commit as
 *          `redo` does.
 *  D5. Freed blocks return to the DRAM free lists only when the log that
 *      freed them is retired, so no replay can ever free a block that has
 *      been allocated again since.
 *  D7. The COMMIT record is written to the log before barrier 1, so once
 *      commit has begun, the transaction may be durable whatever a barrier
 *      returns: a failed barrier (PMTX_E_IO) does not stop the commit,
 *      which completes in memory and returns the error (as undo.c U5).
 *  D8. A truncation whose barrier fails (PMTX_E_IO) completes in memory,
 *      as a commit does (D7), and its error is reported by the region's
 *      next pmtx_commit, or by pmtx_close.
 *  D9. The IDLE mark of a retired log is durable only at the next commit
 *      barrier (R3), and the next transaction on the descriptor reuses
 *      the log and the allocation log before that. So the batch checksum
 *      covers the allocation-log entries as well as the records: a
 *      COMMIT whose records or entries have been partly overwritten by
 *      the next transaction fails it, and is not replayed. That is safe,
 *      because the next transaction began only after this one's data and
 *      allocations were durable (step 2). Without it, recovery would
 *      apply the next transaction's entries with this one's count.
 *  D6. Truncations run one at a time, in queue (= commit) order, and each
 *      one issues a barrier before its IDLE mark, so IDLE marks become
 *      durable in commit order. A barrier orders only its own thread's
 *      flushes, and the previous IDLE may have been written by another
 *      thread (the truncation thread, or one that drained the queue), so
 *      the truncating thread flushes the lines of every retirement not yet
 *      covered before its barrier (the retire cover, tx.c R3).
 *  D10. Lines the transaction flushed itself (pmtx_flush, pmtx_zalloc,
 *      pmtx_memcpy_nt: a fresh block initialised with plain stores) are
 *      made durable by a barrier of their own before the COMMIT record is
 *      written. In the same epoch as the COMMIT, the COMMIT could persist
 *      without them, and recovery would link a block whose contents were
 *      lost.
 *  D11. A write of exactly the range of the newest record of its segment
 *      stores into that record instead of appending one (a transaction
 *      that rewrites one object logs it once). Before the COMMIT nothing
 *      depends on a record's bytes: the batch checksum is computed at
 *      commit over what the records hold then, and a rewritten record is
 *      flushed once more before the COMMIT's barrier, which makes its new
 *      bytes durable with the rest. Reads and
 *      the apply take the newest bytes of a range from the newest record
 *      that covers it, which is this one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "objbits.h"
#include "tx.h"

#define SEG_SIZE 4096u
#define OBJ_MARK (-2)

static int redo_begin(struct pmtx_tx *tx)
{
	logw_reset(tx->r, &tx->log, tx->d->log_head);
	idxmap_clear(&tx->map);
	tx->last_obj = 0;
	tx->nents = 0;
	tx->rewrites = 0;
	return 0;
}

static int ents_push(struct pmtx_tx *tx, struct redo_ent e)
{
	if (tx->nents == tx->capents) {
		size_t cap = tx->capents ? tx->capents * 2 : 64;
		struct redo_ent *n = realloc(tx->ents, cap * sizeof(*n));
		if (!n)
			return ENOMEM;
		tx->ents = n, tx->capents = cap;
	}
	tx->ents[tx->nents++] = e;
	return 0;
}

/* Note that this transaction writes (or allocated) the object at base:
 * set its writers bit once. */
static int own_object(struct pmtx_tx *tx, uint64_t base)
{
	if (base == tx->last_obj || idxmap_get(&tx->map, base) == OBJ_MARK) {
		tx->last_obj = base;
		return 0;
	}
	tx->last_obj = base;
	if (tx->mybit)
		objbits_set(tx->r, objhdr_at(tx->r, base), tx->mybit);
	return idxmap_put(&tx->map, base, OBJ_MARK);
}

static inline uint64_t seg_key(uint64_t base, uint64_t off)
{
	uint64_t data = base + sizeof(struct pmtx_objhdr);
	return data + ALIGN_DOWN(off - data, SEG_SIZE);
}

/* D11: store the new bytes into the newest record of the same range; it
 * is flushed once, at commit (flush_rewritten). */
static void rewrite(struct pmtx_tx *tx, struct redo_ent *e, const void *src)
{
	pmtx_region *r = tx->r;
	void *p = (void *)rec_payload(region_at(r, e->rec));
	memcpy(p, src, e->len);
	TRACE_STORE(&r->persist, p, e->len);
	e->rewritten = 1;
	tx->rewrites = 1;
}

static void flush_rewritten(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	for (size_t i = 0; tx->rewrites && i < tx->nents; i++)
		if (tx->ents[i].rewritten)
			MUT_FLUSH(MUT_REDO_REWRITE_FLUSH, &r->persist,
			          rec_payload(region_at(r, tx->ents[i].rec)),
			          tx->ents[i].len);
}

/* Append one record for [off, off+len), all inside one segment, or
 * rewrite the newest one if it is for exactly that range (D11). */
static int append(struct pmtx_tx *tx, uint64_t base, uint64_t off,
                  const void *src, size_t len)
{
	pmtx_region *r = tx->r;
	uint64_t rec, key = seg_key(base, off);
	int32_t head = idxmap_get(&tx->map, key);
	if (head >= 0 && tx->ents[head].off == off &&
	    tx->ents[head].len == len) {
		rewrite(tx, &tx->ents[head], src);
		return 0;
	}
	int rc = logw_reserve(r, &tx->log, len, &rec);
	if (rc || (rc = own_object(tx, base)))
		return rc;
	log_put(r, &tx->log, rec, PMTX_REC_REDO, tx->version, off, src, len,
	        LOG_BATCH);
	struct redo_ent e = {rec, off, (uint32_t)len, -1, 0};
	if ((rc = ents_push(tx, e)))
		return rc;
	return idxmap_swap(&tx->map, key, (int32_t)(tx->nents - 1),
	                   &tx->ents[tx->nents - 1].prev);
}

/* Split [off, off+n) at object and segment boundaries. */
static int for_each_piece(struct pmtx_tx *tx, uint64_t off, size_t n,
                          int (*fn)(struct pmtx_tx *, uint64_t base,
                                    uint64_t off, size_t len, void *arg),
                          void *arg)
{
	while (n > 0) {
		uint64_t base;
		int rc = tx_object_of(tx->r, off, &base);
		if (rc)
			return rc;
		uint64_t end = seg_key(base, off) + SEG_SIZE;
		size_t len = (size_t)MIN((uint64_t)n, end - off);
		if ((rc = fn(tx, base, off, len, arg)))
			return rc;
		off += len;
		n -= len;
		arg = (char *)arg + len;
	}
	return 0;
}

static int write_piece(struct pmtx_tx *tx, uint64_t base, uint64_t off,
                       size_t len, void *src)
{
	return append(tx, base, off, src, len);
}

static int redo_write(struct pmtx_tx *tx, void *dst, const void *src,
                      size_t n)
{
	return for_each_piece(tx, region_off(tx->r, dst), n, write_piece,
	                      (void *)src);
}

/* Copy into out the bytes of [off, off+len) that the record covers and
 * that no newer record has supplied (done: one bit per byte of out). */
static size_t overlay(const pmtx_region *r, const struct redo_ent *e,
                      uint64_t off, size_t len, char *out, uint64_t *done)
{
	uint64_t lo = MAX(off, e->off), hi = MIN(off + len, e->off + e->len);
	const char *src = (const char *)rec_payload(region_at(r, e->rec));
	size_t filled = 0;
	for (uint64_t p = lo; p < hi; p++) {
		size_t i = (size_t)(p - off);
		if (done[i / 64] & (1ull << (i % 64)))
			continue;
		done[i / 64] |= 1ull << (i % 64);
		out[i] = src[p - e->off];
		filled++;
	}
	return filled;
}

static int read_piece(struct pmtx_tx *tx, uint64_t base, uint64_t off,
                      size_t len, void *dst)
{
	const pmtx_region *r = tx->r;
	memcpy(dst, region_at(r, off), len);
	if (tx->mybit && !(objbits_get(r, objhdr_at(r, base)) & tx->mybit))
		return 0;
	uint64_t done[SEG_SIZE / 64] = {0};
	size_t left = len;
	for (int32_t i = idxmap_get(&tx->map, seg_key(base, off));
	     i >= 0 && left; i = tx->ents[i].prev)
		left -= overlay(r, &tx->ents[i], off, len, dst, done);
	return 0;
}

static int redo_read(struct pmtx_tx *tx, void *dst, const void *src,
                     size_t n)
{
	if (tx->nents == 0) {
		memcpy(dst, src, n);
		return 0;
	}
	return for_each_piece(tx, region_off(tx->r, src), n, read_piece, dst);
}

/* add_range announces a store in place, which redo forbids before commit
 * (D2): nothing could undo it after a crash. Redo writes go through
 * pmtx_write; add_range is for the undo runtime. */
static int redo_add_range(struct pmtx_tx *tx, void *p, size_t n)
{
	(void)tx, (void)p, (void)n;
	return PMTX_E_UNSUPPORTED;
}

/* ---- commit ---- */

static void clear_bits(struct pmtx_tx *tx)
{
	if (!tx->mybit)
		return;
	for (uint32_t i = 0; i < tx->map.n; i++) {
		uint64_t key = idxmap_key(&tx->map, i);
		if (idxmap_get(&tx->map, key) == OBJ_MARK)
			objbits_clear(tx->r, objhdr_at(tx->r, key), tx->mybit);
	}
}

/* The batch checksum (layout.h, PMTX_RF_BATCH; D1, D9): the records'
 * spans in log order, contiguous runs hashed in one piece, then the
 * allocation-log entries. */
static uint64_t batch_checksum(const struct pmtx_tx *tx)
{
	const pmtx_region *r = tx->r;
	struct pmtx_hasher h;
	pmtx_hash_init(&h, PMTX_CSUM_SEED_REC);
	for (size_t i = 0; i < tx->nents;) {
		uint64_t start = tx->ents[i].rec, end = start;
		for (; i < tx->nents && tx->ents[i].rec == end; i++)
			end += log_rec_span(tx->ents[i].len);
		pmtx_hash_update(&h, region_at(r, start), end - start);
	}
	if (tx->alog.n)
		pmtx_hash_update(&h, tx->alog.e,
		                 tx->alog.n * sizeof(*tx->alog.e));
	return pmtx_hash_digest(&h);
}

/* Step 1: the transaction becomes durable (D1). */
static int commit_durable(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	uint64_t rec, body[2];
	size_t nalloc = tx->alog.n;
	int rc = logw_reserve(r, &tx->log, sizeof(body), &rec);
	if (rc)
		return rc;
	retire_cover_begin(tx);
	tx_mark_running(tx);
	tx->csn = atomic_fetch_add(&r->txm->next_csn, 1);
	body[0] = tx->csn;
	body[1] = MUT_SKIP(MUT_REDO_BATCH_CHECK) ? 0 : batch_checksum(tx);
	log_put(r, &tx->log, rec, PMTX_REC_COMMIT, tx->version, nalloc, body,
	        sizeof(body), LOG_CSUM);
	flush_rewritten(tx);
	alog_flush(tx);
	rc = MUT_BARRIER(MUT_REDO_COMMIT_BARRIER, &r->persist);
	retire_cover_end(tx);
	return rc;
}

static void apply_in_place(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	for (size_t i = 0; i < tx->nents; i++) {
		const struct redo_ent *e = &tx->ents[i];
		memcpy(region_at(r, e->off), rec_payload(region_at(r, e->rec)),
		       e->len);
		TRACE_STORE(&r->persist, region_at(r, e->off), e->len);
	}
}

/* Flush every line the records cover; a line flushed for the previous
 * record is not flushed again (writes to one line usually come
 * together). site: the mutation site (commit or truncation). */
static void flush_written(struct pmtx_tx *tx, unsigned site)
{
	pmtx_region *r = tx->r;
	uintptr_t last = 0;
	for (size_t i = 0; i < tx->nents; i++) {
		const struct redo_ent *e = &tx->ents[i];
		uintptr_t a = (uintptr_t)region_at(r, e->off);
		uintptr_t l = ALIGN_DOWN(a, CACHE_LINE);
		if (l == last)
			l += CACHE_LINE;
		if (l < a + e->len)
			MUT_FLUSH(site, &r->persist, (const void *)l,
			          a + e->len - l);
		last = ALIGN_DOWN(a + e->len - 1, CACHE_LINE);
	}
}

/* Step 3, and what follows it: IDLE, then give back the objects' bits and
 * the freed blocks (D5). */
static void retire(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	/* No flush: the next commit or truncation, in whatever thread,
	 * flushes it before its barrier (the retire cover, tx.c R3). */
	desc_store_state(r, tx->d, tx->version, tx->kind, PMTX_DS_IDLE,
	                 MUT_REDO_IDLE_MARK);
	retire_note(r, tx->idx);
	clear_bits(tx);
	for (size_t i = 0; i < tx->alog.n; i++)
		if (PMTX_AE_OP(tx->alog.e[i].info) == PMTX_AE_FREE)
			heap_release(r->heap, &tx->alog.e[i]);
}

int redo_truncate_one(struct pmtx_tx *tx)
{
	if (tx->trunc_pending == TRUNC_FULL) {
		flush_written(tx, MUT_REDO_TRUNC_DATA_FLUSH);
		for (size_t i = 0; i < tx->alog.n; i++)
			heap_flush_entry(tx->r, &tx->alog.e[i]);
	}
	/* D6: the barrier also orders this IDLE after the previous ones,
	 * whichever thread wrote them (the retire cover, tx.c R3). */
	retire_cover_begin(tx);
	int rc = MUT_BARRIER(MUT_REDO_TRUNC_BARRIER, &tx->r->persist);
	retire_cover_end(tx);
	retire(tx); /* D8 */
	return rc;
}

static void apply_allocs(struct pmtx_tx *tx)
{
	for (size_t i = 0; i < tx->alog.n; i++)
		heap_apply(tx->r, &tx->alog.e[i]); /* built by the heap: valid */
}

static int redo_commit(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	if (tx->nents == 0 && tx->alog.n == 0) {
		clear_bits(tx);
		return tx->unfenced
		       ? MUT_BARRIER(MUT_REDO_NAKED_BARRIER, &r->persist)
		       : 0;
	}
	uint64_t rec;
	int rc = logw_reserve(r, &tx->log, 2 * sizeof(uint64_t), &rec);
	if (!rc && tx->unfenced) /* D10 */
		rc = MUT_BARRIER(MUT_REDO_NAKED_ORDER_BARRIER, &r->persist);
	if (rc) {
		tx->rt->abort(tx);
		alog_unreserve(tx);
		return rc;
	}
	/* D7: from here on, a failed barrier does not stop the commit. */
	rc = commit_durable(tx);
	apply_in_place(tx);
	apply_allocs(tx);
	if (tx->kind == PMTX_RT_REDO_ASYNC && tx->mybit) {
		int rc2 = async_enqueue(tx, TRUNC_FULL);
		return rc ? rc : rc2;
	}
	flush_written(tx, MUT_REDO_DATA_FLUSH);
	int rc2 = MUT_BARRIER(MUT_REDO_APPLY_BARRIER, &r->persist);
	rc = rc ? rc : rc2;
	/* D6: behind older truncations, retire in order. */
	if (atomic_load(&r->txm->async_pending))
		rc2 = async_enqueue(tx, TRUNC_RETIRE);
	else
		retire(tx);
	return rc ? rc : rc2;
}

static int redo_abort(struct pmtx_tx *tx)
{
	clear_bits(tx);
	return 0;
}

/* Allocations of a redo-async transaction carry its bit too (D4b), so a
 * later free of the block waits for the allocation to be durable. */
int redo_own_alloc(struct pmtx_tx *tx, uint64_t user_off)
{
	return own_object(tx, user_off - sizeof(struct pmtx_objhdr));
}

/* ---- recovery ---- */

static int redo_recover(pmtx_region *r, unsigned i,
                        const struct pmtx_rec **recs, size_t n,
                        int committed, int *wrote)
{
	(void)i;
	/* D2: nothing was written in place. The records of an uncommitted
	 * log are not validated: without a matching batch checksum (D1) any
	 * of their words may be torn. */
	if (!committed)
		return 0;
	for (size_t k = 0; k + 1 < n; k++)
		if (recs[k]->type != PMTX_REC_REDO || recs[k]->off > r->size ||
		    !tx_data_range_ok(r, region_at(r, recs[k]->off),
		                      recs[k]->len))
			return PMTX_E_CORRUPT;
	for (size_t k = 0; k + 1 < n; k++) {
		void *dst = region_at(r, recs[k]->off);
		memcpy(dst, rec_payload(recs[k]), recs[k]->len);
		MUT_FLUSH(MUT_REDO_RECOVER_FLUSH, &r->persist, dst,
		          recs[k]->len);
	}
	*wrote = 1;
	return 0;
}

/* The two modes share every function; commit reads tx->kind. */
#define REDO_TABLE(k)                                                         \
	{                                                                     \
		.kind = (k), .begin = redo_begin, .add_range = redo_add_range, \
		.write = redo_write, .read = redo_read, .commit = redo_commit, \
		.abort = redo_abort, .recover = redo_recover,                  \
	}

const struct tx_runtime redo_runtime = REDO_TABLE(PMTX_RT_REDO);
const struct tx_runtime redo_async_runtime = REDO_TABLE(PMTX_RT_REDO_ASYNC);
