/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trace_load.h - what both trace tools (`pmtx trace analyze`,
 * trace_analyze.c, and `pmtx trace hops`, trace_hops.c) do to a
 * persistence trace (include/pmtx_trace.h) before their own model: feed
 * every record in time order, check the lines a record spans, and keep
 * per-line state in a hash map and per-thread state in doubling arrays.
 * The rules are in trace_load.c's design comment.
 */
#ifndef PMTX_TRACE_LOAD_H
#define PMTX_TRACE_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "pmtx_trace.h"

#define TL_LINE 64u               /* bytes of a cache line */
#define TL_MAX_SPAN (1ull << 40)  /* the largest span a record may have */

/* A tool's handler of one record: 0, or an error that stops the feed. */
typedef int (*tl_feed_fn)(void *ctx, const struct pmtx_trace_rec *rec);

/* Load every record of the trace at path, sort them by (time_ns, file
 * order) and feed them to feed(ctx, rec) (trace_load.c 1). 0, the
 * reader's error (PMTX_E_*, errno), ENOMEM, or feed's first error. */
int tl_feed_sorted(const char *path, tl_feed_fn feed, void *ctx);

/* What a record is to both models: a store (STORE, NT, VSTORE), a
 * flush, a barrier, a transaction's begin or its end (COMMIT, ABORT), or
 * none of them (REGION, and types this build does not know). */
enum tl_kind { TL_OTHER, TL_STORE, TL_FLUSH, TL_BARRIER, TL_BEGIN, TL_END };
enum tl_kind tl_kind_of(const struct pmtx_trace_rec *rec);

/* The lines of a record's [off, off + size): 1 with [*first, *last]
 * set; 0 when size is 0 (no line); PMTX_E_CORRUPT (< 0) when the span
 * overflows or exceeds TL_MAX_SPAN (2). */
int tl_line_span(const struct pmtx_trace_rec *rec, uint64_t *first,
                 uint64_t *last);

/* Room for one more of n elements of esz bytes in the array whose
 * address is arrp (a `T **`), doubling *cap: 0, or ENOMEM with the
 * array and *cap unchanged. */
int tl_grow(void *arrp, size_t n, size_t *cap, size_t esz);

/* ---- an open-addressing hash map of fixed-size entries (3) ---- */

/* Every entry starts with its key: (region, line), (tid, 0), ... */
struct tl_key {
	uint64_t a, b;
};

struct tl_map {
	unsigned char *slots; /* cap entries of esz bytes */
	unsigned char *used;  /* cap flags */
	size_t esz, cap, n;   /* set esz, zero the rest, before first use */
};

/* The entry of (a, b); created zeroed but for its key when create is
 * set. NULL: absent (create == 0) or out of memory. Pointers to entries
 * die at the next creation. */
void *tl_map_get(struct tl_map *m, uint64_t a, uint64_t b, int create);
/* Slot i (i < cap): its entry, used or not (used[i] says). */
void *tl_map_slot(const struct tl_map *m, size_t i);
/* Free the map; it is then empty, with the same esz. */
void tl_map_free(struct tl_map *m);

#endif
