/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * overlay.h - the writes SQLite has made to a database file since its last
 * commit, kept in DRAM as whole chunks (PSQ_CHUNK bytes) keyed by chunk
 * number. Not persistent: a crash drops it, which is what a crash before
 * the commit point must do. No locking: the owner (struct psq_db) holds
 * its write lock around every call.
 */
#ifndef PSQ_OVERLAY_H
#define PSQ_OVERLAY_H

#include <stddef.h>
#include <stdint.h>

struct ov_slot {
	uint64_t key;  /* chunk number + 1; 0 = empty */
	char *buf;     /* PSQ_CHUNK bytes */
};

struct overlay {
	struct ov_slot *slot;
	size_t cap;    /* slots, a power of two (0 before the first chunk) */
	size_t count;  /* chunks held */
};

/* The largest table ov_clear keeps (slots); a larger one is freed. */
#define OV_KEEP_CAP 1024

void ov_init(struct overlay *ov);
void ov_free(struct overlay *ov);
/* Drop every chunk (after a commit, or when one failed); a table of more
 * than OV_KEEP_CAP slots goes too. */
void ov_clear(struct overlay *ov);
/* The chunk's buffer, or NULL. */
char *ov_find(const struct overlay *ov, uint64_t chunk);
/* The chunk's buffer, added if absent (*fresh = 1: its content is
 * unspecified and the caller fills it). 0 or ENOMEM. */
int ov_get(struct overlay *ov, uint64_t chunk, char **buf, int *fresh);
/* Drop the chunks numbered n and above (a truncation). */
void ov_drop_from(struct overlay *ov, uint64_t n);
/* The numbers of the chunks held, ascending, in a malloc'd array (*out;
 * NULL when empty). 0 or ENOMEM. */
int ov_sorted(const struct overlay *ov, uint64_t **out);

#endif /* PSQ_OVERLAY_H */
