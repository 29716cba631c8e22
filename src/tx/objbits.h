/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * objbits.h - the writers bitmap in every object's header (seed 000
 * section 4.2), kept valid across crashes without any recovery work.
 *
 * The bitmap is DRAM state that happens to live in persistent memory: it
 * is never flushed, and after a crash it holds garbage. Each header also
 * holds the generation of the open that last reset it; every open draws a
 * fresh generation (pmtx_region.gen), so a header whose generation differs
 * reads as "no writers" (seed 001's generation numbers for non-persistent
 * fields). Opening a region therefore costs nothing per object.
 *
 * Invariants
 *  W1. Bit i is set while the transaction on descriptor i (i < 64) has
 *      written the object and has not finished: for redo-async, and for a
 *      redo log queued for retirement (redo.c D13), until its log has been
 *      truncated.
 *  W2. The first setter after an open resets the bitmap under a
 *      per-header busy marker of this generation (obj_gen_busy), so a
 *      reset never erases a bit set for the current generation, and a
 *      marker left by a crash during a reset is stale like any other.
 */
#ifndef PMTX_OBJBITS_H
#define PMTX_OBJBITS_H

#include "../region/region.h"

/* The busy marker of the current generation: a marker left by an earlier
 * open (a process killed mid-reset) reads as just another stale value. */
static inline uint64_t obj_gen_busy(const pmtx_region *r)
{
	return r->gen ^ (1ull << 63);
}

static inline struct pmtx_objhdr *objhdr_at(const pmtx_region *r,
                                            uint64_t base)
{
	return (struct pmtx_objhdr *)(r->base + base);
}

static inline uint64_t objbits_get(const pmtx_region *r,
                                   const struct pmtx_objhdr *h)
{
	if (__atomic_load_n(&h->gen, __ATOMIC_ACQUIRE) != r->gen)
		return 0;
	return __atomic_load_n(&h->writers, __ATOMIC_ACQUIRE);
}

static inline void objbits_set(const pmtx_region *r, struct pmtx_objhdr *h,
                               uint64_t bit)
{
	for (;;) {
		uint64_t g = __atomic_load_n(&h->gen, __ATOMIC_ACQUIRE);
		if (g == r->gen) {
			__atomic_fetch_or(&h->writers, bit, __ATOMIC_ACQ_REL);
			TRACE_VSTORE(&r->persist, &h->writers, 8);
			return;
		}
		if (g != obj_gen_busy(r) &&
		    __atomic_compare_exchange_n(&h->gen, &g, obj_gen_busy(r), 0,
		                                __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&h->writers, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&h->gen, r->gen, __ATOMIC_RELEASE);
			TRACE_VSTORE(&r->persist, h, 16);
		}
	}
}

static inline void objbits_clear(const pmtx_region *r, struct pmtx_objhdr *h,
                                 uint64_t bit)
{
	__atomic_fetch_and(&h->writers, ~bit, __ATOMIC_ACQ_REL);
	TRACE_VSTORE(&r->persist, &h->writers, 8);
}

#endif
