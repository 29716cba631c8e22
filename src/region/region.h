/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * region.h - a mapped region: file, mapping, header, persistence domain.
 *
 * Layer: above persist/, below heap/ and tx/. It knows the file format's
 * header and the placement of every area (layout.h); it does not know what
 * the heap or the runtimes keep in their areas.
 */
#ifndef PMTX_REGION_H
#define PMTX_REGION_H

#include <stdatomic.h>

#include "layout.h"
#include "../persist/persist.h"

struct heap;
struct txm;

struct pmtx_region {
	int fd;
	char *base;            /* mapping: map_len bytes reserved, size used */
	_Atomic size_t size;   /* bytes in use: grows (region_grow) */
	size_t map_len;        /* address space reserved: the maximum size */
	_Atomic uint64_t nsb;  /* superblocks in the heap (== rstate->nsb);
	                        * written under the heap's pool lock */
	int private_view;      /* PMTX_OPEN_PRIVATE: MAP_PRIVATE, O_RDONLY */
	const struct pmtx_hdr *hdr; /* == base; never written after create */
	struct persist persist;
	pmtx_runtime default_rt;
	int twin;              /* a twin region (hdr.twin_off != 0) */
	uint64_t gen;          /* DRAM: differs on every open (objbits.h) */
	uint64_t csn_floor;    /* highest commit sequence number recovery saw */
	struct heap *heap;
	struct txm *txm;
	atomic_int closing;
	int trunc_lazy;        /* pmtx_options.truncation == PMTX_TRUNC_LAZY */
	int auto_rotate;       /* PMTX_OPEN_AUTO_ROTATE */
	char *create_path;     /* create: the path asked for, and the */
	char *create_tmp;      /* file being built (NULL once published) */
	struct journal *jrnl;  /* open: recovered, until persist_setup */
	int marked;            /* this open stored the open mark (G4) */
	int recovery_wrote;    /* this open's recovery stored something */
	int mark_was;          /* the open mark as open found it */
};

/* Where each area goes, derived from the create-time parameters. The same
 * function computes it at create and checks the header against it at open,
 * so a header whose offsets disagree with its own sizes is rejected. */
struct region_geometry {
	uint64_t rstate_off, desc_off, log0_off, root_off, meta_off, heap_off;
	uint64_t twin_off;       /* twin regions: the back copy; else 0 */
	uint64_t seal_off;       /* sealed twin regions: the seal; else 0 */
	uint64_t nsb, max_nsb;
	uint64_t size, max_size; /* size may be raised to hold 1 superblock */
	uint32_t log0_size, alog0_size;
};
/* What kind of region: plain, twin (3.2, no seal) or sealed twin (3.3). */
enum region_kind { REGION_PLAIN = 0, REGION_TWIN = 1, REGION_TWIN_SEALED = 2 };
/* max_size 0 (or <= size): a region of fixed size. twin: a region_kind;
 * a twin region (fixed size only) has its heap sized so that the back
 * copy of [root_off, twin_off), and the seal of a sealed one, fit after
 * it. */
int region_geometry(uint64_t size, uint64_t max_size, unsigned ndesc,
                    uint64_t root_size, int twin, struct region_geometry *g);

/* The region_kind a header's feature bits say (a seal without a twin is
 * REGION_PLAIN here: the geometry check then refuses its seal_off). */
static inline int region_is_twin(const struct pmtx_hdr *h)
{
	if (!(h->feat_incompat & PMTX_FEAT_INCOMPAT_TWIN))
		return REGION_PLAIN;
	return h->feat_incompat & PMTX_FEAT_INCOMPAT_TWIN_SEAL
	               ? REGION_TWIN_SEALED
	               : REGION_TWIN;
}

/* Bytes the file must hold for a heap of nsb superblocks, in a region
 * created with size bytes and nsb0 superblocks: a region that never grew
 * is as long as it was made, else it ends with its last superblock. */
static inline uint64_t region_bytes_for(uint64_t size, uint64_t nsb0,
                                        uint64_t heap_off, uint64_t nsb)
{
	return nsb == nsb0 ? size : heap_off + nsb * (uint64_t)PMTX_SB_SIZE;
}

static inline uint64_t region_bytes(const struct pmtx_hdr *h, uint64_t nsb)
{
	return region_bytes_for(h->size, h->nsb, h->heap_off, nsb);
}

static inline struct pmtx_rstate *region_rstate(const pmtx_region *r)
{
	return (struct pmtx_rstate *)(r->base + r->hdr->rstate_off);
}

/* Grow the heap to at least want superblocks (more when doubling allows):
 * extend the file, make it durable, store rstate.nsb (G1). Call with the
 * heap's pool lock held. Returns the new superblock count in *got, or
 * PMTX_E_NOMEM (with a message) when the region cannot grow. */
int region_grow(pmtx_region *r, uint64_t want, uint64_t *got);

/* G4: store the open mark; 1 if it was already set (the last process to
 * open the region did not close it), else 0. The journal backend and a
 * private view only read it: they keep no mark. */
int region_mark_open(pmtx_region *r);
/* G4: clear it, once everything the region holds is durable. */
void region_mark_closed(pmtx_region *r);
/* G4: an open that fails before its recovery stored anything puts the
 * mark back as it found it (invariant 1: the file as it was). One whose
 * recovery stored leaves it set: those stores may not be durable. */
void region_mark_restore(pmtx_region *r);

/* Create the file (0600, exclusive, locked), size it, map it and write a
 * fresh header. The caller initialises the areas, then calls
 * region_seal_header(). */
int region_create(const char *path, size_t size, const pmtx_options *o,
                  pmtx_region **out);
/* Persist every area written during create, then the header (last). */
int region_seal_header(pmtx_region *r);
/* A create that fails after region_create: remove what it made (the
 * temporary file, or the published region). */
void region_discard_created(pmtx_region *r);
/* Open, lock, validate the header and map. Nothing is written. */
int region_open(const char *path, const pmtx_options *o, pmtx_region **out);
void region_unmap(pmtx_region *r);

/* Offset validation (layout.h rule 2). */
static inline int region_off_ok(const pmtx_region *r, uint64_t off,
                                uint64_t len)
{
	size_t size = atomic_load_explicit(&r->size, memory_order_acquire);
	return off >= PMTX_HDR_SIZE && off <= size && len <= size - off;
}

/* Twin regions: the distance from a mirrored byte to its back copy. */
static inline uint64_t region_twin_delta(const pmtx_region *r)
{
	return r->hdr->twin_off - r->hdr->root_off;
}

static inline void *region_at(const pmtx_region *r, uint64_t off)
{
	return r->base + off;
}

static inline uint64_t region_off(const pmtx_region *r, const void *p)
{
	return (uint64_t)((const char *)p - r->base);
}

static inline struct pmtx_desc *region_desc(const pmtx_region *r, unsigned i)
{
	return (struct pmtx_desc *)(r->base + r->hdr->desc_off) + i;
}

/* Offsets of descriptor i's first log and alloc-log chunks. */
static inline uint64_t region_log0(const pmtx_region *r, unsigned i)
{
	return r->hdr->log0_off +
	       (uint64_t)i * (r->hdr->log0_size + r->hdr->alog0_size);
}
static inline uint64_t region_alog0(const pmtx_region *r, unsigned i)
{
	return region_log0(r, i) + r->hdr->log0_size;
}

#endif
