/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_twin.c - the twin runtime (src/tx/twin.c): which regions and
 * runtimes go together, its barrier counts, the back copy matching the
 * data after commits, aborts, allocations and naked flushes, recovery in
 * each direction of the state word, after a crash under an earlier
 * transaction's seal, and over the heap in use only, a corrupt state
 * word, one
 * transaction at a time across threads (naked flushes of other threads
 * wait for it), aborts that restore only the declared bytes, and a full
 * heap.
 *
 * Crashes at every barrier, crashes during recovery and I/O errors at
 * every barrier are in test_recovery (twin is one of its runtimes), kill
 * -9 in test_crash, crash images in the explorer (pmtx crashtest,
 * test_mutation).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "region/layout.h"
#include "testutil.h"

/* twin.c: the most lines a transaction commits by its seal */
#define SEAL_MAX_LINES 48u

#define SIZE (8u << 20)
#define NWORDS 512

struct root {
	uint64_t w[NWORDS];
	pmtx_off blk[16];
};

static pmtx_region *make_twin(const char **path)
{
	return tu_create(path, SIZE, sizeof(struct root), PMTX_PDOM1,
	                 PMTX_BACKEND_HARDWARE, PMTX_RT_TWIN);
}

static struct root *root_of(pmtx_region *r)
{
	return pmtx_root(r, NULL);
}

/* The region file's header and region state, read with pread. */
static void read_file_hdr(const char *path, struct pmtx_hdr *h,
                          struct pmtx_rstate *st)
{
	tu_pread(path, h, sizeof(*h), 0);
	tu_pread(path, st, sizeof(*st), h->rstate_off);
}

/* The mirrored area and its back copy are equal, byte for byte (TW1:
 * these tests never store to a free block outside a transaction). */
static void assert_twins_equal(pmtx_region *r)
{
	const char *base = (const char *)pmtx_ptr(r, PMTX_HDR_SIZE) -
	                   PMTX_HDR_SIZE;
	const struct pmtx_hdr *h = (const struct pmtx_hdr *)base;
	uint64_t len = h->twin_off - h->root_off;
	assert_true(h->twin_off > h->root_off);
	assert_true(h->twin_off + len <= pmtx_region_size(r));
	assert_memory_equal(base + h->root_off, base + h->twin_off, len);
}

static uint64_t twin_state(pmtx_region *r)
{
	const char *base = (const char *)pmtx_ptr(r, PMTX_HDR_SIZE) -
	                   PMTX_HDR_SIZE;
	const struct pmtx_hdr *h = (const struct pmtx_hdr *)base;
	return ((const struct pmtx_rstate *)(base + h->rstate_off))->twin;
}

/* At rest: IDLE, or MUTATING with the seal of that transaction (TW10). */
static void assert_at_rest(pmtx_region *r)
{
	const char *base = (const char *)pmtx_ptr(r, PMTX_HDR_SIZE) -
	                   PMTX_HDR_SIZE;
	const struct pmtx_hdr *h = (const struct pmtx_hdr *)base;
	uint64_t w = twin_state(r);
	if (PMTX_TW_STATE(w) == PMTX_TW_IDLE)
		return;
	assert_int_equal(PMTX_TW_STATE(w), PMTX_TW_MUTATING);
	const struct pmtx_twin_seal *s =
		(const struct pmtx_twin_seal *)(base + h->seal_off);
	assert_int_equal(s->seq, PMTX_TW_SEQ(w));
	assert_in_range(s->n, 1, SEAL_MAX_LINES);
}

static void runtimes_and_regions_go_together(void **state)
{
	const char *path;
	pmtx_region *r = make_twin(&path);
	pmtx_tx *tx;
	assert_int_equal(pmtx_region_runtime(r), PMTX_RT_TWIN);
	static const pmtx_runtime others[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
	                                      PMTX_RT_REDO_ASYNC, PMTX_RT_COW};
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(pmtx_begin(r, others[i], &tx),
		                 PMTX_E_UNSUPPORTED);
		assert_non_null(strstr(pmtx_errmsg(), "twin"));
		assert_null(pmtx_tx_current());
	}
	static const pmtx_runtime same[] = {PMTX_RT_DEFAULT, PMTX_RT_AUTO,
	                                    PMTX_RT_TWIN};
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(pmtx_begin(r, same[i], &tx), 0);
		assert_int_equal(pmtx_tx_runtime(tx), PMTX_RT_TWIN);
		assert_int_equal(pmtx_commit(tx), 0);
	}
	assert_int_equal(pmtx_close(r), 0);
	r = tu_open(path); /* the runtime is the region's, after reopen */
	assert_int_equal(pmtx_region_runtime(r), PMTX_RT_TWIN);
	assert_int_equal(pmtx_begin(r, PMTX_RT_UNDO, &tx), PMTX_E_UNSUPPORTED);
	tu_close_and_remove(r, path);
	/* ... and twin needs a twin region. */
	r = tu_create(&path, SIZE, 64, PMTX_PDOM1, PMTX_BACKEND_HARDWARE,
	              PMTX_RT_UNDO);
	assert_int_equal(pmtx_begin(r, PMTX_RT_TWIN, &tx), PMTX_E_UNSUPPORTED);
	assert_non_null(strstr(pmtx_errmsg(), "twin region"));
	tu_close_and_remove(r, path);
}

static void a_twin_region_has_a_fixed_size(void **state)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.runtime = PMTX_RT_TWIN;
	o.max_size = 2 * SIZE;
	pmtx_region *r = NULL;
	const char *path = tu_path();
	assert_int_equal(pmtx_create(path, SIZE, &o, &r), PMTX_E_INVAL);
	assert_non_null(strstr(pmtx_errmsg(), "fixed size"));
	assert_int_equal(access(path, F_OK), -1);
	/* Too small for a heap and its back copy. */
	o.max_size = 0;
	assert_int_equal(pmtx_create(path, 1u << 20, &o, &r),
	                 PMTX_E_TOO_SMALL);
	/* The header says so, and half the heap of a plain region. */
	r = make_twin(&path);
	pmtx_heap_stats st;
	assert_int_equal(pmtx_heap_check(r, &st), 0);
	assert_int_equal(pmtx_close(r), 0);
	struct pmtx_hdr h;
	struct pmtx_rstate rs;
	read_file_hdr(path, &h, &rs);
	assert_int_equal(h.feat_incompat,
	                 PMTX_FEAT_INCOMPAT_TWIN | PMTX_FEAT_INCOMPAT_TWIN_SEAL |
	                         PMTX_FEAT_INCOMPAT_JOURNAL_MARK |
	                         PMTX_FEAT_INCOMPAT_TWIN_RESEAL);
	assert_int_equal(h.minor, 6);
	assert_int_equal(h.twin_off, h.heap_off + h.nsb * PMTX_SB_SIZE);
	assert_int_equal(h.seal_off, 2 * h.twin_off - h.root_off);
	assert_true(h.seal_off + PMTX_TWIN_SEAL_SIZE <= h.size);
	assert_int_equal(PMTX_TW_STATE(rs.twin), PMTX_TW_IDLE);
	const char *plain;
	pmtx_region *p = tu_create(&plain, SIZE, sizeof(struct root),
	                           PMTX_PDOM1, PMTX_BACKEND_HARDWARE,
	                           PMTX_RT_UNDO);
	assert_int_equal(pmtx_close(p), 0);
	struct pmtx_hdr ph;
	read_file_hdr(plain, &ph, &rs);
	assert_int_equal(ph.twin_off, 0);
	assert_int_equal(ph.feat_incompat, PMTX_FEAT_INCOMPAT_JOURNAL_MARK);
	assert_true(h.nsb * 2 <= ph.nsb && h.nsb * 2 + 2 >= ph.nsb);
	unlink(plain);
	unlink(path);
}

/* A transaction that writes: 3 barriers if it stored to at most
 * SEAL_MAX_LINES lines (MUTATING, data and seal, back copy), else 4
 * (MUTATING, data, COPYING, back copy); 0 for one that only reads; 2 for
 * an abort (MUTATING, restore). */
static void barrier_counts(void **state)
{
	const char *path;
	pmtx_region *r = make_twin(&path);
	struct root *rt = root_of(r);
	pmtx_tx *tx;
	uint64_t v;
	tu_count_start();
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_read(tx, &v, &rt->w[3], 8), 0);
	assert_int_equal(pmtx_commit(tx), 0);
	assert_int_equal(tu_count().barriers, 0);
	assert_int_equal(tu_count().flushes, 0);
	/* 1, 3, 17, 48 (the most a seal takes), 49, 65, 1 and 49 lines */
	static const unsigned nwrites[] = {1, 8, 64, 188, 192, 256, 1, 192};
	int after_seal = 0; /* the transaction before committed by its seal */
	for (size_t i = 0; i < sizeof(nwrites) / sizeof(nwrites[0]); i++) {
		tu_count_start();
		assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
		for (unsigned k = 0; k < nwrites[i]; k++) {
			v = k * 7 + i;
			assert_int_equal(pmtx_write(tx, &rt->w[k * 2], &v, 8),
			                 0);
			/* a second write to the same line costs nothing */
			assert_int_equal(pmtx_write(tx, &rt->w[k * 2], &v, 8),
			                 0);
		}
		assert_int_equal(pmtx_commit(tx), 0);
		pmtx_counters c = tu_count();
		/* The words are at root + 16 (after the object header), 16
		 * bytes apart, and the root starts a page. Every data line is
		 * flushed and written to the back copy with non-temporal
		 * stores, a line each. A small transaction writes its seal
		 * (the 64-byte head and 8 bytes a line) with non-temporal
		 * stores; a large one flushes COPYING. Each flushes MUTATING
		 * and waits for it, unless the transaction before committed
		 * by its seal (twin.c TW13). */
		unsigned end = 16 + (nwrites[i] - 1) * 16 + 8;
		unsigned lines = (end + 63) / 64;
		int small = lines <= SEAL_MAX_LINES;
		assert_int_equal(c.barriers, (small ? 2 : 3) + !after_seal);
		assert_int_equal(c.flushes, !small + !after_seal + lines);
		after_seal = small;
		assert_int_equal(c.nt_bytes,
		                 64 * lines + (small ? 64 + 8 * lines : 0));
		assert_int_equal(c.bytes_logged, 0);
		assert_at_rest(r);
		assert_int_equal(PMTX_TW_STATE(twin_state(r)),
		                 small ? PMTX_TW_MUTATING : PMTX_TW_IDLE);
	}
	tu_count_start();
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	v = 99;
	assert_int_equal(pmtx_write(tx, &rt->w[0], &v, 8), 0);
	assert_int_equal(pmtx_abort(tx), 0);
	assert_int_equal(tu_count().barriers, 2);
	assert_int_equal(rt->w[0], 0 * 7 + 7);
	/* An allocation alone: a small transaction, after an abort, then
	 * after a small commit. */
	pmtx_off off;
	for (unsigned want = 3; want >= 2; want--) {
		tu_count_start();
		assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
		assert_int_equal(pmtx_alloc(tx, 100, &off), 0);
		assert_int_equal(pmtx_commit(tx), 0);
		assert_int_equal(tu_count().barriers, want);
	}
	assert_twins_equal(r);
	tu_close_and_remove(r, path);
}

/* Random transactions of writes, allocations (zeroed, written, or
 * initialised with naked stores and pmtx_flush) and frees, some aborted:
 * after each, the back copy equals the data, and the state is IDLE. */
static void back_copy_follows_commits_and_aborts(void **state)
{
	const char *path;
	pmtx_region *r = make_twin(&path);
	struct root *rt = root_of(r);
	uint64_t seed = 42;
	for (int i = 0; i < 300; i++) {
		pmtx_tx *tx;
		assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
		for (int k = (int)(tu_rand(&seed) % 20); k >= 0; k--) {
			uint64_t v = tu_rand(&seed);
			unsigned w = (unsigned)(v % NWORDS);
			assert_int_equal(pmtx_write(tx, &rt->w[w], &v, 8), 0);
		}
		unsigned s = (unsigned)(tu_rand(&seed) % 16);
		pmtx_off off = rt->blk[s];
		if (off) {
			assert_int_equal(pmtx_free(tx, off), 0);
			off = 0;
		} else {
			size_t n = 16 + tu_rand(&seed) % 5000;
			int how = (int)(tu_rand(&seed) % 3);
			if (how == 0) {
				assert_int_equal(pmtx_zalloc(tx, n, &off), 0);
			} else {
				assert_int_equal(pmtx_alloc(tx, n, &off), 0);
				char *p = pmtx_ptr(r, off);
				if (how == 1) {
					memset(p, 0x5a, n);
					pmtx_flush(r, p, n);
				} else {
					assert_int_equal(
						pmtx_memset(tx, p, 0xa5, n), 0);
				}
			}
		}
		assert_int_equal(pmtx_write(tx, &rt->blk[s], &off, 8), 0);
		if (i % 7 == 3)
			assert_int_equal(pmtx_abort(tx), 0);
		else
			assert_int_equal(pmtx_commit(tx), 0);
		assert_at_rest(r);
		assert_twins_equal(r);
	}
	pmtx_heap_stats st;
	assert_int_equal(pmtx_heap_check(r, &st), 0);
	assert_int_equal(pmtx_close(r), 0);
	r = tu_open(path);
	assert_int_equal(pmtx_heap_check(r, &st), 0);
	assert_twins_equal(r);
	tu_close_and_remove(r, path);
}

/* Outside a transaction, pmtx_persist, pmtx_flush + pmtx_barrier and
 * pmtx_memcpy_nt reach the back copy too (TW6). */
static void naked_persistence_reaches_the_back_copy(void **state)
{
	const char *path;
	pmtx_region *r = make_twin(&path);
	struct root *rt = root_of(r);
	rt->w[1] = 11;
	assert_int_equal(pmtx_persist(r, &rt->w[1], 8), 0);
	rt->w[100] = 12;
	pmtx_flush(r, &rt->w[100], 8);
	assert_int_equal(pmtx_barrier(r), 0);
	uint64_t v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	pmtx_memcpy_nt(r, &rt->w[200], v, sizeof(v));
	assert_int_equal(pmtx_barrier(r), 0);
	assert_twins_equal(r);
	/* A crash in the next transaction restores the back copy: the
	 * naked stores are in it. */
	pid_t pid = tu_fork();
	if (pid == 0) {
		pmtx_tx *tx;
		uint64_t z = 0;
		if (pmtx_begin(r, PMTX_RT_DEFAULT, &tx))
			_exit(2);
		for (unsigned i = 0; i < NWORDS; i++)
			pmtx_write(tx, &rt->w[i], &z, 8);
		_exit(0); /* killed inside: MUTATING */
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	/* the child's stores are in the shared mapping: reopen */
	assert_int_equal(PMTX_TW_STATE(twin_state(r)), PMTX_TW_MUTATING);
	assert_int_equal(pmtx_close(r), 0);
	r = tu_open(path);
	rt = root_of(r);
	assert_int_equal(rt->w[1], 11);
	assert_int_equal(rt->w[100], 12);
	assert_memory_equal(&rt->w[200], v, sizeof(v));
	assert_int_equal(PMTX_TW_STATE(twin_state(r)), PMTX_TW_IDLE);
	assert_twins_equal(r);
	tu_close_and_remove(r, path);
}

/* Edit the closed region's file: a data word, a back-copy word and the
 * state word. */
static void edit_file(const char *path, uint64_t data_word, uint64_t back_word,
                      uint64_t state)
{
	struct pmtx_hdr h;
	struct pmtx_rstate st;
	read_file_hdr(path, &h, &st);
	uint64_t word0 = h.root_off + sizeof(struct pmtx_objhdr);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &data_word, 8, (off_t)word0), 8);
	assert_int_equal(pwrite(fd, &back_word, 8,
	                        (off_t)(word0 + h.twin_off - h.root_off)),
	                 8);
	assert_int_equal(pwrite(fd, &state, 8,
	                        (off_t)(h.rstate_off +
	                                offsetof(struct pmtx_rstate, twin))),
	                 8);
	close(fd);
}

/* The whole file, to put back between cases. */
static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	off_t n = lseek(fd, 0, SEEK_END);
	char *buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)n, 0), n);
	close(fd);
	*len = (size_t)n;
	return buf;
}

static void put_back(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, buf, len, 0), (ssize_t)len);
	close(fd);
}

/* A small transaction left MUTATING and its seal (TW10): recovery keeps
 * it when its seal is accepted, even with the back copy behind, and
 * restores the back copy when the seal is not accepted (S2): a data line
 * that is not what was sealed, a seal of another seq, a check word that
 * does not match, a listed offset outside the mirrored area. */
static void a_sealed_commit_is_kept_only_by_an_accepted_seal(void **state)
{
	const char *path;
	pmtx_region *r = make_twin(&path);
	pid_t pid = tu_fork();
	if (pid == 0) { /* commit, then die without closing */
		pmtx_tx *tx;
		uint64_t v = 111;
		if (pmtx_begin(r, PMTX_RT_DEFAULT, &tx) ||
		    pmtx_write(tx, &root_of(r)->w[0], &v, 8) ||
		    pmtx_commit(tx))
			_exit(2);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	uint64_t w = twin_state(r);
	assert_int_equal(PMTX_TW_STATE(w), PMTX_TW_MUTATING);
	assert_int_equal(pmtx_close(r), 0); /* leaves the word as it is */
	struct pmtx_hdr h;
	struct pmtx_rstate st;
	read_file_hdr(path, &h, &st);
	assert_int_equal(st.twin, w);
	size_t len;
	char *image = slurp(path, &len);
	uint64_t seal = h.seal_off, bad_off = h.twin_off;
	static const struct {
		const char *what;
		uint64_t data, back, state_seq_delta, off, word;
		uint64_t want;
	} cases[] = {
		{"back copy behind", 111, 0, 0, 0, 0, 111},
		{"data line not as sealed", 5, 0, 0, 0, 0, 0},
		{"seal of another seq", 111, 0, 1, 0, 0, 0},
		{"check word damaged", 111, 0, 0, 16, 1, 0},
		{"offset outside the mirrored area", 111, 0, 0, 64, 2, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		put_back(path, image, len);
		edit_file(path, cases[i].data, cases[i].back,
		          PMTX_TW(PMTX_TW_SEQ(w) + cases[i].state_seq_delta,
		                  PMTX_TW_MUTATING));
		if (cases[i].off) {
			uint64_t x = cases[i].word == 2 ? bad_off : 0;
			int fd = open(path, O_RDWR);
			assert_int_equal(pread(fd, &x, cases[i].word == 1 ? 8 : 0,
			                       (off_t)(seal + cases[i].off)),
			                 cases[i].word == 1 ? 8 : 0);
			x ^= cases[i].word == 1 ? 1 : 0;
			assert_int_equal(pwrite(fd, &x, 8,
			                        (off_t)(seal + cases[i].off)),
			                 8);
			close(fd);
		}
		tu_count_start();
		r = tu_open(path);
		pmtx_counters c = tu_count();
		/* An accepted seal: both copies of its one line flushed,
		 * equal or not, then IDLE; one barrier (twin.c TW12). */
		if (cases[i].want == 111)
			assert_true(c.flushes == 3 && c.barriers == 1);
		if (root_of(r)->w[0] != cases[i].want)
			fail_msg("%s: w[0] %llu, want %llu", cases[i].what,
			         (unsigned long long)root_of(r)->w[0],
			         (unsigned long long)cases[i].want);
		assert_int_equal(PMTX_TW_STATE(twin_state(r)), PMTX_TW_IDLE);
		assert_twins_equal(r);
		assert_int_equal(pmtx_close(r), 0);
	}
	free(image);
	unlink(path);
}

/* TW13: a process commits w[0] = 111 by its seal, then dies in the next
 * transaction, which stored under that seal (no MUTATING of its own):
 * into another line only, so the seal is still accepted, or into the
 * sealed line too, so it is not. Either way the next open keeps 111 and
 * restores the other line from the back copy. A recovery that copied
 * only the sealed lines would keep 555. */
static void a_crash_under_an_earlier_seal_restores_the_back_copy(
	void **state)
{
	for (int into_sealed = 0; into_sealed < 2; into_sealed++) {
		const char *path;
		pmtx_region *r = make_twin(&path);
		pid_t pid = tu_fork();
		if (pid == 0) {
			pmtx_tx *tx;
			uint64_t a = 111, b = 555, c = 666;
			uint64_t *w = root_of(r)->w;
			if (pmtx_begin(r, PMTX_RT_DEFAULT, &tx) ||
			    pmtx_write(tx, &w[0], &a, 8) || pmtx_commit(tx))
				_exit(2);
			uint64_t seq = PMTX_TW_SEQ(twin_state(r));
			if (pmtx_begin(r, PMTX_RT_DEFAULT, &tx) ||
			    pmtx_write(tx, &w[100], &b, 8) ||
			    (into_sealed && pmtx_write(tx, &w[1], &c, 8)))
				_exit(3);
			/* no new MUTATING: the same word as after the commit */
			_exit(twin_state(r) ==
			              PMTX_TW(seq, PMTX_TW_MUTATING) ? 0 : 4);
		}
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_int_equal(WEXITSTATUS(status), 0);
		assert_int_equal(root_of(r)->w[100], 555); /* not closed yet */
		assert_int_equal(pmtx_close(r), 0);
		r = tu_open(path);
		struct root *rt = root_of(r);
		if (rt->w[0] != 111 || rt->w[100] != 0 || rt->w[1] != 0)
			fail_msg("into the sealed line %d: w[0] %llu, w[1] %llu, "
			         "w[100] %llu; want 111, 0, 0", into_sealed,
			         (unsigned long long)rt->w[0],
			         (unsigned long long)rt->w[1],
			         (unsigned long long)rt->w[100]);
		assert_int_equal(PMTX_TW_STATE(twin_state(r)), PMTX_TW_IDLE);
		assert_twins_equal(r);
		tu_close_and_remove(r, path);
	}
}

/* recovery.c R4: after a kill -9, a recovery pass flushes every line it
 * covers in the copy it writes, not only the lines that differ: one that
 * reads the same in both may hold stores of the dead process that never
 * reached the media. A process commits a 32 KiB block, then dies in a
 * transaction that stored under that commit's seal; the next open's pass
 * (the back copy over the data area) must flush at least the data area
 * from the root to the heap and the block's superblock, beside the
 * sweep's lines (everything before the heap, the back copy's root and
 * metadata). Without the pass's flush it flushes only the lines that
 * differ there. */
static void a_pass_after_a_kill_flushes_all_it_covers(void **state)
{
	const char *path;
	pmtx_region *r = make_twin(&path);
	struct pmtx_hdr h;
	struct pmtx_rstate st;
	assert_int_equal(pmtx_close(r), 0);
	read_file_hdr(path, &h, &st);
	uint64_t nsb = st.nsb;
	pid_t pid = tu_fork();
	if (pid == 0) {
		pmtx_region *cr = NULL;
		pmtx_tx *tx;
		pmtx_off b;
		uint64_t v = 9;
		int ok = pmtx_open(path, NULL, &cr) == 0 &&
		         pmtx_begin(cr, PMTX_RT_DEFAULT, &tx) == 0 &&
		         pmtx_alloc(tx, 32768, &b) == 0 &&
		         pmtx_write(tx, pmtx_ptr(cr, b), &v, 8) == 0 &&
		         pmtx_commit(tx) == 0 &&
		         pmtx_begin(cr, PMTX_RT_DEFAULT, &tx) == 0 &&
		         pmtx_write(tx, &root_of(cr)->w[200], &v, 8) == 0;
		_exit(ok ? 0 : 1); /* dies inside the transaction */
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pmtx_counters a, c;
	pmtx_counters_get(&a);
	r = tu_open(path);
	pmtx_counters_get(&c);
	uint64_t meta_end = h.meta_off + nsb * sizeof(struct pmtx_sb_meta);
	uint64_t sweep = meta_end / 64 + (meta_end - h.root_off) / 64;
	uint64_t pass = (h.heap_off - h.root_off) / 64 + PMTX_SB_SIZE / 64;
	if (c.flushes - a.flushes < sweep + pass)
		fail_msg("%llu lines flushed, want at least %llu + %llu",
		         (unsigned long long)(c.flushes - a.flushes),
		         (unsigned long long)sweep, (unsigned long long)pass);
	assert_int_equal(root_of(r)->w[200], 0);
	assert_twins_equal(r);
	tu_close_and_remove(r, path);
}

/* TW14: recovery copies the root, the heap metadata and the superblocks
 * in use. A process commits a 1 KiB block A holding 5 and a 100 KiB block
 * L (a run of two superblocks) holding 11 in its second superblock, then,
 * in a transaction that stores under that commit's seal (or, after an
 * abort, under a MUTATING of its own), writes 6 into A and 12 into L,
 * allocates another 100 KiB block B, writes 7 into it and 9 into w[0],
 * and dies. The next open brings back w[0] = 0, A = 5 and L = 11 (a pass
 * that skipped SMALL superblocks, or the rest of a LARGE run, would keep
 * 6 or 12), and frees B, leaving B's superblocks alone: their 7 is still
 * in the data area, where a pass over the whole region would have copied
 * the back copy's 0 over it (free blocks' bytes are unspecified). */
static void recovery_copies_only_the_heap_in_use(void **state)
{
	for (int own_mark = 0; own_mark < 2; own_mark++) {
		const char *path;
		pmtx_region *r = make_twin(&path);
		int fd[2];
		assert_int_equal(pipe(fd), 0);
		pid_t pid = tu_fork();
		if (pid == 0) {
			pmtx_tx *tx;
			pmtx_off a, b, l;
			uint64_t v5 = 5, v6 = 6, v7 = 7, v9 = 9, v11 = 11, v12 = 12;
			struct root *rt = root_of(r);
			if (pmtx_begin(r, PMTX_RT_DEFAULT, &tx) ||
			    pmtx_alloc(tx, 1024, &a) ||
			    pmtx_write(tx, pmtx_ptr(r, a), &v5, 8) ||
			    pmtx_write(tx, &rt->blk[0], &a, 8) ||
			    pmtx_alloc(tx, 100u << 10, &l) ||
			    pmtx_write(tx, pmtx_ptr(r, l + 70000), &v11, 8) ||
			    pmtx_write(tx, &rt->blk[1], &l, 8) || pmtx_commit(tx))
				_exit(2);
			if (own_mark && (pmtx_begin(r, PMTX_RT_DEFAULT, &tx) ||
			                 pmtx_write(tx, &rt->w[1], &v5, 8) ||
			                 pmtx_abort(tx)))
				_exit(3);
			if (pmtx_begin(r, PMTX_RT_DEFAULT, &tx) ||
			    pmtx_write(tx, pmtx_ptr(r, a), &v6, 8) ||
			    pmtx_write(tx, pmtx_ptr(r, l + 70000), &v12, 8) ||
			    pmtx_alloc(tx, 100u << 10, &b) ||
			    pmtx_write(tx, pmtx_ptr(r, b), &v7, 8) ||
			    pmtx_write(tx, &rt->w[0], &v9, 8))
				_exit(4);
			if (write(fd[1], &b, sizeof(b)) != (ssize_t)sizeof(b))
				_exit(5);
			_exit(0); /* no commit, no close */
		}
		close(fd[1]);
		pmtx_off b = 0;
		assert_int_equal(read(fd[0], &b, sizeof(b)), (ssize_t)sizeof(b));
		close(fd[0]);
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_int_equal(WEXITSTATUS(status), 0);
		assert_int_equal(pmtx_close(r), 0);
		r = tu_open(path);
		struct root *rt = root_of(r);
		assert_int_equal(rt->w[0], 0);
		assert_int_equal(*(uint64_t *)pmtx_ptr(r, rt->blk[0]), 5);
		assert_int_equal(*(uint64_t *)pmtx_ptr(r, rt->blk[1] + 70000),
		                 11);
		assert_int_equal(*(uint64_t *)pmtx_ptr(r, b), 7); /* left */
		pmtx_heap_stats st;
		assert_int_equal(pmtx_heap_check(r, &st), 0);
		/* B's space is free again: a block of its size fits there */
		pmtx_tx *tx;
		pmtx_off b2;
		assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
		assert_int_equal(pmtx_alloc(tx, 100u << 10, &b2), 0);
		assert_int_equal(pmtx_commit(tx), 0);
		assert_int_equal(b2, b);
		tu_close_and_remove(r, path);
	}
}

/* MUTATING: the back copy wins; COPYING: the data wins; IDLE: nothing is
 * read or written; anything else: corrupt, and the file is untouched. */
static void recovery_follows_the_state_word(void **state)
{
	const char *path;
	pmtx_region *r = make_twin(&path);
	assert_int_equal(pmtx_close(r), 0);
	static const struct {
		unsigned st;
		uint64_t want;
	} cases[] = {{PMTX_TW_MUTATING, 222}, {PMTX_TW_COPYING, 111}};
	for (size_t i = 0; i < 2; i++) {
		edit_file(path, 111, 222, PMTX_TW(5, cases[i].st));
		tu_count_start();
		r = tu_open(path);
		const struct pmtx_hdr *h =
			(const void *)((const char *)pmtx_ptr(r, PMTX_HDR_SIZE) -
			               PMTX_HDR_SIZE);
		/* COPYING: the data area's root and heap metadata written
		 * back too (they may be visible and not durable after a
		 * process crash), the line of w[0], then IDLE; no superblock
		 * is in use (twin.c TW14) */
		if (cases[i].st == PMTX_TW_COPYING)
			assert_int_equal(tu_count().flushes,
			                 (h->heap_off - h->root_off) / 64 + 1 +
			                         1);
		assert_int_equal(root_of(r)->w[0], cases[i].want);
		assert_int_equal(twin_state(r), PMTX_TW(5, PMTX_TW_IDLE));
		assert_twins_equal(r);
		assert_int_equal(pmtx_close(r), 0);
		/* a second open has nothing to do and writes nothing */
		uint64_t hash = tu_file_hash(path);
		r = tu_open(path);
		assert_int_equal(pmtx_close(r), 0);
		assert_true(tu_file_hash(path) == hash);
	}
	edit_file(path, 111, 333, PMTX_TW(6, 7));
	uint64_t hash = tu_file_hash(path);
	r = NULL;
	assert_int_equal(pmtx_open(path, NULL, &r), PMTX_E_CORRUPT);
	assert_non_null(strstr(pmtx_errmsg(), "twin state"));
	assert_true(tu_file_hash(path) == hash);
	unlink(path);
	/* A region without the feature must have a zero word. */
	r = tu_create(&path, SIZE, 64, PMTX_PDOM1, PMTX_BACKEND_HARDWARE,
	              PMTX_RT_REDO);
	assert_int_equal(pmtx_close(r), 0);
	struct pmtx_hdr h;
	struct pmtx_rstate st;
	read_file_hdr(path, &h, &st);
	uint64_t one = PMTX_TW_MUTATING;
	int fd = open(path, O_RDWR);
	assert_int_equal(pwrite(fd, &one, 8,
	                        (off_t)(h.rstate_off +
	                                offsetof(struct pmtx_rstate, twin))),
	                 8);
	close(fd);
	assert_int_equal(pmtx_open(path, NULL, &r), PMTX_E_CORRUPT);
	unlink(path);
}

/* Twin transactions of a region run one at a time (TW5): threads adding
 * to counters with read-modify-write transactions lose no update. */
struct adder {
	pmtx_region *r;
	unsigned id;
};

static void *add_loop(void *arg)
{
	struct adder *a = arg;
	struct root *rt = root_of(a->r);
	for (int i = 0; i < 2000; i++) {
		pmtx_tx *tx;
		if (pmtx_begin(a->r, PMTX_RT_DEFAULT, &tx))
			return (void *)1;
		uint64_t v;
		/* the shared word: correct only if transactions do not
		 * interleave */
		if (pmtx_read(tx, &v, &rt->w[0], 8))
			return (void *)1;
		v++;
		if (pmtx_write(tx, &rt->w[0], &v, 8) ||
		    pmtx_write(tx, &rt->w[1 + a->id * 8], &v, 8) ||
		    pmtx_commit(tx))
			return (void *)1;
	}
	return NULL;
}

static void transactions_run_one_at_a_time(void **state)
{
	const char *path;
	pmtx_region *r = make_twin(&path);
	struct adder a[4];
	for (unsigned i = 0; i < 4; i++)
		a[i] = (struct adder){r, i};
	assert_int_equal(tu_run_threads(add_loop, a, sizeof(*a), 4), 0);
	assert_int_equal(root_of(r)->w[0], 8000);
	assert_twins_equal(r);
	tu_close_and_remove(r, path);
}

/* A naked flush outside transactions waits for a running twin
 * transaction (TW5): it must not copy that transaction's uncommitted
 * bytes to the back copy, where an abort or a crash would take them. */
struct naked_arg {
	pmtx_region *r;
	volatile int go, done;
};

static void *naked_persist(void *arg)
{
	struct naked_arg *a = arg;
	struct root *rt = root_of(a->r);
	while (!a->go)
		usleep(100);
	rt->w[0] = 5; /* beside the transaction's w[1], in its line */
	if (pmtx_persist(a->r, &rt->w[0], 16)) /* covers w[1] too */
		return (void *)1;
	a->done = 1;
	return NULL;
}

static void naked_flush_waits_for_the_running_transaction(void **state)
{
	const char *path;
	pmtx_region *r = make_twin(&path);
	struct root *rt = root_of(r);
	struct naked_arg a = {r, 0, 0};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, naked_persist, &a), 0);
	pmtx_tx *tx;
	uint64_t v = 777;
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_write(tx, &rt->w[1], &v, 8), 0);
	a.go = 1;
	usleep(50000); /* the other thread is in pmtx_persist by now */
	assert_int_equal(a.done, 0);
	assert_int_equal(pmtx_abort(tx), 0);
	void *ret;
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_null(ret);
	assert_int_equal(rt->w[0], 5);
	assert_int_equal(rt->w[1], 0); /* not 777 from a polluted back copy */
	assert_twins_equal(r);
	tu_close_and_remove(r, path);
}

/* An abort restores the bytes the transaction declared, not the whole
 * lines: a naked store beside them, in the same line, stays (TW7). */
static void abort_restores_only_the_declared_bytes(void **state)
{
	const char *path;
	pmtx_region *r = make_twin(&path);
	struct root *rt = root_of(r);
	pmtx_tx *tx;
	uint64_t v = 1;
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_write(tx, &rt->w[0], &v, 8), 0);
	assert_int_equal(pmtx_add_range(tx, &rt->w[9], 4), 0);
	rt->w[9] = 0x1111111111111111ull; /* half declared */
	rt->w[2] = 99;                    /* not declared */
	assert_int_equal(pmtx_abort(tx), 0);
	assert_int_equal(rt->w[0], 0);
	assert_int_equal(rt->w[2], 99);
	assert_int_equal(rt->w[9], 0x1111111100000000ull);
	tu_close_and_remove(r, path);
}

/* Inside a transaction that has been aborted (but not ended), naked
 * persistence still reaches the back copy: nothing joins an aborted
 * transaction. */
static void naked_copies_in_an_aborted_transaction_reach_the_back_copy(
	void **state)
{
	const char *path;
	pmtx_region *r = make_twin(&path);
	struct root *rt = root_of(r);
	pmtx_tx *tx, *inner;
	uint64_t v = 42;
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
	assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &inner), 0);
	assert_int_equal(pmtx_abort(inner), 0);
	pmtx_memcpy_nt(r, &rt->w[8], &v, 8);
	rt->w[16] = 43;
	assert_int_equal(pmtx_persist(r, &rt->w[16], 8), 0);
	assert_int_equal(pmtx_barrier(r), 0);
	assert_int_equal(pmtx_commit(tx), PMTX_E_ABORTED);
	assert_int_equal(rt->w[8], 42);
	assert_twins_equal(r);
	tu_close_and_remove(r, path);
}

/* A heap that cannot grow: the allocation fails with PMTX_E_NOMEM, the
 * transaction can still commit what it wrote, and nothing is lost. */
static void a_full_heap_fails_cleanly(void **state)
{
	const char *path;
	pmtx_region *r = make_twin(&path);
	struct root *rt = root_of(r);
	pmtx_tx *tx;
	unsigned n = 0;
	for (;; n++) {
		pmtx_off off;
		assert_int_equal(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), 0);
		int rc = pmtx_alloc(tx, 60000, &off);
		if (rc) {
			assert_int_equal(rc, PMTX_E_NOMEM);
			uint64_t v = n;
			assert_int_equal(pmtx_write(tx, &rt->w[7], &v, 8), 0);
			assert_int_equal(pmtx_commit(tx), 0);
			break;
		}
		assert_int_equal(pmtx_commit(tx), 0);
	}
	assert_true(n > 10);
	pmtx_heap_stats st;
	assert_int_equal(pmtx_heap_check(r, &st), 0);
	assert_twins_equal(r);
	assert_int_equal(pmtx_close(r), 0);
	r = tu_open(path);
	assert_int_equal(root_of(r)->w[7], n);
	tu_close_and_remove(r, path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(runtimes_and_regions_go_together),
		cmocka_unit_test(a_twin_region_has_a_fixed_size),
		cmocka_unit_test(barrier_counts),
		cmocka_unit_test(back_copy_follows_commits_and_aborts),
		cmocka_unit_test(naked_persistence_reaches_the_back_copy),
		cmocka_unit_test(recovery_follows_the_state_word),
		cmocka_unit_test(a_sealed_commit_is_kept_only_by_an_accepted_seal),
		cmocka_unit_test(
			a_crash_under_an_earlier_seal_restores_the_back_copy),
		cmocka_unit_test(a_pass_after_a_kill_flushes_all_it_covers),
		cmocka_unit_test(recovery_copies_only_the_heap_in_use),
		cmocka_unit_test(transactions_run_one_at_a_time),
		cmocka_unit_test(naked_flush_waits_for_the_running_transaction),
		cmocka_unit_test(abort_restores_only_the_declared_bytes),
		cmocka_unit_test(
			naked_copies_in_an_aborted_transaction_reach_the_back_copy),
		cmocka_unit_test(a_full_heap_fails_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
