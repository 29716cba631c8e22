/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_grow.c - regions that grow (pmtx_options.max_size; layout.h G1,
 * region.c invariants 5-6, heap.c H8).
 *
 * What is shown:
 *  - a heap that runs out grows the file, under every runtime that
 *    allocates, and a pointer taken before a growth still points at the
 *    same bytes after it (the mapping never moves);
 *  - a grown region reopens with its heap, its data and a clean heap check;
 *  - every way growth can fail (the maximum, RLIMIT_FSIZE, a full file
 *    system) fails the allocation with PMTX_E_NOMEM and a message, the
 *    transaction aborts, and nothing committed is lost;
 *  - a file longer than its heap (a crash between the extension and the
 *    size store) opens and is grown into; a grown file cut short, and a
 *    region state out of range, are refused;
 *  - a process killed at random while it grows its region leaves one that
 *    opens, checks clean, and holds every committed block;
 *  - the same on the journal backend, where the commits since the last
 *    checkpoint are in the journal only, reopened through the journal
 *    backend and through another one (which replays the journal);
 *  - a private view (PMTX_OPEN_PRIVATE) recovers without writing the file
 *    and cannot grow.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#include "region/layout.h"

#define MAX_SIZE (64u << 20)
#define BLOCK 4000u

/* The root: a count of committed blocks and their offsets. */
#define MAXBLOCKS 4096u
struct root {
	uint64_t n;
	pmtx_off blk[MAXBLOCKS];
};

static pmtx_region *create_growing_on(const char *path, size_t size,
                                      size_t max, pmtx_runtime rt,
                                      pmtx_backend b)
{
	pmtx_options o = tu_options(sizeof(struct root), rt);
	o.max_size = max;
	o.ndesc = 4;
	o.backend = b;
	return tu_create_at(path, size, &o);
}

static pmtx_region *create_growing(const char *path, size_t size,
                                   size_t max, pmtx_runtime rt)
{
	return create_growing_on(path, size, max, rt,
	                         PMTX_BACKEND_HARDWARE);
}

static pmtx_region *open_on(const char *path, pmtx_backend b)
{
	pmtx_region *r = NULL;
	int rc = tu_open_on(path, b, 0, &r);
	if (rc)
		fprintf(stderr, "open: %s %s\n", pmtx_strerror(rc),
		        pmtx_errmsg());
	assert_int_equal(rc, 0);
	return r;
}

static char jpath_buf[4200];
static const char *jpath(const char *path)
{
	snprintf(jpath_buf, sizeof(jpath_buf), "%s.pmtxj", path);
	return jpath_buf;
}

static uint64_t pattern(uint64_t i, uint64_t w)
{
	return (i + 1) * 0x9e3779b97f4a7c15ull ^ w;
}

/* One transaction: allocate a block, fill it, append it to the root.
 * Returns 0 or the allocation's status (the transaction is aborted). */
static int add_block(pmtx_region *r, size_t size)
{
	struct root *root = pmtx_root(r, NULL);
	pmtx_tx *tx;
	pmtx_off off;
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	int rc = pmtx_alloc(tx, size, &off);
	if (rc) {
		assert_int_equal(pmtx_abort(tx), 0);
		return rc;
	}
	uint64_t *p = pmtx_ptr(r, off), i = root->n;
	for (size_t w = 0; w < size / 8; w++)
		p[w] = pattern(i, w);
	pmtx_flush(r, p, size);
	assert_int_equal(PMTX_SET(tx, root->blk[i], off), 0);
	assert_int_equal(PMTX_SET(tx, root->n, i + 1), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	return 0;
}

static int count_block(pmtx_off off, size_t usable, void *arg)
{
	(void)off, (void)usable;
	++*(uint64_t *)arg;
	return 0;
}

/* Every committed block holds its pattern, and the heap holds exactly the
 * committed blocks. */
static void check_blocks(pmtx_region *r, size_t size)
{
	struct root *root = pmtx_root(r, NULL);
	assert_true(root->n <= MAXBLOCKS);
	for (uint64_t i = 0; i < root->n; i++) {
		const uint64_t *p = pmtx_ptr(r, root->blk[i]);
		assert_non_null(p);
		for (size_t w = 0; w < size / 8; w++)
			assert_true(p[w] == pattern(i, w));
	}
	pmtx_heap_stats st;
	int rc = pmtx_heap_check(r, &st);
	if (rc)
		fprintf(stderr, "heap check: %s\n", st.first_error);
	assert_int_equal(rc, 0);
	uint64_t n = 0;
	assert_int_equal(pmtx_heap_walk(r, count_block, &n), 0);
	assert_int_equal(n, root->n);
}

static void grows_under(pmtx_runtime rt)
{
	const char *path = tu_path();
	pmtx_region *r = create_growing(path, 1, MAX_SIZE, rt);
	size_t first = pmtx_region_size(r);
	assert_int_equal(pmtx_region_max_size(r) >= MAX_SIZE - (1u << 20), 1);
	assert_int_equal(add_block(r, BLOCK), 0);
	struct root *root = pmtx_root(r, NULL);
	uint64_t *p0 = pmtx_ptr(r, root->blk[0]);
	while (pmtx_region_size(r) < 4 * first)
		assert_int_equal(add_block(r, BLOCK), 0);
	/* The mapping did not move: the old pointer is still the block. */
	assert_ptr_equal(pmtx_ptr(r, root->blk[0]), p0);
	assert_true(p0[0] == pattern(0, 0));
	check_blocks(r, BLOCK);
	size_t grown = pmtx_region_size(r);
	uint64_t n = root->n;
	assert_int_equal(pmtx_close(r), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true((size_t)st.st_size >= grown);

	r = tu_open(path);
	assert_int_equal(pmtx_region_size(r), grown);
	assert_int_equal(((struct root *)pmtx_root(r, NULL))->n, n);
	check_blocks(r, BLOCK);
	assert_int_equal(add_block(r, BLOCK), 0); /* and grows on */
	tu_close_and_remove(r, path);
}

/* One test per runtime. */
#define GROWS_UNDER(test, rt)                                              \
	static void test(void **state)                                       \
	{                                                                    \
		grows_under(rt);                                             \
	}
GROWS_UNDER(heap_grows_and_reopens_under_undo, PMTX_RT_UNDO)
GROWS_UNDER(heap_grows_and_reopens_under_redo, PMTX_RT_REDO)
GROWS_UNDER(heap_grows_and_reopens_under_redo_async, PMTX_RT_REDO_ASYNC)

/* A block larger than the heap gets a run of new superblocks at once. */
static void a_large_block_grows_the_heap_by_enough(void **state)
{
	const char *path = tu_path();
	pmtx_region *r = create_growing(path, 1, MAX_SIZE, PMTX_RT_UNDO);
	assert_int_equal(add_block(r, 5u << 20), 0);
	assert_true(pmtx_region_size(r) > (5u << 20));
	check_blocks(r, 5u << 20);
	assert_int_equal(pmtx_close(r), 0);
	r = tu_open(path);
	check_blocks(r, 5u << 20);
	tu_close_and_remove(r, path);
}

/* Fill until the allocation fails; it must fail with NOMEM, a message
 * containing want, and leave every committed block. */
static uint64_t fill_until_nomem(pmtx_region *r, const char *want)
{
	int rc;
	while ((rc = add_block(r, BLOCK)) == 0)
		assert_true(((struct root *)pmtx_root(r, NULL))->n < MAXBLOCKS);
	assert_int_equal(rc, PMTX_E_NOMEM);
	if (!strstr(pmtx_errmsg(), want))
		fprintf(stderr, "message: \"%s\", want \"%s\"\n",
		        pmtx_errmsg(), want);
	assert_non_null(strstr(pmtx_errmsg(), want));
	check_blocks(r, BLOCK);
	return ((struct root *)pmtx_root(r, NULL))->n;
}

static void reopen_and_check(const char *path, uint64_t n)
{
	pmtx_region *r = tu_open(path);
	assert_int_equal(((struct root *)pmtx_root(r, NULL))->n, n);
	check_blocks(r, BLOCK);
	assert_int_equal(pmtx_close(r), 0);
}

static void the_maximum_fails_with_nomem_and_keeps_committed(void **state)
{
	const char *path = tu_path();
	pmtx_region *r = create_growing(path, 1, 4u << 20, PMTX_RT_UNDO);
	uint64_t n = fill_until_nomem(r, "maximum size reached");
	assert_true(n > 100);
	assert_true(pmtx_region_size(r) <= pmtx_region_max_size(r));
	assert_int_equal(pmtx_close(r), 0);
	reopen_and_check(path, n);
	unlink(path);
}

/* A fixed-size region says so when it is full. */
static void a_fixed_region_says_it_cannot_grow(void **state)
{
	const char *path = tu_path();
	pmtx_region *r = create_growing(path, 4u << 20, 0, PMTX_RT_REDO);
	assert_int_equal(pmtx_region_max_size(r), pmtx_region_size(r));
	uint64_t n = fill_until_nomem(r, "fixed size");
	assert_int_equal(pmtx_close(r), 0);
	reopen_and_check(path, n);
	unlink(path);
}

/* RLIMIT_FSIZE: growth must fail with a status, not die of SIGXFSZ. Run
 * in a child so that the limit does not outlive the test. */
static void the_file_size_limit_fails_with_nomem_not_a_signal(void **state)
{
	const char *path = tu_path();
	pmtx_region *r = create_growing(path, 1, MAX_SIZE, PMTX_RT_UNDO);
	assert_int_equal(add_block(r, BLOCK), 0);
	size_t limit = pmtx_region_size(r) + (1u << 20);
	assert_int_equal(pmtx_close(r), 0);
	pid_t pid = tu_fork();
	if (pid == 0) {
		struct rlimit rl = {limit, limit};
		if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
			_exit(3);
		pmtx_region *c = NULL;
		if (pmtx_open(path, NULL, &c) != 0)
			_exit(4);
		int rc;
		while ((rc = add_block(c, BLOCK)) == 0)
			;
		int ok = rc == PMTX_E_NOMEM &&
		         strstr(pmtx_errmsg(), "RLIMIT_FSIZE") != NULL;
		_exit(ok && pmtx_close(c) == 0 ? 0 : 5);
	}
	assert_int_equal(tu_wait_exit(pid), 0);
	r = tu_open(path);
	uint64_t n = ((struct root *)pmtx_root(r, NULL))->n;
	assert_true(n > 100);
	assert_true(pmtx_region_size(r) <= limit);
	assert_int_equal(pmtx_close(r), 0);
	reopen_and_check(path, n);
	unlink(path);
}

static char g_mounted[64]; /* a tmpfs the teardown unmounts */

static int unmount_tmpfs(void **state)
{
	if (g_mounted[0]) {
		umount2(g_mounted, MNT_DETACH);
		rmdir(g_mounted);
		g_mounted[0] = 0;
	}
	return 0;
}

/* A small tmpfs: growth meets ENOSPC. Needs the right to mount (root in
 * a mount namespace); skipped without it. */
static void a_full_file_system_fails_with_nomem(void **state)
{
	const char *dir = tu_path_in("/tmp", "grow");
	assert_int_equal(mkdir(dir, 0700), 0);
	if (mount("pmtx-test", dir, "tmpfs", 0, "size=3m") != 0) {
		rmdir(dir);
		skip();
	}
	snprintf(g_mounted, sizeof(g_mounted), "%s", dir);
	char path[64];
	snprintf(path, sizeof(path), "%s/r.pmtx", dir);
	pmtx_region *r = create_growing(path, 1, MAX_SIZE, PMTX_RT_REDO);
	uint64_t n = fill_until_nomem(r, "No space left on device");
	assert_true(n > 10);
	/* Region invariant 6: the last growth was only what the block
	 * needed, so less than two 64 KiB superblocks were left unused. */
	struct statvfs vfs;
	assert_int_equal(statvfs(dir, &vfs), 0);
	uint64_t left = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	if (left >= (128u << 10))
		fprintf(stderr, "%llu bytes left unused\n",
		        (unsigned long long)left);
	assert_true(left < (128u << 10));
	assert_int_equal(pmtx_close(r), 0);
	reopen_and_check(path, n);
	unlink(path); /* the teardown unmounts */
}

/* A crash between the file's extension and the store of the new size
 * leaves a file longer than its heap: it opens, and is grown into. */
static void a_file_longer_than_its_heap_opens_and_grows_into_it(void **state)
{
	const char *path = tu_path();
	pmtx_region *r = create_growing(path, 1, MAX_SIZE, PMTX_RT_UNDO);
	assert_int_equal(add_block(r, BLOCK), 0);
	size_t size = pmtx_region_size(r);
	assert_int_equal(pmtx_close(r), 0);
	assert_int_equal(truncate(path, (off_t)size + (3u << 20)), 0);
	r = tu_open(path);
	assert_int_equal(pmtx_region_size(r), size);
	while (pmtx_region_size(r) <= size)
		assert_int_equal(add_block(r, BLOCK), 0);
	check_blocks(r, BLOCK);
	tu_close_and_remove(r, path);
}

static void a_grown_file_cut_short_is_refused(void **state)
{
	const char *path = tu_path();
	pmtx_region *r = create_growing(path, 1, MAX_SIZE, PMTX_RT_UNDO);
	size_t first = pmtx_region_size(r);
	while (pmtx_region_size(r) == first)
		assert_int_equal(add_block(r, BLOCK), 0);
	assert_int_equal(pmtx_close(r), 0);
	assert_int_equal(truncate(path, (off_t)first), 0);
	uint64_t h = tu_file_hash(path);
	assert_int_equal(pmtx_open(path, NULL, &r), PMTX_E_TRUNCATED);
	assert_non_null(strstr(pmtx_errmsg(), "superblocks needs"));
	assert_int_equal(tu_file_hash(path), h);
	unlink(path);
}

static void poke_nsb(const char *path, uint64_t v)
{
	struct pmtx_hdr h;
	tu_pread(path, &h, sizeof(h), 0);
	tu_pwrite(path, &v, 8, h.rstate_off);
}

static void a_region_state_out_of_range_is_refused(void **state)
{
	const char *path = tu_path();
	pmtx_region *r = create_growing(path, 1, MAX_SIZE, PMTX_RT_UNDO);
	assert_int_equal(pmtx_close(r), 0);
	const uint64_t bad[] = {0, 1ull << 40, ~0ull};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		poke_nsb(path, bad[i]);
		assert_int_equal(pmtx_open(path, NULL, &r), PMTX_E_CORRUPT);
		assert_non_null(strstr(pmtx_errmsg(), "region state"));
	}
	poke_nsb(path, 1);
	r = tu_open(path);
	tu_close_and_remove(r, path);
}

/* A child that opens path through backend b and adds blocks (growing the
 * region) until the root is full. */
static pid_t fill_in_child(const char *path, pmtx_backend b)
{
	pid_t pid = tu_fork();
	if (pid == 0) {
		pmtx_region *c = NULL;
		if (tu_open_on(path, b, 0, &c) != 0)
			_exit(4);
		for (unsigned i = 0; i < MAXBLOCKS - 1; i++)
			if (add_block(c, BLOCK))
				_exit(5);
		_exit(0);
	}
	return pid;
}

/* Kill the child pid after a random time below max_ns: it must not have
 * failed before. */
static void kill_within(pid_t pid, uint64_t *seed, uint64_t max_ns)
{
	struct timespec ts = {0, (long)(tu_rand(seed) % max_ns)};
	nanosleep(&ts, NULL);
	kill(pid, SIGKILL);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_false(WIFEXITED(status) && WEXITSTATUS(status) != 0);
}

/* A child adds blocks (growing its region) until it is killed at a random
 * moment; the region must open, check clean, and hold every block its
 * root counts. */
static void killed_while_growing_recovers_every_block(void **state)
{
	unsigned kills = tu_long_mode() ? 200 : 24;
	uint64_t seed = 42;
	for (unsigned k = 0; k < kills; k++) {
		const char *path = tu_path();
		pmtx_runtime rt = (pmtx_runtime)(1 + k % 3); /* undo..async */
		pmtx_region *r = create_growing(path, 1, MAX_SIZE, rt);
		assert_int_equal(pmtx_close(r), 0);
		pid_t pid = fill_in_child(path, PMTX_BACKEND_HARDWARE);
		kill_within(pid, &seed, 30000000);
		r = tu_open(path);
		check_blocks(r, BLOCK);
		tu_close_and_remove(r, path);
	}
}

/* The journal backend (persist/journal.c): the region file is extended
 * (and synced) before the new size is stored, and the store reaches the
 * file through the journal like any line. A grown region reopens through
 * the journal backend, and through another one, which replays the
 * journal first. */
static void heap_grows_and_reopens_under_the_journal(void **state)
{
	const char *path = tu_path();
	pmtx_region *r = create_growing_on(path, 1, MAX_SIZE, PMTX_RT_REDO,
	                                   PMTX_BACKEND_JOURNAL);
	size_t first = pmtx_region_size(r);
	while (pmtx_region_size(r) < 4 * first)
		assert_int_equal(add_block(r, BLOCK), 0);
	check_blocks(r, BLOCK);
	size_t grown = pmtx_region_size(r);
	uint64_t n = ((struct root *)pmtx_root(r, NULL))->n;
	assert_int_equal(pmtx_close(r), 0);
	const pmtx_backend reopen[] = {PMTX_BACKEND_JOURNAL,
	                               PMTX_BACKEND_HARDWARE};
	for (size_t i = 0; i < sizeof(reopen) / sizeof(*reopen); i++) {
		r = open_on(path, reopen[i]);
		assert_int_equal(pmtx_region_size(r), grown);
		assert_int_equal(((struct root *)pmtx_root(r, NULL))->n, n);
		check_blocks(r, BLOCK);
		assert_int_equal(pmtx_close(r), 0);
	}
	unlink(jpath(path));
	unlink(path);
}

/* As killed_while_growing_recovers_every_block, on the journal backend:
 * the commits since the last checkpoint are in the journal only, and the
 * next open (through the journal backend, or another one) replays them
 * into the grown file. */
static void killed_while_growing_on_the_journal_recovers_every_block(
	void **state)
{
	unsigned kills = tu_long_mode() ? 100 : 12, mid = 0;
	uint64_t seed = 7;
	for (unsigned k = 0; k < kills; k++) {
		const char *path = tu_path();
		pmtx_runtime rt = k % 2 ? PMTX_RT_UNDO : PMTX_RT_REDO;
		pmtx_region *r = create_growing_on(path, 1, MAX_SIZE, rt,
		                                   PMTX_BACKEND_JOURNAL);
		size_t size0 = pmtx_region_size(r);
		assert_int_equal(pmtx_close(r), 0);
		pid_t pid = fill_in_child(path, PMTX_BACKEND_JOURNAL);
		/* once the file has grown (or after 10 s), 0-20 ms more */
		struct stat fs;
		for (int t = 0; t < 10000; t++) {
			if (stat(path, &fs) == 0 && fs.st_size > (off_t)size0)
				break;
			usleep(1000);
		}
		kill_within(pid, &seed, 20000000);
		struct stat js;
		int had_journal = stat(jpath(path), &js) == 0;
		r = open_on(path, k % 4 < 2 ? PMTX_BACKEND_JOURNAL
		                            : PMTX_BACKEND_HARDWARE);
		check_blocks(r, BLOCK);
		uint64_t n = ((struct root *)pmtx_root(r, NULL))->n;
		/* killed mid-way, after growing, with the journal there */
		if (had_journal && n > 0 && n < MAXBLOCKS - 1 &&
		    pmtx_region_size(r) > size0)
			mid++;
		assert_int_equal(pmtx_close(r), 0);
		unlink(jpath(path));
		unlink(path);
	}
	print_message("%u of %u kills came after a growth, before the "
	              "last block\n", mid, kills);
	assert_true(mid >= kills / 2);
}

/* Leave a transaction running in a killed child: the region needs
 * recovery. */
static void leave_uncommitted(const char *path)
{
	pid_t pid = tu_fork();
	if (pid == 0) {
		pmtx_region *c = NULL;
		if (pmtx_open(path, NULL, &c) != 0)
			_exit(4);
		struct root *root = pmtx_root(c, NULL);
		pmtx_tx *tx;
		if (pmtx_begin(c, PMTX_RT_UNDO, &tx) ||
		    PMTX_SET(tx, root->n, 777))
			_exit(5);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void a_private_view_recovers_without_writing(void **state)
{
	const char *path = tu_path();
	pmtx_region *r = create_growing(path, 1, MAX_SIZE, PMTX_RT_UNDO);
	assert_int_equal(add_block(r, BLOCK), 0);
	assert_int_equal(pmtx_close(r), 0);
	leave_uncommitted(path);
	uint64_t h = tu_file_hash(path);
	pmtx_options o;
	pmtx_options_init(&o);
	o.flags = PMTX_OPEN_PRIVATE;
	for (int i = 0; i < 2; i++) { /* twice: the first wrote nothing */
		assert_int_equal(pmtx_open(path, &o, &r), 0);
		assert_int_equal(((struct root *)pmtx_root(r, NULL))->n, 1);
		check_blocks(r, BLOCK);
		assert_int_equal(add_block(r, BLOCK), 0); /* in the view */
		assert_true(fill_until_nomem(r, "private view") >= 2);
		assert_int_equal(pmtx_close(r), 0);
		assert_int_equal(tu_file_hash(path), h);
	}
	/* A writer and a private view exclude each other. */
	r = tu_open(path);
	pmtx_region *v;
	assert_int_equal(pmtx_open(path, &o, &v), PMTX_E_LOCKED);
	tu_close_and_remove(r, path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(heap_grows_and_reopens_under_undo),
		cmocka_unit_test(heap_grows_and_reopens_under_redo),
		cmocka_unit_test(heap_grows_and_reopens_under_redo_async),
		cmocka_unit_test(a_large_block_grows_the_heap_by_enough),
		cmocka_unit_test(the_maximum_fails_with_nomem_and_keeps_committed),
		cmocka_unit_test(a_fixed_region_says_it_cannot_grow),
		cmocka_unit_test(
			the_file_size_limit_fails_with_nomem_not_a_signal),
		cmocka_unit_test_teardown(a_full_file_system_fails_with_nomem,
		                          unmount_tmpfs),
		cmocka_unit_test(
			a_file_longer_than_its_heap_opens_and_grows_into_it),
		cmocka_unit_test(a_grown_file_cut_short_is_refused),
		cmocka_unit_test(a_region_state_out_of_range_is_refused),
		cmocka_unit_test(killed_while_growing_recovers_every_block),
		cmocka_unit_test(heap_grows_and_reopens_under_the_journal),
		cmocka_unit_test(
			killed_while_growing_on_the_journal_recovers_every_block),
		cmocka_unit_test(a_private_view_recovers_without_writing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
