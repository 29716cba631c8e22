/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_hash.h - pmkv's hashes (Redis's hash type): a key's collection
 * whose c[0] is a pmtx_hmap of field -> value (layout.h). Every function
 * is one store operation, one transaction (store.c S1), and returns 0 or
 * a status as store.h says.
 *
 * Statuses the client caused (store.h pmkv_user_error), found before the
 * operation writes anything (store.c S13): PMKV_E_WRONGTYPE (the key holds
 * another type), PMKV_E_TOOBIG (a field or a value beyond the store's
 * max_value, a new key beyond max_key), and for the increments the
 * hash's own meanings, whose texts the command layer gives:
 *   PMKV_E_NOTINT    HINCRBY: the field's value is not an integer
 *                    ("hash value is not an integer")
 *   PMKV_E_NOTFLOAT  HINCRBYFLOAT: the field's value is not a float
 *                    ("hash value is not a float")
 *   PMKV_E_OVERFLOW  HINCRBY: the sum leaves 64 bits; HINCRBYFLOAT: the
 *                    sum is NaN or infinite
 *
 * Values handed out are emitted while the store holds them (copy what
 * must outlive the call, as pmkv_emit_fn says).
 */
#ifndef PMKV_STORE_HASH_H
#define PMKV_STORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* A field and its value; v is NULL for a field that is absent (HMGET). */
typedef void (*pmkv_pair_fn)(void *arg, const void *f, size_t fn,
                             const void *v, size_t vn);

/* Where a reply of several pairs goes: count(arg, n) once, before the
 * n pairs (a RESP array's length comes first), then pair for each. */
struct pmkv_pairs {
	void (*count)(void *arg, uint64_t n);
	pmkv_pair_fn pair;
	void *arg;
};

/* HSET and HMSET (nx 0), HSETNX (nx 1, a field present left as it is):
 * the n pairs (f[i], v[i]) in order into the hash k, created if absent;
 * *added: how many fields were new. */
int pmkv_hset(struct pmkv_store *s, const void *k, size_t kn,
              const struct pmkv_key *f, const struct pmkv_key *v, size_t n,
              int nx, uint64_t *added);
/* HDEL: the n fields removed (the key too once the hash is empty). */
int pmkv_hdel(struct pmkv_store *s, const void *k, size_t kn,
              const struct pmkv_key *f, size_t n, uint64_t *removed);
/* HGET: *found = 0 (no key or no field), or 1 and emit(value). */
int pmkv_hget(struct pmkv_store *s, const void *k, size_t kn, const void *f,
              size_t fn, pmkv_emit_fn emit, void *arg, int *found);
/* HMGET: pair for each of the n fields in order (v NULL if absent, the
 * key absent too). */
int pmkv_hmget(struct pmkv_store *s, const void *k, size_t kn,
               const struct pmkv_key *f, size_t n, pmkv_pair_fn pair,
               void *arg);
/* HLEN: 0 for an absent key. */
int pmkv_hlen(struct pmkv_store *s, const void *k, size_t kn, uint64_t *n);
/* HSTRLEN and HEXISTS: *found, and the value's length (0 if absent). */
int pmkv_hstrlen(struct pmkv_store *s, const void *k, size_t kn,
                 const void *f, size_t fn, int *found, uint64_t *len);
/* HGETALL, HKEYS, HVALS: every pair, in the map's order (0 for an absent
 * key). */
int pmkv_hgetall(struct pmkv_store *s, const void *k, size_t kn,
                 const struct pmkv_pairs *out);
/* HINCRBY: the field's integer (0 if absent) plus delta, stored as
 * Redis's %lld, in *result. */
int pmkv_hincrby(struct pmkv_store *s, const void *k, size_t kn,
                 const void *f, size_t fn, int64_t delta, int64_t *result);
/* HINCRBYFLOAT: the field's number (0 if absent) plus delta (finite),
 * stored and put in buf as Redis formats it (pmkv_ld_format); *n its
 * length. cap: PMKV_LD_CHARS. */
int pmkv_hincrbyfloat(struct pmkv_store *s, const void *k, size_t kn,
                      const void *f, size_t fn, long double delta, char *buf,
                      size_t cap, size_t *n);
/* HRANDFIELD: count > 0, that many distinct fields (all of them if the
 * hash has no more), in the map's order; count < 0, -count fields picked
 * independently, in the order picked. count(0) for an absent key. */
int pmkv_hrandfield(struct pmkv_store *s, const void *k, size_t kn,
                    int64_t count, const struct pmkv_pairs *out);
/* HSCAN: pair for the fields of the map's buckets from cursor on, as
 * pmtx_hmap_scan (at least count, unless the map ends first); *next: the
 * next cursor, 0 at the end (and for an absent key). A field present for
 * the whole scan is met at least once. */
int pmkv_hscan(struct pmkv_store *s, const void *k, size_t kn,
               uint64_t cursor, uint64_t count, pmkv_pair_fn pair, void *arg,
               uint64_t *next);



#endif
