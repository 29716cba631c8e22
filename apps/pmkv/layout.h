/*
 * layout.h - pmkv's persistent format: the whole key space, inside one
 * pmtx region whose layout name is PMKV_LAYOUT (a region of another
 * application is refused by name, and a pmkv region by any other).
 *
 *   root (struct pmkv_root)  format, version (opt or wrapped), key count,
 *                            the table's geometry and directory, the
 *                            trash left by FLUSHALL
 *   directory                dir_cap segment offsets
 *   segment                  2^shift bucket offsets: the first entry of
 *                            each chain
 *   entry (struct pmkv_entry) header, key, value
 *
 * The two versions (flavour) hold these objects differently:
 *   opt      each object is one heap block, named by its offset; the
 *            geometry is in the root itself; segments of 4,096 buckets
 *            (PMKV_SEG_SHIFT).
 *   wrapped  each object is a pmtx copy-on-write object (pmtx.h): a
 *            wrapper block naming its payload, and every offset above
 *            (directory, segments, bucket heads, next) names a wrapper.
 *            The root holds only the format and `meta`, the wrapper of
 *            an object laid out as a struct pmkv_root whose geometry
 *            fields are the table's (its format fields are zero).
 *            Segments have 64 buckets (PMKV_WSEG_SHIFT): a copy-on-write
 *            write copies its whole segment.
 *
 * The table is a linear hash table (Litwin): buckets [0, nbase + split)
 * exist; a key whose hash h gives b = h mod nbase lives in b if
 * b >= split, else in h mod 2*nbase. Growing splits bucket `split` into
 * itself and split + nbase, one bucket per insert that finds the table
 * too full; when split reaches nbase, nbase doubles and split restarts at
 * 0. A split only ever moves entries to a higher bucket index, which is
 * what lets a SCAN cursor (a bucket index) miss nothing.
 *
 * Rules (pmtx's layout.h rules hold here too)
 *  L1. Persistent pointers are pmtx offsets from the region start, and
 *      every offset read from the region is checked (pmkv_entry_at and
 *      the segment lookups in assoc.c) before it is followed.
 *  L2. Every field changes inside a pmtx transaction, except the fields
 *      of a fresh entry that nothing reaches yet (naked stores, then
 *      pmtx_flush, before the transaction that links it commits).
 *  L3. An entry is reachable from exactly one chain, or from the trash;
 *      every allocated block of the store is reachable (no leak after any
 *      crash). count is the number of entries in the chains.
 *  L4. Format changes bump PMKV_FORMAT_MAJOR (incompatible) or the minor.
 *      1.0: the opt version. 1.1: the wrapped version (an opt region is
 *      the same in both; a 1.0 server refuses a wrapped one by flavour).
 */
#ifndef PMKV_LAYOUT_H
#define PMKV_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include <pmtx.h>

#define PMKV_LAYOUT "pmkv"
#define PMKV_MAGIC 0x5f5f564b4d50ull /* "PMKV__" */
#define PMKV_FORMAT_MAJOR 1
#define PMKV_FORMAT_MINOR 1

/* struct pmkv_root.flavour: a region holds one version of the store. */
enum pmkv_flavour {
	PMKV_OPT = 1,     /* plain structs, plain loads (store.c) */
	PMKV_WRAPPED = 2, /* every object behind a pmtx wrapper (obj.c) */
};

#define PMKV_SEG_SHIFT 12 /* opt: 32 KiB of offsets per segment */
#define PMKV_SEG_BUCKETS (1u << PMKV_SEG_SHIFT)
#define PMKV_WSEG_SHIFT 6 /* wrapped: 512 bytes per segment */
#define PMKV_NBASE_MIN 4u /* tests; a server starts at PMKV_SEG_BUCKETS */
#define PMKV_DIR_CAP_MIN 64u
#define PMKV_DIR_CAP_MAX (1u << 20) /* 2^32 buckets */

struct pmkv_root {
	uint64_t magic;        /* PMKV_MAGIC */
	uint16_t major, minor; /* PMKV_FORMAT_* */
	uint32_t flavour;      /* enum pmkv_flavour */
	uint64_t count;        /* entries in the chains (L3) */
	uint64_t nbase;        /* buckets at the start of this round: a power
	                        * of two, >= PMKV_NBASE_MIN */
	uint64_t split;        /* next bucket to split, < nbase */
	pmtx_off dir;          /* dir_cap segment offsets */
	uint64_t dir_cap;      /* a power of two */
	pmtx_off trash_dir;    /* FLUSHALL: the old table, being freed */
	uint64_t trash_nsegs;  /* segments of trash_dir still in use */
	pmtx_off meta;         /* wrapped: the geometry's object; opt: 0 */
	uint64_t reserved[6];  /* must be zero */
};
_Static_assert(sizeof(struct pmkv_root) == 128, "root size");
_Static_assert(offsetof(struct pmkv_root, count) == 16, "root count");
_Static_assert(offsetof(struct pmkv_root, dir) == 40, "root dir");
_Static_assert(offsetof(struct pmkv_root, trash_dir) == 56, "root trash");
_Static_assert(offsetof(struct pmkv_root, meta) == 72, "root meta");

/* One key and its value, in one block: the header, then klen key bytes,
 * then vlen value bytes. A GET reads one block, usually one or two lines
 * (the opt version's placement for locality). */
struct pmkv_entry {
	pmtx_off next;     /* the next entry of the chain, 0 at its end */
	uint64_t hash;     /* XXH3 of the key: chains compare it first */
	uint64_t expire_ms; /* absolute, ms since the epoch; 0 = never */
	uint64_t lens;      /* key length | value length << 32 */
	/* key, then value */
};
_Static_assert(sizeof(struct pmkv_entry) == 32, "entry header size");
_Static_assert(offsetof(struct pmkv_entry, hash) == 8, "entry hash");
_Static_assert(offsetof(struct pmkv_entry, expire_ms) == 16, "entry expiry");
_Static_assert(offsetof(struct pmkv_entry, lens) == 24, "entry lens");
#define PMKV_LENS(klen, vlen) ((uint64_t)(klen) | (uint64_t)(vlen) << 32)
#define PMKV_KLEN(lens) ((uint32_t)(lens))
#define PMKV_VLEN(lens) ((uint32_t)((lens) >> 32))

/* Segment count for a table of nbase + split buckets, 2^shift per
 * segment. */
static inline uint64_t pmkv_nsegs(uint64_t nbase, uint64_t split,
                                  unsigned shift)
{
	return (nbase + split + (1ull << shift) - 1) >> shift;
}

#endif
