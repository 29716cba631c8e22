/*
 * bench.h - shared parts of pmtx-bench: options, the measurement loop,
 * and the JSON-lines output every workload uses.
 *
 * Output schema (one JSON object per line, stable across workloads):
 *   workload, system, domain, backend, params{...}, ns_per_op, ops_per_s,
 *   barriers_per_op, flushes_per_op   (null where a system has no counters)
 */
#ifndef PMTX_BENCH_H
#define PMTX_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "pmtx.h"

struct bench_opts {
	const char *system;  /* NULL = the workload's default set */
	const char *domain;  /* NULL = all */
	const char *backend; /* NULL = hardware and emulated */
	double seconds;      /* per measurement */
	int rounds;          /* interleaved rounds per measurement */
	long writes, allocs; /* -1 = sweep */
	const char *dir;     /* where pools and regions go */
};

/* One system under test at one point: set up once, then run ops. */
struct runner {
	char system[32], domain[16], backend[16];
	void *ctx;
	/* Run n operations; return 0 or a status. */
	int (*run)(void *ctx, uint64_t n);
	void (*destroy)(void *ctx);
	int has_counters;
	/* accumulated over rounds */
	uint64_t ops, ns, barriers, flushes;
};

uint64_t bench_now_ns(void);
/* Measure the runners interleaved: `rounds` rounds, each giving every
 * runner seconds/rounds of operations, after a short warm-up each. */
int bench_measure(struct runner *rs, int n, const struct bench_opts *o);
/* Print one JSON line for r; params is a JSON object's inside, e.g.
 * "\"writes\":4,\"allocs\":0". */
void bench_emit(const struct runner *r, const char *workload,
                const char *params);
void bench_emit_raw(const char *workload, const char *system,
                    const char *params, double ns_per_op);

/* A fresh region file path in o->dir. */
const char *bench_path(const struct bench_opts *o, const char *tag);

int wl_txn(const struct bench_opts *o);
int wl_checksum(const struct bench_opts *o);

#endif
