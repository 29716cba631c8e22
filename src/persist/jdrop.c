/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * jdrop.c - giving back a journal region's private pages.
 *
 * The journal backend maps the region file MAP_PRIVATE (journal.c), so
 * every page a store touches becomes a private, anonymous copy. Once a
 * checkpoint has written a page into the region file and made the file
 * durable, the copy is only memory: madvise(MADV_DONTNEED) on a private
 * file mapping drops it, and the next access maps the file's page again
 * (a read shares the page cache's page, a store copies it anew). What
 * makes this safe is that nobody can tell: the page must read the same
 * bytes after the drop as before, and no store may land in the copy in
 * between, where the drop would lose it. Other threads store into the
 * region without any lock of the journal's, so the drop of a run of
 * pages happens in a window:
 *
 *   1. the run is write-protected (mprotect PROT_READ), the window
 *      published first (lo, hi);
 *   2. each page is compared with the file's bytes (read by the caller);
 *      runs of equal pages are given back (madvise), the others kept;
 *   3. the run is writable again, then the window cleared and its
 *      waiters woken (seq, a futex).
 *
 * Invariants
 *  D1. No store is lost: a store into the run between 1 and 3 faults
 *      (SEGV_ACCERR), and the handler below, in front of any other, waits
 *      for the window to close and returns, so the store is made again,
 *      on the page as it is then: the file's page, whose bytes the copy
 *      it replaced held (2), or the copy, kept. Stores before 1 are in
 *      the copy when 2 compares it.
 *  D2. An access fault inside a registered mapping is always a window's:
 *      pmtx never protects a region's pages otherwise (and a program
 *      must not either). The handler cannot tell a window closed since
 *      the fault from none, and need not: it returns, and the store runs
 *      again. Every other fault goes on to the handler found before ours
 *      (or the default action: the fault repeats and kills).
 *  D3. Readers are never stopped: a page reads the same bytes before and
 *      after it is given back (2), whatever runs around it.
 *  D4. One window at a time in the process (mu), and fork waits for it
 *      (pthread_atfork), so a child never inherits a protected run with
 *      nobody left to lift it.
 *
 * What a program sees: a store into a run being given back waits (a
 * window lasts a compare and an madvise of at most 1 MiB); a system call
 * that writes into it (read(2) into a region buffer) fails with EFAULT,
 * as the kernel does not raise the fault in the program. A program that
 * installs its own SIGSEGV handler after a journal region is opened
 * stops the giving back (the handler is looked for before each window):
 * its pages are then kept until close, as before.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../common/mutant.h"
#include "jdrop.h"

#define NMAPS 64

/* Registered mappings; written under mu, read by the handler. */
static struct {
	_Atomic uintptr_t lo, hi;
} maps[NMAPS];

/* The open window (D4: at most one); seq moves at each close. */
static struct {
	_Atomic uintptr_t lo, hi;
	_Atomic uint32_t seq;
} win;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction prev; /* the handler ours chains to (D2) */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int forks_wait; /* D4: pthread_atfork done */

/* ---- the handler (D1, D2) ---- */

static int in_maps(uintptr_t a)
{
	for (int i = 0; i < NMAPS; i++)
		if (a >= atomic_load(&maps[i].lo) &&
		    a < atomic_load(&maps[i].hi))
			return 1;
	return 0;
}

static void futex(_Atomic uint32_t *w, int op, uint32_t v)
{
	syscall(SYS_futex, w, op, v, NULL, NULL, 0);
}

/* Until no window covers a. seq is read first: a window closed after it
 * makes the wait return at once. */
static void wait_window(uintptr_t a)
{
	for (;;) {
		uint32_t s = atomic_load(&win.seq);
		if (a < atomic_load(&win.lo) || a >= atomic_load(&win.hi))
			return;
		futex(&win.seq, FUTEX_WAIT_PRIVATE, s);
	}
}

static void chain(int sig, siginfo_t *si, void *uc)
{
	if (prev.sa_flags & SA_SIGINFO) {
		prev.sa_sigaction(sig, si, uc);
	} else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
		prev.sa_handler(sig);
	} else { /* the fault repeats under the default action */
		struct sigaction dfl = {.sa_handler = SIG_DFL};
		sigaction(SIGSEGV, &dfl, NULL);
	}
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	if (si->si_code != SEGV_ACCERR || !in_maps(a)) {
		chain(sig, si, uc);
		return;
	}
	int e = errno;
	wait_window(a);
	errno = e;
}

static int ours(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == on_fault;
}

/* Under mu: ours in front of whatever handles SIGSEGV now (a handler
 * put back by signal(2), without SA_SIGINFO, is put right). */
static int install(void)
{
	struct sigaction cur, sa;
	if (sigaction(SIGSEGV, NULL, &cur) != 0)
		return -1;
	if (ours(&cur))
		return 0;
	if (cur.sa_sigaction != on_fault)
		prev = cur;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGSEGV, &sa, NULL);
}

static int installed(void)
{
	struct sigaction cur;
	return sigaction(SIGSEGV, NULL, &cur) == 0 && ours(&cur);
}

/* ---- registration ---- */

static void lock(void)
{
	pthread_mutex_lock(&mu);
}

static void unlock(void)
{
	pthread_mutex_unlock(&mu);
}

static void make_forks_wait(void)
{
	forks_wait = pthread_atfork(lock, unlock, unlock) == 0;
}

int jdrop_register(void *base, size_t len)
{
	pthread_once(&once, make_forks_wait);
	lock();
	int rc = forks_wait ? install() : -1;
	int i = 0;
	while (!rc && i < NMAPS && atomic_load(&maps[i].hi))
		i++;
	if (!rc && i < NMAPS) {
		atomic_store(&maps[i].lo, (uintptr_t)base);
		atomic_store(&maps[i].hi, (uintptr_t)base + len);
	}
	unlock();
	return !rc && i < NMAPS ? 0 : -1;
}

void jdrop_unregister(void *base)
{
	lock();
	for (int i = 0; i < NMAPS; i++)
		if (atomic_load(&maps[i].lo) == (uintptr_t)base &&
		    atomic_load(&maps[i].hi)) {
			atomic_store(&maps[i].hi, 0);
			atomic_store(&maps[i].lo, 0);
		}
	unlock();
}

/* ---- the window ---- */

/* Under mu: published, then protected (1). */
static int win_open(char *a, size_t n)
{
	atomic_store(&win.lo, (uintptr_t)a);
	atomic_store(&win.hi, (uintptr_t)a + n);
	return mprotect(a, n, PROT_READ);
}

/* Under mu: writable again, then cleared and its waiters woken (3). A
 * run that cannot be made writable again would stop its writers for
 * good: mprotect fails only for want of kernel memory, tried again. */
static void win_close(char *a, size_t n, int protected)
{
	for (int t = 0; protected && mprotect(a, n, PROT_READ | PROT_WRITE);
	     t++) {
		if (t == 1000) {
			fprintf(stderr, "pmtx: cannot make %zu bytes of a "
			        "journal region writable again: %s\n", n,
			        strerror(errno));
			abort();
		}
		usleep(1000);
	}
	atomic_store(&win.hi, 0);
	atomic_store(&win.lo, 0);
	atomic_fetch_add(&win.seq, 1);
	futex(&win.seq, FUTEX_WAKE_PRIVATE, INT_MAX);
}

/* Inside the window: give back each run of pages equal to the file's
 * (2). */
static size_t give_equal(char *a, const char *file, size_t n,
                         jdrop_give_fn *give)
{
	int compare = !MUT_ON(MUT_JOURNAL_DROP_COMPARE);
	size_t given = 0, start = 0, run = 0;
	for (size_t o = 0; o <= n; o += JDROP_PAGE) {
		if (o < n && (!compare ||
		              !memcmp(a + o, file + o, JDROP_PAGE))) {
			start = run ? start : o;
			run += JDROP_PAGE;
			continue;
		}
		if (run && give(a + start, run) == 0)
			given += run / JDROP_PAGE;
		run = 0;
	}
	return given;
}

int jdrop_madvise(void *a, size_t n)
{
	return madvise(a, n, MADV_DONTNEED);
}

size_t jdrop_run(char *a, const char *file, size_t n, jdrop_give_fn *give)
{
	int protect = !MUT_ON(MUT_JOURNAL_DROP_PROTECT);
	size_t given = 0;
	lock();
	if (installed()) { /* D2: else a racing store would kill */
		if (!protect || win_open(a, n) == 0)
			given = give_equal(a, file, n, give);
		win_close(a, n, protect); /* a failed open may have begun */
	}
	unlock();
	return given;
}
