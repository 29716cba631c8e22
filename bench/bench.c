/*
 * bench.c - measurement loop, parameters, per-system setup and JSON output
 * for pmtx-bench.
 */
#define _GNU_SOURCE
#include <libpmemobj.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Run r for about ns nanoseconds, in batches, and account for it. */
static int run_for(struct runner *r, uint64_t ns, int account)
{
	pmtx_counters c0, c1;
	uint64_t pf0, pb0, pf1, pb1; /* PMDK's: a runner moves one set only */
	uint64_t batch = 1, ops = 0, t0 = bench_now_ns(), t = t0;
	pmtx_counters_get(&c0);
	bench_pmdk_counters(&pf0, &pb0);
	while (t - t0 < ns) {
		int rc = r->run(r->ctx, batch);
		if (rc)
			return rc;
		ops += batch;
		t = bench_now_ns();
		if (t - t0 < ns / 8 && batch < (1u << 20))
			batch *= 2;
	}
	pmtx_counters_get(&c1);
	bench_pmdk_counters(&pf1, &pb1);
	if (account) {
		r->ops += ops;
		r->ns += t - t0;
		r->barriers += c1.barriers - c0.barriers + pb1 - pb0;
		r->flushes += c1.flushes - c0.flushes + pf1 - pf0;
		if (r->nrounds < BENCH_MAX_ROUNDS)
			r->round_ns[r->nrounds++] =
				(double)(t - t0) / (double)ops;
	}
	return 0;
}

int bench_measure(struct runner *rs, int n, const struct bench_opts *o)
{
	int rounds = o->rounds > 0 ? o->rounds : 3;
	if (rounds > BENCH_MAX_ROUNDS)
		rounds = BENCH_MAX_ROUNDS;
	uint64_t slice = (uint64_t)(o->seconds * 1e9 / rounds);
	for (int i = 0; i < n; i++) {
		int rc = run_for(&rs[i], slice / 4, 0);
		if (rc)
			return rc;
	}
	for (int k = 0; k < rounds; k++)
		for (int i = 0; i < n; i++) {
			int rc = run_for(&rs[i], slice, 1);
			if (rc)
				return rc;
		}
	return 0;
}

static void emit_spread(const struct runner *r)
{
	double mean = 0, sd = 0, lo = 0, hi = 0;
	for (int i = 0; i < r->nrounds; i++) {
		double v = r->round_ns[i];
		mean += v;
		lo = i == 0 || v < lo ? v : lo;
		hi = i == 0 || v > hi ? v : hi;
	}
	if (r->nrounds)
		mean /= r->nrounds;
	for (int i = 0; i < r->nrounds; i++)
		sd += (r->round_ns[i] - mean) * (r->round_ns[i] - mean);
	if (r->nrounds > 1)
		sd = sqrt(sd / (r->nrounds - 1));
	printf("\"ns_per_op_sd\":%.3f,\"ns_per_op_min\":%.3f,"
	       "\"ns_per_op_max\":%.3f,\"rounds\":%d",
	       sd, lo, hi, r->nrounds);
}

void bench_emit_ex(const struct runner *r, const char *workload,
                   const char *params, const char *extra)
{
	double ns = r->ops ? (double)r->ns / (double)r->ops : 0;
	printf("{\"workload\":\"%s\",\"system\":\"%s\",\"domain\":\"%s\","
	       "\"backend\":\"%s\",\"params\":{%s},\"ns_per_op\":%.3f,"
	       "\"ops_per_s\":%.1f,",
	       workload, r->system, r->domain, r->backend, params, ns,
	       ns > 0 ? 1e9 / ns : 0);
	if (r->has_counters && r->ops)
		printf("\"barriers_per_op\":%.4f,\"flushes_per_op\":%.4f,",
		       (double)r->barriers / (double)r->ops,
		       (double)r->flushes / (double)r->ops);
	else
		printf("\"barriers_per_op\":null,\"flushes_per_op\":null,");
	emit_spread(r);
	if (extra && *extra)
		printf(",%s", extra);
	printf("}\n");
	fflush(stdout);
}

void bench_emit(const struct runner *r, const char *workload,
                const char *params)
{
	bench_emit_ex(r, workload, params, NULL);
}

void bench_emit_raw(const char *workload, const char *system,
                    const char *params, double ns_per_op)
{
	printf("{\"workload\":\"%s\",\"system\":\"%s\",\"domain\":null,"
	       "\"backend\":null,\"params\":{%s},\"ns_per_op\":%.3f,"
	       "\"ops_per_s\":%.1f,\"barriers_per_op\":null,"
	       "\"flushes_per_op\":null}\n",
	       workload, system, params, ns_per_op,
	       ns_per_op > 0 ? 1e9 / ns_per_op : 0);
	fflush(stdout);
}

int bench_point(struct runner *rs, int n, int rc, const struct bench_opts *o,
                const char *workload, const char *params,
                void (*extra_fn)(const struct runner *r, char *buf,
                                 size_t len))
{
	if (!rc)
		rc = bench_measure(rs, n, o);
	for (int i = 0; i < n; i++) {
		char extra[256] = "";
		if (!rc && extra_fn)
			extra_fn(&rs[i], extra, sizeof(extra));
		if (!rc)
			bench_emit_ex(&rs[i], workload, params, extra);
		if (!rc && o->inject_fault && rs[i].corrupt)
			rs[i].corrupt(rs[i].ctx);
		if (!rc && rs[i].check && (rc = rs[i].check(rs[i].ctx)))
			fprintf(stderr, "%s: %s: validation failed\n",
			        workload, rs[i].system);
		rs[i].destroy(rs[i].ctx);
	}
	return rc;
}

int bench_txs(pmtx_region *r, pmtx_runtime rt, uint64_t n,
              int (*body)(void *ctx, pmtx_tx *tx), void *ctx)
{
	for (uint64_t t = 0; t < n; t++) {
		pmtx_tx *tx;
		int rc = pmtx_begin(r, rt, &tx);
		if (rc)
			return rc;
		if ((rc = body(ctx, tx))) {
			pmtx_abort(tx);
			return rc;
		}
		if ((rc = pmtx_commit(tx)))
			return rc;
	}
	return 0;
}

int bench_repeat(uint64_t n, int (*one)(void *ctx), void *ctx)
{
	for (uint64_t t = 0; t < n; t++) {
		int rc = one(ctx);
		if (rc)
			return rc;
	}
	return 0;
}

int bench_pmdk_tx(struct pmemobjpool *pop, void (*body)(void *ctx),
                  void *ctx)
{
	volatile int failed = 0; /* TX_BEGIN is setjmp-based */
	TX_BEGIN(pop) {
		body(ctx);
	} TX_ONABORT {
		failed = 1;
	} TX_END
	if (failed)
		fprintf(stderr, "pmdk transaction aborted: %s\n",
		        pmemobj_errormsg());
	return failed ? PMTX_E_ABORTED : 0;
}

const char *bench_path(const struct bench_opts *o, const char *tag)
{
	static char buf[8][256];
	static unsigned k;
	char *p = buf[k++ % 8];
	snprintf(p, sizeof(buf[0]), "%s/pmtx-bench-%d-%s-%u.pool", o->dir,
	         (int)getpid(), tag, k);
	unlink(p);
	return p;
}

/* ---- parameters ---- */

int bench_param(const struct bench_opts *o, const char *name,
                const char *defaults, long *vals, int max)
{
	const char *list = defaults;
	size_t nl = strlen(name);
	for (int i = 0; i < o->nparams; i++)
		if (!strncmp(o->params[i], name, nl) && o->params[i][nl] == '=')
			list = o->params[i] + nl + 1;
	int n = 0;
	for (const char *p = list; p && *p && n < max;) {
		char *end;
		long v = strtol(p, &end, 0);
		if (end == p)
			break;
		vals[n++] = v;
		p = *end == ',' ? end + 1 : NULL;
	}
	return n;
}

long bench_param1(const struct bench_opts *o, const char *name, long def)
{
	long v;
	char d[32];
	snprintf(d, sizeof(d), "%ld", def);
	return bench_param(o, name, d, &v, 1) ? v : def;
}

/* 1 if name is an element of the comma-separated list. */
static int in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return 1;
		p = e ? e + 1 : NULL;
	}
	return 0;
}

int bench_want(const struct bench_opts *o, const char *system)
{
	return !o->system || in_list(o->system, system);
}

int bench_check_systems(const struct bench_opts *o, const char *workload,
                        const char *const *known)
{
	if (!o->system)
		return 0;
	for (const char *p = o->system; p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		int ok = 0;
		for (int i = 0; known[i]; i++)
			ok |= strlen(known[i]) == len && !strncmp(p, known[i], len);
		if (!ok) {
			fprintf(stderr, "%s: unknown --system %.*s; known:",
			        workload, (int)len, p);
			for (int i = 0; known[i]; i++)
				fprintf(stderr, " %s", known[i]);
			fprintf(stderr, "\n");
			return PMTX_E_INVAL;
		}
		p = e ? e + 1 : NULL;
	}
	return 0;
}

/* ---- systems ---- */

static int cfg_wanted(const struct bench_opts *o, struct bench_cfg c)
{
	return (!o->domain || !strcmp(o->domain, pmtx_domain_name(c.domain))) &&
	       (!o->backend || !strcmp(o->backend, pmtx_backend_name(c.backend)));
}

int bench_configs(const struct bench_opts *o, struct bench_cfg *out, int max)
{
	static const struct bench_cfg defaults[] = {
		{PMTX_PDOM1, PMTX_BACKEND_HARDWARE},
		{PMTX_PDOM0, PMTX_BACKEND_EMULATED},
		{PMTX_PDOM1, PMTX_BACKEND_EMULATED},
		{PMTX_PDOM2, PMTX_BACKEND_EMULATED},
	};
	int n = 0;
	if (o->backend && strcmp(o->backend, "hardware") &&
	    strcmp(o->backend, "emulated")) {
		/* Any other backend (file) on the domains asked for. */
		pmtx_backend b;
		if (pmtx_backend_parse(o->backend, &b))
			return 0;
		for (int d = 0; d < 3 && n < max; d++) {
			struct bench_cfg c = {(pmtx_domain)d, b};
			if (cfg_wanted(o, c))
				out[n++] = c;
		}
		return n;
	}
	for (size_t i = 0; i < sizeof(defaults) / sizeof(*defaults); i++)
		if (n < max && cfg_wanted(o, defaults[i]))
			out[n++] = defaults[i];
	/* --backend hardware --domain pdom0/pdom2: not a default, but asked. */
	if (n == 0 && o->domain && o->backend) {
		struct bench_cfg c;
		if (!pmtx_domain_parse(o->domain, &c.domain) &&
		    !pmtx_backend_parse(o->backend, &c.backend))
			out[n++] = c;
	}
	return n;
}

int bench_want_pmdk(const struct bench_opts *o)
{
	return bench_want(o, "pmdk") &&
	       (!o->domain || !strcmp(o->domain, "pdom1")) &&
	       (!o->backend || !strcmp(o->backend, "hardware"));
}

int bench_want_plain(const struct bench_opts *o)
{
	return bench_want(o, "plain") &&
	       (!o->domain || !strcmp(o->domain, "pdom1")) &&
	       (!o->backend || !strcmp(o->backend, "hardware"));
}

const char *bench_system_name(pmtx_runtime rt)
{
	switch ((int)rt) {
	case PMTX_RT_UNDO: return "pmtx-undo";
	case PMTX_RT_REDO: return "pmtx-redo";
	case PMTX_RT_REDO_ASYNC: return "pmtx-redo-async";
	case PMTX_RT_COW: return "pmtx-cow";
	case PMTX_RT_AUTO: return "pmtx-auto";
	case PMTX_RT_TWIN: return "pmtx-twin";
	case (int)BENCH_RT_CLTX: return "pmtx-cltx";
	default: return "pmtx-?";
	}
}

int bench_region(struct runner *r, const struct bench_opts *o,
                 pmtx_runtime rt, struct bench_cfg cfg, size_t root_size,
                 size_t region_size, pmtx_region **out, char *path)
{
	pmtx_options opt;
	pmtx_options_init(&opt);
	opt.domain = cfg.domain;
	opt.backend = cfg.backend;
	opt.root_size = root_size;
	opt.runtime = rt == BENCH_RT_CLTX ? PMTX_RT_UNDO : rt;
	if (rt == PMTX_RT_TWIN) /* the same heap, and its back copy */
		region_size = 2 * region_size + (1u << 20);
	snprintf(path, 256, "%s", bench_path(o, "pmtx"));
	int rc = pmtx_create(path, region_size, &opt, out);
	if (rc) {
		fprintf(stderr, "pmtx_create %s: %s (%s)\n", path,
		        pmtx_strerror(rc), pmtx_errmsg());
		return rc;
	}
	*r = (struct runner){.has_counters = 1};
	snprintf(r->system, sizeof(r->system), "%s", bench_system_name(rt));
	snprintf(r->domain, sizeof(r->domain), "%s",
	         pmtx_domain_name(cfg.domain));
	snprintf(r->backend, sizeof(r->backend), "%s",
	         pmtx_backend_name(cfg.backend));
	return 0;
}

void bench_region_destroy(pmtx_region *rg, const char *path)
{
	char j[280];
	pmtx_close(rg);
	unlink(path);
	snprintf(j, sizeof(j), "%s.pmtxj", path); /* the journal backend's */
	unlink(j);
}

int bench_pmdk_pool(struct runner *r, const struct bench_opts *o,
                    size_t root_size, size_t pool_size,
                    struct pmemobjpool **out, char *path)
{
	setenv("PMEM_IS_PMEM_FORCE", "1", 1);
	snprintf(path, 256, "%s", bench_path(o, "pmdk"));
	PMEMobjpool *pop = pmemobj_create(path, "bench", pool_size, 0600);
	if (!pop) {
		fprintf(stderr, "pmemobj_create %s: %s\n", path,
		        pmemobj_errormsg());
		return PMTX_E_IO;
	}
	if (root_size && OID_IS_NULL(pmemobj_root(pop, root_size))) {
		fprintf(stderr, "pmemobj_root: %s\n", pmemobj_errormsg());
		bench_pmdk_destroy(pop, path);
		return PMTX_E_IO;
	}
	*out = pop;
	/* creating the pool persisted: counted if the calls were seen */
	*r = (struct runner){.has_counters = bench_pmdk_counting()};
	snprintf(r->system, sizeof(r->system), "pmdk");
	snprintf(r->domain, sizeof(r->domain), "pdom1");
	snprintf(r->backend, sizeof(r->backend), "hardware");
	return 0;
}

void bench_pmdk_destroy(struct pmemobjpool *pop, const char *path)
{
	pmemobj_close(pop);
	unlink(path);
}

void bench_plain_names(struct runner *r)
{
	*r = (struct runner){.has_counters = 1};
	snprintf(r->system, sizeof(r->system), "plain");
	snprintf(r->domain, sizeof(r->domain), "pdom1");
	snprintf(r->backend, sizeof(r->backend), "hardware");
}
