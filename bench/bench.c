/*
 * bench.c - measurement loop and JSON output for pmtx-bench.
 */
#define _GNU_SOURCE
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
	uint64_t batch = 16, ops = 0, t0 = bench_now_ns(), t = t0;
	pmtx_counters_get(&c0);
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
	if (account) {
		r->ops += ops;
		r->ns += t - t0;
		r->barriers += c1.barriers - c0.barriers;
		r->flushes += c1.flushes - c0.flushes;
	}
	return 0;
}

int bench_measure(struct runner *rs, int n, const struct bench_opts *o)
{
	int rounds = o->rounds > 0 ? o->rounds : 3;
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

void bench_emit(const struct runner *r, const char *workload,
                const char *params)
{
	double ns = r->ops ? (double)r->ns / (double)r->ops : 0;
	printf("{\"workload\":\"%s\",\"system\":\"%s\",\"domain\":\"%s\","
	       "\"backend\":\"%s\",\"params\":{%s},\"ns_per_op\":%.2f,"
	       "\"ops_per_s\":%.1f,",
	       workload, r->system, r->domain, r->backend, params, ns,
	       ns > 0 ? 1e9 / ns : 0);
	if (r->has_counters && r->ops)
		printf("\"barriers_per_op\":%.4f,\"flushes_per_op\":%.4f}\n",
		       (double)r->barriers / (double)r->ops,
		       (double)r->flushes / (double)r->ops);
	else
		printf("\"barriers_per_op\":null,\"flushes_per_op\":null}\n");
	fflush(stdout);
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
