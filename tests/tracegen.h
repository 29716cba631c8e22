/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tracegen.h - persistence traces written record by record
 * (include/pmtx_trace.h), for the tests of the trace tools
 * (test_trace_analyze.c, test_trace_hops.c). Every record is of region 7.
 * A failed write fails the running cmocka test.
 */
#ifndef PMTX_TRACEGEN_H
#define PMTX_TRACEGEN_H

#include <stdint.h>
#include <stdio.h>

#include "pmtx_trace.h"

/* The trace file (a /dev/shm path of this process) and its stream. */
extern char tg_path[256];
extern FILE *tg_file;

/* Set tg_path; trace_begin does it too. */
void trace_path(void);
/* Create tg_path and write the file header (minor PMTX_TRACE_MINOR). */
void trace_begin(void);
/* Close tg_file (the trace is then complete): 0 or EOF. */
int trace_end(void);
/* A test's teardown: close tg_file if open, remove tg_path. */
void trace_cleanup(void);

/* What every trace tool must refuse: run() closes tg_file if open, runs
 * the tool on tg_path and returns its status. A trace cut in its second
 * record is PMTX_E_TRUNCATED, a store whose [off, off + size) overflows
 * is PMTX_E_CORRUPT, a file that is no trace PMTX_E_BAD_MAGIC, a missing
 * file ENOENT. tg_path is left missing. */
void trace_expect_unreadable(int (*run)(void));

void rec(uint16_t type, uint32_t tid, uint64_t t, uint64_t off,
         uint64_t size, uint32_t arg, int32_t status);
/* STORE and NT of kind 0 (unknown), or of a given kind. */
void store(uint32_t tid, uint64_t t, uint64_t off, uint64_t size);
void store_kind(uint32_t tid, uint64_t t, uint64_t off, uint64_t size,
                enum pmtx_trace_store_kind kind);
void nt(uint32_t tid, uint64_t t, uint64_t off, uint64_t size);
void nt_kind(uint32_t tid, uint64_t t, uint64_t off, uint64_t size,
             enum pmtx_trace_store_kind kind);
/* A FLUSH of [off, off + size), arg = the lines it covers. */
void flush(uint32_t tid, uint64_t t, uint64_t off, uint64_t size);
/* A BARRIER of kind 0 (unknown), or of a given kind (any value, so that
 * kinds this build does not know can be written too). */
void barrier(uint32_t tid, uint64_t t);
void barrier_kind(uint32_t tid, uint64_t t, uint32_t kind);
void begin(uint32_t tid, uint64_t t);
void commit(uint32_t tid, uint64_t t);

#endif
