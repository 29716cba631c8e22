/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * obj.c - the wrapped version's persistent objects (format 1.1,
 * layout.h): every object of its table (assoc.c) is a pmtx copy-on-write
 * object, named by its wrapper, and every access opens it
 * (pmtx_cow_open), as the seed's wrapped version goes through its
 * accessors for every access.
 *
 * DESIGN
 * Under the copy-on-write runtime a write opens the object for writing
 * (the first such open copies the payload) and stores into the copy; a
 * read loads from whatever payload the open returns (this transaction's
 * copy, if it writes the object). Under undo and redo a wrapper can only
 * be opened for reading: writes go to the current payload through
 * pmtx_write, and reads through pmtx_read.
 *
 * Invariants
 *  O1. Every object offset read from the region is checked before it is
 *      followed: kvx_view checks the wrapper and its payload against the
 *      size the caller needs. kvx_get and kvx_put take fields of checked
 *      objects only (a view taken, kvx_new's, or the meta object, checked
 *      at open).
 *  O2. A view is for reading. Under redo and copy-on-write it shows the
 *      payload as committed (or as it was when the view was taken): the
 *      caller reads through it only bytes that never change once the
 *      object is linked (an entry's fields but next: layout.h W1), or any
 *      byte in a reader (no writer runs: store.c S2). Fields that change
 *      are read with kvx_get.
 *  O3. A fresh object is written with plain stores through the pointer
 *      kvx_new gives, then kvx_flush (layout.h W1); under copy-on-write
 *      that is the payload as created, which nothing reaches until the
 *      transaction links the object.
 *  O4. The first failure of kvx_get (a wrapper that does not open) is
 *      kept in x->err, and reads as 0; store.c's x_end aborts a
 *      transaction whose x->err is set, so a failed read never leads to a
 *      commit.
 */
#include <string.h>

#include "store_int.h"

/* Under the copy-on-write runtime: writes go to private copies, reads
 * are plain loads (pmtx_read is not available there). */
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
	if (!obj || obj % 16 || pmtx_usable_size(s->r, obj) == 0 ||
	    payload(x, obj, PMTX_COW_READ, &p))
		return NULL;
	have = pmtx_usable_size(s->r, pmtx_off_of(s->r, p));
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
	uint64_t v;
	char *p;
	int rc;
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

int kvx_put(struct kvx *x, struct kvref f, uint64_t v)
{
	char *p;
	int rc;
	x->wrote = 1;
	if ((rc = payload(x, f.obj, cow(x) ? PMTX_COW_WRITE : PMTX_COW_READ,
	                  (void **)&p)))
		return rc;
	if (!cow(x))
		return pmtx_write(x->tx, p + f.at, &v, sizeof(v));
	memcpy(p + f.at, &v, sizeof(v)); /* the private copy: commit
	                                  * persists it */
	return 0;
}

int kvx_new(struct kvx *x, size_t n, int zero, pmtx_off *obj, void **p)
{
	(void)zero; /* pmtx_cow_new zeroes the payload */
	x->wrote = 1; /* an allocation is a write of the heap */
	int rc = pmtx_cow_new(x->tx, n, obj);
	if (!rc)
		*p = (void *)pmtx_cow_peek(x->s->r, *obj);
	return rc;
}

void kvx_flush(struct kvx *x, const void *p, size_t n)
{
	pmtx_flush(x->s->r, p, n);
}

int kvx_free(struct kvx *x, pmtx_off obj)
{
	x->wrote = 1;
	return pmtx_cow_delete(x->tx, obj);
}

int kvx_walk_obj(struct pmkv_store *s, pmtx_off obj,
                 int (*fn)(pmtx_off, void *), void *arg)
{
	int rc = fn(obj, arg);
	if (rc)
		return rc;
	const void *p = pmtx_cow_peek(s->r, obj);
	return p ? fn(pmtx_off_of(s->r, p), arg) : PMTX_E_CORRUPT;
}

const struct pmkv_entry *pmkv_entry_at(struct kvx *x, pmtx_off obj)
{
	size_t usable;
	const struct pmkv_entry *e =
		kvx_view(x, obj, sizeof(struct pmkv_entry), &usable);
	if (!e || (uint64_t)PMKV_KLEN(e->lens) + PMKV_VLEN(e->lens) >
	                  usable - sizeof(*e))
		return NULL;
	return e;
}
