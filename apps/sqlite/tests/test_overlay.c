/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_overlay.c - unit tests of the DRAM overlay (overlay.c): lookups,
 * truncation with backward-shift deletion, the sorted chunk list, and a
 * table grown by one large commit given back by the clear after it.
 */
#include <setjmp.h> /* cmocka needs it; the project code never uses it */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "layout.h"
#include "overlay.h"

/* Add chunk c, filled with its number's low byte. */
static void put(struct overlay *ov, uint64_t c)
{
	char *buf;
	int fresh;
	assert_int_equal(ov_get(ov, c, &buf, &fresh), 0);
	assert_true(fresh);
	memset(buf, (int)(c & 0xff), PSQ_CHUNK);
}

static void check_has(const struct overlay *ov, uint64_t c)
{
	const char *buf = ov_find(ov, c);
	assert_non_null(buf);
	assert_int_equal((unsigned char)buf[0], c & 0xff);
	assert_int_equal((unsigned char)buf[PSQ_CHUNK - 1], c & 0xff);
}

static void test_get_find_and_refind(void **state)
{
	struct overlay ov;
	ov_init(&ov);
	assert_null(ov_find(&ov, 0));
	for (uint64_t c = 0; c < 500; c += 3)
		put(&ov, c);
	for (uint64_t c = 0; c < 500; c++)
		if (c % 3)
			assert_null(ov_find(&ov, c));
		else
			check_has(&ov, c);
	char *buf;
	int fresh;
	assert_int_equal(ov_get(&ov, 42, &buf, &fresh), 0);
	assert_false(fresh); /* the same buffer, contents kept */
	assert_ptr_equal(buf, ov_find(&ov, 42));
	assert_int_equal(ov.count, 167);
	ov_free(&ov);
}

static void test_drop_from_keeps_the_rest_findable(void **state)
{
	struct overlay ov;
	ov_init(&ov);
	/* Keys that collide: the deletion must move later members back. */
	for (uint64_t c = 0; c < 300; c++)
		put(&ov, c * 64);
	ov_drop_from(&ov, 150 * 64);
	assert_int_equal(ov.count, 150);
	for (uint64_t c = 0; c < 300; c++)
		if (c < 150)
			check_has(&ov, c * 64);
		else
			assert_null(ov_find(&ov, c * 64));
	ov_free(&ov);
}

static void test_sorted_lists_every_chunk_in_order(void **state)
{
	struct overlay ov;
	ov_init(&ov);
	uint64_t *v;
	assert_int_equal(ov_sorted(&ov, &v), 0);
	assert_null(v);
	for (int64_t c = 1000; c >= 0; c -= 7) /* descending: not insertion order */
		put(&ov, (uint64_t)c);
	assert_int_equal(ov_sorted(&ov, &v), 0);
	for (size_t i = 0; i < ov.count; i++) {
		assert_int_equal(v[i] % 7, 1000 % 7);
		if (i)
			assert_true(v[i - 1] < v[i]);
	}
	assert_int_equal(v[ov.count - 1], 1000);
	free(v);
	ov_free(&ov);
}

/* After a bulk load's commit the table must not stay large: clearing and
 * sorting walk every slot, so each later small commit would pay for it. */
static void test_clear_gives_back_a_large_table(void **state)
{
	struct overlay ov;
	ov_init(&ov);
	for (uint64_t c = 0; c < 8 * OV_KEEP_CAP; c++)
		put(&ov, c);
	assert_true(ov.cap > OV_KEEP_CAP);
	ov_clear(&ov);
	assert_int_equal(ov.count, 0);
	assert_true(ov.cap <= OV_KEEP_CAP);
	assert_null(ov_find(&ov, 5));
	put(&ov, 5); /* and it grows again from there */
	check_has(&ov, 5);
	assert_true(ov.cap <= OV_KEEP_CAP);
	/* A small table is kept across clears. */
	size_t cap = ov.cap;
	ov_clear(&ov);
	assert_int_equal(ov.cap, cap);
	ov_free(&ov);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_find_and_refind),
		cmocka_unit_test(test_drop_from_keeps_the_rest_findable),
		cmocka_unit_test(test_sorted_lists_every_chunk_in_order),
		cmocka_unit_test(test_clear_gives_back_a_large_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
