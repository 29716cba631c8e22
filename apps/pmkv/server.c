/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server.c - listeners (TCP, 127.0.0.1 by default, and a UNIX-domain
 * socket), the accept loop, the limit on clients, and shutdown.
 *
 * Invariants
 *  V1. At most maxclients connections are served at once; one more gets
 *      Redis's "-ERR max number of clients reached" and is closed, and
 *      the others are untouched.
 *  V2. server_run returns only once every connection thread has ended,
 *      so the store is closed with no command running.
 *  V3. Active expiry: hz times a second the accept thread, between
 *      accepts, removes expired keys (store.c S10), as Redis's cron does:
 *      a step over EXPIRE_KEYS keys, then more while a step finds at
 *      least a tenth of the keys it looked at expired, for at most a
 *      quarter of the period. Each step is one transaction under the
 *      store lock, so clients wait for one step at most, never a pass.
 *      It stops with the accept loop, before any connection is closed.
 *      Each pass also closes the clients idle past the timeout
 *      (cmd_server.c clients_cron).
 *  V4. A listener for each address of bind (Redis's list: "*" is every
 *      IPv4 address, "::*" every IPv6 one, an IPv6 socket IPv6 only, and
 *      an address written "-addr" skipped if it is not on this host); a
 *      socket accepted is refused (and closed) before it is served if
 *      protected mode denies it (cmd_server.c SV5).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "loop.h"
#include "server.h"
#include "script.h"

/* A listener on addr (V4): its socket, -1 (msg says why), or -2 for an
 * optional address this host does not have. */
static int tcp_listener(const struct server_config *c, const char *addr,
                        char *msg, size_t len)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
	                         .ai_socktype = SOCK_STREAM,
	                         .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	char port[16];
	int optional = addr[0] == '-';
	addr += optional;
	addr = !strcmp(addr, "*") ? "0.0.0.0" : !strcmp(addr, "::*") ? "::"
	                                                             : addr;
	snprintf(port, sizeof(port), "%d", c->port);
	int rc = getaddrinfo(addr, port, &hints, &ai), fd = -1, one = 1;
	if (rc) {
		snprintf(msg, len, "%s: %s", addr, gai_strerror(rc));
		return optional ? -2 : -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd >= 0 && ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) ||
	    listen(fd, 511)) {
		int e = errno;
		snprintf(msg, len, "%s:%d: %s", addr, c->port, strerror(e));
		if (fd >= 0)
			close(fd);
		fd = optional && (e == EADDRNOTAVAIL || e == EAFNOSUPPORT ||
		                  e == EPROTONOSUPPORT)
		             ? -2
		             : -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* V4: a listener for each address of bind; 0, or -1 (msg says why). */
static int tcp_listeners(struct server *srv, char *msg, size_t len)
{
	const char *b = srv->cfg.bind ? srv->cfg.bind : "127.0.0.1";
	char addr[256];
	while (*b) {
		size_t n = strcspn(b, " ");
		snprintf(addr, sizeof(addr), "%.*s", (int)n, b);
		b += n + (b[n] == ' ');
		if (!n || srv->ntcp == TCP_MAX)
			continue;
		int fd = tcp_listener(&srv->cfg, addr, msg, len);
		if (fd == -1)
			return -1;
		if (fd >= 0)
			srv->tcp_fds[srv->ntcp++] = fd;
	}
	if (!srv->ntcp && srv->cfg.unixsocket)
		return 0;
	if (!srv->ntcp)
		snprintf(msg, len, "no address of bind (%s) to listen on",
		         srv->cfg.bind ? srv->cfg.bind : "");
	return srv->ntcp ? 0 : -1;
}

static int unix_listener(const struct server_config *c, char *msg,
                         size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(c->unixsocket) >= sizeof(sa.sun_path)) {
		snprintf(msg, len, "%s: path too long", c->unixsocket);
		return -1;
	}
	strcpy(sa.sun_path, c->unixsocket);
	unlink(c->unixsocket); /* a stale socket of an earlier run */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (c->unixsocketperm && chmod(c->unixsocket, c->unixsocketperm)) ||
	    listen(fd, 511)) {
		snprintf(msg, len, "%s: %s", c->unixsocket, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int server_listen(struct server *srv, char *msg, size_t len)
{
	srv->unix_fd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_mutex_init(&srv->wlock, NULL);
	pthread_cond_init(&srv->gone, NULL);
	srv->fds = calloc(srv->cfg.maxclients + 1, sizeof(int));
	if (!srv->fds || pipe2(srv->wake, O_CLOEXEC | O_NONBLOCK)) {
		snprintf(msg, len, "%s", strerror(errno));
		return -1;
	}
	srv->started_ms = pmkv_now_ms();
	if (srv->cfg.port && tcp_listeners(srv, msg, len))
		return -1;
	if (srv->cfg.unixsocket &&
	    (srv->unix_fd = unix_listener(&srv->cfg, msg, len)) < 0)
		return -1;
	if (!srv->ntcp && srv->unix_fd < 0) {
		snprintf(msg, len, "no TCP port and no unix socket to listen on");
		return -1;
	}
	if (srv->cfg.io_threads && loop_start(srv, srv->cfg.io_threads)) {
		snprintf(msg, len, "cannot start %u event loops",
		         srv->cfg.io_threads);
		return -1;
	}
	return 0;
}

void server_stop(struct server *srv)
{
	srv->stopping = 1;
	ssize_t k = write(srv->wake[1], "x", 1); /* async-signal-safe */
	(void)k;
}

struct conn_arg {
	struct server *srv;
	int fd;
};

void server_forget(struct server *srv, int fd)
{
	pthread_mutex_lock(&srv->lock);
	for (unsigned i = 0; i < srv->nconns; i++)
		if (srv->fds[i] == fd) {
			srv->fds[i] = srv->fds[--srv->nconns];
			break;
		}
	close(fd);
	pthread_cond_broadcast(&srv->gone);
	pthread_mutex_unlock(&srv->lock);
}

static void *conn_main(void *p)
{
	struct conn_arg a = *(struct conn_arg *)p;
	free(p);
	conn_serve(a.srv, a.fd);
	server_forget(a.srv, a.fd);
	return NULL;
}

/* V1, V4: msg, then the socket closed. */
static void refuse(struct server *srv, int fd, const char *msg)
{
	char sink[4096];
	ssize_t k = write(fd, msg, strlen(msg));
	/* what the client sent already is read, so that the close does not
	 * reset the connection before the reply is read */
	shutdown(fd, SHUT_WR);
	while ((k = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
		;
	close(fd);
	srv->rejected++;
}

static void start_conn(struct server *srv, int fd)
{
	struct conn_arg *a = malloc(sizeof(*a));
	pthread_attr_t at;
	pthread_t t;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	const char *denied = client_denied(srv, fd); /* V4 */
	if (denied) {
		free(a);
		return refuse(srv, fd, denied);
	}
	pthread_mutex_lock(&srv->lock);
	if (!a || srv->nconns >= srv->cfg.maxclients) {
		pthread_mutex_unlock(&srv->lock);
		free(a);
		return refuse(srv, fd, "-ERR max number of clients reached\r\n");
	}
	srv->fds[srv->nconns++] = fd;
	pthread_mutex_unlock(&srv->lock);
	srv->conns_total++;
	if (srv->cfg.io_threads) {
		free(a);
		if (loop_hand(fd))
			server_forget(srv, fd);
		return;
	}
	*a = (struct conn_arg){srv, fd};
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256u << 10);
	if (pthread_create(&t, &at, conn_main, a)) {
		free(a);
		server_forget(srv, fd);
	}
	pthread_attr_destroy(&at);
}

static void accept_one(struct server *srv, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		start_conn(srv, fd);
	else if (errno == EMFILE || errno == ENFILE)
		usleep(10000); /* out of descriptors: let some close */
}

#define EXPIRE_KEYS 256 /* keys a step of active expiry looks at */

/* V3: one pass of active expiry. */
static void expire_cycle(struct server *srv)
{
	int64_t start = pmkv_now_ms(), budget = 250 / (int64_t)srv->cfg.hz;
	for (;;) {
		uint64_t seen, removed;
		if (!script_enter()) /* a script runs: not now (script.c X3) */
			break;
		if (pmkv_select(srv->store, srv->expire_db))
			srv->expire_db = 0; /* the wrapped version: 0 only */
		int rc = pmkv_expire_step(srv->store, pmkv_now_ms(),
		                          &srv->expire_cursor, EXPIRE_KEYS,
		                          &seen, &removed);
		script_leave();
		if (rc)
			break;
		if (!srv->expire_cursor) /* this database done: the next */
			srv->expire_db = (srv->expire_db + 1) % PMKV_DBS;
		srv->expired += removed;
		if (!removed || removed * 10 < seen ||
		    pmkv_now_ms() - start >= budget)
			break;
	}
	srv->expire_next_ms = start + 1000 / (int64_t)srv->cfg.hz;
}

/* How long the accept loop may wait before the next pass (V3), ms. */
static int until_cron(struct server *srv)
{
	int64_t left = srv->expire_next_ms - pmkv_now_ms();
	return left < 0 ? 0 : (int)left;
}

/* V2: close every connection, and wait for their threads. */
static void close_all(struct server *srv)
{
	pthread_mutex_lock(&srv->lock);
	for (unsigned i = 0; i < srv->nconns; i++)
		shutdown(srv->fds[i], SHUT_RDWR);
	while (srv->nconns > 0)
		pthread_cond_wait(&srv->gone, &srv->lock);
	pthread_mutex_unlock(&srv->lock);
}

int server_run(struct server *srv)
{
	struct pollfd p[2 + TCP_MAX] = {{srv->wake[0], POLLIN, 0},
	                                {srv->unix_fd, POLLIN, 0}};
	nfds_t np = 2;
	for (unsigned i = 0; i < srv->ntcp; i++)
		p[np++] = (struct pollfd){srv->tcp_fds[i], POLLIN, 0};
	srv->expire_next_ms = pmkv_now_ms();
	while (!srv->stopping) {
		int n = poll(p, np, until_cron(srv));
		if (n < 0 && errno != EINTR)
			break;
		for (nfds_t i = 1; n > 0 && i < np && !srv->stopping; i++)
			if (p[i].fd >= 0 && (p[i].revents & POLLIN))
				accept_one(srv, p[i].fd);
		if (!srv->stopping && until_cron(srv) == 0) {
			expire_cycle(srv);
			clients_cron(srv);
		}
	}
	for (unsigned i = 0; i < srv->ntcp; i++)
		close(srv->tcp_fds[i]);
	if (srv->unix_fd >= 0) {
		close(srv->unix_fd);
		unlink(srv->cfg.unixsocket);
	}
	close_all(srv);
	if (srv->cfg.io_threads)
		loop_stop(); /* L3 */
	return 0;
}
