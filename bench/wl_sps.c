/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_sps.c - the `sps` workload: swaps per second (the NV-Heaps, Romulus
 * and OneFile microbenchmark).
 *
 * An array of `n` 64-bit integers holds a[i] = i. Each transaction swaps
 * `k` random pairs (i, j), drawn independently (i == j is allowed, and a
 * transaction may touch one element more than once, which exercises redo's
 * read-after-write path). An op is one transaction; the extra field
 * "swaps_per_s" is k x ops_per_s.
 *
 * Systems
 *   pmtx-undo, pmtx-redo, pmtx-redo-async, pmtx-auto  the array is the
 *       region's root; a swap is two pmtx_read and two pmtx_write of 8
 *       bytes, so redo sees this transaction's earlier swaps. pmtx-auto
 *       begins with PMTX_RT_AUTO (one call site); undo runs the same code
 *       as auto's undo arm, so that the two compare.
 *   pmtx-twin  the same root, used the way PMDK's runner is written:
 *       pmtx_add_range of both elements, then plain loads and stores (its
 *       reads are plain loads, so pmtx_read would only add a call).
 *       pmtx-twin runs in a twin region (PMTX_RT_TWIN, twice the bytes:
 *       bench_region): reads are plain loads, writes store in place and
 *       note their lines in DRAM, and commit flushes those lines and
 *       copies them to the back copy with non-temporal stores: 4 barriers
 *       per transaction, 1 flush per line written plus 2 of the state
 *       word.
 *   pmtx-cow  the array is split into ceil(n/8) 64-byte copy-on-write
 *       objects of 8 integers; the root holds their wrappers. A swap opens
 *       both objects for writing (one private copy per object per
 *       transaction) and swaps the two integers in the copies.
 *   pmdk  libpmemobj: TX_BEGIN, pmemobj_tx_add_range of both 8-byte
 *       elements, swap with plain stores (a root of n * 8 bytes).
 *   plain  the same swaps with plain loads and stores and no transaction,
 *       on a pmtx region's root (the same kind of mapping as the pmtx
 *       systems, so the floor has the same page size and TLB behaviour).
 * Every pmtx system runs under each configuration of bench_configs().
 *
 * pmtx-cltx is not among them: a cache-line transaction makes one line
 * failure atomic, and a swap changes two.
 *
 * Parameters (--p): n (1000000), k (sweep, "1,2,4,...,1024"), seed (1),
 * inplace (1; 0: twin swaps through pmtx_read and pmtx_write too, so
 * that a persistence trace sees every store: scripts/whisper.py),
 * threads (1; a list runs each count as a runner of its own, interleaved
 * with the others), shared (0; 0,1 runs both modes side by side), ops (0;
 * N: check mode, below). Every runner draws the same pairs from the same
 * seed; thread t > 0 of a runner from seed + t.
 *
 * Threads. Each thread runs its own transactions (bench_crew: a batch of
 * operations is split evenly between the threads and timed to the end of
 * the slowest), always on the one array of n integers in one region or
 * pool, because that is what an application's threads share: the
 * region's descriptors, heap, commit sequence and truncation queue are
 * part of what is measured, and the data (n x 8 bytes, in the same
 * caches) is the same whatever the thread count.
 *   shared=0 (disjoint): thread t swaps within its own slice of the
 *       array, [t n / T, (t + 1) n / T) rounded down to 8 integers (one
 *       line, one COW object), so no line and no COW object is written
 *       by two threads. With one thread it is the workload above.
 *   shared=1: every thread swaps over the whole array. A transaction
 *       draws its k pairs first, then locks its slots in index order,
 *       each once (no deadlock: every thread takes them in the same
 *       order), and hands each lock to pmtx_defer_unlock, so it is
 *       released only when the transaction has committed (durable) or
 *       aborted. The locks are pthread mutexes, one per slot, except
 *       under pmtx-cow, where one covers an object of 8 (two threads may
 *       not write one object at a time: pmtx_cow_open's PMTX_E_BUSY).
 *       They are taken before pmtx_begin, as twin requires (pmtx.h: a
 *       thread must not wait for a lock inside a twin transaction). PMDK
 *       holds them from before TX_BEGIN to after TX_END; plain around
 *       its k swaps.
 * pmtx-twin runs one transaction of a region at a time (twin.c TW5), so
 * its threads take turns, as the Romulus family's flat combining does.
 * Counters are per thread in pmtx and in PMDK's count (pmdk_count.c);
 * a runner's are its threads' sums. The line of a runner gives threads
 * and shared in its params.
 *
 * Setup, outside the measurement: the array is initialised with naked
 * stores and one pmtx_persist (pmemobj_persist for PMDK), never with one
 * transaction per element. The COW objects are created in undo
 * transactions of 256 objects each, then filled through pmtx_cow_peek with
 * naked stores and persisted.
 *
 * Validation (check): a swap preserves the multiset of values, so the
 * array must be a permutation of 0..n-1 (DRAM bitmap) and sum to
 * n(n-1)/2; it is checked, then checked again once the region (pool) has
 * been closed and opened. corrupt (--inject-fault) adds 1 to a[0], which
 * breaks both. A swap that two threads made at once, unlocked, would
 * lose one and duplicate a value.
 *
 * Check mode (ops=N): each runner runs N transactions, untimed and split
 * between its threads, then is validated; nothing is printed. The
 * tests run it (bench_sps_threads).
 */
#include <libpmemobj.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define OBJ_WORDS 8u        /* integers per COW object: one cache line */
#define SETUP_BATCH 256u    /* COW objects created per setup transaction */
#define SLACK (64ull << 20) /* region bytes beyond the data, for logs */
#define MAX_THREADS 8


enum sps_kind { SPS_PMTX, SPS_COW, SPS_PMDK, SPS_PLAIN };

struct sps_params {
	uint64_t n;
	long k;
	uint64_t seed;
	int inplace; /* twin through pmtx_add_range (1) or not */
	int threads; /* of the runner being made */
	int shared;  /* ditto: one array for all (1) or a slice each (0) */
	long ops;    /* check mode: transactions per runner (0: measure) */
	struct bench_cfg cfg; /* of the pmtx runner being made */
};

struct sps_ctx;

/* What one thread of a runner owns. */
struct sps_thread {
	struct sps_ctx *c;
	uint64_t rng;
	uint64_t lo, len;  /* disjoint: its slice [lo, lo + len) */
	/* shared: this transaction's pairs (2k), its lock units (sorted,
	 * each once), how many of them, and the next pair to swap */
	uint64_t *pairs, *units;
	size_t nunits, next;
	size_t handed; /* units [0, handed) are pmtx_defer_unlock's */
	uint64_t cpu_ns; /* CPU time of its shares */
} __attribute__((aligned(64)));

struct sps_ctx {
	struct sps_params p;
	enum sps_kind kind;
	int inplace;        /* twin: pmtx_add_range and plain stores */
	pmtx_runtime rt;
	pmtx_region *r;
	PMEMobjpool *pop;
	PMEMoid root;
	uint64_t *a;    /* the array (every kind but cow) */
	pm_obj64 *objs; /* cow: ceil(n / 8) wrappers, in the root */
	char path[256];
	/* shared: a lock per unit of 1 << lock_shift slots */
	pthread_mutex_t *locks;
	unsigned lock_shift;
	int (*one)(struct sps_thread *th); /* shared: a transaction, locked */
	struct bench_crew *crew; /* threads > 1 */
	uint64_t wall_ns; /* sps_run's, warm-up included (cpu_per_s) */
	struct sps_thread th[MAX_THREADS];
};

static uint64_t rng_seed(uint64_t seed)
{
	return seed ^ 0x9e3779b97f4a7c15ull; /* xorshift needs nonzero */
}

static uint64_t nobjs(uint64_t n)
{
	return (n + OBJ_WORDS - 1) / OBJ_WORDS;
}

/* Element i, wherever the kind keeps it (cow: the committed payload). */
static uint64_t *elem(struct sps_ctx *c, uint64_t i)
{
	if (c->kind != SPS_COW)
		return &c->a[i];
	uint64_t *obj = (uint64_t *)pmtx_cow_peek(c->r, c->objs[i / OBJ_WORDS].w);
	return &obj[i % OBJ_WORDS];
}

/* ---- the transactions ---- */

static int pmtx_swap(pmtx_tx *tx, uint64_t *x, uint64_t *y)
{
	uint64_t vx, vy;
	int rc = pmtx_read(tx, &vx, x, sizeof(vx));
	if (!rc)
		rc = pmtx_read(tx, &vy, y, sizeof(vy));
	if (!rc)
		rc = pmtx_write(tx, x, &vy, sizeof(vy));
	if (!rc)
		rc = pmtx_write(tx, y, &vx, sizeof(vx));
	return rc;
}

/* twin: declare both, then swap in place (as pmdk_body). */
static int inplace_swap(pmtx_tx *tx, uint64_t *x, uint64_t *y)
{
	int rc = pmtx_add_range(tx, x, sizeof(*x));
	if (!rc)
		rc = pmtx_add_range(tx, y, sizeof(*y));
	if (!rc) {
		uint64_t t = *x;
		*x = *y;
		*y = t;
	}
	return rc;
}

static int cow_swap(pmtx_tx *tx, const pm_obj64 *objs, uint64_t i, uint64_t j)
{
	struct obj64 *p, *q;
	int rc = pm_obj64_open(tx, objs[i / OBJ_WORDS], PMTX_COW_WRITE, NULL, &p);
	if (!rc)
		rc = pm_obj64_open(tx, objs[j / OBJ_WORDS], PMTX_COW_WRITE, NULL,
		                   &q);
	if (rc)
		return rc;
	uint64_t t = p->v[i % OBJ_WORDS];
	p->v[i % OBJ_WORDS] = q->v[j % OBJ_WORDS];
	q->v[j % OBJ_WORDS] = t;
	return 0;
}

/* The next pair to swap: drawn ahead (shared), or now in the thread's
 * slice (disjoint; one thread: the whole array, as ever). */
static void next_pair(struct sps_thread *th, uint64_t *i, uint64_t *j)
{
	if (th->pairs) {
		*i = th->pairs[2 * th->next];
		*j = th->pairs[2 * th->next + 1];
		th->next++;
		return;
	}
	*i = th->lo + bench_rand(&th->rng) % th->len;
	*j = th->lo + bench_rand(&th->rng) % th->len;
}

static int pmtx_swaps(void *vth, pmtx_tx *tx)
{
	struct sps_thread *th = vth;
	struct sps_ctx *c = th->c;
	for (long s = 0; s < c->p.k; s++) {
		uint64_t i, j;
		next_pair(th, &i, &j);
		int rc = c->kind == SPS_COW ? cow_swap(tx, c->objs, i, j)
		         : c->inplace ? inplace_swap(tx, &c->a[i], &c->a[j])
		                      : pmtx_swap(tx, &c->a[i], &c->a[j]);
		if (rc)
			return rc;
	}
	return 0;
}

static int pmtx_run(struct sps_thread *th, uint64_t n)
{
	return bench_txs(th->c->r, th->c->rt, n, pmtx_swaps, th);
}

static void pmdk_body(void *vth)
{
	struct sps_thread *th = vth;
	struct sps_ctx *c = th->c;
	for (long s = 0; s < c->p.k; s++) {
		uint64_t i, j;
		next_pair(th, &i, &j);
		pmemobj_tx_add_range(c->root, i * sizeof(uint64_t),
		                     sizeof(uint64_t));
		pmemobj_tx_add_range(c->root, j * sizeof(uint64_t),
		                     sizeof(uint64_t));
		uint64_t t = c->a[i];
		c->a[i] = c->a[j];
		c->a[j] = t;
	}
}

static int pmdk_run(struct sps_thread *th, uint64_t n)
{
	return bench_pmdk_txs(th->c->pop, n, pmdk_body, th);
}

static void plain_swaps(struct sps_thread *th)
{
	struct sps_ctx *c = th->c;
	for (long s = 0; s < c->p.k; s++) {
		uint64_t i, j;
		next_pair(th, &i, &j);
		uint64_t v = c->a[i];
		c->a[i] = c->a[j];
		c->a[j] = v;
	}
}

static int plain_run(struct sps_thread *th, uint64_t n)
{
	for (uint64_t t = 0; t < n; t++)
		plain_swaps(th);
	return 0;
}

/* ---- shared: the slots' locks ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Draw the transaction's k pairs over the whole array, and the lock
 * units they touch, sorted, each once. */
static void draw_pairs(struct sps_thread *th)
{
	struct sps_ctx *c = th->c;
	size_t m = 2 * (size_t)c->p.k, u = 0;
	for (size_t x = 0; x < m; x++) {
		th->pairs[x] = bench_rand(&th->rng) % c->p.n;
		th->units[x] = th->pairs[x] >> c->lock_shift;
	}
	if (m > 32)
		qsort(th->units, m, sizeof(*th->units), cmp_u64);
	else
		for (size_t x = 1; x < m; x++) /* insertion: few units */
			for (size_t y = x; y && th->units[y - 1] > th->units[y];
			     y--) {
				uint64_t v = th->units[y];
				th->units[y] = th->units[y - 1];
				th->units[y - 1] = v;
			}
	for (size_t x = 0; x < m; x++)
		if (u == 0 || th->units[x] != th->units[u - 1])
			th->units[u++] = th->units[x];
	th->nunits = u;
	th->next = 0;
	th->handed = 0;
}

/* In index order, the same in every thread: no deadlock. */
static void lock_units(struct sps_thread *th)
{
	for (size_t u = 0; u < th->nunits; u++)
		pthread_mutex_lock(&th->c->locks[th->units[u]]);
}

/* The locks not handed to pmtx_defer_unlock. */
static void unlock_rest(struct sps_thread *th)
{
	for (size_t u = th->handed; u < th->nunits; u++)
		pthread_mutex_unlock(&th->c->locks[th->units[u]]);
}

/* pmtx: begin, hand every lock to the transaction (released after its
 * commit or abort), swap, commit. */
static int pmtx_locked(struct sps_thread *th)
{
	struct sps_ctx *c = th->c;
	pmtx_tx *tx;
	int rc = pmtx_begin(c->r, c->rt, &tx);
	if (rc)
		return rc;
	while (!rc && th->handed < th->nunits &&
	       !(rc = pmtx_defer_unlock(tx, &c->locks[th->units[th->handed]])))
		th->handed++;
	return bench_tx_end(tx, rc ? rc : pmtx_swaps(th, tx));
}

/* PMDK: the locks are held past TX_END, where the transaction is
 * durable. */
static int pmdk_locked(struct sps_thread *th)
{
	return bench_pmdk_tx(th->c->pop, pmdk_body, th);
}

static int plain_locked(struct sps_thread *th)
{
	plain_swaps(th);
	return 0;
}

static int shared_run(struct sps_thread *th, uint64_t n)
{
	int rc = 0;
	for (uint64_t t = 0; !rc && t < n; t++) {
		draw_pairs(th);
		lock_units(th);
		rc = th->c->one(th);
		unlock_rest(th);
	}
	return rc;
}

/* ---- a runner's threads ---- */

static int (*const disjoint_run[])(struct sps_thread *, uint64_t) = {
	[SPS_PMTX] = pmtx_run, [SPS_COW] = pmtx_run, [SPS_PMDK] = pmdk_run,
	[SPS_PLAIN] = plain_run,
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Thread t's n transactions (bench_crew's share, or the whole run). */
static int sps_share(void *vctx, int t, uint64_t n)
{
	struct sps_ctx *c = vctx;
	struct sps_thread *th = &c->th[t];
	uint64_t cpu0 = thread_cpu_ns();
	int rc = c->p.shared ? shared_run(th, n) : disjoint_run[c->kind](th, n);
	th->cpu_ns += thread_cpu_ns() - cpu0;
	return rc;
}

static int sps_run(void *vctx, uint64_t n)
{
	struct sps_ctx *c = vctx;
	uint64_t t0 = bench_now_ns();
	int rc = c->crew ? bench_crew_run(c->crew, n) : sps_share(c, 0, n);
	c->wall_ns += bench_now_ns() - t0;
	return rc;
}

static void sps_counters(void *vctx, uint64_t *barriers, uint64_t *flushes)
{
	bench_crew_counters(((struct sps_ctx *)vctx)->crew, barriers, flushes);
}

/* ---- validation ---- */

static int check_array(struct sps_ctx *c, const char *when)
{
	uint64_t n = c->p.n, sum = 0, bad = n;
	uint64_t *seen = calloc((n + 63) / 64, sizeof(uint64_t));
	if (!seen)
		return PMTX_E_NOMEM;
	for (uint64_t i = 0; i < n && bad == n; i++) {
		uint64_t v = *elem(c, i);
		if (v >= n || (seen[v / 64] >> (v % 64)) & 1)
			bad = i;
		else
			seen[v / 64] |= 1ull << (v % 64);
		sum += v;
	}
	free(seen);
	if (bad != n || sum != n * (n - 1) / 2) {
		fprintf(stderr, "sps: %s: not a permutation of 0..%llu (first "
		        "bad index %llu, sum %llu)\n", when,
		        (unsigned long long)(n - 1), (unsigned long long)bad,
		        (unsigned long long)sum);
		return PMTX_E_CORRUPT;
	}
	return 0;
}

/* Close the region (pool) and open it again: the array as a fresh
 * process would find it. */
static int reopen(struct sps_ctx *c)
{
	if (c->pop) {
		pmemobj_close(c->pop);
		c->pop = pmemobj_open(c->path, "bench");
		if (!c->pop) {
			fprintf(stderr, "pmemobj_open %s: %s\n", c->path,
			        pmemobj_errormsg());
			return PMTX_E_IO;
		}
		c->root = pmemobj_root(c->pop, c->p.n * 8);
		c->a = pmemobj_direct(c->root);
		return 0;
	}
	pmtx_options opt;
	pmtx_options_init(&opt);
	opt.domain = c->p.cfg.domain;
	opt.backend = c->p.cfg.backend;
	int rc = pmtx_close(c->r);
	c->r = NULL;
	if (!rc)
		rc = pmtx_open(c->path, &opt, &c->r);
	if (rc) {
		fprintf(stderr, "sps: reopen %s: %s (%s)\n", c->path,
		        pmtx_strerror(rc), pmtx_errmsg());
		return rc;
	}
	if (c->kind == SPS_COW)
		c->objs = pmtx_root(c->r, NULL);
	else
		c->a = pmtx_root(c->r, NULL);
	return 0;
}

static int sps_check(void *vctx)
{
	struct sps_ctx *c = vctx;
	int rc = check_array(c, "after the run");
	if (!rc)
		rc = reopen(c);
	return rc ? rc : check_array(c, "after reopening");
}

static void sps_corrupt(void *vctx)
{
	*elem(vctx, 0) += 1;
}

static void sps_destroy(void *vctx)
{
	struct sps_ctx *c = vctx;
	bench_crew_stop(c->crew);
	if (c->r || c->pop)
		bench_close(c->r, c->pop, c->path);
	else if (c->path[0])
		unlink(c->path); /* a reopen that failed */
	if (c->locks)
		for (uint64_t u = 0; u <= (c->p.n - 1) >> c->lock_shift; u++)
			pthread_mutex_destroy(&c->locks[u]);
	free(c->locks);
	for (int t = 0; t < c->p.threads; t++) {
		free(c->th[t].pairs);
		free(c->th[t].units);
	}
	free(c);
}

/* swaps_per_s; cpu_per_s: the CPU time its threads had per second of
 * its runs (2.0: two busy cores), below the thread count when the
 * machine's other work took cores, or when its threads waited for a lock
 * (shared mode, twin). */
static void sps_extra(const struct runner *r, char *buf, size_t len)
{
	const struct sps_ctx *c = r->ctx;
	double ops = r->ns ? 1e9 * (double)r->ops / (double)r->ns : 0;
	uint64_t cpu = 0;
	for (int t = 0; t < c->p.threads; t++)
		cpu += c->th[t].cpu_ns;
	snprintf(buf, len, "\"swaps_per_s\":%.1f,\"cpu_per_s\":%.3f",
	         ops * (double)c->p.k,
	         c->wall_ns ? (double)cpu / (double)c->wall_ns : 0);
}

/* ---- setup ---- */

static void fill_identity(uint64_t *a, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		a[i] = i;
}

/* Create the COW objects (empty), then fill them with naked stores. */
static int cow_setup(struct sps_ctx *c)
{
	uint64_t m = nobjs(c->p.n);
	int rc = bench_obj64_setup(c->r, c->objs, m, SETUP_BATCH);
	if (rc)
		return rc;
	for (uint64_t i = 0; i < c->p.n; i++)
		*elem(c, i) = i;
	for (uint64_t o = 0; o < m; o++)
		pmtx_flush(c->r, pmtx_cow_peek(c->r, c->objs[o].w),
		           sizeof(struct obj64));
	return pmtx_barrier(c->r);
}

/* Thread t's slice of the array when they are disjoint: whole lines
 * (and COW objects), the last thread's up to n. */
static void slice(const struct sps_params *p, int t, uint64_t *lo,
                  uint64_t *len)
{
	uint64_t T = (uint64_t)p->threads;
	uint64_t a = (uint64_t)t * p->n / T & ~(uint64_t)(OBJ_WORDS - 1);
	uint64_t b = (uint64_t)t + 1 == T
	                     ? p->n
	                     : ((uint64_t)t + 1) * p->n / T &
	                               ~(uint64_t)(OBJ_WORDS - 1);
	*lo = T == 1 ? 0 : a;
	*len = T == 1 ? p->n : b - a;
}

/* The locks of shared mode, one per unit, and each thread's buffers. */
static int shared_init(struct sps_ctx *c)
{
	static int (*const one[])(struct sps_thread *) = {
		[SPS_PMTX] = pmtx_locked, [SPS_COW] = pmtx_locked,
		[SPS_PMDK] = pmdk_locked, [SPS_PLAIN] = plain_locked,
	};
	c->lock_shift = c->kind == SPS_COW ? 3 : 0; /* OBJ_WORDS */
	c->one = one[c->kind];
	uint64_t nu = ((c->p.n - 1) >> c->lock_shift) + 1;
	c->locks = malloc(nu * sizeof(*c->locks));
	if (!c->locks)
		return PMTX_E_NOMEM;
	for (uint64_t u = 0; u < nu; u++)
		pthread_mutex_init(&c->locks[u], NULL);
	for (int t = 0; t < c->p.threads; t++) {
		c->th[t].pairs = malloc(2 * (size_t)c->p.k * sizeof(uint64_t));
		c->th[t].units = malloc(2 * (size_t)c->p.k * sizeof(uint64_t));
		if (!c->th[t].pairs || !c->th[t].units)
			return PMTX_E_NOMEM;
	}
	return 0;
}

static struct sps_ctx *ctx_new(const struct sps_params *p,
                               enum sps_kind kind, pmtx_runtime rt)
{
	struct sps_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	*c = (struct sps_ctx){.p = *p, .kind = kind, .rt = rt,
	                      .inplace = p->inplace && rt == PMTX_RT_TWIN};
	for (int t = 0; t < p->threads; t++) {
		struct sps_thread *th = &c->th[t];
		th->c = c;
		th->rng = rng_seed(p->seed + (uint64_t)t);
		slice(p, t, &th->lo, &th->len);
	}
	if (p->shared && shared_init(c)) {
		sps_destroy(c);
		return NULL;
	}
	return c;
}

/* Bind r to c once made (rc 0), with its threads (if more than one). */
static int runner_bind(struct runner *r, struct sps_ctx *c, int rc)
{
	if (!rc && c->p.threads > 1)
		rc = bench_crew_start(c->p.threads, sps_share, c, &c->crew);
	rc = bench_bind(r, rc, c, sps_run, sps_check, sps_corrupt,
	                sps_destroy);
	if (!rc && c->crew)
		r->counters = sps_counters;
	return rc;
}

/* The array of a pmtx runner, in its root: the identity, durable. */
static int pmtx_fill(struct sps_ctx *c)
{
	if (c->kind == SPS_COW) {
		c->objs = pmtx_root(c->r, NULL);
		return cow_setup(c);
	}
	c->a = pmtx_root(c->r, NULL);
	fill_identity(c->a, c->p.n);
	return pmtx_persist(c->r, c->a, c->p.n * 8);
}

static int pmtx_runner(struct runner *r, const struct bench_opts *o,
                       pmtx_runtime rt, struct bench_cfg cfg, void *arg)
{
	int cow = rt == PMTX_RT_COW;
	struct sps_params p = *(const struct sps_params *)arg;
	p.cfg = cfg; /* for the reopen */
	struct sps_ctx *c = ctx_new(&p, cow ? SPS_COW : SPS_PMTX, rt);
	if (!c)
		return PMTX_E_NOMEM;
	uint64_t n = c->p.n;
	size_t root = cow ? nobjs(n) * sizeof(pm_obj64) : n * 8;
	size_t data = cow ? nobjs(n) * 2 * 256 : n * 8 * 2;
	int rc = bench_region(r, o, rt, cfg, root, data + SLACK, &c->r, c->path);
	return runner_bind(r, c, rc ? rc : pmtx_fill(c));
}

static int pmdk_runner(struct runner *r, const struct bench_opts *o,
                       void *arg)
{
	struct sps_ctx *c = ctx_new(arg, SPS_PMDK, PMTX_RT_DEFAULT);
	if (!c)
		return PMTX_E_NOMEM;
	uint64_t n = c->p.n;
	int rc = bench_pmdk_pool(r, o, n * 8, n * 8 * 2 + SLACK, &c->pop,
	                         c->path);
	if (!rc) {
		c->root = pmemobj_root(c->pop, n * 8);
		c->a = pmemobj_direct(c->root);
		fill_identity(c->a, n);
		pmemobj_persist(c->pop, c->a, n * 8);
	}
	return runner_bind(r, c, rc);
}

static int plain_runner(struct runner *r, const struct bench_opts *o,
                        void *arg)
{
	struct sps_ctx *c = ctx_new(arg, SPS_PLAIN, PMTX_RT_DEFAULT);
	if (!c)
		return PMTX_E_NOMEM;
	uint64_t n = c->p.n;
	int rc = bench_plain_region(r, o, n * 8, n * 8 + SLACK, &c->r, c->path);
	if (!rc) {
		c->a = pmtx_root(c->r, NULL);
		c->p.cfg = (struct bench_cfg){PMTX_PDOM1, PMTX_BACKEND_HARDWARE};
		fill_identity(c->a, n);
	}
	return runner_bind(r, c, rc);
}

/* ---- the sweep ---- */

static const struct bench_makers makers =
	BENCH_MAKERS(bench_runtimes, pmtx_runner, pmdk_runner, plain_runner);

/* Measure rs[0, n) interleaved (or, in check mode, run each for
 * p->ops transactions) and print a line each, with its own threads and
 * mode among the params. */
static int measure_emit(struct runner *rs, int n, int rc,
                        const struct bench_opts *o,
                        const struct sps_params *p)
{
	for (int i = 0; !rc && p->ops && i < n; i++)
		rc = rs[i].run(rs[i].ctx, (uint64_t)p->ops);
	if (!rc && !p->ops)
		rc = bench_measure(rs, n, o);
	for (int i = 0; !rc && !p->ops && i < n; i++) {
		const struct sps_ctx *c = rs[i].ctx;
		char params[160], extra[64];
		snprintf(params, sizeof(params),
		         "\"n\":%llu,\"k\":%ld,\"seed\":%llu,"
		         "\"threads\":%d,\"shared\":%d",
		         (unsigned long long)p->n, p->k,
		         (unsigned long long)p->seed, c->p.threads, c->p.shared);
		sps_extra(&rs[i], extra, sizeof(extra));
		bench_emit_ex(&rs[i], "sps", params, extra);
	}
	return bench_finish(rs, n, rc, o, "sps");
}

/* How many runners one bench_runners call makes. */
static int count_runners(const struct bench_opts *o)
{
	struct bench_cfg cfgs[8];
	int n = 0;
	for (size_t k = 0; k < makers.nrts; k++)
		n += bench_want(o, bench_system_name(makers.rts[k]));
	return n * bench_configs(o, cfgs, 8) + bench_want_pmdk(o) +
	       bench_want_plain(o);
}

/* rs[0, n) holds groups of g runners, the same systems in the same
 * order: put each system's runners side by side (a, a', b, b', ...), so
 * that those compared run one right after the other in every round. */
static void side_by_side(struct runner *rs, int n, int g)
{
	struct runner tmp[BENCH_MAX_RUNNERS];
	int groups = n / g, k = 0;
	for (int j = 0; j < g; j++)
		for (int x = 0; x < groups; x++)
			tmp[k++] = rs[x * g + j];
	memcpy(rs, tmp, (size_t)n * sizeof(*rs));
}

/* Every runner of one k: each system under each (threads, shared). */
static int sps_point(const struct bench_opts *o, struct sps_params p,
                     const long *threads, int nthreads, const long *shared,
                     int nshared)
{
	struct runner rs[BENCH_MAX_RUNNERS];
	int n = 0, rc = 0, g = 0;
	if (nshared * nthreads * count_runners(o) > BENCH_MAX_RUNNERS) {
		fprintf(stderr, "sps: over %d runners at one point: fewer "
		        "systems, configurations, threads or modes\n",
		        BENCH_MAX_RUNNERS);
		return PMTX_E_INVAL;
	}
	for (int s = 0; !rc && s < nshared; s++)
		for (int t = 0; !rc && t < nthreads; t++) {
			p.threads = (int)threads[t];
			p.shared = (int)shared[s];
			rc = bench_runners(rs, &n, o, &makers, &p);
			g = g ? g : n;
		}
	if (!rc && g)
		side_by_side(rs, n, g);
	return measure_emit(rs, n, rc, o, &p);
}

int wl_sps(const struct bench_opts *o)
{
	static const char *const systems[] = {"pmtx-undo", "pmtx-redo",
	                                      "pmtx-redo-async", "pmtx-cow",
	                                      "pmtx-auto", "pmtx-twin", "pmdk",
	                                      "plain", NULL};
	if (bench_check_systems(o, "sps", systems))
		return PMTX_E_INVAL;
	long ks[32];
	int nk = bench_param_in(o, "sps", "k", "1,2,4,8,16,32,64,128,256,512,1024",
	                        1, LONG_MAX, ks, 32);
	long n = bench_param1(o, "n", 1000000);
	if (n < 2) {
		fprintf(stderr, "sps: n must be at least 2\n");
		return PMTX_E_INVAL;
	}
	long threads[MAX_THREADS], shared[2];
	int nt = bench_param_in(o, "sps", "threads", "1", 1, MAX_THREADS,
	                        threads, MAX_THREADS);
	int ns = bench_param_in(o, "sps", "shared", "0", 0, 1, shared, 2);
	for (int t = 0; t < nt; t++)
		if (n < OBJ_WORDS * threads[t]) {
			fprintf(stderr, "sps: n must be at least 8 x threads\n");
			return PMTX_E_INVAL;
		}
	struct sps_params p = {.n = (uint64_t)n,
	                       .seed = (uint64_t)bench_param1(o, "seed", 1),
	                       .inplace = bench_param1(o, "inplace", 1) != 0,
	                       .ops = bench_param1(o, "ops", 0)};
	int rc = nk < 0 || nt < 0 || ns < 0 || p.ops < 0 ? PMTX_E_INVAL : 0;
	for (int i = 0; !rc && i < nk; i++) {
		p.k = ks[i];
		rc = sps_point(o, p, threads, nt, shared, ns);
	}
	return rc;
}
