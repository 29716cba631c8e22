/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_copy.c - a key's whole value copied out of the store into a
 * volatile image, and a key built from one (store_copy.h): COPY, and the
 * store's side of DUMP, RESTORE, OBJECT and LCS, over the collections'
 * interface (store_int.h: kx_*).
 *
 * DESIGN
 * Persistent: nothing of its own; a key built here is an object and
 * containers as each type's file makes them (layout.h). Volatile: the
 * image, which an operation fills from views before it writes anything.
 *
 * Invariants
 *  Y1. COPY and RESTORE are one transaction each (kx_begin .. kx_end,
 *      store.c S1): the destination's old key is removed, the new object
 *      put, its containers created and filled, and its expiry set in the
 *      same transaction, so after a crash the key is there whole, with
 *      every element, or not at all, and in a group (S8) the same holds
 *      for the group.
 *  Y2. A client's mistake is found before the first write (S13): the
 *      destination key's length, every element's length and the wrapped
 *      version's refusal of a collection before the transaction begins;
 *      BUSYKEY (RESTORE) and an existing destination (COPY without
 *      REPLACE) right after the lookups, which write nothing but the
 *      removal of expired keys.
 *  Y3. The source's elements are copied into the image before the
 *      destination is looked up or written: its views last only until
 *      the key space or its containers are next written (S3,
 *      pmtx_containers.h), and COPY may replace the source's own key in
 *      another database.
 *  Y4. A collection is never built empty (layout.h L3): an image without
 *      elements of a collection type is refused (PMTX_E_INVAL) before
 *      anything is written; a decoder (rdb.c) refuses such a payload
 *      first.
 *  Y5. A sorted set is built with its scores normalised as store_zset.c
 *      stores them (its Z2: -0 as 0) and its order loaded in Redis's
 *      order, the image sorted first; its members must be distinct and
 *      no score NaN (the decoder's check), else pmtx_map_load refuses the
 *      order before it writes.
 *  Y6. OBJECT reads a key without moving its access clock (Redis's
 *      LOOKUP_NOTOUCH): the clock's slot is read before the lookup and
 *      put back after it, under the store lock.
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_copy.h"
#include "store_int.h"

#define KPOS(key, len) ((struct kpos){.k = (key), .kn = (len)})
#define SCAN_BATCH 1024 /* entries a scan of a whole map asks for */

/* ---- the image ---- */

static int image_grow(struct pmkv_image *im, size_t more)
{
	if (im->nbytes + more > im->capbytes || !im->bytes) {
		size_t cap = im->capbytes ? im->capbytes : 256;
		while (cap < im->nbytes + more)
			cap *= 2;
		char *b = realloc(im->bytes, cap);
		if (!b)
			return ENOMEM;
		im->bytes = b, im->capbytes = cap;
	}
	if (im->n == im->cap) {
		size_t cap = im->cap ? 2 * im->cap : 16;
		size_t *e = realloc(im->end, cap * sizeof(*e));
		if (e)
			im->end = e;
		double *sc = e ? realloc(im->score, cap * sizeof(*sc)) : NULL;
		if (!sc)
			return ENOMEM;
		im->score = sc, im->cap = cap;
	}
	return 0;
}

int pmkv_image_add(struct pmkv_image *im, const void *p, size_t n,
                   double score)
{
	int rc = image_grow(im, n);
	if (rc)
		return rc;
	if (n)
		memcpy(im->bytes + im->nbytes, p, n);
	im->nbytes += n;
	im->score[im->n] = score;
	im->end[im->n++] = im->nbytes;
	return 0;
}

void pmkv_image_free(struct pmkv_image *im)
{
	free(im->bytes);
	free(im->end);
	free(im->score);
	im->bytes = NULL, im->end = NULL, im->score = NULL;
	im->nbytes = im->capbytes = im->n = im->cap = 0;
}

/* ---- reading a value (Y3) ---- */

static int add_elem(const pmtx_bytes *v, void *arg)
{
	return pmkv_image_add(arg, v->p, v->n, 0);
}

static int add_member(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	(void)v;
	return pmkv_image_add(arg, k->p, k->n, 0);
}

static int add_pair(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	int rc = pmkv_image_add(arg, k->p, k->n, 0);
	return rc ? rc : pmkv_image_add(arg, v->p, v->n, 0);
}

/* Every entry of h once: a run of scans that writes nothing meanwhile
 * (pmtx_hmap_scan's contract). */
static int read_hmap(struct kvx *x, pmtx_hmap *h, pmtx_hmap_fn fn,
                     struct pmkv_image *im)
{
	uint64_t cur = 0;
	int rc;
	do
		rc = pmtx_hmap_scan(x->tx, h, cur, SCAN_BATCH, fn, im, &cur);
	while (!rc && cur);
	return rc;
}

/* A sorted set's order (c[1]: score's 8 bytes, then the member), from
 * the lowest. */
static int read_order(struct kvx *x, pmtx_map *m, struct pmkv_image *im)
{
	pmtx_map_cursor c;
	int rc = pmtx_map_seek(x->tx, m, PMTX_SEEK_FIRST, NULL, 0, &c);
	for (; !rc; rc = pmtx_map_next(&c)) {
		pmtx_bytes k;
		double score;
		if ((rc = pmtx_map_cursor_get(&c, &k, NULL)))
			return rc;
		if (k.n < 8)
			return PMTX_E_CORRUPT;
		memcpy(&score, k.p, 8);
		if ((rc = pmkv_image_add(im, (const char *)k.p + 8, k.n - 8,
		                         score)))
			return rc;
	}
	return rc == PMTX_E_NOT_FOUND ? 0 : rc;
}

/* A collection's length, and its elements if it has at most max. */
static int read_coll(struct kvx *x, unsigned type, const struct pmkv_coll *c,
                     uint64_t max, struct pmkv_image *im)
{
	pmtx_list *l;
	pmtx_hmap *h;
	pmtx_map *m;
	int rc;
	if (type == PMKV_T_LIST) {
		if (!(rc = kx_list(x, c->c[0], &l)) &&
		    !(rc = pmtx_list_len(x->tx, l, &im->len)) && im->len <= max)
			rc = pmtx_list_range(x->tx, l, 0, -1, add_elem, im);
		return rc;
	}
	if (type == PMKV_T_ZSET) {
		if (!(rc = kx_map(x, c->c[1], &m)) &&
		    !(rc = pmtx_map_len(x->tx, m, &im->len)) && im->len <= max)
			rc = read_order(x, m, im);
		return rc;
	}
	if (!(rc = kx_hmap(x, c->c[0], &h)) &&
	    !(rc = pmtx_hmap_len(x->tx, h, &im->len)) && im->len <= max)
		rc = read_hmap(x, h, type == PMKV_T_HASH ? add_pair : add_member,
		               im);
	return rc;
}

/* The value p found into im (its elements if at most max: a string's
 * always). */
static int read_value(struct kvx *x, const struct kpos *p, uint64_t max,
                      struct pmkv_image *im)
{
	struct pmkv_coll c;
	int rc;
	im->type = (int)p->v.type;
	im->expire_ms = p->v.expire_ms;
	if (p->v.type == PMKV_T_STRING) {
		im->len = p->v.n;
		return pmkv_image_add(im, p->v.p, p->v.n, 0);
	}
	rc = kx_coll(p, p->v.type, &c);
	return rc ? rc : read_coll(x, p->v.type, &c, max, im);
}

/* The access clock's slot of key k (store.c S16), or NULL: none kept.
 * Under the store lock. */
static uint32_t *clock_of(struct pmkv_store *s, const void *k, size_t kn)
{
	return s->access ? &s->access[pmkv_hash(k, kn) &
	                              (PMKV_ACCESS_SLOTS - 1)]
	                 : NULL;
}

/* Look p up as a reader; the clock left as it was unless touch (Y6). */
static int find_clocked(struct kvx *x, struct kpos *p, int touch,
                        struct pmkv_image *im)
{
	uint32_t *a = clock_of(x->s, p->k, p->kn);
	uint32_t before = a ? *a : 0;
	int rc = kx_find(x, p);
	if (a && !touch)
		*a = before;
	im->clock = before;
	im->clocked = a != NULL;
	im->lfu = x->s->access_lfu;
	return rc;
}

int pmkv_image_read(struct pmkv_store *s, const struct pmkv_key *keys,
                    size_t n, uint64_t max, int touch,
                    struct pmkv_image *im)
{
	struct kvx x;
	int rc = kx_begin(s, &x, 0);
	for (size_t i = 0; i < n; i++)
		im[i].type = -1;
	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		struct kpos p = KPOS(keys[i].p, keys[i].n);
		rc = find_clocked(&x, &p, touch, &im[i]);
		if (!rc && p.found)
			rc = read_value(&x, &p, max, &im[i]);
	}
	return kx_end(&x, rc);
}

/* ---- building a key (Y1) ---- */

/* Y2, Y4: what a key of kn bytes holding im would write. */
static int image_fits(const struct pmkv_store *s, size_t kn,
                      const struct pmkv_image *im)
{
	if (kn > s->max_key)
		return PMKV_E_TOOBIG;
	for (size_t i = 0, n; i < im->n; i++)
		if (pmkv_image_at(im, i, &n) && n > s->max_value)
			return PMKV_E_TOOBIG;
	if (im->type < 0 || im->type > PMKV_T_MAX ||
	    (im->type != PMKV_T_STRING && !im->n) ||
	    (im->type == PMKV_T_STRING && im->n != 1) ||
	    (im->type == PMKV_T_HASH && im->n % 2))
		return PMTX_E_INVAL;
	return im->type != PMKV_T_STRING && s->wrapped ? PMKV_E_STRINGS : 0;
}

static int fill_list(struct kvx *x, pmtx_off off, const struct pmkv_image *im)
{
	pmtx_list *l;
	int rc = kx_list(x, off, &l);
	for (size_t i = 0, n; i < im->n && !rc; i++) {
		const char *e = pmkv_image_at(im, i, &n);
		rc = pmtx_list_push(x->tx, l, PMTX_LIST_TAIL, e, n);
	}
	return rc;
}

/* A set (member -> empty) or a hash (field -> value: pairs). */
static int fill_hmap(struct kvx *x, pmtx_off off, const struct pmkv_image *im,
                     int pairs)
{
	pmtx_hmap *h;
	int rc = kx_hmap(x, off, &h);
	for (size_t i = 0, n, vn = 0; i < im->n && !rc; i += 1 + !!pairs) {
		const char *k = pmkv_image_at(im, i, &n);
		const char *v = pairs ? pmkv_image_at(im, i + 1, &vn) : "";
		rc = pmtx_hmap_put(x->tx, h, k, n, v, vn, 0, NULL);
	}
	return rc;
}

static double norm(double d) /* Y5, store_zset.c Z2 */
{
	return d == 0 ? 0.0 : d;
}

/* Redis's order of elements a and b of im: by score, then member. */
static int zcmp(const struct pmkv_image *im, size_t a, size_t b)
{
	double sa = norm(im->score[a]), sb = norm(im->score[b]);
	size_t na, nb;
	const char *ma = pmkv_image_at(im, a, &na);
	const char *mb = pmkv_image_at(im, b, &nb);
	if (sa != sb)
		return sa < sb ? -1 : 1;
	int c = memcmp(ma, mb, na < nb ? na : nb);
	return c ? c : (na > nb) - (na < nb);
}

static int zsort_cmp(const void *a, const void *b, void *im)
{
	return zcmp(im, *(const size_t *)a, *(const size_t *)b);
}

/* pmtx_map_load's source: the elements in ord's order, each key its
 * score's 8 bytes then its member (one buffer, reused). */
struct zload {
	const struct pmkv_image *im;
	const size_t *ord;
	size_t i;
	char *key;
	size_t cap;
	int err;
};

static int zload_next(void *arg, pmtx_bytes *k, pmtx_bytes *v)
{
	struct zload *l = arg;
	size_t n;
	if (l->i == l->im->n)
		return 0;
	size_t e = l->ord[l->i++];
	const char *m = pmkv_image_at(l->im, e, &n);
	double score = norm(l->im->score[e]);
	if (8 + n > l->cap) {
		char *b = realloc(l->key, 8 + n);
		if (!b)
			return l->err = ENOMEM, -1;
		l->key = b, l->cap = 8 + n;
	}
	memcpy(l->key, &score, 8);
	if (n)
		memcpy(l->key + 8, m, n);
	*k = (pmtx_bytes){l->key, 8 + n, 0};
	*v = (pmtx_bytes){"", 0, 0};
	return 1;
}

/* Both containers of a new sorted set (store_zset.c Z1), the order
 * loaded sorted (Y5). */
static int fill_zset(struct kvx *x, const struct pmkv_coll *c,
                     const struct pmkv_image *im)
{
	struct zload l = {im, NULL, 0, NULL, 0, 0};
	size_t *ord = malloc(im->n * sizeof(*ord));
	pmtx_hmap *h;
	pmtx_map *m;
	int rc = ord ? kx_hmap(x, c->c[0], &h) : ENOMEM;
	for (size_t i = 0; ord && i < im->n; i++)
		ord[i] = i;
	if (!rc && !(rc = kx_map(x, c->c[1], &m))) {
		qsort_r(ord, im->n, sizeof(*ord), zsort_cmp, (void *)im);
		l.ord = ord;
		rc = pmtx_map_load(x->tx, m, zload_next, &l, 90);
		rc = l.err ? l.err : rc;
	}
	for (size_t i = 0, n; i < im->n && !rc; i++) {
		const char *mem = pmkv_image_at(im, i, &n);
		double score = norm(im->score[i]);
		rc = pmtx_hmap_put(x->tx, h, mem, n, &score, 8, 0, NULL);
	}
	free(l.key);
	free(ord);
	return rc;
}

/* Give the absent key p (looked up) im's value and expiry. */
static int build(struct kvx *x, struct kpos *p, const struct pmkv_image *im)
{
	struct pmkv_coll c;
	size_t n;
	const char *v = pmkv_image_at(im, 0, &n);
	unsigned type = (unsigned)im->type;
	if (type == PMKV_T_STRING)
		return x->s->ks->put(x, p, type, im->expire_ms, v, n, NULL, 0);
	int rc = kx_coll_new(x, p, type, &c);
	if (rc)
		return rc;
	if (type == PMKV_T_LIST)
		rc = fill_list(x, c.c[0], im);
	else if (type == PMKV_T_ZSET)
		rc = fill_zset(x, &c, im);
	else
		rc = fill_hmap(x, c.c[0], im, type == PMKV_T_HASH);
	if (!rc && im->expire_ms) /* the same containers */
		rc = x->s->ks->put(x, p, type, im->expire_ms, &c, sizeof(c),
		                   NULL, 0);
	return rc;
}

/* RESTORE's IDLETIME and FREQ on the key's clock, if one is kept. */
static void set_clock(struct pmkv_store *s, const void *k, size_t kn,
                      int64_t idle, int freq)
{
	uint32_t *a = clock_of(s, k, kn);
	int64_t now = pmkv_now_ms() / 1000;
	if (!a)
		return;
	if (s->access_lfu && freq >= 0)
		*a = (uint32_t)freq;
	else if (!s->access_lfu)
		*a = (uint32_t)(idle > 0 && idle < now ? now - idle
		                : idle > 0 ? 1 : now);
}

int pmkv_restore(struct pmkv_store *s, const void *k, size_t kn,
                 const struct pmkv_image *im, int replace, int64_t idle,
                 int freq, int *busy)
{
	struct kvx x;
	struct kpos p = KPOS(k, kn);
	int rc = image_fits(s, kn, im);
	*busy = 0;
	if (rc || (rc = kx_begin(s, &x, 1)))
		return rc;
	rc = kx_find(&x, &p);
	if (!rc && p.found && !replace) {
		*busy = 1;
		return kx_end(&x, 0);
	}
	if (!rc && p.found)
		rc = kx_remove(&x, &p);
	if (!rc && !(im->expire_ms && im->expire_ms <= pmkv_now_ms()))
		rc = build(&x, &p, im);
	if (!rc)
		set_clock(s, k, kn, idle, freq);
	return kx_end(&x, rc);
}

/* COPY's work in x: src found, its value copied (Y3), dst looked up in
 * database db and replaced or left. */
static int copy_key(struct kvx *x, struct kpos *src, struct kpos *dst,
                    unsigned db, int replace, int *done)
{
	struct pmkv_image im = {0};
	int rc = read_value(x, src, UINT64_MAX, &im);
	x->db = db;
	if (!rc)
		rc = kx_find(x, dst);
	if (!rc && (!dst->found || replace)) {
		rc = image_fits(x->s, dst->kn, &im); /* Y2: nothing written */
		if (!rc && dst->found)
			rc = kx_remove(x, dst);
		if (!rc)
			rc = build(x, dst, &im);
		*done = !rc;
	}
	pmkv_image_free(&im);
	return rc;
}

int pmkv_copy(struct pmkv_store *s, const void *src, size_t sn,
              const void *dst, size_t dn, unsigned db, int replace,
              int *done)
{
	struct kvx x;
	struct kpos sp = KPOS(src, sn), dp = KPOS(dst, dn);
	*done = 0;
	if (db >= PMKV_DBS || (s->wrapped && db))
		return PMKV_E_DBINDEX;
	if (db == pmkv_cur_db() && sn == dn && !memcmp(src, dst, sn))
		return PMKV_E_SAMEDB;
	if (dn > s->max_key)
		return PMKV_E_TOOBIG;
	int rc = kx_begin(s, &x, 1);
	if (rc)
		return rc;
	rc = kx_find(&x, &sp);
	if (!rc && sp.found)
		rc = copy_key(&x, &sp, &dp, db, replace, done);
	return kx_end(&x, rc);
}
