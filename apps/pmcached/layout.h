/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * layout.h - pmcached's persistent format: everything the cache holds,
 * inside one pmtx region whose layout name is MC_LAYOUT (so a region of
 * another application is refused by name, and a pmcached region by any
 * other application).
 *
 *   root (struct mc_root)   format, generation, the hash table, the LRU
 *                           lists with their counts, flush_all's cutoff,
 *                           the pending-reclamation lists
 *   table                   a heap block of 2^hashpower bucket offsets;
 *                           during an expansion also old_table
 *   items (struct mc_item)  one heap block each: header, key, value
 *
 * Rules (pmtx's layout.h rules 1-7 hold here too)
 *  L1. Persistent pointers are pmtx offsets from the region start (base +
 *      offset, not self-relative: seed 001 lesson 5). A struct copy is
 *      therefore still correct, and no offset is ever turned into a
 *      pointer without pmtx_ptr() and a size check (mc_item_at()).
 *  L2. Every field is changed inside a pmtx transaction, except
 *      (a) the fields of an item that no table, LRU or pending list
 *          reaches yet (a fresh block: naked stores, then pmtx_flush
 *          before the transaction that links it commits; lesson 6), and
 *      (b) refgen and refcount, which are semantically nonpersistent
 *          (lesson 8): their value after a restart is meaningless, and an
 *          item whose refgen differs from the running generation has no
 *          references. They are never flushed.
 *      (c) atime and fetched, an item's last access and whether it was
 *          read since stored (meta mg l and h, me), written by every read
 *          without a transaction (so that a read stays a read: memcached
 *          keeps them in DRAM). Each is one aligned store under the
 *          item's stripe lock, never flushed: after a restart each holds
 *          its last value or an older one that reached the media (kill
 *          -9 on the hardware backend keeps the last: the memory is the
 *          file), and is read validated (items.c I8), so that no value
 *          can mislead.
 *  L3. An item is reachable from exactly one place: a hash chain (and
 *      then also its LRU list) or a pending-reclamation list. Every
 *      allocated item block is reachable (no leak after any crash).
 *  L4. Format changes bump MC_FORMAT_MAJOR (incompatible) or the minor.
 *      A region of another major is refused, never converted
 *      (restart.c R1): the cache is started anew in another file.
 *      History: 1.0 the first; 2.0 the meta protocol's item state
 *      (iflags, atime, fetched; the item header grew from 80 to 96
 *      bytes and slot became one byte).
 */
#ifndef MC_LAYOUT_H
#define MC_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include <pmtx.h>

#define MC_LAYOUT "pmcached"
#define MC_MAGIC 0x4448434143504d50ull /* "PMCACHED" */
#define MC_FORMAT_MAJOR 2
#define MC_FORMAT_MINOR 0

#define MC_NLRU 16      /* LRU lists, by key hash */
#define MC_NPENDING 64  /* pending-reclamation lists, by worker slot */
#define MC_KEY_MAX 250
#define MC_HASHPOWER_MIN 2
#define MC_HASHPOWER_MAX 32

struct mc_lru {
	pmtx_off head, tail; /* most and least recently used item */
	uint64_t count;      /* items on the list */
	uint64_t bytes;      /* their block bytes (what -m limits) */
};
_Static_assert(sizeof(struct mc_lru) == 32, "lru size");

struct mc_root {
	uint64_t magic;          /* MC_MAGIC */
	uint16_t major, minor;   /* MC_FORMAT_* */
	uint32_t reserved0;
	uint64_t gen;            /* restart generation: +1 at every start */
	pmtx_off table;          /* 2^hashpower bucket offsets */
	uint64_t hashpower;
	pmtx_off old_table;      /* while expanding: the old buckets */
	uint64_t old_hashpower;
	uint64_t expand_next;    /* old buckets below this are migrated */
	int64_t oldest_live;     /* flush_all with a delay: items stored at
	                          * or before this time (seconds) are gone
	                          * once it has passed; 0 = none */
	uint64_t oldest_cas;     /* flush_all now: items whose cas is at most
	                          * this are gone (CAS values only grow,
	                          * across restarts too: items.c) */
	uint64_t reserved[6];
	struct mc_lru lru[MC_NLRU];
	pmtx_off pending[MC_NPENDING]; /* unlinked items still referenced */
};
_Static_assert(offsetof(struct mc_root, gen) == 16, "root gen");
_Static_assert(offsetof(struct mc_root, lru) == 128, "root lru");
_Static_assert(sizeof(struct mc_root) == 128 + 32 * MC_NLRU + 8 * MC_NPENDING,
               "root size");

enum mc_link {
	MC_LINK_NONE = 0,    /* fresh, not reachable yet */
	MC_LINK_TABLE = 1,   /* in a hash chain and an LRU list */
	MC_LINK_PENDING = 2, /* on a pending-reclamation list */
};

/* Bits of mc_item.iflags (persistent; values fixed, only appended):
 * memcached's ITEM_STALE, ITEM_TOKEN_SENT and ITEM_KEY_BINARY. */
enum mc_iflag {
	MC_IF_STALE = 1,      /* invalidated (md I, ms I): served marked X */
	MC_IF_TOKEN_SENT = 2, /* a client won the right to recache it (W);
	                       * later ones are told Z */
	MC_IF_KEY_BINARY = 4, /* stored under a base64 (b) key: k returns it
	                       * in base64 */
	MC_IF_ALL = 7,
};

struct mc_item {
	pmtx_off h_next;     /* next in the hash chain */
	pmtx_off prev, next; /* LRU list, or pending list (doubly linked) */
	uint64_t cas;
	int64_t exptime;     /* absolute, seconds since the epoch; 0 never */
	int64_t time;        /* last stored or bumped (seconds) */
	uint32_t flags;      /* the client's flags */
	uint32_t nkey;
	uint32_t nbytes;     /* value bytes */
	uint8_t lru;         /* which LRU list (L3) */
	uint8_t link;        /* enum mc_link */
	uint8_t slot;        /* pending list, while MC_LINK_PENDING */
	uint8_t iflags;      /* enum mc_iflag */
	uint64_t refgen;     /* nonpersistent (L2b): generation of refcount */
	uint64_t refcount;   /* nonpersistent (L2b): live references */
	int64_t atime;       /* naked (L2c): last read (seconds) */
	uint8_t fetched;     /* naked (L2c): read since stored (0 or 1) */
	uint8_t reserved[7]; /* zero */
	/* key (nkey bytes), then value (nbytes bytes) */
};
_Static_assert(sizeof(struct mc_item) == 96, "item header size");
_Static_assert(offsetof(struct mc_item, iflags) == 63, "item iflags");
_Static_assert(offsetof(struct mc_item, refgen) == 64,
               "nonpersistent fields share one line, after the rest");
_Static_assert(MC_NPENDING <= 256, "slot is one byte");

static inline size_t mc_item_bytes(size_t nkey, size_t nbytes)
{
	return sizeof(struct mc_item) + nkey + nbytes;
}

#endif
