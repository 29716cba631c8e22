/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmtx_containers.h - crash-safe containers over pmtx transactions: a hash
 * map, an ordered map (a B+tree with ranks), a list (a deque of byte
 * strings) and strings.
 *
 * Every container lives in a region. Its persistent handle is the offset
 * (pmtx_off) of its header block, which the application stores where it
 * likes (in the root, in another container's value); a container is
 * created and destroyed inside a transaction. To use one, open a volatile
 * handle on that offset (pmtx_hmap_open, pmtx_map_open, pmtx_list_open):
 * it checks that the offset names a container of that kind and version,
 * and holds what is not persistent (the runtime its own transactions
 * use, the hash map's stripe locks).
 *
 * Transactions. Every operation that writes takes a pmtx_tx *tx:
 *  - NULL: the operation runs in a transaction of its own, begun with
 *    the handle's runtime (pmtx_cont_options.runtime), and is durable
 *    when it returns 0. If this thread already runs a transaction in the
 *    region, the operation joins it instead (pmtx_begin nests);
 *  - the transaction running in this thread: the operation joins it, so
 *    that several containers (and the caller's own writes) change
 *    together or not at all, when that transaction commits.
 * An operation that fails before it has written anything (bad input, a
 * key that is absent, a handle that names no container) returns its
 * status and leaves the transaction as it was. An operation that fails
 * after it has written (the heap full, an I/O error) aborts the whole
 * transaction, its caller's included: every write of it is rolled back
 * and the caller's pmtx_commit returns PMTX_E_ABORTED.
 * Reads take a tx too: NULL reads as the transaction this thread runs
 * in the region sees, if there is one, else the committed state (plain
 * loads); a running transaction reads as it sees (its own writes
 * included, under every runtime).
 *
 * Runtimes. Every container works under undo, redo, redo-async, twin and
 * auto. Under copy-on-write (PMTX_RT_COW), which works through wrapper
 * objects only, every operation returns PMTX_E_UNSUPPORTED.
 *
 * Isolation. As for any pmtx data, transactions do not isolate threads:
 * a container must not be written by one thread while another reads or
 * writes it, unless the caller serialises them (a lock held until the
 * transaction ends: pmtx_defer_unlock). The hash map can do that itself
 * with striped locks (PMTX_HMAP_LOCKED, below).
 *
 * Views. A read returns a pmtx_bytes view: a pointer into the region (or
 * into the view itself, for an inline value: copy the bytes, not the
 * struct) and a length. A view stays valid until the container is next
 * written, by any transaction, or the region is closed; copy what must
 * live longer.
 *
 * Limits. A key or a value is at most PMTX_CONT_BYTES_MAX bytes, and a
 * list element too; a longer one is refused with PMTX_E_TOO_BIG and
 * changes nothing.
 *
 * Every function returns 0 or a status (pmtx_strerror), as in pmtx.h.
 * Formats: each container's header and nodes are versioned on their own
 * (PMTX_CONT_FORMAT); they are heap blocks, so the region's format is
 * unchanged by them.
 */
#ifndef PMTX_CONTAINERS_H
#define PMTX_CONTAINERS_H
#pragma GCC visibility push(default)

#include <stddef.h>
#include <stdint.h>

#include "pmtx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the containers' persistent formats (container headers carry
 * it; a handle whose major differs is refused: PMTX_E_BAD_VERSION). */
#define PMTX_CONT_FORMAT_MAJOR 1
#define PMTX_CONT_FORMAT_MINOR 0

#define PMTX_CONT_BYTES_MAX ((size_t)1 << 30) /* 1 GiB */

/* A read-only view of bytes of a container. */
typedef struct pmtx_bytes {
	const void *p;
	size_t n;
	uint64_t inl; /* holds the bytes of an inline value (p points here) */
} pmtx_bytes;

/* Options of a volatile handle (any container). */
typedef struct pmtx_cont_options {
	/* Runtime of the transactions the handle begins itself (tx NULL):
	 * PMTX_RT_DEFAULT (the region's default) unless set. */
	pmtx_runtime runtime;
	/* Hash map only: stripe locks for concurrent writers (0: none; else
	 * a power of two from 1 to 64; needs a map created with
	 * PMTX_HMAP_LOCKED). See "Concurrent writers" below. */
	unsigned stripes;
} pmtx_cont_options;

void pmtx_cont_options_init(pmtx_cont_options *o);

/* ========================================================================
 * Hash map: byte-string keys to byte-string values.
 *
 * A linear hash table: 2^k + s buckets (s < 2^k), a key in bucket h mod 2^k
 * unless that is below s, then in h mod 2^(k+1). An insert that finds the
 * table fuller than its load factor splits one bucket, in its own
 * transaction: no operation pays for a whole rehash. Buckets are never
 * merged back (a map that shrinks keeps its bucket array until it is
 * cleared or destroyed).
 *
 * Concurrent writers. A map created with PMTX_HMAP_LOCKED and opened with
 * stripes = S takes, in every operation, the mutex of the key's stripe
 * (hash mod S) and releases it when the outermost transaction ends
 * (pmtx_defer_unlock), so writers of different stripes run at once.
 * Lock order: a transaction that touches several keys of a locked map
 * must lock their stripes first, in increasing stripe order
 * (pmtx_hmap_lock_keys); taking them in the order of its operations can
 * deadlock with another such transaction. A bucket split takes the split
 * bucket's stripe and the map's geometry mutex with trylock only, and is
 * left to a later insert if either is busy, so it never waits while
 * holding a stripe.
 * ===================================================================== */
typedef struct pmtx_hmap pmtx_hmap;

/* pmtx_hmap_create flags */
#define PMTX_HMAP_LOCKED 1u /* at least 64 buckets: stripe locks work */

/* put flags */
#define PMTX_HMAP_NX 1u /* only if the key is absent: else PMTX_E_EXISTS */
#define PMTX_HMAP_XX 2u /* only if the key is present: else NOT_FOUND */

int pmtx_hmap_create(pmtx_tx *tx, unsigned flags, pmtx_off *out);
/* Free the map and every entry (in tx; O(entries) frees). */
int pmtx_hmap_destroy(pmtx_tx *tx, pmtx_off map);
int pmtx_hmap_open(pmtx_region *r, pmtx_off map, const pmtx_cont_options *o,
                   pmtx_hmap **out);
void pmtx_hmap_close(pmtx_hmap *m);
pmtx_off pmtx_hmap_off(const pmtx_hmap *m);

/* Set key to value. *existed (may be NULL): 1 if the key was present. */
int pmtx_hmap_put(pmtx_tx *tx, pmtx_hmap *m, const void *k, size_t kn,
                  const void *v, size_t vn, unsigned flags, int *existed);
/* The value of key: 0 and *v, or PMTX_E_NOT_FOUND. */
int pmtx_hmap_get(pmtx_tx *tx, pmtx_hmap *m, const void *k, size_t kn,
                  pmtx_bytes *v);
/* Remove key: 0, or PMTX_E_NOT_FOUND (nothing written). */
int pmtx_hmap_del(pmtx_tx *tx, pmtx_hmap *m, const void *k, size_t kn);
int pmtx_hmap_len(pmtx_tx *tx, pmtx_hmap *m, uint64_t *n);
/* Remove every entry (O(entries) frees, in one transaction). */
int pmtx_hmap_clear(pmtx_tx *tx, pmtx_hmap *m);

/* A scan: call fn for the entries of some buckets from cursor on, at
 * least count entries unless the map ends, and set *next (0: the scan is
 * over). Begin with cursor 0. Redis's SCAN guarantee: an entry present
 * for the whole scan is returned at least once, across splits; an entry
 * may be returned more than once. fn returns 0 to go on, else the scan
 * stops and returns that value (*next then names the bucket to resume
 * at, which is returned again whole). fn must not write the map. A scan
 * during which the map is not written returns every entry exactly once. */
typedef int (*pmtx_hmap_fn)(const pmtx_bytes *k, const pmtx_bytes *v,
                            void *arg);
int pmtx_hmap_scan(pmtx_tx *tx, pmtx_hmap *m, uint64_t cursor, size_t count,
                   pmtx_hmap_fn fn, void *arg, uint64_t *next);
/* Destroy a map a piece at a time, for a map too large to free in one
 * transaction: free up to budget of its entries in tx (and, once it is
 * empty, its table and header); *left is 1 while some of it remains.
 * The map must be unreachable for every other use from the first step
 * on (detach it in the same transaction, or before). */
int pmtx_hmap_destroy_some(pmtx_tx *tx, pmtx_off map, size_t budget,
                           int *left);

/* Prefetch what a lookup of key k reads first (its bucket word), with
 * plain loads that decide nothing and follow no offset outside the
 * region, so that a batch of lookups (a pipeline) overlaps its cache
 * misses; the token names the bucket for pmtx_hmap_prefetch_more, which
 * prefetches the chain's first entry. Call with no writer running in
 * another thread. A stale hint only costs its prefetch. */
uint64_t pmtx_hmap_prefetch(pmtx_hmap *m, const void *k, size_t kn);
void pmtx_hmap_prefetch_more(pmtx_hmap *m, uint64_t token);

/* Lock the stripes of n keys in increasing order, each released when
 * the outermost transaction ends (a no-op on a map opened without
 * stripes). tx must be running. */
int pmtx_hmap_lock_keys(pmtx_tx *tx, pmtx_hmap *m, size_t n,
                        const void *const *keys, const size_t *lens);

/* ========================================================================
 * Ordered map: a B+tree with subtree counts (ranks in O(log n)).
 *
 * Keys are compared according to the kind chosen at creation:
 *   PMTX_MAP_BYTES  byte strings, memcmp order, a prefix first;
 *   PMTX_MAP_U64    8 bytes holding a uint64_t (host order), numeric;
 *   PMTX_MAP_I64    8 bytes holding an int64_t, numeric;
 *   PMTX_MAP_SCORE  8 bytes holding a double, then a byte string: by the
 *                   double, then by the bytes (a sorted set's order);
 *                   NaN is refused (PMTX_E_INVAL); -0.0 equals 0.0.
 * Values: byte strings (PMTX_MAP_VAL_BYTES, the default), or exactly 8
 * bytes kept inside the leaf (PMTX_MAP_VAL_U64: no block per value).
 * ===================================================================== */
typedef struct pmtx_map pmtx_map;

enum {
	PMTX_MAP_BYTES = 1,
	PMTX_MAP_U64 = 2,
	PMTX_MAP_I64 = 3,
	PMTX_MAP_SCORE = 4,
};
/* pmtx_map_create flags (or'ed with the key kind) */
#define PMTX_MAP_VAL_U64 0x100u

int pmtx_map_create(pmtx_tx *tx, unsigned kind, pmtx_off *out);
int pmtx_map_destroy(pmtx_tx *tx, pmtx_off map);
int pmtx_map_open(pmtx_region *r, pmtx_off map, const pmtx_cont_options *o,
                  pmtx_map **out);
void pmtx_map_close(pmtx_map *m);
pmtx_off pmtx_map_off(const pmtx_map *m);

/* put flags: PMTX_HMAP_NX and PMTX_HMAP_XX mean the same here. */
int pmtx_map_put(pmtx_tx *tx, pmtx_map *m, const void *k, size_t kn,
                 const void *v, size_t vn, unsigned flags, int *existed);
int pmtx_map_get(pmtx_tx *tx, pmtx_map *m, const void *k, size_t kn,
                 pmtx_bytes *v);
int pmtx_map_del(pmtx_tx *tx, pmtx_map *m, const void *k, size_t kn);
int pmtx_map_len(pmtx_tx *tx, pmtx_map *m, uint64_t *n);
int pmtx_map_clear(pmtx_tx *tx, pmtx_map *m);

/* Order statistics. rank: how many keys are below k (or at most k with
 * PMTX_MAP_INCL), whether or not k is present. */
#define PMTX_MAP_INCL 1u
int pmtx_map_rank(pmtx_tx *tx, pmtx_map *m, const void *k, size_t kn,
                  unsigned flags, uint64_t *rank);
/* Keys in [lo, hi] (each bound inclusive unless its flag says
 * PMTX_MAP_LO_EXCL / PMTX_MAP_HI_EXCL; NULL: unbounded). */
#define PMTX_MAP_LO_EXCL 2u
#define PMTX_MAP_HI_EXCL 4u
int pmtx_map_count(pmtx_tx *tx, pmtx_map *m, const void *lo, size_t lon,
                   const void *hi, size_t hin, unsigned flags, uint64_t *n);

/* Cursors. A cursor is a volatile position, valid until the map is
 * written (then seek again). */
typedef struct pmtx_map_cursor {
	pmtx_map *m;
	pmtx_tx *tx;
	pmtx_off leaf;
	unsigned pos;   /* position in the leaf's order */
	int valid;
	uint64_t rank;  /* the entry's rank */
} pmtx_map_cursor;

enum {
	PMTX_SEEK_FIRST = 0,
	PMTX_SEEK_LAST,
	PMTX_SEEK_GE, /* the first key >= k */
	PMTX_SEEK_GT,
	PMTX_SEEK_LE, /* the last key <= k */
	PMTX_SEEK_LT,
};
/* Position c: 0, or PMTX_E_NOT_FOUND (no such key; c not valid). */
int pmtx_map_seek(pmtx_tx *tx, pmtx_map *m, int how, const void *k,
                  size_t kn, pmtx_map_cursor *c);
/* Position c at the key of rank r (0 = the smallest). */
int pmtx_map_seek_rank(pmtx_tx *tx, pmtx_map *m, uint64_t r,
                       pmtx_map_cursor *c);
/* Step: 0, or PMTX_E_NOT_FOUND past either end (c no longer valid). */
int pmtx_map_next(pmtx_map_cursor *c);
int pmtx_map_prev(pmtx_map_cursor *c);
int pmtx_map_cursor_get(const pmtx_map_cursor *c, pmtx_bytes *k,
                        pmtx_bytes *v);

/* Bulk load into an empty map from input sorted in ascending key order
 * (strictly: equal keys are refused with PMTX_E_INVAL, as is any key out
 * of order; nothing is then written). next(arg, &k, &v) returns 1 with
 * the next pair, 0 at the end. Leaves are filled to fill % (50-100). */
typedef int (*pmtx_map_source)(void *arg, pmtx_bytes *k, pmtx_bytes *v);
int pmtx_map_load(pmtx_tx *tx, pmtx_map *m, pmtx_map_source next, void *arg,
                  unsigned fill);

/* ========================================================================
 * List: a deque of byte strings, in packed chunks (a short element costs
 * its length and a byte or two; a push writes back a line or two).
 * Indexes are 0-based from the head; a negative index counts from the
 * tail (-1 is the last element), as in Redis.
 * ===================================================================== */
typedef struct pmtx_list pmtx_list;

enum { PMTX_LIST_HEAD = 0, PMTX_LIST_TAIL = 1 };

int pmtx_list_create(pmtx_tx *tx, pmtx_off *out);
int pmtx_list_destroy(pmtx_tx *tx, pmtx_off list);
int pmtx_list_open(pmtx_region *r, pmtx_off list, const pmtx_cont_options *o,
                   pmtx_list **out);
void pmtx_list_close(pmtx_list *l);
pmtx_off pmtx_list_off(const pmtx_list *l);

int pmtx_list_len(pmtx_tx *tx, pmtx_list *l, uint64_t *n);
int pmtx_list_push(pmtx_tx *tx, pmtx_list *l, int end, const void *v,
                   size_t n);
/* Remove the element at end and copy it out: into buf (cap bytes; a
 * longer element is cut, *n says its whole length; buf may be NULL).
 * PMTX_E_NOT_FOUND if the list is empty. */
int pmtx_list_pop(pmtx_tx *tx, pmtx_list *l, int end, void *buf, size_t cap,
                  size_t *n);
/* The element at index i: PMTX_E_NOT_FOUND outside the list. */
int pmtx_list_index(pmtx_tx *tx, pmtx_list *l, int64_t i, pmtx_bytes *v);
int pmtx_list_set(pmtx_tx *tx, pmtx_list *l, int64_t i, const void *v,
                  size_t n);
/* Insert v before (after = 0) or after the first element equal to
 * pivot: PMTX_E_NOT_FOUND if there is none. */
int pmtx_list_insert(pmtx_tx *tx, pmtx_list *l, const void *pivot, size_t pn,
                     int after, const void *v, size_t n);
/* Remove elements equal to v: count > 0 the first count from the head,
 * count < 0 the first -count from the tail, 0 all. *removed: how many. */
int pmtx_list_remove(pmtx_tx *tx, pmtx_list *l, const void *v, size_t n,
                     int64_t count, uint64_t *removed);
/* Keep only [start, stop] (inclusive, negative from the tail; Redis's
 * LTRIM: an empty range empties the list). */
int pmtx_list_trim(pmtx_tx *tx, pmtx_list *l, int64_t start, int64_t stop);
/* Call fn for each element in [start, stop] (as LRANGE), in order. fn
 * returns 0 to go on, else the walk stops and returns that value. */
typedef int (*pmtx_list_fn)(const pmtx_bytes *v, void *arg);
int pmtx_list_range(pmtx_tx *tx, pmtx_list *l, int64_t start, int64_t stop,
                    pmtx_list_fn fn, void *arg);

/* ========================================================================
 * Strings: a 16-byte persistent value (pmtx_str) that holds a string of
 * up to 15 bytes inside itself and a longer one in a heap block. Put one
 * anywhere in the region (a struct field, a container's value); all zero
 * bytes are the empty string. Functions take the region, since a string
 * is not a block of its own.
 * ===================================================================== */
typedef struct pmtx_str {
	unsigned char b[16];
} pmtx_str;
#define PMTX_STR_INLINE_MAX 15

/* The string's length (0 and PMTX_E_CORRUPT if s is not a string). */
int pmtx_str_len(pmtx_region *r, pmtx_tx *tx, const pmtx_str *s,
                 size_t *n);
/* A view of the whole string. */
int pmtx_str_get(pmtx_region *r, pmtx_tx *tx, const pmtx_str *s,
                 pmtx_bytes *v);
/* Copy n bytes from position at into buf; *got: how many there were. */
int pmtx_str_read(pmtx_region *r, pmtx_tx *tx, const pmtx_str *s, size_t at,
                  void *buf, size_t n, size_t *got);
int pmtx_str_set(pmtx_region *r, pmtx_tx *tx, pmtx_str *s, const void *p,
                 size_t n);
int pmtx_str_append(pmtx_region *r, pmtx_tx *tx, pmtx_str *s, const void *p,
                    size_t n);
/* Overwrite [at, at + n) with p, growing the string (zero bytes between
 * its end and at) as Redis's SETRANGE does. */
int pmtx_str_setrange(pmtx_region *r, pmtx_tx *tx, pmtx_str *s, size_t at,
                      const void *p, size_t n);
/* Free the string's block (if any) and make it empty. */
int pmtx_str_clear(pmtx_region *r, pmtx_tx *tx, pmtx_str *s);

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop
#endif /* PMTX_CONTAINERS_H */
