/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * jlayout.h - the on-media format of a region's journal, "<region>.pmtxj"
 * (the journal backend, journal.c). The region file's own format is
 * region/layout.h; this file knows nothing of it but its uuid.
 *
 *   [0, 512)      header slot 0   struct pmtxj_hdr
 *   [512, 1024)   header slot 1   struct pmtxj_hdr
 *   [4096, cap)   records, back to back from PMTXJ_REC_OFF
 *
 * A record (struct pmtxj_rec, then nlines offsets padded to 64 bytes,
 * then nlines lines of 64 bytes) is what one barrier made durable: each
 * line's offset in the region file and its 64 bytes as they were when the
 * barrier ran.
 *
 * Invariants
 *  J1. The valid header slot with the higher epoch is the journal's
 *      header; a slot is valid when its magic, version and checksum
 *      match. A reset writes the other slot only (epoch + 1), so a torn
 *      reset leaves the old slot valid.
 *  J2. The records of the journal are those of the header's epoch, with
 *      seq 0, 1, 2, ... from PMTXJ_REC_OFF, each ending where the next
 *      begins; the first record that fails its magic, epoch, seq, length
 *      or checksum ends the journal (a write that did not complete).
 *      Stale records of an older epoch can never pass as current ones.
 *  J3. Every offset of a record that passes its checksum is validated
 *      (line aligned, inside the region file); one that is not makes the
 *      journal corrupt: it is refused, never applied.
 *  J4. The journal is bound to one region by the region's uuid; a
 *      journal with another uuid is refused, never applied, unless it
 *      holds no record (then it is nobody's, and dropped).
 *  J5. Every change to this format bumps PMTXJ_VERSION.
 */
#ifndef PMTX_JLAYOUT_H
#define PMTX_JLAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* Magics, and checksum seeds: one per kind of structure, as in layout.h. */
#define PMTXJ_MAGIC 0x4c4e524a58544d50ull     /* "PMTXJRNL" */
#define PMTXJ_REC_MAGIC 0x434552584a544d50ull /* "PMTJXREC" */
#define PMTXJ_CSUM_SEED_HDR 0x6864725f6a78746dull
#define PMTXJ_CSUM_SEED_REC 0x6365725f6a78746dull

#define PMTXJ_VERSION 1u
#define PMTXJ_SLOT_SIZE 512u
#define PMTXJ_REC_OFF 4096u
#define PMTXJ_LINE 64u
#define PMTXJ_MIN_CAP (64u * 1024u)

struct pmtxj_hdr {
	uint64_t magic;       /* PMTXJ_MAGIC */
	uint32_t version;     /* PMTXJ_VERSION */
	uint32_t slot_size;   /* PMTXJ_SLOT_SIZE */
	uint8_t uuid[16];     /* the region's (hdr.uuid) */
	uint64_t epoch;       /* records of this epoch are the journal */
	uint64_t capacity;    /* bytes of the journal file */
	uint64_t reserved[2]; /* zero */
	uint64_t checksum;    /* over the bytes before it, PMTXJ_CSUM_SEED_HDR */
};
_Static_assert(sizeof(struct pmtxj_hdr) == 72, "journal header size");
_Static_assert(offsetof(struct pmtxj_hdr, epoch) == 32, "journal epoch");
_Static_assert(offsetof(struct pmtxj_hdr, checksum) == 64,
               "journal header checksum");
_Static_assert(sizeof(struct pmtxj_hdr) <= PMTXJ_SLOT_SIZE,
               "a header fits its slot");

struct pmtxj_rec {
	uint64_t magic;    /* PMTXJ_REC_MAGIC */
	uint64_t epoch;    /* the header's epoch when written */
	uint64_t seq;      /* 0, 1, 2, ... in its epoch */
	uint64_t len;      /* bytes of the record: pmtxj_rec_len(nlines) */
	uint32_t nlines;   /* lines in the record, >= 1 */
	uint32_t flags;    /* zero */
	uint64_t reserved; /* zero */
	uint64_t pad;      /* zero */
	uint64_t checksum; /* over the whole record with this word zero,
	                    * PMTXJ_CSUM_SEED_REC */
};
_Static_assert(sizeof(struct pmtxj_rec) == 64, "journal record header");
_Static_assert(offsetof(struct pmtxj_rec, checksum) == 56,
               "journal record checksum");

/* Bytes of a record of n lines: header, offsets padded, lines. */
static inline uint64_t pmtxj_rec_len(uint64_t n)
{
	return sizeof(struct pmtxj_rec) + ((n * 8 + 63) & ~63ull) +
	       n * PMTXJ_LINE;
}

#endif
