/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hmap.c - the hash map: byte-string keys to byte-string values, a linear
 * hash table of chains (format: hmap_layout.h).
 *
 * DESIGN
 * Persistent: the header (seed, geometry, counts, segment 0's buckets),
 * the segment table, the segments, the entries. Volatile (the handle):
 * the runtime of its own transactions, the stripe mutexes and the
 * geometry mutex, copies of the header's fixed fields.
 *
 * An entry with hash h lives in bucket h mod nbase, or h mod 2 nbase if
 * that is below split (HL1). An insert that leaves more than LOAD entries
 * per live bucket splits bucket `split` in its own transaction: the chain
 * is cut in two by the next bit of each key's hash, the new bucket is
 * split + nbase, and split moves on (nbase doubles when it reaches it).
 * So no operation pays for more than one bucket's rehash, and growth is
 * failure atomic with the insert that causes it. Buckets are never merged
 * back: a cursor is a bucket index, an entry's bucket index only grows,
 * and so a scan in increasing bucket order meets every entry that stays
 * for the whole scan (below, H6).
 *
 * Invariants
 *  H1. Every link, bucket word or next field, that this transaction may
 *      have written is read with cx_load (cont.h C1); an entry's key and
 *      key length with plain loads (HL2: immutable); its value length
 *      with a plain load where plain loads see the transaction's writes,
 *      else cx_read, and its value through cx_view (C5), which copies
 *      the bytes into the handle's copies when this transaction changed
 *      them under redo.
 *  H2. A put of a new key allocates a fresh entry, fills it with plain
 *      stores and flushes it (C2), then links it with one cx_write of
 *      the link that names it. A put over an existing key writes the
 *      value in place (cx_write of the bytes, and of the value length if
 *      it changes) when it is at most IN_PLACE_MAX bytes and the entry's
 *      block holds it with at most IN_PLACE_SLACK bytes to spare (HL2);
 *      otherwise it links a fresh entry in the old one's place. A
 *      replaced or deleted entry is unlinked by one write and freed (the
 *      free takes effect at commit). A view is therefore valid until the
 *      map is next written by the thread that took it (its writes
 *      through the handle drop its copies, C5); another thread's write
 *      frees no copy of it, and changes or frees no entry of a stripe
 *      the reader's transaction holds (H4).
 *  H3. Every entry offset is checked (bounds, alignment, its lengths
 *      within the region) before it is read, every chain walk is bounded
 *      by the entry count, and a split checks each moved entry's tag
 *      against its key's hash: a corrupt map gives PMTX_E_CORRUPT.
 *  H7. Filters (HL4). A put of a new key links its entry at the head of
 *      the chain with the filter of what its walk saw of the chain (the
 *      tags it passed, and the filter of the link where it stopped), so
 *      bits of entries deleted since a bucket's last put of a new key
 *      leave it then; a replace keeps the old link's filter; a delete
 *      writes the deleted entry's next, filter and all, into the link
 *      that named it (the links before keep the deleted entry's bits:
 *      more bits, never fewer). A split moves each entry with the link
 *      that named it (a superset of its new chain's bits) and gives the
 *      two bucket words exactly their chains' bits. Entries are not
 *      prefetched along a chain: each next is known only once its entry
 *      is loaded; the filter spares the loads instead.
 *  H4. Concurrency (PMTX_HMAP_LOCKED maps opened with stripes S): a key's
 *      stripe is hash mod S. Segment 0 has at least 64 >= S buckets, so
 *      bucket b holds only keys of stripe b mod S, and a bucket split
 *      moves keys between buckets of one stripe. An operation holds its
 *      key's stripe until its outermost transaction ends (deferred
 *      unlock); the count word it changes (HL3) belongs to that stripe.
 *      A split also holds the split bucket's stripe and the geometry
 *      mutex, both taken with trylock (skipped if busy), so that no
 *      thread waits for a lock while holding a stripe except in
 *      pmtx_hmap_lock_keys's increasing order.
 *      Lock order: stripes in increasing index, then the geometry mutex.
 *  H5. A geometry change maps only the split stripe's keys differently,
 *      so another stripe's writer may read geom while it changes (one
 *      aligned word) and compute the same bucket from the old value or
 *      the new. A segment and the segment table are written before the
 *      geometry that makes their buckets live, and are reached only
 *      through buckets of the stripe that split them.
 *  H6. Scan guarantee: the bucket index of an entry never decreases
 *      (splits move entries from b to b + nbase only) and a scan visits
 *      buckets in increasing order, each whole in one call: an entry
 *      present for the whole scan is in a bucket at or past the cursor
 *      until the cursor reaches its bucket, so it is returned.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "hmap.h"
#include "hmap_layout.h"

#define LOAD 2 /* entries per live bucket before a split */
/* H2: values written in place, as format 1.1 of pmkv's own table did: up
 * to this many bytes a transactional write of the value costs less than
 * a fresh entry (its allocation, its flush, under redo a barrier before
 * the commit record, and the free of the old one) */
#define IN_PLACE_MAX 256u
#define IN_PLACE_SLACK 64u /* a value that shrinks more moves to a
                            * smaller block */

struct pmtx_hmap {
	pmtx_region *r;
	pmtx_off off;
	pmtx_runtime rt;
	uint64_t seed;
	unsigned min_log, ncount;
	unsigned nstripes; /* 0: no locks */
	pthread_mutex_t *stripe;
	pthread_mutex_t geom_lock;
	struct cx_views views; /* H1, C5 */
};

/* ---- the header's fields ---- */

static struct hmap_hdr *hdr(const struct cx *c, const pmtx_hmap *m)
{
	return (struct hmap_hdr *)(c->base + m->off);
}

static uint64_t *count_word(const struct cx *c, const pmtx_hmap *m,
                            uint64_t h)
{
	uint64_t *cnt = (uint64_t *)(hdr(c, m) + 1);
	return &cnt[m->ncount == 1 ? 0 : h % HMAP_STRIPE_COUNTS];
}

static uint64_t *bucket0(const struct cx *c, const pmtx_hmap *m)
{
	return (uint64_t *)(hdr(c, m) + 1) + m->ncount;
}

static size_t hdr_size(unsigned min_log, unsigned ncount)
{
	return sizeof(struct hmap_hdr) + 8 * (ncount + ((size_t)1 << min_log));
}

static uint64_t entries(const struct cx *c, const pmtx_hmap *m)
{
	uint64_t *cnt = count_word(c, m, 0), n = 0;
	for (unsigned i = 0; i < m->ncount; i++)
		n += cx_load(c, &cnt[i]);
	return n;
}

/* A bound on the length of the chain that holds hash h (H3): bucket b
 * holds only hashes equal to b mod ncount (HL3, H4), all counted in one
 * word. */
static uint64_t chain_bound(const struct cx *c, const pmtx_hmap *m,
                            uint64_t h)
{
	return cx_load(c, count_word(c, m, h));
}

struct geom {
	unsigned log; /* nbase = 2^log */
	uint64_t split;
};

static struct geom geom_get(const struct cx *c, const pmtx_hmap *m)
{
	uint64_t g = cx_load(c, &hdr(c, m)->geom);
	return (struct geom){(unsigned)(g >> HMAP_GEOM_LOG_SHIFT),
	                     g & ((UINT64_C(1) << HMAP_GEOM_LOG_SHIFT) - 1)};
}

static uint64_t live_buckets(struct geom g)
{
	return (UINT64_C(1) << g.log) + g.split;
}

static uint64_t bucket_of(struct geom g, uint64_t h)
{
	uint64_t b = h & ((UINT64_C(1) << g.log) - 1);
	return b < g.split ? h & ((UINT64_C(2) << g.log) - 1) : b;
}

static uint64_t hash_key(const pmtx_hmap *m, const void *k, size_t kn)
{
	return pmtx_checksum(k, kn, m->seed);
}

/* ---- buckets and segments ---- */

/* Segment i >= 1 holds buckets [2^(min_log+i-1), 2^(min_log+i)). */
static unsigned seg_of(const pmtx_hmap *m, uint64_t b, uint64_t *first)
{
	unsigned top = 63 - (unsigned)__builtin_clzll(b);
	*first = UINT64_C(1) << top;
	return top - m->min_log + 1;
}

/* The word of live bucket b, checked (H3): NULL if the table is corrupt. */
static uint64_t *bucket_word(const struct cx *c, const pmtx_hmap *m,
                             uint64_t b)
{
	if (b < (UINT64_C(1) << m->min_log))
		return bucket0(c, m) + b;
	uint64_t first;
	unsigned i = seg_of(m, b, &first);
	struct hmap_segtab *t = cx_block(c, cx_load(c, &hdr(c, m)->segtab),
	                                 sizeof(*t), CONT_MAGIC_HMAP_SEGTAB);
	if (!t || i >= HMAP_MAX_SEG)
		return NULL;
	uint64_t *seg = cx_block(c, cx_load(c, &t->seg[i]), 8 * first, 0);
	return seg ? seg + (b - first) : NULL;
}

/* ---- entries ---- */

static pmtx_off link_off(uint64_t link)
{
	return (link & HMAP_LINK_OFF_MASK) << HMAP_LINK_OFF_SHIFT;
}

/* The filter bits of tag t (HL4): two of the 12, by a multiplicative
 * hash of t. On media: never changed without a format change. */
static uint64_t tag_filter(unsigned t)
{
	uint32_t x = (t + 1) * 0x9e3779b1u;
	unsigned a = (unsigned)(((x >> 16) & 0xff) * HMAP_LINK_FILTER_BITS >> 8);
	unsigned b = (unsigned)((x >> 24) * HMAP_LINK_FILTER_BITS >> 8);
	return (UINT64_C(1) << a | UINT64_C(1) << b) << HMAP_LINK_FILTER_SHIFT;
}

static unsigned link_tag(uint64_t link)
{
	return (unsigned)(link >> HMAP_LINK_TAG_SHIFT);
}

/* A link to the entry at off of hash h whose chain from it on has the
 * filter bits filt besides its own. */
static uint64_t make_link(pmtx_off off, uint64_t h, uint64_t filt)
{
	unsigned t = (unsigned)(h >> HMAP_LINK_TAG_SHIFT);
	return (uint64_t)t << HMAP_LINK_TAG_SHIFT | tag_filter(t) |
	       (filt & HMAP_LINK_FILTER_MASK) | off >> HMAP_LINK_OFF_SHIFT;
}

static int same_tag(uint64_t link, uint64_t h)
{
	return link_tag(link) == (unsigned)(h >> HMAP_LINK_TAG_SHIFT);
}

/* The entry a link names, checked (H3), or NULL. */
static struct hmap_entry *entry_at(const struct cx *c, uint64_t link)
{
	struct hmap_entry *e = cx_block(c, link_off(link), sizeof(*e), 0);
	size_t size = cx_size(c);
	if (!e || (uint64_t)e->klen + e->vlen >
	                  size - link_off(link) - sizeof(*e))
		return NULL;
	return e;
}

static const char *entry_key(const struct hmap_entry *e)
{
	return (const char *)(e + 1);
}

/* The value length as the transaction sees it (H1), checked against the
 * region like entry_at's. */
static int entry_vlen(const struct cx *c, const struct hmap_entry *e,
                      uint32_t *vn)
{
	if (cx_direct(c)) {
		*vn = e->vlen;
		return 0;
	}
	cx_read(c, vn, &e->vlen, sizeof(*vn));
	return (uint64_t)e->klen + *vn >
	               cx_size(c) - cx_off(c, e) - sizeof(*e)
	           ? PMTX_E_CORRUPT
	           : 0;
}

/* Views of an entry's key and value (H1). */
static int entry_view(struct cx *c, pmtx_hmap *m,
                      const struct hmap_entry *e, pmtx_bytes *k,
                      pmtx_bytes *v)
{
	uint32_t vn;
	if (k)
		*k = (pmtx_bytes){entry_key(e), e->klen, 0};
	if (!v)
		return 0;
	int rc = entry_vlen(c, e, &vn);
	return rc ? rc
	          : cx_view(c, &m->views, entry_key(e) + e->klen, NULL, vn, v);
}

/* Where a key is: the link that names its entry (a bucket word or the
 * next field of the entry before), and the entry (NULL: absent; then
 * link is the bucket word, and filt holds the filter bits of the chain's
 * every entry: H7). */
struct pos {
	uint64_t *link;
	uint64_t *bucket;
	struct hmap_entry *e;
	uint64_t filt;
};

static int find(const struct cx *c, const pmtx_hmap *m, const void *k,
                size_t kn, uint64_t h, struct pos *p)
{
	p->bucket = bucket_word(c, m, bucket_of(geom_get(c, m), h));
	if (!p->bucket)
		return PMTX_E_CORRUPT;
	uint64_t limit = chain_bound(c, m, h);
	uint64_t want = tag_filter((unsigned)(h >> HMAP_LINK_TAG_SHIFT));
	p->link = p->bucket;
	p->filt = 0;
	for (uint64_t hops = 0;; hops++) {
		uint64_t l = cx_load(c, p->link);
		if ((l & want) != want) { /* not in the rest (HL4); 0: none */
			p->e = NULL;
			p->link = p->bucket;
			p->filt |= l & HMAP_LINK_FILTER_MASK;
			return 0;
		}
		if (hops > limit || !(p->e = entry_at(c, l)))
			return PMTX_E_CORRUPT;
		if (same_tag(l, h) && p->e->klen == kn &&
		    memcmp(entry_key(p->e), k, kn) == 0)
			return 0;
		p->filt |= tag_filter(link_tag(l));
		p->link = &p->e->next;
	}
}

/* A fresh entry for (k, v) whose next is `next` (H2). */
static int new_entry(struct cx *c, const void *k, size_t kn, const void *v,
                     size_t vn, uint64_t next, pmtx_off *off)
{
	struct hmap_entry *e;
	int rc = cx_alloc(c, sizeof(*e) + kn + vn, 0, off, (void **)&e);
	if (rc)
		return rc;
	e->next = next;
	e->klen = (uint32_t)kn;
	e->vlen = (uint32_t)vn;
	memcpy(e + 1, k, kn);
	if (vn)
		memcpy((char *)(e + 1) + kn, v, vn);
	cx_flush_site(c, e, sizeof(*e) + kn + vn, MUT_HMAP_ENTRY_FLUSH);
	return 0;
}

/* ---- locks (H4) ---- */

static pthread_mutex_t *stripe_of(const pmtx_hmap *m, uint64_t h)
{
	return m->nstripes ? &m->stripe[h & (m->nstripes - 1)] : NULL;
}

/* Hold mu until tx ends. */
static int hold(pmtx_tx *tx, pthread_mutex_t *mu)
{
	if (!mu)
		return 0;
	pthread_mutex_lock(mu);
	int rc = pmtx_defer_unlock(tx, mu);
	if (rc)
		pthread_mutex_unlock(mu);
	return rc;
}

static int try_hold(pmtx_tx *tx, pthread_mutex_t *mu)
{
	if (!mu)
		return 0;
	if (pthread_mutex_trylock(mu))
		return PMTX_E_BUSY;
	int rc = pmtx_defer_unlock(tx, mu);
	if (rc)
		pthread_mutex_unlock(mu);
	return rc;
}

/* ---- growth ---- */

/* The segment of the buckets [nbase, 2 nbase), allocated if it is not
 * yet: its first split is the one that makes bucket nbase live. */
static int ensure_segment(struct cx *c, const pmtx_hmap *m, struct geom g)
{
	struct hmap_hdr *H = hdr(c, m);
	uint64_t nb = UINT64_C(1) << g.log, first;
	unsigned i = seg_of(m, nb, &first);
	if (i >= HMAP_MAX_SEG)
		return PMTX_E_NOMEM;
	pmtx_off toff = cx_load(c, &H->segtab), soff;
	struct hmap_segtab *t;
	void *p;
	int rc;
	if (!toff) {
		if ((rc = cx_alloc(c, sizeof(*t), 1, &toff, (void **)&t)))
			return rc;
		t->magic = CONT_MAGIC_HMAP_SEGTAB;
		cx_flush(c, t, sizeof(*t));
		if ((rc = cx_put64(c, &H->segtab, toff)))
			return rc;
	}
	if (!(t = cx_block(c, toff, sizeof(*t), CONT_MAGIC_HMAP_SEGTAB)))
		return PMTX_E_CORRUPT;
	if (cx_load(c, &t->seg[i]))
		return 0;
	if ((rc = cx_alloc(c, 8 * first, 0, &soff, &p)))
		return rc;
	return cx_put64(c, &t->seg[i], soff);
}

/* Give the two bucket words of a split their chains' filter bits
 * exactly (H7): the links they took kept the bits of the whole old
 * chain. */
static int split_filters(struct cx *c, uint64_t *from, uint64_t *to,
                         const uint64_t filt[2])
{
	uint64_t *w[2] = {from, to};
	for (unsigned side = 0; side < 2; side++) {
		uint64_t l = cx_load(c, w[side]);
		uint64_t nl = (l & ~HMAP_LINK_FILTER_MASK) | filt[side];
		int rc = l && nl != l ? cx_put64(c, w[side], nl) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

/* Cut bucket g.split's chain in two by hash bit g.log (H3 checks). */
static int split_chain(struct cx *c, const pmtx_hmap *m, struct geom g)
{
	uint64_t nb = UINT64_C(1) << g.log;
	uint64_t *from = bucket_word(c, m, g.split);
	uint64_t *to = bucket_word(c, m, g.split + nb);
	uint64_t limit = chain_bound(c, m, g.split), heads[2] = {0, 0};
	uint64_t *tails[2] = {from, to}, filt[2] = {0, 0};
	int rc;
	if (!from || !to)
		return PMTX_E_CORRUPT;
	uint64_t l = cx_load(c, from);
	for (uint64_t hops = 0; l; hops++) {
		struct hmap_entry *e = entry_at(c, l);
		if (hops > limit || !e)
			return PMTX_E_CORRUPT;
		uint64_t h = hash_key(m, entry_key(e), e->klen);
		if (!same_tag(l, h) || (h & (nb - 1)) != g.split)
			return PMTX_E_CORRUPT;
		unsigned side = (h & nb) != 0;
		if (cx_load(c, tails[side]) != l &&
		    (rc = cx_put64(c, tails[side], l)))
			return rc;
		heads[side] = 1;
		filt[side] |= tag_filter(link_tag(l));
		tails[side] = &e->next;
		l = cx_load(c, &e->next);
	}
	for (unsigned side = 0; side < 2; side++)
		if ((side == 1 || heads[side]) && cx_load(c, tails[side]) &&
		    (rc = cx_put64(c, tails[side], 0)))
			return rc;
	if (!heads[0] && cx_load(c, from))
		return cx_put64(c, from, 0);
	return split_filters(c, from, to, filt);
}

static int split_one(struct cx *c, pmtx_hmap *m)
{
	struct geom g = geom_get(c, m);
	uint64_t nb = UINT64_C(1) << g.log;
	int rc = 0;
	if (g.split == 0)
		rc = ensure_segment(c, m, g);
	if (!rc) {
		uint64_t *to = bucket_word(c, m, g.split + nb);
		rc = to ? cx_put64(c, to, 0) : PMTX_E_CORRUPT;
	}
	if (!rc)
		rc = split_chain(c, m, g);
	if (rc)
		return rc;
	g.split++;
	if (g.split == nb) {
		g.log++;
		g.split = 0;
	}
	return cx_put64(c, &hdr(c, m)->geom,
	                (uint64_t)g.log << HMAP_GEOM_LOG_SHIFT | g.split);
}

/* After an insert of hash h: split one bucket if the map is fuller than
 * LOAD per bucket, estimated from h's count word (HL3) in a locked map. */
static int maybe_split(struct cx *c, pmtx_hmap *m, uint64_t h)
{
	uint64_t n = cx_load(c, count_word(c, m, h)) * m->ncount;
	if (n <= LOAD * live_buckets(geom_get(c, m)))
		return 0;
	/* the geometry first, so that the split bucket read after it
	 * stays the one whose stripe is taken (H4: trylocks only) */
	if (m->nstripes && (try_hold(c->tx, &m->geom_lock) ||
	                    try_hold(c->tx, stripe_of(m, geom_get(c, m).split))))
		return 0; /* busy: a later insert splits */
	if (geom_get(c, m).log >= 62)
		return 0;
	int rc = split_one(c, m);
	/* no room for a segment: the table stays fuller, the insert stands
	 * (the split had written nothing but a segment table) */
	return rc == PMTX_E_NOMEM ? 0 : rc;
}

/* ---- handles ---- */

static int check_map(pmtx_region *r, pmtx_off off)
{
	int rc = cont_check_hdr(r, off, CONT_MAGIC_HMAP, sizeof(struct hmap_hdr));
	if (rc)
		return rc;
	const struct hmap_hdr *H = pmtx_ptr(r, off);
	unsigned log = (unsigned)(H->geom >> HMAP_GEOM_LOG_SHIFT);
	uint64_t split = H->geom & ((UINT64_C(1) << HMAP_GEOM_LOG_SHIFT) - 1);
	if (H->min_log < HMAP_MIN_LOG || H->min_log > HMAP_MIN_LOG_LOCKED ||
	    (H->ncount != 1 && H->ncount != HMAP_STRIPE_COUNTS) ||
	    pmtx_usable_size(r, off) < hdr_size(H->min_log, H->ncount) ||
	    log < H->min_log || log > 62 || split >= (UINT64_C(1) << log)) {
		pmtx__set_errmsg("hash map header at %llu is corrupt",
		                 (unsigned long long)off);
		return PMTX_E_CORRUPT;
	}
	return 0;
}

int pmtx_hmap_open(pmtx_region *r, pmtx_off off, const pmtx_cont_options *o,
                   pmtx_hmap **out)
{
	if (!r || !out)
		return PMTX_E_INVAL;
	int rc = check_map(r, off);
	if (rc)
		return rc;
	const struct hmap_hdr *H = pmtx_ptr(r, off);
	unsigned s = o ? o->stripes : 0;
	if (s > 64 || (s & (s - 1)) ||
	    (s && !(H->h.flags & PMTX_HMAP_LOCKED)))
		return PMTX_E_INVAL;
	pmtx_hmap *m = calloc(1, sizeof(*m));
	if (!m)
		return ENOMEM;
	m->r = r;
	m->off = off;
	m->rt = cont_runtime(o);
	m->seed = H->seed;
	m->min_log = H->min_log;
	m->ncount = H->ncount;
	m->nstripes = s;
	if (s && !(m->stripe = calloc(s, sizeof(*m->stripe)))) {
		free(m);
		return ENOMEM;
	}
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	for (unsigned i = 0; i < s; i++)
		pthread_mutex_init(&m->stripe[i], &a);
	pthread_mutex_init(&m->geom_lock, &a);
	pthread_mutexattr_destroy(&a);
	cx_views_init(&m->views);
	*out = m;
	return 0;
}

void pmtx_hmap_close(pmtx_hmap *m)
{
	if (!m)
		return;
	for (unsigned i = 0; i < m->nstripes; i++)
		pthread_mutex_destroy(&m->stripe[i]);
	pthread_mutex_destroy(&m->geom_lock);
	cx_views_fini(&m->views);
	free(m->stripe);
	free(m);
}

pmtx_off pmtx_hmap_off(const pmtx_hmap *m)
{
	return m->off;
}

static uint64_t fixed_seed; /* hmap_fix_seed */

void hmap_fix_seed(uint64_t seed)
{
	__atomic_store_n(&fixed_seed, seed, __ATOMIC_RELAXED);
}

static uint64_t new_seed(pmtx_off off)
{
	struct timespec ts;
	uint64_t fixed = __atomic_load_n(&fixed_seed, __ATOMIC_RELAXED);
	if (fixed)
		return fixed;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return pmtx_mix64(off ^ (uint64_t)ts.tv_nsec ^
	                  (uint64_t)ts.tv_sec << 32);
}

int pmtx_hmap_create(pmtx_tx *tx, unsigned flags, pmtx_off *out)
{
	struct cx c;
	if (!tx || !out || (flags & ~PMTX_HMAP_LOCKED))
		return PMTX_E_INVAL;
	int rc = cx_begin(&c, pmtx_tx_region(tx), tx, PMTX_RT_DEFAULT);
	if (rc)
		return rc;
	unsigned locked = (flags & PMTX_HMAP_LOCKED) != 0;
	unsigned min_log = locked ? HMAP_MIN_LOG_LOCKED : HMAP_MIN_LOG;
	unsigned ncount = locked ? HMAP_STRIPE_COUNTS : 1;
	size_t n = hdr_size(min_log, ncount);
	struct hmap_hdr *H;
	pmtx_off off;
	if (!(rc = cx_alloc(&c, n, 1, &off, (void **)&H))) {
		cont_hdr_init(&H->h, CONT_MAGIC_HMAP, flags);
		H->seed = new_seed(off);
		H->geom = (uint64_t)min_log << HMAP_GEOM_LOG_SHIFT;
		H->min_log = min_log;
		H->ncount = ncount;
		cx_flush_site(&c, H, sizeof(*H), MUT_HMAP_CREATE_FLUSH);
		*out = off;
	}
	return cx_end(&c, rc);
}

/* ---- operations ---- */

/* Begin an operation on key hash h: the transaction, then the stripe. */
static inline __attribute__((always_inline)) int
op_begin(struct cx *c, pmtx_hmap *m, pmtx_tx *tx, uint64_t h)
{
	int rc = cx_begin(c, m->r, tx, m->rt);
	if (!rc && (rc = hold(c->tx, stripe_of(m, h))))
		cx_end(c, 0);
	if (!rc)
		cx_views_drop(&m->views); /* H2: the map is written */
	return rc;
}

static int key_ok(const void *k, size_t kn)
{
	return (k || !kn) ? (cont_len_ok(kn) ? 0 : PMTX_E_TOO_BIG)
	                  : PMTX_E_INVAL;
}

/* Write v over e's value if it fits (H2): 0, a status, or 1 (it does
 * not fit: the caller links a fresh entry). */
static int put_in_place(struct cx *c, struct hmap_entry *e, const void *v,
                        size_t vn)
{
	uint32_t old;
	size_t need = sizeof(*e) + e->klen + vn;
	size_t cap = vn <= IN_PLACE_MAX ? pmtx_usable_size(c->r, cx_off(c, e))
	                                : 0;
	if (need > cap || cap - need > IN_PLACE_SLACK)
		return 1;
	int rc = entry_vlen(c, e, &old);
	uint32_t n32 = (uint32_t)vn;
	if (!rc && old != vn)
		rc = cx_write(c, &e->vlen, &n32, sizeof(n32));
	if (!rc && vn)
		rc = cx_write(c, (char *)(e + 1) + e->klen, v, vn);
	return rc;
}

static int do_put(struct cx *c, pmtx_hmap *m, const void *k, size_t kn,
                  const void *v, size_t vn, unsigned flags, uint64_t h,
                  int *existed)
{
	struct pos p;
	pmtx_off off;
	int rc = find(c, m, k, kn, h, &p);
	if (rc)
		return rc;
	if (existed)
		*existed = p.e != NULL;
	if ((flags & PMTX_HMAP_NX) && p.e)
		return PMTX_E_EXISTS;
	if ((flags & PMTX_HMAP_XX) && !p.e)
		return PMTX_E_NOT_FOUND;
	if (p.e && (rc = put_in_place(c, p.e, v, vn)) <= 0)
		return rc;
	uint64_t next = cx_load(c, p.e ? &p.e->next : p.link);
	/* H7: a replace keeps the old link's filter; a new head, what the
	 * walk saw of the chain */
	uint64_t filt = p.e ? cx_load(c, p.link) : p.filt;
	if ((rc = new_entry(c, k, kn, v, vn, next, &off)) ||
	    (rc = cx_put64(c, p.link, make_link(off, h, filt))))
		return rc;
	if (p.e)
		return cx_free(c, cx_off(c, p.e));
	uint64_t *cnt = count_word(c, m, h);
	if ((rc = cx_put64(c, cnt, cx_load(c, cnt) + 1)))
		return rc;
	return maybe_split(c, m, h);
}

int pmtx_hmap_put(pmtx_tx *tx, pmtx_hmap *m, const void *k, size_t kn,
                  const void *v, size_t vn, unsigned flags, int *existed)
{
	struct cx c;
	int rc = m ? key_ok(k, kn) : PMTX_E_INVAL;
	if (!rc)
		rc = key_ok(v, vn);
	if (!rc && (flags & ~(PMTX_HMAP_NX | PMTX_HMAP_XX)))
		rc = PMTX_E_INVAL;
	if (rc)
		return rc;
	uint64_t h = hash_key(m, k, kn);
	if ((rc = op_begin(&c, m, tx, h)))
		return rc;
	return cx_end(&c, do_put(&c, m, k, kn, v, vn, flags, h, existed));
}

static int do_del(struct cx *c, pmtx_hmap *m, const void *k, size_t kn,
                  uint64_t h)
{
	struct pos p;
	int rc = find(c, m, k, kn, h, &p);
	if (rc)
		return rc;
	if (!p.e)
		return PMTX_E_NOT_FOUND;
	uint64_t *cnt = count_word(c, m, h);
	if ((rc = cx_put64(c, p.link, cx_load(c, &p.e->next))) ||
	    (rc = cx_put64(c, cnt, cx_load(c, cnt) - 1)))
		return rc;
	return cx_free(c, cx_off(c, p.e));
}

int pmtx_hmap_del(pmtx_tx *tx, pmtx_hmap *m, const void *k, size_t kn)
{
	struct cx c;
	int rc = m ? key_ok(k, kn) : PMTX_E_INVAL;
	if (rc)
		return rc;
	uint64_t h = hash_key(m, k, kn);
	if ((rc = op_begin(&c, m, tx, h)))
		return rc;
	return cx_end(&c, do_del(&c, m, k, kn, h));
}

/* A reader's stripe, held to the end of its transaction, or (no
 * transaction) until read_end. */
static int read_begin(struct cx *c, pmtx_hmap *m, pmtx_tx *tx,
                      pthread_mutex_t *mu)
{
	int rc = cx_begin_read(c, m->r, tx);
	if (rc || !mu)
		return rc;
	if (c->tx)
		return hold(c->tx, mu);
	pthread_mutex_lock(mu);
	return 0;
}

static int read_end(struct cx *c, pthread_mutex_t *mu, int rc)
{
	if (mu && !c->tx)
		pthread_mutex_unlock(mu);
	return rc;
}

int pmtx_hmap_get(pmtx_tx *tx, pmtx_hmap *m, const void *k, size_t kn,
                  pmtx_bytes *v)
{
	struct cx c;
	struct pos p;
	int rc = m && v ? key_ok(k, kn) : PMTX_E_INVAL;
	if (rc)
		return rc;
	uint64_t h = hash_key(m, k, kn);
	pthread_mutex_t *mu = stripe_of(m, h);
	if ((rc = read_begin(&c, m, tx, mu)))
		return rc;
	if (!(rc = find(&c, m, k, kn, h, &p))) {
		if (p.e)
			rc = entry_view(&c, m, p.e, NULL, v);
		else
			rc = PMTX_E_NOT_FOUND;
	}
	return read_end(&c, mu, rc);
}

int pmtx_hmap_len(pmtx_tx *tx, pmtx_hmap *m, uint64_t *n)
{
	struct cx c;
	int rc = m && n ? cx_begin_read(&c, m->r, tx) : PMTX_E_INVAL;
	if (!rc)
		*n = entries(&c, m);
	return rc;
}

/* ---- scan (H6) ---- */

static int scan_bucket(struct cx *c, pmtx_hmap *m, uint64_t b,
                       pmtx_hmap_fn fn, void *arg, size_t *seen)
{
	uint64_t *w = bucket_word(c, m, b), limit = chain_bound(c, m, b);
	if (!w)
		return PMTX_E_CORRUPT;
	uint64_t l = cx_load(c, w);
	for (uint64_t hops = 0; l; hops++) {
		struct hmap_entry *e = entry_at(c, l);
		pmtx_bytes k, v;
		if (hops > limit || !e)
			return PMTX_E_CORRUPT;
		int rc = entry_view(c, m, e, &k, &v);
		if (!rc)
			rc = fn(&k, &v, arg);
		if (rc)
			return rc;
		++*seen;
		l = cx_load(c, &e->next);
	}
	return 0;
}

int pmtx_hmap_scan(pmtx_tx *tx, pmtx_hmap *m, uint64_t cursor, size_t count,
                   pmtx_hmap_fn fn, void *arg, uint64_t *next)
{
	struct cx c;
	size_t seen = 0;
	int rc = m && fn && next ? cx_begin_read(&c, m->r, tx) : PMTX_E_INVAL;
	if (rc)
		return rc;
	/* at least count entries, or 10 buckets a requested entry (Redis's
	 * bound on the work of one call over a sparse table) */
	count = count ? count : 1;
	uint64_t b = cursor, end = cursor + 10 * (uint64_t)count;
	for (; b < live_buckets(geom_get(&c, m)) && seen < count && b < end;
	     b++) {
		pthread_mutex_t *mu = stripe_of(m, b);
		if ((rc = read_begin(&c, m, c.tx, mu)))
			break;
		rc = read_end(&c, mu, scan_bucket(&c, m, b, fn, arg, &seen));
		if (rc)
			break;
	}
	*next = b < live_buckets(geom_get(&c, m)) ? b : 0;
	return rc;
}

int pmtx_hmap_lock_keys(pmtx_tx *tx, pmtx_hmap *m, size_t n,
                        const void *const *keys, const size_t *lens)
{
	if (!m || !tx || (n && (!keys || !lens)))
		return PMTX_E_INVAL;
	if (!m->nstripes)
		return 0;
	uint64_t want = 0; /* a bit per stripe: nstripes <= 64 */
	for (size_t i = 0; i < n; i++)
		want |= UINT64_C(1) << (hash_key(m, keys[i], lens[i]) &
		                        (m->nstripes - 1));
	for (unsigned s = 0; s < m->nstripes; s++) {
		int rc = (want >> s & 1) ? hold(tx, &m->stripe[s]) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- clear and destroy ---- */

/* Free every entry, segment and the segment table; zero the counts and
 * segment 0's buckets; reset the geometry. */
static int free_all(struct cx *c, pmtx_hmap *m)
{
	struct hmap_hdr *H = hdr(c, m);
	struct geom g = geom_get(c, m);
	uint64_t limit = entries(c, m), seen = 0;
	int rc = 0;
	for (uint64_t b = 0; !rc && b < live_buckets(g); b++) {
		uint64_t *w = bucket_word(c, m, b);
		uint64_t l = w ? cx_load(c, w) : 0;
		if (!w)
			return PMTX_E_CORRUPT;
		while (!rc && l) {
			struct hmap_entry *e = entry_at(c, l);
			if (!e || ++seen > limit)
				return PMTX_E_CORRUPT;
			l = cx_load(c, &e->next);
			rc = cx_free(c, cx_off(c, e));
		}
	}
	pmtx_off toff = cx_load(c, &H->segtab);
	struct hmap_segtab *t = toff ? cx_block(c, toff, sizeof(*t),
	                                        CONT_MAGIC_HMAP_SEGTAB) : NULL;
	if (toff && !t)
		return PMTX_E_CORRUPT;
	for (unsigned i = 1; t && !rc && i < HMAP_MAX_SEG; i++) {
		pmtx_off s = cx_load(c, &t->seg[i]);
		if (s)
			rc = cx_free(c, s);
	}
	if (!rc && toff && !(rc = cx_free(c, toff)))
		rc = cx_put64(c, &H->segtab, 0);
	if (!rc)
		rc = cx_put64(c, &H->geom,
		              (uint64_t)m->min_log << HMAP_GEOM_LOG_SHIFT);
	if (!rc)
		rc = pmtx_memset(c->tx, H + 1, 0,
		                 hdr_size(m->min_log, m->ncount) - sizeof(*H));
	c->overlay = !c->in_place;
	return rc;
}

int pmtx_hmap_clear(pmtx_tx *tx, pmtx_hmap *m)
{
	struct cx c;
	if (!m)
		return PMTX_E_INVAL;
	int rc = cx_begin(&c, m->r, tx, m->rt);
	if (rc)
		return rc;
	for (unsigned s = 0; !rc && s < m->nstripes; s++)
		rc = hold(c.tx, &m->stripe[s]);
	if (!rc)
		rc = hold(c.tx, m->nstripes ? &m->geom_lock : NULL);
	if (!rc)
		cx_views_drop(&m->views);
	return cx_end(&c, rc ? rc : free_all(&c, m));
}

static int destroy(pmtx_tx *tx, pmtx_off off, size_t budget, int *left);

int pmtx_hmap_destroy(pmtx_tx *tx, pmtx_off off)
{
	int left;
	if (!tx)
		return PMTX_E_INVAL;
	return destroy(tx, off, SIZE_MAX, &left);
}

/* ---- piecewise destruction ---- */

/* The geometry with the last live bucket gone (it is empty). */
static struct geom geom_shrunk(struct geom g)
{
	if (g.split)
		return (struct geom){g.log, g.split - 1};
	return (struct geom){g.log - 1, (UINT64_C(1) << (g.log - 1)) - 1};
}

/* Free up to *budget entries of bucket b from its head; the bucket word
 * then names the rest. */
static int free_chain_head(struct cx *c, pmtx_hmap *m, uint64_t b,
                           size_t *budget)
{
	uint64_t *w = bucket_word(c, m, b), l, n = 0;
	if (!w)
		return PMTX_E_CORRUPT;
	uint64_t *cnt = count_word(c, m, b), limit = cx_load(c, cnt);
	int rc = 0;
	for (l = cx_load(c, w); !rc && l && *budget; --*budget) {
		struct hmap_entry *e = entry_at(c, l);
		if (!e || ++n > limit)
			return PMTX_E_CORRUPT;
		l = cx_load(c, &e->next);
		rc = cx_free(c, cx_off(c, e));
	}
	if (!rc && n)
		rc = cx_put64(c, w, l);
	if (!rc && n)
		rc = cx_put64(c, cnt, limit - n);
	return rc;
}

/* One step: empty the last live buckets, shrinking the geometry behind
 * them, until the budget runs out or segment 0 is all that is left (then
 * its buckets, from 0). */
static int destroy_step(struct cx *c, pmtx_hmap *m, size_t budget)
{
	int rc = 0;
	while (!rc && budget) {
		struct geom g = geom_get(c, m);
		uint64_t live = live_buckets(g);
		if (live <= (UINT64_C(1) << m->min_log))
			break;
		if ((rc = free_chain_head(c, m, live - 1, &budget)) ||
		    cx_load(c, bucket_word(c, m, live - 1)))
			break;
		g = geom_shrunk(g);
		rc = cx_put64(c, &hdr(c, m)->geom,
		              (uint64_t)g.log << HMAP_GEOM_LOG_SHIFT | g.split);
	}
	for (uint64_t b = 0; !rc && budget && b < (UINT64_C(1) << m->min_log);
	     b++)
		rc = free_chain_head(c, m, b, &budget);
	return rc;
}

/* Free the map: its entries (up to budget of them, from the last buckets
 * on, unless budget is SIZE_MAX: all), and once none is left its table
 * and header, with the magic cleared first, so that a handle kept after
 * this is refused while the block is not reused. */
static int destroy(pmtx_tx *tx, pmtx_off off, size_t budget, int *left)
{
	pmtx_hmap *m;
	struct cx c;
	int rc = pmtx_hmap_open(pmtx_tx_region(tx), off, NULL, &m);
	if (rc)
		return rc;
	if (!(rc = cx_begin(&c, m->r, tx, PMTX_RT_DEFAULT))) {
		*left = 1;
		if (budget != SIZE_MAX)
			rc = destroy_step(&c, m, budget);
		if (!rc && (budget == SIZE_MAX || entries(&c, m) == 0) &&
		    !(rc = free_all(&c, m)) &&
		    !(rc = cx_put64(&c, &hdr(&c, m)->h, 0)) &&
		    !(rc = cx_free(&c, off)))
			*left = 0;
		rc = cx_end(&c, rc);
	}
	pmtx_hmap_close(m);
	return rc;
}

int pmtx_hmap_destroy_some(pmtx_tx *tx, pmtx_off off, size_t budget,
                           int *left)
{
	if (!tx || !left || !budget)
		return PMTX_E_INVAL;
	return destroy(tx, off, budget, left);
}

/* ---- prefetching ---- */

/* A plain load of the word at off, or 0 if off is not a word of the
 * region (the hints' only check: they decide nothing). */
static uint64_t hint_word(const char *base, size_t size, pmtx_off off)
{
	if (!off || off % 8 || off > size - 8)
		return 0;
	return __atomic_load_n((const uint64_t *)(base + off),
	                       __ATOMIC_RELAXED);
}

uint64_t pmtx_hmap_prefetch(pmtx_hmap *m, const void *k, size_t kn)
{
	const char *base = pmtx_ptr(m->r, m->off) - m->off;
	size_t size = pmtx_region_size(m->r);
	uint64_t h = hash_key(m, k, kn), g = hint_word(base, size,
	                                                m->off + offsetof(struct hmap_hdr, geom));
	struct geom gm = {(unsigned)(g >> HMAP_GEOM_LOG_SHIFT),
	                  g & ((UINT64_C(1) << HMAP_GEOM_LOG_SHIFT) - 1)};
	if (gm.log < m->min_log || gm.log > 62)
		return 0;
	uint64_t b = bucket_of(gm, h), first;
	pmtx_off w;
	if (b < (UINT64_C(1) << m->min_log)) {
		w = m->off + sizeof(struct hmap_hdr) + 8 * (m->ncount + b);
	} else {
		unsigned i = seg_of(m, b, &first);
		pmtx_off t = hint_word(base, size,
		                       m->off + offsetof(struct hmap_hdr, segtab));
		pmtx_off seg = i < HMAP_MAX_SEG && t ? hint_word(base, size,
		               t + offsetof(struct hmap_segtab, seg) + 8 * i) : 0;
		if (!seg)
			return 0;
		w = seg + 8 * (b - first);
	}
	if (w > size - 8)
		return 0;
	__builtin_prefetch(base + w);
	return w;
}

void pmtx_hmap_prefetch_more(pmtx_hmap *m, uint64_t token)
{
	const char *base = pmtx_ptr(m->r, m->off) - m->off;
	size_t size = pmtx_region_size(m->r);
	pmtx_off e = link_off(hint_word(base, size, token));
	if (!e || e > size - 128)
		return;
	__builtin_prefetch(base + e);
	__builtin_prefetch(base + e + 64);
}

/* ---- checking (hmap.h) ---- */

struct chk {
	char *msg;
	size_t len;
};

static int bad(struct chk *k, const char *what, uint64_t b)
{
	snprintf(k->msg, k->len, "%s (bucket %llu)", what,
	         (unsigned long long)b);
	return PMTX_E_CORRUPT;
}

static int check_bucket(struct cx *c, pmtx_hmap *m, struct geom g,
                        uint64_t b, uint64_t *n, struct chk *k)
{
	uint64_t *w = bucket_word(c, m, b);
	uint64_t all = HMAP_LINK_FILTER_MASK; /* the filters of the links
	                                       * so far, intersected */
	if (!w)
		return bad(k, "bucket word out of the table", b);
	for (uint64_t l = cx_load(c, w); l; l = cx_load(c, w)) {
		struct hmap_entry *e = entry_at(c, l);
		if (!e)
			return bad(k, "link to no entry", b);
		all &= l;
		if (tag_filter(link_tag(l)) & ~all)
			return bad(k, "a link's filter lacks the bits of an "
			           "entry after it", b);
		if (pmtx_usable_size(c->r, link_off(l)) <
		    sizeof(*e) + e->klen + e->vlen)
			return bad(k, "entry is not a block of its size", b);
		uint64_t h = hash_key(m, entry_key(e), e->klen);
		if (!same_tag(l, h) || bucket_of(g, h) != b)
			return bad(k, "entry in the wrong bucket or tag", b);
		if (++*n > (UINT64_C(1) << 40))
			return bad(k, "chain does not end", b);
		w = &e->next;
	}
	return 0;
}

int hmap_check(pmtx_hmap *m, char *msg, size_t len)
{
	struct cx c;
	struct chk k = {msg, len};
	uint64_t n = 0;
	int rc = cx_begin_read(&c, m->r, NULL);
	if (rc)
		return rc;
	struct geom g = geom_get(&c, m);
	if (g.log < m->min_log || g.split >= (UINT64_C(1) << g.log))
		return bad(&k, "geometry out of range", 0);
	for (uint64_t b = 0; !rc && b < live_buckets(g); b++)
		rc = check_bucket(&c, m, g, b, &n, &k);
	if (!rc && n != entries(&c, m))
		rc = bad(&k, "entry count differs from the counts", n);
	if (!rc && len)
		msg[0] = '\0';
	return rc;
}

uint64_t hmap_buckets(pmtx_hmap *m)
{
	struct cx c;
	return cx_begin_read(&c, m->r, NULL) ? 0
	                                     : live_buckets(geom_get(&c, m));
}

int hmap_walk(pmtx_hmap *m, int (*fn)(pmtx_off off, void *arg), void *arg)
{
	struct cx c;
	int rc = cx_begin_read(&c, m->r, NULL);
	if (rc || (rc = fn(m->off, arg)))
		return rc;
	struct geom g = geom_get(&c, m);
	uint64_t limit = entries(&c, m), seen = 0;
	pmtx_off toff = cx_load(&c, &hdr(&c, m)->segtab);
	struct hmap_segtab *t = toff ? cx_block(&c, toff, sizeof(*t),
	                                        CONT_MAGIC_HMAP_SEGTAB) : NULL;
	if ((toff && !t) || g.log < m->min_log || g.log > 62 ||
	    g.split >= (UINT64_C(1) << g.log))
		return PMTX_E_CORRUPT;
	if (t && (rc = fn(toff, arg)))
		return rc;
	for (unsigned i = 1; t && i < HMAP_MAX_SEG; i++) {
		pmtx_off s = cx_load(&c, &t->seg[i]);
		if (s && (rc = fn(s, arg)))
			return rc;
	}
	for (uint64_t b = 0; b < live_buckets(g); b++) {
		uint64_t *w = bucket_word(&c, m, b);
		if (!w)
			return PMTX_E_CORRUPT;
		for (uint64_t l = cx_load(&c, w); l;) {
			struct hmap_entry *e = entry_at(&c, l);
			if (!e || ++seen > limit)
				return PMTX_E_CORRUPT;
			if ((rc = fn(link_off(l), arg)))
				return rc;
			l = cx_load(&c, &e->next);
		}
	}
	return seen == limit ? 0 : PMTX_E_CORRUPT;
}
