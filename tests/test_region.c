/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_region.c - region files: every kind of bad input to open/create
 * gets its own status and message, never a crash, and never modifies the
 * file; and the positive behaviour of create/open/close and the getters.
 */
#define _GNU_SOURCE
#define XXH_INLINE_ALL
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "testutil.h"

#include "region/layout.h"
#include "region/region.h"

#define RSIZE (4u << 20)

/* Every status open/create can report for bad input. */
static const int open_errors[] = {
	ENOENT,
	EEXIST,
	PMTX_E_INVAL,
	PMTX_E_TOO_SMALL,
	PMTX_E_TRUNCATED,
	PMTX_E_BAD_MAGIC,
	PMTX_E_BAD_VERSION,
	PMTX_E_BAD_LAYOUT,
	PMTX_E_BAD_CHECKSUM,
	PMTX_E_CORRUPT,
	PMTX_E_LOCKED,
	PMTX_E_NO_SPACE,
};

/* rc is want, and want has a non-empty message of its own. */
static void assert_status(int rc, int want)
{
	if (rc != want)
		fail_msg("status %d (%s), expected %d (%s)", rc,
		         pmtx_strerror(rc), want, pmtx_strerror(want));
	const char *m = pmtx_strerror(want);
	assert_non_null(m);
	assert_true(strlen(m) > 0);
	for (size_t i = 0; i < ARRAY_SIZE(open_errors); i++)
		if (open_errors[i] != want &&
		    strcmp(pmtx_strerror(open_errors[i]), m) == 0)
			fail_msg("status %d shares its message with %d: %s",
			         want, open_errors[i], m);
}

static int file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static pmtx_region *create_layout(const char *path, const char *layout)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.layout = layout;
	o.root_size = 512;
	pmtx_region *r = NULL;
	assert_int_equal(pmtx_create(path, RSIZE, &o, &r), 0);
	return r;
}

/* A closed, valid region at a fresh path. */
static const char *make_region(void)
{
	const char *path;
	pmtx_region *r = tu_create(&path, RSIZE, 512, PMTX_PDOM1,
	                           PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
	assert_int_equal(pmtx_close(r), 0);
	return path;
}

static void read_hdr(const char *path, struct pmtx_hdr *h)
{
	tu_pread(path, h, sizeof(*h), 0);
}

/* Write h back; recompute its checksum first when asked. */
static void write_hdr(const char *path, struct pmtx_hdr *h, int recsum)
{
	if (recsum)
		h->checksum = XXH3_64bits_withSeed(
			h, offsetof(struct pmtx_hdr, checksum), PMTX_CSUM_SEED_HDR);
	tu_pwrite(path, h, sizeof(*h), 0);
}

static void poke(const char *path, uint64_t off, const void *p, size_t n)
{
	tu_pwrite(path, p, n, off);
}

/* Open must fail with want and leave the file byte for byte as it was;
 * with detail, it must also say what was wrong in pmtx_errmsg(). */
static void open_fails(const char *path, const pmtx_options *o, int want,
                       int detail)
{
	uint64_t before = tu_file_hash(path);
	pmtx_region *r = NULL;
	int rc = pmtx_open(path, o, &r);
	assert_status(rc, want);
	assert_null(r);
	if (detail && strlen(pmtx_errmsg()) == 0)
		fail_msg("no pmtx_errmsg() detail for status %d", want);
	assert_int_equal(tu_file_hash(path), before);
}

static void expect_open_fails(const char *path, const pmtx_options *o,
                              int want)
{
	open_fails(path, o, want, 1);
}

/* The header h written at path with its checksum recomputed must make
 * open fail with want, and change nothing. */
static void refused(const char *path, struct pmtx_hdr *h, int want)
{
	write_hdr(path, h, 1);
	expect_open_fails(path, NULL, want);
}

/* The same with the checksum h holds. */
static void refused_as_is(const char *path, struct pmtx_hdr *h, int want)
{
	write_hdr(path, h, 0);
	expect_open_fails(path, NULL, want);
}

/* ---- bad input ---- */

static void open_of_missing_file_fails_with_enoent_and_creates_nothing(
	void **state)
{
	const char *path = tu_path();
	pmtx_region *r = NULL;
	assert_status(pmtx_open(path, NULL, &r), ENOENT);
	assert_null(r);
	assert_false(file_exists(path));
}

static void open_of_file_smaller_than_header_fails_and_leaves_it_unchanged(
	void **state)
{
	const char *path = tu_path();
	char junk[100];
	memset(junk, 'x', sizeof(junk));
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	expect_open_fails(path, NULL, PMTX_E_TOO_SMALL);
	/* An empty file too. */
	assert_int_equal(truncate(path, 0), 0);
	expect_open_fails(path, NULL, PMTX_E_TOO_SMALL);
	/* One byte short of a header. */
	assert_int_equal(truncate(path, PMTX_HDR_SIZE - 1), 0);
	expect_open_fails(path, NULL, PMTX_E_TOO_SMALL);
	unlink(path);
}

static void open_of_truncated_file_fails_and_leaves_it_unchanged(
	void **state)
{
	const char *path = make_region();
	assert_int_equal(truncate(path, RSIZE / 2), 0);
	expect_open_fails(path, NULL, PMTX_E_TRUNCATED);
	/* Down to just the header: still truncated, not too small. */
	assert_int_equal(truncate(path, PMTX_HDR_SIZE), 0);
	expect_open_fails(path, NULL, PMTX_E_TRUNCATED);
	unlink(path);
}

static void open_of_file_with_wrong_magic_fails_and_leaves_it_unchanged(
	void **state)
{
	const char *path = make_region();
	struct pmtx_hdr h;
	read_hdr(path, &h);
	memcpy(&h.magic, "NOTPMTX!", 8);
	refused(path, &h, PMTX_E_BAD_MAGIC);
	/* A byte-swapped magic (the other byte order) too. */
	h.magic = __builtin_bswap64(PMTX_MAGIC);
	refused(path, &h, PMTX_E_BAD_MAGIC);
	unlink(path);
}

static void open_of_non_region_file_fails_with_bad_magic(void **state)
{
	const char *path = tu_path();
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, RSIZE), 0);
	close(fd);
	expect_open_fails(path, NULL, PMTX_E_BAD_MAGIC);
	unlink(path);
}

static void open_of_newer_major_version_fails_and_leaves_it_unchanged(
	void **state)
{
	const char *path = make_region();
	struct pmtx_hdr h;
	read_hdr(path, &h);
	h.major = PMTX_FORMAT_MAJOR + 1;
	refused(path, &h, PMTX_E_BAD_VERSION);
	h.major = 0;
	refused(path, &h, PMTX_E_BAD_VERSION);
	unlink(path);
}

static void open_with_unknown_incompat_feature_fails_and_leaves_it_unchanged(
	void **state)
{
	const char *path = make_region();
	struct pmtx_hdr h, orig;
	read_hdr(path, &orig);
	h = orig;
	h.feat_incompat = 1ull << 63;
	refused(path, &h, PMTX_E_BAD_VERSION);
	h = orig;
	h.feat_incompat = 16; /* the lowest bit 3.5 does not know */
	refused(path, &h, PMTX_E_BAD_VERSION);
	/* Known features the geometry does not match: the twin bit on a
	 * region without a back copy, with and without the seal bit, the
	 * seal bit alone, and the reseal bit without the seal bit. */
	static const uint64_t known[] = {
		PMTX_FEAT_INCOMPAT_TWIN,
		PMTX_FEAT_INCOMPAT_TWIN | PMTX_FEAT_INCOMPAT_TWIN_SEAL,
		PMTX_FEAT_INCOMPAT_TWIN_SEAL,
		PMTX_FEAT_INCOMPAT_TWIN_RESEAL,
		PMTX_FEAT_INCOMPAT_TWIN | PMTX_FEAT_INCOMPAT_TWIN_RESEAL,
	};
	for (size_t i = 0; i < ARRAY_SIZE(known); i++) {
		h = orig;
		h.feat_incompat = known[i];
		refused(path, &h, PMTX_E_CORRUPT);
	}
	/* Read-only-compatible features: refused too (no read-only mode). */
	h = orig;
	h.feat_ro_compat = 4;
	refused(path, &h, PMTX_E_BAD_VERSION);
	unlink(path);
}

/* layout.h 3.4: a region without PMTX_FEAT_INCOMPAT_JOURNAL_MARK (as a
 * 3.3 build made them) opens, runs on the journal backend and keeps no
 * mark; in such a region a mark word not zero is corrupt, as in 3.3. */
static void a_region_without_the_mark_feature_keeps_no_mark(void **state)
{
	const char *path = make_region();
	struct pmtx_hdr h;
	read_hdr(path, &h);
	assert_true(h.feat_incompat & PMTX_FEAT_INCOMPAT_JOURNAL_MARK);
	h.feat_incompat &= ~PMTX_FEAT_INCOMPAT_JOURNAL_MARK;
	write_hdr(path, &h, 1);
	pmtx_options o;
	pmtx_options_init(&o);
	o.backend = PMTX_BACKEND_JOURNAL;
	pmtx_region *r;
	assert_int_equal(pmtx_open(path, &o, &r), 0);
	uint64_t word = 1, one = 1;
	tu_pread(path, &word, 8, h.rstate_off + 16);
	assert_int_equal(word, 0); /* no mark while the journal is open */
	assert_int_equal(pmtx_close(r), 0);
	char jp[4200];
	snprintf(jp, sizeof(jp), "%s.pmtxj", path);
	unlink(jp);
	poke(path, h.rstate_off + 16, &one, 8);
	expect_open_fails(path, NULL, PMTX_E_CORRUPT);
	unlink(path);
}

/* layout.h G4: the open mark as a file holds it. */
static uint64_t open_mark(const char *path)
{
	struct pmtx_hdr h;
	uint64_t w = 99;
	read_hdr(path, &h);
	tu_pread(path, &w, 8, h.rstate_off + offsetof(struct pmtx_rstate, open));
	return w;
}

/* Barriers and flushed lines of one open and close of path under o. */
static void open_costs(const char *path, const pmtx_options *o,
                       uint64_t *barriers, uint64_t *flushes)
{
	pmtx_counters a, b;
	pmtx_region *r;
	pmtx_counters_get(&a);
	assert_int_equal(pmtx_open(path, o, &r), 0);
	pmtx_counters_get(&b);
	assert_int_equal(pmtx_close(r), 0);
	*barriers = b.barriers - a.barriers;
	*flushes = b.flushes - a.flushes;
}

/* G4 and recovery.c R4: a process that dies with the region open leaves
 * the mark, and the next open sweeps (one barrier, a flush of every line
 * before the heap and of nothing else: there is no log chunk beyond the
 * first) before it recovers; after a clean close the next open
 * issues no barrier and no flush. A private view neither sweeps nor
 * touches the mark, nor does the journal backend keep it; a mark that is
 * neither 0 nor 1 is refused. */
static void a_region_left_open_is_swept_by_the_next_open(void **state)
{
	const char *path = make_region();
	struct pmtx_hdr h;
	read_hdr(path, &h);
	assert_int_equal(open_mark(path), 0);
	pid_t pid = tu_fork();
	if (pid == 0) { /* writes a block, then dies with the region open */
		pmtx_region *r = NULL;
		pmtx_tx *tx;
		pmtx_off off;
		int ok = pmtx_open(path, NULL, &r) == 0 &&
		         pmtx_begin(r, PMTX_RT_UNDO, &tx) == 0 &&
		         pmtx_alloc(tx, 4000, &off) == 0 &&
		         pmtx_memset(tx, pmtx_ptr(r, off), 7, 4000) == 0 &&
		         pmtx_commit(tx) == 0;
		_exit(ok ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(open_mark(path), 1);
	pmtx_options o;
	pmtx_options_init(&o);
	o.flags = PMTX_OPEN_PRIVATE;
	uint64_t bar, fl;
	open_costs(path, &o, &bar, &fl);
	assert_int_equal(bar, 0);
	assert_int_equal(open_mark(path), 1);
	/* the journal backend reads the mark and keeps none (its sweep is
	 * an fdatasync: no flush, no barrier of the counters) */
	pmtx_options_init(&o);
	o.backend = PMTX_BACKEND_JOURNAL;
	open_costs(path, &o, &bar, &fl);
	assert_int_equal(open_mark(path), 1);
	char jp[4200];
	snprintf(jp, sizeof(jp), "%s.pmtxj", path);
	unlink(jp);
	open_costs(path, NULL, &bar, &fl);
	assert_int_equal(bar, 1); /* the sweep's; nothing to recover */
	/* every line before the heap, the metadata of its superblocks
	 * included; not the heap (recovery writes it blind, R4) */
	uint64_t meta_end = h.meta_off + h.nsb * sizeof(struct pmtx_sb_meta);
	assert_int_equal(fl, (meta_end + 63) / 64);
	assert_int_equal(open_mark(path), 0); /* closed cleanly */
	open_costs(path, NULL, &bar, &fl);
	assert_int_equal(bar, 0);
	assert_int_equal(fl, 0);
	uint64_t two = 2;
	poke(path, h.rstate_off + offsetof(struct pmtx_rstate, open), &two, 8);
	expect_open_fails(path, NULL, PMTX_E_CORRUPT);
	unlink(path);
}

/* layout.h 3.5: a twin region without PMTX_FEAT_INCOMPAT_TWIN_RESEAL (as
 * a 3.3 or 3.4 build made them, or as PMTX_CREATE_TWIN_FAST_RESTART makes
 * them) opens, and every transaction that writes stores a MUTATING of its
 * own (a new seq) and waits for it: 3 barriers for one line, where a
 * region with the bit takes 2 after the first. */
static void a_twin_region_without_the_reseal_feature_marks_each_time(
	void **state)
{
	/* 0: the bit cleared in the header; 1: created without it; 2: the
	 * default */
	for (int how = 0; how < 3; how++) {
		const char *path = tu_path();
		pmtx_options o;
		pmtx_options_init(&o);
		o.runtime = PMTX_RT_TWIN;
		o.root_size = 64;
		o.flags = how == 1 ? PMTX_CREATE_TWIN_FAST_RESTART : 0;
		pmtx_region *r;
		assert_int_equal(pmtx_create(path, 8u << 20, &o, &r), 0);
		assert_int_equal(pmtx_close(r), 0);
		struct pmtx_hdr h;
		read_hdr(path, &h);
		int reseal = how == 2;
		assert_int_equal(
			!!(h.feat_incompat & PMTX_FEAT_INCOMPAT_TWIN_RESEAL),
			how != 1);
		assert_true(h.feat_incompat & PMTX_FEAT_INCOMPAT_TWIN_SEAL);
		if (how == 0) {
			h.feat_incompat &= ~PMTX_FEAT_INCOMPAT_TWIN_RESEAL;
			write_hdr(path, &h, 1);
		}
		r = tu_open(path);
		const volatile uint64_t *word =
			(const uint64_t *)((const char *)pmtx_ptr(r, h.rstate_off) +
			                   offsetof(struct pmtx_rstate, twin));
		uint64_t *w = pmtx_root(r, NULL);
		for (uint64_t i = 0; i < 3; i++) {
			pmtx_tx *tx;
			tu_count_start();
			assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
			assert_int_equal(PMTX_SET(tx, w[0], i + 1), 0);
			assert_int_equal(pmtx_commit(tx), 0);
			assert_int_equal(tu_count().barriers,
			                 reseal && i > 0 ? 2 : 3);
			/* the seq of the MUTATING each transaction stored under */
			assert_int_equal(PMTX_TW_SEQ(*word), reseal ? 1 : i + 1);
		}
		assert_int_equal(pmtx_close(r), 0);
		r = tu_open(path);
		assert_int_equal(((uint64_t *)pmtx_root(r, NULL))[0], 3);
		tu_close_and_remove(r, path);
	}
}

static void newer_minor_version_and_unknown_compat_feature_still_open(
	void **state)
{
	const char *path = make_region();
	struct pmtx_hdr h;
	read_hdr(path, &h);
	h.minor = PMTX_FORMAT_MINOR + 5;
	h.feat_compat = 1ull << 40;
	write_hdr(path, &h, 1);
	pmtx_region *r = NULL;
	assert_int_equal(pmtx_open(path, NULL, &r), 0);
	tu_close_and_remove(r, path);
}

static void open_with_different_layout_name_fails_and_leaves_it_unchanged(
	void **state)
{
	const char *path = tu_path();
	assert_int_equal(pmtx_close(create_layout(path, "a")), 0);
	pmtx_options o;
	pmtx_options_init(&o);
	o.layout = "b";
	expect_open_fails(path, &o, PMTX_E_BAD_LAYOUT);
	o.layout = "ab";
	expect_open_fails(path, &o, PMTX_E_BAD_LAYOUT);
	o.layout = "";
	expect_open_fails(path, &o, PMTX_E_BAD_LAYOUT);
	/* The right name opens. */
	o.layout = "a";
	pmtx_region *r = NULL;
	assert_int_equal(pmtx_open(path, &o, &r), 0);
	tu_close_and_remove(r, path);
}

static void open_without_layout_name_accepts_any_layout(void **state)
{
	const char *path = tu_path();
	assert_int_equal(pmtx_close(create_layout(path, "some-app-v3")), 0);
	pmtx_options o;
	pmtx_options_init(&o);
	assert_null(o.layout);
	pmtx_region *r = NULL;
	assert_int_equal(pmtx_open(path, &o, &r), 0);
	assert_int_equal(pmtx_close(r), 0);
	assert_int_equal(pmtx_open(path, NULL, &r), 0);
	tu_close_and_remove(r, path);
}

static void open_with_header_checksum_mismatch_fails_and_leaves_it_unchanged(
	void **state)
{
	const char *path = make_region();
	struct pmtx_hdr h, orig;
	read_hdr(path, &orig);
	h = orig;
	h.uuid[5] ^= 0x01;
	refused_as_is(path, &h, PMTX_E_BAD_CHECKSUM);
	/* The stored checksum itself damaged. */
	h = orig;
	h.checksum ^= 1ull << 33;
	refused_as_is(path, &h, PMTX_E_BAD_CHECKSUM);
	/* A reserved byte near the end of the header. */
	h = orig;
	h.reserved[ARRAY_SIZE(h.reserved) - 1] = 1;
	refused_as_is(path, &h, PMTX_E_BAD_CHECKSUM);
	unlink(path);
}

static void open_with_inconsistent_geometry_fails_and_leaves_it_unchanged(
	void **state)
{
	const char *path = make_region();
	struct pmtx_hdr h, orig;
	read_hdr(path, &orig);
	h = orig;
	h.heap_off += 4096;
	refused(path, &h, PMTX_E_CORRUPT);
	h = orig;
	h.nsb += 1;
	refused(path, &h, PMTX_E_CORRUPT);
	h = orig;
	h.root_off = 8;
	refused(path, &h, PMTX_E_CORRUPT);
	h = orig;
	h.ndesc = 0;
	refused(path, &h, PMTX_E_CORRUPT);
	h = orig;
	h.size = RSIZE - 65536; /* smaller than the file */
	refused(path, &h, PMTX_E_CORRUPT);
	h = orig;
	h.default_runtime = 99;
	refused(path, &h, PMTX_E_CORRUPT);
	h = orig;
	h.reserved[10] = 7; /* must be zero */
	refused(path, &h, PMTX_E_CORRUPT);
	unlink(path);
}

static void open_with_unterminated_layout_name_fails_as_corrupt(
	void **state)
{
	const char *path = make_region();
	struct pmtx_hdr h;
	read_hdr(path, &h);
	memset(h.layout, 'L', sizeof(h.layout));
	write_hdr(path, &h, 1);
	/* pmtx_errmsg() detail is not required here: region.c's
	 * check_layout_name() returns without setting one. */
	open_fails(path, NULL, PMTX_E_CORRUPT, 0);
	unlink(path);
}

static void open_of_region_open_in_another_process_fails_with_locked(
	void **state)
{
	const char *path = make_region();
	pmtx_region *r = tu_open(path);
	uint64_t before = tu_file_hash(path);
	pid_t pid = tu_fork();
	if (pid == 0) {
		pmtx_region *cr = NULL;
		int rc = pmtx_open(path, NULL, &cr);
		_exit(rc == PMTX_E_LOCKED && cr == NULL &&
		      strlen(pmtx_errmsg()) > 0 ? 0 : 1);
	}
	assert_int_equal(tu_wait_exit(pid), 0);
	assert_int_equal(tu_file_hash(path), before);
	assert_status(PMTX_E_LOCKED, PMTX_E_LOCKED);
	assert_int_equal(pmtx_close(r), 0);

	/* Closed by the parent: a child can open it now. */
	pid = tu_fork();
	if (pid == 0) {
		pmtx_region *cr = NULL;
		int rc = pmtx_open(path, NULL, &cr);
		_exit(rc == 0 && pmtx_close(cr) == 0 ? 0 : 1);
	}
	assert_int_equal(tu_wait_exit(pid), 0);
	unlink(path);
}

static void second_open_in_same_process_fails_with_locked_until_close(
	void **state)
{
	const char *path = make_region();
	pmtx_region *r = tu_open(path);
	expect_open_fails(path, NULL, PMTX_E_LOCKED);
	/* The first handle is still fully usable. */
	uint64_t v = 0xfeed, got = 0;
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_write(tx, pmtx_root(r, NULL), &v, sizeof(v)), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_int_equal(pmtx_close(r), 0);
	r = tu_open(path);
	memcpy(&got, pmtx_root(r, NULL), sizeof(got));
	assert_int_equal(got, 0xfeed);
	tu_close_and_remove(r, path);
}

static void create_beyond_free_space_fails_with_no_space_and_leaves_no_file(
	void **state)
{
	const char *path = tu_path();
	pmtx_region *r = NULL;
	assert_status(pmtx_create(path, (size_t)1 << 50, NULL, &r),
	              PMTX_E_NO_SPACE);
	assert_null(r);
	assert_true(strlen(pmtx_errmsg()) > 0);
	assert_false(file_exists(path));
}

static void create_on_existing_region_fails_with_eexist_and_leaves_it_unchanged(
	void **state)
{
	const char *path = make_region();
	uint64_t before = tu_file_hash(path);
	pmtx_region *r = NULL;
	assert_status(pmtx_create(path, RSIZE, NULL, &r), EEXIST);
	assert_null(r);
	assert_int_equal(tu_file_hash(path), before);
	/* A different size would still not touch it. */
	assert_status(pmtx_create(path, 2 * RSIZE, NULL, &r), EEXIST);
	assert_int_equal(tu_file_hash(path), before);
	/* The region still opens. */
	r = tu_open(path);
	tu_close_and_remove(r, path);
}

static void create_on_existing_other_file_fails_with_eexist_and_leaves_it_unchanged(
	void **state)
{
	const char *path = tu_path();
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "precious", 8), 8);
	close(fd);
	uint64_t before = tu_file_hash(path);
	pmtx_region *r = NULL;
	assert_status(pmtx_create(path, RSIZE, NULL, &r), EEXIST);
	assert_int_equal(tu_file_hash(path), before);
	unlink(path);
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static char *creating_path(const char *path)
{
	static char p[4200];
	snprintf(p, sizeof(p), "%s.creating", path);
	return p;
}

/* A process killed at any moment of pmtx_create leaves either no file at
 * the path or a region that opens: never a half-made file that open
 * must refuse (which would stop an application from ever starting). */
static void create_killed_at_any_moment_leaves_no_file_or_a_whole_region(
	void **state)
{
	const size_t size = 128u << 20;
	const char *path = tu_path();
	pmtx_region *r;
	double t0 = now_us();
	assert_int_equal(pmtx_create(path, size, NULL, &r), 0);
	double took = now_us() - t0;
	tu_close_and_remove(r, path);
	int whole = 0, none = 0;
	for (int i = 0; i < 40; i++) {
		pid_t pid = tu_fork();
		if (pid == 0) {
			pmtx_create(path, size, NULL, &r);
			pause();
			_exit(0);
		}
		usleep((useconds_t)(took * 1.2 * i / 40));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		if (file_exists(path)) {
			assert_int_equal(pmtx_open(path, NULL, &r), 0);
			assert_int_equal(pmtx_close(r), 0);
			whole++;
			unlink(path);
		} else {
			/* the stale temporary file does not stop a create */
			assert_int_equal(pmtx_create(path, 1u << 22, NULL, &r),
			                 0);
			assert_int_equal(pmtx_close(r), 0);
			assert_false(file_exists(creating_path(path)));
			none++;
			unlink(path);
		}
	}
	unlink(creating_path(path));
	assert_true(none > 0); /* some kills landed inside create */
	(void)whole;
}

static void create_refuses_while_another_process_creates_the_same_path(
	void **state)
{
	const char *path = tu_path();
	int fd = open(creating_path(path), O_CREAT | O_RDWR, 0600);
	assert_true(fd >= 0);
	pid_t pid = tu_fork();
	if (pid == 0) { /* flock is per open file: take it in another one */
		int cfd = open(creating_path(path), O_RDWR);
		_exit(cfd >= 0 && flock(cfd, LOCK_EX) == 0 &&
		      write(1, "", 0) == 0 && pause() ? 0 : 1);
	}
	usleep(100000);
	pmtx_region *r = NULL;
	assert_status(pmtx_create(path, RSIZE, NULL, &r), PMTX_E_LOCKED);
	assert_null(r);
	assert_false(file_exists(path));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(fd);
	assert_int_equal(pmtx_create(path, RSIZE, NULL, &r), 0);
	tu_close_and_remove(r, path);
}

static void create_with_size_too_small_fails_and_leaves_no_file(
	void **state)
{
	const char *path = tu_path();
	pmtx_region *r = NULL;
	assert_status(pmtx_create(path, 64 * 1024, NULL, &r), PMTX_E_TOO_SMALL);
	assert_false(file_exists(path));
	assert_status(pmtx_create(path, 0, NULL, &r), PMTX_E_TOO_SMALL);
	assert_false(file_exists(path));
	/* Big enough for the areas but not for a single superblock. */
	assert_status(pmtx_create(path, 1340 * 1024, NULL, &r),
	              PMTX_E_TOO_SMALL);
	assert_false(file_exists(path));
	assert_null(r);
}

static void create_with_invalid_options_fails_with_inval_and_leaves_no_file(
	void **state)
{
	const char *path = tu_path();
	pmtx_region *r = NULL;
	pmtx_options o;
	pmtx_options_init(&o);
	o.domain = (pmtx_domain)7;
	assert_status(pmtx_create(path, RSIZE, &o, &r), PMTX_E_INVAL);
	pmtx_options_init(&o);
	o.backend = (pmtx_backend)9;
	assert_status(pmtx_create(path, RSIZE, &o, &r), PMTX_E_INVAL);
	pmtx_options_init(&o);
	char longname[PMTX_LAYOUT_MAX + 2];
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	o.layout = longname;
	assert_status(pmtx_create(path, RSIZE, &o, &r), PMTX_E_INVAL);
	assert_false(file_exists(path));
	assert_null(r);
}

/* ---- corrupt areas behind a valid header ---- */

static void open_with_garbage_descriptor_fails_as_corrupt_without_crash(
	void **state)
{
	const char *path = make_region();
	struct pmtx_hdr h;
	read_hdr(path, &h);
	uint64_t d3 = h.desc_off + 3 * sizeof(struct pmtx_desc);
	struct pmtx_desc orig;
	tu_pread(path, &orig, sizeof(orig), d3);
	static const uint64_t bad_heads[] = {
		0xdeadbeefcafef00dull, 0, 8, RSIZE - 8, RSIZE + 4096,
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad_heads); i++) {
		struct pmtx_desc d = orig;
		d.log_head = bad_heads[i];
		poke(path, d3, &d, sizeof(d));
		expect_open_fails(path, NULL, PMTX_E_CORRUPT);
	}
	/* Another descriptor's (valid) chunk is not this one's. */
	struct pmtx_desc d = orig;
	d.log_head = h.log0_off;
	poke(path, d3, &d, sizeof(d));
	expect_open_fails(path, NULL, PMTX_E_CORRUPT);
	d = orig;
	d.alog_head = 0x123456789ull;
	poke(path, d3, &d, sizeof(d));
	expect_open_fails(path, NULL, PMTX_E_CORRUPT);
	d = orig;
	d.statever = PMTX_SV(5, PMTX_RT_UNDO, 9); /* no such state */
	poke(path, d3, &d, sizeof(d));
	expect_open_fails(path, NULL, PMTX_E_CORRUPT);
	/* Restored, it opens. */
	poke(path, d3, &orig, sizeof(orig));
	pmtx_region *r = tu_open(path);
	tu_close_and_remove(r, path);
}

static void open_with_invalid_superblock_meta_fails_as_corrupt_without_crash(
	void **state)
{
	const char *path = make_region();
	struct pmtx_hdr h;
	read_hdr(path, &h);
	uint64_t m5 = h.meta_off + 5 * sizeof(struct pmtx_sb_meta);
	struct pmtx_sb_meta zero, m;
	memset(&zero, 0, sizeof(zero));
	static const uint64_t bad_infos[] = {
		PMTX_SB_INFO(7, 0, 0),                /* unknown kind */
		PMTX_SB_INFO(0xff, 3, 1),             /* unknown kind */
		PMTX_SB_INFO(PMTX_SB_SMALL, 200, 0),  /* no such class */
		PMTX_SB_INFO(PMTX_SB_SMALL, 63, 0),   /* no such class */
		PMTX_SB_INFO(PMTX_SB_LARGE, 0, 0),    /* empty run */
		PMTX_SB_INFO(PMTX_SB_LARGE, 0, 1u << 30), /* run past the end */
		PMTX_SB_INFO(PMTX_SB_LARGE, 4, 1),    /* large with a class */
		PMTX_SB_INFO(PMTX_SB_FREE, 0, 3),     /* free with a run */
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad_infos); i++) {
		m = zero;
		m.info = bad_infos[i];
		if (PMTX_SB_KIND(m.info) == PMTX_SB_SMALL)
			m.bitmap[0] = 1; /* an allocated block */
		poke(path, m5, &m, sizeof(m));
		expect_open_fails(path, NULL, PMTX_E_CORRUPT);
	}
	/* A free superblock with allocated bits. */
	m = zero;
	m.bitmap[3] = 1;
	poke(path, m5, &m, sizeof(m));
	expect_open_fails(path, NULL, PMTX_E_CORRUPT);
	/* Class 0 (32-byte blocks) has 2048 blocks; class 6 (128 bytes) has
	 * 512: a bit for block 600 is past the end. */
	m = zero;
	m.info = PMTX_SB_INFO(PMTX_SB_SMALL, 6, 0);
	m.bitmap[600 / 64] = 1ull << (600 % 64);
	poke(path, m5, &m, sizeof(m));
	expect_open_fails(path, NULL, PMTX_E_CORRUPT);
	poke(path, m5, &zero, sizeof(zero));
	pmtx_region *r = tu_open(path);
	tu_close_and_remove(r, path);
}

/* ---- positive behaviour ---- */

static void created_file_has_mode_0600_whatever_the_umask(void **state)
{
	mode_t old = umask(0);
	const char *path;
	pmtx_region *r = tu_create(&path, RSIZE, 64, PMTX_PDOM1,
	                           PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
	umask(old);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, RSIZE);
	tu_close_and_remove(r, path);
}

static void root_is_zeroed_and_has_the_requested_size(void **state)
{
	static const size_t sizes[] = {0, 1, 100, 4096, 123457};
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		const char *path;
		pmtx_region *r = tu_create(&path, RSIZE, sizes[i], PMTX_PDOM1,
		                           PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
		size_t sz = 77;
		unsigned char *root = pmtx_root(r, &sz);
		assert_int_equal(sz, sizes[i]);
		assert_non_null(root);
		pmtx_off off = pmtx_off_of(r, root);
		assert_true(off >= PMTX_HDR_SIZE);
		assert_true(off + sz <= pmtx_region_size(r));
		for (size_t k = 0; k < sz; k++)
			if (root[k])
				fail_msg("root byte %zu is %u", k, root[k]);
		assert_int_equal(pmtx_close(r), 0);
		/* The size is recorded, not just remembered. */
		r = tu_open(path);
		assert_ptr_not_equal(pmtx_root(r, &sz), NULL);
		assert_int_equal(sz, sizes[i]);
		tu_close_and_remove(r, path);
	}
}

static void root_contents_persist_across_close_and_open(void **state)
{
	const char *path;
	pmtx_region *r = tu_create(&path, RSIZE, 3000, PMTX_PDOM1,
	                           PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
	char pat[3000];
	uint64_t seed = 7;
	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = (char)tu_rand(&seed);
	pmtx_tx *tx;
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_write(tx, pmtx_root(r, NULL), pat, sizeof(pat)),
	                 0);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_int_equal(pmtx_close(r), 0);
	r = tu_open(path);
	size_t sz;
	assert_memory_equal(pmtx_root(r, &sz), pat, sizeof(pat));
	assert_int_equal(sz, sizeof(pat));
	assert_int_equal(pmtx_close(r), 0);
	/* And once more, after an open that changed nothing. */
	r = tu_open(path);
	assert_memory_equal(pmtx_root(r, NULL), pat, sizeof(pat));
	tu_close_and_remove(r, path);
}

static void ptr_and_off_of_round_trip_and_reject_outside(void **state)
{
	const char *path;
	pmtx_region *r = tu_create(&path, RSIZE, 256, PMTX_PDOM1,
	                           PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
	size_t size = pmtx_region_size(r);
	assert_int_equal(size, RSIZE);
	char *root = pmtx_root(r, NULL);
	pmtx_off roff = pmtx_off_of(r, root);
	assert_true(roff != 0);
	assert_ptr_equal(pmtx_ptr(r, roff), root);
	assert_ptr_equal(PMTX_PTR(r, roff, char), root);
	const pmtx_off offs[] = {PMTX_HDR_SIZE, PMTX_HDR_SIZE + 1, roff,
	                         roff + 17, size / 2, size - 1};
	for (size_t i = 0; i < ARRAY_SIZE(offs); i++) {
		char *p = pmtx_ptr(r, offs[i]);
		assert_non_null(p);
		assert_int_equal(pmtx_off_of(r, p), offs[i]);
		assert_ptr_equal(p, root + (ptrdiff_t)(offs[i] - roff));
	}
	assert_null(pmtx_ptr(r, 0));
	assert_null(pmtx_ptr(r, size));
	assert_null(pmtx_ptr(r, size + 1));
	assert_null(pmtx_ptr(r, size + 4096));
	assert_null(pmtx_ptr(r, UINT64_MAX));
	assert_null(pmtx_ptr(r, (pmtx_off)1 << 63));
	int local = 0;
	assert_int_equal(pmtx_off_of(r, &local), 0);
	assert_int_equal(pmtx_off_of(r, NULL), 0);
	assert_int_equal(pmtx_off_of(r, root - roff + size), 0); /* one past */
	assert_int_equal(pmtx_off_of(r, root - roff + size + 100), 0);
	void *heap = malloc(16);
	assert_int_equal(pmtx_off_of(r, heap), 0);
	free(heap);
	tu_close_and_remove(r, path);
}

static void region_uuid_is_stable_across_reopen_and_unique_per_region(
	void **state)
{
	const char *p1, *p2;
	pmtx_region *r1 = tu_create(&p1, RSIZE, 64, PMTX_PDOM1,
	                            PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
	pmtx_region *r2 = tu_create(&p2, RSIZE, 64, PMTX_PDOM1,
	                            PMTX_BACKEND_HARDWARE, PMTX_RT_UNDO);
	uint8_t u1[16], u2[16], again[16], zero[16] = {0};
	pmtx_region_uuid(r1, u1);
	pmtx_region_uuid(r2, u2);
	assert_memory_not_equal(u1, zero, 16);
	assert_memory_not_equal(u1, u2, 16);
	assert_int_equal(pmtx_close(r1), 0);
	r1 = tu_open(p1);
	pmtx_region_uuid(r1, again);
	assert_memory_equal(u1, again, 16);
	assert_int_equal(pmtx_close(r1), 0);
	tu_close_and_remove(r2, p1);
	unlink(p2);
}

static void getters_report_domain_backend_runtime_and_size(void **state)
{
	const char *path;
	pmtx_region *r = tu_create(&path, RSIZE + 65536, 64, PMTX_PDOM2,
	                           PMTX_BACKEND_EMULATED, PMTX_RT_UNDO);
	assert_int_equal(pmtx_region_domain(r), PMTX_PDOM2);
	assert_int_equal(pmtx_region_backend(r), PMTX_BACKEND_EMULATED);
	assert_int_equal(pmtx_region_runtime(r), PMTX_RT_UNDO);
	assert_int_equal(pmtx_region_size(r), RSIZE + 65536);
	assert_int_equal(pmtx_close(r), 0);
	/* Domain and backend are chosen per open; the runtime is recorded. */
	pmtx_options o;
	pmtx_options_init(&o);
	o.domain = PMTX_PDOM0;
	o.backend = PMTX_BACKEND_FILE;
	assert_int_equal(pmtx_open(path, &o, &r), 0);
	assert_int_equal(pmtx_region_domain(r), PMTX_PDOM0);
	assert_int_equal(pmtx_region_backend(r), PMTX_BACKEND_FILE);
	assert_int_equal(pmtx_region_runtime(r), PMTX_RT_UNDO);
	assert_int_equal(pmtx_region_size(r), RSIZE + 65536);
	tu_close_and_remove(r, path);

	/* PMTX_RT_DEFAULT at create means undo. */
	r = tu_create(&path, RSIZE, 64, PMTX_PDOM1, PMTX_BACKEND_HARDWARE,
	              PMTX_RT_DEFAULT);
	assert_int_equal(pmtx_region_runtime(r), PMTX_RT_UNDO);
	assert_int_equal(pmtx_region_domain(r), PMTX_PDOM1);
	assert_int_equal(pmtx_region_backend(r), PMTX_BACKEND_HARDWARE);
	tu_close_and_remove(r, path);
}

static void errmsg_is_set_after_failed_open_and_cleared_by_next_open(
	void **state)
{
	const char *path = make_region();
	struct pmtx_hdr h;
	read_hdr(path, &h);
	struct pmtx_hdr bad = h;
	bad.magic ^= 1;
	write_hdr(path, &bad, 1);
	pmtx_region *r = NULL;
	assert_int_equal(pmtx_open(path, NULL, &r), PMTX_E_BAD_MAGIC);
	assert_true(strlen(pmtx_errmsg()) > 0);
	write_hdr(path, &h, 0);
	assert_int_equal(pmtx_open(path, NULL, &r), 0);
	assert_string_equal(pmtx_errmsg(), "");
	tu_close_and_remove(r, path);
}

static void every_status_has_a_distinct_nonempty_message(void **state)
{
	for (int a = PMTX_E_FIRST; a < PMTX_E_LAST; a++) {
		const char *ma = pmtx_strerror(a);
		assert_non_null(ma);
		assert_true(strlen(ma) > 0);
		assert_string_not_equal(ma, pmtx_strerror(0));
		for (int b = a + 1; b < PMTX_E_LAST; b++)
			if (strcmp(ma, pmtx_strerror(b)) == 0)
				fail_msg("%d and %d share \"%s\"", a, b, ma);
		assert_string_not_equal(ma, pmtx_strerror(ENOENT));
		assert_string_not_equal(ma, pmtx_strerror(EEXIST));
	}
	assert_true(strlen(pmtx_strerror(0)) > 0);
	assert_true(strlen(pmtx_strerror(PMTX_E_LAST)) > 0);
	assert_true(strlen(pmtx_strerror(-1)) > 0);
}

static void enum_names_parse_back_to_their_values(void **state)
{
	for (int d = PMTX_PDOM0; d <= PMTX_PDOM2; d++) {
		pmtx_domain out = (pmtx_domain)99;
		const char *n = pmtx_domain_name((pmtx_domain)d);
		assert_int_equal(pmtx_domain_parse(n, &out), 0);
		assert_int_equal(out, d);
		for (int e = d + 1; e <= PMTX_PDOM2; e++)
			assert_string_not_equal(n, pmtx_domain_name((pmtx_domain)e));
	}
	assert_string_equal(pmtx_domain_name(PMTX_PDOM0), "pdom0");
	for (int b = PMTX_BACKEND_HARDWARE; b <= PMTX_BACKEND_FILE; b++) {
		pmtx_backend out = (pmtx_backend)99;
		const char *n = pmtx_backend_name((pmtx_backend)b);
		assert_int_equal(pmtx_backend_parse(n, &out), 0);
		assert_int_equal(out, b);
		for (int e = b + 1; e <= PMTX_BACKEND_FILE; e++)
			assert_string_not_equal(n,
			                        pmtx_backend_name((pmtx_backend)e));
	}
	assert_string_equal(pmtx_backend_name(PMTX_BACKEND_HARDWARE),
	                    "hardware");
	for (int t = PMTX_RT_DEFAULT; t <= PMTX_RT_COW; t++) {
		pmtx_runtime out = (pmtx_runtime)99;
		const char *n = pmtx_runtime_name((pmtx_runtime)t);
		assert_int_equal(pmtx_runtime_parse(n, &out), 0);
		assert_int_equal(out, t);
		for (int e = t + 1; e <= PMTX_RT_COW; e++)
			assert_string_not_equal(n,
			                        pmtx_runtime_name((pmtx_runtime)e));
	}
	assert_string_equal(pmtx_runtime_name(PMTX_RT_UNDO), "undo");
}

static void enum_parsers_reject_unknown_strings_and_leave_output(
	void **state)
{
	static const char *const bad[] = {"", "pdom3", "PDOM1", "pdom1 ",
	                                  "hard", "Hardware", "undo2",
	                                  "redo_async", "?"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		pmtx_domain d = PMTX_PDOM2;
		pmtx_backend b = PMTX_BACKEND_FILE;
		pmtx_runtime t = PMTX_RT_COW;
		assert_int_equal(pmtx_domain_parse(bad[i], &d), PMTX_E_INVAL);
		assert_int_equal(pmtx_backend_parse(bad[i], &b), PMTX_E_INVAL);
		assert_int_equal(pmtx_runtime_parse(bad[i], &t), PMTX_E_INVAL);
		assert_int_equal(d, PMTX_PDOM2);
		assert_int_equal(b, PMTX_BACKEND_FILE);
		assert_int_equal(t, PMTX_RT_COW);
	}
	pmtx_domain d;
	assert_int_equal(pmtx_domain_parse(NULL, &d), PMTX_E_INVAL);
	/* Names of one enum are not accepted by another's parser. */
	pmtx_backend b;
	assert_int_equal(pmtx_backend_parse("pdom1", &b), PMTX_E_INVAL);
	assert_int_equal(pmtx_domain_parse("undo", &d), PMTX_E_INVAL);
}

static void version_matches_the_header(void **state)
{
	int ma = -1, mi = -1, pa = -1;
	assert_string_equal(pmtx_version(&ma, &mi, &pa), PMTX_VERSION_STRING);
	assert_int_equal(ma, PMTX_VERSION_MAJOR);
	assert_int_equal(mi, PMTX_VERSION_MINOR);
	assert_int_equal(pa, PMTX_VERSION_PATCH);
}

#define T(f) cmocka_unit_test(f)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(open_of_missing_file_fails_with_enoent_and_creates_nothing),
		T(a_region_left_open_is_swept_by_the_next_open),
		T(open_of_file_smaller_than_header_fails_and_leaves_it_unchanged),
		T(open_of_truncated_file_fails_and_leaves_it_unchanged),
		T(open_of_file_with_wrong_magic_fails_and_leaves_it_unchanged),
		T(open_of_non_region_file_fails_with_bad_magic),
		T(open_of_newer_major_version_fails_and_leaves_it_unchanged),
		T(open_with_unknown_incompat_feature_fails_and_leaves_it_unchanged),
		T(newer_minor_version_and_unknown_compat_feature_still_open),
		T(a_region_without_the_mark_feature_keeps_no_mark),
		T(a_twin_region_without_the_reseal_feature_marks_each_time),
		T(open_with_different_layout_name_fails_and_leaves_it_unchanged),
		T(open_without_layout_name_accepts_any_layout),
		T(open_with_header_checksum_mismatch_fails_and_leaves_it_unchanged),
		T(open_with_inconsistent_geometry_fails_and_leaves_it_unchanged),
		T(open_with_unterminated_layout_name_fails_as_corrupt),
		T(open_of_region_open_in_another_process_fails_with_locked),
		T(second_open_in_same_process_fails_with_locked_until_close),
		T(create_beyond_free_space_fails_with_no_space_and_leaves_no_file),
		T(create_on_existing_region_fails_with_eexist_and_leaves_it_unchanged),
		T(create_on_existing_other_file_fails_with_eexist_and_leaves_it_unchanged),
		T(create_with_size_too_small_fails_and_leaves_no_file),
		T(create_killed_at_any_moment_leaves_no_file_or_a_whole_region),
		T(create_refuses_while_another_process_creates_the_same_path),
		T(create_with_invalid_options_fails_with_inval_and_leaves_no_file),
		T(open_with_garbage_descriptor_fails_as_corrupt_without_crash),
		T(open_with_invalid_superblock_meta_fails_as_corrupt_without_crash),
		T(created_file_has_mode_0600_whatever_the_umask),
		T(root_is_zeroed_and_has_the_requested_size),
		T(root_contents_persist_across_close_and_open),
		T(ptr_and_off_of_round_trip_and_reject_outside),
		T(region_uuid_is_stable_across_reopen_and_unique_per_region),
		T(getters_report_domain_backend_runtime_and_size),
		T(errmsg_is_set_after_failed_open_and_cleared_by_next_open),
		T(every_status_has_a_distinct_nonempty_message),
		T(enum_names_parse_back_to_their_values),
		T(enum_parsers_reject_unknown_strings_and_leave_output),
		T(version_matches_the_header),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
