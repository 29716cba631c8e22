/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trace.h - event sites of the persistence trace (format: pmtx_trace.h).
 *
 * Every site is one macro; when tracing is off it costs one predictable
 * branch on pmtx__trace_on. The macros take the struct persist of the
 * region (they use its base to turn addresses into region offsets), so a
 * file using them must see the definition of struct persist; persist.h
 * includes this header.
 */
#ifndef PMTX_TRACE_INTERNAL_H
#define PMTX_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "pmtx.h"
#include "pmtx_trace.h"
#include "../common/util.h"

extern int pmtx__trace_on;

/* One event. base: the region mapping (NULL for none); a, n: the range;
 * data: bytes to record under PMTX_TRACE_BYTES (NULL: none). */
void trace_emit(unsigned type, const char *base, const void *a, uint64_t n,
                const void *data, uint32_t arg, int32_t status);
/* A transaction event of descriptor idx (off = idx, arg = runtime). */
void trace_tx(unsigned type, const char *base, unsigned idx, unsigned kind,
              int32_t status);
/* A region was created or opened: record its id (invariant 3), and read
 * PMTX_TRACE / PMTX_TRACE_BYTES on the first call. */
void trace_region(const char *base, uint64_t len, const uint8_t uuid[16]);
/* A sink: called synchronously for every event (T5), with the event's
 * fields (tx events: a = NULL, n = descriptor index, aux = runtime).
 * NULL removes it. Set it with no transaction running. */
typedef void (*trace_sink_fn)(void *arg, unsigned type, const char *base,
                              const void *a, uint64_t n, uint32_t aux,
                              int32_t status);
void trace_set_sink(trace_sink_fn fn, void *arg);
/* Records emitted by this process since start (for tests). */
uint64_t trace_count(void);

#define TRACE_EV_(type, p, a, n, data, arg, st)                              \
	do {                                                                 \
		if (unlikely(pmtx__trace_on))                                \
			trace_emit((type), (p)->base, (a), (n), (data), (arg), \
			           (st));                                    \
	} while (0)

/* kind: enum pmtx_trace_store_kind, without its PMTX_TSK_ prefix. */
#define TRACE_STORE(p, a, n, kind)                                           \
	TRACE_EV_(PMTX_TEV_STORE, p, a, n, a, PMTX_TSK_##kind, 0)
/* A store with DRAM semantics to a field in the region (pmtx_trace.h). */
#define TRACE_VSTORE(p, a, n) TRACE_EV_(PMTX_TEV_VSTORE, p, a, n, a, 0, 0)
#define TRACE_FLUSH(p, a, n)                                                 \
	TRACE_EV_(PMTX_TEV_FLUSH, p, a, n, NULL,                             \
	          (uint32_t)lines_spanned((a), (n)), 0)
/* kind: enum pmtx_trace_barrier_kind (PMTX_TBK_ORDER or _DURABLE). */
#define TRACE_BARRIER(p, kind)                                               \
	TRACE_EV_(PMTX_TEV_BARRIER, p, NULL, 0, NULL, (kind), 0)
#define TRACE_NT(p, dst, src, n, kind)                                       \
	TRACE_EV_(PMTX_TEV_NT, p, dst, n, src, (kind), 0)
/* Transaction events: off = descriptor index, arg = runtime. */
#define TRACE_TX(type, tx, st)                                               \
	do {                                                                 \
		if (unlikely(pmtx__trace_on))                                \
			trace_tx((type), (tx)->r->persist.base, (tx)->idx,   \
			         (unsigned)(tx)->kind, (st));                \
	} while (0)

#endif
