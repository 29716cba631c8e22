/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trace_load.c - the record handling both trace tools share (trace
 * analyze's epoch analysis, trace_analyze.c; trace hops's timing model,
 * trace_hops.c): one copy, so that both read a trace the same way.
 *
 * Rules
 *  1. Time order. Records of one thread are in time order in the file,
 *     but threads' blocks are not (pmtx_trace.h invariant 1), and both
 *     tools need the records in time order across threads.
 *     tl_feed_sorted loads every record with its position in the file and
 *     sorts by (time_ns, file order): a thread's records stay in file
 *     order, records of equal time keep the file's order, and the result
 *     is the same on every run (qsort is not stable; the position makes
 *     every key distinct). Memory: 56 bytes per record, held until the
 *     feed ends. The analyser streams first and calls this only for a
 *     trace whose records are out of order (trace_analyze.c definition
 *     8); the timing model always does (trace_hops.c invariant 3).
 *  2. A record of size 0 spans no line. One whose [off, off + size)
 *     overflows 64 bits or exceeds TL_MAX_SPAN (1 TiB) is
 *     PMTX_E_CORRUPT, so that no tool loops over an impossible span.
 *  3. Per-line state is a hash map of fixed-size entries keyed by two
 *     64-bit words, with linear probing, at most 70% full (it doubles
 *     before); an entry is never removed (a tool that bounds its map
 *     rebuilds it, as trace_analyze.c definition 9).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmtx.h"
#include "trace_load.h"

/* ---- arrays ---- */

int tl_grow(void *arrp, size_t n, size_t *cap, size_t esz)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 16;
	if (c > SIZE_MAX / esz)
		return ENOMEM;
	void *arr;
	memcpy(&arr, arrp, sizeof(arr)); /* *arrp is a T *, not a void * */
	void *q = realloc(arr, c * esz);
	if (!q)
		return ENOMEM;
	memcpy(arrp, &q, sizeof(q));
	*cap = c;
	return 0;
}

/* ---- records (rules 1 and 2) ---- */

enum tl_kind tl_kind_of(const struct pmtx_trace_rec *rec)
{
	switch (rec->type) {
	case PMTX_TEV_STORE:
	case PMTX_TEV_NT:
	case PMTX_TEV_VSTORE:
		return TL_STORE;
	case PMTX_TEV_FLUSH:
		return TL_FLUSH;
	case PMTX_TEV_BARRIER:
		return TL_BARRIER;
	case PMTX_TEV_BEGIN:
		return TL_BEGIN;
	case PMTX_TEV_COMMIT:
	case PMTX_TEV_ABORT:
		return TL_END;
	default:
		return TL_OTHER;
	}
}

int tl_line_span(const struct pmtx_trace_rec *rec, uint64_t *first,
                 uint64_t *last)
{
	if (rec->size == 0)
		return 0;
	if (rec->size > TL_MAX_SPAN || rec->off > UINT64_MAX - rec->size)
		return PMTX_E_CORRUPT;
	*first = rec->off / TL_LINE;
	*last = (rec->off + rec->size - 1) / TL_LINE;
	return 1;
}

struct srec {
	struct pmtx_trace_rec rec;
	uint64_t seq; /* position in the file */
};

static int cmp_srec(const void *x, const void *y)
{
	const struct srec *a = x, *b = y;
	if (a->rec.time_ns != b->rec.time_ns)
		return (a->rec.time_ns > b->rec.time_ns) -
		       (a->rec.time_ns < b->rec.time_ns);
	return (a->seq > b->seq) - (a->seq < b->seq);
}

static int load_all(const char *path, struct srec **out, size_t *n)
{
	pmtx_trace_reader *rd;
	int rc = pmtx_trace_open(path, &rd);
	if (rc)
		return rc;
	size_t cap = 0;
	pmtx_trace_event ev;
	*out = NULL, *n = 0;
	while ((rc = pmtx_trace_next(rd, &ev)) == 0) {
		if ((rc = tl_grow(out, *n, &cap, sizeof(**out))) != 0)
			break;
		(*out)[*n] = (struct srec){ev.rec, *n};
		(*n)++;
	}
	pmtx_trace_close(rd);
	return rc == 1 ? 0 : rc;
}

int tl_feed_sorted(const char *path, tl_feed_fn feed, void *ctx)
{
	struct srec *all = NULL;
	size_t n = 0;
	int rc = load_all(path, &all, &n);
	if (!rc)
		qsort(all, n, sizeof(*all), cmp_srec);
	for (size_t i = 0; !rc && i < n; i++)
		rc = feed(ctx, &all[i].rec);
	free(all);
	return rc;
}

/* ---- the hash map (rule 3) ---- */

static uint64_t key_hash(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
	h ^= h >> 31;
	h *= 0xd6e8feb86659fd93ull;
	return h ^ (h >> 32);
}

void *tl_map_slot(const struct tl_map *m, size_t i)
{
	return m->slots + i * m->esz;
}

/* The slot of key (a, b): its entry, or the free slot where it goes. */
static size_t map_find(const struct tl_map *m, uint64_t a, uint64_t b)
{
	size_t i = (size_t)key_hash(a, b) & (m->cap - 1);
	for (;; i = (i + 1) & (m->cap - 1)) {
		const struct tl_key *k = tl_map_slot(m, i);
		if (!m->used[i] || (k->a == a && k->b == b))
			return i;
	}
}

static int map_grow(struct tl_map *m)
{
	struct tl_map old = *m;
	m->cap = old.cap ? old.cap * 2 : 64;
	m->slots = calloc(m->cap, m->esz);
	m->used = calloc(m->cap, 1);
	if (!m->slots || !m->used) {
		free(m->slots), free(m->used);
		*m = old;
		return ENOMEM;
	}
	for (size_t i = 0; i < old.cap; i++) {
		if (!old.used[i])
			continue;
		const struct tl_key *k = tl_map_slot(&old, i);
		size_t j = map_find(m, k->a, k->b);
		memcpy(tl_map_slot(m, j), k, m->esz);
		m->used[j] = 1;
	}
	free(old.slots), free(old.used);
	return 0;
}

void *tl_map_get(struct tl_map *m, uint64_t a, uint64_t b, int create)
{
	if (m->cap == 0 && (!create || map_grow(m)))
		return NULL;
	size_t i = map_find(m, a, b);
	if (m->used[i])
		return tl_map_slot(m, i);
	if (!create)
		return NULL;
	if ((m->n + 1) * 10 > m->cap * 7) {
		if (map_grow(m))
			return NULL;
		i = map_find(m, a, b);
	}
	struct tl_key *k = tl_map_slot(m, i);
	memset(k, 0, m->esz);
	k->a = a, k->b = b;
	m->used[i] = 1;
	m->n++;
	return k;
}

void tl_map_free(struct tl_map *m)
{
	free(m->slots), free(m->used);
	*m = (struct tl_map){.esz = m->esz};
}
