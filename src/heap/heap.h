/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * heap.h - the persistent, Hoard-like heap (seed 000 section 5).
 *
 * Layer: above region/, below tx/. The heap never issues a barrier itself
 * (except heap_alloc_internal, which tx/ calls to grow its logs, rarely):
 * reserving and releasing blocks touch DRAM only, and heap_apply() writes
 * and flushes persistent metadata for a committed allocation-log entry,
 * leaving the barrier to the caller's commit sequence.
 */
#ifndef PMTX_HEAP_H
#define PMTX_HEAP_H

#include "../region/region.h"

/* Set up DRAM state for r's heap; reads nothing persistent yet. */
int heap_create(pmtx_region *r);
/* Format a fresh heap (create only): all superblocks FREE, zero bitmaps. */
void heap_format(pmtx_region *r);
/* Rebuild the DRAM free lists from the persistent bitmaps. Run after
 * recovery. Fails with PMTX_E_CORRUPT on metadata that breaks H1-H3. */
int heap_rebuild(struct heap *h);
void heap_destroy(struct heap *h);

/* Reserve a block of at least n user bytes (DRAM only, no flush, no
 * barrier). *user_off is the user pointer's offset; *e is the allocation-
 * log entry that, applied after commit, makes the allocation durable. */
int heap_reserve(struct heap *h, size_t n, uint64_t *user_off,
                 struct pmtx_alog_entry *e);
/* Give back a reservation whose transaction did not commit. */
void heap_unreserve(struct heap *h, const struct pmtx_alog_entry *e);
/* Check that user_off is an allocated block and build its FREE entry. */
int heap_free_entry(struct heap *h, uint64_t user_off,
                    struct pmtx_alog_entry *e);
/* Write a committed entry into the persistent metadata (atomic RMW on the
 * bitmap word, plain 8-byte store for superblock info) and flush it.
 * Idempotent. Returns PMTX_E_CORRUPT for an entry that does not describe
 * a block (recovery reads entries from the region). */
int heap_apply(pmtx_region *r, const struct pmtx_alog_entry *e);
/* The stores of heap_apply(e), not flushed: words[0] and words[1] get
 * the addresses of the metadata words it wrote (words[1] NULL if only
 * one). For the twin runtime, which flushes them with its data. */
int heap_apply_unflushed(pmtx_region *r, const struct pmtx_alog_entry *e,
                         void *words[2]);
/* Flush again, without writing, the metadata that heap_apply(e) wrote
 * (another thread's barrier must cover it: redo-async truncation). */
void heap_flush_entry(pmtx_region *r, const struct pmtx_alog_entry *e);
/* After a committed FREE has been applied and persisted: make the block
 * available again in DRAM. */
void heap_release(struct heap *h, const struct pmtx_alog_entry *e);

/* A block for pmtx's own use (log chunks): whole superblocks, returned
 * with its metadata applied and persisted. The caller must link the block
 * into a descriptor's chain durably BEFORE calling heap_commit_internal()
 * so a crash between the two leaves it reachable (recovery re-applies). */
int heap_reserve_internal(struct heap *h, size_t n, uint64_t *off,
                          struct pmtx_alog_entry *e);
/* Note that off is an internal block found in a chain during recovery. */
int heap_adopt_internal(pmtx_region *r, uint64_t off, uint64_t size,
                        struct pmtx_alog_entry *e);
void heap_mark_internal(struct heap *h, uint64_t off);

/* The usable size of the user block at user_off; 0 if it is none (free,
 * not a block start, or one of pmtx's own log chunks). */
size_t heap_usable_size(struct heap *h, uint64_t user_off);
/* How many superblocks, from the one m describes on (left of them up to
 * the heap's end), hold allocated blocks by the persistent metadata alone
 * (layout.h H2), for code that reads it before the heap is built (twin
 * recovery): 0 for a free one, its run for a LARGE head, 1 for a SMALL
 * one with a bit set; left for an entry that is not valid, so that a
 * caller skips nothing on its word (heap_rebuild then reports it). */
uint64_t heap_meta_used(const struct pmtx_sb_meta *m, uint64_t left);
/* pmtx_heap_check, once no truncation is pending (pmtx.c). */
int heap_check(pmtx_region *r, pmtx_heap_stats *st);
/* The block that contains off, whether or not it is allocated: its object
 * header at *base, its end at *end; PMTX_E_RANGE outside any small or
 * large block. */
int heap_object_span(struct heap *h, uint64_t off, uint64_t *base,
                     uint64_t *end);

#endif
