/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.c - chunked, checksummed record log.
 *
 * Format (layout.h): a chain of chunks linked by offset; records start on
 * 64-byte boundaries; each record is header, payload, check word.
 *
 * Invariants
 *  L1. A record is valid iff its prolog, type, sequence number, version
 *      and length are plausible and its check word matches: the XXH3
 *      checksum of header and payload (PMTX_RF_CSUM), or the mark, an XXH3
 *      of the header alone that is written only after header and payload
 *      are durable (PMTX_RF_MARK). A redo record may carry neither
 *      (PMTX_RF_BATCH): it is then only structurally valid, and counts
 *      only under a COMMIT record whose batch checksum covers it (redo.c
 *      D1), which recovery verifies. So only a reader of a redo log
 *      accepts one (logr.batch): in any other log it is an older redo
 *      transaction's record, or one torn by a crash while it was being
 *      overwritten (its version word new, the rest old), and it ends the
 *      log, as any invalid record does.
 *  L2. Sequence numbers of one transaction are 0, 1, 2, ... with no gap,
 *      and versions are unique per descriptor, so a stale record (from an
 *      older transaction, or garbage) can never pass as the next record.
 *  L3. A record that does not fit in the rest of a chunk goes to the start
 *      of the next chunk large enough for it: the writer skips a linked
 *      chunk that is too small. The reader, at an invalid record,
 *      therefore looks at the first record of each later chunk in turn:
 *      by L2 it continues the log only where the sequence number is the
 *      one expected.
 *  L4. A new chunk is initialised and made durable before the link to it
 *      is written, and the link is durable before the heap marks the chunk
 *      allocated. Recovery re-marks every linked chunk (heap_adopt), so
 *      the mark needs no barrier of its own (a later barrier carries it),
 *      and a crash anywhere leaks nothing and never follows a dangling
 *      link.
 */
#include <string.h>

#include "../common/mutant.h"
#include "../heap/heap.h"
#include "log.h"

#define GROW_MIN (64u * 1024u)

static inline struct pmtx_chunk *chunk_at(const pmtx_region *r, uint64_t off)
{
	return (struct pmtx_chunk *)region_at(r, off);
}

int log_chunk_ok(const pmtx_region *r, uint64_t off)
{
	if (off % 64 || !region_off_ok(r, off, sizeof(struct pmtx_chunk)))
		return 0;
	const struct pmtx_chunk *c = chunk_at(r, off);
	return c->magic == PMTX_CHUNK_MAGIC && c->size >= 128 &&
	       c->size % 64 == 0 && region_off_ok(r, off, c->size);
}

void logw_reset(const pmtx_region *r, struct logw *w, uint64_t head)
{
	w->head = w->chunk = head;
	w->pos = head + sizeof(struct pmtx_chunk);
	w->end = head + chunk_at(r, head)->size;
	w->seq = 0;
}

/* Insert a new chunk of at least need record bytes after cur (L4). */
static int grow(pmtx_region *r, uint64_t cur_off, size_t need)
{
	struct persist *p = &r->persist;
	struct pmtx_alog_entry e;
	uint64_t off;
	size_t size = ALIGN_UP(MAX(need + sizeof(struct pmtx_chunk), GROW_MIN),
	                       PMTX_SB_SIZE);
	int rc = heap_reserve_internal(r->heap, size, &off, &e);
	if (rc)
		return rc;
	struct pmtx_chunk *c = chunk_at(r, off), *cur = chunk_at(r, cur_off);
	memset(c, 0, sizeof(*c));
	c->magic = PMTX_CHUNK_MAGIC;
	c->next = cur->next;
	c->size = size;
	MUT_FLUSH(MUT_LOG_GROW_CHUNK_FLUSH, p, c, sizeof(*c));
	if ((rc = MUT_ORDER(MUT_LOG_GROW_CHUNK_BARRIER, p)))
		return rc;
	__atomic_store_n(&cur->next, off, __ATOMIC_RELEASE);
	MUT_FLUSH(MUT_LOG_GROW_LINK_FLUSH, p, &cur->next, 8);
	if ((rc = MUT_ORDER(MUT_LOG_GROW_LINK_BARRIER, p)))
		return rc;
	return heap_apply(r, &e); /* no barrier of its own: L4 */
}

int log_chunk_next(pmtx_region *r, uint64_t cur, size_t need,
                   uint64_t *next)
{
	uint64_t n = chunk_at(r, cur)->next;
	if (n == 0 || chunk_at(r, n)->size < need + sizeof(struct pmtx_chunk)) {
		int rc = grow(r, cur, need);
		if (rc)
			return rc;
		n = chunk_at(r, cur)->next;
	}
	*next = n;
	return 0;
}

int logw_reserve(pmtx_region *r, struct logw *w, size_t len, uint64_t *rec)
{
	size_t span = log_rec_span(len);
	while (w->pos + span > w->end) {
		uint64_t next;
		int rc = log_chunk_next(r, w->chunk, span, &next);
		if (rc)
			return rc;
		w->chunk = next;
		w->pos = next + sizeof(struct pmtx_chunk);
		w->end = next + chunk_at(r, next)->size;
	}
	*rec = w->pos;
	return 0;
}

static uint64_t rec_mark(const struct pmtx_rec *h)
{
	return pmtx_checksum(h, sizeof(*h), PMTX_CSUM_SEED_MARK);
}

static uint64_t *rec_check(const struct pmtx_rec *h)
{
	return (uint64_t *)((char *)(h + 1) + ALIGN_UP(h->len, 8));
}

/* Mutation sites of a record's check word and flush, by record type: the
 * type says which runtime wrote it (COMMIT: any of them). */
static inline unsigned check_site(uint16_t type)
{
	return type == PMTX_REC_UNDO  ? MUT_UNDO_REC_CHECK
	       : type == PMTX_REC_COW ? MUT_COW_REC_CHECK
	                              : MUT_LOG_COMMIT_CHECK;
}

static inline unsigned flush_site(uint16_t type)
{
	return type == PMTX_REC_UNDO   ? MUT_UNDO_REC_FLUSH
	       : type == PMTX_REC_REDO ? MUT_REDO_REC_FLUSH
	       : type == PMTX_REC_COW  ? MUT_COW_REC_FLUSH
	                               : MUT_LOG_COMMIT_FLUSH;
}

void log_put(pmtx_region *r, struct logw *w, uint64_t rec, uint16_t type,
             uint64_t version, uint64_t off, const void *payload,
             size_t len, enum log_check mode)
{
	struct pmtx_rec *h = region_at(r, rec);
	h->prolog = PMTX_REC_PROLOG;
	h->version = version;
	h->seq = w->seq++;
	h->type = type;
	static const uint16_t flags[] = {PMTX_RF_CSUM, PMTX_RF_MARK,
	                                 PMTX_RF_BATCH};
	h->flags = flags[mode];
	h->len = (uint32_t)len;
	h->reserved = 0;
	h->off = off;
	char *body = (char *)(h + 1);
	if (len)
		memcpy(body, payload, len);
	if (len % 8)
		memset(body + len, 0, 8 - len % 8);
	uint64_t *check = rec_check(h);
	if (mode != LOG_CSUM)
		*check = 0;
	else if (!MUT_SKIP(check_site(type)))
		*check = pmtx_checksum(h, (size_t)((char *)check - (char *)h),
		                       PMTX_CSUM_SEED_REC);
	size_t bytes = PMTX_REC_BYTES(len);
	pmtx__tls_counters.bytes_logged += bytes;
	TRACE_STORE(&r->persist, h, bytes, LOG);
	MUT_FLUSH(flush_site(type), &r->persist, h, bytes);
	w->pos = rec + log_rec_span(len);
}

void log_put_mark(pmtx_region *r, uint64_t rec)
{
	struct pmtx_rec *h = region_at(r, rec);
	uint64_t *check = rec_check(h);
	if (!MUT_SKIP(MUT_UNDO_MARK_STORE)) {
		__atomic_store_n(check, rec_mark(h), __ATOMIC_RELAXED);
		TRACE_STORE(&r->persist, check, 8, LOG);
	}
	MUT_FLUSH(MUT_UNDO_MARK_FLUSH, &r->persist, check, 8);
}

/* ---- reader ---- */

int logr_init(const pmtx_region *r, struct logr *rd, uint64_t head)
{
	memset(rd, 0, sizeof(*rd));
	rd->r = r;
	if (!log_chunk_ok(r, head))
		return PMTX_E_CORRUPT;
	rd->chunk = head;
	rd->pos = head + sizeof(struct pmtx_chunk);
	rd->end = head + chunk_at(r, head)->size;
	return 0;
}

static int rec_valid(const struct logr *rd, const struct pmtx_rec *h,
                     uint64_t pos, uint64_t end)
{
	if (pos + sizeof(*h) + 8 > end || h->prolog != PMTX_REC_PROLOG ||
	    h->seq != rd->seq || h->version == 0 ||
	    (rd->version && h->version != rd->version) ||
	    h->type < PMTX_REC_UNDO || h->type > PMTX_REC_COW ||
	    h->len > end - pos - sizeof(*h) - 8 ||
	    pos + PMTX_REC_BYTES(h->len) > end)
		return 0;
	uint64_t check = *rec_check(h);
	if (h->flags == PMTX_RF_CSUM)
		return check == pmtx_checksum(h, sizeof(*h) + ALIGN_UP(h->len, 8),
		                              PMTX_CSUM_SEED_REC);
	if (h->flags == PMTX_RF_BATCH) /* the caller checks the batch */
		return rd->batch && h->type == PMTX_REC_REDO && check == 0;
	return h->flags == PMTX_RF_MARK && check == rec_mark(h);
}

int log_rec_check(const pmtx_region *r, uint64_t rec, uint32_t seq,
                  uint64_t version)
{
	struct logr rd = {.r = r, .seq = seq, .version = version};
	return rec_valid(&rd, region_at(r, rec), rec, r->size);
}

int logr_next(struct logr *rd, const struct pmtx_rec **rec)
{
	const pmtx_region *r = rd->r;
	*rec = NULL;
	const struct pmtx_rec *h = region_at(r, rd->pos);
	if (!rec_valid(rd, h, rd->pos, rd->end)) {
		/* L3: the record may have gone to a later chunk. */
		uint64_t c = rd->chunk, pos = 0, end = 0;
		for (;;) {
			c = chunk_at(r, c)->next;
			if (c == 0)
				return 0;
			if (!log_chunk_ok(r, c) || ++rd->hops > r->nsb + 1)
				return PMTX_E_CORRUPT;
			pos = c + sizeof(struct pmtx_chunk);
			end = c + chunk_at(r, c)->size;
			h = region_at(r, pos);
			if (rec_valid(rd, h, pos, end))
				break;
		}
		rd->chunk = c, rd->pos = pos, rd->end = end;
	}
	if (rd->seq == 0)
		rd->version = h->version;
	rd->seq++;
	rd->pos += log_rec_span(h->len);
	*rec = h;
	return 0;
}
