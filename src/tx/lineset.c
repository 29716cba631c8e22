/*
 * lineset.c - open-addressing hash of cache lines (linear probing, load
 * factor at most 1/2). Clearing costs O(marked lines), not O(capacity).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/util.h"
#include "lineset.h"

#define INIT_CAP 64u

static inline uint32_t hash_line(uintptr_t line, uint32_t cap)
{
	uint64_t h = (uint64_t)line * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32) & (cap - 1);
}

int lineset_init(struct lineset *s)
{
	s->cap = INIT_CAP;
	s->n = 0;
	s->slot = calloc(s->cap, sizeof(*s->slot));
	s->used = malloc(s->cap / 2 * sizeof(*s->used));
	return s->slot && s->used ? 0 : ENOMEM;
}

void lineset_free(struct lineset *s)
{
	free(s->slot);
	free(s->used);
	memset(s, 0, sizeof(*s));
}

void lineset_clear(struct lineset *s)
{
	for (uint32_t i = 0; i < s->n; i++)
		s->slot[s->used[i]] = (struct ls_slot){0, 0};
	s->n = 0;
}

static struct ls_slot *find(const struct lineset *s, uintptr_t line)
{
	for (uint32_t i = hash_line(line, s->cap);; i = (i + 1) & (s->cap - 1))
		if (s->slot[i].line == line || s->slot[i].line == 0)
			return &s->slot[i];
}

static int grow(struct lineset *s)
{
	struct lineset g = {0};
	g.cap = s->cap * 2;
	g.slot = calloc(g.cap, sizeof(*g.slot));
	g.used = malloc(g.cap / 2 * sizeof(*g.used));
	if (!g.slot || !g.used) {
		free(g.slot);
		free(g.used);
		return ENOMEM;
	}
	for (uint32_t i = 0; i < s->n; i++) {
		struct ls_slot *o = &s->slot[s->used[i]], *d = find(&g, o->line);
		*d = *o;
		g.used[g.n++] = (uint32_t)(d - g.slot);
	}
	free(s->slot);
	free(s->used);
	*s = g;
	return 0;
}

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
		if ((find(s, l)->mask & m) != m)
			return 0;
	}
	return 1;
}

int lineset_mark(struct lineset *s, const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, b = a + n;
	for (uintptr_t l = ALIGN_DOWN(a, CACHE_LINE); l < b; l += CACHE_LINE) {
		struct ls_slot *x = find(s, l);
		if (x->line == 0) {
			if (s->n + 1 > s->cap / 2) {
				if (grow(s))
					return ENOMEM;
				x = find(s, l);
			}
			x->line = l;
			s->used[s->n++] = (uint32_t)(x - s->slot);
		}
		x->mask |= line_mask(l, a, b);
	}
	return 0;
}
