/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * persist.c - flush/fence instructions and the three backends.
 *
 * Design
 * ------
 * A persist barrier is what makes earlier stores durable and ordered. How it
 * is carried out depends on two independent choices (seed 000 section 2):
 *
 *   domain   PDOM-0  flush each written line, sfence, then wait for the
 *                    (emulated) memory-controller commit: barrier_ns;
 *            PDOM-1  flush each written line, sfence (ADR platforms);
 *            PDOM-2  no flush; the barrier is a compiler fence (eADR,
 *                    battery-backed DRAM): stores are durable once made.
 *   backend  hardware  real clwb/clflushopt/clflush + sfence;
 *            emulated  flush is a no-op, the barrier spins barrier_ns, as the
 *                      papers' emulator did (0/100/500 ns for PDOM-2/1/0);
 *            file      real durability on any file system: a flush records
 *                      the pages it covers, a barrier msyncs exactly those
 *                      pages (coalesced into runs).
 *            journal   real durability on any file system: a barrier
 *                      appends the lines flushed to the region's journal
 *                      and a durable one fdatasyncs it; pages reach the
 *                      region file at checkpoints (journal.c).
 *
 * Invariants
 *  1. Every flush and barrier in pmtx is issued through persist_ops; the
 *     counters are updated by the wrappers in persist.h before the table is
 *     called, so they count what the runtime asked for, exactly.
 *  2. A barrier orders and makes durable only the calling thread's flushes
 *     (as sfence does). The file backend keeps its dirty-page list per
 *     thread for the same reason (freed at the thread's exit); msync
 *     itself is process-wide, so it can only make more data durable than
 *     asked, never less.
 *  3. The flush instruction is chosen once from CPUID: clwb if present,
 *     else clflushopt, else clflush. clflush is ordered with stores by
 *     itself; the other two are ordered by the sfence in the barrier.
 *  4. Non-temporal stores (copy_nt) are durable only after the next
 *     barrier's sfence. Unaligned head and tail bytes are written with
 *     ordinary stores and flushed, so the whole range obeys the same rule.
 *  5. A file-backend barrier writes back each run of the pages recorded
 *     (adjacent pages coalesced) and then flushes the device's cache:
 *     one run is one msync(MS_SYNC), which does both; several runs are
 *     each started (sync_file_range WRITE) and waited for, and then one
 *     fdatasync flushes the cache once for them all, instead of one cache
 *     flush per run. fdatasync also writes back any other dirty page of
 *     the file: more durable than asked, never less (2). Without the file
 *     (fd < 0), or where sync_file_range is refused, every run is an
 *     msync. The counter msyncs counts runs written back either way.
 *  6. After a failed write-back (msync, sync_file_range or fdatasync)
 *     nothing is known of what the file kept: the kernel may have
 *     dropped the pages or marked them clean, and a later call that
 *     succeeds says nothing of them (nor would this thread's list of
 *     pages, cleared by the failed barrier, bring them back). So every
 *     later barrier of the region fails (PMTX_E_IO) until it is closed
 *     and opened again, as the journal's (journal.c invariant 6).
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "journal.h"
#include "persist.h"

_Thread_local pmtx_counters pmtx__tls_counters;

void pmtx_counters_get(pmtx_counters *out)
{
	*out = pmtx__tls_counters;
}

void pmtx_counters_reset(void)
{
	memset(&pmtx__tls_counters, 0, sizeof(pmtx__tls_counters));
}

/* ---- flush instruction selection (invariant 3) ---- */

__attribute__((target("clwb"))) static void flush_clwb(const void *a,
                                                        size_t n)
{
	uintptr_t p = ALIGN_DOWN((uintptr_t)a, CACHE_LINE);
	for (; p < (uintptr_t)a + n; p += CACHE_LINE)
		_mm_clwb((void *)p);
}

__attribute__((target("clflushopt"))) static void
flush_clflushopt(const void *a, size_t n)
{
	uintptr_t p = ALIGN_DOWN((uintptr_t)a, CACHE_LINE);
	for (; p < (uintptr_t)a + n; p += CACHE_LINE)
		_mm_clflushopt((void *)p);
}

static void flush_clflush(const void *a, size_t n)
{
	uintptr_t p = ALIGN_DOWN((uintptr_t)a, CACHE_LINE);
	for (; p < (uintptr_t)a + n; p += CACHE_LINE)
		_mm_clflush((void *)p);
}

static void (*cpu_flush)(const void *, size_t) = flush_clflush;
static const char *cpu_flush_name = "clflush";
static uint64_t tsc_khz; /* TSC ticks per millisecond */
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static pthread_once_t tsc_once = PTHREAD_ONCE_INIT;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void calibrate_tsc(void)
{
	uint64_t t0 = now_ns(), c0 = __rdtsc();
	while (now_ns() - t0 < 2000000)
		;
	uint64_t t1 = now_ns(), c1 = __rdtsc();
	tsc_khz = (c1 - c0) * 1000000ull / (t1 - t0);
	if (tsc_khz == 0)
		tsc_khz = 1;
}

static void cpu_detect(void)
{
	unsigned a, b, c, d;
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
		if (b & (1u << 24)) {
			cpu_flush = flush_clwb;
			cpu_flush_name = "clwb";
		} else if (b & (1u << 23)) {
			cpu_flush = flush_clflushopt;
			cpu_flush_name = "clflushopt";
		}
	}
}

/* TSC ticks for ns: the calibration (2 ms of spinning) runs once, and
 * only in a process that asks for a barrier delay, so that opening a
 * region costs no calibration otherwise. */
static uint64_t ns_to_ticks(uint64_t ns)
{
	if (!ns)
		return 0;
	pthread_once(&tsc_once, calibrate_tsc);
	return ns * tsc_khz / 1000000ull;
}

const char *pmtx_flush_instruction(void)
{
	pthread_once(&cpu_once, cpu_detect);
	return cpu_flush_name;
}

static inline void spin_ticks(uint64_t ticks)
{
	if (ticks == 0)
		return;
	uint64_t end = __rdtsc() + ticks;
	while (__rdtsc() < end)
		;
}

static void copy_plain(struct persist *p, void *dst, const void *src,
                       size_t n)
{
	(void)p;
	memcpy(dst, src, n);
}

/* ---- hardware backend ---- */

static void hw_flush(struct persist *p, const void *a, size_t n)
{
	(void)p;
	cpu_flush(a, n);
}

static int hw_barrier(struct persist *p)
{
	_mm_sfence();
	spin_ticks(p->barrier_ticks);
	return 0;
}

static void hw_copy_nt(struct persist *p, void *dst, const void *src,
                       size_t n)
{
	char *d = dst;
	const char *s = src;
	size_t head = (size_t)(ALIGN_UP((uintptr_t)d, 8) - (uintptr_t)d);
	if (head > n)
		head = n;
	if (head) {
		memcpy(d, s, head);
		cpu_flush(d, head);
		d += head, s += head, n -= head;
	}
	if (((uintptr_t)d & 15) == 0) /* 16 bytes a store where it can */
		for (; n >= 16; d += 16, s += 16, n -= 16)
			_mm_stream_si128((__m128i *)(void *)d,
			                 _mm_loadu_si128((const __m128i *)
			                                 (const void *)s));
	for (; n >= 8; d += 8, s += 8, n -= 8) {
		long long v;
		memcpy(&v, s, 8);
		_mm_stream_si64((long long *)(void *)d, v);
	}
	if (n) {
		memcpy(d, s, n);
		cpu_flush(d, n);
	}
	(void)p;
}

static int hw_pdom2_barrier(struct persist *p)
{
	(void)p;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return 0;
}

static void noop_flush(struct persist *p, const void *a, size_t n)
{
	(void)p, (void)a, (void)n;
}

static const persist_ops hw_ops = {"hardware", hw_flush, hw_barrier,
                                   hw_copy_nt, NULL, NULL, NULL, NULL};
static const persist_ops hw_pdom2_ops = {"hardware-pdom2", noop_flush,
                                        hw_pdom2_barrier, copy_plain, NULL,
                                        NULL, NULL, NULL};

/* ---- emulated backend ---- */

static int emu_barrier(struct persist *p)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	spin_ticks(p->barrier_ticks);
	return 0;
}

static const persist_ops emu_ops = {"emulated", noop_flush, emu_barrier,
                                    copy_plain, NULL, NULL, NULL, NULL};

/* ---- file backend (invariant 2) ---- */

struct dirty_pages {
	uintptr_t *pg;
	size_t *len; /* a barrier's run lengths (coalesce_runs) */
	size_t n, cap;
	int failed; /* out of memory while recording: msync everything */
};

static _Thread_local struct dirty_pages tls_dirty;
static _Thread_local struct pmtx__thread_exit tls_dirty_exit;
static size_t page_size;

/* A thread's page list, at its exit. */
static void dirty_free(void *arg)
{
	struct dirty_pages *d = arg;
	free(d->pg);
	free(d->len);
	memset(d, 0, sizeof(*d));
}

static void dirty_add(uintptr_t pg)
{
	struct dirty_pages *d = &tls_dirty;
	if (d->n && d->pg[d->n - 1] == pg)
		return;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		(void)pmtx__thread_exit_register(&tls_dirty_exit, dirty_free,
		                                 d);
		uintptr_t *np = realloc(d->pg, cap * sizeof(*np));
		if (np)
			d->pg = np;
		size_t *nl = np ? realloc(d->len, cap * sizeof(*nl)) : NULL;
		if (!nl) {
			d->failed = 1;
			return;
		}
		d->len = nl, d->cap = cap;
	}
	d->pg[d->n++] = pg;
}

static void file_flush(struct persist *p, const void *a, size_t n)
{
	(void)p;
	uintptr_t pg = ALIGN_DOWN((uintptr_t)a, page_size);
	for (; pg < (uintptr_t)a + n; pg += page_size)
		dirty_add(pg);
}

static int cmp_uptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

static int msync_run(uintptr_t start, size_t len)
{
	pmtx__tls_counters.msyncs++;
	if (msync((void *)start, len, MS_SYNC) != 0)
		return PMTX_E_IO;
	return 0;
}

/* Sort the recorded pages and coalesce adjacent ones into runs, in
 * place: d->pg[i] is then a run's start and d->len[i] its length, for
 * the returned count of runs. */
static size_t coalesce_runs(struct dirty_pages *d)
{
	size_t nr = 0;
	if (d->n > 1)
		qsort(d->pg, d->n, sizeof(*d->pg), cmp_uptr);
	for (size_t i = 0; i < d->n;) {
		size_t j = i + 1;
		while (j < d->n && d->pg[j] <= d->pg[j - 1] + page_size)
			j++;
		size_t run = d->pg[j - 1] - d->pg[i] + page_size;
		d->pg[nr] = d->pg[i];
		d->len[nr++] = run;
		i = j;
	}
	return nr;
}

/* Several runs, one cache flush (invariant 5): 0, PMTX_E_IO, or 1 if
 * sync_file_range is refused here (nothing done: the caller msyncs). */
static int write_runs(struct persist *p, const uintptr_t *pg,
                      const size_t *len, size_t nr)
{
	const unsigned wait = SYNC_FILE_RANGE_WAIT_BEFORE |
	                      SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
	for (size_t i = 0; i < nr; i++)
		if (sync_file_range(p->fd, (off64_t)(pg[i] - (uintptr_t)p->base),
		                    (off64_t)len[i], SYNC_FILE_RANGE_WRITE)) {
			if (i == 0 && (errno == ENOSYS || errno == EINVAL ||
			               errno == ESPIPE))
				return 1;
			return PMTX_E_IO;
		}
	for (size_t i = 0; i < nr; i++) {
		pmtx__tls_counters.msyncs++;
		if (sync_file_range(p->fd, (off64_t)(pg[i] - (uintptr_t)p->base),
		                    (off64_t)len[i], wait))
			return PMTX_E_IO;
	}
	return fdatasync(p->fd) ? PMTX_E_IO : 0;
}

/* Every run an msync of its own: 0, or the first failure. */
static int msync_runs(const uintptr_t *pg, const size_t *len, size_t nr)
{
	int rc = 0;
	for (size_t i = 0; i < nr; i++) {
		int e = msync_run(pg[i], len[i]);
		if (e && !rc)
			rc = e;
	}
	return rc;
}

/* Invariant 6: the region's write-backs have failed. */
static int file_failed(struct persist *p)
{
	atomic_store(&p->failed, 1);
	pmtx__set_errmsg("a write-back of the region file failed; the region "
	                 "must be closed and opened again");
	return PMTX_E_IO;
}

static int file_barrier(struct persist *p)
{
	struct dirty_pages *d = &tls_dirty;
	int rc = 0;
	if (atomic_load(&p->failed)) {
		d->n = 0, d->failed = 0;
		return file_failed(p);
	}
	if (d->failed) {
		d->failed = 0, d->n = 0;
		rc = msync_run((uintptr_t)p->base, p->len);
	}
	size_t nr = coalesce_runs(d);
	int r = nr > 1 && p->fd >= 0 ? write_runs(p, d->pg, d->len, nr) : 1;
	if (r == 1)
		r = msync_runs(d->pg, d->len, nr);
	if (r && !rc)
		rc = r;
	d->n = 0;
	spin_ticks(p->barrier_ticks);
	return rc ? file_failed(p) : 0;
}

static void file_copy(struct persist *p, void *dst, const void *src,
                      size_t n)
{
	memcpy(dst, src, n);
	file_flush(p, dst, n);
}

static const persist_ops file_ops = {"file", file_flush, file_barrier,
                                     file_copy, NULL, NULL, NULL, NULL};

/* ---- selection ---- */

const persist_ops *persist_default_ops(pmtx_domain d, pmtx_backend b)
{
	switch (b) {
	case PMTX_BACKEND_HARDWARE:
		return d == PMTX_PDOM2 ? &hw_pdom2_ops : &hw_ops;
	case PMTX_BACKEND_EMULATED:
		return &emu_ops;
	case PMTX_BACKEND_FILE:
		return d == PMTX_PDOM2 ? &hw_pdom2_ops : &file_ops;
	case PMTX_BACKEND_JOURNAL:
		return &journal_ops;
	}
	return NULL;
}

static uint64_t default_barrier_ns(pmtx_domain d, pmtx_backend b)
{
	static const uint64_t emulated[] = {500, 100, 0};
	if (b == PMTX_BACKEND_EMULATED)
		return emulated[d];
	if (b == PMTX_BACKEND_HARDWARE && d == PMTX_PDOM0)
		return 500;
	return 0;
}

static const persist_ops *override_ops;
static void *override_ctx;

void persist_override_ops(const persist_ops *ops, void *ctx)
{
	override_ops = ops;
	override_ctx = ctx;
}

int persist_supported(pmtx_domain d, pmtx_backend b)
{
	if ((unsigned)d > PMTX_PDOM2 || (unsigned)b > PMTX_BACKEND_JOURNAL)
		return PMTX_E_INVAL;
	if (b == PMTX_BACKEND_JOURNAL && d == PMTX_PDOM2) {
		pmtx__set_errmsg("the journal backend makes flushed lines "
		                 "durable: it has no PDOM-2 (use pdom1)");
		return PMTX_E_INVAL;
	}
	return 0;
}

int persist_init(struct persist *p, pmtx_domain d, pmtx_backend b,
                 int64_t barrier_ns, void *base, size_t len)
{
	int rc = persist_supported(d, b);
	if (rc)
		return rc;
	pthread_once(&cpu_once, cpu_detect);
	if (!page_size)
		page_size = (size_t)sysconf(_SC_PAGESIZE);
	memset(p, 0, sizeof(*p));
	p->domain = d;
	p->backend = b;
	p->ops = persist_default_ops(d, b);
	p->barrier_ns = barrier_ns < 0 ? default_barrier_ns(d, b)
	                               : (uint64_t)barrier_ns;
	p->barrier_ticks = ns_to_ticks(p->barrier_ns);
	p->base = base;
	p->len = len;
	p->fd = -1;
	if (override_ops)
		persist_set_ops(p, override_ops, override_ctx);
	if (p->ops->attach)
		p->ops->attach(p);
	return 0;
}

void persist_grow(struct persist *p, size_t len)
{
	if (p->ops->grow)
		p->ops->grow(p, len);
	p->len = len;
}

int persist_detach(struct persist *p, int clean)
{
	const persist_ops *ops = p->ops;
	if (!ops || !ops->detach)
		return 0;
	p->ops = persist_default_ops(p->domain, PMTX_BACKEND_EMULATED);
	return ops->detach(p, clean);
}

void persist_set_ops(struct persist *p, const persist_ops *ops, void *ctx)
{
	p->ops = ops ? ops : persist_default_ops(p->domain, p->backend);
	p->ctx = ctx;
}
