/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * list.c - the list: a deque of byte strings in packed chunks (Redis's
 * quicklist of listpacks, made crash-safe). The format is in
 * list_layout.h (LL1-LL4); the operation context in cont.h (C1-C4).
 *
 * Design
 * ------
 * A list is a header block (head, tail, chunk and element counts, one
 * cache line) and a doubly linked chain of chunks. A chunk is a block
 * with a 40-byte header and a data area in which elements are packed as
 * [length, LEB128][bytes], in [lo, hi). Free space is kept at both ends
 * of the data area, so that a push at the head writes the element just
 * below lo and a push at the tail just above hi: the element's bytes,
 * then count/lo/hi (one 12-byte write, LL4), then the header's count.
 * So a push of a short element writes three lines (four if the element
 * crosses a line), a pop two (no data: it moves lo or hi); test_list's
 * push_writes_back_three_lines_pop_two counts them under each runtime.
 *
 * Chunk size. A standard chunk is a block of 1,008 bytes (the 1,024-byte
 * class: 16 bytes of block header), so its data area holds 968 bytes:
 * 56 elements of 16 bytes. Smaller chunks make a rewrite in the middle
 * (insert, set, remove) write back fewer lines and make a pop at the tail
 * (which parses the chunk from lo, lengths being forward-only) read
 * fewer; larger ones cost fewer bytes of header per element (56 bytes a
 * chunk here, block header included: 5% of its 1,024). Redis picks 8 KiB for DRAM, where a
 * rewrite costs a memmove; here it costs written-back lines, and an undo
 * record or redo log entry of the same size.
 *
 * Placement. A chunk made by a push at the tail starts its elements at
 * the start of its data area (it will grow up), one made at the head at
 * the end (it will grow down), the first chunk of an empty list in the
 * middle. A chunk made by a split is centred. An element larger than a
 * standard data area gets a chunk of its own, sized to fit (its block's
 * usable size: any room left over takes later pushes).
 *
 * Rewrites (set, insert, remove, merging) compute the chunk's new
 * contents in DRAM and place them where they differ least from what is
 * there: aligned at lo (an unchanged prefix is not written), aligned at
 * hi (an unchanged suffix is not written), or centred when neither
 * fits; only the bytes from the first that differs to the last are
 * written (chunk_store). So an insert near either end of a chunk shifts
 * only the shorter side. Contents that outgrow the data area are cut
 * into fresh chunks (each at most a standard data area, about equally
 * full), built with plain stores and flushed before they are linked
 * (C2), replacing the chunk, which is freed. After a set or a remove
 * shrinks a chunk, it is merged into a neighbour when both hold at most
 * half a standard data area between them, so removals cannot leave a
 * chain of nearly empty chunks. An emptied chunk is unlinked and freed:
 * no linked chunk is ever empty (LL2).
 *
 * Crash safety. Every operation is one transaction (the caller's, or its
 * own), so any order of its writes is safe; what the order must keep is
 * the read rules. Bytes of the data area outside [lo, hi) are never read
 * (LL2), so an element is written through cx_write before the count/lo/
 * hi word that makes it live, in the same transaction. A fresh chunk is
 * built with plain stores and cx_flush and written only through cx_write
 * once linked (C2). Every offset followed is checked by chunk_load (the
 * magic, alignment, bounds and that it is a heap block with room for its
 * cap: C3); every walk is bounded by nchunks and every parse by the
 * chunk's bytes; a length must be the shortest LEB128 form and fit in
 * [lo, hi). A list that breaks any of these reads as PMTX_E_CORRUPT.
 *
 * Reads (C1). Headers and data are read with cx_read: plain loads unless
 * the transaction runs redo and has written, when pmtx_read overlays its
 * write set. A chunk's [lo, hi) is read whole into DRAM then (struct
 * img), and parsed there. Views (index, range) point into the region
 * when plain loads see the transaction's writes (no transaction, undo,
 * twin, redo before its first write), or when the element's bytes in
 * place are the same as those the transaction sees (it has not changed
 * them: they stay so until the list is next written). Otherwise the
 * transaction changed them and they live only in its write set until
 * commit: they are copied into a buffer of the handle, kept until the
 * list is next written through the handle (or the handle is closed), so
 * that a view stays valid as pmtx_containers.h says. A read-only loop
 * inside such a transaction holds its copies until then.
 *
 * A rewrite never reuses an image of a chunk after writing that chunk:
 * under undo the bytes under it have changed, under redo the image
 * misses the write.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cont.h"
#include "list.h"
#include "list_layout.h"

#define CHUNK_BLOCK 1008u /* asked for a standard chunk: class 1024 */
#define CHUNK_CAP (CHUNK_BLOCK - sizeof(struct list_chunk)) /* 968 */
#define MERGE_MAX (CHUNK_CAP / 2)
#define PUSH_ONE_WRITE 256u /* elements up to this: length and bytes in
                             * one write */

struct pmtx_list {
	pmtx_region *r;
	pmtx_off off;
	pmtx_runtime rt;
	struct cx_views views; /* see Reads (cont.h C5) */
};

/* One operation: its context and the header as the transaction sees it. */
struct op {
	struct cx c;
	pmtx_list *l;
	struct list_hdr *p; /* in the region */
	struct list_hdr h0; /* as read or last written */
	struct list_hdr h;  /* as the operation wants it (hdr_put) */
};

/* A chunk: where it is, and its header as the transaction sees it. */
struct chunk {
	pmtx_off off;
	struct list_chunk *p;
	struct list_chunk h;
};

/* A chunk's [lo, hi) as the transaction sees it (Reads). */
struct img {
	const unsigned char *b;
	size_t n;
	unsigned char *heap; /* a copy too long for buf */
	unsigned char buf[CHUNK_CAP];
};

static int corrupt(const char *what, pmtx_off off)
{
	pmtx__set_errmsg("list: %s (offset %llu)", what,
	                 (unsigned long long)off);
	return PMTX_E_CORRUPT;
}

static unsigned char *chunk_data(const struct chunk *k)
{
	return (unsigned char *)(k->p + 1);
}

/* ---- lengths ---- */

static size_t varint_len(size_t n)
{
	size_t k = 1;
	for (; n >= 0x80; n >>= 7)
		k++;
	return k;
}

static size_t varint_put(unsigned char *b, size_t n)
{
	size_t k = 0;
	for (; n >= 0x80; n >>= 7)
		b[k++] = (unsigned char)(n | 0x80);
	b[k++] = (unsigned char)n;
	return k;
}

/* Length and bytes of an element of n bytes into b; its size. */
static size_t elem_put(unsigned char *b, const void *v, size_t n)
{
	size_t k = varint_put(b, n);
	if (n)
		memcpy(b + k, v, n);
	return k + n;
}

/* The element at b[at], b holding n bytes: its bytes are b[*d, *d +
 * *len). 0, or -1 if it does not parse within b (LL2). */
static int elem_parse(const unsigned char *b, size_t n, size_t at,
                      size_t *d, size_t *len)
{
	uint64_t v = 0;
	size_t i = 0;
	for (;;) {
		if (at + i >= n || i == LIST_VARINT_MAX)
			return -1;
		unsigned char x = b[at + i];
		v |= (uint64_t)(x & 0x7f) << (7 * i);
		i++;
		if (!(x & 0x80)) {
			if (x == 0 && i > 1)
				return -1; /* not the shortest form */
			break;
		}
	}
	if (v > PMTX_CONT_BYTES_MAX || v > n - (at + i))
		return -1;
	*d = at + i;
	*len = (size_t)v;
	return 0;
}

/* ---- views ---- */

/* The view of the n bytes at src of an image of a chunk, whose bytes
 * in place are at at (the same pointer under plain loads). In place if
 * they read the same there (see Reads), else a copy kept by the handle
 * (cont.h C5). */
static int view_of(struct op *o, const unsigned char *at,
                   const unsigned char *src, size_t n, pmtx_bytes *v)
{
	return cx_view(&o->c, &o->l->views, at, src, n, v);
}

/* ---- operations: begin, end, the header ---- */

/* The header as the transaction sees it, checked against LL1 (the
 * cheap part). */
static int hdr_load(struct op *o)
{
	o->p = cx_block(&o->c, o->l->off, sizeof(*o->p), CONT_MAGIC_LIST);
	if (!o->p) {
		pmtx__set_errmsg("offset %llu names no list",
		                 (unsigned long long)o->l->off);
		return PMTX_E_NOT_CONTAINER;
	}
	cx_read(&o->c, &o->h, o->p, sizeof(o->h));
	o->h0 = o->h;
	const struct list_hdr *h = &o->h;
	int empty = h->count == 0;
	if ((h->head == 0) != empty || (h->tail == 0) != empty ||
	    (h->nchunks == 0) != empty || h->nchunks > h->count)
		return corrupt("header counts disagree", o->l->off);
	return 0;
}

static int op_begin(struct op *o, pmtx_tx *tx, pmtx_list *l, int write)
{
	o->l = l;
	int rc = write ? cx_begin(&o->c, l->r, tx, l->rt)
	               : cx_begin_read(&o->c, l->r, tx);
	if (rc)
		return rc;
	rc = hdr_load(o);
	return rc ? cx_end(&o->c, rc) : 0;
}

/* Begin a writing operation given the bytes (v, n) of an element:
 * PMTX_E_INVAL for a null list or bytes, PMTX_E_TOO_BIG past
 * PMTX_CONT_BYTES_MAX, with nothing begun. Inlined, so that each
 * operation keeps its own call of op_begin (cx_begin: PMTX_RT_AUTO
 * chooses a runtime per call site). */
static inline __attribute__((always_inline)) int
w_begin(struct op *o, pmtx_tx *tx, pmtx_list *l, const void *v, size_t n)
{
	if (!l || (n && !v))
		return PMTX_E_INVAL;
	if (!cont_len_ok(n))
		return PMTX_E_TOO_BIG;
	return op_begin(o, tx, l, 1);
}

static int op_end(struct op *o, int rc)
{
	int wrote = o->c.wrote;
	rc = cx_end(&o->c, rc);
	if (wrote)
		cx_views_drop(&o->l->views);
	return rc;
}

/* Write the fields of the header the operation changed. */
static int hdr_put(struct op *o)
{
	const unsigned char *a = (const unsigned char *)&o->h0.head;
	const unsigned char *b = (const unsigned char *)&o->h.head;
	size_t i = 0, j = 4 * sizeof(uint64_t);
	while (i < j && a[i] == b[i])
		i++;
	while (j > i && a[j - 1] == b[j - 1])
		j--;
	o->h0 = o->h;
	return i < j ? cx_write(&o->c, (char *)&o->p->head + i, b + i, j - i)
	             : 0;
}

/* ---- chunks ---- */

/* The chunk at off, checked (C3, LL2, LL3). */
static int chunk_load(struct op *o, pmtx_off off, struct chunk *k)
{
	k->off = off;
	k->p = cx_block(&o->c, off, sizeof(*k->p), CONT_MAGIC_LIST_CHUNK);
	if (!k->p)
		return corrupt("a link names no chunk", off);
	cx_read(&o->c, &k->h, k->p, sizeof(k->h));
	const struct list_chunk *h = &k->h;
	size_t us = pmtx_usable_size(o->c.r, off);
	if (us < sizeof(*h) || h->cap > us - sizeof(*h))
		return corrupt("chunk larger than its block", off);
	if (h->lo > h->hi || h->hi > h->cap || h->count == 0 ||
	    h->count > h->hi - h->lo)
		return corrupt("chunk bounds", off);
	return 0;
}

static int img_load(struct op *o, const struct chunk *k, struct img *im)
{
	const unsigned char *src = chunk_data(k) + k->h.lo;
	im->n = k->h.hi - k->h.lo;
	im->heap = NULL;
	if (cx_direct(&o->c)) {
		im->b = src;
		return 0;
	}
	unsigned char *dst = im->buf;
	if (im->n > sizeof(im->buf) && !(dst = im->heap = malloc(im->n)))
		return ENOMEM;
	cx_read(&o->c, dst, src, im->n);
	im->b = dst;
	return 0;
}

static void img_free(struct img *im)
{
	free(im->heap);
	im->heap = NULL;
}

/* The offset in im of element idx of chunk k. */
static int img_seek(const struct chunk *k, const struct img *im,
                    uint32_t idx, size_t *at)
{
	size_t pos = 0, d, len;
	for (uint32_t i = 0; i < idx; i++) {
		if (elem_parse(im->b, im->n, pos, &d, &len))
			return corrupt("element length", k->off);
		pos = d + len;
	}
	*at = pos;
	return 0;
}

/* Set count, lo and hi of k (one write: LL4). */
static int chunk_put(struct op *o, struct chunk *k, uint32_t count,
                     size_t lo, size_t hi)
{
	uint32_t v[3] = {count, (uint32_t)lo, (uint32_t)hi};
	uint32_t *old = &k->h.count;
	size_t i = 0, j = 3;
	while (i < j && old[i] == v[i])
		i++;
	while (j > i && old[j - 1] == v[j - 1])
		j--;
	k->h.count = count;
	k->h.lo = (uint32_t)lo;
	k->h.hi = (uint32_t)hi;
	if (i == j)
		return 0;
	return cx_write(&o->c, &k->p->count + i, &v[i], (j - i) * 4);
}

/* from.next = to (prev: from.prev = to), or, when from is 0, the head
 * (prev: the tail). */
static int link_set(struct op *o, pmtx_off from, pmtx_off to, int prev)
{
	struct chunk f;
	if (!from) {
		*(prev ? &o->h.tail : &o->h.head) = to;
		return 0;
	}
	int rc = chunk_load(o, from, &f);
	return rc ? rc : cx_put64(&o->c, prev ? &f.p->prev : &f.p->next, to);
}

static int link_next(struct op *o, pmtx_off from, pmtx_off to)
{
	return link_set(o, from, to, 0);
}

static int link_prev(struct op *o, pmtx_off from, pmtx_off to)
{
	return link_set(o, from, to, 1);
}

/* Unlink k and free it (the caller writes the header). */
static int chunk_drop(struct op *o, const struct chunk *k)
{
	int rc = link_next(o, k->h.prev, k->h.next);
	if (!rc)
		rc = link_prev(o, k->h.next, k->h.prev);
	if (rc)
		return rc;
	o->h.nchunks--;
	return cx_free(&o->c, k->off);
}

/* A fresh chunk with room for n bytes (a standard one if they fit):
 * magic and cap set, the rest the caller's (C2). */
static int chunk_new(struct op *o, size_t n, pmtx_off *off,
                     struct list_chunk **p)
{
	void *b;
	int rc = cx_alloc(&o->c, sizeof(**p) + MAX(n, CHUNK_CAP), 0, off, &b);
	if (rc)
		return rc;
	size_t cap = pmtx_usable_size(o->c.r, *off) - sizeof(**p);
	*p = b;
	(*p)->magic = CONT_MAGIC_LIST_CHUNK;
	(*p)->cap = (uint32_t)MIN(cap, UINT32_MAX);
	(*p)->reserved = 0;
	return 0;
}

/* Fill fresh chunk p with the n bytes of cnt elements at lo. */
static void chunk_fill(struct list_chunk *p, const void *b, size_t n,
                       uint32_t cnt, size_t lo, pmtx_off prev,
                       pmtx_off next)
{
	memcpy((unsigned char *)(p + 1) + lo, b, n);
	p->count = cnt;
	p->lo = (uint32_t)lo;
	p->hi = (uint32_t)(lo + n);
	p->prev = prev;
	p->next = next;
}

/* ---- rewriting a chunk ---- */

/* Is byte i of the new contents nb, placed at newlo, already there? */
static int byte_same(const struct chunk *k, const struct img *im,
                     const unsigned char *nb, size_t newlo, size_t i)
{
	size_t x = newlo + i;
	return x >= k->h.lo && x < k->h.hi && im->b[x - k->h.lo] == nb[i];
}

/* The bytes [*from, *to) of nb that differ from what is at newlo. */
static void place_diff(const struct chunk *k, const struct img *im,
                       const unsigned char *nb, size_t nn, size_t newlo,
                       size_t *from, size_t *to)
{
	size_t i = 0, j = nn;
	while (i < j && byte_same(k, im, nb, newlo, i))
		i++;
	while (j > i && byte_same(k, im, nb, newlo, j - 1))
		j--;
	*from = i;
	*to = j;
}

static int chunk_split(struct op *o, struct chunk *k, const unsigned char *nb,
                       size_t nn);

/* Make nb (nn bytes, ncount elements) the contents of chunk k, whose
 * current contents are im (see Rewrites): written where it differs
 * least, or split if too long; k dropped if ncount is 0. */
static int chunk_store(struct op *o, struct chunk *k, const struct img *im,
                       const unsigned char *nb, size_t nn, uint32_t ncount)
{
	if (!ncount)
		return chunk_drop(o, k);
	if (nn > k->h.cap)
		return chunk_split(o, k, nb, nn);
	size_t cand[3], nc = 0, lo = k->h.lo, hi = k->h.hi, cap = k->h.cap;
	if (lo + nn <= cap)
		cand[nc++] = lo;
	if (hi >= nn)
		cand[nc++] = hi - nn;
	cand[nc++] = (cap - nn) / 2;
	size_t best = 0, bf = 0, bt = 0;
	for (size_t i = 0; i < nc; i++) {
		size_t f, t;
		place_diff(k, im, nb, nn, cand[i], &f, &t);
		if (i == 0 || t - f < bt - bf) {
			best = cand[i];
			bf = f;
			bt = t;
		}
	}
	int rc = bt > bf ? cx_write(&o->c, chunk_data(k) + best + bf, nb + bf,
	                            bt - bf)
	                 : 0;
	return rc ? rc : chunk_put(o, k, ncount, best, best + nn);
}

/* The fresh chunks of a split, as they are made. */
struct split {
	struct list_chunk *last;
	pmtx_off first, last_off;
	uint64_t made;
};

/* Make a fresh chunk of the n bytes of cnt elements at b, after the
 * ones made so far (linked among themselves with plain stores: C2). */
static int split_emit(struct op *o, const struct chunk *k, struct split *s,
                      const unsigned char *b, size_t n, uint32_t cnt)
{
	pmtx_off off;
	struct list_chunk *p;
	int rc = chunk_new(o, n, &off, &p);
	if (rc)
		return rc;
	size_t lo = (p->cap - n) / 2;
	chunk_fill(p, b, n, cnt, lo, s->last ? s->last_off : k->h.prev,
	           k->h.next);
	cx_flush_site(&o->c, (unsigned char *)(p + 1) + lo, n,
	              MUT_LIST_SPLIT_DATA_FLUSH);
	if (s->last) {
		s->last->next = off;
		cx_flush_site(&o->c, s->last, sizeof(*s->last),
		              MUT_LIST_SPLIT_HEAD_FLUSH);
	} else {
		s->first = off;
	}
	s->last = p;
	s->last_off = off;
	s->made++;
	return 0;
}

/* Replace chunk k by fresh chunks holding nb (nn bytes), each at most a
 * standard data area (or one element), about equally full. */
static int chunk_split(struct op *o, struct chunk *k, const unsigned char *nb,
                       size_t nn)
{
	struct split s = {NULL, 0, 0, 0};
	size_t pieces = (nn + CHUNK_CAP - 1) / CHUNK_CAP;
	size_t target = (nn + pieces - 1) / pieces, start = 0, pos = 0, d, len;
	uint32_t cnt = 0;
	int rc = 0;
	while (!rc && pos < nn) {
		if (elem_parse(nb, nn, pos, &d, &len))
			return corrupt("element length", k->off);
		size_t es = d + len - pos, cur = pos - start;
		if (cnt && (cur + es > CHUNK_CAP || cur >= target)) {
			rc = split_emit(o, k, &s, nb + start, cur, cnt);
			start = pos;
			cnt = 0;
		}
		pos += es;
		cnt++;
	}
	if (!rc)
		rc = split_emit(o, k, &s, nb + start, nn - start, cnt);
	if (rc)
		return rc;
	cx_flush_site(&o->c, s.last, sizeof(*s.last),
	              MUT_LIST_SPLIT_LAST_FLUSH);
	rc = link_next(o, k->h.prev, s.first);
	if (!rc)
		rc = link_prev(o, k->h.next, s.last_off);
	if (rc)
		return rc;
	o->h.nchunks += s.made - 1;
	return cx_free(&o->c, k->off);
}

/* Merge k (whose contents are kb, kn bytes) into its neighbour on one
 * side if the two hold at most MERGE_MAX bytes; *merged says if so. */
static int chunk_merge(struct op *o, struct chunk *k, const unsigned char *kb,
                       size_t kn, int into_prev, int *merged)
{
	pmtx_off noff = into_prev ? k->h.prev : k->h.next;
	struct chunk n;
	struct img ni;
	*merged = 0;
	if (!noff || kn > MERGE_MAX)
		return 0;
	int rc = chunk_load(o, noff, &n);
	if (rc || kn + (n.h.hi - n.h.lo) > MERGE_MAX)
		return rc;
	if ((rc = img_load(o, &n, &ni)))
		return rc;
	size_t mn = kn + ni.n;
	unsigned char *m = malloc(mn);
	if (!m) {
		img_free(&ni);
		return ENOMEM;
	}
	memcpy(m + (into_prev ? 0 : kn), ni.b, ni.n);
	memcpy(m + (into_prev ? ni.n : 0), kb, kn);
	rc = chunk_store(o, &n, &ni, m, mn, n.h.count + k->h.count);
	free(m);
	img_free(&ni);
	*merged = 1;
	return rc ? rc : chunk_drop(o, k);
}

/* ---- finding elements ---- */

/* The chunk that holds element i (i < count) and i's place in it,
 * walking from the nearer end. */
static int locate(struct op *o, uint64_t i, struct chunk *k, uint32_t *at)
{
	int fwd = i < o->h.count - i;
	uint64_t j = fwd ? i : o->h.count - 1 - i;
	pmtx_off off = fwd ? o->h.head : o->h.tail;
	for (uint64_t n = 0; n < o->h.nchunks; n++) {
		int rc = chunk_load(o, off, k);
		if (rc)
			return rc;
		if (j < k->h.count) {
			*at = (uint32_t)(fwd ? j : k->h.count - 1 - j);
			return 0;
		}
		j -= k->h.count;
		off = fwd ? k->h.next : k->h.prev;
	}
	return corrupt("chunk counts short of the header's", o->l->off);
}

/* Element index i of the API (negative from the tail) as 0..count-1;
 * PMTX_E_NOT_FOUND outside the list. */
static int index_norm(const struct op *o, int64_t i, uint64_t *out)
{
	uint64_t n = o->h.count;
	uint64_t back = i < 0 ? (uint64_t)(-(i + 1)) + 1 : 0;
	if (i < 0 ? back > n : (uint64_t)i >= n)
		return PMTX_E_NOT_FOUND;
	*out = i < 0 ? n - back : (uint64_t)i;
	return 0;
}

/* [start, stop] of LRANGE/LTRIM as [*s, *e]; 0 if the range is empty. */
static int range_norm(const struct op *o, int64_t start, int64_t stop,
                      uint64_t *s, uint64_t *e)
{
	int64_t n = (int64_t)o->h.count;
	if (start < 0)
		start += n;
	if (stop < 0)
		stop += n;
	if (start < 0)
		start = 0;
	if (start > stop || start >= n)
		return 0;
	*s = (uint64_t)start;
	*e = (uint64_t)(stop >= n ? n - 1 : stop);
	return 1;
}

/* ---- push and pop ---- */

/* Write the element into k's free space at end, then make it live. */
static int push_into(struct op *o, struct chunk *k, int end, const void *v,
                     size_t n, size_t need)
{
	size_t at = end == PMTX_LIST_TAIL ? k->h.hi : k->h.lo - need;
	unsigned char *dst = chunk_data(k) + at;
	unsigned char b[LIST_VARINT_MAX + PUSH_ONE_WRITE];
	int rc;
	if (n <= PUSH_ONE_WRITE) {
		rc = cx_write(&o->c, dst, b, elem_put(b, v, n));
	} else {
		size_t hl = varint_put(b, n);
		rc = cx_write(&o->c, dst, b, hl);
		if (!rc)
			rc = cx_write(&o->c, dst + hl, v, n);
	}
	if (rc)
		return rc;
	if (end == PMTX_LIST_TAIL)
		return chunk_put(o, k, k->h.count + 1, k->h.lo, k->h.hi + need);
	return chunk_put(o, k, k->h.count + 1, at, k->h.hi);
}

/* A fresh chunk for the element at end (see Placement), linked. */
static int push_chunk(struct op *o, int end, const void *v, size_t n,
                      size_t need)
{
	pmtx_off off;
	struct list_chunk *p;
	int rc = chunk_new(o, need, &off, &p);
	if (rc)
		return rc;
	unsigned char *b = (unsigned char *)(p + 1);
	size_t lo = !o->h.count ? (p->cap - need) / 2
	          : end == PMTX_LIST_TAIL ? 0 : p->cap - need;
	size_t hl = varint_put(b + lo, n);
	if (n)
		memcpy(b + lo + hl, v, n);
	p->count = 1;
	p->lo = (uint32_t)lo;
	p->hi = (uint32_t)(lo + need);
	p->prev = end == PMTX_LIST_TAIL ? o->h.tail : 0;
	p->next = end == PMTX_LIST_TAIL ? 0 : o->h.head;
	cx_flush_site(&o->c, p, sizeof(*p), MUT_LIST_PUSH_HEAD_FLUSH);
	cx_flush_site(&o->c, b + lo, need, MUT_LIST_PUSH_DATA_FLUSH);
	if (end == PMTX_LIST_TAIL) {
		rc = link_next(o, o->h.tail, off);
		o->h.tail = off;
	} else {
		rc = link_prev(o, o->h.head, off);
		o->h.head = off;
	}
	o->h.nchunks++;
	return rc;
}

static int do_push(struct op *o, int end, const void *v, size_t n)
{
	size_t need = varint_len(n) + n;
	struct chunk k;
	int rc = 0;
	if (o->h.count) {
		rc = chunk_load(o, end == PMTX_LIST_TAIL ? o->h.tail : o->h.head,
		                &k);
		if (rc)
			return rc;
		int fits = end == PMTX_LIST_TAIL ? k.h.cap - k.h.hi >= need
		                                 : k.h.lo >= need;
		rc = fits ? push_into(o, &k, end, v, n, need)
		          : push_chunk(o, end, v, n, need);
	} else {
		rc = push_chunk(o, end, v, n, need);
	}
	if (rc)
		return rc;
	o->h.count++;
	return hdr_put(o);
}

/* Copy the element at end out, then drop it (or its chunk). */
static int do_pop(struct op *o, int end, void *buf, size_t cap, size_t *n)
{
	struct chunk k;
	struct img im;
	size_t at = 0, d = 0, len = 0;
	if (!o->h.count)
		return PMTX_E_NOT_FOUND;
	int rc = chunk_load(o, end == PMTX_LIST_TAIL ? o->h.tail : o->h.head,
	                    &k);
	if (rc || (rc = img_load(o, &k, &im)))
		return rc;
	if (end == PMTX_LIST_TAIL)
		rc = img_seek(&k, &im, k.h.count - 1, &at);
	if (!rc && elem_parse(im.b, im.n, at, &d, &len))
		rc = corrupt("element length", k.off);
	if (!rc && buf && cap)
		memcpy(buf, im.b + d, MIN(len, cap));
	img_free(&im);
	if (rc)
		return rc;
	if (n)
		*n = len;
	if (k.h.count == 1)
		rc = chunk_drop(o, &k);
	else if (end == PMTX_LIST_TAIL)
		rc = chunk_put(o, &k, k.h.count - 1, k.h.lo, k.h.lo + at);
	else
		rc = chunk_put(o, &k, k.h.count - 1, k.h.lo + d + len, k.h.hi);
	if (rc)
		return rc;
	o->h.count--;
	return hdr_put(o);
}

/* ---- set, insert, remove ---- */

/* im with its bytes [a, b) replaced by element v (n bytes), or by
 * nothing if v is NULL: a fresh buffer of *nn bytes. */
static unsigned char *img_splice(const struct img *im, size_t a, size_t b,
                                 const void *v, size_t n, size_t *nn)
{
	size_t ins = v ? varint_len(n) + n : 0;
	*nn = im->n - (b - a) + ins;
	unsigned char *out = malloc(*nn ? *nn : 1);
	if (!out)
		return NULL;
	memcpy(out, im->b, a);
	if (v)
		elem_put(out + a, v, n);
	memcpy(out + a + ins, im->b + b, im->n - b);
	return out;
}

/* Replace [a, b) of chunk k (contents im) by element v (or by nothing);
 * merge after a shrink (Rewrites). */
static int chunk_splice(struct op *o, struct chunk *k, const struct img *im,
                        size_t a, size_t b, const void *v, size_t n,
                        uint32_t ncount)
{
	size_t nn;
	unsigned char *nb = img_splice(im, a, b, v, n, &nn);
	if (!nb)
		return ENOMEM;
	int rc = chunk_store(o, k, im, nb, nn, ncount), merged = 0;
	int shrunk = ncount && nn < im->n;
	if (!rc && shrunk)
		rc = chunk_merge(o, k, nb, nn, 1, &merged);
	if (!rc && shrunk && !merged)
		rc = chunk_merge(o, k, nb, nn, 0, &merged);
	free(nb);
	return rc;
}

static int do_set(struct op *o, uint64_t i, const void *v, size_t n)
{
	struct chunk k;
	struct img im;
	uint32_t at;
	size_t pos, d, len;
	int rc = locate(o, i, &k, &at);
	if (rc || (rc = img_load(o, &k, &im)))
		return rc;
	rc = img_seek(&k, &im, at, &pos);
	if (!rc && elem_parse(im.b, im.n, pos, &d, &len))
		rc = corrupt("element length", k.off);
	if (!rc)
		rc = chunk_splice(o, &k, &im, pos, d + len, v, n, k.h.count);
	img_free(&im);
	return rc ? rc : hdr_put(o);
}

/* Find the first element equal to (p, pn) from the head: its chunk, and
 * its bytes [*a, *b) in the chunk's image (loaded in im). */
static int find_first(struct op *o, const void *p, size_t pn,
                      struct chunk *k, struct img *im, size_t *a, size_t *b)
{
	pmtx_off off = o->h.head;
	for (uint64_t c = 0; c < o->h.nchunks; c++) {
		int rc = chunk_load(o, off, k);
		if (rc || (rc = img_load(o, k, im)))
			return rc;
		size_t pos = 0, d, len;
		for (uint32_t e = 0; e < k->h.count; e++, pos = d + len) {
			if (elem_parse(im->b, im->n, pos, &d, &len)) {
				img_free(im);
				return corrupt("element length", off);
			}
			if (len == pn && (!pn || !memcmp(im->b + d, p, pn))) {
				*a = pos;
				*b = d + len;
				return 0;
			}
		}
		img_free(im);
		off = k->h.next;
	}
	return off ? corrupt("chain longer than nchunks", o->l->off)
	           : PMTX_E_NOT_FOUND;
}

static int do_insert(struct op *o, const void *pv, size_t pn, int after,
                     const void *v, size_t n)
{
	struct chunk k;
	struct img im;
	size_t a, b;
	int rc = find_first(o, pv, pn, &k, &im, &a, &b);
	if (rc)
		return rc;
	size_t at = after ? b : a;
	rc = chunk_splice(o, &k, &im, at, at, v, n, k.h.count + 1);
	img_free(&im);
	if (rc)
		return rc;
	o->h.count++;
	return hdr_put(o);
}

/* The elements of chunk k (contents im) that remove takes: up to *left
 * (all if 0 came in as "no limit": *left = UINT64_MAX) matching ones,
 * from the head or the tail; keep[e] says which stay. */
static int mark_removed(const struct chunk *k, const struct img *im,
                        const void *v, size_t n, int from_tail,
                        uint64_t *left, unsigned char *keep, size_t *pos,
                        uint32_t *taken)
{
	size_t at = 0, d, len;
	uint32_t cnt = k->h.count;
	*taken = 0;
	for (uint32_t e = 0; e < cnt; e++, at = d + len) {
		if (elem_parse(im->b, im->n, at, &d, &len))
			return corrupt("element length", k->off);
		pos[e] = at;
		keep[e] = !(len == n && (!n || !memcmp(im->b + d, v, n)));
	}
	pos[cnt] = im->n;
	for (uint32_t i = 0; i < cnt; i++) {
		uint32_t e = from_tail ? cnt - 1 - i : i;
		if (keep[e])
			continue;
		if (*left)
			(*left)--, (*taken)++;
		else
			keep[e] = 1;
	}
	return 0;
}

/* The kept elements of im, packed: a fresh buffer of *nn bytes. */
static unsigned char *img_keep(const struct img *im, const unsigned char *keep,
                               const size_t *pos, uint32_t cnt, size_t *nn)
{
	unsigned char *out = malloc(im->n ? im->n : 1);
	if (!out)
		return NULL;
	*nn = 0;
	for (uint32_t e = 0; e < cnt; e++)
		if (keep[e]) {
			memcpy(out + *nn, im->b + pos[e], pos[e + 1] - pos[e]);
			*nn += pos[e + 1] - pos[e];
		}
	return out;
}

/* Remove from chunk k what mark_removed takes; merge toward the walk's
 * origin. *took: how many. */
static int remove_in(struct op *o, struct chunk *k, const void *v, size_t n,
                     int from_tail, uint64_t *left, uint32_t *took)
{
	struct img im;
	int rc = img_load(o, k, &im);
	if (rc)
		return rc;
	uint32_t cnt = k->h.count;
	unsigned char *keep = malloc(cnt);
	size_t *pos = malloc((cnt + 1) * sizeof(*pos)), nn;
	unsigned char *nb = NULL;
	rc = keep && pos ? 0 : ENOMEM;
	if (!rc)
		rc = mark_removed(k, &im, v, n, from_tail, left, keep, pos, took);
	if (!rc && *took && !(nb = img_keep(&im, keep, pos, cnt, &nn)))
		rc = ENOMEM;
	if (!rc && *took)
		rc = chunk_store(o, k, &im, nb, nn, cnt - *took);
	int merged;
	if (!rc && *took && cnt > *took)
		rc = chunk_merge(o, k, nb, nn, !from_tail, &merged);
	free(nb);
	free(pos);
	free(keep);
	img_free(&im);
	return rc;
}

static int do_remove(struct op *o, const void *v, size_t n, int64_t count,
                     uint64_t *removed)
{
	int from_tail = count < 0;
	uint64_t left = count == 0 ? UINT64_MAX
	              : from_tail ? (uint64_t)(-(count + 1)) + 1
	                          : (uint64_t)count;
	pmtx_off off = from_tail ? o->h.tail : o->h.head;
	uint64_t total = o->h.nchunks, done = 0;
	for (uint64_t c = 0; c < total && left; c++) {
		struct chunk k;
		uint32_t took;
		int rc = chunk_load(o, off, &k);
		if (rc)
			return rc;
		off = from_tail ? k.h.prev : k.h.next;
		if ((rc = remove_in(o, &k, v, n, from_tail, &left, &took)))
			return rc;
		done += took;
		o->h.count -= took;
		if (!off)
			break;
	}
	*removed = done;
	return done ? hdr_put(o) : 0;
}

/* ---- trim ---- */

/* Drop m elements at end: whole chunks freed, then lo or hi of the next
 * moved; the new end's outward link cleared once. */
static int drop_end(struct op *o, int end, uint64_t m)
{
	int tail = end == PMTX_LIST_TAIL, freed = 0, rc = 0;
	uint64_t chunks = o->h.nchunks;
	for (uint64_t c = 0; m && !rc; c++) {
		struct chunk k;
		if (c >= chunks)
			return corrupt("chain longer than nchunks", o->l->off);
		if ((rc = chunk_load(o, tail ? o->h.tail : o->h.head, &k)))
			return rc;
		if (k.h.count <= m) {
			m -= k.h.count;
			o->h.count -= k.h.count;
			o->h.nchunks--;
			*(tail ? &o->h.tail : &o->h.head) = tail ? k.h.prev
			                                        : k.h.next;
			freed = 1;
			rc = cx_free(&o->c, k.off);
			continue;
		}
		struct img im;
		size_t at;
		if ((rc = img_load(o, &k, &im)))
			return rc;
		rc = img_seek(&k, &im, tail ? k.h.count - (uint32_t)m
		                            : (uint32_t)m, &at);
		img_free(&im);
		if (!rc)
			rc = chunk_put(o, &k, k.h.count - (uint32_t)m,
			               tail ? k.h.lo : k.h.lo + at,
			               tail ? k.h.lo + at : k.h.hi);
		o->h.count -= m;
		m = 0;
	}
	if (rc || !freed)
		return rc;
	if (!o->h.count) {
		o->h.head = o->h.tail = 0;
		return o->h.nchunks ? corrupt("chunks left in an empty list",
		                              o->l->off)
		                    : 0;
	}
	return tail ? link_next(o, o->h.tail, 0) : link_prev(o, o->h.head, 0);
}

static int do_trim(struct op *o, int64_t start, int64_t stop)
{
	uint64_t s, e, n = o->h.count;
	if (!range_norm(o, start, stop, &s, &e))
		s = n, e = n - 1; /* everything goes from the head */
	int rc = drop_end(o, PMTX_LIST_HEAD, s);
	if (!rc && e + 1 < n)
		rc = drop_end(o, PMTX_LIST_TAIL, n - 1 - e);
	return rc ? rc : hdr_put(o);
}

/* ---- range ---- */

static int range_chunk(struct op *o, const struct chunk *k, uint32_t at,
                       uint64_t *left, pmtx_list_fn fn, void *arg)
{
	struct img im;
	size_t pos, d, len;
	int rc = img_load(o, k, &im);
	if (rc)
		return rc;
	rc = img_seek(k, &im, at, &pos);
	for (uint32_t e = at; !rc && e < k->h.count && *left;
	     e++, (*left)--, pos = d + len) {
		pmtx_bytes v;
		if (elem_parse(im.b, im.n, pos, &d, &len))
			rc = corrupt("element length", k->off);
		else if (!(rc = view_of(o, chunk_data(k) + k->h.lo + d,
		                        im.b + d, len, &v)))
			rc = fn(&v, arg);
	}
	img_free(&im);
	return rc;
}

static int do_range(struct op *o, int64_t start, int64_t stop,
                    pmtx_list_fn fn, void *arg)
{
	uint64_t s, e;
	struct chunk k;
	uint32_t at;
	if (!range_norm(o, start, stop, &s, &e))
		return 0;
	int rc = locate(o, s, &k, &at);
	uint64_t left = e - s + 1;
	for (uint64_t c = 0; !rc; c++) {
		if ((rc = range_chunk(o, &k, at, &left, fn, arg)) || !left)
			return rc;
		if (c + 1 >= o->h.nchunks)
			return corrupt("chain longer than nchunks", o->l->off);
		rc = chunk_load(o, k.h.next, &k);
		at = 0;
	}
	return rc;
}

/* ---- the public functions ---- */

static pmtx_region *tx_region_of(pmtx_tx **tx)
{
	if (!*tx)
		*tx = pmtx_tx_current();
	return *tx ? pmtx_tx_region(*tx) : NULL;
}

int pmtx_list_create(pmtx_tx *tx, pmtx_off *out)
{
	struct cx c;
	struct list_hdr *h;
	pmtx_off off;
	pmtx_region *r = tx_region_of(&tx);
	if (!out)
		return PMTX_E_INVAL;
	if (!r)
		return PMTX_E_NO_TX;
	int rc = cx_begin(&c, r, tx, PMTX_RT_DEFAULT);
	if (rc)
		return rc;
	rc = cx_alloc(&c, sizeof(*h), 0, &off, (void **)&h);
	if (!rc) {
		memset(h, 0, sizeof(*h));
		cont_hdr_init(&h->h, CONT_MAGIC_LIST, 0);
		cx_flush_site(&c, h, sizeof(*h), MUT_LIST_CREATE_FLUSH);
		*out = off;
	}
	return cx_end(&c, rc);
}

/* Walk the chain of the list (every chunk checked, the walk bounded by
 * nchunks: C3), calling fn(off, arg) for each chunk if fn is not NULL.
 * A chain that checks has no chunk twice: a cycle never reaches 0. */
static int chain_walk(struct op *o, int (*fn)(pmtx_off off, void *arg),
                      void *arg)
{
	pmtx_off off = o->h.head;
	uint64_t n = 0;
	for (; off && n < o->h.nchunks; n++) {
		struct chunk k;
		int rc = chunk_load(o, off, &k);
		if (!rc && fn)
			rc = fn(off, arg);
		if (rc)
			return rc;
		off = k.h.next;
	}
	return off || n != o->h.nchunks
	               ? corrupt("chain and nchunks disagree", o->l->off)
	               : 0;
}

static int chunk_free(pmtx_off off, void *arg)
{
	return cx_free(arg, off);
}

int pmtx_list_destroy(pmtx_tx *tx, pmtx_off list)
{
	pmtx_region *r = tx_region_of(&tx);
	if (!r)
		return PMTX_E_NO_TX;
	int rc = cont_check_hdr(r, list, CONT_MAGIC_LIST,
	                        sizeof(struct list_hdr));
	if (rc)
		return rc;
	pmtx_list l = {.r = r, .off = list, .rt = PMTX_RT_DEFAULT};
	struct op o;
	if ((rc = op_begin(&o, tx, &l, 1)))
		return rc;
	rc = chain_walk(&o, NULL, NULL);
	if (!rc)
		rc = chain_walk(&o, chunk_free, &o.c);
	if (!rc)
		rc = cx_free(&o.c, list);
	return cx_end(&o.c, rc);
}

int pmtx_list_open(pmtx_region *r, pmtx_off list, const pmtx_cont_options *o,
                   pmtx_list **out)
{
	if (!r || !out)
		return PMTX_E_INVAL;
	pmtx_runtime rt = cont_runtime(o);
	if (rt == PMTX_RT_COW ||
	    (rt == PMTX_RT_DEFAULT && pmtx_region_runtime(r) == PMTX_RT_COW)) {
		pmtx__set_errmsg("containers do not run under copy-on-write");
		return PMTX_E_UNSUPPORTED;
	}
	int rc = cont_check_hdr(r, list, CONT_MAGIC_LIST,
	                        sizeof(struct list_hdr));
	if (rc)
		return rc;
	pmtx_list *l = malloc(sizeof(*l));
	if (!l)
		return ENOMEM;
	*l = (pmtx_list){.r = r, .off = list, .rt = rt};
	cx_views_init(&l->views);
	*out = l;
	return 0;
}

void pmtx_list_close(pmtx_list *l)
{
	if (!l)
		return;
	cx_views_fini(&l->views);
	free(l);
}

pmtx_off pmtx_list_off(const pmtx_list *l)
{
	return l ? l->off : 0;
}

int pmtx_list_len(pmtx_tx *tx, pmtx_list *l, uint64_t *n)
{
	struct op o;
	if (!l || !n)
		return PMTX_E_INVAL;
	int rc = op_begin(&o, tx, l, 0);
	if (!rc)
		*n = o.h.count;
	return rc;
}

static int end_ok(int end)
{
	return end == PMTX_LIST_HEAD || end == PMTX_LIST_TAIL;
}

int pmtx_list_push(pmtx_tx *tx, pmtx_list *l, int end, const void *v,
                   size_t n)
{
	struct op o;
	if (!end_ok(end))
		return PMTX_E_INVAL;
	int rc = w_begin(&o, tx, l, v, n);
	return rc ? rc : op_end(&o, do_push(&o, end, v, n));
}

int pmtx_list_pop(pmtx_tx *tx, pmtx_list *l, int end, void *buf, size_t cap,
                  size_t *n)
{
	struct op o;
	if (!l || !end_ok(end))
		return PMTX_E_INVAL;
	int rc = op_begin(&o, tx, l, 1);
	return rc ? rc : op_end(&o, do_pop(&o, end, buf, cap, n));
}

int pmtx_list_index(pmtx_tx *tx, pmtx_list *l, int64_t i, pmtx_bytes *v)
{
	struct op o;
	struct chunk k;
	struct img im;
	uint64_t j;
	uint32_t at;
	size_t pos, d, len;
	if (!l || !v)
		return PMTX_E_INVAL;
	int rc = op_begin(&o, tx, l, 0);
	if (rc || (rc = index_norm(&o, i, &j)) || (rc = locate(&o, j, &k, &at)))
		return rc;
	if ((rc = img_load(&o, &k, &im)))
		return rc;
	rc = img_seek(&k, &im, at, &pos);
	if (!rc && elem_parse(im.b, im.n, pos, &d, &len))
		rc = corrupt("element length", k.off);
	if (!rc)
		rc = view_of(&o, chunk_data(&k) + k.h.lo + d, im.b + d, len, v);
	img_free(&im);
	return rc;
}

int pmtx_list_set(pmtx_tx *tx, pmtx_list *l, int64_t i, const void *v,
                  size_t n)
{
	struct op o;
	uint64_t j;
	int rc = w_begin(&o, tx, l, v, n);
	if (rc)
		return rc;
	rc = index_norm(&o, i, &j);
	return op_end(&o, rc ? rc : do_set(&o, j, v ? v : "", n));
}

int pmtx_list_insert(pmtx_tx *tx, pmtx_list *l, const void *pivot, size_t pn,
                     int after, const void *v, size_t n)
{
	struct op o;
	if (!l || (n && !v) || (pn && !pivot))
		return PMTX_E_INVAL;
	if (!cont_len_ok(n) || !cont_len_ok(pn))
		return PMTX_E_TOO_BIG;
	int rc = op_begin(&o, tx, l, 1);
	return rc ? rc
	          : op_end(&o, do_insert(&o, pivot, pn, after, v ? v : "", n));
}

int pmtx_list_remove(pmtx_tx *tx, pmtx_list *l, const void *v, size_t n,
                     int64_t count, uint64_t *removed)
{
	struct op o;
	uint64_t dummy;
	int rc = w_begin(&o, tx, l, v, n);
	return rc ? rc
	          : op_end(&o, do_remove(&o, v, n, count,
	                                 removed ? removed : &dummy));
}

int pmtx_list_trim(pmtx_tx *tx, pmtx_list *l, int64_t start, int64_t stop)
{
	struct op o;
	if (!l)
		return PMTX_E_INVAL;
	int rc = op_begin(&o, tx, l, 1);
	return rc ? rc : op_end(&o, do_trim(&o, start, stop));
}

int pmtx_list_range(pmtx_tx *tx, pmtx_list *l, int64_t start, int64_t stop,
                    pmtx_list_fn fn, void *arg)
{
	struct op o;
	if (!l || !fn)
		return PMTX_E_INVAL;
	int rc = op_begin(&o, tx, l, 0);
	return rc ? rc : do_range(&o, start, stop, fn, arg);
}

/* ---- the checker ---- */

static int check_fail(char *msg, size_t len, const char *what, pmtx_off off)
{
	if (len)
		snprintf(msg, len, "%s (offset %llu)", what,
		         (unsigned long long)off);
	return PMTX_E_CORRUPT;
}

/* One chunk: its elements parse exactly to hi (LL2). */
static int check_chunk(struct op *o, const struct chunk *k, char *msg,
                       size_t len)
{
	struct img im;
	size_t pos = 0, d, n;
	int rc = img_load(o, k, &im);
	if (rc)
		return rc;
	for (uint32_t e = 0; !rc && e < k->h.count; e++, pos = d + n)
		if (elem_parse(im.b, im.n, pos, &d, &n))
			rc = check_fail(msg, len, "element does not parse",
			                k->off);
	if (!rc && pos != im.n)
		rc = check_fail(msg, len, "bytes after the last element",
		                k->off);
	img_free(&im);
	return rc;
}

static int check_chain(struct op *o, char *msg, size_t len)
{
	pmtx_off off = o->h.head, prev = 0;
	uint64_t n = 0, sum = 0;
	for (; off; n++) {
		struct chunk k;
		if (n == o->h.nchunks)
			return check_fail(msg, len, "more chunks than nchunks",
			                  off);
		int rc = chunk_load(o, off, &k);
		if (rc)
			return check_fail(msg, len, pmtx_errmsg(), off);
		if (k.h.prev != prev)
			return check_fail(msg, len, "prev link", off);
		if (k.h.reserved)
			return check_fail(msg, len, "reserved field", off);
		if ((rc = check_chunk(o, &k, msg, len)))
			return rc;
		sum += k.h.count;
		prev = off;
		off = k.h.next;
	}
	if (prev != o->h.tail || n != o->h.nchunks || sum != o->h.count)
		return check_fail(msg, len, "tail, nchunks or count",
		                  o->l->off);
	return 0;
}

int list_check(pmtx_list *l, char *msg, size_t len)
{
	struct op o;
	if (len)
		msg[0] = 0;
	int rc = op_begin(&o, NULL, l, 0);
	if (rc) {
		if (len)
			snprintf(msg, len, "header: %s", pmtx_errmsg());
		return rc;
	}
	return check_chain(&o, msg, len);
}

/* ---- the block walk ---- */

int list_walk(pmtx_list *l, int (*fn)(pmtx_off off, void *arg), void *arg)
{
	struct op o;
	if (!l || !fn)
		return PMTX_E_INVAL;
	int rc = op_begin(&o, NULL, l, 0);
	if (rc || (rc = chain_walk(&o, NULL, NULL)) || (rc = fn(l->off, arg)))
		return rc;
	return chain_walk(&o, fn, arg);
}
