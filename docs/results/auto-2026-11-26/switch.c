/*
 * switch.c - what a switch of runtime costs the transactions after it:
 * SPS (k = 2 swaps of a 100,000-word array), PDOM-0 emulated, one thread;
 * runs of redo, redo-async and undo in turn, and the median time of each
 * 32 transactions of a run.
 *
 *   cc -O2 -Iinclude docs/results/auto-2026-11-26/switch.c \
 *      build/libpmtx.a -lpthread -o /tmp/switch && /tmp/switch
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pmtx.h"

#define N 100000
#define PATH "/dev/shm/pmtx-switch.region"

static uint64_t now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int swap2(pmtx_region *r, uint64_t *a, unsigned *seed, pmtx_runtime rt)
{
	pmtx_tx *tx;
	int rc = pmtx_begin(r, rt, &tx);
	for (int k = 0; !rc && k < 2; k++) {
		unsigned x = (unsigned)rand_r(seed) % N;
		unsigned y = (unsigned)rand_r(seed) % N;
		uint64_t vx, vy;
		rc = pmtx_read(tx, &vx, &a[x], 8);
		if (!rc)
			rc = pmtx_read(tx, &vy, &a[y], 8);
		if (!rc)
			rc = PMTX_SET(tx, a[x], vy);
		if (!rc)
			rc = PMTX_SET(tx, a[y], vx);
	}
	return rc ? rc : pmtx_commit(tx);
}

int main(void)
{
	static const struct { pmtx_runtime rt; int n; } runs[] = {
		{PMTX_RT_REDO, 3000}, {PMTX_RT_REDO_ASYNC, 1024},
		{PMTX_RT_REDO, 64}, {PMTX_RT_REDO_ASYNC, 1024},
		{PMTX_RT_UNDO, 64}, {PMTX_RT_REDO_ASYNC, 512},
	};
	pmtx_options o;
	pmtx_options_init(&o);
	o.domain = PMTX_PDOM0;
	o.backend = PMTX_BACKEND_EMULATED;
	o.root_size = N * 8 + 4096;
	unlink(PATH);
	pmtx_region *r;
	if (pmtx_create(PATH, 64 << 20, &o, &r)) {
		fprintf(stderr, "switch: %s\n", pmtx_errmsg());
		return 1;
	}
	uint64_t *a = pmtx_root(r, NULL), t[4096];
	unsigned seed = 1;
	for (size_t p = 0; p < sizeof(runs) / sizeof(*runs); p++) {
		int n = runs[p].n;
		for (int i = 0; i < n; i++) {
			uint64_t t0 = now();
			if (swap2(r, a, &seed, runs[p].rt)) {
				fprintf(stderr, "switch: %s\n", pmtx_errmsg());
				return 1;
			}
			t[i] = now() - t0;
		}
		printf("%s x %d, ns, median of each 32:",
		       pmtx_runtime_name(runs[p].rt), n);
		for (int c = 0; c < n / 32 && c < 16; c++) {
			qsort(t + c * 32, 32, sizeof(*t), cmp);
			printf(" %llu", (unsigned long long)t[c * 32 + 16]);
		}
		printf("\n");
	}
	pmtx_close(r);
	unlink(PATH);
	return 0;
}
