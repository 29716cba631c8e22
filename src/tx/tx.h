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

#include "../heap/heap.h"
#include "lineset.h"
#include "log.h"

enum tx_state { TX_IDLE = 0, TX_RUNNING, TX_ABORTED };

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
};

struct tx_runtime;

struct pmtx_tx {
	pmtx_region *r;
	unsigned idx;             /* descriptor index */
	struct pmtx_desc *d;
	const struct tx_runtime *rt;
	pmtx_runtime kind;
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
	uint64_t *recs;           /* offsets of this tx's records (undo) */
	size_t nrecs, caprecs;
};

/* Per-region transaction manager. */
struct txm {
	unsigned ndesc;
	struct pmtx_tx *txs;
	_Atomic uint64_t *busy; /* leased descriptors, one bit each */
	atomic_int running;     /* transactions in flight */
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

extern const struct tx_runtime undo_runtime;

const struct tx_runtime *tx_runtime_of(pmtx_runtime kind);

int txm_create(pmtx_region *r);
void txm_destroy(pmtx_region *r);
/* Run recovery for every descriptor, then mark log chunks internal. */
int tx_recover_all(pmtx_region *r);
int tx_mark_chunks(pmtx_region *r);

/* ---- helpers shared by the runtimes (tx.c) ---- */

/* Write and flush (version, runtime, RUNNING) once per transaction, before
 * its first barrier, so that a durable record implies a durable version. */
void tx_mark_running(struct pmtx_tx *tx);
/* Durably mark the descriptor IDLE at version v (store + flush only). */
void desc_set_idle(pmtx_region *r, struct pmtx_desc *d, uint64_t v,
                   pmtx_runtime kind);
/* Is [p, p+n) user data (root object or heap)? */
int tx_data_range_ok(const pmtx_region *r, const void *p, size_t n);
void alog_reset(struct pmtx_tx *tx);
int alog_append(struct pmtx_tx *tx, const struct pmtx_alog_entry *e);
/* Give back the reservations of a transaction that did not commit. */
void alog_unreserve(struct pmtx_tx *tx);
/* Does this transaction already free the block at boff? */
int alog_frees(const struct pmtx_tx *tx, uint64_t boff);
/* Flush the allocation-log entries not yet flushed. */
void alog_flush(struct pmtx_tx *tx);
/* Post-commit steps (iii) and (iv) for the allocation log: apply,
 * barrier, mark IDLE, barrier, then release freed blocks to DRAM. */
int alog_commit_apply(struct pmtx_tx *tx);
/* Replay a committed transaction's allocation log (recovery). */
int alog_replay(pmtx_region *r, unsigned i, uint64_t nentries);

#endif
