/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sizeclass.h - memcached 1.6.18's slab classes, computed, so that the
 * statistics pmcached reports per class ("stats items", "stats slabs",
 * lru_crawler metadump's cls= and size=, "stats cachedump") mean what
 * memcached's mean for the same items.
 *
 * pmcached has no slab allocator: an item is one block of pmtx's heap.
 * A class here is a size range: the classes memcached would make with
 * the same -n (smallest chunk), -f (growth factor) and -I, and an item's
 * class is the one memcached would store it in, from the size memcached
 * would give it (its 48-byte header, the key and a NUL, 4 bytes of flags
 * unless they are 0, the value and "\r\n", 8 bytes of CAS unless -C).
 *
 * Invariants:
 *  1. mc_classes_init computes the sizes as memcached's slabs_init does
 *     (the same unsigned * double steps, 8-byte alignment, the largest
 *     class the chunk limit), so the class ids and chunk sizes are
 *     memcached's, class 1 first.
 *  2. Pure functions: no state but the table they are given.
 */
#ifndef PMCACHED_SIZECLASS_H
#define PMCACHED_SIZECLASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_CLASSES_MAX 64        /* memcached's MAX_NUMBER_OF_SLAB_CLASSES */
#define MC_SLAB_PAGE (1u << 20)  /* memcached's slab_page_size */

struct mc_classes {
	unsigned largest;                 /* the last class id */
	uint32_t size[MC_CLASSES_MAX];    /* chunk size of class i (1..) */
	uint32_t perslab[MC_CLASSES_MAX]; /* chunks in a 1 MiB page */
	size_t chunk_max;                 /* memcached's slab_chunk_max */
	bool cas;                         /* items carry a CAS (not -C) */
};

void mc_classes_init(struct mc_classes *k, double factor, unsigned min_chunk,
                     size_t item_size_max, bool cas);
/* memcached's ITEM_ntotal of an item. */
size_t mc_classes_ntotal(const struct mc_classes *k, size_t nkey,
                         uint32_t flags, size_t nbytes);
/* memcached's slabs_clsid: the class of an item of ntotal bytes (the
 * largest for one above its chunk size: memcached chains such an item's
 * chunks from there). */
unsigned mc_classes_id(const struct mc_classes *k, size_t ntotal);
/* Call fn for each chunk memcached would take for the item, with the
 * chunk's class: one in the item's class; for an item above the largest
 * chunk (memcached's chunked item, listed in the largest class) its
 * header's in the class that fits the header, then its data's, the
 * largest chunks and a last one in the class that fits the rest. */
void mc_classes_chunks(const struct mc_classes *k, size_t nkey,
                       uint32_t flags, size_t nbytes,
                       void (*fn)(unsigned cls, void *arg), void *arg);

#endif
