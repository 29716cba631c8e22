/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_set.c - Redis 7.0's set type (store_set.h) over the store's
 * collections interface (store_int.h: kx_*).
 *
 * DESIGN
 * A set is a pmtx_hmap of member -> empty value, named by its key's
 * object (layout.h: c[0]). Every operation is one transaction, begun and
 * ended by kx_begin and kx_end (store.c S1, S8); the volatile copies of
 * members it makes (struct mbuf) and the handles of T6 die with it.
 *
 * Invariants
 *  T1. A set is never empty (layout.h L3): the write that takes its last
 *      member removes the key in the same transaction (set_drop).
 *  T2. A client's mistake is found before the first write (store.c
 *      S13): the limits before the transaction begins, the type of every
 *      key an operation names before it writes a container or the key
 *      space. (A writer's lookup removes a key whose expiry has passed,
 *      S5, which may come before a later key is found of the wrong type:
 *      that removal changes nothing any operation sees.)
 *  T3. A lookup (struct kpos) views the key space, and the view is stale
 *      once the key space is written: a set's containers are copied out
 *      at once (set_find), and a key is looked up again before it is
 *      removed (set_drop).
 *  T4. A view of a member lasts until its set is written (pmtx_containers.h):
 *      members to be removed, or written into a set that may be the one
 *      they came from, are copied first (struct mbuf).
 *  T5. Random members (SPOP, SRANDMEMBER). One: a random bucket, the
 *      first bucket from it on that holds members (wrapping around), and
 *      one of its members at random (pick_one). Several different ones:
 *      a selection sample of the whole set when they are more than a
 *      third of it (Knuth's algorithm S), else the members of a run of
 *      buckets from a random one (pick_run). Neither is uniform (a member
 *      after empty buckets is drawn more often); Redis's SRANDMEMBER
 *      promises no distribution either. The random numbers are
 *      store.c's (pmkv_rand_below).
 *  T6. The operations over several keys (SINTER and the rest) open their
 *      sets with handles of their own, since more than KX_OPEN keys may be
 *      named, and close them before anything is written.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hmap.h" /* hmap_buckets */
#include "store_int.h"
#include "store_set.h"

#define WALK_STEP 1024 /* members a walk of a whole set asks a scan for */
#define WALK_STOP INT_MAX /* a scan's callback: enough */
#define SSCAN_MOST (UINT64_C(1) << 32) /* 10 x count buckets must not wrap */

#define KPOS(key, len) ((struct kpos){.k = (key), .kn = (len)})

/* ---- members copied out of their set (T4) ---- */

/* Each member as its length, then its bytes, one after another. */
struct mbuf {
	char *p;
	size_t n, cap;
	uint64_t count;
	int err; /* ENOMEM: a member could not be kept */
};

static int mbuf_add(struct mbuf *b, const void *m, size_t n)
{
	size_t need = b->n + sizeof(n) + n;
	if (need > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < need)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return b->err = ENOMEM;
		b->p = p, b->cap = cap;
	}
	memcpy(b->p + b->n, &n, sizeof(n));
	if (n)
		memcpy(b->p + b->n + sizeof(n), m, n);
	b->n = need;
	b->count++;
	return 0;
}

/* A pmkv_emit_fn into a struct mbuf (a failure kept in its err). */
static void mbuf_keep(void *arg, const void *m, size_t n)
{
	struct mbuf *b = arg;
	if (!b->err)
		mbuf_add(b, m, n);
}

/* The member at *at, *at moved past it; NULL after the last. */
static const char *mbuf_next(const struct mbuf *b, size_t *at, size_t *n)
{
	if (*at >= b->n)
		return NULL;
	memcpy(n, b->p + *at, sizeof(*n));
	const char *m = b->p + *at + sizeof(*n);
	*at += sizeof(*n) + *n;
	return m;
}

static void mbuf_emit(const struct mbuf *b, pmkv_emit_fn emit, void *arg)
{
	size_t at = 0, n;
	for (const char *m; (m = mbuf_next(b, &at, &n));)
		emit(arg, m, n);
}

/* ---- keys and their sets ---- */

/* Look p up and copy its set's containers out (T3): *c zeroed if it is
 * absent, PMKV_E_WRONGTYPE if it is not a set. */
static int set_find(struct kvx *x, struct kpos *p, struct pmkv_coll *c)
{
	int rc = kx_find(x, p);
	return rc ? rc : kx_coll(p, PMKV_T_SET, c);
}

/* Look the set p up and open it for the operation: *h NULL if absent. */
static int set_open(struct kvx *x, struct kpos *p, pmtx_hmap **h)
{
	struct pmkv_coll c;
	int rc = set_find(x, p, &c);
	*h = NULL;
	return rc || !p->found ? rc : kx_hmap(x, c.c[0], h);
}

/* Remove the key p names, whatever it holds, looked up again (T3). */
static int set_drop(struct kvx *x, struct kpos *p)
{
	int rc = kx_find(x, p);
	return rc || !p->found ? rc : kx_remove(x, p);
}

/* T1: remove the set p if h, its members, has none left. */
static int drop_if_empty(struct kvx *x, struct kpos *p, pmtx_hmap *h)
{
	uint64_t n;
	int rc = pmtx_hmap_len(x->tx, h, &n);
	return rc || n ? rc : set_drop(x, p);
}

/* *yes: m[0..n) is a member of h. */
static int has(struct kvx *x, pmtx_hmap *h, const void *m, size_t n,
               int *yes)
{
	pmtx_bytes v;
	int rc = pmtx_hmap_get(x->tx, h, m, n, &v);
	*yes = !rc;
	return rc == PMTX_E_NOT_FOUND ? 0 : rc;
}

/* Put m[0..n) into h unless it is there; *added counts it. */
static int add(struct kvx *x, pmtx_hmap *h, const void *m, size_t n,
               uint64_t *added)
{
	int rc = pmtx_hmap_put(x->tx, h, m, n, "", 0, PMTX_HMAP_NX, NULL);
	if (rc == PMTX_E_EXISTS)
		return 0;
	x->wrote = 1;
	*added += !rc;
	return rc;
}

/* fn for every member of h (a scan the set is not written during);
 * fn's WALK_STOP ends the walk early. */
static int walk(struct kvx *x, pmtx_hmap *h, pmtx_hmap_fn fn, void *arg)
{
	uint64_t cur = 0;
	int rc;
	do
		rc = pmtx_hmap_scan(x->tx, h, cur, WALK_STEP, fn, arg, &cur);
	while (!rc && cur);
	return rc == WALK_STOP ? 0 : rc;
}

static int keep_member(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	(void)v;
	return mbuf_add(arg, k->p, k->n);
}

struct emitter {
	pmkv_emit_fn emit;
	void *arg;
};

static int emit_member(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct emitter *e = arg;
	(void)v;
	e->emit(e->arg, k->p, k->n);
	return 0;
}

static int members_fit(const struct pmkv_store *s, const struct pmkv_key *m,
                       size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].n > s->max_value)
			return PMKV_E_TOOBIG;
	return 0;
}

/* ---- random members (T5) ---- */

/* One member of the buckets a scan passes, drawn as they pass (a
 * reservoir of one), kept in out from mark on. */
struct draw {
	struct mbuf *out;
	size_t mark;
	uint64_t count, seen;
};

static int draw_member(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct draw *d = arg;
	(void)v;
	if (pmkv_rand_below(++d->seen))
		return 0;
	d->out->n = d->mark, d->out->count = d->count;
	return mbuf_add(d->out, k->p, k->n);
}

/* One member of the set h, of nb buckets, at random, added to out. */
static int pick_one(struct kvx *x, pmtx_hmap *h, uint64_t nb,
                    struct mbuf *out)
{
	struct draw d = {out, out->n, out->count, 0};
	uint64_t b = pmkv_rand_below(nb), next;
	int wrapped = 0;
	for (;;) {
		int rc = pmtx_hmap_scan(x->tx, h, b, 1, draw_member, &d, &next);
		if (rc || d.seen)
			return rc;
		if (!next && wrapped++)
			return PMTX_E_CORRUPT; /* no member: a set is never empty */
		b = next;
	}
}

/* Knuth's selection sample: need of the left members still to pass. */
struct sample {
	struct mbuf *out;
	uint64_t need, left;
};

static int sample_member(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct sample *s = arg;
	int rc = 0;
	(void)v;
	if (pmkv_rand_below(s->left) < s->need) {
		rc = mbuf_add(s->out, k->p, k->n);
		s->need--;
	}
	s->left--;
	return rc ? rc : s->need ? 0 : WALK_STOP;
}

/* The first need members from a bucket on. */
static int run_member(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct sample *s = arg;
	(void)v;
	int rc = mbuf_add(s->out, k->p, k->n);
	return rc ? rc : --s->need ? 0 : WALK_STOP;
}

/* count members (fewer than the set holds) of a run of buckets from a
 * random one, wrapping around once at most. */
static int pick_run(struct kvx *x, pmtx_hmap *h, uint64_t count,
                    struct mbuf *out)
{
	struct sample s = {out, count, 0};
	uint64_t first = pmkv_rand_below(hmap_buckets(h)), b = first, next;
	int wrapped = 0, rc;
	while (!(rc = pmtx_hmap_scan(x->tx, h, b, (size_t)s.need, run_member,
	                             &s, &next))) {
		wrapped |= !next;
		if (wrapped && next >= first)
			return 0; /* every bucket passed */
		b = next;
	}
	return rc == WALK_STOP ? 0 : rc;
}

/* count different members of the set h of n members (count < n), at
 * random, added to out. */
static int pick_some(struct kvx *x, pmtx_hmap *h, uint64_t n, uint64_t count,
                     struct mbuf *out)
{
	struct sample s = {out, count, n};
	if (count == 1)
		return pick_one(x, h, hmap_buckets(h), out);
	return count > n / 3 ? walk(x, h, sample_member, &s)
	                     : pick_run(x, h, count, out);
}

/* ---- one set ---- */

int pmkv_sadd(struct pmkv_store *s, const void *k, size_t kn,
              const struct pmkv_key *m, size_t n, uint64_t *added)
{
	struct kvx x;
	struct kpos p = KPOS(k, kn);
	struct pmkv_coll c;
	pmtx_hmap *h;
	int rc = members_fit(s, m, n); /* T2 */
	*added = 0;
	if (rc || (rc = kx_begin(s, &x, 1)))
		return rc;
	rc = set_find(&x, &p, &c);
	if (!rc && !p.found)
		rc = kx_coll_new(&x, &p, PMKV_T_SET, &c);
	if (!rc)
		rc = kx_hmap(&x, c.c[0], &h);
	for (size_t i = 0; i < n && !rc; i++)
		rc = add(&x, h, m[i].p, m[i].n, added);
	return kx_end(&x, rc);
}

/* What a one-set operation does to the set p, whose members are h. */
typedef int (*set_fn)(struct kvx *x, struct kpos *p, pmtx_hmap *h,
                      void *arg);

/* One operation (writer: it may write) on the set k: fn, if the key
 * holds a set; *found (NULL: not asked) says whether it does. */
static int with_set(struct pmkv_store *s, const void *k, size_t kn,
                    int writer, set_fn fn, void *arg, int *found)
{
	struct kvx x;
	struct kpos p = KPOS(k, kn);
	pmtx_hmap *h;
	int rc = kx_begin(s, &x, writer);
	if (rc)
		return rc;
	rc = set_open(&x, &p, &h);
	if (found)
		*found = !rc && h;
	if (!rc && h)
		rc = fn(&x, &p, h, arg);
	return kx_end(&x, rc);
}

/* Members named by a command, and what it found of them. */
struct named {
	const struct pmkv_key *m;
	size_t n;
	uint64_t count;     /* SREM: those removed */
	unsigned char *hit; /* SMISMEMBER */
};

static int srem_fn(struct kvx *x, struct kpos *p, pmtx_hmap *h, void *arg)
{
	struct named *a = arg;
	int rc = 0;
	for (size_t i = 0; i < a->n && !rc; i++) {
		rc = pmtx_hmap_del(x->tx, h, a->m[i].p, a->m[i].n);
		a->count += !rc;
		rc = rc == PMTX_E_NOT_FOUND ? 0 : rc;
	}
	x->wrote |= a->count > 0;
	return rc || !a->count ? rc : drop_if_empty(x, p, h);
}

int pmkv_srem(struct pmkv_store *s, const void *k, size_t kn,
              const struct pmkv_key *m, size_t n, uint64_t *removed)
{
	struct named a = {m, n, 0, NULL};
	int rc = with_set(s, k, kn, 1, srem_fn, &a, NULL);
	*removed = a.count;
	return rc;
}

static int scard_fn(struct kvx *x, struct kpos *p, pmtx_hmap *h, void *arg)
{
	(void)p;
	return pmtx_hmap_len(x->tx, h, arg);
}

int pmkv_scard(struct pmkv_store *s, const void *k, size_t kn, uint64_t *n)
{
	*n = 0;
	return with_set(s, k, kn, 0, scard_fn, n, NULL);
}

static int smismember_fn(struct kvx *x, struct kpos *p, pmtx_hmap *h,
                         void *arg)
{
	struct named *a = arg;
	int rc = 0;
	(void)p;
	for (size_t i = 0; i < a->n && !rc; i++) {
		int yes = 0;
		rc = has(x, h, a->m[i].p, a->m[i].n, &yes);
		a->hit[i] = (unsigned char)yes;
	}
	return rc;
}

int pmkv_smismember(struct pmkv_store *s, const void *k, size_t kn,
                    const struct pmkv_key *m, size_t n, unsigned char *hit)
{
	struct named a = {m, n, 0, hit};
	memset(hit, 0, n); /* an absent key holds none */
	return with_set(s, k, kn, 0, smismember_fn, &a, NULL);
}

static int smembers_fn(struct kvx *x, struct kpos *p, pmtx_hmap *h,
                       void *arg)
{
	(void)p;
	return walk(x, h, emit_member, arg);
}

int pmkv_smembers(struct pmkv_store *s, const void *k, size_t kn,
                  pmkv_emit_fn emit, void *arg)
{
	struct emitter e = {emit, arg};
	return with_set(s, k, kn, 0, smembers_fn, &e, NULL);
}

/* SPOP's and SRANDMEMBER's work: count members (with repeats), and
 * where they go: SPOP's copied (T4), SRANDMEMBER's emitted. */
struct draws {
	uint64_t count;
	int repeat;
	struct mbuf out;
	struct emitter e;
};

/* SPOP: count members of the set p copied into a->out, then taken out
 * of it; all of them: the key goes (T1). */
static int spop_fn(struct kvx *x, struct kpos *p, pmtx_hmap *h, void *arg)
{
	struct draws *a = arg;
	uint64_t n;
	size_t at = 0, mn;
	int rc = a->count ? pmtx_hmap_len(x->tx, h, &n) : 0;
	if (rc || !a->count)
		return rc;
	if (a->count >= n) {
		rc = walk(x, h, keep_member, &a->out);
		return rc ? rc : set_drop(x, p);
	}
	rc = pick_some(x, h, n, a->count, &a->out);
	x->wrote = 1;
	for (const char *m; !rc && (m = mbuf_next(&a->out, &at, &mn));)
		rc = pmtx_hmap_del(x->tx, h, m, mn);
	return rc;
}

int pmkv_spop(struct pmkv_store *s, const void *k, size_t kn, uint64_t count,
              pmkv_emit_fn emit, void *arg, int *found)
{
	struct draws a = {.count = count};
	int rc = with_set(s, k, kn, 1, spop_fn, &a, found);
	if (!rc)
		mbuf_emit(&a.out, emit, arg); /* after the commit: store_set.h */
	free(a.out.p);
	return rc;
}

/* SRANDMEMBER: with repeats, one draw at a time (count may be far more
 * than the set holds); else different members, or all of them. */
static int srandmember_fn(struct kvx *x, struct kpos *p, pmtx_hmap *h,
                          void *arg)
{
	struct draws *a = arg;
	uint64_t n, nb = hmap_buckets(h);
	int rc = a->count ? pmtx_hmap_len(x->tx, h, &n) : 0;
	(void)p;
	if (rc || !a->count)
		return rc;
	if (!a->repeat && a->count >= n)
		return walk(x, h, emit_member, &a->e);
	if (!a->repeat)
		rc = pick_some(x, h, n, a->count, &a->out);
	for (uint64_t i = 0; a->repeat && i < a->count && !rc; i++) {
		a->out.n = 0, a->out.count = 0;
		if (!(rc = pick_one(x, h, nb, &a->out)))
			mbuf_emit(&a->out, a->e.emit, a->e.arg);
	}
	if (!rc && !a->repeat)
		mbuf_emit(&a->out, a->e.emit, a->e.arg);
	return rc;
}

int pmkv_srandmember(struct pmkv_store *s, const void *k, size_t kn,
                     uint64_t count, int repeat, pmkv_emit_fn emit, void *arg,
                     int *found)
{
	struct draws a = {count, repeat, {0}, {emit, arg}};
	int rc = with_set(s, k, kn, 0, srandmember_fn, &a, found);
	free(a.out.p);
	return rc;
}

int pmkv_smove(struct pmkv_store *s, const void *src, size_t sn,
               const void *dst, size_t dn, const void *m, size_t mn,
               int *moved)
{
	struct kvx x;
	struct kpos ps = KPOS(src, sn), pd = KPOS(dst, dn);
	struct pmkv_coll cs, cd;
	pmtx_hmap *hs, *hd;
	int yes = 0, same = sn == dn && !memcmp(src, dst, sn);
	*moved = 0;
	if (dn > s->max_key || mn > s->max_value)
		return PMKV_E_TOOBIG; /* T2 */
	int rc = kx_begin(s, &x, 1);
	if (rc)
		return rc;
	rc = set_find(&x, &ps, &cs);
	if (!rc && ps.found) /* both types before a write (T2) */
		rc = set_find(&x, &pd, &cd);
	if (rc || !ps.found || (rc = kx_hmap(&x, cs.c[0], &hs)))
		return kx_end(&x, rc);
	if (same) { /* Redis: a member stays where it is */
		rc = has(&x, hs, m, mn, &yes);
		*moved = yes;
		return kx_end(&x, rc);
	}
	if ((rc = pmtx_hmap_del(x.tx, hs, m, mn)))
		return kx_end(&x, rc == PMTX_E_NOT_FOUND ? 0 : rc);
	x.wrote = 1;
	rc = drop_if_empty(&x, &ps, hs);
	if (!rc && !pd.found)
		rc = kx_coll_new(&x, &pd, PMKV_T_SET, &cd);
	if (!rc)
		rc = kx_hmap(&x, cd.c[0], &hd);
	uint64_t added = 0;
	if (!rc)
		rc = add(&x, hd, m, mn, &added);
	*moved = !rc;
	return kx_end(&x, rc);
}

/* ---- several sets (T6) ---- */

/* The keys' sets: a handle on each, NULL for an absent key. */
struct sets {
	size_t n;
	pmtx_hmap **h;
};

static void sets_close(struct sets *S)
{
	for (size_t i = 0; S->h && i < S->n; i++)
		pmtx_hmap_close(S->h[i]);
	free(S->h);
	S->h = NULL;
}

/* Every key looked up and its type checked before anything is written
 * (T2), and its set opened. */
static int sets_open(struct kvx *x, const struct pmkv_key *keys, size_t n,
                     struct sets *S)
{
	int rc = 0;
	S->n = n;
	if (!(S->h = calloc(n ? n : 1, sizeof(*S->h))))
		return ENOMEM;
	for (size_t i = 0; i < n && !rc; i++) {
		struct kpos p = KPOS(keys[i].p, keys[i].n);
		struct pmkv_coll c;
		rc = set_find(x, &p, &c);
		if (!rc && p.found)
			rc = pmtx_hmap_open(x->s->r, c.c[0], NULL, &S->h[i]);
	}
	return rc;
}

/* Where a result goes, and the walk that makes it: the set walked, and
 * the others it is tested against. */
struct sink {
	struct kvx *x;
	const struct sets *S;
	enum pmkv_setop op;
	size_t walked;
	pmkv_emit_fn emit; /* NULL: count only */
	void *arg;
	uint64_t n, limit; /* members in the result; 0: no limit */
};

/* *in: a member m of the set walked belongs to the result. SINTER: it
 * is in every other set; SDIFF (set 0 walked): in none of the others;
 * SUNION: in none of the sets before the one walked. */
static int in_result(struct sink *w, const pmtx_bytes *m, int *in)
{
	size_t lo = w->op == PMKV_SDIFF ? 1 : 0;
	size_t hi = w->op == PMKV_SUNION ? w->walked : w->S->n;
	int want = w->op == PMKV_SINTER, rc = 0;
	*in = 1;
	for (size_t j = lo; j < hi && *in && !rc; j++) {
		int yes = 0;
		if (j == w->walked || !w->S->h[j])
			continue;
		rc = has(w->x, w->S->h[j], m->p, m->n, &yes);
		*in = yes == want;
	}
	return rc;
}

static int result_member(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct sink *w = arg;
	int in, rc = in_result(w, k, &in);
	(void)v;
	if (rc || !in)
		return rc;
	w->n++;
	if (w->emit)
		w->emit(w->arg, k->p, k->n);
	return w->limit && w->n >= w->limit ? WALK_STOP : 0;
}

static int walk_set(struct sink *w, size_t i)
{
	w->walked = i;
	return walk(w->x, w->S->h[i], result_member, w);
}

/* SINTER walks its smallest set, if no key is absent. */
static int intersect(struct sink *w)
{
	size_t best = 0;
	uint64_t least = UINT64_MAX, n;
	for (size_t i = 0; i < w->S->n; i++) {
		int rc = w->S->h[i] ? pmtx_hmap_len(w->x->tx, w->S->h[i], &n)
		                    : 0;
		if (rc || !w->S->h[i])
			return rc; /* an empty set: an empty result */
		if (n < least)
			least = n, best = i;
	}
	return walk_set(w, best);
}

static int setop_run(struct sink *w)
{
	int rc = 0;
	if (w->op == PMKV_SINTER)
		return intersect(w);
	if (w->op == PMKV_SDIFF)
		return w->S->h[0] ? walk_set(w, 0) : 0;
	for (size_t i = 0; i < w->S->n && !rc; i++)
		rc = w->S->h[i] ? walk_set(w, i) : 0;
	return rc;
}

/* A reader's set operation, into w. */
static int setop_read(struct pmkv_store *s, const struct pmkv_key *keys,
                      size_t n, struct sink *w)
{
	struct kvx x;
	struct sets S = {0, NULL};
	int rc = kx_begin(s, &x, 0);
	if (rc)
		return rc;
	w->x = &x, w->S = &S;
	if (!(rc = sets_open(&x, keys, n, &S)))
		rc = setop_run(w);
	sets_close(&S);
	return kx_end(&x, rc);
}

int pmkv_setop(struct pmkv_store *s, enum pmkv_setop op,
               const struct pmkv_key *keys, size_t n, pmkv_emit_fn emit,
               void *arg)
{
	struct sink w = {.op = op, .emit = emit, .arg = arg};
	return setop_read(s, keys, n, &w);
}

int pmkv_sintercard(struct pmkv_store *s, const struct pmkv_key *keys,
                    size_t n, uint64_t limit, uint64_t *card)
{
	struct sink w = {.op = PMKV_SINTER, .limit = limit};
	int rc = setop_read(s, keys, n, &w);
	*card = w.n;
	return rc;
}

/* The key k given the members of b as a new set, in place of what it
 * held; removed if b is empty. */
static int store_members(struct kvx *x, const void *k, size_t kn,
                         const struct mbuf *b)
{
	struct kpos p = KPOS(k, kn);
	struct pmkv_coll c;
	pmtx_hmap *h;
	size_t at = 0, n;
	uint64_t added = 0;
	int rc = set_drop(x, &p);
	if (rc || !b->count)
		return rc;
	if (!(rc = kx_coll_new(x, &p, PMKV_T_SET, &c)))
		rc = kx_hmap(x, c.c[0], &h);
	for (const char *m; !rc && (m = mbuf_next(b, &at, &n));)
		rc = add(x, h, m, n, &added);
	return rc;
}

int pmkv_setop_store(struct pmkv_store *s, enum pmkv_setop op,
                     const void *dst, size_t dn, const struct pmkv_key *keys,
                     size_t n, uint64_t *card)
{
	struct kvx x;
	struct sets S = {0, NULL};
	struct mbuf out = {0};
	struct sink w = {.op = op, .emit = mbuf_keep, .arg = &out};
	*card = 0;
	if (dn > s->max_key)
		return PMKV_E_TOOBIG; /* T2 */
	int rc = kx_begin(s, &x, 1);
	if (rc)
		return rc;
	w.x = &x, w.S = &S;
	if (!(rc = sets_open(&x, keys, n, &S)) && !(rc = setop_run(&w)))
		rc = out.err;
	sets_close(&S); /* T6: dst may be one of them */
	if (!rc)
		rc = store_members(&x, dst, dn, &out);
	*card = out.count;
	free(out.p);
	return kx_end(&x, rc);
}

/* SSCAN's page: from cursor, count members at least. */
struct page {
	uint64_t cursor, count, next;
	struct emitter e;
};

static int sscan_fn(struct kvx *x, struct kpos *p, pmtx_hmap *h, void *arg)
{
	struct page *a = arg;
	size_t count = (size_t)(a->count < SSCAN_MOST ? a->count : SSCAN_MOST);
	(void)p;
	return pmtx_hmap_scan(x->tx, h, a->cursor, count, emit_member, &a->e,
	                      &a->next);
}

int pmkv_sscan(struct pmkv_store *s, const void *k, size_t kn,
               uint64_t cursor, uint64_t count, pmkv_emit_fn emit, void *arg,
               uint64_t *next)
{
	struct page a = {cursor, count, 0, {emit, arg}};
	int rc = with_set(s, k, kn, 0, sscan_fn, &a, NULL);
	*next = a.next;
	return rc;
}
