/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * map.h - the ordered map's internals that its tests (and the crash-state
 * explorer) use: its node geometry and its consistency checker.
 */
#ifndef PMTX_MAP_H
#define PMTX_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "pmtx_containers.h"

#define MAP_LEAF_SLOTS 47   /* entries of a leaf */
#define MAP_LEAF_MIN 12     /* a leaf under it is merged or refilled */
#define MAP_LEAF_MERGE 36   /* two leaves of at most this merge */
#define MAP_FANOUT 32       /* children of an inner node */
#define MAP_INNER_MIN 8
#define MAP_INNER_MERGE 24
#define MAP_MAX_HEIGHT 24   /* levels: 24 hold over 10^21 entries (L5) */

/* What map_check_stats counted. */
struct map_stats {
	uint64_t entries;
	uint64_t leaves;
	uint64_t inners;
	uint64_t items;     /* item blocks: keys, values and separators */
	uint64_t blocks;    /* every block of the map, its header included */
	uint64_t bytes;     /* their usable sizes (pmtx_usable_size) */
	unsigned height;
};

#ifdef __cplusplus
extern "C" {
#endif

/* Check every invariant of map_layout.h (L1-L6) and that every block the
 * map reaches is a heap block of the size it needs, reached once. Reads
 * as m's running transaction sees, if any. 0, or PMTX_E_CORRUPT with
 * the first violation in msg (len bytes; msg may be NULL). */
int map_check(pmtx_map *m, char *msg, size_t len);
/* The same, and what it counted into *st (st may be NULL). */
int map_check_stats(pmtx_map *m, struct map_stats *st, char *msg,
                    size_t len);
/* fn(off, arg) for every heap block of the map, each once, in increasing
 * order of offset: its header, leaves, inner nodes and items (keys,
 * values, separators). The whole tree is gathered and checked first, as
 * the map's reads check it (the height, each node's magic word and
 * counts, each item within the region: C3, M7), and no block reached
 * twice, so fn sees no block of a map that fails. fn's first nonzero
 * value, PMTX_E_CORRUPT, ENOMEM, or 0. Reads as map_check does. */
int map_walk(pmtx_map *m, int (*fn)(pmtx_off off, void *arg), void *arg);

#ifdef __cplusplus
}
#endif
#endif
