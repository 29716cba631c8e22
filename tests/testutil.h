/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testutil.h - what the tests share, so that each reads as what it
 * checks: fresh paths (removed at exit), regions made and closed with an
 * asserted status, files read and hashed without a mapping, the heap's
 * blocks against those in use, children and threads, counters, and the
 * long-mode switch (PMTX_LONG_TESTS=1).
 *
 * Every path these helpers hand out starts with pmtx-test-<pid>-, <pid>
 * the test program's (a forked child's paths too), and whatever bears
 * that prefix in /dev/shm, /tmp and /var/tmp (a region, its journal, its
 * ".creating" file, a directory) is removed when the program exits, even
 * after a failed assertion: a test need not clean up on its failure
 * paths.
 */
#ifndef PMTX_TESTUTIL_H
#define PMTX_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h> /* cmocka needs it; pmtx itself never uses setjmp */
#include <stdint.h>
#include <sys/types.h>
#include <cmocka.h>

#include "pmtx.h"

/* 1 in an AddressSanitizer build, whose shadow memory, quarantine and
 * slower code change what a test measures (memory, rates). */
#if defined(__SANITIZE_ADDRESS__)
#define TU_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TU_UNDER_ASAN 1
#endif
#endif
#ifndef TU_UNDER_ASAN
#define TU_UNDER_ASAN 0
#endif

/* A fresh path /dev/shm/pmtx-test-<pid>-<n>.pmtx (not created). */
const char *tu_path(void);
/* A fresh path <dir>/pmtx-test-<pid>-<n>-<tag> (not created), for a file
 * or directory that must be elsewhere than /dev/shm or be named. */
const char *tu_path_in(const char *dir, const char *tag);
/* Copy the file src to a new file dst (an existing dst is replaced by a
 * new inode: a region left open keeps the old one and its lock). */
void tu_copy_file(const char *src, const char *dst);
/* rc, the status of what, must be 0: else fails, naming the status and
 * pmtx_errmsg()'s detail. */
void tu_assert_ok(int rc, const char *what);
/* Options as pmtx_options_init makes them, with root_size and runtime. */
pmtx_options tu_options(size_t root_size, pmtx_runtime rt);
/* Create a region at path; asserts success. */
pmtx_region *tu_create_at(const char *path, size_t size,
                          const pmtx_options *o);
/* Create a region at a fresh path; asserts success. */
pmtx_region *tu_create(const char **path, size_t size, size_t root_size,
                       pmtx_domain d, pmtx_backend b, pmtx_runtime rt);
/* The same with options of the caller's. */
pmtx_region *tu_create_with(const char **path, size_t size,
                            const pmtx_options *o);
/* Close r (asserting success) and remove its file. */
void tu_close_and_remove(pmtx_region *r, const char *path);
/* Reopen path with default options; asserts success. */
pmtx_region *tu_open(const char *path);
/* Open path through backend b with open flags: pmtx_open's status (for
 * a child, which must not assert). */
int tu_open_on(const char *path, pmtx_backend b, unsigned flags,
               pmtx_region **r);
/* A growing array of offsets: a region's heap blocks. */
struct tu_offs {
	pmtx_off *v;
	size_t n, cap;
};
void tu_offs_push(struct tu_offs *a, pmtx_off off);
/* The heap's user blocks are exactly the blocks of used (in any order):
 * else fails, after ctx, naming the counts and the first block that
 * differs (a leak, or an allocation lost). Sorts used. */
void tu_assert_heap_blocks(pmtx_region *r, struct tu_offs *used,
                           const char *ctx);
/* Run fn in n threads and wait for them all: thread i gets
 * (char *)args + i * size, or i itself when size is 0. Returns how many
 * returned something else than NULL. */
unsigned tu_run_threads(void *(*fn)(void *), void *args, size_t size,
                        unsigned n);
/* fork() with stdio flushed first (a child's exit must not write the
 * parent's buffers again); asserts success. */
pid_t tu_fork(void);
/* Wait for the child pid: its exit status; fails if a signal killed it. */
int tu_wait_exit(pid_t pid);
/* n bytes at off of the file path, read or written with pread or pwrite
 * (not through a mapping); asserts that all of them were. */
void tu_pread(const char *path, void *buf, size_t n, uint64_t off);
void tu_pwrite(const char *path, const void *buf, size_t n, uint64_t off);
/* XXH3 of the whole file (to show it was not modified). */
uint64_t tu_file_hash(const char *path);
/* 1 when PMTX_LONG_TESTS is set to a nonzero value. */
int tu_long_mode(void);
/* Deterministic PRNG (splitmix64). */
uint64_t tu_rand(uint64_t *state);
/* Counters since the last tu_count_start(). */
void tu_count_start(void);
pmtx_counters tu_count(void);

#endif
