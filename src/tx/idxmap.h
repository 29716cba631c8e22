/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * idxmap.h - object and segment offsets to redo entry indexes (redo.c):
 * a view of u64map with int32 values, -1 meaning absent.
 */
#ifndef PMTX_IDXMAP_H
#define PMTX_IDXMAP_H

#include <errno.h>

#include "u64map.h"

#define idxmap u64map
#define idxmap_init u64map_init
#define idxmap_free u64map_free
#define idxmap_clear u64map_clear
#define idxmap_key u64map_key

static inline int32_t idxmap_get(const struct u64map *m, uint64_t key)
{
	const uint64_t *v = u64map_find(m, key);
	return v ? (int32_t)*v : -1;
}

/* Set key -> val and return the previous value (-1 if none) in *old, with
 * one probe. 0 or ENOMEM. */
static inline int idxmap_swap(struct u64map *m, uint64_t key, int32_t val,
                              int32_t *old)
{
	int fresh;
	uint64_t *v = u64map_insert(m, key, &fresh);
	if (!v)
		return ENOMEM;
	*old = fresh ? -1 : (int32_t)*v;
	*v = (uint64_t)(int64_t)val;
	return 0;
}

static inline int idxmap_put(struct u64map *m, uint64_t key, int32_t val)
{
	int32_t old;
	return idxmap_swap(m, key, val, &old);
}

#endif
