/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_txn.c - the `txn` workload: transactions that write `writes`
 * distinct 8-byte ranges (each in its own cache line) and allocate
 * `allocs` 64-byte blocks. To stay in a steady state, every allocation
 * frees the block allocated 1024 allocations earlier, in the same
 * transaction (so an alloc run is "alloc + free" per block, for every
 * system alike).
 *
 * Systems: pmtx-undo, pmtx-redo, pmtx-redo-async (any domain and
 * backend); pmtx-twin, the same pmtx_write / pmtx_alloc / pmtx_free in a
 * twin region (PMTX_RT_TWIN, twice the bytes: bench_region): a write
 * stores in place and notes its line in DRAM, an allocation or free is
 * applied to the heap metadata in place at commit (no allocation log),
 * and commit flushes the lines, makes the commit durable with one word
 * and copies the lines to the back copy: 4 barriers per transaction
 * that writes, whatever `writes` is (0 for one that writes nothing);
 * pmtx-cow, where the `writes` ranges are 8 bytes in as many
 * distinct 64-byte objects opened for writing (copy-on-write works only
 * through wrappers); pmtx-cltx, for 0-3 writes of 8-byte fields of one
 * cache-line object and no allocation; and pmdk (libpmemobj's
 * TX_BEGIN / pmemobj_tx_add_range / pmemobj_tx_alloc, written as a PMDK
 * user would, on a pool in --dir with PMEM_IS_PMEM_FORCE=1; its flushes
 * and barriers are counted at libpmem's calls, pmdk_count.c).
 *
 * Validation (check). Each runner counts in DRAM the writes made to each
 * line (each write increments the line's first word, which starts at 0),
 * and the line must hold that count after the run (pmtx-cow: in its
 * object's committed payload; pmtx-cltx: each of its fields written holds
 * the number of transactions run). For pmtx, pmtx_heap_check must pass
 * and (except for pmtx-cow, whose objects are blocks too) pmtx_heap_walk
 * must report exactly the ring's blocks; for pmdk, POBJ_FOREACH must
 * count the ring's objects. corrupt (--inject-fault) adds 1 to the first
 * line's word (pmtx-cltx: to its first field).
 */
#include <libpmemobj.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "pmtx_cltx.h"

#define LINES 4096u
#define RING 1024u
#define POOL_SIZE (256u << 20)
/* Cache-line transactions are an object kind, not a pmtx_runtime. */
#define RT_CLTX ((pmtx_runtime)100)

struct txn_params {
	long writes, allocs;
};

struct pmtx_ctx {
	pmtx_region *r;
	char path[256];
	uint64_t *lines; /* LINES cache lines, 8 bytes used in each */
	struct txn_params p;
	pmtx_runtime rt;
	uint64_t iter;
	pmtx_off ring[RING];
	unsigned ring_pos;
	uint64_t txs;            /* transactions committed (cltx) */
	uint64_t count[LINES];   /* shadow: writes made to each line */
};

static inline unsigned line_of(uint64_t iter, long w)
{
	return (unsigned)((iter * 7 + (uint64_t)w * 61) % LINES);
}


struct fields {
	uint64_t f[3];
};
PMTX_CLTX_DECLARE(line3, struct fields)

/* For pmtx-cow: the root holds LINES wrapper offsets instead of data. */
static int cow_setup(pmtx_region *r)
{
	return bench_obj64_setup(r, pmtx_root(r, NULL), LINES, 256);
}

static int cow_writes(pmtx_tx *tx, pm_obj64 *objs, uint64_t iter, long n)
{
	for (long w = 0; w < n; w++) {
		struct obj64 *p;
		int rc = pm_obj64_open(tx, objs[line_of(iter, w)], PMTX_COW_WRITE,
		                       NULL, &p);
		if (rc)
			return rc;
		p->v[0]++;
	}
	return 0;
}

static int cltx_run(void *vctx, uint64_t n);

static int pmtx_run(void *vctx, uint64_t n)
{
	struct pmtx_ctx *c = vctx;
	for (uint64_t i = 0; i < n; i++, c->iter++) {
		pmtx_tx *tx;
		int rc = pmtx_begin(c->r, c->rt, &tx);
		if (!rc && c->rt == PMTX_RT_COW)
			rc = cow_writes(tx, (pm_obj64 *)(void *)c->lines, c->iter,
			                c->p.writes);
		for (long w = 0; !rc && c->rt != PMTX_RT_COW && w < c->p.writes;
		     w++) {
			uint64_t *dst = &c->lines[line_of(c->iter, w) * 8];
			uint64_t v = *dst + 1;
			rc = pmtx_write(tx, dst, &v, sizeof(v));
		}
		for (long a = 0; !rc && a < c->p.allocs; a++) {
			pmtx_off *slot = &c->ring[c->ring_pos++ % RING];
			if (*slot)
				rc = pmtx_free(tx, *slot);
			if (!rc)
				rc = pmtx_alloc(tx, 64, slot);
		}
		if ((rc = bench_tx_end(tx, rc)))
			return rc;
		for (long w = 0; w < c->p.writes; w++)
			c->count[line_of(c->iter, w)]++;
	}
	return 0;
}

static void pmtx_destroy(void *vctx)
{
	struct pmtx_ctx *c = vctx;
	bench_region_destroy(c->r, c->path);
	free(c);
}

/* ---- validation (the design comment) ---- */

static int lines_ok(const uint64_t *count, uint64_t (*word)(void *, unsigned),
                    void *ctx, const char *system)
{
	for (unsigned l = 0; l < LINES; l++) {
		uint64_t v = word(ctx, l);
		if (v != count[l]) {
			fprintf(stderr, "txn: %s: line %u holds %llu, expected "
			        "%llu (its writes)\n", system, l,
			        (unsigned long long)v,
			        (unsigned long long)count[l]);
			return PMTX_E_CORRUPT;
		}
	}
	return 0;
}

/* The first word of line l, as committed. */
static uint64_t *pmtx_word(struct pmtx_ctx *c, unsigned l)
{
	if (c->rt != PMTX_RT_COW)
		return &c->lines[l * 8];
	const pm_obj64 *objs = (const pm_obj64 *)(const void *)c->lines;
	return (uint64_t *)pmtx_cow_peek(c->r, objs[l].w);
}

static uint64_t pmtx_word_of(void *vctx, unsigned l)
{
	return *pmtx_word(vctx, l);
}

struct ring_walk {
	const struct pmtx_ctx *c;
	unsigned blocks;
};

/* Every block the heap walk reports must be in the ring. */
static int ring_block(pmtx_off off, size_t usable, void *arg)
{
	struct ring_walk *w = arg;
	(void)usable;
	w->blocks++;
	for (unsigned i = 0; i < RING; i++)
		if (w->c->ring[i] == off)
			return 0;
	fprintf(stderr, "txn: heap block %#llx is not in the ring\n",
	        (unsigned long long)off);
	return PMTX_E_CORRUPT;
}

static int cltx_check(struct pmtx_ctx *c)
{
	const struct fields *f = line3_valid(pmtx_cltx_align(c->lines));
	for (long w = 0; w < 3; w++) {
		uint64_t want = w < c->p.writes ? c->txs : 0;
		if (f->f[w] != want) {
			fprintf(stderr, "txn: pmtx-cltx: field %ld holds %llu, "
			        "expected %llu\n", w,
			        (unsigned long long)f->f[w],
			        (unsigned long long)want);
			return PMTX_E_CORRUPT;
		}
	}
	return 0;
}

static int pmtx_check(void *vctx)
{
	struct pmtx_ctx *c = vctx;
	if (c->rt == RT_CLTX)
		return cltx_check(c);
	char sys[32];
	snprintf(sys, sizeof(sys), "pmtx-%s", pmtx_runtime_name(c->rt));
	int rc = lines_ok(c->count, pmtx_word_of, c, sys);
	pmtx_heap_stats st;
	if (!rc && pmtx_heap_check(c->r, &st)) {
		fprintf(stderr, "txn: %s: heap check: %s\n", sys,
		        st.first_error);
		rc = PMTX_E_CORRUPT;
	}
	if (rc || c->rt == PMTX_RT_COW)
		return rc;
	unsigned live = 0;
	for (unsigned i = 0; i < RING; i++)
		live += c->ring[i] != 0;
	struct ring_walk w = {c, 0};
	if ((rc = pmtx_heap_walk(c->r, ring_block, &w)))
		return rc;
	if (w.blocks != live) {
		fprintf(stderr, "txn: %s: %u blocks in the heap, %u in the "
		        "ring\n", sys, w.blocks, live);
		return PMTX_E_CORRUPT;
	}
	return 0;
}

static void pmtx_corrupt(void *vctx)
{
	struct pmtx_ctx *c = vctx;
	if (c->rt == RT_CLTX) { /* a commit the model does not know of */
		struct line3 *l = pmtx_cltx_align(c->lines);
		line3_begin(l)->f[0] += 1;
		line3_commit(c->r, l);
	} else {
		*pmtx_word(c, 0) += 1;
	}
}

static int pmtx_runner(struct runner *r, const struct bench_opts *o,
                       pmtx_runtime rt, pmtx_domain d, pmtx_backend b,
                       struct txn_params p)
{
	struct pmtx_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return PMTX_E_NOMEM;
	struct bench_cfg cfg = {d, b};
	/* Twin: the same file size (bench_region doubles what it is asked
	 * for); half of it holds far more heap than this workload uses. */
	size_t size = rt == PMTX_RT_TWIN ? (POOL_SIZE - (1u << 20)) / 2
	                                 : POOL_SIZE;
	int rc = bench_region(r, o, rt, cfg, LINES * 64, size, &c->r, c->path);
	if (rc) {
		free(c);
		return rc;
	}
	c->lines = pmtx_root(c->r, NULL);
	c->p = p;
	c->rt = rt;
	if (rt == PMTX_RT_COW)
		rc = cow_setup(c->r);
	return bench_bind(r, rc, c, rt == RT_CLTX ? cltx_run : pmtx_run,
	                  pmtx_check, pmtx_corrupt, pmtx_destroy);
}

/* pmtx-cltx: one cache-line transaction per operation on a line in the
 * root, writing `writes` (0-3) of its three 8-byte fields. */
static int cltx_run(void *vctx, uint64_t n)
{
	struct pmtx_ctx *c = vctx;
	struct line3 *l = pmtx_cltx_align(c->lines); /* root: 16 + 64k */
	for (uint64_t i = 0; i < n; i++, c->iter++) {
		struct fields *f = line3_begin(l);
		for (long w = 0; w < c->p.writes; w++)
			f->f[w]++;
		int rc = line3_commit(c->r, l);
		if (rc)
			return rc;
		c->txs++;
	}
	return 0;
}

/* ---- PMDK ---- */

struct pmdk_ctx {
	PMEMobjpool *pop;
	char path[256];
	PMEMoid root;
	uint64_t *lines;
	struct txn_params p;
	uint64_t iter;
	PMEMoid ring[RING];
	unsigned ring_pos;
	uint64_t count[LINES]; /* shadow: writes made to each line */
};

static void pmdk_body(void *vctx)
{
	struct pmdk_ctx *c = vctx;
	for (long w = 0; w < c->p.writes; w++) {
		unsigned l = line_of(c->iter, w);
		pmemobj_tx_add_range(c->root, (uint64_t)l * 64, 8);
		c->lines[l * 8]++;
	}
	for (long a = 0; a < c->p.allocs; a++) {
		PMEMoid *slot = &c->ring[c->ring_pos++ % RING];
		if (!OID_IS_NULL(*slot))
			pmemobj_tx_free(*slot);
		*slot = pmemobj_tx_alloc(64, 1);
	}
}

static int pmdk_one(void *vctx)
{
	struct pmdk_ctx *c = vctx;
	int rc = bench_pmdk_tx(c->pop, pmdk_body, c);
	for (long w = 0; !rc && w < c->p.writes; w++)
		c->count[line_of(c->iter, w)]++;
	c->iter++;
	return rc;
}

static uint64_t pmdk_word_of(void *vctx, unsigned l)
{
	return ((struct pmdk_ctx *)vctx)->lines[l * 8];
}

static int pmdk_check(void *vctx)
{
	struct pmdk_ctx *c = vctx;
	int rc = lines_ok(c->count, pmdk_word_of, c, "pmdk");
	unsigned live = 0, objs = 0;
	for (unsigned i = 0; i < RING; i++)
		live += !OID_IS_NULL(c->ring[i]);
	PMEMoid oid;
	POBJ_FOREACH(c->pop, oid)
		objs++;
	if (!rc && objs != live) {
		fprintf(stderr, "txn: pmdk: %u objects in the pool, %u in the "
		        "ring\n", objs, live);
		rc = PMTX_E_CORRUPT;
	}
	return rc;
}

static void pmdk_corrupt(void *vctx)
{
	((struct pmdk_ctx *)vctx)->lines[0] += 1;
}

static int pmdk_run(void *vctx, uint64_t n)
{
	return bench_repeat(n, pmdk_one, vctx);
}

static void pmdk_destroy(void *vctx)
{
	struct pmdk_ctx *c = vctx;
	bench_pmdk_destroy(c->pop, c->path);
	free(c);
}

static int pmdk_runner(struct runner *r, const struct bench_opts *o,
                       struct txn_params p)
{
	struct pmdk_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return PMTX_E_NOMEM;
	int rc = bench_pmdk_pool(r, o, LINES * 64, POOL_SIZE, &c->pop, c->path);
	if (rc) {
		free(c);
		return rc;
	}
	c->root = pmemobj_root(c->pop, LINES * 64);
	c->lines = pmemobj_direct(c->root);
	c->p = p;
	return bench_bind(r, 0, c, pmdk_run, pmdk_check, pmdk_corrupt,
	                  pmdk_destroy);
}

/* ---- the sweep ---- */

/* sel: NULL (any), a name, or names separated by commas. */
static int want(const char *sel, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = sel; p; p = strchr(p, ',') ? strchr(p, ',') + 1
	                                               : NULL)
		if (!strncmp(p, name, n) && (p[n] == 0 || p[n] == ','))
			return 1;
	return !sel;
}

static const pmtx_runtime runtimes[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                        PMTX_RT_REDO_ASYNC, PMTX_RT_COW,
                                        PMTX_RT_TWIN, RT_CLTX};
#define NRUNTIMES (sizeof(runtimes) / sizeof(*runtimes))

static const char *system_name(pmtx_runtime rt, char *buf, size_t n)
{
	snprintf(buf, n, "pmtx-%s",
	         rt == RT_CLTX ? "cltx" : pmtx_runtime_name(rt));
	return buf;
}

static int pmtx_runners(struct runner *rs, int *n, const struct bench_opts *o,
                        struct txn_params p)
{
	static const pmtx_backend backends[] = {
		PMTX_BACKEND_HARDWARE, PMTX_BACKEND_EMULATED, PMTX_BACKEND_FILE,
		PMTX_BACKEND_JOURNAL};
	for (unsigned b = 0; b < 4; b++) {
		const char *bn = pmtx_backend_name(backends[b]);
		int disk = backends[b] >= PMTX_BACKEND_FILE;
		if (o->backend ? !want(o->backend, bn) : disk)
			continue;
		for (int d = 0; d < 3; d++) {
			if (!want(o->domain, pmtx_domain_name((pmtx_domain)d)) ||
			    (backends[b] == PMTX_BACKEND_JOURNAL &&
			     d == PMTX_PDOM2))
				continue;
			for (unsigned k = 0; k < NRUNTIMES; k++) {
				char sys[32];
				if (!bench_want(o, system_name(runtimes[k], sys,
				                                   sizeof(sys))) ||
				    (runtimes[k] == RT_CLTX &&
				     (p.writes > 3 || p.allocs)))
					continue;
				int rc = pmtx_runner(&rs[*n], o, runtimes[k],
				                     (pmtx_domain)d, backends[b], p);
				if (rc)
					return rc;
				(*n)++;
			}
		}
	}
	return 0;
}

/* All runners for one parameter point, measured interleaved. */
static int txn_point(const struct bench_opts *o, struct txn_params p)
{
	struct runner rs[BENCH_MAX_RUNNERS];
	int n = 0;
	int rc = pmtx_runners(rs, &n, o, p);
	if (!rc && bench_want(o, "pmdk") && want(o->domain, "pdom1") &&
	    (!o->backend || !strcmp(o->backend, "hardware"))) {
		rc = pmdk_runner(&rs[n], o, p);
		n += rc == 0;
	}
	char params[64];
	snprintf(params, sizeof(params), "\"writes\":%ld,\"allocs\":%ld",
	         p.writes, p.allocs);
	return bench_point(rs, n, rc, o, "txn", params, NULL);
}

int wl_txn(const struct bench_opts *o)
{
	static const long sweep[] = {0, 1, 2, 3, 4, 16, 32};
	static const char *const systems[] = {"pmtx-undo", "pmtx-redo",
	                                      "pmtx-redo-async", "pmtx-cow",
	                                      "pmtx-twin", "pmtx-cltx", "pmdk",
	                                      NULL};
	if (bench_check_systems(o, "txn", systems))
		return PMTX_E_INVAL;
	if (o->writes >= 0 || o->allocs >= 0) {
		struct txn_params p = {o->writes < 0 ? 0 : o->writes,
		                       o->allocs < 0 ? 0 : o->allocs};
		return txn_point(o, p);
	}
	for (size_t i = 0; i < sizeof(sweep) / sizeof(*sweep); i++) {
		int rc = txn_point(o, (struct txn_params){sweep[i], 0});
		if (rc)
			return rc;
	}
	return txn_point(o, (struct txn_params){0, 1});
}
