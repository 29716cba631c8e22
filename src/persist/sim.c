/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sim.c - the simulated-persistence backend (sim.h).
 *
 * Design
 * ------
 * The sim keeps three images of one region: the working mapping (what the
 * program sees), the durable image (what survives a power failure for
 * certain) and the shadow (the durable image plus every store the sim has
 * been told of). Between durable and working, each cache line carries its
 * list of pending stores, in program order. A crash image is the durable
 * image with, for every line, a prefix of that line's pending stores
 * applied; the last store of the prefix may be applied to any non-empty
 * subset of its 8-byte words.
 *
 * Where stores come from
 *   - the library's tracked stores, through the trace sink (a STORE event
 *     follows the store, so the bytes are read from the working mapping);
 *   - non-temporal copies (copy_nt), which are stores already flushed;
 *   - stores the library was not told of ("naked" stores by the user, or
 *     any untracked store): the working line differs from the shadow. They
 *     are found when the line is next stored through the library, flushed,
 *     or when a crash image is taken, and become one store at that moment.
 *
 * Invariants
 *  S1. (x86 persistency, PDOM-0/1) Stores to one line persist in program
 *      order: a crash image applies a prefix of each line's list. Lines are
 *      independent of each other, except that a barrier makes every line
 *      this thread flushed before it durable.
 *  S2. A flush records (line, number of stores made to the line so far);
 *      the barrier that follows makes exactly those stores durable: the
 *      content at flush time. Stores made after the flush stay pending.
 *      A flush without a barrier makes nothing durable.
 *  S3. Only aligned 8-byte words are atomic: the last store of a prefix
 *      persists any non-empty subset of its words.
 *  S4. Non-temporal stores are pending (possibly persisted, possibly not)
 *      until the next barrier of the thread that made them, then durable.
 *  S5. (PDOM-2, eADR) A store is durable once it leaves the store buffer;
 *      a crash image is the durable image plus a prefix of the global
 *      order of stores (split into 8-byte words) since the last barrier;
 *      at a barrier the whole working image becomes durable.
 *  S6. A crash point is the moment just before a barrier takes effect; the
 *      point callback runs there with the sim locked, so no other thread
 *      changes the model while it looks.
 *  S7. A naked store is ordered at the moment it is found, after every
 *      store the sim saw before it. This is the one approximation: the
 *      true order of a naked store among the library's own stores to the
 *      same line is unknown. Under PDOM-2, where nothing is flushed, the
 *      whole region is searched for naked stores before each tracked
 *      store, so they keep their order relative to the library's.
 *  S8. A store the library reports as volatile (PMTX_TEV_VSTORE: the
 *      writers bitmap in object headers, a copy-on-write wrapper's writer)
 *      is taken as known and durable at once: it is never naked, never
 *      pending and never reported, since recovery ignores its value.
 *  S9. With a preset durable image (sim_preset_durable: a process died
 *      with those lines in its cache), a naked store persists as a whole
 *      or not at all: the dead process makes no more stores, and x86
 *      writes a line back as a unit, so what it left pending in a line
 *      reaches the media together or not at all (the per-word choice of
 *      S3 would let a cache-line transaction's index persist without its
 *      half, which no write-back does). A store of recovery's own to such
 *      a line comes after it (S1).
 * S10. A region closed and opened again in the same process attaches to
 *      the same sim at its new address: the durable image, the shadow
 *      and every pending store and flush carry over (they are kept by
 *      line, not by address), as the cache keeps them across a close.
 *
 * Checks (sim_set_checks, the pmemcheck-like mode)
 *  - a transaction that commits while one of its tracked stores has not
 *    been flushed is reported with the offset, size and call site;
 *  - a line that is dirty with a naked store when a transaction commits is
 *    reported with its offset (the call site is unknown);
 *  - a flush of a line with no store since it was last flushed or made
 *    durable is a redundant flush: counted and reported as a warning.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* How a naked store is recorded: 2 (SIM_WHOLE) when the durable image
 * was preset (S9), else 1. */
#define SIM_WHOLE 2
#define NAKED(s) ((s)->preset ? SIM_WHOLE : 1)

struct sim_line {
	uint32_t n, cap;
	uint64_t base_seq;    /* stores folded into the durable image */
	uint64_t flushed_seq; /* stores covered by the latest flush */
	struct sim_store *st; /* pending stores: seq base_seq+1 ... */
	int listed;           /* in s->dirty */
};

struct sim {
	pthread_mutex_t lock;
	char *base;
	size_t len, nlines; /* the region now (it may grow) */
	size_t cap;         /* bytes of durable, shadow and lines[] */
	pmtx_domain domain;
	uint8_t *durable, *shadow;
	int own_durable;
	int preset; /* sim_preset_durable */
	struct sim_line *lines;
	uint32_t *dirty; /* lines that may have pending stores */
	uint32_t ndirty, capdirty;
	struct sim_gstore *g; /* PDOM-2: word stores since the last barrier */
	uint32_t ng, capg;
	uint64_t barriers;
	sim_point_fn point_fn;
	void *point_arg;
	int checks;
	struct sim_check_stats cs;
	int oom;
};

/* A tracked store made inside a running transaction (checks). */
struct tx_store {
	uint32_t line;
	uint64_t seq, off, size;
	void *site;
};

/* Per-thread state: the pending flushes of this thread (S2), and the
 * tracked stores of its running transaction (checks); freed at the
 * thread's exit (tls_free). */
static _Thread_local struct {
	struct sim *s;
	uint32_t n, cap;
	struct { uint32_t line; uint64_t seq; } *f;
	int in_tx;
	uint32_t nts, capts;
	struct tx_store *ts;
} tls;
static _Thread_local struct pmtx__thread_exit tls_exit; /* tls_free */

/* The thread's buffers, at its exit. */
static void tls_free(void *arg)
{
	(void)arg;
	free(tls.f);
	free(tls.ts);
	memset(&tls, 0, sizeof(tls));
}

static void *grow(void *p, uint32_t *cap, size_t elem, int *oom)
{
	uint32_t c = *cap ? *cap * 2 : 8;
	void *q = realloc(p, (size_t)c * elem);
	if (!q) {
		*oom = 1;
		return p;
	}
	*cap = c;
	return q;
}

/* ---- construction ---- */

struct sim *sim_new(size_t len, void *durable)
{
	struct sim *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pthread_mutex_init(&s->lock, NULL);
	s->len = s->cap = len;
	s->nlines = (len + CACHE_LINE - 1) / CACHE_LINE;
	s->durable = durable ? durable : malloc(len);
	s->own_durable = !durable;
	s->shadow = malloc(len);
	s->lines = calloc(s->nlines, sizeof(*s->lines));
	if (!s->durable || !s->shadow || !s->lines) {
		sim_free(s);
		return NULL;
	}
	return s;
}

void sim_free(struct sim *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->lines && i < (s->cap + 63) / 64; i++)
		free(s->lines[i].st);
	free(s->lines);
	if (s->own_durable)
		free(s->durable);
	free(s->shadow);
	free(s->dirty);
	free(s->g);
	free(s);
}

void sim_set_point_fn(struct sim *s, sim_point_fn fn, void *arg)
{
	s->point_fn = fn;
	s->point_arg = arg;
}

void sim_set_checks(struct sim *s, int on)
{
	s->checks = on;
}

uint64_t sim_barriers(const struct sim *s)
{
	return s->barriers;
}

void sim_check_stats(const struct sim *s, struct sim_check_stats *out)
{
	*out = s->cs;
}

/* ---- the model ---- */

static int ours(const struct sim *s, const struct persist *p)
{
	return s->base && p->base == s->base;
}

static uint64_t *wline(const struct sim *s, size_t l)
{
	return (uint64_t *)(void *)(s->base + l * CACHE_LINE);
}

static uint64_t *sline(const struct sim *s, size_t l)
{
	return (uint64_t *)(void *)(s->shadow + l * CACHE_LINE);
}

static uint64_t *dline(const struct sim *s, size_t l)
{
	return (uint64_t *)(void *)(s->durable + l * CACHE_LINE);
}

/* PDOM-2 (S5): append the words of mask, in address order. */
static void gpush(struct sim *s, size_t l, uint8_t mask)
{
	const uint64_t *w = wline(s, l);
	for (unsigned i = 0; i < 8; i++) {
		if (!(mask >> i & 1))
			continue;
		if (s->ng == s->capg) {
			s->g = grow(s->g, &s->capg, sizeof(*s->g), &s->oom);
			if (s->ng == s->capg)
				return;
		}
		s->g[s->ng++] = (struct sim_gstore){(uint32_t)l, i, w[i]};
	}
}

/* Append a store of the words in mask (values from the working line). */
static void push(struct sim *s, size_t l, uint8_t mask, int naked)
{
	uint64_t *w = wline(s, l), *sh = sline(s, l);
	for (unsigned i = 0; i < 8; i++)
		if (mask >> i & 1)
			sh[i] = w[i];
	if (s->domain == PMTX_PDOM2) {
		gpush(s, l, mask);
		return;
	}
	struct sim_line *ln = &s->lines[l];
	if (ln->n == ln->cap) {
		ln->st = grow(ln->st, &ln->cap, sizeof(*ln->st), &s->oom);
		if (ln->n == ln->cap)
			return;
	}
	struct sim_store *st = &ln->st[ln->n++];
	memcpy(st->v, w, sizeof(st->v));
	st->mask = mask;
	st->naked = (uint8_t)naked;
	if (!ln->listed) {
		if (s->ndirty == s->capdirty) {
			s->dirty = grow(s->dirty, &s->capdirty, sizeof(*s->dirty),
			                &s->oom);
			if (s->ndirty == s->capdirty)
				return;
		}
		s->dirty[s->ndirty++] = (uint32_t)l;
		ln->listed = 1;
	}
}

/* Words of line l where the working image differs from the shadow. */
static uint8_t naked_mask(const struct sim *s, size_t l)
{
	const uint64_t *w = wline(s, l), *sh = sline(s, l);
	uint8_t m = 0;
	for (unsigned i = 0; i < 8; i++)
		m |= (uint8_t)((w[i] != sh[i]) << i);
	return m;
}

/* Words of line l that [a, a+n) overlaps. */
static uint8_t range_mask(const struct sim *s, size_t l, uintptr_t a,
                          uint64_t n)
{
	uintptr_t lo = (uintptr_t)s->base + l * CACHE_LINE, hi = lo + 64;
	uintptr_t b = MAX(a, lo), e = MIN(a + n, hi);
	uint8_t m = 0;
	for (uintptr_t x = ALIGN_DOWN(b, 8); x < e; x += 8)
		m |= (uint8_t)(1u << ((x - lo) / 8));
	return m;
}

static void collect_naked(struct sim *s);

/* A tracked store to [a, a+n) (after it happened). */
static void store_range(struct sim *s, const void *a, uint64_t n)
{
	uintptr_t p = (uintptr_t)a, base = (uintptr_t)s->base;
	if (n == 0 || p < base || p + n > base + s->len)
		return;
	/* S7 under PDOM-2: no flush ever shows a naked store, so look for
	 * them before every tracked store, which keeps them in order. */
	if (s->domain == PMTX_PDOM2)
		collect_naked(s);
	for (size_t l = (p - base) / 64; l <= (p + n - 1 - base) / 64; l++) {
		uint8_t m = range_mask(s, l, p, n);
		uint8_t nk = naked_mask(s, l) & (uint8_t)~m;
		if (nk)
			push(s, l, nk, NAKED(s)); /* S7 */
		push(s, l, m, 0);
	}
}

/* A store with DRAM semantics (PMTX_TEV_VSTORE): never flushed, and any
 * value is fine after a crash, so the model just takes the new value as
 * known and durable; it is then neither naked nor pending (S8). */
static void volatile_range(struct sim *s, const void *a, uint64_t n)
{
	uintptr_t p = (uintptr_t)a, base = (uintptr_t)s->base;
	if (n == 0 || p < base || p + n > base + s->len)
		return;
	for (size_t l = (p - base) / 64; l <= (p + n - 1 - base) / 64; l++) {
		uint8_t m = range_mask(s, l, p, n);
		const uint64_t *w = wline(s, l);
		uint64_t *sh = sline(s, l), *d = dline(s, l);
		for (unsigned i = 0; i < 8; i++)
			if (m >> i & 1)
				sh[i] = d[i] = w[i];
	}
}

static uint64_t line_seq(const struct sim_line *ln)
{
	return ln->base_seq + ln->n;
}

/* Make the first seq - base_seq pending stores of l durable (S2). */
static void fold(struct sim *s, size_t l, uint64_t seq)
{
	struct sim_line *ln = &s->lines[l];
	if (seq <= ln->base_seq)
		return;
	uint64_t k = MIN(seq - ln->base_seq, ln->n);
	uint64_t *d = dline(s, l);
	for (uint64_t j = 0; j < k; j++)
		for (unsigned i = 0; i < 8; i++)
			if (ln->st[j].mask >> i & 1)
				d[i] = ln->st[j].v[i];
	memmove(ln->st, ln->st + k, (ln->n - k) * sizeof(*ln->st));
	ln->n -= (uint32_t)k;
	ln->base_seq += k;
}

static void add_pending_flush(struct sim *s, size_t l)
{
	if (tls.s != s) {
		tls.s = s;
		tls.n = 0;
	}
	if (tls.n == tls.cap) {
		(void)pmtx__thread_exit_register(&tls_exit, tls_free, NULL);
		tls.f = grow(tls.f, &tls.cap, sizeof(*tls.f), &s->oom);
		if (tls.n == tls.cap)
			return;
	}
	tls.f[tls.n].line = (uint32_t)l;
	tls.f[tls.n++].seq = line_seq(&s->lines[l]);
}

/* ---- checks ---- */

static void *call_site(void)
{
	void *bt[6];
	int n = backtrace(bt, 6);
	/* 0 call_site, 1 the sink, 2 trace_emit, 3 the library site. */
	return n > 3 ? bt[3] : NULL;
}

static void print_site(FILE *f, void *site)
{
	Dl_info di;
	if (site && dladdr(site, &di) && di.dli_fname) {
		fprintf(f, "%s+0x%lx", di.dli_fname,
		        (unsigned long)((char *)site - (char *)di.dli_fbase));
		if (di.dli_sname)
			fprintf(f, " (%s)", di.dli_sname);
	} else {
		fprintf(f, "%p", site);
	}
}

static void note_tx_store(struct sim *s, const void *a, uint64_t n)
{
	uintptr_t p = (uintptr_t)a, base = (uintptr_t)s->base;
	if (!tls.in_tx || n == 0 || p < base || p + n > base + s->len)
		return;
	void *site = call_site();
	for (size_t l = (p - base) / 64; l <= (p + n - 1 - base) / 64; l++) {
		if (tls.nts == tls.capts) {
			(void)pmtx__thread_exit_register(&tls_exit, tls_free,
			                                 NULL);
			tls.ts = grow(tls.ts, &tls.capts, sizeof(*tls.ts),
			              &s->oom);
			if (tls.nts == tls.capts)
				return;
		}
		tls.ts[tls.nts++] = (struct tx_store){
			(uint32_t)l, line_seq(&s->lines[l]), p - base, n, site};
	}
}

static int flushed(const struct sim *s, const struct tx_store *t)
{
	const struct sim_line *ln = &s->lines[t->line];
	return ln->flushed_seq >= t->seq || ln->base_seq >= t->seq;
}

/* deferred: the runtime stores in place after its COMMIT is durable and
 * flushes at truncation (redo-async): its log holds those stores. */
static void check_commit(struct sim *s, int deferred)
{
	if (s->domain == PMTX_PDOM2)
		return; /* nothing is ever flushed: no such bug exists */
	for (uint32_t i = 0; i < tls.nts && !deferred; i++) {
		struct tx_store *t = &tls.ts[i];
		if (flushed(s, t))
			continue;
		s->cs.unflushed_at_commit++;
		fprintf(stderr, "pmtx sim: store not flushed at commit: off "
		        "0x%llx size %llu line 0x%llx, stored at ",
		        (unsigned long long)t->off,
		        (unsigned long long)t->size,
		        (unsigned long long)t->line * 64);
		print_site(stderr, t->site);
		fputc('\n', stderr);
	}
	for (size_t l = 0; l < s->nlines; l++)
		if (naked_mask(s, l)) {
			s->cs.dirty_at_commit++;
			fprintf(stderr, "pmtx sim: line 0x%llx has a naked "
			        "store not flushed at commit\n",
			        (unsigned long long)l * 64);
		}
}

static void check_flush(struct sim *s, size_t l, uint8_t nk)
{
	struct sim_line *ln = &s->lines[l];
	s->cs.flushes++;
	if (nk || line_seq(ln) > MAX(ln->flushed_seq, ln->base_seq))
		return;
	if (s->cs.redundant_flushes++ < 8) {
		fprintf(stderr, "pmtx sim: warning: redundant flush of line "
		        "0x%llx from ", (unsigned long long)l * 64);
		print_site(stderr, call_site());
		fputc('\n', stderr);
	}
}

/* ---- the backend ---- */

static void sim_attach(struct persist *p)
{
	struct sim *s = p->ctx;
	pthread_mutex_lock(&s->lock);
	if (s->base && p->len == s->len) { /* S10: the region again */
		s->base = p->base;
	} else if (!s->base && p->len <= s->cap) {
		s->base = p->base;
		s->domain = p->domain;
		s->len = p->len;
		s->nlines = (s->len + CACHE_LINE - 1) / CACHE_LINE;
		if (!s->preset) /* else the mapping's differences are
		                 * naked stores, found as S7 says */
			memcpy(s->durable, p->base, s->len);
		memcpy(s->shadow, s->durable, s->len);
	}
	pthread_mutex_unlock(&s->lock);
}

void sim_preset_durable(struct sim *s)
{
	s->preset = 1;
}

static void sim_flush(struct persist *p, const void *a, size_t n)
{
	struct sim *s = p->ctx;
	uintptr_t x = (uintptr_t)a, base = (uintptr_t)s->base;
	if (!ours(s, p) || n == 0 || x < base || x + n > base + s->len)
		return;
	pthread_mutex_lock(&s->lock);
	for (size_t l = (x - base) / 64; l <= (x + n - 1 - base) / 64; l++) {
		uint8_t nk = naked_mask(s, l);
		if (s->checks)
			check_flush(s, l, nk);
		if (nk)
			push(s, l, nk, NAKED(s));
		s->lines[l].flushed_seq = line_seq(&s->lines[l]);
		add_pending_flush(s, l);
	}
	pthread_mutex_unlock(&s->lock);
}

/* PDOM-2 barrier (S5): everything visible is durable. */
static void barrier_pdom2(struct sim *s)
{
	memcpy(s->durable, s->base, s->len);
	memcpy(s->shadow, s->base, s->len);
	s->ng = 0;
}

static int sim_barrier(struct persist *p)
{
	struct sim *s = p->ctx;
	if (!ours(s, p))
		return 0;
	pthread_mutex_lock(&s->lock);
	s->barriers++;
	if (s->point_fn)
		s->point_fn(s, s->barriers, s->point_arg); /* S6 */
	if (s->domain == PMTX_PDOM2) {
		barrier_pdom2(s);
	} else if (tls.s == s) {
		for (uint32_t i = 0; i < tls.n; i++)
			fold(s, tls.f[i].line, tls.f[i].seq);
		tls.n = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static void sim_copy_nt(struct persist *p, void *dst, const void *src,
                        size_t n)
{
	struct sim *s = p->ctx;
	memcpy(dst, src, n);
	if (!ours(s, p))
		return;
	pthread_mutex_lock(&s->lock);
	store_range(s, dst, n); /* S4: a store ... */
	uintptr_t x = (uintptr_t)dst, base = (uintptr_t)s->base;
	if (s->domain != PMTX_PDOM2 && n && x >= base && x + n <= base + s->len)
		for (size_t l = (x - base) / 64; l <= (x + n - 1 - base) / 64;
		     l++)
			add_pending_flush(s, l); /* ... already on its way */
	pthread_mutex_unlock(&s->lock);
}

/* The region's file grew (durably, zero-filled): the new bytes are in the
 * durable image as they are now. A region that would outgrow the sim's
 * capacity is not simulated past it. */
static void sim_grow(struct persist *p, size_t len)
{
	struct sim *s = p->ctx;
	if (!ours(s, p) || len <= s->len || len > s->cap)
		return;
	pthread_mutex_lock(&s->lock);
	memcpy(s->durable + s->len, s->base + s->len, len - s->len);
	memcpy(s->shadow + s->len, s->base + s->len, len - s->len);
	s->len = len;
	s->nlines = (len + CACHE_LINE - 1) / CACHE_LINE;
	pthread_mutex_unlock(&s->lock);
}

const persist_ops sim_ops = {"sim", sim_flush, sim_barrier, sim_copy_nt,
                             sim_attach, sim_grow, NULL, NULL};

void sim_trace_sink(void *arg, unsigned type, const char *base,
                    const void *a, uint64_t n, uint32_t aux, int32_t status)
{
	struct sim *s = arg;
	if (!s->base || base != s->base)
		return;
	pthread_mutex_lock(&s->lock);
	switch (type) {
	case PMTX_TEV_STORE:
		store_range(s, a, n);
		if (s->checks)
			note_tx_store(s, a, n);
		break;
	case PMTX_TEV_VSTORE:
		volatile_range(s, a, n);
		break;
	case PMTX_TEV_BEGIN:
		tls.in_tx = 1;
		tls.nts = 0;
		break;
	case PMTX_TEV_COMMIT:
		if (s->checks && status == 0)
			check_commit(s, aux == PMTX_RT_REDO_ASYNC);
		tls.in_tx = 0;
		break;
	case PMTX_TEV_ABORT:
		tls.in_tx = 0;
		break;
	default:
		break;
	}
	pthread_mutex_unlock(&s->lock);
	(void)aux;
}

/* ---- snapshots ---- */

/* Record every naked store still in the working image (S7). */
static void collect_naked(struct sim *s)
{
	for (size_t l = 0; l < s->nlines; l++) {
		uint8_t nk = naked_mask(s, l);
		if (nk)
			push(s, l, nk, NAKED(s));
	}
}

static size_t snap_lines(struct sim *s, uint8_t *out, size_t cap,
                         struct sim_snap *h)
{
	size_t off = sizeof(*h), keep = 0;
	for (size_t i = 0; i < s->ndirty; i++) {
		uint32_t l = s->dirty[i];
		struct sim_line *ln = &s->lines[l];
		if (!ln->n) {
			ln->listed = 0;
			continue;
		}
		s->dirty[keep++] = l;
		size_t need = sizeof(struct sim_line_hdr) +
		              ln->n * sizeof(struct sim_store);
		if (off + need <= cap) {
			struct sim_line_hdr lh = {l, ln->n};
			memcpy(out + off, &lh, sizeof(lh));
			memcpy(out + off + sizeof(lh), ln->st,
			       ln->n * sizeof(struct sim_store));
		}
		off += need;
		h->nlines++;
		h->nstores += ln->n;
	}
	s->ndirty = keep;
	return off;
}

size_t sim_snapshot(struct sim *s, void *buf, size_t cap, uint64_t point)
{
	if (!s->base)
		return 0;
	collect_naked(s);
	struct sim_snap h = {.len = s->len, .domain = s->domain,
	                     .point = point};
	uint8_t *out = buf;
	size_t off;
	if (s->domain == PMTX_PDOM2) {
		off = sizeof(h) + s->ng * sizeof(*s->g);
		if (off <= cap && s->ng) /* s->g is NULL before a store */
			memcpy(out + sizeof(h), s->g, s->ng * sizeof(*s->g));
		h.nstores = s->ng;
	} else {
		off = snap_lines(s, out, cap, &h);
	}
	h.bytes = off;
	if (s->oom)
		h.bytes = SIZE_MAX; /* the model is incomplete */
	if (cap >= sizeof(h))
		memcpy(out, &h, sizeof(h));
	return s->oom ? SIZE_MAX : off;
}

void sim_final(struct sim *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->point_fn)
		s->point_fn(s, s->barriers + 1, s->point_arg);
	pthread_mutex_unlock(&s->lock);
}

/* ---- images ---- */

static uint64_t line_options(const struct sim_store *st, uint32_t n)
{
	uint64_t c = 1;
	for (uint32_t j = 0; j < n; j++)
		c += st[j].naked == SIM_WHOLE
		             ? 1
		             : (1u << __builtin_popcount(st[j].mask)) - 1;
	return c;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* Walk the lines of a PDOM-0/1 snapshot. */
#define SNAP_FOR_LINES(snap, lh, st)                                         \
	for (const uint8_t *p_ = (const uint8_t *)((snap) + 1);              \
	     p_ < (const uint8_t *)(snap) + (snap)->bytes &&                 \
	     ((lh) = (const struct sim_line_hdr *)(const void *)p_,          \
	     (st) = (const struct sim_store *)(const void *)((lh) + 1), 1);  \
	     p_ += sizeof(*(lh)) + (lh)->nstores * sizeof(*(st)))

uint64_t sim_image_count(const struct sim_snap *snap)
{
	if (snap->domain == PMTX_PDOM2)
		return snap->nstores + 1;
	uint64_t c = 1;
	const struct sim_line_hdr *lh;
	const struct sim_store *st;
	SNAP_FOR_LINES(snap, lh, st)
		c = sat_mul(c, line_options(st, lh->nstores));
	return c;
}

/* Apply to line d option o of stores st[0..n) (o < line_options). */
static void apply_option(uint64_t *d, const struct sim_store *st, uint32_t n,
                         uint64_t o)
{
	if (o == 0)
		return;
	o--;
	for (uint32_t j = 0; j < n; j++) {
		unsigned w = (unsigned)__builtin_popcount(st[j].mask);
		int whole = st[j].naked == SIM_WHOLE; /* S9 */
		uint64_t blk = whole ? 1 : (1u << w) - 1;
		if (o >= blk || whole) {
			for (unsigned i = 0; i < 8; i++)
				if (st[j].mask >> i & 1)
					d[i] = st[j].v[i];
			if (o < blk) /* a whole store that ends the prefix */
				return;
			o -= blk;
			continue;
		}
		uint64_t sub = o + 1; /* S3: a non-empty subset of the words */
		for (unsigned i = 0, k = 0; i < 8; i++) {
			if (!(st[j].mask >> i & 1))
				continue;
			if (sub >> k++ & 1)
				d[i] = st[j].v[i];
		}
		return;
	}
}

static void image_pdom2(const struct sim_snap *snap, uint64_t id, int sample,
                        uint64_t seed, uint8_t *out)
{
	const struct sim_gstore *g = (const void *)(snap + 1);
	uint64_t k = sample ? pmtx_mix64(seed ^ pmtx_mix64(id)) % (snap->nstores + 1) : id;
	for (uint64_t j = 0; j < k && j < snap->nstores; j++)
		((uint64_t *)(void *)(out + (size_t)g[j].line * 64))[g[j].word] =
			g[j].v;
}

void sim_image_visible(const struct sim_snap *snap, const uint8_t *durable,
                       uint8_t *out)
{
	memcpy(out, durable, snap->len);
	if (snap->domain == PMTX_PDOM2) {
		image_pdom2(snap, snap->nstores, 0, 0, out);
		return;
	}
	const struct sim_line_hdr *lh;
	const struct sim_store *st;
	SNAP_FOR_LINES(snap, lh, st)
		apply_option((uint64_t *)(void *)(out + (size_t)lh->line * 64),
		             st, lh->nstores, line_options(st, lh->nstores) - 1);
}

void sim_image(const struct sim_snap *snap, const uint8_t *durable,
               uint64_t id, int sample, uint64_t seed, uint8_t *out)
{
	memcpy(out, durable, snap->len);
	if (snap->domain == PMTX_PDOM2) {
		image_pdom2(snap, id, sample, seed, out);
		return;
	}
	uint64_t rng = pmtx_mix64(seed ^ pmtx_mix64(id ^ 0x5157ull));
	int focus_mode = sample && (rng & 1);
	uint64_t focus = sample && snap->nlines ? pmtx_mix64(rng) % snap->nlines : 0;
	uint64_t idx = 0, rest = id;
	const struct sim_line_hdr *lh;
	const struct sim_store *st;
	SNAP_FOR_LINES(snap, lh, st) {
		uint64_t opts = line_options(st, lh->nstores), o;
		uint64_t r = pmtx_mix64(rng + ++idx);
		if (!sample) {
			o = rest % opts;
			rest /= opts;
		} else if (focus_mode && idx - 1 != focus) {
			o = (r & 1) ? opts - 1 : 0;
		} else {
			o = r % opts;
		}
		apply_option((uint64_t *)(void *)(out + (size_t)lh->line * 64),
		             st, lh->nstores, o);
	}
}
