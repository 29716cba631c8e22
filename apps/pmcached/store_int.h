/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_int.h - what the store's files (items.c, assoc.c, lru.c,
 * restart.c, check.c) share. Not for the network layers.
 *
 * Locks (the order is the order of this list; a thread never takes an
 * earlier lock while holding a later one):
 *   1. table_lock   (rwlock) readers: every operation; writer: a step of
 *                   hash-table expansion (assoc.c)
 *   2. stripe[i]    the items whose key hashes to stripe i: their chain
 *                   links, fields and refcounts. A second stripe is only
 *                   ever taken with trylock (eviction), so two stripes
 *                   cannot deadlock.
 *   3. lru_lock[l]  LRU list l: its links and counts
 *   4. pend_lock[p] pending list p
 * A `do_` prefix means the caller holds the locks the function needs.
 * Locks taken for a transaction are released only after it commits or
 * aborts (pmtx_defer_unlock; seed 001 lesson 10): nobody can read data a
 * rollback would undo. What that costs (critical-section inflation) is
 * kept small by the order above: the table lock is shared, stripes are
 * many, and an LRU or pending lock is taken only for the few stores that
 * relink an item, late in the transaction.
 * Contention is counted (struct mc_lock_waits): a lock taken blocking is
 * first tried, and a try that fails counts one wait, on its class and, for
 * a stripe, on that stripe. Nothing is counted when the try succeeds.
 */
#ifndef MC_STORE_INT_H
#define MC_STORE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "layout.h"
#include "store.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define MC_NSTRIPES 1024u
#define MC_BUMP_SECONDS 60 /* an item moves to its LRU head at most this
                            * often when read (memcached's interval) */

/* Waits for a lock that was held, since the start or the last reset. */
struct mc_lock_waits {
	_Atomic uint64_t table, stripe, lru, pending;
	_Atomic uint32_t per_stripe[MC_NSTRIPES];
};

struct mc_store {
	pmtx_region *r;
	int own_region;
	struct mc_root *root;
	pmtx_runtime rt;
	uint64_t gen;            /* this run's generation (lesson 8) */
	size_t mem_limit;
	int no_evict;
	int64_t (*now)(void *arg);
	void *now_arg;
	void (*on_item_event)(void *arg, enum mc_item_event ev,
	                      const struct mc_item_meta *m);
	void *event_arg;
	_Atomic uint64_t cas_seq; /* volatile CAS counter (lesson 9) */
	_Atomic unsigned evict_lru;
	uint64_t stripe_mask;    /* stripes in use - 1: never more than the
	                          * smallest table of this run (assoc.c) */
	_Atomic uint64_t evictions, expansions, reclaimed;
	pthread_rwlock_t table_lock;
	pthread_mutex_t stripe[MC_NSTRIPES];
	pthread_mutex_t lru_lock[MC_NLRU];
	pthread_mutex_t pend_lock[MC_NPENDING];
	struct mc_lock_waits waits;
};

/* A persistent field as transaction tx sees it. Under redo a plain load
 * does not see the transaction's own writes (they are in its log until
 * commit), so every field a transaction may already have written is read
 * through pmtx_read; under undo that is a plain copy. tx NULL: no
 * transaction (inspection), a plain load. */
#define MC_RD(tx, lv)                                                         \
	({                                                                    \
		__auto_type mc_v_ = (lv);                                     \
		if (tx)                                                       \
			pmtx_read((tx), &mc_v_, &(lv), sizeof(mc_v_));        \
		mc_v_;                                                        \
	})

/* One store transaction and the locks it holds until it ends. */
#define MC_TXN_MAX_STRIPES 9 /* its own and up to 8 eviction victims' */
struct mc_txn {
	pmtx_tx *tx;
	struct mc_store *s;
	unsigned evicted;         /* victims, counted in stats at commit */
	struct mc_item_meta victims[MC_TXN_MAX_STRIPES - 1]; /* their sizes,
	                           * told to on_item_event at commit */
	unsigned slot;            /* the worker's pending list */
	uint32_t lru_held;        /* bit l: lru_lock[l] */
	uint64_t pend_held;       /* bit p: pend_lock[p] */
	unsigned nstripes;
	unsigned stripes[MC_TXN_MAX_STRIPES];
};

/* ---- txn.c ---- */
/* Take the table lock shared and stripe `stripe` (the key's), blocking;
 * unlock_key releases both. Waits are counted. */
void mc_lock_key(struct mc_store *s, unsigned stripe);
void mc_unlock_key(struct mc_store *s, unsigned stripe);
/* Lock m, blocking; a wait is counted in *waits. */
void mc_lock_counted(pthread_mutex_t *m, _Atomic uint64_t *waits);
/* Take the table lock shared and stripe `stripe`, then begin. */
int mc_txn_begin(struct mc_store *s, struct mc_txn *t, unsigned slot,
                 unsigned stripe);
/* Commit (rc == 0) or abort; every lock is released after. */
int mc_txn_end(struct mc_txn *t, int rc);
int mc_txn_holds_stripe(const struct mc_txn *t, unsigned stripe);
/* Lock stripe/LRU/pending for the rest of the transaction; try: give up
 * (EBUSY) instead of waiting. */
int mc_txn_lock_stripe(struct mc_store *s, struct mc_txn *t, unsigned i);
int mc_txn_lock_lru(struct mc_store *s, struct mc_txn *t, unsigned l,
                    int try);
int mc_txn_lock_pending(struct mc_store *s, struct mc_txn *t, unsigned p);
unsigned mc_stripe_of(const struct mc_store *s, uint64_t h);

/* ---- items.c ---- */
int64_t mc_now(struct mc_store *s);
uint64_t mc_hash(const char *key, size_t nkey);
struct mc_item *mc_item_at(pmtx_region *r, pmtx_off off);
static inline const char *mc_item_key(const struct mc_item *it)
{
	return (const char *)(it + 1);
}
static inline char *mc_item_value(struct mc_item *it)
{
	return (char *)(it + 1) + it->nkey;
}
/* The item is live: not expired, not flushed. */
int mc_item_live(struct mc_store *s, const struct mc_item *it, int64_t now);
/* Unlink it from chain and LRU and free it, or park it on a pending list
 * if it is referenced. Caller holds its stripe; in transaction tx. */
int do_item_remove(struct mc_store *s, struct mc_txn *t, pmtx_off link,
                   pmtx_off off);

/* ---- assoc.c (caller holds table_lock shared and the key's stripe) ---- */
/* The bucket slot (a pmtx_off in a table) for hash h. */
pmtx_off *do_assoc_bucket(struct mc_store *s, uint64_t h);
/* Find key: *link is the offset of the word that points at it (a bucket
 * or the previous item's h_next), *off the item, or 0. */
int do_assoc_find(struct mc_store *s, pmtx_tx *tx, const char *key,
                  size_t nkey, uint64_t h, pmtx_off *link, pmtx_off *off);
int do_assoc_insert(struct mc_store *s, pmtx_tx *tx, uint64_t h,
                    pmtx_off off);
/* Every table block and chained item (walk and check). */
int mc_assoc_foreach(pmtx_region *r, const struct mc_root *root,
                     int (*fn)(pmtx_off off, uint64_t bucket, int old,
                               void *arg), void *arg);
/* Expand the table if it is more than 3/2 full (one step per call; takes
 * table_lock exclusively). Call with no lock held. */
int mc_assoc_maybe_expand(struct mc_store *s);

/* ---- lru.c ---- */
/* Link a fresh item at its list's head; unlink any item. */
int do_lru_link(struct mc_store *s, struct mc_txn *t, pmtx_off off);
int do_lru_unlink(struct mc_store *s, struct mc_txn *t, pmtx_off off);
/* Move a linked item to its list's head, stamping its time. */
int do_lru_bump(struct mc_store *s, struct mc_txn *t, pmtx_off off,
                int64_t now);
/* Make room for need more bytes: evict least recently used items (other
 * stripes only by trylock) until the cache fits. *res is MC_STORED when
 * it fits, else MC_NO_MEMORY. */
int do_lru_make_room(struct mc_store *s, struct mc_txn *t, size_t need,
                     enum mc_result *res);
/* The store that needs room (U5): its worker's slot and its key. */
struct mc_room {
	unsigned slot;
	const char *key;
	size_t nkey;
};
/* The heap is full below mem_limit (the region cannot grow: its file
 * system is full): evict at least bytes of items, least recently used
 * first but never room's own key, in transactions of their own of at
 * most U4's victims each (U5), or as many as can be. *evicted is how
 * many went. */
int mc_lru_evict_bytes(struct mc_store *s, const struct mc_room *room,
                       size_t bytes, unsigned *evicted);
uint64_t mc_lru_bytes(const struct mc_root *root, pmtx_tx *tx);
/* What a walk shows of item it at off (its key pointing into it). */
void mc_item_meta_of(struct mc_store *s, const struct mc_item *it,
                     pmtx_off off, int64_t now, struct mc_item_meta *m);
uint64_t mc_lru_count(const struct mc_root *root);

/* ---- check.c ---- */
/* 0 if root is of this build's format major, else PMTX_E_BAD_VERSION and
 * in msg what it is and what to do (layout.h L4). */
int mc_format_msg(const struct mc_root *root, char *msg, size_t len);

/* ---- restart.c ---- */
/* Park an unlinked, referenced item on the caller's pending list; take
 * one off its list (lesson 7). */
int do_pending_push(struct mc_store *s, struct mc_txn *t, pmtx_off off);
int do_pending_remove(struct mc_store *s, struct mc_txn *t, pmtx_off off);

#endif
