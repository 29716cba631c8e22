/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * store_list.h - Redis 7.0's list type in the store (store_list.c): each
 * function is one operation, one transaction (store.c S1), and returns 0
 * or a status as store.h's do. A list is a collection (layout.h): c[0] a
 * pmtx_list of the elements, never empty (L3: the operation that takes
 * the last element removes the key).
 *
 * Elements reach the caller through struct pmkv_elems, inside the
 * operation, while the store holds them (readers and writers alike: a
 * pop emits the elements before it drops them). Nothing the caller gets
 * is acknowledged until the function returns 0: on a status, the caller
 * throws away what was emitted (cmd_list.c keeps its reply's mark).
 * A client's mistake (a wrong type, an element longer than the store's
 * max_value, a key longer than its max_key) is found before the operation
 * writes anything (store.c S13).
 *
 * Ends are PMKV_LEFT (the head, index 0) and PMKV_RIGHT (the tail).
 */
#ifndef PMKV_STORE_LIST_H
#define PMKV_STORE_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

enum { PMKV_LEFT = 0, PMKV_RIGHT = 1 };

/* Where a list's elements go: count(arg, key, n) once, before the n
 * elements (key: which of the operation's keys they come from), then
 * emit(arg, p, len) for each. */
struct pmkv_elems {
	void (*count)(void *arg, size_t key, uint64_t n);
	pmkv_emit_fn emit;
	void *arg;
};

/* LPUSH, RPUSH (xx 0), LPUSHX, RPUSHX (xx 1): the n elements v[] pushed
 * at end one after another, the list created if absent (unless xx: then
 * nothing, and *len = 0); *len: its length after. */
int pmkv_list_push(struct pmkv_store *s, const void *k, size_t kn, int end,
                   int xx, const struct pmkv_key *v, size_t n,
                   uint64_t *len);
/* LPOP, RPOP, LMPOP, and the blocking pops' step: from the first of
 * keys[0..nkeys) that exists (each one before it must be absent, not of
 * another type), take min(count, its length) elements at end, emitted in
 * the order they leave (count 0: none, and the key is still "found").
 * *found: the index of that key, or -1 if every key is absent (nothing
 * emitted, nothing written). */
int pmkv_list_pop(struct pmkv_store *s, const struct pmkv_key *keys,
                  size_t nkeys, int end, uint64_t count,
                  const struct pmkv_elems *out, long *found);
/* LMOVE, RPOPLPUSH, and the blocking move's step: the element at the
 * end `from` of the list src pushed at the end `to` of the list dst
 * (created if absent; src itself when the keys are equal), emitted, in
 * one transaction. *found = 0 if src is absent (nothing written).
 * WRONGTYPE if src, or dst when src exists, is not a list. */
int pmkv_list_move(struct pmkv_store *s, const void *src, size_t sn,
                   const void *dst, size_t dn, int from, int to,
                   pmkv_emit_fn emit, void *arg, int *found);
/* LLEN: the length (0: no such key). */
int pmkv_list_len(struct pmkv_store *s, const void *k, size_t kn,
                  uint64_t *len);
/* LINDEX: emit the element at index i (negative from the tail); *found
 * = 0 if the key is absent or i is outside the list. */
int pmkv_list_index(struct pmkv_store *s, const void *k, size_t kn,
                    int64_t i, pmkv_emit_fn emit, void *arg, int *found);
/* LRANGE: the elements [start, stop] (Redis's reading of the two, as
 * pmtx_list_range's), count first (an absent key: count 0). */
int pmkv_list_range(struct pmkv_store *s, const void *k, size_t kn,
                    int64_t start, int64_t stop,
                    const struct pmkv_elems *out);
/* LSET: the element at index i replaced by v. PMKV_E_NOKEY if the key is
 * absent; *done = 0 if i is outside the list (nothing written). */
int pmkv_list_set(struct pmkv_store *s, const void *k, size_t kn, int64_t i,
                  const void *v, size_t vn, int *done);
/* LINSERT: v inserted before (after 0) or after the first element equal
 * to pivot; *len: the new length, -1 if there is no such element, 0 if
 * there is no such key. */
int pmkv_list_insert(struct pmkv_store *s, const void *k, size_t kn,
                     int after, const void *pivot, size_t pn, const void *v,
                     size_t vn, int64_t *len);
/* LREM: elements equal to v removed: count > 0 the first count from the
 * head, count < 0 the first -count from the tail, 0 every one.
 * *removed: how many. */
int pmkv_list_rem(struct pmkv_store *s, const void *k, size_t kn,
                  int64_t count, const void *v, size_t vn, uint64_t *removed);
/* LTRIM: only [start, stop] kept (an empty range removes the key). */
int pmkv_list_trim(struct pmkv_store *s, const void *k, size_t kn,
                   int64_t start, int64_t stop);

/* LPOS's query: the rank-th match and on (rank != 0; negative: counted
 * from the tail, and the positions go tailwards), at most count of them
 * (0: every one), among the first maxlen elements met (0: all). */
struct pmkv_lpos {
	const void *v;
	size_t vn;
	int64_t rank;
	uint64_t count, maxlen;
	void (*pos)(void *arg, uint64_t index); /* each match, in order */
	void *arg;
};
/* LPOS: q->pos for each match it asks for (none for an absent key). */
int pmkv_list_pos(struct pmkv_store *s, const void *k, size_t kn,
                  const struct pmkv_lpos *q);

#endif
