/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.c - one client connection: its input buffer, the requests parsed
 * from it (resp.c) and run (cmd.c), and the replies waiting to be sent.
 * Two ways to serve it share this: a thread of its own with blocking
 * reads and writes (the seed's architecture, conn_serve), and an event
 * loop thread among --io-threads (loop.c), non-blocking.
 *
 * Invariants
 *  N1. A client's input is bounded by qbuf_max: a request that would
 *      need more is refused with an error and the connection closed;
 *      nothing of it reaches the store.
 *  N2. A protocol error gets Redis's "-ERR Protocol error: ..." reply and
 *      the connection is closed, after the replies of the requests before
 *      it: those were run, and their replies are due.
 *  N3. Replies are written in request order, and each reply to a write
 *      follows its commit (cmd.c C1).
 *  N4. Requests stop running while OUT_FLUSH bytes of replies wait to be
 *      sent, so a client that does not read cannot grow the server's
 *      memory without bound.
 *  N5. Requests run in a group commit (group.c) stay in the input, and
 *      their replies are not sent, until the group is settled: committed,
 *      they are consumed and their replies kept (N3 holds for the group's
 *      one commit); aborted, their replies are dropped and conn_run runs
 *      them again.
 *  N6. Mail (mailbox.c): a connection that has a mailbox (it subscribed,
 *      or ran a blocking command) takes what waits in it (pub/sub's
 *      messages, a blocked command's reply) before each of its requests,
 *      and whenever the mailbox's eventfd wakes it: its thread polls the
 *      socket and the eventfd instead of blocking in read, and an event
 *      loop watches the eventfd (loop.c L6). A subscribed connection's
 *      requests run alone, never in a group (a group's replies may be
 *      dropped and run again: N5). A connection that never had a mailbox
 *      polls nothing.
 *  N7. Blocked (blocking.c): while a connection's command is blocked, no
 *      request of it runs (in a group or alone), though its socket is
 *      still read (the requests wait in the input, and the end of the
 *      input, or a shutdown, ends the connection and its waiter). Its
 *      thread's poll, or its loop's timer (loop.c L7), wakes it at the
 *      command's timeout, and the timeout's reply is taken as a served
 *      reply is (N6).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blocking.h"
#include "conn.h"
#include "group.h"
#include "mailbox.h"
#include "pubsub.h"

#define READ_CHUNK (16u << 10)
#define OUT_FLUSH (64u << 10)

void conn_init(struct conn *c, struct server *srv, int fd)
{
	memset(c, 0, sizeof(*c));
	c->srv = srv;
	c->fd = fd;
	c->sess.fd = fd;
	resp_req_init(&c->q);
	resp_out_init(&c->out);
	if (session_open(srv, &c->sess, fd)) /* cmd_server.c SV1 */
		c->closing = 1;
}

void conn_free(struct conn *c)
{
	session_close(c->srv, &c->sess); /* before the socket closes: SV1 */
	multi_session_end(c->srv, &c->sess);
	blocked_session_end(&c->sess);
	pubsub_session_end(c->srv, &c->sess);
	pubsub_session_free(&c->sess);
	mailbox_close(&c->sess); /* mailbox.c MB1 */
	resp_req_free(&c->q);
	resp_out_free(&c->out);
	free(c->in);
	c->in = NULL;
}

int conn_room(struct conn *c)
{
	session_read(&c->sess); /* input may come now: not idle (SV6) */
	if (c->cap - c->n >= READ_CHUNK / 2)
		return 0;
	if (c->n >= c->srv->cfg.qbuf_max) { /* N1 */
		resp_add_error(&c->out, "ERR Protocol error: request larger "
		               "than the query buffer limit (%zu bytes)",
		               c->srv->cfg.qbuf_max);
		c->closing = 1;
		return -1;
	}
	size_t want = c->cap ? c->cap * 2 : READ_CHUNK;
	if (want > c->srv->cfg.qbuf_max + READ_CHUNK)
		want = c->srv->cfg.qbuf_max + READ_CHUNK;
	char *p = realloc(c->in, want);
	if (!p) {
		c->closing = 1;
		return -1;
	}
	c->in = p, c->cap = want;
	return 0;
}

/* Drop the first n bytes of the input: requests run and settled. */
static void consume(struct conn *c, size_t n)
{
	memmove(c->in, c->in + n, c->n - n);
	c->n -= n;
}

/* Run the request in c->q, appending its reply; 1 if it asks to close
 * the connection after the reply (QUIT). */
static int run_one(struct conn *c, int in_group)
{
	struct cmd_ctx x = {.srv = c->srv, .sess = &c->sess, .q = &c->q,
	                    .out = &c->out, .in_group = in_group};
	cmd_dispatch(&x);
	return x.close_after;
}

int conn_run(struct conn *c)
{
	size_t off = 0;
	int full = 0;
	session_turn(&c->sess, 1, 0, 0);
	while (!c->closing && !(full = c->out.n - c->sent >= OUT_FLUSH)) {
		if (c->sess.mail && mailbox_take(&c->sess, &c->out)) { /* N6 */
			c->closing = 1;
			break;
		}
		if (c->sess.blocked) /* N7 */
			break;
		size_t used = 0;
		const char *err = NULL;
		int r = resp_parse(c->in + off, c->n - off, &c->srv->cfg.lim,
		                   &c->q, &used, &err);
		if (r == RESP_MORE)
			break;
		if (r == RESP_EPROTO) { /* N2 */
			resp_add_error(&c->out, "ERR %s", err);
			c->closing = 1;
			break;
		}
		off += used;
		if (c->q.argc == 0)
			continue;
		c->closing = run_one(c, 0) || c->srv->stopping;
	}
	consume(c, off);
	if (c->out.oom) {
		resp_out_reset(&c->out);
		c->sent = 0;
		resp_add_error(&c->out, "ERR out of memory");
		c->closing = 1;
	}
	session_turn(&c->sess, 0, c->n, c->cap - c->n);
	return full;
}

unsigned conn_group_run(struct conn *c, unsigned max)
{
	unsigned ran = 0;
	if (c->sess.blocked) /* N7 */
		return 0;
	session_turn(&c->sess, 1, 0, 0);
	c->g_in = 0;
	c->g_out = c->out.n;
	struct cmd_hints h;
	cmd_hint_begin(c->srv, &h, c->in, c->n);
	while (ran < max && !c->closing && !c->out.oom &&
	       c->out.n - c->sent < OUT_FLUSH) {
		size_t used = 0;
		const char *err = NULL;
		if (resp_parse(c->in + c->g_in, c->n - c->g_in,
		               &c->srv->cfg.lim, &c->q, &used, &err) != RESP_OK)
			break; /* more to read, or N2's error: conn_run's */
		if (c->q.argc && (!cmd_grouped(&c->q) || c->sess.multi ||
		                  c->sess.subscribed))
			break; /* queuing (multi.c M1) and N6 run alone */
		c->g_in += used;
		if (!c->q.argc)
			continue;
		run_one(c, 1); /* never QUIT: not grouped */
		ran++;
		cmd_hint_next(c->srv, &h, &c->q, c->in, c->n);
	}
	c->g_ran = ran;
	return ran;
}

void conn_group_settle(struct conn *c, int committed)
{
	if (committed) {
		consume(c, c->g_in);
	} else {
		/* They run again, one transaction each: count them then. */
		c->srv->commands -= c->g_ran;
		c->out.n = c->g_out;
		c->out.oom = 0;
	}
	c->g_ran = 0;
	c->g_in = 0;
	c->g_out = c->out.n;
}

int conn_writes_next(struct conn *c)
{
	size_t used = 0;
	const char *err = NULL;
	return resp_parse(c->in, c->n, &c->srv->cfg.lim, &c->q, &used,
	                  &err) == RESP_OK && c->q.argc && cmd_writes(&c->q);
}

static int send_out(struct conn *c, int blocking)
{
	while (c->sent < c->out.n) {
		ssize_t k = write(c->fd, c->out.p + c->sent, c->out.n - c->sent);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && !blocking && (errno == EAGAIN ||
		                           errno == EWOULDBLOCK))
			return 1;
		if (k <= 0)
			return -1;
		c->sent += (size_t)k;
	}
	resp_out_reset(&c->out);
	c->sent = 0;
	return 0;
}

int conn_send(struct conn *c, int blocking)
{
	int rc = send_out(c, blocking);
	if (c->sess.ps) /* pubsub.c P3 counts what waits */
		pubsub_unsent(&c->sess, c->out.n - c->sent);
	return rc;
}

/* N6, N7: wait for input (0), or for the mailbox's eventfd (1: reset)
 * or a blocked command's timeout (1). */
static int wait_input(struct conn *c)
{
	struct pollfd p[2] = {{c->fd, POLLIN, 0},
	                      {mailbox_fd(&c->sess), POLLIN, 0}};
	int n;
	while ((n = poll(p, 2, blocked_wait_ms(&c->sess))) < 0)
		if (errno != EINTR)
			return 0; /* the read will say what is wrong */
	if (n == 0)
		return 1; /* the timeout: conn_run's mailbox_take replies */
	if (p[0].revents || !p[1].revents)
		return 0;
	mailbox_woken(&c->sess);
	return 1;
}

void conn_serve(struct server *srv, int fd)
{
	struct conn c;
	conn_init(&c, srv, fd);
	while (!c.closing && !srv->stopping) {
		if (conn_room(&c))
			break;
		if (!c.sess.mail || !wait_input(&c)) { /* N6 */
			ssize_t k = read(fd, c.in + c.n, c.cap - c.n);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			c.n += (size_t)k;
		}
		int more;
		do {
			group_commit(srv, &c);
			more = conn_run(&c);
			if (conn_send(&c, 1))
				c.closing = 1;
		} while (more && !c.closing);
	}
	conn_send(&c, 1); /* N1's error, if that ended it */
	conn_free(&c);
}
