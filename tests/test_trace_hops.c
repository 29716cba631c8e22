/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_trace_hops.c - the timing model of `pmtx trace hops`
 * (tools/trace_hops.c) on traces written record by record, each run time
 * computed by hand next to its assertion. Unless a test says otherwise
 * the parameters are the defaults: 2 GHz, PM 160 cycles = 80 ns, PWQ 40
 * cycles = 20 ns, 32-entry buffers launched at 16, here_* and trace_ns 0.
 * Times in the comments are ns from the trace's first record.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "trace_hops.h"
#include "tracegen.h"

static struct th_opts opts;
static struct th_result res;

static int setup(void **state)
{
	th_opts_default(&opts);
	memset(&res, 0, sizeof(res));
	return 0;
}

static int teardown(void **state)
{
	trace_cleanup();
	return 0;
}

/* Close the trace (if open) and model it with opts. */
static int model_rc(void)
{
	if (tg_file)
		assert_int_equal(trace_end(), 0);
	return th_model_file(tg_path, &opts, &res);
}

static void model(void)
{
	assert_int_equal(model_rc(), 0);
}

static void assert_time(unsigned m, double want)
{
	if (res.time_ns[m] != want)
		fail_msg("%s: %.3f ns, not %.3f", th_machine_name(m),
		         res.time_ns[m], want);
}

/* HOPS variant v (0 nvm, 1 pwq): its run time and its stalls. */
static void assert_hops(unsigned v, double time, double dfence, double full)
{
	assert_time(v ? TH_HOPS_PWQ : TH_HOPS_NVM, time);
	if (res.hops[v].dfence_stall_ns != dfence ||
	    res.hops[v].full_stall_ns != full)
		fail_msg("hops %u: stalls dfence %.3f full %.3f, not %.3f %.3f",
		         v, res.hops[v].dfence_stall_ns,
		         res.hops[v].full_stall_ns, dfence, full);
}

/* An 8-byte store at off at time t, then a barrier of the given kind at
 * time tb: no flush (HOPS does not need one). */
static void fenced_store(uint32_t tid, uint64_t t, uint64_t tb, uint64_t off,
                         uint32_t kind)
{
	store(tid, t, off, 8);
	barrier_kind(tid, tb, kind);
}

/* One line's epoch as x86 needs it: an 8-byte store at off at time t,
 * its flush at t + dt, then a barrier of the given kind at t + 2 dt. */
static void fenced_line(uint32_t tid, uint64_t t, uint64_t dt, uint64_t off,
                        uint32_t kind)
{
	store(tid, t, off, 8);
	flush(tid, t + dt, off, 8);
	barrier_kind(tid, t + 2 * dt, kind);
}

/* ---- single thread: exact ---- */

/* Seed 002, section 6.3: mov A, 10; ofence; mov A, 20; dfence. Both
 * versions of A are buffered; the dfence drains them in order, one
 * latency each. The x86 version flushes A before each sfence. */
static void seed_example_drains_two_versions_in_order(void **state)
{
	trace_begin();
	fenced_line(1, 1000, 0, 0, PMTX_TBK_ORDER);
	fenced_line(1, 1000, 0, 0, PMTX_TBK_DURABLE);
	model();
	/* dfence at 0: epoch 1 issued at 0, done 80; epoch 2 issued at 80,
	 * done 160: the thread waits 2 x 80. PWQ: 2 x 20. */
	assert_hops(0, 160, 160, 0);
	assert_hops(1, 40, 40, 0);
	assert_int_equal(res.hops[0].epochs_drained, 2);
	assert_int_equal(res.hops[0].splits, 0);
	/* x86: each sfence waits for its clwb: 80 + 80; PWQ 20 + 20. */
	assert_time(TH_X86_NVM, 160);
	assert_time(TH_X86_PWQ, 40);
	assert_time(TH_IDEAL, 0);
	assert_int_equal(res.barriers[0], 1);
	assert_int_equal(res.barriers[1], 1);
	assert_int_equal(res.barriers[2], 0);
	assert_int_equal(res.stores, 2);
	assert_int_equal(res.pm_lines_stored, 2);
	assert_int_equal(res.records, 6);
	assert_int_equal(res.threads, 1);
}

/* One epoch: HOPS and x86 both wait one latency at the commit. */
static void single_epoch_transaction_waits_one_latency(void **state)
{
	trace_begin();
	begin(1, 1000);
	store_kind(1, 1100, 0, 8, PMTX_TSK_LOG);    /* at 100 */
	store_kind(1, 1200, 64, 8, PMTX_TSK_DATA);  /* at 200 */
	store_kind(1, 1250, 0, 8, PMTX_TSK_LOG);    /* at 250: coalesces */
	store_kind(1, 1300, 128, 8, PMTX_TSK_DESC); /* at 300 */
	flush(1, 1300, 0, 192);        /* 3 lines at 300 */
	barrier_kind(1, 1300, PMTX_TBK_DURABLE);
	commit(1, 1400);
	model();
	/* Work 400. x86: durable at 300 + 80 = 380, commit at 480; PWQ:
	 * 320, 420. HOPS: the dfence at 300 drains the one epoch of 3
	 * entries, done at 380: the same 480 and 420. */
	assert_time(TH_IDEAL, 400);
	assert_time(TH_X86_HERE, 400);
	assert_time(TH_X86_NVM, 480);
	assert_time(TH_X86_PWQ, 420);
	assert_hops(0, 480, 80, 0);
	assert_time(TH_HOPS_PWQ, 420);
	assert_int_equal(res.hops[0].epochs_drained, 1);
	assert_int_equal(res.stores, 4);
	assert_int_equal(res.pm_lines_stored, 4);
}

/* Two epochs 1000 ns apart, each flushed and fenced: an ofence costs
 * nothing, a dfence waits like x86's sfence. */
static void write_two_epochs(uint32_t kind)
{
	trace_begin();
	fenced_line(1, 0, 0, 0, kind);
	fenced_line(1, 1000, 0, 64, kind);
}

static void ofence_is_free_and_dfence_waits(void **state)
{
	write_two_epochs(PMTX_TBK_ORDER);
	model();
	/* x86: 80 at the first sfence, work 1000, 80 at the second: 1160;
	 * PWQ 20 + 1000 + 20. HOPS: the ofences cost nothing and 2 entries
	 * stay under the launch threshold: work only, nothing drained. */
	assert_time(TH_X86_NVM, 1160);
	assert_time(TH_X86_PWQ, 1040);
	assert_hops(0, 1000, 0, 0);
	assert_time(TH_HOPS_PWQ, 1000);
	assert_int_equal(res.hops[0].epochs_drained, 0);
	assert_int_equal(res.barriers[0], 2);
	assert_true(res.time_ns[TH_HOPS_NVM] / res.time_ns[TH_X86_NVM] <
	            0.87); /* 1000 / 1160 = 0.862 */

	write_two_epochs(PMTX_TBK_DURABLE);
	memset(&res, 0, sizeof(res));
	model();
	/* dfence at 0 waits 80; work to 1080; dfence waits to 1160. */
	assert_hops(0, 1160, 160, 0);
	assert_hops(1, 1040, 40, 0);
	assert_int_equal(res.hops[0].epochs_drained, 2);
	assert_int_equal(res.barriers[1], 2);
}

/* x86: k lines flushed together are durable together (pipelined); work
 * between the clwb and the sfence hides part of the latency; an NT store
 * is written back at once; a barrier with nothing in flight is free. */
static void x86_barrier_waits_for_pipelined_write_backs(void **state)
{
	trace_begin();
	store(1, 0, 0, 256);           /* 4 lines */
	flush(1, 0, 0, 256);           /* durable at 80 (PWQ 20) */
	barrier_kind(1, 30, PMTX_TBK_DURABLE);
	nt_kind(1, 30, 1024, 128, PMTX_TSK_DATA); /* 2 lines */
	barrier_kind(1, 30, PMTX_TBK_ORDER);
	barrier_kind(1, 30, PMTX_TBK_ORDER);
	model();
	/* nvm: the sfence at 30 waits to 80 (4 lines: one latency, not 4);
	 * the NT lines issued at 80 are durable at 160; the last sfence has
	 * nothing to wait for: 160. PWQ: the sfence at 30 finds them durable
	 * at 20; NT durable at 50: 50. */
	assert_time(TH_X86_NVM, 160);
	assert_time(TH_X86_PWQ, 50);
	assert_time(TH_IDEAL, 30);
	/* HOPS: the dfence at 30 drains the 4 entries: 110; the NT lines go
	 * to the next epoch, closed by the ofence; the last closes nothing.
	 * PWQ: 30 + 20. */
	assert_time(TH_HOPS_NVM, 110);
	assert_time(TH_HOPS_PWQ, 50);
	assert_int_equal(res.stores, 2);
	assert_int_equal(res.pm_lines_stored, 6);
	assert_int_equal(res.barriers[0], 2);
	assert_int_equal(res.barriers[1], 1);
}

/* A 4-entry buffer filled by one epoch: the open epoch is split so that
 * it can drain. A store to a line of the open epoch takes no entry. */
static void full_buffer_splits_the_open_epoch(void **state)
{
	opts.pb_entries = 4;
	for (int full = 0; full < 2; full++) {
		trace_begin();
		store(1, 0, 0, 8);     /* entry 1 */
		store(1, 5, 0, 8);     /* coalesces */
		store(1, 10, 64, 8);   /* entry 2 */
		store(1, 20, 128, 8);  /* entry 3 */
		store(1, 30, 192, 8);  /* entry 4: full */
		if (!full) {
			model();
			/* 4 entries fit: no stall, work only. Without
			 * coalescing the store at 30 would wait to 110. */
			assert_hops(0, 30, 0, 0);
			continue;
		}
		store(1, 40, 256, 8);  /* no room */
		store(1, 50, 320, 8);
		barrier_kind(1, 50, PMTX_TBK_DURABLE);
		model();
	}
	/* nvm: at 40 the only epoch (4 entries) is split and issued, done
	 * at 120: a full stall of 80; line 4 goes to the new epoch; line 5
	 * at 130; the dfence at 130 drains it: 210. PWQ: stall to 60, line
	 * 5 at 70, dfence done at 90. */
	assert_hops(0, 210, 80, 80);
	assert_hops(1, 90, 20, 20);
	assert_int_equal(res.hops[0].splits, 1);
	assert_int_equal(res.hops[1].splits, 1);
	assert_int_equal(res.hops[0].epochs_drained, 2);
	assert_time(TH_IDEAL, 50);
}

/* A full buffer with a closed epoch waits for that one, no split. */
static void full_buffer_drains_the_oldest_epoch(void **state)
{
	opts.pb_entries = 4;
	trace_begin();
	store(1, 0, 0, 8);
	store(1, 0, 64, 8);
	barrier_kind(1, 0, PMTX_TBK_ORDER);  /* epoch 0: 2 entries */
	store(1, 10, 128, 8);
	store(1, 20, 192, 8);                /* 4 entries */
	store(1, 30, 256, 8);                /* full */
	store(1, 40, 320, 8);
	model();
	/* nvm: at 30 epoch 0 is issued, done at 110 (stall 80); then 3
	 * entries, and the last store at 120 makes 4: no stall. PWQ: 50,
	 * then 60. */
	assert_hops(0, 120, 0, 80);
	assert_time(TH_HOPS_PWQ, 60);
	assert_int_equal(res.hops[0].splits, 0);
	assert_int_equal(res.hops[0].epochs_drained, 1);
}

/* At pb_launch entries the buffer drains in the background, so a later
 * dfence finds the older epoch done. */
static void launch_threshold_drains_in_the_background(void **state)
{
	opts.pb_launch = 2;
	trace_begin();
	fenced_store(1, 0, 0, 0, PMTX_TBK_ORDER);
	fenced_store(1, 0, 200, 64, PMTX_TBK_DURABLE); /* 2 entries: launch */
	model();
	/* Epoch 0 issued at 0, done at 80; the dfence at 200 drains epoch
	 * 1 alone: 280. */
	assert_hops(0, 280, 80, 0);
	assert_int_equal(res.hops[0].epochs_drained, 2);

	opts.pb_launch = 16;
	model();
	/* Below the threshold nothing drains before the dfence at 200: two
	 * epochs in order, 200 + 2 x 80. */
	assert_hops(0, 360, 160, 0);
}

/* ---- threads ---- */

/* Thread 2 stores line 0, which thread 1 wrote in an epoch not yet
 * drained: thread 2's epoch drains only after thread 1's. Thread 2's
 * records come first in the file (pmtx_trace.h invariant 1). */
static void cross_thread_dependency_orders_the_drain(void **state)
{
	trace_begin();
	fenced_store(2, 10, 20, 0, PMTX_TBK_DURABLE);
	store(1, 0, 0, 8);
	model();
	/* At 10 thread 1's open epoch is split (it was its current one) and
	 * thread 2's epoch depends on it. The dfence at 20 forces thread 1's
	 * epoch: issued at 20, done 100; thread 2's then 100 to 180. Thread
	 * 1 ends at 0, thread 2 at 180: 180. PWQ: 40, then 60. */
	assert_int_equal(res.threads, 2);
	assert_hops(0, 180, 160, 0);
	assert_hops(1, 60, 40, 0);
	assert_int_equal(res.hops[0].splits, 1);
	/* Thread 1's epoch completes after its thread's end: not counted. */
	assert_int_equal(res.hops[0].epochs_drained, 1);
	assert_time(TH_X86_NVM, 20);
	assert_time(TH_IDEAL, 20);

	/* The control: another line, no dependency: 20 + 80, 20 + 20. */
	trace_begin();
	fenced_store(2, 10, 20, 64, PMTX_TBK_DURABLE);
	store(1, 0, 0, 8);
	model();
	assert_time(TH_HOPS_NVM, 100);
	assert_time(TH_HOPS_PWQ, 40);
	assert_int_equal(res.hops[0].splits, 0);

	/* Thread 1's epoch drained before thread 2's store: none either.
	 * Thread 1: dfence at 0, done 80. Thread 2 at 100: line 0's writer
	 * is drained; its dfence at 110 waits to 190. */
	trace_begin();
	fenced_store(1, 0, 0, 0, PMTX_TBK_DURABLE);
	fenced_store(2, 100, 110, 0, PMTX_TBK_DURABLE);
	model();
	assert_hops(0, 190, 160, 0);
	assert_int_equal(res.hops[0].splits, 0);

	/* The same, thread 2 storing at 50, before thread 1's epoch is done
	 * (80) by thread 2's clock: a dependency on thread 1's last closed
	 * epoch (its open one is empty: no split). Thread 2's dfence at 60
	 * issues at 80: 160 (140 without the dependency). */
	trace_begin();
	fenced_store(1, 0, 0, 0, PMTX_TBK_DURABLE);
	fenced_store(2, 50, 60, 0, PMTX_TBK_DURABLE);
	model();
	assert_hops(0, 160, 80 + 100, 0);
	assert_int_equal(res.hops[0].splits, 0);
}

/* Thread clocks drift apart by what their gaps lost to tracing (2): a
 * dependency compares the two threads' times at the same trace instant
 * (invariant 17), not their raw clocks. trace_ns 100: thread 1 (the
 * transaction) traces a record every 200 ns, thread 2 (a truncation
 * thread waking up) stores once. */
static void cross_thread_dependency_ignores_the_tracing_drift(void **state)
{
	opts.trace_ns = 100;
	trace_begin();
	begin(1, 0);
	for (uint64_t t = 200; t <= 800; t += 200)
		flush(1, t, 4096, 8);
	store(2, 1000, 0, 8);
	store(1, 1100, 0, 8);
	barrier_kind(1, 1200, PMTX_TBK_DURABLE);
	model();
	/* Thread 1's clock: 100, 200, 300, 400 at the flushes (gaps of 200
	 * minus 100), 400 + 300 - 100 = 600 at the store, 600 + 100 - 100 =
	 * 600 at the dfence: it has lost 1200 - 600 = 600 ns to tracing.
	 * Thread 2 starts at 1000 and has lost nothing. Its open epoch is
	 * split at its clock 1000 by thread 1's store, and thread 1's epoch
	 * depends on it. The dfence at 600 forces thread 2's epoch from 600
	 * on thread 1's clock, 600 + 600 - 0 = 1200 on thread 2's: done 1280
	 * there, 680 on thread 1's; thread 1's epoch then drains to 760, a
	 * stall of 160 (two epochs in a row, as a real machine would see it
	 * at the dfence's trace time 1200: 1200 + 2 x 80). Comparing the raw
	 * clocks, the drain of thread 2's epoch would start at 1000 and the
	 * dfence end at 1160, charging HOPS 400 of the 600 ns of tracing x86
	 * does not pay. PWQ: 1220 on thread 2, 620 on thread 1, then 640.
	 * x86: the flushes' write-backs were durable long before the barrier
	 * (400 + 80): 600, as ideal. */
	assert_time(TH_IDEAL, 600);
	assert_time(TH_X86_NVM, 600);
	assert_hops(0, 760, 160, 0);
	assert_hops(1, 640, 40, 0);
	assert_int_equal(res.hops[0].splits, 1);
	/* Thread 2's epoch completes at 1280, after its clock (1000). */
	assert_int_equal(res.hops[0].epochs_drained, 1);
}

/* ---- work ---- */

/* The ideal machine runs the work only: the gaps minus tracing. */
static void ideal_is_work_only(void **state)
{
	opts.trace_ns = 5;
	trace_begin();
	fenced_line(1, 1000, 50, 0, PMTX_TBK_DURABLE);
	fenced_line(1, 1150, 50, 64, PMTX_TBK_DURABLE);
	model();
	/* 5 gaps of 50 - 5: 225. x86_here with no costs: the same. x86:
	 * flush at 45 durable at 125, sfence at 90 waits to 125; flush at
	 * 215 durable at 295, sfence at 260 waits to 295. */
	assert_time(TH_IDEAL, 225);
	assert_time(TH_X86_HERE, 225);
	assert_time(TH_X86_NVM, 295);
	/* HOPS: dfence at 90 to 170; flush at 260; dfence at 305 to 385. */
	assert_time(TH_HOPS_NVM, 385);
}

/* The here_* costs are taken out of the gaps, then x86_here puts them
 * back: it gives the traced span minus tracing when no gap floors. */
static void gaps_are_depersisted_with_here_costs(void **state)
{
	opts.here_clwb_ns = 10;
	opts.here_fence_ns = 30;
	opts.here_line_ns = 20;
	opts.trace_ns = 5;
	trace_begin();
	store(1, 0, 0, 128);           /* 2 lines */
	flush(1, 100, 0, 128);         /* 2 lines: 20 */
	barrier_kind(1, 200, PMTX_TBK_DURABLE); /* 30 + 2 x 20 = 70 */
	store(1, 400, 256, 8);
	model();
	/* Work: (100 - 5) + (100 - 5 - 20) + (200 - 5 - 70) = 295. x86_here:
	 * 295 + 20 + 70 = 385 = 400 - 3 x 5. */
	assert_time(TH_IDEAL, 295);
	assert_time(TH_X86_HERE, 385);
	/* x86 nvm: flush at 95 durable at 175, sfence at 170 waits 5, then
	 * 125 of work: 300. HOPS: the dfence at 170 drains: 250, then 375. */
	assert_time(TH_X86_NVM, 300);
	assert_time(TH_HOPS_NVM, 375);

	/* A gap shorter than what is subtracted floors at 0. */
	trace_begin();
	store(1, 0, 0, 8);
	flush(1, 3, 0, 8);             /* 3 - 5 < 0 */
	barrier_kind(1, 10, PMTX_TBK_ORDER); /* 7 - 5 - 10 < 0 */
	model();
	/* ideal 0; x86_here: the flush 10, the barrier 30 + 20: 60. */
	assert_time(TH_IDEAL, 0);
	assert_time(TH_X86_HERE, 60);

	/* A barrier with no line flushed since the previous one waits for
	 * nothing: no cost to take out of its gap, none to put back. */
	trace_begin();
	store(1, 0, 0, 8);
	barrier_kind(1, 100, PMTX_TBK_ORDER);  /* no flush before it */
	store(1, 200, 64, 8);
	model();
	/* Work: (100 - 5) + (100 - 5) = 190, and x86_here the same. */
	assert_time(TH_IDEAL, 190);
	assert_time(TH_X86_HERE, 190);
}

/* The run time is that of the threads that began transactions: a
 * background thread (redo-async's truncation) that ends later does not
 * set it. Without any BEGIN, every thread counts. */
static void run_time_is_the_transaction_threads(void **state)
{
	trace_begin();
	store(2, 5, 4096, 8);          /* starts before the transaction */
	begin(1, 10);
	store(1, 10, 0, 8);
	flush(1, 20, 0, 8);
	barrier_kind(1, 30, PMTX_TBK_DURABLE);
	commit(1, 40);
	flush(2, 500, 4096, 8);
	barrier(2, 1000);
	model();
	/* Thread 1 from 10: ideal 10 + 10 + 10 = 30 ns. x86 nvm: the flush at
	 * 20 is durable at 100; the barrier at 30 waits until 100, then 10
	 * more: 110 - 10 = 100. */
	assert_time(TH_IDEAL, 30);
	assert_time(TH_X86_NVM, 100);

	trace_begin();                 /* the same without BEGIN: thread 2 */
	store(2, 5, 4096, 8);
	store(1, 10, 0, 8);
	flush(2, 500, 4096, 8);
	barrier(2, 1000);
	model();
	/* ideal: 1000 - 5 = 995 ns; x86 nvm: the flush at 500 is durable at
	 * 580, long before the barrier at 1000: also 995. */
	assert_time(TH_IDEAL, 995);
	assert_time(TH_X86_NVM, 995);
}

/* Barriers of kind 0 (older traces) or of a kind this build does not
 * know are dfences. */
static void unknown_barrier_kind_is_a_dfence(void **state)
{
	trace_begin();
	fenced_store(1, 0, 0, 0, PMTX_TBK_UNKNOWN);
	fenced_store(1, 0, 0, 64, 9);
	model();
	/* Two dfences, one epoch each: 80 + 80. */
	assert_hops(0, 160, 160, 0);
	assert_int_equal(res.barriers[2], 2);
	assert_int_equal(res.barriers[0] + res.barriers[1], 0);
}

/* ---- bad input ---- */

static void bad_or_truncated_trace_is_an_error(void **state)
{
	trace_begin();
	nt(1, 100, 0, 1ull << 50);        /* an impossible span */
	assert_int_equal(model_rc(), PMTX_E_CORRUPT);
	trace_expect_unreadable(model_rc);
	trace_begin();
	store(1, 100, 0, 8);
	opts.ghz = 0;
	assert_int_equal(model_rc(), PMTX_E_INVAL);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(seed_example_drains_two_versions_in_order),
		T(single_epoch_transaction_waits_one_latency),
		T(ofence_is_free_and_dfence_waits),
		T(x86_barrier_waits_for_pipelined_write_backs),
		T(full_buffer_splits_the_open_epoch),
		T(full_buffer_drains_the_oldest_epoch),
		T(launch_threshold_drains_in_the_background),
		T(cross_thread_dependency_orders_the_drain),
		T(cross_thread_dependency_ignores_the_tracing_drift),
		T(ideal_is_work_only),
		T(gaps_are_depersisted_with_here_costs),
		T(run_time_is_the_transaction_threads),
		T(unknown_barrier_kind_is_a_dfence),
		T(bad_or_truncated_trace_is_an_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
