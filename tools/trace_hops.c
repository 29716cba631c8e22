/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trace_hops.c - a trace-driven timing model of persistence: a pmtx
 * persistence trace replayed under x86 (clwb + sfence), HOPS (Nalli et
 * al., ASPLOS'17, section 6: persist buffers, ofence and dfence), an
 * ideal machine and this machine's measured x86, each giving a run time
 * (Figure 10 normalizes them to x86 with durability at NVM).
 *
 * Time
 *  1. Every thread has one model clock per machine, in ns from the first
 *     record of the trace; a thread starts at its first record's trace
 *     time. A machine's run time is the latest end of a thread's clock
 *     (the clock after its last record) minus the earliest start, over
 *     the threads that began a transaction (BEGIN), or over every thread
 *     when none did. A background thread (redo-async's truncation) works
 *     beside the transactions, waking on its own schedule: its clock does
 *     not depend on theirs, so letting it set the run time would hide
 *     what the machines change in the transactions' time. Work still
 *     buffered or in flight after a thread's last record is not waited
 *     for (x86 write-backs without a barrier, HOPS buffers).
 *  2. Work: between two records of a thread, every clock advances by the
 *     trace gap minus what this machine spent persisting and tracing in
 *     it: trace_ns after every record, here_clwb_ns x lines after a FLUSH,
 *     the barrier's x86_here cost (5) after a BARRIER; floored at 0. Each machine then
 *     adds its own costs. So x86_here with the measured costs gives back
 *     the traced span minus tracing, when no gap floored (the costs of a
 *     thread's last record are outside the span and are added).
 *  3. Records are replayed in trace time order: all are loaded and sorted
 *     by (time_ns, file order), 56 bytes of memory per record (records of
 *     one thread stay in file order; trace_load.c rule 1, which the
 *     analyser uses too). A store, NT or VSTORE whose [off, off + size)
 *     overflows or exceeds 1 TiB is PMTX_E_CORRUPT (trace_load.c 2).
 *
 * Machines
 *  4. x86 (nvm, pwq): a FLUSH record issues the write-back of its lines
 *     (arg) at the thread's clock, each durable `latency` later (pipelined:
 *     k lines issued together are durable together). An NT record is
 *     written back at once, like a flush of its lines. Stores cost
 *     nothing. A BARRIER of any kind stalls the thread until every
 *     write-back it issued is durable. latency = pm_cycles / ghz (nvm) or
 *     pwq_cycles / ghz (pwq).
 *  5. x86_here: a FLUSH costs here_clwb_ns per line, a BARRIER
 *     here_fence_ns + here_line_ns x (lines flushed since the thread's
 *     previous barrier), or nothing when no line was flushed since (an
 *     sfence with nothing to wait for: about 1 ns here, pmtx-bench costs'
 *     fence_empty_ns). The same cost is taken out of the gap (2).
 *  6. ideal: work only.
 *  7. HOPS (nvm, pwq), per thread: a persist buffer of pb_entries entries
 *     in epochs; the open epoch is the last. A STORE, NT or VSTORE (the
 *     hardware cannot tell a field with DRAM semantics) adds one entry per
 *     line, unless the line is already in the open epoch (it coalesces);
 *     older versions of a line in closed epochs stay (multi-versioning).
 *     FLUSH records are dropped; LLC write-backs are not modelled.
 *  8. BARRIER of kind ORDER = ofence: closes the open epoch, costs
 *     nothing. DURABLE or any other kind = dfence: closes it and stalls
 *     the thread until every closed epoch has completed (dfence_stall).
 *     Closing an empty open epoch changes nothing.
 *  9. Draining: closed epochs drain in order; all entries of one are
 *     issued at once and the epoch completes `latency` later, when its
 *     entries leave the buffer; the next is issued only after that, and
 *     only after the epochs it depends on (10) completed. An epoch is
 *     issued while the buffer holds at least pb_launch entries (issued
 *     ones included), or while a dfence or a full buffer waits. Issue
 *     decisions are made lazily at the thread's next record, at the time
 *     they would have been taken (the buffer's count changes only at the
 *     thread's own records and completions).
 * 10. Full buffer: a store needing a new entry when pb_entries are
 *     buffered stalls the thread until the oldest epoch completes
 *     (full_stall); if the open epoch is the only one buffered, it is
 *     closed first (a split).
 *
 * Cross-thread dependencies (approximate, as the paper's own)
 * 11. A last-writer directory gives each line's last buffered writer
 *     (thread, epoch). A store to a line whose last writer is another
 *     thread A, whose epoch has not completed by the storing thread's
 *     clock (A's times translated, 17), makes the storing thread's open
 *     epoch depend on A's current
 *     epoch (the conservative rule of section 6.3), deduplicated per
 *     source thread (the latest epoch is kept).
 * 12. If A's current epoch is open and not empty, it is closed there and
 *     then (counted as a split of A), at A's last record's time: every
 *     dependency then points to a closed epoch, whose dependencies were
 *     all made before it closed, so the graph has no cycle (the paper's
 *     deadlock avoidance by splitting). A's later records may come at
 *     model times before that split; they go to its next epoch.
 * 13. A dependent epoch about to be issued at time s forces its source
 *     thread to issue the source epoch and those before it, each at the
 *     earliest of its own rule (9) but not before max(s, the source
 *     thread's last record time), s translated to the source's clock and
 *     the source epoch's completion back (17): the source's buffer need
 *     not have reached pb_launch (the hardware must drain it, or
 *     deadlock).
 * 14. "Not completed" in 11 is judged on the source thread's state as far
 *     as it has been replayed: an epoch whose issue the source has not
 *     yet decided counts as not completed, which may add a dependency the
 *     exact simulation would not (conservative).
 * 15. Epochs drained counts the epochs completed by the end of their
 *     thread's clock; splits counts 10 and 12.
 *
 * 16. Forcing (13) recurses through the sources' own dependencies; the
 *     depth is the length of the longest chain of dependent epochs not
 *     yet issued (12 makes every chain finite).
 * 17. Timelines: each thread's clocks lose what its gaps paid for tracing
 *     and x86_here costs (2), a different amount per thread, so they
 *     drift apart (a busy transaction thread's by trace_ns per record, a
 *     truncation thread waking up after a sleep by almost nothing). Times
 *     of thread A are compared with thread B's (11, 13) at the same trace
 *     instant: time x of A's clock is x + drift(A) - drift(B) on B's,
 *     drift(X) = X's last record's trace time - X's ideal clock (the
 *     work lost so far, the same for every machine; a machine's own
 *     stalls stay, so a thread depending on a thread delayed by HOPS is
 *     delayed too). Comparing raw clocks instead charged HOPS the drift
 *     at every dependency on a thread that drifted less (pmtx-auto's sps:
 *     45 ms of dfence stalls in 26 dfences, hops 1.24 x x86), a cost that
 *     is the trace's, not the machine's. The drifts are taken at the
 *     threads' last records, not when the epochs' times were set.
 *
 * Memory: per record (3), per thread per variant one entry per epoch
 * (kept, so that a dependency can find its completion time) and per
 * dependency, and one directory entry per distinct line stored.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pmtx.h"
#include "pmtx_trace.h"
#include "trace_hops.h"
#include "trace_load.h"

static const char *const machine_names[TH_NMACH] = {
	"x86_nvm", "x86_pwq", "hops_nvm", "hops_pwq", "ideal", "x86_here",
};

const char *th_machine_name(unsigned m)
{
	return m < TH_NMACH ? machine_names[m] : "?";
}

void th_opts_default(struct th_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ghz = 2.0;
	o->pm_cycles = 160;
	o->pwq_cycles = 40;
	o->pb_entries = 32;
	o->pb_launch = 16;
}

static double dmax(double a, double b)
{
	return a > b ? a : b;
}

/* ---- the last-writer directory (invariant 11) ---- */

struct dir_ent {
	struct tl_key k; /* region, line */
	uint64_t ts;     /* the writer's epoch */
	uint32_t thr;    /* the writer's thread index, UINT32_MAX: none */
};

/* The line's entry, created without a writer if absent; NULL: ENOMEM. */
static struct dir_ent *dir_get(struct tl_map *d, uint64_t region,
                               uint64_t line)
{
	size_t n = d->n;
	struct dir_ent *e = tl_map_get(d, region, line, 1);
	if (e && d->n > n)
		e->thr = UINT32_MAX;
	return e;
}

/* ---- per-thread state ---- */

struct hep {               /* one epoch of a persist buffer */
	double close;          /* when it was closed */
	double done;           /* when it completes, once issued */
	uint64_t n;            /* entries */
	size_t dep0, ndep;     /* its dependencies: dep[dep0 .. +ndep) */
	int issued;
};

struct hdep {
	uint64_t ts;
	uint32_t thr;
};

struct hthr {              /* one thread's persist buffer, one variant */
	struct hep *ep;        /* every epoch; ep[nep - 1] is open */
	size_t nep, capep;
	size_t head;           /* the oldest epoch not completed */
	uint64_t count;        /* buffered entries, issued ones included */
	double adv;            /* the time of its last record (9) */
	struct hdep *dep;
	size_t ndep, capdep;
};

struct thr {
	uint32_t tid;
	uint64_t last_ns;      /* trace time of its previous record */
	double prev_cost;      /* what it cost here and in tracing (2) */
	uint64_t flushed;      /* lines flushed since its previous barrier */
	double clock[TH_NMACH];
	double x86_durable[2]; /* when all its write-backs are durable */
	struct hthr hops[2];
	double start;          /* its first record's time (1) */
	int tx;                /* it began a transaction (1) */
};

struct model {
	struct th_opts o;
	double lat[2];         /* nvm, pwq */
	struct th_result *r;
	struct thr *thr;
	size_t nthr, capthr, last;
	struct tl_map dir[2];  /* of struct dir_ent */
	uint64_t t0;
};

static const unsigned hops_mach[2] = {TH_HOPS_NVM, TH_HOPS_PWQ};
static const unsigned x86_mach[2] = {TH_X86_NVM, TH_X86_PWQ};

static struct hthr *hthr_of(struct model *m, unsigned v, size_t t)
{
	return &m->thr[t].hops[v];
}

static int hthr_init(struct hthr *h)
{
	memset(h, 0, sizeof(*h));
	if (tl_grow(&h->ep, 0, &h->capep, sizeof(*h->ep)))
		return ENOMEM;
	memset(&h->ep[0], 0, sizeof(h->ep[0]));
	h->nep = 1;
	return 0;
}

/* The index of thread tid, created at its first record (time t). */
static int thr_get(struct model *m, uint32_t tid, uint64_t t, size_t *out)
{
	if (m->last < m->nthr && m->thr[m->last].tid == tid)
		return *out = m->last, 0;
	for (size_t i = 0; i < m->nthr; i++)
		if (m->thr[i].tid == tid)
			return *out = m->last = i, 0;
	if (tl_grow(&m->thr, m->nthr, &m->capthr, sizeof(*m->thr)))
		return ENOMEM;
	struct thr *th = &m->thr[m->nthr];
	memset(th, 0, sizeof(*th));
	th->tid = tid, th->last_ns = t;
	th->start = (double)(t - m->t0);
	for (unsigned k = 0; k < TH_NMACH; k++)
		th->clock[k] = th->start;
	int rc = hthr_init(&th->hops[0]);
	if (!rc)
		rc = hthr_init(&th->hops[1]);
	if (rc) {
		free(th->hops[0].ep), free(th->hops[1].ep);
		return rc;
	}
	*out = m->last = m->nthr++;
	return 0;
}

/* ---- HOPS persist buffers (invariants 7-15) ---- */

static void hops_issue(struct model *m, unsigned v, size_t t, size_t i,
                       double from);

/* Invariant 17: what thread x's gaps have lost so far to tracing and
 * x86_here costs (2), its drift from the trace's time. */
static double thr_drift(const struct model *m, size_t x)
{
	const struct thr *th = &m->thr[x];
	return (double)(th->last_ns - m->t0) - th->clock[TH_IDEAL];
}

/* Time `at` of thread a's clocks on thread t's (17). */
static double thr_xlate(const struct model *m, size_t a, size_t t,
                        double at)
{
	return a == t ? at : at + thr_drift(m, a) - thr_drift(m, t);
}

/* When, on thread t's clock, dependency d of one of t's epochs has its
 * source epoch completed, forcing its issue from time `from` of t's
 * clock (invariants 13, 17). */
static double hops_source_done(struct model *m, unsigned v, size_t t,
                               const struct hdep *d, double from)
{
	struct hthr *a = hthr_of(m, v, d->thr);
	assert(d->ts + 1 < a->nep); /* 12: a source epoch is closed */
	double at = thr_xlate(m, t, d->thr, from);
	for (size_t i = a->head; i <= d->ts; i++)
		if (!a->ep[i].issued)
			hops_issue(m, v, d->thr, i, at);
	return thr_xlate(m, d->thr, t, a->ep[d->ts].done);
}

/* Issue closed epoch i of thread t, its predecessor issued: at the
 * earliest after `from`, its close, the predecessor's completion, the
 * thread's last record and its sources' completions (9, 13). */
static void hops_issue(struct model *m, unsigned v, size_t t, size_t i,
                       double from)
{
	struct hthr *h = hthr_of(m, v, t);
	struct hep *e = &h->ep[i];
	assert(i + 1 < h->nep && !e->issued && e->n > 0);
	assert(i == 0 || h->ep[i - 1].issued); /* 9: in order */
	double s = dmax(dmax(from, h->adv), e->close);
	if (i > 0)
		s = dmax(s, h->ep[i - 1].done);
	for (size_t k = 0; k < e->ndep; k++)
		s = dmax(s, hops_source_done(m, v, t, &h->dep[e->dep0 + k],
		                             s));
	e->issued = 1;
	e->done = s + m->lat[v];
}

/* Complete the epochs done by `now`, issuing the next while the buffer
 * holds pb_launch entries or `forced` (a dfence waits). */
static void hops_advance(struct model *m, unsigned v, size_t t, double now,
                         int forced)
{
	struct hthr *h = hthr_of(m, v, t);
	while (h->head + 1 < h->nep) {
		struct hep *e = &h->ep[h->head];
		if (!e->issued) {
			if (!forced && h->count < m->o.pb_launch)
				break;
			hops_issue(m, v, t, h->head, h->adv);
		}
		if (e->done > now)
			break;
		h->count -= e->n;
		h->head++;
		m->r->hops[v].epochs_drained++;
	}
}

/* Close the open epoch at time `at` if it holds anything. */
static int hops_close(struct hthr *h, double at)
{
	struct hep *e = &h->ep[h->nep - 1];
	if (e->n == 0)
		return 0;
	if (tl_grow(&h->ep, h->nep, &h->capep, sizeof(*h->ep)))
		return ENOMEM;
	e = &h->ep[h->nep - 1];
	e->close = at;
	memset(e + 1, 0, sizeof(*e));
	e[1].dep0 = h->ndep;
	h->nep++;
	return 0;
}

static int hops_dfence(struct model *m, unsigned v, size_t t)
{
	struct hthr *h = hthr_of(m, v, t);
	double *clock = &m->thr[t].clock[hops_mach[v]];
	int rc = hops_close(h, *clock);
	if (rc)
		return rc;
	hops_advance(m, v, t, INFINITY, 1);
	double end = h->head ? dmax(*clock, h->ep[h->head - 1].done) : *clock;
	m->r->hops[v].dfence_stall_ns += end - *clock;
	*clock = h->adv = end;
	return 0;
}

/* Invariant 10: wait for the oldest epoch, splitting the open one when it
 * is the only one buffered. */
static int hops_full(struct model *m, unsigned v, size_t t)
{
	struct hthr *h = hthr_of(m, v, t);
	double *clock = &m->thr[t].clock[hops_mach[v]];
	if (h->head + 1 == h->nep) {
		int rc = hops_close(h, *clock);
		if (rc)
			return rc;
		m->r->hops[v].splits++;
	}
	if (!h->ep[h->head].issued)
		hops_issue(m, v, t, h->head, *clock);
	double end = dmax(*clock, h->ep[h->head].done);
	hops_advance(m, v, t, end, 0);
	m->r->hops[v].full_stall_ns += end - *clock;
	*clock = h->adv = end;
	return 0;
}

/* Make thread t's open epoch depend on thread a's current one (11, 12). */
static int hops_add_dep(struct model *m, unsigned v, size_t t, uint32_t a)
{
	struct hthr *src = hthr_of(m, v, a), *h = hthr_of(m, v, t);
	if (src->ep[src->nep - 1].n) {
		int rc = hops_close(src, src->adv);
		if (rc)
			return rc;
		m->r->hops[v].splits++;
	}
	struct hdep d = {src->nep - 2, a};
	struct hep *e = &h->ep[h->nep - 1];
	for (size_t k = e->dep0; k < h->ndep; k++)
		if (h->dep[k].thr == a) {
			h->dep[k].ts = d.ts;
			return 0;
		}
	if (tl_grow(&h->dep, h->ndep, &h->capdep, sizeof(*h->dep)))
		return ENOMEM;
	h->dep[h->ndep++] = d;
	e->ndep++;
	return 0;
}

/* Invariant 11 for a store of thread t to the line of entry w. */
static int hops_depend(struct model *m, unsigned v, size_t t,
                       const struct dir_ent *w)
{
	if (w->thr == UINT32_MAX || w->thr == t)
		return 0;
	const struct hep *e = &hthr_of(m, v, w->thr)->ep[w->ts];
	if (e->issued && thr_xlate(m, w->thr, t, e->done) <=
	                 m->thr[t].clock[hops_mach[v]])
		return 0;
	return hops_add_dep(m, v, t, w->thr);
}

static int hops_store_line(struct model *m, unsigned v, size_t t,
                           uint64_t region, uint64_t line)
{
	struct hthr *h = hthr_of(m, v, t);
	struct dir_ent *w = dir_get(&m->dir[v], region, line);
	if (!w)
		return ENOMEM;
	int coalesce = w->thr == t && w->ts == h->nep - 1;
	if (!coalesce && h->count >= m->o.pb_entries) {
		int rc = hops_full(m, v, t);
		if (rc)
			return rc;
	}
	int rc = hops_depend(m, v, t, w);
	if (rc)
		return rc;
	/* hops_depend may have grown another thread's arrays, not the
	 * directory: w is still valid. */
	if (!coalesce) {
		h->ep[h->nep - 1].n++;
		h->count++;
	}
	w->thr = (uint32_t)t, w->ts = h->nep - 1;
	return 0;
}

/* ---- the records ---- */

/* Invariant 2: the de-persisted gap since the thread's previous record. */
static void thr_work(struct thr *th, uint64_t t)
{
	double gap = (double)(t - th->last_ns) - th->prev_cost;
	if (gap > 0)
		for (unsigned k = 0; k < TH_NMACH; k++)
			th->clock[k] += gap;
	th->last_ns = t;
}

/* Before any HOPS record: complete and issue what the time allows. */
static void hops_begin(struct model *m, size_t t)
{
	for (unsigned v = 0; v < 2; v++) {
		hops_advance(m, v, t, m->thr[t].clock[hops_mach[v]], 0);
		m->thr[t].hops[v].adv = m->thr[t].clock[hops_mach[v]];
	}
}

static int on_store(struct model *m, size_t t,
                    const struct pmtx_trace_rec *rec)
{
	uint64_t first, last;
	int rc = tl_line_span(rec, &first, &last);
	if (rc <= 0)
		return rc; /* no line, or corrupt */
	struct thr *th = &m->thr[t];
	m->r->stores++;
	m->r->pm_lines_stored += last - first + 1;
	for (unsigned v = 0; rec->type == PMTX_TEV_NT && v < 2; v++)
		th->x86_durable[v] = dmax(th->x86_durable[v],
		                          th->clock[x86_mach[v]] + m->lat[v]);
	hops_begin(m, t);
	for (unsigned v = 0; v < 2; v++)
		for (uint64_t l = first; l <= last; l++) {
			rc = hops_store_line(m, v, t, rec->region, l);
			if (rc)
				return rc;
		}
	return 0;
}

static void on_flush(struct model *m, struct thr *th,
                     const struct pmtx_trace_rec *rec)
{
	double cost = m->o.here_clwb_ns * rec->arg;
	for (unsigned v = 0; rec->arg && v < 2; v++)
		th->x86_durable[v] = dmax(th->x86_durable[v],
		                          th->clock[x86_mach[v]] + m->lat[v]);
	th->clock[TH_X86_HERE] += cost;
	th->flushed += rec->arg;
	th->prev_cost += cost;
}

static int on_barrier(struct model *m, size_t t,
                      const struct pmtx_trace_rec *rec)
{
	struct thr *th = &m->thr[t];
	/* 5: nothing to wait for, nothing to pay */
	double cost = th->flushed ? m->o.here_fence_ns +
	                            m->o.here_line_ns * th->flushed : 0;
	unsigned kind = rec->arg == PMTX_TBK_ORDER ? 0
	                : rec->arg == PMTX_TBK_DURABLE ? 1 : 2;
	m->r->barriers[kind]++;
	for (unsigned v = 0; v < 2; v++)
		th->clock[x86_mach[v]] = dmax(th->clock[x86_mach[v]],
		                              th->x86_durable[v]);
	th->clock[TH_X86_HERE] += cost;
	th->prev_cost += cost;
	th->flushed = 0;
	hops_begin(m, t);
	int rc = 0;
	for (unsigned v = 0; !rc && v < 2; v++)
		rc = kind == 0 ? hops_close(&th->hops[v], th->clock[hops_mach[v]])
		               : hops_dfence(m, v, t);
	return rc;
}

static int feed(struct model *m, const struct pmtx_trace_rec *rec)
{
	size_t t;
	if (m->r->records++ == 0)
		m->t0 = m->r->first_ns = rec->time_ns;
	m->r->last_ns = rec->time_ns;
	int rc = thr_get(m, rec->tid, rec->time_ns, &t);
	if (rc)
		return rc;
	struct thr *th = &m->thr[t];
	thr_work(th, rec->time_ns);
	th->prev_cost = m->o.trace_ns;
	switch (tl_kind_of(rec)) {
	case TL_STORE:
		return on_store(m, t, rec);
	case TL_FLUSH:
		on_flush(m, th, rec);
		return 0;
	case TL_BARRIER:
		return on_barrier(m, t, rec);
	case TL_BEGIN:
		th->tx = 1;
		return 0;
	default:
		return 0; /* a transaction's end, and the rest */
	}
}

/* Invariants 1 and 15: the run times, and the epochs drained by the end
 * of each thread's clock. */
static void finish(struct model *m)
{
	struct th_result *r = m->r;
	int any_tx = 0;
	double start = -1;
	r->threads = m->nthr;
	for (size_t t = 0; t < m->nthr; t++)
		any_tx |= m->thr[t].tx;
	for (size_t t = 0; t < m->nthr; t++) {
		const struct thr *th = &m->thr[t];
		for (unsigned v = 0; v < 2; v++)
			hops_advance(m, v, t, th->clock[hops_mach[v]], 0);
		if (any_tx && !th->tx)
			continue;
		if (start < 0 || th->start < start)
			start = th->start;
		for (unsigned k = 0; k < TH_NMACH; k++)
			r->time_ns[k] = dmax(r->time_ns[k], th->clock[k]);
	}
	for (unsigned k = 0; start > 0 && k < TH_NMACH; k++)
		r->time_ns[k] -= start;
}

/* ---- driving it over a file (invariant 3) ---- */

/* feed, for tl_feed_sorted. */
static int feed_sorted(void *m, const struct pmtx_trace_rec *rec)
{
	return feed(m, rec);
}

static void model_free(struct model *m)
{
	for (size_t t = 0; t < m->nthr; t++)
		for (unsigned v = 0; v < 2; v++)
			free(m->thr[t].hops[v].ep), free(m->thr[t].hops[v].dep);
	free(m->thr);
	tl_map_free(&m->dir[0]), tl_map_free(&m->dir[1]);
}

int th_model_file(const char *path, const struct th_opts *o,
                  struct th_result *res)
{
	if (!(o->ghz > 0) || o->pb_entries == 0)
		return PMTX_E_INVAL;
	struct model m = {.o = *o, .r = res};
	m.lat[0] = o->pm_cycles / o->ghz;
	m.lat[1] = o->pwq_cycles / o->ghz;
	memset(res, 0, sizeof(*res));
	m.dir[0].esz = m.dir[1].esz = sizeof(struct dir_ent);
	int rc = tl_feed_sorted(path, feed_sorted, &m);
	if (!rc)
		finish(&m);
	model_free(&m);
	return rc;
}
