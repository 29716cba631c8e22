/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * restart.c - opening the cache: a new region, or a warm one after a
 * clean stop, a kill -9 or a power loss; the pending-reclamation lists.
 *
 * DESIGN
 * pmtx_open recovers every transaction (rolls back the unfinished, rolls
 * forward the committed). What is left for pmcached is O(1) in the number
 * of items:
 *  R1. Validate the root (magic, format, hashpower, table blocks, the
 *      expansion state, the LRU ends, the pending heads): a region of
 *      another application or format, or a corrupt root, is refused with
 *      a message (mc_store_errmsg) and never written. A region of
 *      another format major is refused too, with what to do (layout.h
 *      L4): no older format is converted.
 *  R2. Start a new generation (one transaction): every refcount left in
 *      an item by the previous run now means "no reference" (lesson 8).
 *  R3. Free every item on the pending-reclamation lists (lesson 7): they
 *      were unlinked while a connection of the previous run referenced
 *      them, and no such reference survives a restart. One transaction
 *      per batch of items; a crash in between frees the rest next time.
 *  R4. The stripe mask is no wider than the smallest table of this run
 *      (assoc.c A3).
 * The hash table, the LRU lists and their counts need no rebuilding: the
 * first request after pmtx_open returns is served from the region.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define RECLAIM_BATCH 64

static _Thread_local char errmsg[256];

const char *mc_store_errmsg(void)
{
	return errmsg;
}

static int fail(int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	return rc;
}

void mc_store_opts_init(mc_store_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mem_limit = 64u << 20;
	o->region_size = 8u << 20;
	o->max_size = 1ull << 30;
	o->hashpower = 16;
	o->runtime = PMTX_RT_UNDO;
	o->domain = PMTX_PDOM1;
	o->backend = PMTX_BACKEND_HARDWARE;
}

/* ---- R1 ---- */

static int table_ok(pmtx_region *r, pmtx_off t, uint64_t hp)
{
	return hp >= MC_HASHPOWER_MIN && hp <= MC_HASHPOWER_MAX &&
	       pmtx_ptr(r, t) && pmtx_usable_size(r, t) >= (8ull << hp);
}

static int item_or_null(pmtx_region *r, pmtx_off off)
{
	return off == 0 || mc_item_at(r, off) != NULL;
}

static int check_root(pmtx_region *r, const struct mc_root *root)
{
	if (root->magic != MC_MAGIC)
		return fail(PMTX_E_BAD_MAGIC, "not a pmcached region");
	if (mc_format_msg(root, errmsg, sizeof(errmsg)))
		return PMTX_E_BAD_VERSION;
	if (!table_ok(r, root->table, root->hashpower))
		return fail(PMTX_E_CORRUPT, "bad hash table");
	if (root->old_table &&
	    (!table_ok(r, root->old_table, root->old_hashpower) ||
	     root->old_hashpower + 1 != root->hashpower ||
	     root->expand_next > (1ull << root->old_hashpower)))
		return fail(PMTX_E_CORRUPT, "bad expansion state");
	for (unsigned l = 0; l < MC_NLRU; l++)
		if (!item_or_null(r, root->lru[l].head) ||
		    !item_or_null(r, root->lru[l].tail))
			return fail(PMTX_E_CORRUPT, "bad LRU list %u", l);
	for (unsigned p = 0; p < MC_NPENDING; p++)
		if (!item_or_null(r, root->pending[p]))
			return fail(PMTX_E_CORRUPT, "bad pending list %u", p);
	return 0;
}

/* ---- a new root, R2 and R3 ---- */

static int run_tx(struct mc_store *s, int (*fn)(struct mc_store *s,
                                                pmtx_tx *tx, void *arg),
                  void *arg)
{
	pmtx_tx *tx;
	int rc = pmtx_begin(s->r, s->rt, &tx);
	if (rc)
		return rc;
	rc = fn(s, tx, arg);
	if (rc) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}

static int init_root(struct mc_store *s, pmtx_tx *tx, void *arg)
{
	const mc_store_opts *o = arg;
	struct mc_root *root = s->root;
	uint64_t hp = MAX(MIN(o->hashpower, MC_HASHPOWER_MAX), MC_HASHPOWER_MIN);
	pmtx_off t;
	int rc = pmtx_zalloc(tx, 8ull << hp, &t);
	if (!rc)
		rc = PMTX_SET(tx, root->table, t);
	if (!rc)
		rc = PMTX_SET(tx, root->hashpower, hp);
	if (!rc)
		rc = PMTX_SET(tx, root->major, (uint16_t)MC_FORMAT_MAJOR);
	if (!rc)
		rc = PMTX_SET(tx, root->minor, (uint16_t)MC_FORMAT_MINOR);
	return rc ? rc : PMTX_SET(tx, root->magic, MC_MAGIC); /* last */
}

static int next_generation(struct mc_store *s, pmtx_tx *tx, void *arg)
{
	(void)arg;
	s->gen = s->root->gen + 1;
	return PMTX_SET(tx, s->root->gen, s->gen);
}

/* Free up to RECLAIM_BATCH items of pending list *p. */
static int reclaim_batch(struct mc_store *s, pmtx_tx *tx, void *arg)
{
	unsigned p = *(unsigned *)arg, n = 0;
	pmtx_off off = s->root->pending[p];
	int rc = 0;
	for (; !rc && off && n < RECLAIM_BATCH; n++) {
		struct mc_item *it = mc_item_at(s->r, off);
		if (!it || it->link != MC_LINK_PENDING)
			return fail(PMTX_E_CORRUPT, "bad pending item");
		pmtx_off next = it->next;
		rc = pmtx_free(tx, off);
		off = next;
	}
	if (!rc && off)
		rc = PMTX_SET(tx, mc_item_at(s->r, off)->prev, 0);
	atomic_fetch_add(&s->reclaimed, n);
	return rc ? rc : PMTX_SET(tx, s->root->pending[p], off);
}

static int reclaim_all(struct mc_store *s)
{
	int rc = 0;
	for (unsigned p = 0; !rc && p < MC_NPENDING; p++)
		while (!rc && s->root->pending[p])
			rc = run_tx(s, reclaim_batch, &p);
	return rc;
}

static void set_stripe_mask(struct mc_store *s)
{
	uint64_t hp = s->root->old_table ? s->root->old_hashpower
	                                 : s->root->hashpower;
	uint64_t n = MIN((uint64_t)MC_NSTRIPES, 1ull << hp);
	s->stripe_mask = n - 1;
}

static void init_locks(struct mc_store *s)
{
	pthread_rwlock_init(&s->table_lock, NULL);
	for (unsigned i = 0; i < MC_NSTRIPES; i++)
		pthread_mutex_init(&s->stripe[i], NULL);
	for (unsigned i = 0; i < MC_NLRU; i++)
		pthread_mutex_init(&s->lru_lock[i], NULL);
	for (unsigned i = 0; i < MC_NPENDING; i++)
		pthread_mutex_init(&s->pend_lock[i], NULL);
}

int mc_store_attach(pmtx_region *r, const mc_store_opts *o,
                    struct mc_store **out)
{
	size_t rsize;
	struct mc_store *s = calloc(1, sizeof(*s));
	if (!s)
		return ENOMEM;
	s->r = r;
	s->root = pmtx_root(r, &rsize);
	s->rt = o->runtime;
	s->mem_limit = o->mem_limit;
	s->no_evict = o->no_evict;
	s->now = o->now, s->now_arg = o->now_arg;
	s->on_item_event = o->on_item_event, s->event_arg = o->event_arg;
	init_locks(s);
	int rc = rsize < sizeof(struct mc_root)
	                 ? fail(PMTX_E_BAD_LAYOUT, "root is too small") : 0;
	if (!rc && s->root->magic == 0)
		rc = run_tx(s, init_root, (void *)o);
	if (!rc)
		rc = check_root(r, s->root);
	if (!rc)
		rc = run_tx(s, next_generation, NULL);
	if (!rc)
		rc = reclaim_all(s);
	if (rc) {
		free(s);
		return rc;
	}
	set_stripe_mask(s);
	*out = s;
	return 0;
}

pmtx_region *mc_store_region(struct mc_store *s)
{
	return s->r;
}

void mc_store_detach(struct mc_store *s)
{
	free(s);
}

int mc_store_open(const char *path, const mc_store_opts *o,
                  struct mc_store **out)
{
	pmtx_options po;
	pmtx_options_init(&po);
	po.layout = MC_LAYOUT;
	po.root_size = sizeof(struct mc_root);
	po.domain = o->domain;
	po.backend = o->backend;
	po.runtime = o->runtime;
	/* a twin region has a fixed size: the larger of the two */
	po.max_size = o->runtime == PMTX_RT_TWIN ? 0 : o->max_size;
	po.truncation = o->truncation;
	if (o->fast_restart) /* used at create only */
		po.flags |= PMTX_CREATE_TWIN_FAST_RESTART;
	pmtx_region *r;
	int rc = pmtx_open(path, &po, &r);
	if (rc == ENOENT)
		rc = pmtx_create(path,
		                 o->runtime == PMTX_RT_TWIN &&
		                                 o->max_size > o->region_size
		                         ? o->max_size
		                         : o->region_size,
		                 &po, &r);
	if (rc)
		return fail(rc, "%s: %s (%s)", path, pmtx_strerror(rc),
		            pmtx_errmsg());
	errmsg[0] = '\0';
	if ((rc = mc_store_attach(r, o, out))) {
		if (!errmsg[0]) /* a transaction refused: pmtx says why */
			fail(rc, "%s: %s (%s)", path, pmtx_strerror(rc),
			     pmtx_errmsg());
		pmtx_close(r);
		return rc;
	}
	(*out)->own_region = 1;
	return 0;
}

int mc_store_close(struct mc_store *s)
{
	int rc = s->own_region ? pmtx_close(s->r) : 0;
	free(s);
	return rc;
}

/* ---- pending lists (lesson 7; pend_lock of the list held) ---- */

int do_pending_push(struct mc_store *s, struct mc_txn *t, pmtx_off off)
{
	struct mc_item *it = mc_item_at(s->r, off);
	pmtx_off *head = &s->root->pending[t->slot];
	int rc = mc_txn_lock_pending(s, t, t->slot);
	if (!rc)
		rc = PMTX_SET(t->tx, it->link, (uint8_t)MC_LINK_PENDING);
	if (!rc)
		rc = PMTX_SET(t->tx, it->slot, (uint8_t)t->slot);
	if (!rc)
		rc = PMTX_SET(t->tx, it->prev, 0);
	pmtx_off first = MC_RD(t->tx, *head);
	if (!rc)
		rc = PMTX_SET(t->tx, it->next, first);
	if (!rc && first)
		rc = PMTX_SET(t->tx, mc_item_at(s->r, first)->prev, off);
	return rc ? rc : PMTX_SET(t->tx, *head, off);
}

int do_pending_remove(struct mc_store *s, struct mc_txn *t, pmtx_off off)
{
	struct mc_item *it = mc_item_at(s->r, off);
	if (!it || it->slot >= MC_NPENDING)
		return PMTX_E_CORRUPT;
	int rc = mc_txn_lock_pending(s, t, it->slot);
	pmtx_off prev = MC_RD(t->tx, it->prev), next = MC_RD(t->tx, it->next);
	if (!rc)
		rc = prev ? PMTX_SET(t->tx, mc_item_at(s->r, prev)->next, next)
		          : PMTX_SET(t->tx, s->root->pending[it->slot], next);
	if (!rc && next)
		rc = PMTX_SET(t->tx, mc_item_at(s->r, next)->prev, prev);
	return rc ? rc : PMTX_SET(t->tx, it->link, (uint8_t)MC_LINK_NONE);
}
