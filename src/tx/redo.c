/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redo.c - the redo-log runtimes (seed 000 section 4.2; asynchronous
 * truncation from seed 004): `redo` and `redo-async`.
 *
 * A write touches DRAM only: the transaction's write set holds, per cache
 * line, the newest bytes it wrote there and a mask of which bytes those
 * are (struct wline), found through a hash map keyed by line. A read is a
 * plain load when the transaction has written nothing; otherwise the load
 * is followed by one map lookup per line, which overlays the bytes the
 * transaction wrote. The data in place is untouched until commit.
 *
 * Commit turns the write set into the log: runs of written bytes, merged
 * across consecutive lines, become entries (8-byte header with offset and
 * length, then the bytes; layout.h, PMTX_RE_*), packed into as few redo
 * records as the log chunks allow. A word written once costs 16 bytes of
 * log, and a word written many times is logged once.
 *
 * Writes are checked against the object that holds them (the root, or a
 * block of the heap: a write to memory that belongs to no block fails with
 * PMTX_E_RANGE), once per object and transaction: the object last
 * written is remembered, and a write inside it is not checked again.
 *
 * Barrier sequence, `redo` (synchronous truncation):
 *   writes      DRAM only                                    -> 0 barriers
 *   commit  1.  redo records (the write set), COMMIT record (CSN,
 *               allocation count), allocation-log
 *               entries, descriptor RUNNING                  -> 1 barrier
 *               (the transaction is durable here)
 *           2.  apply the write set in place, apply the
 *               allocation log to the heap, flush            -> 1 barrier
 *           3.  descriptor IDLE: a store, no flush, no barrier (tx.c R3)
 *   abort       drop the log: nothing was written in place   -> 0 barriers
 *   So 2 barriers per commit, whatever the number of writes and
 *   allocations, plus 1 before step 1 if the transaction made naked
 *   flushes (D10); none for a transaction that wrote and allocated
 *   nothing.
 *
 * `redo-async`: step 1, then the write set and the allocation log are
 * applied in place with plain stores and flushed before commit returns,
 * so every thread sees the new data at once: 1 barrier on the critical
 * path. The barrier that makes the data durable is the committing
 * thread's next commit barrier, after which that commit retires this
 * transaction with a store (D12); so a thread that commits redo-async
 * transactions one after another pays 1 barrier per commit. A truncation
 * with a barrier of its own runs only when that does not happen soon: in
 * the region's truncation thread (after a grace period), or in a thread
 * that needs the descriptor or one of its objects (tx.c: drain_until),
 * or at pmtx_drain and pmtx_close.
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
 *  D12. A redo-async transaction's data is flushed at commit by the
 *      committing thread, which records itself as the flusher. It may be
 *      retired (IDLE stored) without a barrier of its own only by the same
 *      thread, right after a later commit barrier of that thread returned
 *      without error (a barrier orders only its own thread's flushes), and
 *      only if it is the head of the queue, no IDLE store is under way
 *      (txm.retiring) and every IDLE recorded for the retire cover is
 *      known durable (pend_seq <= done_seq for every descriptor): then
 *      every earlier IDLE is durable and this one is ordered after them
 *      (D6). So one such retirement per barrier, since two IDLE stores
 *      with no barrier between them may persist in either order. A sync
 *      redo commit retires it in the same way after its COMMIT barrier, so
 *      the redo-async transaction before it is not left to a truncation
 *      with a barrier of its own; and it reads async_pending before its
 *      apply barrier, which covers the IDLE of a truncation finished
 *      before that read. Any other thread truncating it flushes the data
 *      again, then issues its barrier.
 *  D13. A sync redo log queued for retirement behind redo-async ones (D6)
 *      is replayed by recovery until it is retired, exactly as they are,
 *      so D4(b) holds for it too: before commit returns, every object its
 *      write set touches carries its bit, which its retirement clears
 *      (W1); a descriptor without a bit, or a commit that cannot record
 *      its objects, waits for its own retirement instead. Without this,
 *      an undo transaction over the same data (one that drained only the
 *      redo-async logs it saw bits of) could commit, and recovery would
 *      replay the older redo log over it.
 *  D11. The write set holds each written byte once, with its newest value,
 *      so the log holds it once too, and the apply stores and flushes each
 *      line once. Entries of one log never overlap, so their order within
 *      the log does not matter to recovery.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "objbits.h"
#include "tx.h"

#define OBJ_MARK (-2)
#define LINE_MASK(at, n) ((n) >= 64 ? ~0ull : ((1ull << (n)) - 1) << (at))
/* A record is cut short to fill the rest of a chunk only if that rest
 * holds at least this many payload bytes; otherwise it starts in the next
 * chunk, and holds at most REC_MAX bytes of entries. */
#define REC_MIN 512u
#define REC_MAX (32u * 1024u)

static int redo_begin(struct pmtx_tx *tx)
{
	logw_reset(tx->r, &tx->log, tx->d->log_head);
	idxmap_clear(&tx->objs);
	u64map_clear(&tx->wmap);
	tx->obj_lo = tx->obj_hi = 0;
	tx->nwl = 0;
	return 0;
}

/* ---- the write set ---- */

/* The write-set line at offset line, added empty if absent; NULL if out
 * of memory (the set is then unchanged). */
static struct wline *wline_get(struct pmtx_tx *tx, uint64_t line)
{
	const uint64_t *hit = u64map_find(&tx->wmap, line);
	if (hit)
		return &tx->wl[*hit];
	if (pmtx_reserve(&tx->wl, tx->nwl, 1, &tx->capwl, sizeof(*tx->wl), 64))
		return NULL;
	int fresh;
	uint64_t *v = u64map_insert(&tx->wmap, line, &fresh);
	if (!v)
		return NULL;
	if (!fresh)
		return &tx->wl[*v];
	*v = tx->nwl;
	struct wline *l = &tx->wl[tx->nwl++];
	l->off = line;
	l->mask = 0;
	return l;
}

static int wset_put(struct pmtx_tx *tx, uint64_t off, const char *src,
                    size_t n)
{
	while (n > 0) {
		uint64_t line = ALIGN_DOWN(off, CACHE_LINE);
		unsigned at = (unsigned)(off - line);
		size_t k = MIN(n, CACHE_LINE - at);
		struct wline *l = wline_get(tx, line);
		if (!l)
			return ENOMEM;
		pmtx_copy(l->data + at, src, k);
		l->mask |= LINE_MASK(at, k);
		off += k, src += k, n -= k;
	}
	return 0;
}

/* A loop over the runs of set bits of mask, in order: each run starts at
 * bit at and is len bits long. */
#define FOR_EACH_RUN(mask, at, len)                                           \
	for (uint64_t m_ = (mask), at, len;                                   \
	     m_ && ((at = (uint64_t)__builtin_ctzll(m_)),                     \
	            (len = (~(m_ >> at) ? (uint64_t)__builtin_ctzll(~(m_ >> at)) \
	                                : 64 - at)),                          \
	            1);                                                       \
	     m_ &= ~LINE_MASK(at, len))

/* Overlay on out (the bytes of [off, off+n) as loaded) those that the
 * write set holds. */
static void wset_overlay(const struct pmtx_tx *tx, uint64_t off, char *out,
                         size_t n)
{
	while (n > 0) {
		uint64_t line = ALIGN_DOWN(off, CACHE_LINE);
		unsigned at = (unsigned)(off - line);
		size_t k = MIN(n, CACHE_LINE - at);
		const uint64_t *v = u64map_find(&tx->wmap, line);
		if (v) {
			const struct wline *l = &tx->wl[*v];
			uint64_t want = LINE_MASK(at, k);
			if ((l->mask & want) == want)
				pmtx_copy(out, l->data + at, k);
			else
				FOR_EACH_RUN(l->mask & want, s, len)
					memcpy(out + (s - at), l->data + s, len);
		}
		off += k, out += k, n -= k;
	}
}

/* ---- writes ---- */

/* Note that this transaction writes (or allocated) the object at base:
 * redo-async sets its writers bit, once (W1, D4b). */
static int set_bit(struct pmtx_tx *tx, uint64_t base)
{
	if (idxmap_get(&tx->objs, base) == OBJ_MARK)
		return 0;
	objbits_set(tx->r, objhdr_at(tx->r, base), tx->mybit);
	return idxmap_put(&tx->objs, base, OBJ_MARK);
}

static int own_object(struct pmtx_tx *tx, uint64_t base)
{
	if (tx->kind != PMTX_RT_REDO_ASYNC || !tx->mybit)
		return 0;
	return set_bit(tx, base);
}

/* Check that [off, off+n) lies in objects, and own each of them; the last
 * one is remembered, so that the next write inside it skips this. */
static int check_objects(struct pmtx_tx *tx, uint64_t off, size_t n)
{
	for (uint64_t end = off + n; off < end;) {
		uint64_t base, oend;
		int rc = tx_object_span(tx->r, off, &base, &oend);
		if (rc || (rc = own_object(tx, base)))
			return rc;
		tx->obj_lo = base + sizeof(struct pmtx_objhdr);
		tx->obj_hi = oend;
		off = oend;
	}
	return 0;
}

static int redo_write(struct pmtx_tx *tx, void *dst, const void *src,
                      size_t n)
{
	uint64_t off = region_off(tx->r, dst);
	if (off < tx->obj_lo || off + n > tx->obj_hi) {
		int rc = check_objects(tx, off, n);
		if (rc)
			return rc;
	}
	return wset_put(tx, off, src, n);
}

static int redo_read(struct pmtx_tx *tx, void *dst, const void *src,
                     size_t n)
{
	pmtx_copy(dst, src, n);
	if (tx->nwl)
		wset_overlay(tx, region_off(tx->r, src), dst, n);
	return 0;
}

/* add_range announces a store in place, which redo forbids before commit
 * (D2): nothing could undo it after a crash. Redo writes go through
 * pmtx_write; add_range is for the undo runtime. */
static int redo_add_range(struct pmtx_tx *tx, void *p, size_t n)
{
	(void)tx, (void)p, (void)n;
	return PMTX_E_UNSUPPORTED;
}

/* ---- the log ---- */

static int rbuf_room(struct pmtx_tx *tx, size_t more)
{
	if (tx->rlen + more <= tx->rcap)
		return 0;
	size_t cap = MAX(tx->rcap * 2, tx->rlen + more + 4096);
	unsigned char *n = realloc(tx->rbuf, cap);
	if (!n)
		return ENOMEM;
	tx->rbuf = n, tx->rcap = cap;
	return 0;
}

/* The write set as entries in tx->rbuf: one per run of written bytes,
 * runs that continue each other across lines merged, up to
 * PMTX_RE_MAX_LEN bytes an entry. */
/* Close the entry whose word is at hdr: write the word, pad to 8 (the
 * caller has made room for the padding). */
static void close_entry(struct pmtx_tx *tx, size_t hdr, uint64_t off,
                        uint64_t len)
{
	uint64_t w = PMTX_RE_WORD(off, len);
	memcpy(tx->rbuf + hdr, &w, 8);
	while (tx->rlen % 8)
		tx->rbuf[tx->rlen++] = 0;
}

static int build_entries(struct pmtx_tx *tx)
{
	size_t hdr = 0;              /* where the open entry's word is */
	uint64_t eoff = 0, elen = 0; /* the open entry, elen 0: none */
	tx->rlen = 0;
	for (size_t i = 0; i < tx->nwl; i++) {
		const struct wline *l = &tx->wl[i];
		FOR_EACH_RUN(l->mask, at, len) {
			uint64_t off = l->off + at;
			/* padding, a word, the bytes */
			if (rbuf_room(tx, 8 + 8 + len))
				return ENOMEM;
			if (!elen || eoff + elen != off ||
			    elen + len > PMTX_RE_MAX_LEN) {
				if (elen)
					close_entry(tx, hdr, eoff, elen);
				hdr = tx->rlen;
				tx->rlen += 8;
				eoff = off, elen = 0;
			}
			pmtx_copy(tx->rbuf + tx->rlen, l->data + at, len);
			tx->rlen += len, elen += len;
		}
	}
	if (elen) {
		if (rbuf_room(tx, 8))
			return ENOMEM;
		close_entry(tx, hdr, eoff, elen);
	}
	return 0;
}

/* The longest run of whole entries from p (at most n bytes) that fits in
 * room bytes; *count gets their number. */
static size_t entries_fit(const unsigned char *p, size_t n, size_t room,
                          uint64_t *count)
{
	size_t used = 0;
	*count = 0;
	while (used < n) {
		uint64_t w;
		memcpy(&w, p + used, 8);
		size_t b = PMTX_RE_BYTES(PMTX_RE_LEN(w));
		if (used + b > room)
			break;
		used += b;
		(*count)++;
	}
	return used;
}

/* Payload bytes a record can hold in the rest of the writer's chunk. */
static size_t chunk_room(const struct logw *w)
{
	size_t over = PMTX_REC_BYTES(0);
	return w->end - w->pos > over ? ALIGN_DOWN(w->end - w->pos - over, 8)
	                              : 0;
}

/* Write the entries as redo records, flushed, no barrier (D1). */
static int put_records(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	int rc = build_entries(tx);
	tx->nrecs = 0;
	for (size_t done = 0; !rc && done < tx->rlen;) {
		const unsigned char *p = tx->rbuf + done;
		size_t left = tx->rlen - done, room = chunk_room(&tx->log);
		uint64_t count, rec;
		size_t take = entries_fit(p, left, room, &count);
		if (take < left && take < REC_MIN)
			take = entries_fit(p, left, REC_MAX, &count);
		if ((rc = logw_reserve(r, &tx->log, take, &rec)) ||
		    (rc = tx_recs_push(tx, rec)))
			break;
		log_put(r, &tx->log, rec, PMTX_REC_REDO, tx->version, count, p,
		        take, LOG_BATCH);
		done += take;
	}
	return rc;
}

/* ---- commit ---- */

static void clear_bits(struct pmtx_tx *tx)
{
	if (!tx->mybit)
		return;
	for (uint32_t i = 0; i < tx->objs.n; i++)
		objbits_clear(tx->r, objhdr_at(tx->r, idxmap_key(&tx->objs, i)),
		              tx->mybit);
}

/* The batch checksum (layout.h, PMTX_RF_BATCH; D1, D9): the records'
 * spans in log order, then the allocation-log entries. */
static uint64_t batch_checksum(const struct pmtx_tx *tx)
{
	const pmtx_region *r = tx->r;
	struct pmtx_hasher h;
	pmtx_hash_init(&h, PMTX_CSUM_SEED_REC);
	for (size_t i = 0; i < tx->nrecs; i++) {
		const struct pmtx_rec *rec = region_at(r, tx->recs[i]);
		pmtx_hash_update(&h, rec, log_rec_span(rec->len));
	}
	if (tx->alog.n)
		pmtx_hash_update(&h, tx->alog.e,
		                 tx->alog.n * sizeof(*tx->alog.e));
	return pmtx_hash_digest(&h);
}

/* Step 1: the transaction becomes durable (D1). The log has room for the
 * COMMIT at rec. */
static int commit_durable(struct pmtx_tx *tx, uint64_t rec)
{
	pmtx_region *r = tx->r;
	uint64_t body[2];
	size_t nalloc = tx->alog.n;
	retire_cover_begin(tx);
	tx_mark_running(tx);
	tx->csn = atomic_fetch_add(&r->txm->next_csn, 1);
	body[0] = tx->csn;
	body[1] = MUT_SKIP(MUT_REDO_BATCH_CHECK) ? 0 : batch_checksum(tx);
	log_put(r, &tx->log, rec, PMTX_REC_COMMIT, tx->version, nalloc, body,
	        sizeof(body), LOG_CSUM);
	alog_flush(tx);
	int rc = MUT_BARRIER(MUT_REDO_COMMIT_BARRIER, &r->persist);
	retire_cover_end(tx);
	return rc;
}

static void apply_in_place(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	for (size_t i = 0; i < tx->nwl; i++) {
		const struct wline *l = &tx->wl[i];
		char *dst = region_at(r, l->off);
		if (l->mask == ~0ull) {
			memcpy(dst, l->data, CACHE_LINE);
			TRACE_STORE(&r->persist, dst, CACHE_LINE, DATA);
			continue;
		}
		FOR_EACH_RUN(l->mask, at, len) {
			pmtx_copy(dst + at, l->data + at, len);
			TRACE_STORE(&r->persist, dst + at, len, DATA);
		}
	}
}

/* Flush every line of the write set, once each. site: the mutation site
 * (commit or truncation). */
static void flush_written(struct pmtx_tx *tx, unsigned site)
{
	pmtx_region *r = tx->r;
	for (size_t i = 0; i < tx->nwl; i++)
		MUT_FLUSH(site, &r->persist, region_at(r, tx->wl[i].off),
		          CACHE_LINE);
}

/* Step 3, and what follows it: IDLE, then give back the objects' bits and
 * the freed blocks (D5). */
void redo_retire(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	/* No flush: the next commit or truncation, in whatever thread,
	 * flushes it before its barrier (the retire cover, tx.c R3). */
	/* D12: retiring counts this IDLE store from before it is made
	 * until retire_note has recorded it for the retire cover. */
	atomic_fetch_add(&r->txm->retiring, 1);
	desc_store_state(r, tx->d, tx->version, tx->kind, PMTX_DS_IDLE,
	                 MUT_REDO_IDLE_MARK);
	retire_note(r, tx->idx);
	atomic_fetch_sub(&r->txm->retiring, 1);
	clear_bits(tx);
	for (size_t i = 0; i < tx->alog.n; i++)
		if (PMTX_AE_OP(tx->alog.e[i].info) == PMTX_AE_FREE)
			heap_release(r->heap, &tx->alog.e[i]);
}

/* The data lines and heap metadata of a transaction applied in place. */
static void flush_applied(struct pmtx_tx *tx)
{
	flush_written(tx, MUT_REDO_TRUNC_DATA_FLUSH);
	for (size_t i = 0; i < tx->alog.n; i++)
		heap_flush_entry(tx->r, &tx->alog.e[i]);
}

int redo_truncate_one(struct pmtx_tx *tx)
{
	/* D12: a barrier orders only its own thread's flushes. */
	if (atomic_load(&tx->trunc_pending) == TRUNC_FLUSHED &&
	    tx->flusher != tx_thread_id())
		flush_applied(tx);
	/* D6: the barrier also orders this IDLE after the previous ones,
	 * whichever thread wrote them (the retire cover, tx.c R3). */
	retire_cover_begin(tx);
	int rc = MUT_ORDER(MUT_REDO_TRUNC_BARRIER, &tx->r->persist);
	retire_cover_end(tx);
	redo_retire(tx); /* D8 */
	return rc;
}

static void apply_allocs(struct pmtx_tx *tx)
{
	for (size_t i = 0; i < tx->alog.n; i++)
		heap_apply(tx->r, &tx->alog.e[i]); /* built by the heap: valid */
}

/* Everything that may fail before the COMMIT is written: the records,
 * room for the COMMIT, and the barrier of naked flushes (D10). The COMMIT
 * goes at *rec. */
static int commit_prepare(struct pmtx_tx *tx, uint64_t *rec)
{
	pmtx_region *r = tx->r;
	int rc = put_records(tx);
	if (!rc)
		rc = logw_reserve(r, &tx->log, 2 * sizeof(uint64_t), rec);
	if (!rc && tx->unfenced) /* D10 */
		rc = MUT_ORDER(MUT_REDO_NAKED_ORDER_BARRIER, &r->persist);
	return rc;
}

/* redo-async after step 1 (D12): flush what was applied, retire the
 * previous transaction if this commit's barrier made its data durable,
 * and queue this one. rc: the commit barrier's. */
static int commit_async(struct pmtx_tx *tx, int rc)
{
	flush_applied(tx);
	if (MUT_SKIP(MUT_REDO_COVER_WAIT)) {
		/* the mutant retires before any barrier covers the flushes */
		redo_retire(tx);
		return rc;
	}
	if (rc == 0)
		async_retire_covered(tx->r);
	tx->flusher = tx_thread_id();
	int rc2 = async_enqueue(tx, TRUNC_FLUSHED);
	return rc ? rc : rc2;
}

/* Every object the write set touches gets this transaction's bit (a
 * run of written bytes never leaves its object: writes are checked
 * against objects, and object headers lie between them). */
static int own_written(struct pmtx_tx *tx)
{
	for (size_t i = 0; i < tx->nwl; i++)
		FOR_EACH_RUN(tx->wl[i].mask, at, len) {
			uint64_t off = tx->wl[i].off + at, base, end;
			int rc = tx_object_span(tx->r, off, &base, &end);
			if (rc || (rc = set_bit(tx, base)))
				return rc;
		}
	return 0;
}

/* D13: a sync redo log queued for retirement behind redo-async ones is
 * owned like theirs, or, where it cannot be (no bit, no memory), waits
 * for its own retirement. */
static int queue_retire(struct pmtx_tx *tx)
{
	if (MUT_SKIP(MUT_MIX_QUEUE_OWN))
		return async_enqueue(tx, TRUNC_RETIRE);
	int owned = tx->mybit && own_written(tx) == 0;
	int rc = async_enqueue(tx, TRUNC_RETIRE);
	return rc || owned ? rc : drain_until(tx->r, tx);
}

static int redo_commit(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	if (tx->nwl == 0 && tx->alog.n == 0) {
		clear_bits(tx);
		return tx->unfenced
		       ? MUT_BARRIER(MUT_REDO_NAKED_BARRIER, &r->persist)
		       : 0;
	}
	uint64_t rec;
	int rc = commit_prepare(tx, &rec);
	if (rc) {
		tx->rt->abort(tx);
		alog_unreserve(tx);
		return rc;
	}
	/* D7: from here on, a failed barrier does not stop the commit. */
	rc = commit_durable(tx, rec);
	apply_in_place(tx);
	apply_allocs(tx);
	if (tx->kind == PMTX_RT_REDO_ASYNC && tx->mybit)
		return commit_async(tx, rc);
	if (rc == 0) /* D12 */
		async_retire_covered(r);
	flush_written(tx, MUT_REDO_DATA_FLUSH);
	/* D6: behind older truncations, retire in order; read before the
	 * barrier, whose retire cover then covers every IDLE of a
	 * truncation finished before the read (D12). */
	int pending = atomic_load(&r->txm->async_pending);
	retire_cover_begin(tx);
	int rc2 = MUT_ORDER(MUT_REDO_APPLY_BARRIER, &r->persist);
	retire_cover_end(tx);
	rc = rc ? rc : rc2;
	if (pending)
		rc2 = queue_retire(tx);
	else
		redo_retire(tx);
	return rc ? rc : rc2;
}

static int redo_abort(struct pmtx_tx *tx)
{
	clear_bits(tx);
	return 0;
}

/* The write set, as runs that continue each other across lines merged
 * up to 4 KiB, handed to write in first-write order (redo_to_undo). */
static int hand_over(struct pmtx_tx *tx, const struct wline *wl, size_t n,
                     int (*write)(struct pmtx_tx *, void *, const void *,
                                  size_t))
{
	unsigned char run[PMTX_RE_MAX_LEN];
	uint64_t start = 0;
	size_t len = 0;
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++)
		FOR_EACH_RUN(wl[i].mask, at, k) {
			uint64_t off = wl[i].off + at;
			if (len && (off != start + len || len + k > sizeof(run))) {
				if ((rc = write(tx, region_at(tx->r, start), run,
				                len)))
					break;
				len = 0;
			}
			if (!len)
				start = off;
			memcpy(run + len, wl[i].data + at, k);
			len += k;
		}
	if (!rc && len)
		rc = write(tx, region_at(tx->r, start), run, len);
	return rc;
}

int redo_to_undo(struct pmtx_tx *tx,
                 int (*write)(struct pmtx_tx *, void *, const void *, size_t))
{
	clear_bits(tx); /* undo resolves conflicts by waiting (D4b) */
	idxmap_clear(&tx->objs);
	tx->rt = &undo_runtime;
	tx->kind = PMTX_RT_UNDO;
	tx->sv_written = 0; /* redo marks RUNNING only at commit (T2) */
	int rc = undo_runtime.begin(tx);
	if (!rc)
		rc = hand_over(tx, tx->wl, tx->nwl, write);
	tx->nwl = 0;
	u64map_clear(&tx->wmap);
	return rc;
}

/* Allocations of a redo-async transaction carry its bit too (D4b), so a
 * later free of the block waits for the allocation to be durable. */
int redo_own_alloc(struct pmtx_tx *tx, uint64_t user_off)
{
	return own_object(tx, user_off - sizeof(struct pmtx_objhdr));
}

/* ---- recovery ---- */

/* Calls fn on each entry of a redo record; 0, or PMTX_E_CORRUPT at the
 * first entry that is malformed or outside the user data (every entry is
 * checked before the first is applied: redo_recover). */
static int for_each_entry(pmtx_region *r, const struct pmtx_rec *h,
                          void (*fn)(pmtx_region *, uint64_t off,
                                     const void *src, size_t len))
{
	const unsigned char *p = rec_payload(h);
	size_t used = 0;
	uint64_t count = 0;
	while (used < h->len) {
		uint64_t w;
		if (h->len - used < 8)
			return PMTX_E_CORRUPT;
		memcpy(&w, p + used, 8);
		uint64_t off = PMTX_RE_OFF(w);
		size_t len = PMTX_RE_LEN(w);
		if (len == 0 || len > PMTX_RE_MAX_LEN ||
		    PMTX_RE_BYTES(len) > h->len - used || off >= r->size ||
		    !tx_data_range_ok(r, region_at(r, off), len))
			return PMTX_E_CORRUPT;
		if (fn)
			fn(r, off, p + used + 8, len);
		used += PMTX_RE_BYTES(len);
		count++;
	}
	return count == h->off ? 0 : PMTX_E_CORRUPT;
}

static void replay_entry(pmtx_region *r, uint64_t off, const void *src,
                         size_t len)
{
	void *dst = region_at(r, off);
	memcpy(dst, src, len);
	MUT_FLUSH(MUT_REDO_RECOVER_FLUSH, &r->persist, dst, len);
}

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
		if (recs[k]->type != PMTX_REC_REDO ||
		    for_each_entry(r, recs[k], NULL))
			return PMTX_E_CORRUPT;
	for (size_t k = 0; k + 1 < n; k++)
		for_each_entry(r, recs[k], replay_entry);
	*wrote = 1;
	return 0;
}

/* The two modes share every function; commit reads tx->kind. */
const struct tx_runtime redo_runtime =
	TX_RUNTIME(PMTX_RT_REDO, redo, redo_read);
const struct tx_runtime redo_async_runtime =
	TX_RUNTIME(PMTX_RT_REDO_ASYNC, redo, redo_read);
