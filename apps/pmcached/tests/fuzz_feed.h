/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_feed.h - what the protocol fuzzers (fuzz_proto.c, fuzz_bin.c)
 * share: an input fed to a parser as a connection would feed it, a given
 * number of bytes at a time, each time from an exactly sized copy of the
 * bytes not yet consumed (so that a read past them is caught).
 */
#ifndef PMCACHED_FUZZ_FEED_H
#define PMCACHED_FUZZ_FEED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* Parse buf[0..len) into the result at out; say how many bytes it used,
 * how many after them to discard, and whether the connection ends. */
typedef int fuzz_parse_fn(const char *buf, size_t len, void *out,
                          size_t *used, size_t *swallow, bool *stop);

/* Feeds data[0..size) step bytes at a time; results go to out (max of
 * them, elem bytes each). Returns how many. */
static inline size_t fuzz_feed(const uint8_t *data, size_t size,
                               size_t step, fuzz_parse_fn *parse, void *out,
                               size_t elem, size_t max)
{
	size_t off = 0, avail = step < size ? step : size, n = 0;
	while (n < max) {
		size_t have = avail - off, used = 0, swallow = 0;
		bool stop = false;
		char *copy = malloc(have ? have : 1);
		memcpy(copy, data + off, have);
		int rc = parse(copy, have, (char *)out + n * elem, &used,
		               &swallow, &stop);
		free(copy);
		if (rc == MC_NEED_MORE) {
			if (used != 0)
				abort();
			if (avail == size)
				break;
			avail = avail + step < size ? avail + step : size;
			continue;
		}
		n++;
		off += used;
		off = size - off < swallow ? size : off + swallow;
		if (stop)
			break;
		if (avail < off)
			avail = off;
	}
	return n;
}

/* Same results, compared field by field. */
typedef bool fuzz_same_fn(const void *a, const void *b);

/* The harnesses' check: data parsed whole and a byte at a time gives the
 * same results (whole and bytes: max of them, elem bytes each). */
static inline void fuzz_check_split(const uint8_t *data, size_t size,
                                    fuzz_parse_fn *parse, void *whole,
                                    void *bytes, size_t elem, size_t max,
                                    fuzz_same_fn *same)
{
	size_t n = fuzz_feed(data, size, size ? size : 1, parse, whole, elem,
	                     max);
	if (n != fuzz_feed(data, size, 1, parse, bytes, elem, max))
		abort();
	for (size_t i = 0; i < n; i++)
		if (!same((char *)whole + i * elem, (char *)bytes + i * elem))
			abort();
}

#endif
