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
 * table or directory grows. The model replays the same operations on a
 * plain array.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmtx.h>
#include <pmtx_explore.h>

#include "common/util.h"
#include "containers/hmap.h" /* hmap_fix_seed */
#include "store.h"

#define NKEYS 12
#define NOBS (NKEYS + 2) /* the keys, the counter, the key count */

enum kind { K_SET, K_SETLONG, K_SETNX, K_DEL2, K_INCR, K_APPEND, K_MSET,
            K_FILL, K_FLUSH, NKINDS, K_GROUP = NKINDS, K_GROUPFAIL, K_TTL,
            K_EXPIRE };

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
	o->a = (unsigned)((r >> 16) % NKEYS);
	o->b = (unsigned)((r >> 24) % NKEYS);
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

/* K_GROUP and K_GROUPFAIL: SET a (a long value: a new entry), INCRBY the
 * counter, DEL b, in one group; K_GROUPFAIL then INCRBYs a, which holds
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
	if (!rc && o->kind == K_GROUPFAIL)
		rc = pmkv_incrby(s, ka, strlen(ka), 1, &res);
	int end = pmkv_group_end(s);
	if (o->kind == K_GROUPFAIL)
		return rc == PMKV_E_NOTINT ? end : rc ? rc : PMTX_E_CORRUPT;
	return rc ? rc : end;
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
	case K_FILL: return fill(s, i);
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

struct model {
	struct mkey k[NKEYS + 1]; /* the keys, then ctr */
	uint64_t nkeys;           /* every key, fill keys included */
	int ttl;                  /* the expired key ttl is held (K_TTL) */
};

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
		break;
	}
	case K_FILL: m->nkeys += 10; break;
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
	memset(&m, 0, sizeof(m));
	for (uint64_t i = 0; i < k; i++) {
		op_of(e->seed, i, &o);
		m_op(&m, &o, i);
	}
	for (unsigned j = 0; j <= NKEYS; j++)
		out[j] = m.k[j].live ? word_of(m.k[j].v, m.k[j].n) : 0;
	out[NKEYS + 1] = m.nkeys;
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
