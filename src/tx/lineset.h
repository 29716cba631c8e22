/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lineset.h - a DRAM set of byte ranges, kept per cache line: line address
 * -> 64-bit mask of the bytes marked (a view of u64map). Used by the undo
 * runtime to know which bytes are already logged, and which lines to
 * flush at commit.
 */
#ifndef PMTX_LINESET_H
#define PMTX_LINESET_H

#include <stddef.h>

#include "u64map.h"

struct lineset {
	struct u64map m;
};

static inline int lineset_init(struct lineset *s)
{
	return u64map_init(&s->m);
}

static inline void lineset_free(struct lineset *s)
{
	u64map_free(&s->m);
}

static inline void lineset_clear(struct lineset *s)
{
	u64map_clear(&s->m);
}

static inline uint32_t lineset_count(const struct lineset *s)
{
	return s->m.n;
}

static inline uintptr_t lineset_line(const struct lineset *s, uint32_t i)
{
	return (uintptr_t)u64map_key(&s->m, i);
}

/* 1 if every byte of [p, p+n) is marked. */
int lineset_covered(const struct lineset *s, const void *p, size_t n);
/* Mark every byte of [p, p+n). 0 or ENOMEM. */
int lineset_mark(struct lineset *s, const void *p, size_t n);

#endif
