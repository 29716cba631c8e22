/*
 * checksum.c - the one checksum pmtx uses (XXH3-64 from libxxhash).
 */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "util.h"

uint64_t pmtx_checksum(const void *p, size_t n, uint64_t seed)
{
	return XXH3_64bits_withSeed(p, n, seed);
}
