/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * loop.c - --io-threads N: connections served by N event-loop threads
 * (libevent), each with non-blocking sockets, instead of a thread per
 * client. The accept loop (server.c) hands each accepted socket to a
 * worker through the worker's pipe, round robin, as memcached does.
 *
 * Invariants
 *  L1. A connection belongs to one worker for its whole life: its buffers
 *      are touched by that worker's thread only, and its commands run
 *      there, one at a time (a thread runs one transaction at a time).
 *  L2. A connection waits for either input or output, never both: while
 *      replies wait to be sent (the socket is full), no request is read
 *      or run (conn.c N4); when they are sent, the requests already
 *      received run before the next read.
 *  L3. The workers stop only after every connection has closed
 *      (server_run: close_all, then loop_stop), so no connection outlives
 *      its loop.
 *  L4. A connection that read requests runs them after every other
 *      connection ready in the same turn of the loop has read: it joins
 *      the worker's batch, and the worker runs its loop one turn at a
 *      time (EVLOOP_ONCE: one epoll_wait and the callbacks of what it
 *      returned), then the batch; the batch's requests share group
 *      commits (group.c G6). A connection in the batch is closed only by
 *      the batch (or taken out of it first), so the batch never holds a
 *      freed connection. Its socket stays watched: a batch that runs at
 *      the end of the turn in which its connections read costs no
 *      epoll_ctl. Only a connection that becomes readable again while
 *      L5 holds its batch stops being watched until the batch has run,
 *      so that a client that keeps sending cannot make the worker spin
 *      or grow its input.
 *  L5. On a disk, where a commit costs an fdatasync, a batch that holds
 *      fewer than all of its worker's connections waits up to
 *      --commit-delay for the others before it runs (a timer on the batch
 *      event): a client answered by the last commit sends its next
 *      request a few microseconds later, and the next commit then
 *      carries it instead of costing one of its own. Once every
 *      connection has joined, the batch runs at once. Only a batch with
 *      a write at the head of some connection's input waits: a batch of
 *      reads commits nothing, and waiting would only delay its replies.
 *  L6. A connection that has a mailbox (mailbox.c: it subscribed, or ran
 *      a blocking command) has its eventfd watched too, from the end of
 *      the pump that made it until it closes. When it fires, the mailbox
 *      is taken into the replies (conn.c N6) and sent at once if the
 *      connection waits for input; one that waits to send, or is in the
 *      batch, takes it at its next pump (L2: never both).
 *  L7. A connection whose command is blocked with a timeout (blocking.c)
 *      has a timer set, at the end of each pump, for what is left of it;
 *      when it fires, the connection is pumped as for its mail (L6), and
 *      the timeout's reply taken then (conn.c N7). A pump that finds it
 *      no longer blocked takes the timer away.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "blocking.h"
#include "conn.h"
#include "group.h"
#include "loop.h"
#include "mailbox.h"

struct evconn;

struct worker {
	struct server *srv;
	struct event_base *base;
	struct event *wake;
	struct event *batch;              /* L5's timer */
	struct evconn *ready[GROUP_CONNS]; /* the batch: read, not yet run */
	unsigned nready;
	int stop;                         /* loop_stop asked (the pipe) */
	int writes;                       /* the batch has a write (L5) */
	unsigned nconns;                  /* connections it serves (L5) */
	int pipe[2];
	pthread_t th;
};

struct evconn {
	struct conn c;
	struct worker *w;
	struct event *ev;
	struct event *mail; /* the mailbox's eventfd, once it has one (L6) */
	struct event *timer; /* a blocked command's timeout (L7) */
	short waiting; /* EV_READ or EV_WRITE (L2) */
	int in_batch;  /* L4 */
};

static struct worker *workers;
static unsigned nworkers, next_worker;

static void on_event(evutil_socket_t fd, short what, void *arg);
static void on_mail(evutil_socket_t fd, short what, void *arg);
static void on_timeout(evutil_socket_t fd, short what, void *arg);

/* Take e out of its worker's batch (L4). */
static void unbatch(struct evconn *e)
{
	struct worker *w = e->w;
	for (unsigned i = 0; e->in_batch && i < w->nready; i++)
		if (w->ready[i] == e) {
			w->ready[i] = w->ready[--w->nready];
			e->in_batch = 0;
		}
}

static void close_conn(struct evconn *e)
{
	unbatch(e);
	e->w->nconns--;
	conn_send(&e->c, 0); /* a last error, if the socket takes it */
	event_free(e->ev);
	if (e->mail)
		event_free(e->mail);
	if (e->timer)
		event_free(e->timer);
	conn_free(&e->c);
	server_forget(e->w->srv, e->c.fd);
	free(e);
}

/* Wait for what (L2); 0, or -1 if the event could not be set. */
static int wait_for(struct evconn *e, short what)
{
	if (e->waiting == what)
		return 0;
	event_del(e->ev);
	if (event_assign(e->ev, e->w->base, e->c.fd, what | EV_PERSIST,
	                 on_event, e) || event_add(e->ev, NULL))
		return -1;
	e->waiting = what;
	return 0;
}

/* L6: watch the mailbox of a connection that has one; L7: time its
 * blocked command out. 0, or -1 if an event could not be set. */
static int watch_mail(struct evconn *e)
{
	int fd = mailbox_fd(&e->c.sess);
	int64_t ms = blocked_wait_ms(&e->c.sess);
	if (!e->mail && fd >= 0) {
		e->mail = event_new(e->w->base, fd, EV_READ | EV_PERSIST,
		                    on_mail, e);
		if (!e->mail || event_add(e->mail, NULL))
			return -1;
	}
	if (ms < 0) {
		if (e->timer)
			evtimer_del(e->timer);
		return 0;
	}
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
	if (!e->timer && !(e->timer = evtimer_new(e->w->base, on_timeout, e)))
		return -1;
	return evtimer_add(e->timer, &tv) ? -1 : 0;
}

/* Run what was received and send the replies, as far as the socket
 * takes them; 1 when the connection is over. grouped: its first group
 * commit has been made (the batch's, L4). */
static int pump(struct evconn *e, int grouped)
{
	struct conn *c = &e->c;
	for (;; grouped = 0) {
		if (!grouped)
			group_commit(e->w->srv, c);
		int more = conn_run(c), s = conn_send(c, 0);
		if (s < 0 || watch_mail(e))
			return 1;
		if (s == 1)
			return wait_for(e, EV_WRITE) ? 1 : 0;
		if (!more)
			break;
	}
	return c->closing || wait_for(e, EV_READ);
}

/* One read: 0, or 1 at the end of the input (or an error). */
static int read_some(struct evconn *e)
{
	struct conn *c = &e->c;
	if (conn_room(c))
		return 1;
	ssize_t k = read(c->fd, c->in + c->n, c->cap - c->n);
	if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	              errno == EINTR))
		return 0;
	if (k <= 0)
		return 1;
	c->n += (size_t)k;
	return 0;
}

/* The batch (L4): the connections that read in this turn of the loop,
 * in one group commit, then each one's replies and the rest of its
 * input. */
static void on_batch(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct conn *cs[GROUP_CONNS];
	struct evconn *es[GROUP_CONNS];
	unsigned n = w->nready;
	(void)fd, (void)what;
	if (!n)
		return;
	for (unsigned i = 0; i < n; i++) {
		es[i] = w->ready[i];
		es[i]->in_batch = 0;
		cs[i] = &es[i]->c;
	}
	w->nready = 0;
	w->writes = 0;
	group_commit_many(w->srv, cs, n);
	for (unsigned i = 0; i < n; i++)
		if (pump(es[i], 1) || w->srv->stopping)
			close_conn(es[i]);
}

/* Run e's requests with the batch (L4); a full batch runs first. e is
 * not in it already (on_event holds one that is). */
static void batch(struct evconn *e)
{
	struct worker *w = e->w;
	assert(!e->in_batch);
	if (w->nready == GROUP_CONNS)
		on_batch(-1, 0, w);
	w->ready[w->nready++] = e;
	e->in_batch = 1;
	int delay = w->srv->cfg.commit_delay_us;
	if (delay > 0 && !w->writes)
		w->writes = conn_writes_next(&e->c);
	unsigned all = w->nconns < GROUP_CONNS ? w->nconns : GROUP_CONNS;
	int timed = event_pending(w->batch, EV_TIMEOUT, NULL);
	if (delay > 0 && w->writes && w->nready < all) { /* L5 */
		struct timeval tv = {0, delay};
		if (timed || event_add(w->batch, &tv) == 0)
			return;
	}
	if (timed)
		event_del(w->batch); /* it runs at the end of this turn */
}

/* A connection in a batch that L5 holds became readable again: it is not
 * watched until the batch has run (pump watches it again, L4). */
static void hold(struct evconn *e)
{
	event_del(e->ev);
	e->waiting = 0;
}

static void on_event(evutil_socket_t fd, short what, void *arg)
{
	struct evconn *e = arg;
	(void)fd;
	if ((what & EV_READ) && e->in_batch)
		hold(e);
	else if ((what & EV_READ) && read_some(e))
		close_conn(e);
	else if ((what & EV_READ) && !e->w->srv->stopping)
		batch(e);
	else if (pump(e, 0) || e->w->srv->stopping)
		close_conn(e);
}

/* L7: a blocked command's timeout (L6 for what follows). */
static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct evconn *e = arg;
	(void)fd, (void)what;
	if (e->in_batch || e->waiting != EV_READ)
		return; /* its next pump takes it */
	if (pump(e, 1) || e->w->srv->stopping)
		close_conn(e);
}

/* L6: mail for a connection (pub/sub's messages, a blocked command's
 * reply). */
static void on_mail(evutil_socket_t fd, short what, void *arg)
{
	mailbox_woken(&((struct evconn *)arg)->c.sess);
	on_timeout(fd, what, arg);
}

static void adopt(struct worker *w, int fd)
{
	struct evconn *e = calloc(1, sizeof(*e));
	if (!e || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) ||
	    !(e->ev = event_new(w->base, fd, EV_READ | EV_PERSIST, on_event,
	                        e)) ||
	    event_add(e->ev, NULL)) {
		if (e && e->ev)
			event_free(e->ev);
		free(e);
		server_forget(w->srv, fd);
		return;
	}
	conn_init(&e->c, w->srv, fd);
	e->w = w;
	w->nconns++;
	e->waiting = EV_READ;
}

/* The pipe: a socket to adopt, or -1 to stop. */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	int got[64];
	(void)what;
	ssize_t k = read(fd, got, sizeof(got));
	for (ssize_t i = 0; k > 0 && i < k / (ssize_t)sizeof(int); i++) {
		if (got[i] < 0)
			w->stop = 1;
		else
			adopt(w, got[i]);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	while (!w->stop) {
		/* Only a failed epoll_wait fails a turn: its connections could
		 * never be served, nor closed for loop_stop to return. */
		if (event_base_loop(w->base, EVLOOP_ONCE) < 0) {
			fprintf(stderr, "pmkv: event loop failed: %s\n",
			        strerror(errno));
			abort();
		}
		if (w->nready && !event_pending(w->batch, EV_TIMEOUT, NULL))
			on_batch(-1, 0, w); /* L4 */
	}
	return NULL;
}

static int worker_start(struct worker *w, struct server *srv)
{
	w->srv = srv;
	if (pipe(w->pipe) || !(w->base = event_base_new()) ||
	    fcntl(w->pipe[0], F_SETFL, O_NONBLOCK) ||
	    !(w->wake = event_new(w->base, w->pipe[0], EV_READ | EV_PERSIST,
	                          on_wake, w)) ||
	    event_add(w->wake, NULL) ||
	    !(w->batch = event_new(w->base, -1, 0, on_batch, w)))
		return -1;
	return pthread_create(&w->th, NULL, worker_main, w) ? -1 : 0;
}

int loop_start(struct server *srv, unsigned n)
{
	workers = calloc(n, sizeof(*workers));
	if (!workers)
		return -1;
	for (nworkers = 0; nworkers < n; nworkers++)
		if (worker_start(&workers[nworkers], srv))
			return -1;
	return 0;
}

int loop_hand(int fd)
{
	struct worker *w = &workers[next_worker++ % nworkers];
	return write(w->pipe[1], &fd, sizeof(fd)) == sizeof(fd) ? 0 : -1;
}

void loop_stop(void)
{
	int stop = -1;
	for (unsigned i = 0; i < nworkers; i++) {
		ssize_t k = write(workers[i].pipe[1], &stop, sizeof(stop));
		(void)k;
		pthread_join(workers[i].th, NULL);
		event_free(workers[i].wake);
		event_free(workers[i].batch);
		event_base_free(workers[i].base);
		close(workers[i].pipe[0]);
		close(workers[i].pipe[1]);
	}
	free(workers);
	workers = NULL;
	nworkers = 0;
}
