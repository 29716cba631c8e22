/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trace.c - recording and reading the persistence trace (pmtx_trace.h).
 *
 * Design
 * ------
 * Each thread appends records to its own 64 KiB buffer; a full buffer is
 * written to the one trace file, under file_lock, as a block. So a
 * thread's records stay in order (pmtx_trace.h invariant 1) and the file
 * lock is taken once per 64 KiB, not per event. Buffers are written out
 * when full, at pmtx_trace_stop() and at thread exit (key destructor).
 *
 * Invariants
 *  T1. Lock order: list_lock, then a buffer's lock, then file_lock.
 *      list_lock also serialises start and stop.
 *  T2. Every trace run has a session number. A buffer holds records of one
 *      session (b->session); records of an ended session are dropped, never
 *      written to a later file. An event that races with stop may be lost;
 *      no other event is.
 *  T3. pmtx__trace_on is set only after the file is ready and cleared
 *      before the buffers are written out at stop.
 *  T4. The reader trusts nothing in the file: every length is checked
 *      against the bytes that remain before it is used.
 *  T5. A sink (trace_set_sink: the crash simulator) receives every event,
 *      synchronously and in the emitting thread, while it is set;
 *      pmtx__trace_on is then on whether or not a file is written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pmtx_cltx.h" /* its declaration exports pmtx__trace_on */
#include "trace.h"

#define TBUF_SIZE (64u * 1024u)
#define MAX_REGIONS 64

int pmtx__trace_on;
/* T5: a sink sees every event while set, trace file or not. */
static trace_sink_fn sink_fn;
static void *sink_arg;
static int file_on; /* a trace file is being written */

struct tbuf {
	pthread_mutex_t lock;
	uint64_t session;
	size_t len;
	LIST_ENTRY(tbuf) link; /* in buffers; list_lock */
	char data[TBUF_SIZE];
};

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
/* Every thread's buffer; list_lock. */
static LIST_HEAD(, tbuf) buffers = LIST_HEAD_INITIALIZER(buffers);
static int running;           /* list_lock */
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static int trace_fd = -1;     /* file_lock */
static int write_err;         /* file_lock */
static _Atomic uint64_t session;
static unsigned trace_flags;
static atomic_uint_fast64_t nrecords;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t buf_key;
static _Thread_local struct tbuf *tls_buf;
static _Thread_local uint32_t tls_tid;

/* ---- region ids (pmtx_trace.h invariant 3) ---- */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { const char *base; uint64_t id; } regions[MAX_REGIONS];
static unsigned nregions; /* reg_lock */
static _Atomic uint64_t reg_gen = 1;
static _Thread_local struct { const char *base; uint64_t id, gen; } reg_cache;

static uint64_t region_id(const char *base)
{
	uint64_t gen = atomic_load(&reg_gen);
	if (!base)
		return 0;
	if (reg_cache.base == base && reg_cache.gen == gen)
		return reg_cache.id;
	uint64_t id = 0;
	pthread_mutex_lock(&reg_lock);
	for (unsigned i = 0; i < nregions; i++)
		if (regions[i].base == base)
			id = regions[i].id;
	pthread_mutex_unlock(&reg_lock);
	reg_cache.base = base, reg_cache.id = id, reg_cache.gen = gen;
	return id;
}

static void region_add(const char *base, uint64_t id)
{
	pthread_mutex_lock(&reg_lock);
	unsigned i = 0;
	while (i < nregions && regions[i].base != base)
		i++;
	if (i == MAX_REGIONS)
		i = (unsigned)(id % MAX_REGIONS); /* forget an old one */
	else if (i == nregions)
		nregions++;
	regions[i].base = base, regions[i].id = id;
	atomic_fetch_add(&reg_gen, 1);
	pthread_mutex_unlock(&reg_lock);
}

/* ---- writing ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* file_lock held. */
static void do_write_all(const void *p, size_t n)
{
	const char *c = p;
	while (n && !write_err) {
		ssize_t w = write(trace_fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			write_err = w < 0 ? errno : EIO;
			return;
		}
		c += w, n -= (size_t)w;
	}
}

/* Append pieces to the file if it still belongs to session s (T2). */
static void file_write(uint64_t s, const void *a, size_t na, const void *b,
                       size_t nb)
{
	static const char zero[8];
	pthread_mutex_lock(&file_lock);
	if (trace_fd >= 0 && s == atomic_load(&session)) {
		do_write_all(a, na);
		do_write_all(b, nb);
		do_write_all(zero, ALIGN_UP(nb, 8) - nb);
	}
	pthread_mutex_unlock(&file_lock);
}

/* b->lock held. */
static void do_buf_write(struct tbuf *b)
{
	if (b->len)
		file_write(b->session, b->data, b->len, NULL, 0);
	b->len = 0;
}

static void buf_destroy(void *v)
{
	struct tbuf *b = v;
	pthread_mutex_lock(&list_lock);
	LIST_REMOVE(b, link);
	pthread_mutex_unlock(&list_lock);
	pthread_mutex_lock(&b->lock);
	do_buf_write(b);
	pthread_mutex_unlock(&b->lock);
	pthread_mutex_destroy(&b->lock);
	tls_buf = NULL;
	free(b);
}

static void key_init(void)
{
	pthread_key_create(&buf_key, buf_destroy);
}

static struct tbuf *buf_get(void)
{
	if (likely(tls_buf != NULL))
		return tls_buf;
	pthread_once(&key_once, key_init);
	struct tbuf *b = malloc(sizeof(*b));
	if (!b)
		return NULL;
	pthread_mutex_init(&b->lock, NULL);
	b->session = atomic_load(&session);
	b->len = 0;
	pthread_mutex_lock(&list_lock);
	LIST_INSERT_HEAD(&buffers, b, link);
	pthread_mutex_unlock(&list_lock);
	pthread_setspecific(buf_key, b);
	tls_tid = (uint32_t)syscall(SYS_gettid);
	return tls_buf = b;
}

static void append(struct pmtx_trace_rec *rec, const void *data)
{
	struct tbuf *b = buf_get();
	if (!b)
		return;
	size_t nb = data ? (size_t)rec->size : 0;
	size_t need = sizeof(*rec) + ALIGN_UP(nb, 8);
	pthread_mutex_lock(&b->lock);
	uint64_t s = atomic_load(&session);
	if (b->session != s)
		b->session = s, b->len = 0; /* T2 */
	rec->tid = tls_tid;
	rec->time_ns = now_ns();
	if (b->len + need > TBUF_SIZE)
		do_buf_write(b);
	if (need > TBUF_SIZE) {
		file_write(s, rec, sizeof(*rec), data, nb);
	} else {
		memcpy(b->data + b->len, rec, sizeof(*rec));
		if (nb) {
			memcpy(b->data + b->len + sizeof(*rec), data, nb);
			memset(b->data + b->len + sizeof(*rec) + nb, 0,
			       need - sizeof(*rec) - nb);
		}
		b->len += need;
	}
	pthread_mutex_unlock(&b->lock);
	atomic_fetch_add_explicit(&nrecords, 1, memory_order_relaxed);
}

void trace_emit(unsigned type, const char *base, const void *a, uint64_t n,
                const void *data, uint32_t arg, int32_t status)
{
	if (sink_fn)
		sink_fn(sink_arg, type, base, a, n, arg, status);
	if (!__atomic_load_n(&file_on, __ATOMIC_ACQUIRE))
		return;
	struct pmtx_trace_rec rec = {.type = (uint16_t)type,
	                             .region = region_id(base),
	                             .size = n, .arg = arg, .status = status};
	if (a && base)
		rec.off = (uint64_t)((const char *)a - base);
	if (!(trace_flags & PMTX_TRACE_BYTES) || n == 0)
		data = NULL;
	if (data)
		rec.flags = PMTX_TRACE_RF_BYTES;
	append(&rec, data);
}

void trace_tx(unsigned type, const char *base, unsigned idx, unsigned kind,
              int32_t status)
{
	if (sink_fn)
		sink_fn(sink_arg, type, base, NULL, idx, kind, status);
	if (!__atomic_load_n(&file_on, __ATOMIC_ACQUIRE))
		return;
	struct pmtx_trace_rec rec = {.type = (uint16_t)type,
	                             .region = region_id(base), .off = idx,
	                             .arg = kind, .status = status};
	append(&rec, NULL);
}

void trace_set_sink(trace_sink_fn fn, void *arg)
{
	pthread_mutex_lock(&list_lock);
	sink_fn = NULL;
	sink_arg = arg;
	sink_fn = fn;
	__atomic_store_n(&pmtx__trace_on, fn != NULL || running,
	                 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&list_lock);
}

uint64_t trace_count(void)
{
	return atomic_load(&nrecords);
}

/* ---- start / stop ---- */

static void stop_at_exit(void)
{
	pmtx_trace_stop();
}

int pmtx_trace_start(const char *path, unsigned flags)
{
	static int atexit_done;
	if (!path || (flags & ~PMTX_TRACE_BYTES))
		return PMTX_E_INVAL;
	pthread_mutex_lock(&list_lock);
	if (running) {
		pthread_mutex_unlock(&list_lock);
		return PMTX_E_TX_STATE;
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		pthread_mutex_unlock(&list_lock);
		return e;
	}
	struct pmtx_trace_file_hdr h = {
		.magic = PMTX_TRACE_MAGIC, .major = PMTX_TRACE_MAJOR,
		.minor = PMTX_TRACE_MINOR, .hdr_size = sizeof(h),
		.rec_size = sizeof(struct pmtx_trace_rec), .flags = flags,
		.start_ns = now_ns()};
	pthread_mutex_lock(&file_lock);
	trace_fd = fd;
	write_err = 0;
	do_write_all(&h, sizeof(h));
	int rc = write_err;
	if (rc) {
		close(fd);
		trace_fd = -1;
	} else {
		trace_flags = flags;
		atomic_fetch_add(&session, 1);
	}
	pthread_mutex_unlock(&file_lock);
	if (!rc) {
		running = 1;
		if (!atexit_done && atexit(stop_at_exit) == 0)
			atexit_done = 1;
		__atomic_store_n(&file_on, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&pmtx__trace_on, 1, __ATOMIC_RELEASE); /* T3 */
	}
	pthread_mutex_unlock(&list_lock);
	return rc;
}

int pmtx_trace_stop(void)
{
	pthread_mutex_lock(&list_lock);
	if (!running) {
		pthread_mutex_unlock(&list_lock);
		return 0;
	}
	__atomic_store_n(&file_on, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&pmtx__trace_on, sink_fn != NULL,
	                 __ATOMIC_RELEASE); /* T3, T5 */
	uint64_t s = atomic_load(&session);
	struct tbuf *b;
	LIST_FOREACH(b, &buffers, link) {
		pthread_mutex_lock(&b->lock);
		if (b->session == s)
			do_buf_write(b);
		b->len = 0;
		pthread_mutex_unlock(&b->lock);
	}
	pthread_mutex_lock(&file_lock);
	if (close(trace_fd) != 0 && !write_err)
		write_err = errno;
	trace_fd = -1;
	atomic_fetch_add(&session, 1); /* T2: late records are dropped */
	int rc = write_err;
	pthread_mutex_unlock(&file_lock);
	running = 0;
	pthread_mutex_unlock(&list_lock);
	return rc;
}

static void env_init(void)
{
	const char *path = getenv("PMTX_TRACE");
	const char *bytes = getenv("PMTX_TRACE_BYTES");
	if (!path || !*path)
		return;
	unsigned flags = bytes && atoi(bytes) ? PMTX_TRACE_BYTES : 0;
	int rc = pmtx_trace_start(path, flags);
	if (rc && rc != PMTX_E_TX_STATE)
		fprintf(stderr, "pmtx: PMTX_TRACE=%s: %s\n", path,
		        pmtx_strerror(rc));
}

void trace_region(const char *base, uint64_t len, const uint8_t uuid[16])
{
	static pthread_once_t env_once = PTHREAD_ONCE_INIT;
	pthread_once(&env_once, env_init);
	uint64_t id;
	memcpy(&id, uuid, sizeof(id));
	region_add(base, id);
	if (unlikely(pmtx__trace_on))
		trace_emit(PMTX_TEV_REGION, base, base, len, NULL, 0, 0);
}

/* ---- reader (T4) ---- */

struct pmtx_trace_reader {
	FILE *f;
	struct pmtx_trace_file_hdr h;
	uint64_t pos, size; /* file position and length */
	uint8_t *bytes;
	size_t cap;
};

static const char *const type_names[] = {
	[PMTX_TEV_REGION] = "REGION", [PMTX_TEV_STORE] = "STORE",
	[PMTX_TEV_FLUSH] = "FLUSH",   [PMTX_TEV_BARRIER] = "BARRIER",
	[PMTX_TEV_NT] = "NT",         [PMTX_TEV_BEGIN] = "BEGIN",
	[PMTX_TEV_COMMIT] = "COMMIT", [PMTX_TEV_ABORT] = "ABORT",
	[PMTX_TEV_VSTORE] = "VSTORE",
};

const char *pmtx_trace_type_name(unsigned type)
{
	if (type < ARRAY_SIZE(type_names) && type_names[type])
		return type_names[type];
	return "?";
}

const char *pmtx_trace_store_kind_name(unsigned kind)
{
	static const char *const names[PMTX_TSK_COUNT] = {
		"unknown", "data", "log", "alloc", "desc", "object", "region",
	};
	return names[kind < PMTX_TSK_COUNT ? kind : PMTX_TSK_UNKNOWN];
}

const char *pmtx_trace_barrier_kind_name(unsigned kind)
{
	static const char *const names[] = {"unknown", "order", "durable"};
	return names[kind <= PMTX_TBK_DURABLE ? kind : PMTX_TBK_UNKNOWN];
}

static int check_header(const struct pmtx_trace_file_hdr *h, size_t got)
{
	if (got < sizeof(h->magic))
		return PMTX_E_TRUNCATED;
	if (h->magic != PMTX_TRACE_MAGIC)
		return PMTX_E_BAD_MAGIC;
	if (got < sizeof(*h))
		return PMTX_E_TRUNCATED;
	if (h->major != PMTX_TRACE_MAJOR || h->hdr_size != sizeof(*h) ||
	    h->rec_size != sizeof(struct pmtx_trace_rec))
		return PMTX_E_BAD_VERSION;
	return 0;
}

int pmtx_trace_open(const char *path, pmtx_trace_reader **out)
{
	if (!path || !out)
		return PMTX_E_INVAL;
	pmtx_trace_reader *rd = calloc(1, sizeof(*rd));
	if (!rd)
		return ENOMEM;
	struct stat st;
	int rc = 0;
	rd->f = fopen(path, "rbe");
	if (!rd->f || fstat(fileno(rd->f), &st) != 0) {
		rc = errno;
	} else {
		size_t got = fread(&rd->h, 1, sizeof(rd->h), rd->f);
		rc = check_header(&rd->h, got);
		rd->pos = got;
		rd->size = (uint64_t)st.st_size;
	}
	if (rc) {
		pmtx_trace_close(rd);
		return rc;
	}
	*out = rd;
	return 0;
}

const struct pmtx_trace_file_hdr *pmtx_trace_header(
	const pmtx_trace_reader *rd)
{
	return &rd->h;
}

static int read_bytes(pmtx_trace_reader *rd, uint64_t n)
{
	uint64_t padded = ALIGN_UP(n, 8);
	if (n > rd->size || padded > rd->size - rd->pos)
		return PMTX_E_TRUNCATED;
	if (padded > rd->cap) {
		uint8_t *p = realloc(rd->bytes, (size_t)padded);
		if (!p)
			return ENOMEM;
		rd->bytes = p, rd->cap = (size_t)padded;
	}
	if (fread(rd->bytes, 1, (size_t)padded, rd->f) != padded)
		return PMTX_E_TRUNCATED;
	rd->pos += padded;
	return 0;
}

int pmtx_trace_next(pmtx_trace_reader *rd, pmtx_trace_event *ev)
{
	if (!rd || !ev)
		return PMTX_E_INVAL;
	memset(ev, 0, sizeof(*ev));
	size_t got = fread(&ev->rec, 1, sizeof(ev->rec), rd->f);
	if (got == 0 && feof(rd->f))
		return 1;
	if (got != sizeof(ev->rec))
		return ferror(rd->f) ? EIO : PMTX_E_TRUNCATED;
	rd->pos += got;
	if (ev->rec.type == 0)
		return PMTX_E_CORRUPT;
	if (!(ev->rec.flags & PMTX_TRACE_RF_BYTES))
		return 0;
	int rc = read_bytes(rd, ev->rec.size);
	if (!rc)
		ev->bytes = rd->bytes;
	return rc;
}

void pmtx_trace_close(pmtx_trace_reader *rd)
{
	if (!rd)
		return;
	if (rd->f)
		fclose(rd->f);
	free(rd->bytes);
	free(rd);
}
