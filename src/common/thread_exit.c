/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * thread_exit.c - buffers a thread keeps for itself, freed when it exits.
 *
 * The persist backends keep per-thread DRAM buffers (the file backend's
 * dirty pages, the journal's lines and record, the crash simulator's
 * pending flushes) in _Thread_local storage. A server with a thread per
 * client starts and ends threads all day; without this, every thread that
 * ever reached a barrier left its buffers behind.
 *
 * Invariants
 *  1. One pthread key serves every registration; its value is the
 *     thread's list of registrations, never NULL once one is made, so
 *     that the key's destructor runs at the thread's exit.
 *  2. A registration (struct pmtx__thread_exit) is the thread's own
 *     (_Thread_local) and is on the list at most once: registering it
 *     again does nothing.
 *  3. At exit each registered fn runs once, newest first, and the
 *     registration is off the list before it runs: a fn that makes the
 *     thread register again (it should not) is run at the next round of
 *     destructors, not twice in one round (glibc runs 4 rounds at most:
 *     a registration made in the last one is not run).
 *  4. Best effort: if a registration fails (no key could be made), the
 *     caller's buffer is not freed at exit, as before this file existed;
 *     the callers go on without it.
 */
#include <pthread.h>

#include "util.h"

static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_err; /* pthread_key_create's, or 0 */
static _Thread_local struct pmtx__thread_exit *head;

static void run_all(void *arg)
{
	struct pmtx__thread_exit *e = arg;
	head = NULL;
	while (e) { /* 3 */
		struct pmtx__thread_exit *next = e->next;
		e->next = NULL;
		e->on = 0;
		e->fn(e->arg);
		e = next;
	}
}

static void key_make(void)
{
	key_err = pthread_key_create(&key, run_all);
}

int pmtx__thread_exit_register(struct pmtx__thread_exit *e,
                               void (*fn)(void *), void *arg)
{
	if (e->on) /* 2 */
		return 0;
	pthread_once(&key_once, key_make);
	if (key_err)
		return key_err;
	e->fn = fn, e->arg = arg, e->next = head;
	int rc = pthread_setspecific(key, e); /* 1 */
	if (rc)
		return rc;
	head = e;
	e->on = 1;
	return 0;
}
