/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hmap_layout.h - the hash map's persistent format (hmap.c), format
 * PMTX_CONT_FORMAT_MAJOR.PMTX_CONT_FORMAT_MINOR.
 *
 *   header block   struct hmap_hdr, then count[ncount] (u64), then the
 *                  bucket words of segment 0 (2^min_log of them)
 *   segment table  struct hmap_segtab: segment i >= 1 holds buckets
 *                  [2^(min_log+i-1), 2^(min_log+i)), in a block of its own
 *   entry          struct hmap_entry, then the key, then the value
 *
 * A link (a bucket word, an entry's next) is 0 or
 *   tag << 56 | filter << 44 | offset >> 4
 * the entry's offset (16-byte aligned, below 2^48), the top 8 bits of its
 * key's hash (the tag: a lookup compares the keys of matching tags only),
 * and a filter of 12 bits: the union of hmap.c's tag_filter(tag), two
 * bits a tag, over the entry the link names and every entry after it in
 * the chain (HL4). A lookup of an absent key stops at the first link
 * whose filter lacks its tag's bits, most often the bucket word, without
 * loading an entry.
 *
 * History (the format is unreleased: PMTX_CONT_FORMAT stays 1.0). Up to
 * commit 47fc042 a link was tag << 48 | offset, a tag of 16 bits and no
 * filter: a lookup of an absent key loaded every entry of its chain.
 * Up to commit 5f5301d no value was written in place (HL2 kept the whole
 * entry immutable); the bytes of the format are the same.
 *
 * Invariants (hmap.c's design comment builds on them)
 *  HL1. geom = (log2 nbase) << 56 | split, split < nbase: the live buckets
 *       are [0, nbase + split). Bucket words beyond them are never read,
 *       and are written when they become live (a segment is allocated
 *       without zeroing).
 *  HL2. An entry's key bytes, key length and hash never change while it
 *       is linked. Its value and value length may be rewritten in place
 *       (hmap.c H2), always within its block: 16 + klen + vlen is at
 *       most the block's usable size.
 *  HL3. ncount is 1, or HMAP_STRIPE_COUNTS for a map made with
 *       PMTX_HMAP_LOCKED, whose entry with hash h counts in count[h mod
 *       HMAP_STRIPE_COUNTS]; the entries are the sum of the counts.
 *  HL4. A link's filter holds the filter bits of the tags of the entry it
 *       names and of every entry after it in its chain. It may hold more
 *       (bits of entries since deleted or moved by a split).
 */
#ifndef PMTX_HMAP_LAYOUT_H
#define PMTX_HMAP_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "cont.h"

#define HMAP_LINK_OFF_SHIFT 4     /* offsets are 16-byte aligned */
#define HMAP_LINK_OFF_BITS 44     /* offset >> 4 */
#define HMAP_LINK_OFF_MASK ((UINT64_C(1) << HMAP_LINK_OFF_BITS) - 1)
#define HMAP_LINK_FILTER_SHIFT 44
#define HMAP_LINK_FILTER_BITS 12
#define HMAP_LINK_FILTER_MASK \
	(((UINT64_C(1) << HMAP_LINK_FILTER_BITS) - 1) << HMAP_LINK_FILTER_SHIFT)
#define HMAP_LINK_TAG_SHIFT 56
#define HMAP_GEOM_LOG_SHIFT 56
#define HMAP_MAX_SEG 48
#define HMAP_STRIPE_COUNTS 64
#define HMAP_MIN_LOG 2        /* 4 buckets in the header */
#define HMAP_MIN_LOG_LOCKED 6 /* 64: every stripe owns its own buckets */

struct hmap_hdr {
	struct cont_hdr h;  /* CONT_MAGIC_HMAP; flags: PMTX_HMAP_LOCKED */
	uint64_t seed;      /* of the key hash (XXH3-64), fixed at create */
	uint64_t geom;      /* HL1 */
	uint64_t segtab;    /* struct hmap_segtab, or 0 (segment 0 only) */
	uint32_t min_log;   /* segment 0 has 2^min_log buckets */
	uint32_t ncount;    /* HL3 */
	uint64_t reserved;  /* zero */
	/* uint64_t count[ncount]; uint64_t bucket[1 << min_log]; */
};
_Static_assert(sizeof(struct hmap_hdr) == 56, "hmap header");
_Static_assert(offsetof(struct hmap_hdr, geom) == 24, "hmap geom");

struct hmap_segtab {
	uint32_t magic;     /* CONT_MAGIC_HMAP_SEGTAB */
	uint32_t reserved0;
	uint64_t reserved1;
	uint64_t seg[HMAP_MAX_SEG]; /* [0] unused: segment 0 is inline */
};
_Static_assert(sizeof(struct hmap_segtab) == 16 + 8 * HMAP_MAX_SEG,
               "hmap segment table");

struct hmap_entry {
	uint64_t next;      /* a link */
	uint32_t klen;
	uint32_t vlen;
	/* key bytes, then value bytes */
};
_Static_assert(sizeof(struct hmap_entry) == 16, "hmap entry");

#endif
