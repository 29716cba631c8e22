/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * list_layout.h - the list's persistent format (list.c), format
 * PMTX_CONT_FORMAT_MAJOR.PMTX_CONT_FORMAT_MINOR.
 *
 *   header block   struct list_hdr (48 bytes: a block of the 64-byte
 *                  class, so one cache line)
 *   chunk          struct list_chunk, then its data area of cap bytes, in
 *                  which the elements of [lo, hi) are packed one after the
 *                  other, each as its length (LEB128: 7 bits a byte, low
 *                  group first, the top bit set on every byte but the
 *                  last; the shortest form, at most 5 bytes) and then its
 *                  bytes
 *
 * Invariants (list.c's design comment builds on them)
 *  LL1. head = tail = 0, count = nchunks = 0 for an empty list; otherwise
 *       head and tail name the ends of a doubly linked chain of nchunks
 *       chunks (the head's prev and the tail's next are 0), whose counts
 *       add up to count.
 *  LL2. Every linked chunk holds at least one element: 0 < count <=
 *       hi - lo, lo <= hi <= cap, and [lo, hi) parses into exactly count
 *       elements. Bytes of the data area outside [lo, hi) are never read.
 *  LL3. magic and cap are set when the chunk is built (plain stores,
 *       flushed, before it is linked) and never change; cap + the header
 *       fits the block's usable size.
 *  LL4. count, lo and hi are adjacent (one write updates all three).
 */
#ifndef PMTX_LIST_LAYOUT_H
#define PMTX_LIST_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "cont.h"

#define LIST_VARINT_MAX 5 /* bytes of the length of a 1 GiB element */

struct list_hdr {
	struct cont_hdr h;  /* CONT_MAGIC_LIST; flags 0 */
	uint64_t head;      /* first chunk, or 0 */
	uint64_t tail;      /* last chunk, or 0 */
	uint64_t nchunks;
	uint64_t count;     /* elements */
};
_Static_assert(sizeof(struct list_hdr) == 48, "list header");
_Static_assert(offsetof(struct list_hdr, head) == 16, "list head");

struct list_chunk {
	uint32_t magic;     /* CONT_MAGIC_LIST_CHUNK (LL3) */
	uint32_t cap;       /* bytes of the data area (LL3) */
	uint32_t count;     /* elements in [lo, hi) (LL2, LL4) */
	uint32_t lo;        /* offset in the data area of the first byte */
	uint32_t hi;        /* ... and one past the last */
	uint32_t reserved;  /* zero */
	uint64_t prev;      /* the chunk before, or 0 at the head */
	uint64_t next;      /* the chunk after, or 0 at the tail */
	/* unsigned char data[cap]; */
};
_Static_assert(sizeof(struct list_chunk) == 40, "list chunk header");
_Static_assert(offsetof(struct list_chunk, count) + 12 ==
               offsetof(struct list_chunk, reserved), "LL4");

#endif
