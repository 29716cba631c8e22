/*
 * wl_txn.c - the `txn` workload: transactions that write `writes`
 * distinct 8-byte ranges (each in its own cache line) and allocate
 * `allocs` 64-byte blocks. To stay in a steady state, every allocation
 * frees the block allocated 1024 allocations earlier, in the same
 * transaction (so an alloc run is "alloc + free" per block, for every
 * system alike).
 *
 * Systems: pmtx-undo, pmtx-redo, pmtx-redo-async (any domain and
 * backend); pmtx-cow, where the `writes` ranges are 8 bytes in as many
 * distinct 64-byte objects opened for writing (copy-on-write works only
 * through wrappers); pmtx-cltx, for 0-3 writes of 8-byte fields of one
 * cache-line object and no allocation; and pmdk (libpmemobj's
 * TX_BEGIN / pmemobj_tx_add_range / pmemobj_tx_alloc, written as a PMDK
 * user would, on a pool in --dir with PMEM_IS_PMEM_FORCE=1).
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
};

static inline unsigned line_of(uint64_t iter, long w)
{
	return (unsigned)((iter * 7 + (uint64_t)w * 61) % LINES);
}

struct obj64 {
	uint64_t v[8];
};
PMTX_DEFINE_PM_TYPE(obj64)

struct fields {
	uint64_t f[3];
};
PMTX_CLTX_DECLARE(line3, struct fields)

/* For pmtx-cow: the root holds LINES wrapper offsets instead of data. */
static int cow_setup(pmtx_region *r)
{
	pm_obj64 *objs = pmtx_root(r, NULL);
	for (unsigned i = 0; i < LINES; i += 256) {
		pmtx_tx *tx;
		int rc = pmtx_begin(r, PMTX_RT_UNDO, &tx);
		for (unsigned k = i; !rc && k < i + 256; k++) {
			pm_obj64 o;
			rc = pm_obj64_new(tx, &o);
			if (!rc)
				rc = PMTX_SET(tx, objs[k], o);
		}
		if (rc) {
			pmtx_abort(tx);
			return rc;
		}
		if ((rc = pmtx_commit(tx)))
			return rc;
	}
	return 0;
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
		if (rc) {
			pmtx_abort(tx);
			return rc;
		}
		if ((rc = pmtx_commit(tx)))
			return rc;
	}
	return 0;
}

static void pmtx_destroy(void *vctx)
{
	struct pmtx_ctx *c = vctx;
	pmtx_close(c->r);
	unlink(c->path);
	free(c);
}

static int pmtx_runner(struct runner *r, const struct bench_opts *o,
                       pmtx_runtime rt, pmtx_domain d, pmtx_backend b,
                       struct txn_params p)
{
	struct pmtx_ctx *c = calloc(1, sizeof(*c));
	pmtx_options opt;
	pmtx_options_init(&opt);
	opt.domain = d;
	opt.backend = b;
	opt.root_size = LINES * 64;
	snprintf(c->path, sizeof(c->path), "%s", bench_path(o, "pmtx"));
	int rc = pmtx_create(c->path, POOL_SIZE, &opt, &c->r);
	if (rc) {
		free(c);
		return rc;
	}
	c->lines = pmtx_root(c->r, NULL);
	c->p = p;
	c->rt = rt;
	*r = (struct runner){.ctx = c, .run = pmtx_run,
	                     .destroy = pmtx_destroy, .has_counters = 1};
	snprintf(r->system, sizeof(r->system), "pmtx-%s", pmtx_runtime_name(rt));
	snprintf(r->domain, sizeof(r->domain), "%s", pmtx_domain_name(d));
	snprintf(r->backend, sizeof(r->backend), "%s", pmtx_backend_name(b));
	if (rt == PMTX_RT_COW && (rc = cow_setup(c->r)))
		pmtx_destroy(c);
	if (rt == RT_CLTX) {
		r->run = cltx_run;
		snprintf(r->system, sizeof(r->system), "pmtx-cltx");
	}
	return rc;
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
	c->iter++;
	return rc;
}

static int pmdk_run(void *vctx, uint64_t n)
{
	return bench_repeat(n, pmdk_one, vctx);
}

static void pmdk_destroy(void *vctx)
{
	struct pmdk_ctx *c = vctx;
	pmemobj_close(c->pop);
	unlink(c->path);
	free(c);
}

static int pmdk_runner(struct runner *r, const struct bench_opts *o,
                       struct txn_params p)
{
	struct pmdk_ctx *c = calloc(1, sizeof(*c));
	setenv("PMEM_IS_PMEM_FORCE", "1", 1);
	snprintf(c->path, sizeof(c->path), "%s", bench_path(o, "pmdk"));
	c->pop = pmemobj_create(c->path, "bench", POOL_SIZE, 0600);
	if (!c->pop) {
		fprintf(stderr, "pmemobj_create: %s\n", pmemobj_errormsg());
		free(c);
		return PMTX_E_IO;
	}
	c->root = pmemobj_root(c->pop, LINES * 64);
	c->lines = pmemobj_direct(c->root);
	c->p = p;
	*r = (struct runner){.ctx = c, .run = pmdk_run,
	                     .destroy = pmdk_destroy, .has_counters = 0};
	snprintf(r->system, sizeof(r->system), "pmdk");
	snprintf(r->domain, sizeof(r->domain), "pdom1");
	snprintf(r->backend, sizeof(r->backend), "hardware");
	return 0;
}

/* ---- the sweep ---- */

static int want(const char *sel, const char *name)
{
	return !sel || !strcmp(sel, name);
}

static const pmtx_runtime runtimes[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                        PMTX_RT_REDO_ASYNC, PMTX_RT_COW,
                                        RT_CLTX};
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
	static const pmtx_backend backends[] = {PMTX_BACKEND_HARDWARE,
	                                        PMTX_BACKEND_EMULATED,
	                                        PMTX_BACKEND_FILE};
	for (unsigned b = 0; b < 3; b++) {
		const char *bn = pmtx_backend_name(backends[b]);
		if (o->backend ? strcmp(o->backend, bn)
		               : backends[b] == PMTX_BACKEND_FILE)
			continue;
		for (int d = 0; d < 3; d++) {
			if (!want(o->domain, pmtx_domain_name((pmtx_domain)d)))
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
	struct runner rs[32];
	int n = 0;
	int rc = pmtx_runners(rs, &n, o, p);
	if (!rc && bench_want(o, "pmdk") && want(o->domain, "pdom1") &&
	    want(o->backend, "hardware")) {
		rc = pmdk_runner(&rs[n], o, p);
		n += rc == 0;
	}
	if (!rc)
		rc = bench_measure(rs, n, o);
	char params[64];
	snprintf(params, sizeof(params), "\"writes\":%ld,\"allocs\":%ld",
	         p.writes, p.allocs);
	for (int i = 0; i < n; i++) {
		if (!rc)
			bench_emit(&rs[i], "txn", params);
		rs[i].destroy(rs[i].ctx);
	}
	return rc;
}

int wl_txn(const struct bench_opts *o)
{
	static const long sweep[] = {0, 1, 2, 3, 4, 16, 32};
	static const char *const systems[] = {"pmtx-undo", "pmtx-redo",
	                                      "pmtx-redo-async", "pmtx-cow",
	                                      "pmtx-cltx", "pmdk", NULL};
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
