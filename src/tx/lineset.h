/*
 * lineset.h - a DRAM set of byte ranges, kept per cache line: line address
 * -> 64-bit mask of the bytes marked. Used by the undo runtime to know
 * which bytes are already logged, and which lines to flush at commit.
 */
#ifndef PMTX_LINESET_H
#define PMTX_LINESET_H

#include <stddef.h>
#include <stdint.h>

struct ls_slot {
	uintptr_t line; /* line address; 0 = empty */
	uint64_t mask;  /* bit i: byte i of the line is marked */
};

struct lineset {
	struct ls_slot *slot;
	uint32_t cap;   /* power of two */
	uint32_t n;
	uint32_t *used; /* slots in insertion order, for flush and clear */
};

int lineset_init(struct lineset *s);
void lineset_free(struct lineset *s);
void lineset_clear(struct lineset *s);
/* 1 if every byte of [p, p+n) is marked. */
int lineset_covered(const struct lineset *s, const void *p, size_t n);
/* Mark every byte of [p, p+n). 0 or ENOMEM. */
int lineset_mark(struct lineset *s, const void *p, size_t n);

static inline uintptr_t lineset_line(const struct lineset *s, uint32_t i)
{
	return s->slot[s->used[i]].line;
}

#endif
