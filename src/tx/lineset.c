/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lineset.c - see lineset.h.
 */
#include <errno.h>

#include "../common/util.h"
#include "lineset.h"

/* Mask of the bytes of line that [a, b) covers. */
static inline uint64_t line_mask(uintptr_t line, uintptr_t a, uintptr_t b)
{
	unsigned lo = a > line ? (unsigned)(a - line) : 0;
	unsigned hi = b < line + CACHE_LINE ? (unsigned)(b - line) : CACHE_LINE;
	uint64_t up = hi == 64 ? ~0ull : (1ull << hi) - 1;
	return up & ~((1ull << lo) - 1);
}

int lineset_covered(const struct lineset *s, const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, b = a + n;
	for (uintptr_t l = ALIGN_DOWN(a, CACHE_LINE); l < b; l += CACHE_LINE) {
		uint64_t m = line_mask(l, a, b);
		const uint64_t *v = u64map_find(&s->m, l);
		if (!v || (*v & m) != m)
			return 0;
	}
	return 1;
}

int lineset_mark(struct lineset *s, const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, b = a + n;
	for (uintptr_t l = ALIGN_DOWN(a, CACHE_LINE); l < b; l += CACHE_LINE) {
		int fresh;
		uint64_t *v = u64map_insert(&s->m, l, &fresh);
		if (!v)
			return ENOMEM;
		*v |= line_mask(l, a, b);
	}
	return 0;
}
