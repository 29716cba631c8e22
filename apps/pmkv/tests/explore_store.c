/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * explore_store.c - the crash-state explorer over pmkv's store
 * (pmtx_explore.h): every crash point of a run of store operations, for
 * the opt version (workload "store") under undo, redo, redo-async and auto
 * (every runtime in turn, so that one region holds logs of all three at
 * once), and for the wrapped version ("store-wrapped") under undo, redo,
 * copy-on-write and auto, with the explorer's checks (recovery,
 * atomicity against a model, heap check, no leak, complete recovery) and
 * the store's own check (pmkv_check: every chain well formed, every key
 * in its bucket, every object well formed, the counts right) on every
 * image, and the leak check over pmkv_walk's blocks (the hash map's
 * blocks in the opt version).
 *
 * The run: keys key0..key11 and the counter ctr, one thread; operation i
 * is, by the seed: SET of a new value (short, or long: 300 to 500
 * bytes), SET NX, DEL of two keys, INCRBY, APPEND, MSET of two keys, a
 * group of SET, INCRBY and DEL in one transaction (store.c S8), the same
 * group with a last operation that is the client's mistake (an INCRBY of
 * letters: it fails alone, and the group commits the rest, store.c S13,
 * as an EXEC does; the two alternate at operations 6, 14, 22, ...),
 * a SET of the key ttl
 * with an expiry long past (held, never seen; operations 2, 10, 18, ...)
 * and two operations later a step of active expiry over the whole table
 * (store.c S10: it removes ttl), and now and then
 * FLUSHALL (its detach, then its sweep in batches). The
 * key space starts at 4 buckets (the hash map's smallest; the wrapped
 * table's by initial_buckets), so inserts split buckets and the segment
 * table or directory grows. In the opt version, operations 1 and 5 of
 * every 8 write a collection (store.c S14), in turn: HSET, HDEL of the
 * hash h, SADD, SREM of the set s, RPUSH, LPOP of the list l, ZADD, ZREM
 * of the sorted set z (members of six names; in the first half of every
 * 64 operations a removal takes the member just added, so that the
 * collection empties and its key goes), and operations 0 of every 8
 * replace one of them with a
 * string or delete it (its containers freed); the groups HSET a field
 * too. Operations 3, 19, 35, ... COPY a key onto another with REPLACE,
 * in the opt version after a COPY of the collection written two
 * operations before to database 1 (store_copy.c Y1). The model replays
 * the same operations on plain arrays.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmtx.h>
#include <pmtx_explore.h>

#include "common/util.h"
#include "containers/hmap.h" /* hmap_fix_seed */
#include "store.h"
#include "store_copy.h"
#include "store_hash.h"
#include "store_list.h"
#include "store_set.h"
#include "store_zset.h"

#define NKEYS 12
#define NCOLL 4 /* the collections h, s, l, z */
#define NMEM 6  /* a collection's member names */
#define NOBS (NKEYS + 2 + NCOLL) /* the keys, the counter, the key count,
                                  * the collections */

enum kind { K_SET, K_SETLONG, K_SETNX, K_DEL2, K_INCR, K_APPEND, K_MSET,
            K_FILL, K_FLUSH, NKINDS, K_GROUP = NKINDS, K_GROUPFAIL, K_TTL,
            K_EXPIRE,
            /* the collections' writes, then replacing or deleting one */
            K_HSET, K_HDEL, K_SADD, K_SREM, K_RPUSH, K_LPOP, K_ZADD, K_ZREM,
            K_CSET, K_CDEL,
            /* COPY: a key onto another, and a collection to database 1 */
            K_COPY };
#define NCOLLOPS (K_ZREM - K_HSET + 1)

static const char *const coll_key[NCOLL] = {"h", "s", "l", "z"};

struct op {
	enum kind kind;
	unsigned a, b;
	int64_t d;
};

static void op_of(uint64_t seed, uint64_t i, struct op *o)
{
	uint64_t r = pmtx_mix64(seed * 1000003 + i);
	o->kind = (enum kind)(r % NKINDS);
	if (o->kind == K_FLUSH && (r >> 8) % 3)
		o->kind = K_FILL; /* FLUSHALL only now and then */
	if (o->kind == K_SETNX && (r >> 40) % 3) /* groups, a fifth of them
	                                             failing */
		o->kind = (r >> 44) % 5 ? K_GROUP : K_GROUPFAIL;
	if (i % 8 == 2) /* then K_EXPIRE two operations later */
		o->kind = K_TTL;
	if (i % 8 == 4)
		o->kind = K_EXPIRE;
	if (i % 8 == 6) /* every seed's run holds both kinds of group */
		o->kind = i % 16 == 6 ? K_GROUP : K_GROUPFAIL;
	if (i % 8 == 1 || i % 8 == 5) /* a collection's write: in turn */
		o->kind = (enum kind)(K_HSET + (i / 4) % NCOLLOPS);
	if (i % 16 == 3) /* a COPY after a collection's write */
		o->kind = K_COPY;
	if (i % 8 == 0 && i) /* a collection replaced, or deleted */
		o->kind = i % 16 == 0 ? K_CSET : K_CDEL;
	o->a = (unsigned)((r >> 16) % NKEYS);
	o->b = (unsigned)((r >> 24) % NKEYS);
	if ((i % 8 == 1 || i % 8 == 5) && i % 64 < 32)
		o->a = (unsigned)(i / 8); /* a removal takes the member just
		                           * added */
	o->d = (int64_t)((r >> 32) % 1000) - 300;
}

static void key_of(unsigned k, char *buf)
{
	snprintf(buf, 8, "key%u", k);
}

/* The value operation i writes: short, or longer than a few lines. */
static size_t value_of(uint64_t i, int longer, char *buf, size_t cap)
{
	size_t n = longer ? 300 + i % 200 : 4 + i % 10;
	if (n > cap)
		n = cap;
	for (size_t k = 0; k < n; k++)
		buf[k] = (char)('a' + (i + k) % 26);
	return n;
}

/* ---- the run ---- */

static struct {
	pmtx_region *r;
	struct pmkv_store *s;
} g;

static void config(const pmtx_explore_env *e, struct pmkv_config *c)
{
	pmkv_config_init(c);
	c->runtime = e->runtime;
	c->flavour = strcmp(e->workload->name, "store-wrapped") ? PMKV_OPT
	                                                        : PMKV_WRAPPED;
	c->initial_buckets = PMKV_NBASE_MIN;
}

static struct pmkv_store *store_for(const pmtx_explore_env *e, pmtx_region *r)
{
	struct pmkv_config c;
	char msg[200] = "";
	if (g.r == r)
		return g.s;
	config(e, &c);
	if (pmkv_attach(r, &c, 0, &g.s, msg, sizeof(msg)))
		return NULL;
	g.r = r;
	return g.s;
}

static int store_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	struct pmkv_store *s = store_for(e, r);
	g.r = NULL; /* the run attaches again, in its own process */
	if (!s)
		return PMTX_E_CORRUPT;
	pmkv_detach(s);
	return 0;
}

static void ignore(void *arg, const void *p, size_t n)
{
	(void)arg, (void)p, (void)n;
}
/* K_FILL: ten fresh keys in one MSET, which split buckets and grow the
 * directory. */
static int fill(struct pmkv_store *s, uint64_t i)
{
	char names[10][32];
	struct pmkv_key keys[10], vals[10];
	for (unsigned k = 0; k < 10; k++) {
		int n = snprintf(names[k], sizeof(names[k]), "fill%llu.%u",
		                 (unsigned long long)i, k);
		keys[k] = (struct pmkv_key){names[k], (size_t)n};
		vals[k] = (struct pmkv_key){"f", 1};
	}
	return pmkv_mset(s, keys, vals, 10);
}

static int wrapped_run; /* the wrapped version: no collections */

static void ignore_count(void *arg, size_t key, uint64_t n)
{
	(void)arg, (void)key, (void)n;
}

/* A member name, and a short value, of operation i. */
static size_t member_of(unsigned a, char *buf)
{
	return (size_t)snprintf(buf, 8, "m%u", a % NMEM);
}

/* The collection write of kind k (K_HSET to K_ZREM, K_CSET, K_CDEL): a
 * wrong type is the client's mistake (the key was replaced by a
 * string), and changes nothing. */
static int coll_write(struct pmkv_store *s, enum kind k, const struct op *o,
                      uint64_t i)
{
	char m[8], v[16];
	size_t mn = member_of(o->a, m);
	int vn = snprintf(v, sizeof(v), "v%llu", (unsigned long long)i);
	struct pmkv_key mk = {m, mn}, vk = {v, (size_t)vn};
	const char *ck = coll_key[o->b % NCOLL];
	uint64_t n;
	int done, found;
	long at;
	switch (k) {
	case K_HSET: return pmkv_hset(s, "h", 1, &mk, &vk, 1, 0, &n);
	case K_HDEL: return pmkv_hdel(s, "h", 1, &mk, 1, &n);
	case K_SADD: return pmkv_sadd(s, "s", 1, &mk, 1, &n);
	case K_SREM: return pmkv_srem(s, "s", 1, &mk, 1, &n);
	case K_RPUSH:
		return pmkv_list_push(s, "l", 1, 1, 0, &vk, 1, &n);
	case K_LPOP: {
		struct pmkv_key lk = {"l", 1};
		struct pmkv_elems out = {ignore_count, ignore, NULL};
		return pmkv_list_pop(s, &lk, 1, 0, 1, &out, &at);
	}
	case K_ZADD: {
		struct pmkv_zpair zp = {(double)(o->d % 7), m, mn};
		struct pmkv_zadd_res zr;
		return pmkv_zadd(s, "z", 1, 0, &zp, 1, &zr);
	}
	case K_ZREM: return pmkv_zrem(s, "z", 1, &mk, 1, &n);
	case K_CSET:
		return pmkv_set(s, ck, 1, "str", 3, 0, 0, &done, ignore, NULL,
		                &found);
	default: {
		struct pmkv_key dk = {ck, 1};
		return pmkv_del(s, &dk, 1, &n);
	}
	}
}

/* K_GROUP and K_GROUPFAIL: SET a (a long value: a new entry), INCRBY the
 * counter, DEL b, HSET a field of h, in one group; K_GROUPFAIL then INCRBYs a, which holds
 * letters: that operation fails alone, and the group commits the rest
 * (store.c S13). */
static int group(struct pmkv_store *s, const struct op *o, uint64_t i)
{
	char ka[8], kb[8], v[600];
	int done, found, rc;
	int64_t res;
	uint64_t n;
	key_of(o->a, ka);
	key_of(o->b, kb);
	size_t vn = value_of(i, 1, v, sizeof(v));
	struct pmkv_key del[1] = {{kb, strlen(kb)}};
	if ((rc = pmkv_group_begin(s)))
		return rc;
	rc = pmkv_set(s, ka, strlen(ka), v, vn, 0, 0, &done, ignore, NULL,
	              &found);
	if (!rc)
		rc = pmkv_incrby(s, "ctr", 3, o->d, &res);
	if (!rc && o->b != o->a)
		rc = pmkv_del(s, del, 1, &n);
	if (!rc && !wrapped_run)
		rc = coll_write(s, K_HSET, o, i);
	if (rc == PMKV_E_WRONGTYPE) /* h holds a string: fails alone */
		rc = 0;
	if (!rc && o->kind == K_GROUPFAIL)
		rc = pmkv_incrby(s, ka, strlen(ka), 1, &res);
	int end = pmkv_group_end(s);
	if (o->kind == K_GROUPFAIL)
		return rc == PMKV_E_NOTINT ? end : rc ? rc : PMTX_E_CORRUPT;
	return rc ? rc : end;
}

/* K_COPY: the collection operation i - 2 wrote to database 1 (REPLACE;
 * not observed, but a copy cut by a crash would leave an empty
 * collection there, which the check refuses), then key a onto key b
 * (REPLACE). */
static int copy(struct pmkv_store *s, const struct op *o, uint64_t i,
                const char *ka, const char *kb)
{
	const char *ck = coll_key[(i - 2) / 4 % NCOLLOPS / 2];
	int done, rc = 0;
	if (!wrapped_run)
		rc = pmkv_copy(s, ck, 1, ck, 1, 1, 1, &done);
	if (!rc && o->a != o->b)
		rc = pmkv_copy(s, ka, strlen(ka), kb, strlen(kb), 0, 1, &done);
	return rc;
}

static int run_op(struct pmkv_store *s, const struct op *o, uint64_t i)
{
	char ka[8], kb[8], v[600];
	int done, found;
	int64_t res;
	uint64_t n;
	key_of(o->a, ka);
	key_of(o->b, kb);
	size_t vn = value_of(i, o->kind == K_SETLONG, v, sizeof(v));
	struct pmkv_key keys[2] = {{ka, strlen(ka)}, {kb, strlen(kb)}};
	struct pmkv_key vals[2] = {{v, vn}, {v, vn / 2 + 1}};
	switch (o->kind) {
	case K_SET:
	case K_SETLONG:
	case K_SETNX:
		return pmkv_set(s, ka, strlen(ka), v, vn,
		                o->kind == K_SETNX ? PMKV_SET_NX : 0, 0, &done,
		                ignore, NULL, &found);
	case K_DEL2: return pmkv_del(s, keys, 2, &n);
	case K_INCR: return pmkv_incrby(s, "ctr", 3, o->d, &res);
	case K_APPEND: return pmkv_append(s, ka, strlen(ka), v, 3 + i % 5, &n);
	case K_MSET: return pmkv_mset(s, keys, vals, 2);
	case K_GROUP:
	case K_GROUPFAIL: return group(s, o, i);
	case K_HSET: case K_HDEL: case K_SADD: case K_SREM: case K_RPUSH:
	case K_LPOP: case K_ZADD: case K_ZREM: case K_CSET: case K_CDEL: {
		if (wrapped_run)
			return 0;
		int rc = coll_write(s, o->kind, o, i);
		return rc == PMKV_E_WRONGTYPE ? 0 : rc;
	}
	case K_FILL: return fill(s, i);
	case K_COPY: return copy(s, o, i, ka, kb);
	case K_TTL:
		return pmkv_set(s, "ttl", 3, v, vn, 0, 1, &done, ignore, NULL,
		                &found);
	case K_EXPIRE: {
		uint64_t cursor = 0, seen;
		return pmkv_expire_step(s, pmkv_now_ms(), &cursor, 1u << 30,
		                        &seen, &n);
	}
	default: return pmkv_flushall(s);
	}
}

static int store_run(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
                     uint64_t i)
{
	(void)t;
	struct pmkv_store *s = store_for(e, r);
	struct op o;
	if (!s)
		return PMTX_E_CORRUPT;
	wrapped_run = !strcmp(e->workload->name, "store-wrapped");
	op_of(e->seed, i, &o);
	return run_op(s, &o, i);
}

/* ---- what the store holds ---- */

static uint64_t word_of(const char *v, size_t n)
{
	uint64_t h = n;
	for (size_t k = 0; k < n; k++)
		h = pmtx_mix64(h ^ (uint8_t)v[k]);
	return h | 1; /* 0 is "absent" */
}

struct got {
	char v[2048];
	size_t n;
};

static void keep(void *arg, const void *p, size_t n)
{
	struct got *gt = arg;
	gt->n = n < sizeof(gt->v) ? n : sizeof(gt->v);
	memcpy(gt->v, p, gt->n);
}

static int observe_key(struct pmkv_store *s, const char *k, uint64_t *out)
{
	struct got gt;
	int found;
	int rc = pmkv_get(s, k, strlen(k), keep, &gt, &found);
	*out = !rc && found ? word_of(gt.v, gt.n) : 0;
	return rc;
}

/* A collection as bytes (its type's letter, then its content in a fixed
 * order), the same for the store and the model. */
struct ser {
	char b[4096];
	size_t n;
};

static void ser_add(struct ser *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void ser_add(struct ser *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(w->b + w->n, sizeof(w->b) - w->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		w->n = w->n + (size_t)k < sizeof(w->b) ? w->n + (size_t)k
		                                       : sizeof(w->b) - 1;
}

static void ser_elem(void *arg, const void *p, size_t n)
{
	ser_add(arg, "%.*s|", (int)n, (const char *)p);
}

static void ser_count(void *arg, size_t key, uint64_t n)
{
	(void)arg, (void)key, (void)n;
}

static void ser_zbegin(void *arg, size_t key, uint64_t n)
{
	(void)arg, (void)key, (void)n;
}

static int ser_zelem(void *arg, const void *m, size_t n, double score)
{
	ser_add(arg, "%.*s:%g;", (int)n, (const char *)m, score);
	return 0;
}

/* The collection c's word (0: absent). */
static int observe_coll(struct pmkv_store *s, unsigned c, uint64_t *out)
{
	const char *k = coll_key[c];
	struct ser w = {.n = 0};
	int type, rc = pmkv_type(s, k, 1, &type);
	if (rc || type < 0)
		return *out = 0, rc;
	if (type == PMKV_T_STRING)
		return observe_key(s, k, out);
	ser_add(&w, "%s", k);
	for (unsigned j = 0; j < NMEM && (type == PMKV_T_HASH ||
	                                  type == PMKV_T_SET) && !rc; j++) {
		char m[8];
		struct pmkv_key mk = {m, member_of(j, m)};
		struct got gt;
		unsigned char hit;
		int found;
		if (type == PMKV_T_HASH &&
		    !(rc = pmkv_hget(s, k, 1, m, mk.n, keep, &gt, &found)) &&
		    found)
			ser_add(&w, "%s=%.*s;", m, (int)gt.n, gt.v);
		if (type == PMKV_T_SET &&
		    !(rc = pmkv_smismember(s, k, 1, &mk, 1, &hit)) && hit)
			ser_add(&w, "%s;", m);
	}
	if (type == PMKV_T_LIST) {
		struct pmkv_elems sink = {ser_count, ser_elem, &w};
		rc = pmkv_list_range(s, k, 1, 0, -1, &sink);
	}
	if (type == PMKV_T_ZSET) {
		struct pmkv_zrange zr = {.by = PMKV_ZBY_RANK, .start = 0,
		                         .end = -1, .limit = -1};
		struct pmkv_zsink sink = {ser_zbegin, ser_zelem, &w};
		rc = pmkv_zrange(s, k, 1, &zr, &sink);
	}
	*out = word_of(w.b, w.n);
	return rc;
}

static size_t store_observe(const pmtx_explore_env *e, pmtx_region *r,
                            unsigned t, uint64_t *out, size_t max,
                            char *msg, size_t len)
{
	(void)t;
	struct pmkv_config c;
	struct pmkv_store *s;
	int rc = 0;
	if (max < NOBS)
		return 0;
	config(e, &c);
	msg[0] = 0;
	if (pmkv_attach(r, &c, PMKV_ATTACH_INSPECT, &s, msg, len) ||
	    pmkv_check(s, msg, len)) {
		pmkv_detach(s);
		return (size_t)-1;
	}
	for (unsigned k = 0; k < NKEYS && !rc; k++) {
		char key[8];
		key_of(k, key);
		rc = observe_key(s, key, &out[k]);
	}
	if (!rc)
		rc = observe_key(s, "ctr", &out[NKEYS]);
	for (unsigned j = 0; j < NCOLL && !rc; j++)
		rc = observe_coll(s, j, &out[NKEYS + 2 + j]);
	out[NKEYS + 1] = pmkv_dbsize(s);
	pmkv_detach(s);
	if (rc) {
		snprintf(msg, len, "lookup failed: %s", pmkv_strerror(rc));
		return (size_t)-1;
	}
	return NOBS;
}

struct walk_arg {
	pmtx_explore_block_fn fn;
	void *arg;
};

static int walk_fn(pmtx_off off, void *arg)
{
	struct walk_arg *w = arg;
	return w->fn(off, w->arg);
}

static int store_walk(const pmtx_explore_env *e, pmtx_region *r,
                      pmtx_explore_block_fn fn, void *arg)
{
	struct pmkv_config c;
	struct pmkv_store *s;
	struct walk_arg w = {fn, arg};
	char msg[200];
	config(e, &c);
	if (pmkv_attach(r, &c, PMKV_ATTACH_INSPECT, &s, msg, sizeof(msg)))
		return 1;
	int rc = pmkv_walk(s, walk_fn, &w);
	pmkv_detach(s);
	return rc;
}

/* ---- the model: the same operations on plain memory ---- */

struct mkey {
	int live;
	char v[4096];
	size_t n;
};

/* A collection key of the model: absent (0), a string "str" (1), or a
 * collection (2) whose content is its type's part. */
struct mcoll {
	int state;
	char hv[NMEM][16];  /* h: the fields' values ("" absent) */
	int sm[NMEM];       /* s: members */
	char lv[64][16];    /* l: the elements */
	unsigned ln;
	int zl[NMEM];       /* z: members, and their scores */
	double zs[NMEM];
};

struct model {
	struct mkey k[NKEYS + 1]; /* the keys, then ctr */
	uint64_t nkeys;           /* every key, fill keys included */
	int ttl;                  /* the expired key ttl is held (K_TTL) */
	struct mcoll c[NCOLL];    /* h, s, l, z */
};

/* The collection c becomes absent, a string, or a collection. */
static void mc_state(struct model *m, unsigned c, int state)
{
	struct mcoll *x = &m->c[c];
	m->nkeys += (uint64_t)(x->state == 0 && state != 0);
	m->nkeys -= (uint64_t)(x->state != 0 && state == 0);
	if (state != 2)
		memset(x, 0, sizeof(*x));
	x->state = state;
}

/* c is empty now: the key goes (layout.h L3). */
static void mc_maybe_empty(struct model *m, unsigned c)
{
	struct mcoll *x = &m->c[c];
	int any = x->ln > 0;
	for (unsigned j = 0; j < NMEM; j++)
		any |= x->hv[j][0] || x->sm[j] || x->zl[j];
	if (!any)
		mc_state(m, c, 0);
}

static void mc_op(struct model *m, enum kind k, const struct op *o,
                  uint64_t i)
{
	static const unsigned which[] = {0, 0, 1, 1, 2, 2, 3, 3};
	unsigned j = o->a % NMEM;
	unsigned c = k >= K_CSET ? o->b % NCOLL : which[k - K_HSET];
	struct mcoll *x = &m->c[c];
	if (k == K_CSET || k == K_CDEL)
		return mc_state(m, c, k == K_CSET);
	if (x->state == 1) /* WRONGTYPE: nothing */
		return;
	int adds = k == K_HSET || k == K_SADD || k == K_RPUSH || k == K_ZADD;
	if (adds)
		mc_state(m, c, 2);
	else if (x->state == 0)
		return;
	switch (k) {
	case K_HSET:
		snprintf(x->hv[j], sizeof(x->hv[j]), "v%llu",
		         (unsigned long long)i);
		break;
	case K_HDEL: x->hv[j][0] = 0; break;
	case K_SADD: x->sm[j] = 1; break;
	case K_SREM: x->sm[j] = 0; break;
	case K_RPUSH:
		snprintf(x->lv[x->ln++], sizeof(x->lv[0]), "v%llu",
		         (unsigned long long)i);
		break;
	case K_LPOP:
		memmove(x->lv, x->lv + 1, (x->ln - 1) * sizeof(x->lv[0]));
		x->ln--;
		break;
	case K_ZADD: x->zl[j] = 1, x->zs[j] = (double)(o->d % 7); break;
	default: x->zl[j] = 0; break;
	}
	mc_maybe_empty(m, c);
}

/* The model's word for collection c, as observe_coll builds it. */
static uint64_t mc_word(const struct model *m, unsigned c)
{
	const struct mcoll *x = &m->c[c];
	struct ser w = {.n = 0};
	if (x->state == 0)
		return 0;
	if (x->state == 1)
		return word_of("str", 3);
	ser_add(&w, "%s", coll_key[c]);
	for (unsigned j = 0; j < NMEM; j++) {
		if (c == 0 && x->hv[j][0])
			ser_add(&w, "m%u=%s;", j, x->hv[j]);
		if (c == 1 && x->sm[j])
			ser_add(&w, "m%u;", j);
	}
	for (unsigned j = 0; c == 2 && j < x->ln; j++)
		ser_add(&w, "%s|", x->lv[j]);
	int taken[NMEM] = {0};
	for (unsigned done = 0; c == 3 && done < NMEM; done++) {
		int best = -1; /* the next by (score, name) */
		for (unsigned j = 0; j < NMEM; j++)
			if (x->zl[j] && !taken[j] &&
			    (best < 0 || x->zs[j] < x->zs[best]))
				best = (int)j;
		if (best < 0)
			break;
		ser_add(&w, "m%d:%g;", best, x->zs[best]);
		taken[best] = 1;
	}
	return word_of(w.b, w.n);
}

static void m_set(struct model *m, unsigned k, const char *v, size_t n)
{
	m->nkeys += !m->k[k].live;
	m->k[k].live = 1;
	memcpy(m->k[k].v, v, n);
	m->k[k].n = n;
}

static void m_del(struct model *m, unsigned k)
{
	m->nkeys -= m->k[k].live;
	m->k[k].live = 0;
}

static void m_incr(struct model *m, int64_t d)
{
	struct mkey *c = &m->k[NKEYS];
	char buf[24] = "0";
	if (c->live && c->n < sizeof(buf)) {
		memcpy(buf, c->v, c->n);
		buf[c->n] = 0;
	}
	long long v = strtoll(buf, NULL, 10);
	int n = snprintf(buf, sizeof(buf), "%lld", v + d);
	m_set(m, NKEYS, buf, (size_t)n);
}

static void m_op(struct model *m, const struct op *o, uint64_t i)
{
	char v[600];
	size_t vn = value_of(i, o->kind == K_SETLONG, v, sizeof(v));
	struct mkey *a = &m->k[o->a];
	switch (o->kind) {
	case K_SETNX:
		if (a->live)
			break;
		/* fall through */
	case K_SET:
	case K_SETLONG: m_set(m, o->a, v, vn); break;
	case K_DEL2:
		m_del(m, o->a);
		m_del(m, o->b);
		break;
	case K_INCR: m_incr(m, o->d); break;
	case K_APPEND: {
		char buf[4096];
		size_t old = a->live ? a->n : 0, add = 3 + i % 5;
		memcpy(buf, a->v, old);
		memcpy(buf + old, v, add);
		m_set(m, o->a, buf, old + add);
		break;
	}
	case K_MSET:
		m_set(m, o->a, v, vn);
		m_set(m, o->b, v, vn / 2 + 1);
		break;
	case K_GROUP:
	case K_GROUPFAIL: {
		size_t ln = value_of(i, 1, v, sizeof(v));
		m_set(m, o->a, v, ln);
		m_incr(m, o->d);
		if (o->b != o->a)
			m_del(m, o->b);
		if (!wrapped_run)
			mc_op(m, K_HSET, o, i);
		break;
	}
	case K_HSET: case K_HDEL: case K_SADD: case K_SREM: case K_RPUSH:
	case K_LPOP: case K_ZADD: case K_ZREM: case K_CSET: case K_CDEL:
		if (!wrapped_run)
			mc_op(m, o->kind, o, i);
		break;
	case K_FILL: m->nkeys += 10; break;
	case K_COPY:
		if (a->live && o->a != o->b)
			m_set(m, o->b, a->v, a->n);
		break;
	case K_TTL:
		m->nkeys += !m->ttl;
		m->ttl = 1;
		break;
	case K_EXPIRE:
		m->nkeys -= (uint64_t)m->ttl;
		m->ttl = 0;
		break;
	default: memset(m, 0, sizeof(*m)); break;
	}
}

static size_t store_model(const pmtx_explore_env *e, unsigned t, uint64_t k,
                          uint64_t *out, size_t max)
{
	(void)t;
	static struct model m;
	struct op o;
	if (max < NOBS)
		return 0;
	wrapped_run = !strcmp(e->workload->name, "store-wrapped");
	memset(&m, 0, sizeof(m));
	for (uint64_t i = 0; i < k; i++) {
		op_of(e->seed, i, &o);
		m_op(&m, &o, i);
	}
	for (unsigned j = 0; j <= NKEYS; j++)
		out[j] = m.k[j].live ? word_of(m.k[j].v, m.k[j].n) : 0;
	out[NKEYS + 1] = m.nkeys;
	for (unsigned c = 0; c < NCOLL; c++)
		out[NKEYS + 2 + c] = mc_word(&m, c);
	return NOBS;
}

/* Both versions run the same operations through the same store API
 * (store_setup picks the version by the workload's name). */
#define STORE_WORKLOAD                                                     \
	.nthreads = 1, .root_size = sizeof(struct pmkv_root),              \
	.layout = PMKV_LAYOUT, .max_ntx = 60, .setup = store_setup,        \
	.run = store_run, .observe = store_observe, .model = store_model,  \
	.walk = store_walk

static const pmtx_explore_workload wl_store = {
	.name = "store",
	.help = "pmkv's store (opt, on pmtx_hmap): SET, SET NX, DEL, INCRBY, "
	        "APPEND, MSET, bucket splits, active expiry, FLUSHALL",
	.runtimes = PMTX_EXPLORE_UNDO | PMTX_EXPLORE_REDO |
	            PMTX_EXPLORE_REDO_ASYNC | PMTX_EXPLORE_AUTO |
	            PMTX_EXPLORE_TWIN,
	STORE_WORKLOAD};

static const pmtx_explore_workload wl_wrapped = {
	.name = "store-wrapped",
	.help = "the same run over pmkv's wrapped version: every object "
	        "behind a pmtx wrapper",
	.runtimes = PMTX_EXPLORE_UNDO | PMTX_EXPLORE_REDO | PMTX_EXPLORE_COW |
	            PMTX_EXPLORE_AUTO,
	STORE_WORKLOAD};

int main(int argc, char **argv)
{
	const pmtx_explore_workload *w[] = {&wl_store, &wl_wrapped};
	/* The explorer runs setup and the workload more than once (the run
	 * that counts the crash points, the explored one, a replay): the opt
	 * version's maps take a fixed hash seed, so that every run splits
	 * its buckets alike (tools/crashtest/wl_containers.c WC6). */
	hmap_fix_seed(0x706d6b7673656564ull);
	return pmtx_explore_main(argc, argv, w, 2);
}
