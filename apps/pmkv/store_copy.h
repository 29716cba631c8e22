/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_copy.h - a key's whole value as a volatile image (struct
 * pmkv_image), read out of the store and built into it (store_copy.c):
 * COPY, and the store's side of DUMP, RESTORE, OBJECT and LCS. Every
 * function is one store operation, one transaction (store.c S1), and
 * returns 0 or a status as store.h says; a client's mistake (a key or an
 * element beyond the store's limits, a collection in the wrapped version)
 * is found before anything is written (store.c S13).
 */
#ifndef PMKV_STORE_COPY_H
#define PMKV_STORE_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* A key's value, copied out of the store (or made by a decoder, to put
 * in). The elements, each a byte string: a string's value (one); a
 * list's, head first; a set's members; a hash's fields and values,
 * alternating; a sorted set's members, each with score[i], in Redis's
 * order when read from the store (any order to build: sorted then). */
struct pmkv_image {
	int type;            /* enum pmkv_type; -1: no such key */
	int64_t expire_ms;   /* absolute; 0: none */
	uint64_t len;        /* the value's elements (a hash: its fields; a
	                      * string: its bytes), read even when n is 0 */
	char *bytes;         /* the elements, one after another */
	size_t nbytes, capbytes;
	size_t *end;         /* element i ends at bytes + end[i] */
	double *score;       /* a sorted set's: one per element */
	size_t n, cap;       /* elements held */
	/* the key's access clock (store.c S16), read without moving it:
	 * clocked 0 when no clock is kept; lfu: a count, else seconds */
	uint32_t clock;
	int clocked, lfu;
};

/* Element i: its bytes and length. */
static inline const char *pmkv_image_at(const struct pmkv_image *im,
                                        size_t i, size_t *n)
{
	size_t at = i ? im->end[i - 1] : 0;
	*n = im->end[i] - at;
	return im->bytes + at;
}
/* Append an element (score: a sorted set's, else ignored): 0 or ENOMEM. */
int pmkv_image_add(struct pmkv_image *im, const void *p, size_t n,
                   double score);
void pmkv_image_free(struct pmkv_image *im);

/* DUMP, OBJECT, LCS: the images of n keys (im zeroed), read in one
 * transaction: im[i].type -1 for an absent key; every element of a value
 * of at most max elements (a longer one: its type, expiry and len only).
 * touch 0: the keys' access clocks are left as they were (OBJECT). */
int pmkv_image_read(struct pmkv_store *s, const struct pmkv_key *keys,
                    size_t n, uint64_t max, int touch,
                    struct pmkv_image *im);

/* RESTORE: key k given im's value (type, elements; distinct members and
 * fields, no NaN score) and expiry, in one transaction. *busy = 1 (and
 * nothing done) if the key exists and replace is 0. An expiry at or
 * before now creates nothing (the old key is removed if replace). The
 * key's access clock, if one is kept, is set after: idle seconds ago
 * (LRU; idle -1: now) or to freq (LFU; -1: left). */
int pmkv_restore(struct pmkv_store *s, const void *k, size_t kn,
                 const struct pmkv_image *im, int replace, int64_t idle,
                 int freq, int *busy);

/* COPY: the value and expiry of src copied to the key dst of database
 * db (of the thread's own when db is the thread's), in one transaction;
 * *done = 0 if src is absent, or dst exists and replace is 0 (nothing
 * written). PMKV_E_SAMEDB if src and dst are one key of one database,
 * PMKV_E_DBINDEX if there is no database db. */
int pmkv_copy(struct pmkv_store *s, const void *src, size_t sn,
              const void *dst, size_t dn, unsigned db, int replace,
              int *done);

#endif
