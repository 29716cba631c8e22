/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * layout.h - the persistent format of a pmtx region. Every structure that
 * lives in a region file is declared here and nowhere else.
 *
 * Region file (all offsets are from the start of the file):
 *
 *   0             struct pmtx_hdr            4 KiB, immutable after create
 *   rstate_off    struct pmtx_rstate         the region's mutable state
 *   desc_off      struct pmtx_desc[ndesc]    transaction descriptors
 *   log0_off      per descriptor: first log chunk (log0_size bytes) then
 *                 first allocation-log chunk (alog0_size bytes)
 *   root_off      struct pmtx_objhdr + root object (root_size bytes)
 *   meta_off      struct pmtx_sb_meta[max_nsb]  heap metadata, room for
 *                 the largest heap the region may grow to
 *   heap_off      rstate.nsb superblocks of PMTX_SB_SIZE bytes (nsb at
 *                 create; up to max_nsb as the region grows)
 *   twin_off      twin regions only (PMTX_FEAT_INCOMPAT_TWIN): the back
 *                 copy of the mirrored area [root_off, twin_off), the same
 *                 length again, so that byte root_off + x of the region has
 *                 its back copy at twin_off + x (tx/twin.c)
 *   seal_off      sealed twin regions only (PMTX_FEAT_INCOMPAT_TWIN_SEAL,
 *                 right after the back copy): struct pmtx_twin_seal, the
 *                 list of lines of the last small transaction that
 *                 committed by its seal (PMTX_TWIN_SEAL_SIZE bytes)
 *
 * The file is as long as the heap in use: heap_off + rstate.nsb superblocks
 * (or exactly size, for a region that never grew). A region that grows
 * extends the file first, makes the new length durable, then stores the
 * new rstate.nsb (one 8-byte word): a crash leaves the old heap or the new
 * one, and a file longer than rstate.nsb says is legal (its tail is unused
 * until the next growth). Heap metadata of superblocks beyond rstate.nsb
 * is zero (FREE) and is never read by open.
 *
 * Rules
 *  1. Persistent memory holds offsets from the region start, never virtual
 *     addresses. Offset 0 is null (it is the header, never an object).
 *  2. Every offset read from a region is validated (range, alignment, kind)
 *     before it is followed; failure is PMTX_E_CORRUPT, never a crash.
 *  3. Persisted enum values are fixed and only ever appended.
 *  4. Incompatible changes bump PMTX_FORMAT_MAJOR; compatible additions bump
 *     the minor and may set a compat feature bit. Reserved fields are zero.
 *  5. The header is written once, at create, with its checksum last; it is
 *     never modified afterwards, so it can never be torn by a crash.
 *  6. Every field that is updated after create and must never be seen half
 *     written is a naturally aligned 8-byte word (x86 persists aligned
 *     8-byte stores atomically).
 *  7. Every change to what this file describes, or to what a field means
 *     or covers, bumps the format version, and the history below says
 *     what each version means. A build opens its own major version only;
 *     anything else is refused with PMTX_E_BAD_VERSION, never misread.
 *
 * Format versions
 *  1.0  The first format. Never released; refused by this build.
 *  2.0  Regions that grow (hdr.max_size, max_nsb, rstate_off; struct
 *       pmtx_rstate; heap metadata sized for max_nsb). Also, against 1.0:
 *       a redo COMMIT's batch checksum covers the transaction's
 *       allocation-log entries; undo stores COMMITTED in statever at
 *       commit; pmtx_desc.log_tail is set at create and never maintained.
 *  3.0  A redo record's payload is a list of entries (PMTX_RE_*), each the
 *       new contents of one byte range, instead of the contents of the
 *       one range at rec.off; rec.off holds the number of entries.
 *  3.1  hdr.default_runtime may be PMTX_RT_AUTO (5). A 3.0 build refuses
 *       such a region as corrupt; 3.1 opens every 3.0 region.
 *  3.2  Twin regions: feature PMTX_FEAT_INCOMPAT_TWIN, hdr.twin_off (the
 *       back copy) and rstate.twin (the twin runtime's state word);
 *       hdr.default_runtime PMTX_RT_TWIN (6), in twin regions only. Both
 *       new words were reserved (zero) before, and stay zero in a region
 *       without the feature, so 3.1 builds open every 3.2 region that is
 *       not a twin region and refuse twin regions (unknown feature).
 *  3.3  Sealed twin regions: feature PMTX_FEAT_INCOMPAT_TWIN_SEAL (set
 *       with PMTX_FEAT_INCOMPAT_TWIN in every twin region a 3.3 build
 *       creates), hdr.seal_off and struct pmtx_twin_seal after the back
 *       copy. A small twin transaction commits when its seal and its data
 *       are durable, with no COPYING state (tx/twin.c), so a MUTATING
 *       word no longer always means "restore the back copy": a 3.2 build
 *       would undo such commits, and refuses these regions by the
 *       feature bit. A 3.3 build opens 3.2 twin regions (no seal) and
 *       commits every transaction there with COPYING, as 3.2 did.
 *  3.4  rstate.journal (G3), reserved (zero) before: the journal
 *       backend's mark that the file's newest commits are in its journal,
 *       kept in regions with feature PMTX_FEAT_INCOMPAT_JOURNAL_MARK (set
 *       in every region a 3.4 build creates). A 3.3 build refuses those
 *       regions by the feature bit, before it would replay and remove
 *       their journal and then refuse the mark; a 3.4 build opens 3.3
 *       regions and keeps no mark in them (the word stays zero).
 *  3.5  Twin regions that reseal: feature PMTX_FEAT_INCOMPAT_TWIN_RESEAL
 *       (set with the two twin bits in every twin region a 3.5 build
 *       creates, unless PMTX_CREATE_TWIN_FAST_RESTART). A small
 *       transaction that follows a small commit stores in place under the
 *       MUTATING word and the seal that commit left, without a new
 *       MUTATING (tx/twin.c TW13), so several seals share a seq, and an
 *       accepted seal no longer means that the lines it does not list
 *       hold committed bytes: recovery then copies the back copy over
 *       every other line that differs. A region without the bit (3.3,
 *       3.4, or made with that flag) stores MUTATING before every
 *       transaction, as before, and its recovery copies only the sealed
 *       lines. A 3.4 build would keep such a transaction's stores, and
 *       refuses these regions by the bit. Recovery passes in every twin
 *       region of a 3.5 build cover the root, the heap metadata and the
 *       superblocks in use only (tx/twin.c TW14).
 *  3.6  rstate.open (G4), reserved (zero) before: 1 while a process has
 *       the region open. Open sweeps what recovery reads into durability
 *       first when it finds 1 (tx/recovery.c R4). A 3.5 build refuses a
 *       region that a 3.6 process had open when it died (a reserved word
 *       is not zero), and opens one closed cleanly; a 3.6 build opens
 *       3.5 regions, and takes one closed by a 3.5 build as closed
 *       cleanly (it cannot know otherwise).
 */
#ifndef PMTX_LAYOUT_H
#define PMTX_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* "PMTXRGN1" read as a little-endian word; a big-endian reader sees the
 * bytes reversed, so a byte-order mismatch shows as a bad magic. */
#define PMTX_MAGIC 0x314e475258544d50ull
#define PMTX_FORMAT_MAJOR 3
#define PMTX_FORMAT_MINOR 6
/* Feature masks: bits this build understands. */
#define PMTX_FEAT_COMPAT_SUPPORTED 0ull
/* The region keeps a back copy of its data (twin runtime, 3.2). */
#define PMTX_FEAT_INCOMPAT_TWIN 1ull
/* The region state's journal mark (G3) is kept (3.4: every region a 3.4
 * build creates). */
#define PMTX_FEAT_INCOMPAT_JOURNAL_MARK 4ull
/* ... and small transactions commit by a seal (twin runtime, 3.3). */
#define PMTX_FEAT_INCOMPAT_TWIN_SEAL 2ull
/* ... and one MUTATING word may serve several sealed transactions (3.5). */
#define PMTX_FEAT_INCOMPAT_TWIN_RESEAL 8ull
#define PMTX_FEAT_INCOMPAT_SUPPORTED                                         \
	(PMTX_FEAT_INCOMPAT_TWIN | PMTX_FEAT_INCOMPAT_TWIN_SEAL |                \
	 PMTX_FEAT_INCOMPAT_JOURNAL_MARK | PMTX_FEAT_INCOMPAT_TWIN_RESEAL)
#define PMTX_FEAT_RO_COMPAT_SUPPORTED 0ull

#define PMTX_HDR_SIZE 4096u
#define PMTX_LAYOUT_LEN 64u

/* Checksum seeds: one per kind of checksummed structure. */
#define PMTX_CSUM_SEED_HDR 0x6864725f706d7478ull
#define PMTX_CSUM_SEED_REC 0x7265635f706d7478ull
#define PMTX_CSUM_SEED_MARK 0x6d726b5f706d7478ull
#define PMTX_CSUM_SEED_SEAL 0x6c61735f706d7478ull

struct pmtx_hdr {
	uint64_t magic;            /* PMTX_MAGIC */
	uint16_t major;            /* PMTX_FORMAT_MAJOR */
	uint16_t minor;            /* PMTX_FORMAT_MINOR */
	uint32_t hdr_size;         /* PMTX_HDR_SIZE */
	uint64_t feat_compat;      /* unknown bits: ignore */
	uint64_t feat_incompat;    /* unknown bits: refuse to open */
	uint64_t feat_ro_compat;   /* unknown bits: refuse to open (no RO) */
	char layout[PMTX_LAYOUT_LEN]; /* NUL-terminated layout name */
	uint8_t uuid[16];
	uint64_t size;             /* region bytes at create (file size while
	                            * the region has not grown) */
	uint64_t create_time;      /* seconds since the epoch */
	uint64_t desc_off;
	uint32_t ndesc;
	uint32_t desc_size;        /* sizeof(struct pmtx_desc) */
	uint64_t log0_off;
	uint32_t log0_size;        /* bytes of each first log chunk */
	uint32_t alog0_size;       /* bytes of each first alloc-log chunk */
	uint64_t root_off;         /* offset of the root's object header */
	uint64_t root_size;        /* user bytes of the root */
	uint64_t meta_off;
	uint64_t heap_off;
	uint64_t nsb;              /* superblocks at create */
	uint32_t sb_size;          /* PMTX_SB_SIZE */
	uint32_t default_runtime;  /* pmtx_runtime */
	uint64_t max_size;         /* most bytes the region may grow to; ==
	                            * size for a region of fixed size */
	uint64_t max_nsb;          /* superblocks the metadata has room for */
	uint64_t rstate_off;       /* struct pmtx_rstate */
	uint64_t twin_off;         /* back copy (twin regions), else 0 */
	uint64_t seal_off;         /* seal (sealed twin regions), else 0 */
	uint64_t reserved[479];    /* must be zero */
	uint64_t checksum;         /* XXH3 of bytes [0, 4088) */
};
_Static_assert(sizeof(struct pmtx_hdr) == PMTX_HDR_SIZE, "hdr size");
_Static_assert(offsetof(struct pmtx_hdr, layout) == 40, "hdr layout");
_Static_assert(offsetof(struct pmtx_hdr, uuid) == 104, "hdr uuid");
_Static_assert(offsetof(struct pmtx_hdr, size) == 120, "hdr size");
_Static_assert(offsetof(struct pmtx_hdr, max_size) == 216, "hdr max_size");
_Static_assert(offsetof(struct pmtx_hdr, twin_off) == 240, "hdr twin_off");
_Static_assert(offsetof(struct pmtx_hdr, seal_off) == 248, "hdr seal_off");
_Static_assert(offsetof(struct pmtx_hdr, reserved) == 256, "hdr reserved");
_Static_assert(offsetof(struct pmtx_hdr, checksum) == PMTX_HDR_SIZE - 8,
               "checksum is the header's last word");

/* ---- the region's mutable state ----
 *  G1. nsb (superblocks in the heap) only grows, from hdr.nsb to at most
 *      hdr.max_nsb, and is stored only after the file holds that many
 *      superblocks durably (fdatasync of the extension, then the store,
 *      flush and barrier); open requires the file to be that long.
 *  G2. twin (twin regions only; zero otherwise) is the twin runtime's
 *      state word, PMTX_TW(seq, state): IDLE, MUTATING (the data area may
 *      hold uncommitted bytes: the back copy is the truth, unless the
 *      seal of transaction seq is accepted (S2): then the data area is)
 *      or COPYING (the data area is the truth: the back copy is being
 *      brought up to it). tx/twin.c says when each is stored.
 *  G3. journal (regions with PMTX_FEAT_INCOMPAT_JOURNAL_MARK; zero in
 *      others) is 1 while the file may lack commits that only its journal
 *      ("<file>.pmtxj", the journal backend) holds, else 0: written
 *      straight into the file, durably, by persist/journal.c (its
 *      invariant 9), set before the journal's first record and cleared
 *      once the file holds every commit. An open that finds it 1 and no
 *      journal refuses the region (PMTX_OPEN_FORGET_JOURNAL opens it as
 *      of its last checkpoint).
 *  G4. open is 1 from open until a clean close, else 0: a plain store,
 *      never flushed, set by pmtx_open before recovery and cleared by
 *      pmtx_close once everything it holds is durable. It only has to be
 *      seen by the next open after a process crash, which then finds
 *      what that process's cache still held visible and perhaps not
 *      durable; after a power failure the cache is gone, and a 1 that
 *      persisted only costs that sweep. Not kept by the journal backend
 *      (its mapping is private) or a private view. */
enum pmtx_twin_state {
	PMTX_TW_IDLE = 0,
	PMTX_TW_MUTATING = 1,
	PMTX_TW_COPYING = 2,
};
#define PMTX_TW(seq, st) (((uint64_t)(seq) << 8) | (uint64_t)(st))
#define PMTX_TW_STATE(w) ((unsigned)((w)&0xff))
#define PMTX_TW_SEQ(w) ((w) >> 8)

struct pmtx_rstate {
	uint64_t nsb;
	uint64_t twin;        /* G2 */
	uint64_t journal;     /* G3 */
	uint64_t open;        /* G4 */
	uint64_t reserved[4]; /* must be zero */
};
_Static_assert(sizeof(struct pmtx_rstate) == 64, "rstate size");
_Static_assert(offsetof(struct pmtx_rstate, twin) == 8, "rstate twin");
_Static_assert(offsetof(struct pmtx_rstate, journal) == 16,
               "rstate journal");
_Static_assert(offsetof(struct pmtx_rstate, open) == 24, "rstate open");
#define PMTX_RSTATE_SPACE 256u /* bytes before the descriptors */

/* ---- the twin seal (3.3) ----
 *  S1. The seal of a transaction is its sequence number (the one in the
 *      MUTATING word it stored under; in a 3.5 region several
 *      transactions may share one, tx/twin.c TW13), the count and list
 *      of the lines it stored to (in the order of their first store),
 *      and one check word: XXH3 chained
 *      over seq, n, the list and then the contents of each listed line
 *      as the transaction left it (tx/twin.c seal_check).
 *  S2. Recovery reads a seal only when its seq equals the state word's;
 *      it accepts it only if n <= PMTX_TWIN_SEAL_LINES, every listed
 *      offset is a line of the mirrored area, and the check word matches
 *      the data area's contents; a seal it does not accept is ignored,
 *      never followed.
 *  S3. The area is PMTX_TWIN_SEAL_SIZE bytes: the 64-byte head, then the
 *      line offsets. */
#define PMTX_TWIN_SEAL_SIZE 4096u
struct pmtx_twin_seal {
	uint64_t seq;         /* the transaction's sequence number */
	uint64_t n;           /* lines listed */
	uint64_t check;       /* S1 */
	uint64_t reserved[5]; /* zero */
	uint64_t line[];      /* region offsets, multiples of 64 */
};
_Static_assert(sizeof(struct pmtx_twin_seal) == 64, "seal head");
_Static_assert(offsetof(struct pmtx_twin_seal, check) == 16, "seal check");
#define PMTX_TWIN_SEAL_LINES                                                 \
	((PMTX_TWIN_SEAL_SIZE - sizeof(struct pmtx_twin_seal)) / 8)

/* ---- transaction descriptors ---- */

/* Descriptor states (seed 000 section 4). Persisted: fixed values. */
enum pmtx_desc_state {
	PMTX_DS_IDLE = 0,
	PMTX_DS_RUNNING = 1,
	PMTX_DS_ABORTED = 2,
	PMTX_DS_COMMITTED = 3,
};

/* statever packs version, runtime and state into one atomic word:
 * bits 0-3 state, 4-7 runtime (pmtx_runtime), 8-63 version. */
#define PMTX_SV(ver, rt, st)                                                  \
	(((uint64_t)(ver) << 8) | ((uint64_t)(rt) << 4) | (uint64_t)(st))
#define PMTX_SV_STATE(sv) ((unsigned)((sv)&0xf))
#define PMTX_SV_RUNTIME(sv) ((unsigned)(((sv) >> 4) & 0xf))
#define PMTX_SV_VERSION(sv) ((sv) >> 8)

struct pmtx_desc {
	uint64_t statever;   /* PMTX_SV(version, runtime, state) */
	uint64_t log_tail;   /* set at format, not maintained: recovery
	                      * finds a log's end from its records */
	uint64_t log_head;   /* first log chunk (== this desc's log0) */
	uint64_t alog_head;  /* first alloc-log chunk (== this desc's alog0) */
	uint64_t reserved[28];
};
_Static_assert(sizeof(struct pmtx_desc) == 256, "desc size");
_Static_assert(offsetof(struct pmtx_desc, statever) == 0, "desc sv");
_Static_assert(offsetof(struct pmtx_desc, log_tail) == 8, "desc tail");

/* ---- log chunks (undo/redo records, alloc-log entries) ---- */

#define PMTX_CHUNK_MAGIC 0x4b4e484358544d50ull /* "PMTXCHNK" */

struct pmtx_chunk {
	uint64_t magic;    /* PMTX_CHUNK_MAGIC */
	uint64_t next;     /* offset of the next chunk, or 0 */
	uint64_t size;     /* bytes, this header included */
	uint64_t reserved[5];
	/* records follow, from offset 64 */
};
_Static_assert(sizeof(struct pmtx_chunk) == 64, "chunk header size");

/* A log record. Records start on 64-byte boundaries inside a chunk, so a
 * record of up to 64 bytes (an undo record of up to 16 payload bytes) costs
 * one flushed line. Layout: header, payload (len bytes, padded to 8), then
 * the 8-byte check word.
 *
 * The check word is either the XXH3 checksum of header + payload (seed
 * PMTX_CSUM_SEED_REC; flag PMTX_RF_CSUM), or, for records too big to be
 * worth checksumming, a mark (XXH3 of the header alone, seed
 * PMTX_CSUM_SEED_MARK; flag PMTX_RF_MARK) written only after the header
 * and payload are durable, or nothing (PMTX_RF_BATCH): a redo COMMIT
 * record's payload then holds {CSN, XXH3 of every record before it, each
 * record's whole 64-byte-aligned span, in log order, followed by the
 * transaction's allocation-log entries}, and the records count only if
 * that checksum matches. */
#define PMTX_REC_PROLOG 0x474f4c5258544d50ull /* "PMTXRLOG" */

enum pmtx_rec_type {
	PMTX_REC_UNDO = 1,   /* off: target; payload: old contents */
	PMTX_REC_COMMIT = 2, /* off: number of alloc-log entries */
	PMTX_REC_REDO = 3,   /* off: number of entries; payload: entries */
	PMTX_REC_COW = 4,    /* off: a wrapper in the write set; no payload */
};

/* A redo record's payload: entries one after another, each an 8-byte
 * word PMTX_RE_WORD(off, len) followed by the len new bytes for
 * [off, off + len), padded with zeros to a multiple of 8. */
#define PMTX_RE_OFF_BITS 48
#define PMTX_RE_MAX_LEN 4096u /* bytes of one entry, at most */
#define PMTX_RE_WORD(off, len) ((uint64_t)(off) | ((uint64_t)(len) << 48))
#define PMTX_RE_OFF(w) ((w) & ((1ull << PMTX_RE_OFF_BITS) - 1))
#define PMTX_RE_LEN(w) ((size_t)((w) >> PMTX_RE_OFF_BITS))
#define PMTX_RE_BYTES(len) (8u + (((len) + 7u) & ~(size_t)7u))

#define PMTX_RF_CSUM 1u
#define PMTX_RF_MARK 2u
#define PMTX_RF_BATCH 3u /* check word 0: the COMMIT record's batch checksum
                          * covers the record (redo) */

struct pmtx_rec {
	uint64_t prolog;   /* PMTX_REC_PROLOG: the seed's prolog sentinel */
	uint64_t version;  /* the transaction's version */
	uint32_t seq;      /* 0, 1, 2, ... within the transaction */
	uint16_t type;     /* enum pmtx_rec_type */
	uint16_t flags;    /* PMTX_RF_* */
	uint32_t len;      /* payload bytes */
	uint32_t reserved;
	uint64_t off;      /* see enum pmtx_rec_type */
};
_Static_assert(sizeof(struct pmtx_rec) == 40, "record header size");
#define PMTX_REC_ALIGN 64u
/* Bytes a record with a payload of len bytes occupies (before padding to
 * PMTX_REC_ALIGN). */
#define PMTX_REC_BYTES(len) (sizeof(struct pmtx_rec) + (((len) + 7u) & ~7u) + 8u)

/* Allocation-log entry: one per pmtx_alloc/pmtx_free of a transaction.
 * off is the block's offset (its object header); info is the value the
 * superblock metadata gets: see PMTX_AE_*. */
struct pmtx_alog_entry {
	uint64_t off;
	uint64_t info; /* bits 0-7 op, 8-15 size class, 32-63 large run */
};
_Static_assert(sizeof(struct pmtx_alog_entry) == 16, "alog entry size");
enum pmtx_alog_op {
	PMTX_AE_ALLOC = 1,
	PMTX_AE_FREE = 2,
};
#define PMTX_AE_INFO(op, cls, run)                                            \
	((uint64_t)(op) | ((uint64_t)(cls) << 8) | ((uint64_t)(run) << 32))
#define PMTX_AE_OP(i) ((unsigned)((i)&0xff))
#define PMTX_AE_CLASS(i) ((unsigned)(((i) >> 8) & 0xff))
#define PMTX_AE_RUN(i) ((uint32_t)((i) >> 32))

/* ---- heap ---- */

#define PMTX_SB_SIZE (64u * 1024u)
#define PMTX_MIN_BLOCK 32u
#define PMTX_SB_BITS (PMTX_SB_SIZE / PMTX_MIN_BLOCK) /* 2048 */

/* Superblock kinds. Persisted: fixed values. */
enum pmtx_sb_kind {
	PMTX_SB_FREE = 0,
	PMTX_SB_SMALL = 1, /* blocks of one size class; bitmap valid */
	PMTX_SB_LARGE = 2, /* head of an allocated run of `run` superblocks */
};

#define PMTX_SB_INFO(kind, cls, run)                                          \
	((uint64_t)(kind) | ((uint64_t)(cls) << 8) | ((uint64_t)(run) << 32))
#define PMTX_SB_KIND(i) ((unsigned)((i)&0xff))
#define PMTX_SB_CLASS(i) ((unsigned)(((i) >> 8) & 0xff))
#define PMTX_SB_RUN(i) ((uint32_t)((i) >> 32))

/* Persistent metadata of one superblock, kept out of band so that no user
 * store can clobber it.
 *  H1. bitmap bit i set <=> block i is allocated by a committed
 *      transaction; only SMALL superblocks ever have bits set.
 *  H2. A SMALL superblock whose bitmap is all zero is free, whatever its
 *      class; a FREE one is free. Superblocks covered by a LARGE head's run
 *      are in use, whatever their own entries say.
 *  H3. info changes only when the superblock holds no allocated block, or
 *      when a committed allocation log is applied (post-commit or in
 *      recovery), which rewrites the same value it logged. */
struct pmtx_sb_meta {
	uint64_t info;        /* PMTX_SB_INFO(kind, class, run) */
	uint64_t reserved[7];
	uint64_t bitmap[PMTX_SB_BITS / 64];
};
_Static_assert(sizeof(struct pmtx_sb_meta) == 320, "sb meta size");
_Static_assert(offsetof(struct pmtx_sb_meta, bitmap) == 64,
               "bitmap starts on its own line");

/* A copy-on-write wrapper (seed 000 section 4.3): a heap block holding
 * the offsets of the payload copies of one object.
 *  K1. cur changes only after the writing transaction's COMMIT is durable
 *      (cleanup), so an uncommitted writer leaves cur as it was.
 *  K2. next and old_backup are durable before COMMIT; while the writer's
 *      cleanup is unfinished, cur == old_backup means "not swapped yet".
 *  K3. writer names a live transaction only if that transaction is
 *      running in DRAM now; after a crash every writer field is stale. */
struct pmtx_cow_wrapper {
	uint64_t cur;        /* committed payload (user offset) */
	uint64_t next;       /* the writer's new payload, or stale */
	uint64_t old_backup; /* payload being replaced, or stale */
	uint64_t writer;     /* (descriptor + 1) << 48 | version, or stale */
};
_Static_assert(sizeof(struct pmtx_cow_wrapper) == 32, "cow wrapper size");

/* Header in front of every heap block and of the root. Used by the redo
 * runtime for its writers bitmap (seed 000 section 4.2); zero otherwise. */
struct pmtx_objhdr {
	uint64_t writers;
	uint64_t gen;
};
_Static_assert(sizeof(struct pmtx_objhdr) == 16, "object header size");

#endif
