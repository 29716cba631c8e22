/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_sps.c - the `sps` workload: swaps per second (the NV-Heaps, Romulus
 * and OneFile microbenchmark).
 *
 * An array of `n` 64-bit integers holds a[i] = i. Each transaction swaps
 * `k` random pairs (i, j), drawn independently (i == j is allowed, and a
 * transaction may touch one element more than once, which exercises redo's
 * read-after-write path). An op is one transaction; the extra field
 * "swaps_per_s" is k x ops_per_s.
 *
 * Systems
 *   pmtx-undo, pmtx-redo, pmtx-redo-async, pmtx-auto  the array is the
 *       region's root; a swap is two pmtx_read and two pmtx_write of 8
 *       bytes, so redo sees this transaction's earlier swaps. pmtx-auto
 *       begins with PMTX_RT_AUTO (one call site); undo runs the same code
 *       as auto's undo arm, so that the two compare.
 *   pmtx-twin  the same root, used the way PMDK's runner is written:
 *       pmtx_add_range of both elements, then plain loads and stores (its
 *       reads are plain loads, so pmtx_read would only add a call).
 *       pmtx-twin runs in a twin region (PMTX_RT_TWIN, twice the bytes:
 *       bench_region): reads are plain loads, writes store in place and
 *       note their lines in DRAM, and commit flushes those lines and
 *       copies them to the back copy with non-temporal stores: 4 barriers
 *       per transaction, 1 flush per line written plus 2 of the state
 *       word.
 *   pmtx-cow  the array is split into ceil(n/8) 64-byte copy-on-write
 *       objects of 8 integers; the root holds their wrappers. A swap opens
 *       both objects for writing (one private copy per object per
 *       transaction) and swaps the two integers in the copies.
 *   pmdk  libpmemobj: TX_BEGIN, pmemobj_tx_add_range of both 8-byte
 *       elements, swap with plain stores (a root of n * 8 bytes).
 *   plain  the same swaps with plain loads and stores and no transaction,
 *       on a pmtx region's root (the same kind of mapping as the pmtx
 *       systems, so the floor has the same page size and TLB behaviour).
 * Every pmtx system runs under each configuration of bench_configs().
 *
 * Parameters (--p): n (1000000), k (sweep, "1,2,4,...,1024"), seed (1),
 * inplace (1; 0: twin swaps through pmtx_read and pmtx_write too, so
 * that a persistence trace sees every store: scripts/whisper.py).
 * Every runner draws the same pairs from the same seed.
 *
 * Setup, outside the measurement: the array is initialised with naked
 * stores and one pmtx_persist (pmemobj_persist for PMDK), never with one
 * transaction per element. The COW objects are created in undo
 * transactions of 256 objects each, then filled through pmtx_cow_peek with
 * naked stores and persisted.
 *
 * Validation (check): a swap preserves the multiset of values, so the
 * array must be a permutation of 0..n-1 (DRAM bitmap) and sum to
 * n(n-1)/2. corrupt (--inject-fault) adds 1 to a[0], which breaks both.
 */
#include <libpmemobj.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define OBJ_WORDS 8u        /* integers per COW object: one cache line */
#define SETUP_BATCH 256u    /* COW objects created per setup transaction */
#define SLACK (64ull << 20) /* region bytes beyond the data, for logs */


enum sps_kind { SPS_PMTX, SPS_COW, SPS_PMDK, SPS_PLAIN };

struct sps_params {
	uint64_t n;
	long k;
	uint64_t seed;
	int inplace; /* twin through pmtx_add_range (1) or not */
};

struct sps_ctx {
	struct sps_params p;
	enum sps_kind kind;
	int inplace;        /* twin: pmtx_add_range and plain stores */
	pmtx_runtime rt;
	uint64_t rng;
	pmtx_region *r;
	PMEMobjpool *pop;
	PMEMoid root;
	uint64_t *a;    /* the array (every kind but cow) */
	pm_obj64 *objs; /* cow: ceil(n / 8) wrappers, in the root */
	char path[256];
};

static uint64_t rng_seed(uint64_t seed)
{
	return seed ^ 0x9e3779b97f4a7c15ull; /* xorshift needs nonzero */
}

static uint64_t nobjs(uint64_t n)
{
	return (n + OBJ_WORDS - 1) / OBJ_WORDS;
}

/* Element i, wherever the kind keeps it (cow: the committed payload). */
static uint64_t *elem(struct sps_ctx *c, uint64_t i)
{
	if (c->kind != SPS_COW)
		return &c->a[i];
	uint64_t *obj = (uint64_t *)pmtx_cow_peek(c->r, c->objs[i / OBJ_WORDS].w);
	return &obj[i % OBJ_WORDS];
}

/* ---- the transactions ---- */

static int pmtx_swap(pmtx_tx *tx, uint64_t *x, uint64_t *y)
{
	uint64_t vx, vy;
	int rc = pmtx_read(tx, &vx, x, sizeof(vx));
	if (!rc)
		rc = pmtx_read(tx, &vy, y, sizeof(vy));
	if (!rc)
		rc = pmtx_write(tx, x, &vy, sizeof(vy));
	if (!rc)
		rc = pmtx_write(tx, y, &vx, sizeof(vx));
	return rc;
}

/* twin: declare both, then swap in place (as pmdk_body). */
static int inplace_swap(pmtx_tx *tx, uint64_t *x, uint64_t *y)
{
	int rc = pmtx_add_range(tx, x, sizeof(*x));
	if (!rc)
		rc = pmtx_add_range(tx, y, sizeof(*y));
	if (!rc) {
		uint64_t t = *x;
		*x = *y;
		*y = t;
	}
	return rc;
}

static int cow_swap(pmtx_tx *tx, const pm_obj64 *objs, uint64_t i, uint64_t j)
{
	struct obj64 *p, *q;
	int rc = pm_obj64_open(tx, objs[i / OBJ_WORDS], PMTX_COW_WRITE, NULL, &p);
	if (!rc)
		rc = pm_obj64_open(tx, objs[j / OBJ_WORDS], PMTX_COW_WRITE, NULL,
		                   &q);
	if (rc)
		return rc;
	uint64_t t = p->v[i % OBJ_WORDS];
	p->v[i % OBJ_WORDS] = q->v[j % OBJ_WORDS];
	q->v[j % OBJ_WORDS] = t;
	return 0;
}

static int pmtx_swaps(void *vctx, pmtx_tx *tx)
{
	struct sps_ctx *c = vctx;
	for (long s = 0; s < c->p.k; s++) {
		uint64_t i = bench_rand(&c->rng) % c->p.n;
		uint64_t j = bench_rand(&c->rng) % c->p.n;
		int rc = c->kind == SPS_COW ? cow_swap(tx, c->objs, i, j)
		         : c->inplace ? inplace_swap(tx, &c->a[i], &c->a[j])
		                      : pmtx_swap(tx, &c->a[i], &c->a[j]);
		if (rc)
			return rc;
	}
	return 0;
}

static int pmtx_run(void *vctx, uint64_t n)
{
	struct sps_ctx *c = vctx;
	return bench_txs(c->r, c->rt, n, pmtx_swaps, c);
}

static void pmdk_body(void *vctx)
{
	struct sps_ctx *c = vctx;
	for (long s = 0; s < c->p.k; s++) {
		uint64_t i = bench_rand(&c->rng) % c->p.n;
		uint64_t j = bench_rand(&c->rng) % c->p.n;
		pmemobj_tx_add_range(c->root, i * sizeof(uint64_t),
		                     sizeof(uint64_t));
		pmemobj_tx_add_range(c->root, j * sizeof(uint64_t),
		                     sizeof(uint64_t));
		uint64_t t = c->a[i];
		c->a[i] = c->a[j];
		c->a[j] = t;
	}
}

static int pmdk_run(void *vctx, uint64_t n)
{
	return bench_pmdk_txs(((struct sps_ctx *)vctx)->pop, n, pmdk_body, vctx);
}

static int plain_run(void *vctx, uint64_t n)
{
	struct sps_ctx *c = vctx;
	for (uint64_t t = 0; t < n; t++)
		for (long s = 0; s < c->p.k; s++) {
			uint64_t i = bench_rand(&c->rng) % c->p.n;
			uint64_t j = bench_rand(&c->rng) % c->p.n;
			uint64_t v = c->a[i];
			c->a[i] = c->a[j];
			c->a[j] = v;
		}
	return 0;
}

/* ---- validation ---- */

static int sps_check(void *vctx)
{
	struct sps_ctx *c = vctx;
	uint64_t n = c->p.n, sum = 0, bad = n;
	uint64_t *seen = calloc((n + 63) / 64, sizeof(uint64_t));
	if (!seen)
		return PMTX_E_NOMEM;
	for (uint64_t i = 0; i < n && bad == n; i++) {
		uint64_t v = *elem(c, i);
		if (v >= n || (seen[v / 64] >> (v % 64)) & 1)
			bad = i;
		else
			seen[v / 64] |= 1ull << (v % 64);
		sum += v;
	}
	free(seen);
	if (bad != n || sum != n * (n - 1) / 2) {
		fprintf(stderr, "sps: not a permutation of 0..%llu (first bad "
		        "index %llu, sum %llu)\n", (unsigned long long)(n - 1),
		        (unsigned long long)bad, (unsigned long long)sum);
		return PMTX_E_CORRUPT;
	}
	return 0;
}

static void sps_corrupt(void *vctx)
{
	*elem(vctx, 0) += 1;
}

static void sps_destroy(void *vctx)
{
	struct sps_ctx *c = vctx;
	bench_close(c->r, c->pop, c->path);
	free(c);
}

static void sps_extra(const struct runner *r, char *buf, size_t len)
{
	const struct sps_ctx *c = r->ctx;
	double ops = r->ns ? 1e9 * (double)r->ops / (double)r->ns : 0;
	snprintf(buf, len, "\"swaps_per_s\":%.1f", ops * (double)c->p.k);
}

/* ---- setup ---- */

static void fill_identity(uint64_t *a, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		a[i] = i;
}

/* Create the COW objects (empty), then fill them with naked stores. */
static int cow_setup(struct sps_ctx *c)
{
	uint64_t m = nobjs(c->p.n);
	int rc = bench_obj64_setup(c->r, c->objs, m, SETUP_BATCH);
	if (rc)
		return rc;
	for (uint64_t i = 0; i < c->p.n; i++)
		*elem(c, i) = i;
	for (uint64_t o = 0; o < m; o++)
		pmtx_flush(c->r, pmtx_cow_peek(c->r, c->objs[o].w),
		           sizeof(struct obj64));
	return pmtx_barrier(c->r);
}

static struct sps_ctx *ctx_new(const struct sps_params *p,
                               enum sps_kind kind, pmtx_runtime rt)
{
	struct sps_ctx *c = calloc(1, sizeof(*c));
	if (c)
		*c = (struct sps_ctx){.p = *p, .kind = kind, .rt = rt,
		                      .inplace = p->inplace &&
		                                 rt == PMTX_RT_TWIN,
		                      .rng = rng_seed(p->seed)};
	return c;
}

static int runner_bind(struct runner *r, struct sps_ctx *c, int rc,
                       int (*run)(void *, uint64_t))
{
	return bench_bind(r, rc, c, run, sps_check, sps_corrupt, sps_destroy);
}

/* The array of a pmtx runner, in its root: the identity, durable. */
static int pmtx_fill(struct sps_ctx *c)
{
	if (c->kind == SPS_COW) {
		c->objs = pmtx_root(c->r, NULL);
		return cow_setup(c);
	}
	c->a = pmtx_root(c->r, NULL);
	fill_identity(c->a, c->p.n);
	return pmtx_persist(c->r, c->a, c->p.n * 8);
}

static int pmtx_runner(struct runner *r, const struct bench_opts *o,
                       pmtx_runtime rt, struct bench_cfg cfg, void *arg)
{
	int cow = rt == PMTX_RT_COW;
	struct sps_ctx *c = ctx_new(arg, cow ? SPS_COW : SPS_PMTX, rt);
	if (!c)
		return PMTX_E_NOMEM;
	uint64_t n = c->p.n;
	size_t root = cow ? nobjs(n) * sizeof(pm_obj64) : n * 8;
	size_t data = cow ? nobjs(n) * 2 * 256 : n * 8 * 2;
	int rc = bench_region(r, o, rt, cfg, root, data + SLACK, &c->r, c->path);
	return runner_bind(r, c, rc ? rc : pmtx_fill(c), pmtx_run);
}

static int pmdk_runner(struct runner *r, const struct bench_opts *o,
                       void *arg)
{
	struct sps_ctx *c = ctx_new(arg, SPS_PMDK, PMTX_RT_DEFAULT);
	if (!c)
		return PMTX_E_NOMEM;
	uint64_t n = c->p.n;
	int rc = bench_pmdk_pool(r, o, n * 8, n * 8 * 2 + SLACK, &c->pop,
	                         c->path);
	if (!rc) {
		c->root = pmemobj_root(c->pop, n * 8);
		c->a = pmemobj_direct(c->root);
		fill_identity(c->a, n);
		pmemobj_persist(c->pop, c->a, n * 8);
	}
	return runner_bind(r, c, rc, pmdk_run);
}

static int plain_runner(struct runner *r, const struct bench_opts *o,
                        void *arg)
{
	struct sps_ctx *c = ctx_new(arg, SPS_PLAIN, PMTX_RT_DEFAULT);
	if (!c)
		return PMTX_E_NOMEM;
	uint64_t n = c->p.n;
	int rc = bench_plain_region(r, o, n * 8, n * 8 + SLACK, &c->r, c->path);
	if (!rc) {
		c->a = pmtx_root(c->r, NULL);
		fill_identity(c->a, n);
	}
	return runner_bind(r, c, rc, plain_run);
}

/* ---- the sweep ---- */

static const struct bench_makers makers =
	BENCH_MAKERS(bench_runtimes, pmtx_runner, pmdk_runner, plain_runner);

static int sps_point(const struct bench_opts *o, struct sps_params p)
{
	struct runner rs[BENCH_MAX_RUNNERS];
	int n = 0;
	int rc = bench_runners(rs, &n, o, &makers, &p);
	char params[128];
	snprintf(params, sizeof(params), "\"n\":%llu,\"k\":%ld,\"seed\":%llu",
	         (unsigned long long)p.n, p.k, (unsigned long long)p.seed);
	return bench_point(rs, n, rc, o, "sps", params, sps_extra);
}

int wl_sps(const struct bench_opts *o)
{
	static const char *const systems[] = {"pmtx-undo", "pmtx-redo",
	                                      "pmtx-redo-async", "pmtx-cow",
	                                      "pmtx-auto", "pmtx-twin", "pmdk",
	                                      "plain", NULL};
	if (bench_check_systems(o, "sps", systems))
		return PMTX_E_INVAL;
	long ks[32];
	int nk = bench_param_in(o, "sps", "k", "1,2,4,8,16,32,64,128,256,512,1024",
	                        1, LONG_MAX, ks, 32);
	long n = bench_param1(o, "n", 1000000);
	if (n < 2) {
		fprintf(stderr, "sps: n must be at least 2\n");
		return PMTX_E_INVAL;
	}
	struct sps_params p = {.n = (uint64_t)n,
	                       .seed = (uint64_t)bench_param1(o, "seed", 1),
	                       .inplace = bench_param1(o, "inplace", 1) != 0};
	int rc = nk < 0 ? PMTX_E_INVAL : 0;
	for (int i = 0; !rc && i < nk; i++) {
		p.k = ks[i];
		rc = sps_point(o, p);
	}
	return rc;
}
