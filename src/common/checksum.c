/* SPDX-License-Identifier: BSD-3-Clause */
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

_Static_assert(sizeof(XXH3_state_t) <= sizeof(struct pmtx_hasher),
               "hasher holds an XXH3 state");

/* The state is cleared first: XXH3_64bits_reset_withSeed keeps the
 * secret it finds when the seed field already holds this seed, and a
 * hasher on the stack holds whatever the last one there left. */
void pmtx_hash_init(struct pmtx_hasher *h, uint64_t seed)
{
	XXH3_state_t *st = (XXH3_state_t *)(void *)h->state;
	XXH3_INITSTATE(st);
	XXH3_64bits_reset_withSeed(st, seed);
}

void pmtx_hash_update(struct pmtx_hasher *h, const void *p, size_t n)
{
	XXH3_64bits_update((XXH3_state_t *)(void *)h->state, p, n);
}

uint64_t pmtx_hash_digest(struct pmtx_hasher *h)
{
	return XXH3_64bits_digest((XXH3_state_t *)(void *)h->state);
}
