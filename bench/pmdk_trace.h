/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmdk_trace.h - a persistence trace of PMDK in pmtx's format
 * (pmtx_trace.h), recorded at the libpmem calls pmdk_count.c interposes.
 * PMTX_PMDK_TRACE=path switches it on for the whole process; unset, each
 * call site costs one branch on pmdk_trace_on. Design and approximations:
 * pmdk_trace.c.
 */
#ifndef PMTX_BENCH_PMDK_TRACE_H
#define PMTX_BENCH_PMDK_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* Set before main when PMTX_PMDK_TRACE names a file that could be
 * created; cleared when the trace is written out at exit. */
extern int pmdk_trace_on;

/* A range written back with flushes (pmem_flush, pmem_persist, ...):
 * a STORE and a FLUSH record. lines: its cache lines. */
void pmdk_trace_flush(const void *addr, size_t len, uint64_t lines);
/* A copy or fill (pmem_memcpy, _memmove, _memset) without
 * PMEM_F_MEM_NOFLUSH, of those flags: an NT record if libpmem makes it
 * with non-temporal stores, else a STORE and a FLUSH. */
void pmdk_trace_copy(const void *addr, size_t len, uint64_t lines,
                     unsigned flags);
/* A drain: a BARRIER record (kind unknown). */
void pmdk_trace_drain(void);
/* pmemobj_tx_end returned status (0: committed, else the errno of the
 * abort); outermost: no transaction is running any more. */
void pmdk_trace_tx_end(int status, int outermost);
/* Before the real pmemobj_tx_end: the BEGIN of a transaction that made no
 * persistence call. */
void pmdk_trace_tx_ending(void);
/* The bench read PMDK's counters (bench_pmdk_counters): the end of one
 * measuring window and the start of the next. */
void pmdk_trace_mark(void);

/* pmdk_count.c: every flushed line and drain counted since the start, in
 * every thread (kept while pmdk_trace_on only). */
void pmdk_count_totals(uint64_t *flushes, uint64_t *barriers);

#endif
