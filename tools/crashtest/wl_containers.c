/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_containers.c - the crash-state explorer's workloads over the
 * crash-safe containers (include/pmtx_containers.h): the hash map, the
 * ordered map, the list, strings, and two containers changed in one
 * transaction. `pmtx crashtest --containers` (cmd.c) runs them, and the
 * mutation test (tests/test_mutation.c) hunts the containers' sites
 * with them.
 *
 * Each workload drives its containers through the public API only; what
 * it observes is read through the public API too (a get per key, a
 * cursor over an ordered map, a range over the list, a read per string),
 * after the container's own checker (hmap_check, list_check, map_check)
 * has passed on the recovered image. The leak check's walk lists the
 * blocks of the hash map, the list and the ordered maps with the
 * library's own walks (hmap_walk, list_walk, map_walk), and reads a
 * heap string's block from its layout (str_layout.h), since a string
 * has no walk.
 *
 * Invariants
 *  WC1. Determinism (W1 of workloads.c). Transaction i is planned by
 *       plan(e, i, state), state being the model after the first i
 *       transactions: run() replays the model up to i and plans from it,
 *       model() replays and applies the plans (both made by CONT_MODEL
 *       for every workload). Every byte string is
 *       generated from a 64-bit id and a length (gen), so the model keeps
 *       (id, length) pairs and compares bytes by generating them.
 *  WC2. One transaction per operation i: the ops of a plan run in one
 *       transaction begun with e->runtime, passed to every call; or (a
 *       "solo" plan) one op with tx NULL, in the handle's own transaction
 *       (the handle's runtime is e->runtime). An aborted plan runs every
 *       op and then pmtx_abort: the model does not change. An op whose
 *       status the model predicts to be a refusal (PMTX_E_EXISTS,
 *       PMTX_E_NOT_FOUND) writes nothing (cont.h C4) and the transaction
 *       goes on. run() checks every status (and what pop and remove
 *       return) against the plan: a difference is a failure of the
 *       workload, reported with no crash. plan_run does this for every
 *       workload.
 *  WC3. Every transaction's effect is planned on a copy of the model, so
 *       a later op of the same transaction sees the earlier ones.
 *  WC4. The observed vector holds the container's length, then one word
 *       per key (0: absent, else a hash of the value) or per element (a
 *       hash of its bytes): atomicity is checked for the whole content,
 *       and the checker of each container runs first, so that a torn
 *       structure is named by what is wrong with it.
 *  WC5. Growth happens inside explored transactions: setup leaves the
 *       hash map a few entries short of its first bucket split, the
 *       list a couple of chunks long, the ordered maps one leaf split
 *       from a new root and one merge from a smaller tree, so that
 *       splits, segment and segment-table allocations, chunk splits and
 *       merges, an element bigger than a chunk, node splits and merges
 *       fall in the first transactions (the mutation test explores 8).
 *       The cross workload creates a list and a hash map and destroys
 *       the old ones in transactions 5 and 6, the map workload a map by
 *       a bulk load in transaction 7.
 *  WC6. A hash map draws its hash seed from the clock when it is created
 *       (hmap.c new_seed), and the explorer runs setup and the workload
 *       more than once (a run that counts the crash points, the explored
 *       run, a reproducer's replay): buckets that split differently
 *       would meet different barriers, and chains written in other
 *       lines make other images. So the maps the workloads create take
 *       a fixed seed (hmap_fix_seed), and the header is made exactly as
 *       any map's is (a seed written by the workload would be flushed
 *       with the header's line, and hide a lost flush of it: the
 *       mutation site hmap.create_flush).
 */
#include <stdio.h>
#include <string.h>

#include <pmtx.h>
#include <pmtx_containers.h>
#include <pmtx_explore.h>

#include "containers/hmap.h"
#include "containers/list.h"
#include "containers/map.h"
#include "containers/str_layout.h"
#include "workloads.h"

#define CW_MAX_NTX 64
#define CONT_RUNTIMES (PMTX_EXPLORE_LOGGING | PMTX_EXPLORE_TWIN)
#define NSTR 4

/* The root of every container workload (each uses its own fields). */
struct croot {
	pmtx_off hmap;
	pmtx_off list;
	pmtx_off map;  /* map: u64 keys and values */
	pmtx_off smap; /* map: byte keys */
	pmtx_off tmap; /* map: a map made by a bulk load, or 0 */
	pmtx_str s[NSTR];
};

static uint64_t rnd(const pmtx_explore_env *e, uint64_t i, unsigned k)
{
	return ct_mix64(e->seed ^ ct_mix64((i << 8) ^ k ^ 0xc047ull << 40));
}

/* ---- byte strings (WC1) ---- */

#define MAXBYTES 1600u

static void gen(uint64_t id, size_t n, unsigned char *out)
{
	for (size_t j = 0; j < n; j += 8) {
		uint64_t w = ct_mix64(id * 0x100000001b3ull + j);
		memcpy(out + j, &w, MIN(8, n - j));
	}
}

static uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	for (size_t j = 0; j < n; j++)
		h = (h ^ b[j]) * 0x100000001b3ull;
	return ct_mix64(h) | 1; /* never 0: 0 says "absent" */
}

struct el {
	uint64_t id;
	uint32_t n;
};

static uint64_t el_hash(struct el x)
{
	unsigned char b[MAXBYTES];
	gen(x.id, x.n, b);
	return hash_bytes(b, x.n);
}

/* Are the bytes of a and b equal? (The model's replays compare often:
 * the first word decides almost always.) */
static int el_eq(struct el a, struct el b)
{
	unsigned char x[MAXBYTES], y[MAXBYTES];
	if (a.n != b.n)
		return 0;
	if (a.id == b.id || !a.n)
		return 1;
	gen(a.id, MIN(a.n, 8), x);
	gen(b.id, MIN(b.n, 8), y);
	if (memcmp(x, y, MIN(a.n, 8)))
		return 0;
	gen(a.id, a.n, x);
	gen(b.id, b.n, y);
	return !memcmp(x, y, a.n);
}

/* A failure of the workload itself (WC2), said once on stderr. */
static int wl_fail(const char *wl, uint64_t i, const char *what, int got,
                   int want)
{
	fprintf(stderr, "%s: transaction %llu: %s: status %d (%s), the model "
	        "says %d\n", wl, (unsigned long long)i, what, got,
	        pmtx_strerror(got), want);
	return got ? got : PMTX_E_CORRUPT;
}

/* ---- handles ---- */

static pmtx_cont_options copts(pmtx_runtime rt, unsigned stripes)
{
	pmtx_cont_options o;
	pmtx_cont_options_init(&o);
	o.runtime = rt;
	o.stripes = stripes;
	return o;
}

static struct croot *croot(pmtx_region *r)
{
	return pmtx_root(r, NULL);
}

/* A block of n bytes at off, for the walks: NULL unless it lies in the
 * region and is 16-byte aligned. */
static const void *blk(pmtx_region *r, pmtx_off off, size_t n)
{
	size_t size = pmtx_region_size(r);
	if (!off || off % 16 || n > size || off > size - n)
		return NULL;
	return pmtx_ptr(r, off);
}

static size_t bad(char *msg, size_t len, const char *what, const char *why)
{
	snprintf(msg, len, "%s: %s", what, why);
	return (size_t)-1;
}

/* ---- a plan's transaction (WC2) ---- */

/* The shape of transaction i's plan for the hash map, the list and the
 * strings: one op alone (solo) when i % 5 == 3, else 1 to 3 ops in a
 * transaction that aborts when i % 7 == 5. Returns the ops. */
static unsigned plan_shape(const pmtx_explore_env *e, uint64_t i, int *solo,
                           int *abort)
{
	*solo = i % 5 == 3;
	*abort = !*solo && i % 7 == 5;
	return *solo ? 1 : 1 + (unsigned)(rnd(e, i, 99) % 3);
}

/* The handles a plan's ops run on: those of the containers the root
 * holds (each workload's root holds its own only), opened with
 * e->runtime (stripes: the hash map's); fresh: a hash map made in the
 * transaction (cross), whose handle holds stripe locks until it ends. */
struct hnd {
	pmtx_region *r;
	pmtx_runtime rt;
	pmtx_list *l;
	pmtx_hmap *h, *fresh;
	pmtx_map *big, *small;
};

static int hnd_open(const pmtx_explore_env *e, pmtx_region *r,
                    unsigned stripes, struct hnd *h)
{
	pmtx_cont_options o = copts(e->runtime, 0);
	pmtx_cont_options ho = copts(e->runtime, stripes);
	const struct croot *c = croot(r);
	int rc = 0;
	*h = (struct hnd){.r = r, .rt = e->runtime};
	if (c->list)
		rc = pmtx_list_open(r, c->list, &o, &h->l);
	if (!rc && c->hmap)
		rc = pmtx_hmap_open(r, c->hmap, &ho, &h->h);
	if (!rc && c->map)
		rc = pmtx_map_open(r, c->map, &o, &h->big);
	if (!rc && c->smap)
		rc = pmtx_map_open(r, c->smap, &o, &h->small);
	return rc;
}

/* After the transaction: the handles held its stripe locks. */
static void hnd_close(struct hnd *h)
{
	pmtx_list_close(h->l);
	pmtx_hmap_close(h->h);
	pmtx_hmap_close(h->fresh);
	pmtx_map_close(h->big);
	pmtx_map_close(h->small);
}

/* Op k of plan p (of its workload's plan type) on the handles h, in tx
 * (NULL: the op runs alone), for transaction i. */
typedef int (*op_fn)(pmtx_tx *tx, struct hnd *h, const void *p, unsigned k,
                     uint64_t i);

/* Run transaction i's plan p of n ops (WC2): in one transaction begun
 * with e->runtime, or alone (solo: one op, tx NULL); an aborted plan
 * runs every op, then aborts. */
static int plan_run(const pmtx_explore_env *e, pmtx_region *r,
                    unsigned stripes, unsigned n, int solo, int abort,
                    op_fn op, const void *p, uint64_t i)
{
	struct hnd h;
	pmtx_tx *tx = NULL;
	int rc = hnd_open(e, r, stripes, &h);
	if (!rc && !solo)
		rc = pmtx_begin(r, e->runtime, &tx);
	for (unsigned k = 0; !rc && k < n; k++)
		rc = op(tx, &h, p, k, i);
	if (tx && abort && !rc)
		rc = pmtx_abort(tx);
	else if (tx)
		rc = ct_tx_end(tx, rc);
	hnd_close(&h);
	return rc;
}

/* ---- what every workload's model does (WC1) ---- */

/*
 * CONT_MODEL(M, P, INIT, PLAN, EXEC, VECTOR, REPLAY, RUN, MODEL) defines,
 * for a workload whose model has type M and whose plans type P, from
 *   INIT(M *m)                    the model after setup,
 *   PLAN(e, i, M *m, P *p)        transaction i planned and applied to m
 *                                 (WC3),
 *   EXEC(e, r, const P *p, i)     the plan run (WC2),
 *   VECTOR(const M *m, out, max)  the model as observe's vector (WC4):
 * REPLAY(e, k, M *m), the model after k transactions, which goes on from
 * the last replay when it can (the explorer asks for the same k image
 * after image), and the workload's run and model functions, RUN and
 * MODEL. A macro: the five models share this logic, not a type. The
 * models are static (the largest is tens of KiB).
 */
#define CONT_MODEL(M, P, INIT, PLAN, EXEC, VECTOR, REPLAY, RUN, MODEL)     \
	static void REPLAY(const pmtx_explore_env *e, uint64_t k, M *m)    \
	{                                                                  \
		static struct {                                            \
			int valid;                                         \
			uint64_t seed, k;                                  \
			M m, t;                                            \
			P p;                                               \
		} c;                                                       \
		if (!c.valid || c.seed != e->seed || c.k > k) {            \
			INIT(&c.m);                                        \
			c.valid = 1, c.seed = e->seed, c.k = 0;            \
		}                                                          \
		for (; c.k < k; c.k++) {                                   \
			c.t = c.m;                                         \
			PLAN(e, c.k, &c.t, &c.p);                          \
			if (!c.p.abort)                                    \
				c.m = c.t;                                 \
		}                                                          \
		*m = c.m;                                                  \
	}                                                                  \
	static int RUN(const pmtx_explore_env *e, pmtx_region *r,          \
	               unsigned t, uint64_t i)                             \
	{                                                                  \
		static M m;                                                \
		static P p;                                                \
		REPLAY(e, i, &m);                                          \
		PLAN(e, i, &m, &p);                                        \
		return EXEC(e, r, &p, i);                                  \
	}                                                                  \
	static size_t MODEL(const pmtx_explore_env *e, unsigned t,         \
	                    uint64_t k, uint64_t *out, size_t max)         \
	{                                                                  \
		static M m;                                                \
		REPLAY(e, k, &m);                                          \
		return VECTOR(&m, out, max);                               \
	}

/* A container workload: the root, runtimes and limit every one has;
 * size: the region's bytes (0: the explorer's default). */
#define CONT_WORKLOAD(NAME, HELP, SIZE, SETUP, RUN, OBSERVE, MODEL, WALK) \
	{.name = NAME, .help = HELP, .root_size = sizeof(struct croot),     \
	 .runtimes = CONT_RUNTIMES, .region_size = SIZE,                    \
	 .max_ntx = CW_MAX_NTX, .setup = SETUP, .run = RUN,                 \
	 .observe = OBSERVE, .model = MODEL, .walk = WALK}

/* ======================================================================
 * The hash map model: keys 0..HM_KEYS-1, each absent or holding a value
 * (id, length).
 * ==================================================================== */

#define HM_KEYS 48u

struct hm_model {
	unsigned n;
	uint8_t present[HM_KEYS];
	struct el v[HM_KEYS];
};

/* Key k's bytes: its number, then 3 to 14 generated bytes. */
static size_t hm_key(unsigned k, unsigned char *b)
{
	size_t n = 4 + k % 12;
	gen(0x6b657900ull + k, n, b);
	b[0] = (unsigned char)k;
	return n;
}

static void hm_put(struct hm_model *m, unsigned k, struct el v)
{
	m->n += !m->present[k];
	m->present[k] = 1;
	m->v[k] = v;
}

static void hm_del(struct hm_model *m, unsigned k)
{
	m->n -= m->present[k];
	m->present[k] = 0;
}

/* [len, then a word per key: 0 or the value's hash] */
static size_t hm_vector(const struct hm_model *m, uint64_t *out, size_t max)
{
	if (max < 1 + HM_KEYS)
		return 0;
	out[0] = m->n;
	for (unsigned k = 0; k < HM_KEYS; k++)
		out[1 + k] = m->present[k] ? el_hash(m->v[k]) : 0;
	return 1 + HM_KEYS;
}

/* The root's map as the vector above, after hmap_check. */
static size_t hm_observe(const pmtx_explore_env *e, pmtx_region *r,
                         unsigned t, uint64_t *out, size_t max, char *msg,
                         size_t len)
{
	pmtx_hmap *m;
	char why[160];
	uint64_t n = 0;
	if (max < 1 + HM_KEYS)
		return 0;
	int rc = pmtx_hmap_open(r, croot(r)->hmap, NULL, &m);
	if (rc)
		return bad(msg, len, "hash map: open", pmtx_strerror(rc));
	size_t got = 1 + HM_KEYS;
	if ((rc = hmap_check(m, why, sizeof(why))))
		got = bad(msg, len, "hash map: hmap_check", why);
	else if ((rc = pmtx_hmap_len(NULL, m, &n)))
		got = bad(msg, len, "hash map: len", pmtx_strerror(rc));
	out[0] = n;
	for (unsigned k = 0; got != (size_t)-1 && k < HM_KEYS; k++) {
		unsigned char kb[16];
		pmtx_bytes v;
		size_t kn = hm_key(k, kb);
		rc = pmtx_hmap_get(NULL, m, kb, kn, &v);
		if (rc && rc != PMTX_E_NOT_FOUND)
			got = bad(msg, len, "hash map: get", pmtx_strerror(rc));
		out[1 + k] = rc ? 0 : hash_bytes(v.p, v.n);
	}
	pmtx_hmap_close(m);
	return got;
}

/* Every block of the root's map (hmap_walk); nonzero if it cannot be
 * walked. */
static int hm_walk(const pmtx_explore_env *e, pmtx_region *r,
                   pmtx_explore_block_fn fn, void *arg)
{
	pmtx_hmap *m;
	if (pmtx_hmap_open(r, croot(r)->hmap, NULL, &m))
		return 1;
	int rc = hmap_walk(m, fn, arg);
	pmtx_hmap_close(m);
	return rc != 0;
}

/* ---- the hmap workload ---- */

enum { HOP_PUT, HOP_PUT_NX, HOP_PUT_XX, HOP_DEL };

struct hop {
	int kind;
	unsigned key;
	struct el v;
	int want;    /* the status the model predicts */
	int existed; /* puts: what *existed must say */
};

#define MAXOPS 4

struct hplan {
	unsigned n;
	struct hop op[MAXOPS];
	int solo, abort;
};

/* Apply op to m (a put or delete the model says succeeds). */
static void hop_apply(struct hm_model *m, struct hop *o)
{
	int present = m->present[o->key];
	o->existed = present;
	o->want = 0;
	switch (o->kind) {
	case HOP_PUT_NX:
		if (present) {
			o->want = PMTX_E_EXISTS;
			return;
		}
		break;
	case HOP_PUT_XX:
	case HOP_DEL:
		if (!present) {
			o->want = PMTX_E_NOT_FOUND;
			return;
		}
		break;
	}
	if (o->kind == HOP_DEL)
		hm_del(m, o->key);
	else
		hm_put(m, o->key, o->v);
}

/* The k-th present key of m (k < m->n). */
static unsigned hm_nth(const struct hm_model *m, uint64_t k)
{
	for (unsigned key = 0; key < HM_KEYS; key++)
		if (m->present[key] && k-- == 0)
			return key;
	return 0;
}

static struct el hm_value(uint64_t r, uint64_t id)
{
	uint32_t n = (uint32_t)((r >> 40) % 40);
	if ((r >> 20) % 16 == 0)
		n = 200 + (uint32_t)((r >> 48) % 120); /* a bigger entry */
	return (struct el){id, n};
}

/* Plan transaction i over m, applying it to m (WC3). */
static void hm_plan(const pmtx_explore_env *e, uint64_t i,
                    struct hm_model *m, struct hplan *p)
{
	p->n = plan_shape(e, i, &p->solo, &p->abort);
	for (unsigned k = 0; k < p->n; k++) {
		uint64_t r = rnd(e, i, k);
		struct hop *o = &p->op[k];
		unsigned roll = (unsigned)(r % 8);
		o->key = (unsigned)((r >> 8) % HM_KEYS);
		o->v = hm_value(r, (i + 1) << 8 | k);
		o->kind = roll < 4 ? HOP_PUT
		        : roll == 4 ? HOP_PUT_NX
		        : roll == 5 ? HOP_PUT_XX : HOP_DEL;
		if (roll == 7 && m->n) /* delete a present key */
			o->key = hm_nth(m, (r >> 16) % m->n);
		hop_apply(m, o);
	}
}

static int hop_run(pmtx_tx *tx, struct hnd *h, const void *p, unsigned k,
                   uint64_t i)
{
	const struct hop *o = &((const struct hplan *)p)->op[k];
	pmtx_hmap *m = h->h;
	unsigned char kb[16], vb[MAXBYTES];
	size_t kn = hm_key(o->key, kb);
	int existed = -1, rc;
	if (o->kind == HOP_DEL) {
		rc = pmtx_hmap_del(tx, m, kb, kn);
	} else {
		static const unsigned flags[] = {0, PMTX_HMAP_NX, PMTX_HMAP_XX};
		gen(o->v.id, o->v.n, vb);
		rc = pmtx_hmap_put(tx, m, kb, kn, vb, o->v.n, flags[o->kind],
		                   &existed);
	}
	if (rc != o->want)
		return wl_fail("hmap", i, "status", rc, o->want);
	if (!rc && o->kind != HOP_DEL && existed != o->existed)
		return wl_fail("hmap", i, "existed", existed, o->existed);
	return 0;
}

static int hm_exec(const pmtx_explore_env *e, pmtx_region *r,
                   const struct hplan *p, uint64_t i)
{
	return plan_run(e, r, 0, p->n, p->solo, p->abort, hop_run, p, i);
}

#define HM_SETUP 12 /* entries: the first split is 13 (WC5) */

static void hm_model_init(struct hm_model *m)
{
	memset(m, 0, sizeof(*m));
	for (unsigned k = 0; k < HM_SETUP; k++)
		hm_put(m, k * 3 % HM_KEYS, (struct el){0x5e7000 + k, 8 + k});
}

CONT_MODEL(struct hm_model, struct hplan, hm_model_init, hm_plan, hm_exec,
           hm_vector, hm_replay, whm_run, whm_model)

/* Fill the map at off with the model's entries (setup: no crash). */
static int hm_fill(pmtx_region *r, pmtx_off off, unsigned stripes,
                   const struct hm_model *mod)
{
	pmtx_cont_options o = copts(PMTX_RT_DEFAULT, stripes);
	pmtx_hmap *m;
	pmtx_tx *tx;
	int rc = pmtx_hmap_open(r, off, &o, &m);
	if (rc)
		return rc;
	if (!(rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx))) {
		for (unsigned k = 0; !rc && k < HM_KEYS; k++) {
			unsigned char kb[16], vb[MAXBYTES];
			size_t kn = hm_key(k, kb);
			if (!mod->present[k])
				continue;
			gen(mod->v[k].id, mod->v[k].n, vb);
			rc = pmtx_hmap_put(tx, m, kb, kn, vb, mod->v[k].n, 0,
			                   NULL);
		}
		rc = ct_tx_end(tx, rc);
	}
	pmtx_hmap_close(m);
	return rc;
}

/* A hash map created in tx, with the fixed hash seed of WC6. */
static int hmap_new(pmtx_tx *tx, pmtx_region *r, unsigned flags,
                    pmtx_off *off)
{
	hmap_fix_seed(0x5eed0f0c0a7a1115ull);
	return pmtx_hmap_create(tx, flags, off);
}

/* Create a hash map (W7: the region's own runtime) into *field. */
static int create_hmap(pmtx_region *r, unsigned flags, pmtx_off *field)
{
	pmtx_tx *tx;
	pmtx_off off;
	int rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx);
	if (rc)
		return rc;
	rc = hmap_new(tx, r, flags, &off);
	if (!rc)
		rc = PMTX_SET(tx, *field, off);
	return ct_tx_end(tx, rc);
}

static int whm_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	struct hm_model m;
	int rc = create_hmap(r, 0, &croot(r)->hmap);
	hm_model_init(&m);
	return rc ? rc : hm_fill(r, croot(r)->hmap, 0, &m);
}

static const pmtx_explore_workload wl_hmap = CONT_WORKLOAD(
	"hmap",
	"hash map: inserts, replaces (NX, XX) and deletes, with bucket "
	"splits and segment allocations; some transactions abort, some "
	"operations run alone",
	0, whm_setup, whm_run, hm_observe, whm_model, hm_walk);

/* ======================================================================
 * The list model: a deque of elements (id, length).
 * ==================================================================== */

#define LM_MAX 200u

struct lmodel {
	unsigned n;
	struct el e[LM_MAX];
};

static void lm_insert(struct lmodel *m, unsigned at, struct el x)
{
	memmove(&m->e[at + 1], &m->e[at], (m->n - at) * sizeof(x));
	m->e[at] = x;
	m->n++;
}

static void lm_erase(struct lmodel *m, unsigned at)
{
	memmove(&m->e[at], &m->e[at + 1], (m->n - at - 1) * sizeof(m->e[0]));
	m->n--;
}

/* [len, then a hash per element] */
static size_t lm_vector(const struct lmodel *m, uint64_t *out, size_t max)
{
	if (max < 1 + m->n)
		return 0;
	out[0] = m->n;
	for (unsigned j = 0; j < m->n; j++)
		out[1 + j] = el_hash(m->e[j]);
	return 1 + m->n;
}

struct lobs {
	uint64_t *out;
	size_t n, max;
};

static int lobs_add(const pmtx_bytes *v, void *arg)
{
	struct lobs *o = arg;
	if (o->n >= o->max)
		return 1;
	o->out[o->n++] = hash_bytes(v->p, v->n);
	return 0;
}

/* The root's list as the vector above, after list_check. */
static size_t lm_observe(const pmtx_explore_env *e, pmtx_region *r,
                         unsigned t, uint64_t *out, size_t max, char *msg,
                         size_t len)
{
	pmtx_list *l;
	char why[160];
	uint64_t n = 0;
	int rc = pmtx_list_open(r, croot(r)->list, NULL, &l);
	if (rc)
		return bad(msg, len, "list: open", pmtx_strerror(rc));
	struct lobs o = {out, 1, max};
	size_t got = 0;
	if ((rc = list_check(l, why, sizeof(why))))
		got = bad(msg, len, "list: list_check", why);
	else if ((rc = pmtx_list_len(NULL, l, &n)))
		got = bad(msg, len, "list: len", pmtx_strerror(rc));
	else if (n + 1 > max)
		got = 0;
	else if ((rc = pmtx_list_range(NULL, l, 0, -1, lobs_add, &o)))
		got = bad(msg, len, "list: range", pmtx_strerror(rc));
	else if (o.n != n + 1)
		got = bad(msg, len, "list", "range and len disagree");
	else
		got = o.n;
	out[0] = n;
	pmtx_list_close(l);
	return got;
}

/* Every block of the root's list (list_walk); nonzero if it cannot be
 * walked. */
static int lm_walk(const pmtx_explore_env *e, pmtx_region *r,
                   pmtx_explore_block_fn fn, void *arg)
{
	pmtx_list *l;
	if (pmtx_list_open(r, croot(r)->list, NULL, &l))
		return 1;
	int rc = list_walk(l, fn, arg);
	pmtx_list_close(l);
	return rc != 0;
}

/* ---- the list workload ---- */

enum { LOP_PUSH, LOP_POP, LOP_INSERT, LOP_REMOVE, LOP_TRIM, LOP_SET };

struct lop {
	int kind;
	int end;        /* push, pop: PMTX_LIST_HEAD or TAIL */
	struct el v;    /* push, insert, set: the element; remove: the value */
	struct el pv;   /* insert: the pivot; pop: the element popped */
	int after;
	int64_t a, b;   /* set: index; remove: count; trim: start, stop */
	int want;
	uint64_t removed;
};

struct lplan {
	unsigned n;
	struct lop op[MAXOPS];
	int solo, abort;
};

/* The first element equal to x from the head, or m->n. */
static unsigned lm_find(const struct lmodel *m, struct el x)
{
	unsigned j = 0;
	while (j < m->n && !el_eq(m->e[j], x))
		j++;
	return j;
}

static void lm_remove(struct lmodel *m, struct lop *o)
{
	uint64_t left = o->a == 0 ? UINT64_MAX
	              : o->a < 0 ? (uint64_t)-o->a : (uint64_t)o->a;
	o->removed = 0;
	if (o->a >= 0) {
		for (unsigned j = 0; j < m->n && left;)
			if (el_eq(m->e[j], o->v)) {
				lm_erase(m, j);
				left--, o->removed++;
			} else {
				j++;
			}
		return;
	}
	for (unsigned j = m->n; j-- > 0 && left;)
		if (el_eq(m->e[j], o->v)) {
			lm_erase(m, j);
			left--, o->removed++;
		}
}

/* Redis's LTRIM on the model: keep [start, stop], negative from the
 * tail, clipped to the list. */
static void lm_trim(struct lmodel *m, int64_t start, int64_t stop)
{
	int64_t n = m->n;
	int64_t first = MAX(start < 0 ? start + n : start, 0);
	int64_t last = MIN(stop < 0 ? stop + n : stop, n - 1);
	m->n = first <= last ? (unsigned)(last - first + 1) : 0;
	if (m->n)
		memmove(m->e, &m->e[first], m->n * sizeof(m->e[0]));
}

static void lop_apply(struct lmodel *m, struct lop *o)
{
	unsigned j;
	o->want = 0;
	switch (o->kind) {
	case LOP_PUSH:
		lm_insert(m, o->end == PMTX_LIST_TAIL ? m->n : 0, o->v);
		return;
	case LOP_POP:
		if (!m->n) {
			o->want = PMTX_E_NOT_FOUND;
			return;
		}
		j = o->end == PMTX_LIST_TAIL ? m->n - 1 : 0;
		o->pv = m->e[j];
		lm_erase(m, j);
		return;
	case LOP_INSERT:
		if ((j = lm_find(m, o->pv)) == m->n) {
			o->want = PMTX_E_NOT_FOUND;
			return;
		}
		lm_insert(m, j + (o->after != 0), o->v);
		return;
	case LOP_REMOVE:
		lm_remove(m, o);
		return;
	case LOP_TRIM:
		lm_trim(m, o->a, o->b);
		return;
	default: /* LOP_SET */
		j = o->a < 0 ? (unsigned)((int64_t)m->n + o->a) : (unsigned)o->a;
		m->e[j] = o->v;
		return;
	}
}

/* A new element of transaction i, op k: mostly short, 1 in 16 larger
 * than a chunk's data area (968 bytes: a chunk of its own). */
static struct el lm_new(uint64_t i, unsigned k, uint64_t r)
{
	uint32_t n = (uint32_t)((r >> 24) % 100);
	if ((r >> 32) % 16 == 0)
		n = 1000 + (uint32_t)((r >> 40) % 300);
	return (struct el){(i + 1) << 8 | k | 0x1157ull << 48, n};
}

/* Op kinds by the list's length: pushes while it is short, pops and
 * trims when it is long. */
static int lm_kind(unsigned n, uint64_t r)
{
	static const int mid[16] = {
		LOP_PUSH, LOP_PUSH, LOP_PUSH, LOP_PUSH, LOP_POP, LOP_POP,
		LOP_POP, LOP_INSERT, LOP_INSERT, LOP_INSERT, LOP_REMOVE,
		LOP_REMOVE, LOP_TRIM, LOP_SET, LOP_SET, LOP_PUSH};
	int kind = mid[r % 16];
	if (n < 16 && (kind == LOP_POP || kind == LOP_TRIM))
		kind = LOP_PUSH;
	if (n > 120 && kind == LOP_PUSH)
		kind = LOP_POP;
	if (n + MAXOPS >= LM_MAX)
		kind = LOP_TRIM;
	return kind;
}

static void lm_plan_op(uint64_t i, unsigned k, uint64_t r,
                       struct lmodel *m, struct lop *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = lm_kind(m->n, r);
	o->end = (r >> 8) & 1 ? PMTX_LIST_TAIL : PMTX_LIST_HEAD;
	o->v = lm_new(i, k, r);
	/* 1 in 4 pushes repeats an element: removes then find several */
	if (o->kind == LOP_PUSH && m->n && (r >> 12) % 4 == 0)
		o->v = m->e[(r >> 16) % m->n];
	unsigned at = m->n ? (unsigned)((r >> 16) % m->n) : 0;
	switch (o->kind) {
	case LOP_INSERT: /* a pivot in the list, or 1 in 8 one that is not */
		o->after = (r >> 9) & 1;
		o->pv = m->n && (r >> 44) % 8 ? m->e[at]
		                              : (struct el){~r, 3};
		break;
	case LOP_REMOVE:
		o->v = m->n ? m->e[at] : o->v;
		o->a = (int64_t)((r >> 40) % 4) - 1; /* -1, 0, 1, 2 */
		break;
	case LOP_TRIM:
		o->a = (int64_t)((r >> 40) % 3);
		o->b = -1 - (int64_t)((r >> 44) % 3);
		if ((r >> 50) % 32 == 0)
			o->a = 1, o->b = 0; /* empties the list */
		break;
	case LOP_SET:
		if (!m->n)
			o->kind = LOP_PUSH;
		o->a = (r >> 9) & 1 ? (int64_t)at : (int64_t)at - m->n;
		break;
	}
	lop_apply(m, o);
}

/* The first op of transaction i when i % 8 < 7 (WC5): a big element
 * inserted in the first chunk (which splits), one pushed at the head
 * (a chunk of its own) and popped (the chunk dropped), a remove, the
 * big element set short (its chunk shrinks and merges), an insert that
 * aborts, a trim at both ends (a third of the list from the head: whole
 * chunks freed). 0 if i takes a random first op. */
static int lm_sched(uint64_t i, uint64_t r, struct lmodel *m, struct lop *o)
{
	static const int kind[7] = {LOP_INSERT, LOP_PUSH, LOP_POP,
	                            LOP_REMOVE, LOP_SET, LOP_INSERT, LOP_TRIM};
	unsigned big = 0;
	if (i % 8 == 7 || m->n < 8)
		return 0;
	while (big < m->n && m->e[big].n < 1000)
		big++;
	memset(o, 0, sizeof(*o));
	o->kind = kind[i % 8];
	o->end = PMTX_LIST_HEAD;
	o->v = lm_new(i, 0, r);
	o->v.n = o->kind == LOP_SET ? (uint32_t)(r % 8) : 1000 + (uint32_t)(r % 300);
	o->pv = m->e[i % 8 == 5 ? m->n / 2 : m->n / 4];
	o->after = i % 8 == 0;
	o->v = o->kind == LOP_REMOVE ? m->e[1] : o->v;
	o->a = o->kind == LOP_SET ? (big < m->n ? big : 0) : m->n / 3;
	o->b = -4;
	lop_apply(m, o);
	return 1;
}

static void lm_plan(const pmtx_explore_env *e, uint64_t i, struct lmodel *m,
                    struct lplan *p)
{
	p->n = plan_shape(e, i, &p->solo, &p->abort);
	for (unsigned k = 0; k < p->n; k++)
		if (k || !lm_sched(i, rnd(e, i, k), m, &p->op[k]))
			lm_plan_op(i, k, rnd(e, i, k), m, &p->op[k]);
}

static int lop_run(pmtx_tx *tx, struct hnd *h, const void *p, unsigned k,
                   uint64_t i)
{
	const struct lop *o = &((const struct lplan *)p)->op[k];
	pmtx_list *l = h->l;
	unsigned char vb[MAXBYTES], pb[MAXBYTES], got[MAXBYTES];
	size_t n = 0;
	uint64_t removed = 0;
	int rc;
	gen(o->v.id, o->v.n, vb);
	switch (o->kind) {
	case LOP_PUSH:
		rc = pmtx_list_push(tx, l, o->end, vb, o->v.n);
		break;
	case LOP_POP:
		rc = pmtx_list_pop(tx, l, o->end, got, sizeof(got), &n);
		gen(o->pv.id, o->pv.n, pb);
		if (!rc && (n != o->pv.n || memcmp(got, pb, n)))
			return wl_fail("clist", i, "popped element", rc, 0);
		break;
	case LOP_INSERT:
		gen(o->pv.id, o->pv.n, pb);
		rc = pmtx_list_insert(tx, l, pb, o->pv.n, o->after, vb, o->v.n);
		break;
	case LOP_REMOVE:
		rc = pmtx_list_remove(tx, l, vb, o->v.n, o->a, &removed);
		if (!rc && removed != o->removed)
			return wl_fail("clist", i, "removed count",
			               (int)removed, (int)o->removed);
		break;
	case LOP_TRIM:
		rc = pmtx_list_trim(tx, l, o->a, o->b);
		break;
	default:
		rc = pmtx_list_set(tx, l, o->a, vb, o->v.n);
		break;
	}
	return rc != o->want ? wl_fail("clist", i, "status", rc, o->want) : 0;
}

static int lm_exec(const pmtx_explore_env *e, pmtx_region *r,
                   const struct lplan *p, uint64_t i)
{
	return plan_run(e, r, 0, p->n, p->solo, p->abort, lop_run, p, i);
}

#define LM_SETUP 30 /* elements of 20-60 bytes: two or three chunks */

static void lm_model_init(struct lmodel *m, unsigned n)
{
	m->n = 0;
	for (unsigned j = 0; j < n; j++)
		m->e[m->n++] = (struct el){0x11570000ull + j, 20 + j * 7 % 41};
}

/* The list workload's model after setup. */
static void lm_setup_model(struct lmodel *m)
{
	lm_model_init(m, LM_SETUP);
}

CONT_MODEL(struct lmodel, struct lplan, lm_setup_model, lm_plan, lm_exec,
           lm_vector, lm_replay, wcl_run, wcl_model)

/* Create a list into *field and push the model's elements (setup). */
static int create_list(pmtx_region *r, const struct lmodel *m,
                       pmtx_off *field)
{
	pmtx_tx *tx;
	pmtx_off off;
	pmtx_list *l = NULL;
	int rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx);
	if (rc)
		return rc;
	rc = pmtx_list_create(tx, &off);
	if (!rc)
		rc = PMTX_SET(tx, *field, off);
	if (!rc)
		rc = pmtx_list_open(r, off, NULL, &l);
	for (unsigned j = 0; !rc && j < m->n; j++) {
		unsigned char b[MAXBYTES];
		gen(m->e[j].id, m->e[j].n, b);
		rc = pmtx_list_push(tx, l, PMTX_LIST_TAIL, b, m->e[j].n);
	}
	pmtx_list_close(l);
	return ct_tx_end(tx, rc);
}

static int wcl_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	struct lmodel m;
	lm_setup_model(&m);
	return create_list(r, &m, &croot(r)->list);
}

static const pmtx_explore_workload wl_clist = CONT_WORKLOAD(
	"clist",
	"list (pmtx_list): pushes and pops at both ends, inserts, removes, "
	"sets and trims; chunk splits and merges, elements bigger than a "
	"chunk",
	0, wcl_setup, wcl_run, lm_observe, wcl_model, lm_walk);

/* ======================================================================
 * Strings: NSTR values in the root.
 * ==================================================================== */

#define SM_MAX 1400u

struct smodel {
	size_t n[NSTR];
	unsigned char b[NSTR][SM_MAX];
};

enum { SOP_SET, SOP_APPEND, SOP_SETRANGE, SOP_CLEAR };

struct sop {
	int kind;
	unsigned s;
	size_t at;
	struct el v;
};

struct splan {
	unsigned n;
	struct sop op[MAXOPS];
	int solo, abort;
};

static void sop_apply(struct smodel *m, const struct sop *o)
{
	unsigned char b[MAXBYTES];
	size_t *n = &m->n[o->s];
	unsigned char *d = m->b[o->s];
	gen(o->v.id, o->v.n, b);
	switch (o->kind) {
	case SOP_SET:
		memcpy(d, b, o->v.n);
		*n = o->v.n;
		return;
	case SOP_APPEND:
		memcpy(d + *n, b, o->v.n);
		*n += o->v.n;
		return;
	case SOP_SETRANGE:
		if (!o->v.n)
			return;
		if (o->at > *n)
			memset(d + *n, 0, o->at - *n);
		memcpy(d + o->at, b, o->v.n);
		*n = MAX(*n, o->at + o->v.n);
		return;
	default:
		*n = 0;
		return;
	}
}

static void sm_plan_op(uint64_t i, unsigned k, uint64_t r,
                       struct smodel *m, struct sop *o)
{
	static const uint32_t setlen[4][2] = {{0, 16}, {16, 25}, {100, 201},
	                                      {12, 8}};
	o->s = (unsigned)(r % NSTR);
	o->kind = (int)((r >> 8) % 8);
	o->kind = o->kind < 2 ? SOP_SET : o->kind < 5 ? SOP_APPEND
	        : o->kind < 7 ? SOP_SETRANGE : SOP_CLEAR;
	size_t n = m->n[o->s];
	const uint32_t *sl = setlen[(r >> 12) % 4];
	o->v.id = (i + 1) << 8 | k | 0x57ull << 48;
	o->v.n = sl[0] + (uint32_t)((r >> 16) % sl[1]);
	o->at = 0;
	if (o->kind == SOP_APPEND)
		o->v.n = 1 + (uint32_t)((r >> 16) % 24);
	if (o->kind == SOP_SETRANGE) {
		o->v.n = (uint32_t)((r >> 16) % 30); /* 0: changes nothing */
		o->at = (size_t)((r >> 32) % (n + 24));
	}
	if (o->kind != SOP_SET && o->kind != SOP_CLEAR &&
	    MAX(n + o->v.n, o->at + o->v.n) > SM_MAX)
		o->kind = SOP_CLEAR;
	sop_apply(m, o);
}

/* The first op of transaction i when i % 8 < 7 (WC5): string 0 set to
 * a heap string, appended to, and setrange'd past its end (a gap: in
 * place or moved), string 1 set long, string 2 setrange'd from empty
 * past the inline bound, string 1 appended to (the transaction aborts),
 * string 0 set inline again (its block freed). */
static int sm_sched(uint64_t i, struct smodel *m, struct sop *o)
{
	static const struct {
		int kind;
		unsigned s;
		uint32_t n;
	} sched[7] = {{SOP_SET, 0, 20}, {SOP_APPEND, 0, 10},
	              {SOP_SETRANGE, 0, 6}, {SOP_SET, 1, 300},
	              {SOP_SETRANGE, 2, 9}, {SOP_APPEND, 1, 24},
	              {SOP_SET, 0, 10}};
	if (i % 8 == 7)
		return 0;
	o->kind = sched[i % 8].kind;
	o->s = sched[i % 8].s;
	o->v = (struct el){(i + 1) << 8 | 0x57ull << 48, sched[i % 8].n};
	o->at = m->n[o->s] + 8;
	if (MAX(m->n[o->s] + o->v.n, o->at + o->v.n) > SM_MAX)
		o->kind = SOP_CLEAR;
	sop_apply(m, o);
	return 1;
}

static void sm_plan(const pmtx_explore_env *e, uint64_t i, struct smodel *m,
                    struct splan *p)
{
	p->n = plan_shape(e, i, &p->solo, &p->abort);
	for (unsigned k = 0; k < p->n; k++)
		if (k || !sm_sched(i, m, &p->op[k]))
			sm_plan_op(i, k, rnd(e, i, k), m, &p->op[k]);
}

/* After setup: every string empty. */
static void sm_init(struct smodel *m)
{
	memset(m->n, 0, sizeof(m->n));
}

/* [per string: length, hash] */
static size_t sm_vector(const struct smodel *m, uint64_t *out, size_t max)
{
	if (max < 2 * NSTR)
		return 0;
	for (unsigned s = 0; s < NSTR; s++) {
		out[2 * s] = m->n[s];
		out[2 * s + 1] = hash_bytes(m->b[s], m->n[s]);
	}
	return 2 * NSTR;
}

static int sop_run(pmtx_tx *tx, struct hnd *h, const void *p, unsigned k,
                   uint64_t i)
{
	const struct sop *o = &((const struct splan *)p)->op[k];
	pmtx_region *r = h->r;
	unsigned char b[MAXBYTES];
	pmtx_str *s = &croot(r)->s[o->s];
	int rc;
	gen(o->v.id, o->v.n, b);
	switch (o->kind) {
	case SOP_SET:
		rc = pmtx_str_set(r, tx, s, b, o->v.n);
		break;
	case SOP_APPEND:
		rc = pmtx_str_append(r, tx, s, b, o->v.n);
		break;
	case SOP_SETRANGE:
		rc = pmtx_str_setrange(r, tx, s, o->at, b, o->v.n);
		break;
	default:
		rc = pmtx_str_clear(r, tx, s);
		break;
	}
	return rc ? wl_fail("str", i, "status", rc, 0) : 0;
}

static int wst_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	return 0; /* zero bytes are empty strings */
}

/* A string has no handle: alone, an op runs the region's runtime. */
static int sm_exec(const pmtx_explore_env *e, pmtx_region *r,
                   const struct splan *p, uint64_t i)
{
	return plan_run(e, r, 0, p->n, p->solo, p->abort, sop_run, p, i);
}

CONT_MODEL(struct smodel, struct splan, sm_init, sm_plan, sm_exec, sm_vector,
           sm_replay, wst_run, wst_model)

/* [per string: length, hash] */
static size_t wst_observe(const pmtx_explore_env *e, pmtx_region *r,
                          unsigned t, uint64_t *out, size_t max, char *msg,
                          size_t len)
{
	static unsigned char b[SM_MAX + 1];
	if (max < 2 * NSTR)
		return 0;
	for (unsigned s = 0; s < NSTR; s++) {
		const pmtx_str *v = &croot(r)->s[s];
		pmtx_bytes view;
		size_t n, got;
		int rc = pmtx_str_len(r, NULL, v, &n);
		if (!rc)
			rc = pmtx_str_get(r, NULL, v, &view);
		if (!rc && (n > SM_MAX || view.n != n))
			return bad(msg, len, "string", "length out of bounds");
		if (!rc)
			rc = pmtx_str_read(r, NULL, v, 0, b, sizeof(b), &got);
		if (rc)
			return bad(msg, len, "string", pmtx_strerror(rc));
		if (got != n || (n && memcmp(b, view.p, n)))
			return bad(msg, len, "string", "get and read differ");
		out[2 * s] = n;
		out[2 * s + 1] = hash_bytes(b, n);
	}
	return 2 * NSTR;
}

/* The block of a heap string (str_layout.h), or 0. */
static pmtx_off str_block(const pmtx_str *s)
{
	pmtx_off off;
	if (s->b[15] != STR_TAG_HEAP)
		return 0;
	memcpy(&off, s->b, sizeof(off));
	return off;
}

static int wst_walk(const pmtx_explore_env *e, pmtx_region *r,
                    pmtx_explore_block_fn fn, void *arg)
{
	for (unsigned s = 0; s < NSTR; s++) {
		pmtx_off off = str_block(&croot(r)->s[s]);
		if (off && (!blk(r, off, 16) || fn(off, arg)))
			return 1;
	}
	return 0;
}

static const pmtx_explore_workload wl_str = CONT_WORKLOAD(
	"str",
	"strings: set, append, setrange (with gaps) and clear, inline and "
	"in heap blocks that grow by moving",
	0, wst_setup, wst_run, wst_observe, wst_model, wst_walk);

/* ======================================================================
 * cross: a list and a hash map (locked, opened with stripes) changed in
 * one transaction: an element popped from the list and put into the map
 * under a key of its own, or a value taken from the map and pushed onto
 * the list. Transaction 5 (mod 8) replaces the list by a new one holding
 * its first three elements, transaction 6 (mod 8) the map by a copy
 * (WC5): the containers' creation and destruction are explored too.
 * ==================================================================== */

#define X_STRIPES 4

struct xmodel {
	struct lmodel l;
	struct hm_model h;
};

enum { XOP_MOVE, XOP_BACK, XOP_NEWLIST, XOP_NEWMAP };

struct xplan {
	int kind, abort;
	unsigned key;       /* MOVE: where the popped element goes; BACK:
	                     * the key taken */
	int pop;            /* MOVE: the list is not empty: its tail is
	                     * popped */
	struct el popped;   /* MOVE */
	struct el fresh;    /* MOVE: pushed at the head; BACK: the value */
	int nx;             /* MOVE: NX put, refused: the plan aborts */
};

static void x_plan(const pmtx_explore_env *e, uint64_t i, struct xmodel *m,
                   struct xplan *p)
{
	uint64_t r = rnd(e, i, 0);
	memset(p, 0, sizeof(*p));
	p->kind = i % 8 == 5 ? XOP_NEWLIST : i % 8 == 6 ? XOP_NEWMAP
	        : r % 4 == 3 && m->h.n ? XOP_BACK : XOP_MOVE;
	p->abort = p->kind == XOP_MOVE && i % 3 == 2;
	if (p->kind == XOP_NEWLIST) {
		m->l.n = MIN(m->l.n, 3u);
	} else if (p->kind == XOP_BACK) {
		p->key = hm_nth(&m->h, (r >> 8) % m->h.n);
		p->fresh = m->h.v[p->key];
		lm_insert(&m->l, m->l.n, p->fresh);
		hm_del(&m->h, p->key);
	} else if (p->kind == XOP_MOVE) {
		p->fresh = lm_new(i, 0, r);
		p->fresh.n %= 200; /* no element bigger than a chunk here */
		p->key = (unsigned)((r >> 8) % HM_KEYS);
		p->nx = (r >> 16) % 4 == 0 && m->h.present[p->key];
		if (p->nx)
			p->abort = 1;
		p->pop = m->l.n != 0;
		if (p->pop) {
			p->popped = m->l.e[m->l.n - 1];
			m->l.n--;
			hm_put(&m->h, p->key, p->popped);
		}
		/* the list's length: 20, one more per BACK, 3 after NEWLIST:
		 * below LM_MAX for CW_MAX_NTX transactions */
		lm_insert(&m->l, 0, p->fresh);
	}
}

#define X_SETUP_L 20
#define X_SETUP_H 6

static void x_model_init(struct xmodel *m)
{
	lm_model_init(&m->l, X_SETUP_L);
	memset(&m->h, 0, sizeof(m->h));
	for (unsigned k = 0; k < X_SETUP_H; k++)
		hm_put(&m->h, k * 7 % HM_KEYS, (struct el){0x5e8000 + k, 5 + k});
}

/* [the list's vector, then the hash map's] */
static size_t x_vector(const struct xmodel *m, uint64_t *out, size_t max)
{
	size_t n = lm_vector(&m->l, out, max);
	size_t h = n ? hm_vector(&m->h, out + n, max - n) : 0;
	return h ? n + h : 0;
}

/* MOVE: pop the tail, put it under key, push fresh at the head. */
static int x_move(pmtx_tx *tx, const struct xplan *p, pmtx_list *l,
                  pmtx_hmap *h, uint64_t i)
{
	unsigned char b[MAXBYTES], kb[16];
	size_t n, kn = hm_key(p->key, kb);
	int rc = 0;
	if (p->pop) {
		rc = pmtx_list_pop(tx, l, PMTX_LIST_TAIL, b, sizeof(b), &n);
		if (!rc)
			rc = pmtx_hmap_put(tx, h, kb, kn, b, n,
			                   p->nx ? PMTX_HMAP_NX : 0, NULL);
		if (p->nx && rc == PMTX_E_EXISTS)
			return 0; /* refused, nothing written: the plan aborts */
		if (rc)
			return wl_fail("cross", i, "move", rc, 0);
	}
	gen(p->fresh.id, p->fresh.n, b);
	return pmtx_list_push(tx, l, PMTX_LIST_HEAD, b, p->fresh.n);
}

/* BACK: the value of key pushed at the tail, the key deleted. */
static int x_back(pmtx_tx *tx, const struct xplan *p, pmtx_list *l,
                  pmtx_hmap *h, uint64_t i)
{
	unsigned char kb[16];
	size_t kn = hm_key(p->key, kb);
	pmtx_bytes v;
	int rc = pmtx_hmap_get(tx, h, kb, kn, &v);
	if (!rc)
		rc = pmtx_list_push(tx, l, PMTX_LIST_TAIL, v.p, v.n);
	if (!rc)
		rc = pmtx_hmap_del(tx, h, kb, kn);
	return rc ? wl_fail("cross", i, "back", rc, 0) : 0;
}

/* NEWLIST: a new list with the first three elements, the old one
 * destroyed. */
static int x_newlist(pmtx_tx *tx, pmtx_region *r, pmtx_runtime rt,
                     pmtx_list *l)
{
	pmtx_cont_options o = copts(rt, 0);
	pmtx_off off, old = croot(r)->list;
	pmtx_list *nl = NULL;
	int rc = pmtx_list_create(tx, &off);
	if (!rc)
		rc = pmtx_list_open(r, off, &o, &nl);
	for (unsigned j = 0; !rc && j < 3; j++) {
		unsigned char b[MAXBYTES];
		size_t n;
		rc = pmtx_list_pop(tx, l, PMTX_LIST_HEAD, b, sizeof(b), &n);
		if (!rc)
			rc = pmtx_list_push(tx, nl, PMTX_LIST_TAIL, b, n);
		else if (rc == PMTX_E_NOT_FOUND)
			rc = 0, j = 3;
	}
	pmtx_list_close(nl);
	if (!rc)
		rc = pmtx_list_destroy(tx, old);
	return rc ? rc : PMTX_SET(tx, croot(r)->list, off);
}

struct xcopy {
	pmtx_tx *tx;
	pmtx_hmap *to;
};

static int x_copy_one(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct xcopy *c = arg;
	return pmtx_hmap_put(c->tx, c->to, k->p, k->n, v->p, v->n,
	                     PMTX_HMAP_NX, NULL);
}

/* NEWMAP: a copy of the map, the old one destroyed. The new map's
 * handle, *nh, holds stripe locks until tx ends: the caller closes it
 * after. */
static int x_newmap(pmtx_tx *tx, pmtx_region *r, pmtx_runtime rt,
                    pmtx_hmap *h, pmtx_hmap **nh)
{
	pmtx_cont_options o = copts(rt, X_STRIPES);
	pmtx_off off, old = croot(r)->hmap;
	struct xcopy c = {tx, NULL};
	uint64_t cur = 0;
	int rc = hmap_new(tx, r, PMTX_HMAP_LOCKED, &off);
	if (!rc)
		rc = pmtx_hmap_open(r, off, &o, &c.to);
	*nh = c.to;
	do {
		if (!rc)
			rc = pmtx_hmap_scan(tx, h, cur, 16, x_copy_one, &c, &cur);
	} while (!rc && cur);
	if (!rc)
		rc = pmtx_hmap_destroy(tx, old);
	return rc ? rc : PMTX_SET(tx, croot(r)->hmap, off);
}

static int wcx_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	static struct xmodel m;
	x_model_init(&m);
	int rc = create_list(r, &m.l, &croot(r)->list);
	if (!rc)
		rc = create_hmap(r, PMTX_HMAP_LOCKED, &croot(r)->hmap);
	return rc ? rc : hm_fill(r, croot(r)->hmap, X_STRIPES, &m.h);
}

/* The plan's one op, on the root's list and hash map. */
static int x_op(pmtx_tx *tx, struct hnd *h, const void *p, unsigned k,
                uint64_t i)
{
	const struct xplan *x = p;
	switch (x->kind) {
	case XOP_MOVE:
		return x_move(tx, x, h->l, h->h, i);
	case XOP_BACK:
		return x_back(tx, x, h->l, h->h, i);
	case XOP_NEWLIST:
		return x_newlist(tx, h->r, h->rt, h->l);
	default:
		return x_newmap(tx, h->r, h->rt, h->h, &h->fresh);
	}
}

/* One op, never alone: a transaction of its own even for one op. */
static int x_exec(const pmtx_explore_env *e, pmtx_region *r,
                  const struct xplan *p, uint64_t i)
{
	return plan_run(e, r, X_STRIPES, 1, 0, p->abort, x_op, p, i);
}

CONT_MODEL(struct xmodel, struct xplan, x_model_init, x_plan, x_exec,
           x_vector, x_replay, wcx_run, wcx_model)

static size_t wcx_observe(const pmtx_explore_env *e, pmtx_region *r,
                            unsigned t, uint64_t *out, size_t max, char *msg,
                            size_t len)
{
	size_t n = lm_observe(e, r, t, out, max, msg, len);
	if (n == 0 || n == (size_t)-1)
		return n;
	size_t h = hm_observe(e, r, t, out + n, max - n, msg, len);
	return h == 0 || h == (size_t)-1 ? h : n + h;
}

static int wcx_walk(const pmtx_explore_env *e, pmtx_region *r,
                      pmtx_explore_block_fn fn, void *arg)
{
	return lm_walk(e, r, fn, arg) || hm_walk(e, r, fn, arg);
}

/* 2 MiB: the containers it makes and destroys take superblocks of size
 * classes 1 MiB runs out of by transaction 26. */
static const pmtx_explore_workload wl_cross = CONT_WORKLOAD(
	"cross",
	"a list and a striped hash map in one transaction: pop and put, get, "
	"push and delete; both containers replaced by new ones; some "
	"transactions abort",
	2u << 20, wcx_setup, wcx_run, wcx_observe, wcx_model, wcx_walk);


/* ======================================================================
 * map: two ordered maps. The big one has u64 keys and u64 values
 * (PMTX_MAP_VAL_U64: kept in the leaves), and setup bulk-loads it full:
 * MM_BIG even keys in 32 leaves of 48 under one inner root, so that the
 * first leaf split also splits the root and grows the tree to three
 * levels. The small one has byte keys (items; its inner nodes own
 * copies as separators), loaded half full: 17 leaves of 24 under two
 * inner nodes of 9 and 8 children, so that 13 deletes in a leaf under
 * the second make the leaf merge with its neighbour, the inner node
 * merge with its sibling, and the root, left with one child, give way
 * to it. Transaction 7 (mod 8) replaces a third map, tmap, by a new one
 * of MT_N entries bulk-loaded: a map's creation, a load and a destroy
 * are explored too.
 * ==================================================================== */

#define MM_BIG (32u * MAP_LEAF_SLOTS)  /* keys 0, 2, .., 2 MM_BIG - 2 */
#define MM_KEYS (2u * MM_BIG + 64u)    /* the big map's key universe */
#define MS_LOAD (17u * MAP_LEAF_SLOTS / 2) /* 17 leaves of 24 under */
#define MS_KEYS (MS_LOAD + 72u)            /* inner nodes of 9 and 8 */

struct mm_model {
	uint8_t bp[MM_KEYS];
	struct el bv[MM_KEYS];
	uint8_t sp[MS_KEYS];
	struct el sv[MS_KEYS];
	int64_t tlast; /* the transaction that made tmap, or -1 */
};

/* The small map's key k: 2 to 13 bytes, so that prefixes happen. */
static size_t ms_key(unsigned k, unsigned char *b)
{
	size_t n = 2 + k % 12;
	gen(0x6d73000000ull + k / 3, n, b);
	b[0] = (unsigned char)(k >> 4);
	b[1] = (unsigned char)k;
	return n;
}

/* A byte key and its number, to sort keys in the map's order (kb_cmp:
 * memcmp, a prefix first). */
struct kbytes {
	unsigned char k[16];
	size_t kn;
	unsigned j;
};

static int kb_cmp(const void *a, const void *b)
{
	const struct kbytes *x = a, *y = b;
	int c = memcmp(x->k, y->k, MIN(x->kn, y->kn));
	return c ? c : (x->kn > y->kn) - (x->kn < y->kn);
}

/* The small map's keys in the map's order. */
static unsigned ms_order[MS_KEYS];

static void ms_sort(void)
{
	static struct kbytes kb[MS_KEYS];
	if (ms_order[1])
		return;
	for (unsigned k = 0; k < MS_KEYS; k++) {
		kb[k].kn = ms_key(k, kb[k].k);
		kb[k].j = k;
	}
	qsort(kb, MS_KEYS, sizeof(*kb), kb_cmp);
	for (unsigned k = 0; k < MS_KEYS; k++)
		ms_order[k] = kb[k].j;
}

enum { MOP_BPUT, MOP_BDEL, MOP_SPUT, MOP_SDEL };

struct mop_ {
	int kind;
	unsigned key, flags;
	struct el v;
	int want, existed;
};

#define MM_MAXOPS 64

struct mplan {
	unsigned n;
	struct mop_ op[MM_MAXOPS];
	int solo, abort;
	int tmap; /* first, tmap replaced by a map of MT_N entries loaded */
};

#define MT_N 60 /* tmap: two leaves */

/* Entry j of the tmap made by transaction i: key and value ids. */
static uint64_t mt_id(int64_t i, unsigned j, int val)
{
	return (uint64_t)i << 16 | j << 1 | (unsigned)val | 0x74ull << 56;
}

static size_t mt_key(int64_t i, unsigned j, unsigned char *b)
{
	size_t n = 3 + j % 9;
	gen(mt_id(i, j, 0), n, b);
	return n;
}

static void mop_apply(struct mm_model *m, struct mop_ *o)
{
	int big = o->kind == MOP_BPUT || o->kind == MOP_BDEL;
	uint8_t *pres = big ? &m->bp[o->key] : &m->sp[o->key];
	struct el *val = big ? &m->bv[o->key] : &m->sv[o->key];
	o->existed = *pres;
	o->want = 0;
	if (o->kind == MOP_BDEL || o->kind == MOP_SDEL) {
		if (!*pres)
			o->want = PMTX_E_NOT_FOUND;
		*pres = 0;
		return;
	}
	if ((o->flags & PMTX_HMAP_NX) && *pres) {
		o->want = PMTX_E_EXISTS;
		return;
	}
	if ((o->flags & PMTX_HMAP_XX) && !*pres) {
		o->want = PMTX_E_NOT_FOUND;
		return;
	}
	*pres = 1;
	*val = o->v;
}

static void mm_add(struct mplan *p, struct mm_model *m, int kind,
                   unsigned key, unsigned flags, struct el v)
{
	if (p->n == MM_MAXOPS)
		return;
	struct mop_ *o = &p->op[p->n++];
	*o = (struct mop_){kind, key, flags, v, 0, 0};
	mop_apply(m, o);
}

/* The first present key of the big map at or after k (MM_KEYS: none). */
static unsigned mm_next(const struct mm_model *m, unsigned k)
{
	while (k < MM_KEYS && !m->bp[k])
		k++;
	return k;
}

/* Transaction i's first ops when i % 8 < 7 (WC5): a key put into a full
 * leaf (the leaf splits, the root splits, the tree grows), 30 keys
 * deleted there (leaves under a quarter merge or share), the small
 * map's puts (an insert, a replace), an XX put, 13
 * consecutive keys of the small map deleted (a leaf, an inner node and
 * the root give way), puts that abort, 20 new keys in one stretch (more
 * leaf splits). The big map's values are 8 bytes: the el's id. */
static void mm_sched(uint64_t i, uint64_t r, struct mm_model *m,
                     struct mplan *p)
{
	unsigned at = (unsigned)(r % (MM_BIG / 2)) * 2 + MM_BIG / 2, k;
	struct el v = {(i + 1) << 8 | 0x3a9ull << 48, (uint32_t)(r >> 40) % 40};
	switch (i % 8) {
	case 0:
		mm_add(p, m, MOP_BPUT, MM_BIG + 1, 0, v);
		return;
	case 1:
		k = mm_next(m, MM_BIG - 24);
		for (unsigned j = 0; j < 30 && k < MM_KEYS; j++) {
			mm_add(p, m, MOP_BDEL, k, 0, v);
			k = mm_next(m, k + 1);
		}
		return;
	case 2:
		mm_add(p, m, MOP_SPUT, MS_LOAD + (unsigned)(r % 50), 0, v);
		mm_add(p, m, MOP_SPUT, (unsigned)(r >> 8) % MS_LOAD, 0, v);
		return;
	case 3:
		mm_add(p, m, MOP_BPUT, at, PMTX_HMAP_XX, v);
		return;
	case 4: /* the second leaf under the second inner node */
		for (unsigned j = 0; j < 13; j++)
			mm_add(p, m, MOP_SDEL, ms_order[10 * 24 + j], 0, v);
		return;
	default: /* 5, aborted; 6 */
		for (unsigned j = 0; j < 20; j++, v.id++)
			mm_add(p, m, MOP_BPUT, at + 2 * j + 1, 0, v);
		return;
	}
}

static void mm_plan(const pmtx_explore_env *e, uint64_t i,
                    struct mm_model *m, struct mplan *p)
{
	ms_sort();
	p->n = 0;
	p->tmap = i % 8 == 7; /* in a transaction, never aborted */
	if (p->tmap)
		m->tlast = (int64_t)i;
	if (i % 8 != 7)
		mm_sched(i, rnd(e, i, 98), m, p);
	/* one op alone (WC2) when i % 5 == 3: the scheduled one, or one */
	unsigned nrand = i % 5 == 3 ? !p->n : (unsigned)(rnd(e, i, 99) % 3);
	p->solo = i % 5 == 3 && p->n + nrand == 1 && !p->tmap;
	p->abort = !p->solo && i % 7 == 5 && !p->tmap;
	for (unsigned k = 0, n = nrand; k < n; k++) {
		uint64_t r = rnd(e, i, k);
		unsigned roll = (unsigned)(r % 8);
		int big = (r >> 8) & 1;
		unsigned key = (unsigned)((r >> 16) % (big ? MM_KEYS : MS_KEYS));
		unsigned flags = roll == 4 ? PMTX_HMAP_NX
		               : roll == 5 ? PMTX_HMAP_XX : 0;
		struct el v = {(i + 1) << 8 | k | 0x3a8ull << 48,
		               (uint32_t)((r >> 40) % 60)};
		int kind = roll >= 6 ? (big ? MOP_BDEL : MOP_SDEL)
		                     : (big ? MOP_BPUT : MOP_SPUT);
		mm_add(p, m, kind, key, flags, v);
	}
}

static void mm_model_init(struct mm_model *m)
{
	ms_sort();
	memset(m, 0, sizeof(*m));
	m->tlast = -1;
	for (unsigned k = 0; k < MM_BIG; k++) {
		m->bp[2 * k] = 1;
		m->bv[2 * k] = (struct el){0x3a7000000ull + k, 4 + k % 29};
	}
	for (unsigned j = 0; j < MS_LOAD; j++) {
		unsigned k = ms_order[j]; /* the first MS_LOAD in key order */
		m->sp[k] = 1;
		m->sv[k] = (struct el){0x3a6000000ull + k, 3 + k % 17};
	}
}

/* The keys of the tmap made by transaction i, in the map's order. */
static void mt_sorted(int64_t i, struct kbytes *pr)
{
	for (unsigned j = 0; j < MT_N; j++) {
		pr[j].kn = mt_key(i, j, pr[j].k);
		pr[j].j = j;
	}
	qsort(pr, MT_N, sizeof(*pr), kb_cmp);
}

/* tmap's pairs (key hash, value hash) in key order, after n words. */
static size_t mt_vector(int64_t tlast, uint64_t *out, size_t n, size_t max)
{
	struct kbytes pr[MT_N];
	unsigned cnt = tlast < 0 ? 0 : MT_N;
	if (n + 1 + 2 * cnt > max)
		return 0;
	out[n++] = cnt;
	if (cnt)
		mt_sorted(tlast, pr);
	for (unsigned j = 0; j < cnt; j++) {
		out[n++] = hash_bytes(pr[j].k, pr[j].kn);
		out[n++] = el_hash((struct el){mt_id(tlast, pr[j].j, 1),
		                              pr[j].j % 23});
	}
	return n;
}

/* [big map: len, then key and value hash per entry in key order; small
 * map: len, then key hash and value hash per entry in key order; tmap:
 * the same] */
static size_t mm_vector(const struct mm_model *m, uint64_t *out, size_t max)
{
	size_t n = 1, at = 0;
	for (unsigned k = 0; k < MM_KEYS; k++)
		if (m->bp[k]) {
			if (n + 2 > max)
				return 0;
			out[n++] = k;
			out[n++] = m->bv[k].id;
		}
	out[at] = (n - 1) / 2;
	at = n++;
	for (unsigned j = 0; j < MS_KEYS; j++) {
		unsigned k = ms_order[j];
		unsigned char kb[16];
		if (!m->sp[k])
			continue;
		if (n + 2 > max)
			return 0;
		out[n++] = hash_bytes(kb, ms_key(k, kb));
		out[n++] = el_hash(m->sv[k]);
	}
	out[at] = (n - at - 1) / 2;
	return mt_vector(m->tlast, out, n, max);
}

/* One map as its part of the vector above, after map_check; big: its
 * keys are u64 words. */
static size_t mm_observe_one(pmtx_region *r, pmtx_off off, int big,
                             uint64_t *out, size_t max, char *msg,
                             size_t len)
{
	pmtx_map *m;
	pmtx_map_cursor c;
	char why[160];
	uint64_t n, got = 0;
	int rc = pmtx_map_open(r, off, NULL, &m);
	if (rc)
		return bad(msg, len, "map: open", pmtx_strerror(rc));
	size_t w = 1;
	if ((rc = map_check(m, why, sizeof(why))))
		w = bad(msg, len, "map: map_check", why);
	else if ((rc = pmtx_map_len(NULL, m, &n)))
		w = bad(msg, len, "map: len", pmtx_strerror(rc));
	else if (1 + 2 * n > max)
		w = 0;
	for (rc = w > 0 && w != (size_t)-1
	              ? pmtx_map_seek(NULL, m, PMTX_SEEK_FIRST, NULL, 0, &c)
	              : -1;
	     !rc; rc = pmtx_map_next(&c), got++) {
		pmtx_bytes k, v;
		uint64_t kw = 0;
		if (got == n || (rc = pmtx_map_cursor_get(&c, &k, &v))) {
			w = bad(msg, len, "map", "more entries than its len");
			break;
		}
		uint64_t vw = 0;
		if (big && k.n == 8 && v.n == 8) {
			memcpy(&kw, k.p, 8);
			memcpy(&vw, v.p, 8);
		}
		out[w++] = big ? kw : hash_bytes(k.p, k.n);
		out[w++] = big ? vw : hash_bytes(v.p, v.n);
	}
	if (w && w != (size_t)-1 && rc != PMTX_E_NOT_FOUND && rc != -1)
		w = bad(msg, len, "map: cursor", pmtx_strerror(rc));
	else if (w && w != (size_t)-1 && got != n)
		w = bad(msg, len, "map", "fewer entries than its len");
	out[0] = got;
	pmtx_map_close(m);
	return w;
}

static int mop_run(pmtx_tx *tx, pmtx_map *big, pmtx_map *small,
                   const struct mop_ *o, uint64_t i)
{
	unsigned char kb[16], vb[MAXBYTES];
	uint64_t kw = o->key;
	int isbig = o->kind == MOP_BPUT || o->kind == MOP_BDEL;
	pmtx_map *m = isbig ? big : small;
	const void *k = isbig ? (const void *)&kw : kb;
	size_t kn = isbig ? 8 : ms_key(o->key, kb);
	int existed = -1, rc;
	if (o->kind == MOP_BDEL || o->kind == MOP_SDEL) {
		rc = pmtx_map_del(tx, m, k, kn);
	} else if (isbig) {
		rc = pmtx_map_put(tx, m, k, kn, &o->v.id, 8, o->flags,
		                  &existed);
	} else {
		gen(o->v.id, o->v.n, vb);
		rc = pmtx_map_put(tx, m, k, kn, vb, o->v.n, o->flags, &existed);
	}
	if (rc != o->want)
		return wl_fail("map", i, "status", rc, o->want);
	if (!rc && existed != -1 && existed != o->existed)
		return wl_fail("map", i, "existed", existed, o->existed);
	return 0;
}

/* The bulk load's source for the tmap of transaction i. */
struct mt_src {
	int64_t i;
	struct kbytes pr[MT_N];
	unsigned at;
	unsigned char vb[32];
};

static int mt_next_pair(void *arg, pmtx_bytes *k, pmtx_bytes *v)
{
	struct mt_src *s = arg;
	if (s->at == MT_N)
		return 0;
	const struct kbytes *q = &s->pr[s->at++];
	gen(mt_id(s->i, q->j, 1), q->j % 23, s->vb);
	*k = (pmtx_bytes){q->k, q->kn, 0};
	*v = (pmtx_bytes){s->vb, q->j % 23, 0};
	return 1;
}

/* tmap replaced, in tx, by a new map of MT_N entries bulk-loaded (the
 * old one destroyed): a map's creation and a load are explored too. */
static int mt_replace(pmtx_tx *tx, pmtx_region *r, pmtx_runtime rt,
                      int64_t i)
{
	static struct mt_src src;
	pmtx_cont_options o = copts(rt, 0);
	pmtx_off off, old = croot(r)->tmap;
	pmtx_map *m = NULL;
	src.i = i;
	src.at = 0;
	mt_sorted(i, src.pr);
	int rc = pmtx_map_create(tx, PMTX_MAP_BYTES, &off);
	if (!rc)
		rc = pmtx_map_open(r, off, &o, &m);
	if (!rc)
		rc = pmtx_map_load(tx, m, mt_next_pair, &src, 100);
	pmtx_map_close(m);
	if (!rc && old)
		rc = pmtx_map_destroy(tx, old);
	return rc ? rc : PMTX_SET(tx, croot(r)->tmap, off);
}

/* Op k of plan p: first, when the plan says so, tmap replaced (p->tmap
 * counts as an op); then the plan's ops on the big and small maps. */
static int mm_op(pmtx_tx *tx, struct hnd *h, const void *p, unsigned k,
                 uint64_t i)
{
	const struct mplan *pl = p;
	if (pl->tmap && k == 0)
		return mt_replace(tx, h->r, h->rt, (int64_t)i);
	return mop_run(tx, h->big, h->small, &pl->op[k - pl->tmap], i);
}

static int mm_exec(const pmtx_explore_env *e, pmtx_region *r,
                   const struct mplan *p, uint64_t i)
{
	return plan_run(e, r, 0, p->n + (unsigned)p->tmap, p->solo, p->abort,
	                mm_op, p, i);
}

CONT_MODEL(struct mm_model, struct mplan, mm_model_init, mm_plan, mm_exec,
           mm_vector, mm_replay, wmm_run, wmm_model)

/* The bulk load's source: the model's entries of one map, in order. */
struct mm_src {
	const struct mm_model *m;
	int big;
	unsigned at;
	uint64_t kw;
	unsigned char kb[16], vb[MAXBYTES];
};

static int mm_next_pair(void *arg, pmtx_bytes *k, pmtx_bytes *v)
{
	struct mm_src *s = arg;
	unsigned lim = s->big ? MM_KEYS : MS_KEYS;
	for (; s->at < lim; s->at++) {
		unsigned key = s->big ? s->at : ms_order[s->at];
		if (!(s->big ? s->m->bp[key] : s->m->sp[key]))
			continue;
		struct el x = s->big ? s->m->bv[key] : s->m->sv[key];
		s->kw = key;
		*k = s->big ? (pmtx_bytes){&s->kw, 8, 0}
		            : (pmtx_bytes){s->kb, ms_key(key, s->kb), 0};
		if (s->big)
			memcpy(s->vb, &x.id, 8);
		else
			gen(x.id, x.n, s->vb);
		*v = (pmtx_bytes){s->vb, s->big ? 8 : x.n, 0};
		s->at++;
		return 1;
	}
	return 0;
}

static int create_map(pmtx_region *r, const struct mm_model *mod, int big,
                      pmtx_off *field)
{
	static struct mm_src src;
	pmtx_tx *tx;
	pmtx_off off;
	pmtx_map *m = NULL;
	int rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx);
	if (rc)
		return rc;
	rc = pmtx_map_create(tx, big ? PMTX_MAP_U64 | PMTX_MAP_VAL_U64
	                             : PMTX_MAP_BYTES, &off);
	if (!rc)
		rc = PMTX_SET(tx, *field, off);
	if (!rc)
		rc = pmtx_map_open(r, off, NULL, &m);
	src = (struct mm_src){.m = mod, .big = big};
	if (!rc)
		rc = pmtx_map_load(tx, m, mm_next_pair, &src, big ? 100 : 50);
	pmtx_map_close(m);
	return ct_tx_end(tx, rc);
}

static int wmm_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	static struct mm_model m;
	ms_sort();
	mm_model_init(&m);
	int rc = create_map(r, &m, 1, &croot(r)->map);
	return rc ? rc : create_map(r, &m, 0, &croot(r)->smap);
}

static size_t wmm_observe(const pmtx_explore_env *e, pmtx_region *r,
                          unsigned t, uint64_t *out, size_t max, char *msg,
                          size_t len)
{
	size_t n = mm_observe_one(r, croot(r)->map, 1, out, max, msg, len);
	if (n == 0 || n == (size_t)-1)
		return n;
	size_t s = mm_observe_one(r, croot(r)->smap, 0, out + n, max - n,
	                          msg, len);
	if (s == 0 || s == (size_t)-1)
		return s;
	n += s;
	if (!croot(r)->tmap) {
		out[n] = 0;
		return n < max ? n + 1 : 0;
	}
	size_t tn = mm_observe_one(r, croot(r)->tmap, 0, out + n, max - n,
	                           msg, len);
	return tn == 0 || tn == (size_t)-1 ? tn : n + tn;
}

/* Every block of the map at off (map_walk); nonzero if it cannot be
 * walked. */
static int mm_walk(pmtx_region *r, pmtx_off off, pmtx_explore_block_fn fn,
                   void *arg)
{
	pmtx_map *m;
	if (pmtx_map_open(r, off, NULL, &m))
		return 1;
	int rc = map_walk(m, fn, arg);
	pmtx_map_close(m);
	return rc != 0;
}

static int wmm_walk(const pmtx_explore_env *e, pmtx_region *r,
                    pmtx_explore_block_fn fn, void *arg)
{
	return mm_walk(r, croot(r)->map, fn, arg) ||
	       mm_walk(r, croot(r)->smap, fn, arg) ||
	       (croot(r)->tmap && mm_walk(r, croot(r)->tmap, fn, arg));
}

static const pmtx_explore_workload wl_map = CONT_WORKLOAD(
	"map",
	"ordered maps (B+trees): u64 keys bulk-loaded full, byte keys half "
	"full; inserts and deletes that split and merge leaves and inner "
	"nodes, grow and shrink the tree; NX, XX",
	0, wmm_setup, wmm_run, wmm_observe, wmm_model, wmm_walk);

const pmtx_explore_workload *const ct_cont_workloads[] = {
	&wl_hmap, &wl_map, &wl_clist, &wl_str, &wl_cross};
const size_t ct_ncont_workloads =
	sizeof(ct_cont_workloads) / sizeof(*ct_cont_workloads);
