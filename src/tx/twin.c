/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * twin.c - the twin runtime (PMTX_RT_TWIN): the design of RomulusLog
 * (Correia, Felber, Ramalhete, "Romulus: Efficient Algorithms for
 * Persistent Transactional Memory", SPAA 2018), on pmtx's regions.
 *
 * A twin region (layout.h 3.2, sealed in 3.3) keeps a back copy of its
 * mirrored area, [root_off, twin_off): the root, the heap metadata and
 * the heap. A transaction stores in place and reads with plain loads; it
 * remembers in DRAM which lines it stored to (tx->recs, one offset per
 * line, in first-store order; a bitmap of the region's lines keeps each
 * line out of recs after its first store) and which ranges (tx->trng,
 * for abort). One word, rstate.twin (G2), and for small transactions the
 * seal (layout.h S1-S3), say which copy is the truth after a crash.
 *
 * Barrier sequence of a transaction that writes or allocates, in a sealed
 * region (layout.h 3.3) when it stored to at most SEAL_MAX_LINES lines
 * (a small transaction):
 *   first store (a)  state := MUTATING, flush                -> 1 barrier
 *                    (none in a region that reseals, layout.h 3.5, when
 *                    the transaction before committed by its seal: TW13)
 *   commit           allocation entries applied to the heap metadata in
 *                    the data area (not flushed: they are lines of the
 *                    transaction too); every line flushed; the seal
 *                    (seq, the lines, a check word over them and their
 *                    contents) written with non-temporal stores
 *                                            -> barrier (b): the commit
 *                    each line copied to the back copy with
 *                    non-temporal stores                      -> barrier (d)
 *                    the state word stays MUTATING
 *   total 3; 2 after a small commit in a region that reseals. Otherwise
 *   (a large transaction, or a 3.2 region, which has no seal):
 *   first store (a)  as above                                 -> 1 barrier
 *   commit           allocations applied, every line flushed -> barrier (b)
 *                    state := COPYING, flush: the commit point -> barrier (c)
 *                    back copy, as above                      -> barrier (d)
 *                    state := IDLE                            (no flush)
 *   total 4 (3 after a small commit in a region that reseals). A seal
 *   costs a checksum of each line and 8 bytes of seal per
 *   line; barrier (c) costs about as much as SEAL_MAX_LINES of them
 *   (`pmtx-bench sps` at k = 16 and 32: docs/results/seal-2026-11-26 in
 *   git's history, before d144efc).
 *   0 barriers for a transaction that only reads.
 *   Abort: each line restored from the back copy, flushed -> 1 barrier;
 *   state := IDLE. Close: state := IDLE, flush              -> 1 barrier.
 *   The back copy and the seal are written with non-temporal stores: the
 *   back copy is not read until the next crash, and both are rewritten
 *   by later transactions, so caching them would cost a read for
 *   ownership and a flush per line for nothing. IDLE is not flushed: it
 *   only spares the next open a pass over the region, and a flush right
 *   before the locked instructions that end a transaction would make them
 *   wait for its write-back like one more barrier (`pmtx-bench costs`:
 *   lock_after_flush); close makes it durable. A small transaction does
 *   not even store it: the store would miss (the line was just written
 *   back) and the same locked instructions would wait for the miss.
 * Recovery (at open, before the heap is rebuilt): MUTATING with an
 * accepted seal of the same seq (layout.h S2) -> the sealed lines of the
 * data area over the back copy, then, in a region that reseals, the back
 * copy over every other line (TW13); MUTATING otherwise -> the back copy
 * over the data area; COPYING -> the data area over the back copy. Each
 * pass
 * covers the root, the heap metadata and the superblocks in use (TW14);
 * only the lines that differ are written; they are flushed, and so is
 * the data a copy was taken from (TW8) -> 1 barrier; state := IDLE,
 * flush.
 *
 * Invariants
 *  TW1. At rest (no twin transaction past its first store) every byte of
 *       the mirrored area that a committed transaction wrote, or that a
 *       naked flush outside a transaction made durable, is the same in
 *       both copies, durably. (At create both copies are all zero.) Bytes
 *       of blocks that are free may differ: their contents are
 *       unspecified until a transaction writes them.
 *  TW2. A transaction stores into the data area only after MUTATING is
 *       durable (barrier (a), taken at the first store, allocation, free
 *       or pmtx_add_range, or the MUTATING of an earlier transaction
 *       that is still the durable word, TW13). So a crash that leaves
 *       MUTATING finds the state before the transaction in the back copy
 *       (TW1), and recovery copies it back over the data area.
 *  TW3. COPYING is stored only after every line the transaction stored to
 *       is durable (barrier (b)): its data, the ranges of pmtx_flush calls
 *       made inside it, and the heap metadata of its allocations and
 *       frees. A durable COPYING therefore means the data area holds the
 *       committed state, and recovery copies it over the back copy.
 *  TW4. The back copy is written only after COPYING is durable (barrier
 *       (c), the commit point: commit may report success from here on),
 *       and the transaction ends only after the back copy is durable
 *       (barrier (d)), so the next MUTATING never persists before it.
 *       IDLE is stored without a flush or a barrier of its own: it only
 *       spares the next open a pass over the region, and the next
 *       transaction's MUTATING supersedes it in the same word (a line
 *       persists its stores in order: the word never goes back). A
 *       region closed cleanly has it durable (pmtx_close).
 *  TW5. Twin transactions of a region run one at a time: txm->twin_lock
 *       is held from begin to end (tx.c), and a naked flush outside
 *       transactions takes it too. So one state word describes them all,
 *       no transaction's lines hold another's uncommitted bytes when they
 *       are copied, and no naked flush copies a running transaction's
 *       bytes to the back copy.
 *  TW6. Twin transactions write no allocation log: the metadata stores of
 *       their allocations and frees are made in the data area at commit,
 *       before barrier (b), and are mirrored and rolled back like data.
 *       Freed blocks return to the DRAM heap after barrier (d). A naked
 *       flush outside any running transaction copies its range to the
 *       back copy (under the twin lock, TW5) and flushes both, so the
 *       barrier that makes it durable leaves TW1 true for it; until that
 *       barrier the two copies may differ there, and a crash during a
 *       later transaction may bring the older bytes back, as a crash
 *       before the barrier may. Inside a running transaction the range
 *       joins it (its stores must then come after the transaction's first
 *       store or allocation, or be declared with pmtx_add_range first,
 *       so that MUTATING is durable before them: TW2).
 *  TW7. An abort restores, from the back copy, the ranges the transaction
 *       declared (other bytes of the same lines may be other threads'
 *       naked stores), and makes them durable before
 *       IDLE is stored, so no crash after the abort finds its bytes under
 *       an IDLE word. If that barrier fails, MUTATING stays: recovery
 *       would restore the same bytes.
 *  TW8. Recovery is idempotent: it copies one way in full (the lines that
 *       differ), makes the copy durable, then stores IDLE. A crash during
 *       it leaves the state word as it was, and the next open copies
 *       again. What it copies from is flushed too when it is the data
 *       area (COPYING, an accepted seal): after a process crash the data
 *       may be visible and not yet durable (the file backend's page
 *       cache), and IDLE must not persist before it. After a process
 *       crash (the open mark, layout.h G4) a pass also flushes every line
 *       it covers in the copy it writes: a line that reads the same in
 *       both copies may hold the dead process's stores, not durable (a
 *       store and a second one that put the old bytes back, or the back
 *       copy's non-temporal stores), and IDLE must not persist over them
 *       (recovery.c R4).
 *  TW9. A failed barrier (a) or (b) (PMTX_E_IO, file backend) aborts the
 *       transaction (its later calls and commit say PMTX_E_ABORTED); a
 *       seal written before a failed (b) stops matching once the abort
 *       has restored the lines (as in TW12), with the abort's barrier.
 *       Once
 *       COPYING is stored the commit is completed in memory (back copy,
 *       heap) and the barrier's error is returned, as undo does (undo.c
 *       U5). If barrier (d) fails, COPYING (or a small transaction's
 *       MUTATING and seal) stays and the next first store issues a
 *       barrier that must succeed before MUTATING is stored, so MUTATING
 *       never persists over an unfinished back copy; close then stores
 *       no IDLE, and the next open copies again (a retried barrier may
 *       write nothing: the file backend forgets a failed msync's
 *       ranges). Room for
 *       the lines of the allocations' metadata is made before any of
 *       those stores, so commit cannot fail half way through them.
 * TW10. A small transaction commits when its data lines and its seal are
 *       durable (barrier (b)); the seal's check word covers the lines'
 *       contents (layout.h S1), so a crash that leaves any of them
 *       stale, or the seal torn, leaves a seal recovery does not accept
 *       (S2), and MUTATING then restores the back copy (TW2). Its back
 *       copy is durable before commit returns (barrier (d)), as in TW4,
 *       so TW1 holds at rest and the next transaction's MUTATING, with a
 *       new seq, makes the old seal irrelevant. The check word is taken
 *       from the lines as commit copies them (stage_lines), so another
 *       thread's plain store into one of those lines between that copy
 *       and barrier (d) makes the seal not match: a crash in that window
 *       (before commit returns) then restores the back copy, which the
 *       back copy's writing may have half updated. Stores outside
 *       transactions into lines a running transaction writes race with
 *       it in any runtime (TW7 restores only declared ranges for them);
 *       programs that make them must not rely on that transaction being
 *       atomic under a crash.
 * TW11. A seal is accepted only for the seq of the durable state word.
 *       twin_seq only grows, is read back from the state word at open,
 *       and every MUTATING store takes a new one; the transactions that
 *       share one (TW13) each write their seal over the one before, in
 *       the same place. So the only seal that can be accepted is that of
 *       the last small transaction to commit under the durable word, or a
 *       torn mix of it and the next one's, which its check word refuses
 *       (S1 covers the list and the count). An aborted transaction
 *       therefore never has its own seal accepted, and is restored from
 *       the back copy (by the pass of TW13 for the lines the accepted
 *       seal does not list).
 * TW12. Recovery with an accepted seal copies only the sealed lines, data
 *       over back copy; both choices (seal accepted or not) are stable
 *       under a crash during recovery: copying data over the back copy
 *       changes neither the data nor the seal, and copying the back copy
 *       over the data leaves a seal that did not match still not matching
 *       unless the transaction's bytes equal what they replaced, where
 *       both choices give the same bytes. The pass of TW13 that follows
 *       an accepted seal copies the back copy over lines the seal does
 *       not list, so it does not change whether the seal is accepted.
 *       All of this takes the state word, the seal and its lines as
 *       durable: after a process crash they may be visible and not yet
 *       durable, and open first makes them so (recovery.c R4;
 *       twin_sweep_seal), else a power failure during recovery could
 *       refuse the seal that it accepted, over a back copy it had begun
 *       to overwrite.
 * TW13. Resealing (layout.h 3.5). After a small commit the durable state
 *       word is MUTATING, the seal lists that transaction's lines, and
 *       the back copy is durable (barrier (d)): the back copy holds the
 *       committed state except at the sealed lines, where the data area
 *       holds it and the seal matches. The next transaction may then
 *       store in place without barrier (a) (twin_sealed; cleared by a
 *       large commit and by an abort; a failed (d) resyncs first, TW9),
 *       because recovery after an accepted seal copies the back copy
 *       over every line the seal does not list. A crash then finds
 *       either
 *       - the seal accepted: the sealed lines hold what it sealed, which
 *         are the last committed bytes there (if this transaction stored
 *         into them, they still match only if unchanged), and every
 *         other line gets its committed bytes from the back copy;
 *       - or refused: a line it lists was changed by this transaction,
 *         or its seal was torn by this one's (TW11); the back copy then
 *         holds every committed byte (barrier (d) of the last small
 *         commit; this transaction writes its own back copy only after
 *         its seal is durable) and is copied over the data area.
 *       Once this transaction's seal and lines are durable (its barrier
 *       (b)), its seal is the one accepted, and the same holds for it.
 *       A large transaction that stored under the seal reaches its
 *       commit point with COPYING (c) as in TW3, and is rolled back in
 *       the same way until then.
 * TW14. A recovery pass copies only what is committed: the root, the heap
 *       metadata, and the superblocks that the committed copy's metadata
 *       (copied first) says hold allocated blocks (layout.h H2), so that
 *       its cost follows the heap in use, not the region's size. The
 *       bytes of free blocks are unspecified (TW1): a transaction's stores
 *       into a block it allocated, rolled back, stay in a superblock that
 *       is free again. A metadata entry the pass cannot read (a kind it
 *       does not know, a run past the heap) makes it copy every
 *       superblock from there on; the heap's own checks then judge it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tx.h"

/* ---- the state word ---- */

/* Store w in the state word; no flush. */
static void state_set(pmtx_region *r, uint64_t w, unsigned mark_site)
{
	struct pmtx_rstate *rs = region_rstate(r);
	if (!MUT_SKIP(mark_site)) {
		__atomic_store_n(&rs->twin, w, __ATOMIC_RELAXED);
		TRACE_STORE(&r->persist, &rs->twin, 8, DESC);
	}
}

/* Store state st, with the next sequence number for MUTATING. */
static void state_store(pmtx_region *r, unsigned st, unsigned mark_site)
{
	uint64_t seq = r->txm->twin_seq;
	if (st == PMTX_TW_MUTATING && !MUT_ON(mark_site))
		r->txm->twin_seq = ++seq;
	state_set(r, PMTX_TW(seq, st), mark_site);
}

static void state_flush(pmtx_region *r, unsigned flush_site)
{
	MUT_FLUSH(flush_site, &r->persist, &region_rstate(r)->twin, 8);
}

static inline void *back_of(const pmtx_region *r, uint64_t off)
{
	return r->base + off + region_twin_delta(r);
}

/* ---- the write set: lines stored to ---- */

static int twin_begin(struct pmtx_tx *tx)
{
	pthread_mutex_lock(&tx->r->txm->twin_lock); /* TW5 */
	return 0;
}

/* TW9: if the last back copy's barrier failed, it must succeed now,
 * before MUTATING or IDLE may persist over that back copy. */
static int resync(pmtx_region *r)
{
	if (!r->txm->twin_resync)
		return 0;
	/* the whole back copy: the lines of the failed one are forgotten,
	 * and a backend may have forgotten their write-back too (a failed
	 * msync) */
	const struct pmtx_hdr *h = r->hdr;
	persist_flush(&r->persist, r->base + h->twin_off,
	              h->twin_off - h->root_off);
	int rc = persist_barrier(&r->persist);
	if (!rc)
		r->txm->twin_resync = 0;
	return rc;
}

/* Does r let a transaction store under the last small commit's MUTATING
 * and seal (TW13)? */
static inline int reseals(const pmtx_region *r)
{
	return (r->hdr->feat_incompat & PMTX_FEAT_INCOMPAT_TWIN_RESEAL) != 0;
}

/* TW2: MUTATING durable, once per transaction, unless the durable word
 * is the MUTATING of the small commit before (TW13). */
static int start_writing(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	int rc = resync(r);
	if (rc)
		return rc;
	if (r->txm->twin_sealed && reseals(r)) {
		tx->sv_written = 1;
		return 0;
	}
	state_store(r, PMTX_TW_MUTATING, MUT_TWIN_MUTATING_MARK);
	r->txm->twin_sealed = 0;
	state_flush(r, MUT_TWIN_MUTATING_FLUSH);
	rc = MUT_ORDER(MUT_TWIN_MUTATING_BARRIER, &r->persist);
	if (!rc)
		tx->sv_written = 1;
	return rc;
}

/* The line set: a bit per line of the mirrored area, in
 * txm->twin_bits (one for the region: its twin transactions run one at a
 * time, TW5), set at a line's first store, when the line joins tx->recs,
 * and cleared from recs when the transaction ends (forget_lines), so
 * "is this line new?" is one load. Beside it, tx->trng keeps every range
 * the transaction declared, in order, for abort (TW7). */
/* The word of the line set that holds line's bit; *m: the bit. */
static inline uint64_t *line_bit(pmtx_region *r, uint64_t line,
                                 uint64_t *m)
{
	uint64_t i = (line - r->hdr->root_off) / CACHE_LINE;
	*m = 1ull << (i % 64);
	return &r->txm->twin_bits[i / 64];
}

static inline int line_is_new(pmtx_region *r, uint64_t line)
{
	uint64_t m, *w = line_bit(r, line, &m);
	if (*w & m)
		return 0;
	*w |= m;
	return 1;
}

/* Bytes mapped for the line set of r. */
static size_t bits_len(const pmtx_region *r)
{
	uint64_t lines = (r->hdr->twin_off - r->hdr->root_off) / CACHE_LINE;
	return ALIGN_UP((lines + 63) / 64 * 8, 4096);
}

int twin_init(pmtx_region *r)
{
	/* zero pages until written: the set costs what it touches */
	void *p = mmap(NULL, bits_len(r), PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return ENOMEM;
	r->txm->twin_bits = p;
	return 0;
}

void twin_fini(pmtx_region *r)
{
	if (r->txm->twin_bits)
		munmap(r->txm->twin_bits, bits_len(r));
	r->txm->twin_bits = NULL;
}

/* Empty the line set and recs. */
static void forget_lines(struct pmtx_tx *tx)
{
	for (size_t k = 0; k < tx->nrecs; k++) {
		uint64_t m, *w = line_bit(tx->r, tx->recs[k], &m);
		*w &= ~m;
	}
	tx->nrecs = 0;
}

/* Room for extra more lines in recs and for nrng more ranges. 0 or
 * ENOMEM, with nothing lost. */
static int make_room(struct pmtx_tx *tx, size_t extra, size_t nrng)
{
	if (pmtx_reserve(&tx->trng, tx->ntrng, nrng, &tx->captrng,
	                 sizeof(*tx->trng), 256))
		return ENOMEM;
	return tx_recs_reserve(tx, extra) ? ENOMEM : 0;
}

/* Note line l. */
static inline void note_line(struct pmtx_tx *tx, uint64_t l)
{
	if (l != tx->twin_last && line_is_new(tx->r, l))
		tx->recs[tx->nrecs++] = l;
	tx->twin_last = l;
}

/* Remember the range [p, p+n) (all in the mirrored area) and its lines. */
static int note_lines(struct pmtx_tx *tx, const void *p, size_t n)
{
	uint64_t a = region_off(tx->r, p), b = a + n;
	uint64_t first = ALIGN_DOWN(a, CACHE_LINE);
	size_t nl = (ALIGN_UP(b, CACHE_LINE) - first) / CACHE_LINE;
	if (unlikely(tx->nrecs + nl > tx->caprecs ||
	             tx->ntrng == tx->captrng) && make_room(tx, nl, 1))
		return ENOMEM;
	tx->trng[tx->ntrng++] = (struct trange){a, n};
	for (uint64_t l = first; l < b; l += CACHE_LINE)
		note_line(tx, l);
	return 0;
}

int twin_note(struct pmtx_tx *tx, const void *p, size_t n)
{
	if (unlikely(!tx->sv_written)) {
		tx->twin_last = 0;
		tx->ntrng = 0;
		int rc = start_writing(tx);
		if (rc) { /* TW9: nothing stored; the transaction is over */
			tx_roll_back(tx);
			return rc;
		}
	}
	return n == 0 ? 0 : note_lines(tx, p, n);
}

static int twin_add_range(struct pmtx_tx *tx, void *p, size_t n)
{
	return twin_note(tx, p, n);
}

static int twin_write(struct pmtx_tx *tx, void *dst, const void *src,
                      size_t n)
{
	return tx_write_in_place(tx, dst, src, n, twin_add_range);
}

/* ---- commit: allocations, back copy, abort ---- */

/* TW6: the allocation log's metadata stores, as lines of the
 * transaction. */
static int apply_allocations(struct pmtx_tx *tx)
{
	/* Room first: a store made and not noted could not be undone. */
	int rc = make_room(tx, 2 * tx->alog.n, 2 * tx->alog.n);
	for (size_t i = 0; !rc && i < tx->alog.n; i++) {
		void *w[2];
		rc = heap_apply_unflushed(tx->r, &tx->alog.e[i], w);
		for (int k = 0; !rc && k < 2; k++)
			if (w[k])
				rc = note_lines(tx, w[k], 8);
	}
	return rc;
}

/* The most lines commit copies to DRAM before flushing them (stage). */
#define STAGE_MAX_LINES 4096u

/* Copy the first lines of the transaction to tx->stage, before they are
 * flushed: a flush may evict a line (CLWB does on some processors), and
 * the back copy and the seal then read the cached copy instead of
 * missing on each line. Returns how many lines are staged (fewer if
 * memory is short: the rest are read from the data area). */
static size_t stage_lines(struct pmtx_tx *tx)
{
	size_t n = MIN(tx->nrecs, STAGE_MAX_LINES);
	if (n > tx->capstage) {
		void *p = NULL;
		size_t cap = MAX(n, 2 * tx->capstage);
		cap = MIN(MAX(cap, 64), STAGE_MAX_LINES);
		if (posix_memalign(&p, CACHE_LINE, cap * CACHE_LINE))
			n = tx->capstage;
		else
			free(tx->stage), tx->stage = p, tx->capstage = cap;
	}
	for (size_t i = 0; i < n; i++)
		memcpy(tx->stage + i * CACHE_LINE, region_at(tx->r, tx->recs[i]),
		       CACHE_LINE);
	return n;
}

/* Line i of the transaction as commit found it. */
static inline const void *line_src(struct pmtx_tx *tx, size_t i,
                                   size_t staged)
{
	return i < staged ? (const void *)(tx->stage + i * CACHE_LINE)
	                  : region_at(tx->r, tx->recs[i]);
}

/* TW4: each noted line to the back copy, with non-temporal stores. */
static void copy_to_back(struct pmtx_tx *tx, size_t staged)
{
	pmtx_region *r = tx->r;
	for (size_t i = 0; i < tx->nrecs; i++)
		MUT_COPY_NT_KIND(MUT_TWIN_BACK_COPY_NT, &r->persist,
		                 back_of(r, tx->recs[i]), line_src(tx, i, staged),
		                 CACHE_LINE, LOG);
}

/* TW7: the ranges the transaction declared, restored from the back copy,
 * newest first, and flushed (other bytes of the same lines may be other
 * threads' naked stores: they are left alone). */
static void restore_from_back(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	for (size_t i = tx->ntrng; i-- > 0;) {
		char *data = region_at(r, tx->trng[i].off);
		size_t n = tx->trng[i].len;
		memcpy(data, back_of(r, tx->trng[i].off), n);
		TRACE_STORE(&r->persist, data, n, DATA);
		MUT_FLUSH(MUT_TWIN_ABORT_FLUSH, &r->persist, data, n);
	}
}

void twin_unstore(pmtx_region *r, void *p, size_t n)
{
	if (!twin_mirrored(r, p, n))
		return;
	memcpy(p, back_of(r, region_off(r, p)), n);
	TRACE_STORE(&r->persist, p, n, DATA);
	MUT_FLUSH(MUT_TWIN_ABORT_FLUSH, &r->persist, p, n);
}

static void release_frees(struct pmtx_tx *tx)
{
	for (size_t i = 0; i < tx->alog.n; i++)
		if (PMTX_AE_OP(tx->alog.e[i].info) == PMTX_AE_FREE)
			heap_release(tx->r->heap, &tx->alog.e[i]);
}

static int twin_abort(struct pmtx_tx *tx);

/* ---- the seal (layout.h S1-S3; TW10-TW12) ---- */

/* The most lines a transaction may have and still commit by its seal; a
 * larger one commits with COPYING. Chosen by measurement (the head of
 * this file). */
#define SEAL_MAX_LINES 48u
_Static_assert(SEAL_MAX_LINES <= PMTX_TWIN_SEAL_LINES, "seal room");

static inline struct pmtx_twin_seal *seal_of(const pmtx_region *r)
{
	return (struct pmtx_twin_seal *)(void *)(r->base + r->hdr->seal_off);
}

static inline int sealed(const struct pmtx_tx *tx)
{
	return tx->r->hdr->seal_off != 0 && tx->nrecs <= SEAL_MAX_LINES;
}

/* S1: the check word of a seal of seq over the n lines at line[], as the
 * data area holds them now; if stage is not NULL it holds a copy of all
 * of them, in order (stage_lines), and is hashed in one call. */
static uint64_t seal_check(const pmtx_region *r, uint64_t seq,
                           const uint64_t *line, uint64_t n,
                           const unsigned char *stage)
{
	uint64_t head[2] = {seq, n};
	uint64_t h = pmtx_checksum(head, sizeof(head), PMTX_CSUM_SEED_SEAL);
	h = pmtx_checksum(line, n * 8, h);
	if (stage)
		return pmtx_checksum(stage, n * CACHE_LINE, h);
	struct pmtx_hasher hs; /* the same digest, line by line */
	pmtx_hash_init(&hs, h);
	for (uint64_t i = 0; i < n; i++)
		pmtx_hash_update(&hs, region_at(r, line[i]), CACHE_LINE);
	return pmtx_hash_digest(&hs);
}

/* TW10: write the seal of tx (not flushed: non-temporal stores, made
 * durable by barrier (b)). */
static void write_seal(struct pmtx_tx *tx, size_t staged)
{
	pmtx_region *r = tx->r;
	struct pmtx_twin_seal *s = seal_of(r);
	_Alignas(64) struct pmtx_twin_seal head = {
		.seq = r->txm->twin_seq,
		.n = tx->nrecs,
		.check = seal_check(r, r->txm->twin_seq, tx->recs, tx->nrecs,
		                    staged == tx->nrecs ? tx->stage : NULL),
	};
	MUT_COPY_NT_KIND(MUT_TWIN_SEAL_NT, &r->persist, s, &head,
	                 sizeof(head), LOG);
	MUT_COPY_NT_KIND(MUT_TWIN_SEAL_NT, &r->persist, s->line, tx->recs,
	                 tx->nrecs * 8, LOG);
}

/* S2: may a seal list line offset l (a line of the mirrored area)? */
static int seal_line_ok(const pmtx_region *r, uint64_t l)
{
	const struct pmtx_hdr *h = r->hdr;
	return l % CACHE_LINE == 0 && l >= h->root_off &&
	       l <= h->twin_off - CACHE_LINE;
}

/* S2: is the seal one of transaction seq whose lines all hold what it
 * sealed? */
static int seal_accepted(const pmtx_region *r, uint64_t seq)
{
	const struct pmtx_twin_seal *s = seal_of(r);
	if (s->seq != seq || s->n > PMTX_TWIN_SEAL_LINES)
		return 0;
	for (uint64_t i = 0; i < s->n; i++)
		if (!seal_line_ok(r, s->line[i]))
			return 0;
	return seal_check(r, seq, s->line, s->n, NULL) == s->check;
}

/* recovery.c R4: a transaction's lines may lie in blocks it allocated,
 * which the metadata does not show in use yet; the listed lines are
 * flushed as far as they are lines of the mirrored area. */
void twin_sweep_seal(pmtx_region *r, unsigned fsite)
{
	const struct pmtx_twin_seal *s = seal_of(r);
	if (!r->hdr->seal_off)
		return;
	MUT_FLUSH(fsite, &r->persist, s, PMTX_TWIN_SEAL_SIZE);
	for (uint64_t i = 0; i < MIN(s->n, PMTX_TWIN_SEAL_LINES); i++)
		if (seal_line_ok(r, s->line[i])) {
			MUT_FLUSH(fsite, &r->persist,
			          region_at(r, s->line[i]), CACHE_LINE);
			MUT_FLUSH(fsite, &r->persist, back_of(r, s->line[i]),
			          CACHE_LINE);
		}
}

/* ---- commit ---- */

/* Barriers (b) and, for a large transaction, (c): 0 once the transaction
 * is committed. *rc_late: an error of (c), after the commit point. */
static int commit_point(struct pmtx_tx *tx, int small, size_t staged,
                        int *rc_late)
{
	pmtx_region *r = tx->r;
	struct persist *p = &r->persist;
	if (small)
		write_seal(tx, staged); /* TW10 */
	/* (b): a small transaction's commit point, else only an order */
	int rc = small ? MUT_BARRIER(MUT_TWIN_DATA_BARRIER, p)
	               : MUT_ORDER(MUT_TWIN_DATA_BARRIER, p);
	if (rc || small)
		return rc;
	state_store(r, PMTX_TW_COPYING, MUT_TWIN_COPYING_MARK);
	state_flush(r, MUT_TWIN_COPYING_FLUSH);
	*rc_late = MUT_BARRIER(MUT_TWIN_COMMIT_BARRIER, p); /* (c) */
	return 0;
}

static int twin_commit(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	struct persist *p = &r->persist;
	if (!tx->sv_written) /* read only: nothing stored (TW2) */
		return 0;
	int rc = apply_allocations(tx), rc_late = 0;
	int small = sealed(tx); /* the lines are all noted by now */
	size_t staged = rc ? 0 : stage_lines(tx);
	for (size_t i = 0; !rc && i < tx->nrecs; i++)
		MUT_FLUSH(MUT_TWIN_DATA_FLUSH, p, region_at(r, tx->recs[i]),
		          CACHE_LINE);
	if (!rc)
		rc = commit_point(tx, small, staged, &rc_late);
	if (rc) { /* TW9: nothing is committed yet */
		twin_abort(tx);
		alog_unreserve(tx);
		return rc;
	}
	copy_to_back(tx, staged);
	int rc2 = MUT_ORDER(MUT_TWIN_BACK_BARRIER, p); /* (d) */
	if (rc2) /* TW9: the next first store syncs first */
		r->txm->twin_resync = 1;
	else if (!small) /* TW10: a small one leaves MUTATING */
		state_store(r, PMTX_TW_IDLE, MUT_TWIN_IDLE_MARK);
	r->txm->twin_sealed = small;
	release_frees(tx);
	return rc_late ? rc_late : rc2;
}

/* TW7. The heap metadata of the allocations is untouched until commit,
 * so only data lines are restored; tx.c gives back the reservations. */
static int twin_abort(struct pmtx_tx *tx)
{
	pmtx_region *r = tx->r;
	if (!tx->sv_written)
		return 0;
	restore_from_back(tx);
	int rc = MUT_ORDER(MUT_TWIN_ABORT_BARRIER, &r->persist);
	if (!rc) /* else MUTATING stays: recovery would restore the same */
		state_store(r, PMTX_TW_IDLE, MUT_TWIN_IDLE_MARK);
	r->txm->twin_sealed = 0; /* TW13: the next one stores MUTATING */
	forget_lines(tx);
	tx->ntrng = 0;
	return rc;
}

void twin_end(struct pmtx_tx *tx)
{
	forget_lines(tx);
	pthread_mutex_unlock(&tx->r->txm->twin_lock);
}

int twin_close(pmtx_region *r)
{
	/* TW4: a clean close leaves IDLE durable, for a quick open; after a
	 * small transaction the word still says MUTATING (TW10). TW9: not
	 * over a back copy whose barrier failed. */
	if (r->txm->twin_sealed && !r->txm->twin_resync)
		state_store(r, PMTX_TW_IDLE, MUT_TWIN_IDLE_MARK);
	/* (after a failed (d) MUTATING stays, with the seal: the next open
	 * copies the sealed lines again. A retried barrier would not do:
	 * the file backend forgets the ranges of a failed one.) */
	state_flush(r, MUT_TWIN_IDLE_FLUSH);
	return persist_barrier(&r->persist);
}

/* ---- outside transactions ---- */

int twin_mirrored(const pmtx_region *r, const void *p, size_t n)
{
	const struct pmtx_hdr *h = r->hdr;
	if ((const char *)p < r->base)
		return 0;
	uint64_t off = region_off(r, p);
	return off >= h->root_off && off <= h->twin_off &&
	       n <= h->twin_off - off;
}

void twin_naked_flush(pmtx_region *r, const void *p, size_t n, int locked)
{
	if (!twin_mirrored(r, p, n))
		return; /* not mirrored: nothing to copy */
	/* TW6: not while another thread's transaction may have stored into
	 * the range (its uncommitted bytes would reach the back copy). */
	if (!locked)
		pthread_mutex_lock(&r->txm->twin_lock);
	void *back = back_of(r, region_off(r, p));
	memcpy(back, p, n);
	TRACE_STORE(&r->persist, back, n, LOG);
	MUT_FLUSH(MUT_TWIN_NAKED_FLUSH, &r->persist, back, n);
	if (!locked)
		pthread_mutex_unlock(&r->txm->twin_lock);
}

/* ---- recovery (TW8) ---- */

/* Copy [from, from+len) over [to, ...), line by line where they differ;
 * flush what was written (flush site fsite; none if flush is 0). */
static void copy_differing(pmtx_region *r, const char *from, char *to,
                           uint64_t len, unsigned fsite, int flush)
{
	for (uint64_t o = 0; o < len; o += 4096) {
		uint64_t pg = MIN(len - o, 4096);
		if (!memcmp(from + o, to + o, pg))
			continue;
		for (uint64_t l = o; l < o + pg; l += CACHE_LINE) {
			if (!memcmp(from + l, to + l, CACHE_LINE))
				continue;
			memcpy(to + l, from + l, CACHE_LINE);
			TRACE_STORE(&r->persist, to + l, CACHE_LINE, DATA);
			if (flush)
				MUT_FLUSH(fsite, &r->persist, to + l,
				          CACHE_LINE);
		}
	}
}

/* [off, off+len) of the mirrored area, from one copy over the other
 * (copy_differing); the source is flushed too when flush_from is set. */
static void copy_span(pmtx_region *r, const char *from, char *to,
                      uint64_t off, uint64_t len, unsigned fsite,
                      int flush_from)
{
	/* recovery.c R4: after a process crash (the open mark) a line that
	 * reads the same in both copies may not be durable in the
	 * destination: all of it is flushed, not the lines written only */
	copy_differing(r, from + off, to + off, len, fsite, !r->mark_was);
	if (r->mark_was)
		MUT_FLUSH(fsite, &r->persist, to + off, len);
	if (flush_from)
		MUT_FLUSH(MUT_TWIN_RECOVER_FLUSH, &r->persist, from + off, len);
}

/* TW14: the committed state from one copy of the mirrored area over the
 * other (from, to: their starts): the root and the heap metadata, then
 * the superblocks that metadata says are in use. */
static void copy_committed(pmtx_region *r, const char *from, char *to,
                           unsigned fsite, int flush_from)
{
	const struct pmtx_hdr *h = r->hdr;
	uint64_t head = h->heap_off - h->root_off;
	copy_span(r, from, to, 0, head, fsite, flush_from);
	const struct pmtx_sb_meta *m =
		(const void *)(to + (h->meta_off - h->root_off));
	uint64_t nsb = (h->twin_off - h->heap_off) / PMTX_SB_SIZE;
	for (uint64_t i = 0; i < nsb;) {
		uint64_t n = heap_meta_used(&m[i], nsb - i);
		if (n)
			copy_span(r, from, to, head + i * PMTX_SB_SIZE,
			          n * PMTX_SB_SIZE, fsite, flush_from);
		i += n ? n : 1;
	}
}

/* TW12: each sealed line of the data area over its back copy. Both
 * copies of every sealed line are flushed, equal or not: after a process
 * crash the seal and the lines may be visible without being durable (the
 * file backend's page cache), and IDLE must not persist before them. */
static void copy_sealed(pmtx_region *r)
{
	const struct pmtx_twin_seal *s = seal_of(r);
	for (uint64_t i = 0; i < s->n; i++) {
		char *data = region_at(r, s->line[i]);
		char *back = back_of(r, s->line[i]);
		if (memcmp(data, back, CACHE_LINE)) {
			memcpy(back, data, CACHE_LINE);
			TRACE_STORE(&r->persist, back, CACHE_LINE, DATA);
		}
		MUT_FLUSH(MUT_TWIN_RECOVER_FLUSH, &r->persist, data, CACHE_LINE);
		MUT_FLUSH(MUT_TWIN_RECOVER_FLUSH, &r->persist, back, CACHE_LINE);
	}
}

int twin_recover_copies(pmtx_region *r)
{
	const struct pmtx_hdr *h = r->hdr;
	struct pmtx_rstate *rs = region_rstate(r);
	uint64_t w = rs->twin;
	unsigned st = PMTX_TW_STATE(w);
	if (st == PMTX_TW_IDLE)
		return 0;
	if (st != PMTX_TW_MUTATING && st != PMTX_TW_COPYING)
		return PMTX_E_CORRUPT; /* read_nsb checked it; not reached */
	char *data = r->base + h->root_off, *back = r->base + h->twin_off;
	if (st == PMTX_TW_MUTATING && h->seal_off &&
	    seal_accepted(r, PMTX_TW_SEQ(w))) {
		copy_sealed(r); /* TW10: committed */
		/* TW13: the stores of a transaction after it (the sealed
		 * lines agree by now); none in a region that does not reseal,
		 * where every other line agrees */
		if (reseals(r))
			copy_committed(r, back, data, MUT_TWIN_RECOVER_REST, 0);
	} else if (st == PMTX_TW_MUTATING)
		copy_committed(r, back, data, MUT_TWIN_RECOVER_FLUSH, 0);
	else /* the data area may be visible and not durable yet */
		copy_committed(r, data, back, MUT_TWIN_RECOVER_FLUSH, 1);
	int rc = MUT_ORDER(MUT_TWIN_RECOVER_BARRIER, &r->persist);
	if (rc)
		return rc;
	state_set(r, PMTX_TW(PMTX_TW_SEQ(w), PMTX_TW_IDLE), MUT_TWIN_IDLE_MARK);
	state_flush(r, MUT_TWIN_IDLE_FLUSH);
	return 0;
}

static int twin_recover(pmtx_region *r, unsigned i,
                        const struct pmtx_rec **recs, size_t n,
                        int committed, int *wrote)
{
	/* Twin transactions leave their descriptors IDLE: never called. */
	(void)r, (void)i, (void)recs, (void)n, (void)committed, (void)wrote;
	return PMTX_E_CORRUPT;
}

const struct tx_runtime twin_runtime =
	TX_RUNTIME(PMTX_RT_TWIN, twin, tx_read_in_place);
