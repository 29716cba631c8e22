/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * map_layout.h - the persistent format of the ordered map (map.c): its
 * header, its leaves and inner nodes, and the item blocks that hold byte
 * keys and values. Every struct here is on media: sizes and offsets are
 * fixed by the asserts below, reserved fields are zero, and a change of
 * layout bumps PMTX_CONT_FORMAT_MAJOR (a compatible addition, the minor).
 *
 * Lines. A heap block of a class that is a multiple of 64 bytes starts
 * its user bytes 16 bytes into a cache line (after the heap's object
 * header). A node's magic word (cont.h C3) sits in the first line its
 * search reads anyway, so that checking it costs no line of its own:
 *
 *   leaf (880 bytes, heap class 896)
 *     [0, 48)    the order of the slots (the line shared with the heap's
 *                header): read by inserts, deletes, ranks and cursors,
 *                not by a lookup
 *     [48, 112)  the probe line: magic, count, the used-slot bitmap and
 *                a one-byte fingerprint of each slot's key. A lookup
 *                reads this line and then only the entries whose
 *                fingerprint matches (one line for a present key, none
 *                for an absent one but for a 1 in 256 chance a slot).
 *                struct map_leaf_head is both lines; every insert and
 *                delete rewrites it whole (one write of two lines)
 *     [112, 864) 47 entries of 16 bytes, 4 to a line; an entry never
 *                moves while it is live (an insert writes its free slot)
 *     [864, 880) next, prev: written by splits and merges only
 *   inner node (816 bytes, heap class 896)
 *     [0, 48)    reserved (the line shared with the heap's header: a
 *                descent does not read it)
 *     [48, 56)   magic, number of children, in the line of the first
 *                7 separators
 *     [56, 304)  31 separator keys, [304, 560) children, [560, 816)
 *                counts: an insert or delete below writes one count word
 *
 * History (the format is unreleased: PMTX_CONT_FORMAT stays 1.0). Up to
 * commit 47fc042 a leaf held 48 entries and no fingerprints, its magic word,
 * next and prev in [0, 48) and its order in the head line [48, 112), and
 * an inner node its magic in [0, 48): a lookup read each node's first
 * line for the magic word alone, and a leaf's binary search read about
 * four entry lines.
 *
 * Invariants (map.c's checker, map_check, tests each of them)
 *  L1. The header's root is a leaf when height is 1, else an inner node;
 *      every path from the root to a leaf has height nodes.
 *  L2. A leaf's order[0, count) is a permutation of the slots whose bit is
 *      set in used, and lists their keys in strictly increasing order;
 *      fp[s] of each such slot is the fingerprint of its key (map.c
 *      key_fp). Slots whose bit is clear are free: their entry and
 *      fingerprint bytes mean nothing.
 *      The leaves, from first by next (and from last by prev), list every
 *      key of the map in increasing order.
 *  L3. An inner node of n children has n - 1 separators: every key under
 *      child i is >= key[i - 1] (i > 0) and < key[i] (i < n - 1).
 *  L4. cnt[i] is the number of entries under child i.
 *  L5. Fill: a leaf other than the root holds at least MAP_LEAF_MIN
 *      entries, an inner node other than the root at least
 *      MAP_INNER_MIN children, an inner root at least 2.
 *  L6. Items are immutable once linked: a new value or key is a new item,
 *      and the old one is freed in the same transaction. A separator of
 *      a BYTES or SCORE map is an item owned by its inner node alone.
 */
#ifndef PMTX_MAP_LAYOUT_H
#define PMTX_MAP_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "cont.h"
#include "map.h"

/* The map's header block: the struct a map's offset names. */
struct map_hdr {
	struct cont_hdr h;  /* CONT_MAGIC_MAP; flags: key kind | VAL_U64 */
	uint64_t root;      /* a leaf (height 1) or an inner node */
	uint32_t height;    /* levels, 1..MAP_MAX_HEIGHT */
	uint32_t reserved;
	uint64_t first;     /* the leftmost leaf */
	uint64_t last;      /* the rightmost leaf */
};
_Static_assert(sizeof(struct map_hdr) == 48, "map header: one line");
_Static_assert(offsetof(struct map_hdr, root) == 16, "map header root");
_Static_assert(offsetof(struct map_hdr, first) == 32, "map header first");

/* One entry of a leaf. key: the key itself (U64, I64) or the offset of
 * the item that holds it (BYTES, SCORE). val: the value (VAL_U64); for
 * U64 and I64 keys with byte values, the offset of an item holding the
 * value (klen 0), 0 for an empty value; 0 for BYTES and SCORE keys with
 * byte values (the value is in the key's item). */
struct map_entry {
	uint64_t key;
	uint64_t val;
};
_Static_assert(sizeof(struct map_entry) == 16, "map entry");

/* A leaf's head (L2): its order line and its probe line. */
struct map_leaf_head {
	uint8_t order[MAP_LEAF_SLOTS];  /* slots by increasing key */
	uint8_t reserved0;
	uint32_t magic;                 /* CONT_MAGIC_MAP_LEAF */
	uint8_t count;                  /* entries, 0..MAP_LEAF_SLOTS */
	uint8_t reserved1[3];
	uint64_t used;                  /* bit s: slot s holds an entry */
	uint8_t fp[MAP_LEAF_SLOTS];     /* fp[s]: slot s's key's fingerprint */
	uint8_t reserved2;
};
_Static_assert(offsetof(struct map_leaf_head, magic) == 48,
               "leaf probe line");
_Static_assert(sizeof(struct map_leaf_head) == 112, "leaf head: two lines");

/* The bytes of a leaf's probe line, from its magic word. */
#define MAP_LEAF_PROBE_OFF offsetof(struct map_leaf_head, magic)
#define MAP_LEAF_PROBE_BYTES \
	(sizeof(struct map_leaf_head) - MAP_LEAF_PROBE_OFF)

struct map_leaf {
	struct map_leaf_head hd;
	struct map_entry e[MAP_LEAF_SLOTS];
	uint64_t next, prev;            /* neighbours in key order, 0: none */
};
_Static_assert(offsetof(struct map_leaf, e) == 112, "leaf entries offset");
_Static_assert(offsetof(struct map_leaf, next) == 864, "leaf links");
_Static_assert(sizeof(struct map_leaf) == 880, "leaf size");
_Static_assert(MAP_LEAF_SLOTS <= 64, "used is one word");

struct map_inner {
	uint64_t reserved[6];
	uint32_t magic;                 /* CONT_MAGIC_MAP_INNER */
	uint32_t n;                     /* children, 1..MAP_FANOUT */
	uint64_t key[MAP_FANOUT - 1];   /* key[i]: between child i and i+1;
	                                 * key[n - 1 ..] are zero */
	uint64_t child[MAP_FANOUT];
	uint64_t cnt[MAP_FANOUT];       /* entries under child[i] (L4) */
};
_Static_assert(offsetof(struct map_inner, magic) == 48, "inner magic");
_Static_assert(offsetof(struct map_inner, key) == 56, "inner keys");
_Static_assert(offsetof(struct map_inner, child) == 304, "inner children");
_Static_assert(offsetof(struct map_inner, cnt) == 560, "inner counts");
_Static_assert(sizeof(struct map_inner) == 816, "inner size");

/* An item: a key (BYTES; SCORE: the double, then the member), then its
 * value (byte values of BYTES and SCORE keys); or a value alone (klen 0)
 * of a U64 or I64 key; or a separator (vlen 0). Immutable (L6). */
struct map_item {
	uint32_t klen;
	uint32_t vlen;
	uint8_t b[];
};
_Static_assert(sizeof(struct map_item) == 8, "item header");

#endif
