/*
 * assoc.c - pmkv's hash table: a linear hash table (layout.h) of chains,
 * grown one bucket split at a time inside the transactions that insert.
 *
 * DESIGN
 * Persistent: the root's geometry (nbase, split, count), the directory,
 * the segments, every entry's next field, and the FLUSHALL trash.
 * Volatile: nothing; a restart reads the geometry from the root.
 *
 * Invariants
 *  H1. An entry with hash h is in bucket b = h mod nbase if b >= split,
 *      else in h mod 2*nbase; buckets [nbase + split, ...) are empty, and
 *      so are the segments beyond pmkv_nsegs(nbase, split) that exist.
 *  H2. Every change (a link, an unlink, a split, a directory doubling, a
 *      detach, a sweep step) is made inside the caller's transaction, so a
 *      crash leaves the table before or after the whole operation.
 *  H3. A split reads each field of the chain before it writes it, and
 *      reads go through kvx_load once the transaction has written, so
 *      under redo (writes in DRAM until commit) they see its own writes.
 *  H4. Every offset read from the region is checked before it is used:
 *      the directory and segments by their block sizes, entries by
 *      pmkv_entry_at; a chain longer than the key count is corrupt.
 *  H5. A fresh block (an entry not yet linked, a new directory) is
 *      written with plain stores and pmtx_flush (layout.h L2); the
 *      transaction that links it makes it durable.
 */
#include <stdio.h>
#include <string.h>

#include "store_int.h"

#define LOAD_FACTOR 1 /* entries per bucket before a split */

uint64_t assoc_buckets(const struct pmkv_root *root)
{
	return root->nbase + root->split;
}

static uint64_t bucket_of(struct kvx *x, uint64_t h)
{
	struct pmkv_root *root = x->s->root;
	uint64_t nbase = kvx_load(x, &root->nbase);
	uint64_t b = h & (nbase - 1);
	if (b < kvx_load(x, &root->split))
		b = h & (2 * nbase - 1);
	return b;
}

/* A block of at least n bytes at off, or NULL. */
static uint64_t *block(struct pmkv_store *s, pmtx_off off, size_t n)
{
	if (!off || off % 16 || pmtx_usable_size(s->r, off) < n)
		return NULL;
	return pmtx_ptr(s->r, off);
}

static uint64_t *directory(struct kvx *x, pmtx_off dir, uint64_t cap)
{
	if (cap > PMKV_DIR_CAP_MAX)
		return NULL;
	return block(x->s, dir, cap * sizeof(pmtx_off));
}

uint64_t *assoc_bucket_head(struct kvx *x, uint64_t b)
{
	struct pmkv_root *root = x->s->root;
	uint64_t *dir = directory(x, kvx_load(x, &root->dir),
	                          kvx_load(x, &root->dir_cap));
	if (!dir || (b >> PMKV_SEG_SHIFT) >= kvx_load(x, &root->dir_cap))
		return NULL;
	uint64_t *seg = block(x->s, kvx_load(x, &dir[b >> PMKV_SEG_SHIFT]),
	                      PMKV_SEG_BUCKETS * sizeof(pmtx_off));
	return seg ? &seg[b & (PMKV_SEG_BUCKETS - 1)] : NULL;
}

int assoc_find(struct kvx *x, const void *k, size_t kn, uint64_t h,
               struct pos *pos)
{
	uint64_t *link = assoc_bucket_head(x, bucket_of(x, h));
	uint64_t limit = kvx_load(x, &x->s->root->count) + 1;
	if (!link)
		return PMTX_E_CORRUPT;
	for (uint64_t hops = 0;; hops++) {
		pmtx_off cur = kvx_load(x, link);
		struct pmkv_entry *e = cur ? pmkv_entry_at(x->s, cur) : NULL;
		if (cur && (!e || hops > limit))
			return PMTX_E_CORRUPT;
		if (!cur || (e->hash == h && PMKV_KLEN(e->lens) == kn &&
		             !memcmp(entry_key(e), k, kn))) {
			*pos = (struct pos){link, cur, e};
			return 0;
		}
		link = &e->next;
	}
}

static int count_add(struct kvx *x, int64_t d)
{
	uint64_t *c = &x->s->root->count;
	return kvx_store(x, c, kvx_load(x, c) + (uint64_t)d);
}

int assoc_link(struct kvx *x, pmtx_off off, uint64_t h)
{
	uint64_t *head = assoc_bucket_head(x, bucket_of(x, h));
	struct pmkv_entry *e = pmtx_ptr(x->s->r, off);
	if (!head)
		return PMTX_E_CORRUPT;
	e->next = kvx_load(x, head); /* H5: not linked yet */
	pmtx_flush(x->s->r, &e->next, sizeof(e->next));
	int rc = kvx_store(x, head, off);
	return rc ? rc : count_add(x, 1);
}

int assoc_unlink(struct kvx *x, const struct pos *pos)
{
	int rc = kvx_store(x, pos->link, kvx_load(x, &pos->e->next));
	if (!rc)
		rc = pmtx_free(x->tx, pos->off);
	return rc ? rc : count_add(x, -1);
}

int assoc_replace(struct kvx *x, const struct pos *pos, pmtx_off off)
{
	struct pmkv_entry *e = pmtx_ptr(x->s->r, off);
	e->next = kvx_load(x, &pos->e->next); /* H5 */
	pmtx_flush(x->s->r, &e->next, sizeof(e->next));
	int rc = kvx_store(x, pos->link, off);
	return rc ? rc : pmtx_free(x->tx, pos->off);
}

/* ---- growth ---- */

/* A zeroed block of n bytes, in *off. */
static int zblock(struct kvx *x, size_t n, pmtx_off *off)
{
	x->wrote = 1; /* an allocation is a write of the heap */
	return pmtx_zalloc(x->tx, n, off);
}

/* Double the directory (a fresh copy, H5). */
static int grow_directory(struct kvx *x)
{
	struct pmkv_root *root = x->s->root;
	uint64_t cap = kvx_load(x, &root->dir_cap), od = kvx_load(x, &root->dir);
	uint64_t *old = directory(x, od, cap), *nd;
	pmtx_off off;
	if (!old)
		return PMTX_E_CORRUPT;
	if (cap * 2 > PMKV_DIR_CAP_MAX)
		return PMKV_E_OOM;
	int rc = zblock(x, 2 * cap * sizeof(pmtx_off), &off);
	if (rc)
		return rc;
	nd = pmtx_ptr(x->s->r, off);
	for (uint64_t i = 0; i < cap; i++)
		nd[i] = kvx_load(x, &old[i]);
	pmtx_flush(x->s->r, nd, cap * sizeof(pmtx_off));
	if ((rc = kvx_store(x, &root->dir, off)) ||
	    (rc = kvx_store(x, &root->dir_cap, 2 * cap)))
		return rc;
	return pmtx_free(x->tx, od);
}

/* Make sure bucket b has a segment (b is the next bucket to exist). */
static int ensure_segment(struct kvx *x, uint64_t b)
{
	struct pmkv_root *root = x->s->root;
	uint64_t si = b >> PMKV_SEG_SHIFT;
	int rc = 0;
	if (si >= kvx_load(x, &root->dir_cap) && (rc = grow_directory(x)))
		return rc;
	uint64_t *dir = directory(x, kvx_load(x, &root->dir),
	                          kvx_load(x, &root->dir_cap));
	pmtx_off seg;
	if (!dir)
		return PMTX_E_CORRUPT;
	if (kvx_load(x, &dir[si]))
		return 0;
	rc = zblock(x, PMKV_SEG_BUCKETS * sizeof(pmtx_off), &seg);
	return rc ? rc : kvx_store(x, &dir[si], seg);
}

/* Move the entries of bucket `from` that belong to bucket `to` (H3). */
static int split_chain(struct kvx *x, uint64_t from, uint64_t to,
                       uint64_t mask)
{
	uint64_t *link = assoc_bucket_head(x, from);
	uint64_t *tail = assoc_bucket_head(x, to);
	uint64_t limit = kvx_load(x, &x->s->root->count) + 1, hops = 0;
	int rc = 0;
	if (!link || !tail || kvx_load(x, tail))
		return PMTX_E_CORRUPT; /* H1: a new bucket is empty */
	for (pmtx_off cur = kvx_load(x, link); cur && !rc; hops++) {
		struct pmkv_entry *e = pmkv_entry_at(x->s, cur);
		if (!e || hops > limit)
			return PMTX_E_CORRUPT;
		pmtx_off next = kvx_load(x, &e->next);
		if ((e->hash & mask) != to) {
			link = &e->next;
		} else if (!(rc = kvx_store(x, link, next)) &&
		           !(rc = kvx_store(x, tail, cur))) {
			tail = &e->next;
		}
		cur = next;
	}
	return rc ? rc : kvx_store(x, tail, 0);
}

int assoc_maybe_grow(struct kvx *x)
{
	struct pmkv_root *root = x->s->root;
	uint64_t nbase = kvx_load(x, &root->nbase);
	uint64_t split = kvx_load(x, &root->split);
	if (kvx_load(x, &root->count) <= (nbase + split) * LOAD_FACTOR)
		return 0;
	if (nbase + split >= (uint64_t)PMKV_DIR_CAP_MAX * PMKV_SEG_BUCKETS)
		return 0; /* as large as it gets: chains grow instead */
	int rc = ensure_segment(x, nbase + split);
	if (!rc)
		rc = split_chain(x, split, split + nbase, 2 * nbase - 1);
	if (rc)
		return rc;
	if (split + 1 < nbase)
		return kvx_store(x, &root->split, split + 1);
	if ((rc = kvx_store(x, &root->split, 0)))
		return rc;
	return kvx_store(x, &root->nbase, 2 * nbase);
}

/* ---- new tables, FLUSHALL ---- */

int assoc_new_table(struct kvx *x)
{
	struct pmkv_root *root = x->s->root;
	pmtx_off dir, seg;
	int rc = zblock(x, PMKV_DIR_CAP_MIN * sizeof(pmtx_off), &dir);
	if (!rc)
		rc = zblock(x, PMKV_SEG_BUCKETS * sizeof(pmtx_off), &seg);
	if (rc)
		return rc;
	uint64_t *d = pmtx_ptr(x->s->r, dir);
	d[0] = seg; /* H5 */
	pmtx_flush(x->s->r, d, sizeof(*d));
	if ((rc = kvx_store(x, &root->dir, dir)) ||
	    (rc = kvx_store(x, &root->dir_cap, PMKV_DIR_CAP_MIN)) ||
	    (rc = kvx_store(x, &root->nbase, x->s->initial_buckets)) ||
	    (rc = kvx_store(x, &root->split, 0)))
		return rc;
	return kvx_store(x, &root->count, 0);
}

int assoc_detach(struct kvx *x)
{
	struct pmkv_root *root = x->s->root;
	if (kvx_load(x, &root->trash_dir))
		return PMTX_E_BUSY; /* the caller sweeps first */
	uint64_t nsegs = pmkv_nsegs(kvx_load(x, &root->nbase),
	                            kvx_load(x, &root->split));
	int rc = kvx_store(x, &root->trash_dir, kvx_load(x, &root->dir));
	if (!rc)
		rc = kvx_store(x, &root->trash_nsegs, nsegs);
	return rc ? rc : assoc_new_table(x);
}

/* Free the chains of one trash segment, up to *budget entries; 1 when the
 * segment is empty. */
static int sweep_segment(struct kvx *x, uint64_t *seg, unsigned *budget,
                         int *empty)
{
	*empty = 0;
	for (unsigned b = 0; b < PMKV_SEG_BUCKETS; b++) {
		pmtx_off cur;
		while ((cur = kvx_load(x, &seg[b]))) {
			struct pmkv_entry *e = pmkv_entry_at(x->s, cur);
			if (!e)
				return PMTX_E_CORRUPT;
			if (*budget == 0)
				return 0;
			int rc = kvx_store(x, &seg[b], kvx_load(x, &e->next));
			if (rc || (rc = pmtx_free(x->tx, cur)))
				return rc;
			(*budget)--;
		}
	}
	*empty = 1;
	return 0;
}

int assoc_sweep(struct kvx *x, unsigned budget, int *left)
{
	struct pmkv_root *root = x->s->root;
	pmtx_off td = kvx_load(x, &root->trash_dir);
	uint64_t n = kvx_load(x, &root->trash_nsegs);
	uint64_t *dir = td ? block(x->s, td, n * sizeof(pmtx_off)) : NULL;
	int rc = 0, empty = 1;
	*left = 0;
	if (!td)
		return 0;
	if (!dir || n > PMKV_DIR_CAP_MAX)
		return PMTX_E_CORRUPT;
	while (n > 0 && budget > 0 && empty && !rc) {
		pmtx_off so = kvx_load(x, &dir[n - 1]);
		uint64_t *seg = so ? block(x->s, so, PMKV_SEG_BUCKETS * 8) : NULL;
		if (so && !seg)
			return PMTX_E_CORRUPT;
		if (seg && (rc = sweep_segment(x, seg, &budget, &empty)))
			return rc;
		if (empty && so && (rc = pmtx_free(x->tx, so)) == 0 && budget)
			budget--;
		if (empty && !rc)
			rc = kvx_store(x, &root->trash_nsegs, --n);
	}
	if (!rc && n == 0 && (rc = pmtx_free(x->tx, td)) == 0)
		rc = kvx_store(x, &root->trash_dir, 0);
	*left = !rc && n > 0;
	return rc;
}

/* ---- check ---- */

static int check_chain(struct kvx *x, uint64_t b, uint64_t *n, char *msg,
                       size_t len)
{
	uint64_t *head = assoc_bucket_head(x, b);
	if (!head) {
		snprintf(msg, len, "bucket %llu: bad directory or segment",
		         (unsigned long long)b);
		return PMTX_E_CORRUPT;
	}
	for (pmtx_off cur = *head; cur;) {
		struct pmkv_entry *e = pmkv_entry_at(x->s, cur);
		if (!e || *n > x->s->root->count) {
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
		cur = e->next;
	}
	return 0;
}

int assoc_check(struct kvx *x, uint64_t *entries, char *msg, size_t len)
{
	uint64_t n = 0, nb = assoc_buckets(x->s->root);
	for (uint64_t b = 0; b < nb; b++) {
		int rc = check_chain(x, b, &n, msg, len);
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
	for (uint64_t hops = 0; cur; hops++) {
		struct pmkv_entry *e = pmkv_entry_at(x->s, cur);
		if (!e || hops > (1ull << 40))
			return PMTX_E_CORRUPT;
		int rc = fn(cur, arg);
		if (rc)
			return rc;
		cur = e->next;
	}
	return 0;
}

/* The directory dir of cap slots, its first nsegs segments and their
 * chains. */
static int walk_table(struct kvx *x, pmtx_off dir, uint64_t cap,
                      uint64_t nsegs, int (*fn)(pmtx_off, void *), void *arg)
{
	uint64_t *d = directory(x, dir, cap);
	int rc = d ? fn(dir, arg) : PMTX_E_CORRUPT;
	for (uint64_t i = 0; i < nsegs && !rc; i++) {
		uint64_t *seg = d[i] ? block(x->s, d[i], PMKV_SEG_BUCKETS * 8)
		                     : NULL;
		if (!d[i])
			continue;
		if (!seg || (rc = fn(d[i], arg)))
			return rc ? rc : PMTX_E_CORRUPT;
		for (unsigned b = 0; b < PMKV_SEG_BUCKETS && !rc; b++)
			rc = walk_chain(x, seg[b], fn, arg);
	}
	return rc;
}

int assoc_walk(struct kvx *x, int (*fn)(pmtx_off, void *), void *arg)
{
	const struct pmkv_root *root = x->s->root;
	uint64_t cap = root->dir_cap;
	int rc = walk_table(x, root->dir, cap, cap, fn, arg);
	if (!rc && root->trash_dir)
		rc = walk_table(x, root->trash_dir, root->trash_nsegs,
		                root->trash_nsegs, fn, arg);
	return rc;
}
