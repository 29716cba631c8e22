/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * persist.h - persist primitives, persistence domains and backends.
 *
 * The lowest layer: it knows nothing of regions, heaps or transactions.
 * Every flush, barrier and non-temporal copy that pmtx issues goes through
 * one table of function pointers (struct persist_ops), chosen when a region
 * is opened from its (domain, backend) pair. A crash simulator or a
 * fault-injection test replaces the table; nothing else in pmtx issues a
 * flush or fence of its own.
 *
 * Counting happens here, in the inline wrappers, before the table is
 * called, so the per-thread counters are exact whatever the backend is:
 *   barriers  += 1 per persist_barrier() or persist_order() call (also
 *                under PDOM-2, where the barrier is only an ordering
 *                fence: the count is the runtime's logical barrier count);
 *   flushes   += cache lines in the range, except under PDOM-2 where no
 *                flush is issued at all;
 *   nt_bytes  += bytes copied by persist_copy_nt();
 *   msyncs    += page runs the file backend writes back, and fdatasync
 *                calls the journal backend makes.
 */
#ifndef PMTX_PERSIST_H
#define PMTX_PERSIST_H

#include <stddef.h>
#include <stdint.h>

#include "pmtx.h"
#include "../common/util.h"
#include "../trace/trace.h"

struct persist;

typedef struct persist_ops {
	const char *name;
	/* Start writing back every line of [addr, addr+len). No ordering. */
	void (*flush)(struct persist *p, const void *addr, size_t len);
	/* Wait until every earlier flush and non-temporal store of this
	 * thread is durable. Returns 0 or a status (file backend: errno of a
	 * failed msync, reported as PMTX_E_IO). */
	int (*barrier)(struct persist *p);
	/* Copy with stores that bypass the cache; durable at next barrier. */
	void (*copy_nt)(struct persist *p, void *dst, const void *src,
	                size_t n);
	/* Optional: called at the end of persist_init, once base/len/ctx are
	 * set (the crash simulator snapshots the durable image here). */
	void (*attach)(struct persist *p);
	/* Optional: the mapping now serves len bytes (len grew; the new
	 * bytes are zero in the file and durable: the region grew). */
	void (*grow)(struct persist *p, size_t len);
	/* Optional: an ordering barrier (persist_order), where it can cost
	 * less than a durable one; NULL: the barrier above serves both. */
	int (*order)(struct persist *p);
	/* Optional: the region is being unmapped; clean: a pmtx_close, and
	 * whatever the backend still holds must reach storage. */
	int (*detach)(struct persist *p, int clean);
} persist_ops;

struct persist {
	const persist_ops *ops;
	pmtx_domain domain;
	pmtx_backend backend;
	uint64_t barrier_ns;    /* added latency per barrier */
	uint64_t barrier_ticks; /* the same, in TSC ticks */
	char *base;             /* the mapping this persist object serves */
	size_t len;
	int fd;                 /* the mapped file (file backend), or -1 */
	void *ctx;              /* backend-private state (crash simulator) */
	struct journal *jrnl;   /* the journal backend's state (journal.c) */
	_Atomic int failed;     /* the file backend: a write-back failed
	                         * (persist.c invariant 6) */
};

extern _Thread_local pmtx_counters pmtx__tls_counters;

/* 0 if (d, b) is a pair persist_init takes, else PMTX_E_INVAL and a
 * message. */
int persist_supported(pmtx_domain d, pmtx_backend b);

/* Fill p for the given mapping. barrier_ns < 0 selects the default of the
 * (domain, backend) pair: emulated 0/100/500 ns for PDOM-2/1/0, hardware
 * 500 ns for PDOM-0 (the emulated memory-controller commit), else 0. */
int persist_init(struct persist *p, pmtx_domain d, pmtx_backend b,
                 int64_t barrier_ns, void *base, size_t len);

/* The region is being unmapped (clean: by pmtx_close): the backend lets
 * go of its state, and, if clean, makes what it holds durable. Once. */
int persist_detach(struct persist *p, int clean);

/* The region's file grew to len bytes (durable, zero-filled). */
void persist_grow(struct persist *p, size_t len);

/* Replace the ops table (crash simulation, fault injection). */
void persist_set_ops(struct persist *p, const persist_ops *ops, void *ctx);

/* Fault injection: when set, every persist object initialised afterwards
 * (every region opened or created) uses ops/ctx instead of its default
 * table. NULL restores the defaults. Not thread-safe; for tests. */
void persist_override_ops(const persist_ops *ops, void *ctx);

/* The table used by (domain, backend), for wrappers that delegate. */
const persist_ops *persist_default_ops(pmtx_domain d, pmtx_backend b);

static inline void persist_flush(struct persist *p, const void *a, size_t n)
{
	if (p->domain == PMTX_PDOM2 || n == 0)
		return;
	pmtx__tls_counters.flushes += lines_spanned(a, n);
	TRACE_FLUSH(p, a, n);
	p->ops->flush(p, a, n);
}

/* A barrier of the given kind (PMTX_TBK_ORDER or PMTX_TBK_DURABLE).
 * Only the journal backend issues less for an ordering barrier (it
 * appends without an fdatasync); every other backend issues the same
 * barrier for both (x86 has one fence; the file backend can order page
 * writes only by making them durable). */
static inline int persist_barrier_kind(struct persist *p, unsigned kind)
{
	pmtx__tls_counters.barriers++;
	TRACE_BARRIER(p, kind);
	if (kind == PMTX_TBK_ORDER && p->ops->order)
		return p->ops->order(p);
	return p->ops->barrier(p);
}

/* Earlier flushes become durable before this returns. */
static inline int persist_barrier(struct persist *p)
{
	return persist_barrier_kind(p, PMTX_TBK_DURABLE);
}

/* Earlier flushes persist before later ones; durability is not needed
 * when this returns (the trace's ordering barrier). */
static inline int persist_order(struct persist *p)
{
	return persist_barrier_kind(p, PMTX_TBK_ORDER);
}

/* kind: the trace's store kind of the bytes copied. */
static inline void persist_copy_nt(struct persist *p, void *dst,
                                   const void *src, size_t n, unsigned kind)
{
	pmtx__tls_counters.nt_bytes += n;
	TRACE_NT(p, dst, src, n, kind);
	p->ops->copy_nt(p, dst, src, n);
}


#endif
