/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_persist.c - the persist layer: exact per-thread counters in every
 * (domain, backend) pair, the file backend's msync coalescing and
 * durability, default barrier latencies, flush instruction selection,
 * non-temporal copies, and the fault-injection ops override.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testutil.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "persist/persist.h"
#include "persist/sim.h"
#include "region/region.h"

#define BUF_LINES 64
#define BUF_SIZE (BUF_LINES * 64)

/* A cache-line aligned DRAM buffer served by a persist object of the
 * given kind (the hardware backend's flushes work on any memory). */
struct pbuf {
	struct persist p;
	char *buf;
};

static void pbuf_init(struct pbuf *b, pmtx_domain d, pmtx_backend be)
{
	b->buf = aligned_alloc(64, BUF_SIZE);
	assert_non_null(b->buf);
	memset(b->buf, 0, BUF_SIZE);
	assert_int_equal(persist_init(&b->p, d, be, -1, b->buf, BUF_SIZE), 0);
}

static void pbuf_fini(struct pbuf *b)
{
	free(b->buf);
}

/* Ranges (offset into a 64-aligned buffer, length) and the number of
 * cache lines each touches. */
static const struct {
	size_t off, len;
	uint64_t lines;
} ranges[] = {
	{0, 0, 0},     {17, 0, 0},     {0, 1, 1},      {63, 1, 1},
	{63, 2, 2},    {0, 64, 1},     {64, 64, 1},    {1, 64, 2},
	{32, 64, 2},   {0, 65, 2},     {0, 128, 2},    {60, 130, 3},
	{10, 300, 5},  {197, 256, 5},  {127, 2, 2},    {128, 1, 1},
	{5, 1000, 16}, {0, 4096, 64},  {4095, 1, 1},   {1, 4094, 64},
};

/* Flushes add exactly the lines spanned (or nothing when flush_counts is
 * 0, i.e. PDOM-2), and each barrier adds exactly one barrier. */
static void check_counts(pmtx_domain d, pmtx_backend be, int flush_counts)
{
	struct pbuf b;
	pbuf_init(&b, d, be);
	for (size_t i = 0; i < ARRAY_SIZE(ranges); i++) {
		pmtx_counters_reset();
		persist_flush(&b.p, b.buf + ranges[i].off, ranges[i].len);
		pmtx_counters c;
		pmtx_counters_get(&c);
		if (c.flushes != (flush_counts ? ranges[i].lines : 0))
			fail_msg("%s/%s: flush(+%zu, %zu) counted %llu lines",
			         pmtx_domain_name(d), pmtx_backend_name(be),
			         ranges[i].off, ranges[i].len,
			         (unsigned long long)c.flushes);
		assert_int_equal(c.barriers, 0);
		assert_int_equal(persist_barrier(&b.p), 0);
		pmtx_counters_get(&c);
		assert_int_equal(c.barriers, 1);
		assert_int_equal(c.flushes, flush_counts ? ranges[i].lines : 0);
		assert_int_equal(c.msyncs, 0);
		assert_int_equal(c.nt_bytes, 0);
	}
	/* Several barriers in a row each count once. */
	pmtx_counters_reset();
	for (int k = 0; k < 7; k++)
		assert_int_equal(persist_barrier(&b.p), 0);
	pmtx_counters c;
	pmtx_counters_get(&c);
	assert_int_equal(c.barriers, 7);
	assert_int_equal(c.flushes, 0);
	pbuf_fini(&b);
}

/* Under PDOM-0 and PDOM-1 a flush counts the exact lines it covers and
 * a barrier counts one; under PDOM-2 no flush counts, and a barrier still
 * counts one. */
static void check_counts_in_every_domain(pmtx_backend be)
{
	check_counts(PMTX_PDOM0, be, 1);
	check_counts(PMTX_PDOM1, be, 1);
	check_counts(PMTX_PDOM2, be, 0);
}

static void hardware_flushes_count_exact_lines_and_barriers_count_one(
	void **state)
{
	check_counts_in_every_domain(PMTX_BACKEND_HARDWARE);
}

static void emulated_backend_counts_like_hardware_in_every_domain(
	void **state)
{
	check_counts_in_every_domain(PMTX_BACKEND_EMULATED);
}

/* A 4 MiB undo region, PDOM-1 on hardware, at a fresh path. */
static pmtx_region *undo_region(const char **path, size_t root_size)
{
	return tu_create(path, 4u << 20, root_size, PMTX_PDOM1,
	                 PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
}

static void region_flush_and_persist_count_exact_lines_and_barriers(
	void **state)
{
	const char *path;
	pmtx_region *r = undo_region(&path, 4096);
	char *root = pmtx_root(r, NULL);
	size_t mis = (size_t)(64 - (uintptr_t)root % 64) % 64; /* to a line */
	pmtx_counters_reset();
	pmtx_flush(r, root + mis + 60, 10); /* 2 lines */
	pmtx_counters c;
	pmtx_counters_get(&c);
	assert_int_equal(c.flushes, 2);
	assert_int_equal(c.barriers, 0);
	assert_int_equal(pmtx_barrier(r), 0);
	assert_int_equal(pmtx_persist(r, root + mis, 129), 0); /* 3 lines */
	pmtx_counters_get(&c);
	assert_int_equal(c.flushes, 5);
	assert_int_equal(c.barriers, 2);
	tu_close_and_remove(r, path);
}

static void counters_reset_zeroes_every_counter(void **state)
{
	const char *path;
	pmtx_region *r = undo_region(&path, 256);
	char *root = pmtx_root(r, NULL);
	char src[200];
	memset(src, 7, sizeof(src));
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_write(tx, root, src, 100), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	pmtx_memcpy_nt(r, root + 100, src, 100);
	assert_int_equal(pmtx_persist(r, root, 10), 0);
	pmtx_counters c;
	pmtx_counters_get(&c);
	assert_true(c.barriers > 0);
	assert_true(c.flushes > 0);
	assert_true(c.bytes_logged > 0);
	assert_true(c.nt_bytes > 0);
	tu_close_and_remove(r, path);

	/* A file-backend barrier, for msyncs. */
	const char *tmp = tu_path_in("/tmp", "persist");
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	struct persist p;
	assert_int_equal(persist_init(&p, PMTX_PDOM1, PMTX_BACKEND_FILE, -1, m,
	                              4096), 0);
	m[0] = 1;
	persist_flush(&p, m, 1);
	assert_int_equal(persist_barrier(&p), 0);
	pmtx_counters_get(&c);
	assert_true(c.msyncs > 0);
	munmap(m, 4096);
	close(fd);
	unlink(tmp);

	pmtx_counters_reset();
	pmtx_counters_get(&c);
	assert_int_equal(c.barriers, 0);
	assert_int_equal(c.flushes, 0);
	assert_int_equal(c.bytes_logged, 0);
	assert_int_equal(c.nt_bytes, 0);
	assert_int_equal(c.msyncs, 0);
}

/* ---- per-thread counters ---- */

struct worker {
	struct persist *p;
	char *buf;
	pmtx_counters before, after;
};

static void *count_worker(void *arg)
{
	struct worker *w = arg;
	pmtx_counters_get(&w->before);
	for (int i = 0; i < 10; i++)
		persist_flush(w->p, w->buf + i * 64, 64); /* 1 line each */
	for (int i = 0; i < 5; i++)
		persist_barrier(w->p);
	char src[40] = {0};
	persist_copy_nt(w->p, w->buf + 1024, src, sizeof(src),
	                PMTX_TSK_DATA);
	pmtx_counters_get(&w->after);
	return NULL;
}

static void counters_are_per_thread(void **state)
{
	struct pbuf b;
	pbuf_init(&b, PMTX_PDOM1, PMTX_BACKEND_HARDWARE);
	pmtx_counters_reset();
	persist_flush(&b.p, b.buf, 3 * 64); /* 3 lines in this thread */
	persist_barrier(&b.p);

	struct worker w = {.p = &b.p, .buf = b.buf};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, count_worker, &w), 0);
	assert_int_equal(pthread_join(t, NULL), 0);

	/* The worker started from zero and saw only its own work. */
	assert_int_equal(w.before.flushes, 0);
	assert_int_equal(w.before.barriers, 0);
	assert_int_equal(w.after.flushes, 10);
	assert_int_equal(w.after.barriers, 5);
	assert_int_equal(w.after.nt_bytes, 40);
	/* And none of it shows up here. */
	pmtx_counters c;
	pmtx_counters_get(&c);
	assert_int_equal(c.flushes, 3);
	assert_int_equal(c.barriers, 1);
	assert_int_equal(c.nt_bytes, 0);
	pbuf_fini(&b);
}

/* ---- file backend ---- */

struct tmpmap {
	char path[64];
	int fd;
	char *m;
	size_t len;
	size_t pg;
	struct persist p;
};

static void tmpmap_open(struct tmpmap *t, size_t pages)
{
	snprintf(t->path, sizeof(t->path), "%s", tu_path_in("/tmp", "persist"));
	t->fd = open(t->path, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(t->fd >= 0);
	t->pg = (size_t)sysconf(_SC_PAGESIZE);
	t->len = pages * t->pg;
	assert_int_equal(ftruncate(t->fd, (off_t)t->len), 0);
	t->m = mmap(NULL, t->len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
	assert_true(t->m != MAP_FAILED);
	assert_int_equal(persist_init(&t->p, PMTX_PDOM1, PMTX_BACKEND_FILE, -1,
	                              t->m, t->len), 0);
}

static void tmpmap_close(struct tmpmap *t)
{
	munmap(t->m, t->len);
	close(t->fd);
	unlink(t->path);
}

/* Flush one line in each listed page (in the order given), barrier, and
 * return the msyncs that barrier made. */
static uint64_t msyncs_for_pages(struct tmpmap *t, const unsigned *pages,
                                 size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *a = t->m + pages[i] * t->pg + 128;
		*a = (char)(i + 1);
		persist_flush(&t->p, a, 1);
	}
	pmtx_counters_reset();
	assert_int_equal(persist_barrier(&t->p), 0);
	pmtx_counters c;
	pmtx_counters_get(&c);
	assert_int_equal(c.barriers, 1);
	return c.msyncs;
}

static void file_barrier_msyncs_once_per_distinct_nonadjacent_page(
	void **state)
{
	struct tmpmap t;
	tmpmap_open(&t, 64);
	static const unsigned one[] = {7};
	assert_int_equal(msyncs_for_pages(&t, one, 1), 1);
	static const unsigned four[] = {9, 0, 5, 2}; /* unsorted */
	assert_int_equal(msyncs_for_pages(&t, four, 4), 4);
	static const unsigned spread[] = {40, 10, 63, 20, 30, 50};
	assert_int_equal(msyncs_for_pages(&t, spread, 6), 6);
	/* The same page flushed again, later, still counts once. */
	static const unsigned repeat[] = {3, 11, 3, 11, 3};
	assert_int_equal(msyncs_for_pages(&t, repeat, 5), 2);
	tmpmap_close(&t);
}

static void file_barrier_coalesces_adjacent_pages_into_one_msync(
	void **state)
{
	struct tmpmap t;
	tmpmap_open(&t, 64);
	static const unsigned run[] = {5, 3, 4};
	assert_int_equal(msyncs_for_pages(&t, run, 3), 1);
	static const unsigned runs[] = {22, 1, 7, 2, 20, 21}; /* 1-2, 7, 20-22 */
	assert_int_equal(msyncs_for_pages(&t, runs, 6), 3);

	/* One flush whose range covers pages 10..13 is one run. */
	persist_flush(&t.p, t.m + 10 * t.pg + 100, 3 * t.pg);
	pmtx_counters_reset();
	assert_int_equal(persist_barrier(&t.p), 0);
	pmtx_counters c;
	pmtx_counters_get(&c);
	assert_int_equal(c.msyncs, 1);
	/* A 2-byte flush straddling a page boundary is one run too. */
	persist_flush(&t.p, t.m + 31 * t.pg - 1, 2);
	pmtx_counters_reset();
	assert_int_equal(persist_barrier(&t.p), 0);
	pmtx_counters_get(&c);
	assert_int_equal(c.msyncs, 1);
	tmpmap_close(&t);
}

/* The calls the file backend makes, recorded while `watch` is set: this
 * executable's definitions come before the C library's. While
 * `fail_writeback` is set, msync fails with EIO. */
static int watch, fail_writeback;
static char calls[64];
static size_t ncalls;

static void note_call(char c)
{
	if (watch && ncalls + 1 < sizeof(calls))
		calls[ncalls++] = c, calls[ncalls] = 0;
}

int msync(void *a, size_t n, int flags)
{
	static int (*real)(void *, size_t, int);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "msync");
	note_call('m');
	if (fail_writeback) {
		errno = EIO;
		return -1;
	}
	return real(a, n, flags);
}

int sync_file_range(int fd, off64_t off, off64_t n, unsigned flags)
{
	static int (*real)(int, off64_t, off64_t, unsigned);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "sync_file_range");
	note_call(flags == SYNC_FILE_RANGE_WRITE ? 's' : 'w');
	return real(fd, off, n, flags);
}

int fdatasync(int fd)
{
	static int (*real)(int);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "fdatasync");
	note_call('f');
	return real(fd);
}

/* One line of page pg written and flushed, then a barrier: its status. */
static int barrier_of_page(struct tmpmap *t, unsigned pg)
{
	char *a = t->m + pg * t->pg + 128;
	*a = (char)pg;
	persist_flush(&t->p, a, 1);
	return persist_barrier(&t->p);
}

/* Invariant 6: after a failed write-back every later barrier fails, and
 * writes nothing back, until the region is opened again (a new persist
 * object for the mapping). */
static void file_barriers_fail_after_a_failed_write_back(void **state)
{
	struct tmpmap t;
	tmpmap_open(&t, 8);
	assert_int_equal(barrier_of_page(&t, 1), 0);
	fail_writeback = 1;
	assert_int_equal(barrier_of_page(&t, 2), PMTX_E_IO);
	fail_writeback = 0;
	ncalls = 0, calls[0] = 0, watch = 1;
	int rc = barrier_of_page(&t, 3);
	watch = 0;
	assert_int_equal(rc, PMTX_E_IO);
	assert_string_equal(calls, ""); /* nothing written back */
	assert_non_null(strstr(pmtx_errmsg(), "opened again"));
	assert_int_equal(persist_init(&t.p, PMTX_PDOM1, PMTX_BACKEND_FILE, -1,
	                              t.m, t.len), 0);
	assert_int_equal(barrier_of_page(&t, 3), 0);
	tmpmap_close(&t);
}

/* With the file known, a barrier of several runs starts every run's
 * write-back, waits for each, then flushes the device once (invariant
 * 5); a barrier of one run is one msync. */
static void file_barrier_of_several_runs_flushes_the_device_once(
	void **state)
{
	struct tmpmap t;
	tmpmap_open(&t, 64);
	t.p.fd = t.fd;
	watch = 1;
	static const unsigned three[] = {9, 1, 30, 31}; /* 1, 9, 30-31 */
	ncalls = 0, calls[0] = 0;
	assert_int_equal(msyncs_for_pages(&t, three, 4), 3);
	assert_string_equal(calls, "ssswwwf");
	static const unsigned one[] = {5, 6};
	ncalls = 0, calls[0] = 0;
	assert_int_equal(msyncs_for_pages(&t, one, 2), 1);
	assert_string_equal(calls, "m");
	ncalls = 0, calls[0] = 0;
	pmtx_counters_reset();
	assert_int_equal(persist_barrier(&t.p), 0);
	assert_string_equal(calls, "");
	/* the file's bytes are the mapping's */
	char b = 0;
	assert_int_equal(pread(t.fd, &b, 1, (off_t)(30 * t.pg + 128)), 1);
	assert_int_equal(b, 3);
	/* without the file, every run is an msync */
	t.p.fd = -1;
	ncalls = 0, calls[0] = 0;
	assert_int_equal(msyncs_for_pages(&t, three, 4), 3);
	assert_string_equal(calls, "mmm");
	watch = 0;
	tmpmap_close(&t);
}

static void file_barrier_with_nothing_flushed_does_no_msync(void **state)
{
	struct tmpmap t;
	tmpmap_open(&t, 8);
	pmtx_counters_reset();
	assert_int_equal(persist_barrier(&t.p), 0);
	pmtx_counters c;
	pmtx_counters_get(&c);
	assert_int_equal(c.msyncs, 0);
	assert_int_equal(c.barriers, 1);
	/* A barrier consumes the pages flushed before it: the next barrier
	 * has nothing left to sync. */
	static const unsigned pages[] = {1, 4};
	assert_int_equal(msyncs_for_pages(&t, pages, 2), 2);
	pmtx_counters_reset();
	assert_int_equal(persist_barrier(&t.p), 0);
	pmtx_counters_get(&c);
	assert_int_equal(c.msyncs, 0);
	/* A zero-length flush records nothing. */
	persist_flush(&t.p, t.m + 3 * t.pg, 0);
	pmtx_counters_reset();
	assert_int_equal(persist_barrier(&t.p), 0);
	pmtx_counters_get(&c);
	assert_int_equal(c.msyncs, 0);
	assert_int_equal(c.flushes, 0);
	tmpmap_close(&t);
}

static void file_backend_flushed_data_reaches_the_file(void **state)
{
	struct tmpmap t;
	tmpmap_open(&t, 16);
	uint64_t seed = 42;
	for (size_t i = 0; i < t.len; i++)
		t.m[i] = (char)tu_rand(&seed);
	persist_flush(&t.p, t.m, t.len);
	/* A non-temporal copy under the file backend is flushed too. */
	char src[777];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (char)(i * 7 + 3);
	persist_copy_nt(&t.p, t.m + 5 * t.pg + 13, src, sizeof(src),
	                PMTX_TSK_DATA);
	pmtx_counters_reset();
	assert_int_equal(persist_barrier(&t.p), 0);
	pmtx_counters c;
	pmtx_counters_get(&c);
	assert_int_equal(c.msyncs, 1); /* pages 0..15 form one run */

	int fd2 = open(t.path, O_RDONLY);
	assert_true(fd2 >= 0);
	char *copy = malloc(t.len);
	assert_non_null(copy);
	assert_int_equal(pread(fd2, copy, t.len, 0), (ssize_t)t.len);
	assert_memory_equal(copy, t.m, t.len);
	assert_memory_equal(copy + 5 * t.pg + 13, src, sizeof(src));
	free(copy);
	close(fd2);
	tmpmap_close(&t);
}

static void file_backend_region_persist_msyncs_and_reaches_the_file(
	void **state)
{
	/* a real file system */
	const char *path = tu_path_in("/tmp", "region.pmtx");
	pmtx_options o;
	pmtx_options_init(&o);
	o.root_size = 8192;
	o.backend = PMTX_BACKEND_FILE;
	pmtx_region *r;
	assert_int_equal(pmtx_create(path, 4u << 20, &o, &r), 0);
	assert_int_equal(pmtx_region_backend(r), PMTX_BACKEND_FILE);
	char *root = pmtx_root(r, NULL);
	pmtx_off off = pmtx_off_of(r, root);
	static const char msg[] = "durable through msync";
	memcpy(root + 10, msg, sizeof(msg));
	pmtx_counters_reset();
	assert_int_equal(pmtx_persist(r, root + 10, sizeof(msg)), 0);
	pmtx_counters c;
	pmtx_counters_get(&c);
	assert_int_equal(c.barriers, 1);
	assert_int_equal(c.msyncs, 1);

	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	char got[sizeof(msg)];
	assert_int_equal(pread(fd, got, sizeof(got), (off_t)off + 10),
	                 (ssize_t)sizeof(got));
	assert_memory_equal(got, msg, sizeof(msg));
	close(fd);
	tu_close_and_remove(r, path);
}

/* ---- barrier latency defaults ---- */

static uint64_t default_ns(pmtx_domain d, pmtx_backend be, int64_t req)
{
	static char buf[64];
	struct persist p;
	assert_int_equal(persist_init(&p, d, be, req, buf, sizeof(buf)), 0);
	return p.barrier_ns;
}

static void barrier_ns_defaults_follow_domain_and_backend(void **state)
{
	assert_int_equal(default_ns(PMTX_PDOM0, PMTX_BACKEND_EMULATED, -1), 500);
	assert_int_equal(default_ns(PMTX_PDOM1, PMTX_BACKEND_EMULATED, -1), 100);
	assert_int_equal(default_ns(PMTX_PDOM2, PMTX_BACKEND_EMULATED, -1), 0);
	assert_int_equal(default_ns(PMTX_PDOM0, PMTX_BACKEND_HARDWARE, -1), 500);
	assert_int_equal(default_ns(PMTX_PDOM1, PMTX_BACKEND_HARDWARE, -1), 0);
	assert_int_equal(default_ns(PMTX_PDOM2, PMTX_BACKEND_HARDWARE, -1), 0);
}

static void explicit_barrier_ns_overrides_the_default(void **state)
{
	assert_int_equal(default_ns(PMTX_PDOM1, PMTX_BACKEND_EMULATED, 1234),
	                 1234);
	assert_int_equal(default_ns(PMTX_PDOM0, PMTX_BACKEND_EMULATED, 0), 0);
	assert_int_equal(default_ns(PMTX_PDOM0, PMTX_BACKEND_HARDWARE, 0), 0);
	assert_int_equal(default_ns(PMTX_PDOM1, PMTX_BACKEND_HARDWARE, 250),
	                 250);
	assert_int_equal(default_ns(PMTX_PDOM2, PMTX_BACKEND_EMULATED, 77), 77);

	/* Through the region options too. */
	pmtx_options o;
	pmtx_options_init(&o);
	o.backend = PMTX_BACKEND_EMULATED;
	o.domain = PMTX_PDOM2;
	o.barrier_ns = 321;
	const char *path = tu_path();
	pmtx_region *r;
	assert_int_equal(pmtx_create(path, 4u << 20, &o, &r), 0);
	assert_int_equal(r->persist.barrier_ns, 321);
	assert_int_equal(pmtx_close(r), 0);
	o.barrier_ns = -1;
	o.domain = PMTX_PDOM0;
	assert_int_equal(pmtx_open(path, &o, &r), 0);
	assert_int_equal(r->persist.barrier_ns, 500);
	tu_close_and_remove(r, path);
}

static void persist_init_rejects_unknown_domain_or_backend(void **state)
{
	char buf[64];
	struct persist p;
	assert_int_equal(persist_init(&p, (pmtx_domain)3, PMTX_BACKEND_HARDWARE,
	                              -1, buf, sizeof(buf)),
	                 PMTX_E_INVAL);
	assert_int_equal(persist_init(&p, PMTX_PDOM1, (pmtx_backend)4, -1, buf,
	                              sizeof(buf)),
	                 PMTX_E_INVAL);
}

/* ---- flush instruction ---- */

static void flush_instruction_matches_cpuid(void **state)
{
	const char *name = pmtx_flush_instruction();
	assert_non_null(name);
	unsigned a = 0, b = 0, c = 0, d = 0;
	const char *want = "clflush";
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
		if (b & (1u << 24))
			want = "clwb";
		else if (b & (1u << 23))
			want = "clflushopt";
	}
	assert_string_equal(name, want);
	/* Stable across calls. */
	assert_ptr_equal(pmtx_flush_instruction(), name);
}

/* ---- non-temporal copies ---- */

static void check_copy_nt(pmtx_domain d, pmtx_backend be, size_t max_dst,
                          size_t max_src, size_t step)
{
	struct pbuf b;
	pbuf_init(&b, d, be);
	char src[512];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (char)(i * 31 + 1);
	for (size_t doff = 0; doff < max_dst; doff++)
		for (size_t soff = 0; soff < max_src; soff++)
			for (size_t n = 0; n <= 300; n += step) {
				memset(b.buf, 0x5a, 1024);
				pmtx_counters_reset();
				persist_copy_nt(&b.p, b.buf + 64 + doff,
				                src + soff, n, PMTX_TSK_DATA);
				persist_barrier(&b.p);
				pmtx_counters c;
				pmtx_counters_get(&c);
				if (c.nt_bytes != n)
					fail_msg("nt_bytes %llu for n=%zu",
					         (unsigned long long)c.nt_bytes, n);
				if (memcmp(b.buf + 64 + doff, src + soff, n))
					fail_msg("copy_nt(+%zu, +%zu, %zu) "
					         "differs", doff, soff, n);
				for (size_t k = 0; k < 1024; k++)
					if ((k < 64 + doff || k >= 64 + doff + n) &&
					    b.buf[k] != 0x5a)
						fail_msg("copy_nt(+%zu, +%zu, %zu)"
						         " wrote byte %zu", doff,
						         soff, n, k);
			}
	pbuf_fini(&b);
}

static void copy_nt_copies_exactly_and_counts_nt_bytes(void **state)
{
	check_copy_nt(PMTX_PDOM1, PMTX_BACKEND_HARDWARE, 17, 9, 1);
}

static void copy_nt_is_exact_in_every_backend(void **state)
{
	check_copy_nt(PMTX_PDOM0, PMTX_BACKEND_HARDWARE, 9, 3, 7);
	check_copy_nt(PMTX_PDOM2, PMTX_BACKEND_HARDWARE, 9, 3, 7);
	check_copy_nt(PMTX_PDOM1, PMTX_BACKEND_EMULATED, 9, 3, 7);
}

static void region_memcpy_nt_copies_and_counts_nt_bytes(void **state)
{
	const char *path;
	pmtx_region *r = undo_region(&path, 4096);
	char *root = pmtx_root(r, NULL);
	char src[1000];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (char)(i ^ 0x3c);
	pmtx_counters_reset();
	pmtx_memcpy_nt(r, root + 3, src, sizeof(src));
	assert_int_equal(pmtx_barrier(r), 0);
	pmtx_counters c;
	pmtx_counters_get(&c);
	assert_int_equal(c.nt_bytes, sizeof(src));
	assert_memory_equal(root + 3, src, sizeof(src));
	tu_close_and_remove(r, path);
}

/* ---- ops override (fault injection) ---- */

struct spy {
	unsigned flushes, barriers, copies;
};

static void spy_flush(struct persist *p, const void *a, size_t n)
{
	((struct spy *)p->ctx)->flushes++;
	persist_default_ops(p->domain, p->backend)->flush(p, a, n);
}

static int spy_barrier(struct persist *p)
{
	((struct spy *)p->ctx)->barriers++;
	return persist_default_ops(p->domain, p->backend)->barrier(p);
}

static void spy_copy(struct persist *p, void *d, const void *s, size_t n)
{
	((struct spy *)p->ctx)->copies++;
	persist_default_ops(p->domain, p->backend)->copy_nt(p, d, s, n);
}

static const persist_ops spy_ops = {"spy", spy_flush, spy_barrier,
                                    spy_copy, NULL, NULL, NULL, NULL};

static int restore_ops(void **state)
{
	persist_override_ops(NULL, NULL);
	return 0;
}

static void override_ops_is_used_by_later_regions_and_null_restores(
	void **state)
{
	struct spy s = {0};
	persist_override_ops(&spy_ops, &s);
	const char *path;
	pmtx_region *r = undo_region(&path, 256);
	assert_ptr_equal(r->persist.ops, &spy_ops);
	assert_ptr_equal(r->persist.ctx, &s);
	/* Create itself persists the areas and the header through it. */
	assert_true(s.flushes > 0);
	assert_true(s.barriers > 0);
	char *root = pmtx_root(r, NULL);
	struct spy before = s;
	assert_int_equal(pmtx_persist(r, root, 8), 0);
	assert_int_equal(s.flushes, before.flushes + 1);
	assert_int_equal(s.barriers, before.barriers + 1);
	char src[32] = "through the spy";
	pmtx_memcpy_nt(r, root + 64, src, sizeof(src));
	assert_int_equal(s.copies, before.copies + 1);
	assert_memory_equal(root + 64, src, sizeof(src));

	persist_override_ops(NULL, NULL);
	const char *path2;
	pmtx_region *r2 = undo_region(&path2, 256);
	assert_ptr_equal(r2->persist.ops,
	                 persist_default_ops(PMTX_PDOM1, PMTX_BACKEND_HARDWARE));
	assert_null(r2->persist.ctx);
	before = s;
	assert_int_equal(pmtx_persist(r2, pmtx_root(r2, NULL), 8), 0);
	assert_int_equal(s.flushes, before.flushes);
	assert_int_equal(s.barriers, before.barriers);
	/* The region opened under the override keeps its table. */
	assert_int_equal(pmtx_persist(r, root, 8), 0);
	assert_int_equal(s.barriers, before.barriers + 1);
	assert_int_equal(pmtx_close(r2), 0);
	tu_close_and_remove(r, path2);
	unlink(path);
}

static void override_ops_applies_to_regions_opened_afterwards(void **state)
{
	const char *path;
	pmtx_region *r = undo_region(&path, 256);
	assert_int_equal(pmtx_close(r), 0);
	struct spy s = {0};
	persist_override_ops(&spy_ops, &s);
	r = tu_open(path);
	assert_ptr_equal(r->persist.ops, &spy_ops);
	struct spy before = s;
	pmtx_tx *tx;
	uint64_t v = 99;
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_write(tx, pmtx_root(r, NULL), &v, sizeof(v)), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_true(s.barriers > before.barriers);
	assert_true(s.flushes > before.flushes);
	persist_override_ops(NULL, NULL);
	tu_close_and_remove(r, path);
}

/* ---- the streaming checksum ---- */

/* A hasher left on the stack by an earlier one with the same seed but a
 * secret since overwritten: pmtx_hash_init must not keep that secret
 * (XXH3_64bits_reset_withSeed alone does, and then every record and seal
 * checked through the streaming form can fail its check). */
static void streaming_checksum_ignores_a_stale_state(void **state)
{
	char buf[1000];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 7 + 1);
	const uint64_t seed = 0x6365725f6a78746dull;
	struct pmtx_hasher h;
	pmtx_hash_init(&h, seed);
	XXH3_state_t *st = (XXH3_state_t *)(void *)h.state;
	memset(st->customSecret, 0xa5, sizeof(st->customSecret));
	pmtx_hash_init(&h, seed);
	pmtx_hash_update(&h, buf, 300);
	pmtx_hash_update(&h, buf + 300, sizeof(buf) - 300);
	assert_int_equal(pmtx_hash_digest(&h),
	                 pmtx_checksum(buf, sizeof(buf), seed));
}

/* ---- a thread's buffers, at its exit ---- */

static unsigned exit_seen[4], nexit;

static void exit_note(void *arg)
{
	if (nexit < 4)
		exit_seen[nexit] = (unsigned)(uintptr_t)arg;
	nexit++;
}

static _Thread_local struct pmtx__thread_exit ex1, ex2;

/* In a thread of its own (no cmocka assert there): 0 or a status. */
static void *register_twice(void *arg)
{
	(void)arg;
	int rc = pmtx__thread_exit_register(&ex1, exit_note, (void *)1);
	rc = rc ? rc : pmtx__thread_exit_register(&ex2, exit_note, (void *)2);
	rc = rc ? rc : pmtx__thread_exit_register(&ex1, exit_note, (void *)1);
	return (void *)(intptr_t)rc;
}

static void *register_none(void *arg)
{
	return arg;
}

static unsigned exits_of(void *(*fn)(void *))
{
	pthread_t th;
	void *rc = (void *)1;
	nexit = 0;
	assert_int_equal(pthread_create(&th, NULL, fn, NULL), 0);
	assert_int_equal(pthread_join(th, &rc), 0);
	assert_null(rc);
	return nexit;
}

/* Each registration runs once at its thread's exit, newest first, and a
 * registration made again is still one. */
static void registrations_run_once_at_thread_exit(void **state)
{
	for (int round = 0; round < 2; round++) {
		assert_int_equal(exits_of(register_twice), 2);
		assert_int_equal(exit_seen[0], 2);
		assert_int_equal(exit_seen[1], 1);
		assert_int_equal(exits_of(register_none), 0);
	}
}

#define BIG_WRITE (256u << 10)
#define BUF_THREADS 128

struct big_arg {
	pmtx_region *r;
	pmtx_off obj;
	int seq;
};

/* One transaction of BIG_WRITE bytes, in a thread of its own: 0 or a
 * status. */
static void *write_big(void *arg)
{
	struct big_arg *a = arg;
	static char buf[BIG_WRITE]; /* one thread at a time */
	pmtx_tx *tx;
	memset(buf, a->seq, sizeof(buf));
	int rc = pmtx_begin(a->r, PMTX_RT_REDO, &tx);
	if (rc)
		return (void *)(intptr_t)rc;
	rc = pmtx_write(tx, pmtx_ptr(a->r, a->obj), buf, sizeof(buf));
	int c = pmtx_commit(tx);
	return (void *)(intptr_t)(rc ? rc : c);
}

/* Bytes malloc has handed out: from its arenas, and mmap'd (a buffer
 * over the mmap threshold is not in uordblks). 0 under ASan, whose
 * allocator glibc does not see. */
static size_t malloc_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

/* Threads that each commit a big transaction and exit leave no buffer
 * behind, in the backends that keep per-thread buffers: the file
 * backend's dirty pages (2 KB a thread here), the journal's record and
 * lines (about 350 KB a thread), and the crash simulator's pending
 * flushes (128 KB; emulated, as the explorer runs it). 128 threads, after
 * 8 to warm up; the bound, 64 KB, is below what one buffer of each left
 * behind by every thread would hold. (The simulator's tracked stores,
 * kept only with its checks on, share its pending flushes' registration.)
 * Skipped where malloc's counts are not glibc's (ASan: its own leak
 * check at exit reports such a leak there). */
static void backend_buffers_are_freed_at_thread_exit(void **state)
{
	if (malloc_in_use() == 0)
		skip();
	static const pmtx_backend be[] = {PMTX_BACKEND_FILE,
	                                  PMTX_BACKEND_JOURNAL,
	                                  PMTX_BACKEND_EMULATED};
	for (size_t b = 0; b < ARRAY_SIZE(be); b++) {
		const char *path;
		struct sim *s = NULL;
		if (be[b] == PMTX_BACKEND_EMULATED) {
			assert_non_null(s = sim_new(16u << 20, NULL));
			persist_override_ops(&sim_ops, s);
		}
		pmtx_region *r = tu_create(&path, 16u << 20, 0, PMTX_PDOM1,
		                           be[b], PMTX_RT_REDO);
		persist_override_ops(NULL, NULL);
		struct big_arg a = {r, 0, 0};
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(r, PMTX_RT_REDO, &tx), 0);
		assert_int_equal(pmtx_alloc(tx, BIG_WRITE, &a.obj), 0);
		assert_int_equal(pmtx_commit(tx), 0);
		size_t before = 0;
		for (int t = 0; t < 8 + BUF_THREADS; t++) {
			pthread_t th;
			void *rc = (void *)1;
			if (t == 8)
				before = malloc_in_use();
			a.seq = t;
			assert_int_equal(pthread_create(&th, NULL, write_big, &a),
			                 0);
			assert_int_equal(pthread_join(th, &rc), 0);
			assert_null(rc);
		}
		size_t after = malloc_in_use();
		if (after > before + (64u << 10))
			fail_msg("backend %zu: %zu bytes in use before the "
			         "threads, %zu after", b, before, after);
		const unsigned char *p = pmtx_ptr(r, a.obj);
		assert_int_equal(p[0], (8 + BUF_THREADS - 1) & 0xff);
		assert_int_equal(pmtx_close(r), 0);
		if (s)
			sim_free(s);
		char j[4200];
		snprintf(j, sizeof(j), "%s.pmtxj", path);
		unlink(j);
		unlink(path);
	}
}

/* ---- the sim after a process crash (sim.c S9, explore.c E9) ---- */

/* A buffer served by a sim whose durable image is preset to zero while
 * the buffer's line 1 holds words 1..8 (stores a dead process left in
 * the cache); with preset 0 the sim takes the buffer as durable. */
static struct sim *preset_sim(struct pbuf *b, uint8_t *durable, int preset)
{
	pbuf_init(b, PMTX_PDOM1, PMTX_BACKEND_EMULATED);
	for (int i = 0; i < 8; i++)
		((uint64_t *)(void *)(b->buf + 64))[i] = (uint64_t)i + 1;
	memset(durable, 0, BUF_SIZE);
	struct sim *s = sim_new(BUF_SIZE, durable);
	assert_non_null(s);
	if (preset)
		sim_preset_durable(s);
	persist_set_ops(&b->p, &sim_ops, s);
	sim_ops.attach(&b->p);
	return s;
}

static size_t snap_of(struct sim *s, void *buf)
{
	size_t n = sim_snapshot(s, buf, 1 << 16, 1);
	assert_true(n <= 1 << 16);
	return n;
}

/* The dead process's line is one pending store that persists whole or
 * not at all: 2 images (8 words under S3 would give 256), the visible
 * image holds it, and a flush and a barrier make it durable. */
static void a_preset_sim_keeps_a_dead_process_line_pending_whole(void **st)
{
	struct pbuf b;
	static uint8_t durable[BUF_SIZE], img[BUF_SIZE];
	static uint64_t snapbuf[1 << 13];
	struct sim *s = preset_sim(&b, durable, 1);
	snap_of(s, snapbuf);
	const struct sim_snap *snap = (const void *)snapbuf;
	assert_int_equal(snap->nlines, 1);
	assert_int_equal(snap->nstores, 1);
	assert_int_equal(sim_image_count(snap), 2);
	sim_image(snap, durable, 0, 0, 0, img);
	assert_memory_equal(img, durable, BUF_SIZE);
	sim_image(snap, durable, 1, 0, 0, img);
	assert_memory_equal(img, b.buf, BUF_SIZE);
	for (uint64_t k = 0; k < 64; k++) { /* samples: never a torn line */
		sim_image(snap, durable, k, 1, 7, img);
		assert_true(!memcmp(img, durable, BUF_SIZE) ||
		            !memcmp(img, b.buf, BUF_SIZE));
	}
	memset(img, 0xa5, sizeof(img));
	sim_image_visible(snap, durable, img);
	assert_memory_equal(img, b.buf, BUF_SIZE);
	b.p.ops->flush(&b.p, b.buf + 64, 64);
	assert_int_equal(b.p.ops->barrier(&b.p), 0);
	assert_memory_equal(durable, b.buf, BUF_SIZE);
	snap_of(s, snapbuf);
	assert_int_equal(snap->nlines, 0);
	sim_free(s);
	pbuf_fini(&b);
}

/* Without the preset, attach takes the mapping as durable; a naked store
 * made afterwards keeps S3's per-word images. */
static void a_sim_without_preset_starts_from_the_mapping(void **st)
{
	struct pbuf b;
	static uint8_t durable[BUF_SIZE];
	static uint64_t snapbuf[1 << 13];
	struct sim *s = preset_sim(&b, durable, 0);
	assert_memory_equal(durable, b.buf, BUF_SIZE);
	const struct sim_snap *snap = (const void *)snapbuf;
	snap_of(s, snapbuf);
	assert_int_equal(snap->nlines, 0);
	((uint64_t *)(void *)b.buf)[0] = 9;
	((uint64_t *)(void *)b.buf)[1] = 9;
	snap_of(s, snapbuf);
	assert_int_equal(snap->nlines, 1);
	assert_int_equal(sim_image_count(snap), 4); /* none, w0, w1, both */
	sim_free(s);
	pbuf_fini(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			hardware_flushes_count_exact_lines_and_barriers_count_one),
		cmocka_unit_test(
			emulated_backend_counts_like_hardware_in_every_domain),
		cmocka_unit_test(
			region_flush_and_persist_count_exact_lines_and_barriers),
		cmocka_unit_test(counters_reset_zeroes_every_counter),
		cmocka_unit_test(counters_are_per_thread),
		cmocka_unit_test(
			file_barrier_msyncs_once_per_distinct_nonadjacent_page),
		cmocka_unit_test(
			file_barrier_coalesces_adjacent_pages_into_one_msync),
		cmocka_unit_test(file_barrier_with_nothing_flushed_does_no_msync),
		cmocka_unit_test(
			file_barrier_of_several_runs_flushes_the_device_once),
		cmocka_unit_test(file_barriers_fail_after_a_failed_write_back),
		cmocka_unit_test(file_backend_flushed_data_reaches_the_file),
		cmocka_unit_test(
			file_backend_region_persist_msyncs_and_reaches_the_file),
		cmocka_unit_test(barrier_ns_defaults_follow_domain_and_backend),
		cmocka_unit_test(explicit_barrier_ns_overrides_the_default),
		cmocka_unit_test(persist_init_rejects_unknown_domain_or_backend),
		cmocka_unit_test(flush_instruction_matches_cpuid),
		cmocka_unit_test(streaming_checksum_ignores_a_stale_state),
		cmocka_unit_test(registrations_run_once_at_thread_exit),
		cmocka_unit_test(backend_buffers_are_freed_at_thread_exit),
		cmocka_unit_test(copy_nt_copies_exactly_and_counts_nt_bytes),
		cmocka_unit_test(copy_nt_is_exact_in_every_backend),
		cmocka_unit_test(region_memcpy_nt_copies_and_counts_nt_bytes),
		cmocka_unit_test(
			a_preset_sim_keeps_a_dead_process_line_pending_whole),
		cmocka_unit_test(a_sim_without_preset_starts_from_the_mapping),
		cmocka_unit_test_teardown(
			override_ops_is_used_by_later_regions_and_null_restores,
			restore_ops),
		cmocka_unit_test_teardown(
			override_ops_applies_to_regions_opened_afterwards,
			restore_ops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
