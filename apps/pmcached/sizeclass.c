/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sizeclass.c - memcached's slab classes, computed (sizeclass.h).
 */
#include "sizeclass.h"

#define ITEM_HEADER 48   /* memcached's sizeof(item) on a 64-bit machine */
#define CHUNK_ALIGN 8    /* memcached's CHUNK_ALIGN_BYTES */
#define CHUNK_HEADER 48  /* memcached's sizeof(item_chunk) */

void mc_classes_init(struct mc_classes *k, double factor, unsigned min_chunk,
                     size_t item_size_max, bool cas)
{
	unsigned i = 0;
	unsigned int size = ITEM_HEADER + min_chunk;
	*k = (struct mc_classes){.cas = cas, .chunk_max = MC_SLAB_PAGE / 2};
	if (k->chunk_max > item_size_max) /* memcached refuses such a -I */
		k->chunk_max = item_size_max;
	while (++i < MC_CLASSES_MAX - 1) {
		if (size >= k->chunk_max / factor)
			break;
		if (size % CHUNK_ALIGN)
			size += CHUNK_ALIGN - size % CHUNK_ALIGN;
		k->size[i] = size;
		k->perslab[i] = MC_SLAB_PAGE / size;
		size *= factor; /* as memcached: unsigned int times double */
	}
	k->largest = i;
	k->size[i] = (uint32_t)k->chunk_max;
	k->perslab[i] = (uint32_t)(MC_SLAB_PAGE / k->chunk_max);
}

size_t mc_classes_ntotal(const struct mc_classes *k, size_t nkey,
                         uint32_t flags, size_t nbytes)
{
	return ITEM_HEADER + nkey + 1 + (flags ? sizeof(flags) : 0) + nbytes +
	       2 + (k->cas ? sizeof(uint64_t) : 0);
}

unsigned mc_classes_id(const struct mc_classes *k, size_t ntotal)
{
	unsigned id = 1;
	while (id < k->largest && ntotal > k->size[id])
		id++;
	return id;
}

void mc_classes_chunks(const struct mc_classes *k, size_t nkey,
                       uint32_t flags, size_t nbytes,
                       void (*fn)(unsigned cls, void *arg), void *arg)
{
	size_t ntotal = mc_classes_ntotal(k, nkey, flags, nbytes);
	if (ntotal <= k->chunk_max) {
		fn(mc_classes_id(k, ntotal), arg);
		return;
	}
	/* memcached's do_item_alloc and do_item_alloc_chunk */
	fn(mc_classes_id(k, ntotal - nbytes - 2 + CHUNK_HEADER), arg);
	for (size_t left = nbytes + 2; left > 0;) {
		size_t size = left + CHUNK_HEADER;
		if (size > k->chunk_max)
			size = k->chunk_max;
		fn(mc_classes_id(k, size), arg);
		left -= size - CHUNK_HEADER;
	}
}
