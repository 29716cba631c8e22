/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * explore_store.c - the crash-state explorer over pmcached's store
 * (pmtx_explore.h): every crash point of a run of store operations, under
 * each runtime pmcached supports, with the explorer's checks (recovery,
 * atomicity against a model, heap check, no leak, complete recovery) and
 * the store's own structure check (mc_store_check) on every image.
 *
 * The run: keys key0..key9, one thread; operation i is chosen from the
 * seed: set, add, replace, append, prepend, cas (right and wrong unique),
 * delete, a numeric set, incr, decr, touch, flush_all, hold / release
 * of a reference (a get whose item is then deleted or replaced goes to a
 * pending-reclamation list; an incr of a held item makes a new one), and
 * the meta protocol's state changes (items.c I8): md I (stale), mg
 * winning a stale item's token, mg N (vivify a miss, won), mg R (a
 * touched item's token), ms I with an older unique (a stale store), ma
 * with N and T (one transaction: a miss created, a hit incremented with
 * its expiry set, lost when the value grows as memcached's). The
 * model keeps each key's stale and token bits and whether its expiry is
 * set, and the observed word of a key includes its bits. The memory limit is small, so stores evict;
 * the table starts at 4 buckets, so it expands. The model replays the
 * same operations on a plain copy of the cache's rules (values, LRU lists
 * and eviction order, flush_all's lazy removal), so atomicity is checked
 * value by value: after a crash each key holds what the model says after
 * some k operations, done <= k <= started.
 *
 * The run "full" (lru.c U5): setup fills a fixed 4 MiB region with old
 * items of one size until the heap has no room (the region cannot grow,
 * as on a full disk); then each operation stores key0..key9 with values
 * of three other sizes, and increments, so a store often finds no room,
 * evicts old items in transactions of its own and tries again. The old
 * items are far more than the run can evict and older than every key,
 * so the keys are never victims and the model is plain: each key holds
 * its last value.
 *
 * The checker's own tests (CTest pmcached_explore_catches_*):
 * MC_EXPLORE_BREAK=model makes the model forget the state a store sets
 * (mg N's vivified item's token, ms I's stale bit), and MC_EXPLORE_BREAK=split runs ms I's
 * stale store as two transactions (a fresh store, then md I); each must
 * be reported.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmtx.h>
#include <pmtx_explore.h>

#include "store_int.h"

#define NKEYS 10
#define LIMIT 1500u
#define NOW 1700000000

enum kind { K_SET, K_ADD, K_REPLACE, K_APPEND, K_PREPEND, K_CAS_GOOD,
            K_CAS_BAD, K_DELETE, K_SETNUM, K_INCR, K_DECR, K_TOUCH,
            K_HOLD, K_RELEASE, K_FLUSH, K_STALE, K_WIN, K_VIVIFY,
            K_RECACHE, K_CAS_STALE, K_MARITH, NKINDS };

/* MC_EXPLORE_BREAK: what the checker's own tests break ("" none). */
static int broken(const char *what)
{
	const char *b = getenv("MC_EXPLORE_BREAK");
	return b && strcmp(b, what) == 0;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct op {
	enum kind kind;
	unsigned key;
	char val[320];
	size_t n;
};

static void op_of(uint64_t seed, uint64_t i, struct op *o)
{
	uint64_t r = mix(seed * 1000003 + i);
	o->kind = (enum kind)(r % NKINDS);
	if (o->kind == K_FLUSH && (r >> 8) % 4)
		o->kind = K_SET; /* flush_all only now and then */
	o->key = (unsigned)((r >> 16) % NKEYS);
	if (o->kind >= K_STALE && i > 0) { /* the meta ops follow a key */
		struct op prev;
		op_of(seed, i - 1, &prev);
		o->key = prev.key;
	}
	if (o->kind == K_SETNUM) {
		o->n = (size_t)snprintf(o->val, sizeof(o->val), "%llu",
		                        (unsigned long long)(i * 7919));
		return;
	}
	o->n = o->kind == K_APPEND || o->kind == K_PREPEND ? 3
	                                                   : 20 + i * 37 % 200;
	for (size_t k = 0; k < o->n; k++)
		o->val[k] = (char)('a' + (i + k) % 26);
}

static void key_of(unsigned k, char *buf)
{
	snprintf(buf, 8, "key%u", k);
}

/* ---- the run ---- */

static int64_t fixed_now(void *arg)
{
	(void)arg;
	return NOW;
}

static struct {
	pmtx_region *r;
	struct mc_store *s;
	struct mc_ref held;
} g;

/* The store in r, attached once per process. */
static struct mc_store *attach(const pmtx_explore_env *e, pmtx_region *r,
                               size_t limit, unsigned hashpower,
                               int no_evict)
{
	if (g.r == r)
		return g.s;
	mc_store_opts o;
	mc_store_opts_init(&o);
	o.mem_limit = limit;
	o.hashpower = hashpower;
	o.no_evict = no_evict;
	o.runtime = e->runtime;
	o.now = fixed_now;
	if (mc_store_attach(r, &o, &g.s))
		return NULL;
	g.r = r;
	g.held = (struct mc_ref){0};
	return g.s;
}

static struct mc_store *store_for(const pmtx_explore_env *e, pmtx_region *r)
{
	return attach(e, r, LIMIT, 2, 0);
}

static int store_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	struct mc_store *s = store_for(e, r);
	g.r = NULL; /* the run attaches again, in its own process */
	if (!s)
		return PMTX_E_CORRUPT;
	mc_store_detach(s);
	return 0;
}

static int run_put(struct mc_store *s, const struct op *o, const char *key,
                   uint64_t i)
{
	static const enum mc_put_mode modes[] = {
		[K_SET] = MC_SET, [K_ADD] = MC_ADD, [K_REPLACE] = MC_REPLACE,
		[K_APPEND] = MC_APPEND, [K_PREPEND] = MC_PREPEND,
		[K_CAS_GOOD] = MC_CAS, [K_CAS_BAD] = MC_CAS, [K_SETNUM] = MC_SET,
		[K_CAS_STALE] = MC_CAS};
	struct mc_put p = {.mode = modes[o->kind], .key = key, .nkey = 4,
	                   .flags = (uint32_t)i, .value = o->val,
	                   .nbytes = o->n, .cas = 1};
	enum mc_result res;
	if (o->kind == K_CAS_GOOD || o->kind == K_CAS_STALE) {
		struct mc_ref ref;
		int rc = mc_store_get(s, 0, key, 4, 0, 0, &ref);
		if (rc || (p.cas = ref.cas, rc = mc_store_release(s, 0, &ref)))
			return rc;
	}
	if (o->kind == K_CAS_STALE && p.cas && broken("split")) {
		struct mc_mdel d = {.key = key, .nkey = 4, .stale = 1};
		int rc = mc_store_put(s, 0, &p, &res, NULL);
		return rc || res != MC_STORED ? rc
		                              : mc_store_mdelete(s, 0, &d, &res);
	}
	if (o->kind == K_CAS_STALE && p.cas) /* older: stored stale */
		p.cas -= 1, p.stale_ok = 1;
	return mc_store_put(s, 0, &p, &res, NULL);
}

/* The meta operations on key (items.c I8). */
static int run_meta(struct mc_store *s, const struct op *o, const char *key)
{
	struct mc_mget gt = {.key = key, .nkey = 4, .tokens = 1,
	                     .vivify = o->kind == K_VIVIFY,
	                     .recache = o->kind == K_RECACHE,
	                     .recache_time = NOW + 2000};
	struct mc_mdel d = {.key = key, .nkey = 4, .stale = 1};
	struct mc_arith a = {.key = key, .nkey = 4, .incr = 1, .delta = o->n,
	                     .touch = 1, .exptime = NOW + 1000, .vivify = 1,
	                     .initial = o->n, .viv_exptime = NOW + 1000};
	struct mc_marith_out out;
	struct mc_ref ref;
	enum mc_result res;
	if (o->kind == K_STALE)
		return mc_store_mdelete(s, 0, &d, &res);
	if (o->kind == K_MARITH)
		return mc_store_marith(s, 0, &a, &out, &res);
	int rc = mc_store_mget(s, 0, &gt, &ref);
	return rc ? rc : mc_store_release(s, 0, &ref);
}

static int store_run(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
                     uint64_t i)
{
	(void)t;
	struct mc_store *s = store_for(e, r);
	struct op o;
	char key[8];
	enum mc_result res;
	uint64_t v;
	if (!s)
		return PMTX_E_CORRUPT;
	op_of(e->seed, i, &o);
	key_of(o.key, key);
	switch (o.kind) {
	case K_DELETE: return mc_store_delete(s, 0, key, 4, &res);
	case K_INCR:
	case K_DECR:
		return mc_store_arith(s, 0, key, 4, o.kind == K_INCR, i, &v,
		                      &res);
	case K_TOUCH: return mc_store_touch(s, 0, key, 4, NOW + 1000, &res);
	case K_FLUSH: return mc_store_flush_all(s, 0, 1);
	case K_RELEASE: return mc_store_release(s, 0, &g.held);
	case K_STALE: case K_WIN: case K_VIVIFY: case K_RECACHE:
	case K_MARITH:
		return run_meta(s, &o, key);
	case K_HOLD: {
		int rc = mc_store_release(s, 0, &g.held);
		return rc ? rc : mc_store_get(s, 0, key, 4, 0, 0, &g.held);
	}
	default: return run_put(s, &o, key, i);
	}
}

/* ---- what the cache holds ---- */

static uint64_t word_of(const char *v, size_t n, uint32_t flags)
{
	uint64_t h = n;
	for (size_t k = 0; k < n; k++)
		h = mix(h ^ (uint8_t)v[k]);
	return (h ^ (uint64_t)flags << 20) | 1;
}

static size_t store_observe(const pmtx_explore_env *e, pmtx_region *r,
                            unsigned t, uint64_t *out, size_t max,
                            char *msg, size_t len)
{
	(void)e, (void)t;
	if (max < NKEYS)
		return 0;
	msg[0] = 0;
	if (mc_store_check(r, msg, len))
		return (size_t)-1;
	for (unsigned k = 0; k < NKEYS; k++) {
		char key[8];
		struct mc_ref ref;
		key_of(k, key);
		if (mc_store_peek(r, key, 4, NOW, &ref)) {
			snprintf(msg, len, "lookup of %s failed", key);
			return (size_t)-1;
		}
		out[k] = ref.off ? word_of(ref.value, ref.nbytes, ref.flags) ^
		                           (uint64_t)ref.iflags << 40
		                 : 0;
	}
	return NKEYS;
}

static int walk_fn(pmtx_off off, void *arg)
{
	void **a = arg;
	return ((pmtx_explore_block_fn)a[0])(off, a[1]);
}

static int store_walk(const pmtx_explore_env *e, pmtx_region *r,
                      pmtx_explore_block_fn fn, void *arg)
{
	(void)e;
	void *a[2] = {(void *)fn, arg};
	return mc_store_walk(r, walk_fn, a);
}

/* ---- the model: the store's rules on plain memory ---- */

enum { M_NONE, M_LIVE, M_DEAD };

struct mkey {
	int state;
	char val[1024];
	size_t n;
	uint32_t flags;
	uint8_t iflags;  /* enum mc_iflag */
	int expires;     /* touched: an expiry after NOW, before R's time */
};

struct model {
	int held;        /* the key whose current item K_HOLD holds, or -1 */
	struct mkey k[NKEYS];
	int lru[MC_NLRU][NKEYS]; /* key indices, head first */
	unsigned nlru[MC_NLRU];
	uint64_t bytes;
};

static unsigned lru_of(unsigned k)
{
	char key[8];
	key_of(k, key);
	return (unsigned)((mc_hash(key, 4) >> 56) % MC_NLRU);
}

static void m_unlink(struct model *m, unsigned k)
{
	unsigned l = lru_of(k), j = 0;
	while (m->lru[l][j] != (int)k)
		j++;
	memmove(&m->lru[l][j], &m->lru[l][j + 1],
	        (m->nlru[l] - j - 1) * sizeof(int));
	m->nlru[l]--;
	m->bytes -= mc_item_bytes(4, m->k[k].n);
	m->k[k].state = M_NONE;
	if (m->held == (int)k)
		m->held = -1; /* its item is no longer the key's */
}

/* A new item's value and state. */
struct mval {
	const char *v;
	size_t n;
	uint32_t flags;
	uint8_t iflags;
	int expires;
};

static void m_link(struct model *m, unsigned k, const struct mval *x)
{
	unsigned l = lru_of(k);
	memmove(&m->lru[l][1], &m->lru[l][0], m->nlru[l] * sizeof(int));
	m->lru[l][0] = (int)k;
	m->nlru[l]++;
	m->k[k] = (struct mkey){.state = M_LIVE, .n = x->n, .flags = x->flags,
	                        .iflags = x->iflags, .expires = x->expires};
	memcpy(m->k[k].val, x->v, x->n);
	m->bytes += mc_item_bytes(4, x->n);
}

/* lru.c's do_lru_make_room; 0 if it gives up (MC_NO_MEMORY). */
static int m_make_room(struct model *m, size_t need, unsigned *ctr)
{
	unsigned tried = 0, evicted = 0;
	while (m->bytes + need > LIMIT) {
		if (tried == 2 * MC_NLRU || evicted == MC_TXN_MAX_STRIPES - 1)
			return 0;
		unsigned l = (*ctr)++ % MC_NLRU;
		tried++;
		if (m->nlru[l]) {
			m_unlink(m, (unsigned)m->lru[l][m->nlru[l] - 1]);
			evicted++, tried = 0;
		}
	}
	return 1;
}

/* Store x for key k (old item, if any, replaced). */
static void m_store_x(struct model *m, unsigned k, const struct mval *x,
                      unsigned *ctr)
{
	static struct model before;
	char buf[1024];
	struct mval y = *x;
	before = *m;
	memcpy(buf, x->v, x->n);
	y.v = buf;
	if (m->k[k].state)
		m_unlink(m, k);
	if (!m_make_room(m, mc_item_bytes(4, x->n), ctr)) {
		*m = before; /* aborted: only the counter moved on */
		return;
	}
	m_link(m, k, &y);
}

/* A plain store: a fresh item, no state, no expiry. */
static void m_store(struct model *m, unsigned k, const char *v, size_t n,
                    uint32_t flags, unsigned *ctr)
{
	struct mval x = {v, n, flags, 0, 0};
	m_store_x(m, k, &x, ctr);
}

static int m_parse(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;
	if (n == 0 || n > 20)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return v[i] == ' ' && i > 0 ? (*out = x, 1) : 0;
		uint64_t d = (uint64_t)(v[i] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return 0;
		x = x * 10 + d;
	}
	*out = x;
	return 1;
}

/* incr/decr by d; with touch (ma T) the expiry set when the value is
 * rewritten in place (a new item keeps the old one). */
static void m_arith(struct model *m, unsigned k, int incr, uint64_t d,
                    int touch, unsigned *ctr)
{
	struct mkey *x = &m->k[k];
	uint64_t v;
	if (x->state != M_LIVE || !m_parse(x->val, x->n, &v))
		return;
	v = incr ? v + d : v < d ? 0 : v - d;
	char buf[24];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "%llu",
	                            (unsigned long long)v);
	if (n <= x->n && m->held != (int)k) {
		memset(x->val, ' ', x->n);
		memcpy(x->val, buf, n);
		x->expires |= touch;
		return;
	}
	struct mval y = {buf, n, x->flags, 0, x->expires};
	m_store_x(m, k, &y, ctr);
}

/* The meta protocol's operations (items.c I8) on a key found live or
 * absent (a dead one is already gone). */
static void m_meta(struct model *m, const struct op *o, uint64_t i,
                   unsigned *ctr)
{
	struct mkey *x = &m->k[o->key];
	int live = x->state == M_LIVE;
	int token = x->iflags & MC_IF_TOKEN_SENT;
	if (o->kind == K_STALE && live) {
		x->iflags = (uint8_t)((x->iflags | MC_IF_STALE) &
		                      ~MC_IF_TOKEN_SENT);
	} else if (o->kind == K_VIVIFY && !live) {
		struct mval y = {"", 0, 0,
		                 broken("model") ? 0 : MC_IF_TOKEN_SENT, 0};
		m_store_x(m, o->key, &y, ctr);
	} else if (o->kind == K_MARITH && !live) { /* ma N: created */
		char buf[24];
		size_t n = (size_t)snprintf(buf, sizeof(buf), "%zu", o->n);
		struct mval y = {buf, n, 0, 0, 1};
		m_store_x(m, o->key, &y, ctr);
	} else if (o->kind == K_MARITH) {
		m_arith(m, o->key, 1, o->n, 1, ctr);
	} else if (o->kind == K_CAS_STALE && live) {
		struct mval y = {o->val, o->n, (uint32_t)i,
		                 (uint8_t)((broken("model") ? 0 : MC_IF_STALE) |
		                           token), x->expires};
		m_store_x(m, o->key, &y, ctr);
	} else if (live && !token &&
	           ((x->iflags & MC_IF_STALE) ||
	            (o->kind == K_RECACHE && x->expires))) {
		x->iflags |= MC_IF_TOKEN_SENT; /* K_WIN, K_VIVIFY, K_RECACHE */
	}
}

static void m_op(struct model *m, const struct op *o, uint64_t i,
                 unsigned *ctr)
{
	struct mkey *x = &m->k[o->key];
	char v[1024];
	if (x->state == M_DEAD && o->kind != K_RELEASE && o->kind != K_FLUSH)
		m_unlink(m, o->key); /* found dead: removed (items.c I6) */
	int live = x->state == M_LIVE;
	switch (o->kind) {
	case K_ADD: if (!live) m_store(m, o->key, o->val, o->n, (uint32_t)i, ctr); break;
	case K_REPLACE:
	case K_CAS_GOOD: if (live) m_store(m, o->key, o->val, o->n, (uint32_t)i, ctr); break;
	case K_APPEND:
	case K_PREPEND: {
		if (!live)
			break;
		if (o->kind == K_APPEND) {
			memcpy(v, x->val, x->n);
			memcpy(v + x->n, o->val, o->n);
		} else {
			memcpy(v, o->val, o->n);
			memcpy(v + o->n, x->val, x->n);
		}
		struct mval y = {v, x->n + o->n, x->flags, 0, x->expires};
		m_store_x(m, o->key, &y, ctr);
		break;
	}
	case K_DELETE: if (live) m_unlink(m, o->key); break;
	case K_STALE: case K_WIN: case K_VIVIFY: case K_RECACHE:
	case K_CAS_STALE: case K_MARITH: m_meta(m, o, i, ctr); break;
	case K_TOUCH: x->expires = live; break;
	case K_HOLD: m->held = live ? (int)o->key : -1; break;
	case K_RELEASE: m->held = -1; break;
	case K_INCR:
	case K_DECR: m_arith(m, o->key, o->kind == K_INCR, i, 0, ctr); break;
	case K_FLUSH:
		for (unsigned k = 0; k < NKEYS; k++)
			if (m->k[k].state == M_LIVE)
				m->k[k].state = M_DEAD;
		break;
	case K_CAS_BAD: break;
	default: m_store(m, o->key, o->val, o->n, (uint32_t)i, ctr); break;
	}
}

static size_t store_model(const pmtx_explore_env *e, unsigned t, uint64_t k,
                          uint64_t *out, size_t max)
{
	(void)t;
	static struct model m;
	unsigned ctr = 0;
	if (max < NKEYS)
		return 0;
	memset(&m, 0, sizeof(m));
	m.held = -1;
	for (uint64_t i = 0; i < k; i++) {
		struct op o;
		op_of(e->seed, i, &o);
		m_op(&m, &o, i, &ctr);
	}
	for (unsigned j = 0; j < NKEYS; j++)
		out[j] = m.k[j].state == M_LIVE
		                 ? word_of(m.k[j].val, m.k[j].n, m.k[j].flags) ^
		                           (uint64_t)m.k[j].iflags << 40
		                 : 0;
	return NKEYS;
}

/* What both workloads share: one thread in a store's region, observed
 * and walked as a store. */
#define STORE_REGION                                                       \
	.nthreads = 1, .root_size = sizeof(struct mc_root),                 \
	.layout = MC_LAYOUT, .observe = store_observe, .walk = store_walk

static const pmtx_explore_workload wl_store = {
	STORE_REGION,
	.name = "store",
	.help = "pmcached's store: every command, eviction, expansion, "
	        "pending reclamation, flush_all, the meta protocol's stale "
	        "items and tokens",
	.runtimes = PMTX_EXPLORE_UNDO | PMTX_EXPLORE_REDO |
	            PMTX_EXPLORE_REDO_ASYNC | PMTX_EXPLORE_TWIN,
	.setup = store_setup, .run = store_run, .model = store_model};

/* ---- the run on a full heap (U5) ---- */

#define FULL_REGION (4u << 20)
#define FULL_OLD 2000u /* bytes of each old item's value */

/* The memory limit is never reached: the heap fills first. */
static struct mc_store *full_for(const pmtx_explore_env *e, pmtx_region *r,
                                 int no_evict)
{
	return attach(e, r, 64u << 20, 12, no_evict);
}

static int full_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	struct mc_store *s = full_for(e, r, 1);
	static char v[FULL_OLD];
	enum mc_result res = MC_STORED;
	int rc = 0;
	g.r = NULL;
	if (!s)
		return PMTX_E_CORRUPT;
	memset(v, 'o', sizeof(v));
	for (unsigned i = 0; !rc && res == MC_STORED; i++) {
		char key[16];
		snprintf(key, sizeof(key), "old%05u", i);
		struct mc_put p = {.mode = MC_SET, .key = key, .nkey = 8,
		                   .value = v, .nbytes = sizeof(v)};
		rc = mc_store_put(s, 0, &p, &res, NULL);
	}
	mc_store_detach(s);
	return rc;
}

/* Operation i: a SET of key i % NKEYS with a value of about 100, 5,000
 * or 30,000 bytes; every fourth, from the third, the value "9999"; and
 * right after it an incr of that key, which needs a new, longer item. */
static void full_op(uint64_t i, unsigned *key, char *v, size_t *n,
                    int *incr)
{
	static const size_t sizes[] = {100, 5000, 30000};
	*incr = i % 4 == 3;
	*key = (unsigned)((i - (uint64_t)*incr) % NKEYS);
	*n = sizes[i / NKEYS % 3] - i % 7;
	for (size_t k = 0; k < *n; k++)
		v[k] = (char)('a' + (i + k) % 26);
	if (i % 4 == 2)
		*n = (size_t)snprintf(v, 24, "9999");
}

static int full_run(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
                    uint64_t i)
{
	(void)t;
	struct mc_store *s = full_for(e, r, 0);
	static char v[30000];
	unsigned k;
	size_t n;
	int incr;
	char key[8];
	enum mc_result res;
	uint64_t out;
	if (!s)
		return PMTX_E_CORRUPT;
	full_op(i, &k, v, &n, &incr);
	key_of(k, key);
	if (incr)
		return mc_store_arith(s, 0, key, 4, 1, 1, &out, &res);
	struct mc_put p = {.mode = MC_SET, .key = key, .nkey = 4,
	                   .flags = (uint32_t)i, .value = v, .nbytes = n};
	int rc = mc_store_put(s, 0, &p, &res, NULL);
	return rc ? rc : res == MC_STORED ? 0 : PMTX_E_NOMEM;
}

static size_t full_model(const pmtx_explore_env *e, unsigned t, uint64_t k,
                         uint64_t *out, size_t max)
{
	(void)e, (void)t;
	static char val[NKEYS][30000], v[30000];
	size_t len[NKEYS] = {0};
	uint32_t flags[NKEYS] = {0};
	if (max < NKEYS)
		return 0;
	for (uint64_t i = 0; i < k; i++) {
		unsigned key;
		size_t n;
		int incr;
		full_op(i, &key, v, &n, &incr);
		uint64_t x;
		if (incr && m_parse(val[key], len[key], &x)) {
			len[key] = (size_t)snprintf(val[key], 24, "%llu",
			                            (unsigned long long)x + 1);
		} else if (!incr) {
			memcpy(val[key], v, n);
			len[key] = n;
			flags[key] = (uint32_t)i;
		}
	}
	for (unsigned j = 0; j < NKEYS; j++)
		out[j] = len[j] ? word_of(val[j], len[j], flags[j]) : 0;
	return NKEYS;
}

static const pmtx_explore_workload wl_full = {
	STORE_REGION,
	.name = "full",
	.help = "pmcached's store on a heap with no room: stores and incrs "
	        "evict old items in transactions of their own (lru.c U5)",
	.region_size = FULL_REGION,
	.runtimes = PMTX_EXPLORE_UNDO | PMTX_EXPLORE_REDO |
	            PMTX_EXPLORE_REDO_ASYNC,
	.setup = full_setup, .run = full_run, .model = full_model};

int main(int argc, char **argv)
{
	const pmtx_explore_workload *w[] = {&wl_store, &wl_full};
	return pmtx_explore_main(argc, argv, w, 2);
}
