/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * str_layout.h - the string's persistent format (str.c), format
 * PMTX_CONT_FORMAT_MAJOR.PMTX_CONT_FORMAT_MINOR.
 *
 * A string is a 16-byte value (pmtx_str) anywhere in the region; byte 15
 * is its tag:
 *   0..15   inline: the string is b[0, tag); b[tag..14] are zero
 *   0x80    heap: two host-order words, w0 = the offset of a heap block
 *           that holds the bytes, w1 = the length (low 48 bits) with the
 *           tag in its top byte and zero in the byte below (x86 is
 *           little-endian: the top byte of w1 is b[15])
 * Any other tag is corrupt. All zero bytes are the empty string.
 *
 * Invariants (str.c builds on them)
 *  SL1. A heap string is longer than PMTX_STR_INLINE_MAX bytes and at
 *       most PMTX_CONT_BYTES_MAX; its block is a heap block whose usable
 *       size (its capacity) is at least the length. Bytes of the block
 *       past the length are never read.
 *  SL2. A block belongs to one string: a string that moves to a new block
 *       (growth, set, clear) frees the old one in the same transaction.
 */
#ifndef PMTX_STR_LAYOUT_H
#define PMTX_STR_LAYOUT_H

#include <stdint.h>

#include "cont.h"

#define STR_TAG_HEAP 0x80u
#define STR_LEN_BITS 48
#define STR_LEN_MASK ((UINT64_C(1) << STR_LEN_BITS) - 1)

_Static_assert(sizeof(pmtx_str) == 16, "pmtx_str");
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the heap form puts the tag in the top byte of w1");
_Static_assert(PMTX_CONT_BYTES_MAX <= STR_LEN_MASK, "48-bit lengths");

#endif
