/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmtx.h - failure-atomic transactions over memory-mapped persistent regions.
 *
 * This is the whole public API. Handles are opaque; every function that can
 * fail returns an int status: 0 on success, a positive errno value for an
 * operating-system error, or one of the negative PMTX_E_* codes below.
 * pmtx_strerror() turns any of them into a message. Out-parameters come last.
 *
 * What a transaction gives you
 * ----------------------------
 * FAILURE ATOMICITY, NOT ISOLATION. After a crash (process kill or power
 * loss) recovery leaves every transaction either wholly applied or wholly
 * absent, and a transaction whose pmtx_commit() returned 0 is never lost.
 * Transactions do NOT isolate threads from each other: two threads that
 * update the same data must hold a lock, and must keep holding it until the
 * transaction has ended. The pattern is the deferred lock release:
 *
 *     pthread_mutex_lock(&m);
 *     pmtx_tx *tx;
 *     pmtx_begin(r, PMTX_RT_DEFAULT, &tx);
 *     pmtx_defer_unlock(tx, &m);       // unlocked after commit or abort
 *     pmtx_write(tx, &obj->count, &n, sizeof n);
 *     pmtx_commit(tx);                 // m is released here, after commit
 *
 * Releasing the lock before the transaction ends lets another thread read
 * data that may still be rolled back.
 *
 * Persistent pointers are offsets (pmtx_off) from the start of the region;
 * 0 is the null offset. Convert with pmtx_ptr()/pmtx_off_of() or the typed
 * PMTX_PTR() macro. Never store a virtual address in a region.
 */
#ifndef PMTX_H
#define PMTX_H
/* The library is built with -fvisibility=hidden: what is declared here,
 * and only that, is exported from libpmtx.so. */
#pragma GCC visibility push(default)

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PMTX_VERSION_MAJOR 0
#define PMTX_VERSION_MINOR 3
#define PMTX_VERSION_PATCH 0
#define PMTX_VERSION_STRING "0.3.0"

/* Run-time check that the library matches the header (major must match). */
const char *pmtx_version(int *major, int *minor, int *patch);

/* ------------------------------------------------------------------------
 * Status codes. 0 is success; positive values are errno; these are pmtx's.
 * Persisted nowhere, but kept stable: only ever appended.
 * ---------------------------------------------------------------------- */
enum {
	PMTX_E_FIRST = -30900,
	PMTX_E_INVAL = PMTX_E_FIRST, /* invalid argument */
	PMTX_E_TOO_SMALL,            /* file or requested size too small */
	PMTX_E_BAD_MAGIC,            /* not a pmtx region */
	PMTX_E_BAD_VERSION,          /* unsupported format version/features */
	PMTX_E_BAD_LAYOUT,           /* layout name differs from the expected */
	PMTX_E_BAD_CHECKSUM,         /* header checksum mismatch */
	PMTX_E_LOCKED,               /* region already open in another process */
	PMTX_E_NO_SPACE,             /* file system has too little free space */
	PMTX_E_CORRUPT,              /* region metadata fails validation */
	PMTX_E_NOMEM,                /* region heap exhausted */
	PMTX_E_NO_TX,                /* no transaction is running */
	PMTX_E_ABORTED,              /* transaction was aborted */
	PMTX_E_TX_STATE,             /* call not legal in the tx's state */
	PMTX_E_BUSY,                 /* all transaction descriptors in use */
	PMTX_E_RANGE,                /* address outside the region */
	PMTX_E_UNSUPPORTED,          /* not supported by this runtime/backend */
	PMTX_E_IO,                   /* a persist barrier failed (msync) */
	PMTX_E_TRUNCATED,            /* file shorter than the size it records */
	PMTX_E_NOT_FOUND,            /* no such key or element (containers) */
	PMTX_E_EXISTS,               /* the key exists (a put with NX) */
	PMTX_E_TOO_BIG,              /* a length over the documented limit */
	PMTX_E_NOT_CONTAINER,        /* the offset names no container of the
	                              * kind asked for */
	PMTX_E_LAST
};

/* Message for any status returned by pmtx (or an errno value). */
const char *pmtx_strerror(int status);
/* Detail of the last failed pmtx_create/pmtx_open/pmtx_heap_check in this
 * thread (for example which field was wrong), or "". */
const char *pmtx_errmsg(void);

/* ------------------------------------------------------------------------
 * Persistence domains and backends (seed 000 section 2).
 * ---------------------------------------------------------------------- */
typedef enum pmtx_domain {
	PMTX_PDOM0 = 0, /* flush + fence + memory-controller commit delay */
	PMTX_PDOM1 = 1, /* flush + fence (ADR) */
	PMTX_PDOM2 = 2, /* no flush; barrier is an ordering fence (eADR) */
} pmtx_domain;

typedef enum pmtx_backend {
	PMTX_BACKEND_HARDWARE = 0, /* clwb/clflushopt/clflush + sfence */
	PMTX_BACKEND_EMULATED = 1, /* flush is a no-op, barrier spins N ns */
	PMTX_BACKEND_FILE = 2,     /* barrier = msync of the pages flushed */
	PMTX_BACKEND_JOURNAL = 3,  /* barrier = the lines flushed appended to
	                            * "<region>.pmtxj", fdatasync'd if durable;
	                            * pages written back at checkpoints */
} pmtx_backend;

/* Transaction runtimes. PMTX_RT_DEFAULT means "the region's default". */
typedef enum pmtx_runtime {
	PMTX_RT_DEFAULT = 0,
	PMTX_RT_UNDO = 1,
	PMTX_RT_REDO = 2,
	PMTX_RT_REDO_ASYNC = 3,
	PMTX_RT_COW = 4,
	PMTX_RT_AUTO = 5, /* chosen per call site by measured cost: see below */
	PMTX_RT_TWIN = 6, /* twin regions only: in place, back copy; see below */
} pmtx_runtime;

const char *pmtx_domain_name(pmtx_domain d);   /* "pdom0" ... */
const char *pmtx_backend_name(pmtx_backend b); /* "hardware" ... */
const char *pmtx_runtime_name(pmtx_runtime rt); /* "undo" ... */
/* Parse the names above; return 0 or PMTX_E_INVAL. */
int pmtx_domain_parse(const char *s, pmtx_domain *out);
int pmtx_backend_parse(const char *s, pmtx_backend *out);
int pmtx_runtime_parse(const char *s, pmtx_runtime *out);

/* Name of the flush instruction chosen from CPUID: "clwb", "clflushopt"
 * or "clflush". */
const char *pmtx_flush_instruction(void);

/* ------------------------------------------------------------------------
 * Regions.
 * ---------------------------------------------------------------------- */
typedef struct pmtx_region pmtx_region;
typedef uint64_t pmtx_off;

#define PMTX_LAYOUT_MAX 63

/* Who runs the deferred truncations of redo-async transactions.
 * THREAD: a background thread per region, started at the first one.
 * LAZY: no thread; a truncation waits until its descriptor or one of its
 * objects is needed by another transaction, or the region is closed.
 * Deterministic (the crash-state explorer uses it), and for machines
 * where a second thread would compete with the application. */
typedef enum pmtx_truncation {
	PMTX_TRUNC_THREAD = 0,
	PMTX_TRUNC_LAZY = 1,
} pmtx_truncation;

typedef struct pmtx_options {
	const char *layout;     /* layout name, checked on open; NULL = "" */
	size_t root_size;       /* create: bytes of the root object */
	pmtx_domain domain;     /* default PMTX_PDOM1 */
	pmtx_backend backend;   /* default PMTX_BACKEND_HARDWARE */
	int64_t barrier_ns;     /* extra barrier latency; -1 = domain default */
	pmtx_runtime runtime;   /* create: default runtime (undo) */
	unsigned ndesc;         /* create: transaction descriptors (64) */
	pmtx_truncation truncation; /* redo-async: who truncates */
	size_t max_size;        /* create: 0 = fixed size; else the heap grows
	                         * on demand, extending the file, up to this
	                         * many bytes of region (see "Growth") */
	unsigned flags;         /* open: PMTX_OPEN_*; create: PMTX_CREATE_* */
} pmtx_options;

/* pmtx_options.flags */
/* Open a private, copy-on-write view of the region: the file is opened
 * read-only (shared lock: refused while another process has it open for
 * writing) and is never written. Recovery, transactions and growth change
 * this process's view only, and no barrier reaches storage. For checking
 * and inspecting a region (pmtx check, pmtx info). */
#define PMTX_OPEN_PRIVATE 1u
/* PMTX_RT_AUTO takes undo, redo and redo-async in turn, one transaction
 * each, instead of choosing by cost: every runtime is exercised, in a
 * reproducible order (tests, the crash-state explorer). */
#define PMTX_OPEN_AUTO_ROTATE 2u
/* Open a region whose journal (the journal backend's "<file>.pmtxj") is
 * missing while the region says its newest commits are there, as of its
 * last checkpoint: those commits are lost. Without it such an open fails
 * with PMTX_E_CORRUPT and changes nothing. */
#define PMTX_OPEN_FORGET_JOURNAL 4u
/* Create a twin region in which every transaction that writes makes its
 * own MUTATING word durable first, as twin regions of format 3.4 did:
 * one barrier more for a small transaction that follows a small one (3,
 * not 2), and in return a crash at rest (after a commit, no transaction
 * running) is recovered by copying the last commit's lines (at most 48)
 * instead of a pass over the heap in use (see PMTX_RT_TWIN). */
#define PMTX_CREATE_TWIN_FAST_RESTART 8u

/* Fill *o with the defaults. Always call before setting fields. */
void pmtx_options_init(pmtx_options *o);

/* Create a new region file (mode 0600). Fails with EEXIST if it exists.
 * The file is built as "<path>.creating" and renamed to path once it is
 * complete and durable, so a crash during create leaves either no file
 * at path or a whole region (a leftover "<path>.creating" is reused by
 * the next create; PMTX_E_LOCKED while another process is creating it).
 *
 * Growth. With o->max_size > size, the region starts at size bytes and
 * grows when its heap runs out: the file is extended (doubling the heap,
 * at most 1 GiB per step, never past max_size) and the new space is added
 * to the heap. The whole maximum is reserved as address space when the
 * region is mapped, so the mapping never moves: a pointer into the region
 * stays valid for as long as the region is open. A growth is failure
 * atomic (a crash leaves the old size or the new one), and an allocation
 * that cannot grow the region (maximum reached, file system full, file
 * size limit) fails with PMTX_E_NOMEM and a message (pmtx_errmsg); the
 * transaction can then be aborted, and nothing committed is lost. Open
 * and recovery read only the heap actually in use, not the maximum. */
int pmtx_create(const char *path, size_t size, const pmtx_options *o,
                pmtx_region **out);
/* Open and recover an existing region. o may be NULL for the defaults;
 * the layout name, when given, must match. */
int pmtx_open(const char *path, const pmtx_options *o, pmtx_region **out);
/* Unmap and unlock. Fails with PMTX_E_TX_STATE if a transaction of this
 * region is still running in some thread. */
int pmtx_close(pmtx_region *r);
/* Run every deferred redo-async truncation now, in this thread; returns
 * the first error a truncation met since the last report (PMTX_E_IO), or
 * 0. Committed transactions are durable without it: it only retires
 * their logs and gives their descriptors and freed blocks back. */
int pmtx_drain(pmtx_region *r);

/* The root object and its size (as given at creation). */
void *pmtx_root(pmtx_region *r, size_t *size);
/* Bytes in use now (grows), and the most the region may grow to. */
size_t pmtx_region_size(const pmtx_region *r);
size_t pmtx_region_max_size(const pmtx_region *r);
pmtx_domain pmtx_region_domain(const pmtx_region *r);
pmtx_backend pmtx_region_backend(const pmtx_region *r);
pmtx_runtime pmtx_region_runtime(const pmtx_region *r);
/* Region UUID, 16 bytes. */
void pmtx_region_uuid(const pmtx_region *r, uint8_t uuid[16]);

/* Offset <-> pointer. pmtx_ptr returns NULL for 0 or an offset outside the
 * region; pmtx_off_of returns 0 for a pointer outside the region. */
void *pmtx_ptr(const pmtx_region *r, pmtx_off off);
pmtx_off pmtx_off_of(const pmtx_region *r, const void *p);
#define PMTX_PTR(r, off, type) ((type *)pmtx_ptr((r), (off)))

/* ------------------------------------------------------------------------
 * Naked persistence: write back and order stores made outside the
 * transaction API (the seed's "unwrap + flush + barrier" path, e.g. to
 * initialise an object allocated in the running transaction).
 * A flush issued inside a transaction is made durable by that transaction's
 * commit, with no barrier of its own.
 * ---------------------------------------------------------------------- */
void pmtx_flush(pmtx_region *r, const void *p, size_t n);
int pmtx_barrier(pmtx_region *r);
/* An ordering barrier: the stores made durable by earlier flushes of this
 * thread persist before any later one, but need not be durable when it
 * returns. On today's x86 it is the same fence as pmtx_barrier (and is
 * counted as a barrier); the persistence trace records which of the two
 * was asked for, so a model of hardware with a cheaper ordering fence
 * (`pmtx trace hops`) can tell them apart. Returns 0 or a status like
 * pmtx_barrier. */
int pmtx_order(pmtx_region *r);
int pmtx_persist(pmtx_region *r, const void *p, size_t n); /* both */
/* Copy with non-temporal stores (durable after the next barrier). */
void pmtx_memcpy_nt(pmtx_region *r, void *dst, const void *src, size_t n);

/* ------------------------------------------------------------------------
 * Transactions.
 * ---------------------------------------------------------------------- */
typedef struct pmtx_tx pmtx_tx;

/* Begin a transaction in region r with runtime rt. Inside a running
 * transaction of the same thread and region, nests (flat): *out is the
 * running transaction and only the outermost commit commits. */
int pmtx_begin(pmtx_region *r, pmtx_runtime rt, pmtx_tx **out);
/* Commit. Returns 0 once the transaction is durable (outermost), or
 * PMTX_E_ABORTED if it had been aborted. An inner commit returns 0.
 * PMTX_E_IO: a barrier failed on the disk (file and journal backends).
 * The transaction was rolled back if that happened before its COMMIT
 * record was written, and is applied in memory otherwise; whether it is
 * durable is unknown, and every later barrier of the region fails until
 * it is closed and opened again (which replays what the disk kept).
 * Under redo-async it may also report an earlier transaction's log
 * truncation that failed in the background. */
int pmtx_commit(pmtx_tx *tx);
/* Abort the whole (flattened) transaction: every write is rolled back,
 * every allocation undone, every free cancelled. Ends the level it is
 * called at, like a commit: inside a nested level, the enclosing levels'
 * pmtx_commit() then return PMTX_E_ABORTED; at the outermost level the
 * transaction is over (a later pmtx_commit() returns PMTX_E_NO_TX).
 * Returns 0, or PMTX_E_IO if a barrier of the rollback failed. */
int pmtx_abort(pmtx_tx *tx);
/* The transaction running in this thread, or NULL. */
pmtx_tx *pmtx_tx_current(void);
pmtx_region *pmtx_tx_region(const pmtx_tx *tx);
/* The runtime the transaction runs: never PMTX_RT_AUTO or DEFAULT. */
pmtx_runtime pmtx_tx_runtime(const pmtx_tx *tx);

/* PMTX_RT_AUTO (as pmtx_begin's rt, or as the region's default runtime,
 * pmtx_options.runtime at create): each transaction runs under undo, redo or
 * redo-async, chosen for the call site of pmtx_begin from the measured time
 * of that site's own transactions (redo until its first trial). The first
 * trial starts after the site's first 256 transactions. A trial is 224
 * transactions, one contiguous block per runtime: 32 under the runtime
 * chosen last, all timed, then for each other runtime 64 whose times do not
 * count (a runtime's first transactions after a switch are slower than the
 * rest) and 32 timed. A challenger is dropped from the trial, the rest of
 * its block running the cheapest runtime measured so far, when the median of
 * its last 4 timed transactions is over 1.5 times the lowest median of the
 * runtimes measured before it in the trial (or over 4 times, over its first
 * 4 warm-up ones, or 8 times, at its very first). The runtime with the
 * lowest median of its 32 timed transactions then runs the site's
 * transactions until the next trial, 1,024 transactions later, the gap
 * doubling up to 65,536 while the same runtime keeps winning. Between trials
 * one transaction in 64 is timed; when the median of 8 of those has moved by
 * more than 1.5 times from the winner's, either way, a trial starts at once
 * and the gap starts again at 1,024. Copy-on-write is never chosen. A call
 * site that uses pmtx_add_range (an in-place store, which only undo can roll
 * back) runs undo from then on; the transaction that first calls it under
 * redo is turned into an undo transaction at that call, its writes kept. The
 * choice is per open: nothing of it is stored in the region. A call site is
 * the return address of pmtx_begin, so a helper that begins transactions for
 * many callers is one site unless inlined. */
typedef struct pmtx_auto_stats {
	uint64_t undo, redo, redo_async; /* transactions begun under each */
} pmtx_auto_stats;
int pmtx_auto_stats_get(pmtx_region *r, pmtx_auto_stats *st);

/* PMTX_RT_TWIN (the Romulus design): a twin region keeps a back copy of
 * its root and heap. A region is a twin region when it is created with
 * pmtx_options.runtime = PMTX_RT_TWIN, and then every transaction in it
 * runs twin: PMTX_RT_DEFAULT and PMTX_RT_AUTO mean twin there, and any
 * other runtime is refused with PMTX_E_UNSUPPORTED (as PMTX_RT_TWIN is in
 * any other region). A twin transaction stores in place and reads with
 * plain loads; commit writes back the lines it stored to with a seal
 * (their list and a checksum of their contents) or, past 48 lines, makes
 * the commit durable with one word, then copies those lines to the back
 * copy: 3 barriers for a transaction of at most 48 lines, 4 above, one
 * fewer after a transaction that committed by its seal (2 in a run of
 * small ones), and none for one that only reads. After a crash, open
 * copies the back copy over the data (the transaction had not committed)
 * or the data over the back copy (it had), over the root, the heap
 * metadata and the superblocks in use, so recovery reads the heap in use
 * (twice: both copies). Even after a crash at rest: a transaction may
 * have stored under the last commit's word, unless the region was
 * created with PMTX_CREATE_TWIN_FAST_RESTART (one barrier more a
 * transaction; a crash at rest then copies the last commit's lines).
 * Twin transactions of a region run one at a time: pmtx_begin waits for
 * the running one to end, so a thread must not wait, inside a twin
 * transaction, for a lock that another thread may hold while it begins
 * one. pmtx_add_range costs nothing more than a pmtx_write; naked stores
 * need pmtx_flush or pmtx_persist to reach the back copy too (inside a
 * transaction a pmtx_flush joins the range to the transaction, which is
 * safe for stores made after its first store or allocation, e.g. into a
 * block it allocated; declare existing data with pmtx_add_range before
 * storing to it; outside, the copy waits for a running twin transaction
 * to end). A twin
 * region has a fixed size (max_size is refused) and holds half as much
 * heap as another region of its size. */

/* Write n bytes from src to persistent dst (which must lie in the region). */
int pmtx_write(pmtx_tx *tx, void *dst, const void *src, size_t n);
/* Declare that the caller is about to store into [p, p+n) directly. */
int pmtx_add_range(pmtx_tx *tx, void *p, size_t n);
/* Read n bytes of persistent data, as this transaction sees them. Under
 * undo logging this is a plain memcpy. */
int pmtx_read(pmtx_tx *tx, void *dst, const void *src, size_t n);
int pmtx_memset(pmtx_tx *tx, void *dst, int c, size_t n);
#define pmtx_memcpy pmtx_write

/* Allocate n bytes (16-byte aligned) in the region's heap. Legal only
 * inside a transaction; undone if the transaction does not commit. The
 * memory's contents are unspecified: initialise it with pmtx_write, or with
 * naked stores followed by pmtx_flush (no barrier needed). A heap with no
 * room left grows the region (up to its maximum size); if it cannot, it
 * takes back the blocks freed by committed redo-async transactions still
 * queued for truncation (it truncates them now); PMTX_E_NOMEM if neither
 * makes room. */
int pmtx_alloc(pmtx_tx *tx, size_t n, pmtx_off *out);
/* Like pmtx_alloc, and zero the block (flushed, durable at commit). */
int pmtx_zalloc(pmtx_tx *tx, size_t n, pmtx_off *out);
/* Free a block. Takes effect only when the transaction commits. */
int pmtx_free(pmtx_tx *tx, pmtx_off off);
/* Usable size of an allocated block (>= the size asked for), or 0 if
 * off names none (pmtx's own log chunks are not blocks). */
size_t pmtx_usable_size(pmtx_region *r, pmtx_off off);

/* Run fn(arg) once the outermost transaction has committed or aborted,
 * in registration order. */
int pmtx_defer(pmtx_tx *tx, void (*fn)(void *arg), void *arg);
/* Unlock m once the outermost transaction has committed or aborted. */
int pmtx_defer_unlock(pmtx_tx *tx, pthread_mutex_t *m);

/* ------------------------------------------------------------------------
 * Copy-on-write objects (seed 000 section 4.3). A wrapper is a small block
 * that names the current payload of one object; a transaction that opens
 * it for writing gets a private copy, which replaces the old payload when
 * the transaction commits. The copy-on-write runtime (PMTX_RT_COW) works
 * only through wrappers: pmtx_write, pmtx_read, pmtx_add_range and
 * pmtx_memset return PMTX_E_UNSUPPORTED under it. Other runtimes may open
 * wrappers for reading.
 * ---------------------------------------------------------------------- */
enum { PMTX_COW_READ = 0, PMTX_COW_WRITE = 1 };
/* Copy constructor: make dst (n bytes, fresh) a copy of src. */
typedef void (*pmtx_copy_fn)(void *dst, const void *src, size_t n);

/* A new object of size bytes (zeroed), and its wrapper. */
int pmtx_cow_new(pmtx_tx *tx, size_t size, pmtx_off *wrapper);
/* The payload to use: the current one (READ), or this transaction's
 * private copy (WRITE; made with copy, memcpy if NULL, on first open).
 * PMTX_E_BUSY if another running transaction writes the object. Stores
 * to a WRITE payload need no pmtx call: commit persists the whole copy. */
int pmtx_cow_open(pmtx_tx *tx, pmtx_off wrapper, int mode, pmtx_copy_fn copy,
                  void **payload);
/* Free the object (wrapper and payload) when the transaction commits. */
int pmtx_cow_delete(pmtx_tx *tx, pmtx_off wrapper);
/* The committed payload, for reading outside any transaction. */
const void *pmtx_cow_peek(pmtx_region *r, pmtx_off wrapper);

/* Typed wrappers, the counterpart of the seed's DEFINE_PM_TYPE: for a
 * struct T, declares pm_T (a wrapper offset) and pm_T_new/_open/_peek. */
#define PMTX_DEFINE_PM_TYPE(T)                                                \
	typedef struct { pmtx_off w; } pm_##T;                                \
	static inline int pm_##T##_new(pmtx_tx *tx, pm_##T *out)              \
	{                                                                     \
		return pmtx_cow_new(tx, sizeof(struct T), &out->w);           \
	}                                                                     \
	static inline int pm_##T##_open(pmtx_tx *tx, pm_##T o, int mode,      \
	                                pmtx_copy_fn copy,                    \
	                                struct T **out)                       \
	{                                                                     \
		return pmtx_cow_open(tx, o.w, mode, copy, (void **)out);      \
	}                                                                     \
	static inline const struct T *pm_##T##_peek(pmtx_region *r,          \
	                                             pm_##T o)                \
	{                                                                     \
		return (const struct T *)pmtx_cow_peek(r, o.w);               \
	}
/* TXN_OPEN(txn, obj, mode, copy_ctor, &ptr) for a pm_T obj. */
#define PMTX_TXN_OPEN(tx, obj, mode, copy, outp)                             \
	pmtx_cow_open((tx), (obj).w, (mode), (copy), (void **)(outp))

/* ------------------------------------------------------------------------
 * Convenience macros in the spirit of the seed's Figure 3. Each evaluates
 * to an int status. obj is a pointer to a struct in the region.
 * ---------------------------------------------------------------------- */
#define PMTX_TXN_BEGIN(r, tx) pmtx_begin((r), PMTX_RT_DEFAULT, &(tx))
#define PMTX_TXN_READ(tx, obj, field, dstp)                                  \
	pmtx_read((tx), (dstp), &(obj)->field, sizeof((obj)->field))
#define PMTX_TXN_WRITE(tx, obj, field, srcp)                                 \
	pmtx_write((tx), &(obj)->field, (srcp), sizeof((obj)->field))
/* Typed field form: PMTX_TXN_SET(tx, obj, field, value). */
#define PMTX_TXN_SET(tx, obj, field, value)                                  \
	PMTX_SET(tx, (obj)->field, value)
/* Any lvalue in the region: PMTX_SET(tx, a[i], value). */
#define PMTX_SET(tx, lvalue, value)                                          \
	pmtx_write((tx), &(lvalue), (__typeof__(lvalue)[1]){ [0] = (value) }, \
	           sizeof(lvalue))
#define PMTX_TXN_COMMIT(tx) pmtx_commit(tx)
#define PMTX_TXN_ABORT(tx) pmtx_abort(tx)
/* Unwrap + flush + barrier for naked stores. */
#define PMTX_UNWRAP(r, off, type) PMTX_PTR(r, off, type)

#ifndef PMTX_NO_SHORT_MACROS
#define TXN_BEGIN PMTX_TXN_BEGIN
#define TXN_READ PMTX_TXN_READ
#define TXN_WRITE PMTX_TXN_WRITE
#define TXN_SET PMTX_TXN_SET
#define TXN_COMMIT PMTX_TXN_COMMIT
#define TXN_ABORT PMTX_TXN_ABORT
#define TXN_OPEN PMTX_TXN_OPEN
#endif

/* ------------------------------------------------------------------------
 * Per-thread counters. Exact: every barrier and every flushed cache line
 * issued by this thread through pmtx is counted, in every backend.
 * ---------------------------------------------------------------------- */
typedef struct pmtx_counters {
	uint64_t barriers;     /* persist barriers (logical, any domain) */
	uint64_t flushes;      /* cache lines written back (0 under PDOM-2) */
	uint64_t bytes_logged; /* bytes appended to persistent logs */
	uint64_t nt_bytes;     /* bytes copied with non-temporal stores */
	uint64_t msyncs;       /* page runs written back (file backend): an
	                        * msync each, or in a barrier of several
	                        * runs a sync_file_range each, then one
	                        * fdatasync */
} pmtx_counters;

void pmtx_counters_get(pmtx_counters *out);
void pmtx_counters_reset(void);

/* ------------------------------------------------------------------------
 * Heap inspection.
 * ---------------------------------------------------------------------- */
#define PMTX_HEAP_MAX_CLASSES 64

typedef struct pmtx_heap_stats {
	uint64_t superblocks;       /* superblocks in the heap */
	uint64_t free_superblocks;
	uint64_t allocated_bytes;   /* block bytes in use (user + header) */
	uint64_t free_bytes;        /* block bytes free in small superblocks */
	uint64_t allocated_blocks;
	uint64_t internal_blocks;   /* blocks used by pmtx's own logs */
	uint64_t errors;            /* inconsistencies found */
	unsigned nclasses;
	struct {
		uint32_t block_size;
		uint64_t allocated;     /* blocks */
		uint64_t free;          /* blocks */
	} cls[PMTX_HEAP_MAX_CLASSES];
	char first_error[160];
} pmtx_heap_stats;

/* Walk the persistent heap metadata and check it against itself and
 * against the in-DRAM free lists. Returns 0 if consistent, PMTX_E_CORRUPT
 * otherwise (details in *st). Call with no transaction running. */
int pmtx_heap_check(pmtx_region *r, pmtx_heap_stats *st);
/* Call fn for every block the user has allocated (pmtx's own log chunks
 * are not reported). Stops early and returns fn's value if nonzero. */
int pmtx_heap_walk(pmtx_region *r,
                   int (*fn)(pmtx_off off, size_t usable, void *arg),
                   void *arg);

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop
#endif /* PMTX_H */
