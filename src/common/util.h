/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util.h - small helpers shared by every layer. Depends on nothing in pmtx.
 */
#ifndef PMTX_UTIL_H
#define PMTX_UTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define CACHE_LINE 64u
#define ALIGN_UP(x, a) (((x) + ((a)-1)) & ~((uint64_t)(a)-1))
#define ALIGN_DOWN(x, a) ((x) & ~((uint64_t)(a)-1))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Debug-build invariant check: assert(x_check(...)) style. */
#ifdef NDEBUG
#define PMTX_DEBUG 0
#else
#define PMTX_DEBUG 1
#endif

/* splitmix64's finaliser: a well-mixed 64-bit hash of x. */
static inline uint64_t pmtx_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* memcpy for the short copies of the transaction hot paths: an 8-byte
 * copy (a word of a struct) is one load and one store, not a call. */
static inline void pmtx_copy(void *d, const void *s, size_t n)
{
	if (n == 8) {
		uint64_t v;
		__builtin_memcpy(&v, s, 8);
		__builtin_memcpy(d, &v, 8);
	} else {
		__builtin_memcpy(d, s, n);
	}
}

/* Room for extra more elements of elem bytes after the n in use in the
 * DRAM array whose pointer is at arrp (a T ** passed as void *), of *cap
 * elements: if they do not fit, the room doubles (from first, for an
 * empty array) until they do. 0, or ENOMEM with array and *cap as they
 * were. */
static inline int pmtx_reserve(void *arrp, size_t n, size_t extra,
                               size_t *cap, size_t elem, size_t first)
{
	if (*cap - n >= extra)
		return 0;
	size_t c = *cap ? *cap * 2 : first;
	while (c - n < extra)
		c *= 2;
	void *p;
	__builtin_memcpy(&p, arrp, sizeof(p));
	if (!(p = realloc(p, c * elem)))
		return ENOMEM;
	__builtin_memcpy(arrp, &p, sizeof(p));
	*cap = c;
	return 0;
}

/* Number of cache lines touched by [p, p+n). */
static inline uint64_t lines_spanned(const void *p, size_t n)
{
	if (n == 0)
		return 0;
	uintptr_t a = (uintptr_t)p;
	return ((a + n - 1) / CACHE_LINE) - (a / CACHE_LINE) + 1;
}

/* 64-bit checksum used for every checksummed persistent structure
 * (XXH3-64, from libxxhash). seed distinguishes the kinds of structure. */
uint64_t pmtx_checksum(const void *p, size_t n, uint64_t seed);

/* Streaming form, for checksums over several pieces (XXH3-64 state). */
struct pmtx_hasher {
	_Alignas(64) unsigned char state[640];
};
void pmtx_hash_init(struct pmtx_hasher *h, uint64_t seed);
void pmtx_hash_update(struct pmtx_hasher *h, const void *p, size_t n);
uint64_t pmtx_hash_digest(struct pmtx_hasher *h);

/* Sync the directory that holds path, so that a rename or an unlink in
 * it is durable: 0 or an errno (a directory that cannot be synced,
 * EINVAL, counts as done). */
int pmtx__sync_dir_of(const char *path);

/* fn(arg) when the calling thread exits (thread_exit.c): e is the
 * thread's own (_Thread_local), registered once however often this is
 * called. 0, or an errno (then fn will not run). */
struct pmtx__thread_exit {
	void (*fn)(void *arg);
	void *arg;
	struct pmtx__thread_exit *next;
	int on;
};
int pmtx__thread_exit_register(struct pmtx__thread_exit *e,
                               void (*fn)(void *), void *arg);

/* Report an error message for the last failing call in this thread.
 * Open/create set it so that a tool can print more than the code. */
void pmtx__set_errmsg(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
void pmtx__clear_errmsg(void);

#endif
