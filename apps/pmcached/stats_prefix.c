/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stats_prefix.c - memcached's per-prefix statistics ("stats detail
 * on|off|dump", -D): for each key prefix (the key up to the first
 * delimiter; a key without one is not counted) the gets, the hits among
 * them, the sets and the deletes, while detail is on.
 *
 * Invariants:
 *  1. What is counted where is memcached 1.6.18's: get, gets, gat and
 *     gats (and the binary GET family) count a get per key, and a hit if
 *     found; set, add, replace, append, prepend and cas (and the binary
 *     stores) a set, whatever their result; delete a delete. incr, decr,
 *     touch and the meta commands count nothing.
 *  2. The dump lists the prefixes in memcached's order: its 256 buckets
 *     by MurmurHash3 (x86, 32 bits, seed 0: memcached's default hash) of
 *     the prefix, each newest first; so a dump is byte for byte
 *     memcached's for the same requests. A prefix matches a bucket's
 *     entry that starts with it (memcached compares only the new
 *     prefix's length).
 *  3. Volatile, under one mutex (memcached's stats lock); "stats reset"
 *     empties it. At most MAX_PREFIXES prefixes are kept (memcached has
 *     no bound): a new prefix past them is not counted.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

#define BUCKETS 256          /* memcached's PREFIX_HASH_SIZE */
#define MAX_PREFIXES 1000000

struct prefix {
	struct prefix *next;
	uint64_t gets, hits, sets, dels;
	size_t len;
	char name[];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct prefix *bucket[BUCKETS];
static size_t nprefixes;

static uint32_t rotl32(uint32_t x, int r)
{
	return x << r | x >> (32 - r);
}

static uint32_t mix_block(uint32_t k)
{
	k *= 0xcc9e2d51u;
	k = rotl32(k, 15);
	return k * 0x1b873593u;
}

/* MurmurHash3_x86_32 with seed 0 (Austin Appleby's, public domain). */
static uint32_t murmur3(const unsigned char *p, size_t n)
{
	uint32_t h = 0, k = 0;
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		k = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 |
		    (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24;
		h ^= mix_block(k);
		h = rotl32(h, 13) * 5 + 0xe6546b64u;
	}
	k = 0;
	switch (n & 3) {
	case 3: k ^= (uint32_t)p[i + 2] << 16; /* fall through */
	case 2: k ^= (uint32_t)p[i + 1] << 8;  /* fall through */
	case 1: k ^= p[i]; h ^= mix_block(k);
	}
	h ^= (uint32_t)n;
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	return h ^ h >> 16;
}

/* The key's prefix entry, made if new; NULL if the key has none. Called
 * with the lock held. */
static struct prefix *find(const char *key, size_t nkey)
{
	size_t len = 0;
	while (len < nkey && key[len] && key[len] != settings.prefix_delimiter)
		len++;
	if (len == nkey || !key[len])
		return NULL;
	struct prefix **b = &bucket[murmur3((const unsigned char *)key, len) %
	                            BUCKETS];
	for (struct prefix *p = *b; p; p = p->next)
		if (strncmp(p->name, key, len) == 0) /* invariant 2 */
			return p;
	struct prefix *p = nprefixes < MAX_PREFIXES
	                           ? calloc(1, sizeof(*p) + len + 1) : NULL;
	if (!p)
		return NULL;
	memcpy(p->name, key, len);
	p->len = len;
	p->next = *b;
	*b = p;
	nprefixes++;
	return p;
}

enum what { GET, HIT, SET, DEL };

static void record(const char *key, size_t nkey, enum what w)
{
	if (!atomic_load_explicit(&settings.detail_enabled,
	                          memory_order_relaxed))
		return;
	pthread_mutex_lock(&lock);
	struct prefix *p = find(key, nkey);
	if (p) {
		p->gets += w == GET || w == HIT;
		p->hits += w == HIT;
		p->sets += w == SET;
		p->dels += w == DEL;
	}
	pthread_mutex_unlock(&lock);
}

void stats_prefix_get(const char *key, size_t nkey, bool hit)
{
	record(key, nkey, hit ? HIT : GET);
}

void stats_prefix_set(const char *key, size_t nkey)
{
	record(key, nkey, SET);
}

void stats_prefix_delete(const char *key, size_t nkey)
{
	record(key, nkey, DEL);
}

void stats_prefix_clear(void)
{
	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < BUCKETS; i++) {
		while (bucket[i]) {
			struct prefix *p = bucket[i];
			bucket[i] = p->next;
			free(p);
		}
	}
	nprefixes = 0;
	pthread_mutex_unlock(&lock);
}

char *stats_prefix_dump(size_t *len)
{
	static const char fmt[] = "PREFIX %s get %" PRIu64 " hit %" PRIu64
	                          " set %" PRIu64 " del %" PRIu64 "\r\n";
	pthread_mutex_lock(&lock);
	size_t cap = sizeof("END\r\n"), n = 0;
	for (unsigned i = 0; i < BUCKETS; i++)
		for (struct prefix *p = bucket[i]; p; p = p->next)
			cap += p->len + sizeof(fmt) + 4 * 20;
	char *out = malloc(cap);
	for (unsigned i = 0; out && i < BUCKETS; i++)
		for (struct prefix *p = bucket[i]; p; p = p->next)
			n += (size_t)snprintf(out + n, cap - n, fmt, p->name,
			                      p->gets, p->hits, p->sets, p->dels);
	pthread_mutex_unlock(&lock);
	if (out) {
		memcpy(out + n, "END\r\n", 6);
		*len = n + 5;
	}
	return out;
}
