/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_costs.c - the `costs` workload: what the persistence primitives cost
 * on this machine, as the parameters of a timing model of traces (`pmtx
 * trace hops --costs FILE`: barrier_fit.fence_ns, barrier_fit.line_ns,
 * clwb_clean.ns, trace_record.ns). Output keys are fixed by the shared
 * spec (hops_costs.md); every line has workload "costs", "what", "ns"
 * (the median over rounds of ns per operation), "rounds" and "n" (the
 * operations timed in each round, the fewest of any round).
 *
 * What is measured, and how
 *  1. sfence       an sfence with nothing outstanding: a loop of sfences
 *                  (unrolled by 8), no store in the loop.
 *  2. clwb_clean   the flush instruction pmtx chose (pmtx_flush_instruction:
 *                  clwb, else clflushopt, else clflush), issued here in
 *                  a loop over 64 lines that were written and made durable
 *                  before the measurement, no fence. persist.c's flush is
 *                  static, so the instruction is issued here; the same line
 *                  also gives "pmtx_flush_ns", one pmtx_flush of one such
 *                  line (the library's call, counter and trace branch).
 *                  Whether a line stays cached after a clwb is the CPU's
 *                  choice; the figure is that of flushing a line that has
 *                  just been flushed, which is what a clean line is in pmtx.
 *  3. barrier_lines for k in 0,1,2,4,8,16,32,64 (--p lines=, up to
 *                  256): one 8-byte store to each of k distinct lines of
 *                  the root of a PDOM-1 hardware region in /dev/shm, one
 *                  pmtx_flush per line, one pmtx_barrier. ns is the time
 *                  of the flushes and the barrier: the loop's time less
 *                  that of the same stores alone (a second loop timed in
 *                  the same round, reported as store_ns). If the CPU
 *                  evicts a line at its flush, the next store to it
 *                  misses; that miss is in ns, as it is a cost of
 *                  flushing here. Every call (the warm-up and every
 *                  round) checks pmtx_counters: exactly k lines and 1
 *                  barrier per iteration, else the workload fails
 *                  (PMTX_E_CORRUPT).
 *  4. barrier_fit  the least-squares line ns = fence_ns + line_ns * k over
 *                  the points of 3 with k >= 1 ("ns" is null: the fit has
 *                  no single operation; "n" is the points fitted). k = 0 is left out because it is
 *                  another regime: an sfence with no write-back to wait
 *                  for costs about what the call does (~1 ns on the
 *                  machine of 2026-11-26), while the first line written
 *                  back costs the wait for the memory controller (~200
 *                  ns there) and each further line only a few ns; a
 *                  line through k = 0 would understate fence_ns for every
 *                  barrier that writes anything back. The fit over every
 *                  point is kept as all_fence_ns and all_line_ns, the
 *                  k = 0 point as fence_empty_ns.
 *  5. msync_pages  for k in 1,4,16,64 (--p pages=): k scattered 4 KiB pages
 *                  of a 16 MiB root on the file backend in --dir (default
 *                  /var/tmp) get one store each and one pmtx_flush, then one
 *                  pmtx_barrier (persist.c invariant 5: one msync for one
 *                  run, else sync_file_range per run and one fdatasync).
 *                  The pages are one per k-th of the root, never adjacent,
 *                  so the barrier writes k runs; the counters are checked
 *                  (k lines, k runs, 1 barrier per iteration). "fs" is
 *                  the file system of --dir (statfs).
 *  6. trace_record the time one trace record adds while a trace is being
 *                  written: a loop of one store and one pmtx_persist of 8
 *                  bytes (a FLUSH and a BARRIER record) on the hardware
 *                  region, timed with no trace and then with
 *                  pmtx_trace_start(/dev/shm/..., 0) on, each loop in 16
 *                  chunks. The records are counted by reading the file
 *                  back (pmtx_trace.h has no counter) and the file is
 *                  removed; ns = (the fastest traced chunk's time per op -
 *                  the fastest untraced chunk's) / records per op. The
 *                  fastest chunks, because other work on the machine (a
 *                  busy test run) can land in one loop and not the other:
 *                  a difference of means went negative under load, and
 *                  `pmtx trace hops --costs` refuses a negative cost.
 *                  (A chunk writes about 40 of the trace's 64 KiB blocks,
 *                  so the fastest one still pays for writing the file.)
 *                  A round traces at most 2^19 ops (48 MiB of records).
 *  7. lock_after_flush  as barrier_lines at k = 1, with a locked add
 *                  (atomic_fetch_add) where the barrier was, and no
 *                  barrier: what any lock, atomic or mutex costs right
 *                  after a line was flushed. Where it costs about what a
 *                  barrier does (AMD: the locked instruction waits for the
 *                  write-back as sfence does), a runtime that defers its
 *                  barrier but takes a lock meanwhile still pays one.
 *
 * Timing: clock_gettime around chunks of operations. Each measurement has
 * --seconds, split into --rounds rounds after a warm-up of doubling
 * batches (a quarter of a round at most) that sets n, the operations of a
 * round. Every loop is bounded in count (n, at most 2^26) and in time (a
 * round stops after 4 round-lengths). A benchmark never asserts a time.
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <linux/magic.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bench.h"
#include "pmtx_trace.h"

#define LINE 64u
#define NLINES 256u                 /* lines of the hardware region's root */
#define CLEAN_LINES 64u             /* of them, cycled one at a time */
#define PAGE 4096u
#define FILE_PAGES 4096u            /* pages of the file region's root */
#define N_CAP (1ull << 26)          /* most operations in a round */
#define TRACE_CAP (1ull << 19)      /* most traced operations in a round */
#define MAX_POINTS 16

struct costs {
	const struct bench_opts *o;
	int rounds;
	uint64_t slice;  /* ns per round */
	pmtx_region *hw; /* PDOM-1 hardware, in /dev/shm */
	pmtx_region *file;
	char hw_path[256], file_path[256], trace_path[256];
	char *lines; /* NLINES lines: hw's root */
	char *pages; /* FILE_PAGES pages: file's root */
	const char *file_dir;
	uint64_t rng;
};

/* One measurement: op runs n operations (arg: k); base, if not NULL, is
 * timed in the same rounds and subtracted; check, if not NULL, judges
 * the counters' growth over ops operations. */
struct meas {
	int (*op)(struct costs *c, long arg, uint64_t n);
	int (*base)(struct costs *c, long arg, uint64_t n);
	int (*check)(long arg, uint64_t ops, const pmtx_counters *d);
	long arg;
};

struct result {
	double ns, ns_min, ns_max, base_ns;
	uint64_t n;
	int rounds;
};

/* ---- the operations ---- */

static int op_sfence(struct costs *c, long arg, uint64_t n)
{
	for (; n >= 8; n -= 8) {
		_mm_sfence(), _mm_sfence(), _mm_sfence(), _mm_sfence();
		_mm_sfence(), _mm_sfence(), _mm_sfence(), _mm_sfence();
	}
	for (; n; n--)
		_mm_sfence();
	return 0;
}

__attribute__((target("clwb"))) static void loop_clwb(const char *b,
                                                       uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		_mm_clwb((void *)(b + (i % CLEAN_LINES) * LINE));
}

__attribute__((target("clflushopt"))) static void
loop_clflushopt(const char *b, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		_mm_clflushopt((void *)(b + (i % CLEAN_LINES) * LINE));
}

static void loop_clflush(const char *b, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		_mm_clflush(b + (i % CLEAN_LINES) * LINE);
}

static int op_flush_insn(struct costs *c, long arg, uint64_t n)
{
	const char *insn = pmtx_flush_instruction();
	if (!strcmp(insn, "clwb"))
		loop_clwb(c->lines, n);
	else if (!strcmp(insn, "clflushopt"))
		loop_clflushopt(c->lines, n);
	else
		loop_clflush(c->lines, n);
	return 0;
}

static int op_pmtx_flush(struct costs *c, long arg, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		pmtx_flush(c->hw, c->lines + (i % CLEAN_LINES) * LINE, 1);
	return 0;
}

static void store_lines(struct costs *c, long k, uint64_t v)
{
	for (long j = 0; j < k; j++)
		*(volatile uint64_t *)(void *)(c->lines + (size_t)j * LINE) = v;
}

static int op_barrier(struct costs *c, long k, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		store_lines(c, k, i);
		for (long j = 0; j < k; j++)
			pmtx_flush(c->hw, c->lines + (size_t)j * LINE, 8);
		int rc = pmtx_barrier(c->hw);
		if (rc)
			return rc;
	}
	return 0;
}

/* As op_barrier with one line, but a locked add where the barrier was. */
static _Atomic uint64_t lock_word;

static int op_lock(struct costs *c, long k, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		store_lines(c, k, i);
		pmtx_flush(c->hw, c->lines, 8);
		atomic_fetch_add(&lock_word, 1);
	}
	return 0;
}

static int op_stores(struct costs *c, long k, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		store_lines(c, k, i);
	return 0;
}

/* k pages, one in each k-th of the root and never its last page, so no
 * two are adjacent and the barrier writes k runs. */
static int op_msync(struct costs *c, long k, uint64_t n)
{
	uint64_t span = FILE_PAGES / (uint64_t)k;
	for (uint64_t i = 0; i < n; i++) {
		for (long j = 0; j < k; j++) {
			uint64_t pg = (uint64_t)j * span +
			              bench_rand(&c->rng) % (span > 1 ? span - 1 : 1);
			char *p = c->pages + pg * PAGE;
			(*(volatile char *)p)++;
			pmtx_flush(c->file, p, 1);
		}
		int rc = pmtx_barrier(c->file);
		if (rc)
			return rc;
	}
	return 0;
}

static int op_persist(struct costs *c, long arg, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		char *p = c->lines + (i % CLEAN_LINES) * LINE;
		*(volatile uint64_t *)(void *)p = i;
		int rc = pmtx_persist(c->hw, p, 8);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the counter checks ---- */

static int counters_fail(const char *what, long k, uint64_t ops,
                         const pmtx_counters *d)
{
	fprintf(stderr,
	        "costs: %s k=%ld: %llu ops counted %llu lines, %llu barriers, "
	        "%llu runs\n",
	        what, k, (unsigned long long)ops, (unsigned long long)d->flushes,
	        (unsigned long long)d->barriers, (unsigned long long)d->msyncs);
	return PMTX_E_CORRUPT;
}

static int check_barrier(long k, uint64_t ops, const pmtx_counters *d)
{
	if (d->flushes == (uint64_t)k * ops && d->barriers == ops)
		return 0;
	return counters_fail("barrier_lines", k, ops, d);
}

static int check_msync(long k, uint64_t ops, const pmtx_counters *d)
{
	if (d->flushes == (uint64_t)k * ops && d->barriers == ops &&
	    d->msyncs == (uint64_t)k * ops)
		return 0;
	return counters_fail("msync_pages", k, ops, d);
}

static int check_flush(long k, uint64_t ops, const pmtx_counters *d)
{
	if (d->flushes == ops && d->barriers == 0)
		return 0;
	return counters_fail("pmtx_flush", 1, ops, d);
}

/* ---- timing ---- */

/* Run up to n operations in chunks, stopping early after limit ns; the
 * operations done go to *ops and their time to *ns. */
/* best: if not NULL, the ns per op of the fastest chunk (the estimate
 * least disturbed by other work on the machine). */
static int run_chunks_best(struct costs *c, const struct meas *m,
                           int (*op)(struct costs *, long, uint64_t),
                           uint64_t n, uint64_t limit, uint64_t *ops,
                           uint64_t *ns, double *best)
{
	pmtx_counters c0, c1;
	uint64_t chunk = n / 16 ? n / 16 : 1, done = 0, t0, t;
	pmtx_counters_get(&c0);
	t = t0 = bench_now_ns();
	if (best)
		*best = -1;
	while (done < n && t - t0 < limit) {
		uint64_t b = n - done < chunk ? n - done : chunk, tb = t;
		int rc = op(c, m->arg, b);
		if (rc)
			return rc;
		done += b;
		t = bench_now_ns();
		double per = (double)(t - tb) / (double)b;
		if (best && (*best < 0 || per < *best))
			*best = per;
	}
	pmtx_counters_get(&c1);
	*ops = done, *ns = t - t0;
	if (m->check && op == m->op) {
		pmtx_counters d = {.barriers = c1.barriers - c0.barriers,
		                   .flushes = c1.flushes - c0.flushes,
		                   .msyncs = c1.msyncs - c0.msyncs};
		return m->check(m->arg, done, &d);
	}
	return 0;
}

static int run_chunks(struct costs *c, const struct meas *m,
                      int (*op)(struct costs *, long, uint64_t), uint64_t n,
                      uint64_t limit, uint64_t *ops, uint64_t *ns)
{
	return run_chunks_best(c, m, op, n, limit, ops, ns, NULL);
}

/* Warm up with doubling batches (bounded by a quarter of a round) and
 * return the operations that fill one round. */
static int plan_n(struct costs *c, const struct meas *m,
                  int (*op)(struct costs *, long, uint64_t), uint64_t *n)
{
	uint64_t batch = 1, ops, ns;
	for (;;) {
		int rc = run_chunks(c, m, op, batch, c->slice, &ops, &ns);
		if (rc)
			return rc;
		if (ns >= c->slice / 8 || batch >= N_CAP)
			break;
		batch *= 2;
	}
	double per = (double)(ns ? ns : 1) / (double)ops;
	double want = (double)c->slice / per;
	*n = want < 1 ? 1 : want > (double)N_CAP ? N_CAP : (uint64_t)want;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median over rounds of op's ns per operation less base's. */
static int measure(struct costs *c, const struct meas *m, struct result *r)
{
	double v[BENCH_MAX_ROUNDS], b[BENCH_MAX_ROUNDS];
	uint64_t n, ops, ns;
	int rc = plan_n(c, m, m->op, &n);
	*r = (struct result){.rounds = c->rounds, .n = n};
	for (int i = 0; !rc && i < c->rounds; i++) {
		rc = run_chunks(c, m, m->op, n, 4 * c->slice, &ops, &ns);
		v[i] = (double)ns / (double)ops;
		r->n = ops < r->n ? ops : r->n;
		b[i] = 0;
		if (!rc && m->base &&
		    !(rc = run_chunks(c, m, m->base, n, 4 * c->slice, &ops, &ns)))
			b[i] = (double)ns / (double)ops;
		v[i] -= b[i];
	}
	if (rc)
		return rc;
	r->ns_min = r->ns_max = v[0];
	for (int i = 1; i < c->rounds; i++) {
		r->ns_min = v[i] < r->ns_min ? v[i] : r->ns_min;
		r->ns_max = v[i] > r->ns_max ? v[i] : r->ns_max;
	}
	r->ns = median(v, c->rounds);
	r->base_ns = median(b, c->rounds);
	return 0;
}

/* ---- output ---- */

/* One JSON line: the fixed keys, then more (NULL or a JSON fragment). */
static void emit(const char *what, const char *before, const struct result *r,
                 const char *more)
{
	printf("{\"workload\":\"costs\",\"what\":\"%s\",%s%s\"ns\":%.3f,"
	       "\"rounds\":%d,\"n\":%llu,\"ns_min\":%.3f,\"ns_max\":%.3f%s%s}\n",
	       what, before ? before : "", before ? "," : "", r->ns, r->rounds,
	       (unsigned long long)r->n, r->ns_min, r->ns_max, more ? "," : "",
	       more ? more : "");
	fflush(stdout);
}

/* ---- the measurements ---- */

/* A locked instruction after a flushed line (7). */
static int costs_lock(struct costs *c)
{
	struct meas m = {op_lock, op_stores, NULL, 1};
	struct result r;
	int rc = measure(c, &m, &r);
	if (!rc)
		emit("lock_after_flush", NULL, &r,
		     "\"lines\":1,\"region\":\"pdom1-hardware\","
		     "\"dir\":\"/dev/shm\"");
	return rc;
}

static int costs_sfence(struct costs *c)
{
	struct meas m = {op_sfence, NULL, NULL, 0};
	struct result r;
	int rc = measure(c, &m, &r);
	if (!rc)
		emit("sfence", NULL, &r, NULL);
	return rc;
}

static int costs_clwb(struct costs *c)
{
	struct meas raw = {op_flush_insn, NULL, NULL, 0};
	struct meas lib = {op_pmtx_flush, NULL, check_flush, 0};
	struct result r, rl;
	int rc = pmtx_persist(c->hw, c->lines, NLINES * LINE);
	if (!rc)
		rc = measure(c, &raw, &r);
	if (!rc)
		rc = measure(c, &lib, &rl);
	if (rc)
		return rc;
	char more[160];
	snprintf(more, sizeof(more),
	         "\"instruction\":\"%s\",\"pmtx_flush_ns\":%.3f,"
	         "\"region\":\"pdom1-hardware\",\"dir\":\"/dev/shm\"",
	         pmtx_flush_instruction(), rl.ns);
	emit("clwb_clean", NULL, &r, more);
	return 0;
}

static void fit_line(const double *x, const double *y, int n, double *a,
                     double *b)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	for (int i = 0; i < n; i++)
		sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
	double den = n * sxx - sx * sx;
	*b = den != 0 ? (n * sxy - sx * sy) / den : 0;
	*a = (sy - *b * sx) / n;
}

/* The fit over the points with k >= 1 (all points if fewer than two):
 * a barrier with nothing to write back is a different regime (see 4). */
static void emit_fit(const struct costs *c, const long *ks, const double *y,
                     int nk)
{
	double x[MAX_POINTS], yy[MAX_POINTS], x1[MAX_POINTS], y1[MAX_POINTS];
	double a, b, a_all, b_all, empty = 0;
	int n1 = 0, has_empty = 0;
	for (int i = 0; i < nk; i++) {
		x[i] = (double)ks[i], yy[i] = y[i];
		if (ks[i] >= 1)
			x1[n1] = x[i], y1[n1++] = y[i];
		else
			empty = y[i], has_empty = 1;
	}
	fit_line(x, yy, nk, &a_all, &b_all);
	if (n1 >= 2)
		fit_line(x1, y1, n1, &a, &b);
	else
		a = a_all, b = b_all;
	printf("{\"workload\":\"costs\",\"what\":\"barrier_fit\",\"ns\":null,"
	       "\"rounds\":%d,\"n\":%d,\"fence_ns\":%.3f,\"line_ns\":%.3f,"
	       "\"fit_min_lines\":%d,\"all_fence_ns\":%.3f,"
	       "\"all_line_ns\":%.3f,",
	       c->rounds, n1 >= 2 ? n1 : nk, a, b, n1 >= 2 ? 1 : 0, a_all,
	       b_all);
	if (has_empty)
		printf("\"fence_empty_ns\":%.3f}\n", empty);
	else
		printf("\"fence_empty_ns\":null}\n");
	fflush(stdout);
}

/* The points of a sweep: the values of parameter name (defaults: defs),
 * each in [lo, hi], in ks (MAX_POINTS at most). Returns how many, or 0
 * (with a message on stderr) if there are none or one is out of range:
 * nothing is measured then. */
static int points(const struct costs *c, const char *name, const char *defs,
                  long lo, long hi, long *ks)
{
	int nk = bench_param(c->o, name, defs, ks, MAX_POINTS);
	for (int i = 0; i < nk; i++)
		if (ks[i] < lo || ks[i] > hi) {
			fprintf(stderr, "costs: %s=%ld: %ld..%ld\n", name, ks[i],
			        lo, hi);
			return 0;
		}
	return nk;
}

static int costs_barrier(struct costs *c)
{
	long ks[MAX_POINTS];
	double y[MAX_POINTS];
	int nk = points(c, "lines", "0,1,2,4,8,16,32,64", 0, NLINES, ks);
	if (nk < 1)
		return PMTX_E_INVAL;
	for (int i = 0; i < nk; i++) {
		struct meas m = {op_barrier, op_stores, check_barrier, ks[i]};
		struct result r;
		int rc = measure(c, &m, &r);
		if (rc)
			return rc;
		char before[32], more[200];
		snprintf(before, sizeof(before), "\"lines\":%ld", ks[i]);
		snprintf(more, sizeof(more),
		         "\"store_ns\":%.3f,\"flushes_per_op\":%ld,"
		         "\"barriers_per_op\":1,\"counters\":\"ok\","
		         "\"region\":\"pdom1-hardware\",\"dir\":\"/dev/shm\"",
		         r.base_ns, ks[i]);
		emit("barrier_lines", before, &r, more);
		y[i] = r.ns;
	}
	emit_fit(c, ks, y, nk);
	return 0;
}

static const char *fs_name(const char *dir)
{
	struct statfs s;
	if (statfs(dir, &s))
		return "other";
	if (s.f_type == EXT4_SUPER_MAGIC)
		return "ext4";
	if (s.f_type == TMPFS_MAGIC)
		return "tmpfs";
	return "other";
}

static int costs_msync(struct costs *c)
{
	long ks[MAX_POINTS];
	int nk = points(c, "pages", "1,4,16,64", 1, 64, ks);
	if (nk < 1)
		return PMTX_E_INVAL;
	for (int i = 0; i < nk; i++) {
		struct meas m = {op_msync, NULL, check_msync, ks[i]};
		struct result r;
		int rc = measure(c, &m, &r);
		if (rc)
			return rc;
		char before[32], more[320];
		snprintf(before, sizeof(before), "\"pages\":%ld", ks[i]);
		snprintf(more, sizeof(more),
		         "\"fs\":\"%s\",\"dir\":\"%s\",\"runs_per_op\":%ld,"
		         "\"counters\":\"ok\"",
		         fs_name(c->file_dir), c->file_dir, ks[i]);
		emit("msync_pages", before, &r, more);
	}
	return 0;
}

/* Records in the trace file: all of them, and FLUSH and BARRIER ones. */
static int count_records(const char *path, uint64_t *all, uint64_t *fb)
{
	pmtx_trace_reader *rd;
	pmtx_trace_event ev;
	int rc = pmtx_trace_open(path, &rd);
	*all = *fb = 0;
	while (!rc && !(rc = pmtx_trace_next(rd, &ev))) {
		(*all)++;
		*fb += ev.rec.type == PMTX_TEV_FLUSH ||
		       ev.rec.type == PMTX_TEV_BARRIER;
	}
	if (!rc || rc == 1)
		pmtx_trace_close(rd);
	return rc == 1 ? 0 : rc;
}

/* One round of trace_record: n ops untraced, then traced; the extra ns
 * per record, and the records per op, go to *ns and *per_op. */
static int trace_round(struct costs *c, const struct meas *m, uint64_t n,
                       double *ns, double *per_op)
{
	uint64_t ops0, ns0, ops1, ns1, all, fb;
	double best0, best1;
	int rc = run_chunks_best(c, m, op_persist, n, 4 * c->slice, &ops0,
	                         &ns0, &best0);
	if (!rc && (rc = pmtx_trace_start(c->trace_path, 0)))
		fprintf(stderr, "costs: trace_record: pmtx_trace_start %s: %s%s\n",
		        c->trace_path, pmtx_strerror(rc),
		        rc == PMTX_E_TX_STATE ? " (PMTX_TRACE is set?)" : "");
	if (rc)
		return rc;
	rc = run_chunks_best(c, m, op_persist, n, 4 * c->slice, &ops1, &ns1,
	                     &best1);
	int rs = pmtx_trace_stop();
	if (!rc)
		rc = rs ? rs : count_records(c->trace_path, &all, &fb);
	unlink(c->trace_path);
	if (!rc && fb != 2 * ops1) {
		fprintf(stderr, "costs: trace_record: %llu ops wrote %llu "
		        "FLUSH/BARRIER records\n", (unsigned long long)ops1,
		        (unsigned long long)fb);
		rc = PMTX_E_CORRUPT;
	}
	if (rc)
		return rc;
	*per_op = (double)all / (double)ops1;
	/* The fastest chunk of each loop (invariant 6). */
	*ns = (best1 - best0) / *per_op;
	return 0;
}

static int costs_trace(struct costs *c)
{
	struct meas m = {op_persist, NULL, NULL, 0};
	double v[BENCH_MAX_ROUNDS], per_op = 0;
	uint64_t n;
	int rc = plan_n(c, &m, op_persist, &n);
	n = n > TRACE_CAP ? TRACE_CAP : n;
	for (int i = 0; !rc && i < c->rounds; i++)
		rc = trace_round(c, &m, n, &v[i], &per_op);
	if (rc)
		return rc;
	struct result r = {.rounds = c->rounds, .n = n, .ns_min = v[0],
	                   .ns_max = v[0]};
	for (int i = 1; i < c->rounds; i++) {
		r.ns_min = v[i] < r.ns_min ? v[i] : r.ns_min;
		r.ns_max = v[i] > r.ns_max ? v[i] : r.ns_max;
	}
	r.ns = median(v, c->rounds);
	char more[160];
	snprintf(more, sizeof(more),
	         "\"records_per_op\":%.4f,\"op\":\"pmtx_persist 8 B\","
	         "\"trace_dir\":\"/dev/shm\"", per_op);
	emit("trace_record", NULL, &r, more);
	return 0;
}

/* ---- set-up ---- */

static int make_region(const char *path, pmtx_backend b, size_t root,
                       size_t size, pmtx_region **out)
{
	pmtx_options opt;
	pmtx_options_init(&opt);
	opt.domain = PMTX_PDOM1;
	opt.backend = b;
	opt.root_size = root;
	unlink(path);
	int rc = pmtx_create(path, size, &opt, out);
	if (rc)
		fprintf(stderr, "costs: pmtx_create %s: %s (%s)\n", path,
		        pmtx_strerror(rc), pmtx_errmsg());
	return rc;
}

static int costs_setup(struct costs *c)
{
	int pid = (int)getpid();
	snprintf(c->hw_path, sizeof(c->hw_path),
	         "/dev/shm/pmtx-bench-costs-%d-hw.pool", pid);
	snprintf(c->file_path, sizeof(c->file_path),
	         "%s/pmtx-bench-costs-%d-file.pool", c->file_dir, pid);
	snprintf(c->trace_path, sizeof(c->trace_path),
	         "/dev/shm/pmtx-bench-costs-%d.trace", pid);
	int rc = make_region(c->hw_path, PMTX_BACKEND_HARDWARE, NLINES * LINE,
	                     16u << 20, &c->hw);
	if (!rc)
		rc = make_region(c->file_path, PMTX_BACKEND_FILE,
		                 (size_t)FILE_PAGES * PAGE, 32u << 20, &c->file);
	if (rc)
		return rc;
	c->lines = pmtx_root(c->hw, NULL);
	c->pages = pmtx_root(c->file, NULL);
	memset(c->lines, 1, NLINES * LINE);
	memset(c->pages, 1, (size_t)FILE_PAGES * PAGE); /* fault in */
	rc = pmtx_persist(c->hw, c->lines, NLINES * LINE);
	return rc ? rc : pmtx_persist(c->file, c->pages,
	                              (size_t)FILE_PAGES * PAGE);
}

static void costs_teardown(struct costs *c)
{
	if (c->hw)
		bench_region_destroy(c->hw, c->hw_path);
	if (c->file)
		bench_region_destroy(c->file, c->file_path);
}

int wl_costs(const struct bench_opts *o)
{
	struct costs c = {.o = o, .rng = 0x9e3779b97f4a7c15ull};
	c.rounds = o->rounds > 0 ? o->rounds : 3;
	c.rounds = c.rounds > BENCH_MAX_ROUNDS ? BENCH_MAX_ROUNDS : c.rounds;
	c.slice = (uint64_t)(o->seconds * 1e9 / c.rounds);
	c.slice = c.slice ? c.slice : 1;
	c.file_dir = o->dir_set ? o->dir : "/var/tmp";
	int rc = costs_setup(&c);
	if (!rc)
		rc = costs_sfence(&c);
	if (!rc)
		rc = costs_clwb(&c);
	if (!rc)
		rc = costs_barrier(&c);
	if (!rc)
		rc = costs_lock(&c);
	if (!rc)
		rc = costs_msync(&c);
	if (!rc)
		rc = costs_trace(&c);
	costs_teardown(&c);
	return rc;
}
