/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * txn.c - a store transaction and its locks (store_int.h gives the lock
 * order). Every lock is taken before or during the transaction and
 * released only once it has committed or aborted (seed 001 lesson 10:
 * deferred release), through pmtx_defer, so that no thread can see data
 * that a rollback would undo.
 *
 * Invariants
 *  T1. A transaction holds the table lock shared for all of its life.
 *  T2. It holds its own stripe, taken blocking before it begins; any
 *      other stripe (an eviction victim's) only by trylock, so two
 *      transactions never wait for each other's stripes.
 *  T3. LRU and pending locks are taken at most once each per transaction
 *      (the masks in struct mc_txn), LRU locks other than the first by
 *      trylock when one is already held.
 */
#include <errno.h>

#include "store_int.h"

unsigned mc_stripe_of(const struct mc_store *s, uint64_t h)
{
	return (unsigned)(h & s->stripe_mask);
}

void mc_lock_counted(pthread_mutex_t *m, _Atomic uint64_t *waits)
{
	if (pthread_mutex_trylock(m) == 0)
		return;
	atomic_fetch_add_explicit(waits, 1, memory_order_relaxed);
	pthread_mutex_lock(m);
}

void mc_lock_key(struct mc_store *s, unsigned stripe)
{
	struct mc_lock_waits *w = &s->waits;
	if (pthread_rwlock_tryrdlock(&s->table_lock) != 0) {
		atomic_fetch_add_explicit(&w->table, 1, memory_order_relaxed);
		pthread_rwlock_rdlock(&s->table_lock);
	}
	if (pthread_mutex_trylock(&s->stripe[stripe]) == 0)
		return;
	atomic_fetch_add_explicit(&w->stripe, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&w->per_stripe[stripe], 1,
	                          memory_order_relaxed);
	pthread_mutex_lock(&s->stripe[stripe]);
}

void mc_unlock_key(struct mc_store *s, unsigned stripe)
{
	pthread_mutex_unlock(&s->stripe[stripe]);
	pthread_rwlock_unlock(&s->table_lock);
}

static void unlock_table(void *arg)
{
	pthread_rwlock_unlock(&((struct mc_store *)arg)->table_lock);
}

int mc_txn_begin(struct mc_store *s, struct mc_txn *t, unsigned slot,
                 unsigned stripe)
{
	*t = (struct mc_txn){.slot = slot % MC_NPENDING, .s = s};
	mc_lock_key(s, stripe);
	int rc = pmtx_begin(s->r, s->rt, &t->tx);
	if (rc) {
		mc_unlock_key(s, stripe);
		return rc;
	}
	/* Deferred calls run in registration order: stripe, then table. */
	t->stripes[t->nstripes++] = stripe;
	pmtx_defer_unlock(t->tx, &s->stripe[stripe]);
	pmtx_defer(t->tx, unlock_table, s);
	return 0;
}

int mc_txn_end(struct mc_txn *t, int rc)
{
	if (rc) {
		pmtx_abort(t->tx);
		return rc;
	}
	if ((rc = pmtx_commit(t->tx)) || !t->evicted)
		return rc;
	atomic_fetch_add(&t->s->evictions, t->evicted);
	for (unsigned i = 0; t->s->on_item_event && i < t->evicted; i++)
		t->s->on_item_event(t->s->event_arg, MC_EV_EVICTED,
		                    &t->victims[i]);
	return 0;
}

int mc_txn_holds_stripe(const struct mc_txn *t, unsigned stripe)
{
	for (unsigned i = 0; i < t->nstripes; i++)
		if (t->stripes[i] == stripe)
			return 1;
	return 0;
}

int mc_txn_lock_stripe(struct mc_store *s, struct mc_txn *t, unsigned i)
{
	if (mc_txn_holds_stripe(t, i))
		return 0;
	if (t->nstripes == MC_TXN_MAX_STRIPES ||
	    pthread_mutex_trylock(&s->stripe[i]) != 0)
		return EBUSY;
	t->stripes[t->nstripes++] = i;
	return pmtx_defer_unlock(t->tx, &s->stripe[i]);
}

int mc_txn_lock_lru(struct mc_store *s, struct mc_txn *t, unsigned l,
                    int try)
{
	if (t->lru_held & (1u << l))
		return 0;
	if (try || t->lru_held) {
		if (pthread_mutex_trylock(&s->lru_lock[l]) != 0)
			return EBUSY;
	} else {
		mc_lock_counted(&s->lru_lock[l], &s->waits.lru);
	}
	t->lru_held |= 1u << l;
	return pmtx_defer_unlock(t->tx, &s->lru_lock[l]);
}

int mc_txn_lock_pending(struct mc_store *s, struct mc_txn *t, unsigned p)
{
	if (t->pend_held & (1ull << p))
		return 0;
	mc_lock_counted(&s->pend_lock[p], &s->waits.pending);
	t->pend_held |= 1ull << p;
	return pmtx_defer_unlock(t->tx, &s->pend_lock[p]);
}
