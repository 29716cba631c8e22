/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench.c - measurement loop, parameters, per-system setup and JSON output
 * for pmtx-bench.
 */
#define _GNU_SOURCE
#include <libpmemobj.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
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

int bench_bind(struct runner *r, int rc, void *ctx,
               int (*run)(void *, uint64_t), int (*check)(void *),
               void (*corrupt)(void *), void (*destroy)(void *))
{
	if (rc) {
		destroy(ctx);
		return rc;
	}
	r->ctx = ctx;
	r->run = run;
	r->check = check;
	r->corrupt = corrupt;
	r->destroy = destroy;
	return 0;
}

/* This thread's barriers and flushes so far, pmtx's and PMDK's (a runner
 * moves one set only). */
static void thread_counters(uint64_t *barriers, uint64_t *flushes)
{
	pmtx_counters c;
	uint64_t pf, pb;
	pmtx_counters_get(&c);
	bench_pmdk_counters(&pf, &pb);
	*barriers = c.barriers + pb;
	*flushes = c.flushes + pf;
}

/* r's: its hook's (all its threads'), or this thread's. */
static void runner_counters(const struct runner *r, uint64_t *barriers,
                            uint64_t *flushes)
{
	if (r->counters)
		r->counters(r->ctx, barriers, flushes);
	else
		thread_counters(barriers, flushes);
}

/* Run r for about ns nanoseconds, in batches, and account for it. */
static int run_for(struct runner *r, uint64_t ns, int account)
{
	uint64_t b0, f0, b1, f1;
	uint64_t batch = 1, ops = 0, t0 = bench_now_ns(), t = t0;
	runner_counters(r, &b0, &f0);
	while (t - t0 < ns) {
		int rc = r->run(r->ctx, batch);
		if (rc)
			return rc;
		ops += batch;
		t = bench_now_ns();
		if (t - t0 < ns / 8 && batch < (1u << 20))
			batch *= 2;
	}
	runner_counters(r, &b1, &f1);
	if (account) {
		r->ops += ops;
		r->ns += t - t0;
		r->barriers += b1 - b0;
		r->flushes += f1 - f0;
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

/* The end of runner r, once measured (if rc is 0): corrupt it (under
 * --inject-fault) and check it, unless rc is set; destroy it. */
static int finish_one(struct runner *r, int rc, const struct bench_opts *o,
                      const char *workload)
{
	if (!rc && o->inject_fault && r->corrupt)
		r->corrupt(r->ctx);
	if (!rc && r->check && (rc = r->check(r->ctx)))
		fprintf(stderr, "%s: %s: validation failed\n", workload,
		        r->system);
	r->destroy(r->ctx);
	return rc;
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
		rc = finish_one(&rs[i], rc, o, workload);
	}
	return rc;
}

int bench_finish(struct runner *rs, int n, int rc, const struct bench_opts *o,
                 const char *workload)
{
	for (int i = 0; i < n; i++)
		rc = finish_one(&rs[i], rc, o, workload);
	return rc;
}

/* One transaction of runtime rt in r running body(ctx, tx): a body
 * failure aborts it and is returned. */
static int one_tx(pmtx_region *r, pmtx_runtime rt,
                  int (*body)(void *ctx, pmtx_tx *tx), void *ctx)
{
	pmtx_tx *tx;
	int rc = pmtx_begin(r, rt, &tx);
	if (rc)
		return rc;
	return bench_tx_end(tx, body(ctx, tx));
}

int bench_txs(pmtx_region *r, pmtx_runtime rt, uint64_t n,
              int (*body)(void *ctx, pmtx_tx *tx), void *ctx)
{
	int rc = 0;
	for (uint64_t t = 0; !rc && t < n; t++)
		rc = one_tx(r, rt, body, ctx);
	return rc;
}

/* The steps [from, to) of a bench_setup_txs, as one transaction's body. */
struct setup_batch {
	int (*one)(void *ctx, pmtx_tx *tx, uint64_t i);
	void *ctx;
	uint64_t from, to;
};

static int setup_batch(void *vb, pmtx_tx *tx)
{
	const struct setup_batch *b = vb;
	int rc = 0;
	for (uint64_t i = b->from; !rc && i < b->to; i++)
		rc = b->one(b->ctx, tx, i);
	return rc;
}

int bench_setup_txs(pmtx_region *r, pmtx_runtime rt, uint64_t n,
                    uint64_t batch,
                    int (*one)(void *ctx, pmtx_tx *tx, uint64_t i),
                    void *ctx)
{
	struct setup_batch b = {one, ctx, 0, 0};
	int rc = 0;
	for (; !rc && b.from < n; b.from = b.to) {
		b.to = n - b.from < batch ? n : b.from + batch;
		rc = one_tx(r, rt, setup_batch, &b);
	}
	return rc;
}

static int obj64_new(void *objs, pmtx_tx *tx, uint64_t i)
{
	pm_obj64 obj;
	int rc = pm_obj64_new(tx, &obj);
	return rc ? rc : PMTX_SET(tx, ((pm_obj64 *)objs)[i], obj);
}

int bench_obj64_setup(pmtx_region *r, pm_obj64 *objs, uint64_t n,
                      uint64_t batch)
{
	return bench_setup_txs(r, PMTX_RT_UNDO, n, batch, obj64_new, objs);
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

int bench_pmdk_txs(struct pmemobjpool *pop, uint64_t n,
                   void (*body)(void *ctx), void *ctx)
{
	for (uint64_t t = 0; t < n; t++) {
		int rc = bench_pmdk_tx(pop, body, ctx);
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

/* ---- runners on several threads ---- */

struct crew_slot {
	struct bench_crew *crew;
	int t;
	int rc;                    /* of its last share */
	uint64_t barriers, flushes; /* its counters' growth in its shares */
	pthread_t tid;
} __attribute__((aligned(64))); /* each thread writes its own line */

struct bench_crew {
	int (*share)(void *ctx, int t, uint64_t n);
	void *ctx;
	int nthreads, started;
	pthread_mutex_t lock;
	pthread_cond_t go, done;
	uint64_t gen;  /* batches handed out (lock) */
	uint64_t n;    /* the batch being run (lock) */
	int busy;      /* threads other than the caller still on it (lock) */
	int stop;      /* (lock) */
	struct crew_slot *slot;
};

/* Thread t's part of a batch of n, in thread t. */
static void crew_share(struct bench_crew *c, int t, uint64_t n)
{
	struct crew_slot *s = &c->slot[t];
	uint64_t part = n / (uint64_t)c->nthreads +
	                ((uint64_t)t < n % (uint64_t)c->nthreads);
	uint64_t b0, f0, b1, f1;
	thread_counters(&b0, &f0);
	s->rc = part ? c->share(c->ctx, t, part) : 0;
	thread_counters(&b1, &f1);
	s->barriers += b1 - b0;
	s->flushes += f1 - f0;
}

static void *crew_thread(void *arg)
{
	struct crew_slot *s = arg;
	struct bench_crew *c = s->crew;
	uint64_t seen = 0;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		while (!c->stop && c->gen == seen)
			pthread_cond_wait(&c->go, &c->lock);
		if (c->stop)
			break;
		seen = c->gen;
		uint64_t n = c->n;
		pthread_mutex_unlock(&c->lock);
		crew_share(c, s->t, n);
		pthread_mutex_lock(&c->lock);
		if (--c->busy == 0)
			pthread_cond_signal(&c->done);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int bench_crew_start(int nthreads, int (*share)(void *ctx, int t, uint64_t n),
                     void *ctx, struct bench_crew **out)
{
	struct bench_crew *c = calloc(1, sizeof(*c));
	if (!c || !(c->slot = aligned_alloc(64, (size_t)nthreads *
	                                            sizeof(*c->slot)))) {
		free(c);
		return PMTX_E_NOMEM;
	}
	c->share = share;
	c->ctx = ctx;
	c->nthreads = nthreads;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->go, NULL);
	pthread_cond_init(&c->done, NULL);
	int rc = 0;
	for (int t = 0; t < nthreads; t++)
		c->slot[t] = (struct crew_slot){.crew = c, .t = t};
	for (int t = 1; !rc && t < nthreads; t++)
		if (!(rc = pthread_create(&c->slot[t].tid, NULL, crew_thread,
		                          &c->slot[t])))
			c->started++;
	if (rc) {
		bench_crew_stop(c);
		return rc;
	}
	*out = c;
	return 0;
}

int bench_crew_run(struct bench_crew *c, uint64_t n)
{
	pthread_mutex_lock(&c->lock);
	c->n = n;
	c->gen++;
	c->busy = c->nthreads - 1;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->lock);
	crew_share(c, 0, n);
	pthread_mutex_lock(&c->lock);
	while (c->busy)
		pthread_cond_wait(&c->done, &c->lock);
	pthread_mutex_unlock(&c->lock);
	for (int t = 0; t < c->nthreads; t++)
		if (c->slot[t].rc)
			return c->slot[t].rc;
	return 0;
}

void bench_crew_counters(struct bench_crew *c, uint64_t *barriers,
                         uint64_t *flushes)
{
	*barriers = *flushes = 0;
	for (int t = 0; t < c->nthreads; t++) {
		*barriers += c->slot[t].barriers;
		*flushes += c->slot[t].flushes;
	}
}

void bench_crew_stop(struct bench_crew *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	pthread_cond_broadcast(&c->go);
	pthread_mutex_unlock(&c->lock);
	for (int t = 1; t <= c->started; t++)
		pthread_join(c->slot[t].tid, NULL);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->go);
	pthread_cond_destroy(&c->done);
	free(c->slot);
	free(c);
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

int bench_param_in(const struct bench_opts *o, const char *workload,
                   const char *name, const char *defaults, long lo, long hi,
                   long *vals, int max)
{
	int n = bench_param(o, name, defaults, vals, max);
	for (int i = 0; i < n; i++)
		if (vals[i] < lo || vals[i] > hi) {
			if (hi < LONG_MAX)
				fprintf(stderr, "%s: %s must be in %ld..%ld\n",
				        workload, name, lo, hi);
			else
				fprintf(stderr, "%s: %s must be at least %ld\n",
				        workload, name, lo);
			return -1;
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

const pmtx_runtime bench_runtimes[6] = {
	PMTX_RT_UNDO, PMTX_RT_REDO, PMTX_RT_REDO_ASYNC, PMTX_RT_COW,
	PMTX_RT_AUTO, PMTX_RT_TWIN,
};
const pmtx_runtime bench_obj_runtimes[5] = {
	PMTX_RT_UNDO, PMTX_RT_REDO, PMTX_RT_REDO_ASYNC, PMTX_RT_COW,
	PMTX_RT_TWIN,
};

/* A runner made by a maker: counted, with the time since t0 (ns) it took. */
static int made(struct runner *rs, int *n, uint64_t t0, int rc)
{
	if (!rc)
		rs[(*n)++].setup_s = (double)(bench_now_ns() - t0) / 1e9;
	return rc;
}

int bench_runners(struct runner *rs, int *n, const struct bench_opts *o,
                  const struct bench_makers *m, void *arg)
{
	struct bench_cfg cfgs[8];
	int ncfg = bench_configs(o, cfgs, 8), rc = 0;
	for (size_t k = 0; k < m->nrts; k++) {
		pmtx_runtime rt = m->rts[k];
		if (!bench_want(o, m->name ? m->name(rt) : bench_system_name(rt)))
			continue;
		for (int i = 0; !rc && i < ncfg; i++) {
			uint64_t t0 = bench_now_ns();
			rc = made(rs, n, t0, m->pmtx(&rs[*n], o, rt, cfgs[i], arg));
		}
	}
	uint64_t t0 = bench_now_ns();
	if (!rc && m->pmdk && bench_want_pmdk(o))
		rc = made(rs, n, t0, m->pmdk(&rs[*n], o, arg));
	t0 = bench_now_ns();
	if (!rc && m->plain && bench_want_plain(o))
		rc = made(rs, n, t0, m->plain(&rs[*n], o, arg));
	return rc;
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

static void runner_names(struct runner *r, int has_counters,
                         const char *system, const char *domain,
                         const char *backend)
{
	*r = (struct runner){.has_counters = has_counters};
	snprintf(r->system, sizeof(r->system), "%s", system);
	snprintf(r->domain, sizeof(r->domain), "%s", domain);
	snprintf(r->backend, sizeof(r->backend), "%s", backend);
}

int bench_region_opt(struct runner *r, const struct bench_opts *o,
                     pmtx_runtime rt, struct bench_cfg cfg, pmtx_options *opt,
                     size_t region_size, pmtx_region **out, char *path)
{
	opt->domain = cfg.domain;
	opt->backend = cfg.backend;
	opt->runtime = rt == BENCH_RT_CLTX ? PMTX_RT_UNDO : rt;
	snprintf(path, 256, "%s", bench_path(o, "pmtx"));
	int rc = pmtx_create(path, region_size, opt, out);
	if (rc) {
		fprintf(stderr, "pmtx_create %s: %s (%s)\n", path,
		        pmtx_strerror(rc), pmtx_errmsg());
		return rc;
	}
	runner_names(r, 1, bench_system_name(rt), pmtx_domain_name(cfg.domain),
	             pmtx_backend_name(cfg.backend));
	return 0;
}

int bench_region(struct runner *r, const struct bench_opts *o,
                 pmtx_runtime rt, struct bench_cfg cfg, size_t root_size,
                 size_t region_size, pmtx_region **out, char *path)
{
	pmtx_options opt;
	pmtx_options_init(&opt);
	opt.root_size = root_size;
	if (rt == PMTX_RT_TWIN) /* the same heap, and its back copy */
		region_size = 2 * region_size + (1u << 20);
	return bench_region_opt(r, o, rt, cfg, &opt, region_size, out, path);
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
	runner_names(r, bench_pmdk_counting(), "pmdk", "pdom1", "hardware");
	return 0;
}

void bench_pmdk_destroy(struct pmemobjpool *pop, const char *path)
{
	pmemobj_close(pop);
	unlink(path);
}

void bench_close(pmtx_region *rg, struct pmemobjpool *pop, const char *path)
{
	if (rg)
		bench_region_destroy(rg, path);
	if (pop)
		bench_pmdk_destroy(pop, path);
}

void bench_plain_names(struct runner *r)
{
	runner_names(r, 1, "plain", "pdom1", "hardware");
}

int bench_plain_region(struct runner *r, const struct bench_opts *o,
                       size_t root_size, size_t region_size,
                       pmtx_region **out, char *path)
{
	struct bench_cfg cfg = {PMTX_PDOM1, PMTX_BACKEND_HARDWARE};
	int rc = bench_region(r, o, PMTX_RT_UNDO, cfg, root_size, region_size,
	                      out, path);
	if (!rc)
		bench_plain_names(r);
	return rc;
}
