/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lru.c - the LRU lists, memory accounting and eviction.
 *
 * DESIGN
 * MC_NLRU persistent doubly linked lists (layout.h), an item's list chosen
 * by its key's hash when it is made. Each list keeps its item count and
 * bytes in the root, changed in the same transaction as its links, so the
 * counts survive any crash exactly and restart never walks the items.
 *
 * Invariants
 *  U1. An item is on its list exactly when it is in a hash chain
 *      (link == MC_LINK_TABLE); head->prev and tail->next are 0.
 *  U2. sum of lru[l].bytes == sum of mc_item_bytes() of the linked items;
 *      the cache never holds more than mem_limit of them once a store
 *      commits (a store evicts first, within its own transaction).
 *  U3. A read moves an item to its head at most once per MC_BUMP_SECONDS
 *      (memcached's interval), so that reads stay read-only: a bump is a
 *      transaction, and a hot item would otherwise serialise its readers
 *      on its list's lock.
 *  U4. Eviction takes victims' stripes and other lists only by trylock
 *      (txn.c T2, T3) and gives up after MC_TXN_MAX_STRIPES - 1 victims
 *      or a full round of busy lists: the store's transaction is then
 *      rolled back, its evictions with it, and U5 makes the room.
 *  U5. A store that U4's victims cannot bring under mem_limit (a big item
 *      among small ones: memcached stores any item up to -I, so neither
 *      may pmcached refuse it), and a heap that is full while the items
 *      are under mem_limit (a region that cannot grow, its file system
 *      full; or no run of free superblocks long enough for a big item),
 *      are met by evicting in transactions of their own (several, of U4's
 *      victims each), committed before the store is tried again: pmtx_free
 *      takes effect at commit, so a store's own evictions could not make
 *      room for its allocation.
 *      The store's own key is moved to its list's head first, so that an
 *      incr, append or cas does not evict the item it is changing. A store
 *      so refused is tried again a bounded number of times (items.c), and
 *      -M refuses instead. Evictions are counted in stats when their
 *      transaction commits (txn.c), never for one rolled back.
 */
#include <errno.h>
#include <string.h>

#include "store_int.h"

uint64_t mc_lru_bytes(const struct mc_root *root, pmtx_tx *tx)
{
	uint64_t b = 0;
	for (unsigned l = 0; l < MC_NLRU; l++)
		b += MC_RD(tx, root->lru[l].bytes);
	return b;
}

uint64_t mc_lru_count(const struct mc_root *root)
{
	uint64_t n = 0;
	for (unsigned l = 0; l < MC_NLRU; l++)
		n += root->lru[l].count;
	return n;
}

static int set_link(pmtx_tx *tx, pmtx_region *r, pmtx_off off, int next,
                    pmtx_off v)
{
	struct mc_item *it = mc_item_at(r, off);
	if (!it)
		return PMTX_E_CORRUPT;
	return next ? PMTX_SET(tx, it->next, v) : PMTX_SET(tx, it->prev, v);
}

/* Put off at the head of its list (its prev/next are written). */
static int push_head(struct mc_store *s, struct mc_txn *t, pmtx_off off,
                     struct mc_item *it)
{
	struct mc_lru *l = &s->root->lru[it->lru];
	pmtx_off head = MC_RD(t->tx, l->head);
	int rc = PMTX_SET(t->tx, it->prev, 0);
	if (!rc)
		rc = PMTX_SET(t->tx, it->next, head);
	if (!rc)
		rc = head ? set_link(t->tx, s->r, head, 0, off)
		          : PMTX_SET(t->tx, l->tail, off);
	return rc ? rc : PMTX_SET(t->tx, l->head, off);
}

static int cut(struct mc_store *s, struct mc_txn *t, struct mc_item *it)
{
	struct mc_lru *l = &s->root->lru[it->lru];
	pmtx_off prev = MC_RD(t->tx, it->prev), next = MC_RD(t->tx, it->next);
	int rc = prev ? set_link(t->tx, s->r, prev, 1, next)
	              : PMTX_SET(t->tx, l->head, next);
	if (!rc)
		rc = next ? set_link(t->tx, s->r, next, 0, prev)
		          : PMTX_SET(t->tx, l->tail, prev);
	return rc;
}

static int account(struct mc_store *s, struct mc_txn *t, unsigned lru,
                   int64_t items, int64_t bytes)
{
	struct mc_lru *l = &s->root->lru[lru];
	uint64_t n = MC_RD(t->tx, l->count), b = MC_RD(t->tx, l->bytes);
	int rc = PMTX_SET(t->tx, l->count, n + (uint64_t)items);
	return rc ? rc : PMTX_SET(t->tx, l->bytes, b + (uint64_t)bytes);
}

int do_lru_link(struct mc_store *s, struct mc_txn *t, pmtx_off off)
{
	struct mc_item *it = mc_item_at(s->r, off);
	if (!it || it->lru >= MC_NLRU)
		return PMTX_E_CORRUPT;
	int rc = mc_txn_lock_lru(s, t, it->lru, 0);
	if (!rc)
		rc = push_head(s, t, off, it);
	if (!rc)
		rc = PMTX_SET(t->tx, it->link, (uint8_t)MC_LINK_TABLE);
	return rc ? rc : account(s, t, it->lru, 1,
	                         (int64_t)mc_item_bytes(it->nkey, it->nbytes));
}

int do_lru_unlink(struct mc_store *s, struct mc_txn *t, pmtx_off off)
{
	struct mc_item *it = mc_item_at(s->r, off);
	if (!it || it->lru >= MC_NLRU || MC_RD(t->tx, it->link) != MC_LINK_TABLE)
		return PMTX_E_CORRUPT;
	int rc = mc_txn_lock_lru(s, t, it->lru, 0);
	if (!rc)
		rc = cut(s, t, it);
	if (!rc)
		rc = PMTX_SET(t->tx, it->link, (uint8_t)MC_LINK_NONE);
	return rc ? rc : account(s, t, it->lru, -1,
	                         -(int64_t)mc_item_bytes(it->nkey, it->nbytes));
}

int do_lru_bump(struct mc_store *s, struct mc_txn *t, pmtx_off off,
                int64_t now)
{
	struct mc_item *it = mc_item_at(s->r, off);
	if (!it || it->lru >= MC_NLRU)
		return PMTX_E_CORRUPT;
	int rc = mc_txn_lock_lru(s, t, it->lru, 0);
	if (rc == EBUSY)
		return 0; /* a bump is a hint: skip it rather than wait */
	if (!rc && MC_RD(t->tx, it->prev)) {
		rc = cut(s, t, it);
		if (!rc)
			rc = push_head(s, t, off, it);
	}
	return rc ? rc : PMTX_SET(t->tx, it->time, now);
}

/* Evict the tail of list l if its stripe can be had (U4); *freed gets
 * its bytes. 1: evicted. */
static int evict_one(struct mc_store *s, struct mc_txn *t, unsigned l,
                     uint64_t *freed, int *rc)
{
	if (mc_txn_lock_lru(s, t, l, 1) != 0)
		return 0;
	pmtx_off off = MC_RD(t->tx, s->root->lru[l].tail), link, found;
	struct mc_item *it = off ? mc_item_at(s->r, off) : NULL;
	if (!it)
		return 0;
	uint64_t h = mc_hash(mc_item_key(it), it->nkey);
	if (mc_txn_lock_stripe(s, t, mc_stripe_of(s, h)) != 0)
		return 0;
	*freed = mc_item_bytes(it->nkey, it->nbytes);
	*rc = do_assoc_find(s, t->tx, mc_item_key(it), it->nkey, h, &link,
	                    &found);
	if (!*rc && found != off)
		*rc = PMTX_E_CORRUPT;
	if (!*rc) {
		struct mc_item_meta *v = &t->victims[t->evicted];
		mc_item_meta_of(s, it, off, mc_now(s), v);
		v->key = NULL; /* freed at commit */
		*rc = do_item_remove(s, t, link, off);
	}
	if (!*rc)
		t->evicted++; /* counted when t commits (txn.c) */
	return !*rc;
}

/* An eviction in progress in one transaction (its victims: t->evicted). */
struct evicting {
	unsigned tried;
	uint64_t freed;
	int rc;
};

/* One victim more, the tail of the next list; 1 when U4's bounds are
 * reached or an error is in e->rc. */
static int evict_step(struct mc_store *s, struct mc_txn *t,
                      struct evicting *e)
{
	if (s->no_evict || e->tried == 2 * MC_NLRU ||
	    t->evicted == MC_TXN_MAX_STRIPES - 1)
		return 1;
	unsigned l = atomic_fetch_add(&s->evict_lru, 1) % MC_NLRU;
	uint64_t b = 0;
	e->tried++;
	if (evict_one(s, t, l, &b, &e->rc))
		e->freed += b, e->tried = 0;
	return e->rc != 0;
}

int do_lru_make_room(struct mc_store *s, struct mc_txn *t, size_t need,
                     enum mc_result *res)
{
	struct evicting e = {0};
	*res = MC_STORED;
	while (mc_lru_bytes(s->root, t->tx) + need > s->mem_limit)
		if (evict_step(s, t, &e)) {
			*res = e.rc ? *res : MC_NO_MEMORY;
			break;
		}
	return e.rc;
}

/* One transaction of at most U4's victims, the key's own item (hash h)
 * moved to its list's head first so that it is not one of them (U5).
 * *n and *freed: the victims and their bytes, once committed. */
static int evict_some(struct mc_store *s, const struct mc_room *room,
                      uint64_t h, size_t bytes, unsigned *n,
                      uint64_t *freed)
{
	struct mc_txn t;
	struct evicting e = {0};
	pmtx_off link, found;
	*n = 0;
	int rc = mc_txn_begin(s, &t, room->slot, mc_stripe_of(s, h));
	if (rc)
		return rc;
	rc = do_assoc_find(s, t.tx, room->key, room->nkey, h, &link, &found);
	if (!rc && found)
		rc = do_lru_bump(s, &t, found, mc_now(s));
	while (!rc && e.freed < bytes && !evict_step(s, &t, &e))
		;
	if ((rc = mc_txn_end(&t, rc ? rc : e.rc)) == 0)
		*n = t.evicted, *freed = e.freed;
	return rc;
}

int mc_lru_evict_bytes(struct mc_store *s, const struct mc_room *room,
                       size_t bytes, unsigned *evicted)
{
	uint64_t h = mc_hash(room->key, room->nkey), freed = 0, b = 0;
	unsigned n = 1;
	int rc = 0;
	*evicted = 0;
	while (freed < bytes && n && !rc) {
		rc = evict_some(s, room, h, bytes - freed, &n, &b);
		*evicted += n;
		freed += rc ? 0 : b;
	}
	return rc;
}

int mc_store_lru_info(struct mc_store *s, unsigned l,
                      struct mc_lru_info *out)
{
	*out = (struct mc_lru_info){0};
	if (l >= MC_NLRU)
		return PMTX_E_INVAL;
	pthread_mutex_lock(&s->lru_lock[l]);
	const struct mc_lru *lru = &s->root->lru[l];
	const struct mc_item *tail = lru->tail ? mc_item_at(s->r, lru->tail)
	                                       : NULL;
	*out = (struct mc_lru_info){.count = lru->count, .bytes = lru->bytes,
	                            .tail_time = tail ? tail->time : 0};
	pthread_mutex_unlock(&s->lru_lock[l]);
	return 0;
}

/* ---- walks: statistics and dumps ---- */

int mc_store_walk_lru(struct mc_store *s, unsigned l,
                      int (*fn)(const struct mc_item_meta *m, void *arg),
                      void *arg)
{
	if (l >= MC_NLRU)
		return PMTX_E_INVAL;
	int64_t now = mc_now(s);
	int stop = 0;
	pthread_mutex_lock(&s->lru_lock[l]);
	pmtx_off off = s->root->lru[l].tail;
	while (off && !stop) {
		const struct mc_item *it = mc_item_at(s->r, off);
		struct mc_item_meta m;
		if (!it)
			break;
		mc_item_meta_of(s, it, off, now, &m);
		stop = fn(&m, arg);
		off = it->prev;
	}
	pthread_mutex_unlock(&s->lru_lock[l]);
	return stop;
}

/* The key's stripe locked (table lock shared first), as a reader. */
static unsigned lock_stripe_of(struct mc_store *s, const char *key,
                               size_t nkey)
{
	unsigned stripe = mc_stripe_of(s, mc_hash(key, nkey));
	mc_lock_key(s, stripe);
	return stripe;
}

int mc_store_item_meta(struct mc_store *s, uint64_t off, uint64_t cas,
                       struct mc_item_meta *m, char *key)
{
	/* The block may have been freed and reused since the walk: its key
	 * names a stripe, under which the item must be found again, at off,
	 * with its unique, in the table. */
	const struct mc_item *it = mc_item_at(s->r, off);
	if (!it)
		return 0;
	size_t nkey = it->nkey;
	memcpy(key, mc_item_key(it), nkey);
	unsigned stripe = lock_stripe_of(s, key, nkey);
	pmtx_off link, found = 0;
	int same = it->nkey == nkey && !memcmp(mc_item_key(it), key, nkey) &&
	           it->link == MC_LINK_TABLE && it->cas == cas &&
	           !do_assoc_find(s, NULL, key, nkey, mc_hash(key, nkey),
	                          &link, &found) && found == off;
	if (same) {
		mc_item_meta_of(s, it, off, mc_now(s), m);
		m->key = key;
	}
	mc_unlock_key(s, stripe);
	return same;
}
