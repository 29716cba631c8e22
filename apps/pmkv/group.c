/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * group.c - group commit: the requests of several connections, and the
 * pipelined requests of each, run in one store transaction (store.c S8)
 * and are acknowledged together after its one commit.
 *
 * DESIGN
 * A thread with requests to run queues its connection. The thread at the
 * head of the queue leads: it takes every connection queued so far (at
 * most GROUP_CONNS), opens a store group, runs each one's groupable
 * requests at the head of its input (conn.c N5), ends the group, and
 * wakes the others. Connections queued while it runs wait for the next
 * leader, so the threads that arrive during one commit share the next:
 * the persist barriers (and, on the file backend, the page write-backs)
 * of a commit are paid once per group instead of once per request. A single
 * connection's pipeline gains the same way, in either server
 * architecture.
 *
 * Invariants
 *  G1. A reply to a request run in a group is sent only after the group's
 *      commit has returned: the replies wait in the connection's output
 *      until conn_group_settle, which each connection's own thread calls
 *      after the leader has ended the group (store.c S1 for the group).
 *  G2. A connection's buffers are touched by one thread at a time: by the
 *      leader between the queueing and the wake-up, while the owner
 *      waits, and by the owner otherwise (loop.c L1).
 *  G3. A group in which an operation failed changed nothing (S8); every
 *      connection then runs the same requests again, one transaction each
 *      (conn_run), so a failing command fails alone and the others
 *      succeed as they would have. A group whose commit failed on the
 *      disk may have been applied (pmtx applies a transaction whose
 *      COMMIT record was written); the store is broken then (store.c
 *      S11), so those runs are refused, and nothing is applied twice.
 *  G4. One leader at a time, in queue order: a thread leads only at the
 *      head of the queue, and leaves the head only after settling its
 *      group, waking the next head.
 *  G5. A waiting thread spins a while (GROUP_SPIN pauses) before it
 *      sleeps: on /dev/shm a group commits in a few microseconds, less
 *      than a sleeping thread takes to wake on this class of machine
 *      (store.c S2); measured with 4 clients of
 *      pmkv-load, sleeping at once cost 10-20 % against no queue at all,
 *      spinning first nothing. On a disk it sleeps. done and head are
 *      written under the queue lock and read while spinning; a thread
 *      that sleeps says so under the lock, and only a sleeping thread is
 *      signalled, so no wake-up is lost.
 *  G6. An event loop queues the connections that became ready in one
 *      turn of the loop together (group_commit_many), one after the
 *      other, so a leader takes them into one group (up to GROUP_CONNS):
 *      the connections of one loop share a commit as threads do. The
 *      loop's thread then waits on, or leads, each of its entries in
 *      queue order, as a thread does its one.
 *  G7. A write in a group that wakes blocked clients serves them in the
 *      same group, right after it (blocking.c B3); their replies are
 *      given them only once the group has committed, and an aborted
 *      group leaves them waiting (B4): its requests, run again alone,
 *      serve them again.
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <unistd.h>

#include "blocking.h"
#include "conn.h"
#include "group.h"
#include "script.h"

/* GROUP_CONNS, connections in one group: group.h */
#define GROUP_REQS 256   /* requests of one connection in one group */
#define GROUP_SPIN 4096  /* pauses before a waiting thread sleeps (G5) */

struct gentry {
	struct conn *c;
	pthread_cond_t cv;
	_Atomic int done;
	int committed, sleeping;
	struct gentry *next;
};

static struct {
	pthread_mutex_t m;
	struct gentry *_Atomic head;
	struct gentry *tail;
} q = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL};

/* Run the connections from first to last (inclusive) in one group:
 * 1 committed, 0 not (G3). */
static int run_group(struct server *srv, struct gentry *first,
                     struct gentry *last)
{
	uint64_t cmds = 0, conns = 0;
	int g = script_group_begin(srv); /* pmkv_group_begin, unless */
	if (g == SCRIPT_GROUP_SCRIPT) /* a script runs (script.c X3) */
		return 1; /* nothing ran: conn_run runs the requests */
	if (g != SCRIPT_GROUP_BEGUN)
		return 0;
	for (struct gentry *e = first;; e = e->next) {
		unsigned ran = conn_group_run(e->c, GROUP_REQS);
		cmds += ran;
		conns += ran > 0;
		if (e == last)
			break;
	}
#ifdef PMKV_EARLY_ACK /* tests: kill -9 must catch G1's omission */
	conn_send(first->c, 1); /* the leader's replies, before the commit */
	usleep(2000);
#endif
	int rc = pmkv_group_end(srv->store);
	blocked_settle(rc == 0); /* G7 */
	if (rc)
		return 0;
	srv->groups += cmds > 0; /* an empty group commits nothing */
	srv->group_cmds += cmds;
	srv->group_conns += conns;
	return 1;
}

/* Lead the group that begins at e, the head of the queue (G4). */
static void lead(struct server *srv, struct gentry *e)
{
	struct gentry *last = e;
	for (unsigned n = 1; last->next && n < GROUP_CONNS; n++)
		last = last->next;
	pthread_mutex_unlock(&q.m);
	int committed = run_group(srv, e, last);
	pthread_mutex_lock(&q.m);
	e->done = 1;
	e->committed = committed;
	for (struct gentry *f = e; f != last;) {
		f = f->next;
		f->committed = committed;
		f->done = 1;
		if (f->sleeping)
			pthread_cond_signal(&f->cv);
	}
	struct gentry *next = last->next;
	q.head = next;
	if (!next)
		q.tail = NULL;
	else if (next->sleeping)
		pthread_cond_signal(&next->cv);
}

/* Spin until e is done or at the head, or GROUP_SPIN pauses (G5). */
static void spin(struct gentry *e)
{
	for (unsigned i = 0; i < GROUP_SPIN; i++) {
		if (e->done || q.head == e)
			return;
		_mm_pause();
	}
}

/* Queue es[0..n) at the tail, one after the other (q.m held, G6). */
static void enqueue(struct gentry *es, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (q.tail)
			q.tail->next = &es[i];
		else
			q.head = &es[i];
		q.tail = &es[i];
	}
}

/* Wait until e is done, or at the head: then lead (q.m held). */
static void wait_or_lead(struct server *srv, struct gentry *e)
{
	while (!e->done && q.head != e) {
		pthread_mutex_unlock(&q.m);
		spin(e);
		pthread_mutex_lock(&q.m);
		if (e->done || q.head == e)
			break;
		e->sleeping = 1;
		pthread_cond_wait(&e->cv, &q.m);
		e->sleeping = 0;
	}
	if (!e->done)
		lead(srv, e);
}

void group_commit_many(struct server *srv, struct conn **cs, unsigned n)
{
	struct gentry es[GROUP_CONNS];
	unsigned k = 0;
	for (unsigned i = 0; i < n && k < GROUP_CONNS; i++) {
		if (!cs[i]->n || cs[i]->closing)
			continue;
		es[k] = (struct gentry){.c = cs[i]};
		pthread_cond_init(&es[k++].cv, NULL);
	}
	if (!k)
		return;
	pthread_mutex_lock(&q.m);
	enqueue(es, k);
	for (unsigned i = 0; i < k; i++)
		wait_or_lead(srv, &es[i]);
	pthread_mutex_unlock(&q.m);
	for (unsigned i = 0; i < k; i++) {
		pthread_cond_destroy(&es[i].cv);
		conn_group_settle(es[i].c, es[i].committed);
	}
}

void group_commit(struct server *srv, struct conn *c)
{
	group_commit_many(srv, &c, 1);
}
