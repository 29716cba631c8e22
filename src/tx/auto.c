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
 * Each site numbers its transactions (tickets). An exploration is a
 * window of AUTO_ARMS * AUTO_SAMPLES tickets in which the arms take turns
 * in blocks of AUTO_BLOCK; each committed transaction of the window is
 * timed. At each block's start, an arm whose median is already over
 * AUTO_DROP times the lowest drops out of the window (screen): on a short
 * run, or where one runtime costs ten times another, a trial must not
 * cost more than the choice saves. The transaction that takes the ticket
 * just past the window decides: the arm with the lowest median wins, and
 * runs until the next window, AUTO_GAP_MIN tickets later, doubling up to
 * AUTO_GAP_MAX while the same arm keeps winning. Outside a window nothing
 * is timed, so the chooser costs a hash probe and a ticket (a relaxed load and store, no
 * locked instruction) per transaction.
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
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "tx.h"

#define AUTO_SITES 64        /* call sites tracked per region */
#define AUTO_BLOCK 4         /* consecutive tickets per arm in a window */
#define AUTO_SAMPLES 32      /* timed transactions per arm per window */
#define AUTO_GAP_MIN 1024    /* tickets between windows, at first */
#define AUTO_GAP_MAX 65536   /* ... at most */

static const pmtx_runtime arms[AUTO_ARMS] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                            PMTX_RT_REDO_ASYNC};
#define AUTO_WINDOW ((uint64_t)AUTO_ARMS * AUTO_SAMPLES)

struct auto_site {
	_Atomic uintptr_t key;          /* return address; 0 = free slot */
	_Atomic uint64_t ticket;        /* transactions begun here */
	_Atomic uint64_t win_start;     /* the current or next window */
	_Atomic int best;               /* index into arms */
	_Atomic int pinned;             /* A2 */
	_Atomic unsigned dropped;       /* arms out of this window (bits) */
	_Atomic int lead;               /* the cheapest arm so far */
	_Atomic uint32_t nsamp[AUTO_ARMS];
	_Atomic uint32_t samp[AUTO_ARMS][AUTO_SAMPLES]; /* ns; 0 = none */
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

/* Median of the arm's samples in this window; 0 if it has none. */
static uint32_t arm_median(struct auto_site *s, int a)
{
	uint32_t v[AUTO_SAMPLES];
	unsigned n = 0, have = MIN(atomic_load(&s->nsamp[a]), AUTO_SAMPLES);
	for (unsigned i = 0; i < have; i++) {
		uint32_t x = atomic_load(&s->samp[a][i]);
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

/* The arm with the lowest median among those with at least need samples
 * (-1 if none); m[a] receives each arm's median, 0 for one left out. */
static int cheapest(struct auto_site *s, uint32_t need, uint32_t m[])
{
	int low = -1;
	for (int a = 0; a < AUTO_ARMS; a++) {
		m[a] = atomic_load(&s->nsamp[a]) >= need ? arm_median(s, a) : 0;
		if (m[a] && (low < 0 || m[a] < m[low]))
			low = a;
	}
	return low;
}

/* At the start of a block: an arm whose median is over AUTO_DROP times
 * the lowest is out of the rest of the window; its blocks run the lead
 * arm, untimed. A clearly worse arm so costs one block, not AUTO_SAMPLES
 * transactions. */
#define AUTO_DROP 1.5
static void screen(struct auto_site *s)
{
	uint32_t m[AUTO_ARMS];
	pthread_mutex_lock(&s->lock);
	int lead = cheapest(s, AUTO_BLOCK, m);
	if (lead >= 0) {
		unsigned out = atomic_load(&s->dropped);
		for (int a = 0; a < AUTO_ARMS; a++)
			if (m[a] > AUTO_DROP * m[lead])
				out |= 1u << a;
		atomic_store(&s->dropped, out);
		atomic_store(&s->lead, lead);
	}
	pthread_mutex_unlock(&s->lock);
}

/* The window that ended at ticket end is over: choose, and place the next
 * window. Called once per window, by the transaction holding ticket end. */
static void decide(struct auto_site *s, uint64_t end)
{
	uint32_t m[AUTO_ARMS];
	pthread_mutex_lock(&s->lock);
	int best = atomic_load(&s->best), won = cheapest(s, 1, m);
	if (won >= 0) {
		s->gap = won == best ? MIN(s->gap * 2, AUTO_GAP_MAX)
		                     : AUTO_GAP_MIN;
		atomic_store(&s->best, won);
	}
	for (int a = 0; a < AUTO_ARMS; a++) {
		for (unsigned i = 0; i < AUTO_SAMPLES; i++)
			atomic_store(&s->samp[a][i], 0);
		atomic_store(&s->nsamp[a], 0);
	}
	atomic_store(&s->dropped, 0);
	atomic_store(&s->lead, atomic_load(&s->best));
	atomic_store(&s->win_start, end + s->gap);
	pthread_mutex_unlock(&s->lock);
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
	int a;
	run->site = s;
	run->t0 = 0;
	if (t->rotate)
		a = (int)(k % AUTO_ARMS);
	else if (atomic_load(&s->pinned))
		a = 0;
	else if (k >= w && k < w + AUTO_WINDOW) {
		a = (int)((k - w) / AUTO_BLOCK % AUTO_ARMS);
		if ((k - w) % AUTO_BLOCK == 0 && k > w)
			screen(s);
		if (atomic_load(&s->dropped) & (1u << a))
			a = atomic_load(&s->lead);
		else
			run->t0 = now_ns();
	} else {
		if (k == w + AUTO_WINDOW)
			decide(s, k);
		a = atomic_load(&s->best);
	}
	run->arm = a;
	return arms[a];
}

void auto_commit(const struct auto_run *run)
{
	if (!run->t0)
		return;
	struct auto_site *s = run->site;
	uint64_t ns = now_ns() - run->t0;
	uint32_t i = atomic_fetch_add(&s->nsamp[run->arm], 1);
	if (i < AUTO_SAMPLES)
		atomic_store(&s->samp[run->arm][i],
		             (uint32_t)MAX(1, MIN(ns, UINT32_MAX)));
}

void auto_pin_undo(struct auto_table *t, const struct auto_run *run)
{
	if (!t->rotate)
		atomic_store(&run->site->pinned, 1);
}
