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
	int has_counters;
	/* accumulated over rounds */
	uint64_t ops, ns, barriers, flushes;
	int nrounds;
	double round_ns[BENCH_MAX_ROUNDS]; /* ns per op of each round */
};

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

/* n transactions of runtime rt in r, each running body(ctx, tx): a body
 * failure aborts its transaction and is returned. The run() of a pmtx
 * runner is usually just this. */
int bench_txs(pmtx_region *r, pmtx_runtime rt, uint64_t n,
              int (*body)(void *ctx, pmtx_tx *tx), void *ctx);
/* Call one(ctx) n times; stop at, and return, the first failure. */
int bench_repeat(uint64_t n, int (*one)(void *ctx), void *ctx);

/* A fresh region file path in o->dir. */
const char *bench_path(const struct bench_opts *o, const char *tag);

/* ---- parameters ---- */
/* The values of parameter `name`: from --p name=v1,v2,... if given, else
 * from defaults ("1,2,4"). Returns how many (at most max). */
int bench_param(const struct bench_opts *o, const char *name,
                const char *defaults, long *vals, int max);
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
/* Run body in one PMDK transaction (TX_BEGIN .. TX_END): 0, or
 * PMTX_E_ABORTED (reported with pmemobj_errormsg) if it aborted. The one
 * place PMDK's setjmp-based macros are used. */
int bench_pmdk_tx(struct pmemobjpool *pop, void (*body)(void *ctx),
                  void *ctx);
/* PMDK's persistence work so far, counted at its libpmem calls
 * (pmdk_count.c); and whether those calls are being counted. */
void bench_pmdk_counters(uint64_t *flushes, uint64_t *barriers);
int bench_pmdk_counting(void);
/* Fill r's names for the plain floor (system "plain", pdom1, hardware). */
void bench_plain_names(struct runner *r);

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

int wl_txn(const struct bench_opts *o);
int wl_checksum(const struct bench_opts *o);
int wl_array(const struct bench_opts *o);
int wl_array_raw(const struct bench_opts *o);
int wl_alloc(const struct bench_opts *o);
int wl_sps(const struct bench_opts *o);
int wl_single_obj(const struct bench_opts *o);
int wl_multi_obj(const struct bench_opts *o);
int wl_hashmap(const struct bench_opts *o);
int wl_bbuf(const struct bench_opts *o);
int wl_open(const struct bench_opts *o);
int wl_costs(const struct bench_opts *o);

#endif
