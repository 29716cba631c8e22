/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * layout.h - pmkv's persistent format: the whole store, inside one pmtx
 * region whose layout name is PMKV_LAYOUT (a region of another
 * application is refused by name, and a pmkv region by any other). The
 * root's first 16 bytes (struct pmkv_root_hdr) say which format and which
 * version (flavour) the rest is; the two versions have formats of their
 * own.
 *
 * ---- Format 2.0: the opt version (keyspace.c) ----
 *
 *   root (struct pmkv_root)  the header, then the key space of each of
 *                            PMKV_DBS databases and the trash
 *   key space                a pmtx_hmap (pmtx_containers.h; its blocks
 *                            and format are the library's): key bytes to
 *                            a typed object
 *   typed object             the bytes of an hmap value:
 *       [u8 type][u8 flags][i64 expire_ms, if flags & PMKV_OBJ_EXPIRES]
 *       [payload]
 *     type PMKV_T_STRING: the payload is the string's bytes. A collection
 *     (PMKV_T_LIST, _SET, _ZSET, _HASH) holds a struct pmkv_coll: the
 *     offsets of its containers (pmtx_containers.h):
 *       list        c[0] a pmtx_list of the elements
 *       set         c[0] a pmtx_hmap, member -> empty value
 *       hash        c[0] a pmtx_hmap, field -> value
 *       sorted set  c[0] a pmtx_hmap, member -> score (8 bytes, a double)
 *                   c[1] a pmtx_map of kind PMTX_MAP_SCORE, (score,
 *                        member) -> empty value: the order
 *     c[1] is 0 but for the sorted set.
 *
 * Rules
 *  L1. Persistent pointers are pmtx offsets from the region start, and
 *      every one read from the region is checked before it is followed:
 *      db[] and trash[] by pmtx_hmap_open (the map's header), a map's own
 *      links by the hash map (its H3), an object's length and fields by
 *      pmkv_obj_parse before any byte of it is used.
 *  L2. Every field changes inside a pmtx transaction. A write of a key
 *      puts its whole object with one pmtx_hmap_put: in place when it
 *      fits the entry's block, else a fresh entry (the hash map's H2).
 *  L3. A map is reachable from exactly one of db[] and trash[], a
 *      collection's container from exactly one object; every block of
 *      the store is a block of one of those maps or of a container an
 *      object of theirs names (no leak after any crash). A collection is
 *      never empty: the write that takes its last element removes the
 *      key, as in Redis. db[0] always names a map; db[1..15] are 0 until their
 *      database is first written. trash[i] is a map FLUSHALL detached
 *      from db[i] in the transaction that put a new one (or 0) there,
 *      destroyed a budget of entries a transaction (pmtx_hmap_
 *      destroy_some); the slot is cleared in the step that frees the last
 *      of it.
 *  L4. An object's type is one of enum pmkv_type and its flags only hold
 *      bits of PMKV_OBJ_FLAGS; anything else is a corrupt object. Its
 *      length is at least its header (2 bytes, 10 with an expiry), and a
 *      collection's payload is exactly a struct pmkv_coll whose offsets
 *      are checked when its containers open (L1); expire_ms is absolute,
 *      ms since the epoch, and nonzero.
 *  L5. Versions: PMKV_FORMAT_MAJOR changes when a server of the older
 *      major could misread the region. A minor adds types or flags: this
 *      server opens its own major at any minor up to its own, and refuses
 *      a newer minor (its objects may name blocks this server would not
 *      know how to free). 2.0: the key space in pmtx_hmap (format 1.x's
 *      opt version is refused at open, with what to do). 2.1: the
 *      collections (list, set, sorted set, hash) and the root's flag
 *      PMKV_ROOT_TYPED. A 2.0 store is opened as it is, and marked 2.1 by
 *      the transaction that creates its first collection.
 *  L6. root.flags holds only PMKV_ROOT_FLAGS. PMKV_ROOT_TYPED is set by
 *      the transaction that creates the store's first collection and
 *      never cleared: while it is clear, no object is a collection, and
 *      a write may replace a key's object without reading it first.
 *
 * ---- Format 1.1: the wrapped version (assoc.c, obj.c) ----
 *
 *   root (struct pmkv_root1) the header and `meta`, the wrapper of an
 *                            object laid out as a struct pmkv_root1 whose
 *                            geometry fields are the table's
 *   directory                dir_cap segment offsets
 *   segment                  2^PMKV_WSEG_SHIFT bucket offsets: the first
 *                            entry of each chain
 *   entry (struct pmkv_entry) header, key, value
 *
 * Every object is a pmtx copy-on-write object (pmtx.h): a wrapper block
 * naming its payload, and every offset above (directory, segments, bucket
 * heads, next) names a wrapper. Segments have 64 buckets: a copy-on-write
 * write copies its whole segment. It is a table of its own because the
 * library's containers do not run under copy-on-write (README.md).
 *
 * The table is a linear hash table (Litwin): buckets [0, nbase + split)
 * exist; a key whose hash h gives b = h mod nbase lives in b if b >= split,
 * else in h mod 2*nbase. Growing splits bucket `split` into itself and
 * split + nbase, one bucket per insert that finds the table too full; when
 * split reaches nbase, nbase doubles and split restarts at 0. A split only
 * ever moves entries to a higher bucket index, which is what lets a SCAN
 * cursor (a bucket index) miss nothing.
 *
 * Rules: L1 (offsets checked by pmkv_entry_at and the segment lookups in
 * assoc.c), and
 *  W1. Every field changes inside a pmtx transaction, except the fields
 *      of a fresh entry that nothing reaches yet (naked stores, then
 *      pmtx_flush, before the transaction that links it commits). A linked
 *      entry's fields other than next never change.
 *  W2. An entry is reachable from exactly one chain, or from the trash;
 *      every allocated block of the store is reachable (no leak after any
 *      crash). count is the number of entries in the chains.
 *  W3. Versions as L5 says (a newer minor is refused). 1.0: the opt
 *      version of this table (no longer read). 1.1: the wrapped version.
 */
#ifndef PMKV_LAYOUT_H
#define PMKV_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include <pmtx.h>

#define PMKV_LAYOUT "pmkv"
#define PMKV_MAGIC 0x5f5f564b4d50ull /* "PMKV__" */
#define PMKV_FORMAT_MAJOR 2  /* the opt version */
#define PMKV_FORMAT_MINOR 1
#define PMKV_WFORMAT_MAJOR 1 /* the wrapped version */
#define PMKV_WFORMAT_MINOR 1

/* struct pmkv_root_hdr.flavour: a region holds one version of the store.
 * Fixed on media. */
enum pmkv_flavour {
	PMKV_OPT = 1,     /* the key space in pmtx_hmap (keyspace.c) */
	PMKV_WRAPPED = 2, /* every object behind a pmtx wrapper (obj.c) */
};

/* Every format's first 16 bytes. */
struct pmkv_root_hdr {
	uint64_t magic;        /* PMKV_MAGIC */
	uint16_t major, minor; /* the flavour's format */
	uint32_t flavour;      /* enum pmkv_flavour */
};
_Static_assert(sizeof(struct pmkv_root_hdr) == 16, "root header");

/* ---- format 2.0 (opt) ---- */

#define PMKV_DBS 16 /* databases (SELECT 0..15) */

struct pmkv_root {
	struct pmkv_root_hdr h;
	uint32_t ndbs;              /* PMKV_DBS */
	uint32_t flags;             /* PMKV_ROOT_FLAGS (L6) */
	uint64_t reserved0;         /* zero */
	pmtx_off db[PMKV_DBS];      /* each database's key space (L3) */
	pmtx_off trash[PMKV_DBS];   /* maps being destroyed (L3) */
	uint64_t reserved[28];      /* zero */
};
_Static_assert(sizeof(struct pmkv_root) == 512, "root size");
_Static_assert(offsetof(struct pmkv_root, ndbs) == 16, "root ndbs");
_Static_assert(offsetof(struct pmkv_root, db) == 32, "root db");
_Static_assert(offsetof(struct pmkv_root, trash) == 160, "root trash");
_Static_assert(offsetof(struct pmkv_root, reserved) == 288, "root reserved");

/* A typed object's type (L4). Redis's own numbering; fixed on media, only
 * ever appended. */
enum pmkv_type {
	PMKV_T_STRING = 0,
	PMKV_T_LIST = 1,
	PMKV_T_SET = 2,
	PMKV_T_ZSET = 3,
	PMKV_T_HASH = 4,
};
#define PMKV_T_MAX PMKV_T_HASH

/* A collection's payload (L4): its containers. */
struct pmkv_coll {
	pmtx_off c[2];
};
_Static_assert(sizeof(struct pmkv_coll) == 16, "collection payload");

/* struct pmkv_root's flags (L6). */
#define PMKV_ROOT_TYPED 0x1u /* collections may exist */
#define PMKV_ROOT_FLAGS PMKV_ROOT_TYPED

/* A typed object's flags. */
#define PMKV_OBJ_EXPIRES 0x01u /* an expiry follows the two bytes */
#define PMKV_OBJ_FLAGS PMKV_OBJ_EXPIRES

#define PMKV_OBJ_HDR 2u  /* type, flags */
#define PMKV_OBJ_EXP 8u  /* expire_ms, when PMKV_OBJ_EXPIRES */
#define PMKV_OBJ_HDR_MAX (PMKV_OBJ_HDR + PMKV_OBJ_EXP)

/* ---- format 1.1 (wrapped) ---- */

#define PMKV_WSEG_SHIFT 6 /* 512 bytes per segment */
#define PMKV_NBASE_MIN 4u /* tests; a server starts at 4,096 */
#define PMKV_NBASE_DEFAULT 4096u
#define PMKV_DIR_CAP_MIN 64u
#define PMKV_DIR_CAP_MAX (1u << 20)

struct pmkv_root1 {
	struct pmkv_root_hdr h;
	uint64_t count;        /* entries in the chains (W2) */
	uint64_t nbase;        /* buckets at the start of this round: a power
	                        * of two, >= PMKV_NBASE_MIN */
	uint64_t split;        /* next bucket to split, < nbase */
	pmtx_off dir;          /* dir_cap segment offsets */
	uint64_t dir_cap;      /* a power of two */
	pmtx_off trash_dir;    /* FLUSHALL: the old table, being freed */
	uint64_t trash_nsegs;  /* segments of trash_dir still in use */
	pmtx_off meta;         /* the geometry's object (in the root only) */
	uint64_t reserved[6];  /* must be zero */
};
_Static_assert(sizeof(struct pmkv_root1) == 128, "root 1.x size");
_Static_assert(offsetof(struct pmkv_root1, count) == 16, "root count");
_Static_assert(offsetof(struct pmkv_root1, dir) == 40, "root dir");
_Static_assert(offsetof(struct pmkv_root1, trash_dir) == 56, "root trash");
_Static_assert(offsetof(struct pmkv_root1, meta) == 72, "root meta");

/* One key and its value, in one payload: the header, then klen key
 * bytes, then vlen value bytes. */
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
