/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * list.h - what list.c offers inside the library and its tests beyond
 * the public API (pmtx_containers.h).
 */
#ifndef PMTX_LIST_H
#define PMTX_LIST_H

#include <stddef.h>

#include "pmtx_containers.h"

/* Check the whole list against list_layout.h LL1-LL4: the chain linked
 * both ways, head and tail at its ends, nchunks chunks, every one a heap
 * block of the chunk kind whose [lo, hi) parses into exactly its count
 * of elements (shortest lengths), the counts adding up to the header's.
 * Reads as pmtx_list_range does (this thread's running transaction, if
 * any). 0, or PMTX_E_CORRUPT (or the handle's own status) with what is
 * wrong in msg (len bytes, may be 0). O(bytes of the list). */
int list_check(pmtx_list *l, char *msg, size_t len);
/* fn(off, arg) for every heap block of the list, each once: its header,
 * then its chunks from the head. The chain is checked whole first, as
 * the list's reads check it (the header's counts, each chunk by
 * chunk_load: C3, LL1-LL3; the walk bounded by nchunks), so fn sees no
 * block of a list that fails. fn's first nonzero value, PMTX_E_CORRUPT
 * (or the handle's own status), or 0. Reads as list_check does. */
int list_walk(pmtx_list *l, int (*fn)(pmtx_off off, void *arg), void *arg);

#endif
