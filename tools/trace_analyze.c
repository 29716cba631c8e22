/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trace_analyze.c - WHISPER's epoch analysis (Nalli et al., ASPLOS'17,
 * sections 4-5) of a pmtx persistence trace.
 *
 * Definitions (the paper's, and the choices it leaves open)
 *  1. Epoch. Per thread, an epoch opens at the first PM store: a STORE or
 *     NT record of nonzero size. VSTORE records are stores to fields with
 *     DRAM semantics (pmtx_trace.h) and open no epoch. It closes at the
 *     thread's next BARRIER, or when the transaction it opened in ends,
 *     whichever comes first. FLUSH records close nothing. A BARRIER with
 *     no open epoch makes none (an "empty barrier").
 *  2. Transactions are flattened: BEGIN adds a level, COMMIT and ABORT end
 *     one; the transaction is over when the depth is back at zero. It is
 *     committed when no ABORT came and its last COMMIT has status 0, and
 *     aborted otherwise. (pmtx itself emits one BEGIN per outermost
 *     transaction and ends an aborted one with ABORT; the COMMIT an outer
 *     level may still emit, with PMTX_E_ABORTED, then comes at depth zero
 *     and is ignored, like every COMMIT or ABORT at depth zero.)
 *  3. Stores outside any transaction form epochs too (allocator metadata,
 *     pmtx_persist, region set-up), closed by barriers, by the thread's
 *     next BEGIN, or by the end of the trace. They count in every epoch
 *     metric and are also reported apart (epochs_outside); they count in
 *     no transaction's metrics.
 *  4. Epoch size is the number of distinct 64-byte lines (per region) its
 *     stores wrote; a store spanning lines counts each. A singleton writes
 *     one line; it is small when fewer than 10 distinct byte offsets of
 *     that line were written. An NT store writes back whole lines, so it
 *     counts all 64 bytes of each line it touches.
 *  5. Dependency: epoch E (thread T, ending at t) depends on an earlier
 *     epoch that wrote one of E's lines and ended in [t - window, t]; of
 *     thread T: self, of another thread: cross. Each line remembers the
 *     end of the last epoch that wrote it and the last one of a different
 *     thread, so cross is exact and self is missed only when two other
 *     threads wrote the line after T within the window.
 *  6. A flush is redundant, per line, when that line was flushed before
 *     (by any thread) and nothing stored to it since: STORE, NT and also
 *     VSTORE count as stores here (a VSTORE dirties the cache line). A
 *     line's first flush in the trace is never redundant: the trace does
 *     not see the application's own stores.
 *  7. Critical-path lines of a committed transaction: the lines (FLUSH
 *     arg) its thread flushed between its BEGIN and its COMMIT.
 *  8. Epochs end in time order across threads, as 5 and 6 need: records
 *     of one thread are in order in the file, but threads' blocks are not
 *     (pmtx_trace.h invariant 1). The file is streamed while its records
 *     are in time order; at the first one that is not, the analysis starts
 *     again on every record, loaded and sorted by (time_ns, file order)
 *     (trace_load.c rule 1): 56 bytes of memory per record, for
 *     multi-threaded traces only.
 *  9. Memory per line: the line map holds one entry per distinct line
 *     written by an epoch or flushed (a store that leaves a line dirty
 *     needs none: absent means dirty and without a writer). It is bounded:
 *     when it reaches ta_opts.max_lines entries, the entries that no
 *     dependency can still need (no epoch wrote the line within the
 *     window) are dropped, and counted in pruned_lines. A dropped line's
 *     next flush counts as its first, so redundant flushes are then a
 *     lower bound; dependencies stay exact. If the kept entries still
 *     fill more than half the map, the bound doubles.
 * 10. A record whose [off, off + size) overflows or exceeds 1 TiB is
 *     PMTX_E_CORRUPT: the analysis never loops over an impossible span
 *     (trace_load.c rule 2).
 * 11. Write amplification: bytes of STORE and NT records are summed by
 *     store kind (trace minor 2: the record's arg); the amplification is
 *     the bytes of every other kind per byte of PMTX_TSK_DATA. Stores the
 *     application makes itself (to a copy-on-write object's payload, to
 *     memory it flushes with pmtx_persist) are not in the trace, so a
 *     trace whose data arrives that way has no data bytes and no
 *     amplification (reported as 0). Unknown kinds (older traces, newer
 *     kinds) count as metadata of kind "unknown". Barriers are counted
 *     by kind the same way (ORDER, DURABLE, unknown).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pmtx.h"
#include "pmtx_trace.h"
#include "trace_analyze.h"
#include "trace_load.h"

/* ---- distributions ---- */

static int dist_add(struct ta_dist *d, uint64_t v)
{
	if (v >= TA_DIST_EXACT &&
	    tl_grow(&d->big, d->nbig, &d->capbig, sizeof(*d->big)))
		return ENOMEM;
	d->n++, d->sum += v;
	d->max = v > d->max ? v : d->max;
	if (v < TA_DIST_EXACT)
		d->small[v]++;
	else
		d->big[d->nbig++] = v;
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

uint64_t ta_dist_percentile(struct ta_dist *d, unsigned pct)
{
	if (d->n == 0)
		return 0;
	uint64_t rank = (d->n * pct + 99) / 100, seen = 0;
	rank = rank ? rank : 1;
	for (uint64_t v = 0; v < TA_DIST_EXACT; v++)
		if ((seen += d->small[v]) >= rank)
			return v;
	qsort(d->big, d->nbig, sizeof(*d->big), cmp_u64);
	return d->big[rank - seen - 1];
}

uint64_t ta_dist_count(const struct ta_dist *d, uint64_t lo, uint64_t hi)
{
	uint64_t c = 0;
	for (uint64_t v = lo; v <= hi && v < TA_DIST_EXACT; v++)
		c += d->small[v];
	for (size_t i = 0; i < d->nbig; i++)
		c += d->big[i] >= lo && d->big[i] <= hi;
	return c;
}

double ta_dist_mean(const struct ta_dist *d)
{
	return d->n ? (double)d->sum / (double)d->n : 0.0;
}

/* ---- per-line and per-thread state ---- */

/* A line's writers: slot 0 the last epoch that wrote it, slot 1 the last
 * one of another thread (definition 5). */
struct line_ent {
	struct tl_key k; /* region, line index */
	uint64_t end_ns[2];
	uint32_t tid[2];
	uint8_t nw;       /* slots in use */
	uint8_t clean;    /* flushed, and no store since (definition 6) */
};

struct range {
	uint64_t region, first, last; /* lines [first, last] */
};

struct thr_ent {
	struct tl_key k;      /* tid, 0 */
	unsigned depth;        /* transaction nesting */
	int tx_abort;          /* the running transaction saw an ABORT */
	int open, open_in_tx;  /* an epoch is open; it opened in a tx */
	uint64_t tx_epochs, tx_crit;
	uint64_t last_ns;
	struct range *rg;      /* the open epoch's stores, as line ranges */
	size_t nrg, caprg;
	uint64_t m_region, m_line, mask; /* bytes written of the first line */
};

struct ta {
	struct ta_opts o;
	struct ta_result *r;
	struct tl_map lines, thrs;
	uint64_t max_ns;
	size_t max_lines; /* definition 9 */
};

/* The bytes of line l that [off, off + size) covers, as a bit mask. */
static uint64_t byte_bits(uint64_t off, uint64_t size, uint64_t l)
{
	uint64_t base = l * TL_LINE;
	uint64_t lo = off > base ? off - base : 0;
	uint64_t end = off + size - base;
	uint64_t hi = end < TL_LINE ? end : TL_LINE;
	uint64_t n = hi - lo;
	return n >= 64 ? ~0ull : ((1ull << n) - 1) << lo;
}

/* Definition 9: keep the lines an epoch wrote within the window of now. */
static int prune_lines(struct ta *t, uint64_t now)
{
	struct tl_map old = t->lines, keep = {.esz = old.esz};
	for (size_t i = 0; i < old.cap; i++) {
		const struct line_ent *e = tl_map_slot(&old, i);
		if (!old.used[i])
			continue;
		if (!e->nw || (e->end_ns[0] <= now &&
		                now - e->end_ns[0] > t->o.window_ns)) {
			t->r->pruned_lines++;
			continue;
		}
		struct line_ent *k = tl_map_get(&keep, e->k.a, e->k.b, 1);
		if (!k) {
			tl_map_free(&keep);
			return ENOMEM;
		}
		*k = *e;
	}
	tl_map_free(&old);
	t->lines = keep;
	if (keep.n > t->max_lines / 2)
		t->max_lines *= 2;
	return 0;
}

/* The entry of a line, created if need be (NULL: out of memory). */
static struct line_ent *line_get(struct ta *t, uint64_t region,
                                 uint64_t line, uint64_t now)
{
	struct line_ent *e = tl_map_get(&t->lines, region, line, 0);
	if (e)
		return e;
	if (t->lines.n >= t->max_lines && prune_lines(t, now))
		return NULL;
	return tl_map_get(&t->lines, region, line, 1);
}

/* ---- epochs ---- */

static int cmp_range(const void *x, const void *y)
{
	const struct range *a = x, *b = y;
	if (a->region != b->region)
		return (a->region > b->region) - (a->region < b->region);
	return (a->first > b->first) - (a->first < b->first);
}

/* Sort and merge the open epoch's ranges; the number of distinct lines. */
static uint64_t merge_ranges(struct thr_ent *th)
{
	qsort(th->rg, th->nrg, sizeof(*th->rg), cmp_range);
	size_t out = 0;
	for (size_t i = 1; i < th->nrg; i++) {
		struct range *c = &th->rg[out];
		if (th->rg[i].region == c->region &&
		    th->rg[i].first <= c->last + 1) {
			if (th->rg[i].last > c->last)
				c->last = th->rg[i].last;
		} else {
			th->rg[++out] = th->rg[i];
		}
	}
	th->nrg = th->nrg ? out + 1 : 0;
	uint64_t n = 0;
	for (size_t i = 0; i < th->nrg; i++)
		n += th->rg[i].last - th->rg[i].first + 1;
	return n;
}

/* Check line e against an epoch of tid ending at t, then record it as
 * the line's last writer. deps: bit 0 self, bit 1 cross. */
static unsigned line_depend(const struct ta *t, struct line_ent *e,
                            uint32_t tid, uint64_t end)
{
	unsigned deps = 0;
	for (unsigned s = 0; s < e->nw; s++)
		if (e->end_ns[s] <= end && end - e->end_ns[s] <= t->o.window_ns)
			deps |= e->tid[s] == tid ? 1u : 2u;
	if (e->nw && e->tid[0] == tid) {
		e->end_ns[0] = end;
		return deps;
	}
	e->end_ns[1] = e->end_ns[0], e->tid[1] = e->tid[0];
	e->end_ns[0] = end, e->tid[0] = tid;
	e->nw = e->nw ? 2 : 1;
	return deps;
}

static int epoch_deps(struct ta *t, struct thr_ent *th, uint64_t end,
                      unsigned *deps)
{
	*deps = 0;
	for (size_t i = 0; i < th->nrg; i++) {
		const struct range *g = &th->rg[i];
		for (uint64_t l = g->first; l <= g->last; l++) {
			struct line_ent *e = line_get(t, g->region, l, end);
			if (!e)
				return ENOMEM;
			*deps |= line_depend(t, e, (uint32_t)th->k.a, end);
		}
	}
	return 0;
}

static int epoch_close(struct ta *t, struct thr_ent *th, uint64_t end)
{
	struct ta_result *r = t->r;
	uint64_t n = merge_ranges(th);
	unsigned deps;
	int rc = epoch_deps(t, th, end, &deps);
	if (!rc)
		rc = dist_add(&r->epoch_lines, n);
	if (rc)
		return rc;
	r->epochs++;
	if (th->open_in_tx)
		th->tx_epochs++;
	else
		r->epochs_outside++;
	r->singletons += n == 1;
	r->singletons_small += n == 1 && __builtin_popcountll(th->mask) < 10;
	r->self_dep += deps & 1u;
	r->cross_dep += (deps >> 1) & 1u;
	th->open = 0, th->nrg = 0;
	return 0;
}

/* ---- events ---- */

/* A store of any kind makes its lines dirty (definition 6). */
static void lines_dirty(struct ta *t, const struct pmtx_trace_rec *rec,
                        uint64_t first, uint64_t last)
{
	for (uint64_t l = first; l <= last; l++) {
		struct line_ent *e = tl_map_get(&t->lines, rec->region, l, 0);
		if (e)
			e->clean = 0;
	}
}

static int epoch_add(struct thr_ent *th, const struct pmtx_trace_rec *rec,
                     uint64_t first, uint64_t last, int nt)
{
	if (!th->open) {
		th->open = 1, th->open_in_tx = th->depth > 0;
		th->m_region = rec->region, th->m_line = first, th->mask = 0;
	}
	if (tl_grow(&th->rg, th->nrg, &th->caprg, sizeof(*th->rg)))
		return ENOMEM;
	th->rg[th->nrg++] = (struct range){rec->region, first, last};
	if (rec->region == th->m_region && first <= th->m_line &&
	    th->m_line <= last)
		th->mask |= nt ? ~0ull
		               : byte_bits(rec->off, rec->size, th->m_line);
	return 0;
}

static int on_store(struct ta *t, struct thr_ent *th,
                    const struct pmtx_trace_rec *rec)
{
	uint64_t first, last;
	int rc = tl_line_span(rec, &first, &last);
	if (rc <= 0)
		return rc; /* no line, or corrupt */
	lines_dirty(t, rec, first, last);
	if (rec->type == PMTX_TEV_VSTORE)
		return 0;
	int nt = rec->type == PMTX_TEV_NT;
	*(nt ? &t->r->nt_bytes : &t->r->store_bytes) += rec->size;
	t->r->kind_bytes[rec->arg < PMTX_TSK_COUNT ? rec->arg : 0] +=
		rec->size;
	return epoch_add(th, rec, first, last, nt);
}

static int on_flush(struct ta *t, struct thr_ent *th,
                    const struct pmtx_trace_rec *rec)
{
	uint64_t first, last;
	t->r->flush_recs++;
	t->r->flushed_lines += rec->arg;
	if (th->depth)
		th->tx_crit += rec->arg;
	int rc = tl_line_span(rec, &first, &last);
	if (rc <= 0)
		return rc;
	for (uint64_t l = first; l <= last; l++) {
		struct line_ent *e = line_get(t, rec->region, l, rec->time_ns);
		if (!e)
			return ENOMEM;
		t->r->redundant_lines += e->clean;
		e->clean = 1;
	}
	return 0;
}

static int on_barrier(struct ta *t, struct thr_ent *th,
                      const struct pmtx_trace_rec *rec)
{
	t->r->barriers++;
	t->r->barrier_kinds[rec->arg <= PMTX_TBK_DURABLE ? rec->arg : 0]++;
	if (th->open)
		return epoch_close(t, th, rec->time_ns);
	t->r->empty_barriers++;
	return 0;
}

static int on_begin(struct ta *t, struct thr_ent *th,
                    const struct pmtx_trace_rec *rec)
{
	if (th->depth++ > 0)
		return 0;
	th->tx_abort = 0, th->tx_epochs = 0, th->tx_crit = 0;
	return th->open ? epoch_close(t, th, rec->time_ns) : 0;
}

static int on_end(struct ta *t, struct thr_ent *th,
                  const struct pmtx_trace_rec *rec)
{
	struct ta_result *r = t->r;
	if (th->depth == 0)
		return 0; /* definition 2 */
	th->tx_abort |= rec->type == PMTX_TEV_ABORT || rec->status != 0;
	if (--th->depth > 0)
		return 0;
	int rc = th->open ? epoch_close(t, th, rec->time_ns) : 0;
	if (rc || th->tx_abort) {
		r->tx_aborted += !rc;
		return rc;
	}
	r->tx_committed++;
	rc = dist_add(&r->tx_epochs, th->tx_epochs);
	return rc ? rc : dist_add(&r->tx_crit_lines, th->tx_crit);
}

static int feed(struct ta *t, const struct pmtx_trace_rec *rec)
{
	struct ta_result *r = t->r;
	if (r->records++ == 0 || rec->time_ns < r->first_ns)
		r->first_ns = rec->time_ns;
	r->last_ns = rec->time_ns > r->last_ns ? rec->time_ns : r->last_ns;
	struct thr_ent *th = tl_map_get(&t->thrs, rec->tid, 0, 1);
	if (!th)
		return ENOMEM;
	th->last_ns = rec->time_ns;
	switch (tl_kind_of(rec)) {
	case TL_STORE:
		return on_store(t, th, rec);
	case TL_FLUSH:
		return on_flush(t, th, rec);
	case TL_BARRIER:
		return on_barrier(t, th, rec);
	case TL_BEGIN:
		return on_begin(t, th, rec);
	case TL_END:
		return on_end(t, th, rec);
	default:
		return 0;
	}
}

/* The end of the trace: open epochs close at their thread's last record,
 * earliest first (definition 8); open transactions are unfinished. */
static int finish(struct ta *t)
{
	for (;;) {
		struct thr_ent *first = NULL;
		for (size_t i = 0; i < t->thrs.cap; i++) {
			struct thr_ent *th = tl_map_slot(&t->thrs, i);
			if (t->thrs.used[i] && th->open &&
			    (!first || th->last_ns < first->last_ns))
				first = th;
		}
		if (!first)
			break;
		int rc = epoch_close(t, first, first->last_ns);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < t->thrs.cap; i++) {
		struct thr_ent *th = tl_map_slot(&t->thrs, i);
		t->r->tx_unfinished += t->thrs.used[i] && th->depth > 0;
	}
	t->r->threads = t->thrs.n;
	t->r->distinct_lines = t->lines.n;
	return 0;
}

/* ---- driving it over a file ---- */

static void state_free(struct ta *t)
{
	for (size_t i = 0; i < t->thrs.cap; i++)
		if (t->thrs.used[i])
			free(((struct thr_ent *)tl_map_slot(&t->thrs, i))->rg);
	tl_map_free(&t->thrs);
	tl_map_free(&t->lines);
}

static void state_init(struct ta *t, const struct ta_opts *o,
                       struct ta_result *res)
{
	memset(t, 0, sizeof(*t));
	t->o = *o, t->r = res;
	t->max_lines = o->max_lines ? o->max_lines : TA_MAX_LINES;
	t->lines.esz = sizeof(struct line_ent);
	t->thrs.esz = sizeof(struct thr_ent);
	memset(res, 0, sizeof(*res));
}

/* Feed the records while they are in time order: *ordered = 0 when one
 * is not (the state is then to be thrown away). */
static int run_stream(const char *path, struct ta *t, int *ordered)
{
	pmtx_trace_reader *rd;
	int rc = pmtx_trace_open(path, &rd);
	if (rc)
		return rc;
	pmtx_trace_event ev;
	*ordered = 1;
	while ((rc = pmtx_trace_next(rd, &ev)) == 0) {
		if (ev.rec.time_ns < t->max_ns) {
			*ordered = 0;
			break;
		}
		t->max_ns = ev.rec.time_ns;
		if ((rc = feed(t, &ev.rec)) != 0)
			break;
	}
	pmtx_trace_close(rd);
	return rc == 1 ? 0 : rc;
}

/* feed, for the records sorted by time (definition 8). */
static int feed_sorted(void *t, const struct pmtx_trace_rec *rec)
{
	return feed(t, rec);
}

int ta_analyze_file(const char *path, const struct ta_opts *o,
                    struct ta_result *res)
{
	struct ta t;
	int ordered;
	state_init(&t, o, res);
	int rc = run_stream(path, &t, &ordered);
	if (!rc && !ordered) {
		state_free(&t);
		ta_result_free(res);
		state_init(&t, o, res);
		rc = tl_feed_sorted(path, feed_sorted, &t);
	}
	if (!rc)
		rc = finish(&t);
	state_free(&t);
	if (rc)
		ta_result_free(res);
	return rc;
}

void ta_result_free(struct ta_result *res)
{
	free(res->epoch_lines.big);
	free(res->tx_epochs.big);
	free(res->tx_crit_lines.big);
	res->epoch_lines.big = res->tx_epochs.big = NULL;
	res->tx_crit_lines.big = NULL;
}
