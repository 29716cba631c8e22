/*
 * idxmap.h - a DRAM hash map from nonzero 64-bit keys to 32-bit values
 * (linear probing, load factor at most 1/2, clearing in O(entries)). The
 * redo runtime maps object and segment offsets to its newest record.
 */
#ifndef PMTX_IDXMAP_H
#define PMTX_IDXMAP_H

#include <stdint.h>

struct idxmap {
	struct idx_slot {
		uint64_t key; /* 0 = empty */
		int32_t val;
	} *slot;
	uint32_t cap, n;
	uint32_t *used;
};

int idxmap_init(struct idxmap *m);
void idxmap_free(struct idxmap *m);
void idxmap_clear(struct idxmap *m);
/* Value for key, or -1. */
int32_t idxmap_get(const struct idxmap *m, uint64_t key);
/* Set key -> val. 0 or ENOMEM. */
int idxmap_put(struct idxmap *m, uint64_t key, int32_t val);
/* Set key -> val and return the previous value (-1 if none) in *old, with
 * one probe. 0 or ENOMEM. */
int idxmap_swap(struct idxmap *m, uint64_t key, int32_t val, int32_t *old);

static inline uint64_t idxmap_key(const struct idxmap *m, uint32_t i)
{
	return m->slot[m->used[i]].key;
}

#endif
