/*
 * conn.c - one client connection, served by a thread of its own (the
 * seed's architecture): read, parse every whole request (resp.c), run
 * each (cmd.c), and write the replies of a batch together.
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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"

#define READ_CHUNK (16u << 10)
#define OUT_FLUSH (64u << 10)

struct conn {
	struct server *srv;
	int fd;
	char *in;
	size_t n, cap;
	struct resp_req q;
	struct resp_out out;
	int closing;
};

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k, n -= (size_t)k;
	}
	return 0;
}

static int flush_out(struct conn *c)
{
	int rc = 0;
	if (c->out.oom) {
		resp_out_reset(&c->out);
		resp_add_error(&c->out, "ERR out of memory");
		c->closing = 1;
	}
	if (c->out.n)
		rc = write_all(c->fd, c->out.p, c->out.n);
	resp_out_reset(&c->out);
	return rc;
}

/* Run every whole request in the buffer; keep the partial one. */
static int run_requests(struct conn *c)
{
	size_t off = 0;
	while (!c->closing) {
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
		struct cmd_ctx x = {c->srv, &c->q, &c->out, 0};
		cmd_dispatch(&x);
		c->closing = x.close_after || c->srv->stopping;
		if (c->out.n >= OUT_FLUSH && flush_out(c))
			return -1;
	}
	memmove(c->in, c->in + off, c->n - off);
	c->n -= off;
	return flush_out(c);
}

/* Room to read into, within qbuf_max (N1): 0, or -1 after the error. */
static int make_room(struct conn *c)
{
	if (c->cap - c->n >= READ_CHUNK / 2)
		return 0;
	size_t want = c->cap ? c->cap * 2 : READ_CHUNK;
	if (c->n >= c->srv->cfg.qbuf_max) {
		resp_add_error(&c->out, "ERR Protocol error: request larger "
		               "than the query buffer limit (%zu bytes)",
		               c->srv->cfg.qbuf_max);
		c->closing = 1;
		flush_out(c);
		return -1;
	}
	if (want > c->srv->cfg.qbuf_max + READ_CHUNK)
		want = c->srv->cfg.qbuf_max + READ_CHUNK;
	char *p = realloc(c->in, want);
	if (!p)
		return -1;
	c->in = p, c->cap = want;
	return 0;
}

void conn_serve(struct server *srv, int fd)
{
	struct conn c = {.srv = srv, .fd = fd};
	resp_req_init(&c.q);
	resp_out_init(&c.out);
	while (!c.closing && !srv->stopping) {
		if (make_room(&c))
			break;
		ssize_t k = read(fd, c.in + c.n, c.cap - c.n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		c.n += (size_t)k;
		if (run_requests(&c))
			break;
	}
	resp_req_free(&c.q);
	resp_out_free(&c.out);
	free(c.in);
}
