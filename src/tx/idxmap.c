/*
 * idxmap.c - see idxmap.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "idxmap.h"

static inline uint32_t slot_of(uint64_t key, uint32_t cap)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

int idxmap_init(struct idxmap *m)
{
	m->cap = 64;
	m->n = 0;
	m->slot = calloc(m->cap, sizeof(*m->slot));
	m->used = malloc(m->cap / 2 * sizeof(*m->used));
	return m->slot && m->used ? 0 : ENOMEM;
}

void idxmap_free(struct idxmap *m)
{
	free(m->slot);
	free(m->used);
	m->slot = NULL;
	m->used = NULL;
	m->cap = m->n = 0;
}

void idxmap_clear(struct idxmap *m)
{
	for (uint32_t i = 0; i < m->n; i++)
		m->slot[m->used[i]].key = 0;
	m->n = 0;
}

static struct idx_slot *find(const struct idxmap *m, uint64_t key)
{
	for (uint32_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1))
		if (m->slot[i].key == key || m->slot[i].key == 0)
			return &m->slot[i];
}

int32_t idxmap_get(const struct idxmap *m, uint64_t key)
{
	const struct idx_slot *s = find(m, key);
	return s->key ? s->val : -1;
}

static int grow(struct idxmap *m)
{
	struct idxmap g = {.cap = m->cap * 2};
	g.slot = calloc(g.cap, sizeof(*g.slot));
	g.used = malloc(g.cap / 2 * sizeof(*g.used));
	if (!g.slot || !g.used) {
		free(g.slot);
		free(g.used);
		return ENOMEM;
	}
	for (uint32_t i = 0; i < m->n; i++) {
		struct idx_slot *o = &m->slot[m->used[i]], *d = find(&g, o->key);
		*d = *o;
		g.used[g.n++] = (uint32_t)(d - g.slot);
	}
	free(m->slot);
	free(m->used);
	*m = g;
	return 0;
}

int idxmap_put(struct idxmap *m, uint64_t key, int32_t val)
{
	int32_t old;
	return idxmap_swap(m, key, val, &old);
}

int idxmap_swap(struct idxmap *m, uint64_t key, int32_t val, int32_t *old)
{
	struct idx_slot *s = find(m, key);
	*old = s->key ? s->val : -1;
	if (s->key == 0) {
		if (m->n + 1 > m->cap / 2) {
			if (grow(m))
				return ENOMEM;
			s = find(m, key);
		}
		s->key = key;
		m->used[m->n++] = (uint32_t)(s - m->slot);
	}
	s->val = val;
	return 0;
}
