/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tx.c - what every runtime shares: descriptor leasing, flat nesting,
 * deferred operations, allocation, argument checks, and the public
 * transaction API, which dispatches to the runtime chosen at begin.
 *
 * Invariants
 *  T1. A thread runs at most one transaction at a time (nested begins in
 *      the same region join it: flat nesting). It owns one descriptor for
 *      the transaction's lifetime; the descriptor returns to the pool only
 *      after the outermost commit or abort has finished every persist step
 *      and run the deferred operations.
 *  T2. Versions are unique: each open starts every descriptor at a random
 *      56-bit version and adds one per transaction, so no record left in a
 *      log by any earlier transaction (even one that died before its
 *      version reached statever) can pass as a record of the running one.
 *      Versions are only ever compared for equality. (version, runtime,
 *      RUNNING) is written and flushed before the transaction's first
 *      barrier.
 *  T3. Deferred operations run once, in registration order, after the
 *      outermost transaction has committed or aborted (so a deferred lock
 *      release never exposes data that could still be rolled back).
 *  T4. A redo transaction queued for truncation is held by two parties:
 *      the thread that committed it, until it has run the deferred
 *      operations, and the truncation. The descriptor (with its DRAM
 *      state: deferred list, write set) returns to the pool only when both
 *      are done, whichever finishes last.
 *  T5. A thread leases the descriptor it used last if that is free, else
 *      its pair (index ^ 1), else the first free one after it. A thread
 *      that commits redo-async transactions one after another holds each
 *      one's descriptor until its next commit retires it (redo.c D12), so
 *      it alternates between two descriptors, whose DRAM buffers (write
 *      set, record buffer, maps) and log lines stay warm. Walking on
 *      through all of them instead cost each one page faults and cache
 *      misses at its first use.
 *  R3. Retire cover. A redo log marked IDLE with a store, but no flush
 *      and no barrier of its own (redo.c, step 3), is recorded in
 *      pend_seq. Every commit, and every truncation (redo.c D6), flushes
 *      the descriptor line of each such descriptor before its barrier, and
 *      records them as durable after it. The flush must be the barrier's
 *      own thread's: a barrier does not wait for another thread's
 *      flushes. So a retirement is durable no later than the first
 *      barrier of any commit or truncation that began after it, which is
 *      what D4(a) needs: no later transaction's commit can be durable
 *      while an older log that recovery would replay over it is not yet
 *      retired. A clean close makes the retirements still pending
 *      durable (tx_close_cover) before it clears the open mark (layout.h
 *      G4): the next process keeps no pend_seq, and a transaction of
 *      its own over the same data must not become durable before them.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/mutant.h"
#include "objbits.h"
#include "tx.h"


static _Thread_local struct pmtx_tx *tls_tx;
static _Thread_local unsigned tls_hint;

const struct tx_runtime *tx_runtime_of(pmtx_runtime kind)
{
	switch (kind) {
	case PMTX_RT_UNDO:
		return &undo_runtime;
	case PMTX_RT_REDO:
		return &redo_runtime;
	case PMTX_RT_REDO_ASYNC:
		return &redo_async_runtime;
	case PMTX_RT_COW:
		return &cow_runtime;
	case PMTX_RT_TWIN:
		return &twin_runtime;
	default:
		return NULL;
	}
}

/* ---- descriptors ---- */

static int tx_init(pmtx_region *r, struct pmtx_tx *tx, unsigned i)
{
	tx->r = r;
	tx->idx = i;
	tx->d = region_desc(r, i);
	uint64_t seed[2] = {r->gen, i};
	tx->last_version = pmtx_checksum(seed, sizeof(seed), 7) >> 8; /* T2 */
	tx->mybit = i < 64 ? 1ull << i : 0;
	tx->cov = calloc(r->hdr->ndesc, sizeof(*tx->cov));
	if (!tx->cov || lineset_init(&tx->lines) || idxmap_init(&tx->objs) ||
	    u64map_init(&tx->wmap))
		return ENOMEM;
	return 0;
}

int txm_create(pmtx_region *r)
{
	struct txm *m = calloc(1, sizeof(*m));
	if (!m)
		return ENOMEM;
	unsigned nw = (r->hdr->ndesc + 63) / 64;
	m->ndesc = r->hdr->ndesc;
	m->txs = calloc(m->ndesc, sizeof(*m->txs));
	m->busy = calloc(nw, sizeof(*m->busy));
	m->pend_sum = calloc(nw, sizeof(*m->pend_sum));
	m->pend_seq = calloc(m->ndesc, sizeof(*m->pend_seq));
	m->done_seq = calloc(m->ndesc, sizeof(*m->done_seq));
	m->q = calloc(m->ndesc, sizeof(*m->q));
	m->next_csn = r->csn_floor + 1;
	pthread_mutex_init(&m->q_lock, NULL);
	pthread_mutex_init(&m->trunc_mutex, NULL);
	pthread_cond_init(&m->q_cond, NULL);
	pthread_mutex_init(&m->twin_lock, NULL);
	m->twin_seq = PMTX_TW_SEQ(region_rstate(r)->twin);
	m->autos = auto_create(r->auto_rotate);
	r->txm = m;
	if (!m->txs || !m->busy || !m->pend_sum || !m->pend_seq ||
	    !m->done_seq || !m->q || !m->autos || (r->twin && twin_init(r)))
		return ENOMEM;
	for (unsigned i = 0; i < m->ndesc; i++)
		if (tx_init(r, &m->txs[i], i))
			return ENOMEM;
	return 0;
}

void txm_destroy(pmtx_region *r)
{
	struct txm *m = r->txm;
	if (!m)
		return;
	for (unsigned i = 0; m->txs && i < m->ndesc; i++) {
		struct pmtx_tx *tx = &m->txs[i];
		lineset_free(&tx->lines);
		idxmap_free(&tx->objs);
		u64map_free(&tx->wmap);
		u64map_free(&tx->alog.freed);
		free(tx->alog.e);
		free(tx->defer);
		free(tx->recs);
		free(tx->trng);
		free(tx->stage);
		free(tx->wl);
		free(tx->rbuf);
		free(tx->cov);
		free(tx->ws);
	}
	twin_fini(r);
	free(m->txs);
	free((void *)m->busy);
	free((void *)m->pend_sum);
	free((void *)m->pend_seq);
	free((void *)m->done_seq);
	free(m->q);
	auto_destroy(m->autos);
	free(m);
	r->txm = NULL;
}

/* Descriptor i, if it was free. */
static struct pmtx_tx *try_take(struct txm *m, unsigned i)
{
	uint64_t bit = 1ull << (i % 64);
	if (atomic_load_explicit(&m->busy[i / 64], memory_order_relaxed) & bit)
		return NULL;
	if (atomic_fetch_or(&m->busy[i / 64], bit) & bit)
		return NULL;
	tls_hint = i;
	return &m->txs[i];
}

/* T5: the thread's last descriptor, else its pair, else the first free
 * one after it. */
static struct pmtx_tx *try_lease(struct txm *m)
{
	unsigned start = tls_hint % m->ndesc;
	struct pmtx_tx *tx = try_take(m, start);
	if (!tx && (start ^ 1) < m->ndesc)
		tx = try_take(m, start ^ 1);
	for (unsigned k = 1; !tx && k < m->ndesc; k++)
		tx = try_take(m, (start + k) % m->ndesc);
	return tx;
}

/* A free descriptor. If all are leased, fail only if each one belongs to
 * a running transaction: those that only wait for their truncation are
 * truncated here, and those whose thread is finishing its commit (T4)
 * come back in a moment. */
static struct pmtx_tx *lease(struct txm *m)
{
	for (;;) {
		struct pmtx_tx *tx = try_lease(m);
		if (tx)
			return tx;
		if (atomic_load(&m->async_pending) > 0)
			drain_until(m->txs[0].r, NULL); /* one item */
		else if ((unsigned)atomic_load(&m->running) < m->ndesc)
			sched_yield();
		else
			return NULL;
	}
}

static void release(struct txm *m, struct pmtx_tx *tx)
{
	atomic_fetch_and(&m->busy[tx->idx / 64], ~(1ull << (tx->idx % 64)));
}

/* T4: the last of the committing thread and the truncation gives the
 * descriptor back. */
static void unhold(struct txm *m, struct pmtx_tx *tx)
{
	if (atomic_fetch_sub(&tx->holds, 1) == 1)
		release(m, tx);
}

/* ---- retire cover (R3) ---- */

/* Has descriptor i a redo IDLE mark not yet known durable? */
static int retire_pending(struct txm *m, unsigned i)
{
	return atomic_load(&m->pend_seq[i]) > atomic_load(&m->done_seq[i]);
}

void retire_note(pmtx_region *r, unsigned idx)
{
	struct txm *m = r->txm;
	atomic_fetch_add(&m->pend_seq[idx], 1);
	atomic_fetch_or(&m->pend_sum[idx / 64], 1ull << (idx % 64));
}

void retire_cover_begin(struct pmtx_tx *tx)
{
	struct txm *m = tx->r->txm;
	tx->ncov = 0;
	for (unsigned w = 0; w < (m->ndesc + 63) / 64; w++)
		for (uint64_t b = atomic_load(&m->pend_sum[w]); b; b &= b - 1) {
			unsigned i = w * 64 + (unsigned)__builtin_ctzll(b);
			tx->cov[tx->ncov++] =
				(struct cover){i, atomic_load(&m->pend_seq[i])};
			/* Our own line holds our RUNNING mark, which
			 * supersedes the IDLE and is flushed before the
			 * barrier (tx_mark_running, or at our commit). */
			if (i != tx->idx)
				MUT_FLUSH(MUT_TX_COVER_FLUSH, &tx->r->persist,
				          &region_desc(tx->r, i)->statever, 8);
		}
}

void retire_cover_end(struct pmtx_tx *tx)
{
	struct txm *m = tx->r->txm;
	for (size_t k = 0; k < tx->ncov; k++) {
		unsigned i = tx->cov[k].idx;
		uint64_t seq = tx->cov[k].seq, d = atomic_load(&m->done_seq[i]);
		while (d < seq &&
		       !atomic_compare_exchange_weak(&m->done_seq[i], &d, seq))
			;
		atomic_fetch_and(&m->pend_sum[i / 64], ~(1ull << (i % 64)));
		if (retire_pending(m, i))
			atomic_fetch_or(&m->pend_sum[i / 64], 1ull << (i % 64));
	}
	tx->ncov = 0;
}

/* ---- objects and redo-async conflicts (W1, D4b) ---- */

int tx_object_span(const pmtx_region *r, uint64_t off, uint64_t *base,
                   uint64_t *end)
{
	const struct pmtx_hdr *h = r->hdr;
	uint64_t root = h->root_off + sizeof(struct pmtx_objhdr);
	if (off >= root && off < root + h->root_size) {
		*base = h->root_off;
		*end = root + h->root_size;
		return 0;
	}
	return heap_object_span(r->heap, off, base, end);
}

int tx_resolve_conflicts(struct pmtx_tx *tx, uint64_t base)
{
	struct txm *m = tx->r->txm;
	uint64_t bits = objbits_get(tx->r, objhdr_at(tx->r, base)) & ~tx->mybit;
	for (; bits; bits &= bits - 1) {
		struct pmtx_tx *o = &m->txs[__builtin_ctzll(bits)];
		if (atomic_load(&o->trunc_pending)) {
			int rc = drain_until(tx->r, o);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Every object that [off, off+n) touches. */
/* D4(b): only writers without a replayable log wait for truncations, and
 * only while some are queued. */
static int must_resolve(const struct pmtx_tx *tx)
{
	return (tx->kind == PMTX_RT_UNDO || tx->kind == PMTX_RT_COW) &&
	       atomic_load(&tx->r->txm->async_pending) != 0;
}

static int resolve_range(struct pmtx_tx *tx, uint64_t off, size_t n)
{
	uint64_t end = off + n, base, oend;
	if (!must_resolve(tx))
		return 0;
	for (; off < end; off = oend) {
		if (tx_object_span(tx->r, off, &base, &oend))
			return 0;
		int rc = tx_resolve_conflicts(tx, base);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the redo truncation queue (redo.c D6) ---- */

uint64_t tx_thread_id(void)
{
	static _Atomic uint64_t next = 1;
	static _Thread_local uint64_t id;
	if (!id)
		id = atomic_fetch_add(&next, 1);
	return id;
}

/* q_lock held. */
static void pop_head(struct txm *m)
{
	m->q_head = (m->q_head + 1) % m->ndesc;
	m->q_n--;
	m->q_popped++;
}

/* A queued transaction is done with; trunc_mutex held. */
static void processed(struct txm *m, struct pmtx_tx *tx)
{
	/* In this order: lease() retries while async_pending says a
	 * descriptor is about to come back. */
	atomic_store(&tx->trunc_pending, TRUNC_NONE);
	unhold(m, tx);
	atomic_fetch_sub(&m->async_pending, 1);
}

/* Pop and process the queue's first transaction; trunc_mutex held.
 * Returns 1 if the queue was empty. */
static int process_head(struct txm *m)
{
	pthread_mutex_lock(&m->q_lock);
	if (m->q_n == 0) {
		pthread_mutex_unlock(&m->q_lock);
		return 1;
	}
	struct pmtx_tx *tx = &m->txs[m->q[m->q_head]];
	pop_head(m);
	pthread_mutex_unlock(&m->q_lock);
	int rc = redo_truncate_one(tx), zero = 0;
	if (rc)
		atomic_compare_exchange_strong(&m->async_rc, &zero, rc);
	processed(m, tx);
	return rc;
}

/* Is every redo IDLE mark stored so far known durable (redo.c D12)? */
static int idle_marks_durable(struct txm *m)
{
	if (atomic_load(&m->retiring))
		return 0;
	for (unsigned i = 0; i < m->ndesc; i++)
		if (retire_pending(m, i))
			return 0;
	return 1;
}

void async_retire_covered(pmtx_region *r)
{
	struct txm *m = r->txm;
	if (atomic_load(&m->async_pending) == 0 ||
	    pthread_mutex_trylock(&m->trunc_mutex))
		return;
	pthread_mutex_lock(&m->q_lock);
	struct pmtx_tx *tx = m->q_n ? &m->txs[m->q[m->q_head]] : NULL;
	int ok = tx && atomic_load(&tx->trunc_pending) == TRUNC_FLUSHED &&
	         tx->flusher == tx_thread_id() && idle_marks_durable(m);
	if (ok)
		pop_head(m);
	pthread_mutex_unlock(&m->q_lock);
	if (ok) {
		redo_retire(tx);
		processed(m, tx);
	}
	pthread_mutex_unlock(&m->trunc_mutex);
}

int drain_until(pmtx_region *r, struct pmtx_tx *tx)
{
	struct txm *m = r->txm;
	int rc = 0;
	pthread_mutex_lock(&m->trunc_mutex);
	if (!tx)
		rc = process_head(m);
	while (tx && atomic_load(&tx->trunc_pending) && rc == 0)
		rc = process_head(m);
	pthread_mutex_unlock(&m->trunc_mutex);
	return rc == 1 ? 0 : rc; /* 1: the queue was empty */
}

/* q_lock held. Should the truncation thread leave the queue's head to
 * the thread that flushed it (D12)? Yes while that thread makes
 * progress: each of its commits retires its previous transaction without
 * a barrier, which a truncation here would cost. */
static int leave_to_owner(struct txm *m)
{
	return !m->thr_stop && m->q_n < m->ndesc / 2 &&
	       atomic_load(&m->txs[m->q[m->q_head]].trunc_pending) ==
	               TRUNC_FLUSHED;
}

/* q_lock held: wait up to ns for a signal. */
#define OWNER_GRACE_NS 2000000L
#define IDLE_POLL_NS 10000000L
static void wait_for(struct txm *m, long ns)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_nsec += ns;
	if (t.tv_nsec >= 1000000000L)
		t.tv_sec++, t.tv_nsec -= 1000000000L;
	m->thr_sleeping = 1;
	pthread_cond_timedwait(&m->q_cond, &m->q_lock, &t);
	m->thr_sleeping = 0;
}

static void *truncator(void *arg)
{
	struct txm *m = ((pmtx_region *)arg)->txm;
	for (;;) {
		pthread_mutex_lock(&m->q_lock);
		for (;;) {
			if (m->q_n == 0 && !m->thr_stop) {
				wait_for(m, IDLE_POLL_NS);
				continue;
			}
			if (m->q_n == 0 || !leave_to_owner(m))
				break;
			uint64_t seen = m->q_popped;
			wait_for(m, OWNER_GRACE_NS);
			if (m->q_popped == seen && m->q_n > 0)
				break; /* the owner went quiet: truncate */
		}
		int stop = m->q_n == 0;
		pthread_mutex_unlock(&m->q_lock);
		if (stop)
			return NULL;
		pthread_mutex_lock(&m->trunc_mutex);
		process_head(m);
		pthread_mutex_unlock(&m->trunc_mutex);
	}
}

int async_enqueue(struct pmtx_tx *tx, int kind)
{
	struct txm *m = tx->r->txm;
	atomic_fetch_add(&tx->holds, 1);
	atomic_store(&tx->trunc_pending, kind);
	atomic_fetch_add(&m->async_pending, 1);
	pthread_mutex_lock(&m->q_lock);
	int lazy = tx->r->trunc_lazy;
	if (!lazy && !m->thr_started && !m->thr_stop &&
	    pthread_create(&m->thr, NULL, truncator, tx->r) == 0)
		m->thr_started = 1;
	m->q[(m->q_head + m->q_n++) % m->ndesc] = tx->idx;
	/* A wake-up is a system call: only if needed (D12: a flushed one is
	 * left to its thread while the queue is short; the truncation thread
	 * never sleeps longer than IDLE_POLL_NS, so it still finds it). */
	if (m->thr_sleeping &&
	    (kind != TRUNC_FLUSHED || m->q_n >= m->ndesc / 2))
		pthread_cond_signal(&m->q_cond);
	int started = lazy || (m->thr_started && !m->thr_stop);
	pthread_mutex_unlock(&m->q_lock);
	return started ? 0 : drain_until(tx->r, tx);
}

int async_take_error(pmtx_region *r)
{
	return r->txm ? atomic_exchange(&r->txm->async_rc, 0) : 0;
}

void async_quiesce(pmtx_region *r)
{
	struct txm *m = r->txm;
	pthread_mutex_lock(&m->trunc_mutex);
	while (process_head(m) != 1)
		;
	pthread_mutex_unlock(&m->trunc_mutex);
	while (atomic_load(&m->async_pending) > 0) /* one still in hand */
		sched_yield();
}

void async_drain(pmtx_region *r)
{
	struct txm *m = r->txm;
	if (!m)
		return;
	pthread_mutex_lock(&m->q_lock);
	m->thr_stop = 1;
	pthread_cond_signal(&m->q_cond);
	int started = m->thr_started;
	pthread_mutex_unlock(&m->q_lock);
	if (started)
		pthread_join(m->thr, NULL);
	m->thr_started = 0;
	pthread_mutex_lock(&m->trunc_mutex);
	while (process_head(m) != 1)
		;
	pthread_mutex_unlock(&m->trunc_mutex);
}

int tx_close_cover(pmtx_region *r)
{
	struct txm *m = r->txm;
	int pending = 0;
	for (unsigned i = 0; m && i < m->ndesc; i++)
		if (retire_pending(m, i)) {
			MUT_FLUSH(MUT_TX_CLOSE_COVER_FLUSH, &r->persist,
			          &region_desc(r, i)->statever, 8);
			pending = 1;
		}
	return pending ? MUT_ORDER(MUT_TX_CLOSE_COVER_BARRIER, &r->persist)
	               : 0;
}

void tx_mark_running(struct pmtx_tx *tx)
{
	if (tx->sv_written)
		return;
	if (!MUT_SKIP(MUT_TX_RUNNING_MARK)) {
		uint64_t sv = PMTX_SV(tx->version, tx->kind, PMTX_DS_RUNNING);
		__atomic_store_n(&tx->d->statever, sv, __ATOMIC_RELAXED);
		TRACE_STORE(&tx->r->persist, &tx->d->statever, 8, DESC);
	}
	MUT_FLUSH(MUT_TX_RUNNING_FLUSH, &tx->r->persist, &tx->d->statever, 8);
	tx->sv_written = 1;
}

int tx_recs_reserve(struct pmtx_tx *tx, size_t extra)
{
	return pmtx_reserve(&tx->recs, tx->nrecs, extra, &tx->caprecs,
	                    sizeof(*tx->recs), 64);
}

int tx_recs_push(struct pmtx_tx *tx, uint64_t rec)
{
	if (tx->nrecs == tx->caprecs && tx_recs_reserve(tx, 1))
		return ENOMEM;
	tx->recs[tx->nrecs++] = rec;
	return 0;
}

int tx_data_range_ok(const pmtx_region *r, const void *p, size_t n)
{
	const struct pmtx_hdr *h = r->hdr;
	uint64_t off = (uint64_t)((const char *)p - r->base);
	uint64_t root = h->root_off + sizeof(struct pmtx_objhdr);
	uint64_t heap_end = h->heap_off + r->nsb * (uint64_t)PMTX_SB_SIZE;
	if ((const char *)p < r->base)
		return 0;
	if (off >= root && off <= root + h->root_size &&
	    n <= root + h->root_size - off)
		return 1;
	return off >= h->heap_off && off <= heap_end && n <= heap_end - off;
}

/* ---- begin / end ---- */

static void tx_end(struct pmtx_tx *tx)
{
	struct txm *m = tx->r->txm;
	tls_tx = NULL;
	tx->state = TX_IDLE;
	if (tx->kind == PMTX_RT_TWIN)
		twin_end(tx); /* TW5: before the deferred unlocks */
	/* T3: run the deferred operations, then give the descriptor back,
	 * unless it waits for its truncation (redo-async: the truncation
	 * gives it back). */
	for (size_t i = 0; i < tx->ndefer; i++)
		tx->defer[i].fn(tx->defer[i].arg);
	tx->ndefer = 0;
	unhold(m, tx);
	atomic_fetch_sub(&m->running, 1);
}

int pmtx_begin(pmtx_region *r, pmtx_runtime kind, pmtx_tx **out)
{
	if (!r || !out)
		return PMTX_E_INVAL;
	struct pmtx_tx *cur = tls_tx;
	if (cur) {
		if (cur->r != r)
			return PMTX_E_TX_STATE;
		cur->depth++;
		*out = cur;
		return 0;
	}
	if (kind == PMTX_RT_DEFAULT || (r->twin && kind == PMTX_RT_AUTO))
		kind = r->default_rt;
	if ((kind == PMTX_RT_TWIN) != r->twin) {
		pmtx__set_errmsg(r->twin ? "a twin region runs twin transactions"
		                           " only" : "twin transactions need a "
		                 "twin region (created with runtime twin)");
		return PMTX_E_UNSUPPORTED;
	}
	struct auto_run arun = {0};
	if (kind == PMTX_RT_AUTO)
		kind = auto_begin(r->txm->autos,
		                  (uintptr_t)__builtin_return_address(0), &arun);
	const struct tx_runtime *rt = tx_runtime_of(kind);
	if (!rt)
		return PMTX_E_UNSUPPORTED;
	if (atomic_load(&r->closing))
		return PMTX_E_TX_STATE;
	struct pmtx_tx *tx = lease(r->txm);
	if (!tx)
		return PMTX_E_BUSY;
	atomic_fetch_add(&r->txm->running, 1);
	atomic_store(&tx->holds, 1);
	tx->rt = rt;
	tx->kind = kind;
	tx->arun = arun;
	if (arun.site) /* the descriptor is ours: no locked add */
		atomic_store_explicit(
			&tx->auto_runs[arun.arm],
			atomic_load_explicit(&tx->auto_runs[arun.arm],
			                     memory_order_relaxed) + 1,
			memory_order_relaxed);
	tx->version = ++tx->last_version & (~0ull >> 8);
	if (tx->version == 0) /* 0 is never a valid record version */
		tx->version = ++tx->last_version & (~0ull >> 8);
	tx->depth = 1;
	tx->state = TX_RUNNING;
	tx->sv_written = 0;
	tx->unfenced = 0;
	tx->nrecs = 0;
	tx->nws = 0;
	alog_reset(tx);
	int rc = rt->begin(tx);
	if (rc) {
		tx->state = TX_IDLE;
		release(r->txm, tx);
		atomic_fetch_sub(&r->txm->running, 1);
		return rc;
	}
	tls_tx = tx;
	*out = tx;
	TRACE_TX(PMTX_TEV_BEGIN, tx, 0);
	return 0;
}

int tx_check(pmtx_tx *tx)
{
	if (!tx || tx != tls_tx)
		return PMTX_E_NO_TX;
	return tx->state == TX_ABORTED ? PMTX_E_ABORTED : 0;
}

int pmtx_commit(pmtx_tx *tx)
{
	if (!tx || tx != tls_tx)
		return PMTX_E_NO_TX;
	if (--tx->depth > 0)
		return tx->state == TX_ABORTED ? PMTX_E_ABORTED : 0;
	int rc = tx->state == TX_ABORTED ? PMTX_E_ABORTED : tx->rt->commit(tx);
	TRACE_TX(PMTX_TEV_COMMIT, tx, rc);
	struct auto_run arun = tx->arun;
	tx_end(tx);
	if (!rc && arun.site)
		auto_commit(&arun);
	/* A background truncation that failed (redo.c D8) is reported here. */
	int arc = rc ? 0 : async_take_error(tx->r);
	return rc ? rc : arc;
}

/* Roll a running transaction back; it stays begun, as TX_ABORTED. */
int tx_roll_back(pmtx_tx *tx)
{
	int rc = 0;
	if (tx->state == TX_RUNNING) {
		rc = tx->rt->abort(tx);
		alog_unreserve(tx);
		tx->state = TX_ABORTED;
		TRACE_TX(PMTX_TEV_ABORT, tx, rc);
	}
	return rc;
}

int pmtx_abort(pmtx_tx *tx)
{
	if (!tx || tx != tls_tx)
		return PMTX_E_NO_TX;
	int rc = tx_roll_back(tx);
	if (--tx->depth == 0)
		tx_end(tx);
	return rc;
}

pmtx_tx *pmtx_tx_current(void)
{
	return tls_tx;
}

pmtx_region *pmtx_tx_region(const pmtx_tx *tx)
{
	return tx->r;
}

pmtx_runtime pmtx_tx_runtime(const pmtx_tx *tx)
{
	return tx->kind;
}

int pmtx_auto_stats_get(pmtx_region *r, pmtx_auto_stats *st)
{
	if (!r || !st || !r->txm)
		return PMTX_E_INVAL;
	uint64_t runs[AUTO_ARMS] = {0};
	for (unsigned i = 0; i < r->txm->ndesc; i++)
		for (int a = 0; a < AUTO_ARMS; a++)
			runs[a] += atomic_load_explicit(&r->txm->txs[i].auto_runs[a],
			                                memory_order_relaxed);
	st->undo = runs[0], st->redo = runs[1], st->redo_async = runs[2];
	return 0;
}

/* ---- data ---- */

static int check_range(pmtx_tx *tx, const void *p, size_t n)
{
	int rc = tx_check(tx);
	if (rc)
		return rc;
	if (!p && n)
		return PMTX_E_INVAL;
	return tx_data_range_ok(tx->r, p, n) ? 0 : PMTX_E_RANGE;
}

/* check_range of the region's side p of a copy, and the other side q. */
static int check_copy(pmtx_tx *tx, const void *p, const void *q, size_t n)
{
	int rc = check_range(tx, p, n);
	return rc ? rc : n && !q ? PMTX_E_INVAL : 0;
}

/* A write to a checked range: conflicts first (D4b), then the runtime. */
static int write_checked(pmtx_tx *tx, void *dst, const void *src, size_t n)
{
	int rc = resolve_range(tx, region_off(tx->r, dst), n);
	return rc ? rc : tx->rt->write(tx, dst, src, n);
}

int pmtx_write(pmtx_tx *tx, void *dst, const void *src, size_t n)
{
	int rc = check_copy(tx, dst, src, n);
	if (rc || n == 0)
		return rc;
	if (tx->kind == PMTX_RT_TWIN) /* no conflicts to resolve, no AUTO */
		return twin_runtime.write(tx, dst, src, n);
	return write_checked(tx, dst, src, n);
}

/* An AUTO transaction that stores in place needs undo (auto.c A2). A
 * switch that fails part way (log or memory full) would leave some of
 * the writes made under redo behind: the transaction is rolled back, and
 * its commit returns PMTX_E_ABORTED. */
static int become_undo(pmtx_tx *tx)
{
	auto_pin_undo(tx->r->txm->autos, &tx->arun);
	if (tx->kind == PMTX_RT_UNDO)
		return 0;
	tx->arun.t0 = 0; /* its time is no arm's */
	int rc = redo_to_undo(tx, write_checked);
	/* the frees made under redo wait now, as pmtx_free's under undo */
	for (size_t i = 0; !rc && must_resolve(tx) && i < tx->alog.n; i++)
		if (PMTX_AE_OP(tx->alog.e[i].info) == PMTX_AE_FREE)
			rc = tx_resolve_conflicts(tx, tx->alog.e[i].off);
	if (rc)
		tx_roll_back(tx);
	return rc;
}

/* add_range on a checked range, in a transaction that runs undo. */
static int add_range_checked(pmtx_tx *tx, void *p, size_t n)
{
	int rc = resolve_range(tx, region_off(tx->r, p), n);
	return rc ? rc : tx->rt->add_range(tx, p, n);
}

int pmtx_add_range(pmtx_tx *tx, void *p, size_t n)
{
	int rc = check_range(tx, p, n);
	if (rc || n == 0)
		return rc;
	if (tx->kind == PMTX_RT_TWIN)
		return twin_note(tx, p, n);
	if (tx->arun.site && (rc = become_undo(tx)))
		return rc;
	return add_range_checked(tx, p, n);
}

int pmtx_read(pmtx_tx *tx, void *dst, const void *src, size_t n)
{
	int rc = check_copy(tx, src, dst, n);
	if (rc || n == 0)
		return rc;
	return tx->rt->read(tx, dst, src, n);
}

int tx_read_in_place(struct pmtx_tx *tx, void *dst, const void *src,
                     size_t n)
{
	(void)tx;
	pmtx_copy(dst, src, n);
	return 0;
}

int pmtx_memset(pmtx_tx *tx, void *dst, int c, size_t n)
{
	if (tx && tx == tls_tx &&
	    (tx->kind == PMTX_RT_UNDO || tx->kind == PMTX_RT_TWIN)) {
		/* not pmtx_add_range: a memset does not pin an AUTO site */
		int rc = check_range(tx, dst, n);
		if (!rc && n && !(rc = add_range_checked(tx, dst, n)))
			memset(dst, c, n);
		return rc;
	}
	unsigned char buf[4096];
	memset(buf, c, MIN(n, sizeof(buf)));
	for (size_t done = 0; done < n;) {
		size_t k = MIN(n - done, sizeof(buf));
		int rc = pmtx_write(tx, (char *)dst + done, buf, k);
		if (rc)
			return rc;
		done += k;
	}
	return tx_check(tx);
}

/* ---- allocation ---- */

int pmtx_alloc(pmtx_tx *tx, size_t n, pmtx_off *out)
{
	int rc = tx_check(tx);
	if (rc)
		return rc;
	if (n == 0 || !out)
		return PMTX_E_INVAL;
	struct pmtx_alog_entry e;
	uint64_t off;
	if (tx->kind == PMTX_RT_TWIN && (rc = twin_note(tx, NULL, 0)))
		return rc; /* TW2: the block may be stored to from now on */
	rc = heap_reserve(tx->r->heap, n, &off, &e);
	if (rc == PMTX_E_NOMEM && atomic_load(&tx->r->txm->async_pending) > 0) {
		/* The blocks that queued redo-async transactions free reach
		 * the heap only when they are truncated (redo.c D5): a full
		 * heap truncates them now, then tries again. */
		async_quiesce(tx->r);
		rc = heap_reserve(tx->r->heap, n, &off, &e);
	}
	if (rc)
		return rc;
	if ((rc = alog_append(tx, &e))) {
		heap_unreserve(tx->r->heap, &e);
		return rc;
	}
	*out = off;
	if (tx->kind == PMTX_RT_REDO_ASYNC)
		return redo_own_alloc(tx, off);
	return 0;
}

int pmtx_zalloc(pmtx_tx *tx, size_t n, pmtx_off *out)
{
	int rc = pmtx_alloc(tx, n, out);
	if (rc)
		return rc;
	void *p = region_at(tx->r, *out);
	if (tx->kind == PMTX_RT_TWIN && (rc = twin_note(tx, p, n))) {
		/* take the allocation back: the caller gets no block */
		if (tx->state == TX_RUNNING)
			alog_drop_last(tx);
		return rc;
	}
	memset(p, 0, n);
	if (tx->kind == PMTX_RT_TWIN)
		return 0; /* a line of the transaction: commit flushes it */
	MUT_FLUSH(MUT_TX_ZALLOC_FLUSH, &tx->r->persist, p, n);
	tx->unfenced = 1;
	return 0;
}

int pmtx_free(pmtx_tx *tx, pmtx_off off)
{
	int rc = tx_check(tx);
	if (rc)
		return rc;
	if (off == 0)
		return 0;
	struct pmtx_alog_entry e;
	if (heap_free_entry(tx->r->heap, off, &e) || alog_frees(tx, e.off))
		return PMTX_E_INVAL;
	if (must_resolve(tx) && (rc = tx_resolve_conflicts(tx, e.off)))
		return rc;
	if (tx->kind == PMTX_RT_TWIN && (rc = twin_note(tx, NULL, 0)))
		return rc;
	return alog_append(tx, &e);
}

size_t pmtx_usable_size(pmtx_region *r, pmtx_off off)
{
	return heap_usable_size(r->heap, off);
}

/* ---- deferred operations ---- */

int pmtx_defer(pmtx_tx *tx, void (*fn)(void *), void *arg)
{
	int rc = tx_check(tx);
	if (rc == PMTX_E_ABORTED)
		rc = 0; /* still runs when the aborted transaction ends */
	if (rc)
		return rc;
	if (!fn)
		return PMTX_E_INVAL;
	if (pmtx_reserve(&tx->defer, tx->ndefer, 1, &tx->capdefer,
	                 sizeof(*tx->defer), 8))
		return ENOMEM;
	tx->defer[tx->ndefer++] = (struct deferred){fn, arg};
	return 0;
}

static void unlock_mutex(void *m)
{
	pthread_mutex_unlock(m);
}

int pmtx_defer_unlock(pmtx_tx *tx, pthread_mutex_t *m)
{
	return m ? pmtx_defer(tx, unlock_mutex, m) : PMTX_E_INVAL;
}

/* ---- naked persistence ---- */

/* The running transaction of this thread in r, or NULL. */
static struct pmtx_tx *running_in(const pmtx_region *r)
{
	return tls_tx && tls_tx->r == r ? tls_tx : NULL;
}

/* Naked stores to [p, p+n) in a twin region (twin.c TW6): inside a
 * running transaction they join it; otherwise they are copied to the
 * back copy. Returns 1 if the range joined a transaction (nothing to
 * flush now). */
static int twin_naked(pmtx_region *r, const void *p, size_t n)
{
	struct pmtx_tx *tx = running_in(r);
	if (tx && tx->state == TX_RUNNING && twin_mirrored(r, p, n)) {
		/* A failure (no memory, a barrier) aborts, and commit says
		 * so; the stores that could not join are undone first. */
		if (twin_note(tx, p, n)) {
			twin_unstore(r, (void *)p, n);
			tx_roll_back(tx);
		}
		return 1;
	}
	/* an aborted transaction of this thread still holds the lock */
	twin_naked_flush(r, p, n, tx != NULL);
	return 0;
}

void pmtx_flush(pmtx_region *r, const void *p, size_t n)
{
	if (r->twin && n && twin_naked(r, p, n))
		return;
	MUT_FLUSH(MUT_API_FLUSH, &r->persist, p, n);
	if (running_in(r))
		tls_tx->unfenced = 1;
}

int pmtx_barrier(pmtx_region *r)
{
	return MUT_BARRIER(MUT_API_BARRIER, &r->persist);
}

/* One mutation site for both of the API's fences. */
int pmtx_order(pmtx_region *r)
{
	return MUT_ORDER(MUT_API_BARRIER, &r->persist);
}

int pmtx_persist(pmtx_region *r, const void *p, size_t n)
{
	if (r->twin && n)
		twin_naked(r, p, n);
	MUT_FLUSH(MUT_API_PERSIST_FLUSH, &r->persist, p, n);
	return MUT_BARRIER(MUT_API_PERSIST_BARRIER, &r->persist);
}

void pmtx_memcpy_nt(pmtx_region *r, void *dst, const void *src, size_t n)
{
	struct pmtx_tx *tx = r->twin ? running_in(r) : NULL;
	int joins = tx && tx->state == TX_RUNNING && twin_mirrored(r, dst, n);
	if (joins && twin_note(tx, dst, n)) {
		tx_roll_back(tx); /* as in twin_naked; nothing is stored */
		return;
	}
	MUT_COPY_NT(MUT_API_COPY_NT, &r->persist, dst, src, n);
	if (r->twin && !joins && n)
		twin_naked_flush(r, dst, n, tx != NULL);
	if (running_in(r))
		tls_tx->unfenced = 1;
}
