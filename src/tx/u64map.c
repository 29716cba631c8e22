/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * u64map.c - see u64map.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "u64map.h"

#define INIT_CAP 64u

int u64map_init(struct u64map *m)
{
	m->cap = INIT_CAP;
	m->n = 0;
	m->slot = calloc(m->cap, sizeof(*m->slot));
	m->used = malloc(m->cap / 2 * sizeof(*m->used));
	return m->slot && m->used ? 0 : ENOMEM;
}

void u64map_free(struct u64map *m)
{
	free(m->slot);
	free(m->used);
	m->slot = NULL;
	m->used = NULL;
	m->cap = m->n = 0;
}

void u64map_clear(struct u64map *m)
{
	for (uint32_t i = 0; i < m->n; i++)
		m->slot[m->used[i]] = (struct u64_slot){0, 0};
	m->n = 0;
}

static struct u64_slot *probe(const struct u64map *m, uint64_t key)
{
	for (uint32_t i = u64map_slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1))
		if (m->slot[i].key == key || m->slot[i].key == 0)
			return &m->slot[i];
}

static int grow(struct u64map *m)
{
	struct u64map g = {.cap = m->cap * 2};
	g.slot = calloc(g.cap, sizeof(*g.slot));
	g.used = malloc(g.cap / 2 * sizeof(*g.used));
	if (!g.slot || !g.used) {
		free(g.slot);
		free(g.used);
		return ENOMEM;
	}
	for (uint32_t i = 0; i < m->n; i++) {
		struct u64_slot *o = &m->slot[m->used[i]], *d = probe(&g, o->key);
		*d = *o;
		g.used[g.n++] = (uint32_t)(d - g.slot);
	}
	free(m->slot);
	free(m->used);
	*m = g;
	return 0;
}

uint64_t *u64map_insert(struct u64map *m, uint64_t key, int *fresh)
{
	struct u64_slot *s = probe(m, key);
	*fresh = s->key == 0;
	if (*fresh) {
		if (m->n + 1 > m->cap / 2) {
			if (grow(m))
				return NULL;
			s = probe(m, key);
		}
		s->key = key;
		s->val = 0;
		m->used[m->n++] = (uint32_t)(s - m->slot);
	}
	return &s->val;
}
