/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * jdrop.h - giving back the private copies of a journal region's pages
 * once a checkpoint has made the region file hold them (jdrop.c; the
 * journal backend's invariants 10-13 in journal.c say when and why).
 *
 * Layer: persist/, below journal.c. It knows a region only as a mapping
 * (MAP_PRIVATE of the region file) and the bytes the file holds there.
 */
#ifndef PMTX_JDROP_H
#define PMTX_JDROP_H

#include <stddef.h>

#define JDROP_PAGE 4096u

/* The mapping [base, base + len) of a journal region, whose pages may be
 * given back from now on: a write fault in it is a give-back window's
 * (jdrop.c D2). 0, or -1 when it cannot be (no handler could be
 * installed, or too many regions are open): then its pages are kept. */
int jdrop_register(void *base, size_t len);
/* Before the mapping goes: no fault in it is ours any more. */
void jdrop_unregister(void *base);

/* How a run's equal pages are given back: madvise(MADV_DONTNEED) unless
 * a test replaces it (struct journal_io). 0 or -1 and errno. */
typedef int jdrop_give_fn(void *a, size_t n);
int jdrop_madvise(void *a, size_t n);

/* Under the journal's lock, with the region file durable: give back each
 * page of [a, a + n) (page aligned, registered) whose bytes equal file's
 * (the region file's bytes there, read just before), atomically against
 * stores (jdrop.c D1-D3). Returns the pages given back. */
size_t jdrop_run(char *a, const char *file, size_t n, jdrop_give_fn *give);

#endif
