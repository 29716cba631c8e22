/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * benchutil.h - what pmkv's two load generators (kvload.c over sockets,
 * kvstore.c in one process) share: the clock and the key sequence.
 */
#ifndef PMKV_BENCHUTIL_H
#define PMKV_BENCHUTIL_H

#include <stdint.h>
#include <time.h>

/* Monotonic seconds. */
static inline double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The next number of a splitmix64 sequence (its state in *s). */
static inline uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#endif
