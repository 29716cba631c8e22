/*
 * golden.h - what the golden regions (tests/golden/) hold: written by
 * make_golden.c, checked by test_golden.c. Changing anything here means
 * regenerating the files (see tests/golden/README.md).
 */
#ifndef PMTX_GOLDEN_H
#define PMTX_GOLDEN_H

#include <stdint.h>

#include "pmtx.h"

#define GOLDEN_LAYOUT "golden"
#define GOLDEN_SIZE 1u             /* starts at one superblock ... */
#define GOLDEN_MAX (4u << 20)      /* ... and may grow to 4 MiB */
#define GOLDEN_NDESC 2u
#define GOLDEN_BIG (100u << 10)    /* the in-flight block: grows the heap */
#define GOLDEN_TEXT "golden block A"

struct golden_root {
	uint64_t a;       /* 1111 after the first transaction */
	uint64_t b;       /* 2222 after the second (not cow) */
	pmtx_off blk;     /* block A; freed by the second (not cow) */
	pmtx_off big;     /* GOLDEN_BIG bytes of golden_word() (not cow) */
	pmtx_off obj;     /* a cow object: one word, 5555, then 6666 (cow) */
};

/* Word i of the big block: a 512-byte pattern, so the files compress. */
static inline uint64_t golden_word(uint64_t i)
{
	return (i % 64) * 0x9e3779b97f4a7c15ull + 7;
}

/* The runtimes with a golden file, and their file names. */
static const pmtx_runtime golden_runtimes[] = {
	PMTX_RT_UNDO, PMTX_RT_REDO, PMTX_RT_REDO_ASYNC, PMTX_RT_COW};
#define GOLDEN_N (sizeof(golden_runtimes) / sizeof(golden_runtimes[0]))

#endif
