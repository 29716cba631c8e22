/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_containers.c - the `containers` workload: what the crash-safe
 * containers (pmtx_containers.h) cost, in space and in persistence work.
 * Nothing here is interleaved or compared: the counts are exact, and the
 * times are a single pass each, for orientation only.
 *
 * what=memory (one line per container): bytes of heap per entry once a
 * container holds `entries` (1,000,000) entries, beside the raw bytes of
 * a key and its value:
 *   map    the ordered map, PMTX_MAP_U64 | PMTX_MAP_VAL_U64, random
 *          distinct u64 keys inserted one by one (raw: 8 + 8 bytes);
 *   hmap   the hash map, random 16-byte keys, 64-byte values (16 + 64);
 *   list   the list, 16-byte elements pushed at the tail (16).
 * Each is filled in undo transactions of MEM_BATCH operations in a
 * region of its own (PDOM-1 hardware). The bytes are the heap blocks the
 * application owns (pmtx_heap_walk: every block's size class, its 16-byte
 * header included; pmtx's log chunks are not user blocks), after the fill
 * less before it (the empty container's header): bytes_per_entry. Beside
 * it superblock_bytes_per_entry counts the 64 KiB superblocks in use
 * (pmtx_heap_check), so the free room inside partly used superblocks too.
 *
 * what=cost (one line per container, operation and runtime): barriers,
 * flushed lines and logged bytes per operation, from pmtx's counters
 * around `ops` (10000) operations, each its own transaction, under undo,
 * redo, redo-async, twin (a twin region) and auto, on PDOM-1 hardware
 * unless --domain/--backend say otherwise. One region per runtime holds
 * a hash map and an ordered map (8-byte keys and values) of `entries`
 * entries each (default 100000 for this part: --p cost_entries=), a list
 * and a string:
 *   hmap, map  insert (new random keys), lookup (present keys, in a
 *              transaction of its own: pmtx_begin, get, pmtx_commit),
 *              delete (the keys just inserted);
 *   list       push at the tail, pop at the head (16-byte elements, the
 *              list holding 1000 to begin with);
 *   str        append 16 bytes to one string (from empty to ops x 16
 *              bytes: the moves to a block of twice the size included).
 * The container's own operations run with tx NULL (a transaction of the
 * handle's runtime, begun inside the operation: under auto, each
 * operation is its own call site); the string's, which has no handle, in
 * pmtx_begin(rt) .. pmtx_commit.
 *
 * Validation: every operation must succeed as expected (inserts of new
 * keys, lookups and deletes of present ones, pops of what was pushed),
 * the containers' lengths must match, and pmtx_heap_check must pass.
 *
 * Parameters (--p): what (memory,cost), entries (1000000),
 * cost_entries (100000), ops (10000), seed (1).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "pmtx_containers.h"

#define MEM_BATCH 1000    /* fill operations per transaction */
#define LIST_START 1000   /* elements of the list before the cost ops */
#define ELEM 16           /* bytes of a list element, a str append */

struct ct_root {
	pmtx_off hmap, map, list;
	pmtx_str str;
};

struct ct_plan {
	long entries, cost_entries, ops;
	uint64_t seed;
};

/* ---- the heap's bytes ---- */

static int sum_block(pmtx_off off, size_t usable, void *arg)
{
	(void)off;
	*(uint64_t *)arg += usable + 16; /* the object header */
	return 0;
}

struct heap_use {
	uint64_t blocks; /* bytes of the user's blocks */
	uint64_t sbs;    /* superblocks in use */
};

static int heap_use(pmtx_region *r, struct heap_use *u)
{
	pmtx_heap_stats st;
	*u = (struct heap_use){0, 0};
	if (pmtx_heap_check(r, &st)) {
		fprintf(stderr, "containers: heap check: %s\n", st.first_error);
		return PMTX_E_CORRUPT;
	}
	u->sbs = st.superblocks - st.free_superblocks;
	return pmtx_heap_walk(r, sum_block, &u->blocks);
}

/* ---- a region and its containers ---- */

struct ct {
	pmtx_region *r;
	pmtx_runtime rt;
	char path[256];
	struct ct_root *root;
	pmtx_hmap *hm;
	pmtx_map *map;
	pmtx_list *list;
	uint64_t rng;
};

static void ct_close(struct ct *c)
{
	pmtx_hmap_close(c->hm);
	pmtx_map_close(c->map);
	pmtx_list_close(c->list);
	if (c->r)
		bench_region_destroy(c->r, c->path);
}

/* Create the containers in one setup transaction and open them. */
static int ct_create(struct ct *c)
{
	pmtx_tx *tx;
	struct ct_root *rt = c->root = pmtx_root(c->r, NULL);
	pmtx_off h = 0, m = 0, l = 0;
	int rc = pmtx_begin(c->r, bench_setup_rt(c->rt), &tx);
	if (rc)
		return rc;
	if ((rc = pmtx_hmap_create(tx, 0, &h)) ||
	    (rc = pmtx_map_create(tx, PMTX_MAP_U64 | PMTX_MAP_VAL_U64, &m)) ||
	    (rc = pmtx_list_create(tx, &l)) ||
	    (rc = PMTX_SET(tx, rt->hmap, h)) ||
	    (rc = PMTX_SET(tx, rt->map, m)) ||
	    (rc = PMTX_SET(tx, rt->list, l))) {
		pmtx_abort(tx);
		return rc;
	}
	if ((rc = pmtx_commit(tx)))
		return rc;
	pmtx_cont_options co;
	pmtx_cont_options_init(&co);
	co.runtime = c->rt;
	if (!(rc = pmtx_hmap_open(c->r, rt->hmap, &co, &c->hm)) &&
	    !(rc = pmtx_map_open(c->r, rt->map, &co, &c->map)))
		rc = pmtx_list_open(c->r, rt->list, &co, &c->list);
	return rc;
}

static int ct_open(struct ct *c, const struct bench_opts *o, pmtx_runtime rt,
                   struct bench_cfg cfg, size_t bytes, struct runner *names)
{
	*c = (struct ct){.rt = rt};
	int rc = bench_region(names, o, rt, cfg, sizeof(struct ct_root), bytes,
	                      &c->r, c->path);
	return rc ? rc : ct_create(c);
}

/* ---- filling, in setup transactions ---- */

enum fill_what { FILL_MAP, FILL_HMAP_U64, FILL_HMAP_WIDE, FILL_LIST };

struct fill {
	struct ct *c;
	enum fill_what what;
	uint64_t *keys; /* FILL_MAP, FILL_HMAP_U64: the keys, recorded */
};

static int fill_one(void *arg, pmtx_tx *tx, uint64_t i)
{
	struct fill *f = arg;
	struct ct *c = f->c;
	uint64_t k[2] = {bench_rand(&c->rng), bench_rand(&c->rng)};
	unsigned char v[64];
	switch (f->what) {
	case FILL_LIST:
		return pmtx_list_push(tx, c->list, PMTX_LIST_TAIL, k, ELEM);
	case FILL_HMAP_WIDE:
		memset(v, (int)(k[0] & 0xff), sizeof(v));
		return pmtx_hmap_put(tx, c->hm, k, 16, v, 64, PMTX_HMAP_NX,
		                     NULL);
	case FILL_HMAP_U64:
		f->keys[i] = k[0];
		return pmtx_hmap_put(tx, c->hm, k, 8, k, 8, PMTX_HMAP_NX, NULL);
	default:
		f->keys[i] = k[0];
		return pmtx_map_put(tx, c->map, k, 8, k, 8, PMTX_HMAP_NX, NULL);
	}
}

static int fill(struct ct *c, enum fill_what what, long n, uint64_t *keys)
{
	struct fill f = {c, what, keys};
	return bench_setup_txs(c->r, bench_setup_rt(c->rt), (uint64_t)n,
	                       MEM_BATCH, fill_one, &f);
}

/* ---- what=memory ---- */

struct mem_kind {
	const char *name;
	enum fill_what what;
	int key, value;  /* raw bytes */
	size_t per;      /* region bytes per entry to reserve */
};

static const struct mem_kind mem_kinds[] = {
	{"map", FILL_MAP, 8, 8, 96},
	{"hmap", FILL_HMAP_WIDE, 16, 64, 192},
	{"list", FILL_LIST, 16, 0, 64},
};

static int len_of(struct ct *c, enum fill_what what, uint64_t *n)
{
	return what == FILL_MAP    ? pmtx_map_len(NULL, c->map, n)
	       : what == FILL_LIST ? pmtx_list_len(NULL, c->list, n)
	                           : pmtx_hmap_len(NULL, c->hm, n);
}

static void mem_emit(const struct mem_kind *k, const struct ct_plan *pl,
                     const struct heap_use *a, const struct heap_use *b,
                     double fill_s)
{
	double n = (double)pl->entries;
	double per = (double)(b->blocks - a->blocks) / n;
	double sb = (double)(b->sbs - a->sbs) * 65536.0 / n;
	int raw = k->key + k->value;
	printf("{\"workload\":\"containers\",\"what\":\"memory\","
	       "\"container\":\"%s\",\"system\":\"pmtx-%s\",\"domain\":"
	       "\"pdom1\",\"backend\":\"hardware\",\"params\":{\"entries\":%ld,"
	       "\"seed\":%llu},\"entries\":%ld,\"key_bytes\":%d,"
	       "\"value_bytes\":%d,\"raw_bytes_per_entry\":%d,"
	       "\"bytes_per_entry\":%.3f,\"overhead_per_entry\":%.3f,"
	       "\"superblock_bytes_per_entry\":%.3f,\"fill_s\":%.3f}\n",
	       k->name, k->name, pl->entries, (unsigned long long)pl->seed,
	       pl->entries, k->key, k->value, raw, per, per - raw, sb, fill_s);
	fflush(stdout);
}

static int mem_one(const struct bench_opts *o, const struct ct_plan *pl,
                   const struct mem_kind *k)
{
	struct ct c = {.r = NULL};
	struct runner names;
	struct bench_cfg cfg = {PMTX_PDOM1, PMTX_BACKEND_HARDWARE};
	struct heap_use a, b;
	uint64_t *keys = malloc((size_t)pl->entries * sizeof(uint64_t)), n = 0;
	int rc = keys ? ct_open(&c, o, PMTX_RT_UNDO, cfg,
	                        (64u << 20) + (size_t)pl->entries * k->per,
	                        &names)
	              : ENOMEM;
	c.rng = pl->seed ^ 0x2545f4914f6cdd1dull;
	uint64_t t0 = bench_now_ns();
	if (!rc && !(rc = heap_use(c.r, &a)) &&
	    !(rc = fill(&c, k->what, pl->entries, keys)) &&
	    !(rc = heap_use(c.r, &b)) && !(rc = len_of(&c, k->what, &n)) &&
	    n != (uint64_t)pl->entries) {
		fprintf(stderr, "containers: %s holds %llu of %ld entries\n",
		        k->name, (unsigned long long)n, pl->entries);
		rc = PMTX_E_CORRUPT;
	}
	if (!rc)
		mem_emit(k, pl, &a, &b, (double)(bench_now_ns() - t0) / 1e9);
	ct_close(&c);
	free(keys);
	return rc;
}

/* ---- what=cost ---- */

struct cost_acc {
	pmtx_counters c0;
	uint64_t t0;
};

static void cost_begin(struct cost_acc *a)
{
	pmtx_counters_get(&a->c0);
	a->t0 = bench_now_ns();
}

static void cost_emit(struct cost_acc *a, const struct ct *c,
                      const struct runner *names, const struct ct_plan *pl,
                      const char *container, const char *op, long n)
{
	pmtx_counters c1;
	uint64_t ns = bench_now_ns() - a->t0;
	pmtx_counters_get(&c1);
	double d = (double)n;
	printf("{\"workload\":\"containers\",\"what\":\"cost\","
	       "\"container\":\"%s\",\"op\":\"%s\",\"system\":\"pmtx-%s-%s\","
	       "\"runtime\":\"%s\",\"domain\":\"%s\",\"backend\":\"%s\","
	       "\"params\":{\"cost_entries\":%ld,\"ops\":%ld,\"seed\":%llu},"
	       "\"n\":%ld,\"ns_per_op\":%.3f,\"ops_per_s\":%.1f,"
	       "\"barriers_per_op\":%.4f,\"flushes_per_op\":%.4f,"
	       "\"bytes_logged_per_op\":%.2f,\"nt_bytes_per_op\":%.2f}\n",
	       container, op, container, pmtx_runtime_name(c->rt),
	       pmtx_runtime_name(c->rt), names->domain, names->backend,
	       pl->cost_entries, pl->ops, (unsigned long long)pl->seed, n,
	       (double)ns / d, ns ? 1e9 * d / (double)ns : 0,
	       (double)(c1.barriers - a->c0.barriers) / d,
	       (double)(c1.flushes - a->c0.flushes) / d,
	       (double)(c1.bytes_logged - a->c0.bytes_logged) / d,
	       (double)(c1.nt_bytes - a->c0.nt_bytes) / d);
	fflush(stdout);
}

static int cost_fail(const char *what, int rc)
{
	fprintf(stderr, "containers: %s: %s\n", what, pmtx_strerror(rc));
	return rc ? rc : PMTX_E_CORRUPT;
}

/* A lookup in a transaction of its own. */
static int lookup_tx(struct ct *c, int map, uint64_t k)
{
	pmtx_tx *tx;
	pmtx_bytes v;
	int rc = pmtx_begin(c->r, c->rt, &tx);
	if (rc)
		return rc;
	rc = map ? pmtx_map_get(tx, c->map, &k, 8, &v)
	         : pmtx_hmap_get(tx, c->hm, &k, 8, &v);
	if (!rc && (v.n != 8 || memcmp(v.p, &k, 8)))
		rc = PMTX_E_CORRUPT;
	return bench_tx_end(tx, rc);
}

/* Insert, look up and delete pl->ops keys of the map (map 1) or the
 * hash map. */
static int cost_kv(struct ct *c, const struct runner *names,
                   const struct ct_plan *pl, int map)
{
	const char *name = map ? "map" : "hmap";
	uint64_t *keys = malloc((size_t)pl->ops * sizeof(uint64_t));
	struct cost_acc a;
	int rc = keys ? 0 : ENOMEM;
	for (long i = 0; !rc && i < pl->ops; i++)
		keys[i] = bench_rand(&c->rng);
	cost_begin(&a);
	for (long i = 0; !rc && i < pl->ops; i++)
		rc = map ? pmtx_map_put(NULL, c->map, &keys[i], 8, &keys[i], 8,
		                        PMTX_HMAP_NX, NULL)
		         : pmtx_hmap_put(NULL, c->hm, &keys[i], 8, &keys[i], 8,
		                         PMTX_HMAP_NX, NULL);
	if (!rc)
		cost_emit(&a, c, names, pl, name, "insert", pl->ops);
	cost_begin(&a);
	for (long i = 0; !rc && i < pl->ops; i++)
		rc = lookup_tx(c, map, keys[i]);
	if (!rc)
		cost_emit(&a, c, names, pl, name, "lookup", pl->ops);
	cost_begin(&a);
	for (long i = 0; !rc && i < pl->ops; i++)
		rc = map ? pmtx_map_del(NULL, c->map, &keys[i], 8)
		         : pmtx_hmap_del(NULL, c->hm, &keys[i], 8);
	if (!rc)
		cost_emit(&a, c, names, pl, name, "delete", pl->ops);
	free(keys);
	return rc ? cost_fail(name, rc) : 0;
}

static int cost_list(struct ct *c, const struct runner *names,
                     const struct ct_plan *pl)
{
	struct cost_acc a;
	int rc = 0;
	cost_begin(&a);
	for (long i = 0; !rc && i < pl->ops; i++) {
		uint64_t e[2] = {(uint64_t)i, ~(uint64_t)i};
		rc = pmtx_list_push(NULL, c->list, PMTX_LIST_TAIL, e, ELEM);
	}
	if (!rc)
		cost_emit(&a, c, names, pl, "list", "push", pl->ops);
	cost_begin(&a);
	for (long i = 0; !rc && i < pl->ops; i++) {
		unsigned char buf[ELEM];
		size_t n;
		rc = pmtx_list_pop(NULL, c->list, PMTX_LIST_HEAD, buf, ELEM,
		                   &n);
		if (!rc && n != ELEM)
			rc = PMTX_E_CORRUPT;
	}
	if (!rc)
		cost_emit(&a, c, names, pl, "list", "pop", pl->ops);
	return rc ? cost_fail("list", rc) : 0;
}

/* One append in a transaction of its own. */
static int append_tx(struct ct *c, const void *p)
{
	pmtx_tx *tx;
	int rc = pmtx_begin(c->r, c->rt, &tx);
	if (rc)
		return rc;
	return bench_tx_end(tx, pmtx_str_append(c->r, tx, &c->root->str, p,
	                                        ELEM));
}

static int cost_str(struct ct *c, const struct runner *names,
                    const struct ct_plan *pl)
{
	struct cost_acc a;
	int rc = 0;
	size_t len = 0;
	cost_begin(&a);
	for (long i = 0; !rc && i < pl->ops; i++) {
		uint64_t e[2] = {(uint64_t)i, (uint64_t)i};
		rc = append_tx(c, e);
	}
	if (!rc)
		cost_emit(&a, c, names, pl, "str", "append", pl->ops);
	if (!rc && !(rc = pmtx_str_len(c->r, NULL, &c->root->str, &len)) &&
	    len != (size_t)pl->ops * ELEM)
		rc = PMTX_E_CORRUPT;
	return rc ? cost_fail("str", rc) : 0;
}

/* The lengths after the cost operations, and the heap. */
static int cost_check(struct ct *c, const struct ct_plan *pl)
{
	uint64_t h = 0, m = 0, l = 0;
	struct heap_use u;
	int rc = pmtx_hmap_len(NULL, c->hm, &h);
	if (!rc)
		rc = pmtx_map_len(NULL, c->map, &m);
	if (!rc)
		rc = pmtx_list_len(NULL, c->list, &l);
	if (!rc && (h != (uint64_t)pl->cost_entries ||
	            m != (uint64_t)pl->cost_entries || l != LIST_START))
		rc = PMTX_E_CORRUPT;
	if (!rc)
		rc = heap_use(c->r, &u);
	return rc ? cost_fail("lengths after the operations", rc) : 0;
}

static int cost_runtime(const struct bench_opts *o, const struct ct_plan *pl,
                        pmtx_runtime rt, struct bench_cfg cfg)
{
	struct ct c;
	struct runner names;
	size_t bytes = (64u << 20) +
	               (size_t)(pl->cost_entries + pl->ops) * 224 +
	               (size_t)pl->ops * ELEM * 4;
	int rc = ct_open(&c, o, rt, cfg, bytes, &names);
	c.rng = pl->seed ^ 0x9e3779b97f4a7c15ull;
	uint64_t *keys = malloc((size_t)pl->cost_entries * sizeof(uint64_t));
	if (!rc && !keys)
		rc = ENOMEM;
	if (!rc && !(rc = fill(&c, FILL_HMAP_U64, pl->cost_entries, keys)) &&
	    !(rc = fill(&c, FILL_MAP, pl->cost_entries, keys)))
		rc = fill(&c, FILL_LIST, LIST_START, NULL);
	if (!rc && !(rc = cost_kv(&c, &names, pl, 0)) &&
	    !(rc = cost_kv(&c, &names, pl, 1)) &&
	    !(rc = cost_list(&c, &names, pl)) &&
	    !(rc = cost_str(&c, &names, pl)))
		rc = cost_check(&c, pl);
	free(keys);
	ct_close(&c);
	return rc;
}

static const pmtx_runtime ct_rts[] = {
	PMTX_RT_UNDO, PMTX_RT_REDO, PMTX_RT_REDO_ASYNC, PMTX_RT_TWIN,
	PMTX_RT_AUTO,
};

static int cost_all(const struct bench_opts *o, const struct ct_plan *pl)
{
	struct bench_opts hw = *o; /* PDOM-1 hardware unless asked */
	struct bench_cfg cfgs[8];
	if (!o->domain && !o->backend)
		hw.domain = "pdom1", hw.backend = "hardware";
	int ncfg = bench_configs(&hw, cfgs, 8), rc = 0;
	for (size_t k = 0; !rc && k < sizeof(ct_rts) / sizeof(*ct_rts); k++)
		for (int i = 0; !rc && i < ncfg; i++)
			if (bench_want(o, bench_system_name(ct_rts[k])))
				rc = cost_runtime(o, pl, ct_rts[k], cfgs[i]);
	return rc;
}

int wl_containers(const struct bench_opts *o)
{
	static const char *const systems[] = {"pmtx-undo", "pmtx-redo",
	                                      "pmtx-redo-async", "pmtx-twin",
	                                      "pmtx-auto", NULL};
	struct ct_plan pl = {
		.entries = bench_param1(o, "entries", 1000000),
		.cost_entries = bench_param1(o, "cost_entries", 100000),
		.ops = bench_param1(o, "ops", 10000),
		.seed = (uint64_t)bench_param1(o, "seed", 1),
	};
	const char *what = "memory,cost";
	for (int i = 0; i < o->nparams; i++)
		if (!strncmp(o->params[i], "what=", 5))
			what = o->params[i] + 5;
	if (bench_check_systems(o, "containers", systems))
		return PMTX_E_INVAL;
	if (pl.entries < 1 || pl.cost_entries < 1 || pl.ops < 1 ||
	    (!strstr(what, "memory") && !strstr(what, "cost"))) {
		fprintf(stderr, "containers: need entries, cost_entries, ops "
		        ">= 1 and what = memory and/or cost\n");
		return PMTX_E_INVAL;
	}
	int rc = 0;
	for (size_t k = 0; !rc && strstr(what, "memory") &&
	                   k < sizeof(mem_kinds) / sizeof(*mem_kinds); k++)
		rc = mem_one(o, &pl, &mem_kinds[k]);
	if (!rc && strstr(what, "cost"))
		rc = cost_all(o, &pl);
	return rc;
}
