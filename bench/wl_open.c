/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_open.c - the time to open (and recover) a region, by heap in use and
 * by maximum size: open must cost what the heap in use costs, not what
 * the region may grow to (region.c invariant 4, heap.c H8).
 *
 * For each used size U (--p used_mib=, default 16,256) and maximum M
 * (--p max_gib=, default 0,64,1024; 0 = a region of fixed size U): a
 * region is created (at one superblock when it grows), filled with 1 MiB
 * blocks until U is in use, closed, then opened and closed repeatedly.
 * One op is one pmtx_open + pmtx_close of a cleanly closed region.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define MIB (1ull << 20)

static int fill(pmtx_region *r, uint64_t used)
{
	int rc = 0;
	for (uint64_t n = 0; !rc && n < used / MIB - 1; n++) {
		pmtx_tx *tx;
		pmtx_off off;
		rc = pmtx_begin(r, PMTX_RT_UNDO, &tx);
		if (!rc && (rc = pmtx_alloc(tx, MIB - 4096, &off)))
			pmtx_abort(tx);
		else if (!rc)
			rc = pmtx_commit(tx);
	}
	return rc;
}

static int make(const char *path, uint64_t used, uint64_t max)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.max_size = max;
	pmtx_region *r;
	unlink(path);
	int rc = pmtx_create(path, max ? 1 : used + 16 * MIB, &o, &r);
	if (!rc)
		rc = fill(r, used);
	if (r && !rc)
		rc = pmtx_close(r);
	if (rc)
		fprintf(stderr, "open: %s (%s)\n", pmtx_strerror(rc),
		        pmtx_errmsg());
	return rc;
}

static int measure(const struct bench_opts *o, const char *path,
                   uint64_t used, uint64_t max_gib)
{
	uint64_t n = 0, t0 = bench_now_ns(), t;
	size_t size = 0;
	do {
		pmtx_region *r;
		int rc = pmtx_open(path, NULL, &r);
		if (rc)
			return rc;
		size = pmtx_region_size(r);
		pmtx_close(r);
		n++;
		t = bench_now_ns();
	} while ((double)(t - t0) < o->seconds * 1e9);
	char params[96];
	snprintf(params, sizeof(params),
	         "\"used_mib\":%llu,\"max_gib\":%llu,\"size_mib\":%zu",
	         (unsigned long long)(used / MIB), (unsigned long long)max_gib,
	         (size_t)(size / MIB));
	bench_emit_raw("open", "pmtx", params, (double)(t - t0) / (double)n);
	return 0;
}

int wl_open(const struct bench_opts *o)
{
	long used[8], maxs[8];
	int nu = bench_param(o, "used_mib", "16,256", used, 8);
	int nm = bench_param(o, "max_gib", "0,64,1024", maxs, 8);
	char path[256];
	snprintf(path, sizeof(path), "%s/pmtx-bench-open.pmtx", o->dir);
	for (int i = 0; i < nu; i++)
		for (int j = 0; j < nm; j++) {
			uint64_t u = (uint64_t)used[i] * MIB;
			uint64_t m = (uint64_t)maxs[j];
			int rc = make(path, u, m << 30);
			if (!rc)
				rc = measure(o, path, u, m);
			unlink(path);
			if (rc)
				return rc;
		}
	return 0;
}
