/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmdk_trace.c - a persistence trace of PMDK, in pmtx's trace format
 * (include/pmtx_trace.h, minor 2), so that `pmtx trace analyze` reads
 * PMDK's runs as it reads pmtx's.
 *
 * PMTX_PMDK_TRACE=path, read once before main, switches it on for the
 * whole process. The events come from the libpmem calls pmdk_count.c
 * interposes (libpmemobj makes every write-back and fence through them)
 * and from pmemobj_tx_end, which pmdk_count.c interposes too.
 *
 * What the trace says, and what it can only infer
 *  1. Stores. PMDK's stores to the pool are plain stores the trace cannot
 *     see; only their write-back is seen. A flushed range (pmem_flush,
 *     pmem_persist, pmem_deep_flush, pmem_msync) becomes a STORE record of
 *     that range (kind PMTX_TSK_UNKNOWN), standing for the stores to it,
 *     then a FLUSH record (arg = its lines). So every flushed line was
 *     "stored" since its last flush, and the analysis finds no redundant
 *     flush in a PMDK trace, by construction.
 *  2. A copy or fill that is not PMEM_F_MEM_NOFLUSH (pmem_memcpy,
 *     pmem_memmove, pmem_memset) is recorded as libpmem makes it (its
 *     memmove_nodrain's rule): with non-temporal stores when the flags say
 *     PMEM_F_MEM_NONTEMPORAL or _WC, or say neither _TEMPORAL nor _WB and
 *     the length is at least the movnt threshold (256, or
 *     PMEM_MOVNT_THRESHOLD; never under PMEM_NO_MOVNT=1): an NT record of
 *     the destination (the bytes of an unaligned head or tail, which
 *     libpmem stores and flushes, count as NT too); else with stores and
 *     flushes: STORE and FLUSH, as 1. The
 *     bench counts the lines as flushes either way; the trace has NT bytes
 *     and no FLUSH for the first kind, as pmtx's own traces (pmtx counts
 *     no flush for a non-temporal copy). PMDK's undo snapshots and its
 *     allocator's copies are all NONTEMPORAL or WC. A NOFLUSH copy is not
 *     recorded: its lines appear when they are flushed.
 *  3. Barriers. A drain (pmem_drain, and the drain that pmem_persist,
 *     pmem_msync and a copy or fill without PMEM_F_MEM_NODRAIN end with)
 *     is a BARRIER of kind PMTX_TBK_UNKNOWN: PMDK has one fence, for
 *     ordering and durability alike (a model with both, HOPS, must treat
 *     it as the durable one).
 *  4. Transactions. pmemobj_tx_begin is variadic and cannot be forwarded
 *     by an interposer, so BEGIN is inferred: it is emitted before the
 *     first record a thread makes while pmemobj_tx_stage() is not
 *     TX_STAGE_NONE, or, for a transaction that made no persistence call,
 *     just before its end. What pmemobj_tx_begin persists before its stage
 *     is set lies outside the transaction. The outermost pmemobj_tx_end
 *     gives COMMIT (status 0) or ABORT (status = the transaction's errno,
 *     its return value); an inner one gives nothing (the analysis flattens
 *     nesting anyway). arg = 0 (no pmtx runtime), off = 0.
 *  5. Offsets. pmemobj_oid(addr) gives the pool's uuid_lo (the region id:
 *     PMDK's own 8-byte id of the pool, as pmtx's is the first 8 bytes of
 *     its UUID) and the offset from the pool's base. A range in no open
 *     pool is dropped and counted: a pool being created is registered
 *     only when pmemobj_create returns, so its creation is not traced.
 *     A REGION record comes before a pool's first record; its size is the
 *     length of the mapping at the pool's base (/proc/self/maps), or 0.
 *  6. Counting, as pmtx_trace.h's invariant 6: the FLUSH lines, the NT
 *     lines and the dropped lines sum to pmdk_count.c's flush counter;
 *     BARRIER records equal its barrier counter. At exit a summary line on
 *     stderr gives these sums and those of the last window between two
 *     bench_pmdk_counters() calls (the last measured round), so that a
 *     test can hold them against the bench's own per-op figures.
 *  7. Writer. One buffer under one mutex: records are in the file in the
 *     order they were made (invariant 1 holds for every thread). It is
 *     written when full and at exit (atexit); records made after that are
 *     dropped (fd < 0). pmdk_trace_on is written only before main, so the
 *     unlocked check at each call site races with nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libpmem.h>
#include <libpmemobj.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pmdk_trace.h"
#include "pmtx_trace.h"

#define BUF_RECS 4096
#define MAX_POOLS 64

int pmdk_trace_on;

/* Sums for the exit summary and the windows (design 6). */
struct sums {
	uint64_t tx, lines, barriers; /* lines: flushed, NT and dropped */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* All below: lock. */
static int fd = -1;
static const char *path;
static int write_err;
static size_t nbuf;
static struct pmtx_trace_rec buf[BUF_RECS];
static uint64_t pools[MAX_POOLS]; /* ids with a REGION record, a ring */
static unsigned npools;
static uint64_t records, committed, aborted, flush_lines, nt_lines;
static uint64_t dropped_lines, dropped_recs;
static struct sums now, mark_prev, mark_last;

static _Thread_local uint32_t t_tid;
static _Thread_local int t_in_tx; /* this thread's BEGIN is out */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t tid(void)
{
	if (!t_tid)
		t_tid = (uint32_t)syscall(SYS_gettid);
	return t_tid;
}

static int buf_write(const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : EIO;
		c += w, n -= (size_t)w;
	}
	return 0;
}

/* Caller holds lock. */
static void do_buf_flush(void)
{
	if (nbuf && !write_err)
		write_err = buf_write(buf, nbuf * sizeof(buf[0]));
	nbuf = 0;
}

/* Caller holds lock, and fd >= 0. */
static void do_emit(uint16_t type, uint64_t region, uint64_t off,
                    uint64_t size, uint32_t arg, int32_t status)
{
	if (nbuf == BUF_RECS)
		do_buf_flush();
	buf[nbuf++] = (struct pmtx_trace_rec){
		.type = type, .tid = tid(), .time_ns = now_ns(),
		.region = region, .off = off, .size = size, .arg = arg,
		.status = status};
	records++;
}

/* Design 4: the BEGIN of the running transaction, if not out yet. Caller
 * holds lock. */
static void do_begin_lazy(void)
{
	if (t_in_tx || pmemobj_tx_stage() == TX_STAGE_NONE)
		return;
	do_emit(PMTX_TEV_BEGIN, 0, 0, 0, 0, 0);
	t_in_tx = 1;
}

/* The length of the mapping that starts at base, or 0. */
static uint64_t mapping_size(uintptr_t base)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	uint64_t size = 0;
	char line[512];
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == base) {
			size = hi - lo;
			break;
		}
	if (f)
		fclose(f);
	return size;
}

/* Design 5: the REGION record of pool id, once. Caller holds lock. */
static void do_region(uint64_t id, uintptr_t base)
{
	unsigned n = npools < MAX_POOLS ? npools : MAX_POOLS;
	for (unsigned i = 0; i < n; i++)
		if (pools[i] == id)
			return;
	pools[npools++ % MAX_POOLS] = id;
	do_emit(PMTX_TEV_REGION, id, 0, mapping_size(base), 0, 0);
}

/* A range's region and offset: 0, or -1 if it lies in no open pool. */
static int locate(const void *addr, uint64_t *region, uint64_t *off)
{
	PMEMoid oid = pmemobj_oid(addr);
	if (oid.pool_uuid_lo == 0)
		return -1;
	*region = oid.pool_uuid_lo, *off = oid.off;
	return 0;
}

/* The records of a write-back in a pool. Caller holds lock. */
static void do_range(uint64_t region, uint64_t off, size_t len,
                     uint64_t lines, int nt)
{
	do_begin_lazy();
	if (nt) {
		do_emit(PMTX_TEV_NT, region, off, len, PMTX_TSK_UNKNOWN, 0);
		nt_lines += lines;
		return;
	}
	do_emit(PMTX_TEV_STORE, region, off, len, PMTX_TSK_UNKNOWN, 0);
	do_emit(PMTX_TEV_FLUSH, region, off, len, (uint32_t)lines, 0);
	flush_lines += lines;
}

/* A write-back of [addr, addr + len): STORE + FLUSH, or NT. */
static void range(const void *addr, size_t len, uint64_t lines, int nt)
{
	uint64_t region, off;
	int in_pool = locate(addr, &region, &off) == 0;
	pthread_mutex_lock(&lock);
	now.lines += lines;
	if (fd >= 0 && !in_pool) {
		dropped_lines += lines, dropped_recs++;
	} else if (fd >= 0) {
		do_region(region, (uintptr_t)addr - off);
		do_range(region, off, len, lines, nt);
	}
	pthread_mutex_unlock(&lock);
}

void pmdk_trace_flush(const void *addr, size_t len, uint64_t lines)
{
	if (len)
		range(addr, len, lines, 0);
}

/* Design 2: libpmem's movnt threshold; SIZE_MAX under PMEM_NO_MOVNT. */
static size_t movnt_threshold = 256;

static void movnt_init(void)
{
	const char *e = getenv("PMEM_NO_MOVNT");
	if (e && strcmp(e, "1") == 0)
		movnt_threshold = SIZE_MAX;
	else if ((e = getenv("PMEM_MOVNT_THRESHOLD")) && atoll(e) >= 0)
		movnt_threshold = (size_t)atoll(e);
}

void pmdk_trace_copy(const void *addr, size_t len, uint64_t lines,
                     unsigned flags)
{
	int nt = movnt_threshold != SIZE_MAX &&
	         ((flags & (PMEM_F_MEM_NONTEMPORAL | PMEM_F_MEM_WC)) ||
	          (!(flags & (PMEM_F_MEM_TEMPORAL | PMEM_F_MEM_WB)) &&
	           len >= movnt_threshold));
	if (len)
		range(addr, len, lines, nt);
}

void pmdk_trace_drain(void)
{
	pthread_mutex_lock(&lock);
	now.barriers++;
	if (fd >= 0) {
		do_begin_lazy();
		do_emit(PMTX_TEV_BARRIER, 0, 0, 0, PMTX_TBK_UNKNOWN, 0);
	}
	pthread_mutex_unlock(&lock);
}

void pmdk_trace_tx_ending(void)
{
	pthread_mutex_lock(&lock);
	if (fd >= 0)
		do_begin_lazy();
	pthread_mutex_unlock(&lock);
}

void pmdk_trace_tx_end(int status, int outermost)
{
	if (!outermost || !t_in_tx)
		return;
	pthread_mutex_lock(&lock);
	now.tx++;
	if (fd >= 0) {
		do_emit(status ? PMTX_TEV_ABORT : PMTX_TEV_COMMIT, 0, 0, 0, 0,
		        status);
		*(status ? &aborted : &committed) += 1;
	}
	t_in_tx = 0;
	pthread_mutex_unlock(&lock);
}

void pmdk_trace_mark(void)
{
	pthread_mutex_lock(&lock);
	mark_prev = mark_last, mark_last = now;
	pthread_mutex_unlock(&lock);
}

static void summary(void)
{
	uint64_t cf, cb;
	pmdk_count_totals(&cf, &cb);
	fprintf(stderr,
	        "pmdk-trace: file=%s records=%llu committed=%llu "
	        "aborted=%llu flush_lines=%llu nt_lines=%llu "
	        "dropped_lines=%llu dropped_records=%llu barriers=%llu "
	        "counted_flushes=%llu counted_barriers=%llu window_tx=%llu "
	        "window_lines=%llu window_barriers=%llu\n",
	        path, (unsigned long long)records,
	        (unsigned long long)committed, (unsigned long long)aborted,
	        (unsigned long long)flush_lines, (unsigned long long)nt_lines,
	        (unsigned long long)dropped_lines,
	        (unsigned long long)dropped_recs,
	        (unsigned long long)now.barriers, (unsigned long long)cf,
	        (unsigned long long)cb,
	        (unsigned long long)(mark_last.tx - mark_prev.tx),
	        (unsigned long long)(mark_last.lines - mark_prev.lines),
	        (unsigned long long)(mark_last.barriers -
	                             mark_prev.barriers));
}

static void finish(void)
{
	pthread_mutex_lock(&lock);
	do_buf_flush();
	if (close(fd) && !write_err)
		write_err = errno;
	fd = -1;
	if (write_err)
		fprintf(stderr, "pmdk-trace: writing %s: %s\n", path,
		        strerror(write_err));
	summary();
	pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void pmdk_trace_init(void)
{
	path = getenv("PMTX_PMDK_TRACE");
	if (!path || !*path)
		return;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "pmdk-trace: %s: %s\n", path, strerror(errno));
		return;
	}
	struct pmtx_trace_file_hdr h = {
		.magic = PMTX_TRACE_MAGIC, .major = PMTX_TRACE_MAJOR,
		.minor = PMTX_TRACE_MINOR, .hdr_size = sizeof(h),
		.rec_size = sizeof(struct pmtx_trace_rec),
		.start_ns = now_ns()};
	write_err = buf_write(&h, sizeof(h));
	movnt_init();
	atexit(finish);
	pmdk_trace_on = 1;
}
