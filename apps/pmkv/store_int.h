/*
 * store_int.h - what store.c and assoc.c share: the store handle and the
 * context of one operation's transaction.
 */
#ifndef PMKV_STORE_INT_H
#define PMKV_STORE_INT_H

#include <pthread.h>

#include "store.h"

struct pmkv_store {
	pmtx_region *r;
	struct pmkv_root *root;
	pmtx_runtime rt;
	size_t max_key, max_value;
	uint64_t initial_buckets;
	/* Readers (GET, EXISTS, SCAN, ...) share it; an operation that
	 * writes holds it alone, for its whole transaction. */
	pthread_rwlock_t lock;
};

/* One operation: its transaction, and whether it has written yet. Until
 * it has, its loads are plain loads (the opt version); after, they go
 * through pmtx_read, which sees the transaction's own writes. */
struct kvx {
	struct pmkv_store *s;
	pmtx_tx *tx;
	int writer; /* holds the store lock alone (store.c S1) */
	int wrote;
};

/* A field of the region as this operation sees it. */
uint64_t kvx_load(struct kvx *x, const uint64_t *p);
/* Write a field: PMTX_SET, noting that the transaction wrote. */
int kvx_store(struct kvx *x, uint64_t *p, uint64_t v);

/* The entry at off, checked (L1): NULL if off names no entry block. */
struct pmkv_entry *pmkv_entry_at(struct pmkv_store *s, pmtx_off off);
static inline char *entry_key(struct pmkv_entry *e)
{
	return (char *)(e + 1);
}
/* The value, after the key (klen never changes: store.c S3). */
static inline char *entry_val(struct pmkv_entry *e)
{
	return (char *)(e + 1) + PMKV_KLEN(e->lens);
}

uint64_t pmkv_hash(const void *k, size_t n);

/* ---- assoc.c: the linear hash table ---- */

/* A chain position: the link that names the entry (a bucket head or an
 * entry's next field), and the entry (0 at the end). */
struct pos {
	uint64_t *link;
	pmtx_off off;
	struct pmkv_entry *e;
};
/* Find key k (hash h). 0 and pos->off == 0: absent. */
int assoc_find(struct kvx *x, const void *k, size_t kn, uint64_t h,
               struct pos *pos);
/* Link a fresh entry at the head of its bucket; count + 1. */
int assoc_link(struct kvx *x, pmtx_off off, uint64_t h);
/* Unlink the entry at pos and free it; count - 1. */
int assoc_unlink(struct kvx *x, const struct pos *pos);
/* Replace the entry at pos by the fresh entry off (same key). */
int assoc_replace(struct kvx *x, const struct pos *pos, pmtx_off off);
/* Split one bucket if the table is fuller than its load factor. */
int assoc_maybe_grow(struct kvx *x);
/* Buckets in the table. */
uint64_t assoc_buckets(const struct pmkv_root *root);
/* The bucket head of bucket b (< assoc_buckets), checked; NULL if the
 * directory or the segment is corrupt. */
uint64_t *assoc_bucket_head(struct kvx *x, uint64_t b);
/* A new, empty table in the root (create, FLUSHALL). */
int assoc_new_table(struct kvx *x);
/* FLUSHALL's detach: the table becomes the trash, a new one replaces it. */
int assoc_detach(struct kvx *x);
/* Free up to budget blocks of the trash; *left = 1 while some remain. */
int assoc_sweep(struct kvx *x, unsigned budget, int *left);
/* Walk every chain, checking it; *entries: how many. */
int assoc_check(struct kvx *x, uint64_t *entries, char *msg, size_t len);
/* fn for every block of the table and the trash (pmkv_walk). */
int assoc_walk(struct kvx *x, int (*fn)(pmtx_off, void *), void *arg);

#endif
