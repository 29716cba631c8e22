/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_region.c - libFuzzer harness: the input is a region file.
 *
 * A region comes from disk, so every byte of it is untrusted (layout.h
 * rule 2). Each input is written to one file per process, opened with
 * pmtx_open (header validation, then recovery), checked, used by one small
 * transaction and closed.
 *
 * Design
 *  F1. The input is a literal region image: what the fuzzer runs is what
 *      pmtx_open would see on disk, so a crashing input, saved by libFuzzer,
 *      reproduces with any program that opens it. The structure-aware
 *      help (checksums recomputed, mutations kept inside one area of the
 *      image) lives in the custom mutator (mutate.c), never here. The
 *      reproducers of the bugs found are kept, gzipped, in regress/ and
 *      replayed through these same checks by fuzz_replay (replay.c).
 *  F2. One file per process, rewritten for every input: a memfd reached
 *      through /proc/self/fd (nothing left behind when the process dies),
 *      else /dev/shm/pmtx-fuzz-<pid>.pmtx, removed at exit.
 *  F3. The region is opened the way the crash-state explorer opens one:
 *      emulated backend with no barrier delay (a barrier costs nothing, and
 *      nothing here is about durability), lazy redo-async truncation (no
 *      background thread: an execution is deterministic and self-contained).
 *  F4. What counts as a failure (abort, so that libFuzzer saves the input):
 *      a crash, a hang (-timeout), a sanitizer report or a leak; and
 *      a. an open status outside the set a corrupt file may produce: the
 *         file-format statuses (TOO_SMALL, TRUNCATED, BAD_MAGIC,
 *         BAD_VERSION, BAD_CHECKSUM, CORRUPT) and operating-system errno
 *         values. PMTX_E_INVAL, LOCKED, BAD_LAYOUT (no layout is asked
 *         for), NOMEM, IO and the rest mean a validation path returned
 *         the wrong kind of status, or an earlier execution leaked its lock;
 *      b. PMTX_E_CORRUPT with an empty pmtx_errmsg(). CORRUPT is the one
 *         status that stands for dozens of distinct checks (geometry,
 *         descriptors, logs, heap metadata); without the detail a user
 *         cannot tell which field of the file was wrong. Every other status
 *         names its cause by itself (a bad magic, a checksum, a size), so
 *         an empty detail there is allowed;
 *      c. an open that succeeds on a heap that pmtx_heap_check then finds
 *         inconsistent, before or after the transaction: open promises a
 *         consistent region or a status, never a region that fails its own
 *         check;
 *      d. a rejection before recovery (every status but CORRUPT, which
 *         recovery may return after writing, R1) that changed the file:
 *         region.c invariant 1 says header validation never writes;
 *      e. a second open, after the transaction and close, that issues a
 *         flush or a barrier: recovery and the transaction must have left
 *         nothing to repair (recovery.c R2).
 *  F5. The transaction uses the region's default runtime (a header field,
 *      so the input chooses it): a write to the root (when the root has 8
 *      bytes), a zeroed allocation, and a free of the first block the heap
 *      walk reports (a block the input says is allocated); under
 *      copy-on-write, a new object opened for writing instead of the root
 *      write. A status from any step aborts the transaction; statuses there
 *      are not failures (the input may leave no free block).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pmtx.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int file_fd = -1;
static char file_path[64];

static void remove_file(void)
{
	if (strncmp(file_path, "/dev/shm/", 9) == 0)
		unlink(file_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	file_fd = memfd_create("pmtx-fuzz", MFD_CLOEXEC);
	if (file_fd >= 0) {
		snprintf(file_path, sizeof(file_path), "/proc/self/fd/%d",
		         file_fd);
		return 0;
	}
	snprintf(file_path, sizeof(file_path), "/dev/shm/pmtx-fuzz-%d.pmtx",
	         (int)getpid());
	file_fd = open(file_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (file_fd < 0) {
		perror(file_path);
		abort();
	}
	atexit(remove_file);
	return 0;
}

static void write_input(const uint8_t *data, size_t size)
{
	if (ftruncate(file_fd, (off_t)size) != 0 ||
	    pwrite(file_fd, data, size, 0) != (ssize_t)size) {
		perror("writing the input");
		abort();
	}
}

static _Noreturn void fail(const char *what, int status)
{
	fprintf(stderr, "fuzz_region: %s: status %d (%s), detail \"%s\"\n",
	        what, status, pmtx_strerror(status), pmtx_errmsg());
	abort();
}

/* F4a, F4b. */
static void check_open_status(int rc)
{
	switch (rc) {
	case PMTX_E_CORRUPT:
		if (pmtx_errmsg()[0] == '\0')
			fail("CORRUPT without a detail", rc);
		return;
	case PMTX_E_TOO_SMALL:
	case PMTX_E_TRUNCATED:
	case PMTX_E_BAD_MAGIC:
	case PMTX_E_BAD_VERSION:
	case PMTX_E_BAD_CHECKSUM:
		return;
	default:
		if (rc > 0)
			return; /* errno: the operating system's own reason */
		fail("unexpected open status", rc);
	}
}

/* F4d. */
static void check_untouched(const uint8_t *data, size_t size)
{
	static uint8_t *back;
	static size_t cap;
	if (size == 0)
		return;
	if (cap < size) {
		free(back);
		back = malloc(cap = size);
		if (!back)
			abort();
	}
	if (pread(file_fd, back, size, 0) != (ssize_t)size ||
	    memcmp(back, data, size) != 0)
		fail("a rejected file was written", 0);
}

/* F4e. */
static void check_reopen_clean(const pmtx_options *o)
{
	pmtx_region *r;
	pmtx_counters before, after;
	pmtx_counters_get(&before);
	int rc = pmtx_open(file_path, o, &r);
	if (rc)
		fail("reopen after close", rc);
	pmtx_counters_get(&after);
	if (after.barriers != before.barriers ||
	    after.flushes != before.flushes)
		fail("reopen had something left to recover", 0);
	if ((rc = pmtx_close(r)))
		fail("close after reopen", rc);
}

/* F4c. */
static void check_heap(pmtx_region *r, const char *when)
{
	static pmtx_heap_stats st; /* large: not on the stack */
	int rc = pmtx_heap_check(r, &st);
	if (rc)
		fail(when, rc);
}

static int first_block(pmtx_off off, size_t usable, void *arg)
{
	(void)usable;
	*(pmtx_off *)arg = off;
	return 1;
}

/* The part of F5 that differs between copy-on-write and the others. */
static int tx_update(pmtx_region *r, pmtx_tx *tx)
{
	if (pmtx_tx_runtime(tx) == PMTX_RT_COW) {
		pmtx_off w;
		void *p;
		int rc = pmtx_cow_new(tx, 32, &w);
		if (!rc)
			rc = pmtx_cow_open(tx, w, PMTX_COW_WRITE, NULL, &p);
		if (!rc)
			memset(p, 0x5a, 32);
		return rc;
	}
	size_t root_size;
	uint64_t *root = pmtx_root(r, &root_size);
	if (root_size < sizeof(*root))
		return 0;
	return PMTX_SET(tx, *root, *root + 1);
}

static void run_tx(pmtx_region *r)
{
	pmtx_off old = 0, fresh;
	pmtx_tx *tx;
	pmtx_heap_walk(r, first_block, &old);
	if (pmtx_begin(r, PMTX_RT_DEFAULT, &tx))
		return;
	int rc = tx_update(r, tx);
	if (!rc)
		rc = pmtx_zalloc(tx, 48, &fresh);
	if (!rc && old)
		rc = pmtx_free(tx, old);
	if (rc)
		pmtx_abort(tx);
	else
		pmtx_commit(tx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pmtx_options o;
	pmtx_region *r;
	pmtx_options_init(&o);
	o.backend = PMTX_BACKEND_EMULATED;
	o.barrier_ns = 0;
	o.truncation = PMTX_TRUNC_LAZY;
	write_input(data, size);
	int rc = pmtx_open(file_path, &o, &r);
	if (rc) {
		check_open_status(rc);
		if (rc != PMTX_E_CORRUPT)
			check_untouched(data, size);
		return 0;
	}
	check_heap(r, "heap check after open");
	run_tx(r);
	check_heap(r, "heap check after a transaction");
	rc = pmtx_close(r);
	if (rc)
		fail("close", rc);
	check_reopen_clean(&o);
	return 0;
}
