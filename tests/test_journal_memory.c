/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_journal_memory.c - the journal backend's memory (persist/journal.c
 * invariants 10-13): a process can write more than the journal holds, and
 * more than its memory, through a region on the journal backend.
 *
 * Bounded. Transactions write four times the journal's size (a 4 MiB
 * journal, 16 MiB of fresh 64 KiB blocks) into a region on ext4; the
 * process's RssAnon (/proc/self/status), read after every commit, never
 * grows by more than twice the journal's size plus 2 MiB over what it was
 * before the first write. The 2 MiB are the backend's own buffers
 * (COPY_CHUNK, 1 MiB, and WBUF, 256 KiB, first touched by the first
 * checkpoint), this thread's record buffer and line list (one
 * transaction's lines: about 150 KiB for a redo transaction of 64 KiB),
 * and the allocator's slack. Invariant 13 bounds the region's private
 * pages by the journal's 4 MiB; the bound leaves the other 4 MiB for the
 * transaction in flight and for pages a checkpoint had to keep. Every
 * block is then read back, in the mapping (from the file, for the pages
 * given back) and after the region is closed and opened again. With
 * PMTX_JOURNAL_DROP=0 (every page kept until close, as before) the same
 * writes pass the bound: the measure can fail.
 *
 * Safe. The give-back's three invariants, each with a store that only
 * that invariant keeps (tests/jgive.c): stores after the checkpoint's
 * copy, stores racing the give-back, and a failed fdatasync of the
 * region file.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jgive.h"
#include "testutil.h"
#include "common/util.h"

#define MIB (1ull << 20)
#define JOURNAL (4 * MIB)
#define BLOCK (64u << 10)
#define NBLOCKS (4 * JOURNAL / BLOCK) /* four journals of data */
#define ALLOWANCE (2 * MIB)
#define BOUND (2 * JOURNAL + ALLOWANCE)

struct mroot {
	pmtx_off blk[NBLOCKS];
};

/* RssAnon of this process, in bytes. */
static uint64_t rss_anon(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kib = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %llu kB", &kib) == 1)
			break;
	fclose(f);
	assert_true(kib > 0);
	return (uint64_t)kib << 10;
}

static uint64_t pattern(uint64_t blk, uint64_t k)
{
	return pmtx_mix64(blk * 100003 + k + 1);
}

static void fill(uint64_t *buf, uint64_t blk)
{
	for (uint64_t k = 0; k < BLOCK / 8; k++)
		buf[k] = pattern(blk, k);
}

/* Block i, allocated and written, its offset in the root, in one
 * transaction. */
static void write_block(pmtx_region *r, uint64_t i, uint64_t *buf)
{
	struct mroot *root = pmtx_root(r, NULL);
	pmtx_tx *tx;
	pmtx_off off;
	fill(buf, i);
	assert_int_equal(pmtx_begin(r, PMTX_RT_REDO, &tx), 0);
	assert_int_equal(pmtx_alloc(tx, BLOCK, &off), 0);
	assert_int_equal(pmtx_write(tx, pmtx_ptr(r, off), buf, BLOCK), 0);
	assert_int_equal(pmtx_write(tx, &root->blk[i], &off, sizeof(off)), 0);
	assert_int_equal(pmtx_commit(tx), 0);
}

static void check_blocks(pmtx_region *r)
{
	struct mroot *root = pmtx_root(r, NULL);
	for (uint64_t i = 0; i < NBLOCKS; i++) {
		assert_true(root->blk[i] != 0);
		const uint64_t *b = pmtx_ptr(r, root->blk[i]);
		for (uint64_t k = 0; k < BLOCK / 8; k++)
			if (b[k] != pattern(i, k))
				fail_msg("block %llu word %llu: %llx",
				         (unsigned long long)i,
				         (unsigned long long)k,
				         (unsigned long long)b[k]);
	}
}

/* The writes, with pages given back or not: RssAnon's largest growth. */
static uint64_t write_four_journals(int give)
{
	const char *path = tu_path_in("/var/tmp", "jmem.pmtx");
	char jsize[32];
	snprintf(jsize, sizeof(jsize), "%llu", (unsigned long long)JOURNAL);
	setenv("PMTX_JOURNAL_SIZE", jsize, 1);
	setenv("PMTX_JOURNAL_DROP", give ? "1" : "0", 1);
	pmtx_options o = tu_options(sizeof(struct mroot), PMTX_RT_REDO);
	o.backend = PMTX_BACKEND_JOURNAL;
	pmtx_region *r = tu_create_at(path, 64 * MIB, &o);
	uint64_t *buf = malloc(BLOCK);
	fill(buf, 0);
	uint64_t base = rss_anon(), peak = 0;
	for (uint64_t i = 0; i < NBLOCKS; i++) {
		write_block(r, i, buf);
		uint64_t now = rss_anon();
		peak = now > base && now - base > peak ? now - base : peak;
	}
	free(buf);
	check_blocks(r);
	assert_int_equal(pmtx_close(r), 0);
	assert_int_equal(tu_open_on(path, PMTX_BACKEND_JOURNAL, 0, &r), 0);
	check_blocks(r);
	assert_int_equal(pmtx_close(r), 0);
	unsetenv("PMTX_JOURNAL_SIZE");
	unsetenv("PMTX_JOURNAL_DROP");
	char j[256];
	snprintf(j, sizeof(j), "%s.pmtxj", path);
	unlink(path);
	unlink(j);
	fprintf(stderr, "# %s: RssAnon grew by at most %llu KiB (bound %llu "
	        "KiB)\n", give ? "pages given back" : "pages kept",
	        (unsigned long long)(peak >> 10),
	        (unsigned long long)(BOUND >> 10));
	return peak;
}

static void anonymous_memory_stays_within_twice_the_journal(void **s)
{
	(void)s;
	uint64_t peak = write_four_journals(1);
	if (!TU_UNDER_ASAN) /* its shadow and quarantine are anonymous too */
		assert_true(peak < BOUND);
}

static void without_the_give_back_the_same_writes_pass_the_bound(void **s)
{
	(void)s;
	uint64_t peak = write_four_journals(0);
	assert_true(peak >= BOUND);
}

static void a_store_after_the_checkpoints_copy_keeps_its_page(void **s)
{
	(void)s;
	assert_int_equal(jgive_store_after_copy(), JGIVE_KEPT);
}

static void a_store_racing_the_give_back_is_made_after_it(void **s)
{
	(void)s;
	assert_int_equal(jgive_store_racing(), JGIVE_KEPT);
}

static void a_failed_region_sync_gives_back_nothing(void **s)
{
	(void)s;
	assert_int_equal(jgive_failed_sync(), JGIVE_KEPT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(anonymous_memory_stays_within_twice_the_journal),
		cmocka_unit_test(
			without_the_give_back_the_same_writes_pass_the_bound),
		cmocka_unit_test(
			a_store_after_the_checkpoints_copy_keeps_its_page),
		cmocka_unit_test(a_store_racing_the_give_back_is_made_after_it),
		cmocka_unit_test(a_failed_region_sync_gives_back_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
