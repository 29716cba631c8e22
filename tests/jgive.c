/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * jgive.c - the give-back cases of jgive.h. Each hooks the journal's I/O
 * table (persist/journal.h) at the moment its invariant is about.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jgive.h"
#include "testutil.h"
#include "persist/journal.h"

#define NWORDS 8192 /* a root of 64 KiB */
#define MAX_TXS 20000

struct jroot {
	uint64_t w[NWORDS];
};

static pmtx_region *open_region(const char **path)
{
	setenv("PMTX_JOURNAL_SIZE", "64k", 1);
	pmtx_options o = tu_options(sizeof(struct jroot), PMTX_RT_UNDO);
	o.backend = PMTX_BACKEND_JOURNAL;
	pmtx_region *r = tu_create_with(path, 4u << 20, &o);
	unsetenv("PMTX_JOURNAL_SIZE");
	return r;
}

static void close_region(pmtx_region *r, const char *path, int rc)
{
	journal_set_io(NULL);
	assert_int_equal(pmtx_close(r), rc);
	char j[256];
	snprintf(j, sizeof(j), "%s.pmtxj", path);
	unlink(path);
	unlink(j);
}

static uint64_t *word(pmtx_region *r, int i)
{
	return &((struct jroot *)pmtx_root(r, NULL))->w[i];
}

/* One transaction storing v at word i. */
static int commit_word(pmtx_region *r, int i, uint64_t v)
{
	pmtx_tx *tx;
	int rc = pmtx_begin(r, PMTX_RT_UNDO, &tx);
	if (rc)
		return rc;
	if ((rc = pmtx_write(tx, word(r, i), &v, sizeof(v)))) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}

/* Transactions on word 0 until *fired (a hook's), or one fails: its
 * status. */
static int commit_until(pmtx_region *r, const _Atomic int *fired,
                        uint64_t *acked)
{
	int rc = 0;
	for (uint64_t i = 1; i <= MAX_TXS && !rc && !atomic_load(fired); i++)
		if (!(rc = commit_word(r, 0, i)))
			*acked = i;
	return rc;
}

static ssize_t plain_pwrite(int fd, const void *b, size_t n, off_t off,
                            enum journal_site s)
{
	(void)s;
	return pwrite(fd, b, n, off);
}

static int plain_sync(int fd, enum journal_site s)
{
	(void)s;
	return fdatasync(fd);
}

/* ---- invariant 11: a store after the checkpoint's copy ---- */

static struct {
	_Atomic int fired;
	uint64_t *word;
} late;

static int late_sync(int fd, enum journal_site s)
{
	if (s == JS_S_CKPT_REGION && !atomic_exchange(&late.fired, 1))
		*(volatile uint64_t *)late.word = JGIVE_KEPT; /* copied: */
	return fdatasync(fd);                             /* not in the file */
}

static const struct journal_io late_io = {plain_pwrite, late_sync, NULL};

uint64_t jgive_store_after_copy(void)
{
	const char *path;
	pmtx_region *r = open_region(&path);
	uint64_t acked = 0;
	late.word = word(r, 1); /* the line, and the page, of word 0 */
	atomic_store(&late.fired, 0);
	journal_set_io(&late_io);
	assert_int_equal(commit_until(r, &late.fired, &acked), 0);
	assert_true(atomic_load(&late.fired));
	uint64_t v = *word(r, 1);
	close_region(r, path, 0);
	return v;
}

/* ---- invariant 12: a store racing the give-back ---- */

static struct {
	_Atomic int fired, go, done;
	uint64_t *word;
} race;

static void *racer(void *arg)
{
	(void)arg;
	for (int t = 0; !atomic_load(&race.go) && t < 600000; t++)
		usleep(50);
	*(volatile uint64_t *)race.word = JGIVE_KEPT;
	atomic_store(&race.done, 1);
	return NULL;
}

/* Inside the window, after the compare: the racer stores into the run,
 * given up to 500 ms (it waits for the window, when protected). */
static int racing_drop(void *a, size_t n)
{
	uintptr_t w = (uintptr_t)race.word;
	if (w >= (uintptr_t)a && w < (uintptr_t)a + n &&
	    !atomic_exchange(&race.fired, 1)) {
		atomic_store(&race.go, 1);
		for (int t = 0; t < 500 && !atomic_load(&race.done); t++)
			usleep(1000);
	}
	return madvise(a, n, MADV_DONTNEED);
}

static const struct journal_io race_io = {plain_pwrite, plain_sync,
                                          racing_drop};

uint64_t jgive_store_racing(void)
{
	const char *path;
	pmtx_region *r = open_region(&path);
	uint64_t acked = 0;
	pthread_t th;
	race.word = word(r, 1);
	atomic_store(&race.fired, 0);
	atomic_store(&race.go, 0);
	atomic_store(&race.done, 0);
	assert_int_equal(pthread_create(&th, NULL, racer, NULL), 0);
	journal_set_io(&race_io);
	int rc = commit_until(r, &race.fired, &acked);
	atomic_store(&race.go, 1);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(rc, 0);
	uint64_t v = *word(r, 1);
	close_region(r, path, 0);
	return v;
}

/* ---- invariant 10: a failed fdatasync of the region file ---- */

#define NSAVED 64

static struct {
	_Atomic int fired;
	struct {
		off_t off;
		size_t n;
		char *b;
	} s[NSAVED];
	int n;
} lose;

/* A checkpoint's page writes: the file's bytes before each kept. */
static ssize_t saving_pwrite(int fd, const void *b, size_t n, off_t off,
                             enum journal_site s)
{
	if (s == JS_W_CKPT && !atomic_load(&lose.fired)) {
		assert_true(lose.n < NSAVED);
		char *old = malloc(n);
		assert_int_equal(pread(fd, old, n, off), (ssize_t)n);
		lose.s[lose.n].off = off, lose.s[lose.n].n = n;
		lose.s[lose.n++].b = old;
	}
	return pwrite(fd, b, n, off);
}

/* The first fdatasync of the region file fails, and the kernel drops the
 * pages it could not write: the file reads its old bytes again. */
static int losing_sync(int fd, enum journal_site s)
{
	if (s != JS_S_CKPT_REGION || atomic_exchange(&lose.fired, 1))
		return fdatasync(fd);
	for (int i = lose.n - 1; i >= 0; i--) {
		assert_int_equal(pwrite(fd, lose.s[i].b, lose.s[i].n,
		                        lose.s[i].off), (ssize_t)lose.s[i].n);
		free(lose.s[i].b);
	}
	lose.n = 0;
	errno = EIO;
	return -1;
}

static const struct journal_io lose_io = {saving_pwrite, losing_sync, NULL};

uint64_t jgive_failed_sync(void)
{
	const char *path;
	pmtx_region *r = open_region(&path);
	uint64_t acked = 0;
	atomic_store(&lose.fired, 0);
	lose.n = 0;
	journal_set_io(&lose_io);
	assert_int_equal(commit_until(r, &lose.fired, &acked), PMTX_E_IO);
	uint64_t v = *word(r, 0); /* the last commit, or the failed one */
	close_region(r, path, PMTX_E_IO);
	return acked && (v == acked || v == acked + 1) ? JGIVE_KEPT : v;
}
