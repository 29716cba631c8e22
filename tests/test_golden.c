/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_golden.c - the persistent format is frozen: the golden regions in
 * tests/golden/ (one per runtime, each with a committed transaction its
 * runtime had not retired: see make_golden.c) must open, recover to
 * exactly the expected contents, and check clean. A build with another
 * format major must refuse them with PMTX_E_BAD_VERSION, never misread
 * them; so must this build a header of format 1.0.
 *
 * Usage: test_golden DIR (the directory the golden files were unpacked
 * into; they are copied before opening, since opening recovers them).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "common/util.h"
#include "golden/golden.h"
#include "region/layout.h"

static const char *g_dir;

/* A fresh working copy of the golden file of rt; returns its path. */
static const char *working_copy(pmtx_runtime rt)
{
	char src[512];
	snprintf(src, sizeof(src), "%s/golden-%s.pmtx", g_dir,
	         pmtx_runtime_name(rt));
	const char *dst = tu_path();
	int in = open(src, O_RDONLY);
	if (in < 0)
		fprintf(stderr, "missing golden file %s\n", src);
	assert_true(in >= 0);
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(out >= 0);
	struct stat st;
	assert_int_equal(fstat(in, &st), 0);
	for (off_t off = 0; off < st.st_size;)
		assert_true(sendfile(out, in, &off,
		                     (size_t)(st.st_size - off)) > 0);
	close(in);
	close(out);
	return dst;
}


/* The file holds a transaction recovery has to finish. */
static int needs_recovery(const char *path, const struct pmtx_hdr *h)
{
	int fd = open(path, O_RDONLY), busy = 0;
	assert_true(fd >= 0);
	for (unsigned i = 0; i < h->ndesc; i++) {
		struct pmtx_desc d;
		assert_int_equal(pread(fd, &d, sizeof(d),
		                       (off_t)(h->desc_off + i * sizeof(d))),
		                 (ssize_t)sizeof(d));
		busy |= PMTX_SV_STATE(d.statever) != PMTX_DS_IDLE;
	}
	close(fd);
	return busy;
}

static int collect(pmtx_off off, size_t usable, void *arg)
{
	(void)off, (void)usable;
	++*(unsigned *)arg;
	return 0;
}

static void expect_contents(pmtx_region *r, pmtx_runtime rt)
{
	const struct golden_root *root = pmtx_root(r, NULL);
	assert_int_equal(root->a, 1111);
	const uint64_t *v = pmtx_cow_peek(r, root->obj);
	assert_non_null(v);
	unsigned blocks = 0;
	assert_int_equal(pmtx_heap_walk(r, collect, &blocks), 0);
	if (rt == PMTX_RT_COW) {
		assert_int_equal(*v, 6666);
		assert_int_equal(root->b, 0);
		assert_string_equal(pmtx_ptr(r, root->blk), GOLDEN_TEXT);
		assert_int_equal(blocks, 3); /* A, wrapper, payload */
		return;
	}
	assert_int_equal(*v, 5555);
	assert_int_equal(root->b, 2222);
	assert_int_equal(root->blk, 0);
	const uint64_t *w = pmtx_ptr(r, root->big);
	assert_non_null(w);
	assert_true(pmtx_usable_size(r, root->big) >= GOLDEN_BIG);
	for (uint64_t i = 0; i < GOLDEN_BIG / 8; i++)
		assert_true(w[i] == golden_word(i));
	assert_int_equal(blocks, 3); /* big, wrapper, payload */
}

static void check_one(pmtx_runtime rt)
{
	const char *path = working_copy(rt);
	struct pmtx_hdr h;
	tu_pread(path, &h, sizeof(h), 0);
	pmtx_options o;
	pmtx_options_init(&o);
	o.layout = GOLDEN_LAYOUT;
	pmtx_region *r = NULL;
	int busy = h.major == PMTX_FORMAT_MAJOR && needs_recovery(path, &h);
	int rc = pmtx_open(path, &o, &r);
	if (h.major != PMTX_FORMAT_MAJOR) {
		assert_int_equal(rc, PMTX_E_BAD_VERSION);
		unlink(path);
		return;
	}
	assert_true(busy);
	if (rc)
		fprintf(stderr, "%s: %s (%s)\n", pmtx_runtime_name(rt),
		        pmtx_strerror(rc), pmtx_errmsg());
	assert_int_equal(rc, 0);
	assert_true(h.max_size >= GOLDEN_MAX - PMTX_SB_SIZE);
	assert_true(pmtx_region_size(r) > h.size || rt == PMTX_RT_COW);
	expect_contents(r, rt);
	pmtx_heap_stats st;
	assert_int_equal(pmtx_heap_check(r, &st), 0);
	assert_int_equal(pmtx_close(r), 0);
	/* Recovered: it opens again, idle, with the same contents. */
	assert_int_equal(needs_recovery(path, &h), 0);
	assert_int_equal(pmtx_open(path, &o, &r), 0);
	expect_contents(r, rt);
	tu_close_and_remove(r, path);
}

/* One test per runtime's golden region. */
#define GOLDEN(test, rt)                                                   \
	static void test(void **s)                                           \
	{                                                                    \
		check_one(rt);                                               \
	}
GOLDEN(golden_undo_recovers_to_the_committed_state, PMTX_RT_UNDO)
GOLDEN(golden_redo_recovers_to_the_committed_state, PMTX_RT_REDO)
GOLDEN(golden_redo_async_recovers_to_the_committed_state, PMTX_RT_REDO_ASYNC)
GOLDEN(golden_cow_recovers_to_the_committed_state, PMTX_RT_COW)

/* The same bytes under another format version are refused, not read. */
static void other_format_versions_are_refused(void **s)
{
	static const uint16_t majors[] = {1, PMTX_FORMAT_MAJOR + 1};
	for (size_t i = 0; i < sizeof(majors) / sizeof(majors[0]); i++) {
		const char *path = working_copy(PMTX_RT_REDO);
		struct pmtx_hdr h;
		tu_pread(path, &h, sizeof(h), 0);
		h.major = majors[i];
		h.checksum = pmtx_checksum(&h, offsetof(struct pmtx_hdr,
		                                        checksum),
		                           PMTX_CSUM_SEED_HDR);
		tu_pwrite(path, &h, sizeof(h), 0);
		uint64_t before = tu_file_hash(path);
		pmtx_region *r;
		assert_int_equal(pmtx_open(path, NULL, &r), PMTX_E_BAD_VERSION);
		assert_non_null(strstr(pmtx_errmsg(), "not supported"));
		assert_int_equal(tu_file_hash(path), before);
		unlink(path);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_golden DIR\n");
		return 2;
	}
	g_dir = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(golden_undo_recovers_to_the_committed_state),
		cmocka_unit_test(golden_redo_recovers_to_the_committed_state),
		cmocka_unit_test(
			golden_redo_async_recovers_to_the_committed_state),
		cmocka_unit_test(golden_cow_recovers_to_the_committed_state),
		cmocka_unit_test(other_format_versions_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
