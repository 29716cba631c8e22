/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * items.c - items and the operations on them: store (set, add, replace,
 * append, prepend, cas), get and gat with references, delete, incr/decr,
 * touch, flush_all.
 *
 * DESIGN
 * Persistent: every item (struct mc_item: links, cas, exptime, time,
 * flags, key, value) and everything that reaches it (layout.h).
 * Volatile: the locks, the CAS counter, the statistics, and what the
 * refcount and refgen fields mean (below).
 *
 * Invariants
 *  I1. One operation, one transaction (txn.c), begun after the key's
 *      stripe is locked and committed before the call returns: the reply
 *      the caller sends afterwards describes a durable state.
 *  I2. A store builds the new item in a fresh block with naked stores and
 *      pmtx_flush (seed 001 lesson 6): safe because nothing reaches the
 *      block until the same transaction links it, pmtx's allocator keeps
 *      its own metadata out of band (no free-list pointer shares a field
 *      with the item, the pitfall the seed ran into), and an abort frees
 *      the block. The flush is made durable by the commit. Every item
 *      that is reachable is changed only through pmtx_write (PMTX_SET).
 *  I3. References (lesson 7). A get takes a reference under the stripe
 *      lock and returns with no lock held, so that no lock is held while
 *      the value is sent. An item removed while referenced is not freed:
 *      the removing transaction moves it to the remover's persistent
 *      pending-reclamation list, and the release that drops the last
 *      reference frees it in a transaction of its own. After a crash no
 *      reference exists, and restart.c frees every pending item.
 *  I4. refcount and refgen are semantically nonpersistent (lesson 8): a
 *      reference counts only if refgen equals this run's generation,
 *      which restart.c increments at every start; a mismatch means "no
 *      reference", and the first reference of the run resets both with
 *      naked stores (never flushed: their durable value does not matter).
 *      They are read and written only under the item's stripe lock, so
 *      no atomic instruction touches persistent memory (lesson 9).
 *  I5. CAS uniques come from a volatile counter (lesson 9: no atomic
 *      read-modify-write on persistent data): cas = generation << 40 |
 *      counter. They are unique and increase across restarts without a
 *      persistent counter that every store would have to write.
 *  I6. Expiry and flush_all are lazy: an item found dead is removed by
 *      the transaction that found it (or treated as absent by a get,
 *      which removes it in a transaction of its own).
 *  I7. A read that writes nothing persistent runs no transaction: a get
 *      of a live item that needs no bump, a miss, and a release that is
 *      not the last reference of a pending item take the table lock
 *      (shared) and the stripe, read with plain loads, touch only the
 *      nonpersistent refcount (I4), and unlock. Plain loads are current:
 *      every writer of the stripe holds it until its transaction has
 *      committed and its data is in place (redo-async defers only the
 *      log's truncation). Anything else takes the transactional path.
 *  I8. The meta protocol's item state (memcached's). iflags (stale, token
 *      sent, base64 key) is persistent and changed only in transactions,
 *      so a won recache token or an invalidation survives a crash with
 *      the reply that announced it (I1): a get that wins a token (mg N on
 *      a miss, R, a stale item's first reader) is a transaction. atime
 *      and fetched (mg l and h, me) are written by every read that
 *      updates the item (not mg u, me, ma's read back) with naked stores
 *      under the stripe lock (layout.h L2c): a read stays a read. Their
 *      durable value is whatever reached the media, so they are read
 *      validated: fetched is 1 or "not fetched", atime counts only
 *      between the item's time (stored or bumped) and now, else the item
 *      counts as accessed at its time.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "store_int.h"

int64_t mc_now(struct mc_store *s)
{
	return s->now ? s->now(s->now_arg) : (int64_t)time(NULL);
}

uint64_t mc_hash(const char *key, size_t nkey)
{
	return XXH3_64bits(key, nkey);
}

struct mc_item *mc_item_at(pmtx_region *r, pmtx_off off)
{
	struct mc_item *it = pmtx_ptr(r, off);
	size_t room = pmtx_region_size(r) - (size_t)off;
	if (!it || room < sizeof(*it) || it->nkey > MC_KEY_MAX ||
	    room - sizeof(*it) < (size_t)it->nkey + it->nbytes)
		return NULL;
	return it;
}

int mc_item_live(struct mc_store *s, const struct mc_item *it, int64_t now)
{
	const struct mc_root *root = s->root;
	if (it->exptime && it->exptime <= now)
		return 0;
	if (root->oldest_cas && it->cas <= root->oldest_cas)
		return 0;
	return !(root->oldest_live && now >= root->oldest_live &&
	         it->time <= root->oldest_live);
}

static int referenced(const struct mc_store *s, const struct mc_item *it)
{
	return it->refgen == s->gen && it->refcount > 0;
}

static uint64_t next_cas(struct mc_store *s)
{
	return s->gen << 40 | (atomic_fetch_add(&s->cas_seq, 1) + 1);
}

int do_item_remove(struct mc_store *s, struct mc_txn *t, pmtx_off link,
                   pmtx_off off)
{
	struct mc_item *it = mc_item_at(s->r, off);
	pmtx_off *w = pmtx_ptr(s->r, link);
	if (!it || !w)
		return PMTX_E_CORRUPT;
	int rc = PMTX_SET(t->tx, *w, MC_RD(t->tx, it->h_next));
	if (!rc)
		rc = do_lru_unlink(s, t, off);
	if (rc)
		return rc;
	if (referenced(s, it))
		return do_pending_push(s, t, off);
	return pmtx_free(t->tx, off);
}

/* ---- store ---- */

struct found {
	uint64_t h;
	pmtx_off link, off; /* off 0: absent (or removed: dead) */
	struct mc_item *it;
	int stale;          /* admit: a CAS store of an older unique (ms I) */
};

/* Find p's key; a dead item is removed in this transaction. */
static int find_live(struct mc_store *s, struct mc_txn *t, const char *key,
                     size_t nkey, int64_t now, struct found *f)
{
	int rc = do_assoc_find(s, t->tx, key, nkey, f->h, &f->link, &f->off);
	if (rc || !f->off)
		return rc;
	f->it = mc_item_at(s->r, f->off);
	if (mc_item_live(s, f->it, now))
		return 0;
	rc = do_item_remove(s, t, f->link, f->off);
	f->off = 0, f->it = NULL;
	return rc;
}

/* What the store decides before allocating: STORED to go on. */
static enum mc_result admit(const struct mc_put *p, struct found *f)
{
	switch (p->mode) {
	case MC_ADD: return f->off ? MC_NOT_STORED : MC_STORED;
	case MC_APPEND:
	case MC_PREPEND:
		if (f->off && p->if_cas && f->it->cas != p->if_cas)
			return MC_EXISTS;
		return f->off ? MC_STORED : MC_NOT_STORED;
	case MC_REPLACE: return f->off ? MC_STORED : MC_NOT_STORED;
	case MC_CAS:
		if (!f->off)
			return MC_NOT_FOUND;
		if (f->it->cas == p->cas)
			return MC_STORED;
		/* memcached's CAS_STALE: an older unique may still store, as a
		 * stale item (I8) */
		f->stale = p->stale_ok && p->cas && p->cas < f->it->cas;
		return f->stale ? MC_STORED : MC_EXISTS;
	default: return MC_STORED;
	}
}

/* Fill a fresh item (I2): header, key, and the value (for append and
 * prepend, the old value beside the new bytes). */
static void fill_item(struct mc_store *s, struct mc_item *it,
                      const struct mc_put *p, const struct found *f,
                      int64_t now, uint64_t cas)
{
	const struct mc_item *old = f->it;
	int join = p->mode == MC_APPEND || p->mode == MC_PREPEND;
	/* a stale store keeps the old expiry and token; append and prepend
	 * make an item of no state, a binary key's mark lost (memcached) */
	uint8_t iflags = join ? 0 : (uint8_t)(p->iflags & (MC_IF_KEY_BINARY |
	                                                   MC_IF_TOKEN_SENT));
	if (f->stale)
		iflags |= MC_IF_STALE | (old->iflags & MC_IF_TOKEN_SENT);
	*it = (struct mc_item){.cas = cas, .time = now, .atime = now,
	                       .flags = join ? old->flags : p->flags,
	                       .exptime = join || f->stale ? old->exptime
	                                                   : p->exptime,
	                       .nkey = (uint32_t)p->nkey, .iflags = iflags,
	                       .lru = (uint8_t)((f->h >> 56) % MC_NLRU)};
	memcpy((char *)(it + 1), p->key, p->nkey);
	char *v = mc_item_value(it);
	size_t oldn = join ? old->nbytes : 0;
	const char *oldv = join ? (const char *)(old + 1) + old->nkey : NULL;
	if (p->mode == MC_PREPEND) {
		memcpy(v, p->value, p->nbytes);
		memcpy(v + p->nbytes, oldv, oldn);
	} else {
		if (oldn)
			memcpy(v, oldv, oldn);
		memcpy(v + oldn, p->value, p->nbytes);
	}
	it->nbytes = (uint32_t)(oldn + p->nbytes);
	pmtx_flush(s->r, it, mc_item_bytes(it->nkey, it->nbytes));
}

/* Allocate, fill and link the new item, replacing f's. The old item is
 * unlinked first, so that eviction cannot pick it; its bytes stay
 * readable for append/prepend until the commit frees them. */
static int put_new(struct mc_store *s, struct mc_txn *t,
                   const struct mc_put *p, struct found *f, int64_t now,
                   enum mc_result *res, uint64_t *cas_out)
{
	size_t oldn = p->mode == MC_APPEND || p->mode == MC_PREPEND
	                      ? f->it->nbytes : 0;
	size_t need = mc_item_bytes(p->nkey, oldn + p->nbytes);
	int rc = 0;
	if (need > s->mem_limit) {
		/* As memcached: a SET that cannot fit removes the old value,
		 * so that no stale value outlives the failed store. */
		*res = MC_TOO_LARGE;
		return p->mode == MC_SET && f->off
		               ? do_item_remove(s, t, f->link, f->off) : 0;
	}
	/* The new item's list first, blocking: any other list is then only
	 * tried (txn.c T3), so two stores cannot deadlock on lists. */
	if ((rc = mc_txn_lock_lru(s, t, (unsigned)((f->h >> 56) % MC_NLRU),
	                          0)))
		return rc;
	if (f->off && (rc = do_item_remove(s, t, f->link, f->off)))
		return rc;
	if ((rc = do_lru_make_room(s, t, need, res)) || *res != MC_STORED)
		/* U4's victims were not enough (a big item among small
		 * ones): evict in transactions of their own (lru.c U5) */
		return rc || s->no_evict ? rc : ENOSPC;
	pmtx_off off;
	if ((rc = pmtx_alloc(t->tx, need, &off)) == PMTX_E_NOMEM) {
		*res = MC_NO_MEMORY; /* the heap is full below mem_limit */
		return ENOSPC; /* lru.c U5 */
	}
	uint64_t cas = next_cas(s);
	if (!rc) {
		fill_item(s, pmtx_ptr(s->r, off), p, f, now, cas);
		rc = do_assoc_insert(s, t->tx, f->h, off);
	}
	if (!rc)
		rc = do_lru_link(s, t, off);
	if (!rc && cas_out)
		*cas_out = cas;
	return rc;
}

static int key_ok(const char *key, size_t nkey)
{
	return key && nkey > 0 && nkey <= MC_KEY_MAX;
}

/* One try of a store: ENOSPC when the heap had no room, or its own
 * evictions could not bring the items under the limit (lru.c U5). */
static int put_once(struct mc_store *s, unsigned slot, const struct mc_put *p,
                    struct found *f, enum mc_result *res, uint64_t *cas_out)
{
	struct mc_txn t;
	int64_t now = mc_now(s);
	int rc = mc_txn_begin(s, &t, slot, mc_stripe_of(s, f->h));
	if (rc)
		return rc;
	rc = find_live(s, &t, p->key, p->nkey, now, f);
	if (!rc && (*res = admit(p, f)) == MC_STORED)
		rc = put_new(s, &t, p, f, now, res, cas_out);
	if ((!rc || rc == ENOSPC) && *res == MC_NO_MEMORY) {
		mc_txn_end(&t, EAGAIN); /* undo the evictions: nothing changes */
		return rc;
	}
	rc = mc_txn_end(&t, rc);
	if (!rc)
		mc_assoc_maybe_expand(s);
	return rc;
}

#define ROOM_TRIES 4 /* a store tried again after evicting (lru.c U5) */
/* Evicted before each new try, at least: pmtx's heap gives each block
 * size its own 64 KiB superblocks, so a store of another size needs a
 * whole superblock emptied. */
#define ROOM_BYTES (64u << 10)

struct put_arg {
	const struct mc_put *p;
	uint64_t h; /* the key's hash */
	enum mc_result *res;
	uint64_t *cas_out;
};

static int put_try(struct mc_store *s, unsigned slot, void *arg)
{
	struct put_arg *a = arg;
	struct found f = {.h = a->h};
	return put_once(s, slot, a->p, &f, a->res, a->cas_out);
}

/* What to evict before try i + 1 of a store of need bytes that found no
 * room: what brings the items under the limit with need more (exact:
 * U4's victims were too few), or else, the heap having no room, need
 * bytes or ROOM_BYTES if more, doubled at each try (a block of several
 * superblocks needs them side by side): at most 15 times that amount for
 * one store. 0: give up, for an item over an eighth of the region's
 * largest size, for which the whole cache could go in vain. */
static size_t room_to_make(struct mc_store *s, size_t need, unsigned i)
{
	uint64_t held = mc_lru_bytes(s->root, NULL); /* a hint: no lock */
	if (held + need > s->mem_limit)
		return (size_t)(held + need - s->mem_limit);
	if (need > pmtx_region_max_size(s->r) / 8)
		return 0;
	return (need > ROOM_BYTES ? need : ROOM_BYTES) << i;
}

/* Run a store (try), and while it finds no room (ENOSPC, with *res
 * MC_NO_MEMORY) evict room_to_make's bytes, least recently used first
 * but never the store's own key, in transactions of their own, and run
 * it again (lru.c U5), ROOM_TRIES times at most. Refused at once under
 * -M. */
static int with_room(struct mc_store *s, const struct mc_room *room,
                     size_t need, int (*try)(struct mc_store *, unsigned,
                                             void *), void *arg)
{
	for (unsigned i = 0;; i++) {
		unsigned evicted = 0;
		int rc = try(s, room->slot, arg);
		if (rc != ENOSPC)
			return rc;
		size_t bytes = room_to_make(s, need, i);
		if (i == ROOM_TRIES || s->no_evict || !bytes)
			return 0; /* the caller's *res is MC_NO_MEMORY */
		if ((rc = mc_lru_evict_bytes(s, room, bytes, &evicted)) ||
		    !evicted)
			return rc;
	}
}

int mc_store_put(struct mc_store *s, unsigned slot, const struct mc_put *p,
                 enum mc_result *res, uint64_t *cas_out)
{
	if (!key_ok(p->key, p->nkey) || p->nbytes > UINT32_MAX)
		return PMTX_E_INVAL;
	struct put_arg a = {p, mc_hash(p->key, p->nkey), res, cas_out};
	struct mc_room room = {slot, p->key, p->nkey};
	int rc = with_room(s, &room, mc_item_bytes(p->nkey, p->nbytes),
	                   put_try, &a);
	if (!rc && *res == MC_NO_MEMORY && s->on_item_event) {
		struct mc_item_meta m = {.nkey = p->nkey, .nbytes = p->nbytes,
		                         .flags = p->flags};
		s->on_item_event(s->event_arg, MC_EV_NO_MEMORY, &m);
	}
	return rc;
}

/* ---- get and release (I3, I4) ---- */

/* I8: the last access, validated: between the item's time and now. */
static int64_t item_atime(const struct mc_item *it, int64_t now)
{
	int64_t t = it->time, a = it->atime;
	return a >= t && a <= now ? a : t;
}

void mc_item_meta_of(struct mc_store *s, const struct mc_item *it,
                     pmtx_off off, int64_t now, struct mc_item_meta *m)
{
	*m = (struct mc_item_meta){.off = off, .cas = it->cas,
	                           .key = mc_item_key(it), .nkey = it->nkey,
	                           .nbytes = it->nbytes, .flags = it->flags,
	                           .exptime = it->exptime, .time = it->time,
	                           .atime = item_atime(it, now),
	                           .fetched = it->fetched == 1,
	                           .live = mc_item_live(s, it, now)};
}

/* Fill ref from it; the state before this read (I8), then, with update,
 * the read recorded: naked stores under the stripe lock. */
static void ref_fill(struct mc_item *it, pmtx_off off, int update,
                     int64_t now, struct mc_ref *ref)
{
	*ref = (struct mc_ref){.off = off, .value = mc_item_value(it),
	                       .nbytes = it->nbytes, .flags = it->flags,
	                       .cas = it->cas, .exptime = it->exptime,
	                       .iflags = it->iflags,
	                       .fetched = it->fetched == 1,
	                       .atime = item_atime(it, now)};
	if (!update)
		return;
	if (it->fetched != 1)
		it->fetched = 1;
	if (it->atime != now)
		it->atime = now;
}

static void take_ref(struct mc_store *s, struct mc_item *it, pmtx_off off,
                     int update, int64_t now, struct mc_ref *ref)
{
	if (it->refgen != s->gen) { /* I4: naked, never flushed */
		it->refgen = s->gen;
		it->refcount = 0;
	}
	it->refcount++;
	ref_fill(it, off, update, now, ref);
}

/* The expiry R judges: T's new one when T came first (memcached reads
 * the flags in order). */
static int64_t recache_exptime(const struct mc_mget *g,
                               const struct mc_item *it)
{
	return g->touch && g->recache_after_touch ? g->exptime : it->exptime;
}

/* Whether this mg wins the item's recache token (I8): not sent yet, and
 * the item is stale or, with R, expires before the recache time. */
static int wins_token(const struct mc_mget *g, const struct mc_item *it)
{
	int64_t exp = recache_exptime(g, it);
	if (!g->tokens || (it->iflags & MC_IF_TOKEN_SENT))
		return 0;
	/* memcached compares its relative times, unsigned: 0 is never (so R0
	 * wins nothing) and a time before its start (-1 here) is its 1 */
	return (it->iflags & MC_IF_STALE) ||
	       (g->recache && exp != 0 && g->recache_time != 0 &&
	        MAX(exp, 1) < MAX(g->recache_time, 1));
}

/* The writes a get may need: remove a dead item, set a new exptime
 * (gat, mg T), record a won token, bump a stale LRU position. 0 writes:
 * no transaction at all. */
static int get_writes(struct mc_store *s, struct mc_txn *t, struct found *f,
                      const struct mc_mget *g, int64_t now, int *won)
{
	int rc = 0;
	if (!mc_item_live(s, f->it, now)) {
		rc = do_item_remove(s, t, f->link, f->off);
		f->off = 0;
		return rc;
	}
	*won = wins_token(g, f->it);
	if (*won)
		rc = PMTX_SET(t->tx, f->it->iflags,
		              (uint8_t)(f->it->iflags | MC_IF_TOKEN_SENT));
	if (!rc && g->touch)
		rc = PMTX_SET(t->tx, f->it->exptime, g->exptime);
	if (!rc && !g->no_update && now - f->it->time >= MC_BUMP_SECONDS)
		rc = do_lru_bump(s, t, f->off, now);
	return rc;
}

static int needs_writes(struct mc_store *s, const struct mc_item *it,
                        const struct mc_mget *g, int64_t now)
{
	return g->touch || !mc_item_live(s, it, now) || wins_token(g, it) ||
	       (!g->no_update && now - it->time >= MC_BUMP_SECONDS);
}

/* I7: 1 if the get was served without a transaction, 0 if it needs one,
 * or a negative status. */
static int get_plain(struct mc_store *s, const struct mc_mget *g, uint64_t h,
                     int64_t now, struct mc_ref *ref)
{
	unsigned stripe = mc_stripe_of(s, h);
	pmtx_off link, off = 0;
	mc_lock_key(s, stripe);
	int rc = do_assoc_find(s, NULL, g->key, g->nkey, h, &link, &off);
	struct mc_item *it = off ? mc_item_at(s->r, off) : NULL;
	int served = !rc && (!off ? !g->vivify
	                          : it && !needs_writes(s, it, g, now));
	if (served && it)
		take_ref(s, it, off, !g->no_update, now, ref);
	mc_unlock_key(s, stripe);
	return rc ? rc : served;
}

/* mg N on a miss: an empty item (flags 0, the N expiry, its key never
 * marked binary, as memcached's), its token sent to this client; found
 * again in f. A cache with no room for it leaves a miss (*res not
 * MC_STORED): memcached's failed item_alloc. */
static int vivify(struct mc_store *s, struct mc_txn *t,
                  const struct mc_mget *g, struct found *f, int64_t now,
                  enum mc_result *res)
{
	struct mc_put p = {.mode = MC_ADD, .key = g->key, .nkey = g->nkey,
	                   .exptime = g->viv_exptime, .value = "",
	                   .iflags = MC_IF_TOKEN_SENT};
	int rc = put_new(s, t, &p, f, now, res, NULL);
	if (rc || *res != MC_STORED)
		return rc;
	rc = do_assoc_find(s, t->tx, g->key, g->nkey, f->h, &f->link, &f->off);
	if (!rc && !f->off)
		rc = PMTX_E_CORRUPT;
	f->it = rc ? NULL : mc_item_at(s->r, f->off);
	return rc;
}

/* The transactional get: f found in it, the writes made, ref taken. */
static int get_tx(struct mc_store *s, struct mc_txn *t,
                  const struct mc_mget *g, struct found *f, int64_t now,
                  struct mc_ref *ref)
{
	int won = 0, created = 0;
	enum mc_result res = MC_STORED;
	int rc = do_assoc_find(s, t->tx, g->key, g->nkey, f->h, &f->link,
	                       &f->off);
	f->it = !rc && f->off ? mc_item_at(s->r, f->off) : NULL;
	uint8_t before = f->it ? f->it->iflags : 0;
	int64_t exp_before = f->it ? f->it->exptime : 0;
	if (!rc && f->off && needs_writes(s, f->it, g, now))
		rc = get_writes(s, t, f, g, now, &won);
	if (!rc && !f->off && g->vivify) {
		rc = vivify(s, t, g, f, now, &res);
		if ((!rc || rc == ENOSPC) && res != MC_STORED)
			return EAGAIN; /* undo its evictions: a miss */
		won = created = 1;
		before = 0, exp_before = 0; /* memcached's item_alloc's */
	}
	if (rc || !f->off)
		return rc;
	take_ref(s, f->it, f->off, !g->no_update, now, ref);
	ref->iflags = before; /* undo: the new state is in place already */
	ref->exptime = exp_before;
	ref->won = (uint8_t)won;
	ref->created = (uint8_t)created;
	return 0;
}

int mc_store_mget(struct mc_store *s, unsigned slot, const struct mc_mget *g,
                  struct mc_ref *ref)
{
	*ref = (struct mc_ref){0};
	if (!key_ok(g->key, g->nkey))
		return PMTX_E_INVAL;
	struct found f = {.h = mc_hash(g->key, g->nkey)};
	if (!g->touch) {
		int served = get_plain(s, g, f.h, mc_now(s), ref);
		if (served)
			return served < 0 ? served : 0;
	}
	struct mc_txn t;
	int rc = mc_txn_begin(s, &t, slot, mc_stripe_of(s, f.h));
	if (rc)
		return rc;
	rc = get_tx(s, &t, g, &f, mc_now(s), ref);
	rc = mc_txn_end(&t, rc);
	if (rc == EAGAIN && !ref->off)
		return 0; /* vivify found no room: a miss */
	if (rc && ref->created) /* its block went with the rollback */
		*ref = (struct mc_ref){0};
	if (rc && ref->off) { /* the reference went with the rollback */
		mc_store_release(s, slot, ref);
		*ref = (struct mc_ref){0};
	}
	return rc;
}

int mc_store_get(struct mc_store *s, unsigned slot, const char *key,
                 size_t nkey, int touch, int64_t exptime, struct mc_ref *ref)
{
	struct mc_mget g = {.key = key, .nkey = nkey, .touch = touch,
	                    .exptime = exptime};
	int rc = mc_store_mget(s, slot, &g, ref);
	if (ref->off && touch)
		ref->exptime = exptime;
	return rc;
}

/* I7: drop a reference that is not the last one of a pending item,
 * without a transaction. 1 if done. */
static int release_plain(struct mc_store *s, struct mc_item *it,
                         unsigned stripe)
{
	mc_lock_key(s, stripe);
	int last_pending = referenced(s, it) && it->refcount == 1 &&
	                   it->link == MC_LINK_PENDING;
	if (!last_pending && referenced(s, it))
		it->refcount--;
	mc_unlock_key(s, stripe);
	return !last_pending;
}

int mc_store_release(struct mc_store *s, unsigned slot, struct mc_ref *ref)
{
	struct mc_item *it = ref->off ? mc_item_at(s->r, ref->off) : NULL;
	if (!it)
		return 0;
	struct mc_txn t;
	uint64_t h = mc_hash(mc_item_key(it), it->nkey);
	if (release_plain(s, it, mc_stripe_of(s, h))) {
		ref->off = 0;
		return 0;
	}
	int rc = mc_txn_begin(s, &t, slot, mc_stripe_of(s, h));
	if (rc)
		return rc;
	if (referenced(s, it) && --it->refcount == 0 &&
	    it->link == MC_LINK_PENDING) {
		rc = do_pending_remove(s, &t, ref->off);
		if (!rc)
			rc = pmtx_free(t.tx, ref->off);
	}
	ref->off = 0;
	return mc_txn_end(&t, rc);
}

/* ---- delete, incr/decr, touch ---- */

/* Begin, find key's live item (dead ones are removed), run op, end. */
static int with_item(struct mc_store *s, unsigned slot, const char *key,
                     size_t nkey,
                     int (*op)(struct mc_store *s, struct mc_txn *t,
                               struct found *f, void *arg),
                     void *arg)
{
	if (!key_ok(key, nkey))
		return PMTX_E_INVAL;
	struct found f = {.h = mc_hash(key, nkey)};
	struct mc_txn t;
	int rc = mc_txn_begin(s, &t, slot, mc_stripe_of(s, f.h));
	if (rc)
		return rc;
	rc = find_live(s, &t, key, nkey, mc_now(s), &f);
	if (!rc)
		rc = op(s, &t, &f, arg);
	return mc_txn_end(&t, rc);
}

struct delete_arg {
	const struct mc_mdel *d;
	enum mc_result *res;
};

/* md I: the item stays, stale, with a new unique and its token free for
 * the next reader (I8); T sets its expiry. */
static int mark_stale(struct mc_store *s, struct mc_txn *t, struct found *f,
                      const struct mc_mdel *d)
{
	uint8_t fl = (uint8_t)((f->it->iflags | MC_IF_STALE) &
	                       ~MC_IF_TOKEN_SENT);
	int rc = PMTX_SET(t->tx, f->it->iflags, fl);
	if (!rc)
		rc = PMTX_SET(t->tx, f->it->cas, next_cas(s));
	if (!rc && d->touch)
		rc = PMTX_SET(t->tx, f->it->exptime, d->exptime);
	return rc;
}

static int op_delete(struct mc_store *s, struct mc_txn *t, struct found *f,
                     void *arg)
{
	struct delete_arg *a = arg;
	if (f->off && a->d->cas && f->it->cas != a->d->cas) {
		*a->res = MC_EXISTS;
		return 0;
	}
	*a->res = f->off ? MC_DELETED : MC_NOT_FOUND;
	if (!f->off)
		return 0;
	if (a->d->stale)
		return mark_stale(s, t, f, a->d);
	return do_item_remove(s, t, f->link, f->off);
}

int mc_store_mdelete(struct mc_store *s, unsigned slot,
                     const struct mc_mdel *d, enum mc_result *res)
{
	struct delete_arg a = {d, res};
	return with_item(s, slot, d->key, d->nkey, op_delete, &a);
}

int mc_store_delete_cas(struct mc_store *s, unsigned slot, const char *key,
                        size_t nkey, uint64_t cas, enum mc_result *res)
{
	struct mc_mdel d = {.key = key, .nkey = nkey, .cas = cas};
	return mc_store_mdelete(s, slot, &d, res);
}

int mc_store_delete(struct mc_store *s, unsigned slot, const char *key,
                    size_t nkey, enum mc_result *res)
{
	return mc_store_delete_cas(s, slot, key, nkey, 0, res);
}

int mc_store_reap(struct mc_store *s, unsigned slot, const char *key,
                  size_t nkey, int *reaped)
{
	struct found f = {.h = mc_hash(key, nkey)};
	struct mc_txn t;
	*reaped = 0;
	if (!key_ok(key, nkey))
		return PMTX_E_INVAL;
	int rc = mc_txn_begin(s, &t, slot, mc_stripe_of(s, f.h));
	if (rc)
		return rc;
	rc = do_assoc_find(s, t.tx, key, nkey, f.h, &f.link, &f.off);
	if (!rc && f.off && !mc_item_live(s, mc_item_at(s->r, f.off),
	                                  mc_now(s))) {
		rc = do_item_remove(s, &t, f.link, f.off);
		*reaped = !rc;
	}
	rc = mc_txn_end(&t, rc);
	if (rc)
		*reaped = 0;
	return rc;
}

struct touch_arg {
	int64_t exptime;
	enum mc_result *res;
};

static int op_touch(struct mc_store *s, struct mc_txn *t, struct found *f,
                    void *arg)
{
	struct touch_arg *a = arg;
	struct mc_ref ref;
	*a->res = f->off ? MC_TOUCHED : MC_NOT_FOUND;
	if (!f->off)
		return 0;
	ref_fill(f->it, f->off, 1, mc_now(s), &ref); /* a read too (I8) */
	return PMTX_SET(t->tx, f->it->exptime, a->exptime);
}

int mc_store_touch(struct mc_store *s, unsigned slot, const char *key,
                   size_t nkey, int64_t exptime, enum mc_result *res)
{
	struct touch_arg a = {exptime, res};
	return with_item(s, slot, key, nkey, op_touch, &a);
}

struct arith_arg {
	const struct mc_arith *a;
	uint64_t *out, *cas_out;
	enum mc_result *res;
	struct mc_marith_out *m; /* mc_store_marith's, or NULL */
};

/* The value as memcached reads it (safe_strtoull on the data, which
 * ends in "\r\n" there): blanks, an optional sign, decimal digits below
 * 2^64 (leading zeros allowed), then the end, a blank (the spaces that
 * pad an in-place shorter result) or a NUL. A '-' negates as strtoull
 * does, and is refused when that sets the top bit. */
static int parse_u64(const char *v, size_t n, uint64_t *out)
{
	size_t i = 0, digits;
	uint64_t x = 0;
	int neg = 0;
	while (i < n && isspace((unsigned char)v[i]))
		i++;
	if (i < n && (v[i] == '+' || v[i] == '-'))
		neg = v[i++] == '-';
	for (digits = i; i < n && v[i] >= '0' && v[i] <= '9'; i++) {
		uint64_t d = (uint64_t)(v[i] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return 0;
		x = x * 10 + d;
	}
	if (i == digits || (i < n && v[i] && !isspace((unsigned char)v[i])))
		return 0;
	if (neg)
		x = 0 - x;
	if (neg && x >> 63)
		return 0;
	*out = x;
	return 1;
}

/* memcached's arithmetic: a shorter result is written in place, padded
 * with spaces, unless a reference holds the item (a reply still to send
 * its value: memcached's refcount test); a longer one, or a referenced
 * item, makes a new item. */
/* What arithmetic finds before it computes: STORED to go on, with the
 * item's number in *v. */
static enum mc_result arith_admit(const struct mc_arith *a,
                                  const struct found *f, uint64_t *v)
{
	if (!f->off)
		return MC_NOT_FOUND;
	if (f->it->nbytes == 0)
		return MC_NON_NUMERIC;
	if (a->cas && f->it->cas != a->cas)
		return MC_EXISTS;
	if (!parse_u64(mc_item_value(f->it), f->it->nbytes, v))
		return MC_NON_NUMERIC;
	return MC_STORED;
}

/* ma N on a miss: the item created with the initial value. */
static int arith_vivify(struct mc_store *s, struct mc_txn *t,
                        struct found *f, struct arith_arg *aa)
{
	const struct mc_arith *a = aa->a;
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%llu",
	                 (unsigned long long)a->initial);
	struct mc_put p = {.mode = MC_ADD, .key = a->key, .nkey = a->nkey,
	                   .exptime = a->viv_exptime, .value = buf,
	                   .nbytes = (size_t)n};
	*aa->out = a->initial;
	aa->m->created = 1;
	int rc = put_new(s, t, &p, f, mc_now(s), aa->res, aa->cas_out);
	return !rc && *aa->res == MC_NO_MEMORY ? ENOSPC : rc; /* U5 */
}

static int op_arith(struct mc_store *s, struct mc_txn *t, struct found *f,
                    void *arg)
{
	struct arith_arg *aa = arg;
	const struct mc_arith *a = aa->a;
	uint64_t v = 0;
	if (!f->off && a->vivify)
		return arith_vivify(s, t, f, aa);
	if ((*aa->res = arith_admit(a, f, &v)) != MC_STORED)
		return 0;
	if (aa->m)
		aa->m->exptime = f->it->exptime;
	v = a->incr ? v + a->delta : v < a->delta ? 0 : v - a->delta;
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	*aa->out = v;
	if ((size_t)n <= f->it->nbytes && !referenced(s, f->it)) {
		char pad[24];
		uint64_t cas = next_cas(s);
		memset(pad, ' ', sizeof(pad));
		memcpy(pad, buf, (size_t)n);
		int rc = pmtx_write(t->tx, mc_item_value(f->it), pad,
		                    f->it->nbytes);
		if (!rc && aa->cas_out)
			*aa->cas_out = cas;
		if (!rc && a->touch)
			rc = PMTX_SET(t->tx, f->it->exptime, a->exptime);
		return rc ? rc : PMTX_SET(t->tx, f->it->cas, cas);
	}
	/* the new item keeps the old expiry: memcached's ma sets T's on
	 * the item it replaced, so T is lost when the value grows */
	struct mc_put p = {.mode = MC_SET, .key = mc_item_key(f->it),
	                   .nkey = f->it->nkey, .flags = f->it->flags,
	                   .exptime = f->it->exptime, .value = buf,
	                   .nbytes = (size_t)n};
	char key[MC_KEY_MAX];
	memcpy(key, p.key, p.nkey); /* the old item goes away */
	p.key = key;
	int rc = put_new(s, t, &p, f, mc_now(s), aa->res, aa->cas_out);
	/* No room: the transaction has unlinked the old item, so it must
	 * abort; a commit would lose the key. */
	return !rc && *aa->res == MC_NO_MEMORY ? ENOSPC : rc;
}

static int arith_try(struct mc_store *s, unsigned slot, void *arg)
{
	struct arith_arg *aa = arg;
	return with_item(s, slot, aa->a->key, aa->a->nkey, op_arith, aa);
}

int mc_store_arith_cas(struct mc_store *s, unsigned slot,
                       const struct mc_arith *a, uint64_t *out,
                       uint64_t *cas_out, enum mc_result *res)
{
	struct arith_arg aa = {a, out, cas_out, res, NULL};
	struct mc_room room = {slot, a->key, a->nkey};
	return with_room(s, &room, mc_item_bytes(a->nkey, 20), arith_try, &aa);
}

int mc_store_marith(struct mc_store *s, unsigned slot,
                    const struct mc_arith *a, struct mc_marith_out *o,
                    enum mc_result *res)
{
	*o = (struct mc_marith_out){0};
	struct arith_arg aa = {a, &o->value, &o->cas, res, o};
	struct mc_room room = {slot, a->key, a->nkey};
	return with_room(s, &room, mc_item_bytes(a->nkey, 20), arith_try, &aa);
}

int mc_store_arith(struct mc_store *s, unsigned slot, const char *key,
                   size_t nkey, int incr, uint64_t delta, uint64_t *out,
                   enum mc_result *res)
{
	struct mc_arith a = {.key = key, .nkey = nkey, .incr = incr,
	                     .delta = delta};
	return mc_store_arith_cas(s, slot, &a, out, NULL, res);
}

/* ---- flush_all and statistics ---- */

static void unlock_table_w(void *arg)
{
	pthread_rwlock_unlock(&((struct mc_store *)arg)->table_lock);
}

/* Under the table lock held exclusively: no store runs meanwhile. */
int mc_store_flush_all(struct mc_store *s, int64_t live, int by_cas)
{
	pmtx_tx *tx;
	pthread_rwlock_wrlock(&s->table_lock);
	int rc = pmtx_begin(s->r, s->rt, &tx);
	if (rc) {
		pthread_rwlock_unlock(&s->table_lock);
		return rc;
	}
	pmtx_defer(tx, unlock_table_w, s);
	rc = PMTX_SET(tx, s->root->oldest_live, live > 0 ? live : 0);
	if (!rc && by_cas) /* every unique issued so far (I5) */
		rc = PMTX_SET(tx, s->root->oldest_cas,
		              s->gen << 40 | atomic_load(&s->cas_seq));
	if (rc) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}

void mc_store_stats(struct mc_store *s, struct mc_store_stats *st)
{
	*st = (struct mc_store_stats){
		.curr_items = mc_lru_count(s->root),
		.bytes = mc_lru_bytes(s->root, NULL),
		.evictions = atomic_load(&s->evictions),
		.expansions = atomic_load(&s->expansions),
		.hashpower = s->root->hashpower, .gen = s->gen,
		.limit_maxbytes = s->mem_limit,
		.reclaimed_at_start = atomic_load(&s->reclaimed)};
	const struct mc_lock_waits *w = &s->waits;
	st->waits_table = atomic_load(&w->table);
	st->waits_stripe = atomic_load(&w->stripe);
	st->waits_lru = atomic_load(&w->lru);
	st->waits_pending = atomic_load(&w->pending);
	for (unsigned i = 0; i < MC_NSTRIPES; i++) {
		uint64_t n = atomic_load(&w->per_stripe[i]);
		st->waits_stripe_max = MAX(st->waits_stripe_max, n);
		st->waits_stripes += n > 0;
	}
}

void mc_store_reset_waits(struct mc_store *s)
{
	struct mc_lock_waits *w = &s->waits;
	atomic_store(&w->table, 0);
	atomic_store(&w->stripe, 0);
	atomic_store(&w->lru, 0);
	atomic_store(&w->pending, 0);
	for (unsigned i = 0; i < MC_NSTRIPES; i++)
		atomic_store(&w->per_stripe[i], 0);
}
