/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.c - a client connection: read, parse (proto.h), execute (cmd.c),
 * write; and memcached's UDP frames.
 *
 * DESIGN
 * A connection is a read buffer, a write buffer and a list of output
 * segments. A segment is a range of the write buffer followed, when the
 * reply carries a value, by a reference to the item (struct mc_ref): the
 * value is written to the socket straight from the region, with writev,
 * and the reference is released once it has gone (seed 001 lesson 7: an
 * item deleted meanwhile waits on a pending list, not the reader).
 *
 * Invariants:
 *  C1. Only the owning worker's thread touches a connection (server.h 1).
 *  C2. No store lock is held here: the store's calls return with every
 *      lock released; what outlives them is a reference (server.h 3).
 *  C3. A request is executed only when the parser has it whole, and its
 *      reply is queued after the store call returned, so a storage reply
 *      is never sent before its transaction committed (store.h).
 *  C4. Backpressure: while a connection's output is not all written it
 *      executes nothing more and reads nothing more, so its memory is
 *      bounded by -R requests' replies and one request's input (at most
 *      -I plus the longest line the parser accepts).
 *  C5. A connection does at most -R requests per event, then yields to
 *      the others on its worker (memcached's conn_yields).
 *  C6. Every reference a connection holds is released exactly once: when
 *      its bytes are written, or when the connection closes.
 *  C8. A reply made in parts (conn_continue: lru_crawler metadump) holds
 *      the connection: no request after it is executed until its last
 *      part is queued, and a part is made only once the one before has
 *      been written (C4), so a dump of the whole cache never sits in
 *      memory at once.
 *  C7. A connection speaks one protocol for its whole life: -B's, or
 *      with -B auto (memcached's negotiation) binary if the first byte it
 *      sends is the binary magic 0x80, ascii otherwise. A UDP datagram
 *      decides for itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "server.h"

#define RBUF_INITIAL 16384
#define WBUF_INITIAL 4096
#define IOV_BATCH 64
#define UDP_MAX_PAYLOAD 1400 /* memcached's UDP_MAX_PAYLOAD_SIZE */
#define UDP_HEADER 8
#define MIN(a, b) ((a) < (b) ? (a) : (b))

enum conn_state { ST_WAITING, ST_PARSING, ST_NREAD, ST_SWALLOW, ST_MWRITE };

struct seg {
	size_t off, len;    /* wbuf[off, off + len) */
	struct mc_ref ref;  /* then ref.value, when ref.off != 0 */
};

struct conn {
	int fd;
	bool is_unix, is_udp, closing;
	enum mc_protocol proto;     /* C7: MC_PROTO_AUTO until decided */
	struct worker *w;
	struct event *ev;
	struct conn *prev, *next;   /* all connections (stats conns) */
	_Atomic int state;          /* enum conn_state */
	_Atomic int64_t last_cmd;
	char addr[INET6_ADDRSTRLEN + 16];
	char *rbuf;
	size_t rpos, rlen, rcap;
	size_t swallow;
	char *wbuf;
	size_t wlen, wcap;
	struct seg *segs;
	size_t nsegs, segcap, sent_seg, sent_off;
	bool oom;                   /* an output allocation failed */
	conn_more_fn *more;         /* C8: the reply in parts, if any */
	void *more_arg;
};

static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn *conns;

/* ---- output ---- */

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return false;
	*p = q;
	*cap = n;
	return true;
}

static struct seg *last_seg(struct conn *c, bool for_ref)
{
	struct seg *s = c->nsegs ? &c->segs[c->nsegs - 1] : NULL;
	if (s && !s->ref.off)
		return s;
	if (!grow((void **)&c->segs, &c->segcap, c->nsegs + 1,
	          sizeof(*c->segs))) {
		c->oom = true;
		return NULL;
	}
	s = &c->segs[c->nsegs++];
	*s = (struct seg){.off = c->wlen};
	(void)for_ref;
	return s;
}

char *conn_room(struct conn *c, size_t n)
{
	if (!grow((void **)&c->wbuf, &c->wcap, c->wlen + n, 1)) {
		c->oom = true;
		return NULL;
	}
	return c->wbuf + c->wlen;
}

void conn_commit_room(struct conn *c, size_t n)
{
	struct seg *s = last_seg(c, false);
	if (!s)
		return;
	s->len += n;
	c->wlen += n;
}

void conn_add(struct conn *c, const char *p, size_t n)
{
	char *room = conn_room(c, n);
	if (!room)
		return;
	memcpy(room, p, n);
	conn_commit_room(c, n);
}

void conn_reply(struct conn *c, const char *line)
{
	conn_add(c, line, strlen(line));
	conn_add(c, "\r\n", 2);
}

void conn_add_ref(struct conn *c, const struct mc_ref *ref)
{
	struct seg *s = last_seg(c, true);
	if (s) {
		s->ref = *ref;
		return;
	}
	struct mc_ref r = *ref; /* C6: not queued, so released now */
	mc_store_release(server.store, c->w->id, &r);
}

static size_t seg_bytes(const struct seg *s)
{
	return s->len + (s->ref.off ? s->ref.nbytes : 0);
}

static void release_output(struct conn *c)
{
	for (size_t i = 0; i < c->nsegs; i++) {
		if (!c->segs[i].ref.off)
			continue;
		int rc = mc_store_release(server.store, c->w->id,
		                          &c->segs[i].ref);
		if (rc && VERBOSE(1))
			fprintf(stderr, "pmcached: release: %s\n",
			        pmtx_strerror(rc));
	}
	c->nsegs = c->wlen = c->sent_seg = c->sent_off = 0;
}

static int build_iov(const struct conn *c, struct iovec *iov, int max)
{
	int n = 0;
	size_t off = c->sent_off;
	for (size_t i = c->sent_seg; i < c->nsegs && n + 2 <= max; i++) {
		const struct seg *s = &c->segs[i];
		if (off < s->len)
			iov[n++] = (struct iovec){c->wbuf + s->off + off,
			                          s->len - off};
		size_t voff = off > s->len ? off - s->len : 0;
		if (s->ref.off && voff < s->ref.nbytes)
			iov[n++] = (struct iovec){(char *)s->ref.value + voff,
			                          s->ref.nbytes - voff};
		off = 0;
	}
	return n;
}

static void advance(struct conn *c, size_t n)
{
	while (n > 0 && c->sent_seg < c->nsegs) {
		size_t left = seg_bytes(&c->segs[c->sent_seg]) - c->sent_off;
		if (n < left) {
			c->sent_off += n;
			return;
		}
		n -= left;
		c->sent_seg++;
		c->sent_off = 0;
	}
	/* skip empty trailing segments */
	while (c->sent_seg < c->nsegs &&
	       seg_bytes(&c->segs[c->sent_seg]) == 0)
		c->sent_seg++;
}

/* 1: all written, 0: the socket is full, -1: the peer is gone. */
static int flush_output(struct conn *c)
{
	advance(c, 0);
	while (c->sent_seg < c->nsegs) {
		struct iovec iov[IOV_BATCH];
		struct msghdr m = {.msg_iov = iov,
		                   .msg_iovlen = (size_t)build_iov(c, iov,
		                                                   IOV_BATCH)};
		ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		atomic_fetch_add_explicit(&c->w->stats.bytes_written,
		                          (uint64_t)w, memory_order_relaxed);
		advance(c, (size_t)w);
	}
	release_output(c);
	return 1;
}

/* ---- lifetime ---- */

void conn_continue(struct conn *c, conn_more_fn *fn, void *arg)
{
	c->more = fn;
	c->more_arg = arg;
}

bool conn_has_output(const struct conn *c)
{
	return c->nsegs > 0;
}

/* C8: the next part; true when the reply is complete. */
static bool more_part(struct conn *c, bool abort)
{
	if (!c->more(c, c->more_arg, abort))
		return false;
	c->more = NULL;
	return true;
}

static void conn_free(struct conn *c)
{
	if (c->more)
		more_part(c, true);
	release_output(c);
	if (c->ev)
		event_free(c->ev);
	if (c->fd >= 0 && !c->is_udp)
		close(c->fd);
	pthread_mutex_lock(&conns_lock);
	if (c->prev)
		c->prev->next = c->next;
	else if (conns == c)
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&conns_lock);
	if (!c->is_udp)
		atomic_fetch_sub(&server.curr_conns, 1);
	free(c->rbuf);
	free(c->wbuf);
	free(c->segs);
	free(c);
}

void sockaddr_text(const struct sockaddr *sa, const char *kind, char *out,
                   size_t n)
{
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)sa;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
	} else {
		const struct sockaddr_in *a = (const void *)sa;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
	}
	snprintf(out, n, "%s:%s:%d", kind, host, port);
}

static void peer_name(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (c->is_unix || getpeername(c->fd, (struct sockaddr *)&ss, &len))
		snprintf(c->addr, sizeof(c->addr), "unix:%s",
		         settings.socketpath ? settings.socketpath : "");
	else
		sockaddr_text((struct sockaddr *)&ss, "tcp", c->addr,
		              sizeof(c->addr));
}

static struct conn *conn_alloc(struct worker *w, int fd)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = fd;
	c->w = w;
	c->last_cmd = time(NULL);
	return c;
}

static void link_conn(struct conn *c)
{
	pthread_mutex_lock(&conns_lock);
	c->next = conns;
	if (conns)
		conns->prev = c;
	conns = c;
	pthread_mutex_unlock(&conns_lock);
}

/* ---- input ---- */

static size_t rbuf_max(void)
{
	return settings.item_size_max + server.limits.get_line_max + 4096;
}

/* Read what the socket has. 1: read something, 0: nothing now, -1: the
 * peer closed or failed (or the buffer cannot grow). */
static int read_input(struct conn *c)
{
	if (c->rpos > 0 && c->rpos == c->rlen)
		c->rpos = c->rlen = 0;
	if (c->rlen == c->rcap) {
		if (c->rpos > 0) { /* compact first */
			memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
			c->rlen -= c->rpos;
			c->rpos = 0;
		}
		/* the first buffer as memcached's: a pipeline of small
		 * requests is read at once, and a connection closed after an
		 * error leaves nothing unread (which would reset it) */
		size_t want = c->rcap ? c->rcap + 1 : RBUF_INITIAL;
		if (c->rlen == c->rcap &&
		    (c->rcap >= rbuf_max() ||
		     !grow((void **)&c->rbuf, &c->rcap, want, 1)))
			return -1;
	}
	ssize_t n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	              errno == EINTR))
		return 0;
	if (n <= 0)
		return -1;
	c->rlen += (size_t)n;
	atomic_fetch_add_explicit(&c->w->stats.bytes_read, (uint64_t)n,
	                          memory_order_relaxed);
	return 1;
}

static void drop_swallowed(struct conn *c)
{
	size_t n = c->rlen - c->rpos;
	if (n > c->swallow)
		n = c->swallow;
	c->rpos += n;
	c->swallow -= n;
}

static void trace_request(const struct conn *c, const char *p, size_t n)
{
	const char *nl = memchr(p, '\n', n);
	size_t len = nl ? (size_t)(nl - p) : n;
	if (len && p[len - 1] == '\r')
		len--;
	fprintf(stderr, "<%d %.*s\n", c->fd, (int)(len > 512 ? 512 : len),
	        p);
}

/* -vv: the first line of the reply queued since wbuf offset from. */
static void trace_reply(const struct conn *c, size_t from)
{
	if (from >= c->wlen)
		return;
	const char *p = c->wbuf + from;
	const char *nl = memchr(p, '\r', c->wlen - from);
	size_t len = nl ? (size_t)(nl - p) : c->wlen - from;
	fprintf(stderr, ">%d %.*s\n", c->fd, (int)(len > 512 ? 512 : len),
	        p);
}

/* -vv: a binary request's opcode and key. */
static void trace_bin_request(const struct conn *c,
                              const struct mc_bin_request *r)
{
	fprintf(stderr, "<%d binary opcode 0x%02x key %.*s\n", c->fd,
	        r->opcode, (int)r->key.len, r->key.p ? r->key.p : "");
}

/* -vv: the status of the binary reply queued since wbuf offset from. */
static void trace_bin_reply(const struct conn *c, size_t from)
{
	if (from + MC_BIN_HEADER <= c->wlen)
		fprintf(stderr, ">%d binary status 0x%02x%02x\n", c->fd,
		        (unsigned char)c->wbuf[from + 6],
		        (unsigned char)c->wbuf[from + 7]);
}

/* After a request: the outcome's effect on the connection. */
static void outcome(struct conn *c, enum cmd_outcome o)
{
	if (o == CMD_CLOSE)
		c->closing = true;
	if (o == CMD_SHUTDOWN) {
		c->closing = true;
		atomic_store(&server.shutdown, 1);
		event_base_loopbreak(server.main_base);
	}
}

/* A parsed request of either protocol (C7). */
struct request {
	bool bin;
	union {
		struct mc_request text;
		struct mc_bin_request bin;
	} u;
};

static int parse(const struct conn *c, const char *p, size_t n,
                 struct request *r, size_t *used)
{
	r->bin = c->proto == MC_PROTO_BINARY;
	if (r->bin)
		return mc_bin_parse(p, n, &server.limits, &r->u.bin, used);
	return mc_parse(p, n, &server.limits, &r->u.text, used);
}

/* MC_OK or MC_ERROR: the command, or memcached's answer to the error
 * (req points into rbuf); the bytes to swallow after it. */
static enum cmd_outcome execute(struct conn *c, int rc, struct request *r)
{
	if (r->bin) {
		c->swallow = r->u.bin.swallow;
		return rc == MC_OK ? cmd_bin_execute(c, &r->u.bin)
		                   : cmd_bin_error(c, &r->u.bin);
	}
	if (rc == MC_OK)
		return cmd_execute(c, &r->u.text);
	cmd_error(c, &r->u.text);
	c->swallow = r->u.text.swallow;
	return CMD_CONTINUE;
}

static void trace(const struct conn *c, const struct request *r,
                  const char *p, size_t n, size_t reply_from)
{
	if (reply_from == SIZE_MAX && r->bin)
		trace_bin_request(c, &r->u.bin);
	else if (reply_from == SIZE_MAX)
		trace_request(c, p, n);
	else if (r->bin)
		trace_bin_reply(c, reply_from);
	else
		trace_reply(c, reply_from);
}

/* One request from the buffer. 1: done one, 0: need more input. */
static int one_request(struct conn *c)
{
	struct request r;
	size_t used = 0;
	const char *p = c->rbuf + c->rpos;
	size_t n = c->rlen - c->rpos;
	if (c->proto == MC_PROTO_AUTO && n > 0) /* C7 */
		c->proto = (unsigned char)p[0] == MC_BIN_REQ ? MC_PROTO_BINARY
		                                             : MC_PROTO_ASCII;
	int rc = parse(c, p, n, &r, &used);
	if (rc == MC_NEED_MORE) {
		c->state = n ? ST_NREAD : ST_WAITING;
		return 0;
	}
	size_t reply_from = c->wlen;
	if (VERBOSE(2))
		trace(c, &r, p, n, SIZE_MAX);
	c->last_cmd = time(NULL);
	if (rc == MC_CLOSE) { /* memcached closes here without a reply */
		c->closing = true;
		return 1;
	}
	enum cmd_outcome o = execute(c, rc, &r);
	c->rpos += used;
	if (VERBOSE(2))
		trace(c, &r, p, n, reply_from);
	outcome(c, o);
	return 1;
}

/* Execute up to -R requests. True if it stopped with input left. */
static bool process(struct conn *c)
{
	c->state = ST_PARSING;
	if (c->more && !more_part(c, false))
		return true; /* C8: the next part once this one is written */
	for (int done = 0; !c->closing && !c->oom && !c->more;) {
		if (c->swallow) {
			drop_swallowed(c);
			if (c->swallow) {
				c->state = ST_SWALLOW;
				return false;
			}
		}
		if (done == settings.reqs_per_event)
			return c->rpos < c->rlen;
		if (!one_request(c))
			return false;
		done++;
	}
	return c->more != NULL;
}

static void set_events(struct conn *c, short what)
{
	struct timeval tv = {settings.idle_timeout, 0};
	event_del(c->ev);
	event_assign(c->ev, c->w->base, c->fd, what | EV_PERSIST,
	             event_get_callback(c->ev), c);
	event_add(c->ev, settings.idle_timeout ? &tv : NULL);
}

/* After input or a finished write: execute, write, pick the events to
 * wait for. */
static void drive(struct conn *c)
{
	bool more = false;
	if (c->nsegs == 0) /* C4 */
		more = process(c);
	int f = flush_output(c);
	if (f < 0 || c->oom || (f == 1 && c->closing)) {
		if (c->oom && VERBOSE(1))
			fprintf(stderr, "pmcached: out of memory for a reply; "
			        "closing connection %d\n", c->fd);
		conn_free(c);
		return;
	}
	if (f == 0) {
		c->state = ST_MWRITE;
		set_events(c, EV_WRITE);
		return;
	}
	if (event_get_events(c->ev) & EV_WRITE) { /* the write finished */
		set_events(c, EV_READ);
		more = c->rpos < c->rlen || c->more;
	} else if (more) {
		atomic_fetch_add_explicit(&c->w->stats.conn_yields, 1,
		                          memory_order_relaxed);
	}
	if (more) /* C5: the rest after the other connections */
		event_active(c->ev, EV_WRITE, 0);
}

static void on_event(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	(void)fd;
	if (what & EV_TIMEOUT) {
		if (VERBOSE(1))
			fprintf(stderr, "pmcached: closing idle connection %d\n",
			        c->fd);
		conn_free(c);
		return;
	}
	if ((what & EV_READ) && read_input(c) < 0) {
		conn_free(c); /* C6: queued references released there */
		return;
	}
	drive(c);
}

void conn_new(struct worker *w, int fd, bool is_unix)
{
	struct conn *c = conn_alloc(w, fd);
	if (c)
		c->ev = event_new(w->base, fd, EV_READ | EV_PERSIST, on_event,
		                  c);
	if (!c || !c->ev) {
		free(c);
		close(fd);
		atomic_fetch_sub(&server.curr_conns, 1);
		return;
	}
	c->is_unix = is_unix;
	c->proto = settings.protocol;
	peer_name(c);
	link_conn(c);
	set_events(c, EV_READ);
	if (VERBOSE(2))
		fprintf(stderr, "<%d new %s client connection\n", fd,
		        c->proto == MC_PROTO_AUTO ? "auto-negotiating"
		        : c->proto == MC_PROTO_BINARY ? "binary" : "ascii");
}

struct worker *conn_worker(const struct conn *c)
{
	return c->w;
}

int conn_fd(const struct conn *c)
{
	return c->fd;
}

void conn_foreach(struct worker *w,
                  void (*fn)(struct conn *c, void *arg), void *arg)
{
	(void)w;
	pthread_mutex_lock(&conns_lock);
	for (struct conn *c = conns; c; c = c->next)
		fn(c, arg);
	pthread_mutex_unlock(&conns_lock);
}

void conn_describe(const struct conn *c, char *addr, size_t n,
                   const char **state, int64_t *idle)
{
	static const char *const names[] = {
		"conn_waiting", "conn_parse_cmd", "conn_nread",
		"conn_swallow", "conn_mwrite"};
	snprintf(addr, n, "%s", c->addr);
	*state = names[c->state];
	*idle = (int64_t)time(NULL) - c->last_cmd;
}

/* ---- UDP ---- */

/* Send c's output as datagrams of memcached's frame: request id,
 * sequence number, number of datagrams, 0. */
static void udp_send(struct conn *c, const struct sockaddr *to,
                     socklen_t tolen, const unsigned char hdr[UDP_HEADER])
{
	size_t total = 0;
	for (size_t i = 0; i < c->nsegs; i++)
		total += seg_bytes(&c->segs[i]);
	char *all = malloc(total ? total : 1);
	size_t at = 0;
	for (size_t i = 0; all && i < c->nsegs; i++) {
		memcpy(all + at, c->wbuf + c->segs[i].off, c->segs[i].len);
		at += c->segs[i].len;
		if (c->segs[i].ref.off)
			memcpy(all + at, c->segs[i].ref.value,
			       c->segs[i].ref.nbytes);
		at += c->segs[i].ref.off ? c->segs[i].ref.nbytes : 0;
	}
	size_t ndgram = (total + UDP_MAX_PAYLOAD - 1) / UDP_MAX_PAYLOAD;
	for (size_t d = 0; all && d < ndgram && ndgram <= 65535; d++) {
		unsigned char pkt[UDP_HEADER + UDP_MAX_PAYLOAD];
		size_t len = MIN(UDP_MAX_PAYLOAD, total - d * UDP_MAX_PAYLOAD);
		pkt[0] = hdr[0], pkt[1] = hdr[1];
		pkt[2] = (unsigned char)(d >> 8), pkt[3] = (unsigned char)d;
		pkt[4] = (unsigned char)(ndgram >> 8);
		pkt[5] = (unsigned char)ndgram;
		pkt[6] = pkt[7] = 0;
		memcpy(pkt + UDP_HEADER, all + d * UDP_MAX_PAYLOAD, len);
		ssize_t w = sendto(c->fd, pkt, UDP_HEADER + len, 0, to, tolen);
		if (w > 0)
			atomic_fetch_add_explicit(&c->w->stats.bytes_written,
			                          (uint64_t)w,
			                          memory_order_relaxed);
	}
	free(all);
	release_output(c);
}

void conn_udp_datagram(struct worker *w, int fd)
{
	static _Thread_local unsigned char buf[65536];
	struct sockaddr_storage from;
	socklen_t fromlen = sizeof(from);
	ssize_t n = recvfrom(fd, buf, sizeof(buf), 0,
	                     (struct sockaddr *)&from, &fromlen);
	if (n < UDP_HEADER)
		return;
	atomic_fetch_add_explicit(&w->stats.bytes_read, (uint64_t)n,
	                          memory_order_relaxed);
	struct conn c = {.fd = fd, .w = w, .is_udp = true,
	                 .proto = settings.protocol};
	snprintf(c.addr, sizeof(c.addr), "udp");
	if (buf[4] != 0 || buf[5] != 1) {
		conn_reply(&c, "SERVER_ERROR multi-packet request not "
		           "supported");
	} else {
		c.rbuf = (char *)buf + UDP_HEADER;
		c.rlen = c.rcap = (size_t)n - UDP_HEADER;
		while (!c.closing && !c.oom && c.rpos < c.rlen &&
		       !c.swallow && one_request(&c))
			while (c.more && !more_part(&c, false)) /* C8 */
				;
		c.rbuf = NULL;
	}
	udp_send(&c, (struct sockaddr *)&from, fromlen, buf);
	free(c.wbuf);
	free(c.segs);
}
