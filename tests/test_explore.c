/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_explore.c - the public explorer API (pmtx_explore.h) through its
 * config-struct entry point, on a small workload of its own: two words
 * that every operation sets to the same value in one transaction.
 *
 * Each check the explorer makes must be able to fail for a program
 * outside the library, so each variant of the workload breaks one thing
 * (the model, the transaction, the walk, the observation) and must be
 * reported; the correct one must not. Malformed workloads and
 * configurations are refused before anything runs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h> /* cmocka needs it; pmtx itself never uses setjmp */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <pmtx.h>
#include <pmtx_explore.h>

enum variant {
	CORRECT,
	LYING_MODEL,    /* the model is off by one operation */
	NAKED_UPDATE,   /* word a is stored outside the transaction */
	LEAK,           /* a block is allocated and never linked */
	EMPTY_OBSERVE,  /* observe returns 0 words */
	FAILING_RUN,    /* run returns a status */
};

struct pair_root {
	uint64_t a[PMTX_EXPLORE_MAX_THREADS], b[PMTX_EXPLORE_MAX_THREADS];
	pmtx_off blk[PMTX_EXPLORE_MAX_THREADS];
};

static enum variant variant_of(const pmtx_explore_env *e)
{
	return (enum variant)(uintptr_t)e->workload->arg;
}

static int pair_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	(void)e, (void)r;
	return 0;
}

static int pair_tx(const pmtx_explore_env *e, pmtx_region *r, pmtx_tx *tx,
                   unsigned t, uint64_t v)
{
	struct pair_root *root = pmtx_root(r, NULL);
	pmtx_off off;
	int rc = 0;
	if (variant_of(e) == NAKED_UPDATE) {
		root->a[t] = v;
		rc = pmtx_persist(r, &root->a[t], sizeof(uint64_t));
	} else {
		rc = PMTX_SET(tx, root->a[t], v);
	}
	if (!rc)
		rc = PMTX_SET(tx, root->b[t], v);
	if (!rc && variant_of(e) == LEAK && !root->blk[t])
		rc = pmtx_alloc(tx, 64, &off);
	return rc;
}

static int pair_run(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
                    uint64_t i)
{
	pmtx_tx *tx;
	if (variant_of(e) == FAILING_RUN)
		return PMTX_E_IO;
	int rc = pmtx_begin(r, e->runtime, &tx);
	if (!rc)
		rc = pair_tx(e, r, tx, t, i + 1);
	if (rc) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}

static size_t pair_observe(const pmtx_explore_env *e, pmtx_region *r,
                           unsigned t, uint64_t *out, size_t max, char *msg,
                           size_t len)
{
	const struct pair_root *root = pmtx_root(r, NULL);
	(void)msg, (void)len;
	if (variant_of(e) == EMPTY_OBSERVE || max < 2)
		return 0;
	out[0] = root->a[t];
	out[1] = root->b[t];
	return 2;
}

static size_t pair_model(const pmtx_explore_env *e, unsigned t, uint64_t k,
                         uint64_t *out, size_t max)
{
	(void)t;
	if (max < 2)
		return 0;
	out[0] = out[1] = k + (variant_of(e) == LYING_MODEL);
	return 2;
}

#define PAIR(v, ...)                                                          \
	{                                                                     \
		.name = "pair", .help = "two words set together",             \
		.root_size = sizeof(struct pair_root), .max_ntx = 100,        \
		.arg = (void *)(uintptr_t)(v), .setup = pair_setup,           \
		.run = pair_run, .observe = pair_observe,                     \
		.model = pair_model, __VA_ARGS__                              \
	}

static const pmtx_explore_workload correct = PAIR(CORRECT);
static const pmtx_explore_workload lying = PAIR(LYING_MODEL);
static const pmtx_explore_workload naked = PAIR(NAKED_UPDATE);
static const pmtx_explore_workload leak = PAIR(LEAK);
static const pmtx_explore_workload empty = PAIR(EMPTY_OBSERVE);
static const pmtx_explore_workload failing = PAIR(FAILING_RUN);

static void config(pmtx_explore_config *c, const pmtx_explore_workload *w,
                   pmtx_runtime rt)
{
	pmtx_explore_config_init(c);
	c->workload = w;
	c->runtime = rt;
	c->ntx = 4;
	c->images = 8;
	c->quiet = 1;
	c->prog = "test_explore";
}

/* Explore w under rt; the exploration itself must run. */
static pmtx_explore_result explore(const pmtx_explore_workload *w,
                                   pmtx_runtime rt)
{
	pmtx_explore_config c;
	pmtx_explore_result res;
	config(&c, w, rt);
	assert_int_equal(pmtx_explore_run(&c, &res), 0);
	return res;
}

static void correct_workload_has_no_violation_in_any_runtime_or_domain(
	void **s)
{
	static const pmtx_runtime rts[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
	                                   PMTX_RT_REDO_ASYNC};
	pmtx_explore_config c;
	pmtx_explore_result res;
	for (int d = PMTX_PDOM0; d <= PMTX_PDOM2; d++)
		for (size_t i = 0; i < sizeof(rts) / sizeof(*rts); i++) {
			config(&c, &correct, rts[i]);
			c.domain = (pmtx_domain)d;
			assert_int_equal(pmtx_explore_run(&c, &res), 0);
			assert_int_equal(res.violations, 0);
			assert_true(res.points > 1);
			assert_int_equal(res.points, res.crash_points);
			assert_true(res.images >= res.points);
			assert_true(res.recovery_images > 0);
		}
}

static void lying_model_is_reported_with_a_reproducer(void **s)
{
	pmtx_explore_result res = explore(&lying, PMTX_RT_UNDO);
	assert_true(res.violations > 0);
	assert_non_null(strstr(res.first, "not atomic"));
	assert_non_null(strstr(res.first, "reproduce: test_explore "
	                                  "--workload pair --runtime undo "));
}

static void update_outside_the_transaction_is_reported(void **s)
{
	assert_true(explore(&naked, PMTX_RT_UNDO).violations > 0);
	assert_true(explore(&naked, PMTX_RT_REDO).violations > 0);
}

static void unreachable_block_is_reported_as_a_leak(void **s)
{
	pmtx_explore_result res = explore(&leak, PMTX_RT_REDO);
	assert_true(res.violations > 0);
	assert_non_null(strstr(res.first, "leak: block"));
}

static void empty_observation_is_a_violation(void **s)
{
	pmtx_explore_result res = explore(&empty, PMTX_RT_UNDO);
	assert_true(res.violations > 0);
	assert_non_null(strstr(res.first, "does not fit"));
}

static void failing_workload_is_an_explorer_failure(void **s)
{
	pmtx_explore_config c;
	pmtx_explore_result res;
	config(&c, &failing, PMTX_RT_UNDO);
	assert_int_equal(pmtx_explore_run(&c, &res), PMTX_E_IO);
}

/* The reproducer's numbers replay exactly one image, which fails again;
 * stop_after stops the exploration at the first violation. */
static void replay_checks_one_image_and_fails_again(void **s)
{
	pmtx_explore_config c;
	pmtx_explore_result res;
	config(&c, &lying, PMTX_RT_REDO);
	c.stop_after = 1;
	assert_int_equal(pmtx_explore_run(&c, &res), 0);
	assert_int_equal(res.violations, 1);
	const char *p = strstr(res.first, "--point ");
	assert_non_null(p);
	unsigned long long point, image;
	assert_int_equal(sscanf(p, "--point %llu --image %llu", &point,
	                        &image), 2);
	config(&c, &lying, PMTX_RT_REDO);
	c.replay_point = point;
	c.replay_image = image;
	assert_int_equal(pmtx_explore_run(&c, &res), 0);
	assert_int_equal(res.points, 1);
	assert_int_equal(res.images, 1);
	assert_int_equal(res.violations, 1);
}

static void threads_sizes_and_layout_are_the_workloads(void **s)
{
	static const pmtx_explore_workload w = PAIR(
		CORRECT, .nthreads = 3, .region_size = 4u << 20,
		.layout = "pair-test", .runtimes = PMTX_EXPLORE_UNDO);
	pmtx_explore_result res = explore(&w, PMTX_RT_UNDO);
	assert_int_equal(res.violations, 0);
	assert_true(res.points > 3 * 4);
}

static void malformed_workloads_are_refused(void **s)
{
	static const pmtx_explore_workload no_run = {
		.name = "no-run", .setup = pair_setup,
		.observe = pair_observe, .model = pair_model};
	static const pmtx_explore_workload too_many = PAIR(
		CORRECT, .nthreads = PMTX_EXPLORE_MAX_THREADS + 1);
	static const pmtx_explore_workload shrinking = PAIR(
		CORRECT, .region_size = 2u << 20, .max_size = 1u << 20);
	const pmtx_explore_workload *bad[] = {&no_run, &too_many, &shrinking,
	                                      NULL};
	pmtx_explore_config c;
	pmtx_explore_result res;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		config(&c, bad[i], PMTX_RT_UNDO);
		assert_int_equal(pmtx_explore_run(&c, &res), PMTX_E_INVAL);
		assert_non_null(strstr(pmtx_errmsg(), "explore: "));
	}
	config(&c, &correct, PMTX_RT_UNDO);
	c.ntx = 101; /* above max_ntx */
	assert_int_equal(pmtx_explore_run(&c, &res), PMTX_E_INVAL);
	c.ntx = 0;
	assert_int_equal(pmtx_explore_run(&c, &res), PMTX_E_INVAL);
}

static void runtime_outside_the_mask_is_unsupported(void **s)
{
	pmtx_explore_config c;
	pmtx_explore_result res;
	assert_true(pmtx_explore_applies(&correct, PMTX_RT_REDO_ASYNC));
	assert_false(pmtx_explore_applies(&correct, PMTX_RT_COW));
	assert_false(pmtx_explore_applies(&correct, PMTX_EXPLORE_RT_CLTX));
	config(&c, &correct, PMTX_RT_COW);
	assert_int_equal(pmtx_explore_run(&c, &res), PMTX_E_UNSUPPORTED);
}

/* PMTX_EXPLORE_TWIN: a twin region, twice the workload's region_size,
 * made by the explorer; setup and run see only twin transactions. */
static int twin_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	pmtx_tx *tx;
	struct pair_root *root = pmtx_root(r, NULL);
	(void)e;
	if (pmtx_region_runtime(r) != PMTX_RT_TWIN)
		return PMTX_E_UNSUPPORTED;
	if (pmtx_begin(r, PMTX_RT_UNDO, &tx) != PMTX_E_UNSUPPORTED)
		return PMTX_E_INVAL; /* a twin region runs twin only */
	pmtx_off off;
	int rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx);
	if (!rc)
		rc = pmtx_alloc(tx, 600u << 10, &off);
	if (!rc)
		rc = PMTX_SET(tx, root->blk[0], off);
	if (rc) {
		pmtx_abort(tx);
		return rc;
	}
	if (pmtx_tx_runtime(tx) != PMTX_RT_TWIN)
		rc = PMTX_E_INVAL;
	int crc = pmtx_commit(tx);
	return rc ? rc : crc;
}

static int twin_walk(const pmtx_explore_env *e, pmtx_region *r,
                     pmtx_explore_block_fn fn, void *arg)
{
	const struct pair_root *root = pmtx_root(r, NULL);
	(void)e;
	return root->blk[0] && fn(root->blk[0], arg);
}

static void twin_runs_in_a_twin_region_of_twice_the_size(void **s)
{
	/* 600 KiB fits the heap of a 1 MiB region, and of a 2 MiB twin
	 * region, not of a 1 MiB twin region */
	static const pmtx_explore_workload w = {
		.name = "pair-twin", .root_size = sizeof(struct pair_root),
		.runtimes = PMTX_EXPLORE_TWIN, .max_ntx = 100,
		.arg = (void *)(uintptr_t)CORRECT, .setup = twin_setup,
		.run = pair_run, .observe = pair_observe, .model = pair_model,
		.walk = twin_walk};
	pmtx_explore_config c;
	pmtx_explore_result res;
	assert_true(pmtx_explore_applies(&w, PMTX_RT_TWIN));
	assert_false(pmtx_explore_applies(&w, PMTX_RT_UNDO));
	assert_false(pmtx_explore_applies(&correct, PMTX_RT_TWIN));
	for (int d = PMTX_PDOM0; d <= PMTX_PDOM2; d++) {
		config(&c, &w, PMTX_RT_TWIN);
		c.domain = (pmtx_domain)d;
		assert_int_equal(pmtx_explore_run(&c, &res), 0);
		if (res.violations)
			print_message("%s\n", res.first);
		assert_int_equal(res.violations, 0);
		assert_true(res.points > 1);
		assert_true(res.recovery_images > 0);
	}
	config(&c, &correct, PMTX_RT_TWIN);
	assert_int_equal(pmtx_explore_run(&c, &res), PMTX_E_UNSUPPORTED);
}

static void twin_region_cannot_grow(void **s)
{
	static const pmtx_explore_workload w = PAIR(
		CORRECT, .runtimes = PMTX_EXPLORE_TWIN | PMTX_EXPLORE_UNDO,
		.max_size = 4u << 20);
	pmtx_explore_config c;
	pmtx_explore_result res;
	config(&c, &w, PMTX_RT_TWIN);
	assert_int_equal(pmtx_explore_run(&c, &res), PMTX_E_INVAL);
	assert_non_null(strstr(pmtx_errmsg(), "twin"));
	config(&c, &w, PMTX_RT_UNDO);
	assert_int_equal(pmtx_explore_run(&c, &res), 0);
	assert_int_equal(res.violations, 0);
}

static void runtime_names_round_trip(void **s)
{
	static const char *const names[] = {"undo", "redo", "redo-async",
	                                    "cow", "cltx", "auto", "twin"};
	pmtx_runtime rt;
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		assert_int_equal(pmtx_explore_runtime_parse(names[i], &rt), 0);
		assert_string_equal(pmtx_explore_runtime_name(rt), names[i]);
	}
	assert_int_equal(pmtx_explore_runtime_parse("cltx", &rt), 0);
	assert_int_equal(rt, PMTX_EXPLORE_RT_CLTX);
	assert_int_equal(pmtx_explore_runtime_parse("default", &rt),
	                 PMTX_E_INVAL);
	assert_string_equal(pmtx_explore_runtime_name(PMTX_RT_DEFAULT), "?");
}

#define T(f) cmocka_unit_test(f)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(correct_workload_has_no_violation_in_any_runtime_or_domain),
		T(lying_model_is_reported_with_a_reproducer),
		T(update_outside_the_transaction_is_reported),
		T(unreachable_block_is_reported_as_a_leak),
		T(empty_observation_is_a_violation),
		T(failing_workload_is_an_explorer_failure),
		T(replay_checks_one_image_and_fails_again),
		T(threads_sizes_and_layout_are_the_workloads),
		T(malformed_workloads_are_refused),
		T(runtime_outside_the_mask_is_unsupported),
		T(twin_runs_in_a_twin_region_of_twice_the_size),
		T(twin_region_cannot_grow),
		T(runtime_names_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
