/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kvload.c - pmkv-load, the load generator of the seed's Figure 7 for any
 * server that speaks RESP (pmkv, Redis): pre-populate with random puts,
 * then N clients, each on its own connection and thread, send GETs and
 * SETs of uniformly random keys, one request at a time (no pipelining),
 * for a fixed time. Prints one JSON line.
 *
 *   pmkv-load [--host H] [--port P | --unixsocket PATH] [--clients N]
 *             [--read-pct R] [--keys K] [--value-size V] [--seconds S]
 *             [--populate M] [--seed X] [--label TEXT]
 *
 * Every loop is bounded in count and time: population by M requests,
 * the run by S seconds (and 2^40 requests per client).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"

struct opts {
	const char *host, *unixsocket, *label;
	int port;
	unsigned clients, read_pct, value_size;
	uint64_t keys, populate, seed;
	double seconds;
};

struct conn {
	int fd;
	char buf[1 << 16];
	size_t n, at;
};

struct worker {
	const struct opts *o;
	pthread_t th;
	uint64_t ops, errors, rng;
	uint64_t hist[64]; /* latency, by power of two of ns */
	double deadline;
	int failed;
};

static int connect_to(const struct opts *o, struct conn *c)
{
	c->n = c->at = 0;
	if (o->unixsocket) {
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", o->unixsocket);
		c->fd = socket(AF_UNIX, SOCK_STREAM, 0);
		return c->fd < 0 ||
		       connect(c->fd, (struct sockaddr *)&sa, sizeof(sa));
	}
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	char port[16];
	int one = 1;
	snprintf(port, sizeof(port), "%d", o->port);
	if (getaddrinfo(o->host, port, &hints, &ai))
		return -1;
	c->fd = socket(ai->ai_family, SOCK_STREAM, 0);
	int rc = c->fd < 0 || connect(c->fd, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (!rc)
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return rc;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
		if (k <= 0 && errno != EINTR)
			return -1;
		if (k > 0)
			p += k, n -= (size_t)k;
	}
	return 0;
}

/* The next reply line (without CRLF) into *line; -1 on a closed socket. */
static int read_line(struct conn *c, char **line)
{
	for (;;) {
		char *e = memchr(c->buf + c->at, '\n', c->n - c->at);
		if (e) {
			*line = c->buf + c->at;
			*e = 0;
			c->at = (size_t)(e - c->buf) + 1;
			return 0;
		}
		memmove(c->buf, c->buf + c->at, c->n - c->at);
		c->n -= c->at, c->at = 0;
		if (c->n == sizeof(c->buf))
			return -1;
		ssize_t k = recv(c->fd, c->buf + c->n, sizeof(c->buf) - c->n, 0);
		if (k <= 0)
			return -1;
		c->n += (size_t)k;
	}
}

/* Skip n payload bytes and the CRLF after them. */
static int skip(struct conn *c, size_t n)
{
	n += 2;
	while (n) {
		size_t have = c->n - c->at, take = have < n ? have : n;
		c->at += take, n -= take;
		if (!n)
			break;
		c->at = c->n = 0;
		ssize_t k = recv(c->fd, c->buf, sizeof(c->buf), 0);
		if (k <= 0)
			return -1;
		c->n = (size_t)k;
	}
	return 0;
}

/* One reply: 0 fine, 1 an error reply, -1 the connection failed. */
static int reply(struct conn *c)
{
	char *l;
	if (read_line(c, &l))
		return -1;
	if (l[0] == '-')
		return 1;
	if (l[0] == '$' && atoll(l + 1) >= 0)
		return skip(c, (size_t)atoll(l + 1));
	return 0;
}

static size_t set_req(char *out, size_t cap, uint64_t key, const char *val,
                      unsigned vn)
{
	char k[32];
	int kn = snprintf(k, sizeof(k), "key:%llu", (unsigned long long)key);
	int n = snprintf(out, cap, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%u\r\n",
	                 kn, k, vn);
	memcpy(out + n, val, vn);
	memcpy(out + n + vn, "\r\n", 2);
	return (size_t)n + vn + 2;
}

static size_t get_req(char *out, size_t cap, uint64_t key)
{
	char k[32];
	int kn = snprintf(k, sizeof(k), "key:%llu", (unsigned long long)key);
	return (size_t)snprintf(out, cap, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n",
	                        kn, k);
}

static char g_value[1 << 16];

/* M random puts, pipelined 256 at a time, on one connection. */
static int populate(const struct opts *o)
{
	struct conn *c = malloc(sizeof(*c));
	char *req = malloc(256 * (o->value_size + 64));
	uint64_t rng = o->seed ^ 0x5eed;
	int rc = !c || !req || connect_to(o, c);
	for (uint64_t done = 0; !rc && done < o->populate;) {
		size_t n = 0, batch = 0;
		for (; batch < 256 && done + batch < o->populate; batch++)
			n += set_req(req + n, o->value_size + 64,
			             next(&rng) % o->keys, g_value, o->value_size);
		rc = send_all(c->fd, req, n);
		for (size_t i = 0; i < batch && !rc; i++)
			rc = reply(c) != 0;
		done += batch;
	}
	if (c && c->fd >= 0)
		close(c->fd);
	free(c);
	free(req);
	return rc;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	struct conn *c = malloc(sizeof(*c));
	char *req = malloc(o->value_size + 128);
	if (!c || !req || connect_to(o, c)) {
		w->failed = 1;
		free(c), free(req);
		return NULL;
	}
	for (uint64_t i = 0; i < (1ull << 40); i++) {
		double t0 = now_s();
		if ((i & 15) == 0 && t0 >= w->deadline)
			break;
		uint64_t r = next(&w->rng), key = r % o->keys;
		size_t n = (r >> 40) % 100 < o->read_pct
		           ? get_req(req, o->value_size + 128, key)
		           : set_req(req, o->value_size + 128, key, g_value,
		                     o->value_size);
		int rc = send_all(c->fd, req, n) ? -1 : reply(c);
		if (rc < 0) {
			w->failed = 1;
			break;
		}
		w->errors += (uint64_t)rc;
		w->ops++;
		uint64_t ns = (uint64_t)((now_s() - t0) * 1e9);
		w->hist[ns ? 63 - __builtin_clzll(ns) : 0]++;
	}
	close(c->fd);
	free(c), free(req);
	return NULL;
}

/* The latency at quantile q, in microseconds (upper edge of its bucket). */
static double quantile(const uint64_t *h, uint64_t total, double q)
{
	uint64_t want = (uint64_t)(q * (double)total), seen = 0;
	for (int b = 0; b < 64; b++)
		if ((seen += h[b]) > want)
			return (double)(2ull << b) / 1000.0;
	return 0;
}

static int parse(struct opts *o, int argc, char **argv)
{
	*o = (struct opts){"127.0.0.1", NULL, "", 6379, 1, 90, 64, 238328,
	                   1000000, 1, 5.0};
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];
		if (!strcmp(k, "--host")) o->host = v;
		else if (!strcmp(k, "--port")) o->port = atoi(v);
		else if (!strcmp(k, "--unixsocket")) o->unixsocket = v;
		else if (!strcmp(k, "--clients")) o->clients = (unsigned)atoi(v);
		else if (!strcmp(k, "--read-pct")) o->read_pct = (unsigned)atoi(v);
		else if (!strcmp(k, "--keys")) o->keys = strtoull(v, NULL, 10);
		else if (!strcmp(k, "--value-size")) o->value_size = (unsigned)atoi(v);
		else if (!strcmp(k, "--seconds")) o->seconds = atof(v);
		else if (!strcmp(k, "--populate")) o->populate = strtoull(v, NULL, 10);
		else if (!strcmp(k, "--seed")) o->seed = strtoull(v, NULL, 10);
		else if (!strcmp(k, "--label")) o->label = v;
		else return -1;
	}
	return (argc % 2 == 0 || !o->clients || o->clients > 256 || !o->keys ||
	        o->read_pct > 100 || o->value_size > (1u << 15) ||
	        o->seconds <= 0 || o->seconds > 3600)
	       ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	static struct worker w[256];
	if (parse(&o, argc, argv)) {
		fprintf(stderr, "usage: pmkv-load [--host H] [--port P | "
		        "--unixsocket PATH] [--clients N] [--read-pct R] "
		        "[--keys K] [--value-size V] [--seconds S] "
		        "[--populate M] [--seed X] [--label TEXT]\n");
		return 2;
	}
	memset(g_value, 'v', sizeof(g_value));
	double t0 = now_s();
	if (o.populate && populate(&o)) {
		fprintf(stderr, "pmkv-load: populating failed\n");
		return 1;
	}
	double tp = now_s() - t0, start = now_s();
	for (unsigned i = 0; i < o.clients; i++) {
		w[i] = (struct worker){.o = &o, .rng = o.seed * 7919 + i,
		                       .deadline = start + o.seconds};
		pthread_create(&w[i].th, NULL, work, &w[i]);
	}
	uint64_t ops = 0, errors = 0, hist[64] = {0};
	int failed = 0;
	for (unsigned i = 0; i < o.clients; i++) {
		pthread_join(w[i].th, NULL);
		ops += w[i].ops, errors += w[i].errors, failed |= w[i].failed;
		for (int b = 0; b < 64; b++)
			hist[b] += w[i].hist[b];
	}
	double el = now_s() - start;
	printf("{\"bench\": \"pmkv-load\", \"label\": \"%s\", \"clients\": %u, "
	       "\"read_pct\": %u, \"keys\": %llu, \"value_size\": %u, "
	       "\"populate\": %llu, \"populate_s\": %.2f, \"seconds\": %.2f, "
	       "\"ops\": %llu, \"ops_per_s\": %.0f, \"errors\": %llu, "
	       "\"p50_us\": %.1f, \"p99_us\": %.1f, \"failed\": %s}\n",
	       o.label, o.clients, o.read_pct, (unsigned long long)o.keys,
	       o.value_size, (unsigned long long)o.populate, tp, el,
	       (unsigned long long)ops, (double)ops / el,
	       (unsigned long long)errors, quantile(hist, ops, 0.5),
	       quantile(hist, ops, 0.99), failed ? "true" : "false");
	return failed || errors ? 1 : 0;
}
