/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * auto.c - PMTX_RT_AUTO: a runtime chosen per call site of pmtx_begin,
 * from what the site's own transactions are measured to cost.
 *
 * Design
 * ------
 * No runtime dominates: undo wins where a transaction reads back what it
 * wrote and writes few words; redo wins where it writes many; redo-async
 * wins where barriers are slow and a second core is idle. The inputs that
 * decide it (writes and read-after-writes per transaction, bytes written,
 * the domain's barrier cost, the cost of the write-set lookups) all show
 * in one number: the time from pmtx_begin to the end of pmtx_commit. So
 * the chooser measures that, per call site (the return address of
 * pmtx_begin), for each candidate (undo, redo, redo-async; copy-on-write
 * needs its own object API and is never chosen), and runs the cheapest.
 *
 * Each site numbers its transactions (tickets). An exploration is a window
 * of tickets in which each arm runs one contiguous block: first the
 * incumbent (the arm chosen last), AUTO_SAMPLES transactions, all timed;
 * then each challenger, AUTO_WARM transactions and AUTO_SAMPLES more, of
 * which only the last AUTO_SAMPLES count. A switch has costs the steady
 * state does not: redo-async's first transactions after redo are slower
 * than the rest (SPS, PDOM-0, k = 2, medians of 32: 3.8-4.7 us over its
 * first 64 after 3,000 of redo, 1.1-1.4 us after 64 of redo, 0.82-0.92 us
 * from the 65th on; docs/results/auto-2026-11-26 in git's history, before
 * d144efc), so short alternating
 * blocks judged an arm by its switch. A challenger whose median over its
 * last AUTO_SCREEN timed transactions is over AUTO_DROP times the lowest
 * of the arms measured before it in the window (or over AUTO_DROP_WARM
 * times, over its first AUTO_SCREEN warm-up ones, or AUTO_DROP_FIRST times
 * at its very first) is dropped (screen): the rest of its block runs the
 * cheapest arm measured so far, untimed. On a short run, or where one
 * runtime costs ten times another, a trial must not cost more than the
 * choice saves. The transaction that takes the ticket just past the window
 * decides: the arm with the lowest median wins, and runs until the next
 * window, AUTO_GAP_MIN tickets later, doubling up to AUTO_GAP_MAX while
 * the same arm keeps winning. The first window starts AUTO_FIRST tickets
 * in, so that it does not time a region's first touches of its pages.
 * Outside a window one transaction in AUTO_WATCH is timed (A5), so the
 * chooser costs a hash probe and a ticket (a relaxed load and store, no
 * locked instruction) per transaction, and two clock reads per AUTO_WATCH
 * transactions.
 *
 * A site's transactions can change under it: a benchmark sweeps its
 * write ratio on one region, an application's load moves from reads to
 * writes. The arm that won for one kind of transaction would then run
 * the other for up to AUTO_GAP_MAX tickets. So the median of AUTO_WATCH_N
 * watched transactions is compared with the winner's median at the
 * decision (ref); when it has moved by more than AUTO_DRIFT times, either
 * way, a window starts at once and the gap starts again at AUTO_GAP_MIN.
 *
 * A call site is the return address of pmtx_begin: a wrapper that the
 * compiler inlines into several callers makes several sites, and one that
 * is not inlined makes one site for all its callers.
 *
 * Invariants
 *  A1. The chooser only picks a runtime at begin; a running transaction
 *      is always one plain undo, redo or redo-async transaction, recorded
 *      in its descriptor as such, so recovery never sees AUTO.
 *  A2. A site that calls pmtx_add_range (undo only: an in-place store that
 *      redo could not undo) is pinned to undo for as long as the region is
 *      open. The transaction that first does so, if it runs redo, becomes
 *      an undo transaction at that call (tx.c, become_undo): its write
 *      set is still in DRAM only, so it is replayed through the undo
 *      runtime before the in-place store is allowed.
 *  A3. Samples are advisory: a sample lost to a race between threads, or
 *      stored into the next window, makes a choice worse, never a
 *      transaction incorrect.
 *  A4. Rotation (PMTX_OPEN_AUTO_ROTATE) ignores time: transaction t of a
 *      site runs arm t mod AUTO_ARMS, and nothing is pinned, so a test or
 *      the crash-state explorer sees every runtime, and every switch from
 *      redo to undo, in a reproducible order.
 *  A5. A watched transaction runs the chosen arm, like any other outside
 *      a window: watching only times it, and can only move the next
 *      window earlier.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "tx.h"

#define AUTO_SITES 64        /* call sites tracked per region */
#define AUTO_SAMPLES 32      /* timed transactions per arm per window */
#define AUTO_WARM 64         /* a challenger's untimed first transactions */
#define AUTO_SCREEN 4        /* samples a screen looks at */
#define AUTO_DROP 1.5        /* a challenger this much dearer is dropped */
#define AUTO_DROP_WARM 4.0   /* ... or this much, while warming up */
#define AUTO_DROP_FIRST 8.0  /* ... or this much, at its first */
#define AUTO_FIRST 256       /* tickets before the first window */
#define AUTO_GAP_MIN 1024    /* tickets between windows, at first */
#define AUTO_GAP_MAX 65536   /* ... at most */
#define AUTO_WATCH 64        /* outside windows, one ticket in this timed */
#define AUTO_WATCH_N 8       /* watched transactions compared with ref */
#define AUTO_DRIFT 1.5       /* a change of cost that starts a window */

static const pmtx_runtime arms[AUTO_ARMS] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                            PMTX_RT_REDO_ASYNC};
#define AUTO_BLOCK (AUTO_WARM + AUTO_SAMPLES) /* a challenger's */
#define AUTO_WINDOW ((uint64_t)AUTO_SAMPLES + \
                     (AUTO_ARMS - 1) * (uint64_t)AUTO_BLOCK)

struct auto_site {
	_Atomic uintptr_t key;          /* return address; 0 = free slot */
	_Atomic uint64_t ticket;        /* transactions begun here */
	_Atomic uint64_t win_start;     /* the current or next window */
	_Atomic int best;               /* index into arms: the incumbent */
	_Atomic int pinned;             /* A2 */
	_Atomic unsigned dropped;       /* arms out of this window (bits) */
	_Atomic int lead;               /* the cheapest arm measured so far */
	_Atomic uint32_t nsamp[AUTO_ARMS];
	_Atomic uint32_t samp[AUTO_ARMS][AUTO_SAMPLES]; /* ns; 0 = none */
	_Atomic uint32_t nwarm[AUTO_ARMS];
	_Atomic uint32_t warm[AUTO_ARMS][AUTO_SCREEN];
	_Atomic uint32_t ref;           /* the winner's median, ns (A5) */
	_Atomic uint32_t nwatch;
	_Atomic uint32_t watch[AUTO_WATCH_N];
	uint64_t gap;                   /* under lock */
	pthread_mutex_t lock;
};

struct auto_table {
	int rotate;
	struct auto_site site[AUTO_SITES]; /* the last one takes overflow */
};

struct auto_table *auto_create(int rotate)
{
	struct auto_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->rotate = rotate;
	for (int i = 0; i < AUTO_SITES; i++) {
		struct auto_site *s = &t->site[i];
		pthread_mutex_init(&s->lock, NULL);
		s->gap = AUTO_GAP_MIN;
		atomic_store(&s->best, 1); /* redo until measured */
		atomic_store(&s->lead, 1);
		atomic_store(&s->win_start, AUTO_FIRST);
	}
	return t;
}

void auto_destroy(struct auto_table *t)
{
	if (!t)
		return;
	for (int i = 0; i < AUTO_SITES; i++)
		pthread_mutex_destroy(&t->site[i].lock);
	free(t);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The slot of call site key, claimed if new; open addressing. */
static struct auto_site *site_of(struct auto_table *t, uintptr_t key)
{
	uint64_t h = ((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 58;
	for (unsigned i = 0; i < AUTO_SITES - 1; i++) {
		struct auto_site *s = &t->site[(h + i) % (AUTO_SITES - 1)];
		uintptr_t k = atomic_load(&s->key);
		if (k == key)
			return s;
		if (k == 0 && (atomic_compare_exchange_strong(&s->key, &k, key) ||
		               k == key))
			return s;
	}
	return &t->site[AUTO_SITES - 1];
}

/* Median of the first have samples, zeros left out; 0 if none. */
static uint32_t median(_Atomic uint32_t *samp, unsigned have)
{
	uint32_t v[AUTO_SAMPLES];
	unsigned n = 0;
	for (unsigned i = 0; i < have; i++) {
		uint32_t x = atomic_load(&samp[i]);
		unsigned j = n++;
		for (; j > 0 && v[j - 1] > x; j--) /* insertion sort */
			v[j] = v[j - 1];
		v[j] = x;
	}
	unsigned zeros = 0;
	while (zeros < n && v[zeros] == 0) /* claimed, never stored (A3) */
		zeros++;
	return zeros < n ? v[zeros + (n - zeros) / 2] : 0;
}

/* Median of the arm's samples in this window; 0 if it has none. */
static uint32_t arm_median(struct auto_site *s, int a)
{
	return median(s->samp[a], MIN(atomic_load(&s->nsamp[a]),
	                              AUTO_SAMPLES));
}

/* The arm of block b of a window whose incumbent is best: the incumbent
 * first, then the others in order. */
static int block_arm(int best, unsigned b)
{
	return b == 0 ? best : (int)(b - 1) + ((int)(b - 1) >= best);
}

/* The window that ended at ticket end is over: choose, and place the next
 * window. Called once per window, by the transaction holding ticket end. */
static void decide(struct auto_site *s, uint64_t end)
{
	pthread_mutex_lock(&s->lock);
	int best = atomic_load(&s->best), won = -1;
	uint32_t m[AUTO_ARMS];
	for (int a = 0; a < AUTO_ARMS; a++) {
		m[a] = atomic_load(&s->dropped) & (1u << a) ? 0
		                                           : arm_median(s, a);
		if (m[a] && (won < 0 || m[a] < m[won]))
			won = a;
	}
	if (won >= 0) {
		s->gap = won == best ? MIN(s->gap * 2, AUTO_GAP_MAX)
		                     : AUTO_GAP_MIN;
		atomic_store(&s->best, won);
		atomic_store(&s->ref, m[won]);
	}
	for (int a = 0; a < AUTO_ARMS; a++) {
		for (unsigned i = 0; i < AUTO_SAMPLES; i++)
			atomic_store(&s->samp[a][i], 0);
		for (unsigned i = 0; i < AUTO_SCREEN; i++)
			atomic_store(&s->warm[a][i], 0);
		atomic_store(&s->nsamp[a], 0);
		atomic_store(&s->nwarm[a], 0);
	}
	atomic_store(&s->dropped, 0);
	atomic_store(&s->lead, atomic_load(&s->best));
	atomic_store(&s->nwatch, 0);
	atomic_store(&s->win_start, end + s->gap);
	pthread_mutex_unlock(&s->lock);
}

/* Ticket k of the window that starts at w: its arm, and how it is timed
 * (enum auto_timed). */
static int window_arm(struct auto_site *s, uint64_t k, uint64_t w,
                      int *timed)
{
	int best = atomic_load(&s->best);
	uint64_t i = k - w;
	unsigned b = i < AUTO_SAMPLES ? 0 : 1 + (unsigned)((i - AUTO_SAMPLES) /
	                                                   AUTO_BLOCK);
	int a = block_arm(best, b);
	if (atomic_load(&s->dropped) & (1u << a)) {
		*timed = AUTO_UNTIMED;
		return atomic_load(&s->lead);
	}
	*timed = b > 0 && (i - AUTO_SAMPLES) % AUTO_BLOCK < AUTO_WARM
	                 ? AUTO_WARMUP
	                 : AUTO_SAMPLE;
	return a;
}

pmtx_runtime auto_begin(struct auto_table *t, uintptr_t key,
                        struct auto_run *run)
{
	struct auto_site *s = site_of(t, key);
	/* No locked instruction per transaction: two threads may take the
	 * same ticket, which only shifts a window (A3). */
	uint64_t k = atomic_load_explicit(&s->ticket, memory_order_relaxed);
	atomic_store_explicit(&s->ticket, k + 1, memory_order_relaxed);
	uint64_t w = atomic_load(&s->win_start);
	int a, timed = AUTO_UNTIMED;
	run->site = s;
	if (t->rotate) {
		a = (int)(k % AUTO_ARMS);
	} else if (atomic_load(&s->pinned)) {
		a = 0;
	} else if (k >= w && k < w + AUTO_WINDOW) {
		a = window_arm(s, k, w, &timed);
	} else {
		if (k == w + AUTO_WINDOW)
			decide(s, k);
		a = atomic_load(&s->best);
		timed = k % AUTO_WATCH == 0 && atomic_load(&s->ref)
		                ? AUTO_WATCHED
		                : AUTO_UNTIMED;
	}
	run->arm = a;
	run->timed = timed;
	run->t0 = timed ? now_ns() : 0;
	return arms[a];
}

/* A watched transaction took ns (A5): once AUTO_WATCH_N are in, start a
 * window now if their median has moved by more than AUTO_DRIFT times from
 * the winner's, and collect the next AUTO_WATCH_N otherwise. */
static void watch(struct auto_site *s, uint32_t ns)
{
	uint32_t i = atomic_fetch_add(&s->nwatch, 1);
	if (i >= AUTO_WATCH_N)
		return;
	atomic_store(&s->watch[i], ns);
	if (i != AUTO_WATCH_N - 1)
		return;
	pthread_mutex_lock(&s->lock);
	uint32_t now = median(s->watch, AUTO_WATCH_N);
	uint32_t ref = atomic_load(&s->ref);
	if (now && ref && (now > AUTO_DRIFT * ref || ref > AUTO_DRIFT * now)) {
		s->gap = AUTO_GAP_MIN;
		atomic_store(&s->ref, 0); /* until the window decides */
		atomic_store(&s->win_start, atomic_load(&s->ticket));
	}
	for (unsigned j = 0; j < AUTO_WATCH_N; j++)
		atomic_store(&s->watch[j], 0);
	atomic_store(&s->nwatch, 0);
	pthread_mutex_unlock(&s->lock);
}

/* The lowest median of the arms other than a whose blocks are over and
 * that were not dropped (the incumbent's first); 0 if none. *lead gets
 * its arm. */
static uint32_t lowest_done(struct auto_site *s, int a, int *lead)
{
	uint32_t low = 0;
	for (int b = 0; b < AUTO_ARMS; b++) {
		if (b == a || (atomic_load(&s->dropped) & (1u << b)) ||
		    atomic_load(&s->nsamp[b]) < AUTO_SAMPLES)
			continue;
		uint32_t m = arm_median(s, b);
		if (m && (!low || m < low)) {
			low = m;
			*lead = b;
		}
	}
	return low;
}

/* Drop challenger a if the median of the n samples at samp is over
 * limit times the lowest median of an arm already measured. */
static void screen(struct auto_site *s, int a, _Atomic uint32_t *samp,
                   unsigned n, double limit)
{
	if (a == atomic_load(&s->best))
		return;
	int lead = -1;
	uint32_t mine = median(samp, n);
	uint32_t low = lowest_done(s, a, &lead);
	if (mine && low && mine > limit * low) {
		atomic_store(&s->lead, lead);
		atomic_fetch_or(&s->dropped, 1u << a);
	}
}

void auto_commit(const struct auto_run *run)
{
	if (!run->t0)
		return;
	struct auto_site *s = run->site;
	uint64_t ns = now_ns() - run->t0;
	uint32_t v = (uint32_t)MAX(1, MIN(ns, UINT32_MAX)), i;
	int a = run->arm;
	if (run->timed == AUTO_WATCHED) {
		watch(s, v);
		return;
	}
	if (run->timed == AUTO_WARMUP) {
		i = atomic_fetch_add(&s->nwarm[a], 1);
		if (i < AUTO_SCREEN)
			atomic_store(&s->warm[a][i], v);
		if (i == 0)
			screen(s, a, s->warm[a], 1, AUTO_DROP_FIRST);
		if (i == AUTO_SCREEN - 1)
			screen(s, a, s->warm[a], AUTO_SCREEN, AUTO_DROP_WARM);
		return;
	}
	i = atomic_fetch_add(&s->nsamp[a], 1);
	if (i < AUTO_SAMPLES)
		atomic_store(&s->samp[a][i], v);
	if (i < AUTO_SAMPLES && (i + 1) % AUTO_SCREEN == 0)
		screen(s, a, &s->samp[a][i + 1 - AUTO_SCREEN], AUTO_SCREEN,
		       AUTO_DROP);
}

void auto_pin_undo(struct auto_table *t, const struct auto_run *run)
{
	if (!t->rotate)
		atomic_store(&run->site->pinned, 1);
}
