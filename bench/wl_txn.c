/*
 * wl_txn.c - the `txn` workload: transactions that write `writes`
 * distinct 8-byte ranges (each in its own cache line) and allocate
 * `allocs` 64-byte blocks. To stay in a steady state, every allocation
 * frees the block allocated 1024 allocations earlier, in the same
 * transaction (so an alloc run is "alloc + free" per block, for every
 * system alike).
 *
 * Systems: pmtx-undo, pmtx-redo, pmtx-redo-async (any domain and
 * backend) and pmdk (libpmemobj's
 * TX_BEGIN / pmemobj_tx_add_range / pmemobj_tx_alloc, written as a PMDK
 * user would, on a pool in --dir with PMEM_IS_PMEM_FORCE=1).
 */
#include <libpmemobj.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define LINES 4096u
#define RING 1024u
#define POOL_SIZE (256u << 20)

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

static int pmtx_run(void *vctx, uint64_t n)
{
	struct pmtx_ctx *c = vctx;
	for (uint64_t i = 0; i < n; i++, c->iter++) {
		pmtx_tx *tx;
		int rc = pmtx_begin(c->r, c->rt, &tx);
		for (long w = 0; !rc && w < c->p.writes; w++) {
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

static int pmdk_one(struct pmdk_ctx *c)
{
	volatile int failed = 0; /* PMDK's TX_BEGIN is setjmp-based */
	TX_BEGIN(c->pop) {
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
	} TX_ONABORT {
		failed = 1;
	} TX_END
	c->iter++;
	return failed ? PMTX_E_ABORTED : 0;
}

static int pmdk_run(void *vctx, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		int rc = pmdk_one(vctx);
		if (rc)
			return rc;
	}
	return 0;
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
                                        PMTX_RT_REDO_ASYNC};

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
			for (unsigned k = 0; k < 3; k++) {
				char sys[32];
				snprintf(sys, sizeof(sys), "pmtx-%s",
				         pmtx_runtime_name(runtimes[k]));
				if (!want(o->system, sys))
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
	if (!rc && want(o->system, "pmdk") && want(o->domain, "pdom1") &&
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
	static const long sweep[] = {0, 1, 4, 16, 32};
	static const char *const systems[] = {"pmtx-undo", "pmtx-redo",
	                                      "pmtx-redo-async", "pmdk"};
	int known = !o->system;
	for (size_t i = 0; i < sizeof(systems) / sizeof(*systems); i++)
		known |= o->system && !strcmp(o->system, systems[i]);
	if (!known) {
		fprintf(stderr, "txn: unknown --system %s (pmtx-undo, "
		                "pmtx-redo, pmtx-redo-async, pmdk)\n", o->system);
		return PMTX_E_INVAL;
	}
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
