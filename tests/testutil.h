/*
 * testutil.h - helpers shared by the tests: unique region paths in
 * /dev/shm, region creation with explicit options, file hashing, and the
 * long-mode switch (PMTX_LONG_TESTS=1).
 */
#ifndef PMTX_TESTUTIL_H
#define PMTX_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h> /* cmocka needs it; pmtx itself never uses setjmp */
#include <stdint.h>
#include <cmocka.h>

#include "pmtx.h"

/* A fresh path /dev/shm/pmtx-test-<pid>-<n>.pmtx (not created). */
const char *tu_path(void);
/* Create a region at a fresh path; asserts success. */
pmtx_region *tu_create(const char **path, size_t size, size_t root_size,
                       pmtx_domain d, pmtx_backend b, pmtx_runtime rt);
/* The same with options of the caller's. */
pmtx_region *tu_create_with(const char **path, size_t size,
                            const pmtx_options *o);
/* Reopen path with default options; asserts success. */
pmtx_region *tu_open(const char *path);
/* Open path through backend b with open flags: pmtx_open's status (for
 * a child, which must not assert). */
int tu_open_on(const char *path, pmtx_backend b, unsigned flags,
               pmtx_region **r);
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
