/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmdk_count.c - flushed lines and barriers of PMDK, counted at its
 * persistence calls.
 *
 * libpmemobj makes every write-back and fence through libpmem's exported
 * functions (pmem_flush, pmem_drain, pmem_persist, pmem_memcpy, ...),
 * called through the dynamic linker. pmtx-bench defines the same
 * functions: the dynamic linker binds libpmemobj's calls to these first,
 * and each one counts, then calls libpmem's own (dlsym RTLD_NEXT). The
 * counts are the same quantities pmtx's counters hold:
 *   flushes   cache lines written back: the lines of a flushed range, or
 *             of a copy or fill that is not PMEM_F_MEM_NOFLUSH (libpmem
 *             writes those back with clwb or with non-temporal stores);
 *   barriers  pmem_drain calls, and the drain that pmem_persist,
 *             pmem_msync and a copy or fill without PMEM_F_MEM_NODRAIN
 *             end with.
 * bench_pmdk_counting() says whether the binding took (a libpmemobj that
 * called libpmem another way would leave the counts at 0).
 *
 * The counts are per thread, as pmtx's are (bench_pmdk_counters gives the
 * calling thread's): a runner on several threads sums its threads' own
 * (bench_crew_counters). A count shared by the threads would be one more
 * contended line in each of PMDK's flushes, which pmtx's thread-local
 * counters do not pay. The trace alone, one mutex already, keeps totals
 * over every thread (pmdk_count_totals).
 *
 * With PMTX_PMDK_TRACE set, each counted event is also recorded in a
 * persistence trace (pmdk_trace.c), and so is the end of each transaction:
 * pmemobj_tx_end, which TX_END calls, is interposed the same way.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libpmem.h>
#include <libpmemobj.h>
#include <stdatomic.h>
#include <stdint.h>

#include "bench.h"
#include "pmdk_trace.h"

static _Thread_local uint64_t n_flush, n_drain; /* this thread's */
static _Atomic uint64_t all_flush, all_drain; /* every thread's, traced */

static uint64_t lines(const void *p, size_t len)
{
	if (len == 0)
		return 0;
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)63;
	uintptr_t b = ((uintptr_t)p + len + 63) & ~(uintptr_t)63;
	return (b - a) / 64;
}

/* The trace of one counted call (pmdk_trace.c); copy: a copy or fill. */
static void trace(const void *p, size_t len, uint64_t n, unsigned flags,
                  int copy)
{
	if (!(flags & PMEM_F_MEM_NOFLUSH)) { /* else traced when flushed */
		if (copy)
			pmdk_trace_copy(p, len, n, flags);
		else
			pmdk_trace_flush(p, len, n);
	}
	if (!(flags & PMEM_F_MEM_NODRAIN))
		pmdk_trace_drain();
}

static void count(const void *p, size_t len, unsigned flags, int copy)
{
	uint64_t n = lines(p, len);
	uint64_t f = flags & PMEM_F_MEM_NOFLUSH ? 0 : n;
	uint64_t d = !(flags & PMEM_F_MEM_NODRAIN);
	n_flush += f;
	n_drain += d;
	if (pmdk_trace_on) {
		atomic_fetch_add_explicit(&all_flush, f, memory_order_relaxed);
		atomic_fetch_add_explicit(&all_drain, d, memory_order_relaxed);
		trace(p, len, n, flags, copy);
	}
}

typedef void (*range_fn)(const void *, size_t);
typedef int (*irange_fn)(const void *, size_t);
typedef void *(*copy_fn)(void *, const void *, size_t, unsigned);
typedef void *(*fill_fn)(void *, int, size_t, unsigned);
typedef void (*drain_fn)(void);
typedef int (*end_fn)(void);

/* real_: libpmem's own function of that name, of type T. */
#define REAL(name, T)                                \
	static T real_;                              \
	if (!real_)                                  \
		real_ = (T)dlsym(RTLD_NEXT, name)

void pmem_flush(const void *addr, size_t len)
{
	REAL("pmem_flush", range_fn);
	count(addr, len, PMEM_F_MEM_NODRAIN, 0);
	real_(addr, len);
}

void pmem_drain(void)
{
	REAL("pmem_drain", drain_fn);
	n_drain++;
	if (pmdk_trace_on) {
		atomic_fetch_add_explicit(&all_drain, 1, memory_order_relaxed);
		pmdk_trace_drain();
	}
	real_();
}

void pmem_persist(const void *addr, size_t len)
{
	REAL("pmem_persist", range_fn);
	count(addr, len, 0, 0);
	real_(addr, len);
}

void pmem_deep_flush(const void *addr, size_t len)
{
	REAL("pmem_deep_flush", range_fn);
	count(addr, len, PMEM_F_MEM_NODRAIN, 0);
	real_(addr, len);
}

int pmem_msync(const void *addr, size_t len)
{
	REAL("pmem_msync", irange_fn);
	count(addr, len, 0, 0);
	return real_(addr, len);
}

void *pmem_memcpy(void *dst, const void *src, size_t len, unsigned flags)
{
	REAL("pmem_memcpy", copy_fn);
	count(dst, len, flags, 1);
	return real_(dst, src, len, flags);
}

void *pmem_memmove(void *dst, const void *src, size_t len, unsigned flags)
{
	REAL("pmem_memmove", copy_fn);
	count(dst, len, flags, 1);
	return real_(dst, src, len, flags);
}

void *pmem_memset(void *dst, int c, size_t len, unsigned flags)
{
	REAL("pmem_memset", fill_fn);
	count(dst, len, flags, 1);
	return real_(dst, c, len, flags);
}

/* The transaction's end, for the trace: TX_END's call binds here. */
int pmemobj_tx_end(void)
{
	REAL("pmemobj_tx_end", end_fn);
	if (!pmdk_trace_on)
		return real_();
	pmdk_trace_tx_ending();
	int ret = real_();
	pmdk_trace_tx_end(ret, pmemobj_tx_stage() == TX_STAGE_NONE);
	return ret;
}

void pmdk_count_totals(uint64_t *flushes, uint64_t *barriers)
{
	*flushes = atomic_load(&all_flush);
	*barriers = atomic_load(&all_drain);
}

void bench_pmdk_counters(uint64_t *flushes, uint64_t *barriers)
{
	*flushes = n_flush;
	*barriers = n_drain;
	if (pmdk_trace_on)
		pmdk_trace_mark();
}

int bench_pmdk_counting(void)
{
	return n_drain > 0;
}
