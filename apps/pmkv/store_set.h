/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_set.h - Redis 7.0's set type in the store (store_set.c): each
 * function is one operation, one transaction (store.c S1), and returns 0
 * or a status as store.h's do. A set is a collection (layout.h): c[0] a
 * pmtx_hmap, member -> empty value.
 *
 * Members reach the caller through a pmkv_emit_fn (store.h): a reader
 * emits them while the store holds them, a writer (pmkv_spop) after its
 * commit, so that a member is handed out only once the write is durable.
 * A client's mistake (a wrong type, a member longer than the store's
 * max_value, a key longer than its max_key) is found before the
 * operation writes anything (store.c S13).
 */
#ifndef PMKV_STORE_SET_H
#define PMKV_STORE_SET_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* SADD: the n members into the set k (created if absent); *added: those
 * that were not members. */
int pmkv_sadd(struct pmkv_store *s, const void *k, size_t kn,
              const struct pmkv_key *m, size_t n, uint64_t *added);
/* SREM: *removed, the members that were there; the key goes with its
 * last member (layout.h L3). */
int pmkv_srem(struct pmkv_store *s, const void *k, size_t kn,
              const struct pmkv_key *m, size_t n, uint64_t *removed);
/* SCARD: the members (0: no such key). */
int pmkv_scard(struct pmkv_store *s, const void *k, size_t kn, uint64_t *n);
/* SISMEMBER, SMISMEMBER: hit[i] = 1 if m[i] is a member, else 0. */
int pmkv_smismember(struct pmkv_store *s, const void *k, size_t kn,
                    const struct pmkv_key *m, size_t n, unsigned char *hit);
/* SMEMBERS: emit every member (none for an absent key). */
int pmkv_smembers(struct pmkv_store *s, const void *k, size_t kn,
                  pmkv_emit_fn emit, void *arg);
/* SPOP: take count members at random, different ones, and emit them
 * after the commit: every member if count is the set's size or more,
 * and then the key is removed. *found: the key was there. */
int pmkv_spop(struct pmkv_store *s, const void *k, size_t kn, uint64_t count,
              pmkv_emit_fn emit, void *arg, int *found);
/* SRANDMEMBER: emit count members at random: different ones (all of
 * them if count is the set's size or more), or, with repeat, count draws
 * each of the whole set. *found: the key was there. */
int pmkv_srandmember(struct pmkv_store *s, const void *k, size_t kn,
                     uint64_t count, int repeat, pmkv_emit_fn emit, void *arg,
                     int *found);
/* SMOVE: the member m from the set src to the set dst (created if
 * absent), in one transaction; *moved = 0 if src is absent or m is not
 * its member. WRONGTYPE if src, or dst when src exists, is not a set. */
int pmkv_smove(struct pmkv_store *s, const void *src, size_t sn,
               const void *dst, size_t dn, const void *m, size_t mn,
               int *moved);

/* The set algebra's operations. */
enum pmkv_setop { PMKV_SINTER, PMKV_SUNION, PMKV_SDIFF };

/* SINTER, SUNION, SDIFF over the n keys (an absent key is an empty set):
 * emit each member of the result once. */
int pmkv_setop(struct pmkv_store *s, enum pmkv_setop op,
               const struct pmkv_key *keys, size_t n, pmkv_emit_fn emit,
               void *arg);
/* SINTERCARD: the size of the keys' intersection, counted up to limit
 * (0: no limit). */
int pmkv_sintercard(struct pmkv_store *s, const struct pmkv_key *keys,
                    size_t n, uint64_t limit, uint64_t *card);
/* SINTERSTORE, SUNIONSTORE, SDIFFSTORE: the result becomes the set dst,
 * in place of whatever dst held (its expiry too); an empty result
 * removes dst. *card: the result's size. */
int pmkv_setop_store(struct pmkv_store *s, enum pmkv_setop op,
                     const void *dst, size_t dn, const struct pmkv_key *keys,
                     size_t n, uint64_t *card);
/* SSCAN: emit the members of the buckets from cursor on, as
 * pmtx_hmap_scan's contract says (count of them at least, unless the
 * set ends); *next, the next cursor (0: the end, and for an absent
 * key). */
int pmkv_sscan(struct pmkv_store *s, const void *k, size_t kn,
               uint64_t cursor, uint64_t count, pmkv_emit_fn emit, void *arg,
               uint64_t *next);

#endif
