/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_int.h - what the store's files share: the store handle, the
 * context of one operation's transaction, and the key-space interface
 * (struct ks_ops) that store.c's operations are written against, with
 * one implementation per version of the store: keyspace.c (opt, format
 * 2.0: pmtx_hmap) and assoc.c over obj.c (wrapped, format 1.1: its own
 * table of copy-on-write objects).
 */
#ifndef PMKV_STORE_INT_H
#define PMKV_STORE_INT_H

#include <pthread.h>
#include <string.h>

#include <pmtx_containers.h>

#include "store.h"

struct ks_ops;

struct pmkv_store {
	pmtx_region *r;
	struct pmkv_root_hdr *root;
	char *base;         /* the region's first byte */
	int wrapped;        /* the region's version (layout.h flavour) */
	const struct ks_ops *ks; /* its key space */
	pmtx_runtime rt;
	size_t max_key, max_value;
	/* opt (keyspace.c): a handle on each database's map, and the
	 * offset it was opened on (reopened when the root names another:
	 * FLUSHALL) */
	pmtx_hmap *map[PMKV_DBS];
	/* the generation of the root's words each handle was opened in, and
	 * the current one (keyspace.c K2): under lock */
	uint64_t map_gen[PMKV_DBS], roots_gen;
	/* wrapped (assoc.c, obj.c) */
	pmtx_off meta;      /* the object holding the table's geometry */
	uint64_t initial_buckets;
	/* Every operation holds it for its whole transaction (store.c
	 * S1, S2). */
	pthread_mutex_t lock;
	/* A commit failed on the disk (store.c S11): under lock. */
	int broken;
	/* collections may exist (store.c S14, layout.h L6): under lock */
	int typed;
	/* where each trash map's sweep resumes (keyspace.c K6): under lock */
	uint64_t sweep_at[PMKV_DBS];
	/* access clocks for eviction (store.c S16), NULL when not kept:
	 * each slot a key's hash picks, the last access time (LRU) or a
	 * count of accesses (LFU); written under the lock */
	uint32_t *access;
	int access_lfu;
};
#define PMKV_ACCESS_SLOTS (1u << 16)

#define KX_OPEN 8 /* containers one operation may have open */

/* One operation: its transaction, whether it has written yet, and the
 * first failure of the object layer (obj.c O4). */
struct kvx {
	struct pmkv_store *s;
	pmtx_tx *tx;
	unsigned db; /* the database it works on (store.c S15) */
	int writer; /* may write (store.c S1) */
	int wrote;
	int err;
	/* the containers it opened (kx_hmap, kx_list, kx_map), closed by
	 * kx_end, with their kinds (PMKV_T_HASH, _LIST, _ZSET) */
	unsigned nopen;
	unsigned char kind[KX_OPEN];
	void *open[KX_OPEN];
};

/* ---- the key space, one interface over both versions ---- */

/* A key's value as a lookup found it: a view, valid until the key space
 * is next written. */
struct kval {
	unsigned type;     /* enum pmkv_type */
	int64_t expire_ms; /* 0: none */
	const char *p;     /* the payload */
	size_t n;
};

/* wrapped: a chain position, the link that names the entry (a bucket
 * head or an entry's next field) and the entry (0 at the end). */
struct kvref {
	pmtx_off obj;
	size_t at;
};
struct pos {
	struct kvref link;
	pmtx_off off;
	const struct pmkv_entry *e;
};

/* One key's lookup: the key (set by the caller), and what was found. */
struct kpos {
	const void *k;
	size_t kn;
	int looked;    /* find ran (put may run without it: a blind put) */
	int found;
	struct kval v;
	uint64_t h;    /* wrapped: the key's hash */
	struct pos at; /* wrapped: where it is */
};

/* Called for each entry a scan meets (expired ones too); nonzero stops
 * the scan. */
typedef int (*ks_fn)(void *arg, const void *k, size_t kn,
                     const struct kval *v);

struct ks_ops {
	/* A new store's root fields, in x's transaction. */
	int (*create)(struct kvx *x);
	/* Check what the root names (layout.h L1) and open it; 0, or a
	 * status with msg saying what is wrong. */
	int (*attach)(struct pmkv_store *s, char *msg, size_t len);
	void (*detach)(struct pmkv_store *s);
	/* Before the lookups of an operation that may insert (wrapped: a
	 * bucket split, store.c S6). */
	int (*grow)(struct kvx *x);
	/* Look p->k up: 0 and p->found, p->v. */
	int (*find)(struct kvx *x, struct kpos *p);
	/* Give the key of p (looked up or not) a fresh object of this type
	 * and expiry whose payload is v1 then v2, in place of any old one. */
	int (*put)(struct kvx *x, struct kpos *p, unsigned type, int64_t exp,
	           const void *v1, size_t n1, const void *v2, size_t n2);
	/* Remove the key p found. */
	int (*del)(struct kvx *x, struct kpos *p);
	/* Keys, and buckets, as this operation sees them. */
	uint64_t (*count)(struct kvx *x);
	uint64_t (*buckets)(struct kvx *x);
	/* pmtx_hmap_scan's contract: fn for every entry of the buckets
	 * from cursor on until count entries were met or 10 x count
	 * buckets passed; *next 0 at the end. fn must not write. */
	int (*scan)(struct kvx *x, uint64_t cursor, size_t count, ks_fn fn,
	            void *arg, uint64_t *next);
	/* FLUSHALL (all) or FLUSHDB (x->db's): detach its keys into the
	 * trash, leave an empty key space (the trash must be empty: sweep
	 * first). */
	int (*flush)(struct kvx *x, int all);
	/* Free up to budget entries of the trash; *left = 1 while some
	 * remain. */
	int (*sweep)(struct kvx *x, unsigned budget, int *left);
	/* Hints (store.c S9): prefetch what a lookup of k reads first,
	 * and a token for hint_more, which prefetches the next. */
	uint64_t (*hint)(struct pmkv_store *s, const void *k, size_t kn);
	void (*hint_more)(struct pmkv_store *s, uint64_t token);
	/* Opt only (NULL in wrapped): give every database a key space
	 * (keyspace.c K5); exchange two databases (SWAPDB). */
	int (*dbs)(struct kvx *x);
	int (*swap)(struct kvx *x, unsigned a, unsigned b);
	/* Check every structure the store owns; *keys: the keys found in
	 * x->db. */
	int (*check)(struct kvx *x, uint64_t *keys, char *msg, size_t len);
	/* fn for every heap block the store owns. */
	int (*walk)(struct kvx *x, int (*fn)(pmtx_off, void *), void *arg);
};

extern const struct ks_ops pmkv_ks_opt;     /* keyspace.c */
extern const struct ks_ops pmkv_ks_wrapped; /* assoc.c */

/* layout.h L4: the typed object in bytes [p, p + n) as a struct kval, or
 * PMTX_E_CORRUPT. */
static inline int pmkv_obj_parse(const void *p, size_t n, struct kval *v)
{
	const unsigned char *b = p;
	size_t hdr = PMKV_OBJ_HDR;
	if (n < hdr || b[0] > PMKV_T_MAX || (b[1] & ~PMKV_OBJ_FLAGS))
		return PMTX_E_CORRUPT;
	v->type = b[0];
	v->expire_ms = 0;
	if (b[1] & PMKV_OBJ_EXPIRES) {
		hdr += PMKV_OBJ_EXP;
		if (n < hdr)
			return PMTX_E_CORRUPT;
		memcpy(&v->expire_ms, b + PMKV_OBJ_HDR, PMKV_OBJ_EXP);
		if (v->expire_ms == 0)
			return PMTX_E_CORRUPT;
	}
	v->p = (const char *)b + hdr;
	v->n = n - hdr;
	return 0;
}

uint64_t pmkv_hash(const void *k, size_t n);
/* A random number in [0, n), 0 if n is 0 (store.c: a state per thread;
 * the collections' random members: HRANDFIELD, SPOP, SRANDMEMBER,
 * ZRANDMEMBER). Lemire's multiply: its bias is below n / 2^64. */
uint64_t pmkv_rand_below(uint64_t n);

/* ---- store.c: what the collections' operations are written with ----
 *
 * An operation: kx_begin (the store lock, and the transaction or the
 * group's), lookups and writes in x, kx_end (commit or abort, close the
 * containers opened). Every write goes through x->tx; a failure returns
 * before anything is written if it is the client's mistake (store.c
 * S13). */
int kx_begin(struct pmkv_store *s, struct kvx *x, int writer);
int kx_end(struct kvx *x, int rc);
/* Look p->k up, as a live key (an expired one is absent, and a writer
 * removes it). */
int kx_find(struct kvx *x, struct kpos *p);
/* The collection of this type p found (zeroed if p found nothing), or
 * PMKV_E_WRONGTYPE. */
int kx_coll(const struct kpos *p, unsigned type, struct pmkv_coll *c);
/* Give the absent key p a new empty collection of this type: *c its
 * containers; p then names its object. The caller must add an element
 * before it ends (layout.h L3). */
int kx_coll_new(struct kvx *x, struct kpos *p, unsigned type,
                struct pmkv_coll *c);
/* Free the containers of an object of this type (none for a string). */
int pmkv_coll_destroy(struct kvx *x, unsigned type,
                      const struct pmkv_coll *c);
/* Remove the key p found, and free its containers (S14). */
int kx_remove(struct kvx *x, struct kpos *p);
/* Open a container of the operation, closed by kx_end. */
int kx_hmap(struct kvx *x, pmtx_off off, pmtx_hmap **m);
int kx_list(struct kvx *x, pmtx_off off, pmtx_list **l);
int kx_map(struct kvx *x, pmtx_off off, pmtx_map **m);

/* ---- obj.c: the wrapped version's objects ----
 *
 * An object is a pmtx copy-on-write object, named by its wrapper. A
 * field is an object and a byte position in it. */
#define KVREF(o, a) ((struct kvref){(o), (a)})
/* A field of the geometry (struct pmkv_root1, in the meta object). */
#define KVMETA(x, field) \
	KVREF((x)->s->meta, offsetof(struct pmkv_root1, field))

/* The word at f, as this operation sees it. A failure is kept in x->err
 * (O4) and reads as 0. */
uint64_t kvx_get(struct kvx *x, struct kvref f);
/* Write the word at f. */
int kvx_put(struct kvx *x, struct kvref f, uint64_t v);
/* The object's bytes for reading (O2), at least n of them, checked
 * (layout.h L1): NULL if obj names no such object. *size: its size. */
const void *kvx_view(struct kvx *x, pmtx_off obj, size_t n, size_t *size);
/* A fresh object of n bytes (zeroed if zero), with a pointer for plain
 * stores (O3); kvx_flush before the transaction commits. */
int kvx_new(struct kvx *x, size_t n, int zero, pmtx_off *obj, void **p);
void kvx_flush(struct kvx *x, const void *p, size_t n);
/* Free the object when the transaction commits. */
int kvx_free(struct kvx *x, pmtx_off obj);
/* Every heap block of the object (its wrapper and payload). */
int kvx_walk_obj(struct pmkv_store *s, pmtx_off obj,
                 int (*fn)(pmtx_off, void *), void *arg);

/* The entry obj for reading, checked (L1): NULL if obj names no entry. */
const struct pmkv_entry *pmkv_entry_at(struct kvx *x, pmtx_off obj);
static inline const char *entry_key(const struct pmkv_entry *e)
{
	return (const char *)(e + 1);
}
static inline const char *entry_val(const struct pmkv_entry *e)
{
	return (const char *)(e + 1) + PMKV_KLEN(e->lens);
}
/* An entry's fields. */
#define KVENT(obj, field) KVREF((obj), offsetof(struct pmkv_entry, field))

#endif
