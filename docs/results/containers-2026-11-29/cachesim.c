/*
 * cachesim.c - a fixed number of set operations on one pmtx container
 * (cachesim.sh runs it),
 * for per-operation counts that do not depend on the machine's load:
 * run under valgrind's callgrind with --collect-atstart=no, only the
 * measured operations are counted (CALLGRIND_TOGGLE_COLLECT), with its
 * cache simulation (--instr-atstart=no: the warm-up runs simulated, the
 * fill does not); run natively it prints the thread's CPU time per
 * operation.
 *
 *   cachesim map|hmap RT UPDATE_PCT OPS [KEYS [READ_TX]]
 *
 * KEYS (1000000) random keys of [0, 2 KEYS) are inserted (256 per
 * transaction), OPS operations run untimed to warm the caches, then OPS
 * measured ones: a uniform key, an update (half adds with PMTX_HMAP_NX,
 * half deletes, each its own transaction) with probability UPDATE_PCT %,
 * else a lookup (in a transaction of its own if READ_TX, the default),
 * as pmtx-bench set does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include "pmtx.h"
#include "pmtx_containers.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int is_map;
static pmtx_map *map;
static pmtx_hmap *hm;
static pmtx_region *r;
static pmtx_runtime rt;

static int add(pmtx_tx *tx, uint64_t k)
{
	int rc = is_map ? pmtx_map_put(tx, map, &k, 8, &k, 8, PMTX_HMAP_NX, NULL)
	                : pmtx_hmap_put(tx, hm, &k, 8, &k, 8, PMTX_HMAP_NX, NULL);
	return rc == PMTX_E_EXISTS ? 0 : rc;
}

static int del(uint64_t k)
{
	int rc = is_map ? pmtx_map_del(NULL, map, &k, 8)
	                : pmtx_hmap_del(NULL, hm, &k, 8);
	return rc == PMTX_E_NOT_FOUND ? 0 : rc;
}

static int get(pmtx_tx *tx, uint64_t k)
{
	pmtx_bytes v;
	int rc = is_map ? pmtx_map_get(tx, map, &k, 8, &v)
	                : pmtx_hmap_get(tx, hm, &k, 8, &v);
	if (!rc && (v.n != 8 || memcmp(v.p, &k, 8)))
		return -1;
	return rc == PMTX_E_NOT_FOUND ? 0 : rc;
}

static int lookup(uint64_t k, int read_tx)
{
	pmtx_tx *tx;
	if (!read_tx)
		return get(NULL, k);
	int rc = pmtx_begin(r, rt, &tx);
	if (rc)
		return rc;
	if ((rc = get(tx, k))) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}

static int run(long ops, long pct, uint64_t range, int read_tx)
{
	for (long i = 0; i < ops; i++) {
		uint64_t u = next_rand(), k = next_rand() % range;
		int rc = (long)((u >> 8) % 100) >= pct ? lookup(k, read_tx)
		         : (u & 1)                      ? add(NULL, k)
		                                        : del(k);
		if (rc) {
			fprintf(stderr, "op %ld: %s\n", i, pmtx_strerror(rc));
			return rc;
		}
	}
	return 0;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: cachesim map|hmap RT UPDATE_PCT OPS "
		        "[KEYS [READ_TX]]\n");
		return 2;
	}
	is_map = !strcmp(argv[1], "map");
	if (pmtx_runtime_parse(argv[2], &rt))
		return 2;
	long pct = atol(argv[3]), ops = atol(argv[4]);
	uint64_t keys = argc > 5 ? strtoull(argv[5], NULL, 10) : 1000000;
	int read_tx = argc > 6 ? atoi(argv[6]) : 1;
	char path[64];
	snprintf(path, sizeof(path), "/dev/shm/cachesim.%d", (int)getpid());
	pmtx_options o;
	pmtx_options_init(&o);
	o.root_size = 64;
	o.runtime = rt;
	size_t size = (64u << 20) + keys * 112;
	if (rt == PMTX_RT_TWIN)
		size = 2 * size + (1u << 20);
	int rc = pmtx_create(path, size, &o, &r);
	if (rc) {
		fprintf(stderr, "create: %s\n", pmtx_strerror(rc));
		return 1;
	}
	unlink(path);
	pmtx_off *root = pmtx_root(r, NULL), off;
	pmtx_tx *tx;
	pmtx_begin(r, rt == PMTX_RT_TWIN ? rt : PMTX_RT_UNDO, &tx);
	rc = is_map ? pmtx_map_create(tx, PMTX_MAP_U64 | PMTX_MAP_VAL_U64, &off)
	            : pmtx_hmap_create(tx, 0, &off);
	if (!rc)
		rc = PMTX_SET(tx, *root, off);
	if (rc || (rc = pmtx_commit(tx)))
		return 1;
	pmtx_cont_options co;
	pmtx_cont_options_init(&co);
	co.runtime = rt;
	rc = is_map ? pmtx_map_open(r, off, &co, &map)
	            : pmtx_hmap_open(r, off, &co, &hm);
	if (rc)
		return 1;
	uint64_t range = 2 * keys, n = 0;
	while (n < keys) {
		pmtx_begin(r, rt == PMTX_RT_TWIN ? rt : PMTX_RT_UNDO, &tx);
		for (unsigned i = 0; i < 256 && n < keys; i++) {
			uint64_t k = next_rand() % range;
			rc = is_map ? pmtx_map_put(tx, map, &k, 8, &k, 8,
			                           PMTX_HMAP_NX, NULL)
			            : pmtx_hmap_put(tx, hm, &k, 8, &k, 8,
			                            PMTX_HMAP_NX, NULL);
			if (rc && rc != PMTX_E_EXISTS)
				return 1;
			n += rc == 0;
		}
		if ((rc = pmtx_commit(tx)))
			return 1;
	}
	CALLGRIND_START_INSTRUMENTATION;
	if (run(ops, pct, range, read_tx))
		return 1;
	CALLGRIND_TOGGLE_COLLECT;
	uint64_t t0 = cpu_ns();
	rc = run(ops, pct, range, read_tx);
	uint64_t t1 = cpu_ns();
	CALLGRIND_TOGGLE_COLLECT;
	if (rc)
		return 1;
	printf("{\"container\":\"%s\",\"runtime\":\"%s\",\"update_pct\":%ld,"
	       "\"ops\":%ld,\"keys\":%llu,\"read_tx\":%d,\"cpu_ns_per_op\":%.1f}\n",
	       argv[1], argv[2], pct, ops, (unsigned long long)keys, read_tx,
	       (double)(t1 - t0) / (double)ops);
	pmtx_map_close(map);
	pmtx_hmap_close(hm);
	pmtx_close(r);
	return 0;
}
