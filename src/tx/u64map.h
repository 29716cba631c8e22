/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * u64map.h - a DRAM hash map from nonzero 64-bit keys to 64-bit values
 * (linear probing, load factor at most 1/2). Clearing costs O(entries),
 * and entries can be visited in insertion order. The one hash table of
 * the transaction layer: lineset.h and idxmap.h are views of it.
 */
#ifndef PMTX_U64MAP_H
#define PMTX_U64MAP_H

#include <stdint.h>

struct u64map {
	struct u64_slot {
		uint64_t key; /* 0 = empty */
		uint64_t val;
	} *slot;
	uint32_t cap, n;
	uint32_t *used; /* slots in insertion order */
};

static inline uint32_t u64map_slot_of(uint64_t key, uint32_t cap)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

int u64map_init(struct u64map *m);
void u64map_free(struct u64map *m);
void u64map_clear(struct u64map *m);
/* The value of key, or NULL. */
static inline uint64_t *u64map_find(const struct u64map *m, uint64_t key)
{
	for (uint32_t i = u64map_slot_of(key, m->cap);;
	     i = (i + 1) & (m->cap - 1)) {
		struct u64_slot *s = &m->slot[i];
		if (s->key == key)
			return &s->val;
		if (s->key == 0)
			return NULL;
	}
}
/* The value of key, inserted as 0 (and *fresh = 1) if absent; NULL if
 * out of memory. */
uint64_t *u64map_insert(struct u64map *m, uint64_t key, int *fresh);

static inline uint64_t u64map_key(const struct u64map *m, uint32_t i)
{
	return m->slot[m->used[i]].key;
}

#endif
