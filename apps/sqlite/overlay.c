/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * overlay.c - a DRAM hash map from chunk number to a chunk's new bytes
 * (overlay.h). Open addressing with linear probing, at most half full.
 * Clearing and sorting walk every slot, so a table grown past
 * OV_KEEP_CAP slots by one large commit (a bulk load: tens of thousands
 * of chunks) is freed by the clear that follows it, not kept for the
 * small commits after it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "overlay.h"

static size_t slot_of(uint64_t key, size_t cap)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 32) & (cap - 1);
}

void ov_init(struct overlay *ov)
{
	memset(ov, 0, sizeof(*ov));
}

void ov_clear(struct overlay *ov)
{
	for (size_t i = 0; i < ov->cap; i++) {
		free(ov->slot[i].buf);
		ov->slot[i].key = 0;
		ov->slot[i].buf = NULL;
	}
	ov->count = 0;
	if (ov->cap > OV_KEEP_CAP) { /* grown for one large commit */
		free(ov->slot);
		ov->slot = NULL;
		ov->cap = 0;
	}
}

void ov_free(struct overlay *ov)
{
	ov_clear(ov);
	free(ov->slot);
	ov_init(ov);
}

static struct ov_slot *probe(const struct overlay *ov, uint64_t key)
{
	size_t i = slot_of(key, ov->cap);
	while (ov->slot[i].key && ov->slot[i].key != key)
		i = (i + 1) & (ov->cap - 1);
	return &ov->slot[i];
}

char *ov_find(const struct overlay *ov, uint64_t chunk)
{
	if (!ov->count)
		return NULL;
	return probe(ov, chunk + 1)->buf;
}

/* Move every chunk into a table of cap slots. */
static int rehash(struct overlay *ov, size_t cap)
{
	struct ov_slot *old = ov->slot;
	size_t ocap = ov->cap;
	ov->slot = calloc(cap, sizeof(*ov->slot));
	if (!ov->slot) {
		ov->slot = old;
		return ENOMEM;
	}
	ov->cap = cap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].key)
			*probe(ov, old[i].key) = old[i];
	free(old);
	return 0;
}

int ov_get(struct overlay *ov, uint64_t chunk, char **buf, int *fresh)
{
	if (2 * (ov->count + 1) > ov->cap) {
		int rc = rehash(ov, ov->cap ? 2 * ov->cap : 64);
		if (rc)
			return rc;
	}
	struct ov_slot *s = probe(ov, chunk + 1);
	*fresh = !s->key;
	if (s->key) {
		*buf = s->buf;
		return 0;
	}
	if (!(s->buf = aligned_alloc(64, PSQ_CHUNK)))
		return ENOMEM;
	s->key = chunk + 1;
	ov->count++;
	*buf = s->buf;
	return 0;
}

/* Empty slot i, moving later members of its probe run back into it
 * (deletion without tombstones). */
static void delete_at(struct overlay *ov, size_t i)
{
	size_t mask = ov->cap - 1;
	free(ov->slot[i].buf);
	for (size_t j = (i + 1) & mask; ov->slot[j].key; j = (j + 1) & mask) {
		size_t k = slot_of(ov->slot[j].key, ov->cap);
		/* Stays if its home lies cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		ov->slot[i] = ov->slot[j];
		i = j;
	}
	ov->slot[i].key = 0;
	ov->slot[i].buf = NULL;
	ov->count--;
}

void ov_drop_from(struct overlay *ov, uint64_t n)
{
	for (size_t i = 0; i < ov->cap && ov->count;) {
		if (ov->slot[i].key > n)
			delete_at(ov, i); /* slot i may hold a moved one now */
		else
			i++;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

int ov_sorted(const struct overlay *ov, uint64_t **out)
{
	*out = NULL;
	if (!ov->count)
		return 0;
	uint64_t *v = malloc(ov->count * sizeof(*v));
	if (!v)
		return ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < ov->cap; i++)
		if (ov->slot[i].key)
			v[n++] = ov->slot[i].key - 1;
	qsort(v, n, sizeof(*v), cmp_u64);
	*out = v;
	return 0;
}
