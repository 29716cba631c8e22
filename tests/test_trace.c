/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_trace.c - the persistence trace (include/pmtx_trace.h).
 *
 * Run as "test_trace --emit REGION_PATH" it only runs one transaction (no
 * cmocka), so that trace_dump.cmake can trace it through PMTX_TRACE.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmtx_trace.h"
#include "testutil.h"
#include "trace/trace.h"

#define SIZE (32u << 20)
#define ROOT 4096u

struct evs {
	pmtx_trace_event *e;
	uint8_t **bytes;
	size_t n;
};

static char tpath[256];

static const char *trace_path(void)
{
	if (!tpath[0]) /* one path for the whole run */
		snprintf(tpath, sizeof(tpath), "%s",
		         tu_path_in("/dev/shm", "trace.bin"));
	return tpath;
}

static void read_all(const char *path, struct evs *v)
{
	pmtx_trace_reader *rd;
	assert_int_equal(pmtx_trace_open(path, &rd), 0);
	memset(v, 0, sizeof(*v));
	pmtx_trace_event ev;
	int rc;
	while ((rc = pmtx_trace_next(rd, &ev)) == 0) {
		v->e = realloc(v->e, (v->n + 1) * sizeof(*v->e));
		v->bytes = realloc(v->bytes, (v->n + 1) * sizeof(*v->bytes));
		v->bytes[v->n] = NULL;
		if (ev.bytes) {
			v->bytes[v->n] = malloc(ev.rec.size);
			memcpy(v->bytes[v->n], ev.bytes, ev.rec.size);
		}
		v->e[v->n++] = ev;
	}
	assert_int_equal(rc, 1);
	pmtx_trace_close(rd);
}

static void evs_free(struct evs *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->bytes[i]);
	free(v->bytes);
	free(v->e);
}

static int one_tx_rt(pmtx_region *r, pmtx_runtime rt, uint64_t val)
{
	uint64_t *root = pmtx_root(r, NULL);
	pmtx_tx *tx;
	int rc = pmtx_begin(r, rt, &tx);
	if (!rc)
		rc = pmtx_write(tx, root, &val, sizeof(val));
	int rc2 = pmtx_commit(tx);
	return rc ? rc : rc2;
}

static int one_tx(pmtx_region *r, uint64_t val)
{
	return one_tx_rt(r, PMTX_RT_UNDO, val);
}

/* Trace one undo transaction; fills v and the thread's counters. */
static pmtx_region *traced_tx(const char **rpath, unsigned flags,
                              uint64_t val, struct evs *v,
                              pmtx_counters *c)
{
	pmtx_region *r = tu_create(rpath, SIZE, ROOT, PMTX_PDOM1,
	                           PMTX_BACKEND_EMULATED, PMTX_RT_UNDO);
	assert_int_equal(pmtx_trace_start(trace_path(), flags), 0);
	pmtx_counters_reset();
	assert_int_equal(one_tx(r, val), 0);
	pmtx_counters_get(c);
	assert_int_equal(pmtx_trace_stop(), 0);
	read_all(trace_path(), v);
	return r;
}

static void done(pmtx_region *r, const char *rpath)
{
	tu_close_and_remove(r, rpath);
	unlink(trace_path());
}

static void undo_tx_trace_is_ordered_and_matches_counters(void **state)
{
	const char *rpath;
	struct evs v;
	pmtx_counters c;
	pmtx_region *r = traced_tx(&rpath, 0, 42, &v, &c);
	uint64_t data_off = pmtx_off_of(r, pmtx_root(r, NULL));
	uint8_t uuid[16];
	uint64_t id;
	pmtx_region_uuid(r, uuid);
	memcpy(&id, uuid, 8);

	assert_true(v.n >= 6);
	assert_int_equal(v.e[0].rec.type, PMTX_TEV_BEGIN);
	assert_int_equal(v.e[0].rec.arg, PMTX_RT_UNDO);
	assert_int_equal(v.e[v.n - 1].rec.type, PMTX_TEV_COMMIT);
	assert_int_equal(v.e[v.n - 1].rec.status, 0);
	/* BEGIN, record store, flush, barrier, then the data store. */
	size_t data = 0, rec = 0, flush = 0, barrier = 0;
	for (size_t i = 1; i < v.n && !data; i++) {
		const struct pmtx_trace_rec *e = &v.e[i].rec;
		if (e->type == PMTX_TEV_STORE && e->off == data_off)
			data = i;
		else if (e->type == PMTX_TEV_STORE && !rec)
			rec = i;
		else if (e->type == PMTX_TEV_FLUSH && rec && !flush)
			flush = i;
		else if (e->type == PMTX_TEV_BARRIER && flush && !barrier)
			barrier = i;
	}
	assert_true(rec && flush > rec && barrier > flush && data > barrier);
	assert_int_equal(v.e[data].rec.size, 8);
	uint64_t nbar = 0, lines = 0;
	for (size_t i = 0; i < v.n; i++) {
		const struct pmtx_trace_rec *e = &v.e[i].rec;
		assert_int_equal(e->region, id);
		assert_int_equal(e->tid, v.e[0].rec.tid);
		assert_null(v.e[i].bytes); /* no PMTX_TRACE_BYTES */
		if (i)
			assert_true(e->time_ns >= v.e[i - 1].rec.time_ns);
		nbar += e->type == PMTX_TEV_BARRIER;
		if (e->type == PMTX_TEV_FLUSH) {
			uint64_t l = (e->off + e->size - 1) / 64 - e->off / 64 + 1;
			assert_int_equal(e->arg, l);
			lines += l;
		}
	}
	assert_int_equal(nbar, c.barriers);
	assert_int_equal(lines, c.flushes);
	evs_free(&v);
	done(r, rpath);
}

/* The kinds of the barriers of the committing thread between BEGIN and
 * COMMIT, as a string: 'o' ORDER, 'd' DURABLE, '?' other. Checks on the
 * way that every STORE has a known kind, that the stores of kind DATA
 * are the transaction's 8 bytes at data_off, and that a DURABLE barrier
 * follows the transaction's last LOG store before its COMMIT (what makes
 * a commit durable on a machine whose ordering barrier does not). */
static void barrier_kinds_of_tx(const struct evs *v, uint64_t data_off,
                                char *out, size_t cap)
{
	size_t n = 0, b = 0;
	uint64_t data = 0;
	int log_covered = 1;
	while (b < v->n && v->e[b].rec.type != PMTX_TEV_BEGIN)
		b++;
	assert_true(b < v->n);
	uint32_t tid = v->e[b].rec.tid;
	for (size_t i = b + 1; i < v->n; i++) {
		const struct pmtx_trace_rec *e = &v->e[i].rec;
		if (e->tid != tid)
			continue;
		if (e->type == PMTX_TEV_COMMIT)
			break;
		if (e->type == PMTX_TEV_STORE) {
			assert_in_range(e->arg, PMTX_TSK_DATA, PMTX_TSK_REGION);
			if (e->arg == PMTX_TSK_DATA) {
				assert_int_equal(e->off, data_off);
				data += e->size;
			}
			log_covered &= e->arg != PMTX_TSK_LOG;
		} else if (e->type == PMTX_TEV_BARRIER) {
			assert_true(n + 1 < cap);
			out[n++] = e->arg == PMTX_TBK_ORDER     ? 'o'
			           : e->arg == PMTX_TBK_DURABLE ? 'd'
			                                        : '?';
			log_covered |= e->arg == PMTX_TBK_DURABLE;
		}
	}
	out[n] = 0;
	assert_int_equal(data, 8);
	assert_true(log_covered);
}

/* Each runtime's barriers, by kind, in one transaction writing 8 bytes:
 *   undo:       the undo record (order), the data before the COMMIT
 *               record (order), the COMMIT record (durable);
 *   redo:       the COMMIT record (durable), the data applied before
 *               the descriptor's IDLE (order);
 *   redo-async: the COMMIT record only (durable); the applied data is
 *               made durable by a later barrier. */
static void runtimes_label_their_barriers_and_stores(void **state)
{
	static const struct {
		pmtx_runtime rt;
		const char *kinds;
	} cases[] = {
		{PMTX_RT_UNDO, "ood"},
		{PMTX_RT_REDO, "do"},
		{PMTX_RT_REDO_ASYNC, "d"},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const char *rpath;
		pmtx_region *r = tu_create(&rpath, SIZE, ROOT, PMTX_PDOM1,
		                           PMTX_BACKEND_EMULATED, cases[c].rt);
		uint64_t data_off = pmtx_off_of(r, pmtx_root(r, NULL));
		assert_int_equal(pmtx_trace_start(trace_path(), 0), 0);
		assert_int_equal(one_tx_rt(r, cases[c].rt, 7), 0);
		assert_int_equal(pmtx_trace_stop(), 0);
		struct evs v;
		read_all(trace_path(), &v);
		char kinds[16];
		barrier_kinds_of_tx(&v, data_off, kinds, sizeof(kinds));
		assert_string_equal(kinds, cases[c].kinds);
		evs_free(&v);
		done(r, rpath);
	}
}

static void trace_bytes_equal_the_stored_bytes(void **state)
{
	const char *rpath;
	struct evs v;
	pmtx_counters c;
	uint64_t val = 0x1122334455667788ull;
	pmtx_region *r = traced_tx(&rpath, PMTX_TRACE_BYTES, val, &v, &c);
	uint64_t data_off = pmtx_off_of(r, pmtx_root(r, NULL));
	int seen = 0;
	for (size_t i = 0; i < v.n; i++) {
		const struct pmtx_trace_rec *e = &v.e[i].rec;
		if (e->type == PMTX_TEV_STORE) {
			assert_non_null(v.bytes[i]);
			assert_true(e->flags & PMTX_TRACE_RF_BYTES);
		}
		if (e->type == PMTX_TEV_STORE && e->off == data_off) {
			assert_memory_equal(v.bytes[i], &val, 8);
			seen = 1;
		}
		if (e->type == PMTX_TEV_FLUSH || e->type == PMTX_TEV_BARRIER)
			assert_null(v.bytes[i]);
	}
	assert_true(seen);
	evs_free(&v);
	done(r, rpath);
}

static void tracing_off_writes_nothing(void **state)
{
	const char *rpath;
	unlink(trace_path());
	pmtx_region *r = tu_create(&rpath, SIZE, ROOT, PMTX_PDOM1,
	                           PMTX_BACKEND_EMULATED, PMTX_RT_UNDO);
	uint64_t before = trace_count();
	assert_int_equal(one_tx(r, 7), 0);
	pmtx_persist(r, pmtx_root(r, NULL), 64);
	assert_int_equal(trace_count(), before);
	assert_int_equal(access(trace_path(), F_OK), -1);
	assert_int_equal(pmtx_trace_stop(), 0); /* no-op */
	tu_close_and_remove(r, rpath);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

static int open_and_read(const char *path)
{
	pmtx_trace_reader *rd;
	int rc = pmtx_trace_open(path, &rd);
	if (rc)
		return rc;
	pmtx_trace_event ev;
	while ((rc = pmtx_trace_next(rd, &ev)) == 0)
		;
	pmtx_trace_close(rd);
	return rc;
}

static void reader_rejects_truncated_and_foreign_files(void **state)
{
	const char *rpath;
	struct evs v;
	pmtx_counters c;
	pmtx_region *r = traced_tx(&rpath, PMTX_TRACE_BYTES, 5, &v, &c);
	evs_free(&v);
	FILE *f = fopen(trace_path(), "rb");
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	const char *bad = tpath;
	struct pmtx_trace_file_hdr h;
	struct pmtx_trace_rec rec;
	assert_true(n > sizeof(h) + sizeof(rec));
	write_file(bad, buf, n - 4);
	assert_int_equal(open_and_read(bad), PMTX_E_TRUNCATED);
	write_file(bad, buf, sizeof(h) + 20);
	assert_int_equal(open_and_read(bad), PMTX_E_TRUNCATED);
	write_file(bad, buf, 10);
	assert_int_equal(open_and_read(bad), PMTX_E_TRUNCATED);
	write_file(bad, buf, 0);
	assert_int_equal(open_and_read(bad), PMTX_E_TRUNCATED);
	memcpy(&h, buf, sizeof(h));
	h.magic ^= 1;
	write_file(bad, &h, sizeof(h));
	assert_int_equal(open_and_read(bad), PMTX_E_BAD_MAGIC);
	h.magic ^= 1;
	h.major++;
	write_file(bad, &h, sizeof(h));
	assert_int_equal(open_and_read(bad), PMTX_E_BAD_VERSION);
	h.major--;
	/* A record claiming more bytes than the file holds. */
	memset(&rec, 0, sizeof(rec));
	rec.type = PMTX_TEV_STORE;
	rec.flags = PMTX_TRACE_RF_BYTES;
	rec.size = ~0ull - 3;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &rec, sizeof(rec));
	write_file(bad, buf, sizeof(h) + sizeof(rec) + 16);
	assert_int_equal(open_and_read(bad), PMTX_E_TRUNCATED);
	rec.type = 0;
	memcpy(buf + sizeof(h), &rec, sizeof(rec));
	write_file(bad, buf, sizeof(h) + sizeof(rec));
	assert_int_equal(open_and_read(bad), PMTX_E_CORRUPT);
	assert_int_equal(open_and_read("/nonexistent/trace"), ENOENT);
	done(r, rpath);
}

#define NTHR 2
#define NTX 200

static pmtx_region *mt_region;

static void *thread_main(void *arg)
{
	pmtx_region *r = mt_region;
	for (int i = 0; i < NTX; i++) {
		pmtx_tx *tx;
		if (pmtx_begin(r, PMTX_RT_UNDO, &tx))
			return (void *)1;
		uint64_t *slot = (uint64_t *)pmtx_root(r, NULL) +
		                 8 * (uintptr_t)arg;
		uint64_t val = (uint64_t)i;
		pmtx_write(tx, slot, &val, sizeof(val));
		if (pmtx_commit(tx))
			return (void *)1;
	}
	return NULL;
}

static void threads_get_distinct_ids_and_ordered_events(void **state)
{
	const char *rpath;
	pmtx_region *r = tu_create(&rpath, SIZE, ROOT, PMTX_PDOM1,
	                           PMTX_BACKEND_EMULATED, PMTX_RT_UNDO);
	mt_region = r;
	assert_int_equal(pmtx_trace_start(trace_path(), 0), 0);
	assert_int_equal(tu_run_threads(thread_main, NULL, 0, NTHR), 0);
	assert_int_equal(pmtx_trace_stop(), 0);
	struct evs v;
	read_all(trace_path(), &v);
	uint32_t tid[NTHR] = {0};
	uint64_t last[NTHR] = {0};
	int open_tx[NTHR] = {0}, commits[NTHR] = {0};
	for (size_t i = 0; i < v.n; i++) {
		const struct pmtx_trace_rec *e = &v.e[i].rec;
		int k = 0;
		while (k < NTHR && tid[k] && tid[k] != e->tid)
			k++;
		assert_true(k < NTHR); /* at most NTHR distinct threads */
		tid[k] = e->tid;
		assert_true(e->time_ns >= last[k]);
		last[k] = e->time_ns;
		if (e->type == PMTX_TEV_BEGIN) {
			assert_false(open_tx[k]);
			open_tx[k] = 1;
		} else if (e->type == PMTX_TEV_COMMIT) {
			assert_true(open_tx[k]);
			open_tx[k] = 0;
			commits[k]++;
		} else {
			assert_true(open_tx[k]); /* inside its transaction */
		}
	}
	for (int k = 0; k < NTHR; k++) {
		assert_int_not_equal(tid[k], 0);
		assert_int_equal(commits[k], NTX);
	}
	assert_int_not_equal(tid[0], tid[1]);
	evs_free(&v);
	done(r, rpath);
}

static int emit(const char *rpath)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.root_size = ROOT;
	o.backend = PMTX_BACKEND_EMULATED;
	pmtx_region *r;
	int rc = pmtx_create(rpath, SIZE, &o, &r);
	if (rc)
		return 1;
	rc = one_tx(r, 99);
	pmtx_close(r);
	unlink(rpath);
	return rc != 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--emit"))
		return emit(argv[2]);
	unsetenv("PMTX_TRACE");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(undo_tx_trace_is_ordered_and_matches_counters),
		cmocka_unit_test(trace_bytes_equal_the_stored_bytes),
		cmocka_unit_test(runtimes_label_their_barriers_and_stores),
		cmocka_unit_test(tracing_off_writes_nothing),
		cmocka_unit_test(reader_rejects_truncated_and_foreign_files),
		cmocka_unit_test(threads_get_distinct_ids_and_ordered_events),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
