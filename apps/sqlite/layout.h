/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * layout.h - the persistent format of a SQLite database file kept in a
 * pmtx region (layout name PSQ_LAYOUT, so a region of another application
 * is refused by name, and this one by any other application).
 *
 *   root (struct psq_root)  format, the file's size in bytes, the chunk
 *                           directory
 *   directory               a heap block of dir_cap offsets: entry i names
 *                           the chunk that holds bytes [i*4096, i*4096+4096)
 *                           of the file, or 0 (those bytes are zero)
 *   chunks                  one heap block each, PSQ_CHUNK bytes of file
 *
 * The file is byte-addressable: SQLite's pages (512 to 65,536 bytes) map
 * onto whole chunks or parts of one, and a read of any range is a copy.
 *
 * Rules (pmtx's layout.h rules hold here too)
 *  S1. dir == 0 exactly when dir_cap == 0; otherwise dir is an allocated
 *      block of at least dir_cap * 8 bytes.
 *  S2. size <= dir_cap * PSQ_CHUNK, and every entry at or past
 *      ceil(size / PSQ_CHUNK) is 0.
 *  S3. Every non-zero entry is a distinct allocated block of at least
 *      PSQ_CHUNK usable bytes, other than the directory. The directory and
 *      the chunks are every block the database owns (no leak).
 *  S4. The bytes of the last chunk past size are zero, so a file that
 *      grows again reads zeros there, as a file system gives.
 *  S5. Every change to the root, the directory or a chunk that is
 *      reachable is made inside a pmtx transaction, one per SQLite commit
 *      (dbfile.c). The only naked stores go to blocks allocated by the
 *      running transaction (a new chunk, a new directory), which are
 *      flushed before it commits.
 *  S6. Every offset read from the region is validated when the region is
 *      opened (dbfile.c, db_validate), before SQLite reads a byte.
 *  S7. Format changes bump PSQ_FORMAT_MAJOR (incompatible) or the minor.
 */
#ifndef PSQ_LAYOUT_H
#define PSQ_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include <pmtx.h>

#define PSQ_LAYOUT "pmtx-sqlite"
#define PSQ_MAGIC 0x314c515358544d50ull /* "PMTXSQL1" */
#define PSQ_FORMAT_MAJOR 1
#define PSQ_FORMAT_MINOR 0
#define PSQ_CHUNK_SHIFT 12
#define PSQ_CHUNK (1u << PSQ_CHUNK_SHIFT)

struct psq_root {
	uint64_t magic;        /* PSQ_MAGIC; 0 in a region not yet set up */
	uint16_t major, minor; /* PSQ_FORMAT_* */
	uint32_t chunk_shift;  /* PSQ_CHUNK_SHIFT */
	uint64_t size;         /* bytes of the database file */
	pmtx_off dir;          /* chunk directory (S1) */
	uint64_t dir_cap;      /* its entries */
	uint64_t reserved[3];  /* must be zero */
};
_Static_assert(offsetof(struct psq_root, major) == 8, "root major");
_Static_assert(offsetof(struct psq_root, size) == 16, "root size");
_Static_assert(offsetof(struct psq_root, dir) == 24, "root dir");
_Static_assert(offsetof(struct psq_root, dir_cap) == 32, "root dir_cap");
_Static_assert(sizeof(struct psq_root) == 64, "root is one cache line");

#endif /* PSQ_LAYOUT_H */
