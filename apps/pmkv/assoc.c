/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * assoc.c - the wrapped version's key space (format 1.1, layout.h): a
 * linear hash table of chains of copy-on-write objects (obj.c), grown
 * one bucket split at a time inside the transactions that insert; the
 * key-space interface of store_int.h. The opt version has the library's
 * hash map instead (keyspace.c); this table stays because the library's
 * containers do not run under copy-on-write, which the wrapped version
 * exists to run (README.md).
 *
 * DESIGN
 * Persistent: the geometry (nbase, split, count, dir, dir_cap, the
 * FLUSHALL trash) in the meta object, the directory, the segments, every
 * entry's next field. Volatile: nothing; a restart reads the geometry.
 *
 * Invariants
 *  H1. An entry with hash h is in bucket b = h mod nbase if b >= split,
 *      else in h mod 2*nbase; buckets [nbase + split, ...) are empty, and
 *      so are the segments beyond pmkv_nsegs(nbase, split) that exist.
 *  H2. Every change (a link, an unlink, a split, a directory doubling, a
 *      detach, a sweep step) is made inside the caller's transaction, so a
 *      crash leaves the table before or after the whole operation.
 *  H3. A split reads each field of the chain before it writes it, and
 *      every field that changes is read with kvx_get, so under redo
 *      (writes in DRAM until commit) and copy-on-write (writes in a
 *      private copy) the transaction sees its own writes.
 *  H4. Every offset read from the region is checked before it is used:
 *      the directory and segments by their sizes, entries by
 *      pmkv_entry_at (obj.c O1); a chain longer than the key count is
 *      corrupt.
 *  H5. A fresh object (an entry not yet linked, a new directory) is
 *      written with plain stores and kvx_flush (obj.c O3); the
 *      transaction that links it makes it durable. A linked entry's
 *      fields other than next never change (layout.h W1): a put links a
 *      fresh entry in the old one's place.
 */
#include <stdio.h>
#include <string.h>

#include "store_int.h"

#define LOAD_FACTOR 1 /* entries per bucket before a split */
#define W 8u          /* bytes per offset */

static uint64_t seg_buckets(const struct kvx *x)
{
	(void)x;
	return 1ull << PMKV_WSEG_SHIFT;
}

static uint64_t assoc_buckets(struct kvx *x)
{
	return kvx_get(x, KVMETA(x, nbase)) + kvx_get(x, KVMETA(x, split));
}

static uint64_t bucket_of(struct kvx *x, uint64_t h)
{
	uint64_t nbase = kvx_get(x, KVMETA(x, nbase));
	uint64_t b = h & (nbase - 1);
	if (b < kvx_get(x, KVMETA(x, split)))
		b = h & (2 * nbase - 1);
	return b;
}

/* Is dir a directory of cap slots? (H4) */
static int directory_ok(struct kvx *x, pmtx_off dir, uint64_t cap)
{
	return cap <= PMKV_DIR_CAP_MAX && kvx_view(x, dir, cap * W, NULL);
}

static int segment_ok(struct kvx *x, pmtx_off seg)
{
	return kvx_view(x, seg, seg_buckets(x) * W, NULL) != NULL;
}

static int assoc_bucket_head(struct kvx *x, uint64_t b, struct kvref *head)
{
	uint64_t cap = kvx_get(x, KVMETA(x, dir_cap));
	uint64_t si = b >> PMKV_WSEG_SHIFT;
	pmtx_off dir = kvx_get(x, KVMETA(x, dir)), seg;
	if (si >= cap || !directory_ok(x, dir, cap))
		return PMTX_E_CORRUPT;
	seg = kvx_get(x, KVREF(dir, si * W));
	if (!segment_ok(x, seg))
		return PMTX_E_CORRUPT;
	*head = KVREF(seg, (b & (seg_buckets(x) - 1)) * W);
	return 0;
}

static int assoc_find(struct kvx *x, const void *k, size_t kn, uint64_t h,
               struct pos *pos)
{
	struct kvref link;
	uint64_t limit = kvx_get(x, KVMETA(x, count)) + 1;
	int rc = assoc_bucket_head(x, bucket_of(x, h), &link);
	if (rc)
		return rc;
	for (uint64_t hops = 0;; hops++) {
		pmtx_off cur = kvx_get(x, link);
		const struct pmkv_entry *e = cur ? pmkv_entry_at(x, cur) : NULL;
		if (cur && (!e || hops > limit))
			return PMTX_E_CORRUPT;
		if (!cur || (e->hash == h && PMKV_KLEN(e->lens) == kn &&
		             !memcmp(entry_key(e), k, kn))) {
			*pos = (struct pos){link, cur, e};
			return 0;
		}
		link = KVENT(cur, next);
	}
}

static int count_add(struct kvx *x, int64_t d)
{
	struct kvref c = KVMETA(x, count);
	return kvx_put(x, c, kvx_get(x, c) + (uint64_t)d);
}

static int assoc_link(struct kvx *x, pmtx_off off, struct pmkv_entry *e,
               uint64_t h)
{
	struct kvref head;
	int rc = assoc_bucket_head(x, bucket_of(x, h), &head);
	if (rc)
		return rc;
	e->next = kvx_get(x, head); /* H5: not linked yet */
	kvx_flush(x, &e->next, sizeof(e->next));
	if (!(rc = kvx_put(x, head, off)))
		rc = count_add(x, 1);
	return rc;
}

static int assoc_unlink(struct kvx *x, const struct pos *pos)
{
	int rc = kvx_put(x, pos->link, kvx_get(x, KVENT(pos->off, next)));
	if (!rc)
		rc = kvx_free(x, pos->off);
	return rc ? rc : count_add(x, -1);
}

static int assoc_replace(struct kvx *x, const struct pos *pos, pmtx_off off,
                  struct pmkv_entry *e)
{
	e->next = kvx_get(x, KVENT(pos->off, next)); /* H5 */
	kvx_flush(x, &e->next, sizeof(e->next));
	int rc = kvx_put(x, pos->link, off);
	return rc ? rc : kvx_free(x, pos->off);
}

/* ---- growth ---- */

/* Double the directory (a fresh copy, H5). */
static int grow_directory(struct kvx *x)
{
	uint64_t cap = kvx_get(x, KVMETA(x, dir_cap)), *nd;
	pmtx_off od = kvx_get(x, KVMETA(x, dir)), off;
	if (!directory_ok(x, od, cap))
		return PMTX_E_CORRUPT;
	if (cap * 2 > PMKV_DIR_CAP_MAX)
		return PMKV_E_TABLE_FULL;
	int rc = kvx_new(x, 2 * cap * W, 1, &off, (void **)&nd);
	if (rc)
		return rc;
	for (uint64_t i = 0; i < cap; i++)
		nd[i] = kvx_get(x, KVREF(od, i * W));
	kvx_flush(x, nd, cap * W);
	if ((rc = kvx_put(x, KVMETA(x, dir), off)) ||
	    (rc = kvx_put(x, KVMETA(x, dir_cap), 2 * cap)))
		return rc;
	return kvx_free(x, od);
}

/* Make sure bucket b has a segment (b is the next bucket to exist). */
static int ensure_segment(struct kvx *x, uint64_t b)
{
	uint64_t si = b >> PMKV_WSEG_SHIFT;
	int rc = 0;
	void *p;
	if (si >= kvx_get(x, KVMETA(x, dir_cap)) && (rc = grow_directory(x)))
		return rc;
	pmtx_off dir = kvx_get(x, KVMETA(x, dir)), seg;
	if (!directory_ok(x, dir, kvx_get(x, KVMETA(x, dir_cap))))
		return PMTX_E_CORRUPT;
	if (kvx_get(x, KVREF(dir, si * W)))
		return 0;
	rc = kvx_new(x, seg_buckets(x) * W, 1, &seg, &p);
	return rc ? rc : kvx_put(x, KVREF(dir, si * W), seg);
}

/* Move the entries of bucket `from` that belong to bucket `to` (H3). */
static int split_chain(struct kvx *x, uint64_t from, uint64_t to,
                       uint64_t mask)
{
	struct kvref link, tail;
	uint64_t limit = kvx_get(x, KVMETA(x, count)) + 1, hops = 0;
	int rc = assoc_bucket_head(x, from, &link), moved = 0;
	if (!rc)
		rc = assoc_bucket_head(x, to, &tail);
	if (rc || kvx_get(x, tail))
		return PMTX_E_CORRUPT; /* H1: a new bucket is empty */
	for (pmtx_off cur = kvx_get(x, link); cur && !rc; hops++) {
		const struct pmkv_entry *e = pmkv_entry_at(x, cur);
		if (!e || hops > limit)
			return PMTX_E_CORRUPT;
		pmtx_off next = kvx_get(x, KVENT(cur, next));
		if ((e->hash & mask) != to) {
			link = KVENT(cur, next);
		} else if (!(rc = kvx_put(x, link, next)) &&
		           !(rc = kvx_put(x, tail, cur))) {
			tail = KVENT(cur, next);
			moved = 1;
		}
		cur = next;
	}
	/* the last entry moved ends its new chain (unless it did already:
	 * under cow a write copies the whole entry) */
	return rc || !moved || !kvx_get(x, tail) ? rc : kvx_put(x, tail, 0);
}

static int assoc_maybe_grow(struct kvx *x)
{
	uint64_t nbase = kvx_get(x, KVMETA(x, nbase));
	uint64_t split = kvx_get(x, KVMETA(x, split));
	if (kvx_get(x, KVMETA(x, count)) <= (nbase + split) * LOAD_FACTOR)
		return 0;
	if (nbase + split >= (uint64_t)PMKV_DIR_CAP_MAX << PMKV_WSEG_SHIFT)
		return 0; /* as large as it gets: chains grow instead */
	int rc = ensure_segment(x, nbase + split);
	if (!rc)
		rc = split_chain(x, split, split + nbase, 2 * nbase - 1);
	if (rc)
		return rc;
	if (split + 1 < nbase)
		return kvx_put(x, KVMETA(x, split), split + 1);
	if ((rc = kvx_put(x, KVMETA(x, split), 0)))
		return rc;
	return kvx_put(x, KVMETA(x, nbase), 2 * nbase);
}

/* ---- new tables, FLUSHALL ---- */

static int assoc_new_table(struct kvx *x)
{
	uint64_t nbase = x->s->initial_buckets, *d;
	uint64_t nsegs = pmkv_nsegs(nbase, 0, PMKV_WSEG_SHIFT);
	pmtx_off dir;
	void *p;
	int rc = nsegs > PMKV_DIR_CAP_MIN ? PMTX_E_INVAL
	         : kvx_new(x, PMKV_DIR_CAP_MIN * W, 1, &dir, (void **)&d);
	for (uint64_t i = 0; i < nsegs && !rc; i++)
		rc = kvx_new(x, seg_buckets(x) * W, 1, &d[i], &p); /* H5 */
	if (rc)
		return rc;
	kvx_flush(x, d, nsegs * W);
	if ((rc = kvx_put(x, KVMETA(x, dir), dir)) ||
	    (rc = kvx_put(x, KVMETA(x, dir_cap), PMKV_DIR_CAP_MIN)) ||
	    (rc = kvx_put(x, KVMETA(x, nbase), nbase)) ||
	    (rc = kvx_put(x, KVMETA(x, split), 0)))
		return rc;
	return kvx_put(x, KVMETA(x, count), 0);
}

static int assoc_detach(struct kvx *x, int all)
{
	(void)all; /* one database */
	if (kvx_get(x, KVMETA(x, trash_dir)))
		return PMTX_E_BUSY; /* the caller sweeps first */
	uint64_t nsegs = pmkv_nsegs(kvx_get(x, KVMETA(x, nbase)),
	                            kvx_get(x, KVMETA(x, split)),
	                            PMKV_WSEG_SHIFT);
	int rc = kvx_put(x, KVMETA(x, trash_dir), kvx_get(x, KVMETA(x, dir)));
	if (!rc)
		rc = kvx_put(x, KVMETA(x, trash_nsegs), nsegs);
	return rc ? rc : assoc_new_table(x);
}

/* Free the chains of one trash segment, up to *budget entries; 1 when the
 * segment is empty. */
static int sweep_segment(struct kvx *x, pmtx_off seg, unsigned *budget,
                         int *empty)
{
	*empty = 0;
	for (uint64_t b = 0; b < seg_buckets(x); b++) {
		struct kvref head = KVREF(seg, b * W);
		pmtx_off cur;
		while ((cur = kvx_get(x, head))) {
			if (!pmkv_entry_at(x, cur))
				return PMTX_E_CORRUPT;
			if (*budget == 0)
				return 0;
			int rc = kvx_put(x, head, kvx_get(x, KVENT(cur, next)));
			if (rc || (rc = kvx_free(x, cur)))
				return rc;
			(*budget)--;
		}
	}
	*empty = 1;
	return 0;
}

static int assoc_sweep(struct kvx *x, unsigned budget, int *left)
{
	pmtx_off td = kvx_get(x, KVMETA(x, trash_dir));
	uint64_t n = kvx_get(x, KVMETA(x, trash_nsegs));
	int rc = 0, empty = 1;
	*left = 0;
	if (!td)
		return 0;
	if (!directory_ok(x, td, n))
		return PMTX_E_CORRUPT;
	while (n > 0 && budget > 0 && empty && !rc) {
		pmtx_off so = kvx_get(x, KVREF(td, (n - 1) * W));
		if (so && !segment_ok(x, so))
			return PMTX_E_CORRUPT;
		if (so && (rc = sweep_segment(x, so, &budget, &empty)))
			return rc;
		if (empty && so && (rc = kvx_free(x, so)) == 0 && budget)
			budget--;
		if (empty && !rc)
			rc = kvx_put(x, KVMETA(x, trash_nsegs), --n);
	}
	if (!rc && n == 0 && (rc = kvx_free(x, td)) == 0)
		rc = kvx_put(x, KVMETA(x, trash_dir), 0);
	*left = !rc && n > 0;
	return rc;
}

/* ---- check ---- */

static int check_chain(struct kvx *x, uint64_t b, uint64_t count,
                       uint64_t *n, char *msg, size_t len)
{
	struct kvref head;
	if (assoc_bucket_head(x, b, &head)) {
		snprintf(msg, len, "bucket %llu: bad directory or segment",
		         (unsigned long long)b);
		return PMTX_E_CORRUPT;
	}
	for (pmtx_off cur = kvx_get(x, head); cur;) {
		const struct pmkv_entry *e = pmkv_entry_at(x, cur);
		if (!e || *n > count) {
			snprintf(msg, len, "bucket %llu: bad entry at 0x%llx",
			         (unsigned long long)b, (unsigned long long)cur);
			return PMTX_E_CORRUPT;
		}
		if (e->hash != pmkv_hash(entry_key(e), PMKV_KLEN(e->lens)) ||
		    bucket_of(x, e->hash) != b) {
			snprintf(msg, len, "entry 0x%llx is in the wrong "
			         "bucket (%llu)", (unsigned long long)cur,
			         (unsigned long long)b);
			return PMTX_E_CORRUPT;
		}
		(*n)++;
		cur = kvx_get(x, KVENT(cur, next));
	}
	return 0;
}

static int assoc_check(struct kvx *x, uint64_t *entries, char *msg, size_t len)
{
	uint64_t n = 0, nb = assoc_buckets(x);
	uint64_t count = kvx_get(x, KVMETA(x, count));
	for (uint64_t b = 0; b < nb; b++) {
		int rc = check_chain(x, b, count, &n, msg, len);
		if (rc)
			return rc;
	}
	*entries = n;
	return 0;
}

/* ---- walk: every block the table owns ---- */

static int walk_chain(struct kvx *x, pmtx_off cur,
                      int (*fn)(pmtx_off, void *), void *arg)
{
	/* a chain longer than the region has blocks is a cycle (H4) */
	uint64_t limit = pmtx_region_size(x->s->r) / 32;
	for (uint64_t hops = 0; cur; hops++) {
		if (!pmkv_entry_at(x, cur) || hops > limit)
			return PMTX_E_CORRUPT;
		int rc = kvx_walk_obj(x->s, cur, fn, arg);
		if (rc)
			return rc;
		cur = kvx_get(x, KVENT(cur, next));
	}
	return 0;
}

/* The directory dir of cap slots, its first nsegs segments and their
 * chains. */
static int walk_table(struct kvx *x, pmtx_off dir, uint64_t cap,
                      uint64_t nsegs, int (*fn)(pmtx_off, void *), void *arg)
{
	int rc = directory_ok(x, dir, cap) ? kvx_walk_obj(x->s, dir, fn, arg)
	                                   : PMTX_E_CORRUPT;
	for (uint64_t i = 0; i < nsegs && !rc; i++) {
		pmtx_off seg = kvx_get(x, KVREF(dir, i * W));
		if (!seg)
			continue;
		if (!segment_ok(x, seg))
			return PMTX_E_CORRUPT;
		rc = kvx_walk_obj(x->s, seg, fn, arg);
		for (uint64_t b = 0; b < seg_buckets(x) && !rc; b++)
			rc = walk_chain(x, kvx_get(x, KVREF(seg, b * W)), fn,
			                arg);
	}
	return rc;
}

static int assoc_walk(struct kvx *x, int (*fn)(pmtx_off, void *), void *arg)
{
	uint64_t cap = kvx_get(x, KVMETA(x, dir_cap));
	pmtx_off td = kvx_get(x, KVMETA(x, trash_dir));
	uint64_t tn = kvx_get(x, KVMETA(x, trash_nsegs));
	int rc = kvx_walk_obj(x->s, x->s->meta, fn, arg);
	if (!rc)
		rc = walk_table(x, kvx_get(x, KVMETA(x, dir)), cap, cap, fn,
		                arg);
	if (!rc && td)
		rc = walk_table(x, td, tn, tn, fn, arg);
	return rc ? rc : x->err;
}

/* ---- the key-space interface (store_int.h) ---- */

/* The entry e's value (H5: its fields are as they were linked). */
static void entry_kval(const struct pmkv_entry *e, struct kval *v)
{
	*v = (struct kval){PMKV_T_STRING, (int64_t)e->expire_ms, entry_val(e),
	                   PMKV_VLEN(e->lens)};
}

static int w_find(struct kvx *x, struct kpos *p)
{
	p->h = pmkv_hash(p->k, p->kn);
	int rc = assoc_find(x, p->k, p->kn, p->h, &p->at);
	p->looked = 1;
	p->found = !rc && p->at.off;
	if (p->found)
		entry_kval(p->at.e, &p->v);
	return rc;
}

/* A fresh entry for the key p looked up, holding v1 then v2 (H5). */
static int new_entry(struct kvx *x, const struct kpos *p, int64_t exp,
                     const void *v1, size_t n1, const void *v2, size_t n2,
                     pmtx_off *out, struct pmkv_entry **ep)
{
	size_t n = sizeof(struct pmkv_entry) + p->kn + n1 + n2;
	struct pmkv_entry *e;
	int rc = kvx_new(x, n, 0, out, (void **)&e);
	if (rc)
		return rc;
	*e = (struct pmkv_entry){0, p->h, (uint64_t)exp,
	                         PMKV_LENS(p->kn, n1 + n2)};
	char *key = (char *)(e + 1);
	memcpy(key, p->k, p->kn);
	if (n1)
		memcpy(key + p->kn, v1, n1);
	if (n2)
		memcpy(key + p->kn + n1, v2, n2);
	kvx_flush(x, e, n);
	*ep = e;
	return 0;
}

static int w_put(struct kvx *x, struct kpos *p, unsigned type, int64_t exp,
                 const void *v1, size_t n1, const void *v2, size_t n2)
{
	pmtx_off off;
	struct pmkv_entry *e;
	if (type != PMKV_T_STRING) /* format 1.1 holds strings only */
		return PMTX_E_UNSUPPORTED;
	int rc = p->looked ? 0 : w_find(x, p); /* a blind put */
	if (!rc)
		rc = new_entry(x, p, exp, v1, n1, v2, n2, &off, &e);
	if (rc)
		return rc;
	return p->found ? assoc_replace(x, &p->at, off, e)
	                : assoc_link(x, off, e, p->h);
}

static int w_del(struct kvx *x, struct kpos *p)
{
	return assoc_unlink(x, &p->at);
}

static uint64_t w_count(struct kvx *x)
{
	return kvx_get(x, KVMETA(x, count));
}

/* fn for each entry of bucket b; *seen counts them. */
static int scan_bucket(struct kvx *x, uint64_t b, ks_fn fn, void *arg,
                       uint64_t *seen)
{
	struct kvref head;
	uint64_t hops = 0, count = kvx_get(x, KVMETA(x, count));
	int rc = assoc_bucket_head(x, b, &head);
	for (pmtx_off cur = rc ? 0 : kvx_get(x, head); cur && !rc; hops++) {
		const struct pmkv_entry *e = pmkv_entry_at(x, cur);
		struct kval v;
		if (!e || hops > count)
			return PMTX_E_CORRUPT;
		entry_kval(e, &v);
		rc = fn(arg, entry_key(e), PMKV_KLEN(e->lens), &v);
		(*seen)++;
		cur = kvx_get(x, KVENT(cur, next));
	}
	return rc;
}

/* pmtx_hmap_scan's bounds over this table (store_int.h). */
static int w_scan(struct kvx *x, uint64_t cursor, size_t count, ks_fn fn,
                  void *arg, uint64_t *next)
{
	uint64_t nb = assoc_buckets(x), b = cursor, seen = 0;
	uint64_t end = cursor + 10 * (uint64_t)(count ? count : 1);
	int rc = 0;
	while (b < nb && seen < count && b < end &&
	       !(rc = scan_bucket(x, b, fn, arg, &seen)))
		b++;
	*next = b < nb ? b : 0;
	return rc;
}

static int w_create(struct kvx *x)
{
	struct pmkv_root1 *root = (struct pmkv_root1 *)x->s->root;
	void *p;
	int rc = kvx_new(x, sizeof(*root), 1, &x->s->meta, &p);
	if (!rc)
		rc = assoc_new_table(x);
	return rc ? rc : PMTX_SET(x->tx, root->meta, x->s->meta);
}

/* The table's geometry, checked (H4) before any operation follows it. */
static int w_attach(struct pmkv_store *s, char *msg, size_t len)
{
	struct kvx x = {.s = s};
	s->meta = ((const struct pmkv_root1 *)s->root)->meta;
	int rc = kvx_view(&x, s->meta, sizeof(struct pmkv_root1), NULL)
	         ? 0 : PMTX_E_CORRUPT;
	uint64_t nbase = kvx_get(&x, KVMETA(&x, nbase));
	uint64_t split = kvx_get(&x, KVMETA(&x, split));
	uint64_t cap = kvx_get(&x, KVMETA(&x, dir_cap));
	uint64_t tn = kvx_get(&x, KVMETA(&x, trash_nsegs));
	pmtx_off td = kvx_get(&x, KVMETA(&x, trash_dir));
	if (rc || nbase < PMKV_NBASE_MIN || (nbase & (nbase - 1)) ||
	    split >= nbase || cap < PMKV_DIR_CAP_MIN ||
	    pmkv_nsegs(nbase, split, PMKV_WSEG_SHIFT) > cap ||
	    !directory_ok(&x, kvx_get(&x, KVMETA(&x, dir)), cap) ||
	    (cap & (cap - 1)) || tn > PMKV_DIR_CAP_MAX ||
	    (td && !kvx_view(&x, td, tn * W, NULL)) || x.err) {
		snprintf(msg, len, "the table's geometry is corrupt");
		return PMTX_E_CORRUPT;
	}
	return 0;
}

static void w_detach(struct pmkv_store *s)
{
	(void)s;
}

static uint64_t w_hint(struct pmkv_store *s, const void *k, size_t kn)
{
	(void)s, (void)k, (void)kn; /* no hints: store.c S9 */
	return 0;
}

static void w_hint_more(struct pmkv_store *s, uint64_t token)
{
	(void)s, (void)token;
}

const struct ks_ops pmkv_ks_wrapped = {
	.create = w_create, .attach = w_attach, .detach = w_detach,
	.grow = assoc_maybe_grow, .find = w_find, .put = w_put,
	.del = w_del, .count = w_count, .buckets = assoc_buckets,
	.scan = w_scan, .flush = assoc_detach, .sweep = assoc_sweep,
	.hint = w_hint, .hint_more = w_hint_more, .check = assoc_check,
	.walk = assoc_walk,
};
