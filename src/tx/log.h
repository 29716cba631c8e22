/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * log.h - a descriptor's chunked persistent log of checksummed records,
 * shared by the runtimes that log (undo now; redo uses the same format).
 */
#ifndef PMTX_LOG_H
#define PMTX_LOG_H

#include "../region/region.h"

/* Writer position. */
struct logw {
	uint64_t head;  /* first chunk */
	uint64_t chunk; /* chunk being written */
	uint64_t pos;   /* where the next record goes */
	uint64_t end;   /* end of the current chunk */
	uint32_t seq;   /* sequence number of the next record */
};

void logw_reset(const pmtx_region *r, struct logw *w, uint64_t head);
/* Find room for a record with len payload bytes, moving to (or creating)
 * the next chunk if needed; returns the record's offset in *rec. Growing
 * the chain costs two barriers, once per new chunk. */
int logw_reserve(pmtx_region *r, struct logw *w, size_t len, uint64_t *rec);
/* How a record's check word is filled (layout.h, struct pmtx_rec). */
enum log_check { LOG_CSUM, LOG_MARK, LOG_BATCH };
/* Write the header and payload at rec, and the checksum for LOG_CSUM;
 * flush it all. No barrier. Advances the writer past the record. */
void log_put(pmtx_region *r, struct logw *w, uint64_t rec, uint16_t type,
             uint64_t version, uint64_t off, const void *payload,
             size_t len, enum log_check check);
/* For a record written with LOG_MARK, once its body is durable: write and
 * flush the mark. */
void log_put_mark(pmtx_region *r, uint64_t rec);

/* Bytes a record with a payload of len bytes spans in the log. */
static inline size_t log_rec_span(size_t len)
{
	return ALIGN_UP(PMTX_REC_BYTES(len), PMTX_REC_ALIGN);
}

/* Would a reader accept the record at rec as number seq of version?
 * (L1-L2; for assert() in debug builds.) */
int log_rec_check(const pmtx_region *r, uint64_t rec, uint32_t seq,
                  uint64_t version);

/* Reader: yields the consecutive valid records of one transaction,
 * following chunk links. */
struct logr {
	const pmtx_region *r;
	uint64_t chunk, pos, end;
	uint32_t seq;
	uint64_t version; /* of the transaction, once the first is read */
	uint64_t hops;    /* chunks visited: bounds a cyclic chain */
	int batch;        /* a redo log: PMTX_RF_BATCH records count (L1) */
};

int logr_init(const pmtx_region *r, struct logr *rd, uint64_t head);
/* *rec = next record, or NULL at the end of the log. Returns
 * PMTX_E_CORRUPT if a chunk link is invalid. */
int logr_next(struct logr *rd, const struct pmtx_rec **rec);

/* The chunk after cur, with at least need bytes of records; inserted
 * after cur if the existing one is missing or too small (2 barriers). */
int log_chunk_next(pmtx_region *r, uint64_t cur, size_t need,
                   uint64_t *next);
/* Validate a chunk at off (magic, alignment, bounds). */
int log_chunk_ok(const pmtx_region *r, uint64_t off);

static inline const void *rec_payload(const struct pmtx_rec *h)
{
	return h + 1;
}

#endif
