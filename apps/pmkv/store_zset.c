/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_zset.c - the sorted set's operations (store_zset.h), written
 * against the store's collections interface (store_int.h: kx_*).
 *
 * DESIGN
 * Persistent: a sorted set's two containers (layout.h). c[0], a pmtx_hmap
 * from member to score, answers ZSCORE and tells where a member is in the
 * order; c[1], a pmtx_map of kind PMTX_MAP_SCORE whose keys are the
 * score's 8 bytes then the member, holds Redis's order (by score, then by
 * the member's bytes) with ranks, so that ZRANK, ZCOUNT and both ends of
 * a range cost O(log n), and a range then walks its cursor. Volatile: the
 * copies an operation makes of what it reads before it writes, and of the
 * inputs of ZUNION and its kin. Every operation is one transaction of the
 * store (kx_begin, kx_end: store.c S1, S8).
 *
 * Invariants
 *  Z1. Both containers hold the same members: every write of a member
 *      writes both in the operation's transaction, and a member's key in
 *      c[1] is (its score in c[0], member).
 *  Z2. A stored score is neither NaN nor -0 (zs_norm): -0 and 0 are equal
 *      in c[1]'s order (pmtx_containers.h) but not as c[0]'s bytes, and
 *      Redis's listpack encoding (every small sorted set's) stores -0 as 0.
 *  Z3. A sorted set is never empty (layout.h L3): the write that would
 *      take its last member removes the key instead (kx_remove), and a new
 *      one (kx_coll_new) gets its members in the operation that made it.
 *  Z4. The client's mistakes are found before the first write (store.c
 *      S13): lengths before the transaction begins, the keys' types at
 *      their lookups, ZINCRBY's NaN before its member is written. A view
 *      (a member a cursor or a get returned) is copied before its
 *      container is next written.
 *  Z5. An operation opens its key's containers with kx_hmap and kx_map
 *      (kx_end closes them); the inputs of ZUNION and its kin, as many as
 *      the client names, are opened, copied and closed one at a time.
 *  Z6. Lex ranges compare members as Redis does when every score is the
 *      same (its documented use): the bound "[b" is the key (s0, "b"),
 *      s0 the lowest score. With mixed scores Redis's answer depends on
 *      its encoding (undefined in its documentation); pmkv's is this one.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "store_zset.h"

#define ZKEY_SMALL 128 /* keys of c[1] built without malloc up to this */
#define SCAN_ALL (UINT64_C(1) << 32) /* entries a scan call of a whole
                                       * input asks for (its bound: 10x
                                       * buckets must not wrap) */
#define LOAD_FILL 90 /* a stored result's leaves, % full */

#define ZPOS(key, len) ((struct kpos){.k = (key), .kn = (len)})

/* A sorted set of the operation: its two containers (layout.h). */
struct zs {
	pmtx_hmap *h;
	pmtx_map *m;
};

static double zs_norm(double d) /* Z2 */
{
	return d == 0 ? 0.0 : d;
}

/* ---- keys of the order (c[1]) ---- */

struct zkey {
	unsigned char *p;
	size_t n;
	unsigned char small[ZKEY_SMALL];
};

static int zkey_set(struct zkey *k, double score, const void *m, size_t n)
{
	k->n = 8 + n;
	k->p = k->n <= sizeof(k->small) ? k->small : malloc(k->n);
	if (!k->p)
		return ENOMEM;
	memcpy(k->p, &score, 8);
	if (n)
		memcpy(k->p + 8, m, n);
	return 0;
}

static void zkey_free(struct zkey *k)
{
	if (k->p != k->small)
		free(k->p);
	k->p = NULL;
}

/* A key of the order as its score and member (pointing into k). */
static int zkey_split(const pmtx_bytes *k, double *score, const char **m,
                      size_t *n)
{
	if (k->n < 8)
		return PMTX_E_CORRUPT;
	memcpy(score, k->p, 8);
	*m = (const char *)k->p + 8;
	*n = k->n - 8;
	return 0;
}

/* The element under cursor c (views, valid until the set is written). */
static int zs_at(const pmtx_map_cursor *c, pmtx_bytes *k, double *score,
                 const char **m, size_t *n)
{
	int rc = pmtx_map_cursor_get(c, k, NULL);
	return rc ? rc : zkey_split(k, score, m, n);
}

/* ---- one sorted set ---- */

static int zs_open(struct kvx *x, const struct pmkv_coll *c, struct zs *z)
{
	int rc = kx_hmap(x, c->c[0], &z->h);
	return rc ? rc : kx_map(x, c->c[1], &z->m);
}

/* Look p->k up: the sorted set it holds, opened in *z (p->found), or
 * PMKV_E_WRONGTYPE. */
static int zs_find(struct kvx *x, struct kpos *p, struct zs *z)
{
	struct pmkv_coll c;
	int rc = kx_find(x, p);
	if (!rc)
		rc = kx_coll(p, PMKV_T_ZSET, &c);
	return rc || !p->found ? rc : zs_open(x, &c, z);
}

/* A new sorted set at the absent key p (Z3: fill it). */
static int zs_create(struct kvx *x, struct kpos *p, struct zs *z)
{
	struct pmkv_coll c;
	int rc = kx_coll_new(x, p, PMKV_T_ZSET, &c);
	return rc ? rc : zs_open(x, &c, z);
}

struct zspan;
static int zs_find_span(struct kvx *x, struct kpos *p, struct zs *z,
                        const struct pmkv_zrange *r, struct zspan *sp);

/* Begin x (writer: it may write) and open the sorted set of p's key in z
 * (p->found), with r's span of it in *sp if r: 0, and x to end with
 * kx_end; or a status, nothing begun (as store_list.c's begin_list). */
static int zs_begin(struct pmkv_store *s, struct kvx *x, int writer,
                    struct kpos *p, struct zs *z,
                    const struct pmkv_zrange *r, struct zspan *sp)
{
	int rc = kx_begin(s, x, writer);
	if (rc)
		return rc;
	rc = r ? zs_find_span(x, p, z, r, sp) : zs_find(x, p, z);
	return rc ? kx_end(x, rc) : 0;
}

static int zs_card(struct kvx *x, struct zs *z, uint64_t *n)
{
	return pmtx_map_len(x->tx, z->m, n);
}

/* Member m's score: *found, and *score. */
static int zs_get(struct kvx *x, struct zs *z, const void *m, size_t n,
                  double *score, int *found)
{
	pmtx_bytes v;
	int rc = pmtx_hmap_get(x->tx, z->h, m, n, &v);
	*found = rc == 0;
	if (rc == PMTX_E_NOT_FOUND)
		return 0;
	if (!rc && v.n != 8)
		rc = PMTX_E_CORRUPT;
	if (!rc)
		memcpy(score, v.p, 8);
	return rc;
}

/* Put member m at score into the order, or take it out (del). */
static int order_put(struct kvx *x, struct zs *z, double score,
                     const void *m, size_t n, int del)
{
	struct zkey k;
	int rc = zkey_set(&k, score, m, n);
	if (!rc)
		rc = del ? pmtx_map_del(x->tx, z->m, k.p, k.n)
		         : pmtx_map_put(x->tx, z->m, k.p, k.n, "", 0, 0, NULL);
	zkey_free(&k);
	return rc;
}

/* Z1: add the absent member m, move it from score old, remove it. m is
 * never a view of z (Z4). */
static int zs_add(struct kvx *x, struct zs *z, const void *m, size_t n,
                  double score)
{
	score = zs_norm(score);
	x->wrote = 1;
	int rc = pmtx_hmap_put(x->tx, z->h, m, n, &score, 8, 0, NULL);
	return rc ? rc : order_put(x, z, score, m, n, 0);
}

static int zs_move(struct kvx *x, struct zs *z, const void *m, size_t n,
                   double old, double score)
{
	score = zs_norm(score);
	x->wrote = 1;
	int rc = order_put(x, z, old, m, n, 1);
	if (!rc)
		rc = order_put(x, z, score, m, n, 0);
	return rc ? rc : pmtx_hmap_put(x->tx, z->h, m, n, &score, 8, 0, NULL);
}

static int zs_del(struct kvx *x, struct zs *z, const void *m, size_t n,
                  double score)
{
	x->wrote = 1;
	int rc = order_put(x, z, score, m, n, 1);
	return rc ? rc : pmtx_hmap_del(x->tx, z->h, m, n);
}

/* Elements below (score, m), or at most it with PMTX_MAP_INCL. */
static int rank_below(struct kvx *x, struct zs *z, double score,
                      const void *m, size_t n, unsigned incl, uint64_t *rank)
{
	struct zkey k;
	int rc = zkey_set(&k, score, m, n);
	if (!rc)
		rc = pmtx_map_rank(x->tx, z->m, k.p, k.n, incl, rank);
	zkey_free(&k);
	return rc;
}

/* ---- ZADD ---- */

/* One pair, as Redis 7.0's zsetAdd: r counts what it did; r->nan set
 * (nothing written) if INCR's sum is not a number. */
static int zadd_one(struct kvx *x, struct zs *z, unsigned f,
                    const struct pmkv_zpair *p, struct pmkv_zadd_res *r)
{
	double cur, score = p->score;
	int found, rc = zs_get(x, z, p->m, p->n, &cur, &found);
	if (rc || (found && (f & PMKV_ZADD_NX)) ||
	    (!found && (f & PMKV_ZADD_XX)))
		return rc;
	if (!found) {
		r->added++, r->processed++, r->score = score;
		return zs_add(x, z, p->m, p->n, score);
	}
	if (f & PMKV_ZADD_INCR)
		score += cur;
	if (isnan(score)) { /* Z4 */
		r->nan = 1;
		return 0;
	}
	if (((f & PMKV_ZADD_LT) && score >= cur) ||
	    ((f & PMKV_ZADD_GT) && score <= cur))
		return 0;
	r->processed++, r->score = score;
	if (score == cur)
		return 0;
	r->updated++;
	return zs_move(x, z, p->m, p->n, cur, score);
}

int pmkv_zadd(struct pmkv_store *s, const void *k, size_t kn, unsigned flags,
              const struct pmkv_zpair *pr, size_t n, struct pmkv_zadd_res *r)
{
	struct kvx x;
	struct kpos p = ZPOS(k, kn);
	struct zs z;
	memset(r, 0, sizeof(*r));
	if (kn > s->max_key)
		return PMKV_E_TOOBIG;
	for (size_t i = 0; i < n; i++) /* Z4 */
		if (pr[i].n > s->max_value)
			return PMKV_E_TOOBIG;
	int rc = zs_begin(s, &x, 1, &p, &z, NULL, NULL);
	if (rc)
		return rc;
	if (!p.found && !(flags & PMKV_ZADD_XX))
		rc = zs_create(&x, &p, &z);
	for (size_t i = 0; i < n && !rc && p.found && !r->nan; i++)
		rc = zadd_one(&x, &z, flags, &pr[i], r);
	return kx_end(&x, rc);
}

/* ---- single members ---- */

int pmkv_zscore(struct pmkv_store *s, const void *k, size_t kn,
                const struct pmkv_key *m, size_t n, double *score,
                unsigned char *found)
{
	struct kvx x;
	struct kpos p = ZPOS(k, kn);
	struct zs z;
	memset(found, 0, n);
	int rc = zs_begin(s, &x, 0, &p, &z, NULL, NULL);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc && p.found; i++) {
		int f;
		rc = zs_get(&x, &z, m[i].p, m[i].n, &score[i], &f);
		found[i] = (unsigned char)f;
	}
	return kx_end(&x, rc);
}

int pmkv_zcard(struct pmkv_store *s, const void *k, size_t kn, uint64_t *n)
{
	struct kvx x;
	struct kpos p = ZPOS(k, kn);
	struct zs z;
	*n = 0;
	int rc = zs_begin(s, &x, 0, &p, &z, NULL, NULL);
	if (rc)
		return rc;
	if (p.found)
		rc = zs_card(&x, &z, n);
	return kx_end(&x, rc);
}

int pmkv_zrank(struct pmkv_store *s, const void *k, size_t kn, const void *m,
               size_t mn, int rev, int64_t *rank)
{
	struct kvx x;
	struct kpos p = ZPOS(k, kn);
	struct zs z;
	double score;
	uint64_t r = 0, card = 0;
	int found = 0;
	*rank = -1;
	int rc = zs_begin(s, &x, 0, &p, &z, NULL, NULL);
	if (rc)
		return rc;
	if (p.found)
		rc = zs_get(&x, &z, m, mn, &score, &found);
	if (!rc && found && !(rc = rank_below(&x, &z, score, m, mn, 0, &r)) &&
	    !(rc = zs_card(&x, &z, &card)))
		*rank = (int64_t)(rev ? card - 1 - r : r);
	return kx_end(&x, rc);
}

int pmkv_zrem(struct pmkv_store *s, const void *k, size_t kn,
              const struct pmkv_key *m, size_t n, uint64_t *removed)
{
	struct kvx x;
	struct kpos p = ZPOS(k, kn);
	struct zs z;
	uint64_t card = 0;
	*removed = 0;
	int rc = zs_begin(s, &x, 1, &p, &z, NULL, NULL);
	if (rc)
		return rc;
	if (p.found)
		rc = zs_card(&x, &z, &card);
	for (size_t i = 0; i < n && !rc && card; i++) {
		double score;
		int found;
		if ((rc = zs_get(&x, &z, m[i].p, m[i].n, &score, &found)) ||
		    !found)
			continue;
		(*removed)++;
		rc = --card ? zs_del(&x, &z, m[i].p, m[i].n, score)
		            : kx_remove(&x, &p); /* Z3 */
	}
	return kx_end(&x, rc);
}

/* ---- ranges ---- */

/* A run of ranks: n of them from first, upwards or (rev) downwards. */
struct zspan {
	uint64_t first, n;
	int rev;
};

/* RANK: Redis's indexes (genericZrangebyrankCommand) over card. */
static void rank_span(const struct pmkv_zrange *r, uint64_t card,
                      struct zspan *sp)
{
	long long len = (long long)card, start = r->start, end = r->end;
	if (start < 0)
		start += len;
	if (end < 0)
		end += len;
	if (start < 0)
		start = 0;
	*sp = (struct zspan){0, 0, r->rev};
	if (start > end || start >= len)
		return;
	if (end >= len)
		end = len - 1;
	sp->n = (uint64_t)(end - start + 1);
	sp->first = (uint64_t)(r->rev ? len - 1 - start : start);
}

/* The ranks [lo, hi) of a SCORE or LEX range, with its LIMIT: an offset
 * past the range (or negative) leaves nothing, a negative limit all. */
static void limit_span(const struct pmkv_zrange *r, uint64_t lo, uint64_t hi,
                       struct zspan *sp)
{
	uint64_t total = hi > lo ? hi - lo : 0, left;
	*sp = (struct zspan){0, 0, r->rev};
	if (r->offset < 0 || (uint64_t)r->offset >= total)
		return;
	left = total - (uint64_t)r->offset;
	sp->n = r->limit >= 0 && (uint64_t)r->limit < left ? (uint64_t)r->limit
	                                                    : left;
	sp->first = r->rev ? hi - 1 - (uint64_t)r->offset
	                   : lo + (uint64_t)r->offset;
}

/* The least double above d (d not +inf, not NaN): nextafter(d, inf),
 * without libm. */
static double next_up(double d)
{
	uint64_t u;
	if (d == 0)
		return 4.9406564584124654e-324; /* the least subnormal */
	memcpy(&u, &d, 8);
	u = d > 0 ? u + 1 : u - 1; /* away from 0 above it, toward it below */
	memcpy(&d, &u, 8);
	return d;
}

/* A SCORE range's ends: the elements below its start (*lo) and up to its
 * end (*hi). A bound is a key of an empty member, which no element's key
 * is below at its score; "score > s" is "score >= the next double". */
static int score_ends(struct kvx *x, struct zs *z,
                      const struct pmkv_zrange *r, uint64_t card,
                      uint64_t *lo, uint64_t *hi)
{
	int rc = 0;
	if (r->minex && r->min == INFINITY)
		*lo = card;
	else
		rc = rank_below(x, z, r->minex ? next_up(r->min)
		                               : r->min, NULL, 0, 0, lo);
	if (rc || (!r->maxex && r->max == INFINITY)) {
		*hi = card;
		return rc;
	}
	return rank_below(x, z, r->maxex ? r->max : next_up(r->max),
	                  NULL, 0, 0, hi);
}

/* A LEX bound's rank (Z6): the elements below a start, up to an end. */
static int lex_end(struct kvx *x, struct zs *z, double s0,
                   const struct pmkv_zlex *b, int is_end, uint64_t card,
                   uint64_t *rank)
{
	if (b->kind == PMKV_ZLEX_MIN || b->kind == PMKV_ZLEX_MAX) {
		*rank = b->kind == PMKV_ZLEX_MIN ? 0 : card;
		return 0;
	}
	unsigned incl = (b->kind == PMKV_ZLEX_INCL) == is_end ? PMTX_MAP_INCL
	                                                       : 0;
	return rank_below(x, z, s0, b->p, b->n, incl, rank);
}

/* The lowest score (the set is not empty: Z3). */
static int first_score(struct kvx *x, struct zs *z, double *s0)
{
	pmtx_map_cursor c;
	pmtx_bytes k;
	const char *m;
	size_t n;
	int rc = pmtx_map_seek(x->tx, z->m, PMTX_SEEK_FIRST, NULL, 0, &c);
	return rc ? rc : zs_at(&c, &k, s0, &m, &n);
}

/* The ranks range r names in the set z. */
static int zs_span(struct kvx *x, struct zs *z, const struct pmkv_zrange *r,
                   struct zspan *sp)
{
	uint64_t card, lo = 0, hi = 0;
	double s0;
	int rc = zs_card(x, z, &card);
	if (rc || r->by == PMKV_ZBY_RANK) {
		rank_span(r, card, sp);
		return rc;
	}
	if (r->by == PMKV_ZBY_SCORE)
		rc = score_ends(x, z, r, card, &lo, &hi);
	else if (!(rc = first_score(x, z, &s0)) &&
	         !(rc = lex_end(x, z, s0, &r->lmin, 0, card, &lo)))
		rc = lex_end(x, z, s0, &r->lmax, 1, card, &hi);
	if (!rc)
		limit_span(r, lo, hi, sp);
	return rc;
}

/* Look p->k up (zs_find) and the ranks r names in its set (none if it
 * is absent). */
static int zs_find_span(struct kvx *x, struct kpos *p, struct zs *z,
                        const struct pmkv_zrange *r, struct zspan *sp)
{
	*sp = (struct zspan){0, 0, 0};
	int rc = zs_find(x, p, z);
	return rc || !p->found ? rc : zs_span(x, z, r, sp);
}

/* The whole range, forwards: what ZREMRANGE* and ZCOUNT take. */
static struct pmkv_zrange whole(const struct pmkv_zrange *r)
{
	struct pmkv_zrange w = *r;
	w.rev = 0, w.offset = 0, w.limit = -1;
	return w;
}

/* Hand out the span's elements to out, until out asks to stop. */
static int zs_emit(struct kvx *x, struct zs *z, const struct zspan *sp,
                   const struct pmkv_zsink *out)
{
	pmtx_map_cursor c;
	int rc = sp->n ? pmtx_map_seek_rank(x->tx, z->m, sp->first, &c) : 0;
	for (uint64_t i = 0; i < sp->n && !rc; i++) {
		pmtx_bytes k;
		double score;
		const char *m;
		size_t n;
		if ((rc = zs_at(&c, &k, &score, &m, &n)) ||
		    out->elem(out->arg, m, n, score))
			break;
		if (i + 1 < sp->n)
			rc = sp->rev ? pmtx_map_prev(&c) : pmtx_map_next(&c);
	}
	return rc;
}

int pmkv_zrange(struct pmkv_store *s, const void *k, size_t kn,
                const struct pmkv_zrange *r, const struct pmkv_zsink *out)
{
	struct kvx x;
	struct kpos p = ZPOS(k, kn);
	struct zs z;
	struct zspan sp;
	int rc = zs_begin(s, &x, 0, &p, &z, r, &sp);
	if (rc)
		return rc;
	out->begin(out->arg, 0, sp.n);
	return kx_end(&x, zs_emit(&x, &z, &sp, out));
}

int pmkv_zcount(struct pmkv_store *s, const void *k, size_t kn,
                const struct pmkv_zrange *r, uint64_t *n)
{
	struct kvx x;
	struct kpos p = ZPOS(k, kn);
	struct zs z;
	struct zspan sp;
	struct pmkv_zrange w = whole(r);
	*n = 0;
	int rc = zs_begin(s, &x, 0, &p, &z, &w, &sp);
	if (rc)
		return rc;
	*n = sp.n;
	return kx_end(&x, 0);
}

/* Remove the element under cursor c, handed to out first if out (its
 * view copied before the writes: Z4). */
static int remove_at(struct kvx *x, struct zs *z, const pmtx_map_cursor *c,
                     const struct pmkv_zsink *out)
{
	pmtx_bytes k;
	struct zkey copy;
	double score;
	const char *m;
	size_t n;
	int rc = zs_at(c, &k, &score, &m, &n);
	if (rc || (rc = zkey_set(&copy, score, m, n)))
		return rc;
	if (out)
		out->elem(out->arg, m, n, score);
	rc = zs_del(x, z, copy.p + 8, copy.n - 8, score);
	zkey_free(&copy);
	return rc;
}

static int remove_rank(struct kvx *x, struct zs *z, uint64_t r)
{
	pmtx_map_cursor c;
	int rc = pmtx_map_seek_rank(x->tx, z->m, r, &c);
	return rc ? rc : remove_at(x, z, &c, NULL);
}

int pmkv_zremrange(struct pmkv_store *s, const void *k, size_t kn,
                   const struct pmkv_zrange *r, uint64_t *removed)
{
	struct kvx x;
	struct kpos p = ZPOS(k, kn);
	struct zs z;
	struct zspan sp;
	struct pmkv_zrange w = whole(r);
	uint64_t card = 0;
	*removed = 0;
	int rc = zs_begin(s, &x, 1, &p, &z, &w, &sp);
	if (rc)
		return rc;
	if (sp.n)
		rc = zs_card(&x, &z, &card);
	if (!rc && sp.n && sp.n == card)
		rc = kx_remove(&x, &p); /* Z3 */
	else
		for (uint64_t i = 0; i < sp.n && !rc; i++)
			rc = remove_rank(&x, &z, sp.first);
	*removed = rc ? 0 : sp.n;
	return kx_end(&x, rc);
}

/* ---- copies of elements ---- */

/* Elements copied out of the store: their members' bytes one after
 * another in b, and each one's place, score and input (src). m points
 * to the bytes once zbuf_fix has run. */
struct zel {
	size_t at, n;
	double score;
	size_t src;
	const char *m;
};
struct zbuf {
	char *b;
	size_t nb, capb;
	struct zel *e;
	size_t n, cap;
};

static int zbuf_push(struct zbuf *b, const struct zel *e)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;
		struct zel *ne = realloc(b->e, cap * sizeof(*ne));
		if (!ne)
			return ENOMEM;
		b->e = ne, b->cap = cap;
	}
	b->e[b->n++] = *e;
	return 0;
}

static int zbuf_add(struct zbuf *b, const void *m, size_t n, double score,
                    size_t src)
{
	if (b->nb + n > b->capb || !b->b) {
		size_t cap = b->capb ? b->capb : 4096;
		while (cap < b->nb + n)
			cap *= 2;
		char *nb = realloc(b->b, cap);
		if (!nb)
			return ENOMEM;
		b->b = nb, b->capb = cap;
	}
	struct zel e = {b->nb, n, score, src, NULL};
	int rc = zbuf_push(b, &e);
	if (!rc && n)
		memcpy(b->b + b->nb, m, n);
	if (!rc)
		b->nb += n;
	return rc;
}

/* The members' pointers, once no more bytes are added. */
static void zbuf_fix(struct zbuf *b)
{
	for (size_t i = 0; i < b->n; i++)
		b->e[i].m = b->b + b->e[i].at;
}

static void zbuf_free(struct zbuf *b)
{
	free(b->b);
	free(b->e);
}

static int member_cmp(const struct zel *a, const struct zel *b)
{
	int c = memcmp(a->m, b->m, a->n < b->n ? a->n : b->n);
	return c ? c : (a->n > b->n) - (a->n < b->n);
}

/* Redis's order: by score (-0 equal to 0), then by member. */
static int order_cmp(const void *pa, const void *pb)
{
	const struct zel *a = pa, *b = pb;
	if (a->score != b->score)
		return a->score < b->score ? -1 : 1;
	return member_cmp(a, b);
}

/* A pmkv_zsink that copies into a struct zbuf. */
struct zcopy {
	struct zbuf *b;
	int err;
};

static void copy_begin(void *arg, size_t key, uint64_t n)
{
	(void)arg, (void)key, (void)n;
}

static int copy_elem(void *arg, const void *m, size_t n, double score)
{
	struct zcopy *c = arg;
	if (!c->err)
		c->err = zbuf_add(c->b, m, n, score, 0);
	return c->err;
}

/* Give dst the sorted set of b's elements (fixed, in order, distinct),
 * in place of whatever it held; none: remove dst. Nothing is written
 * before the wrapped version's refusal (Z4). */
static int zs_store(struct kvx *x, const void *dst, size_t dn,
                    const struct zbuf *b);

int pmkv_zrangestore(struct pmkv_store *s, const void *dst, size_t dn,
                     const void *src, size_t sn, const struct pmkv_zrange *r,
                     uint64_t *stored)
{
	struct kvx x;
	struct kpos p = ZPOS(src, sn);
	struct zs z;
	struct zspan sp;
	struct zbuf b = {0};
	struct zcopy cp = {&b, 0};
	struct pmkv_zsink out = {copy_begin, copy_elem, &cp};
	*stored = 0;
	if (dn > s->max_key)
		return PMKV_E_TOOBIG;
	int rc = zs_begin(s, &x, 1, &p, &z, r, &sp);
	if (rc)
		return rc;
	if (!(rc = zs_emit(&x, &z, &sp, &out)))
		rc = cp.err;
	if (!rc) {
		zbuf_fix(&b);
		qsort(b.e, b.n, sizeof(*b.e), order_cmp); /* rev's, upwards */
		rc = zs_store(&x, dst, dn, &b);
	}
	*stored = rc ? 0 : b.n;
	zbuf_free(&b);
	return kx_end(&x, rc);
}

/* ---- pops ---- */

/* Remove the lowest (max 0) or highest element, handed to out first. */
static int pop_one(struct kvx *x, struct zs *z, int max,
                   const struct pmkv_zsink *out)
{
	pmtx_map_cursor c;
	int rc = pmtx_map_seek(x->tx, z->m, max ? PMTX_SEEK_LAST
	                                        : PMTX_SEEK_FIRST, NULL, 0, &c);
	return rc ? rc : remove_at(x, z, &c, out);
}

/* Pop up to count elements of the set p found (the key's index: key). */
static int zs_pop(struct kvx *x, struct kpos *p, struct zs *z, int max,
                  uint64_t count, size_t key, const struct pmkv_zsink *out)
{
	uint64_t card;
	int rc = zs_card(x, z, &card);
	if (rc)
		return rc;
	uint64_t k = count < card ? count : card;
	out->begin(out->arg, key, k);
	if (k == card) { /* all of them: hand them out, remove the key (Z3) */
		struct zspan sp = {max ? card - 1 : 0, card, max};
		rc = zs_emit(x, z, &sp, out);
		return rc ? rc : kx_remove(x, p);
	}
	for (uint64_t i = 0; i < k && !rc; i++)
		rc = pop_one(x, z, max, out);
	return rc;
}

int pmkv_zpop(struct pmkv_store *s, const struct pmkv_key *keys, size_t n,
              int max, uint64_t count, const struct pmkv_zsink *out,
              size_t *which)
{
	struct kvx x;
	struct kpos p = ZPOS(NULL, 0);
	struct zs z = {NULL, NULL};
	*which = n;
	int rc = kx_begin(s, &x, 1);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc && *which == n; i++) {
		p = ZPOS(keys[i].p, keys[i].n);
		if (!(rc = zs_find(&x, &p, &z)) && p.found)
			*which = i;
	}
	if (!rc && *which < n)
		rc = zs_pop(&x, &p, &z, max, count, *which, out);
	return kx_end(&x, rc);
}

/* ---- random members ---- */

/* The element at rank r to out: its elem's answer in *stop. */
static int emit_rank(struct kvx *x, struct zs *z, uint64_t r,
                     const struct pmkv_zsink *out, int *stop)
{
	pmtx_map_cursor c;
	pmtx_bytes k;
	double score;
	const char *m;
	size_t n;
	int rc = pmtx_map_seek_rank(x->tx, z->m, r, &c);
	if (!rc)
		rc = zs_at(&c, &k, &score, &m, &n);
	if (!rc)
		*stop = out->elem(out->arg, m, n, score);
	return rc;
}

/* A set of ranks (open addressing; a rank r is stored as r + 1). */
struct rset {
	uint64_t *slot;
	size_t mask;
};

/* Add r: 1 if it was there already. */
static int rset_add(struct rset *s, uint64_t r)
{
	size_t i = (size_t)(r * UINT64_C(0x9e3779b97f4a7c15) >> 20) & s->mask;
	for (; s->slot[i]; i = (i + 1) & s->mask)
		if (s->slot[i] == r + 1)
			return 1;
	s->slot[i] = r + 1;
	return 0;
}

/* k distinct ranks below card, k < card (Floyd's sampling), to out. */
static int emit_distinct(struct kvx *x, struct zs *z, uint64_t card,
                         uint64_t k, const struct pmkv_zsink *out)
{
	size_t cap = 16;
	while (cap < 2 * k)
		cap *= 2;
	struct rset set = {calloc(cap, sizeof(uint64_t)), cap - 1};
	int rc = set.slot ? 0 : ENOMEM, stop = 0;
	for (uint64_t j = card - k; j < card && !rc && !stop; j++) {
		uint64_t t = pmkv_rand_below(j + 1);
		if (rset_add(&set, t))
			rset_add(&set, t = j);
		rc = emit_rank(x, z, t, out, &stop);
	}
	free(set.slot);
	return rc;
}

int pmkv_zrandmember(struct pmkv_store *s, const void *k, size_t kn,
                     long long count, const struct pmkv_zsink *out,
                     int *found)
{
	struct kvx x;
	struct kpos p = ZPOS(k, kn);
	struct zs z;
	uint64_t card = 0;
	int stop = 0;
	*found = 0;
	int rc = zs_begin(s, &x, 0, &p, &z, NULL, NULL);
	if (rc)
		return rc;
	if ((*found = p.found))
		rc = zs_card(&x, &z, &card);
	uint64_t want = count < 0 ? 0 - (uint64_t)count : (uint64_t)count;
	if (!rc && count >= 0 && want > card)
		want = card;
	if (!rc)
		out->begin(out->arg, 0, p.found ? want : 0);
	if (rc || !p.found || !want) {
		/* nothing more */
	} else if (count > 0 && want == card) {
		struct zspan sp = {0, card, 0};
		rc = zs_emit(&x, &z, &sp, out);
	} else if (count > 0) {
		rc = emit_distinct(&x, &z, card, want, out);
	} else {
		for (uint64_t i = 0; i < want && !rc && !stop; i++)
			rc = emit_rank(&x, &z, pmkv_rand_below(card), out, &stop);
	}
	return kx_end(&x, rc);
}

/* ---- ZSCAN ---- */

static int scan_one(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	const struct pmkv_zsink *out = arg;
	double score;
	if (v->n != 8)
		return PMTX_E_CORRUPT;
	memcpy(&score, v->p, 8);
	out->elem(out->arg, k->p, k->n, score);
	return 0;
}

int pmkv_zscan(struct pmkv_store *s, const void *k, size_t kn,
               uint64_t cursor, uint64_t count, const struct pmkv_zsink *out,
               uint64_t *next)
{
	struct kvx x;
	struct kpos p = ZPOS(k, kn);
	struct zs z;
	*next = 0;
	if (count > SCAN_ALL) /* 10 x count buckets must not wrap */
		count = SCAN_ALL;
	int rc = zs_begin(s, &x, 0, &p, &z, NULL, NULL);
	if (rc)
		return rc;
	if (p.found)
		rc = pmtx_hmap_scan(x.tx, z.h, cursor, (size_t)count, scan_one,
		                    (void *)out, next);
	return kx_end(&x, rc);
}

/* ---- ZUNION, ZINTER, ZDIFF ---- */

/* A whole set's members, at score 1. */
struct set_copy {
	struct zbuf *b;
	size_t src;
};

static int set_one(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct set_copy *c = arg;
	(void)v;
	return zbuf_add(c->b, k->p, k->n, 1.0, c->src);
}

static int copy_set(struct kvx *x, pmtx_off off, size_t src, struct zbuf *b)
{
	pmtx_hmap *h;
	struct set_copy c = {b, src};
	uint64_t cur = 0;
	int rc = pmtx_hmap_open(x->s->r, off, NULL, &h); /* Z5 */
	if (rc)
		return rc;
	do
		rc = pmtx_hmap_scan(x->tx, h, cur, SCAN_ALL, set_one, &c, &cur);
	while (!rc && cur);
	pmtx_hmap_close(h);
	return rc;
}

/* A whole sorted set's elements, in order. */
static int copy_zset(struct kvx *x, pmtx_off off, size_t src,
                     struct zbuf *b)
{
	pmtx_map *m;
	pmtx_map_cursor c;
	int rc = pmtx_map_open(x->s->r, off, NULL, &m); /* Z5 */
	if (rc)
		return rc;
	rc = pmtx_map_seek(x->tx, m, PMTX_SEEK_FIRST, NULL, 0, &c);
	while (!rc) {
		pmtx_bytes k;
		double score;
		const char *mb;
		size_t n;
		if (!(rc = zs_at(&c, &k, &score, &mb, &n)) &&
		    !(rc = zbuf_add(b, mb, n, score, src)))
			rc = pmtx_map_next(&c);
	}
	pmtx_map_close(m);
	return rc == PMTX_E_NOT_FOUND ? 0 : rc;
}

/* Input key i into b (its elements' src: i), *card its size: a sorted
 * set, a set, nothing if absent, else PMKV_E_WRONGTYPE. */
static int copy_input(struct kvx *x, const struct pmkv_key *key, size_t i,
                      struct zbuf *b, uint64_t *card)
{
	struct kpos p = ZPOS(key->p, key->n);
	struct pmkv_coll c;
	size_t before = b->n;
	int rc = kx_find(x, &p);
	*card = 0;
	if (rc || !p.found)
		return rc;
	if (p.v.type == PMKV_T_ZSET && !(rc = kx_coll(&p, PMKV_T_ZSET, &c)))
		rc = copy_zset(x, c.c[1], i, b);
	else if (p.v.type == PMKV_T_SET && !(rc = kx_coll(&p, PMKV_T_SET, &c)))
		rc = copy_set(x, c.c[0], i, b);
	else if (!rc)
		rc = PMKV_E_WRONGTYPE;
	*card = b->n - before;
	return rc;
}

/* An input's place in Redis's order of the inputs: by size, ties in the
 * order given (its qsort of them is glibc's stable merge sort). */
struct zin {
	uint64_t card;
	size_t key;
};

static int zin_cmp(const void *pa, const void *pb)
{
	const struct zin *a = pa, *b = pb;
	if (a->card != b->card)
		return a->card < b->card ? -1 : 1;
	return (a->key > b->key) - (a->key < b->key);
}

/* Copy every input into in, each element's src then its input's place:
 * by size for UNION and INTER (as Redis aggregates them), as given for
 * DIFF; w[place]: its weight. */
static int copy_inputs(struct kvx *x, const struct pmkv_zsetop *o,
                       struct zbuf *in, double *w)
{
	struct zin *zi = calloc(o->n ? o->n : 1, sizeof(*zi));
	size_t *place = calloc(o->n ? o->n : 1, sizeof(*place));
	int rc = zi && place ? 0 : ENOMEM;
	for (size_t i = 0; i < o->n && !rc; i++) {
		zi[i].key = i;
		rc = copy_input(x, &o->keys[i], i, in, &zi[i].card);
	}
	if (!rc && o->op != PMKV_ZOP_DIFF)
		qsort(zi, o->n, sizeof(*zi), zin_cmp);
	for (size_t i = 0; i < o->n && !rc; i++) {
		place[zi[i].key] = i;
		w[i] = o->weights ? o->weights[zi[i].key] : 1.0;
	}
	for (size_t i = 0; i < in->n && !rc; i++)
		in->e[i].src = place[in->e[i].src];
	free(zi);
	free(place);
	return rc;
}

/* By member, then by input: a member's elements side by side, in the
 * order Redis aggregates them. */
static int group_cmp(const void *pa, const void *pb)
{
	const struct zel *a = pa, *b = pb;
	int c = member_cmp(a, b);
	return c ? c : (a->src > b->src) - (a->src < b->src);
}

/* Redis 7.0's zunionInterAggregate. */
static double aggregate(int agg, double acc, double v)
{
	if (agg == PMKV_ZAGG_SUM) {
		acc += v;
		return isnan(acc) ? 0.0 : acc; /* inf + -inf */
	}
	if (agg == PMKV_ZAGG_MIN)
		return v < acc ? v : acc;
	return v > acc ? v : acc;
}

static double weighted(double w, double score)
{
	double v = w * score;
	return isnan(v) ? 0.0 : v; /* 0 x inf */
}

/* One member's elements g[0..n) (n inputs in all): whether it is in the
 * result, and its score there (zunionInterDiffGenericCommand). */
static int group_score(const struct pmkv_zsetop *o, const double *w,
                       const struct zel *g, size_t n, double *score)
{
	if (o->op == PMKV_ZOP_DIFF) {
		*score = g[0].score;
		return n == 1 && g[0].src == 0;
	}
	if (o->op == PMKV_ZOP_INTER && n != o->n)
		return 0;
	*score = weighted(w[g[0].src], g[0].score);
	for (size_t i = 1; i < n; i++) /* INTER's values unsanitized */
		*score = aggregate(o->agg, *score, o->op == PMKV_ZOP_INTER
		                   ? g[i].score * w[g[i].src]
		                   : weighted(w[g[i].src], g[i].score));
	return 1;
}

/* The result of o over its copied inputs in (fixed), into res (its
 * elements' members point into in), in Redis's order. */
static int setop_result(const struct pmkv_zsetop *o, const double *w,
                        struct zbuf *in, struct zbuf *res)
{
	int rc = 0;
	qsort(in->e, in->n, sizeof(*in->e), group_cmp);
	for (size_t i = 0, j; i < in->n && !rc; i = j) {
		struct zel e = in->e[i];
		for (j = i + 1; j < in->n && !member_cmp(&in->e[j], &e); j++)
			;
		if (group_score(o, w, &in->e[i], j - i, &e.score))
			rc = zbuf_push(res, &e);
	}
	if (!rc)
		qsort(res->e, res->n, sizeof(*res->e), order_cmp);
	return rc;
}

/* Copy o's inputs into in and compute the result into res. */
static int setop_run(struct kvx *x, const struct pmkv_zsetop *o,
                     struct zbuf *in, struct zbuf *res)
{
	double *w = calloc(o->n ? o->n : 1, sizeof(*w));
	int rc = w ? copy_inputs(x, o, in, w) : ENOMEM;
	if (!rc) {
		zbuf_fix(in);
		rc = setop_result(o, w, in, res);
	}
	free(w);
	return rc;
}

int pmkv_zsetop_types(struct pmkv_store *s, const struct pmkv_key *keys,
                      size_t n)
{
	struct kvx x;
	int rc = kx_begin(s, &x, 0);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		struct kpos p = ZPOS(keys[i].p, keys[i].n);
		if (!(rc = kx_find(&x, &p)) && p.found &&
		    p.v.type != PMKV_T_ZSET && p.v.type != PMKV_T_SET)
			rc = PMKV_E_WRONGTYPE;
	}
	return kx_end(&x, rc);
}

int pmkv_zsetop(struct pmkv_store *s, const struct pmkv_zsetop *o,
                const struct pmkv_zsink *out)
{
	struct kvx x;
	struct zbuf in = {0}, res = {0};
	int rc = kx_begin(s, &x, 0);
	if (rc)
		return rc;
	rc = setop_run(&x, o, &in, &res);
	if (!rc)
		out->begin(out->arg, 0, res.n);
	for (size_t i = 0; i < res.n && !rc; i++)
		if (out->elem(out->arg, res.e[i].m, res.e[i].n, res.e[i].score))
			break;
	zbuf_free(&in);
	zbuf_free(&res);
	return kx_end(&x, rc);
}

int pmkv_zsetop_store(struct pmkv_store *s, const void *dst, size_t dn,
                      const struct pmkv_zsetop *o, uint64_t *stored)
{
	struct kvx x;
	struct zbuf in = {0}, res = {0};
	*stored = 0;
	if (dn > s->max_key)
		return PMKV_E_TOOBIG;
	int rc = kx_begin(s, &x, 1);
	if (rc)
		return rc;
	rc = setop_run(&x, o, &in, &res);
	if (!rc)
		rc = zs_store(&x, dst, dn, &res);
	*stored = rc ? 0 : res.n;
	zbuf_free(&in);
	zbuf_free(&res);
	return kx_end(&x, rc);
}

int pmkv_zintercard(struct pmkv_store *s, const struct pmkv_key *keys,
                    size_t n, uint64_t limit, uint64_t *card)
{
	struct kvx x;
	struct zbuf in = {0}, res = {0};
	struct pmkv_zsetop o = {PMKV_ZOP_INTER, PMKV_ZAGG_SUM, keys, NULL, n};
	*card = 0;
	int rc = kx_begin(s, &x, 0);
	if (rc)
		return rc;
	rc = setop_run(&x, &o, &in, &res);
	*card = rc ? 0 : limit && res.n > limit ? limit : res.n;
	zbuf_free(&in);
	zbuf_free(&res);
	return kx_end(&x, rc);
}

/* ---- a stored result ---- */

/* pmtx_map_load's source over a struct zbuf: each element's key. */
struct zload {
	const struct zbuf *b;
	size_t i;
	struct zkey k;
	int err;
};

static int load_next(void *arg, pmtx_bytes *k, pmtx_bytes *v)
{
	struct zload *l = arg;
	if (l->i == l->b->n)
		return 0;
	const struct zel *e = &l->b->e[l->i++];
	zkey_free(&l->k);
	if ((l->err = zkey_set(&l->k, zs_norm(e->score), e->m, e->n)))
		return -1;
	*k = (pmtx_bytes){l->k.p, l->k.n, 0};
	*v = (pmtx_bytes){"", 0, 0};
	return 1;
}

/* Fill the new set z with b's elements (Z1, Z2). */
static int zs_load(struct kvx *x, struct zs *z, const struct zbuf *b)
{
	struct zload l = {b, 0, {NULL, 0, {0}}, 0};
	x->wrote = 1;
	int rc = pmtx_map_load(x->tx, z->m, load_next, &l, LOAD_FILL);
	zkey_free(&l.k);
	if (l.err)
		rc = l.err;
	for (size_t i = 0; i < b->n && !rc; i++) {
		double score = zs_norm(b->e[i].score);
		rc = pmtx_hmap_put(x->tx, z->h, b->e[i].m, b->e[i].n, &score, 8,
		                   0, NULL);
	}
	return rc;
}

static int zs_store(struct kvx *x, const void *dst, size_t dn,
                    const struct zbuf *b)
{
	struct kpos p = ZPOS(dst, dn);
	struct zs z;
	int rc = b->n && x->s->wrapped ? PMKV_E_STRINGS : kx_find(x, &p);
	if (!rc && p.found)
		rc = kx_remove(x, &p);
	if (rc || !b->n)
		return rc;
	rc = zs_create(x, &p, &z);
	return rc ? rc : zs_load(x, &z, b);
}
