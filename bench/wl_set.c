/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_set.c - the `set` workload: the set benchmark of the PTM papers
 * (Romulus, OneFile, Trinity and Quadra's "sets"): a set of 64-bit keys,
 * a mix of lookups and updates, each operation one transaction, one
 * thread.
 *
 * The set holds `keys` (1,000,000) keys drawn from [0, `range`) (range
 * 2 x keys): before measuring, random keys are inserted until `keys` are
 * present (untimed, SET_BATCH inserts per transaction; every runner gets
 * the same keys in the same order). An operation draws a key uniformly
 * from the range; with probability update_pct % it is an update, half
 * adds and half removes (so the set stays near `keys` present), else a
 * lookup. An add of a present key and a remove of an absent one are
 * still operations (and transactions that write nothing). Every
 * operation counts once in ops_per_s. update_pct is swept inside one
 * invocation (default 100,10,1) on the same runners, which are built
 * once: each ratio is measured with bench_measure, every system's rounds
 * interleaved.
 *
 * Lookups run in a transaction of their own too (read_tx 1, the
 * default: pmtx_begin, the container's get in it, pmtx_commit; TX_BEGIN
 * .. TX_END around PMDK's lookup), as the PTM papers' read transactions
 * do; read_tx 0 reads the committed state with no transaction (the
 * containers' tx NULL reads; plain loads for PMDK).
 *
 * Systems (PDOM-1 hardware by default: --domain/--backend choose other
 * configurations for pmtx's; PMDK runs on PDOM-1 hardware only)
 *   pmtx-map-RT    the ordered map (pmtx_map, PMTX_MAP_U64 |
 *                  PMTX_MAP_VAL_U64: a B+tree, value = key);
 *   pmtx-hmap-RT   the hash map (pmtx_hmap, 8-byte keys and values);
 *       RT = undo, redo, redo-async, twin (a twin region) or auto. An
 *       update is the container's put (PMTX_HMAP_NX) or del with tx NULL:
 *       the operation begins and commits its own transaction with the
 *       handle's runtime (pmtx_cont_options.runtime).
 *   pmdk-btree     a B-tree of order 8 on libpmemobj (pmdk_set.c);
 *   pmdk-hmap      a chained hash map of 2^ceil(log2 keys) buckets
 *                  (pmdk_set.c); each operation in bench_pmdk_tx.
 *
 * Counters. barriers_per_op and flushes_per_op are those of the whole
 * mix (pmtx's counters; PMDK's counted at its libpmem calls,
 * pmdk_count.c). Per kind of operation, an untimed pass first runs
 * `split` (20000) updates and then `split` lookups on each runner and
 * reads the counters around each: update_* and lookup_*_per_op.
 *
 * CPU time. cpu_ns_per_op is this thread's CPU time (CLOCK_THREAD_
 * CPUTIME_ID) per operation over the ratio's warm-up and rounds, and
 * cpu_ops_per_s its inverse: on a machine that other work shares, the
 * time the thread was not running is left out of it (the time its caches
 * lost to that work is not).
 *
 * Validation. Each runner keeps the set in DRAM (a bitmap of the range)
 * and checks every operation's answer against it (an add must add
 * exactly when the key was absent, a lookup must find exactly the
 * present keys, with value = key). check() walks the whole structure
 * (the map's cursor in key order, the hash map's scan, PMDK's trees
 * with their shape checked) against the bitmap and the count, and runs
 * pmtx_heap_check. corrupt() (--inject-fault) removes one present key
 * behind the bitmap's back.
 *
 * Parameters (--p): keys (1000000), range (2 x keys), update_pct
 * (sweep, "100,10,1"), read_tx (1), split (20000), seed (1).
 */
#include <libpmemobj.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "pmdk_set.h"
#include "pmtx_containers.h"

#define SET_BATCH 256    /* prefill inserts per transaction */
#define SET_MAX_RATIOS 16

enum set_kind { SET_MAP, SET_HMAP, SET_PBTREE, SET_PHMAP };
enum { COST_UPDATE, COST_LOOKUP };

struct set_plan {
	uint64_t keys, range, seed;
	int read_tx;
	long split;        /* operations of each kind in the cost pass */
	long upd_pct;      /* the ratio being measured */
	uint64_t *prefill; /* the keys inserted before measuring, in order */
	uint64_t *bits0;   /* the set they make: bit k = key k present */
};

struct set_root { /* pmtx: the region's root */
	pmtx_off cont;
};

struct set_cost {
	uint64_t n, barriers, flushes;
};

struct set_ctx {
	const struct set_plan *pl;
	enum set_kind kind;
	pmtx_runtime rt;
	pmtx_region *r;
	PMEMobjpool *pop;
	char path[256];
	pmtx_map *map;
	pmtx_hmap *hm;
	struct pb_root *pb; /* pmdk-btree: the pool's root */
	struct ph_root *ph; /* pmdk-hmap */
	uint64_t *bits;     /* the model */
	uint64_t count;     /* keys present, by the model */
	uint64_t rng;
	struct set_cost cost[2];
	uint64_t cpu_ns, cpu_ops; /* this thread's CPU time in set_run */
};

static int bit(const uint64_t *b, uint64_t k)
{
	return (int)((b[k / 64] >> (k % 64)) & 1);
}

static void set_bit(uint64_t *b, uint64_t k, int v)
{
	if (v)
		b[k / 64] |= 1ull << (k % 64);
	else
		b[k / 64] &= ~(1ull << (k % 64));
}

static int set_fail(const struct set_ctx *c, const char *what, uint64_t k)
{
	(void)c;
	fprintf(stderr, "set: %s (key %llu)\n", what, (unsigned long long)k);
	return PMTX_E_CORRUPT;
}

/* ---- pmtx's containers ---- */

static int pm_add(struct set_ctx *c, pmtx_tx *tx, uint64_t k, int *added)
{
	int rc = c->kind == SET_MAP
	                 ? pmtx_map_put(tx, c->map, &k, 8, &k, 8, PMTX_HMAP_NX,
	                                NULL)
	                 : pmtx_hmap_put(tx, c->hm, &k, 8, &k, 8,
	                                 PMTX_HMAP_NX, NULL);
	*added = rc == 0;
	return rc == PMTX_E_EXISTS ? 0 : rc;
}

static int pm_remove(struct set_ctx *c, uint64_t k, int *removed)
{
	int rc = c->kind == SET_MAP ? pmtx_map_del(NULL, c->map, &k, 8)
	                            : pmtx_hmap_del(NULL, c->hm, &k, 8);
	*removed = rc == 0;
	return rc == PMTX_E_NOT_FOUND ? 0 : rc;
}

static int pm_get(struct set_ctx *c, pmtx_tx *tx, uint64_t k, int *found)
{
	pmtx_bytes v;
	int rc = c->kind == SET_MAP ? pmtx_map_get(tx, c->map, &k, 8, &v)
	                            : pmtx_hmap_get(tx, c->hm, &k, 8, &v);
	*found = rc == 0;
	if (!rc && (v.n != 8 || memcmp(v.p, &k, 8)))
		return set_fail(c, "value is not the key", k);
	return rc == PMTX_E_NOT_FOUND ? 0 : rc;
}

static int pm_lookup(struct set_ctx *c, uint64_t k, int *found)
{
	pmtx_tx *tx;
	if (!c->pl->read_tx)
		return pm_get(c, NULL, k, found);
	int rc = pmtx_begin(c->r, c->rt, &tx);
	if (rc)
		return rc;
	return bench_tx_end(tx, pm_get(c, tx, k, found));
}

/* ---- PMDK's ---- */

enum pd_what { PD_ADD, PD_REMOVE, PD_LOOKUP };

struct pd_op {
	struct set_ctx *c;
	enum pd_what what;
	uint64_t key;
	int result;
};

static void pd_body(void *arg)
{
	struct pd_op *p = arg;
	const struct set_ctx *c = p->c;
	int bt = c->kind == SET_PBTREE;
	switch (p->what) {
	case PD_ADD:
		p->result = bt ? pb_add(c->pb, p->key) : ph_add(c->ph, p->key);
		break;
	case PD_REMOVE:
		p->result = bt ? pb_remove(c->pb, p->key)
		               : ph_remove(c->ph, p->key);
		break;
	default:
		p->result = bt ? pb_contains(c->pb, p->key)
		               : ph_contains(c->ph, p->key);
	}
}

static int pd_do(struct set_ctx *c, enum pd_what what, uint64_t k,
                 int *result)
{
	struct pd_op p = {c, what, k, 0};
	int rc = 0;
	if (what == PD_LOOKUP && !c->pl->read_tx)
		pd_body(&p);
	else
		rc = bench_pmdk_tx(c->pop, pd_body, &p);
	*result = p.result;
	return rc;
}

/* ---- the operation ---- */

/* One operation on key k (what: PD_*), checked against the model. */
static int set_op(struct set_ctx *c, enum pd_what what, uint64_t k)
{
	int res, rc, pmdk = c->kind == SET_PBTREE || c->kind == SET_PHMAP;
	if (pmdk)
		rc = pd_do(c, what, k, &res);
	else if (what == PD_ADD)
		rc = pm_add(c, NULL, k, &res);
	else if (what == PD_REMOVE)
		rc = pm_remove(c, k, &res);
	else
		rc = pm_lookup(c, k, &res);
	if (rc)
		return rc;
	int had = bit(c->bits, k);
	if (what == PD_LOOKUP && res != had)
		return set_fail(c, had ? "present key not found"
		                       : "absent key found", k);
	if (what == PD_LOOKUP)
		return 0;
	if (res != (what == PD_ADD ? !had : had))
		return set_fail(c, what == PD_ADD ? "add disagrees with the set"
		                : "remove disagrees with the set", k);
	if (res) {
		set_bit(c->bits, k, what == PD_ADD);
		c->count += what == PD_ADD ? 1 : (uint64_t)-1;
	}
	return 0;
}

/* The next operation of the mix at update_pct. */
static int set_step(struct set_ctx *c, long upd_pct)
{
	uint64_t u = bench_rand(&c->rng);
	uint64_t k = bench_rand(&c->rng) % c->pl->range;
	enum pd_what what = (long)((u >> 8) % 100) >= upd_pct ? PD_LOOKUP
	                    : (u & 1)                          ? PD_ADD
	                                                       : PD_REMOVE;
	return set_op(c, what, k);
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int set_run(void *vctx, uint64_t n)
{
	struct set_ctx *c = vctx;
	uint64_t t0 = thread_cpu_ns();
	int rc = 0;
	for (uint64_t i = 0; !rc && i < n; i++)
		rc = set_step(c, c->pl->upd_pct);
	c->cpu_ns += thread_cpu_ns() - t0;
	c->cpu_ops += n;
	return rc;
}

/* ---- the cost pass: counters per kind of operation ---- */

static void counters_now(uint64_t *barriers, uint64_t *flushes)
{
	pmtx_counters pc;
	uint64_t pf, pb;
	pmtx_counters_get(&pc);
	bench_pmdk_counters(&pf, &pb);
	*barriers = pc.barriers + pb;
	*flushes = pc.flushes + pf;
}

static int cost_pass(struct set_ctx *c)
{
	for (long i = 0; i < 2 * c->pl->split; i++) {
		int kind = i < c->pl->split ? COST_UPDATE : COST_LOOKUP;
		uint64_t b0, f0, b1, f1;
		counters_now(&b0, &f0);
		int rc = set_step(c, kind == COST_UPDATE ? 100 : 0);
		counters_now(&b1, &f1);
		if (rc)
			return rc;
		c->cost[kind].n++;
		c->cost[kind].barriers += b1 - b0;
		c->cost[kind].flushes += f1 - f0;
	}
	return 0;
}

/* ---- validation ---- */

struct audit {
	struct set_ctx *c;
	uint64_t *seen;
	uint64_t n, last;
};

static int audit_key(uint64_t k, uint64_t v, void *arg)
{
	struct audit *a = arg;
	struct set_ctx *c = a->c;
	if (k >= c->pl->range || !bit(c->bits, k))
		return set_fail(c, "key in the structure, not in the set", k);
	if (v != k)
		return set_fail(c, "value is not the key", k);
	if (bit(a->seen, k))
		return set_fail(c, "key met twice", k);
	if ((c->kind == SET_MAP || c->kind == SET_PBTREE) && a->n &&
	    k <= a->last)
		return set_fail(c, "keys out of order", k);
	set_bit(a->seen, k, 1);
	a->last = k;
	a->n++;
	return 0;
}

static int audit_bytes(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	uint64_t kk, vv;
	if (k->n != 8 || v->n != 8)
		return set_fail(((struct audit *)arg)->c, "entry not 8 + 8 "
		                "bytes", 0);
	memcpy(&kk, k->p, 8);
	memcpy(&vv, v->p, 8);
	return audit_key(kk, vv, arg);
}

static int walk_map(struct set_ctx *c, struct audit *a)
{
	pmtx_map_cursor cur;
	int rc = pmtx_map_seek(NULL, c->map, PMTX_SEEK_FIRST, NULL, 0, &cur);
	for (; !rc; rc = pmtx_map_next(&cur)) {
		pmtx_bytes k, v;
		if ((rc = pmtx_map_cursor_get(&cur, &k, &v)) ||
		    (rc = audit_bytes(&k, &v, a)))
			return rc;
	}
	return rc == PMTX_E_NOT_FOUND ? 0 : rc;
}

static int walk_hmap(struct set_ctx *c, struct audit *a)
{
	uint64_t cursor = 0;
	do {
		int rc = pmtx_hmap_scan(NULL, c->hm, cursor, 4096, audit_bytes,
		                        a, &cursor);
		if (rc)
			return rc;
	} while (cursor);
	return 0;
}

static int walk(struct set_ctx *c, struct audit *a)
{
	switch (c->kind) {
	case SET_MAP: return walk_map(c, a);
	case SET_HMAP: return walk_hmap(c, a);
	case SET_PBTREE:
		return pb_walk(c->pb, audit_key, a) ? PMTX_E_CORRUPT : 0;
	default:
		return ph_walk(c->ph, audit_key, a) ? PMTX_E_CORRUPT : 0;
	}
}

static int len_ok(struct set_ctx *c)
{
	uint64_t n = c->count;
	int rc = c->kind == SET_MAP    ? pmtx_map_len(NULL, c->map, &n)
	         : c->kind == SET_HMAP ? pmtx_hmap_len(NULL, c->hm, &n)
	                               : 0;
	if (!rc && n != c->count)
		return set_fail(c, "the container's length is not the set's",
		                n);
	return rc;
}

static int set_check(void *vctx)
{
	struct set_ctx *c = vctx;
	struct audit a = {c, calloc(c->pl->range / 64 + 1, 8), 0, 0};
	if (!a.seen)
		return ENOMEM;
	int rc = walk(c, &a);
	if (!rc && a.n != c->count) {
		fprintf(stderr, "set: %llu keys in the structure, %llu in the "
		        "set\n", (unsigned long long)a.n,
		        (unsigned long long)c->count);
		rc = PMTX_E_CORRUPT;
	}
	free(a.seen);
	if (!rc)
		rc = len_ok(c);
	pmtx_heap_stats st;
	if (!rc && c->r && pmtx_heap_check(c->r, &st)) {
		fprintf(stderr, "set: heap check: %s\n", st.first_error);
		rc = PMTX_E_CORRUPT;
	}
	return rc;
}

/* Remove the smallest present key behind the model's back. */
static void set_corrupt(void *vctx)
{
	struct set_ctx *c = vctx;
	uint64_t k = 0;
	while (k < c->pl->range && !bit(c->bits, k))
		k++;
	int res;
	if (c->kind == SET_PBTREE || c->kind == SET_PHMAP)
		pd_do(c, PD_REMOVE, k, &res);
	else
		pm_remove(c, k, &res);
}

/* ---- setup ---- */

static void set_destroy(void *vctx)
{
	struct set_ctx *c = vctx;
	pmtx_map_close(c->map);
	pmtx_hmap_close(c->hm);
	bench_close(c->r, c->pop, c->path);
	free(c->bits);
	free(c);
}

static struct set_ctx *ctx_new(const struct set_plan *pl, enum set_kind kind,
                               pmtx_runtime rt)
{
	struct set_ctx *c = calloc(1, sizeof(*c));
	size_t words = pl->range / 64 + 1;
	if (!c || !(c->bits = malloc(words * 8))) {
		free(c);
		return NULL;
	}
	memcpy(c->bits, pl->bits0, words * 8);
	c->pl = pl;
	c->kind = kind;
	c->rt = rt;
	c->count = pl->keys;
	c->rng = pl->seed ^ 0x5851f42d4c957f2dull;
	return c;
}

/* Prefill insert i into a pmtx container, in tx. */
static int pm_fill_one(void *arg, pmtx_tx *tx, uint64_t i)
{
	struct set_ctx *c = arg;
	int added, rc = pm_add(c, tx, c->pl->prefill[i], &added);
	return rc ? rc : added ? 0 : set_fail(c, "prefill key present",
	                                      c->pl->prefill[i]);
}

static int pm_create(struct set_ctx *c)
{
	pmtx_tx *tx;
	struct set_root *root = pmtx_root(c->r, NULL);
	pmtx_off off;
	int rc = pmtx_begin(c->r, bench_setup_rt(c->rt), &tx);
	if (rc)
		return rc;
	rc = c->kind == SET_MAP
	             ? pmtx_map_create(tx, PMTX_MAP_U64 | PMTX_MAP_VAL_U64,
	                               &off)
	             : pmtx_hmap_create(tx, 0, &off);
	if (!rc)
		rc = PMTX_SET(tx, root->cont, off);
	return bench_tx_end(tx, rc);
}

static int pm_setup(struct set_ctx *c)
{
	pmtx_cont_options co;
	int rc = pm_create(c);
	if (rc)
		return rc;
	pmtx_cont_options_init(&co);
	co.runtime = c->rt;
	pmtx_off off = ((struct set_root *)pmtx_root(c->r, NULL))->cont;
	rc = c->kind == SET_MAP ? pmtx_map_open(c->r, off, &co, &c->map)
	                        : pmtx_hmap_open(c->r, off, &co, &c->hm);
	if (!rc)
		rc = bench_setup_txs(c->r, bench_setup_rt(c->rt), c->pl->keys,
		                     SET_BATCH, pm_fill_one, c);
	return rc;
}

static int set_bind(struct runner *r, struct set_ctx *c, int rc)
{
	if (!rc)
		rc = cost_pass(c);
	return bench_bind(r, rc, c, set_run, set_check, set_corrupt,
	                  set_destroy);
}

/* Region bytes: the data with room to spare (a map's leaves half full,
 * the hash map's 48-byte entries and bucket segments; redo-async's
 * frees released late), and 64 MB for logs and metadata. */
static size_t set_region_size(const struct set_plan *pl)
{
	return (64u << 20) + (size_t)pl->keys * 112;
}

/* "pmtx-CONTAINER-RUNTIME", in the next of 8 buffers used in turn. */
static const char *pm_name(const char *container, pmtx_runtime rt)
{
	static char buf[8][32];
	static unsigned k;
	char *p = buf[k++ % 8];
	snprintf(p, 32, "pmtx-%s-%s", container, pmtx_runtime_name(rt));
	return p;
}

static const char *map_name(pmtx_runtime rt)
{
	return pm_name("map", rt);
}

static const char *hmap_name(pmtx_runtime rt)
{
	return pm_name("hmap", rt);
}

static int pm_runner(struct runner *r, const struct bench_opts *o,
                     pmtx_runtime rt, struct bench_cfg cfg,
                     const struct set_plan *pl, enum set_kind kind)
{
	struct set_ctx *c = ctx_new(pl, kind, rt);
	if (!c)
		return ENOMEM;
	int rc = bench_region(r, o, rt, cfg, sizeof(struct set_root),
	                      set_region_size(pl), &c->r, c->path);
	if (!rc)
		snprintf(r->system, sizeof(r->system), "%s",
		         kind == SET_MAP ? map_name(rt) : hmap_name(rt));
	return set_bind(r, c, rc ? rc : pm_setup(c));
}

static int map_runner(struct runner *r, const struct bench_opts *o,
                      pmtx_runtime rt, struct bench_cfg cfg, void *arg)
{
	return pm_runner(r, o, rt, cfg, arg, SET_MAP);
}

static int hmap_runner(struct runner *r, const struct bench_opts *o,
                       pmtx_runtime rt, struct bench_cfg cfg, void *arg)
{
	return pm_runner(r, o, rt, cfg, arg, SET_HMAP);
}

struct pd_fill {
	struct set_ctx *c;
	uint64_t from, to;
	int dup;
};

static void pd_fill_body(void *arg)
{
	struct pd_fill *f = arg;
	const struct set_ctx *c = f->c;
	for (uint64_t i = f->from; i < f->to; i++) {
		uint64_t k = c->pl->prefill[i];
		int added = c->kind == SET_PBTREE ? pb_add(c->pb, k)
		                                  : ph_add(c->ph, k);
		f->dup |= !added;
	}
}

static int pd_setup(struct set_ctx *c)
{
	void *root = pmemobj_direct(pmemobj_root(c->pop, 64));
	c->pb = root;
	c->ph = root;
	unsigned log2 = 1;
	while ((1ull << log2) < c->pl->keys)
		log2++;
	if (c->kind == SET_PHMAP && ph_init(c->pop, c->ph, log2))
		return PMTX_E_NOMEM;
	for (uint64_t i = 0; i < c->pl->keys; i += SET_BATCH) {
		struct pd_fill f = {c, i, i + SET_BATCH, 0};
		if (f.to > c->pl->keys)
			f.to = c->pl->keys;
		int rc = bench_pmdk_tx(c->pop, pd_fill_body, &f);
		if (rc)
			return rc;
		if (f.dup)
			return set_fail(c, "prefill key present", 0);
	}
	return 0;
}

static int pd_runner(struct runner *r, const struct bench_opts *o,
                     const struct set_plan *pl, enum set_kind kind)
{
	struct set_ctx *c = ctx_new(pl, kind, PMTX_RT_DEFAULT);
	if (!c)
		return ENOMEM;
	size_t pool = (64u << 20) + (size_t)pl->keys * 256;
	int rc = bench_pmdk_pool(r, o, 64, pool, &c->pop, c->path);
	if (!rc)
		snprintf(r->system, sizeof(r->system), "%s",
		         kind == SET_PBTREE ? "pmdk-btree" : "pmdk-hmap");
	return set_bind(r, c, rc ? rc : pd_setup(c));
}

static const pmtx_runtime set_rts[] = {
	PMTX_RT_UNDO, PMTX_RT_REDO, PMTX_RT_REDO_ASYNC, PMTX_RT_TWIN,
	PMTX_RT_AUTO,
};

/* Every runner --system, --domain and --backend select. */
static int set_runners(struct runner *rs, int *n, const struct bench_opts *o,
                       struct set_plan *pl)
{
	struct bench_opts hw = *o; /* PDOM-1 hardware unless asked */
	if (!o->domain && !o->backend)
		hw.domain = "pdom1", hw.backend = "hardware";
	struct bench_makers m = {.rts = set_rts,
	                         .nrts = sizeof(set_rts) / sizeof(*set_rts),
	                         .name = map_name, .pmtx = map_runner};
	int rc = bench_runners(rs, n, &hw, &m, pl);
	m.name = hmap_name, m.pmtx = hmap_runner;
	if (!rc)
		rc = bench_runners(rs, n, &hw, &m, pl);
	int pmdk = (!hw.domain || !strcmp(hw.domain, "pdom1")) &&
	           (!hw.backend || !strcmp(hw.backend, "hardware"));
	if (!rc && pmdk && bench_want(o, "pmdk-btree") &&
	    !(rc = pd_runner(&rs[*n], o, pl, SET_PBTREE)))
		(*n)++;
	if (!rc && pmdk && bench_want(o, "pmdk-hmap") &&
	    !(rc = pd_runner(&rs[*n], o, pl, SET_PHMAP)))
		(*n)++;
	return rc;
}

/* ---- the sweep ---- */

static double per(uint64_t x, uint64_t n)
{
	return n ? (double)x / (double)n : 0;
}

static void set_extra(const struct runner *r, char *buf, size_t len)
{
	const struct set_ctx *c = r->ctx;
	const struct set_cost *u = &c->cost[COST_UPDATE];
	const struct set_cost *l = &c->cost[COST_LOOKUP];
	double cpu = per(c->cpu_ns, c->cpu_ops);
	int k = snprintf(buf, len, "\"cpu_ns_per_op\":%.3f,"
	                 "\"cpu_ops_per_s\":%.1f,\"set_size\":%llu,",
	                 cpu, cpu > 0 ? 1e9 / cpu : 0,
	                 (unsigned long long)c->count);
	if (k < 0 || (size_t)k >= len)
		return;
	if (!r->has_counters)
		snprintf(buf + k, len - (size_t)k,
		         "\"update_barriers_per_op\":null,"
		         "\"update_flushes_per_op\":null,"
		         "\"lookup_barriers_per_op\":null,"
		         "\"lookup_flushes_per_op\":null");
	else
		snprintf(buf + k, len - (size_t)k,
		         "\"update_barriers_per_op\":%.4f,"
		         "\"update_flushes_per_op\":%.4f,"
		         "\"lookup_barriers_per_op\":%.4f,"
		         "\"lookup_flushes_per_op\":%.4f",
		         per(u->barriers, u->n), per(u->flushes, u->n),
		         per(l->barriers, l->n), per(l->flushes, l->n));
}

static int measure_ratio(struct runner *rs, int n, const struct bench_opts *o,
                         struct set_plan *pl, long pct)
{
	char params[160], extra[512];
	pl->upd_pct = pct;
	for (int i = 0; i < n; i++) {
		struct set_ctx *c = rs[i].ctx;
		rs[i].ops = rs[i].ns = rs[i].barriers = rs[i].flushes = 0;
		rs[i].nrounds = 0;
		c->cpu_ns = c->cpu_ops = 0;
	}
	int rc = bench_measure(rs, n, o);
	snprintf(params, sizeof(params), "\"keys\":%llu,\"range\":%llu,"
	         "\"update_pct\":%ld,\"read_tx\":%d,\"seed\":%llu",
	         (unsigned long long)pl->keys, (unsigned long long)pl->range,
	         pct, pl->read_tx, (unsigned long long)pl->seed);
	for (int i = 0; !rc && i < n; i++) {
		set_extra(&rs[i], extra, sizeof(extra));
		bench_emit_ex(&rs[i], "set", params, extra);
	}
	return rc;
}

/* The keys of the prefill: random keys of the range until pl->keys are
 * distinct (duplicates skipped), and the set they make. */
static int make_prefill(struct set_plan *pl)
{
	uint64_t s = pl->seed ? pl->seed : 1, n = 0;
	pl->prefill = malloc(pl->keys * sizeof(uint64_t));
	pl->bits0 = calloc(pl->range / 64 + 1, 8);
	if (!pl->prefill || !pl->bits0)
		return ENOMEM;
	while (n < pl->keys) {
		uint64_t k = bench_rand(&s) % pl->range;
		if (!bit(pl->bits0, k)) {
			set_bit(pl->bits0, k, 1);
			pl->prefill[n++] = k;
		}
	}
	return 0;
}

static int set_plan_opts(const struct bench_opts *o, struct set_plan *pl)
{
	long keys = bench_param1(o, "keys", 1000000);
	long range = bench_param1(o, "range", 2 * keys);
	*pl = (struct set_plan){
		.keys = (uint64_t)keys, .range = (uint64_t)range,
		.seed = (uint64_t)bench_param1(o, "seed", 1),
		.read_tx = bench_param1(o, "read_tx", 1) != 0,
		.split = bench_param1(o, "split", 20000),
	};
	if (keys < 1 || range <= keys || pl->split < 0) {
		fprintf(stderr, "set: need keys >= 1, range > keys, split >= "
		        "0\n");
		return PMTX_E_INVAL;
	}
	return 0;
}

int wl_set(const struct bench_opts *o)
{
	static const char *const systems[] = {
		"pmtx-map-undo", "pmtx-map-redo", "pmtx-map-redo-async",
		"pmtx-map-twin", "pmtx-map-auto", "pmtx-hmap-undo",
		"pmtx-hmap-redo", "pmtx-hmap-redo-async", "pmtx-hmap-twin",
		"pmtx-hmap-auto", "pmdk-btree", "pmdk-hmap", NULL};
	struct set_plan pl;
	long pcts[SET_MAX_RATIOS];
	if (bench_check_systems(o, "set", systems) || set_plan_opts(o, &pl))
		return PMTX_E_INVAL;
	int np = bench_param_in(o, "set", "update_pct", "100,10,1", 0, 100,
	                        pcts, SET_MAX_RATIOS);
	if (np < 0)
		return PMTX_E_INVAL;
	struct runner rs[BENCH_MAX_RUNNERS];
	uint64_t t0 = bench_now_ns();
	int n = 0, rc = make_prefill(&pl);
	if (!rc)
		rc = set_runners(rs, &n, o, &pl);
	if (!rc) /* progress, and where a profiler may attach */
		fprintf(stderr, "set: %d runners ready in %.1f s\n", n,
		        (double)(bench_now_ns() - t0) / 1e9);
	for (int i = 0; !rc && i < np; i++)
		rc = measure_ratio(rs, n, o, &pl, pcts[i]);
	rc = bench_finish(rs, n, rc, o, "set");
	free(pl.prefill);
	free(pl.bits0);
	return rc;
}
