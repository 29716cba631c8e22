/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmtx.c - the top of the stack: create, open (with recovery) and close,
 * wiring region/, heap/ and tx/ together in that order.
 *
 * Open sequence
 *   1. region_open: lock; replay the journal ("<path>.pmtxj", left by
 *      the journal backend) into the file once the header's identity is
 *      checked and before anything else is read, whatever the backend,
 *      and remove it under another backend (region.c invariant 8,
 *      persist/journal.c): a region whose journal mark says commits are
 *      only in a journal that is missing is refused, unless
 *      PMTX_OPEN_FORGET_JOURNAL (layout.h G3); then validate the header,
 *      make the journal backend's own journal if it has none, and map.
 *      Nothing else is written;
 *   2. heap_create: DRAM state only;
 *   3. tx_recover_all (recovery.c): store the open mark (layout.h G4, a
 *      plain store; not kept by a private view or the journal backend);
 *      if it was already set, the last process to open the region died
 *      with it open (kill -9), and a sweep first makes durable everything
 *      recovery will read, with one barrier (R4); then a twin region's
 *      copy pass (twin.c TW8), and every descriptor rolled back or
 *      forward;
 *   4. heap_rebuild: DRAM free lists from the now-consistent bitmaps;
 *   5. tx_mark_chunks, txm_create: DRAM transaction state.
 * A failure at any step unmaps and unlocks; whatever recovery wrote before
 * it is itself recoverable (R1). The open mark is put back as it was,
 * unless recovery wrote (its stores may not be durable yet). pmtx_close
 * clears the mark once everything the region holds is durable.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pmtx_cltx.h"
#include "heap/heap.h"
#include "persist/journal.h"
#include "region/region.h"
#include "tx/tx.h"

void pmtx_options_init(pmtx_options *o)
{
	memset(o, 0, sizeof(*o));
	o->domain = PMTX_PDOM1;
	o->backend = PMTX_BACKEND_HARDWARE;
	o->barrier_ns = -1;
	o->runtime = PMTX_RT_UNDO;
	o->ndesc = 64;
}

static void teardown(pmtx_region *r)
{
	txm_destroy(r);
	heap_destroy(r->heap);
	r->heap = NULL;
	region_unmap(r);
}

/* Descriptors and the first chunk of each of their logs. */
static void format_descriptors(pmtx_region *r)
{
	const struct pmtx_hdr *h = r->hdr;
	for (unsigned i = 0; i < h->ndesc; i++) {
		struct pmtx_desc *d = region_desc(r, i);
		memset(d, 0, sizeof(*d));
		d->log_head = region_log0(r, i);
		d->alog_head = region_alog0(r, i);
		d->log_tail = d->log_head + sizeof(struct pmtx_chunk);
		struct pmtx_chunk *c = region_at(r, d->log_head);
		*c = (struct pmtx_chunk){.magic = PMTX_CHUNK_MAGIC,
		                         .size = h->log0_size};
		c = region_at(r, d->alog_head);
		*c = (struct pmtx_chunk){.magic = PMTX_CHUNK_MAGIC,
		                         .size = h->alog0_size};
	}
}

/* A fresh, nonzero generation for the objects' writers bitmaps. */
static uint64_t new_generation(pmtx_region *r)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t seed[3] = {(uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30,
	                    (uint64_t)getpid(), (uint64_t)(uintptr_t)r};
	uint64_t g = pmtx_checksum(seed, sizeof(seed), r->hdr->create_time);
	g &= ~(1ull << 63); /* g and its busy marker differ in bit 63 */
	return g ? g : 1;   /* 0: a header never set */
}

static int finish_open(pmtx_region *r)
{
	r->gen = new_generation(r);
	int rc = heap_create(r);
	if (!rc)
		rc = tx_recover_all(r);
	if (!rc)
		rc = heap_rebuild(r->heap);
	if (!rc)
		rc = tx_mark_chunks(r);
	if (!rc)
		rc = txm_create(r);
	return rc;
}

/* A region created through the file backend, opened again through the
 * journal backend (its journal made there). */
static int reopen(pmtx_region *r, const char *path, const pmtx_options *o,
                  pmtx_region **out)
{
	int rc = pmtx_close(r);
	return rc ? rc : pmtx_open(path, o, out);
}

/* The options a create or an open goes by: o, else the defaults, made
 * in *def. NULL if path or out is missing. */
static const pmtx_options *entry_options(const char *path, void *out,
                                         const pmtx_options *o,
                                         pmtx_options *def)
{
	if (!path || !out)
		return NULL;
	pmtx__clear_errmsg();
	if (!o) {
		pmtx_options_init(def);
		o = def;
	}
	return o;
}

/* What a region takes from the options once it is mapped. */
static void take_options(pmtx_region *r, const pmtx_options *o)
{
	trace_region(r->base, r->map_len, r->hdr->uuid);
	r->trunc_lazy = o->truncation == PMTX_TRUNC_LAZY;
	r->auto_rotate = (o->flags & PMTX_OPEN_AUTO_ROTATE) != 0;
}

int pmtx_create(const char *path, size_t size, const pmtx_options *o,
                pmtx_region **out)
{
	pmtx_options def;
	if (!(o = entry_options(path, out, o, &def)))
		return PMTX_E_INVAL;
	pmtx_region *r;
	int rc = region_create(path, size, o, &r);
	if (rc)
		return rc;
	journal_forget(path); /* a journal left by a region since removed */
	take_options(r, o);
	format_descriptors(r);
	heap_format(r);
	rc = region_seal_header(r);
	if (!rc)
		rc = finish_open(r);
	if (rc) {
		region_discard_created(r);
		teardown(r);
		return rc;
	}
	if (o->backend == PMTX_BACKEND_JOURNAL) /* region.c invariant 8 */
		return reopen(r, path, o, out);
	*out = r;
	return 0;
}

int pmtx_open(const char *path, const pmtx_options *o, pmtx_region **out)
{
	pmtx_options def;
	if (!(o = entry_options(path, out, o, &def)))
		return PMTX_E_INVAL;
	pmtx_region *r;
	int rc = region_open(path, o, &r);
	if (rc)
		return rc;
	take_options(r, o);
	if ((rc = finish_open(r))) {
		if (!r->recovery_wrote) /* else its stores may be pending */
			region_mark_restore(r);
		teardown(r);
		return rc;
	}
	*out = r;
	return 0;
}

int pmtx_close(pmtx_region *r)
{
	if (!r)
		return PMTX_E_INVAL;
	atomic_store(&r->closing, 1);
	if (r->txm && atomic_load(&r->txm->running) > 0) {
		atomic_store(&r->closing, 0);
		return PMTX_E_TX_STATE;
	}
	async_drain(r);
	int rc = async_take_error(r);
	int rc2 = r->twin && !r->private_view ? twin_close(r) : 0;
	if (!rc2 && !r->private_view)
		rc2 = tx_close_cover(r);
	/* layout.h G4: all of it durable by now, unless a write-back of the
	 * file backend failed (persist.c invariant 6) */
	if (!rc && !rc2 && !atomic_load(&r->persist.failed))
		region_mark_closed(r);
	int rc3 = persist_detach(&r->persist, 1);
	teardown(r);
	return rc ? rc : rc2 ? rc2 : rc3;
}

int pmtx_drain(pmtx_region *r)
{
	if (!r)
		return PMTX_E_INVAL;
	async_quiesce(r);
	return async_take_error(r);
}

int pmtx_heap_check(pmtx_region *r, pmtx_heap_stats *st)
{
	/* Frees of queued redo transactions reach the DRAM free lists only
	 * when they are retired (redo.c D5): finish them first. */
	async_quiesce(r);
	return heap_check(r, st);
}

void *pmtx_root(pmtx_region *r, size_t *size)
{
	if (size)
		*size = r->hdr->root_size;
	return r->base + r->hdr->root_off + sizeof(struct pmtx_objhdr);
}

size_t pmtx_region_size(const pmtx_region *r)
{
	return r->size;
}

size_t pmtx_region_max_size(const pmtx_region *r)
{
	return r->map_len;
}

pmtx_domain pmtx_region_domain(const pmtx_region *r)
{
	return r->persist.domain;
}

pmtx_backend pmtx_region_backend(const pmtx_region *r)
{
	return r->persist.backend;
}

pmtx_runtime pmtx_region_runtime(const pmtx_region *r)
{
	return r->default_rt;
}

void pmtx_region_uuid(const pmtx_region *r, uint8_t uuid[16])
{
	memcpy(uuid, r->hdr->uuid, 16);
}

void *pmtx_ptr(const pmtx_region *r, pmtx_off off)
{
	if (off < PMTX_HDR_SIZE || off >= r->size)
		return NULL;
	return r->base + off;
}

pmtx_off pmtx_off_of(const pmtx_region *r, const void *p)
{
	const char *c = p;
	if (c < r->base + PMTX_HDR_SIZE || c >= r->base + r->size)
		return 0;
	return (pmtx_off)(c - r->base);
}

void pmtx__note_store(pmtx_region *r, const void *p, size_t n)
{
	TRACE_STORE(&r->persist, p, n, DATA);
}
