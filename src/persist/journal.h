/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * journal.h - the journal backend (journal.c): a region file mapped
 * MAP_PRIVATE whose barriers append the flushed lines to
 * "<region>.pmtxj" (format: jlayout.h).
 *
 * Layer: persist/. It knows a region only as a file, a mapping and a
 * uuid; region.c calls journal_recover before it validates the file and
 * journal_attach once the file is mapped.
 */
#ifndef PMTX_JOURNAL_H
#define PMTX_JOURNAL_H

#include <sys/types.h>

#include "persist.h"

struct journal;

/* Who issues a write or an fdatasync (for tests' I/O tables). */
enum journal_site {
	JS_W_RECORD,        /* a barrier's record, appended */
	JS_W_HEADER,        /* a header slot */
	JS_W_ZERO,          /* creation: zeros over the journal */
	JS_W_CKPT,          /* a checkpoint's pages, into the region file */
	JS_W_REPLAY,        /* replay's lines, into the region file */
	JS_S_COMMIT,        /* a durable barrier's sync of the journal */
	JS_S_CKPT_JOURNAL,  /* checkpoint: the journal, before any page */
	JS_S_CKPT_REGION,   /* checkpoint: the region file, before reset */
	JS_S_RESET,         /* the new epoch's header slot */
	JS_S_REPLAY_REGION, /* replay: the region file, before reset */
	JS_S_CREATE,        /* creation: the whole new journal */
	JS_W_MARK,          /* the region's mark word (journal_recover) */
	JS_S_MARK,          /* ... made durable */
	JS_NSITES
};

struct journal_io {
	ssize_t (*pwrite)(int fd, const void *b, size_t n, off_t off,
	                  enum journal_site s);
	int (*sync)(int fd, enum journal_site s); /* 0, or -1 and errno */
	/* Give back [a, a + n) of the mapping (journal.c invariant 10),
	 * inside the write-protected window; NULL: madvise(MADV_DONTNEED).
	 * 0, or -1 and errno. */
	int (*drop)(void *a, size_t n);
};
/* Replace the I/O table (NULL: the system calls). For tests. */
void journal_set_io(const struct journal_io *io);
const char *journal_site_name(enum journal_site s);

enum journal_mode {
	JOURNAL_KEEP,     /* the journal backend: keep it open (if any) */
	JOURNAL_CREATE,   /* the same, made first if missing */
	JOURNAL_REMOVE,   /* another backend: replay, then remove it */
	JOURNAL_READONLY, /* a private view: refuse one that holds records */
};

/* Where the region file says whether its journal is due: mark_off, the
 * offset of an 8-byte word of the file, nonzero while its newest commits
 * may be in its journal (0: the region has no such word). forget: open a
 * region whose journal is due and missing as of its last checkpoint,
 * instead of refusing it. */
struct journal_mark {
	uint64_t off;
	int forget;
};

/* Replay "<region_path>.pmtxj" into the region file rfd, if there is
 * one, make the file durable and reset the journal (jlayout.h J1-J4).
 * KEEP and CREATE return the open journal in *keep for journal_attach
 * (KEEP: NULL if there is none), the mark set first; REMOVE clears the
 * mark before it removes the journal. A journal the mark says is due and
 * that is missing is refused (PMTX_E_CORRUPT) unless mk->forget. */
int journal_recover(int rfd, const char *region_path, const uint8_t uuid[16],
                    enum journal_mode mode, const struct journal_mark *mk,
                    struct journal **keep);
/* p (the journal backend's ops, base and len set) uses j from now on;
 * map_len: the address space reserved for the region. */
int journal_attach(struct persist *p, struct journal *j, uint64_t map_len);
/* A journal recovered but never attached. */
void journal_discard(struct journal *j);
/* Remove "<region_path>.pmtxj" unless a region holds it open (a create
 * at a path where no region is: a journal left there is nobody's). */
void journal_forget(const char *region_path);
/* Every page this process changed into the region file, durably, then
 * the journal reset (a checkpoint of everything), the pages given back. */
int journal_write_all_pages(struct persist *p);

extern const persist_ops journal_ops;

#endif
