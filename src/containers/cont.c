/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cont.c - the operation context every container shares, and its views
 * (cont.h C1-C5).
 */
#include <errno.h>
#include <stdlib.h>

#include "cont.h"
#include "../region/region.h"
#include "../tx/tx.h"

void pmtx_cont_options_init(pmtx_cont_options *o)
{
	memset(o, 0, sizeof(*o));
	o->runtime = PMTX_RT_DEFAULT;
}

pmtx_runtime cont_runtime(const pmtx_cont_options *o)
{
	return o ? o->runtime : PMTX_RT_DEFAULT;
}

/* Set how c reads, from the transaction it runs in (C1). */
static void cx_bind(struct cx *c, pmtx_region *r, pmtx_tx *tx)
{
	c->r = r;
	c->base = r->base; /* not pmtx_ptr(r, 0): NULL for offset 0 */
	c->size = &r->size;
	c->tx = tx;
	c->wrote = 0;
	c->in_place = !tx || tx->kind == PMTX_RT_UNDO ||
	              tx->kind == PMTX_RT_TWIN;
	c->overlay = !c->in_place && tx->nwl > 0;
}

/* The rest of cx_begin, once pmtx_begin has begun or joined tx. */
int cx_begun(struct cx *c, pmtx_region *r, pmtx_tx *tx)
{
	c->began = 1;
	cx_bind(c, r, tx);
	if (tx->kind == PMTX_RT_COW) {
		pmtx__set_errmsg("containers do not run under copy-on-write");
		cx_end(c, 0);
		return PMTX_E_UNSUPPORTED;
	}
	return 0;
}

int cx_begin_read(struct cx *c, pmtx_region *r, pmtx_tx *tx)
{
	c->began = 0;
	if (!r)
		return PMTX_E_INVAL;
	pmtx_tx *cur = pmtx_tx_current();
	if (!tx && cur && pmtx_tx_region(cur) == r)
		tx = cur;
	if (tx && pmtx_tx_region(tx) != r)
		return PMTX_E_TX_STATE;
	if (tx && tx->kind == PMTX_RT_COW)
		return PMTX_E_UNSUPPORTED;
	cx_bind(c, r, tx);
	return 0;
}

int cx_end(struct cx *c, int rc)
{
	if (!c->began)
		return rc;
	c->began = 0;
	if (rc && c->wrote) {
		pmtx_abort(c->tx);
		return rc;
	}
	int crc = pmtx_commit(c->tx);
	return rc ? rc : crc;
}

int cx_write(struct cx *c, void *dst, const void *src, size_t n)
{
	c->wrote = 1;
	if (!c->in_place)
		c->overlay = 1;
	return pmtx_write(c->tx, dst, src, n);
}

int cx_alloc(struct cx *c, size_t n, int zero, pmtx_off *off, void **p)
{
	c->wrote = 1;
	int rc = zero ? pmtx_zalloc(c->tx, n, off) : pmtx_alloc(c->tx, n, off);
	if (!rc)
		*p = c->base + *off;
	return rc;
}

int cx_free(struct cx *c, pmtx_off off)
{
	c->wrote = 1;
	return pmtx_free(c->tx, off);
}

/* ---- views (C5) ---- */

struct cx_vcopy {
	struct cx_vcopy *next;
	pthread_t owner; /* the thread whose transaction made it */
	unsigned char b[];
};

void cx_views_init(struct cx_views *v)
{
	pthread_mutex_init(&v->lock, NULL);
	atomic_init(&v->head, NULL);
}

static void free_copies(struct cx_vcopy *p)
{
	while (p) {
		struct cx_vcopy *next = p->next;
		free(p);
		p = next;
	}
}

void cx_views_drop(struct cx_views *v)
{
	/* Relaxed: this thread's own pushes are all it must see here. */
	if (!atomic_load_explicit(&v->head, memory_order_relaxed))
		return; /* the common case: nothing was copied */
	pthread_t self = pthread_self();
	struct cx_vcopy *mine = NULL, *keep = NULL, **tail = &keep;
	pthread_mutex_lock(&v->lock);
	struct cx_vcopy *p = atomic_load_explicit(&v->head,
	                                          memory_order_relaxed);
	while (p) {
		struct cx_vcopy *next = p->next;
		if (pthread_equal(p->owner, self)) {
			p->next = mine;
			mine = p;
		} else {
			*tail = p; /* another thread may still read it */
			tail = &p->next;
		}
		p = next;
	}
	*tail = NULL;
	atomic_store_explicit(&v->head, keep, memory_order_relaxed);
	pthread_mutex_unlock(&v->lock);
	free_copies(mine);
}

void cx_views_fini(struct cx_views *v)
{
	free_copies(atomic_exchange(&v->head, NULL));
	pthread_mutex_destroy(&v->lock);
}

enum { VIEW_CHUNK = 512 }; /* bytes compared at a time on the stack */

int cx_view(struct cx *c, struct cx_views *keep, const void *at,
            const void *img, size_t n, pmtx_bytes *out)
{
	*out = (pmtx_bytes){n ? at : (const void *)"", n, 0};
	if (!n || (!img && cx_direct(c)) || at == img ||
	    (img && !memcmp(at, img, n)))
		return 0;
	/* Read and compare a chunk at a time before any malloc: mostly the
	 * transaction did not change these bytes and the view is in place.
	 * o: where the first differing chunk (k bytes, in buf) starts. */
	const unsigned char *a = at;
	unsigned char buf[VIEW_CHUNK];
	size_t o = 0, k = 0;
	for (; !img && o < n; o += k) {
		k = MIN(n - o, sizeof buf);
		cx_read(c, buf, a + o, k);
		if (memcmp(buf, a + o, k))
			break;
	}
	if (!img && o == n)
		return 0; /* unchanged by the transaction: in place */
	struct cx_vcopy *v = malloc(sizeof(*v) + n);
	if (!v)
		return ENOMEM;
	if (img) {
		memcpy(v->b, img, n);
	} else {
		memcpy(v->b, a, o); /* read the same as in place */
		memcpy(v->b + o, buf, k);
		if (o + k < n)
			cx_read(c, v->b + o + k, a + o + k, n - o - k);
	}
	out->p = v->b;
	if (!keep) {
		int rc = pmtx_defer(c->tx, free, v);
		if (rc) {
			free(v);
			out->p = NULL;
		}
		return rc;
	}
	v->owner = pthread_self();
	pthread_mutex_lock(&keep->lock);
	v->next = atomic_load_explicit(&keep->head, memory_order_relaxed);
	atomic_store_explicit(&keep->head, v, memory_order_relaxed);
	pthread_mutex_unlock(&keep->lock);
	return 0;
}

int cont_check_hdr(pmtx_region *r, pmtx_off off, uint32_t magic, size_t n)
{
	size_t size = pmtx_region_size(r);
	if (!off || off % 16 || n > size || off > size - n ||
	    pmtx_usable_size(r, off) < n) {
		pmtx__set_errmsg("offset %llu names no container block",
		                 (unsigned long long)off);
		return PMTX_E_NOT_CONTAINER;
	}
	const struct cont_hdr *h = pmtx_ptr(r, off);
	if (h->magic != magic) {
		pmtx__set_errmsg("offset %llu: magic 0x%08x, not 0x%08x",
		                 (unsigned long long)off, h->magic, magic);
		return PMTX_E_NOT_CONTAINER;
	}
	if (h->major != PMTX_CONT_FORMAT_MAJOR) {
		pmtx__set_errmsg("container format %u.%u, this library reads "
		                 "%u.x", h->major, h->minor,
		                 PMTX_CONT_FORMAT_MAJOR);
		return PMTX_E_BAD_VERSION;
	}
	return 0;
}

void cont_hdr_init(struct cont_hdr *h, uint32_t magic, uint32_t flags)
{
	h->magic = magic;
	h->major = PMTX_CONT_FORMAT_MAJOR;
	h->minor = PMTX_CONT_FORMAT_MINOR;
	h->flags = flags;
	h->reserved = 0;
}
