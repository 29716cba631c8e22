/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * str.c - strings: a 16-byte value (pmtx_str) that holds up to 15 bytes
 * itself and a longer string in a heap block (format: str_layout.h
 * SL1-SL2; the operation context: cont.h C1-C4).
 *
 * Design
 * ------
 * A string is not a block of its own: its value lives wherever the
 * application put it (a root field, another container's value), so the
 * functions take the region, and every write to the value goes through
 * cx_write (it may be inside a linked block of anything). Only the bytes
 * of the value that change are written: an append to an inline string
 * writes its new bytes and the tag, a heap string's growth in place only
 * the length.
 *
 * Heap blocks. set of more than 15 bytes always takes a fresh block of
 * the exact size (plain stores, flushed before the value names it: C2),
 * and frees the old one: that writes back the string's lines once, where
 * an overwrite in place would log them too (an undo record, a redo
 * entry). append and setrange write in place, through cx_write, when the
 * block's capacity (its usable size) holds the new length: the new bytes
 * (and the zeros of a gap, SETRANGE's), then the length in the value.
 * When it does not, the string moves to a fresh block of twice the old
 * capacity (at least the new length, at most PMTX_CONT_BYTES_MAX; an
 * inline string counts 15), so that n appends cost O(log n) moves, as
 * Redis's sds does; the old block is freed in the same transaction
 * (SL2). A string that becomes 15 bytes or shorter (set) goes back
 * inline and frees its block. Bytes past the length are never read
 * (SL1): a gap is zeroed when it becomes part of the string.
 *
 * Checks (C3). A heap value's offset must name a 16-byte aligned heap
 * block inside the region whose usable size holds the length, the
 * length must be over 15 and at most PMTX_CONT_BYTES_MAX, and the tag
 * one of the two forms: anything else is PMTX_E_CORRUPT, before any
 * write.
 *
 * Reads (C1) go through cx_read. Views (pmtx_str_get): a string of up to
 * 8 bytes is copied into the view itself (pmtx_bytes.inl); a longer one
 * is viewed in place (the value's own bytes, or the block's) when plain
 * loads see the transaction's writes or its bytes in place are the ones
 * the transaction sees. Otherwise the transaction (redo, after it wrote
 * the string) holds them in its write set only: they are copied into a
 * buffer freed when the transaction ends (cx_view, cont.h C5), and such
 * a view is valid until then, not until the string is next written:
 * there is no handle to keep the copy in.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cont.h"
#include "str_layout.h"

/* A string as the transaction sees it. */
struct sval {
	unsigned char b[16]; /* the value */
	size_t n;            /* length */
	int heap;
	pmtx_off off;        /* heap: the block */
	size_t cap;          /* heap: its usable size */
};

static int corrupt(const pmtx_str *s, const char *what)
{
	pmtx__set_errmsg("string at %p: %s", (const void *)s, what);
	return PMTX_E_CORRUPT;
}

/* Are the 16 bytes at s inside the region? */
static int in_region(pmtx_region *r, const void *s)
{
	pmtx_off off = pmtx_off_of(r, s);
	return off && pmtx_region_size(r) - off >= sizeof(pmtx_str);
}

/* The value at s, checked (C3). */
static int str_load(struct cx *c, const pmtx_str *s, struct sval *v)
{
	if (in_region(c->r, s))
		cx_read(c, v->b, s, sizeof(v->b));
	else
		memcpy(v->b, s, sizeof(v->b));
	unsigned tag = v->b[15];
	v->heap = 0;
	v->off = 0;
	v->cap = 0;
	v->n = tag;
	if (tag <= PMTX_STR_INLINE_MAX)
		return 0;
	uint64_t w1;
	memcpy(&v->off, v->b, sizeof(v->off));
	memcpy(&w1, v->b + 8, sizeof(w1));
	v->heap = 1;
	v->n = (size_t)(w1 & STR_LEN_MASK);
	if (tag != STR_TAG_HEAP || v->b[14])
		return corrupt(s, "unknown tag");
	if (v->n <= PMTX_STR_INLINE_MAX || !cont_len_ok(v->n))
		return corrupt(s, "heap length out of bounds");
	if (!cx_block(c, v->off, v->n, 0) ||
	    (v->cap = pmtx_usable_size(c->r, v->off)) < v->n)
		return corrupt(s, "offset names no block that holds it");
	return 0;
}

static void heap_value(unsigned char b[16], pmtx_off off, size_t n)
{
	uint64_t w1 = (uint64_t)n | (uint64_t)STR_TAG_HEAP << 56;
	memcpy(b, &off, sizeof(off));
	memcpy(b + 8, &w1, sizeof(w1));
}

/* Write the bytes of the value that change from old to nb. */
static int value_put(struct cx *c, pmtx_str *s, const unsigned char *old,
                     const unsigned char *nb)
{
	size_t i = 0, j = sizeof(s->b);
	while (i < j && old[i] == nb[i])
		i++;
	while (j > i && old[j - 1] == nb[j - 1])
		j--;
	return i < j ? cx_write(c, s->b + i, nb + i, j - i) : 0;
}

static int write_zeros(struct cx *c, unsigned char *dst, size_t n)
{
	static const unsigned char zero[4096];
	int rc = 0;
	for (size_t d = 0; !rc && d < n; d += sizeof(zero))
		rc = cx_write(c, dst + d, zero, MIN(n - d, sizeof(zero)));
	return rc;
}

/* ---- the one write: the first keep bytes of the string, zeros up to
 * at, then p (n bytes) at at ---- */

static int write_inline(struct cx *c, pmtx_str *s, const struct sval *v,
                        size_t keep, size_t at, const void *p, size_t n)
{
	unsigned char nb[16] = {0};
	memcpy(nb, v->b, keep); /* keep <= 15: v is inline or keep is 0 */
	if (n)
		memcpy(nb + at, p, n);
	nb[15] = (unsigned char)MAX(keep, at + n);
	int rc = value_put(c, s, v->b, nb);
	return !rc && v->heap ? cx_free(c, v->off) : rc;
}

static int write_in_place(struct cx *c, pmtx_str *s, const struct sval *v,
                          size_t at, const void *p, size_t n)
{
	unsigned char *b = (unsigned char *)c->base + v->off, nb[16];
	size_t len = MAX(v->n, at + n);
	int rc = at > v->n ? write_zeros(c, b + v->n, at - v->n) : 0;
	if (!rc)
		rc = cx_write(c, b + at, p, n);
	heap_value(nb, v->off, len);
	return rc ? rc : value_put(c, s, v->b, nb);
}

/* A fresh block of cap bytes with the new contents (C2). */
static int write_moved(struct cx *c, pmtx_str *s, const struct sval *v,
                       size_t cap, size_t keep, size_t at, const void *p,
                       size_t n)
{
	pmtx_off off;
	unsigned char *b, nb[16];
	size_t len = MAX(keep, at + n);
	int rc = cx_alloc(c, cap, 0, &off, (void **)&b);
	if (rc)
		return rc;
	if (v->heap)
		cx_read(c, b, c->base + v->off, keep);
	else
		memcpy(b, v->b, keep);
	if (at > keep)
		memset(b + keep, 0, at - keep);
	if (n)
		memcpy(b + at, p, n);
	cx_flush_site(c, b, len, MUT_STR_MOVED_FLUSH);
	heap_value(nb, off, len);
	rc = value_put(c, s, v->b, nb);
	return !rc && v->heap ? cx_free(c, v->off) : rc;
}

static int str_write(struct cx *c, pmtx_str *s, const struct sval *v,
                     size_t keep, size_t at, const void *p, size_t n)
{
	size_t len = MAX(keep, at + n);
	if (len <= PMTX_STR_INLINE_MAX)
		return write_inline(c, s, v, keep, at, p, n);
	if (v->heap && keep == v->n && v->cap >= len)
		return write_in_place(c, s, v, at, p, n);
	size_t cap = len, had = v->heap ? v->cap : PMTX_STR_INLINE_MAX;
	if (keep) /* growing: double (see Heap blocks) */
		cap = MAX(len, MIN(2 * had, PMTX_CONT_BYTES_MAX));
	return write_moved(c, s, v, cap, keep, at, p, n);
}

/* Begin a write of the string at s: its value loaded. */
static int w_begin(struct cx *c, pmtx_region *r, pmtx_tx *tx, pmtx_str *s,
                   struct sval *v)
{
	if (!in_region(r, s))
		return PMTX_E_RANGE;
	int rc = cx_begin(c, r, tx, PMTX_RT_DEFAULT);
	if (rc)
		return rc;
	rc = str_load(c, s, v);
	return rc ? cx_end(c, rc) : 0;
}

/* ---- the public functions ---- */

int pmtx_str_len(pmtx_region *r, pmtx_tx *tx, const pmtx_str *s, size_t *n)
{
	struct cx c;
	struct sval v;
	if (!r || !s || !n)
		return PMTX_E_INVAL;
	*n = 0;
	int rc = cx_begin_read(&c, r, tx);
	if (!rc && !(rc = str_load(&c, s, &v)))
		*n = v.n;
	return rc;
}

int pmtx_str_get(pmtx_region *r, pmtx_tx *tx, const pmtx_str *s,
                 pmtx_bytes *out)
{
	struct cx c;
	struct sval v;
	if (!r || !s || !out)
		return PMTX_E_INVAL;
	int rc = cx_begin_read(&c, r, tx);
	if (rc || (rc = str_load(&c, s, &v)))
		return rc;
	out->n = v.n;
	out->inl = 0;
	if (v.n <= sizeof(out->inl)) {
		memcpy(&out->inl, v.b, v.n);
		out->p = &out->inl;
		return 0;
	}
	if (v.heap)
		return cx_view(&c, NULL, c.base + v.off, NULL, v.n, out);
	if (!in_region(r, s))
		out->p = s->b;
	else
		rc = cx_view(&c, NULL, s->b, NULL, v.n, out);
	return rc;
}

int pmtx_str_read(pmtx_region *r, pmtx_tx *tx, const pmtx_str *s, size_t at,
                  void *buf, size_t n, size_t *got)
{
	struct cx c;
	struct sval v;
	if (!r || !s || (n && !buf))
		return PMTX_E_INVAL;
	int rc = cx_begin_read(&c, r, tx);
	if (rc || (rc = str_load(&c, s, &v)))
		return rc;
	size_t k = at < v.n ? MIN(n, v.n - at) : 0;
	if (k && v.heap)
		cx_read(&c, buf, c.base + v.off + at, k);
	else if (k)
		memcpy(buf, v.b + at, k);
	if (got)
		*got = k;
	return 0;
}

/* How a write places its bytes: set replaces the value, append writes
 * at its end, setrange at an offset (a gap past the end reads as zero
 * bytes). */
enum { W_SET, W_APPEND, W_RANGE };

/* set, append, setrange: n bytes from p written at offset at (setrange's;
 * 0 for the others), the arguments checked before anything begins.
 * Inlined into each, so that each stays a call site of its own (as
 * cx_begin is, for PMTX_RT_AUTO). */
static inline __attribute__((always_inline)) int
str_put(pmtx_region *r, pmtx_tx *tx, pmtx_str *s, int how, size_t at,
        const void *p, size_t n)
{
	struct cx c;
	struct sval v;
	if (!r || !s || (n && !p))
		return PMTX_E_INVAL;
	if (!cont_len_ok(at) || !cont_len_ok(n) || !cont_len_ok(at + n))
		return PMTX_E_TOO_BIG;
	int rc = w_begin(&c, r, tx, s, &v);
	if (rc)
		return rc;
	if (how == W_SET)
		return cx_end(&c, str_write(&c, s, &v, 0, 0, p, n));
	if (how == W_APPEND) {
		if (!cont_len_ok(v.n + n))
			return cx_end(&c, PMTX_E_TOO_BIG);
		at = v.n;
	}
	/* Redis: an empty value changes nothing, however far at is. */
	return cx_end(&c, n ? str_write(&c, s, &v, v.n, at, p, n) : 0);
}

int pmtx_str_set(pmtx_region *r, pmtx_tx *tx, pmtx_str *s, const void *p,
                 size_t n)
{
	return str_put(r, tx, s, W_SET, 0, p, n);
}

int pmtx_str_append(pmtx_region *r, pmtx_tx *tx, pmtx_str *s, const void *p,
                    size_t n)
{
	return str_put(r, tx, s, W_APPEND, 0, p, n);
}

int pmtx_str_setrange(pmtx_region *r, pmtx_tx *tx, pmtx_str *s, size_t at,
                      const void *p, size_t n)
{
	return str_put(r, tx, s, W_RANGE, at, p, n);
}

int pmtx_str_clear(pmtx_region *r, pmtx_tx *tx, pmtx_str *s)
{
	struct cx c;
	struct sval v;
	static const unsigned char zero[16];
	if (!r || !s)
		return PMTX_E_INVAL;
	int rc = w_begin(&c, r, tx, s, &v);
	if (rc)
		return rc;
	rc = value_put(&c, s, v.b, zero);
	if (!rc && v.heap)
		rc = cx_free(&c, v.off);
	return cx_end(&c, rc);
}
