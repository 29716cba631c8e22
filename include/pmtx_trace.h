/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmtx_trace.h - the persistence trace: its binary format, the recording
 * switch and the reader.
 *
 * What is recorded
 * ----------------
 * While tracing is on, pmtx records, per thread, every persistent store it
 * makes itself (log records, data written through the transaction API,
 * allocator metadata, descriptor states, copy-on-write wrappers), every
 * flush, barrier and non-temporal copy, and every transaction begin,
 * commit and abort. Stores made directly by the application are not seen.
 *
 * Switching it on
 * ---------------
 * pmtx_trace_start(path, flags), or the environment: PMTX_TRACE=path (and
 * PMTX_TRACE_BYTES=1 for PMTX_TRACE_BYTES), read once at the first
 * pmtx_create/pmtx_open of the process; a trace started that way is
 * stopped at exit. When tracing is off each event site costs one
 * predictable branch on a global flag.
 *
 * File format (all integers little-endian)
 * ----------------------------------------
 *   pmtx_trace_file_hdr                     32 bytes, once
 *   then records, each:
 *     pmtx_trace_rec                        48 bytes
 *     if rec.flags & PMTX_TRACE_RF_BYTES:   rec.size bytes, zero-padded to a
 *                                           multiple of 8
 *
 * Invariants
 *  1. Records of one thread appear in the file in the order the thread
 *     emitted them. Records of different threads are interleaved in blocks
 *     (each thread buffers its records, 64 KiB, and appends a block at a
 *     time); order across threads is given by time_ns only.
 *  2. time_ns is CLOCK_MONOTONIC in nanoseconds; tid is the kernel thread
 *     id (gettid).
 *  3. Addresses are never recorded: off is the offset from the start of
 *     the region whose id is in rec.region. A REGION record, emitted when a
 *     region is created or opened and before any other record of that
 *     region, gives the id (the first 8 bytes of the region UUID) and, in
 *     size, the region length.
 *  4. Event type values are fixed and only ever appended. A reader passes
 *     unknown types through (the record length does not depend on type).
 *  5. Versioning: adding an event type, a flag, or a meaning to a field
 *     that was zero bumps PMTX_TRACE_MINOR; any change that an older
 *     reader would misread (record size, field layout, header) bumps
 *     PMTX_TRACE_MAJOR. Readers accept their own major and any minor.
 *  6. FLUSH records are emitted exactly when pmtx_counters.flushes grows,
 *     BARRIER records when .barriers grows, NT records when .nt_bytes
 *     grows: the flushed lines of FLUSH records (lines of [off, off+size),
 *     also given in arg) sum to the flushes counter of that thread.
 *  7. A STORE record follows the store; with PMTX_TRACE_BYTES its bytes are
 *     the bytes in memory right after the store.
 *
 * Field use by type
 *   REGION  region=id, size=region length
 *   STORE   off, size[, bytes], arg=what was stored (enum
 *           pmtx_trace_store_kind; minor 2, before that 0)
 *   VSTORE  off, size[, bytes]: a store to a field with DRAM semantics
 *           that lives in the region (an object's writers bitmap, a
 *           copy-on-write wrapper's writer): never flushed, and stale
 *           after a crash by design (the generation or version it is
 *           checked against has changed). Minor 1.
 *   FLUSH   off, size, arg=cache lines flushed
 *   BARRIER arg=what the barrier is for (enum pmtx_trace_barrier_kind;
 *           minor 2, before that 0): to order the persists before it
 *           ahead of those after it, or to make them durable. On x86
 *           both are the same sfence; a machine with separate ordering
 *           and durability fences (HOPS's ofence and dfence) would run
 *           the first kind as an ordering fence.
 *   NT      off=destination, size[, bytes], arg=store kind (minor 2)
 *   BEGIN/COMMIT/ABORT  arg=runtime (pmtx_runtime), status=the call's
 *                       status (COMMIT), off=descriptor index
 */
#ifndef PMTX_TRACE_H
#define PMTX_TRACE_H
/* The library is built with -fvisibility=hidden: what is declared here,
 * and only that, is exported from libpmtx.so. */
#pragma GCC visibility push(default)

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "PMTXTRC1" read as a little-endian word. */
#define PMTX_TRACE_MAGIC 0x3143525458544d50ull
#define PMTX_TRACE_MAJOR 1
#define PMTX_TRACE_MINOR 2

/* Recording flags (file header flags and pmtx_trace_start). */
#define PMTX_TRACE_BYTES 1u

/* Record flags. */
#define PMTX_TRACE_RF_BYTES 1u

/* Event types: fixed values, only ever appended (invariant 4). */
enum pmtx_trace_type {
	PMTX_TEV_REGION = 1,
	PMTX_TEV_STORE = 2,
	PMTX_TEV_FLUSH = 3,
	PMTX_TEV_BARRIER = 4,
	PMTX_TEV_NT = 5,
	PMTX_TEV_BEGIN = 6,
	PMTX_TEV_COMMIT = 7,
	PMTX_TEV_ABORT = 8,
	PMTX_TEV_VSTORE = 9, /* minor 1 */
};

/* STORE and NT arg (minor 2): the kind of persistent data stored, so
 * that metadata written per byte of the application's data (write
 * amplification) can be split by kind. Fixed values, only appended. */
enum pmtx_trace_store_kind {
	PMTX_TSK_UNKNOWN = 0, /* traces of minor < 2 */
	PMTX_TSK_DATA = 1,    /* the application's data: transactional
	                       * writes in place (undo) or applied (redo),
	                       * rollbacks, pmtx_memcpy_nt, cltx stores */
	PMTX_TSK_LOG = 2,     /* undo and redo log records, check words */
	PMTX_TSK_ALLOC = 3,   /* allocator metadata and allocation logs */
	PMTX_TSK_DESC = 4,    /* transaction descriptor states */
	PMTX_TSK_OBJECT = 5,  /* copy-on-write wrappers */
	PMTX_TSK_REGION = 6,  /* region structure (superblock table) */
};
#define PMTX_TSK_COUNT 7

/* BARRIER arg (minor 2). Fixed values, only appended. */
enum pmtx_trace_barrier_kind {
	PMTX_TBK_UNKNOWN = 0, /* traces of minor < 2 */
	PMTX_TBK_ORDER = 1,   /* orders only: pmtx_order, an undo record, a
	                       * redo apply before retirement, log growth */
	PMTX_TBK_DURABLE = 2, /* makes durable: pmtx_barrier, pmtx_persist,
	                       * a commit, region creation and growth */
};

struct pmtx_trace_file_hdr {
	uint64_t magic;       /* PMTX_TRACE_MAGIC */
	uint16_t major;       /* PMTX_TRACE_MAJOR */
	uint16_t minor;       /* PMTX_TRACE_MINOR */
	uint16_t hdr_size;    /* sizeof(struct pmtx_trace_file_hdr) */
	uint16_t rec_size;    /* sizeof(struct pmtx_trace_rec) */
	uint32_t flags;       /* PMTX_TRACE_BYTES */
	uint32_t reserved0;   /* zero */
	uint64_t start_ns;    /* CLOCK_MONOTONIC at start */
};

struct pmtx_trace_rec {
	uint16_t type;        /* enum pmtx_trace_type */
	uint16_t flags;       /* PMTX_TRACE_RF_* */
	uint32_t tid;
	uint64_t time_ns;
	uint64_t region;      /* region id (invariant 3) */
	uint64_t off;
	uint64_t size;
	uint32_t arg;
	int32_t status;
};

_Static_assert(sizeof(struct pmtx_trace_file_hdr) == 32, "trace hdr size");
_Static_assert(sizeof(struct pmtx_trace_rec) == 48, "trace rec size");

/* Start recording to path (created or truncated). flags: PMTX_TRACE_*.
 * PMTX_E_TX_STATE if a trace is already running; errno on open failure. */
int pmtx_trace_start(const char *path, unsigned flags);
/* Write out every thread's buffered records and close the file. Returns
 * 0, or errno of a failed write. No-op if no trace is running. */
int pmtx_trace_stop(void);

/* ---- reader ---- */
typedef struct pmtx_trace_reader pmtx_trace_reader;

typedef struct pmtx_trace_event {
	struct pmtx_trace_rec rec;
	const uint8_t *bytes; /* rec.size bytes, or NULL; valid until next */
} pmtx_trace_event;

/* Open a trace file and check its header: PMTX_E_BAD_MAGIC,
 * PMTX_E_BAD_VERSION, PMTX_E_TRUNCATED, or errno. */
int pmtx_trace_open(const char *path, pmtx_trace_reader **out);
/* The file header (valid while the reader is open). */
const struct pmtx_trace_file_hdr *pmtx_trace_header(
	const pmtx_trace_reader *rd);
/* Next record: 0, 1 at the end, PMTX_E_TRUNCATED for a partial record,
 * PMTX_E_CORRUPT for an impossible one, or errno. */
int pmtx_trace_next(pmtx_trace_reader *rd, pmtx_trace_event *ev);
void pmtx_trace_close(pmtx_trace_reader *rd);
/* "STORE", "FLUSH", ... or "?" for a type this build does not know. */
const char *pmtx_trace_type_name(unsigned type);
/* "data", "log", ... ; "unknown" for 0 and for kinds this build does not
 * know. */
const char *pmtx_trace_store_kind_name(unsigned kind);
/* "order", "durable"; "unknown" for 0 and for kinds this build does not
 * know. */
const char *pmtx_trace_barrier_kind_name(unsigned kind);

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop
#endif /* PMTX_TRACE_H */
