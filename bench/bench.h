/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench.h - shared parts of pmtx-bench: options, the measurement loop,
 * the per-system setup, and the JSON-lines output every workload uses.
 *
 * Output schema (one JSON object per line, stable across workloads):
 *   workload, system, domain, backend, params{...}, ns_per_op, ops_per_s,
 *   barriers_per_op, flushes_per_op   (null where a system has no counters)
 *   ns_per_op_sd, ns_per_op_min, ns_per_op_max, rounds
 *                                     (spread over the timed rounds)
 *   plus any workload-specific fields (e.g. swaps_per_s).
 * An "op" is one transaction unless the workload says otherwise.
 *
 * Comparisons are made inside one invocation: every system at one
 * parameter point is set up, then bench_measure() runs them interleaved in
 * rounds, so that a ratio survives a noisy machine.
 */
#ifndef PMTX_BENCH_H
#define PMTX_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "pmtx.h"

#define BENCH_MAX_PARAMS 16
#define BENCH_MAX_ROUNDS 64
#define BENCH_MAX_RUNNERS 48

struct bench_opts {
	const char *system;  /* NULL = the workload's default set; else a
	                      * comma-separated list of system names */
	const char *domain;  /* NULL = the default configurations */
	const char *backend; /* NULL = the default configurations */
	double seconds;      /* per measurement (all rounds of one runner) */
	int rounds;          /* interleaved timed rounds per measurement */
	long writes, allocs; /* txn workload: -1 = sweep */
	const char *dir;     /* where pools and regions go */
	int dir_set;         /* --dir was given (else dir is the default) */
	int inject_fault;    /* corrupt the data before validation (tests) */
	const char *params[BENCH_MAX_PARAMS]; /* "name=v1,v2,..." from --p */
	int nparams;
};

/* One system under test at one point: set up once, then run ops. */
struct runner {
	char system[32], domain[16], backend[16];
	void *ctx;
	/* Run n operations; return 0 or a status. */
	int (*run)(void *ctx, uint64_t n);
	/* Optional: validate the data after the measurement (0 or a status,
	 * with a message on stderr). Called before destroy. */
	int (*check)(void *ctx);
	/* Optional: corrupt the data so that check must fail (tests). */
	void (*corrupt)(void *ctx);
	void (*destroy)(void *ctx);
	/* Optional: the persistence work of every thread the runner runs
	 * on, summed since it was made (bench_crew_counters); NULL: the
	 * calling thread's counters (pmtx's and PMDK's). */
	void (*counters)(void *ctx, uint64_t *barriers, uint64_t *flushes);
	int has_counters;
	double setup_s; /* how long making it took (bench_runners) */
	/* accumulated over rounds */
	uint64_t ops, ns, barriers, flushes;
	int nrounds;
	double round_ns[BENCH_MAX_ROUNDS]; /* ns per op of each round */
};

/* The end of making a runner: if rc (the making's status) is 0, bind
 * runner r to its context and hooks (see struct runner), else destroy
 * ctx. Returns rc. */
int bench_bind(struct runner *r, int rc, void *ctx,
               int (*run)(void *, uint64_t), int (*check)(void *),
               void (*corrupt)(void *), void (*destroy)(void *));

uint64_t bench_now_ns(void);
/* Measure the runners interleaved: a warm-up of each, then `rounds`
 * rounds, each giving every runner seconds/rounds of operations. */
int bench_measure(struct runner *rs, int n, const struct bench_opts *o);
/* Print one JSON line for r; params is a JSON object's inside, e.g.
 * "\"writes\":4,\"allocs\":0"; extra is NULL or more fields, e.g.
 * "\"swaps_per_s\":1234.5". */
void bench_emit(const struct runner *r, const char *workload,
                const char *params);
void bench_emit_ex(const struct runner *r, const char *workload,
                   const char *params, const char *extra);
void bench_emit_raw(const char *workload, const char *system,
                    const char *params, double ns_per_op);
/* The usual ending of one parameter point: measure rs[0..n) (if rc is 0),
 * then for each runner emit, corrupt (under --inject-fault), check and
 * destroy. extra_fn, if not NULL, gives the extra fields of a runner.
 * Returns the first failure. */
int bench_point(struct runner *rs, int n, int rc, const struct bench_opts *o,
                const char *workload, const char *params,
                void (*extra_fn)(const struct runner *r, char *buf,
                                 size_t len));

/* bench_point's ending alone: for each runner corrupt (under
 * --inject-fault, if rc is 0), check (if rc is still 0) and destroy.
 * Returns the first failure. */
int bench_finish(struct runner *rs, int n, int rc, const struct bench_opts *o,
                 const char *workload);

/* The end of a transaction whose body returned rc: commit tx if rc is 0,
 * else abort it and return rc. */
static inline int bench_tx_end(pmtx_tx *tx, int rc)
{
	if (rc) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}
/* n transactions of runtime rt in r, each running body(ctx, tx): a body
 * failure aborts its transaction and is returned. The run() of a pmtx
 * runner is usually just this. */
int bench_txs(pmtx_region *r, pmtx_runtime rt, uint64_t n,
              int (*body)(void *ctx, pmtx_tx *tx), void *ctx);
/* Untimed setup: one(ctx, tx, i) for each i in [0, n), batch of them per
 * transaction of runtime rt in r. Returns the first failure (its
 * transaction aborted). */
int bench_setup_txs(pmtx_region *r, pmtx_runtime rt, uint64_t n,
                    uint64_t batch,
                    int (*one)(void *ctx, pmtx_tx *tx, uint64_t i),
                    void *ctx);
/* A copy-on-write object of one cache line (sps, txn). */
struct obj64 {
	uint64_t v[8];
};
PMTX_DEFINE_PM_TYPE(obj64)
/* n empty obj64 objects in r, their wrappers stored in objs[0, n) (in r),
 * made batch per untimed undo transaction. */
int bench_obj64_setup(pmtx_region *r, pm_obj64 *objs, uint64_t n,
                      uint64_t batch);
/* Call one(ctx) n times; stop at, and return, the first failure. */
int bench_repeat(uint64_t n, int (*one)(void *ctx), void *ctx);

/* ---- runners on several threads ----
 * A crew is the threads of one runner: its run(ctx, n) hands the n
 * operations to bench_crew_run, which gives thread t (0 being the caller)
 * n / nthreads of them (the first n % nthreads threads one more) by
 * calling share(ctx, t, part) in that thread, and returns when every
 * thread is done, with the first failure. So a batch is timed from its
 * start to its slowest thread's end. Each thread adds its own pmtx and
 * PMDK counters' growth to a slot of its own (both are per thread), and
 * bench_crew_counters sums them for the runner's counters hook. */
struct bench_crew;
int bench_crew_start(int nthreads, int (*share)(void *ctx, int t, uint64_t n),
                     void *ctx, struct bench_crew **out);
int bench_crew_run(struct bench_crew *c, uint64_t n);
void bench_crew_counters(struct bench_crew *c, uint64_t *barriers,
                         uint64_t *flushes);
/* Join the threads and free c (NULL: nothing). */
void bench_crew_stop(struct bench_crew *c);

/* A fresh region file path in o->dir. */
const char *bench_path(const struct bench_opts *o, const char *tag);

/* ---- parameters ---- */
/* The values of parameter `name`: from --p name=v1,v2,... if given, else
 * from defaults ("1,2,4"). Returns how many (at most max). */
int bench_param(const struct bench_opts *o, const char *name,
                const char *defaults, long *vals, int max);
/* bench_param, every value of which must lie in [lo, hi] (LONG_MAX: no
 * bound): else -1, with a message on stderr. */
int bench_param_in(const struct bench_opts *o, const char *workload,
                   const char *name, const char *defaults, long lo, long hi,
                   long *vals, int max);
/* One value: the first of bench_param. */
long bench_param1(const struct bench_opts *o, const char *name, long def);
/* 1 if system is selected by --system (or no --system was given). */
int bench_want(const struct bench_opts *o, const char *system);
/* PMTX_E_INVAL, with a message, if --system names something outside the
 * NULL-terminated list of systems a workload knows. */
int bench_check_systems(const struct bench_opts *o, const char *workload,
                        const char *const *known);

/* ---- systems ---- */
/* The (domain, backend) configurations a pmtx system runs under: by
 * default emulated PDOM-0, PDOM-1, PDOM-2 and hardware PDOM-1 (the
 * like-for-like comparison with PMDK); --domain and --backend filter (and
 * --backend file is accepted). Returns how many. */
struct bench_cfg {
	pmtx_domain domain;
	pmtx_backend backend;
};
int bench_configs(const struct bench_opts *o, struct bench_cfg *out, int max);
/* 1 if PMDK (which runs on PDOM-1 hardware only) fits --domain/--backend. */
int bench_want_pmdk(const struct bench_opts *o);
/* 1 if the uninstrumented "plain" floor should run: selected, and the
 * filters admit PDOM-1 hardware (it is reported there). */
int bench_want_plain(const struct bench_opts *o);

/* How a workload makes the runners of one parameter point. arg is the
 * workload's own (its parameters); a maker fills *r, or returns a
 * failure. */
struct bench_makers {
	const pmtx_runtime *rts; /* the pmtx systems, in order */
	size_t nrts;
	/* a system's name, for --system (NULL: bench_system_name) */
	const char *(*name)(pmtx_runtime rt);
	int (*pmtx)(struct runner *r, const struct bench_opts *o,
	            pmtx_runtime rt, struct bench_cfg cfg, void *arg);
	int (*pmdk)(struct runner *r, const struct bench_opts *o, void *arg);
	int (*plain)(struct runner *r, const struct bench_opts *o, void *arg);
};
/* The makers of a workload whose pmtx systems are the runtimes in the
 * array rts_, named by bench_system_name. */
#define BENCH_MAKERS(rts_, pmtx_, pmdk_, plain_)                              \
	{                                                                     \
		.rts = (rts_), .nrts = sizeof(rts_) / sizeof(*(rts_)),        \
		.pmtx = (pmtx_), .pmdk = (pmdk_), .plain = (plain_),          \
	}
/* The runners --system, --domain and --backend select, made in rs[*n..]
 * and counted in *n: each pmtx system under each configuration of
 * bench_configs(), then PMDK, then plain. Returns the first failure. */
int bench_runners(struct runner *rs, int *n, const struct bench_opts *o,
                  const struct bench_makers *m, void *arg);

/* The runtimes the array workloads (array, array-raw, sps) compare: every
 * one; and those the object workloads (single-obj, multi-obj, hashmap)
 * compare: all but AUTO. */
extern const pmtx_runtime bench_runtimes[6];
extern const pmtx_runtime bench_obj_runtimes[5];

/* Cache-line transactions are an object kind, not a pmtx_runtime. */
#define BENCH_RT_CLTX ((pmtx_runtime)100)
/* "pmtx-undo", ..., "pmtx-cltx". */
const char *bench_system_name(pmtx_runtime rt);

/* Create a fresh region for a runner: root_size bytes of root in a region
 * of region_size, default runtime rt (BENCH_RT_CLTX: undo), and fill
 * r->system/domain/backend. path receives the file's name (256 bytes). */
int bench_region(struct runner *r, const struct bench_opts *o,
                 pmtx_runtime rt, struct bench_cfg cfg, size_t root_size,
                 size_t region_size, pmtx_region **out, char *path);
/* bench_region with more options: opt (from pmtx_options_init, with the
 * caller's fields set) takes cfg's domain and backend and rt's runtime,
 * and the region is region_size bytes even when rt is PMTX_RT_TWIN. */
int bench_region_opt(struct runner *r, const struct bench_opts *o,
                     pmtx_runtime rt, struct bench_cfg cfg, pmtx_options *opt,
                     size_t region_size, pmtx_region **out, char *path);
/* Close and remove. */
void bench_region_destroy(pmtx_region *rg, const char *path);
/* The runtime of the untimed setup transactions of a runner whose
 * region bench_region made for rt: undo, except in a twin region, which
 * runs twin transactions only. */
static inline pmtx_runtime bench_setup_rt(pmtx_runtime rt)
{
	return rt == PMTX_RT_TWIN ? PMTX_RT_TWIN : PMTX_RT_UNDO;
}

/* A fresh PMDK pool (PMEM_IS_PMEM_FORCE=1) with a root of root_size; fills
 * r's names (system "pmdk", pdom1, hardware). Returns 0 or PMTX_E_IO. */
struct pmemobjpool;
int bench_pmdk_pool(struct runner *r, const struct bench_opts *o,
                    size_t root_size, size_t pool_size,
                    struct pmemobjpool **out, char *path);
void bench_pmdk_destroy(struct pmemobjpool *pop, const char *path);
/* A runner's region rg or pool pop (either NULL), closed and removed. */
void bench_close(pmtx_region *rg, struct pmemobjpool *pop, const char *path);
/* Run body in one PMDK transaction (TX_BEGIN .. TX_END): 0, or
 * PMTX_E_ABORTED (reported with pmemobj_errormsg) if it aborted. The one
 * place PMDK's setjmp-based macros are used. */
int bench_pmdk_tx(struct pmemobjpool *pop, void (*body)(void *ctx),
                  void *ctx);
/* n of them: stop at, and return, the first failure (the run() of a PMDK
 * runner is usually just this). */
int bench_pmdk_txs(struct pmemobjpool *pop, uint64_t n,
                   void (*body)(void *ctx), void *ctx);
/* PMDK's persistence work so far in the calling thread, counted at its
 * libpmem calls (pmdk_count.c); and whether those calls are being
 * counted. */
void bench_pmdk_counters(uint64_t *flushes, uint64_t *barriers);
int bench_pmdk_counting(void);
/* Fill r's names for the plain floor (system "plain", pdom1, hardware). */
void bench_plain_names(struct runner *r);
/* A region for the plain floor to store in (undo, PDOM-1 hardware), with
 * r's names filled for it: bench_region's arguments otherwise. */
int bench_plain_region(struct runner *r, const struct bench_opts *o,
                       size_t root_size, size_t region_size,
                       pmtx_region **out, char *path);

/* Heap bytes that a pmtx block of n user bytes takes, at most: the size
 * classes are quarter steps (plus a 16-byte header), packed into 64 KiB
 * superblocks; larger blocks are runs of superblocks. */
static inline size_t bench_heap_block(size_t n)
{
	size_t need = n + 16;
	if (need > 32768)
		return (need + 65535) & ~(size_t)65535;
	size_t cls = need < 128 ? (need + 15) & ~(size_t)15 : need * 5 / 4 + 16;
	return 65536 / (65536 / cls);
}

/* A small, fast PRNG (xorshift64*), deterministic from its seed. */
static inline uint64_t bench_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* A workload (main.c's table): its sweep under the options, 0 or a
 * status. */
typedef int bench_workload(const struct bench_opts *o);
bench_workload wl_txn, wl_checksum, wl_array, wl_array_raw, wl_alloc, wl_sps,
	wl_single_obj, wl_multi_obj, wl_hashmap, wl_bbuf, wl_open, wl_costs,
	wl_set, wl_containers, wl_journal_mem;

#endif
