/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_hash.c - pmkv's hash operations (store_hash.h): each one store
 * operation over the collections' interface (store_int.h kx_*), so one
 * transaction, under the store lock (store.c S1, S2).
 *
 * A hash is a key whose object names a pmtx_hmap of field -> value
 * (layout.h); its fields are the map's entries, in the map's order.
 *
 * Invariants (beside store.c's S1-S14 and layout.h's L3)
 *  H1. A hash is never empty: the operation that creates the key puts a
 *      field in the same transaction (kx_coll_new, then the put), and the
 *      one that removes the last field removes the key (kx_remove) in
 *      the same transaction.
 *  H2. A client's mistake is found before the first write (S13): the
 *      lengths before the transaction begins, the type at the lookup, and
 *      an increment's old value and result before its put. The only
 *      write before them is kx_find's removal of an expired key, after
 *      which the key is absent: nothing but the lengths, checked first,
 *      can fail then.
 *  H3. A value read through a view is used (parsed, emitted, copied)
 *      before the operation writes the map (pmtx_containers.h: a view
 *      lasts until the container is next written). Reads emit while the
 *      operation runs; HRANDFIELD with a negative count copies the
 *      entries it picked, since it hands them out in the order picked,
 *      which is not the map's.
 *  H4. A walk of the whole map (HGETALL, HRANDFIELD) is a run of scans
 *      from cursor 0 in one transaction that writes nothing meanwhile:
 *      every entry once (pmtx_hmap_scan), so the count given first is the
 *      number of pairs that follow.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_hash.h"
#include "store_int.h"

#define WALK_BATCH 1024 /* entries a scan of a whole-map walk asks for */
#define WALK_STOP INT_MAX /* a walk's callback: enough (not a status) */
#define SCAN_MAX (UINT64_C(1) << 40) /* HSCAN's COUNT, at most (store.c) */
/* HRANDFIELD's picks of a negative count, at most: each costs 32 bytes
 * here besides its reply (Redis has no bound; its reply would take
 * gigabytes before this one refuses) */
#define PICKS_MAX (UINT64_C(1) << 24)

/* ---- lookups ---- */

/* The lengths an operation would write (H2): a key that may be created,
 * and n fields and values (v may be NULL). */
static int lengths_ok(const struct pmkv_store *s, size_t kn,
                      const struct pmkv_key *f, const struct pmkv_key *v,
                      size_t n)
{
	if (kn > s->max_key)
		return PMKV_E_TOOBIG;
	for (size_t i = 0; i < n; i++)
		if (f[i].n > s->max_value || (v && v[i].n > s->max_value))
			return PMKV_E_TOOBIG;
	return 0;
}

/* Look the key p up in x and open its hash: *h, or NULL if the key is
 * absent; PMKV_E_WRONGTYPE if it holds another type. */
static int open_hash(struct kvx *x, struct kpos *p, pmtx_hmap **h)
{
	struct pmkv_coll c;
	int rc = kx_find(x, p);
	*h = NULL;
	if (!rc)
		rc = kx_coll(p, PMKV_T_HASH, &c);
	return rc || !p->found ? rc : kx_hmap(x, c.c[0], h);
}

/* A reader: begin x and open the hash of key k (*h NULL if absent). On
 * failure nothing is left begun. */
static int read_hash(struct pmkv_store *s, struct kvx *x, struct kpos *p,
                     pmtx_hmap **h)
{
	int rc = kx_begin(s, x, 0);
	if (!rc && (rc = open_hash(x, p, h)))
		kx_end(x, rc);
	return rc;
}

/* Put f = v in the hash *h, or, if *h is NULL (the key p absent), in a
 * new hash for p (H1). */
static int put_field(struct kvx *x, struct kpos *p, pmtx_hmap **h,
                     const void *f, size_t fn, const void *v, size_t vn,
                     unsigned flags, int *existed)
{
	struct pmkv_coll c;
	int rc = 0;
	*existed = 0;
	if (!*h && !(rc = kx_coll_new(x, p, PMKV_T_HASH, &c)))
		rc = kx_hmap(x, c.c[0], h);
	return rc ? rc
	          : pmtx_hmap_put(x->tx, *h, f, fn, v, vn, flags, existed);
}

/* The view of field f in h: 0 and *found. */
static int get_field(struct kvx *x, pmtx_hmap *h, const void *f, size_t fn,
                     pmtx_bytes *v, int *found)
{
	int rc = h ? pmtx_hmap_get(x->tx, h, f, fn, v) : PMTX_E_NOT_FOUND;
	*found = !rc;
	return rc == PMTX_E_NOT_FOUND ? 0 : rc;
}

/* ---- writes ---- */

int pmkv_hset(struct pmkv_store *s, const void *k, size_t kn,
              const struct pmkv_key *f, const struct pmkv_key *v, size_t n,
              int nx, uint64_t *added)
{
	struct kvx x;
	struct kpos p = {.k = k, .kn = kn};
	pmtx_hmap *h;
	int rc = lengths_ok(s, kn, f, v, n);
	*added = 0;
	if (rc || (rc = kx_begin(s, &x, 1)))
		return rc;
	rc = open_hash(&x, &p, &h);
	for (size_t i = 0; i < n && !rc; i++) {
		int existed;
		rc = put_field(&x, &p, &h, f[i].p, f[i].n, v[i].p, v[i].n,
		               nx ? PMTX_HMAP_NX : 0, &existed);
		if (rc == PMTX_E_EXISTS) /* nothing written */
			rc = 0, existed = 1;
		*added += !rc && !existed;
	}
	return kx_end(&x, rc);
}

/* Remove the key p found if its hash h has no field left (H1). */
static int drop_if_empty(struct kvx *x, struct kpos *p, pmtx_hmap *h)
{
	uint64_t n = 0;
	int rc = pmtx_hmap_len(x->tx, h, &n);
	return rc || n ? rc : kx_remove(x, p);
}

int pmkv_hdel(struct pmkv_store *s, const void *k, size_t kn,
              const struct pmkv_key *f, size_t n, uint64_t *removed)
{
	struct kvx x;
	struct kpos p = {.k = k, .kn = kn};
	pmtx_hmap *h;
	int rc = kx_begin(s, &x, 1);
	*removed = 0;
	if (rc)
		return rc;
	rc = open_hash(&x, &p, &h);
	for (size_t i = 0; i < n && h && !rc; i++) {
		rc = pmtx_hmap_del(x.tx, h, f[i].p, f[i].n);
		*removed += !rc;
		if (rc == PMTX_E_NOT_FOUND) /* nothing written */
			rc = 0;
	}
	if (!rc && *removed)
		rc = drop_if_empty(&x, &p, h);
	return kx_end(&x, rc);
}

/* Redis's reading of a hash value as an integer (string2ll): base 10, an
 * optional '-', no spaces, no '+', no leading zero but in "0", 64 bits,
 * at most 20 characters. 0, or -1. */
static int parse_ll(const char *p, size_t n, int64_t *out)
{
	uint64_t v = 0;
	int neg = n > 0 && p[0] == '-';
	size_t i = (size_t)neg;
	if (n == 1 && p[0] == '0')
		return *out = 0, 0;
	if (n == 0 || n > 20 || i == n || p[i] < '1' || p[i] > '9')
		return -1;
	uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < n; i++) {
		unsigned d = (unsigned char)p[i] - '0';
		if (d > 9 || v > (lim - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* An increment's new value, as text (in a buffer of arg's), from the
 * view of the old one (found 0: absent): 0, or the client's mistake. */
typedef int (*incr_fn)(const pmtx_bytes *old, int found, void *arg,
                       const char **text, size_t *n);

/* HINCRBY and HINCRBYFLOAT: field f of the hash k (created if absent)
 * given the value next makes of its old one (H2, H3). */
static int incr_field(struct pmkv_store *s, const void *k, size_t kn,
                      const void *f, size_t fn, incr_fn next, void *arg)
{
	struct kvx x;
	struct kpos p = {.k = k, .kn = kn};
	struct pmkv_key fk = {f, fn};
	pmtx_hmap *h;
	pmtx_bytes v;
	const char *t = NULL;
	size_t n = 0;
	int found, existed;
	int rc = lengths_ok(s, kn, &fk, NULL, 1);
	if (rc || (rc = kx_begin(s, &x, 1)))
		return rc;
	rc = open_hash(&x, &p, &h);
	if (!rc)
		rc = get_field(&x, h, f, fn, &v, &found);
	if (!rc) /* the view is read before the put (H3) */
		rc = next(&v, found, arg, &t, &n);
	if (!rc)
		rc = put_field(&x, &p, &h, f, fn, t, n, 0, &existed);
	return kx_end(&x, rc);
}

struct incr_int {
	int64_t delta, result;
	char buf[24];
};

/* HINCRBY's: Redis's overflow check, and %lld. */
static int incr_int(const pmtx_bytes *v, int found, void *arg,
                    const char **text, size_t *n)
{
	struct incr_int *a = arg;
	int64_t old = 0, d = a->delta;
	if (found && parse_ll(v->p, v->n, &old))
		return PMKV_E_NOTINT;
	if ((d < 0 && old < 0 && d < INT64_MIN - old) ||
	    (d > 0 && old > 0 && d > INT64_MAX - old))
		return PMKV_E_OVERFLOW;
	a->result = old + d;
	*text = a->buf;
	*n = (size_t)snprintf(a->buf, sizeof(a->buf), "%lld",
	                      (long long)a->result);
	return 0;
}

int pmkv_hincrby(struct pmkv_store *s, const void *k, size_t kn,
                 const void *f, size_t fn, int64_t delta, int64_t *result)
{
	struct incr_int a = {delta, 0, ""};
	int rc = incr_field(s, k, kn, f, fn, incr_int, &a);
	*result = a.result;
	return rc;
}

struct incr_float {
	long double delta;
	char *buf;
	size_t cap, n;
};

/* HINCRBYFLOAT's: long double, and Redis's text of it. */
static int incr_float(const pmtx_bytes *v, int found, void *arg,
                      const char **text, size_t *n)
{
	struct incr_float *a = arg;
	long double old = 0, r;
	if (found && pmkv_ld_parse(v->p, v->n, &old))
		return PMKV_E_NOTFLOAT;
	r = old + a->delta;
	if (isnan(r) || isinf(r))
		return PMKV_E_OVERFLOW;
	*text = a->buf;
	*n = a->n = pmkv_ld_format(a->buf, a->cap, r);
	return 0;
}

int pmkv_hincrbyfloat(struct pmkv_store *s, const void *k, size_t kn,
                      const void *f, size_t fn, long double delta, char *buf,
                      size_t cap, size_t *n)
{
	struct incr_float a = {delta, buf, cap, 0};
	int rc = incr_field(s, k, kn, f, fn, incr_float, &a);
	*n = a.n;
	return rc;
}

/* ---- reads ---- */

int pmkv_hget(struct pmkv_store *s, const void *k, size_t kn, const void *f,
              size_t fn, pmkv_emit_fn emit, void *arg, int *found)
{
	struct kvx x;
	struct kpos p = {.k = k, .kn = kn};
	pmtx_hmap *h;
	pmtx_bytes v;
	int rc = read_hash(s, &x, &p, &h);
	*found = 0;
	if (rc)
		return rc;
	rc = get_field(&x, h, f, fn, &v, found);
	if (!rc && *found)
		emit(arg, v.p, v.n);
	return kx_end(&x, rc);
}

int pmkv_hmget(struct pmkv_store *s, const void *k, size_t kn,
               const struct pmkv_key *f, size_t n, pmkv_pair_fn pair,
               void *arg)
{
	struct kvx x;
	struct kpos p = {.k = k, .kn = kn};
	pmtx_hmap *h;
	int rc = read_hash(s, &x, &p, &h);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		pmtx_bytes v;
		int found;
		rc = get_field(&x, h, f[i].p, f[i].n, &v, &found);
		if (!rc)
			pair(arg, f[i].p, f[i].n, found ? v.p : NULL, v.n);
	}
	return kx_end(&x, rc);
}

/* fn for every entry of h, in the map's order (H4), until fn returns
 * nonzero: WALK_STOP ends the walk with 0, anything else is the walk's
 * status. */
static int walk(struct kvx *x, pmtx_hmap *h, pmtx_hmap_fn fn, void *arg)
{
	uint64_t cur = 0;
	int rc;
	do
		rc = pmtx_hmap_scan(x->tx, h, cur, WALK_BATCH, fn, arg, &cur);
	while (!rc && cur);
	return rc == WALK_STOP ? 0 : rc;
}

static int emit_pair(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	const struct pmkv_pairs *o = arg;
	o->pair(o->arg, k->p, k->n, v->p, v->n);
	return 0;
}

/* The hash of the key p for reading, and its length: *h NULL and *n 0 if
 * the key is absent. */
static int read_len(struct pmkv_store *s, struct kvx *x, struct kpos *p,
                    pmtx_hmap **h, uint64_t *n)
{
	int rc = read_hash(s, x, p, h);
	*n = 0;
	if (!rc && *h && (rc = pmtx_hmap_len(x->tx, *h, n)))
		kx_end(x, rc);
	return rc;
}

int pmkv_hlen(struct pmkv_store *s, const void *k, size_t kn, uint64_t *n)
{
	struct kvx x;
	struct kpos p = {.k = k, .kn = kn};
	pmtx_hmap *h;
	int rc = read_len(s, &x, &p, &h, n);
	return rc ? rc : kx_end(&x, 0);
}

/* A pmkv_emit_fn: the value's length into the uint64_t arg. */
static void note_len(void *arg, const void *p, size_t n)
{
	(void)p;
	*(uint64_t *)arg = n;
}

int pmkv_hstrlen(struct pmkv_store *s, const void *k, size_t kn,
                 const void *f, size_t fn, int *found, uint64_t *len)
{
	*len = 0;
	return pmkv_hget(s, k, kn, f, fn, note_len, len, found);
}

int pmkv_hgetall(struct pmkv_store *s, const void *k, size_t kn,
                 const struct pmkv_pairs *out)
{
	struct kvx x;
	struct kpos p = {.k = k, .kn = kn};
	pmtx_hmap *h;
	uint64_t n;
	int rc = read_len(s, &x, &p, &h, &n);
	if (rc)
		return rc;
	out->count(out->arg, n);
	return kx_end(&x, h ? walk(&x, h, emit_pair, (void *)out) : 0);
}

/* ---- HRANDFIELD ---- */

/* Distinct fields (count > 0): selection sampling (Knuth's algorithm S)
 * in one walk, each entry kept with probability need / left, so that
 * every set of `need` entries is equally likely. */
struct distinct {
	const struct pmkv_pairs *out;
	uint64_t need, left;
};

static int pick_distinct(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct distinct *d = arg;
	if (pmkv_rand_below(d->left--) < d->need) {
		d->out->pair(d->out->arg, k->p, k->n, v->p, v->n);
		if (--d->need == 0)
			return WALK_STOP;
	}
	return 0;
}

/* Fields picked independently (count < 0): the picks' indexes in the
 * map's order, the distinct ones sorted (want), and a copy of each of
 * those entries (H3), in want's order. */
struct picks {
	uint64_t *idx, *want; /* n picks; nwant distinct, ascending */
	size_t n, nwant;
	uint64_t at;          /* the walk's index */
	size_t next;          /* want[next]: the next entry to copy */
	char *bytes;          /* the copies, field then value */
	size_t nbytes, cap;
	size_t *end;          /* entry i: its field ends at end[2i], its
	                       * value at end[2i + 1] */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Choose n picks among len entries. */
static int picks_make(struct picks *p, uint64_t n, uint64_t len)
{
	memset(p, 0, sizeof(*p));
	if (n > PICKS_MAX)
		return ENOMEM;
	p->n = (size_t)n;
	p->idx = malloc(p->n * sizeof(uint64_t));
	p->want = malloc(p->n * sizeof(uint64_t));
	p->end = malloc(p->n * 2 * sizeof(size_t));
	if (!p->idx || !p->want || !p->end)
		return ENOMEM;
	for (size_t i = 0; i < p->n; i++)
		p->idx[i] = p->want[i] = pmkv_rand_below(len);
	qsort(p->want, p->n, sizeof(uint64_t), cmp_u64);
	for (size_t i = 0; i < p->n; i++)
		if (!p->nwant || p->want[p->nwant - 1] != p->want[i])
			p->want[p->nwant++] = p->want[i];
	return 0;
}

static void picks_free(struct picks *p)
{
	free(p->idx);
	free(p->want);
	free(p->end);
	free(p->bytes);
}

static int picks_add(struct picks *p, const pmtx_bytes *b, size_t slot)
{
	if (p->nbytes + b->n > p->cap) {
		size_t cap = p->cap ? p->cap : 4096;
		while (cap < p->nbytes + b->n)
			cap *= 2;
		char *m = realloc(p->bytes, cap);
		if (!m)
			return ENOMEM;
		p->bytes = m, p->cap = cap;
	}
	memcpy(p->bytes + p->nbytes, b->p, b->n);
	p->nbytes += b->n;
	p->end[slot] = p->nbytes;
	return 0;
}

static int copy_picked(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	struct picks *p = arg;
	int rc = 0;
	if (p->at++ != p->want[p->next])
		return 0;
	if (!(rc = picks_add(p, k, 2 * p->next)))
		rc = picks_add(p, v, 2 * p->next + 1);
	return rc ? rc : ++p->next == p->nwant ? WALK_STOP : 0;
}

/* Hand the picks out in the order picked, from the copies. */
static void picks_emit(const struct picks *p, const struct pmkv_pairs *out)
{
	for (size_t i = 0; i < p->n; i++) {
		const uint64_t *w = bsearch(&p->idx[i], p->want, p->nwant,
		                            sizeof(uint64_t), cmp_u64);
		size_t j = (size_t)(w - p->want);
		size_t f0 = j ? p->end[2 * j - 1] : 0, f1 = p->end[2 * j];
		out->pair(out->arg, p->bytes + f0, f1 - f0, p->bytes + f1,
		          p->end[2 * j + 1] - f1);
	}
}

static int rand_repeated(struct kvx *x, pmtx_hmap *h, uint64_t n,
                         uint64_t len, const struct pmkv_pairs *out)
{
	struct picks p;
	int rc = picks_make(&p, n, len);
	if (!rc)
		rc = walk(x, h, copy_picked, &p);
	if (!rc && p.next != p.nwant) /* the walk met fewer than len */
		rc = PMTX_E_CORRUPT;
	if (!rc) {
		out->count(out->arg, n);
		picks_emit(&p, out);
	}
	picks_free(&p);
	return rc;
}

int pmkv_hrandfield(struct pmkv_store *s, const void *k, size_t kn,
                    int64_t count, const struct pmkv_pairs *out)
{
	struct kvx x;
	struct kpos p = {.k = k, .kn = kn};
	pmtx_hmap *h;
	uint64_t len;
	int rc = read_len(s, &x, &p, &h, &len);
	if (rc)
		return rc;
	if (!h || count == 0) {
		out->count(out->arg, 0);
	} else if (count < 0) {
		rc = rand_repeated(&x, h, 0 - (uint64_t)count, len, out);
	} else if ((uint64_t)count >= len) {
		out->count(out->arg, len);
		rc = walk(&x, h, emit_pair, (void *)out);
	} else {
		struct distinct d = {out, (uint64_t)count, len};
		out->count(out->arg, (uint64_t)count);
		rc = walk(&x, h, pick_distinct, &d);
	}
	return kx_end(&x, rc);
}

/* ---- HSCAN ---- */

int pmkv_hscan(struct pmkv_store *s, const void *k, size_t kn,
               uint64_t cursor, uint64_t count, pmkv_pair_fn pair, void *arg,
               uint64_t *next)
{
	struct kvx x;
	struct kpos p = {.k = k, .kn = kn};
	struct pmkv_pairs o = {NULL, pair, arg};
	pmtx_hmap *h;
	int rc = read_hash(s, &x, &p, &h);
	*next = 0;
	if (rc)
		return rc;
	if (count > SCAN_MAX) /* 10 x count buckets must not wrap */
		count = SCAN_MAX;
	if (h)
		rc = pmtx_hmap_scan(x.tx, h, cursor, (size_t)count, emit_pair,
		                    &o, next);
	return kx_end(&x, rc);
}
