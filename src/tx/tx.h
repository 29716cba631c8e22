/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tx.h - the transaction layer's internal interface.
 *
 * Layer: above heap/ and region/. tx.c holds what every runtime shares
 * (descriptor leasing, nesting, deferred operations, the allocation log,
 * argument checks); each runtime (undo.c, later redo.c, cow.c) implements
 * struct tx_runtime; recovery.c dispatches on the runtime recorded in
 * each descriptor.
 */
#ifndef PMTX_TX_H
#define PMTX_TX_H

#include <stdatomic.h>

#include <pthread.h>

#include "../common/mutant.h"
#include "../heap/heap.h"
#include "idxmap.h"
#include "lineset.h"
#include "log.h"

enum tx_state { TX_IDLE = 0, TX_RUNNING, TX_ABORTED };

/* What a queued redo transaction still needs (redo.c). */
enum { TRUNC_NONE = 0, TRUNC_RETIRE = 1, TRUNC_FLUSHED = 2 };

struct deferred {
	void (*fn)(void *);
	void *arg;
};

/* DRAM state of a transaction's allocation log; the persistent copy lives
 * in the descriptor's alloc-log chunks. */
struct alog {
	struct pmtx_alog_entry *e; /* DRAM copy, in order */
	size_t n, cap;
	uint64_t chunk;     /* offset of the chunk that receives entry n */
	uint64_t slot;      /* offset where entry n goes */
	uint64_t chunk_end;
	uint64_t flushed;   /* entries [0, flushed) have been flushed */
	/* the blocks the FREE entries of [0, indexed) free: built on demand
	 * once a transaction's log is long (alog_frees) */
	struct u64map freed;
	size_t indexed;
};

struct tx_runtime;

/* One cache line of a redo transaction's write set, in DRAM (redo.c): the
 * newest bytes the transaction wrote there, and which bytes those are. */
struct wline {
	uint64_t off;  /* the line's offset in the region */
	uint64_t mask; /* bit i: byte i written */
	unsigned char data[64];
};

/* A descriptor whose IDLE mark may not be durable yet, as seen by a
 * committer that flushes its line (retire cover, tx.c). */
struct cover {
	unsigned idx;
	uint64_t seq;
};

/* A copy-on-write object in a transaction's write set (cow.c). */
struct cow_ent {
	uint64_t wrapper, fresh, old; /* user offsets */
	int deleted;
};

/* PMTX_RT_AUTO (auto.c): the arm a transaction runs, and its start time
 * if it is timed (0 if not). */
#define AUTO_ARMS 3
struct auto_site;
struct auto_table;
struct auto_run {
	struct auto_site *site; /* NULL: not begun as AUTO */
	uint64_t t0;
	int arm;
	int timed; /* enum auto_timed */
};
enum auto_timed {
	AUTO_UNTIMED,
	AUTO_SAMPLE,  /* in a window: counts for the choice */
	AUTO_WARMUP,  /* in a window: a challenger's warm-up (screens only) */
	AUTO_WATCHED, /* outside windows: watched (auto.c A5) */
};

/* A range a twin transaction declared (twin.c). */
struct trange {
	uint64_t off, len;
};

struct pmtx_tx {
	pmtx_region *r;
	unsigned idx;             /* descriptor index */
	struct pmtx_desc *d;
	const struct tx_runtime *rt;
	pmtx_runtime kind;
	struct auto_run arun;     /* begun as PMTX_RT_AUTO */
	_Atomic uint64_t auto_runs[AUTO_ARMS]; /* ... under each arm, here */
	uint64_t version;         /* this transaction's version */
	uint64_t last_version;    /* highest version this descriptor used */
	int depth;
	enum tx_state state;
	int sv_written;           /* RUNNING statever written and flushed */
	int unfenced;             /* a naked pmtx_flush awaits a barrier */
	struct logw log;
	struct lineset lines;
	struct alog alog;
	struct deferred *defer;
	size_t ndefer, capdefer;
	uint64_t *recs;           /* offsets of this tx's records (twin:
	                           * of the lines it stored to) */
	size_t nrecs, caprecs;
	/* redo */
	uint64_t mybit;           /* writers bit, 0 for descriptors >= 64 */
	uint64_t obj_lo, obj_hi;  /* the object last written: [lo, hi) */
	struct idxmap objs;       /* objects carrying mybit (redo.c D13) */
	struct u64map wmap;       /* line offset -> index in wl */
	struct wline *wl;         /* the write set, in first-write order */
	size_t nwl, capwl;
	unsigned char *rbuf;      /* the write set as log entries (commit) */
	size_t rlen, rcap;
	uint64_t csn;             /* commit sequence number */
	struct cover *cov;        /* ndesc slots */
	size_t ncov;
	/* twin (twin.c) */
	struct trange *trng;      /* the ranges declared, in order */
	size_t ntrng, captrng;
	uint64_t twin_last;       /* the line noted last */
	unsigned char *stage;     /* commit: copies of the first lines */
	size_t capstage;          /* lines stage holds */
	/* copy-on-write */
	struct cow_ent *ws;
	size_t nws, capws;
	/* redo: the descriptor stays leased until its log is retired */
	atomic_int trunc_pending;  /* TRUNC_* */
	uint64_t flusher;          /* TRUNC_FLUSHED: tx_thread_id() of the
	                            * thread that flushed the data */
	atomic_int holds;          /* T4: parties still using the descriptor */
};

/* Per-region transaction manager. */
struct txm {
	unsigned ndesc;
	struct pmtx_tx *txs;
	_Atomic uint64_t *busy; /* leased descriptors, one bit each */
	atomic_int running;     /* transactions in flight */
	_Atomic uint64_t next_csn;
	/* Retire cover: descriptors whose IDLE mark may not be durable. */
	_Atomic uint64_t *pend_sum;  /* one bit per descriptor */
	_Atomic uint64_t *pend_seq;  /* IDLE marks written, per descriptor */
	_Atomic uint64_t *done_seq;  /* ... of which known durable */
	/* redo truncation queue, in commit order (redo.c D6) */
	atomic_int async_pending;    /* queued transactions */
	atomic_int async_rc;         /* first failed truncation, not yet
	                              * reported (sticky until reported) */
	pthread_mutex_t trunc_mutex; /* held while one is processed */
	atomic_int retiring;         /* redo IDLE stores under way (D12) */
	uint64_t q_popped;           /* transactions taken off the queue */
	pthread_mutex_t q_lock;
	pthread_cond_t q_cond;
	unsigned *q;                 /* ring of descriptor indexes */
	unsigned q_head, q_n;
	int thr_started, thr_stop, thr_sleeping;
	pthread_t thr;
	struct auto_table *autos;    /* PMTX_RT_AUTO's call sites */
	pthread_mutex_t twin_lock;   /* twin.c TW5: the running twin tx */
	uint64_t twin_seq;           /* twin transactions begun (rstate.twin) */
	int twin_resync;             /* a back copy's barrier failed (TW9) */
	int twin_sealed;             /* the last commit left MUTATING (TW10, TW13) */
	uint64_t *twin_bits;         /* twin.c: a bit per mirrored line */
};

struct tx_runtime {
	pmtx_runtime kind;
	int (*begin)(struct pmtx_tx *tx);
	int (*add_range)(struct pmtx_tx *tx, void *p, size_t n);
	int (*write)(struct pmtx_tx *tx, void *dst, const void *src, size_t n);
	int (*read)(struct pmtx_tx *tx, void *dst, const void *src, size_t n);
	int (*commit)(struct pmtx_tx *tx);
	/* Roll back everything the transaction wrote (durably). */
	int (*abort)(struct pmtx_tx *tx);
	/* Recovery of descriptor i, whose current transaction (not IDLE) wrote
	 * the n records recs (the last one is the COMMIT if committed).
	 * Roll back or roll forward the data, flushing what it writes, and
	 * set *wrote if it wrote anything; recovery.c adds the barriers, the
	 * allocation-log replay and the IDLE mark. */
	int (*recover)(pmtx_region *r, unsigned i, const struct pmtx_rec **recs,
	               size_t n, int committed, int *wrote);
};

/* The table of runtime p: its hooks are p_begin, p_add_range, p_write,
 * p_commit, p_abort and p_recover; read is named, as the runtimes that
 * store in place share one (tx_read_in_place). */
#define TX_RUNTIME(k, p, rd)                                                  \
	{                                                                     \
		.kind = (k), .begin = p##_begin, .add_range = p##_add_range,  \
		.write = p##_write, .read = (rd), .commit = p##_commit,       \
		.abort = p##_abort, .recover = p##_recover,                   \
	}

/* The write of a runtime that stores in place (undo, twin): note, its
 * add_range, keeps what [dst, dst+n) held, then the store. */
static inline int tx_write_in_place(struct pmtx_tx *tx, void *dst,
                                    const void *src, size_t n,
                                    int (*note)(struct pmtx_tx *, void *,
                                                size_t))
{
	int rc = note(tx, dst, n);
	if (rc)
		return rc;
	if (n == 8)
		pmtx_copy(dst, src, 8);
	else
		__builtin_memmove(dst, src, n); /* the two may overlap */
	TRACE_STORE(&tx->r->persist, dst, n, DATA);
	return 0;
}

/* Their read: the region holds what the transaction wrote. */
int tx_read_in_place(struct pmtx_tx *tx, void *dst, const void *src,
                     size_t n);

extern const struct tx_runtime undo_runtime;
extern const struct tx_runtime redo_runtime;
extern const struct tx_runtime redo_async_runtime;
extern const struct tx_runtime cow_runtime;
extern const struct tx_runtime twin_runtime;

const struct tx_runtime *tx_runtime_of(pmtx_runtime kind);

/* ---- PMTX_RT_AUTO (auto.c) ---- */
struct auto_table *auto_create(int rotate);
void auto_destroy(struct auto_table *t);
/* The runtime for a transaction begun at call site key; fills *run. */
pmtx_runtime auto_begin(struct auto_table *t, uintptr_t key,
                        struct auto_run *run);
/* The transaction of run committed: record its time if it was timed. */
void auto_commit(const struct auto_run *run);
/* The site of run uses pmtx_add_range: undo from now on (A2). */
void auto_pin_undo(struct auto_table *t, const struct auto_run *run);
/* A redo or redo-async transaction becomes an undo transaction (A2): its
 * write set is handed to write, which stores it through the undo runtime
 * (redo.c). */
int redo_to_undo(struct pmtx_tx *tx,
                 int (*write)(struct pmtx_tx *, void *, const void *,
                              size_t));

int txm_create(pmtx_region *r);
void txm_destroy(pmtx_region *r);
/* Run recovery for every descriptor, then mark log chunks internal. */
int tx_recover_all(pmtx_region *r);
int tx_mark_chunks(pmtx_region *r);

/* ---- helpers shared by the runtimes (tx.c) ---- */

/* Write and flush (version, runtime, RUNNING) once per transaction, before
 * its first barrier, so that once a record is durable (its barrier has
 * returned) the version is too. Before that barrier either may persist
 * without the other. */
void tx_mark_running(struct pmtx_tx *tx);
/* Store the descriptor's (version v, runtime kind, state st), mark_site
 * its mutation site (mutant.h); no flush. */
static inline void desc_store_state(pmtx_region *r, struct pmtx_desc *d,
                                    uint64_t v, pmtx_runtime kind,
                                    unsigned st, unsigned mark_site)
{
	if (!MUT_SKIP(mark_site)) {
		__atomic_store_n(&d->statever, PMTX_SV(v, kind, st),
		                 __ATOMIC_RELAXED);
		TRACE_STORE(&r->persist, &d->statever, 8, DESC);
	}
}
/* The same, then flush it. The callers' orderings differ, so each names
 * its own mutation sites for the store and the flush. */
static inline void desc_set_state(pmtx_region *r, struct pmtx_desc *d,
                                  uint64_t v, pmtx_runtime kind, unsigned st,
                                  unsigned mark_site, unsigned flush_site)
{
	desc_store_state(r, d, v, kind, st, mark_site);
	MUT_FLUSH(flush_site, &r->persist, &d->statever, 8);
}
/* 0 if tx is this thread's running transaction, else its status. */
int tx_check(pmtx_tx *tx);
/* Append rec to tx->recs (the offsets of this transaction's records):
 * 0 or ENOMEM. */
int tx_recs_push(struct pmtx_tx *tx, uint64_t rec);
/* Make room for extra more entries in tx->recs: 0 or ENOMEM. */
int tx_recs_reserve(struct pmtx_tx *tx, size_t extra);
/* ---- the twin runtime (twin.c) ---- */
/* Before storing to [p, p+n) (n may be 0): MUTATING durable once (TW2),
 * and the lines noted. 0, ENOMEM or a barrier's status. */
int twin_note(struct pmtx_tx *tx, const void *p, size_t n);
/* The DRAM state of twin region r (its line set): 0 or ENOMEM; undone
 * by twin_fini (safe on any region, and after a failed twin_init). */
int twin_init(pmtx_region *r);
void twin_fini(pmtx_region *r);
/* The end of a twin transaction: let the next one begin (TW5). */
void twin_end(struct pmtx_tx *tx);
/* Is [p, p+n) inside the mirrored area of twin region r? */
int twin_mirrored(const pmtx_region *r, const void *p, size_t n);
/* A naked flush outside transactions: copy [p, p+n) to the back copy
 * and flush it there (TW6), under the twin lock unless the caller holds
 * it (locked: the caller's own transaction in r has ended but not
 * returned). */
void twin_naked_flush(pmtx_region *r, const void *p, size_t n, int locked);
/* Undo naked stores to [p, p+n) that could not join the transaction:
 * the back copy over them, flushed. */
void twin_unstore(pmtx_region *r, void *p, size_t n);
/* Roll the running transaction back; it stays begun, aborted (tx.c). */
int tx_roll_back(struct pmtx_tx *tx);
/* Close: make IDLE durable (TW4). 0 or a barrier's status. */
int twin_close(pmtx_region *r);
/* Open: bring the two copies together (TW8). */
int twin_recover_copies(pmtx_region *r);
/* Open after a process crash (recovery.c R4): flush the seal and both
 * copies of every line it lists (flush site fsite). */
void twin_sweep_seal(pmtx_region *r, unsigned fsite);
/* Is [p, p+n) user data (root object or heap)? */
int tx_data_range_ok(const pmtx_region *r, const void *p, size_t n);
void alog_reset(struct pmtx_tx *tx);
int alog_append(struct pmtx_tx *tx, const struct pmtx_alog_entry *e);
/* Give back the reservations of a transaction that did not commit. */
void alog_unreserve(struct pmtx_tx *tx);
/* Does this transaction already free the block at boff? */
int alog_frees(struct pmtx_tx *tx, uint64_t boff);
void alog_drop_last(struct pmtx_tx *tx);
/* Retire cover (R3 in tx.c): before a commit's first barrier, flush the
 * descriptor line of every other descriptor whose IDLE mark may not be
 * durable; after the barrier, record that they are. */
void retire_cover_begin(struct pmtx_tx *tx);
void retire_cover_end(struct pmtx_tx *tx);
/* A redo log was retired: its IDLE mark is written and flushed. */
void retire_note(pmtx_region *r, unsigned idx);
/* The object (block or root) that holds off: its header at *base, and
 * the end of its bytes at *end. PMTX_E_RANGE if off is in no object. */
int tx_object_span(const pmtx_region *r, uint64_t off, uint64_t *base,
                   uint64_t *end);
/* Before writing or freeing the object at base: finish the truncation of
 * any redo-async transaction that still owns it (W1). */
int tx_resolve_conflicts(struct pmtx_tx *tx, uint64_t base);
/* A redo-async transaction allocated the block at user_off: put its
 * writers bit on it (redo.c D4b). */
int redo_own_alloc(struct pmtx_tx *tx, uint64_t user_off);
/* Process one queued transaction (redo.c; trunc_mutex held). */
int redo_truncate_one(struct pmtx_tx *tx);
/* Store IDLE for a transaction whose data is durable, then give back its
 * bits and freed blocks (redo.c step 3, D5, D12). */
void redo_retire(struct pmtx_tx *tx);
/* A number naming the calling thread, never reused. */
uint64_t tx_thread_id(void);
/* D12: right after a successful commit barrier of the calling thread,
 * retire the queue's head without a barrier if the caller flushed its
 * data and every IDLE mark stored so far is known durable. */
void async_retire_covered(pmtx_region *r);
/* Queue a committed redo transaction for truncation (kind TRUNC_*). */
int async_enqueue(struct pmtx_tx *tx, int kind);
/* Process the queue, in order, until tx is no longer pending (tx NULL:
 * process one). */
int drain_until(pmtx_region *r, struct pmtx_tx *tx);
/* The first error a background truncation met since the last call, or
 * 0; reported by the next pmtx_commit and by pmtx_close. */
int async_take_error(pmtx_region *r);
/* Process the whole queue now (the thread keeps running). */
void async_quiesce(pmtx_region *r);
/* Stop the truncation thread and process the whole queue. */
void async_drain(pmtx_region *r);
/* Close (R3): the IDLE marks still waiting for a cover, durable. 0 or a
 * barrier's status. */
int tx_close_cover(pmtx_region *r);
/* Flush the allocation-log entries not yet flushed. */
void alog_flush(struct pmtx_tx *tx);
/* Post-commit steps (iii) and (iv) for the allocation log: apply,
 * barrier, mark IDLE, barrier, then release freed blocks to DRAM. */
int alog_commit_apply(struct pmtx_tx *tx);
/* Replay a committed transaction's allocation log (recovery). */
int alog_replay(pmtx_region *r, unsigned i, uint64_t nentries);
/* Feed the first nentries entries of descriptor i's allocation log to h
 * (redo.c D9). PMTX_E_CORRUPT on a bad chunk link. */
int alog_hash(pmtx_region *r, unsigned i, uint64_t nentries,
              struct pmtx_hasher *h);

#endif
