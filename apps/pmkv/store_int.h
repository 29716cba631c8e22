/*
 * store_int.h - what store.c, assoc.c and obj.c share: the store handle,
 * the context of one operation's transaction, and the object layer that
 * lets one table serve both versions of the store.
 */
#ifndef PMKV_STORE_INT_H
#define PMKV_STORE_INT_H

#include <pthread.h>

#include "store.h"

struct pmkv_store {
	pmtx_region *r;
	struct pmkv_root *root;
	char *base;         /* the region's first byte (opt: off -> pointer) */
	int wrapped;        /* the region's version (layout.h flavour) */
	pmtx_off meta;      /* the object holding the table's geometry: the
	                     * root itself (opt) or root->meta (wrapped) */
	unsigned seg_shift; /* buckets per segment, log 2 (layout.h) */
	pmtx_runtime rt;
	size_t max_key, max_value;
	uint64_t initial_buckets;
	/* Every operation holds it for its whole transaction (store.c
	 * S1, S2). */
	pthread_mutex_t lock;
	/* A commit failed on the disk (store.c S11): under lock. */
	int broken;
};

/* One operation: its transaction, whether it has written yet, and the
 * first failure of the object layer (obj.c O4). Until it has written,
 * the opt version's loads are plain loads; after, they go through
 * pmtx_read, which sees the transaction's own writes. */
struct kvx {
	struct pmkv_store *s;
	pmtx_tx *tx;
	int writer; /* may write (store.c S1) */
	int wrote;
	int err;
};

/* ---- obj.c: persistent objects, as either version holds them ----
 *
 * An object is named by a pmtx_off: a heap block (opt) or a pmtx
 * copy-on-write wrapper (wrapped). A field is an object and a byte
 * position in it. */
struct kvref {
	pmtx_off obj;
	size_t at;
};
#define KVREF(o, a) ((struct kvref){(o), (a)})
/* A field of the geometry (struct pmkv_root, in the meta object). */
#define KVMETA(x, field) KVREF((x)->s->meta, offsetof(struct pmkv_root, field))

/* The word at f, as this operation sees it. A failure is kept in x->err
 * (O4) and reads as 0. */
uint64_t kvx_get(struct kvx *x, struct kvref f);
/* Write the word at f, or n bytes from src. */
int kvx_put(struct kvx *x, struct kvref f, uint64_t v);
int kvx_write(struct kvx *x, struct kvref f, const void *src, size_t n);
/* The object's bytes for reading (O2), at least n of them, checked
 * (layout.h L1): NULL if obj names no such object. *size: its size. */
const void *kvx_view(struct kvx *x, pmtx_off obj, size_t n, size_t *size);
/* A fresh object of n bytes (zeroed if zero), with a pointer for plain
 * stores (O3); kvx_flush before the transaction commits. */
int kvx_new(struct kvx *x, size_t n, int zero, pmtx_off *obj, void **p);
void kvx_flush(struct kvx *x, const void *p, size_t n);
/* Free the object when the transaction commits. */
int kvx_free(struct kvx *x, pmtx_off obj);
/* Every heap block of the object (its block; or its wrapper and payload). */
int kvx_walk_obj(struct pmkv_store *s, pmtx_off obj,
                 int (*fn)(pmtx_off, void *), void *arg);

/* ---- entries ---- */

/* The entry obj for reading, checked (L1): NULL if obj names no entry. */
const struct pmkv_entry *pmkv_entry_at(struct kvx *x, pmtx_off obj);
static inline const char *entry_key(const struct pmkv_entry *e)
{
	return (const char *)(e + 1);
}
/* The value, after the key (klen never changes: store.c S3). */
static inline const char *entry_val(const struct pmkv_entry *e)
{
	return (const char *)(e + 1) + PMKV_KLEN(e->lens);
}
/* An entry's fields. */
#define KVENT(obj, field) KVREF((obj), offsetof(struct pmkv_entry, field))

uint64_t pmkv_hash(const void *k, size_t n);

/* ---- assoc.c: the linear hash table ---- */

/* A chain position: the link that names the entry (a bucket head or an
 * entry's next field), and the entry (0 at the end). */
struct pos {
	struct kvref link;
	pmtx_off off;
	const struct pmkv_entry *e;
};
/* Find key k (hash h). 0 and pos->off == 0: absent. */
int assoc_find(struct kvx *x, const void *k, size_t kn, uint64_t h,
               struct pos *pos);
/* Link a fresh entry (e: its plain-store pointer) at the head of its
 * bucket; count + 1. */
int assoc_link(struct kvx *x, pmtx_off off, struct pmkv_entry *e,
               uint64_t h);
/* Unlink the entry at pos and free it; count - 1. */
int assoc_unlink(struct kvx *x, const struct pos *pos);
/* Replace the entry at pos by the fresh entry off (same key). */
int assoc_replace(struct kvx *x, const struct pos *pos, pmtx_off off,
                  struct pmkv_entry *e);
/* Split one bucket if the table is fuller than its load factor. */
int assoc_maybe_grow(struct kvx *x);
/* Buckets in the table. */
uint64_t assoc_buckets(struct kvx *x);
/* The head of bucket b (< assoc_buckets), checked: 0 and *head, or
 * PMTX_E_CORRUPT if the directory or the segment is. */
int assoc_bucket_head(struct kvx *x, uint64_t b, struct kvref *head);
/* A new, empty table in the geometry (create, FLUSHALL). */
int assoc_new_table(struct kvx *x);
/* FLUSHALL's detach: the table becomes the trash, a new one replaces it. */
int assoc_detach(struct kvx *x);
/* Free up to budget blocks of the trash; *left = 1 while some remain. */
int assoc_sweep(struct kvx *x, unsigned budget, int *left);
/* Hints (H6, opt version): prefetch the bucket of hash h and return its
 * offset (0: none), or prefetch the first entry of the bucket at slot. */
pmtx_off assoc_hint_bucket(struct pmkv_store *s, uint64_t h);
void assoc_hint_entry(struct pmkv_store *s, pmtx_off slot);
/* The one bound every offset a hint follows passes (H6): 1 if
 * [off, off + n) lies in the region and off is a nonzero multiple of 8. */
int assoc_hint_in(const struct pmkv_store *s, pmtx_off off, uint64_t n);
/* Walk every chain, checking it; *entries: how many. */
int assoc_check(struct kvx *x, uint64_t *entries, char *msg, size_t len);
/* fn for every block of the table and the trash (pmkv_walk). */
int assoc_walk(struct kvx *x, int (*fn)(pmtx_off, void *), void *arg);

#endif
