/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * map.c - the ordered map (pmtx_containers.h, "Ordered map"): a B+tree
 * whose inner nodes count the entries under each child, so that rank,
 * count and seek by rank take one descent. Layout: map_layout.h (L1-L6).
 *
 * Design
 *  M1. Leaves of 47 entries whose entries never move while live: an
 *      insert writes its entry into a free slot (one line) and rewrites
 *      the leaf's head (its two lines: the order of the slots; count,
 *      used-slot bitmap and fingerprints) with one write; a delete
 *      rewrites the head only. So an insert into a leaf that has room
 *      writes back three lines of the leaf, and a delete two, whatever
 *      the position.
 *  M1a. Fingerprints. A lookup does not search the order: it compares a
 *      byte of its key's hash (key_fp) with the fingerprints of the used
 *      slots, all in the probe line, and compares keys only where they
 *      match. A present key costs its entry's line, an absent one none
 *      but for a false match (1 in 256 a used slot: about one lookup in
 *      eight at the 32 entries a leaf holds after random inserts). The binary search through the order array (a load of
 *      a key per step, about four entry lines) is left to what needs a
 *      position: an insert of a new key, ranks and seeks. The price: an
 *      insert or delete writes the order line besides the probe line
 *      (one more line than a head of one line, which had no room for
 *      fingerprints), and a slot fewer than 48 (next and prev take the
 *      room: the leaf stays in heap class 896).
 *  M2. Subtree counts. An insert or a delete adds or takes one from the
 *      count word of its child in every inner node of its path: one line
 *      per inner level. The header holds no entry count: the length is
 *      the sum of the root's counts (at most 32 words, or the root
 *      leaf's count), which spares every insert and delete one more
 *      written line (and, under undo, one more logged range and its
 *      barrier).
 *  M3. Splits. A full leaf splits in two: the upper half is copied into
 *      a fresh leaf (plain stores, then cx_flush: cont.h C2), the old
 *      leaf keeps the lower half in place (its head rewritten, the new
 *      entry written into a slot the upper half left if it falls there),
 *      and the parent gets the new child, its separator (the right
 *      leaf's first key, copied into an item of the node's own for byte
 *      keys: L6) and both counts; a full parent splits the same way, and
 *      a root that splits grows the tree by one level. Halves, not a
 *      leaf kept full on an append at the right end: every leaf but the
 *      root then holds at least a quarter (L5), which bounds the height
 *      and lets the checker hold every tree to it.
 *  M4. Deletes. A leaf other than the root that falls under a quarter
 *      (MAP_LEAF_MIN) is merged with a neighbour under the same parent
 *      when the two hold at most three quarters (MAP_LEAF_MERGE: the
 *      merged leaf has room left, so that an insert right after does not
 *      split it again), else the two share their entries evenly; inner
 *      nodes likewise (MAP_INNER_MIN, MAP_INNER_MERGE), and a root left
 *      with one child is replaced by it. An empty map keeps an empty
 *      root leaf: the header's root, first and last are never 0.
 *  M5. Node rewrites (splits, merges, sharing) work on a DRAM image of
 *      each node, read as the transaction sees it, and write back only
 *      the words that differ (node_store), runs closer than a line
 *      joined into one write.
 *  M6. Keys and values. U64 and I64 keys are kept in the entry; BYTES and
 *      SCORE keys in an immutable item (L6) that also holds the value
 *      when values are bytes. Values of U64 and I64 keys are the entry's
 *      second word (VAL_U64) or an item of their own (0: empty). A put
 *      that replaces a byte value allocates a new item and frees the old
 *      one, in the same transaction, so a view stays valid until the map
 *      is next written, and the bytes a view points to are never written
 *      (a fresh item is filled with plain stores: under redo a
 *      transaction's own writes are not in place until commit, so a view
 *      of them would read stale bytes). The cost: under redo, a
 *      transaction that filled a fresh block pays a barrier before its
 *      commit record (redo.c D10).
 *  M7. Reads (cont.h C1): every field a transaction may write (the
 *      header's words, a leaf's head, next and prev, its entries, an
 *      inner node's words) is read with cx_load/cx_read; item bytes,
 *      which are never written after they are linked, with plain loads.
 *      Every node offset is checked with cx_block before it is followed
 *      (C3), every descent is bounded by the header's height and every
 *      walk along the leaves by the leaves' counts, so a corrupt map
 *      returns PMTX_E_CORRUPT and never makes a wild access.
 *  M8. Validation first (C4): key and value lengths, key kinds (8 bytes
 *      for U64 and I64, at least 8 for SCORE, no NaN), flags and a bulk
 *      load's whole input are checked before the first write.
 *  M9. Lookups make no allocation and, outside a transaction, only plain
 *      loads. A descent prefetches each child's lines that its search
 *      reads (an inner node's magic word and separators, a leaf's probe
 *      line, and its order line for an update) as soon as the child's
 *      offset is known, and a binary search in a leaf its entry lines, so
 *      that their misses overlap instead of coming one after another (a
 *      search's next probe depends on the line before). Separators of
 *      U64 and I64 maps are searched without branches on the keys (a
 *      mispredicted branch per step cost more than the step).
 */
#include <math.h>
#include <stdarg.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cont.h"
#include "map.h"
#include "map_layout.h"

#define LEAF_ALL ((1ull << MAP_LEAF_SLOTS) - 1)
#define INNER_MAGIC_OFF offsetof(struct map_inner, magic)
#define MAP_KIND_MASK 0xffu
#define STORE_GAP 8 /* words: runs closer than a line are written as one */

struct pmtx_map {
	pmtx_region *r;
	pmtx_off off;
	pmtx_runtime rt;
	unsigned kind;  /* PMTX_MAP_BYTES .. PMTX_MAP_SCORE */
	int val_u64;    /* PMTX_MAP_VAL_U64 */
};

/* A key in DRAM: the caller's, or one read from the map. */
struct mkey {
	uint64_t w;         /* U64, I64 */
	double score;       /* SCORE */
	const uint8_t *p;   /* BYTES: the key; SCORE: the member */
	size_t n;
};

/* One operation on one map. */
struct mop {
	struct cx c;
	pmtx_map *m;
	struct map_hdr *h;
	int err; /* PMTX_E_CORRUPT met inside a comparison */
};

/* A path from the root to a leaf. */
struct path {
	unsigned depth;                        /* inner levels */
	struct map_inner *in[MAP_MAX_HEIGHT];
	unsigned idx[MAP_MAX_HEIGHT];          /* child taken in in[d] */
	struct map_leaf *leaf;
	uint64_t before;                       /* entries left of the leaf */
};

/* A split under an inner node, for its parent to take in. */
struct carry {
	int split;
	uint64_t sep;     /* the right node's separator */
	uint64_t right;   /* the new node */
	uint64_t lcnt, rcnt;
};

static int corrupt(const char *what)
{
	pmtx__set_errmsg("ordered map: %s", what);
	return PMTX_E_CORRUPT;
}

static int item_keys(const pmtx_map *m)
{
	return m->kind == PMTX_MAP_BYTES || m->kind == PMTX_MAP_SCORE;
}

/* ---- keys ---- */

static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b,
                     size_t bn)
{
	size_t n = MIN(an, bn);
	int c = n ? memcmp(a, b, n) : 0;
	if (c)
		return c < 0 ? -1 : 1;
	return (an > bn) - (an < bn);
}

/* Parse the caller's key (M8). */
static int key_parse(const pmtx_map *m, const void *k, size_t kn,
                     struct mkey *out)
{
	if (!cont_len_ok(kn))
		return PMTX_E_TOO_BIG;
	if (!k && kn)
		return PMTX_E_INVAL;
	memset(out, 0, sizeof(*out));
	out->p = k ? k : (const void *)"";
	out->n = kn;
	switch (m->kind) {
	case PMTX_MAP_U64:
	case PMTX_MAP_I64:
		if (kn != 8)
			return PMTX_E_INVAL;
		memcpy(&out->w, k, 8);
		return 0;
	case PMTX_MAP_SCORE:
		if (kn < 8)
			return PMTX_E_INVAL;
		memcpy(&out->score, k, 8);
		if (isnan(out->score))
			return PMTX_E_INVAL;
		out->p += 8;
		out->n -= 8;
		return 0;
	default:
		return 0;
	}
}

/* A value the caller gives to a put or a load (M8). */
static int val_check(const pmtx_map *m, const void *v, size_t vn)
{
	if (!cont_len_ok(vn))
		return PMTX_E_TOO_BIG;
	if ((!v && vn) || (m->val_u64 && vn != 8))
		return PMTX_E_INVAL;
	return 0;
}

/* The item at off, checked to lie in the region whole (C3). */
static const struct map_item *item_at(struct mop *o, uint64_t off)
{
	const struct map_item *it = cx_block(&o->c, off, sizeof(*it), 0);
	if (it && cx_block(&o->c, off,
	                   sizeof(*it) + (size_t)it->klen + it->vlen, 0))
		return it;
	o->err = corrupt("an item lies outside the region");
	return NULL;
}

/* The key a stored key word stands for. */
static int key_of(struct mop *o, uint64_t w, struct mkey *k)
{
	memset(k, 0, sizeof(*k));
	if (!item_keys(o->m)) {
		k->w = w;
		return 0;
	}
	const struct map_item *it = item_at(o, w);
	if (!it)
		return PMTX_E_CORRUPT;
	k->p = it->b;
	k->n = it->klen;
	if (o->m->kind == PMTX_MAP_SCORE) {
		if (it->klen < 8)
			return o->err = corrupt("a score key of under 8 bytes");
		memcpy(&k->score, it->b, 8);
		k->p += 8;
		k->n -= 8;
	}
	return 0;
}

static int mkey_cmp(unsigned kind, const struct mkey *a, const struct mkey *b)
{
	switch (kind) {
	case PMTX_MAP_U64:
		return (a->w > b->w) - (a->w < b->w);
	case PMTX_MAP_I64:
		return ((int64_t)a->w > (int64_t)b->w) -
		       ((int64_t)a->w < (int64_t)b->w);
	case PMTX_MAP_SCORE:
		if (a->score < b->score)
			return -1;
		if (a->score > b->score)
			return 1;
		/* equal scores (-0.0 == 0.0): by the member */
		__attribute__((fallthrough));
	default:
		return bytes_cmp(a->p, a->n, b->p, b->n);
	}
}

/* k against the stored key word w: <0, 0, >0. */
static inline int key_cmp(struct mop *o, const struct mkey *k, uint64_t w)
{
	if (o->m->kind == PMTX_MAP_U64)
		return (k->w > w) - (k->w < w);
	if (o->m->kind == PMTX_MAP_I64)
		return ((int64_t)k->w > (int64_t)w) -
		       ((int64_t)k->w < (int64_t)w);
	struct mkey s;
	if (key_of(o, w, &s))
		return 0;
	return mkey_cmp(o->m->kind, k, &s);
}

/* ---- nodes ---- */

static struct map_leaf *leaf_at(struct mop *o, uint64_t off)
{
	return cx_block_at(&o->c, off, sizeof(struct map_leaf),
	                   CONT_MAGIC_MAP_LEAF, MAP_LEAF_PROBE_OFF);
}

static struct map_inner *inner_at(struct mop *o, uint64_t off)
{
	return cx_block_at(&o->c, off, sizeof(struct map_inner),
	                   CONT_MAGIC_MAP_INNER, INNER_MAGIC_OFF);
}

/* The fingerprint of a key (L2, M1a): a byte of its hash. Keys that
 * compare equal have one fingerprint: a SCORE key's -0.0 hashes as 0.0.
 * On media: never changed without a format change. */
static uint8_t key_fp(const pmtx_map *m, const struct mkey *k)
{
	uint64_t h;
	if (m->kind == PMTX_MAP_U64 || m->kind == PMTX_MAP_I64)
		return (uint8_t)((k->w * 0x9e3779b97f4a7c15ull) >> 56);
	if (m->kind == PMTX_MAP_SCORE) {
		double s = k->score == 0 ? 0.0 : k->score;
		memcpy(&h, &s, 8);
		h = pmtx_checksum(k->p, k->n, h);
	} else {
		h = pmtx_checksum(k->p, k->n, 0);
	}
	return (uint8_t)(h >> 56);
}

/* The used slots whose fingerprint is f. */
static inline uint64_t fp_match(const struct map_leaf_head *hd, uint8_t f)
{
	uint64_t m = 0;
#if defined(__SSE2__)
	const __m128i v = _mm_set1_epi8((char)f);
	for (unsigned i = 0; i < MAP_LEAF_SLOTS; i += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(hd->fp + i));
		m |= (uint64_t)(uint16_t)_mm_movemask_epi8(
		             _mm_cmpeq_epi8(x, v))
		     << i;
	}
#else
	for (unsigned i = 0; i < MAP_LEAF_SLOTS; i++)
		m |= (uint64_t)(hd->fp[i] == f) << i;
#endif
	return m & hd->used & LEAF_ALL;
}
_Static_assert(MAP_LEAF_SLOTS <= 48 &&
               offsetof(struct map_leaf_head, fp) + 48 <=
                       sizeof(struct map_leaf_head),
               "fp_match reads 48 bytes of fingerprints");

/* Is every byte of order[0, count) a slot (< MAP_LEAF_SLOTS)? A word at a
 * time: b + 81 has its top bit set for 47 <= b < 128, b itself for b >=
 * 128 (a carry out of a byte only ever follows a byte already found). */
static int order_ok(const uint8_t *order, unsigned count)
{
	uint64_t bad = 0;
	_Static_assert(MAP_LEAF_SLOTS == 47, "order_ok's constant is 128 - 47");
	for (unsigned i = 0; i < count; i += 8) {
		uint64_t w;
		memcpy(&w, order + i, 8);
		if (count - i < 8)
			w &= (1ull << (8 * (count - i))) - 1;
		bad |= ((w + 0x5151515151515151ull) | w) & 0x8080808080808080ull;
	}
	return !bad;
}
_Static_assert(sizeof(((struct map_leaf_head *)0)->order) + 1 >= 48,
               "order_ok reads whole words of the order line");

/* A leaf's head (both lines) as the transaction sees it, its bounds
 * checked. */
static int leaf_head(struct mop *o, const struct map_leaf *lf,
                     struct map_leaf_head *hd)
{
	cx_read(&o->c, hd, &lf->hd, sizeof(*hd));
	if (hd->count > MAP_LEAF_SLOTS)
		return corrupt("a leaf's count is over its slots");
	return order_ok(hd->order, hd->count)
	               ? 0
	               : corrupt("a leaf's order names no slot");
}

/* A leaf's probe line alone (a lookup's: M1a), into hd. */
static int leaf_probe(struct mop *o, const struct map_leaf *lf,
                      struct map_leaf_head *hd)
{
	cx_read(&o->c, &hd->magic, &lf->hd.magic, MAP_LEAF_PROBE_BYTES);
	if (hd->count > MAP_LEAF_SLOTS)
		return corrupt("a leaf's count is over its slots");
	return 0;
}

/* The slot of the leaf that holds key k (fingerprint f), or -1. */
static int leaf_find(struct mop *o, const struct map_leaf *lf,
                     const struct map_leaf_head *hd, const struct mkey *k,
                     uint8_t f)
{
	for (uint64_t m = fp_match(hd, f); m; m &= m - 1) {
		unsigned s = (unsigned)__builtin_ctzll(m);
		if (!key_cmp(o, k, cx_load(&o->c, &lf->e[s].key)) && !o->err)
			return (int)s;
	}
	return -1;
}

static inline uint64_t leaf_key(struct mop *o, const struct map_leaf *lf,
                                const struct map_leaf_head *hd, unsigned i)
{
	return cx_load(&o->c, &lf->e[hd->order[i]].key);
}

/* The children of an inner node, checked (1..MAP_FANOUT). */
static int inner_n(struct mop *o, const struct map_inner *in, unsigned *n)
{
	uint32_t v;
	cx_read(&o->c, &v, &in->n, sizeof(v));
	if (v < 1 || v > MAP_FANOUT)
		return corrupt("an inner node's child count is out of range");
	*n = v;
	return 0;
}

/* The inner node at off and its children; what: the corruption to
 * report if off is no inner node. */
static inline int inner_get(struct mop *o, uint64_t off, const char *what,
                            struct map_inner **in, unsigned *n)
{
	*in = inner_at(o, off);
	return *in ? inner_n(o, *in, n) : corrupt(what);
}

/* The leaf at off and its head; what: as for inner_get. */
static int leaf_get(struct mop *o, uint64_t off, const char *what,
                    struct map_leaf **lf, struct map_leaf_head *hd)
{
	*lf = leaf_at(o, off);
	return *lf ? leaf_head(o, *lf, hd) : corrupt(what);
}

/* Position in the leaf's order of the first key >= k (upper: > k). */
static unsigned leaf_search(struct mop *o, const struct map_leaf *lf,
                            const struct map_leaf_head *hd,
                            const struct mkey *k, int upper)
{
	unsigned lo = 0, hi = hd->count;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		int c = key_cmp(o, k, leaf_key(o, lf, hd, mid));
		if (c > 0 || (upper && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The number of words of a[0, n) <= k, a sorted (signed: as int64_t),
 * with no branch on the words (M9). */
static unsigned count_le(const uint64_t *a, unsigned n, uint64_t k,
                         int sgn)
{
	const uint64_t *b = a;
	uint64_t flip = sgn ? 1ull << 63 : 0;
	if (!n)
		return 0;
	k ^= flip;
	while (n > 1) {
		size_t half = n / 2;
		/* a mask, not a conditional: compilers branch on those */
		b += half & -(size_t)((b[half - 1] ^ flip) <= k);
		n -= (unsigned)half;
	}
	return (unsigned)(b - a) + ((*b ^ flip) <= k);
}

/* The child of an inner node of n children under which k lies: the
 * number of separators <= k (L3). */
static unsigned inner_search(struct mop *o, const struct map_inner *in,
                             unsigned n, const struct mkey *k)
{
	unsigned kind = o->m->kind;
	if (cx_direct(&o->c) && (kind == PMTX_MAP_U64 || kind == PMTX_MAP_I64))
		return count_le(in->key, n - 1, k->w, kind == PMTX_MAP_I64);
	unsigned lo = 0, hi = n - 1;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (key_cmp(o, k, cx_load(&o->c, &in->key[mid])) >= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The header's root and height, checked (L1). */
static int hdr_root(struct mop *o, uint64_t *root, unsigned *height)
{
	uint32_t h;
	*root = cx_load(&o->c, &o->h->root);
	cx_read(&o->c, &h, &o->h->height, sizeof(h));
	if (h < 1 || h > MAP_MAX_HEIGHT)
		return corrupt("the height is out of range");
	*height = h;
	return 0;
}

static uint64_t sum_counts(struct mop *o, const struct map_inner *in,
                           unsigned from, unsigned to)
{
	uint64_t s = 0;
	for (unsigned i = from; i < to; i++)
		s += cx_load(&o->c, &in->cnt[i]);
	return s;
}

/* What a descent prefetches of the leaf it reaches (M9). */
enum { PF_INNER, PF_PROBE, PF_HEAD };

/* Ask for the lines of the node at off that a search reads, all at once
 * rather than one miss after another: an inner node's magic word and
 * separators; a leaf's probe line (PF_PROBE), and its order line too
 * (PF_HEAD). A prefetch never faults, so off need not be checked yet
 * (integer arithmetic: a wild off makes no pointer overflow). */
static inline void node_prefetch(const struct mop *o, uint64_t off, int what)
{
	const char *p = (const char *)((uintptr_t)o->c.base + off);
	if (what != PF_INNER) {
		__builtin_prefetch(p + MAP_LEAF_PROBE_OFF);
		if (what == PF_HEAD)
			__builtin_prefetch(p);
		return;
	}
	for (size_t i = INNER_MAGIC_OFF; i < offsetof(struct map_inner, child);
	     i += 64)
		__builtin_prefetch(p + i);
}

/* A leaf's entry lines, once its head is known: a binary search reads
 * about half of them, each after the one before. */
static inline void entries_prefetch(const struct map_leaf *lf)
{
	for (unsigned i = 0; i < MAP_LEAF_SLOTS; i += 4)
		__builtin_prefetch(&lf->e[i]);
}

/* Walk from the root to the leaf where k is or would go; with rank, sum
 * the entries left of it into p->before. pf: PF_PROBE or PF_HEAD, what
 * the caller reads of the leaf. */
static int descend(struct mop *o, const struct mkey *k, int rank, int pf,
                   struct path *p)
{
	uint64_t off;
	unsigned height, n;
	int rc = hdr_root(o, &off, &height);
	if (rc)
		return rc;
	p->depth = height - 1;
	p->before = 0;
	for (unsigned d = 0; d < p->depth; d++) {
		struct map_inner *in;
		rc = inner_get(o, off, "an inner node is not one", &in, &n);
		if (rc)
			return rc;
		unsigned i = inner_search(o, in, n, k);
		if (o->err)
			return o->err;
		if (rank)
			p->before += sum_counts(o, in, 0, i);
		p->in[d] = in;
		p->idx[d] = i;
		off = cx_load(&o->c, &in->child[i]);
		node_prefetch(o, off, d + 1 == p->depth ? pf : PF_INNER);
	}
	p->leaf = leaf_at(o, off);
	return p->leaf ? 0 : corrupt("a leaf is not one");
}

/* The position in the leaf's order of slot s, which is used. */
static int order_pos(const struct map_leaf_head *hd, unsigned s,
                     unsigned *pos)
{
	const uint8_t *q = memchr(hd->order, (int)s, hd->count);
	if (!q)
		return corrupt("a used slot is missing from its leaf's order");
	*pos = (unsigned)(q - hd->order);
	return 0;
}

/* Where k (fingerprint f) is or would go, for an update: its path, leaf
 * head and position; *eq if the key there is k. The position of a key
 * that is not there is searched only if where (it is where an insert
 * goes): a delete of an absent key reads no entry (M1a). */
static int locate(struct mop *o, const struct mkey *k, uint8_t f, int where,
                  struct path *p, struct map_leaf_head *hd, unsigned *pos,
                  int *eq)
{
	int rc = descend(o, k, 0, PF_HEAD, p);
	if (!rc)
		rc = leaf_head(o, p->leaf, hd);
	if (rc)
		return rc;
	int s = leaf_find(o, p->leaf, hd, k, f);
	*eq = s >= 0;
	*pos = 0;
	if (o->err)
		return o->err;
	if (*eq)
		return order_pos(hd, (unsigned)s, pos);
	if (!where)
		return 0;
	entries_prefetch(p->leaf);
	*pos = leaf_search(o, p->leaf, hd, k, 0);
	return o->err;
}

/* The map's length: the root's counts summed (M2). */
static int map_len(struct mop *o, uint64_t *len)
{
	uint64_t off;
	unsigned height, n;
	int rc = hdr_root(o, &off, &height);
	if (rc)
		return rc;
	if (height == 1) {
		struct map_leaf *lf;
		struct map_leaf_head hd;
		rc = leaf_get(o, off, "the root is not a leaf", &lf, &hd);
		if (!rc)
			*len = hd.count;
		return rc;
	}
	struct map_inner *in;
	rc = inner_get(o, off, "the root is not an inner node", &in, &n);
	if (!rc)
		*len = sum_counts(o, in, 0, n);
	return rc;
}

/* ---- operations: begin and end ---- */

/* Begin an operation. Inlined into each operation, as cx_begin is, so
 * that PMTX_RT_AUTO sees each of them as a call site of its own. */
static inline __attribute__((always_inline)) int
op_begin(struct mop *o, pmtx_map *m, pmtx_tx *tx, int write)
{
	o->m = m;
	o->err = 0;
	int rc = write ? cx_begin(&o->c, m->r, tx, m->rt)
	               : cx_begin_read(&o->c, m->r, tx);
	if (rc)
		return rc;
	o->h = (struct map_hdr *)(o->c.base + m->off);
	if (o->h->h.magic != CONT_MAGIC_MAP) { /* immutable: C3 */
		pmtx__set_errmsg("offset %llu is no longer a map",
		                 (unsigned long long)m->off);
		return cx_end(&o->c, PMTX_E_NOT_CONTAINER);
	}
	return 0;
}

static int op_end(struct mop *o, int rc)
{
	return cx_end(&o->c, rc);
}

/* ---- writing: fresh blocks and node images ---- */

/* A fresh item holding k then v (C2: plain stores, then a flush). */
static int item_new(struct mop *o, const void *k, size_t kn, const void *v,
                    size_t vn, uint64_t *off)
{
	struct map_item *it;
	int rc = cx_alloc(&o->c, sizeof(*it) + kn + vn, 0, off, (void **)&it);
	if (rc)
		return rc;
	it->klen = (uint32_t)kn;
	it->vlen = (uint32_t)vn;
	if (kn)
		memcpy(it->b, k, kn);
	if (vn)
		memcpy(it->b + kn, v, vn);
	cx_flush_site(&o->c, it, sizeof(*it) + kn + vn, MUT_MAP_ITEM_FLUSH);
	return 0;
}

/* A separator for the stored key word w: w itself, or a copy of its
 * item's key for the inner node to own (L6). */
static int sep_make(struct mop *o, uint64_t w, uint64_t *sep)
{
	if (!item_keys(o->m)) {
		*sep = w;
		return 0;
	}
	const struct map_item *it = item_at(o, w);
	if (!it)
		return PMTX_E_CORRUPT;
	return item_new(o, it->b, it->klen, NULL, 0, sep);
}

static int sep_free(struct mop *o, uint64_t sep)
{
	return item_keys(o->m) ? cx_free(&o->c, sep) : 0;
}

/* Free the blocks an entry owns. */
static int entry_free(struct mop *o, const struct map_entry *e)
{
	if (item_keys(o->m))
		return cx_free(&o->c, e->key);
	if (!o->m->val_u64 && e->val)
		return cx_free(&o->c, e->val);
	return 0;
}

/* Write back the words of a node image that differ from the old image
 * (M5). */
static int node_store(struct mop *o, void *dst, const void *oldp,
                      const void *newp, size_t size)
{
	const char *a = oldp, *b = newp;
	size_t nw = size / 8, i = 0;
	while (i < nw) {
		if (!memcmp(a + i * 8, b + i * 8, 8)) {
			i++;
			continue;
		}
		size_t last = i;
		for (size_t j = i + 1; j < nw && j - last <= STORE_GAP; j++)
			if (memcmp(a + j * 8, b + j * 8, 8))
				last = j;
		int rc = cx_write(&o->c, (char *)dst + i * 8, b + i * 8,
		                  (last - i + 1) * 8);
		if (rc)
			return rc;
		i = last + 1;
	}
	return 0;
}

/* A fresh node: img copied into a new block of size bytes, flushed (C2). */
static int node_new(struct mop *o, const void *img, size_t size,
                    uint64_t *off)
{
	void *p;
	int rc = cx_alloc(&o->c, size, 0, off, &p);
	if (rc)
		return rc;
	memcpy(p, img, size);
	cx_flush_site(&o->c, p, size, MUT_MAP_NODE_FLUSH);
	return 0;
}

/* ---- leaf images ---- */

/* An entry being placed: where it lives now (home 0 or 1: one of the
 * two leaves of an image operation; -1: nowhere yet) and its slot. */
struct lent {
	struct map_entry e;
	int home;
	unsigned slot;
	uint8_t fp;
};

/* Append the entries of a leaf image to l (home h). */
static unsigned lent_load(struct lent *l, unsigned n,
                          const struct map_leaf *img, int h)
{
	for (unsigned i = 0; i < img->hd.count; i++, n++) {
		l[n].slot = img->hd.order[i];
		l[n].e = img->e[l[n].slot];
		l[n].fp = img->hd.fp[l[n].slot];
		l[n].home = h;
	}
	return n;
}

/* Make the image of leaf `me` hold l[from, to) in order: entries already
 * at home there keep their slots (M1), the others take free ones. */
static void leaf_assign(struct map_leaf *img, int me, const struct lent *l,
                        unsigned from, unsigned to)
{
	uint64_t used = 0;
	for (unsigned i = from; i < to; i++)
		if (l[i].home == me)
			used |= 1ull << l[i].slot;
	memset(img->hd.order, 0, sizeof(img->hd.order));
	for (unsigned i = from; i < to; i++) {
		unsigned s = l[i].slot;
		if (l[i].home != me) {
			s = (unsigned)__builtin_ctzll(~used & LEAF_ALL);
			used |= 1ull << s;
			img->e[s] = l[i].e;
			img->hd.fp[s] = l[i].fp;
		}
		img->hd.order[i - from] = (uint8_t)s;
	}
	img->hd.count = (uint8_t)(to - from);
	img->hd.used = used;
}

/* A leaf image, read as the transaction sees it, checked. */
static int leaf_image(struct mop *o, const struct map_leaf *lf,
                      struct map_leaf *img)
{
	cx_read(&o->c, img, lf, sizeof(*img));
	int rc = leaf_head(o, lf, &img->hd);
	if (!rc && __builtin_popcountll(img->hd.used & LEAF_ALL) !=
	                   img->hd.count)
		rc = corrupt("a leaf's bitmap disagrees with its count");
	return rc;
}

/* ---- inner images ---- */

/* Up to two inner nodes' children in a row: key[i] lies between child i
 * and child i + 1. */
struct wide {
	unsigned n;
	uint64_t key[2 * MAP_FANOUT];
	uint64_t child[2 * MAP_FANOUT];
	uint64_t cnt[2 * MAP_FANOUT];
};

static int inner_image(struct mop *o, const struct map_inner *in,
                       struct map_inner *img)
{
	cx_read(&o->c, img, in, sizeof(*img));
	if (img->n < 1 || img->n > MAP_FANOUT)
		return corrupt("an inner node's child count is out of range");
	return 0;
}

/* Append an inner image's children to w, after separator sep if w is
 * not empty. */
static void wide_add(struct wide *w, const struct map_inner *img,
                     uint64_t sep)
{
	if (w->n)
		w->key[w->n - 1] = sep;
	for (unsigned i = 0; i < img->n; i++) {
		w->child[w->n + i] = img->child[i];
		w->cnt[w->n + i] = img->cnt[i];
		if (i + 1 < img->n)
			w->key[w->n + i] = img->key[i];
	}
	w->n += img->n;
}

/* Make img hold w's children [from, to); their entries. */
static uint64_t inner_assign(struct map_inner *img, const struct wide *w,
                             unsigned from, unsigned to)
{
	uint64_t s = 0;
	memset(img->key, 0, sizeof(img->key));
	memset(img->child, 0, sizeof(img->child));
	memset(img->cnt, 0, sizeof(img->cnt));
	img->n = to - from;
	for (unsigned i = from; i < to; i++) {
		img->child[i - from] = w->child[i];
		img->cnt[i - from] = w->cnt[i];
		if (i + 1 < to)
			img->key[i - from] = w->key[i];
		s += w->cnt[i];
	}
	return s;
}

/* Remove child b (and the separator before it) from an inner image;
 * the entries of child b - 1 become cnt. */
static void inner_remove(struct map_inner *img, unsigned b, uint64_t cnt)
{
	unsigned n = img->n;
	img->cnt[b - 1] = cnt;
	memmove(&img->child[b], &img->child[b + 1], (n - b - 1) * 8);
	memmove(&img->cnt[b], &img->cnt[b + 1], (n - b - 1) * 8);
	memmove(&img->key[b - 1], &img->key[b], (n - b - 1) * 8);
	img->child[n - 1] = img->cnt[n - 1] = 0;
	img->key[n - 2] = 0;
	img->n = n - 1;
}

/* ---- insert ---- */

/* Put entry ne (fingerprint f) at position pos of a leaf that has room
 * (M1). */
static int leaf_insert(struct mop *o, struct map_leaf *lf,
                       const struct map_leaf_head *hd, unsigned pos,
                       const struct map_entry *ne, uint8_t f)
{
	uint64_t free_slots = ~hd->used & LEAF_ALL;
	if (!free_slots)
		return corrupt("a leaf's bitmap has no free slot");
	unsigned s = (unsigned)__builtin_ctzll(free_slots);
	int rc = cx_write(&o->c, &lf->e[s], ne, sizeof(*ne));
	if (rc)
		return rc;
	struct map_leaf_head nh = *hd;
	memmove(&nh.order[pos + 1], &nh.order[pos], hd->count - pos);
	nh.order[pos] = (uint8_t)s;
	nh.count++;
	nh.used |= 1ull << s;
	nh.fp[s] = f;
	return cx_write(&o->c, &lf->hd, &nh, sizeof(nh));
}

/* Relink the leaf after old (old's next was nx) to point back at lf:
 * its prev, or the header's last. */
static int link_back(struct mop *o, uint64_t nx, uint64_t lf)
{
	if (!nx)
		return cx_put64(&o->c, &o->h->last, lf);
	struct map_leaf *n = leaf_at(o, nx);
	if (!n)
		return corrupt("a leaf's next is not a leaf");
	return cx_put64(&o->c, &n->prev, lf);
}

/* Split a full leaf, ne (fingerprint f) going in at pos (M3); *cy for
 * the parent. */
static int leaf_split(struct mop *o, struct map_leaf *lf, unsigned pos,
                      const struct map_entry *ne, uint8_t f,
                      struct carry *cy)
{
	struct map_leaf old, img, right;
	struct lent l[MAP_LEAF_SLOTS + 1];
	int rc = leaf_image(o, lf, &old);
	if (rc)
		return rc;
	unsigned n = lent_load(l, 0, &old, 0);
	memmove(&l[pos + 1], &l[pos], (n - pos) * sizeof(l[0]));
	l[pos] = (struct lent){ .e = *ne, .home = -1, .fp = f };
	n++;
	unsigned half = (n + 1) / 2;
	img = old;
	leaf_assign(&img, 0, l, 0, half);
	memset(&right, 0, sizeof(right));
	right.hd.magic = CONT_MAGIC_MAP_LEAF;
	right.prev = cx_off(&o->c, lf);
	right.next = old.next;
	leaf_assign(&right, 1, l, half, n);
	if ((rc = sep_make(o, l[half].e.key, &cy->sep)) ||
	    (rc = node_new(o, &right, sizeof(right), &cy->right)))
		return rc;
	img.next = cy->right;
	if ((rc = node_store(o, lf, &old, &img, sizeof(img))) ||
	    (rc = link_back(o, old.next, cy->right)))
		return rc;
	cy->split = 1;
	cy->lcnt = half;
	cy->rcnt = n - half;
	return 0;
}

/* Take a split of child i into an inner node: the node splits in turn
 * if it overflows, else *cy is done. */
static int inner_insert(struct mop *o, struct map_inner *in, unsigned i,
                        struct carry *cy)
{
	struct map_inner old, img;
	struct wide w = { 0 };
	int rc = inner_image(o, in, &old);
	if (rc)
		return rc;
	if (i >= old.n)
		return corrupt("a path leaves its inner node");
	img = old;
	img.cnt[i] = cy->lcnt;
	wide_add(&w, &img, 0);
	unsigned n = w.n;
	memmove(&w.child[i + 2], &w.child[i + 1], (n - i - 1) * 8);
	memmove(&w.cnt[i + 2], &w.cnt[i + 1], (n - i - 1) * 8);
	memmove(&w.key[i + 1], &w.key[i], (n - i - 1) * 8);
	w.key[i] = cy->sep;
	w.child[i + 1] = cy->right;
	w.cnt[i + 1] = cy->rcnt;
	w.n = ++n;
	if (n <= MAP_FANOUT) {
		inner_assign(&img, &w, 0, n);
		cy->split = 0;
		return node_store(o, in, &old, &img, sizeof(img));
	}
	unsigned half = (n + 1) / 2;
	struct map_inner right = { .magic = CONT_MAGIC_MAP_INNER };
	cy->lcnt = inner_assign(&img, &w, 0, half);
	cy->rcnt = inner_assign(&right, &w, half, n);
	cy->sep = w.key[half - 1]; /* moves up: the parent owns it now */
	if ((rc = node_new(o, &right, sizeof(right), &cy->right)))
		return rc;
	return node_store(o, in, &old, &img, sizeof(img));
}

static int hdr_set_height(struct mop *o, unsigned height)
{
	uint32_t h = height;
	return cx_write(&o->c, &o->h->height, &h, sizeof(h));
}

/* The root split: a new root above the two halves. */
static int root_grow(struct mop *o, const struct carry *cy)
{
	uint64_t root, off;
	unsigned height;
	int rc = hdr_root(o, &root, &height);
	if (rc)
		return rc;
	if (height == MAP_MAX_HEIGHT)
		return corrupt("the tree is at its greatest height");
	struct map_inner img = { .magic = CONT_MAGIC_MAP_INNER, .n = 2 };
	img.key[0] = cy->sep;
	img.child[0] = root;
	img.child[1] = cy->right;
	img.cnt[0] = cy->lcnt;
	img.cnt[1] = cy->rcnt;
	if ((rc = node_new(o, &img, sizeof(img), &off)) ||
	    (rc = cx_put64(&o->c, &o->h->root, off)))
		return rc;
	return hdr_set_height(o, height + 1);
}

/* Add delta to the count of the path's child at every level from
 * depth down (towards the root). */
static int path_count(struct mop *o, const struct path *p, unsigned depth,
                      int64_t delta)
{
	for (unsigned d = depth; d-- > 0;) {
		uint64_t *c = &p->in[d]->cnt[p->idx[d]];
		uint64_t v = cx_load(&o->c, c);
		if (delta < 0 && v == 0)
			return corrupt("a subtree count is below its entries");
		int rc = cx_put64(&o->c, c, v + (uint64_t)delta);
		if (rc)
			return rc;
	}
	return 0;
}

/* Insert ne at pos of the path's leaf, then fix the counts and take in
 * the splits up the path (M2, M3). */
static int insert(struct mop *o, struct path *p,
                  const struct map_leaf_head *hd, unsigned pos,
                  const struct map_entry *ne, uint8_t f)
{
	struct carry cy = { 0 };
	int rc;
	if (hd->count < MAP_LEAF_SLOTS)
		rc = leaf_insert(o, p->leaf, hd, pos, ne, f);
	else
		rc = leaf_split(o, p->leaf, pos, ne, f, &cy);
	unsigned d = p->depth;
	for (; !rc && cy.split && d > 0; d--)
		rc = inner_insert(o, p->in[d - 1], p->idx[d - 1], &cy);
	if (rc)
		return rc;
	if (cy.split)
		return root_grow(o, &cy);
	return path_count(o, p, d, 1);
}

/* The words of a new entry for key k and value v: blocks allocated for
 * what is not kept in the leaf (M6). */
static int entry_make(struct mop *o, const struct mkey *key, const void *k,
                      size_t kn, const void *v, size_t vn,
                      struct map_entry *e)
{
	const pmtx_map *m = o->m;
	e->key = key->w;
	e->val = 0;
	if (m->val_u64)
		memcpy(&e->val, v, 8);
	if (item_keys(m))
		return item_new(o, k, kn, m->val_u64 ? NULL : v,
		                m->val_u64 ? 0 : vn, &e->key);
	if (!m->val_u64 && vn)
		return item_new(o, NULL, 0, v, vn, &e->val);
	return 0;
}

/* Give the entry in slot s of lf the value v (M6: a new item, the old
 * one freed; a stored key keeps its bytes). */
static int entry_replace(struct mop *o, struct map_leaf *lf, unsigned s,
                         const void *v, size_t vn)
{
	struct map_entry *e = &lf->e[s];
	uint64_t w, old;
	int rc;
	if (o->m->val_u64) {
		memcpy(&w, v, 8);
		return cx_put64(&o->c, &e->val, w);
	}
	if (!item_keys(o->m)) {
		old = cx_load(&o->c, &e->val);
		w = 0;
		if ((vn && (rc = item_new(o, NULL, 0, v, vn, &w))) ||
		    (rc = cx_put64(&o->c, &e->val, w)))
			return rc;
		return old ? cx_free(&o->c, old) : 0;
	}
	old = cx_load(&o->c, &e->key);
	const struct map_item *it = item_at(o, old);
	if (!it)
		return PMTX_E_CORRUPT;
	if ((rc = item_new(o, it->b, it->klen, v, vn, &w)) ||
	    (rc = cx_put64(&o->c, &e->key, w)))
		return rc;
	return cx_free(&o->c, old);
}

/* ---- delete ---- */

/* Rebalance two neighbour leaves under parent image pimg, children a
 * and a + 1 (M4): merged into the left one, or their entries shared. */
static int leaf_fix(struct mop *o, struct map_inner *pimg, unsigned a)
{
	struct map_leaf *A = leaf_at(o, pimg->child[a]);
	struct map_leaf *B = leaf_at(o, pimg->child[a + 1]);
	struct map_leaf oa, ob, ia, ib;
	struct lent l[2 * MAP_LEAF_SLOTS];
	int rc;
	if (!A || !B)
		return corrupt("a child of an inner node is not a leaf");
	if ((rc = leaf_image(o, A, &oa)) || (rc = leaf_image(o, B, &ob)))
		return rc;
	unsigned n = lent_load(l, lent_load(l, 0, &oa, 0), &ob, 1);
	ia = oa;
	ib = ob;
	if (n <= MAP_LEAF_MERGE) {
		leaf_assign(&ia, 0, l, 0, n);
		ia.next = ob.next;
		if ((rc = node_store(o, A, &oa, &ia, sizeof(ia))) ||
		    (rc = link_back(o, ob.next, pimg->child[a])) ||
		    (rc = sep_free(o, pimg->key[a])) ||
		    (rc = cx_free(&o->c, pimg->child[a + 1])))
			return rc;
		inner_remove(pimg, a + 1, n);
		return 0;
	}
	unsigned half = n / 2;
	leaf_assign(&ia, 0, l, 0, half);
	leaf_assign(&ib, 1, l, half, n);
	uint64_t sep;
	if ((rc = sep_make(o, l[half].e.key, &sep)) ||
	    (rc = sep_free(o, pimg->key[a])) ||
	    (rc = node_store(o, A, &oa, &ia, sizeof(ia))) ||
	    (rc = node_store(o, B, &ob, &ib, sizeof(ib))))
		return rc;
	pimg->key[a] = sep;
	pimg->cnt[a] = half;
	pimg->cnt[a + 1] = n - half;
	return 0;
}

/* Rebalance two neighbour inner nodes under parent image pimg, children
 * a and a + 1 (M4): separators move down and up, never copied. */
static int inner_fix(struct mop *o, struct map_inner *pimg, unsigned a)
{
	struct map_inner *A = inner_at(o, pimg->child[a]);
	struct map_inner *B = inner_at(o, pimg->child[a + 1]);
	struct map_inner oa, ob, ia, ib;
	struct wide w = { 0 };
	int rc;
	if (!A || !B)
		return corrupt("a child of an inner node is not one");
	if ((rc = inner_image(o, A, &oa)) || (rc = inner_image(o, B, &ob)))
		return rc;
	wide_add(&w, &oa, 0);
	wide_add(&w, &ob, pimg->key[a]);
	ia = oa;
	ib = ob;
	if (w.n <= MAP_INNER_MERGE) {
		uint64_t s = inner_assign(&ia, &w, 0, w.n);
		if ((rc = node_store(o, A, &oa, &ia, sizeof(ia))) ||
		    (rc = cx_free(&o->c, pimg->child[a + 1])))
			return rc;
		inner_remove(pimg, a + 1, s);
		return 0;
	}
	unsigned half = w.n / 2;
	pimg->cnt[a] = inner_assign(&ia, &w, 0, half);
	pimg->cnt[a + 1] = inner_assign(&ib, &w, half, w.n);
	pimg->key[a] = w.key[half - 1];
	if ((rc = node_store(o, A, &oa, &ia, sizeof(ia))))
		return rc;
	return node_store(o, B, &ob, &ib, sizeof(ib));
}

/* Rebalance child i of inner node in (a leaf when leaf is set) with a
 * neighbour: the left one, or the right one for the first child. */
static int child_fix(struct mop *o, struct map_inner *in, unsigned i,
                     int leaf)
{
	struct map_inner old, img;
	int rc = inner_image(o, in, &old);
	if (rc)
		return rc;
	if (old.n < 2 || i >= old.n)
		return corrupt("an inner node has no neighbour to merge with");
	img = old;
	unsigned a = i ? i - 1 : 0;
	rc = leaf ? leaf_fix(o, &img, a) : inner_fix(o, &img, a);
	if (rc)
		return rc;
	return node_store(o, in, &old, &img, sizeof(img));
}

/* A root inner node left with one child: the child becomes the root. */
static int root_shrink(struct mop *o, struct map_inner *root)
{
	unsigned n, height;
	uint64_t off;
	int rc = inner_n(o, root, &n);
	if (rc || n > 1)
		return rc;
	if ((rc = hdr_root(o, &off, &height)))
		return rc;
	uint64_t child = cx_load(&o->c, &root->child[0]);
	if ((rc = cx_put64(&o->c, &o->h->root, child)) ||
	    (rc = hdr_set_height(o, height - 1)))
		return rc;
	return cx_free(&o->c, off);
}

/* After a delete left the path's leaf with count entries: merge or
 * refill up the path while nodes are under their minimum (M4). */
static int rebalance(struct mop *o, struct path *p, unsigned count)
{
	unsigned d = p->depth, n;
	if (!d || count >= MAP_LEAF_MIN)
		return 0;
	int rc = child_fix(o, p->in[d - 1], p->idx[d - 1], 1);
	for (d--; !rc && d > 0; d--) {
		if ((rc = inner_n(o, p->in[d], &n)) || n >= MAP_INNER_MIN)
			return rc;
		rc = child_fix(o, p->in[d - 1], p->idx[d - 1], 0);
	}
	return rc ? rc : root_shrink(o, p->in[0]);
}

/* Remove the entry at position pos of the path's leaf. */
static int entry_remove(struct mop *o, struct path *p,
                        const struct map_leaf_head *hd, unsigned pos)
{
	struct map_entry e;
	struct map_leaf_head nh = *hd;
	unsigned s = hd->order[pos];
	cx_read(&o->c, &e, &p->leaf->e[s], sizeof(e));
	memmove(&nh.order[pos], &nh.order[pos + 1], hd->count - pos - 1);
	nh.count--;
	nh.used &= ~(1ull << s);
	int rc = cx_write(&o->c, &p->leaf->hd, &nh, sizeof(nh));
	if (!rc)
		rc = entry_free(o, &e);
	if (!rc)
		rc = path_count(o, p, p->depth, -1);
	return rc ? rc : rebalance(o, p, nh.count);
}

/* ---- the blocks of a tree: freeing it (tree_free), walking it ---- */

typedef int (*block_fn)(pmtx_off off, void *arg);

/* fn for an item the tree owns: an entry's key (BYTES, SCORE), a
 * separator, or the value item of a U64 or I64 key (value: it holds no
 * key, as view_val checks), checked as the reads check it (C3). */
static int item_each(struct mop *o, uint64_t off, int value, block_fn fn,
                     void *arg)
{
	const struct map_item *it = item_at(o, off);
	if (!it)
		return PMTX_E_CORRUPT;
	if (value && it->klen)
		return corrupt("a value item holds a key");
	return fn(off, arg);
}

/* fn for the blocks of the leaf at off: its entries' items (M6), then
 * the leaf. */
static int leaf_each(struct mop *o, uint64_t off, block_fn fn, void *arg)
{
	struct map_leaf_head hd;
	struct map_entry e;
	struct map_leaf *lf;
	int rc = leaf_get(o, off, "a leaf is not one", &lf, &hd);
	for (unsigned i = 0; !rc && i < hd.count; i++) {
		cx_read(&o->c, &e, &lf->e[hd.order[i]], sizeof(e));
		if (item_keys(o->m))
			rc = item_each(o, e.key, 0, fn, arg);
		else if (!o->m->val_u64 && e.val)
			rc = item_each(o, e.val, 1, fn, arg);
	}
	return rc ? rc : fn(off, arg);
}

/* fn for every block of the subtree at off, of levels levels, each node
 * after the blocks it owns (so that fn may free them). Every node is
 * checked before it is followed, the descent bounded by levels (M7). */
static int tree_each(struct mop *o, uint64_t off, unsigned levels,
                     block_fn fn, void *arg)
{
	unsigned n;
	struct map_inner *in;
	if (levels == 1)
		return leaf_each(o, off, fn, arg);
	int rc = inner_get(o, off, "an inner node is not one", &in, &n);
	for (unsigned i = 0; !rc && i < n; i++) {
		if (i + 1 < n && item_keys(o->m))
			rc = item_each(o, cx_load(&o->c, &in->key[i]), 0, fn,
			               arg);
		if (!rc)
			rc = tree_each(o, cx_load(&o->c, &in->child[i]),
			               levels - 1, fn, arg);
	}
	return rc ? rc : fn(off, arg);
}

static int block_free(pmtx_off off, void *arg)
{
	return cx_free(arg, off);
}

/* Free the subtree at off, of levels levels, and everything it owns. */
static int tree_free(struct mop *o, uint64_t off, unsigned levels)
{
	return tree_each(o, off, levels, block_free, &o->c);
}

/* A fresh empty leaf. */
static int leaf_new_empty(struct mop *o, uint64_t *off)
{
	struct map_leaf img;
	memset(&img, 0, sizeof(img));
	img.hd.magic = CONT_MAGIC_MAP_LEAF;
	return node_new(o, &img, sizeof(img), off);
}

/* Make the header name the tree root (height levels, leaves first to
 * last). */
static int hdr_set_tree(struct mop *o, uint64_t root, unsigned height,
                        uint64_t first, uint64_t last)
{
	int rc;
	if ((rc = cx_put64(&o->c, &o->h->root, root)) ||
	    (rc = hdr_set_height(o, height)) ||
	    (rc = cx_put64(&o->c, &o->h->first, first)))
		return rc;
	return cx_put64(&o->c, &o->h->last, last);
}

/* Free the whole tree and leave an empty root leaf; an empty map is
 * left as it is (nothing written). */
static int tree_clear(struct mop *o)
{
	uint64_t root, leaf, len;
	unsigned height;
	int rc = map_len(o, &len);
	if (rc || !len)
		return rc;
	rc = hdr_root(o, &root, &height);
	if (!rc)
		rc = tree_free(o, root, height);
	if (!rc)
		rc = leaf_new_empty(o, &leaf);
	return rc ? rc : hdr_set_tree(o, leaf, 1, leaf, leaf);
}

/* ========================================================================
 * Lifetime and handles.
 * ===================================================================== */

static int kind_ok(unsigned kind)
{
	unsigned k = kind & MAP_KIND_MASK;
	return !(kind & ~(MAP_KIND_MASK | PMTX_MAP_VAL_U64)) &&
	       k >= PMTX_MAP_BYTES && k <= PMTX_MAP_SCORE;
}

/* The transaction a create or destroy runs in: tx, or the running one. */
static int lifetime_tx(pmtx_tx **tx)
{
	if (!*tx)
		*tx = pmtx_tx_current();
	return *tx ? 0 : PMTX_E_NO_TX;
}

static void handle_init(pmtx_map *m, pmtx_region *r, pmtx_off off,
                        unsigned flags, pmtx_runtime rt)
{
	m->r = r;
	m->off = off;
	m->rt = rt;
	m->kind = flags & MAP_KIND_MASK;
	m->val_u64 = !!(flags & PMTX_MAP_VAL_U64);
}

int pmtx_map_create(pmtx_tx *tx, unsigned kind, pmtx_off *out)
{
	struct mop o = { 0 };
	struct map_hdr *h;
	pmtx_off off, leaf;
	if (!out || !kind_ok(kind))
		return PMTX_E_INVAL;
	int rc = lifetime_tx(&tx);
	if (rc || (rc = cx_begin(&o.c, pmtx_tx_region(tx), tx,
	                         PMTX_RT_DEFAULT)))
		return rc;
	if (!(rc = leaf_new_empty(&o, &leaf)) &&
	    !(rc = cx_alloc(&o.c, sizeof(*h), 1, &off, (void **)&h))) {
		cont_hdr_init(&h->h, CONT_MAGIC_MAP, kind);
		h->root = h->first = h->last = leaf;
		h->height = 1;
		cx_flush_site(&o.c, h, sizeof(*h), MUT_MAP_CREATE_FLUSH);
	}
	rc = cx_end(&o.c, rc);
	if (!rc)
		*out = off;
	return rc;
}

/* The header at off, checked (kind and version). */
static int hdr_check(pmtx_region *r, pmtx_off off, unsigned *flags)
{
	int rc = cont_check_hdr(r, off, CONT_MAGIC_MAP, sizeof(struct map_hdr));
	if (rc)
		return rc;
	const struct map_hdr *h = pmtx_ptr(r, off);
	if (!kind_ok(h->h.flags))
		return corrupt("the header's key kind is unknown");
	*flags = h->h.flags;
	return 0;
}

int pmtx_map_destroy(pmtx_tx *tx, pmtx_off off)
{
	pmtx_map m;
	struct mop o;
	unsigned flags;
	int rc = lifetime_tx(&tx);
	if (rc || (rc = hdr_check(pmtx_tx_region(tx), off, &flags)))
		return rc;
	handle_init(&m, pmtx_tx_region(tx), off, flags, PMTX_RT_DEFAULT);
	if ((rc = op_begin(&o, &m, tx, 1)))
		return rc;
	uint64_t root;
	unsigned height;
	rc = hdr_root(&o, &root, &height);
	if (!rc)
		rc = tree_free(&o, root, height);
	if (!rc)
		rc = cx_free(&o.c, off);
	return op_end(&o, rc);
}

int pmtx_map_open(pmtx_region *r, pmtx_off off, const pmtx_cont_options *op,
                  pmtx_map **out)
{
	unsigned flags;
	if (!r || !out)
		return PMTX_E_INVAL;
	int rc = hdr_check(r, off, &flags);
	if (rc)
		return rc;
	pmtx_map *m = malloc(sizeof(*m));
	if (!m)
		return ENOMEM;
	handle_init(m, r, off, flags, cont_runtime(op));
	*out = m;
	return 0;
}

void pmtx_map_close(pmtx_map *m)
{
	free(m);
}

pmtx_off pmtx_map_off(const pmtx_map *m)
{
	return m ? m->off : 0;
}

/* ========================================================================
 * Entries.
 * ===================================================================== */

static int view_inline(uint64_t w, size_t n, pmtx_bytes *out)
{
	out->inl = w;
	out->p = &out->inl;
	out->n = n;
	return 0;
}

static int view_key(struct mop *o, uint64_t w, pmtx_bytes *out)
{
	if (!item_keys(o->m))
		return view_inline(w, 8, out);
	const struct map_item *it = item_at(o, w);
	if (!it)
		return PMTX_E_CORRUPT;
	out->inl = 0;
	out->p = it->b;
	out->n = it->klen;
	return 0;
}

/* A view of the value of the entry in slot s of lf (M6). */
static int view_val(struct mop *o, const struct map_leaf *lf, unsigned s,
                    pmtx_bytes *out)
{
	uint64_t w = cx_load(&o->c, &lf->e[s].val);
	if (o->m->val_u64)
		return view_inline(w, 8, out);
	const struct map_item *it;
	size_t skip = 0;
	if (item_keys(o->m)) {
		it = item_at(o, cx_load(&o->c, &lf->e[s].key));
		skip = it ? it->klen : 0;
	} else if (!w) {
		return view_inline(0, 0, out);
	} else if ((it = item_at(o, w)) && it->klen) {
		return corrupt("a value item holds a key");
	}
	if (!it)
		return PMTX_E_CORRUPT;
	out->inl = 0;
	out->p = it->b + skip;
	out->n = it->vlen;
	return 0;
}

#define PUT_FLAGS (PMTX_HMAP_NX | PMTX_HMAP_XX)

int pmtx_map_put(pmtx_tx *tx, pmtx_map *m, const void *k, size_t kn,
                 const void *v, size_t vn, unsigned flags, int *existed)
{
	struct mkey key;
	struct mop o;
	struct path p;
	struct map_leaf_head hd;
	struct map_entry ne;
	unsigned pos;
	int eq, rc;
	if (!m || (flags & ~PUT_FLAGS) || flags == PUT_FLAGS)
		return PMTX_E_INVAL;
	if ((rc = key_parse(m, k, kn, &key)) || (rc = val_check(m, v, vn)) ||
	    (rc = op_begin(&o, m, tx, 1)))
		return rc;
	uint8_t f = key_fp(m, &key);
	if ((rc = locate(&o, &key, f, !(flags & PMTX_HMAP_XX), &p, &hd, &pos,
	                 &eq)))
		return op_end(&o, rc);
	if (existed)
		*existed = eq;
	if (eq && (flags & PMTX_HMAP_NX))
		rc = PMTX_E_EXISTS;
	else if (eq)
		rc = entry_replace(&o, p.leaf, hd.order[pos], v, vn);
	else if (flags & PMTX_HMAP_XX)
		rc = PMTX_E_NOT_FOUND;
	else if (!(rc = entry_make(&o, &key, k, kn, v, vn, &ne)))
		rc = insert(&o, &p, &hd, pos, &ne, f);
	return op_end(&o, rc);
}

int pmtx_map_get(pmtx_tx *tx, pmtx_map *m, const void *k, size_t kn,
                 pmtx_bytes *v)
{
	struct mkey key;
	struct mop o;
	struct path p;
	struct map_leaf_head hd;
	int rc;
	if (!m || !v)
		return PMTX_E_INVAL;
	if ((rc = key_parse(m, k, kn, &key)) || (rc = op_begin(&o, m, tx, 0)))
		return rc;
	rc = descend(&o, &key, 0, PF_PROBE, &p);
	if (!rc)
		rc = leaf_probe(&o, p.leaf, &hd);
	if (!rc) {
		int s = leaf_find(&o, p.leaf, &hd, &key, key_fp(m, &key));
		rc = o.err           ? o.err
		     : s >= 0        ? view_val(&o, p.leaf, (unsigned)s, v)
		                     : PMTX_E_NOT_FOUND;
	}
	return op_end(&o, rc);
}

int pmtx_map_del(pmtx_tx *tx, pmtx_map *m, const void *k, size_t kn)
{
	struct mkey key;
	struct mop o;
	struct path p;
	struct map_leaf_head hd;
	unsigned pos;
	int eq, rc;
	if (!m)
		return PMTX_E_INVAL;
	if ((rc = key_parse(m, k, kn, &key)) || (rc = op_begin(&o, m, tx, 1)))
		return rc;
	rc = locate(&o, &key, key_fp(m, &key), 0, &p, &hd, &pos, &eq);
	if (!rc)
		rc = eq ? entry_remove(&o, &p, &hd, pos) : PMTX_E_NOT_FOUND;
	return op_end(&o, rc);
}

int pmtx_map_len(pmtx_tx *tx, pmtx_map *m, uint64_t *n)
{
	struct mop o;
	if (!m || !n)
		return PMTX_E_INVAL;
	int rc = op_begin(&o, m, tx, 0);
	if (rc)
		return rc;
	return op_end(&o, map_len(&o, n));
}

int pmtx_map_clear(pmtx_tx *tx, pmtx_map *m)
{
	struct mop o;
	if (!m)
		return PMTX_E_INVAL;
	int rc = op_begin(&o, m, tx, 1);
	return rc ? rc : op_end(&o, tree_clear(&o));
}

/* ========================================================================
 * Order statistics and cursors.
 * ===================================================================== */

/* Walk to the leaf where k is or would go, summing the entries left of
 * it (p->before), and read that leaf's head. */
static int descend_head(struct mop *o, const struct mkey *k, struct path *p,
                        struct map_leaf_head *hd)
{
	int rc = descend(o, k, 1, PF_HEAD, p);
	return rc ? rc : leaf_head(o, p->leaf, hd);
}

/* Keys below k (incl: at most k). */
static int rank_of(struct mop *o, const struct mkey *k, int incl,
                   uint64_t *rank)
{
	struct path p;
	struct map_leaf_head hd;
	int rc = descend_head(o, k, &p, &hd);
	if (rc)
		return rc;
	*rank = p.before + leaf_search(o, p.leaf, &hd, k, incl);
	return o->err;
}

int pmtx_map_rank(pmtx_tx *tx, pmtx_map *m, const void *k, size_t kn,
                  unsigned flags, uint64_t *rank)
{
	struct mkey key;
	struct mop o;
	int rc;
	if (!m || !rank || (flags & ~PMTX_MAP_INCL))
		return PMTX_E_INVAL;
	if ((rc = key_parse(m, k, kn, &key)) || (rc = op_begin(&o, m, tx, 0)))
		return rc;
	return op_end(&o, rank_of(&o, &key, flags & PMTX_MAP_INCL, rank));
}

int pmtx_map_count(pmtx_tx *tx, pmtx_map *m, const void *lo, size_t lon,
                   const void *hi, size_t hin, unsigned flags, uint64_t *n)
{
	struct mkey klo, khi;
	struct mop o;
	uint64_t below = 0, upto = 0;
	int rc;
	if (!m || !n || (flags & ~(PMTX_MAP_LO_EXCL | PMTX_MAP_HI_EXCL)))
		return PMTX_E_INVAL;
	if ((lo && (rc = key_parse(m, lo, lon, &klo))) ||
	    (hi && (rc = key_parse(m, hi, hin, &khi))) ||
	    (rc = op_begin(&o, m, tx, 0)))
		return rc;
	if (lo)
		rc = rank_of(&o, &klo, !!(flags & PMTX_MAP_LO_EXCL), &below);
	if (!rc)
		rc = hi ? rank_of(&o, &khi, !(flags & PMTX_MAP_HI_EXCL), &upto)
		        : map_len(&o, &upto);
	if (!rc)
		*n = upto > below ? upto - below : 0;
	return op_end(&o, rc);
}

/* Place c at position pos (last: the last) of leaf off, of rank rank.
 * A leaf reached by a link is never empty (L5). */
static int cur_place(struct mop *o, pmtx_map_cursor *c, uint64_t off,
                     unsigned pos, int last, uint64_t rank)
{
	struct map_leaf *lf;
	struct map_leaf_head hd;
	int rc = leaf_get(o, off, "a leaf link names no leaf", &lf, &hd);
	if (rc)
		return rc;
	if (last)
		pos = hd.count - 1u;
	if (!hd.count || pos >= hd.count)
		return corrupt("a leaf holds fewer entries than its counts say");
	c->leaf = off;
	c->pos = pos;
	c->rank = rank;
	c->valid = 1;
	return 0;
}

/* Place c at the first position >= pos of the path's leaf (up), or at
 * the last one < pos (down); off the leaf, on the neighbour's nearest
 * entry. */
static int cur_near(struct mop *o, pmtx_map_cursor *c, const struct path *p,
                    const struct map_leaf_head *hd, unsigned pos, int down)
{
	uint64_t off = cx_off(&o->c, p->leaf);
	if (!down && pos < hd->count)
		return cur_place(o, c, off, pos, 0, p->before + pos);
	if (down && pos > 0)
		return cur_place(o, c, off, pos - 1, 0, p->before + pos - 1);
	uint64_t nb = cx_load(&o->c, down ? &p->leaf->prev : &p->leaf->next);
	if (!nb)
		return PMTX_E_NOT_FOUND;
	if (down && !p->before)
		return corrupt("a leaf with nothing before it has a prev");
	return cur_place(o, c, nb, 0, down,
	                 down ? p->before - 1 : p->before + hd->count);
}

static int seek_key(struct mop *o, pmtx_map_cursor *c, int how,
                    const struct mkey *k)
{
	struct path p;
	struct map_leaf_head hd;
	int rc = descend_head(o, k, &p, &hd);
	if (rc)
		return rc;
	int upper = how == PMTX_SEEK_GT || how == PMTX_SEEK_LE;
	unsigned pos = leaf_search(o, p.leaf, &hd, k, upper);
	if (o->err)
		return o->err;
	int down = how == PMTX_SEEK_LE || how == PMTX_SEEK_LT;
	return cur_near(o, c, &p, &hd, pos, down);
}

static int seek_end(struct mop *o, pmtx_map_cursor *c, int last)
{
	uint64_t len;
	int rc = map_len(o, &len);
	if (rc || !len)
		return rc ? rc : PMTX_E_NOT_FOUND;
	uint64_t off = cx_load(&o->c, last ? &o->h->last : &o->h->first);
	return cur_place(o, c, off, 0, last, last ? len - 1 : 0);
}

int pmtx_map_seek(pmtx_tx *tx, pmtx_map *m, int how, const void *k,
                  size_t kn, pmtx_map_cursor *c)
{
	struct mkey key;
	struct mop o;
	int rc, bykey = how >= PMTX_SEEK_GE && how <= PMTX_SEEK_LT;
	if (!m || !c || how < PMTX_SEEK_FIRST || how > PMTX_SEEK_LT)
		return PMTX_E_INVAL;
	c->valid = 0;
	if ((bykey && (rc = key_parse(m, k, kn, &key))) ||
	    (rc = op_begin(&o, m, tx, 0)))
		return rc;
	c->m = m;
	c->tx = o.c.tx;
	rc = bykey ? seek_key(&o, c, how, &key)
	           : seek_end(&o, c, how == PMTX_SEEK_LAST);
	return op_end(&o, rc);
}

/* Walk down to the entry of rank r < the map's length. */
static int seek_rank(struct mop *o, pmtx_map_cursor *c, uint64_t r)
{
	uint64_t off, len, left = r;
	unsigned height, n;
	int rc = map_len(o, &len);
	if (!rc)
		rc = hdr_root(o, &off, &height);
	if (rc || r >= len)
		return rc ? rc : PMTX_E_NOT_FOUND;
	for (unsigned d = 0; d + 1 < height; d++) {
		struct map_inner *in;
		rc = inner_get(o, off, "an inner node is not one", &in, &n);
		if (rc)
			return rc;
		unsigned i = 0;
		for (uint64_t x; i < n && left >= (x = cx_load(&o->c,
		                                               &in->cnt[i]));
		     i++)
			left -= x;
		if (i == n)
			return corrupt("counts sum to less than the length");
		off = cx_load(&o->c, &in->child[i]);
	}
	if (left >= MAP_LEAF_SLOTS)
		return corrupt("a count is above its leaf's");
	return cur_place(o, c, off, (unsigned)left, 0, r);
}

int pmtx_map_seek_rank(pmtx_tx *tx, pmtx_map *m, uint64_t r,
                       pmtx_map_cursor *c)
{
	struct mop o;
	if (!m || !c)
		return PMTX_E_INVAL;
	c->valid = 0;
	int rc = op_begin(&o, m, tx, 0);
	if (rc)
		return rc;
	c->m = m;
	c->tx = o.c.tx;
	rc = seek_rank(&o, c, r);
	if (rc)
		c->valid = 0;
	return op_end(&o, rc);
}

/* Begin a read at cursor c's entry: PMTX_E_INVAL, or PMTX_E_NOT_FOUND
 * for a cursor not valid, with nothing begun. */
static int cur_begin(struct mop *o, const pmtx_map_cursor *c)
{
	if (!c || !c->m)
		return PMTX_E_INVAL;
	if (!c->valid)
		return PMTX_E_NOT_FOUND;
	return op_begin(o, c->m, c->tx, 0);
}

/* The cursor's leaf and head, or an error (the cursor then invalid). */
static int cur_leaf(struct mop *o, const pmtx_map_cursor *c,
                    struct map_leaf **lf, struct map_leaf_head *hd)
{
	int rc = leaf_get(o, c->leaf, "a cursor's leaf is not one", lf, hd);
	if (!rc && c->pos >= hd->count)
		rc = PMTX_E_NOT_FOUND; /* the map was written since */
	return rc;
}

/* Move c to the next entry (down: the previous one). */
static int cur_step(struct mop *o, pmtx_map_cursor *c, int down)
{
	struct map_leaf *lf;
	struct map_leaf_head hd;
	int rc = cur_leaf(o, c, &lf, &hd);
	if (rc)
		return rc;
	if (!down && c->pos + 1 < hd.count) {
		c->pos++;
		c->rank++;
		return 0;
	}
	if (down && c->pos > 0) {
		c->pos--;
		c->rank--;
		return 0;
	}
	uint64_t nb = cx_load(&o->c, down ? &lf->prev : &lf->next);
	return !nb ? PMTX_E_NOT_FOUND
	           : cur_place(o, c, nb, 0, down,
	                       down ? c->rank - 1 : c->rank + 1);
}

static int step(pmtx_map_cursor *c, int down)
{
	struct mop o;
	int rc = cur_begin(&o, c);
	if (rc)
		return rc;
	rc = cur_step(&o, c, down);
	if (rc)
		c->valid = 0;
	return op_end(&o, rc);
}

int pmtx_map_next(pmtx_map_cursor *c)
{
	return step(c, 0);
}

int pmtx_map_prev(pmtx_map_cursor *c)
{
	return step(c, 1);
}

/* The key and value of c's entry (either may be NULL). */
static int cur_entry(struct mop *o, const pmtx_map_cursor *c, pmtx_bytes *k,
                     pmtx_bytes *v)
{
	struct map_leaf *lf;
	struct map_leaf_head hd;
	int rc = cur_leaf(o, c, &lf, &hd);
	unsigned s = rc ? 0 : hd.order[c->pos];
	if (!rc && k)
		rc = view_key(o, cx_load(&o->c, &lf->e[s].key), k);
	if (!rc && v)
		rc = view_val(o, lf, s, v);
	return rc;
}

int pmtx_map_cursor_get(const pmtx_map_cursor *c, pmtx_bytes *k,
                        pmtx_bytes *v)
{
	struct mop o;
	int rc = cur_begin(&o, c);
	return rc ? rc : op_end(&o, cur_entry(&o, c, k, v));
}

/* ========================================================================
 * Bulk load.
 * ===================================================================== */

/* The input, copied to DRAM: each pair's key and value words (inline
 * kinds) or its bytes in the arena. */
struct lpair {
	uint64_t kw, vw;
	size_t koff, kn, voff, vn;
};
struct lbuf {
	struct lpair *pr;
	size_t n, cap;
	char *arena;
	size_t used, acap;
};

static int arena_add(struct lbuf *b, const void *p, size_t n, size_t *off)
{
	if (pmtx_reserve(&b->arena, b->used, n, &b->acap, 1, 4096))
		return ENOMEM;
	if (n)
		memcpy(b->arena + b->used, p, n);
	*off = b->used;
	b->used += n;
	return 0;
}

/* n bytes of the arena at off (never a null pointer). */
static const char *lbytes(const struct lbuf *b, size_t off, size_t n)
{
	return n ? b->arena + off : "";
}

/* The key of pair i, as a search key. */
static void lpair_key(const pmtx_map *m, const struct lbuf *b, size_t i,
                      struct mkey *k)
{
	const struct lpair *q = &b->pr[i];
	memset(k, 0, sizeof(*k));
	k->w = q->kw;
	if (item_keys(m))
		key_parse(m, lbytes(b, q->koff, q->kn), q->kn, k);
}

/* Take one pair from the source, checked (M8) and in order. */
static int load_take(const pmtx_map *m, struct lbuf *b, const pmtx_bytes *k,
                     const pmtx_bytes *v)
{
	struct mkey key, prev;
	struct lpair q = { 0 };
	int rc = key_parse(m, k->p, k->n, &key);
	if (rc || (rc = val_check(m, v->p, v->n)))
		return rc;
	if (b->n) {
		lpair_key(m, b, b->n - 1, &prev);
		if (mkey_cmp(m->kind, &prev, &key) >= 0)
			return PMTX_E_INVAL;
	}
	if (pmtx_reserve(&b->pr, b->n, 1, &b->cap, sizeof(q), 1024))
		return ENOMEM;
	q.kw = key.w;
	q.kn = k->n;
	q.vn = v->n;
	if (m->val_u64)
		memcpy(&q.vw, v->p, 8);
	if ((item_keys(m) && (rc = arena_add(b, k->p, k->n, &q.koff))) ||
	    (!m->val_u64 && (rc = arena_add(b, v->p, v->n, &q.voff))))
		return rc;
	b->pr[b->n++] = q;
	return 0;
}

static int load_read(const pmtx_map *m, pmtx_map_source next, void *arg,
                     struct lbuf *b)
{
	for (;;) {
		pmtx_bytes k = { 0 }, v = { 0 };
		int more = next(arg, &k, &v);
		if (more == 0)
			return 0;
		if (more != 1)
			return PMTX_E_INVAL;
		int rc = load_take(m, b, &k, &v);
		if (rc)
			return rc;
	}
}

/* The entry of pair i, its blocks allocated. */
static int load_entry(struct mop *o, const struct lbuf *b, size_t i,
                      struct map_entry *e)
{
	const struct lpair *q = &b->pr[i];
	struct mkey key = { .w = q->kw };
	const char *v = o->m->val_u64 ? (const char *)&q->vw
	                              : lbytes(b, q->voff, q->vn);
	return entry_make(o, &key, lbytes(b, q->koff, q->kn), q->kn, v, q->vn,
	                  e);
}

/* One level of nodes being built: each node's offset, entries and
 * first pair (its least key). */
struct lvl {
	uint64_t *off, *cnt;
	size_t *first;
	size_t n;
};

static int lvl_alloc(struct lvl *l, size_t n)
{
	l->n = n;
	l->off = calloc(n ? n : 1, sizeof(*l->off));
	l->cnt = calloc(n ? n : 1, sizeof(*l->cnt));
	l->first = calloc(n ? n : 1, sizeof(*l->first));
	return l->off && l->cnt && l->first ? 0 : ENOMEM;
}

static void lvl_free(struct lvl *l)
{
	free(l->off);
	free(l->cnt);
	free(l->first);
}

/* How many of n go into group g of groups: an even share. */
static size_t share(size_t n, size_t groups, size_t g)
{
	return n / groups + (g < n % groups);
}

/* The leaves: pairs shared evenly among them, at most per each. */
static int load_leaves(struct mop *o, const struct lbuf *b, unsigned per,
                       struct lvl *l)
{
	size_t nl = (b->n + per - 1) / per, at = 0;
	int rc = lvl_alloc(l, nl);
	struct map_leaf *lf;
	for (size_t g = 0; !rc && g < nl; g++)
		rc = cx_alloc(&o->c, sizeof(*lf), 0, &l->off[g], (void **)&lf);
	for (size_t g = 0; !rc && g < nl; g++) {
		lf = (struct map_leaf *)(o->c.base + l->off[g]);
		memset(lf, 0, sizeof(*lf));
		lf->hd.magic = CONT_MAGIC_MAP_LEAF;
		lf->prev = g ? l->off[g - 1] : 0;
		lf->next = g + 1 < nl ? l->off[g + 1] : 0;
		l->cnt[g] = share(b->n, nl, g);
		l->first[g] = at;
		for (unsigned i = 0; !rc && i < l->cnt[g]; i++, at++) {
			struct mkey key;
			rc = load_entry(o, b, at, &lf->e[i]);
			lpair_key(o->m, b, at, &key);
			lf->hd.order[i] = (uint8_t)i;
			lf->hd.fp[i] = key_fp(o->m, &key);
		}
		lf->hd.count = (uint8_t)l->cnt[g];
		lf->hd.used = (1ull << l->cnt[g]) - 1;
		cx_flush_site(&o->c, lf, sizeof(*lf), MUT_MAP_LOAD_FLUSH);
	}
	return rc;
}

/* The level above l: its nodes shared evenly, at most per children. */
static int load_level(struct mop *o, const struct lbuf *b, unsigned per,
                      const struct lvl *l, struct lvl *up)
{
	size_t ng = (l->n + per - 1) / per, at = 0;
	int rc = lvl_alloc(up, ng);
	for (size_t g = 0; !rc && g < ng; g++) {
		struct map_inner img = { .magic = CONT_MAGIC_MAP_INNER };
		img.n = (uint32_t)share(l->n, ng, g);
		up->first[g] = l->first[at];
		for (unsigned i = 0; !rc && i < img.n; i++, at++) {
			img.child[i] = l->off[at];
			img.cnt[i] = l->cnt[at];
			up->cnt[g] += l->cnt[at];
			const struct lpair *q = &b->pr[l->first[at]];
			if (i && item_keys(o->m))
				rc = item_new(o, lbytes(b, q->koff, q->kn), q->kn,
				              NULL, 0, &img.key[i - 1]);
			else if (i)
				img.key[i - 1] = q->kw;
		}
		if (!rc)
			rc = node_new(o, &img, sizeof(img), &up->off[g]);
	}
	return rc;
}

/* Build the tree of b's pairs and make the header name it, freeing the
 * old (empty) tree. */
static int load_build(struct mop *o, const struct lbuf *b, unsigned fill)
{
	struct lvl l = { 0 }, up;
	unsigned height = 1, old_height;
	uint64_t old_root;
	int rc = load_leaves(o, b, (MAP_LEAF_SLOTS * fill + 99) / 100, &l);
	uint64_t first = rc ? 0 : l.off[0], last = rc ? 0 : l.off[l.n - 1];
	while (!rc && l.n > 1) {
		memset(&up, 0, sizeof(up));
		rc = load_level(o, b, (MAP_FANOUT * fill + 99) / 100, &l, &up);
		lvl_free(&l);
		l = up;
		height++;
	}
	if (!rc && height > MAP_MAX_HEIGHT)
		rc = PMTX_E_TOO_BIG;
	if (!rc && !(rc = hdr_root(o, &old_root, &old_height)) &&
	    !(rc = tree_free(o, old_root, old_height)))
		rc = hdr_set_tree(o, l.off[0], height, first, last);
	lvl_free(&l);
	return rc;
}

int pmtx_map_load(pmtx_tx *tx, pmtx_map *m, pmtx_map_source next, void *arg,
                  unsigned fill)
{
	struct mop o;
	struct lbuf b = { 0 };
	uint64_t len;
	if (!m || !next || fill < 50 || fill > 100)
		return PMTX_E_INVAL;
	int rc = op_begin(&o, m, tx, 1);
	if (rc)
		return rc;
	rc = map_len(&o, &len);
	if (!rc && len)
		rc = PMTX_E_INVAL; /* not empty */
	if (!rc)
		rc = load_read(m, next, arg, &b);
	if (!rc && b.n)
		rc = load_build(&o, &b, fill);
	free(b.pr);
	free(b.arena);
	return op_end(&o, rc);
}

/* ========================================================================
 * The checker (map.h).
 * ===================================================================== */

struct chk {
	struct mop o;
	char *msg;
	size_t len;
	struct map_stats st;
	uint64_t *blocks;
	size_t nblocks, cap;
	uint64_t prev_leaf, first_leaf;
	unsigned height;
};

static int chk_fail(struct chk *k, const char *fmt, ...)
{
	if (k->msg && k->len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(k->msg, k->len, fmt, ap);
		va_end(ap);
	}
	return PMTX_E_CORRUPT;
}

/* Note a block the map owns: a heap block of at least need bytes. */
static int chk_block(struct chk *k, uint64_t off, size_t need)
{
	size_t us = pmtx_usable_size(k->o.m->r, off);
	if (us < need)
		return chk_fail(k, "block %llu: usable %zu < %zu",
		                (unsigned long long)off, us, need);
	if (pmtx_reserve(&k->blocks, k->nblocks, 1, &k->cap, 8, 1024))
		return ENOMEM;
	k->blocks[k->nblocks++] = off;
	k->st.blocks++;
	k->st.bytes += us;
	return 0;
}

static int chk_item(struct chk *k, uint64_t off, int key, int val)
{
	const struct map_item *it = item_at(&k->o, off);
	if (!it)
		return chk_fail(k, "item %llu outside the region",
		                (unsigned long long)off);
	if ((!key && it->klen) || (!val && it->vlen))
		return chk_fail(k, "item %llu holds %u, %u bytes it should not",
		                (unsigned long long)off, it->klen, it->vlen);
	if (key && k->o.m->kind == PMTX_MAP_SCORE && it->klen < 8)
		return chk_fail(k, "score item %llu under 8 bytes",
		                (unsigned long long)off);
	k->st.items++;
	return chk_block(k, off, sizeof(*it) + it->klen + it->vlen);
}

/* w within [lo, hi) (either may be NULL: unbounded). */
static int chk_bounds(struct chk *k, uint64_t w, const struct mkey *lo,
                      const struct mkey *hi)
{
	if (lo && key_cmp(&k->o, lo, w) > 0)
		return chk_fail(k, "a key lies below its subtree's separator");
	if (hi && key_cmp(&k->o, hi, w) <= 0)
		return chk_fail(k, "a key lies at or above the next separator");
	return k->o.err;
}

static int chk_entry(struct chk *k, const struct map_entry *e)
{
	const pmtx_map *m = k->o.m;
	if (item_keys(m)) {
		if (!m->val_u64 && e->val)
			return chk_fail(k, "an entry's unused value word is set");
		return chk_item(k, e->key, 1, !m->val_u64);
	}
	if (!m->val_u64 && e->val)
		return chk_item(k, e->val, 0, 1);
	return 0;
}

/* A leaf's own invariants (L2, L5) and its place in the chain. */
static int chk_leaf_chain(struct chk *k, uint64_t off,
                          const struct map_leaf *img)
{
	if (img->prev != k->prev_leaf)
		return chk_fail(k, "leaf %llu: prev %llu, not %llu",
		                (unsigned long long)off,
		                (unsigned long long)img->prev,
		                (unsigned long long)k->prev_leaf);
	if (k->prev_leaf) {
		struct map_leaf *pl = leaf_at(&k->o, k->prev_leaf);
		if (cx_load(&k->o.c, &pl->next) != off)
			return chk_fail(k, "leaf %llu: next is not %llu",
			                (unsigned long long)k->prev_leaf,
			                (unsigned long long)off);
	} else {
		k->first_leaf = off;
	}
	k->prev_leaf = off;
	return 0;
}

/* Slot s's fingerprint is its key's (L2). */
static int chk_fp(struct chk *k, uint64_t off, const struct map_leaf *img,
                  unsigned s)
{
	struct mkey key;
	if (key_of(&k->o, img->e[s].key, &key))
		return k->o.err;
	if (img->hd.fp[s] != key_fp(k->o.m, &key))
		return chk_fail(k, "leaf %llu: slot %u's fingerprint is not "
		                "its key's", (unsigned long long)off, s);
	return 0;
}

static int chk_leaf(struct chk *k, uint64_t off, int root,
                    const struct mkey *lo, const struct mkey *hi,
                    uint64_t *count)
{
	struct map_leaf img;
	struct map_leaf *lf = leaf_at(&k->o, off);
	if (!lf)
		return chk_fail(k, "node %llu is not a leaf",
		                (unsigned long long)off);
	int rc = chk_block(k, off, sizeof(img));
	if (rc || (rc = leaf_image(&k->o, lf, &img)))
		return rc;
	if (img.hd.reserved0 || img.hd.reserved2 ||
	    memcmp(img.hd.reserved1, "\0\0\0", 3))
		return chk_fail(k, "leaf %llu: reserved bytes set",
		                (unsigned long long)off);
	if (!root && img.hd.count < MAP_LEAF_MIN)
		return chk_fail(k, "leaf %llu holds %u entries",
		                (unsigned long long)off, img.hd.count);
	uint64_t seen = 0;
	for (unsigned i = 0; i < img.hd.count; i++) {
		unsigned s = img.hd.order[i];
		const struct map_entry *e = &img.e[s];
		struct mkey pk;
		if (seen & (1ull << s))
			return chk_fail(k, "leaf %llu: slot %u listed twice",
			                (unsigned long long)off, s);
		seen |= 1ull << s;
		if ((rc = chk_bounds(k, e->key, lo, hi)) ||
		    (rc = chk_entry(k, e)) || (rc = chk_fp(k, off, &img, s)))
			return rc;
		if (i && (key_of(&k->o, img.e[img.hd.order[i - 1]].key, &pk) ||
		          key_cmp(&k->o, &pk, e->key) >= 0))
			return chk_fail(k, "leaf %llu: keys out of order at %u",
			                (unsigned long long)off, i);
	}
	if (seen != img.hd.used)
		return chk_fail(k, "leaf %llu: bitmap disagrees with order",
		                (unsigned long long)off);
	*count = img.hd.count;
	k->st.leaves++;
	k->st.entries += img.hd.count;
	return chk_leaf_chain(k, off, &img);
}

static int chk_node(struct chk *k, uint64_t off, unsigned level,
                    const struct mkey *lo, const struct mkey *hi,
                    uint64_t *count);

static int chk_inner_words(struct chk *k, uint64_t off,
                           const struct map_inner *img, int root)
{
	unsigned n = img->n;
	if (n < (root ? 2u : MAP_INNER_MIN))
		return chk_fail(k, "inner node %llu has %u children",
		                (unsigned long long)off, n);
	for (unsigned i = 0; i < 6; i++)
		if (img->reserved[i])
			return chk_fail(k, "inner node %llu: reserved set",
			                (unsigned long long)off);
	for (unsigned i = n - 1; i < MAP_FANOUT; i++)
		if ((i < MAP_FANOUT - 1 && img->key[i]) ||
		    (i >= n && (img->child[i] || img->cnt[i])))
			return chk_fail(k, "inner node %llu: unused words set",
			                (unsigned long long)off);
	for (unsigned i = 0; i + 1 < n; i++)
		if (item_keys(k->o.m)) {
			int rc = chk_item(k, img->key[i], 1, 0);
			if (rc)
				return rc;
		}
	return 0;
}

static int chk_inner(struct chk *k, uint64_t off, unsigned level,
                     const struct mkey *lo, const struct mkey *hi,
                     uint64_t *count)
{
	struct map_inner img;
	struct mkey sep[MAP_FANOUT];
	struct map_inner *in = inner_at(&k->o, off);
	if (!in)
		return chk_fail(k, "node %llu is not an inner node",
		                (unsigned long long)off);
	int rc = chk_block(k, off, sizeof(img));
	if (rc || (rc = inner_image(&k->o, in, &img)) ||
	    (rc = chk_inner_words(k, off, &img, level == 0)))
		return rc;
	k->st.inners++;
	for (unsigned i = 0; i + 1 < img.n; i++)
		if (key_of(&k->o, img.key[i], &sep[i]))
			return chk_fail(k, "a separator is no key");
	*count = 0;
	for (unsigned i = 0; i < img.n; i++) {
		uint64_t c;
		rc = chk_node(k, img.child[i], level + 1, i ? &sep[i - 1] : lo,
		              i + 1 < img.n ? &sep[i] : hi, &c);
		if (rc)
			return rc;
		if (c != img.cnt[i])
			return chk_fail(k, "inner node %llu: count %llu of "
			                "child %u holds %llu",
			                (unsigned long long)off,
			                (unsigned long long)img.cnt[i], i,
			                (unsigned long long)c);
		*count += c;
	}
	return 0;
}

static int chk_node(struct chk *k, uint64_t off, unsigned level,
                    const struct mkey *lo, const struct mkey *hi,
                    uint64_t *count)
{
	if (level + 1 == k->height)
		return chk_leaf(k, off, level == 0, lo, hi, count);
	return chk_inner(k, off, level, lo, hi, count);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Sort the n blocks of v; the first one listed twice, or 0 (no block is
 * at offset 0). */
static uint64_t blocks_repeat(uint64_t *v, size_t n)
{
	if (n)
		qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 1; i < n; i++)
		if (v[i] == v[i - 1])
			return v[i];
	return 0;
}

/* The header, the chain's ends and the blocks reached once each. */
static int chk_ends(struct chk *k)
{
	const struct map_hdr *h = k->o.h;
	if (h->h.reserved || h->reserved)
		return chk_fail(k, "header: reserved bytes set");
	if (cx_load(&k->o.c, &h->first) != k->first_leaf ||
	    cx_load(&k->o.c, &h->last) != k->prev_leaf)
		return chk_fail(k, "header: first or last is not the end");
	struct map_leaf *last = leaf_at(&k->o, k->prev_leaf);
	if (cx_load(&k->o.c, &last->next))
		return chk_fail(k, "the last leaf has a next");
	uint64_t twice = blocks_repeat(k->blocks, k->nblocks);
	return twice ? chk_fail(k, "block %llu reached twice",
	                        (unsigned long long)twice)
	             : 0;
}

int map_check_stats(pmtx_map *m, struct map_stats *st, char *msg,
                    size_t len)
{
	struct chk k = { .msg = msg, .len = len };
	char none[1];
	uint64_t root, count;
	if (!k.msg || !k.len) {
		k.msg = none;
		k.len = sizeof(none);
	}
	k.msg[0] = 0;
	if (!m)
		return PMTX_E_INVAL;
	int rc = op_begin(&k.o, m, NULL, 0);
	if (rc)
		return rc;
	rc = hdr_root(&k.o, &root, &k.height);
	if (!rc)
		rc = chk_block(&k, m->off, sizeof(struct map_hdr));
	if (!rc)
		rc = chk_node(&k, root, 0, NULL, NULL, &count);
	if (!rc)
		rc = chk_ends(&k);
	if (rc == PMTX_E_CORRUPT && !k.msg[0])
		chk_fail(&k, "%s", pmtx_errmsg());
	k.st.height = k.height;
	if (st)
		*st = k.st;
	free(k.blocks);
	return op_end(&k.o, rc);
}

int map_check(pmtx_map *m, char *msg, size_t len)
{
	return map_check_stats(m, NULL, msg, len);
}

/* ========================================================================
 * The block walk (map.h).
 * ===================================================================== */

/* The blocks a walk has reached, at most max (the distinct 16-byte
 * aligned offsets of the region): more means one was reached twice, so
 * a corrupt tree whose nodes name one child many times ends there. */
struct gather {
	uint64_t *v;
	size_t n, cap, max;
};

static int gather_add(pmtx_off off, void *arg)
{
	struct gather *g = arg;
	if (g->n == g->max)
		return corrupt("the walk reaches more blocks than the region "
		               "holds");
	if (pmtx_reserve(&g->v, g->n, 1, &g->cap, sizeof(*g->v), 1024))
		return ENOMEM;
	g->v[g->n++] = off;
	return 0;
}

int map_walk(pmtx_map *m, int (*fn)(pmtx_off off, void *arg), void *arg)
{
	struct mop o;
	struct gather g = { 0 };
	uint64_t root;
	unsigned height;
	if (!m || !fn)
		return PMTX_E_INVAL;
	int rc = op_begin(&o, m, NULL, 0);
	if (rc)
		return rc;
	g.max = cx_size(&o.c) / 16;
	if (!(rc = hdr_root(&o, &root, &height)) &&
	    !(rc = gather_add(m->off, &g)))
		rc = tree_each(&o, root, height, gather_add, &g);
	if (!rc && blocks_repeat(g.v, g.n))
		rc = corrupt("a block is reached twice");
	for (size_t i = 0; !rc && i < g.n; i++)
		rc = fn(g.v[i], arg);
	free(g.v);
	return op_end(&o, rc);
}
