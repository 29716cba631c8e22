/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store.h - pmcached's cache: items, the hash table, the LRU lists and
 * eviction, all in one pmtx region (layout.h). The network layers call
 * only this header; the crash-state explorer drives it directly.
 *
 * Every operation that changes the cache is one failure-atomic pmtx
 * transaction, and returns only after it has committed: a reply sent
 * after the call returns is never lost (an acknowledged write survives
 * kill -9 and power loss).
 *
 * Errors follow pmtx.h: 0, a positive errno or a PMTX_E_* status. What
 * the operation found (stored, not found, exists, ...) is a separate
 * out-parameter, enum mc_result.
 */
#ifndef MC_STORE_H
#define MC_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <pmtx.h>

#include "layout.h" /* enum mc_iflag, the item state a reference shows */

struct mc_store;

/* One item as a walk of the cache shows it (mc_store_walk_lru,
 * mc_store_item_meta), and an eviction or a refusal reports it. */
struct mc_item_meta {
	uint64_t off, cas;   /* the item's block, and its unique */
	const char *key;     /* NULL where the item is gone (an event) */
	size_t nkey, nbytes;
	uint32_t flags;
	int64_t exptime;     /* absolute seconds, 0 never */
	int64_t time;        /* stored, or last moved to its LRU head */
	int64_t atime;       /* last read, or time (items.c I8) */
	int fetched;         /* read since stored */
	int live;            /* not expired, not flushed */
};

enum mc_item_event {
	MC_EV_EVICTED,       /* evicted: committed */
	MC_EV_NO_MEMORY,     /* a store refused MC_NO_MEMORY: its sizes */
};

typedef struct mc_store_opts {
	size_t mem_limit;        /* item bytes (-m); 0 = 64 MiB */
	int no_evict;            /* -M: refuse instead of evicting */
	size_t region_size;      /* create: initial region bytes */
	size_t max_size;         /* create: the region grows up to this */
	unsigned hashpower;      /* create: initial log2 buckets (16) */
	pmtx_runtime runtime;    /* undo, redo or redo-async */
	int fast_restart;        /* create: PMTX_CREATE_TWIN_FAST_RESTART */
	pmtx_domain domain;
	pmtx_backend backend;
	pmtx_truncation truncation;
	/* The clock, seconds since the epoch; NULL = time(). */
	int64_t (*now)(void *arg);
	void *now_arg;
	/* Told of each eviction once it has committed, and of each store
	 * refused for want of memory, with no store lock held (statistics;
	 * may be NULL). */
	void (*on_item_event)(void *arg, enum mc_item_event ev,
	                      const struct mc_item_meta *m);
	void *event_arg;
} mc_store_opts;

void mc_store_opts_init(mc_store_opts *o);

/* Open the cache in path, creating it if absent. A region of another
 * layout or format, or a corrupt root, fails with a status and a message
 * (pmtx_errmsg) and is never written. Restart work (lesson 7: the pending
 * lists; lesson 8: a new generation) is O(pending items). */
int mc_store_open(const char *path, const mc_store_opts *o,
                  struct mc_store **out);
int mc_store_close(struct mc_store *s);
/* The region the cache lives in. */
pmtx_region *mc_store_region(struct mc_store *s);
/* Detail of the last failed mc_store_open/attach in this thread. */
const char *mc_store_errmsg(void);
/* Like mc_store_open, for a region that is already open (the explorer):
 * s takes r but does not close it. */
int mc_store_attach(pmtx_region *r, const mc_store_opts *o,
                    struct mc_store **out);
void mc_store_detach(struct mc_store *s);

enum mc_result {
	MC_STORED = 0,
	MC_NOT_STORED,
	MC_EXISTS,
	MC_NOT_FOUND,
	MC_DELETED,
	MC_TOUCHED,
	MC_NON_NUMERIC,  /* incr/decr of a value that is not a number */
	MC_TOO_LARGE,    /* the item cannot fit in the memory limit */
	MC_NO_MEMORY,    /* -M and full */
};

enum mc_put_mode {
	MC_SET, MC_ADD, MC_REPLACE, MC_APPEND, MC_PREPEND, MC_CAS,
};

struct mc_put {
	enum mc_put_mode mode;
	const char *key;
	size_t nkey;
	uint32_t flags;
	int64_t exptime;   /* absolute seconds, 0 = never, < 0 = expired */
	const void *value;
	size_t nbytes;
	uint64_t cas;      /* MC_CAS: the unique the client read */
	uint64_t if_cas;   /* MC_APPEND, MC_PREPEND: if nonzero, an item of
	                    * another unique is left as it is (MC_EXISTS);
	                    * memcached's binary protocol */
	int stale_ok;      /* MC_CAS (ms I): a unique older than the item's
	                    * stores too, as a stale item that keeps the old
	                    * expiry and token (memcached's CAS_STALE) */
	uint8_t iflags;    /* MC_IF_KEY_BINARY: the key came in base64 */
};

/* Store. *res: STORED, NOT_STORED, EXISTS, NOT_FOUND, TOO_LARGE or
 * NO_MEMORY; *cas_out the new item's unique (may be NULL). slot is the
 * calling worker's pending-list slot (0 <= slot < MC_NPENDING). */
int mc_store_put(struct mc_store *s, unsigned slot, const struct mc_put *p,
                 enum mc_result *res, uint64_t *cas_out);

/* A reference to an item, held while its value is sent (no lock is held
 * meanwhile). The item stays valid until mc_store_release, even if it is
 * deleted or replaced in between (it then waits on a pending list). */
struct mc_ref {
	uint64_t off;        /* 0: no item */
	const char *value;
	size_t nbytes;
	uint32_t flags;
	uint64_t cas;
	int64_t exptime;
	/* the meta protocol's item state (layout.h enum mc_iflag), as it was
	 * before this read */
	uint8_t iflags;
	uint8_t fetched;     /* read since stored (mg h) */
	uint8_t won;         /* mc_store_mget: this read won the token (W) */
	uint8_t created;     /* mc_store_mget: vivified by this read (N) */
	int64_t atime;       /* last access (mg l), or the store's time */
};

/* Look up key; ref->off == 0 if absent or expired. With touch, set its
 * exptime to exptime first (gat). */
int mc_store_get(struct mc_store *s, unsigned slot, const char *key,
                 size_t nkey, int touch, int64_t exptime, struct mc_ref *ref);
int mc_store_release(struct mc_store *s, unsigned slot, struct mc_ref *ref);

/* A meta get (mg, me): mc_store_get's lookup with the meta protocol's
 * item state (items.c I8); ref->exptime is the expiry before this read
 * (0 for a vivified item). A read records itself (atime, fetched, the
 * LRU) unless no_update. With tokens, the first reader of a stale item,
 * or with recache of an item expiring before recache_time, wins its
 * recache token (ref->won), kept in the region before the call returns;
 * with vivify a miss creates an empty item (flags 0, expiry
 * viv_exptime) whose token its creator wins (ref->created). */
struct mc_mget {
	const char *key;
	size_t nkey;
	int touch;               /* set the expiry to exptime (T) */
	int64_t exptime;
	int no_update;           /* u, me */
	int tokens;              /* mg: stale items' and R's tokens */
	int vivify;              /* N */
	int64_t viv_exptime;
	int recache;             /* R */
	int64_t recache_time;
	int recache_after_touch; /* R judges T's new expiry (T came first) */
};
int mc_store_mget(struct mc_store *s, unsigned slot, const struct mc_mget *g,
                  struct mc_ref *ref);

/* *res: DELETED or NOT_FOUND. */
int mc_store_delete(struct mc_store *s, unsigned slot, const char *key,
                    size_t nkey, enum mc_result *res);
/* The same, but if cas is nonzero an item of another unique is left as
 * it is (*res EXISTS). */
int mc_store_delete_cas(struct mc_store *s, unsigned slot, const char *key,
                        size_t nkey, uint64_t cas, enum mc_result *res);
/* A meta delete (md): with cas nonzero, as mc_store_delete_cas; with
 * stale (md I) the item is not removed but marked stale, given a new
 * unique and its token freed (and with touch its expiry set): *res
 * DELETED, NOT_FOUND or EXISTS. */
struct mc_mdel {
	const char *key;
	size_t nkey;
	uint64_t cas;
	int stale;
	int touch;
	int64_t exptime;
};
int mc_store_mdelete(struct mc_store *s, unsigned slot,
                     const struct mc_mdel *d, enum mc_result *res);
/* incr (decr = 0) or decr by delta: *res STORED (value in *out),
 * NOT_FOUND or NON_NUMERIC. Decr stops at 0; incr wraps at 2^64. */
int mc_store_arith(struct mc_store *s, unsigned slot, const char *key,
                   size_t nkey, int incr, uint64_t delta, uint64_t *out,
                   enum mc_result *res);
/* The same, with a compare: if a->cas is nonzero, an item of another
 * unique is left as it is (*res EXISTS; an empty value is NON_NUMERIC
 * first, as in memcached). *cas_out (may be NULL): the item's new
 * unique. */
struct mc_arith {
	const char *key;
	size_t nkey;
	int incr;
	uint64_t delta, cas;
	int touch;           /* ma T: the expiry set to exptime, if the
	                      * value is rewritten in place (memcached) */
	int64_t exptime;
	int vivify;          /* ma N: a miss creates the item, initial, with */
	uint64_t initial;    /* the expiry viv_exptime (*res STORED) */
	int64_t viv_exptime;
};
int mc_store_arith_cas(struct mc_store *s, unsigned slot,
                       const struct mc_arith *a, uint64_t *out,
                       uint64_t *cas_out, enum mc_result *res);
/* The meta arithmetic (ma), with a's touch and vivify, in one
 * transaction: the new value and unique, the expiry before (0 for an
 * item created) and whether it was. */
struct mc_marith_out {
	uint64_t value, cas;
	int64_t exptime;
	int created;
};
int mc_store_marith(struct mc_store *s, unsigned slot,
                    const struct mc_arith *a, struct mc_marith_out *o,
                    enum mc_result *res);
/* *res: TOUCHED or NOT_FOUND. */
int mc_store_touch(struct mc_store *s, unsigned slot, const char *key,
                   size_t nkey, int64_t exptime, enum mc_result *res);
/* memcached's flush_all [delay]: items stored (or last bumped) at or
 * before `live` (absolute seconds; 0 = none) are gone once `live` has
 * passed, and with by_cas every item stored so far is gone at once. The
 * cut-off replaces any earlier one, as memcached keeps one; an item gone
 * by its unique stays gone (memcached revives it when a later flush_all
 * with a delay suspends the unique's cut-off). */
int mc_store_flush_all(struct mc_store *s, int64_t live, int by_cas);

struct mc_store_stats {
	uint64_t curr_items, bytes, evictions, expansions, hashpower;
	uint64_t gen, limit_maxbytes, reclaimed_at_start;
	/* Lock contention since the start or mc_store_reset_waits: waits
	 * for the table lock (an expansion step held it), for a key's stripe
	 * (and the most on any one stripe, and how many stripes had one),
	 * for an LRU list, for a pending list (store_int.h). */
	uint64_t waits_table, waits_stripe, waits_stripe_max;
	uint64_t waits_stripes, waits_lru, waits_pending;
};
void mc_store_stats(struct mc_store *s, struct mc_store_stats *st);
void mc_store_reset_waits(struct mc_store *s);
/* One LRU list (0 <= l < MC_NLRU): its items, their bytes, and the last
 * access time of its least recently used item (0 if empty). */
struct mc_lru_info {
	uint64_t count, bytes;
	int64_t tail_time;
};
int mc_store_lru_info(struct mc_store *s, unsigned l,
                      struct mc_lru_info *out);
/* Call fn for each item of LRU list l (0 <= l < MC_NLRU), least recently
 * used first, under the list's lock (fn must not call the store, and m's
 * key is valid during the call only), until fn returns nonzero; that
 * value, or 0. Items and their fields are read as they are: a snapshot
 * for statistics and dumps. */
int mc_store_walk_lru(struct mc_store *s, unsigned l,
                      int (*fn)(const struct mc_item_meta *m, void *arg),
                      void *arg);
/* The item a walk saw at off with unique cas, if it is still in the
 * cache: 1 and *m, its key copied to key (MC_KEY_MAX bytes); 0 if it has
 * gone since (deleted, replaced, evicted). */
int mc_store_item_meta(struct mc_store *s, uint64_t off, uint64_t cas,
                       struct mc_item_meta *m, char *key);
/* Remove key's item if it is dead (expired or flushed), in a transaction
 * of its own (lru_crawler crawl); *reaped says whether it was. */
int mc_store_reap(struct mc_store *s, unsigned slot, const char *key,
                  size_t nkey, int *reaped);

/* Call fn for every item block the cache owns (tables, items on the
 * chains and on the pending lists): the explorer's leak check. */
int mc_store_walk(pmtx_region *r, int (*fn)(pmtx_off off, void *arg),
                  void *arg);
/* The blocks the cache owns (mc_store_walk's) and the heap's blocks
 * (pmtx_heap_walk's): equal when no block leaks. */
int mc_store_count_blocks(pmtx_region *r, uint64_t *owned, uint64_t *heap);
/* Look key up in a region no store has attached (after recovery, for
 * inspection): no lock, no reference, no write. ref->off == 0 if absent
 * or dead at time now. */
int mc_store_peek(pmtx_region *r, const char *key, size_t nkey, int64_t now,
                  struct mc_ref *ref);
/* Check the structure: every chain item hashes to its bucket, LRU lists
 * are consistent with the chains and their counts, pending items are
 * unlinked. 0 or PMTX_E_CORRUPT with a message in msg. */
int mc_store_check(pmtx_region *r, char *msg, size_t len);
/* Open the region file at path as a private view (recovery in memory, the
 * file untouched) and run the heap check, mc_store_check and the leak
 * check (every heap block is reachable from the cache). 0 and a summary
 * in msg, or a status and what is wrong. A journal that still holds
 * commits (the journal backend, after a crash) is first applied: the
 * region is opened once for writing and closed, as a start would. */
int mc_store_verify(const char *path, char *msg, size_t len);

#endif
