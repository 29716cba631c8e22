/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * keyspace.c - the opt version's key space (format 2.0, layout.h): each
 * database a pmtx_hmap from key bytes to a typed object, the root naming
 * the maps and the trash. The key-space interface of store_int.h.
 *
 * DESIGN
 * Persistent: the root's db[] and trash[] (layout.h L3), the maps (the
 * library's). Volatile: a handle on each database's map, opened on the
 * offset the root names.
 *
 * Invariants
 *  K1. Every map operation runs in the store operation's transaction
 *      (x->tx), so a store operation is one transaction however many map
 *      operations it makes (store.c S1, S8); the maps are made without
 *      stripe locks: the store lock serialises every operation.
 *  K2. A handle follows the root: before each use, the offset it was
 *      opened on is compared with the root's db[i], and the generation
 *      of the root's words it was opened in with s->roots_gen, which
 *      every transaction that writes them (FLUSHALL's detach, SWAPDB, a
 *      new database's map) moves on; it is opened again when either
 *      differs. The offset alone is not enough: a map freed by a sweep
 *      leaves its offset to the next map made, of another seed, and a
 *      handle of the old one would hash every key to the wrong bucket. The
 *      root's words change only in FLUSHALL's detach and at create, whose
 *      transactions run alone under the store lock, so a plain load of
 *      them outside those transactions reads what is committed.
 *  K3. A put writes the whole typed object (layout.h L4) with one
 *      pmtx_hmap_put, in place when it fits (store.c S3): it is built in
 *      a volatile buffer first, since the map copies one contiguous
 *      value, and the view it may be built from can change under it. A lookup parses the object it finds
 *      (pmkv_obj_parse) before any byte of it is used: a malformed one is
 *      PMTX_E_CORRUPT, and so is one in a scan or a check.
 *  K4. FLUSHALL (store.c S12) moves each nonempty database's map to its
 *      trash slot, and puts a new empty map in db[0] (the others become
 *      0), in one transaction; the sweep destroys a trash map a budget of
 *      entries a step (pmtx_hmap_destroy_some) and clears its slot in the
 *      step that frees its last block. Nothing but the sweep reaches a
 *      trash map (the hash map's condition for destroy_some).
 *  K5. Every operation works on the database x->db (store.c S15).
 *      db[0] always names a map; db[1..15] name a map once the store has
 *      been opened for writing (a store made before they existed gets
 *      them at its first open: ks_dbs), and each is checked and walked
 *      as db[0] is. A database whose slot is 0 is empty to a reader.
 *  K6. Collections in the trash (store.c S14): once the root's
 *      PMKV_ROOT_TYPED flag is set, a sweep step cannot free entries
 *      blindly (pmtx_hmap_destroy_some would leak the containers their
 *      objects name): it collects up to a budget of the trash map's
 *      entries with a scan (each once: a scan that wraps around meets
 *      some again), frees each one's containers and removes it,
 *      and destroys the map once it is empty. The scan resumes at a
 *      volatile cursor (a removal never moves an entry, so it misses
 *      nothing, and a restart begins again at 0).
 *  K7. The check and the walk follow every collection an object names:
 *      each container checked by its own checker, never empty, a sorted
 *      set's two containers of the same length; every block walked.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h" /* hmap_check, hmap_buckets, hmap_walk */
#include "list.h" /* list_check, list_walk */
#include "map.h"  /* map_check, map_walk */
#include "store_int.h"

#define PUT_STACK 512u /* objects up to this size are built on the stack */

static struct pmkv_root *root_of(const struct pmkv_store *s)
{
	return (struct pmkv_root *)s->root;
}

/* The root's word at p, committed (K2). */
static pmtx_off root_word(const pmtx_off *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* The handle on database i's map, (re)opened on the root's offset (K2);
 * NULL with *rc set if the map does not open, or with *rc = 0 if the
 * database has none. */
static pmtx_hmap *db_map(struct pmkv_store *s, unsigned i, int *rc)
{
	pmtx_off off = root_word(&root_of(s)->db[i]);
	pmtx_hmap *m = s->map[i];
	*rc = 0;
	if (m && pmtx_hmap_off(m) == off && s->map_gen[i] == s->roots_gen)
		return m;
	pmtx_hmap_close(m);
	s->map[i] = NULL;
	if (off && (*rc = pmtx_hmap_open(s->r, off, NULL, &s->map[i])))
		s->map[i] = NULL;
	s->map_gen[i] = s->roots_gen;
	return s->map[i];
}

/* The operation's database's map (K5); NULL only with *rc set. */
static pmtx_hmap *map0(struct kvx *x, int *rc)
{
	pmtx_hmap *m = NULL;
	*rc = 0;
	if (x->db < PMKV_DBS)
		m = db_map(x->s, x->db, rc);
	if (!m && !*rc)
		*rc = x->db && x->db < PMKV_DBS ? PMTX_E_NOT_FOUND /* K5 */
		                                : PMTX_E_CORRUPT;
	return m;
}

/* A map for every database whose slot is 0 (K5), in x. */
static int ks_dbs(struct kvx *x)
{
	struct pmkv_root *root = root_of(x->s);
	int rc = 0;
	for (unsigned i = 0; i < PMKV_DBS && !rc; i++) {
		pmtx_off off;
		if (root_word(&root->db[i]))
			continue;
		x->wrote = 1;
		x->s->roots_gen++; /* K2 */
		if (!(rc = pmtx_hmap_create(x->tx, 0, &off)))
			rc = PMTX_SET(x->tx, root->db[i], off);
	}
	return rc;
}

static int ks_create(struct kvx *x)
{
	struct pmkv_root *root = root_of(x->s);
	uint32_t ndbs = PMKV_DBS;
	int rc = ks_dbs(x);
	if (!rc)
		rc = pmtx_write(x->tx, &root->ndbs, &ndbs, sizeof(ndbs));
	x->wrote = 1;
	return rc;
}

/* Does off name a map? (L1) */
static int map_ok(struct pmkv_store *s, pmtx_off off)
{
	pmtx_hmap *m;
	int rc = pmtx_hmap_open(s->r, off, NULL, &m);
	pmtx_hmap_close(rc ? NULL : m);
	return rc;
}

static int ks_attach(struct pmkv_store *s, char *msg, size_t len)
{
	const struct pmkv_root *root = root_of(s);
	int rc = 0;
	if (root->ndbs != PMKV_DBS || (root->flags & ~PMKV_ROOT_FLAGS) ||
	    root->reserved0) {
		snprintf(msg, len, "the root is corrupt: %u databases, flags "
		         "0x%x", root->ndbs, root->flags);
		return PMTX_E_CORRUPT;
	}
	for (unsigned i = 0; i < PMKV_DBS && !rc; i++) {
		if ((i == 0 || root->db[i]) && (rc = map_ok(s, root->db[i])))
			snprintf(msg, len, "the key space of database %u is "
			         "corrupt: %s (%s)", i, pmtx_strerror(rc),
			         pmtx_errmsg());
		else if (root->trash[i] && (rc = map_ok(s, root->trash[i])))
			snprintf(msg, len, "the trash of database %u is "
			         "corrupt: %s (%s)", i, pmtx_strerror(rc),
			         pmtx_errmsg());
	}
	s->typed = (root->flags & PMKV_ROOT_TYPED) != 0; /* L6 */
	return rc;
}

static void ks_detach(struct pmkv_store *s)
{
	for (unsigned i = 0; i < PMKV_DBS; i++) {
		pmtx_hmap_close(s->map[i]);
		s->map[i] = NULL;
	}
}

static int ks_grow(struct kvx *x)
{
	(void)x; /* the map splits inside its put (store.c S6) */
	return 0;
}

static int ks_find(struct kvx *x, struct kpos *p)
{
	pmtx_bytes v;
	int rc;
	pmtx_hmap *m = map0(x, &rc);
	if (m)
		rc = pmtx_hmap_get(x->tx, m, p->k, p->kn, &v);
	if (!m && rc == PMTX_E_NOT_FOUND && x->writer)
		rc = PMTX_E_CORRUPT; /* K5: a writer's database has a map */
	p->looked = 1;
	p->found = rc == 0;
	if (rc == PMTX_E_NOT_FOUND)
		return 0;
	return rc ? rc : pmkv_obj_parse(v.p, v.n, &p->v); /* K3 */
}

/* The object [type][flags][expiry][v1][v2] into buf (layout.h L4). */
static size_t build(char *buf, unsigned type, int64_t exp, const void *v1,
                    size_t n1, const void *v2, size_t n2)
{
	size_t at = PMKV_OBJ_HDR;
	buf[0] = (char)type;
	buf[1] = (char)(exp ? PMKV_OBJ_EXPIRES : 0);
	if (exp) {
		memcpy(buf + at, &exp, PMKV_OBJ_EXP);
		at += PMKV_OBJ_EXP;
	}
	if (n1)
		memcpy(buf + at, v1, n1);
	if (n2)
		memcpy(buf + at + n1, v2, n2);
	return at + n1 + n2;
}

static int ks_put(struct kvx *x, struct kpos *p, unsigned type, int64_t exp,
                  const void *v1, size_t n1, const void *v2, size_t n2)
{
	char stack[PUT_STACK], *buf = stack;
	size_t cap = PMKV_OBJ_HDR_MAX + n1 + n2;
	int rc;
	pmtx_hmap *m = map0(x, &rc);
	if (!m)
		return rc;
	if (cap > sizeof(stack) && !(buf = malloc(cap)))
		return ENOMEM;
	size_t n = build(buf, type, exp, v1, n1, v2, n2);
	x->wrote = 1;
	rc = pmtx_hmap_put(x->tx, m, p->k, p->kn, buf, n, 0, NULL);
	if (buf != stack)
		free(buf);
	return rc;
}

static int ks_del(struct kvx *x, struct kpos *p)
{
	int rc;
	pmtx_hmap *m = map0(x, &rc);
	x->wrote = 1;
	return m ? pmtx_hmap_del(x->tx, m, p->k, p->kn) : rc;
}

static uint64_t ks_count(struct kvx *x)
{
	uint64_t n = 0;
	int rc;
	pmtx_hmap *m = map0(x, &rc);
	if (!m && rc == PMTX_E_NOT_FOUND)
		return 0; /* K5 */
	if (!m || (rc = pmtx_hmap_len(x->tx, m, &n)))
		x->err = x->err ? x->err : rc;
	return n;
}

static uint64_t ks_buckets(struct kvx *x)
{
	int rc;
	pmtx_hmap *m = map0(x, &rc);
	return m ? hmap_buckets(m) : 0;
}

struct scan_arg {
	ks_fn fn;
	void *arg;
};

static int scan_one(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct scan_arg *a = arg;
	struct kval o;
	int rc = pmkv_obj_parse(v->p, v->n, &o); /* K3 */
	return rc ? rc : a->fn(a->arg, k->p, k->n, &o);
}

static int ks_scan(struct kvx *x, uint64_t cursor, size_t count, ks_fn fn,
                   void *arg, uint64_t *next)
{
	struct scan_arg a = {fn, arg};
	int rc;
	pmtx_hmap *m = map0(x, &rc);
	*next = 0;
	return m ? pmtx_hmap_scan(x->tx, m, cursor, count, scan_one, &a, next)
	         : rc == PMTX_E_NOT_FOUND ? 0 : rc; /* K5 */
}

/* K4: every database (all), or x->db. */
static int ks_flush(struct kvx *x, int all)
{
	struct pmkv_root *root = root_of(x->s);
	int rc = 0;
	for (unsigned i = 0; i < PMKV_DBS; i++)
		if (root_word(&root->trash[i]))
			return PMTX_E_BUSY; /* the caller sweeps first */
	for (unsigned i = 0; i < PMKV_DBS && !rc; i++) {
		pmtx_off old = root_word(&root->db[i]), fresh = 0;
		if (!old || (!all && i != x->db))
			continue;
		x->wrote = 1;
		x->s->roots_gen++; /* K2 */
		rc = pmtx_hmap_create(x->tx, 0, &fresh);
		if (!rc)
			rc = PMTX_SET(x->tx, root->trash[i], old);
		if (!rc)
			rc = PMTX_SET(x->tx, root->db[i], fresh);
	}
	return rc;
}

/* SWAPDB: the root's slots of databases a and b exchanged (K2: the
 * handles follow). */
static int ks_swap(struct kvx *x, unsigned a, unsigned b)
{
	struct pmkv_root *root = root_of(x->s);
	pmtx_off oa = root_word(&root->db[a]), ob = root_word(&root->db[b]);
	int rc = PMTX_SET(x->tx, root->db[a], ob);
	x->wrote = 1;
	x->s->roots_gen++; /* K2 */
	return rc ? rc : PMTX_SET(x->tx, root->db[b], oa);
}

/* A key of the trash, and the collection its object names (K6). */
struct swept {
	char *k;
	size_t kn;
	unsigned type;
	struct pmkv_coll c;
};

struct sweep_arg {
	struct swept *e;
	size_t n, cap;
};

static int sweep_collect(const pmtx_bytes *k, const pmtx_bytes *v,
                         void *arg)
{
	struct sweep_arg *a = arg;
	struct kval o;
	int rc = pmkv_obj_parse(v->p, v->n, &o);
	if (rc)
		return rc;
	for (size_t j = 0; j < a->n; j++) /* a scan may meet it twice */
		if (a->e[j].kn == k->n && !memcmp(a->e[j].k, k->p, k->n))
			return 0;
	if (a->n == a->cap)
		return 1; /* full: stop here */
	struct swept *e = &a->e[a->n];
	memset(e, 0, sizeof(*e));
	e->type = o.type;
	if (o.type != PMKV_T_STRING) {
		if (o.n != sizeof(e->c))
			return PMTX_E_CORRUPT;
		memcpy(&e->c, o.p, sizeof(e->c));
	}
	if (!(e->k = malloc(k->n ? k->n : 1)))
		return ENOMEM;
	memcpy(e->k, k->p, k->n);
	e->kn = k->n;
	a->n++;
	return 0;
}

/* K6: one step over the trash map of database i. */
static int sweep_typed(struct kvx *x, unsigned i, unsigned budget,
                       int *more)
{
	pmtx_off off = root_word(&root_of(x->s)->trash[i]);
	struct sweep_arg a = {calloc(budget, sizeof(struct swept)), 0, budget};
	uint64_t n = 0, cur = x->s->sweep_at[i];
	pmtx_hmap *m = NULL;
	int rc = a.e ? pmtx_hmap_open(x->s->r, off, NULL, &m) : ENOMEM;
	if (!rc)
		rc = pmtx_hmap_len(x->tx, m, &n);
	for (int wrapped = 0; !rc && n && a.n < budget && wrapped < 2;) {
		rc = pmtx_hmap_scan(x->tx, m, cur, budget - a.n, sweep_collect,
		                    &a, &cur);
		rc = rc == 1 ? 0 : rc;
		wrapped += cur == 0;
	}
	for (size_t j = 0; j < a.n && !rc; j++) {
		rc = pmkv_coll_destroy(x, a.e[j].type, &a.e[j].c);
		if (!rc)
			rc = pmtx_hmap_del(x->tx, m, a.e[j].k, a.e[j].kn);
	}
	pmtx_hmap_close(m);
	for (size_t j = 0; j < a.n; j++)
		free(a.e[j].k);
	free(a.e);
	x->s->sweep_at[i] = cur;
	*more = n > a.n;
	if (!rc && n == a.n) /* empty now: the map itself */
		rc = pmtx_hmap_destroy(x->tx, off);
	return rc;
}

/* One batch: up to budget entries of the first map in the trash (K4). */
static int ks_sweep(struct kvx *x, unsigned budget, int *left)
{
	struct pmkv_root *root = root_of(x->s);
	unsigned i = 0;
	int rc, more = 0;
	while (i < PMKV_DBS && !root_word(&root->trash[i]))
		i++;
	*left = 0;
	if (i == PMKV_DBS)
		return 0;
	x->wrote = 1;
	rc = x->s->typed ? sweep_typed(x, i, budget, &more)
	     : pmtx_hmap_destroy_some(x->tx, root_word(&root->trash[i]),
	                              budget, &more);
	if (!rc && !more) {
		rc = PMTX_SET(x->tx, root->trash[i], 0);
		x->s->sweep_at[i] = 0;
	}
	while (!more && ++i < PMKV_DBS)
		more = root_word(&root->trash[i]) != 0;
	*left = !rc && more;
	return rc;
}

static uint64_t ks_hint(struct pmkv_store *s, const void *k, size_t kn)
{
	int rc;
	pmtx_hmap *m = db_map(s, pmkv_cur_db(), &rc);
	return m ? pmtx_hmap_prefetch(m, k, kn) : 0;
}

static void ks_hint_more(struct pmkv_store *s, uint64_t token)
{
	int rc;
	pmtx_hmap *m = db_map(s, pmkv_cur_db(), &rc);
	if (m && token)
		pmtx_hmap_prefetch_more(m, token);
}

/* A collection's containers (K7): each checked, none empty, a sorted
 * set's two the same length. */
static int coll_ok(pmtx_region *r, pmtx_tx *tx, const struct kval *o,
                   char *why, size_t len)
{
	struct pmkv_coll c;
	uint64_t n = 0, n2 = 0;
	pmtx_hmap *h = NULL;
	pmtx_list *l = NULL;
	pmtx_map *z = NULL;
	int rc;
	if (o->n != sizeof(c))
		return PMTX_E_CORRUPT;
	memcpy(&c, o->p, sizeof(c));
	if (o->type == PMKV_T_LIST) {
		if (!(rc = pmtx_list_open(r, c.c[0], NULL, &l)) &&
		    !(rc = list_check(l, why, len)))
			rc = pmtx_list_len(tx, l, &n);
	} else if (!(rc = pmtx_hmap_open(r, c.c[0], NULL, &h)) &&
	           !(rc = hmap_check(h, why, len))) {
		rc = pmtx_hmap_len(tx, h, &n);
	}
	n2 = n;
	if (!rc && o->type == PMKV_T_ZSET &&
	    !(rc = pmtx_map_open(r, c.c[1], NULL, &z)) &&
	    !(rc = map_check(z, why, len)))
		rc = pmtx_map_len(tx, z, &n2);
	if (!rc && (n == 0 || n != n2)) {
		snprintf(why, len, "a collection of %llu elements (%llu in its "
		         "order)", (unsigned long long)n, (unsigned long long)n2);
		rc = PMTX_E_CORRUPT;
	}
	pmtx_list_close(l);
	pmtx_hmap_close(h);
	pmtx_map_close(z);
	return rc;
}

struct check_arg {
	struct kvx *x;
	char *why;
	size_t len;
};

/* Every object of a map well formed (K3), and its collection (K7). */
static int objects_ok(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct check_arg *a = arg;
	struct kval o;
	int rc = pmkv_obj_parse(v->p, v->n, &o);
	(void)k;
	if (!rc && o.type != PMKV_T_STRING)
		rc = coll_ok(a->x->s->r, a->x->tx, &o, a->why, a->len);
	return rc;
}

/* The map at off: hmap_check, and every object well formed (K3); *keys:
 * its keys. */
static int check_map(struct kvx *x, pmtx_off off, uint64_t *keys,
                     char *msg, size_t len, const char *what, unsigned i)
{
	pmtx_hmap *m = NULL;
	char why[160] = "";
	struct check_arg a = {x, why, sizeof(why)};
	uint64_t cur = 0;
	int rc = pmtx_hmap_open(x->s->r, off, NULL, &m);
	if (!rc)
		rc = hmap_check(m, why, sizeof(why));
	if (!rc)
		rc = pmtx_hmap_len(x->tx, m, keys);
	while (!rc && !(rc = pmtx_hmap_scan(x->tx, m, cur, 1024, objects_ok,
	                                    &a, &cur)) && cur)
		;
	if (rc)
		snprintf(msg, len, "%s %u: %s%s%s", what, i, pmtx_strerror(rc),
		         *why ? ": " : "", why);
	pmtx_hmap_close(m);
	return rc;
}

static int ks_check(struct kvx *x, uint64_t *keys, char *msg, size_t len)
{
	const struct pmkv_root *root = root_of(x->s);
	uint64_t other;
	int rc = 0;
	*keys = 0;
	for (unsigned i = 0; i < PMKV_DBS && !rc; i++) {
		pmtx_off d = root_word(&root->db[i]);
		pmtx_off t = root_word(&root->trash[i]);
		if (d == t && d) {
			snprintf(msg, len, "database %u's map is its trash", i);
			return PMTX_E_CORRUPT;
		}
		if (i == 0 || d) /* K5: the operation's database's keys */
			rc = check_map(x, d, i == x->db ? keys : &other, msg,
			               len, "database", i);
		if (!rc && t)
			rc = check_map(x, t, &other, msg, len, "trash", i);
	}
	return rc;
}

struct walk_arg {
	pmtx_region *r;
	int (*fn)(pmtx_off, void *);
	void *arg;
};

/* Every block of the collection an object names (K7). */
static int walk_coll(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct walk_arg *w = arg;
	struct kval o;
	struct pmkv_coll c;
	int rc = pmkv_obj_parse(v->p, v->n, &o);
	(void)k;
	if (rc || o.type == PMKV_T_STRING)
		return rc;
	if (o.n != sizeof(c))
		return PMTX_E_CORRUPT;
	memcpy(&c, o.p, sizeof(c));
	if (o.type == PMKV_T_LIST) {
		pmtx_list *l;
		if (!(rc = pmtx_list_open(w->r, c.c[0], NULL, &l))) {
			rc = list_walk(l, w->fn, w->arg);
			pmtx_list_close(l);
		}
		return rc;
	}
	pmtx_hmap *h;
	if (!(rc = pmtx_hmap_open(w->r, c.c[0], NULL, &h))) {
		rc = hmap_walk(h, w->fn, w->arg);
		pmtx_hmap_close(h);
	}
	pmtx_map *z;
	if (!rc && o.type == PMKV_T_ZSET &&
	    !(rc = pmtx_map_open(w->r, c.c[1], NULL, &z))) {
		rc = map_walk(z, w->fn, w->arg);
		pmtx_map_close(z);
	}
	return rc;
}

/* Every block of map m and of the collections its objects name. */
static int walk_map(struct kvx *x, pmtx_hmap *m, int (*fn)(pmtx_off, void *),
                    void *arg)
{
	struct walk_arg w = {x->s->r, fn, arg};
	uint64_t cur = 0;
	int rc = hmap_walk(m, fn, arg);
	while (!rc && !(rc = pmtx_hmap_scan(x->tx, m, cur, 1024, walk_coll,
	                                    &w, &cur)) && cur)
		;
	return rc;
}

static int ks_walk(struct kvx *x, int (*fn)(pmtx_off, void *), void *arg)
{
	const struct pmkv_root *root = root_of(x->s);
	int rc = 0;
	for (unsigned i = 0; i < PMKV_DBS && !rc; i++) {
		const pmtx_off maps[2] = {root_word(&root->db[i]),
		                          root_word(&root->trash[i])};
		for (unsigned j = 0; j < 2 && !rc; j++) {
			pmtx_hmap *m;
			if (!maps[j])
				continue;
			if (!(rc = pmtx_hmap_open(x->s->r, maps[j], NULL, &m))) {
				rc = walk_map(x, m, fn, arg);
				pmtx_hmap_close(m);
			}
		}
	}
	return rc;
}

const struct ks_ops pmkv_ks_opt = {
	.create = ks_create, .attach = ks_attach, .detach = ks_detach,
	.grow = ks_grow, .find = ks_find, .put = ks_put, .del = ks_del,
	.count = ks_count, .buckets = ks_buckets, .scan = ks_scan,
	.flush = ks_flush, .sweep = ks_sweep, .hint = ks_hint, .dbs = ks_dbs,
	.swap = ks_swap,
	.hint_more = ks_hint_more, .check = ks_check, .walk = ks_walk,
};
