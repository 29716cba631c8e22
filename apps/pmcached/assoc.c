/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * assoc.c - the hash table: chains of items by key hash, in a table of
 * 2^hashpower bucket offsets, grown by incremental, transactional
 * expansion (as memcached's assoc.c grows its own).
 *
 * DESIGN
 * Persistent: the table block(s), the chains (mc_item.h_next), hashpower
 * and the expansion state in the root.
 *
 * Invariants
 *  A1. An item is in exactly one chain: while an expansion runs (old_table
 *      != 0), the old bucket b = h & (2^old_hashpower - 1) if b >=
 *      expand_next, else the new bucket h & (2^hashpower - 1).
 *  A2. An expansion starts in one transaction (allocate and zero the new
 *      table, keep the old one, expand_next = 0) and proceeds in steps of
 *      MC_EXPAND_STEP old buckets, each one transaction that moves every
 *      item of those buckets and raises expand_next; the last step frees
 *      the old table. A crash anywhere leaves A1 true, and the next store
 *      goes on with the next step. Each step holds the table lock
 *      exclusively (store_int.h), so no chain it moves is in use.
 *  A3. All the items of one chain, in either table, share a stripe: the
 *      stripe is h & stripe_mask, and stripe_mask is never wider than the
 *      smallest table of the run (restart.c), so a stripe lock covers
 *      every chain a key can be in.
 */
#include <string.h>

#include "store_int.h"

#define MC_EXPAND_STEP 64u

static pmtx_off *table_at(pmtx_region *r, pmtx_off t, uint64_t hashpower)
{
	pmtx_off *p = pmtx_ptr(r, t);
	if (!p || pmtx_usable_size(r, t) < (sizeof(*p) << hashpower))
		return NULL;
	return p;
}

pmtx_off *do_assoc_bucket(struct mc_store *s, uint64_t h)
{
	const struct mc_root *root = s->root;
	if (root->old_table) {
		uint64_t b = h & ((1ull << root->old_hashpower) - 1);
		if (b >= root->expand_next)
			return (pmtx_off *)pmtx_ptr(s->r, root->old_table) + b;
	}
	uint64_t b = h & ((1ull << root->hashpower) - 1);
	return (pmtx_off *)pmtx_ptr(s->r, root->table) + b;
}

int do_assoc_find(struct mc_store *s, pmtx_tx *tx, const char *key,
                  size_t nkey, uint64_t h, pmtx_off *link, pmtx_off *off)
{
	pmtx_off *w = do_assoc_bucket(s, h), cur;
	for (unsigned hops = 0; (cur = MC_RD(tx, *w)); hops++) {
		struct mc_item *it = mc_item_at(s->r, cur);
		if (!it || hops > (1u << 20))
			return PMTX_E_CORRUPT;
		if (it->nkey == nkey && !memcmp(mc_item_key(it), key, nkey)) {
			*link = pmtx_off_of(s->r, w);
			*off = cur;
			return 0;
		}
		w = &it->h_next;
	}
	*link = pmtx_off_of(s->r, w);
	*off = 0;
	return 0;
}

int do_assoc_insert(struct mc_store *s, pmtx_tx *tx, uint64_t h,
                    pmtx_off off)
{
	pmtx_off *w = do_assoc_bucket(s, h);
	struct mc_item *it = mc_item_at(s->r, off);
	int rc = PMTX_SET(tx, it->h_next, MC_RD(tx, *w));
	return rc ? rc : PMTX_SET(tx, *w, off);
}

/* ---- expansion (A2) ---- */

static int expand_start(struct mc_store *s, pmtx_tx *tx)
{
	struct mc_root *root = s->root;
	pmtx_off t;
	int rc = pmtx_zalloc(tx, sizeof(pmtx_off) << (root->hashpower + 1),
	                     &t);
	if (!rc)
		rc = PMTX_SET(tx, root->old_table, root->table);
	if (!rc)
		rc = PMTX_SET(tx, root->old_hashpower, root->hashpower);
	if (!rc)
		rc = PMTX_SET(tx, root->expand_next, 0);
	if (!rc)
		rc = PMTX_SET(tx, root->table, t);
	return rc ? rc : PMTX_SET(tx, root->hashpower, root->hashpower + 1);
}

/* Move the chain of old bucket b to the new table. */
static int move_bucket(struct mc_store *s, pmtx_tx *tx, pmtx_off *old)
{
	struct mc_root *root = s->root;
	pmtx_off *table = pmtx_ptr(s->r, root->table);
	int rc = 0;
	for (pmtx_off off = MC_RD(tx, *old); !rc && off;) {
		struct mc_item *it = mc_item_at(s->r, off);
		if (!it)
			return PMTX_E_CORRUPT;
		pmtx_off next = MC_RD(tx, it->h_next);
		uint64_t h = mc_hash(mc_item_key(it), it->nkey);
		pmtx_off *w = table + (h & ((1ull << root->hashpower) - 1));
		rc = PMTX_SET(tx, it->h_next, MC_RD(tx, *w));
		if (!rc)
			rc = PMTX_SET(tx, *w, off);
		off = next;
	}
	return rc ? rc : PMTX_SET(tx, *old, 0);
}

static int expand_step(struct mc_store *s, pmtx_tx *tx)
{
	struct mc_root *root = s->root;
	uint64_t n = 1ull << root->old_hashpower;
	pmtx_off *old = table_at(s->r, root->old_table, root->old_hashpower);
	if (!old)
		return PMTX_E_CORRUPT;
	uint64_t b = root->expand_next, end = b + MC_EXPAND_STEP;
	int rc = 0;
	for (; !rc && b < n && b < end; b++)
		rc = move_bucket(s, tx, old + b);
	if (!rc)
		rc = PMTX_SET(tx, root->expand_next, b);
	if (!rc && b == n) {
		rc = pmtx_free(tx, root->old_table);
		if (!rc)
			rc = PMTX_SET(tx, root->old_table, 0);
	}
	return rc;
}

static int expand_wanted(const struct mc_store *s)
{
	const struct mc_root *root = s->root;
	if (root->old_table)
		return 1;
	return root->hashpower < MC_HASHPOWER_MAX &&
	       mc_lru_count(root) > (3ull << root->hashpower) / 2;
}

static void unlock_w(void *arg)
{
	pthread_rwlock_unlock(&((struct mc_store *)arg)->table_lock);
}

int mc_assoc_maybe_expand(struct mc_store *s)
{
	if (!expand_wanted(s))
		return 0;
	pmtx_tx *tx;
	pthread_rwlock_wrlock(&s->table_lock);
	if (!expand_wanted(s)) {
		pthread_rwlock_unlock(&s->table_lock);
		return 0;
	}
	int rc = pmtx_begin(s->r, s->rt, &tx);
	if (rc) {
		pthread_rwlock_unlock(&s->table_lock);
		return rc;
	}
	pmtx_defer(tx, unlock_w, s);
	int starting = !s->root->old_table;
	rc = starting ? expand_start(s, tx) : expand_step(s, tx);
	if (rc) {
		pmtx_abort(tx);
		return rc;
	}
	if (starting)
		atomic_fetch_add(&s->expansions, 1);
	return pmtx_commit(tx);
}

int mc_assoc_foreach(pmtx_region *r, const struct mc_root *root,
                     int (*fn)(pmtx_off off, uint64_t bucket, int old,
                               void *arg), void *arg)
{
	for (int old = 0; old < 2; old++) {
		pmtx_off t = old ? root->old_table : root->table;
		uint64_t hp = old ? root->old_hashpower : root->hashpower;
		uint64_t first = old ? root->expand_next : 0;
		if (!t)
			continue;
		pmtx_off *tab = table_at(r, t, hp);
		if (!tab || first > (1ull << hp))
			return PMTX_E_CORRUPT;
		int rc = fn(t, ~0ull, old, arg);
		for (uint64_t b = first; !rc && b < (1ull << hp); b++) {
			unsigned hops = 0;
			for (pmtx_off off = tab[b]; !rc && off; hops++) {
				struct mc_item *it = mc_item_at(r, off);
				if (!it || hops > (1u << 20))
					return PMTX_E_CORRUPT;
				rc = fn(off, b, old, arg);
				off = it->h_next;
			}
		}
		if (rc)
			return rc;
	}
	return 0;
}
