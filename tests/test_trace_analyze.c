/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_trace_analyze.c - WHISPER's epoch analysis (tools/trace_analyze.c)
 * on traces written record by record, whose every metric is known, and on
 * the trace of a real redo workload, checked against the library's own
 * counters.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmtx_trace.h"
#include "testutil.h"
#include "trace_analyze.h"
#include "tracegen.h"

#define US 1000ull /* time_ns of one microsecond */
#define WINDOW (50 * US)

static struct ta_result res;

/* Close the trace (if open) and analyze it with the given window and map
 * bound. */
static int analyze_with(uint64_t window_ns, size_t max_lines)
{
	if (tg_file)
		assert_int_equal(trace_end(), 0);
	struct ta_opts o = {window_ns, max_lines};
	return ta_analyze_file(tg_path, &o, &res);
}

static int analyze_rc(void)
{
	return analyze_with(WINDOW, 0);
}

static void analyze(void)
{
	assert_int_equal(analyze_rc(), 0);
}

static int teardown(void **state)
{
	ta_result_free(&res);
	trace_cleanup();
	return 0;
}

/* ---- epochs ---- */

static void epoch_closes_at_barrier_and_at_commit(void **state)
{
	trace_begin();
	begin(1, 1000);
	barrier(1, 1050);              /* no store before: no epoch */
	store(1, 1100, 0, 8);
	flush(1, 1150, 0, 8);          /* flushes close nothing */
	store(1, 1160, 8, 8);
	barrier(1, 1200);              /* epoch 1 */
	barrier(1, 1250);              /* empty */
	store(1, 1300, 128, 8);
	commit(1, 1400);               /* epoch 2 */
	analyze();
	assert_int_equal(res.epochs, 2);
	assert_int_equal(res.epochs_outside, 0);
	assert_int_equal(res.barriers, 3);
	assert_int_equal(res.empty_barriers, 2);
	assert_int_equal(res.tx_committed, 1);
	assert_int_equal(res.tx_epochs.n, 1);
	assert_int_equal(ta_dist_percentile(&res.tx_epochs, 50), 2);
	assert_int_equal(res.singletons, 2);
	assert_int_equal(res.singletons_small, 1); /* epoch 1: 16 bytes */
	assert_int_equal(res.store_bytes, 24);
	assert_int_equal(res.flushed_lines, 1);
	assert_int_equal(res.tx_crit_lines.sum, 1);
}

static void nested_transactions_are_flattened(void **state)
{
	trace_begin();
	begin(1, 1000);
	store(1, 1100, 0, 8);
	begin(1, 1200);
	store(1, 1300, 64, 8);
	commit(1, 1400);               /* inner: the epoch stays open */
	store(1, 1500, 128, 8);
	commit(1, 1600);               /* one epoch of 3 lines */
	begin(1, 2000);                /* inner abort aborts the whole */
	begin(1, 2100);
	store(1, 2200, 0, 8);
	rec(PMTX_TEV_ABORT, 1, 2300, 0, 0, 0, 0);
	commit(1, 2400);
	begin(1, 3000);                /* pmtx's own: ABORT, then a COMMIT */
	store(1, 3100, 0, 8);          /* of the outer level at depth 0 */
	rec(PMTX_TEV_ABORT, 1, 3200, 0, 0, 0, 0);
	rec(PMTX_TEV_COMMIT, 1, 3300, 0, 0, 0, PMTX_E_ABORTED);
	begin(1, 4000);                /* a failed commit is no commit */
	rec(PMTX_TEV_COMMIT, 1, 4100, 0, 0, 0, PMTX_E_IO);
	analyze();
	assert_int_equal(res.epochs, 3);
	assert_int_equal(res.tx_committed, 1);
	assert_int_equal(res.tx_aborted, 3);
	assert_int_equal(res.tx_unfinished, 0);
	assert_int_equal(res.tx_epochs.n, 1);
	assert_int_equal(res.tx_epochs.sum, 1);
	assert_int_equal(res.epoch_lines.max, 3);
	assert_int_equal(ta_dist_count(&res.epoch_lines, 3, 3), 1);
	assert_int_equal(ta_dist_count(&res.epoch_lines, 1, 1), 2);
}

static void stores_outside_transactions_are_epochs_apart(void **state)
{
	trace_begin();
	store(1, 1000, 0, 8);
	barrier(1, 1100);              /* outside epoch 1 */
	store(1, 1200, 64, 8);
	begin(1, 1300);                /* closes outside epoch 2 */
	store(1, 1400, 128, 8);
	commit(1, 1500);
	rec(PMTX_TEV_VSTORE, 1, 1550, 256, 8, 0, 0); /* opens no epoch */
	barrier(1, 1560);
	store(1, 1600, 192, 8);        /* outside epoch 3, ends the trace */
	begin(2, 1700);                /* unfinished */
	store(2, 1800, 4096, 8);
	analyze();
	assert_int_equal(res.epochs, 5);
	assert_int_equal(res.epochs_outside, 3);
	assert_int_equal(res.tx_committed, 1);
	assert_int_equal(res.tx_unfinished, 1);
	assert_int_equal(res.tx_epochs.sum, 1);
	assert_int_equal(res.empty_barriers, 1);
	assert_int_equal(res.threads, 2);
	assert_int_equal(res.first_ns, 1000);
	assert_int_equal(res.last_ns, 1800);
}

/* ---- epoch size ---- */

static void spanning_store_counts_each_line_and_nt_whole_lines(void **state)
{
	trace_begin();
	store(1, 1000, 60, 8);         /* lines 0 and 1 */
	barrier(1, 1100);
	nt(1, 1200, 128, 8);           /* one line, all 64 bytes */
	barrier(1, 1300);
	nt(1, 1400, 4096, 130);        /* lines 64..66 */
	store(1, 1410, 4096 + 64, 8);  /* line 65 again */
	barrier(1, 1500);
	analyze();
	assert_int_equal(res.epochs, 3);
	assert_int_equal(ta_dist_count(&res.epoch_lines, 2, 2), 1);
	assert_int_equal(ta_dist_count(&res.epoch_lines, 1, 1), 1);
	assert_int_equal(ta_dist_count(&res.epoch_lines, 3, 3), 1);
	assert_int_equal(res.singletons, 1);
	assert_int_equal(res.singletons_small, 0); /* NT: 64 bytes */
	assert_int_equal(res.store_bytes, 16);
	assert_int_equal(res.nt_bytes, 138);
}

static void singleton_is_small_below_ten_distinct_bytes(void **state)
{
	trace_begin();
	store(1, 1000, 0, 9);          /* 9 bytes: small */
	barrier(1, 1100);
	store(1, 1200, 64, 10);        /* 10 bytes: not small */
	barrier(1, 1300);
	store(1, 1400, 128, 5);        /* the same 5 bytes twice: small */
	store(1, 1410, 128, 5);
	barrier(1, 1500);
	store(1, 1600, 192, 5);        /* 5 + 5 other bytes: not small */
	store(1, 1610, 197, 5);
	barrier(1, 1700);
	store(1, 1800, 256 + 60, 4);   /* bytes 60..63 of one line: small */
	barrier(1, 1900);
	analyze();
	assert_int_equal(res.epochs, 5);
	assert_int_equal(res.singletons, 5);
	assert_int_equal(res.singletons_small, 3);
}

/* ---- dependencies ---- */

static void self_dependency_within_the_window_only(void **state)
{
	trace_begin();
	store(1, 500, 0, 8);
	barrier(1, 1000);              /* A: ends at 1000 */
	store(1, 30000, 0, 8);
	barrier(1, 1000 + WINDOW);     /* B: A ended exactly 50 us before */
	store(1, 60000, 64, 8);
	barrier(1, 60100);             /* C: another line */
	store(1, 90000, 0, 8);
	barrier(1, 1000 + 2 * WINDOW + 1); /* D: B ended 50 us + 1 ns ago */
	analyze();
	assert_int_equal(res.epochs, 4);
	assert_int_equal(res.self_dep, 1);
	assert_int_equal(res.cross_dep, 0);
	ta_result_free(&res);
	assert_int_equal(ta_analyze_file(tg_path,
	                 &(struct ta_opts){2 * WINDOW, 0}, &res), 0);
	assert_int_equal(res.self_dep, 2); /* a wider window: D too */
}

/* Thread 2's epoch writes a line thread 1 wrote 20 us before. Thread 2's
 * records come first in the file, as a thread's block can (pmtx_trace.h
 * invariant 1): the analysis orders them by time. */
static void cross_dependency_on_another_thread(void **state)
{
	trace_begin();
	store(2, 20000, 0, 8);
	barrier(2, 21000);             /* depends on thread 1's first */
	store(2, 22000, 4096, 8);
	barrier(2, 200000);            /* thread 1 wrote 4096 too long ago */
	store(1, 500, 0, 8);
	store(1, 600, 4096, 8);
	barrier(1, 1000);
	store(1, 30000, 64, 8);
	barrier(1, 30100);             /* no one else wrote line 1 */
	analyze();
	assert_int_equal(res.epochs, 4);
	assert_int_equal(res.cross_dep, 1);
	assert_int_equal(res.self_dep, 0);
	assert_int_equal(res.threads, 2);
	assert_int_equal(res.first_ns, 500);
	assert_int_equal(res.last_ns, 200000);
}

/* ---- flushes ---- */

static void redundant_flush_counts_lines_not_stored_since(void **state)
{
	trace_begin();
	store(1, 100, 0, 8);
	flush(1, 200, 0, 8);           /* first flush */
	flush(1, 300, 0, 8);           /* redundant */
	flush(1, 400, 0, 128);         /* line 0 redundant, line 1 first */
	store(2, 500, 8, 8);           /* another thread stores to line 0 */
	flush(1, 600, 0, 8);           /* not redundant */
	rec(PMTX_TEV_VSTORE, 1, 700, 64, 8, 0, 0);
	flush(1, 800, 64, 8);          /* a VSTORE dirtied line 1 */
	flush(2, 900, 64, 8);          /* redundant, from another thread */
	barrier(1, 1000);
	analyze();
	assert_int_equal(res.flush_recs, 6);
	assert_int_equal(res.flushed_lines, 7);
	assert_int_equal(res.redundant_lines, 3);
}

static void critical_path_and_epochs_per_tx_distribution(void **state)
{
	trace_begin();
	uint64_t t = 1000;
	flush(1, t++, 1 << 20, 64);    /* outside: on no critical path */
	barrier(1, t++);
	for (uint64_t k = 1; k <= 20; k++) {
		begin(1, t++);
		for (uint64_t j = 0; j < k; j++) {
			uint64_t off = (k * 100 + j) * 64;
			store(1, t++, off, 8);
			flush(1, t++, off, 8);
			barrier(1, t++);
		}
		commit(1, t++);
	}
	uint64_t last = t - 1;
	analyze();
	assert_int_equal(res.tx_committed, 20);
	assert_int_equal(res.epochs, 210);
	assert_int_equal(ta_dist_percentile(&res.tx_epochs, 50), 10);
	assert_int_equal(ta_dist_percentile(&res.tx_epochs, 95), 19);
	assert_int_equal(ta_dist_percentile(&res.tx_epochs, 100), 20);
	assert_int_equal(ta_dist_count(&res.tx_epochs, 3, 4), 2);
	assert_int_equal(ta_dist_count(&res.tx_epochs, 5, 8), 4);
	assert_int_equal(ta_dist_count(&res.tx_epochs, 9, 16), 8);
	assert_int_equal(ta_dist_count(&res.tx_epochs, 17, 32), 4);
	assert_int_equal(res.tx_crit_lines.sum, 210);
	assert_int_equal(ta_dist_percentile(&res.tx_crit_lines, 95), 19);
	assert_true(ta_dist_mean(&res.tx_crit_lines) == 10.5);
	assert_int_equal(res.flushed_lines, 211);
	assert_int_equal(res.first_ns, 1000);
	assert_int_equal(res.last_ns, last);
	assert_int_equal(res.self_dep, 0);
}

/* Past TA_DIST_EXACT a distribution keeps each value. */
static void distribution_is_exact_past_its_table(void **state)
{
	trace_begin();
	for (uint64_t k = 0; k < 3; k++) {
		begin(1, 10 + k * 10);
		for (uint64_t j = 0; j < 2000 + k; j++)
			store(1, 10 + k * 10, j * 64, 8);
		commit(1, 11 + k * 10);
	}
	analyze();
	assert_int_equal(res.epoch_lines.max, 2002);
	assert_int_equal(ta_dist_percentile(&res.epoch_lines, 50), 2001);
	assert_int_equal(ta_dist_count(&res.epoch_lines, 2001, 5000), 2);
}

/* A bounded line map forgets old clean lines (redundant flushes become a
 * lower bound) but keeps what dependencies need. */
static void line_map_stays_bounded(void **state)
{
	trace_begin();
	uint64_t t = 1000;
	for (uint64_t l = 0; l < 1000; l++)
		flush(1, t++, l * 64, 8);
	store(1, 10 * WINDOW, 0, 8);
	barrier(1, 10 * WINDOW + 1);
	for (uint64_t l = 0; l < 1000; l++)
		flush(1, 10 * WINDOW + 2 + l, 4096 * 64 + l * 64, 8);
	store(1, 10 * WINDOW + 5000, 0, 8);
	barrier(1, 10 * WINDOW + 5001);
	assert_int_equal(analyze_with(WINDOW, 64), 0);
	assert_true(res.pruned_lines >= 1000);
	assert_true(res.distinct_lines < 1000);
	assert_int_equal(res.self_dep, 1);
}

/* ---- bad files ---- */

/* Bytes by store kind, write amplification, barriers by kind
 * (trace_analyze.c 11). */
static void stores_and_barriers_are_counted_by_kind(void **state)
{
	trace_begin();
	begin(1, 1000);
	store_kind(1, 1010, 0, 40, PMTX_TSK_LOG);     /* a log record */
	barrier_kind(1, 1020, PMTX_TBK_ORDER);
	store_kind(1, 1030, 4096, 8, PMTX_TSK_DATA);  /* the data */
	nt_kind(1, 1040, 8192, 64, PMTX_TSK_DATA);    /* more data, NT */
	store_kind(1, 1050, 128, 8, PMTX_TSK_DESC);   /* COMMITTED */
	store_kind(1, 1060, 256, 16, PMTX_TSK_ALLOC);
	store(1, 1070, 512, 4);                       /* kind 0 */
	store_kind(1, 1080, 640, 2, 99);              /* a later kind */
	barrier_kind(1, 1090, PMTX_TBK_DURABLE);
	commit(1, 1100);
	barrier(1, 1200);                             /* kind 0, empty */
	barrier_kind(1, 1300, 7);                     /* unknown kind */
	analyze();
	assert_int_equal(res.kind_bytes[PMTX_TSK_LOG], 40);
	assert_int_equal(res.kind_bytes[PMTX_TSK_DATA], 8 + 64);
	assert_int_equal(res.kind_bytes[PMTX_TSK_DESC], 8);
	assert_int_equal(res.kind_bytes[PMTX_TSK_ALLOC], 16);
	assert_int_equal(res.kind_bytes[PMTX_TSK_OBJECT], 0);
	assert_int_equal(res.kind_bytes[PMTX_TSK_UNKNOWN], 4 + 2);
	/* Metadata 40 + 8 + 16 + 6 = 70 bytes for 72 of data. */
	uint64_t meta = 0;
	for (unsigned k = 0; k < PMTX_TSK_COUNT; k++)
		meta += k == PMTX_TSK_DATA ? 0 : res.kind_bytes[k];
	assert_int_equal(meta, 70);
	assert_int_equal(res.store_bytes + res.nt_bytes, 70 + 72);
	assert_int_equal(res.barrier_kinds[PMTX_TBK_ORDER], 1);
	assert_int_equal(res.barrier_kinds[PMTX_TBK_DURABLE], 1);
	assert_int_equal(res.barrier_kinds[PMTX_TBK_UNKNOWN], 2);
	assert_int_equal(res.barriers, 4);
}

static void bad_or_truncated_trace_is_an_error(void **state)
{
	trace_begin();
	store(1, 100, 0, 1ull << 50);     /* an impossible span */
	assert_int_equal(analyze_rc(), PMTX_E_CORRUPT);
	trace_begin();
	rec(0, 1, 100, 0, 0, 0, 0);       /* type 0 */
	assert_int_equal(analyze_rc(), PMTX_E_CORRUPT);
	trace_expect_unreadable(analyze_rc);
	memset(&res, 0, sizeof(res));
}

/* ---- a real workload ---- */

#define NTX 20

/* A fresh region of runtime rt, traced to tg_path from now on. */
static pmtx_region *traced_region(const char **rpath, pmtx_runtime rt)
{
	pmtx_region *r = tu_create(rpath, 32u << 20, 8192, PMTX_PDOM1,
	                           PMTX_BACKEND_EMULATED, rt);
	trace_path();
	assert_int_equal(pmtx_trace_start(tg_path, 0), 0);
	return r;
}

/* Stop tracing, drop the region, and analyze the trace. */
static void analyze_traced(pmtx_region *r, const char *rpath,
                           uint64_t window_ns)
{
	assert_int_equal(pmtx_trace_stop(), 0);
	tu_close_and_remove(r, rpath);
	struct ta_opts o = {window_ns, 0};
	assert_int_equal(ta_analyze_file(tg_path, &o, &res), 0);
}

/* NTX redo transactions, each writing three lines of the root; the
 * library's counters for each transaction, between begin and commit. */
static void redo_workload(pmtx_region *r, pmtx_counters *per_tx,
                          pmtx_counters *all)
{
	uint8_t *root = pmtx_root(r, NULL);
	pmtx_counters_reset();
	for (int i = 0; i < NTX; i++) {
		pmtx_tx *tx;
		uint64_t v = (uint64_t)i;
		tu_count_start();
		assert_int_equal(pmtx_begin(r, PMTX_RT_REDO, &tx), 0);
		for (int k = 0; k < 3; k++)
			assert_int_equal(pmtx_write(tx, root + 64 * (k + 3 * i),
			                            &v, sizeof(v)), 0);
		assert_int_equal(pmtx_commit(tx), 0);
		per_tx[i] = tu_count();
	}
	pmtx_counters_get(all);
}

static void real_redo_trace_matches_the_counters(void **state)
{
	const char *rpath;
	pmtx_region *r = traced_region(&rpath, PMTX_RT_REDO);
	pmtx_counters per_tx[NTX], all;
	redo_workload(r, per_tx, &all);
	analyze_traced(r, rpath, WINDOW);
	assert_int_equal(res.tx_committed, NTX);
	assert_int_equal(res.tx_aborted + res.tx_unfinished, 0);
	uint64_t bar = 0, fl = 0;
	for (int i = 0; i < NTX; i++)
		bar += per_tx[i].barriers, fl += per_tx[i].flushes;
	/* Each barrier of a redo transaction follows stores (the log, then
	 * the data), so each closes an epoch; then the descriptor's idle mark
	 * is stored after the last barrier, left for the next transaction's
	 * first barrier to order: one more epoch, closed by the commit. */
	assert_int_equal(bar, 2 * NTX);
	assert_int_equal(res.tx_epochs.sum, bar + NTX);
	assert_int_equal(ta_dist_percentile(&res.tx_epochs, 50), 3);
	assert_int_equal(res.tx_crit_lines.sum, fl);
	assert_int_equal(res.barriers, all.barriers);
	assert_int_equal(res.flushed_lines, all.flushes);
	assert_int_equal(res.nt_bytes, all.nt_bytes);
	assert_int_equal(res.cross_dep, 0);
	assert_true(res.epochs >= res.tx_epochs.sum);
	assert_true(res.store_bytes >= NTX * 3 * 8);
	/* The data is what the transactions wrote, nothing else; the rest
	 * is the library's own (every kind known); every commit's barrier
	 * makes durable and the apply's orders. */
	assert_int_equal(res.kind_bytes[PMTX_TSK_DATA], NTX * 3 * 8);
	assert_int_equal(res.kind_bytes[PMTX_TSK_UNKNOWN], 0);
	assert_true(res.kind_bytes[PMTX_TSK_LOG] > 0);
	assert_int_equal(res.barrier_kinds[PMTX_TBK_ORDER], NTX);
	assert_int_equal(res.barrier_kinds[PMTX_TBK_DURABLE], NTX);
}

struct worker {
	pmtx_region *r;
	int id;
	pmtx_counters c;
};

/* NTX undo transactions, each writing a line shared by the threads and a
 * line of the thread's own. */
static void *undo_worker(void *arg)
{
	struct worker *w = arg;
	uint8_t *root = pmtx_root(w->r, NULL);
	pmtx_counters_reset();
	for (int i = 0; i < NTX; i++) {
		pmtx_tx *tx;
		uint64_t v = (uint64_t)i;
		assert_int_equal(pmtx_begin(w->r, PMTX_RT_UNDO, &tx), 0);
		assert_int_equal(pmtx_write(tx, root, &v, sizeof(v)), 0);
		assert_int_equal(pmtx_write(tx, root + 64 * (w->id + 1), &v,
		                            sizeof(v)), 0);
		assert_int_equal(pmtx_commit(tx), 0);
	}
	pmtx_counters_get(&w->c);
	return NULL;
}

/* Two threads: their blocks interleave out of time order in the file,
 * and the sorted analysis still adds up to both threads' counters. */
static void real_two_thread_trace_adds_up(void **state)
{
	const char *rpath;
	pmtx_region *r = traced_region(&rpath, PMTX_RT_UNDO);
	struct worker w[2] = {{r, 0, {0}}, {r, 1, {0}}};
	tu_run_threads(undo_worker, w, sizeof(*w), 2);
	/* An unbounded window: both threads write the root's first line,
	 * and each transaction writes its descriptor in two epochs. */
	analyze_traced(r, rpath, UINT64_MAX);
	assert_int_equal(res.threads, 2);
	assert_int_equal(res.tx_committed, 2 * NTX);
	assert_int_equal(res.barriers, w[0].c.barriers + w[1].c.barriers);
	assert_int_equal(res.flushed_lines, w[0].c.flushes + w[1].c.flushes);
	assert_int_equal(res.epochs_outside, 0);
	assert_true(res.self_dep <= res.epochs && res.cross_dep <= res.epochs);
	assert_true(res.self_dep > 0 && res.cross_dep > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(epoch_closes_at_barrier_and_at_commit,
		                          teardown),
		cmocka_unit_test_teardown(nested_transactions_are_flattened,
		                          teardown),
		cmocka_unit_test_teardown(
			stores_outside_transactions_are_epochs_apart, teardown),
		cmocka_unit_test_teardown(
			spanning_store_counts_each_line_and_nt_whole_lines,
			teardown),
		cmocka_unit_test_teardown(
			singleton_is_small_below_ten_distinct_bytes, teardown),
		cmocka_unit_test_teardown(
			self_dependency_within_the_window_only, teardown),
		cmocka_unit_test_teardown(cross_dependency_on_another_thread,
		                          teardown),
		cmocka_unit_test_teardown(
			redundant_flush_counts_lines_not_stored_since,
			teardown),
		cmocka_unit_test_teardown(
			critical_path_and_epochs_per_tx_distribution, teardown),
		cmocka_unit_test_teardown(distribution_is_exact_past_its_table,
		                          teardown),
		cmocka_unit_test_teardown(line_map_stays_bounded, teardown),
		cmocka_unit_test_teardown(
			stores_and_barriers_are_counted_by_kind, teardown),
		cmocka_unit_test_teardown(bad_or_truncated_trace_is_an_error,
		                          teardown),
		cmocka_unit_test_teardown(real_redo_trace_matches_the_counters,
		                          teardown),
		cmocka_unit_test_teardown(real_two_thread_trace_adds_up,
		                          teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
