/*
 * obj.c - pmkv's persistent objects: one interface over the two versions
 * of the store (layout.h), so that the table (assoc.c) and the operations
 * (store.c) are written once.
 *
 * DESIGN
 * opt: an object is a heap block, named by its offset. A field is read
 * with a plain load until the transaction has written, then with
 * pmtx_read (which sees the transaction's own writes under redo), and is
 * written with pmtx_write.
 * wrapped: an object is a pmtx copy-on-write object, named by its
 * wrapper, and every access opens it (pmtx_cow_open), as the seed's
 * wrapped version goes through its accessors for every access. Under the
 * copy-on-write runtime a write opens the object for writing (the first
 * such open copies the payload) and stores into the copy; a read loads
 * from whatever payload the open returns (this transaction's copy, if it
 * writes the object). Under undo and redo a wrapper can only be opened
 * for reading: writes go to the current payload through pmtx_write, and
 * reads through pmtx_read.
 *
 * Invariants
 *  O1. Every object offset read from the region is checked before it is
 *      followed: kvx_view checks the block (opt), or the wrapper and its
 *      payload (wrapped), against the size the caller needs. kvx_get,
 *      kvx_put and kvx_write take fields of checked objects only (a view
 *      taken, kvx_new's, or the meta object, checked at open).
 *  O2. A view is for reading. Under redo and copy-on-write it shows the
 *      payload as committed (or as it was when the view was taken): the
 *      caller reads through it only bytes that never change once the
 *      object is linked (an entry's hash, key length and key), or any
 *      byte in a reader (no writer runs: store.c S2). Fields that change
 *      are read with kvx_get.
 *  O3. A fresh object is written with plain stores through the pointer
 *      kvx_new gives, then kvx_flush (layout.h L2); under copy-on-write
 *      that is the payload as created, which nothing reaches until the
 *      transaction links the object.
 *  O4. The first failure of kvx_get (a wrapper that does not open) is
 *      kept in x->err, and reads as 0; store.c's x_end aborts a
 *      transaction whose x->err is set, so a failed read never leads to a
 *      commit.
 */
#include <string.h>

#include "store_int.h"

/* Wrapped, under the copy-on-write runtime: writes go to private copies,
 * reads are plain loads (pmtx_read is not available there). */
static int cow(const struct kvx *x)
{
	return x->tx && pmtx_tx_runtime(x->tx) == PMTX_RT_COW;
}

/* The payload of wrapper w as this operation sees it, in *p: 0, or the
 * status of the open (a copy-on-write write's copy may not fit). */
static int payload(struct kvx *x, pmtx_off w, int mode, void **p)
{
	if (!x->tx) {
		*p = (void *)pmtx_cow_peek(x->s->r, w);
		return *p ? 0 : PMTX_E_CORRUPT;
	}
	return pmtx_cow_open(x->tx, w, mode, NULL, p);
}

const void *kvx_view(struct kvx *x, pmtx_off obj, size_t n, size_t *size)
{
	struct pmkv_store *s = x->s;
	void *p;
	size_t have;
	if (!obj || obj % 16)
		return NULL;
	if (!s->wrapped) {
		have = pmtx_usable_size(s->r, obj);
		p = s->base + obj;
	} else {
		if (pmtx_usable_size(s->r, obj) == 0 ||
		    payload(x, obj, PMTX_COW_READ, &p))
			return NULL;
		have = pmtx_usable_size(s->r, pmtx_off_of(s->r, p));
	}
	if (have < n)
		return NULL;
	if (size)
		*size = have;
	return p;
}

static void fail(struct kvx *x, int rc)
{
	if (!x->err)
		x->err = rc;
}

uint64_t kvx_get(struct kvx *x, struct kvref f)
{
	struct pmkv_store *s = x->s;
	uint64_t v;
	char *p;
	int rc;
	if (!s->wrapped) {
		p = s->base + f.obj + f.at;
		if (!x->wrote || pmtx_read(x->tx, &v, p, sizeof(v)))
			return __atomic_load_n((const uint64_t *)p,
			                       __ATOMIC_RELAXED);
		return v;
	}
	if ((rc = payload(x, f.obj, PMTX_COW_READ, (void **)&p))) {
		fail(x, rc);
		return 0;
	}
	p += f.at;
	if (!x->tx || cow(x))
		return __atomic_load_n((const uint64_t *)p, __ATOMIC_RELAXED);
	if (pmtx_read(x->tx, &v, p, sizeof(v))) {
		fail(x, PMTX_E_CORRUPT);
		return 0;
	}
	return v;
}

int kvx_write(struct kvx *x, struct kvref f, const void *src, size_t n)
{
	struct pmkv_store *s = x->s;
	char *p;
	int rc;
	x->wrote = 1;
	if (!s->wrapped)
		return pmtx_write(x->tx, s->base + f.obj + f.at, src, n);
	if ((rc = payload(x, f.obj, cow(x) ? PMTX_COW_WRITE : PMTX_COW_READ,
	                  (void **)&p)))
		return rc;
	if (!cow(x))
		return pmtx_write(x->tx, p + f.at, src, n);
	memcpy(p + f.at, src, n); /* the private copy: commit persists it */
	return 0;
}

int kvx_put(struct kvx *x, struct kvref f, uint64_t v)
{
	return kvx_write(x, f, &v, sizeof(v));
}

int kvx_new(struct kvx *x, size_t n, int zero, pmtx_off *obj, void **p)
{
	struct pmkv_store *s = x->s;
	int rc;
	x->wrote = 1; /* an allocation is a write of the heap */
	if (s->wrapped) {
		if ((rc = pmtx_cow_new(x->tx, n, obj)))
			return rc;
		*p = (void *)pmtx_cow_peek(s->r, *obj);
		return 0;
	}
	rc = zero ? pmtx_zalloc(x->tx, n, obj) : pmtx_alloc(x->tx, n, obj);
	if (!rc)
		*p = s->base + *obj;
	return rc;
}

void kvx_flush(struct kvx *x, const void *p, size_t n)
{
	pmtx_flush(x->s->r, p, n);
}

int kvx_free(struct kvx *x, pmtx_off obj)
{
	x->wrote = 1;
	return x->s->wrapped ? pmtx_cow_delete(x->tx, obj)
	                     : pmtx_free(x->tx, obj);
}

int kvx_walk_obj(struct pmkv_store *s, pmtx_off obj,
                 int (*fn)(pmtx_off, void *), void *arg)
{
	int rc = fn(obj, arg);
	if (rc || !s->wrapped)
		return rc;
	const void *p = pmtx_cow_peek(s->r, obj);
	return p ? fn(pmtx_off_of(s->r, p), arg) : PMTX_E_CORRUPT;
}
