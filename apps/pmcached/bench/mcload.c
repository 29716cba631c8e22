/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcload.c - a YCSB-style closed-loop load generator for memcached's text
 * or binary protocol, the client side of pmcached's benchmarks (ycsb.py).
 *
 *   mcload [--host 127.0.0.1] --port P [--load] [--workload a|b|c|f]
 *          [--records N] [--value-size B] [--conns C] [--threads T]
 *          [--protocol text|binary] [--ops N] [--seconds S] [--label L]
 *          ...                                            (see usage())
 *
 * DESIGN
 * A load phase (--load) stores every record once, pipelined; a run phase
 * (--workload) replays one of YCSB's core workloads in a closed loop:
 *   a: 50% read, 50% update        b: 95% read, 5% update
 *   c: 100% read                   f: 50% read, 50% read-modify-write
 * A read is `get`; an update is `set` of a new version of the record; a
 * read-modify-write is a `get` and then a `set` of the same key, counted
 * as one operation whose latency spans both. Each phase prints exactly one
 * JSON line on stdout ("workload":"load" for the load phase).
 * --protocol binary sends the binary protocol's GET (0x00) and SET (0x01)
 * in place of the text commands, one response per request, in order.
 *
 * Keys follow YCSB's request distribution "zipfian": its scrambled
 * zipfian generator (zipfian constant 0.99 over 10^10 items with YCSB's
 * precomputed zeta, then FNV-1a-64 of the draw, as Utils.fnvhash64 does,
 * modulo --records). A draw outside [0, records) cannot happen here, as in
 * YCSB's workloads without inserts.
 *
 * Threads: --threads T client threads share --conns C connections
 * (connection i belongs to thread i % T); each thread multiplexes its own
 * connections with poll(2). Nothing is shared between threads but the
 * operation tickets, the stop flag and the first error message.
 *
 * Invariants:
 *  1. Closed loop: in the run phase a connection has at most one operation
 *     outstanding; the next one is issued only after the last reply of the
 *     previous one has been parsed. In the load phase at most --depth sets.
 *  2. An operation is counted (ops, histogram) only once its last reply
 *     has been parsed. Its latency runs from just before its first request
 *     is queued to just after its last reply is parsed.
 *  3. At most --ops operations are issued in a run phase (one shared
 *     atomic ticket per operation), and none after --seconds; those
 *     outstanding at the deadline are completed and counted.
 *  4. Key of record r: "user" followed by r in decimal, zero-padded to
 *     w(r) = max(digits(r), 1 + fnv64(r) % 19) digits: 5 to 23 bytes,
 *     deterministic, and distinct for distinct records (two such strings
 *     of one length are equal only if their numbers are).
 *  5. The value of record r at version v is a function of (r, v) alone:
 *     the header "r:v:" (if it fits in --value-size) and then bytes drawn
 *     from splitmix64 seeded by (r, v), from a 64-letter alphabet (no CR
 *     or LF). A reader regenerates a value from its header (--verify).
 *     The load writes version 0; a read-modify-write writes the version
 *     it read plus one; an update writes a per-connection counter.
 *  6. Memory is bounded: one fixed log-linear histogram per thread
 *     (HIST_BUCKETS counters, relative error under 3.2%), and per
 *     connection buffers of --depth requests and one reply.
 *  7. Traffic goes to loopback addresses only, unless --allow-remote.
 *  8. Every wait is bounded: poll wakes at least every POLL_MS, and a
 *     request with no complete reply within --timeout seconds is fatal.
 *  9. Errors are return codes: a fatal error (connection refused or
 *     closed, a reply that is not memcached's, a timeout) sets the stop
 *     flag and the first message, every thread returns, no JSON line is
 *     printed, and mcload exits 1. A SERVER_ERROR or NOT_STORED reply (in
 *     binary: status NOT_STORED, E2BIG or ENOMEM), a value of the wrong
 *     length or (--verify) content is counted in "errors": the JSON line
 *     is printed and mcload exits 1.
 * 10. A binary reply is ours only if its magic is 0x81, its opcode the
 *     request's, its opaque the connection's count of requests answered
 *     so far (so a reply out of order or twice is fatal) and its lengths
 *     add up; a GET hit carries 4 bytes of flags and no key.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS 50
#define KEY_MAX 24         /* 23 bytes and a NUL (invariant 4) */
#define LINE_MAX_BYTES 2048 /* a reply line longer than this is not ours */
#define VALUE_MAX (1u << 20)
#define MAX_CONNS 4096
#define MAX_THREADS 256
#define MAX_DEPTH 1024
#define VALUE_HDR_MAX 42   /* "r:v:" with two 20-digit numbers */
#define BIN_HDR 24         /* binary protocol: the header of a packet */
#define BIN_GET 0x00
#define BIN_SET 0x01

/* ---- configuration ---- */

struct cfg {
	const char *host, *port, *label;
	char workload;   /* 'a', 'b', 'c', 'f', or 0: no run phase */
	bool load, allow_remote, verify, binary;
	uint64_t records, ops, seed;
	double seconds, timeout;
	uint32_t value_size;
	int conns, threads, depth;
};

/* ---- random numbers, hashing, zipfian (YCSB) ---- */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* xoshiro256**: the per-thread generator of draws. */
struct rng {
	uint64_t s[4];
};

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

static double rng_double(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* YCSB's Utils.fnvhash64: FNV-1a over the 8 bytes, then Math.abs. */
static uint64_t fnv64(uint64_t v)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < 8; i++) {
		h ^= v & 0xff;
		v >>= 8;
		h *= 1099511628211ull;
	}
	int64_t s = (int64_t)h;
	/* Java's Math.abs(Long.MIN_VALUE) stays negative; map it to 0. */
	return s == INT64_MIN ? 0 : (uint64_t)(s < 0 ? -s : s);
}

/* ZipfianGenerator(0, 10^10, 0.99, ZETAN) as ScrambledZipfianGenerator
 * builds it. */
struct zipf {
	double theta, zetan, alpha, eta, half_pow_theta;
	uint64_t items, records;
};

static void zipf_init(struct zipf *z, uint64_t records)
{
	const double zetan = 26.46902820178302; /* YCSB's ZETAN */
	z->items = 10000000000ull + 1;          /* max - min + 1 */
	z->records = records;
	z->theta = 0.99;
	z->zetan = zetan;
	z->alpha = 1.0 / (1.0 - z->theta);
	double zeta2 = 1.0 + pow(0.5, z->theta);
	z->eta = (1.0 - pow(2.0 / (double)z->items, 1.0 - z->theta)) /
	         (1.0 - zeta2 / zetan);
	z->half_pow_theta = pow(0.5, z->theta);
}

static uint64_t zipf_next(const struct zipf *z, struct rng *r)
{
	double u = rng_double(r), uz = u * z->zetan;
	uint64_t v;
	if (uz < 1.0)
		v = 0;
	else if (uz < 1.0 + z->half_pow_theta)
		v = 1;
	else
		v = (uint64_t)((double)z->items *
		               pow(z->eta * u - z->eta + 1.0, z->alpha));
	return fnv64(v) % z->records;
}

/* ---- keys and values (invariants 4 and 5) ---- */

static int key_of(uint64_t rec, char *out)
{
	int digits = snprintf(NULL, 0, "%" PRIu64, rec);
	int width = 1 + (int)(fnv64(rec) % 19);
	if (width < digits)
		width = digits;
	return snprintf(out, KEY_MAX, "user%0*" PRIu64, width, rec);
}

static const char alphabet[65] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void filler(char *p, size_t n, uint64_t rec, uint64_t ver)
{
	uint64_t s = rec * 0x9e3779b97f4a7c15ull ^ ver, x = 0;
	for (size_t i = 0; i < n; i++) {
		if (i % 8 == 0)
			x = splitmix64(&s);
		p[i] = alphabet[x & 63];
		x >>= 8;
	}
}

/* Write the value of (rec, ver) into p[0..n). */
static void value_fill(char *p, size_t n, uint64_t rec, uint64_t ver)
{
	char hdr[48];
	size_t h = (size_t)snprintf(hdr, sizeof(hdr), "%" PRIu64 ":%" PRIu64
	                            ":", rec, ver);
	if (h > n)
		h = 0;
	memcpy(p, hdr, h);
	filler(p + h, n - h, rec, ver);
}

/* Parse "rec:ver:" at the start of a value; 0 if it is there. */
static int value_header(const char *p, size_t n, uint64_t *rec,
                        uint64_t *ver, size_t *hlen)
{
	char hdr[48];
	size_t m = n < sizeof(hdr) - 1 ? n : sizeof(hdr) - 1;
	memcpy(hdr, p, m);
	hdr[m] = 0;
	int used = 0;
	if (sscanf(hdr, "%" SCNu64 ":%" SCNu64 ":%n", rec, ver, &used) != 2 ||
	    used == 0)
		return -1;
	*hlen = (size_t)used;
	return 0;
}

/* Invariant 5, checked: 0 if p[0..n) is the value of rec at some version.
 * A value shorter than VALUE_HDR_MAX may have had no room for its header:
 * then only its length can be checked. */
static int value_check(const char *p, size_t n, uint64_t rec, char *scratch)
{
	uint64_t r, v;
	size_t h;
	if (value_header(p, n, &r, &v, &h))
		return n < VALUE_HDR_MAX ? 0 : -1;
	if (r != rec)
		return -1;
	filler(scratch, n - h, r, v);
	return memcmp(p + h, scratch, n - h) ? -1 : 0;
}

/* ---- latency histogram (invariant 6) ---- */

#define HIST_SUB_BITS 5
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_LINEAR (2 * HIST_SUB) /* exact below 64 ns */
#define HIST_BUCKETS (HIST_LINEAR + (64 - 6) * HIST_SUB)

struct hist {
	uint64_t n[HIST_BUCKETS];
	uint64_t count, sum_ns, max_ns;
};

static unsigned hist_index(uint64_t v)
{
	if (v < HIST_LINEAR)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 6 */
	unsigned sub = (unsigned)(v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1);
	return HIST_LINEAR + (e - 6) * HIST_SUB + sub;
}

/* The middle of bucket i, in ns. */
static double hist_value(unsigned i)
{
	if (i < HIST_LINEAR)
		return i;
	unsigned e = 6 + (i - HIST_LINEAR) / HIST_SUB;
	unsigned sub = (i - HIST_LINEAR) % HIST_SUB;
	uint64_t lo = (uint64_t)(HIST_SUB + sub) << (e - HIST_SUB_BITS);
	return (double)lo + (double)(1ull << (e - HIST_SUB_BITS)) / 2.0;
}

static void hist_add(struct hist *h, uint64_t ns)
{
	h->n[hist_index(ns)]++;
	h->count++;
	h->sum_ns += ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

static void hist_merge(struct hist *to, const struct hist *from)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		to->n[i] += from->n[i];
	to->count += from->count;
	to->sum_ns += from->sum_ns;
	if (from->max_ns > to->max_ns)
		to->max_ns = from->max_ns;
}

/* The q-quantile in microseconds (0 when empty). */
static double hist_quantile_us(const struct hist *h, double q)
{
	if (h->count == 0)
		return 0;
	uint64_t want = (uint64_t)ceil(q * (double)h->count), seen = 0;
	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->n[i];
		if (seen >= want)
			return hist_value(i) / 1000.0;
	}
	return (double)h->max_ns / 1000.0;
}

/* ---- shared state, errors, time ---- */

struct shared {
	const struct cfg *cfg;
	struct zipf zipf;
	struct addrinfo *addr;
	atomic_uint_fast64_t tickets; /* run phase: operations issued */
	atomic_int stop;              /* a fatal error happened */
	uint64_t t_start, deadline;
	pthread_mutex_t err_lock;
	char err[320];
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Invariant 9: keep the first message, stop every thread, return -1. */
static int fail(struct shared *sh, const char *fmt, ...)
{
	pthread_mutex_lock(&sh->err_lock);
	if (!sh->err[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(sh->err, sizeof(sh->err), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&sh->err_lock);
	atomic_store(&sh->stop, 1);
	return -1;
}

/* ---- connections ---- */

enum op { OP_NONE, OP_READ, OP_UPDATE, OP_RMW, OP_LOAD };

struct conn {
	int fd, id;
	char *wbuf;        /* requests not yet written: [woff, wlen) */
	size_t wlen, woff, wcap;
	char *rbuf;        /* replies not yet parsed: [0, rlen) */
	size_t rlen, rcap;
	int pending;       /* replies still expected */
	bool done;         /* no more operations on this connection */
	enum op op;
	int step;          /* RMW: 0 = get outstanding, 1 = set outstanding */
	uint64_t rec, t_op, t_sent;
	uint64_t next_rec; /* load: the next record of this connection */
	uint64_t version;  /* updates: a per-connection counter */
	bool binary;       /* --protocol binary */
	uint32_t sent, answered; /* binary: requests sent, replies parsed
	                          * (the opaque of the next reply) */
};

static int conn_open(struct shared *sh, struct conn *c)
{
	const struct addrinfo *a = sh->addr;
	c->fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return fail(sh, "socket: %s", strerror(errno));
	if (connect(c->fd, a->ai_addr, a->ai_addrlen))
		return fail(sh, "connect to %s:%s: %s", sh->cfg->host,
		            sh->cfg->port, strerror(errno));
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int fl = fcntl(c->fd, F_GETFL);
	if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK))
		return fail(sh, "fcntl: %s", strerror(errno));
	return 0;
}

static int conn_init(struct shared *sh, struct conn *c, int id)
{
	const struct cfg *cfg = sh->cfg;
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->id = id;
	c->next_rec = (uint64_t)id;
	c->version = (uint64_t)(id + 1) << 40;
	c->binary = cfg->binary;
	c->wcap = (size_t)cfg->depth * (cfg->value_size + 64);
	c->rcap = cfg->value_size + LINE_MAX_BYTES + (size_t)cfg->depth * 16;
	c->wbuf = malloc(c->wcap);
	c->rbuf = malloc(c->rcap);
	if (!c->wbuf || !c->rbuf)
		return fail(sh, "out of memory");
	return conn_open(sh, c);
}

static void conn_fini(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->wbuf);
	free(c->rbuf);
	c->fd = -1;
	c->wbuf = c->rbuf = NULL;
}

static void put_be(unsigned char *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static uint64_t get_be(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* A binary request's header and extras (zero: flags 0, exptime 0) and its
 * key; the value, if any, follows. Its opaque numbers it (invariant 10). */
static void queue_bin(struct conn *c, int opcode, const char *key,
                      size_t nkey, size_t extras, size_t nval)
{
	unsigned char *h = (unsigned char *)c->wbuf + c->wlen;
	memset(h, 0, BIN_HDR + extras);
	h[0] = 0x80;
	h[1] = (unsigned char)opcode;
	put_be(h + 2, nkey, 2);
	h[4] = (unsigned char)extras;
	put_be(h + 8, extras + nkey + nval, 4);
	put_be(h + 12, c->sent++, 4);
	memcpy(h + BIN_HDR + extras, key, nkey);
	c->wlen += BIN_HDR + extras + nkey;
}

static void queue_get(struct conn *c, uint64_t rec)
{
	char key[KEY_MAX];
	int n = key_of(rec, key);
	if (c->binary)
		queue_bin(c, BIN_GET, key, (size_t)n, 0, 0);
	else
		c->wlen += (size_t)sprintf(c->wbuf + c->wlen, "get %s\r\n",
		                           key);
	c->pending++;
}

static void queue_set(struct conn *c, uint64_t rec, uint64_t ver,
                      uint32_t size)
{
	char key[KEY_MAX];
	int n = key_of(rec, key);
	if (c->binary)
		queue_bin(c, BIN_SET, key, (size_t)n, 8, size);
	else
		c->wlen += (size_t)sprintf(c->wbuf + c->wlen, "set %s 0 0 %"
		                           PRIu32 "\r\n", key, size);
	value_fill(c->wbuf + c->wlen, size, rec, ver);
	c->wlen += size;
	if (!c->binary) {
		memcpy(c->wbuf + c->wlen, "\r\n", 2);
		c->wlen += 2;
	}
	c->pending++;
}

/* After a send or recv (op) that failed: 1 to try again (interrupted),
 * 0 to stop for now (the socket would block), or the failure, -1. */
static int io_failed(struct shared *sh, struct conn *c, const char *op)
{
	if (errno == EINTR)
		return 1;
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	return fail(sh, "%s on connection %d: %s", op, c->id, strerror(errno));
}

/* Write what is queued; 0 also when the socket is full. */
static int conn_flush(struct shared *sh, struct conn *c)
{
	int rc;
	while (c->woff < c->wlen) {
		ssize_t n = send(c->fd, c->wbuf + c->woff, c->wlen - c->woff,
		                 MSG_NOSIGNAL);
		if (n < 0 && (rc = io_failed(sh, c, "send")) != 1)
			return rc;
		if (n > 0)
			c->woff += (size_t)n;
	}
	c->woff = c->wlen = 0;
	return 0;
}

/* Read what is there; 0 also when nothing is. */
static int conn_read(struct shared *sh, struct conn *c)
{
	int rc;
	for (;;) {
		if (c->rlen == c->rcap)
			return 0; /* the parser consumes, then we read again */
		ssize_t n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
		if (n < 0 && (rc = io_failed(sh, c, "recv")) != 1)
			return rc;
		if (n < 0)
			continue;
		if (n == 0)
			return fail(sh, "connection %d closed by the server",
			            c->id);
		c->rlen += (size_t)n;
	}
}

/* ---- replies ---- */

enum reply {
	R_MORE,   /* incomplete */
	R_STORED,
	R_HIT,
	R_MISS,
	R_ERR,    /* SERVER_ERROR or NOT_STORED: counted, not fatal */
	R_BAD     /* not a reply to what we sent: fatal */
};

struct parsed {
	size_t used;                /* bytes of the reply */
	const char *val;            /* R_HIT: the data block */
	size_t vlen;
	char line[96];              /* R_ERR, R_BAD: the first line */
};

/* The first line of b[0..n): its length without CRLF, or -1. */
static long line_len(const char *b, size_t n)
{
	size_t lim = n < LINE_MAX_BYTES ? n : LINE_MAX_BYTES;
	const char *e = memchr(b, '\n', lim);
	if (!e || e == b || e[-1] != '\r')
		return -1;
	return (long)(e - b) - 1;
}

static enum reply reply_line(const char *b, size_t n, struct parsed *p)
{
	long len = line_len(b, n);
	if (len < 0)
		return n >= LINE_MAX_BYTES ? R_BAD : R_MORE;
	size_t l = (size_t)len;
	snprintf(p->line, sizeof(p->line), "%.*s", (int)(l < 90 ? l : 90), b);
	p->used = l + 2;
	if (l == 6 && !memcmp(b, "STORED", 6))
		return R_STORED;
	if (l == 3 && !memcmp(b, "END", 3))
		return R_MISS;
	if ((l == 10 && !memcmp(b, "NOT_STORED", 10)) ||
	    (l >= 12 && !memcmp(b, "SERVER_ERROR", 12)))
		return R_ERR;
	return R_BAD;
}

/* "VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n" for key. */
static enum reply reply_value(const char *b, size_t n, const char *key,
                              struct parsed *p)
{
	char line[300], k[251];
	unsigned flags;
	unsigned long bytes;
	int used = 0;
	long len = line_len(b, n);
	if (len < 0)
		return n >= LINE_MAX_BYTES ? R_BAD : R_MORE;
	if ((size_t)len >= sizeof(line))
		return R_BAD;
	memcpy(line, b, (size_t)len); /* sscanf wants a C string */
	line[len] = 0;
	if (sscanf(line, "VALUE %250s %u %lu%n", k, &flags, &bytes, &used) !=
	    3 || used != len || strcmp(k, key) || bytes > VALUE_MAX)
		return R_BAD;
	size_t data = (size_t)len + 2, total = data + bytes + 7;
	if (n < total)
		return R_MORE;
	if (memcmp(b + data + bytes, "\r\nEND\r\n", 7))
		return R_BAD;
	p->val = b + data;
	p->vlen = bytes;
	p->used = total;
	return R_HIT;
}

/* A binary response to GET or SET (invariant 10). */
static enum reply reply_binary(struct conn *c, bool is_get, struct parsed *p)
{
	const unsigned char *b = (const unsigned char *)c->rbuf;
	if (c->rlen < BIN_HDR)
		return R_MORE;
	unsigned klen = (unsigned)get_be(b + 2, 2), elen = b[4];
	unsigned status = (unsigned)get_be(b + 6, 2);
	uint64_t blen = get_be(b + 8, 4);
	snprintf(p->line, sizeof(p->line), "binary response: magic 0x%02x "
	         "opcode 0x%02x status 0x%x body %" PRIu64 " opaque %" PRIu64,
	         b[0], b[1], status, blen, get_be(b + 12, 4));
	if (b[0] != 0x81 || b[1] != (is_get ? BIN_GET : BIN_SET) ||
	    get_be(b + 12, 4) != c->answered || blen > VALUE_MAX ||
	    klen + elen > blen)
		return R_BAD;
	if (c->rlen < BIN_HDR + blen)
		return R_MORE;
	p->used = BIN_HDR + blen;
	c->answered++;
	if (status == 0 && is_get && elen == 4 && klen == 0) {
		p->val = c->rbuf + BIN_HDR + 4;
		p->vlen = blen - 4;
		return R_HIT;
	}
	if (status == 0 && !is_get && blen == 0)
		return R_STORED;
	if (status == 0x01 && is_get)
		return R_MISS;
	if (status == 0x05 || status == 0x03 || status == 0x82)
		return R_ERR; /* NOT_STORED, E2BIG, ENOMEM */
	return R_BAD;
}

static enum reply parse_reply(struct conn *c, bool is_get, struct parsed *p)
{
	memset(p, 0, sizeof(*p));
	if (c->rlen == 0)
		return R_MORE;
	if (c->binary)
		return reply_binary(c, is_get, p);
	if (is_get && c->rlen >= 6 && !memcmp(c->rbuf, "VALUE ", 6)) {
		char key[KEY_MAX];
		key_of(c->rec, key);
		enum reply r = reply_value(c->rbuf, c->rlen, key, p);
		if (r == R_BAD)
			snprintf(p->line, sizeof(p->line), "%.*s",
			         (int)(c->rlen < 60 ? c->rlen : 60), c->rbuf);
		return r;
	}
	enum reply r = reply_line(c->rbuf, c->rlen, p);
	if (r == R_STORED && is_get)
		return R_BAD;
	if (r == R_MISS && !is_get)
		return R_BAD;
	return r;
}

/* Room for a reply of need bytes (a VALUE larger than expected). */
static int conn_reserve(struct shared *sh, struct conn *c, size_t need)
{
	if (need <= c->rcap)
		return 0;
	char *b = realloc(c->rbuf, need);
	if (!b)
		return fail(sh, "out of memory");
	c->rbuf = b;
	c->rcap = need;
	return 0;
}

static void conn_consume(struct conn *c, size_t used)
{
	memmove(c->rbuf, c->rbuf + used, c->rlen - used);
	c->rlen -= used;
}

/* ---- one thread ---- */

struct worker {
	struct shared *sh;
	const struct cfg *cfg;
	struct conn *conns;
	int nconns;
	struct rng rng;
	struct hist hist;
	uint64_t ops, reads, updates, rmws, misses, errors;
	uint64_t t_end;
	char *scratch; /* value_check's regenerated bytes */
	struct pollfd *pfd;
	pthread_t tid;
	int rc;
};

static void count_error(struct worker *w, const struct conn *c,
                        const char *what)
{
	if (w->errors++ < 5)
		fprintf(stderr, "mcload: connection %d, record %" PRIu64
		        ": %s\n", c->id, c->rec, what);
}

/* Reads check the length always and the content with --verify. */
static void check_value(struct worker *w, const struct conn *c,
                        const struct parsed *p)
{
	char msg[96];
	if (p->vlen != w->cfg->value_size) {
		snprintf(msg, sizeof(msg), "value of %zu bytes, expected %"
		         PRIu32, p->vlen, w->cfg->value_size);
		count_error(w, c, msg);
	} else if (w->cfg->verify &&
	           value_check(p->val, p->vlen, c->rec, w->scratch)) {
		count_error(w, c, "value content does not match its header");
	}
}

/* The load phase: the next batch of this connection's records. */
static void start_load(struct worker *w, struct conn *c)
{
	const struct cfg *cfg = w->cfg;
	for (int i = 0; i < cfg->depth && c->next_rec < cfg->records; i++) {
		queue_set(c, c->next_rec, 0, cfg->value_size);
		c->next_rec += (uint64_t)cfg->conns;
	}
	c->op = OP_LOAD;
	c->t_sent = now_ns();
	if (c->pending == 0)
		c->done = true;
}

static enum op pick_op(struct worker *w)
{
	double u = rng_double(&w->rng);
	switch (w->cfg->workload) {
	case 'a':
		return u < 0.5 ? OP_READ : OP_UPDATE;
	case 'b':
		return u < 0.95 ? OP_READ : OP_UPDATE;
	case 'f':
		return u < 0.5 ? OP_READ : OP_RMW;
	default:
		return OP_READ;
	}
}

/* Invariant 3: a ticket, and time left, or this connection is done. */
static bool may_issue(struct worker *w)
{
	struct shared *sh = w->sh;
	if (now_ns() >= sh->deadline)
		return false;
	return atomic_fetch_add(&sh->tickets, 1) < w->cfg->ops;
}

static void start_run_op(struct worker *w, struct conn *c)
{
	if (!may_issue(w)) {
		c->done = true;
		return;
	}
	c->op = pick_op(w);
	c->rec = zipf_next(&w->sh->zipf, &w->rng);
	c->step = 0;
	c->t_op = c->t_sent = now_ns();
	if (c->op == OP_UPDATE)
		queue_set(c, c->rec, ++c->version, w->cfg->value_size);
	else
		queue_get(c, c->rec);
}

static void finish_op(struct worker *w, struct conn *c)
{
	uint64_t t = now_ns();
	hist_add(&w->hist, t - c->t_op);
	w->ops++;
	if (c->op == OP_READ)
		w->reads++;
	else if (c->op == OP_UPDATE)
		w->updates++;
	else
		w->rmws++;
	c->op = OP_NONE;
}

/* RMW, after its get: write the next version of what was read. */
static void rmw_write(struct worker *w, struct conn *c,
                      const struct parsed *p, enum reply r)
{
	uint64_t rec, ver = ++c->version;
	size_t h;
	if (r == R_HIT && !value_header(p->val, p->vlen, &rec, &ver, &h))
		ver++;
	c->step = 1;
	c->t_sent = now_ns();
	queue_set(c, c->rec, ver, w->cfg->value_size);
}

static void on_get_reply(struct worker *w, struct conn *c, enum reply r,
                         const struct parsed *p)
{
	if (r == R_MISS)
		w->misses++;
	else if (r == R_HIT)
		check_value(w, c, p);
	else
		count_error(w, c, p->line);
	if (c->op == OP_RMW)
		rmw_write(w, c, p, r);
	else
		finish_op(w, c);
}

static int on_reply(struct worker *w, struct conn *c, enum reply r,
                    const struct parsed *p)
{
	c->pending--;
	if (r == R_ERR && (c->op == OP_LOAD || c->op == OP_UPDATE ||
	                   c->step == 1))
		count_error(w, c, p->line);
	if (c->op == OP_LOAD) {
		w->ops++;
		return 0;
	}
	bool is_get = c->op == OP_READ || (c->op == OP_RMW && c->step == 0);
	if (is_get)
		on_get_reply(w, c, r, p);
	else
		finish_op(w, c);
	return 0;
}

static int handle_replies(struct worker *w, struct conn *c)
{
	struct parsed p;
	while (c->pending > 0) {
		bool is_get = c->op == OP_READ ||
		              (c->op == OP_RMW && c->step == 0);
		enum reply r = parse_reply(c, is_get, &p);
		if (r == R_MORE) /* a full buffer: a value over --value-size */
			return c->rlen == c->rcap ?
			       conn_reserve(w->sh, c, 2 * c->rcap) : 0;
		if (r == R_BAD)
			return fail(w->sh, "connection %d: unexpected reply "
			            "\"%s\"", c->id, p.line);
		on_reply(w, c, r, &p);
		conn_consume(c, p.used);
	}
	if (c->rlen > 0)
		return fail(w->sh, "connection %d: %zu bytes nobody asked "
		            "for", c->id, c->rlen);
	return 0;
}

static void start_next(struct worker *w, struct conn *c)
{
	if (c->done || c->pending > 0)
		return;
	if (w->sh->deadline == 0) /* the load phase has no deadline */
		start_load(w, c);
	else
		start_run_op(w, c);
}

/* Set up pollfds; the number of connections still working. */
static int poll_setup(struct worker *w)
{
	int live = 0;
	for (int i = 0; i < w->nconns; i++) {
		struct conn *c = &w->conns[i];
		short ev = 0;
		if (c->pending > 0)
			ev |= POLLIN;
		if (c->woff < c->wlen)
			ev |= POLLOUT;
		w->pfd[i].fd = ev ? c->fd : -1;
		w->pfd[i].events = ev;
		w->pfd[i].revents = 0;
		live += !c->done || c->pending > 0;
	}
	return live;
}

static int check_timeouts(struct worker *w)
{
	uint64_t now = now_ns(), lim = (uint64_t)(w->cfg->timeout * 1e9);
	for (int i = 0; i < w->nconns; i++) {
		const struct conn *c = &w->conns[i];
		if (c->pending > 0 && now - c->t_sent > lim)
			return fail(w->sh, "connection %d: no reply within "
			            "%.1f s", c->id, w->cfg->timeout);
	}
	return 0;
}

static int service(struct worker *w, struct conn *c, short rev)
{
	if ((rev & POLLOUT) && conn_flush(w->sh, c))
		return -1;
	if (rev & (POLLIN | POLLHUP | POLLERR)) {
		if (conn_read(w->sh, c) || handle_replies(w, c))
			return -1;
	}
	return 0;
}

/* One pass: start operations, write, wait, read. 1 when all is done. */
static int loop_once(struct worker *w)
{
	for (int i = 0; i < w->nconns; i++) {
		start_next(w, &w->conns[i]);
		if (conn_flush(w->sh, &w->conns[i]))
			return -1;
	}
	if (poll_setup(w) == 0)
		return 1;
	int n = poll(w->pfd, (nfds_t)w->nconns, POLL_MS);
	if (n < 0 && errno != EINTR)
		return fail(w->sh, "poll: %s", strerror(errno));
	for (int i = 0; n > 0 && i < w->nconns; i++)
		if (w->pfd[i].revents &&
		    service(w, &w->conns[i], w->pfd[i].revents))
			return -1;
	return check_timeouts(w);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int rc = 0;
	while (rc == 0 && !atomic_load(&w->sh->stop))
		rc = loop_once(w);
	w->t_end = now_ns();
	w->rc = rc < 0 || atomic_load(&w->sh->stop) ? -1 : 0;
	return NULL;
}

/* ---- phases ---- */

struct phase_result {
	struct hist hist;
	uint64_t ops, reads, updates, rmws, misses, errors;
	double seconds;
};

static int workers_init(struct shared *sh, struct worker *ws, int nt)
{
	const struct cfg *cfg = sh->cfg;
	for (int t = 0; t < nt; t++) {
		struct worker *w = &ws[t];
		memset(w, 0, sizeof(*w));
		w->sh = sh;
		w->cfg = cfg;
		w->nconns = (cfg->conns - t + nt - 1) / nt;
		w->conns = calloc((size_t)w->nconns, sizeof(*w->conns));
		w->pfd = calloc((size_t)w->nconns, sizeof(*w->pfd));
		w->scratch = malloc(cfg->value_size + 1);
		if (!w->conns || !w->pfd || !w->scratch)
			return fail(sh, "out of memory");
		rng_seed(&w->rng, cfg->seed * 1000003u + (uint64_t)t);
		for (int i = 0; i < w->nconns; i++)
			if (conn_init(sh, &w->conns[i], t + i * nt))
				return -1;
	}
	return 0;
}

static void workers_fini(struct worker *ws, int nt)
{
	for (int t = 0; t < nt; t++) {
		for (int i = 0; ws[t].conns && i < ws[t].nconns; i++)
			conn_fini(&ws[t].conns[i]);
		free(ws[t].conns);
		free(ws[t].pfd);
		free(ws[t].scratch);
	}
}

static void collect(const struct worker *ws, int nt, uint64_t t_start,
                    struct phase_result *res)
{
	uint64_t t_end = t_start;
	memset(res, 0, sizeof(*res));
	for (int t = 0; t < nt; t++) {
		const struct worker *w = &ws[t];
		hist_merge(&res->hist, &w->hist);
		res->ops += w->ops;
		res->reads += w->reads;
		res->updates += w->updates;
		res->rmws += w->rmws;
		res->misses += w->misses;
		res->errors += w->errors;
		if (w->t_end > t_end)
			t_end = w->t_end;
	}
	res->seconds = (double)(t_end - t_start) / 1e9;
}

/* Run the connections' threads to the end of one phase. */
static int run_threads(struct worker *ws, int nt)
{
	int started = 0, rc = 0;
	for (; started < nt; started++)
		if (pthread_create(&ws[started].tid, NULL, worker_main,
		                   &ws[started])) {
			rc = fail(ws[0].sh, "pthread_create failed");
			break;
		}
	for (int t = 0; t < started; t++) {
		pthread_join(ws[t].tid, NULL);
		if (ws[t].rc)
			rc = -1;
	}
	return rc;
}

static int run_phase(struct shared *sh, bool load, struct phase_result *res)
{
	const struct cfg *cfg = sh->cfg;
	int nt = cfg->threads;
	struct worker *ws = calloc((size_t)nt, sizeof(*ws));
	if (!ws)
		return fail(sh, "out of memory");
	int rc = workers_init(sh, ws, nt);
	if (rc == 0) {
		atomic_store(&sh->tickets, 0);
		sh->t_start = now_ns();
		sh->deadline = load ? 0 : sh->t_start +
		               (uint64_t)(cfg->seconds * 1e9);
		rc = run_threads(ws, nt);
		collect(ws, nt, sh->t_start, res);
	}
	workers_fini(ws, nt);
	free(ws);
	return rc;
}

/* ---- output ---- */

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* A latency field: null when nothing was timed (the load phase). */
static void json_us(const char *name, const struct hist *h, double us)
{
	if (h->count)
		printf(",\"%s\":%.1f", name, us);
	else
		printf(",\"%s\":null", name);
}

static void print_result(const struct cfg *cfg, const char *workload,
                         const struct phase_result *r)
{
	const struct hist *h = &r->hist;
	double secs = r->seconds > 0 ? r->seconds : 1e-9;
	printf("{\"bench\":\"ycsb\",\"workload\":\"%s\",\"label\":", workload);
	json_string(stdout, cfg->label);
	printf(",\"records\":%" PRIu64 ",\"value_size\":%" PRIu32
	       ",\"conns\":%d,\"threads\":%d,\"protocol\":\"%s\"",
	       cfg->records, cfg->value_size, cfg->conns, cfg->threads,
	       cfg->binary ? "binary" : "text");
	printf(",\"ops\":%" PRIu64 ",\"reads\":%" PRIu64 ",\"updates\":%"
	       PRIu64 ",\"rmws\":%" PRIu64, r->ops, r->reads, r->updates,
	       r->rmws);
	printf(",\"seconds\":%.3f,\"ops_per_sec\":%.1f", r->seconds,
	       (double)r->ops / secs);
	json_us("p50_us", h, hist_quantile_us(h, 0.5));
	json_us("p99_us", h, hist_quantile_us(h, 0.99));
	json_us("p999_us", h, hist_quantile_us(h, 0.999));
	json_us("mean_us", h, h->count ? (double)h->sum_ns /
	                                 (double)h->count / 1000.0 : 0.0);
	json_us("max_us", h, (double)h->max_ns / 1000.0);
	printf(",\"misses\":%" PRIu64 ",\"errors\":%" PRIu64 "}\n",
	       r->misses, r->errors);
	fflush(stdout);
}

/* ---- command line ---- */

static void usage(FILE *f)
{
	fprintf(f,
	"usage: mcload [options]\n"
	"  --host H          server address (default 127.0.0.1; loopback\n"
	"                    only unless --allow-remote)\n"
	"  --port P          server port (default 11211)\n"
	"  --load            store every record once before the run phase\n"
	"  --workload W      run phase: a (50/50 read/update), b (95/5),\n"
	"                    c (read only), f (50/50 read/read-modify-write)\n"
	"  --records N       records (default 100000)\n"
	"  --value-size B    bytes per value (default 1024)\n"
	"  --conns C         connections (default 8)\n"
	"  --threads T       client threads (default 1)\n"
	"  --protocol P      text (default) or binary\n"
	"  --ops N           run phase: at most N operations (default 200000)\n"
	"  --seconds S       run phase: at most S seconds (default 30)\n"
	"  --depth D         load phase: sets in flight per connection "
	"(default 32)\n"
	"  --timeout S       fatal if a reply takes longer (default 10)\n"
	"  --verify          check every value read against its header\n"
	"  --seed N          random seed (default 1)\n"
	"  --label L         copied into the JSON line\n"
	"  --allow-remote    allow a non-loopback --host\n");
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_secs(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end || !(v > 0) || v > 1e6)
		return -1;
	*out = v;
	return 0;
}

enum {
	O_HOST = 256, O_PORT, O_LOAD, O_WORKLOAD, O_RECORDS, O_VSIZE,
	O_CONNS, O_THREADS, O_OPS, O_SECONDS, O_DEPTH, O_TIMEOUT, O_VERIFY,
	O_SEED, O_LABEL, O_REMOTE, O_PROTOCOL, O_HELP
};

static const struct option long_opts[] = {
	{"host", 1, 0, O_HOST},         {"port", 1, 0, O_PORT},
	{"load", 0, 0, O_LOAD},         {"workload", 1, 0, O_WORKLOAD},
	{"records", 1, 0, O_RECORDS},   {"value-size", 1, 0, O_VSIZE},
	{"conns", 1, 0, O_CONNS},       {"threads", 1, 0, O_THREADS},
	{"ops", 1, 0, O_OPS},           {"seconds", 1, 0, O_SECONDS},
	{"depth", 1, 0, O_DEPTH},       {"timeout", 1, 0, O_TIMEOUT},
	{"verify", 0, 0, O_VERIFY},     {"seed", 1, 0, O_SEED},
	{"label", 1, 0, O_LABEL},       {"allow-remote", 0, 0, O_REMOTE},
	{"protocol", 1, 0, O_PROTOCOL}, {"help", 0, 0, O_HELP},
	{0, 0, 0, 0}};

static int set_workload(struct cfg *c, const char *s)
{
	if (strlen(s) != 1 || !strchr("abcfABCF", s[0]))
		return -1;
	c->workload = (char)(s[0] | 0x20);
	return 0;
}

static int set_int(const char *s, uint64_t lo, uint64_t hi, int *out)
{
	uint64_t v;
	if (parse_u64(s, lo, hi, &v))
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_opt(struct cfg *c, int o, const char *a)
{
	uint64_t v;
	switch (o) {
	case O_HOST: c->host = a; return 0;
	case O_PORT: c->port = a; return parse_u64(a, 1, 65535, &v);
	case O_LOAD: c->load = true; return 0;
	case O_WORKLOAD: return set_workload(c, a);
	case O_RECORDS: return parse_u64(a, 1, 1ull << 40, &c->records);
	case O_VSIZE:
		if (parse_u64(a, 1, VALUE_MAX - 4096, &v))
			return -1;
		c->value_size = (uint32_t)v;
		return 0;
	case O_CONNS: return set_int(a, 1, MAX_CONNS, &c->conns);
	case O_THREADS: return set_int(a, 1, MAX_THREADS, &c->threads);
	case O_OPS: return parse_u64(a, 1, UINT64_MAX / 2, &c->ops);
	case O_SECONDS: return parse_secs(a, &c->seconds);
	case O_DEPTH: return set_int(a, 1, MAX_DEPTH, &c->depth);
	case O_TIMEOUT: return parse_secs(a, &c->timeout);
	case O_VERIFY: c->verify = true; return 0;
	case O_SEED: return parse_u64(a, 0, UINT64_MAX, &c->seed);
	case O_LABEL: c->label = a; return 0;
	case O_REMOTE: c->allow_remote = true; return 0;
	case O_PROTOCOL:
		if (strcmp(a, "text") && strcmp(a, "binary"))
			return -1;
		c->binary = a[0] == 'b';
		return 0;
	default: return -1;
	}
}

static void cfg_defaults(struct cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->host = "127.0.0.1";
	c->port = "11211";
	c->label = "";
	c->records = 100000;
	c->value_size = 1024;
	c->conns = 8;
	c->threads = 1;
	c->ops = 200000;
	c->seconds = 30;
	c->depth = 32;
	c->timeout = 10;
	c->seed = 1;
}

/* 0, or 2 after a message (usage error), or 1 for --help. */
static int parse_args(int argc, char **argv, struct cfg *c)
{
	int o;
	cfg_defaults(c);
	while ((o = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		if (o == O_HELP)
			return usage(stdout), 1;
		if (o == '?' || parse_opt(c, o, optarg)) {
			if (o != '?')
				fprintf(stderr, "mcload: bad value for --%s: "
				        "%s\n", long_opts[o - O_HOST].name,
				        optarg);
			return usage(stderr), 2;
		}
	}
	if (optind < argc || (!c->load && !c->workload)) {
		fprintf(stderr, "mcload: nothing to do: give --load and/or "
		        "--workload\n");
		return usage(stderr), 2;
	}
	if (c->threads > c->conns)
		c->threads = c->conns;
	return 0;
}

/* ---- address (invariant 7) ---- */

static bool is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;
		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
	return false;
}

static int resolve(const struct cfg *c, struct addrinfo **out)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM};
	int rc = getaddrinfo(c->host, c->port, &hints, out);
	if (rc) {
		fprintf(stderr, "mcload: %s:%s: %s\n", c->host, c->port,
		        gai_strerror(rc));
		return -1;
	}
	if (!c->allow_remote && !is_loopback((*out)->ai_addr)) {
		fprintf(stderr, "mcload: %s is not a loopback address; "
		        "refusing without --allow-remote\n", c->host);
		freeaddrinfo(*out);
		return -1;
	}
	return 0;
}

/* ---- main ---- */

static int run_all(struct shared *sh)
{
	const struct cfg *cfg = sh->cfg;
	struct phase_result *res = calloc(1, sizeof(*res));
	int rc = res ? 0 : fail(sh, "out of memory"), errors = 0;
	if (rc == 0 && cfg->load) {
		rc = run_phase(sh, true, res);
		if (rc == 0) {
			print_result(cfg, "load", res);
			errors += res->errors > 0;
		}
	}
	if (rc == 0 && cfg->workload) {
		char w[2] = {cfg->workload, 0};
		rc = run_phase(sh, false, res);
		if (rc == 0) {
			print_result(cfg, w, res);
			errors += res->errors > 0;
		}
	}
	free(res);
	if (rc == 0 && errors)
		fprintf(stderr, "mcload: the server replied with errors "
		        "(see \"errors\")\n");
	return rc || errors ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct cfg cfg;
	int rc = parse_args(argc, argv, &cfg);
	if (rc)
		return rc == 1 ? 0 : 2;
	struct shared sh = {.cfg = &cfg};
	pthread_mutex_init(&sh.err_lock, NULL);
	zipf_init(&sh.zipf, cfg.records);
	if (resolve(&cfg, &sh.addr))
		return 1;
	rc = run_all(&sh);
	freeaddrinfo(sh.addr);
	if (sh.err[0])
		fprintf(stderr, "mcload: %s\n", sh.err);
	return rc ? 1 : 0;
}
