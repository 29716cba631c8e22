/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * jgive.h - the journal backend's give-back under a store that could be
 * lost (persist/journal.c invariants 10-12), one case per invariant.
 *
 * Each case opens a journal region with a 64 KiB journal, commits small
 * transactions until a checkpoint gives pages back, makes a store where
 * the invariant is what keeps it, and returns the value read back there:
 * JGIVE_KEPT when the store (or the commits) survived. tests/
 * test_journal_memory.c runs them against the library, tests/
 * test_mutant.c against the mutant of each invariant, which must lose it.
 */
#ifndef PMTX_TEST_JGIVE_H
#define PMTX_TEST_JGIVE_H

#include <stdint.h>

#define JGIVE_KEPT 0x6b657074ull /* "kept" */

/* Invariant 11: a store made after the checkpoint copied the page (from
 * its fdatasync of the region file) keeps the page. */
uint64_t jgive_store_after_copy(void);
/* Invariant 12: a store by another thread into a run being given back,
 * between the compare and the madvise, is made after it. */
uint64_t jgive_store_racing(void);
/* Invariant 10: a checkpoint whose fdatasync of the region file fails,
 * and whose page writes the kernel then drops, gives back nothing: the
 * committed values stay in memory. */
uint64_t jgive_failed_sync(void);

#endif
