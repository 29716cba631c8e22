/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_alloc.c - the `alloc` workload: seed 000 section 6.2, Alloc-X.
 *
 * Each transaction allocates `x` blocks of a random size of 1..512 bytes.
 * To stay in a steady state, the last `ring` (4096) allocations are kept in
 * a DRAM ring, and each allocation first frees the block it displaces from
 * the ring, in the same transaction. So one op (one transaction) is x
 * (free + alloc) pairs, for every system alike. The ring is filled during
 * setup (outside the measurement), so every measured allocation also
 * frees. The ring lives in DRAM, not in the region: the seed's transactions
 * "simply allocate", and storing the offsets persistently would add writes
 * to the measurement. The extra field "allocs_per_s" is x x ops_per_s.
 *
 * Systems
 *   pmtx-undo, pmtx-redo, pmtx-redo-async, pmtx-cow, pmtx-twin  pmtx_free
 *       + pmtx_alloc in a transaction of that runtime (lazy persist: the
 *       allocator's metadata is made durable by the commit's barriers,
 *       zero barriers per call). pmtx-twin runs in a twin region
 *       (PMTX_RT_TWIN, twice the bytes: bench_region): it writes no
 *       allocation log; commit applies the allocations and frees to the
 *       heap metadata in place, flushes those lines with the rest of the
 *       transaction and copies them to the back copy (4 barriers per
 *       transaction, whatever x is); the freed blocks return to the DRAM
 *       heap after the commit.
 *   pmtx-undo-eager  the seed's Eager Persist baseline: an undo transaction
 *       where every allocator call (allocation or free, as the seed says:
 *       "persist barriers per allocation/deallocation call") is followed by
 *       a persist (flush + barrier) of the block's first byte, which models
 *       an allocator that persists its metadata eagerly. The seed's
 *       Alloc-X only allocates; our steady state adds a free per
 *       allocation, and an eager allocator would persist that too. So in
 *       steady state it issues 2 more barriers per allocation than
 *       pmtx-undo (measured: 4 + 2x barriers per op, against 4).
 *   pmdk   pmemobj_tx_free + pmemobj_tx_alloc inside TX_BEGIN.
 *   plain  free + malloc, no transaction (the floor).
 * The pmtx systems run under each configuration of bench_configs().
 *
 * Parameters (--p): x (sweep, "1,2,4,8,16,32"), ring (4096), seed (1).
 * Every runner draws the same sizes from the same seed.
 *
 * Validation (check)
 *   pmtx: pmtx_heap_check passes, and pmtx_heap_walk reports exactly the
 *         ring's blocks: the same set of offsets, none twice, each with a
 *         usable size at least the size asked for.
 *   pmdk: POBJ_FOREACH counts exactly `ring` objects, and every ring entry
 *         has a usable size at least the size asked for.
 *   plain: every ring entry is non-NULL (malloc's own state is opaque).
 * corrupt (--inject-fault) forgets one ring entry in DRAM, so the walk (or
 * the count, or the non-NULL test) no longer matches the ring.
 */
#include <libpmemobj.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MAX_SIZE 512u
#define SLACK (64ull << 20) /* region bytes beyond the blocks */

enum alloc_kind { AK_PMTX, AK_EAGER, AK_PMDK, AK_PLAIN };

struct alloc_params {
	long x;
	long ring;
	uint64_t seed;
};

struct alloc_ctx {
	struct alloc_params p;
	enum alloc_kind kind;
	pmtx_runtime rt;
	uint64_t rng;
	uint64_t pos;     /* next ring slot, modulo p.ring */
	uint16_t *size;   /* size asked for by each ring entry */
	union {           /* the ring, of the runner's kind */
		pmtx_off *offs; /* pmtx (0 = empty) */
		PMEMoid *oids;  /* pmdk */
		void **ptrs;    /* plain */
	};
	void *lost;       /* plain: the entry corrupt() forgot, freed at end */
	pmtx_region *r;
	PMEMobjpool *pop;
	char path[256];
};

static uint64_t rng_seed(uint64_t seed)
{
	return seed ^ 0x9e3779b97f4a7c15ull; /* xorshift needs nonzero */
}

/* The next ring slot and the size of the block that will fill it. */
static uint64_t next_slot(struct alloc_ctx *c)
{
	uint64_t slot = c->pos++ % (uint64_t)c->p.ring;
	c->size[slot] = (uint16_t)(bench_rand(&c->rng) % MAX_SIZE + 1);
	return slot;
}

/* ---- the transactions ---- */

/* Eager persist: one barrier of its own after an allocator call. */
static int eager(struct alloc_ctx *c, pmtx_off off)
{
	if (c->kind != AK_EAGER || !off)
		return 0;
	return pmtx_persist(c->r, pmtx_ptr(c->r, off), 1);
}

static int pmtx_one(struct alloc_ctx *c, pmtx_tx *tx)
{
	uint64_t slot = next_slot(c);
	pmtx_off old = c->offs[slot];
	int rc = pmtx_free(tx, old);
	if (!rc)
		rc = eager(c, old);
	if (!rc)
		rc = pmtx_alloc(tx, c->size[slot], &c->offs[slot]);
	if (!rc)
		rc = eager(c, c->offs[slot]);
	return rc;
}

/* One transaction's x allocations (each freeing an older block). */
static int pmtx_allocs(void *vctx, pmtx_tx *tx)
{
	struct alloc_ctx *c = vctx;
	int rc = 0;
	for (long a = 0; !rc && a < c->p.x; a++)
		rc = pmtx_one(c, tx);
	return rc;
}

static int pmtx_run(void *vctx, uint64_t n)
{
	struct alloc_ctx *c = vctx;
	return bench_txs(c->r, c->rt, n, pmtx_allocs, c);
}

static void pmdk_body(void *vctx)
{
	struct alloc_ctx *c = vctx;
	for (long a = 0; a < c->p.x; a++) {
		uint64_t slot = next_slot(c);
		if (!OID_IS_NULL(c->oids[slot]))
			pmemobj_tx_free(c->oids[slot]);
		c->oids[slot] = pmemobj_tx_alloc(c->size[slot], 1);
	}
}

static int pmdk_run(void *vctx, uint64_t n)
{
	return bench_pmdk_txs(((struct alloc_ctx *)vctx)->pop, n, pmdk_body, vctx);
}

static int plain_run(void *vctx, uint64_t n)
{
	struct alloc_ctx *c = vctx;
	for (uint64_t t = 0; t < n; t++)
		for (long a = 0; a < c->p.x; a++) {
			uint64_t slot = next_slot(c);
			free(c->ptrs[slot]);
			if (!(c->ptrs[slot] = malloc(c->size[slot])))
				return PMTX_E_NOMEM;
		}
	return 0;
}

/* ---- validation ---- */

struct live {
	pmtx_off off;
	size_t size;
};

struct walk {
	struct live *v; /* the ring's blocks, sorted by offset */
	size_t n;
	size_t matched, unknown, small;
};

static int live_cmp(const void *a, const void *b)
{
	const struct live *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int walk_fn(pmtx_off off, size_t usable, void *arg)
{
	struct walk *w = arg;
	struct live key = {off, 0};
	struct live *e = bsearch(&key, w->v, w->n, sizeof(*w->v), live_cmp);
	if (!e)
		w->unknown++;
	else if (usable < e->size)
		w->small++;
	else
		w->matched++;
	return 0;
}

/* The ring's non-empty entries, sorted; 1 if two are equal. */
static int ring_sorted(const struct alloc_ctx *c, struct walk *w)
{
	for (long i = 0; i < c->p.ring; i++)
		if (c->offs[i])
			w->v[w->n++] = (struct live){c->offs[i], c->size[i]};
	qsort(w->v, w->n, sizeof(*w->v), live_cmp);
	for (size_t i = 1; i < w->n; i++)
		if (w->v[i].off == w->v[i - 1].off)
			return 1;
	return 0;
}

static int pmtx_check(void *vctx)
{
	struct alloc_ctx *c = vctx;
	pmtx_heap_stats st;
	int rc = pmtx_heap_check(c->r, &st);
	if (rc) {
		fprintf(stderr, "alloc: heap check: %s\n", st.first_error);
		return rc;
	}
	struct walk w = {.v = calloc((size_t)c->p.ring, sizeof(struct live))};
	if (!w.v)
		return PMTX_E_NOMEM;
	int dup = ring_sorted(c, &w);
	pmtx_heap_walk(c->r, walk_fn, &w);
	free(w.v);
	if (dup || w.unknown || w.small || w.matched != w.n ||
	    w.n != (size_t)c->p.ring) {
		fprintf(stderr, "alloc: heap walk does not match the ring: %zu "
		        "ring entries (%ld slots%s), %zu matched, %zu unknown "
		        "blocks, %zu too small\n", w.n, c->p.ring,
		        dup ? ", duplicates" : "", w.matched, w.unknown, w.small);
		return PMTX_E_CORRUPT;
	}
	return 0;
}

static int pmdk_check(void *vctx)
{
	struct alloc_ctx *c = vctx;
	size_t count = 0, bad = 0;
	PMEMoid oid;
	POBJ_FOREACH(c->pop, oid)
		count++;
	for (long i = 0; i < c->p.ring; i++)
		bad += OID_IS_NULL(c->oids[i]) ||
		       pmemobj_alloc_usable_size(c->oids[i]) < c->size[i];
	if (bad || count != (size_t)c->p.ring) {
		fprintf(stderr, "alloc: %zu objects in the pool, %ld ring "
		        "slots, %zu bad ring entries\n", count, c->p.ring, bad);
		return PMTX_E_CORRUPT;
	}
	return 0;
}

static int plain_check(void *vctx)
{
	struct alloc_ctx *c = vctx;
	for (long i = 0; i < c->p.ring; i++)
		if (!c->ptrs[i]) {
			fprintf(stderr, "alloc: ring entry %ld is empty\n", i);
			return PMTX_E_CORRUPT;
		}
	return 0;
}

/* Forget one ring entry (the first), as a lost allocation would. */
static void alloc_corrupt(void *vctx)
{
	struct alloc_ctx *c = vctx;
	if (c->kind == AK_PMDK) {
		c->oids[0] = OID_NULL;
	} else if (c->kind == AK_PLAIN) {
		c->lost = c->ptrs[0];
		c->ptrs[0] = NULL;
	} else {
		c->offs[0] = 0;
	}
}

static void alloc_destroy(void *vctx)
{
	struct alloc_ctx *c = vctx;
	bench_close(c->r, c->pop, c->path);
	for (long i = 0; c->kind == AK_PLAIN && c->ptrs && i < c->p.ring; i++)
		free(c->ptrs[i]);
	free(c->lost);
	free(c->ptrs); /* the ring, whatever its kind */
	free(c->size);
	free(c);
}

static void alloc_extra(const struct runner *r, char *buf, size_t len)
{
	const struct alloc_ctx *c = r->ctx;
	double ops = r->ns ? 1e9 * (double)r->ops / (double)r->ns : 0;
	snprintf(buf, len, "\"allocs_per_s\":%.1f", ops * (double)c->p.x);
}

/* ---- setup ---- */

static struct alloc_ctx *ctx_new(const struct alloc_params *p,
                                 enum alloc_kind kind, pmtx_runtime rt)
{
	struct alloc_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	*c = (struct alloc_ctx){.p = *p, .kind = kind, .rt = rt,
	                        .rng = rng_seed(p->seed)};
	size_t n = (size_t)p->ring;
	c->size = calloc(n, sizeof(*c->size));
	if (kind == AK_PMTX || kind == AK_EAGER)
		c->offs = calloc(n, sizeof(*c->offs));
	else if (kind == AK_PMDK)
		c->oids = calloc(n, sizeof(*c->oids));
	else
		c->ptrs = calloc(n, sizeof(*c->ptrs));
	if (!c->size || !c->ptrs) { /* ptrs: the ring, whatever its kind */
		alloc_destroy(c);
		return NULL;
	}
	return c;
}

static size_t heap_bytes(struct alloc_params p)
{
	return (size_t)p.ring * 2 * (MAX_SIZE + 64) + SLACK;
}

/* The end of a maker: fill the ring (untimed), so that every measured
 * allocation also frees, and bind the runner (or destroy c if rc, or the
 * filling, failed). */
static int runner_start(struct runner *r, struct alloc_ctx *c, int rc,
                        int (*run)(void *, uint64_t), int (*check)(void *))
{
	if (!rc)
		rc = run(c, (uint64_t)((c->p.ring + c->p.x - 1) / c->p.x));
	return bench_bind(r, rc, c, run, check, alloc_corrupt, alloc_destroy);
}

/* pmtx-undo-eager's pseudo-runtime: undo, and a persist after every
 * allocator call. */
#define RT_UNDO_EAGER ((pmtx_runtime)101)

static const char *system_name(pmtx_runtime rt)
{
	return rt == RT_UNDO_EAGER ? "pmtx-undo-eager" : bench_system_name(rt);
}

static int pmtx_runner(struct runner *r, const struct bench_opts *o,
                       pmtx_runtime rt, struct bench_cfg cfg, void *arg)
{
	int eager_persist = rt == RT_UNDO_EAGER;
	struct alloc_ctx *c = ctx_new(arg, eager_persist ? AK_EAGER : AK_PMTX,
	                              eager_persist ? PMTX_RT_UNDO : rt);
	if (!c)
		return PMTX_E_NOMEM;
	int rc = bench_region(r, o, c->rt, cfg, 64, heap_bytes(c->p), &c->r,
	                      c->path);
	if (!rc && eager_persist)
		snprintf(r->system, sizeof(r->system), "%s", system_name(rt));
	return runner_start(r, c, rc, pmtx_run, pmtx_check);
}

static int pmdk_runner(struct runner *r, const struct bench_opts *o,
                       void *arg)
{
	struct alloc_ctx *c = ctx_new(arg, AK_PMDK, PMTX_RT_DEFAULT);
	if (!c)
		return PMTX_E_NOMEM;
	int rc = bench_pmdk_pool(r, o, 0, heap_bytes(c->p), &c->pop, c->path);
	return runner_start(r, c, rc, pmdk_run, pmdk_check);
}

static int plain_runner(struct runner *r, const struct bench_opts *o,
                        void *arg)
{
	struct alloc_ctx *c = ctx_new(arg, AK_PLAIN, PMTX_RT_DEFAULT);
	(void)o;
	if (!c)
		return PMTX_E_NOMEM;
	bench_plain_names(r);
	return runner_start(r, c, 0, plain_run, plain_check);
}

/* ---- the sweep ---- */

static const pmtx_runtime runtimes[] = {
	PMTX_RT_UNDO, RT_UNDO_EAGER, PMTX_RT_REDO, PMTX_RT_REDO_ASYNC,
	PMTX_RT_COW, PMTX_RT_TWIN,
};

static const struct bench_makers makers = {
	.rts = runtimes,
	.nrts = sizeof(runtimes) / sizeof(*runtimes),
	.name = system_name,
	.pmtx = pmtx_runner,
	.pmdk = pmdk_runner,
	.plain = plain_runner,
};

static int alloc_point(const struct bench_opts *o, struct alloc_params p)
{
	struct runner rs[BENCH_MAX_RUNNERS];
	int n = 0;
	int rc = bench_runners(rs, &n, o, &makers, &p);
	char params[128];
	snprintf(params, sizeof(params),
	         "\"x\":%ld,\"ring\":%ld,\"max_size\":%u,\"seed\":%llu", p.x,
	         p.ring, MAX_SIZE, (unsigned long long)p.seed);
	return bench_point(rs, n, rc, o, "alloc", params, alloc_extra);
}

int wl_alloc(const struct bench_opts *o)
{
	static const char *const systems[] = {
		"pmtx-undo", "pmtx-undo-eager", "pmtx-redo", "pmtx-redo-async",
		"pmtx-cow", "pmtx-twin", "pmdk", "plain", NULL};
	if (bench_check_systems(o, "alloc", systems))
		return PMTX_E_INVAL;
	long xs[32];
	int nx = bench_param_in(o, "alloc", "x", "1,2,4,8,16,32", 1, LONG_MAX,
	                        xs, 32);
	struct alloc_params p = {.ring = bench_param1(o, "ring", 4096),
	                         .seed = (uint64_t)bench_param1(o, "seed", 1)};
	if (p.ring < 1) {
		fprintf(stderr, "alloc: ring must be at least 1\n");
		return PMTX_E_INVAL;
	}
	int rc = nx < 0 ? PMTX_E_INVAL : 0;
	for (int i = 0; !rc && i < nx; i++) {
		p.x = xs[i];
		rc = alloc_point(o, p);
	}
	return rc;
}
