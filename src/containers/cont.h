/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cont.h - what the containers share: the context of one operation (its
 * transaction and how it reads), checked access to blocks, and the header
 * every container's first block starts with.
 *
 * Layer: above tx/ (it calls only the public transaction API, and reads
 * one field of the running transaction to know whether plain loads see
 * its writes). Each container (hmap.c, map.c, list.c, str.c) keeps its
 * persistent structs in a layout header of its own (*_layout.h).
 *
 * Invariants (every container file relies on them)
 *  C1. Reads. A field that the running transaction may have written is
 *      read with cx_load/cx_read: a plain load under undo and twin (they
 *      store in place) and under redo until the transaction has written
 *      (nothing to overlay), pmtx_read after (redo keeps its writes in
 *      DRAM until commit).
 *  C2. Writes to a block that is linked into a container (reachable from
 *      its header) go through cx_write / cx_put64 (pmtx_write), never a
 *      plain store. A fresh block (allocated in this transaction, not yet
 *      linked) is filled with plain stores and cx_flush before the store
 *      that links it, and then written through cx_write only (a plain
 *      store after a pmtx_write of the same bytes would be overwritten by
 *      a redo commit).
 *  C3. Every offset read from the region is checked before it is
 *      followed: cx_block checks alignment, bounds and the block's
 *      magic word (each node has one: at its start, or with cx_block_at
 *      in the line its search reads first, so that the check costs no
 *      line of its own); a loop over a chain is bounded by the
 *      container's count.
 *  C4. An operation that fails before its first write leaves the
 *      transaction as it was; one that fails after aborts it (cx_end),
 *      so a caller's commit can never persist half an operation.
 *  C5. Views (pmtx_containers.h) point into the region when the bytes in
 *      place are the ones the transaction sees: plain loads see its
 *      writes (C1), or it has not changed those bytes. Otherwise (redo,
 *      after it wrote them) they live only in its write set until
 *      commit, and cx_view copies them: into the handle's list of copies
 *      (struct cx_views). Copies are per thread: each records the thread
 *      that made it, and a write through the handle frees the writing
 *      thread's copies only (cx_views_drop), so a view lives until the
 *      thread that took it next writes the container through the handle
 *      (at least as long as the API says). Another thread's write leaves
 *      them: threads may write one handle at once (a striped hash map,
 *      hmap.c H4), and a reader's transaction may still be reading its
 *      copies. cx_views_fini frees every copy, a thread's that ended
 *      too, when the handle is closed. A container with no handle (a
 *      string) has its copy freed when the transaction ends
 *      (pmtx_defer).
 */
#ifndef PMTX_CONT_H
#define PMTX_CONT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "pmtx.h"
#include "pmtx_containers.h"
#include "../common/mutant.h"
#include "../common/util.h"

/* The first 16 bytes of every container's header block. */
struct cont_hdr {
	uint32_t magic;   /* CONT_MAGIC_* */
	uint16_t major;   /* PMTX_CONT_FORMAT_MAJOR */
	uint16_t minor;
	uint32_t flags;   /* the container's creation flags */
	uint32_t reserved;
};
_Static_assert(sizeof(struct cont_hdr) == 16, "container header");

/* Magic words: a container header, and each kind of node (C3). Fixed on
 * media: only ever appended. */
enum {
	CONT_MAGIC_HMAP = 0x504d484du, /* "MHMP" */
	CONT_MAGIC_MAP = 0x504d4254u,  /* "TBMP" */
	CONT_MAGIC_LIST = 0x504d4c53u, /* "SLMP" */
	CONT_MAGIC_MAP_LEAF = 0x4c454146u,
	CONT_MAGIC_MAP_INNER = 0x494e4e52u,
	CONT_MAGIC_LIST_CHUNK = 0x43484e4bu,
	CONT_MAGIC_HMAP_SEGTAB = 0x53454754u,
};

/* One operation: its region, transaction and how it reads (C1). */
struct cx {
	pmtx_region *r;
	char *base;       /* the region's first byte */
	const _Atomic size_t *size; /* the region's bytes in use: read at
	                   * each check, since the region may grow (by
	                   * this operation's allocations or another
	                   * thread's) while the operation runs */
	pmtx_tx *tx;      /* NULL: a read outside any transaction */
	int began;        /* cx_begin began (or joined) a level */
	int wrote;        /* a write or allocation was made */
	int in_place;     /* the runtime stores in place (undo, twin) */
	int overlay;      /* plain loads may miss the transaction's writes:
	                   * reads go through pmtx_read (C1) */
};

int cx_begun(struct cx *c, pmtx_region *r, pmtx_tx *tx);
/* Begin a writing operation: join tx (which must be this thread's
 * running transaction) or the running one, or begin one with rt.
 * PMTX_E_UNSUPPORTED under copy-on-write. Inlined, so that pmtx_begin's
 * call site (PMTX_RT_AUTO chooses a runtime per site) is the container
 * operation's, not one site for them all. */
static inline __attribute__((always_inline)) int
cx_begin(struct cx *c, pmtx_region *r, pmtx_tx *tx, pmtx_runtime rt)
{
	c->began = 0;
	if (!r)
		return PMTX_E_INVAL;
	if (tx && (tx != pmtx_tx_current() || pmtx_tx_region(tx) != r))
		return PMTX_E_TX_STATE;
	int rc = pmtx_begin(r, rt, &tx);
	return rc ? rc : cx_begun(c, r, tx);
}
/* Begin a reading operation: tx, or this thread's running transaction in
 * r, or none (plain loads of the committed state). */
int cx_begin_read(struct cx *c, pmtx_region *r, pmtx_tx *tx);
/* End the operation with status rc (C4): commit its level, or abort the
 * transaction if rc is an error and the operation wrote. Returns rc, or
 * the commit's status. */
int cx_end(struct cx *c, int rc);

/* Do plain loads see this transaction's writes? (C1) */
static inline int cx_direct(const struct cx *c)
{
	return !c->overlay;
}

static inline uint64_t cx_load(const struct cx *c, const void *p)
{
	uint64_t v;
	if (cx_direct(c)) {
		memcpy(&v, p, sizeof v);
		return v;
	}
	pmtx_read(c->tx, &v, p, sizeof v);
	return v;
}
static inline void cx_read(const struct cx *c, void *dst, const void *src,
                           size_t n)
{
	if (cx_direct(c))
		memcpy(dst, src, n);
	else
		pmtx_read(c->tx, dst, src, n);
}
int cx_write(struct cx *c, void *dst, const void *src, size_t n);
static inline int cx_put64(struct cx *c, void *dst, uint64_t v)
{
	return cx_write(c, dst, &v, sizeof v);
}
/* A fresh block of n bytes (zeroed if zero), its offset and address. */
int cx_alloc(struct cx *c, size_t n, int zero, pmtx_off *off, void **p);
int cx_free(struct cx *c, pmtx_off off);
static inline void cx_flush(struct cx *c, const void *p, size_t n)
{
	pmtx_flush(c->r, p, n);
}
/* The same, at a mutation site (common/mutant.h): a flush C2 needs,
 * which a test build can skip to show that the explorer notices. */
static inline void cx_flush_site(struct cx *c, const void *p, size_t n,
                                 unsigned site)
{
	if (!MUT_ON(site))
		pmtx_flush(c->r, p, n);
}

/* The block at off, if it lies in the region with at least n bytes from
 * off, is 16-byte aligned and holds magic at byte moff (magic 0: no magic
 * check), or NULL (C3). Inline: it is the first touch of every node a
 * search visits. */
static inline size_t cx_size(const struct cx *c)
{
	return atomic_load_explicit(c->size, memory_order_acquire);
}
static inline void *cx_block_at(const struct cx *c, pmtx_off off, size_t n,
                                uint32_t magic, size_t moff)
{
	size_t size = cx_size(c);
	if (!off || off % 16 || n > size || off > size - n)
		return NULL;
	char *p = c->base + off;
	uint32_t m;
	if (!magic)
		return p;
	memcpy(&m, p + moff, sizeof m); /* a node's magic never changes (C2) */
	return m == magic ? p : NULL;
}
/* The same with the magic word at the block's start. */
static inline void *cx_block(const struct cx *c, pmtx_off off, size_t n,
                             uint32_t magic)
{
	return cx_block_at(c, off, n, magic, 0);
}
static inline pmtx_off cx_off(const struct cx *c, const void *p)
{
	return (pmtx_off)((const char *)p - c->base);
}

/* The copies a handle has handed out as views, every thread's (C5). */
struct cx_vcopy;
struct cx_views {
	pthread_mutex_t lock; /* taken to push a copy or unlink some */
	struct cx_vcopy *_Atomic head; /* read unlocked: NULL, none to drop */
};
void cx_views_init(struct cx_views *v);
/* Free the calling thread's copies, at each of its writes through the
 * handle; other threads' copies stay (C5). */
void cx_views_drop(struct cx_views *v);
/* Free every copy, at the handle's close. */
void cx_views_fini(struct cx_views *v);
/* *out: a view of the n bytes at `at` as the transaction sees them (C5).
 * img: those bytes as the caller has read them with cx_read (NULL: read
 * them here). keep: the handle's copies, or NULL (the copy is freed when
 * the transaction ends). 0 or ENOMEM. */
int cx_view(struct cx *c, struct cx_views *keep, const void *at,
            const void *img, size_t n, pmtx_bytes *out);

/* Check a container header: magic, major version, and that the block
 * holds n bytes. 0, PMTX_E_NOT_CONTAINER or PMTX_E_BAD_VERSION. */
int cont_check_hdr(pmtx_region *r, pmtx_off off, uint32_t magic, size_t n);
void cont_hdr_init(struct cont_hdr *h, uint32_t magic, uint32_t flags);
/* Is a length within PMTX_CONT_BYTES_MAX? */
static inline int cont_len_ok(size_t n)
{
	return n <= PMTX_CONT_BYTES_MAX;
}
/* The runtime a handle's own transactions use. */
pmtx_runtime cont_runtime(const pmtx_cont_options *o);

#endif
