/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_server.c - Redis 7.0's commands about the connection and the server
 * rather than the data: AUTH, HELLO, RESET, ACL WHOAMI and USERS, CLIENT,
 * CONFIG, TIME, LASTSAVE, SAVE and BGSAVE; the list of connected clients
 * they read (CLIENT LIST and KILL, the idle timeout), and protected mode.
 * Replies and error texts are Redis 7.0.15's.
 *
 * DESIGN
 * A connection's session (server.h) points to its struct client, listed
 * in srv->clients while the connection is open. Other threads read a
 * client only through that entry: what is set once before it is listed,
 * atomics its own thread publishes after each turn of requests
 * (session_turn), and its name under srv->lock. The password is the
 * default user's (Redis's requirepass): one user, "default".
 *
 * Invariants
 *  SV1. A client is listed, under srv->lock, from session_open to
 *       session_close, both called by its own thread, and its socket is
 *       closed only after session_close (conn_free, then server_forget):
 *       so the fd of a listed client is open, and another thread may shut
 *       it down under srv->lock (CLIENT KILL, the timeout), never close
 *       it. A client shut down is marked killed and no longer listed by
 *       CLIENT LIST, nor counted by another KILL, though its thread may
 *       not have ended yet.
 *  SV2. Another thread reads of a client only what SV1's entry holds: set
 *       before it is listed (id, addresses, creation), atomic, or under
 *       srv->lock (the name).
 *  SV3. A client that connected, or ran RESET, while a password was set
 *       is refused every command but AUTH, HELLO, QUIT and RESET with
 *       "-NOAUTH Authentication required." until it authenticates, or
 *       while no password is set (Redis 7.0's processCommand, after the
 *       unknown-command and arity checks, and a container's unknown
 *       subcommand or subcommand arity). A failed AUTH changes nothing.
 *  SV4. CONFIG SET is all or nothing: every name is checked first
 *       (unknown, immutable, given twice: the first such error is the
 *       reply), then every value parsed (the first bad one is), and only
 *       then is any applied.
 *  SV5. Protected mode (Redis 7.0's clientAcceptHandler): while it is on
 *       and no password is set, a connection from anywhere but 127.0.0.1,
 *       ::1 (or ::ffff:127.0.0.1) or the unix socket gets Redis's DENIED
 *       text and is closed before any request of it is read.
 *  SV6. The idle timeout closes a client whose socket has had nothing
 *       read, and that has run no request, for longer than timeout
 *       seconds: activity is stamped before each read (in an event loop,
 *       a read that finds input; in a thread, the wait for it) and at the
 *       end of each turn of requests, and a client in a turn (a blocked
 *       command) or subscribed is not closed, as in Redis.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "conf.h"
#include "pubsub.h"

#define ADDR_MAX 128 /* "ip:port", or the unix socket's path and ":0" */

struct client {
	struct client *next, *prev; /* srv->clients, under srv->lock (SV1) */
	struct session *sess;
	uint64_t id;
	int fd;
	int unix_socket;
	char addr[ADDR_MAX], laddr[ADDR_MAX];
	int64_t created_ms;          /* mono_ms() */
	char *name;                  /* CLIENT SETNAME's, under srv->lock */
	const char *_Atomic sub;     /* the subcommand it ran last, if any */
	_Atomic int no_evict;
	_Atomic int killed;          /* shut down (SV1) */
	/* published by its thread (session_turn) */
	_Atomic int running;         /* in a turn of requests */
	_Atomic int64_t active_ms;   /* its last read or turn (SV6) */
	_Atomic unsigned db, subscribed;
	_Atomic long multi;          /* commands queued, -1 outside MULTI */
	_Atomic size_t qbuf, qfree;
};

/* A clock for idle times: coarse (a few ms) and cheap. */
static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- a growable text, for CLIENT LIST ---- */

struct text {
	char *p;
	size_t n, cap;
	int oom;
};

static void text_add(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void text_add(struct text *t, const char *fmt, ...)
{
	for (int tries = 0; tries < 2 && !t->oom; tries++) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(t->p ? t->p + t->n : NULL,
		                  t->p ? t->cap - t->n : 0, fmt, ap);
		va_end(ap);
		if (k < 0) {
			t->oom = 1;
		} else if (t->p && (size_t)k < t->cap - t->n) {
			t->n += (size_t)k;
			return;
		} else {
			size_t cap = t->cap ? t->cap : 1024;
			while (cap < t->n + (size_t)k + 1)
				cap *= 2;
			char *p = realloc(t->p, cap);
			if (!p)
				t->oom = 1;
			else
				t->p = p, t->cap = cap;
		}
	}
}

/* ---- the clients (SV1, SV2) ---- */

/* An address as Redis prints it (anetFormatAddr): "ip:port", or
 * "[ip6]:port". */
static void format_addr(const struct sockaddr_storage *sa, char *out)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)sa;
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		port = ntohs(a->sin_port);
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)sa;
		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		port = ntohs(a->sin6_port);
	}
	snprintf(out, ADDR_MAX, strchr(ip, ':') ? "[%s]:%u" : "%s:%u", ip,
	         port);
}

static void client_addresses(struct server *srv, struct client *cl)
{
	struct sockaddr_storage sa;
	socklen_t n = sizeof(sa);
	memset(&sa, 0, sizeof(sa));
	if (getsockname(cl->fd, (struct sockaddr *)&sa, &n) == 0 &&
	    sa.ss_family == AF_UNIX) {
		cl->unix_socket = 1;
		snprintf(cl->addr, ADDR_MAX, "%s:0",
		         srv->cfg.unixsocket ? srv->cfg.unixsocket : "");
		memcpy(cl->laddr, cl->addr, ADDR_MAX);
		return;
	}
	format_addr(&sa, cl->laddr);
	n = sizeof(sa);
	memset(&sa, 0, sizeof(sa));
	getpeername(cl->fd, (struct sockaddr *)&sa, &n);
	format_addr(&sa, cl->addr);
}

int session_open(struct server *srv, struct session *s, int fd)
{
	struct client *cl = calloc(1, sizeof(*cl));
	s->unauthed = atomic_load(&srv->need_auth); /* SV3 */
	if (!cl)
		return -1;
	cl->sess = s;
	cl->fd = fd;
	cl->id = atomic_fetch_add(&srv->client_ids, 1) + 1;
	cl->created_ms = mono_ms();
	cl->active_ms = cl->created_ms;
	cl->multi = -1;
	client_addresses(srv, cl);
	pthread_mutex_lock(&srv->lock);
	cl->next = srv->clients;
	if (cl->next)
		cl->next->prev = cl;
	srv->clients = cl;
	pthread_mutex_unlock(&srv->lock);
	s->cl = cl;
	return 0;
}

void session_close(struct server *srv, struct session *s)
{
	struct client *cl = s->cl;
	if (!cl)
		return;
	pthread_mutex_lock(&srv->lock);
	if (cl->prev)
		cl->prev->next = cl->next;
	else
		srv->clients = cl->next;
	if (cl->next)
		cl->next->prev = cl->prev;
	pthread_mutex_unlock(&srv->lock);
	free(cl->name);
	free(cl);
	s->cl = NULL;
}

void session_turn(struct session *s, int begin, size_t qbuf, size_t qfree)
{
	struct client *cl = s->cl;
	if (!cl)
		return;
	if (begin) {
		atomic_store_explicit(&cl->running, 1, memory_order_relaxed);
		return;
	}
	atomic_store_explicit(&cl->db, s->db, memory_order_relaxed);
	atomic_store_explicit(&cl->multi, s->multi ? (long)s->nqueued : -1,
	                      memory_order_relaxed);
	atomic_store_explicit(&cl->subscribed, s->subscribed,
	                      memory_order_relaxed);
	atomic_store_explicit(&cl->qbuf, qbuf, memory_order_relaxed);
	atomic_store_explicit(&cl->qfree, qfree, memory_order_relaxed);
	atomic_store_explicit(&cl->active_ms, mono_ms(), memory_order_relaxed);
	atomic_store_explicit(&cl->running, 0, memory_order_release);
}

void session_read(struct session *s)
{
	if (s->cl)
		atomic_store_explicit(&s->cl->active_ms, mono_ms(),
		                      memory_order_relaxed);
}

/* Shut a listed client's socket down (SV1): its thread ends it. */
static void client_kill(struct client *cl)
{
	if (!atomic_exchange(&cl->killed, 1))
		shutdown(cl->fd, SHUT_RDWR);
}

/* The idle timeout (SV6, Redis's clientsCronHandleTimeout). */
void clients_cron(struct server *srv)
{
	int64_t limit = (int64_t)atomic_load(&srv->cfg.timeout) * 1000;
	if (!limit)
		return;
	int64_t now = mono_ms();
	pthread_mutex_lock(&srv->lock);
	for (struct client *cl = srv->clients; cl; cl = cl->next)
		if (!atomic_load(&cl->running) && !atomic_load(&cl->subscribed) &&
		    now - atomic_load(&cl->active_ms) > limit)
			client_kill(cl);
	pthread_mutex_unlock(&srv->lock);
}

/* ---- protected mode (SV5) ---- */

static const char DENIED[] =
	"-DENIED Redis is running in protected mode because protected mode "
	"is enabled and no password is set for the default user. In this "
	"mode connections are only accepted from the loopback interface. If "
	"you want to connect from external computers to Redis you may adopt "
	"one of the following solutions: 1) Just disable protected mode "
	"sending the command 'CONFIG SET protected-mode no' from the loopback "
	"interface by connecting to Redis from the same host the server is "
	"running, however MAKE SURE Redis is not publicly accessible from "
	"internet if you do so. Use CONFIG REWRITE to make this change "
	"permanent. 2) Alternatively you can just disable the protected mode "
	"by editing the Redis configuration file, and setting the protected "
	"mode option to 'no', and then restarting the server. 3) If you "
	"started the server manually just for testing, restart it with the "
	"'--protected-mode no' option. 4) Setup a an authentication password "
	"for the default user. NOTE: You only need to do one of the above "
	"things in order for the server to start accepting connections from "
	"the outside.\r\n";

/* Redis 7.0's islocalClient: the unix socket, 127.0.0.1 or ::1 (and
 * pmkv's own: ::ffff:127.0.0.1, IPv4's 127.0.0.1 on a dual-stack
 * socket). 127.0.0.2 is not. */
static int is_local(int fd)
{
	struct sockaddr_storage sa;
	socklen_t n = sizeof(sa);
	memset(&sa, 0, sizeof(sa));
	if (getpeername(fd, (struct sockaddr *)&sa, &n))
		return 0;
	if (sa.ss_family == AF_UNIX)
		return 1;
	if (sa.ss_family == AF_INET)
		return ((struct sockaddr_in *)&sa)->sin_addr.s_addr ==
		       htonl(INADDR_LOOPBACK);
	if (sa.ss_family != AF_INET6)
		return 0;
	const struct in6_addr *a = &((struct sockaddr_in6 *)&sa)->sin6_addr;
	static const unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	                                         0xff, 0xff, 127, 0, 0, 1};
	return IN6_IS_ADDR_LOOPBACK(a) || !memcmp(a, mapped, 16);
}

const char *client_denied(struct server *srv, int fd)
{
	if (!atomic_load(&srv->cfg.protected_mode) ||
	    atomic_load(&srv->need_auth) || is_local(fd))
		return NULL;
	return DENIED;
}

/* ---- the password (SV3) ---- */

int server_conf_init(struct server *srv)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char rnd[40];
	unsigned seed = (unsigned)getpid() ^ (unsigned)time(NULL);
	pthread_mutex_init(&srv->cfg_lock, NULL);
	srv->requirepass = strdup(srv->cfg.requirepass ? srv->cfg.requirepass
	                                               : "");
	if (!srv->requirepass)
		return -1;
	atomic_store(&srv->need_auth, srv->requirepass[0] != 0);
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		for (size_t i = 0; i < sizeof(rnd); i++)
			rnd[i] = (unsigned char)rand_r(&seed);
	for (int i = 0; i < 40; i++) { /* INFO's run_id, master_replid */
		srv->run_id[i] = hex[rnd[i] & 15];
		srv->replid[i] = hex[rnd[i] >> 4];
	}
	srv->run_id[40] = srv->replid[40] = 0;
	return 0;
}

/* Does p[0..n) equal the password? Compared in time independent of where
 * they differ. */
static int password_is(struct server *srv, const char *p, size_t n)
{
	pthread_mutex_lock(&srv->cfg_lock);
	const char *w = srv->requirepass;
	size_t wn = strlen(w);
	unsigned char diff = n != wn;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char)(p[i] ^ w[i < wn ? i : 0]);
	pthread_mutex_unlock(&srv->cfg_lock);
	return !diff;
}

/* Redis's ACLAuthenticateUser for the one user, "default": any password
 * while it has none (nopass), else its own. 1 if authenticated. */
static int authenticate(struct cmd_ctx *c, size_t user, size_t pass)
{
	if (len(c, user) != 7 || memcmp(arg(c, user), "default", 7))
		return 0;
	return !atomic_load(&c->srv->need_auth) ||
	       password_is(c->srv, arg(c, pass), len(c, pass));
}

static void wrongpass(struct cmd_ctx *c)
{
	resp_add_error(c->out, "WRONGPASS invalid username-password pair or "
	               "user is disabled.");
}

static void cmd_auth(struct cmd_ctx *c)
{
	if (c->q->argc > 3)
		return syntax_error(c);
	if (c->q->argc == 2 && !atomic_load(&c->srv->need_auth))
		return resp_add_error(c->out, "ERR AUTH <password> called without "
		                      "any password configured for the default "
		                      "user. Are you sure your configuration is "
		                      "correct?");
	int ok = c->q->argc == 2 ? password_is(c->srv, arg(c, 1), len(c, 1))
	                         : authenticate(c, 1, 2);
	if (!ok)
		return wrongpass(c);
	if (c->sess)
		c->sess->unauthed = 0;
	resp_add_simple(c->out, "OK");
}

/* ---- containers: CLIENT, CONFIG, ACL (their subcommands) ---- */

/* The subcommand argv[1] names in t (ended by a NULL name), or NULL. */
static const struct subcommand *sub_of(struct cmd_ctx *c,
                                       const struct subcommand *t)
{
	for (; t->name; t++)
		if (resp_arg_is(c->q, 1, t->name))
			return t;
	return NULL;
}

/* Redis's errors for an unknown subcommand or a wrong number of its
 * arguments (processCommand): 1 if replied, else 0 and *s. */
static int sub_check(struct cmd_ctx *c, const struct subcommand *t,
                     const struct subcommand **s)
{
	long long argc = (long long)c->q->argc;
	*s = sub_of(c, t);
	if (!*s) {
		char up[16];
		size_t i = 0;
		for (; i < len(c, 0) && i + 1 < sizeof(up); i++)
			up[i] = (char)(arg(c, 0)[i] & ~0x20);
		up[i] = 0;
		resp_add_error(c->out, "ERR unknown subcommand '%.128s'. Try %s "
		               "HELP.", arg(c, 1), up);
		return 1;
	}
	if ((*s)->arity > 0 ? argc != (*s)->arity : argc < -(*s)->arity) {
		resp_add_error(c->out, "ERR wrong number of arguments for "
		               "'%s|%s' command", c->cmd->name, (*s)->name);
		return 1;
	}
	return 0;
}

/* Run the subcommand of container t. */
void run_sub(struct cmd_ctx *c, const struct subcommand *t)
{
	const struct subcommand *s;
	if (c->sess && c->sess->cl)
		atomic_store_explicit(&c->sess->cl->sub, NULL,
		                      memory_order_relaxed);
	if (sub_check(c, t, &s))
		return;
	if (c->sess && c->sess->cl)
		atomic_store_explicit(&c->sess->cl->sub, s->name,
		                      memory_order_relaxed);
	s->fn(c);
}

/* HELP: the lines, each a simple string. */
void reply_help(struct cmd_ctx *c, const char *const *lines)
{
	size_t n = 0;
	while (lines[n])
		n++;
	resp_add_array(c->out, (long long)n);
	for (size_t i = 0; i < n; i++)
		resp_add_simple(c->out, lines[i]);
}

/* ---- CLIENT ---- */

/* Redis's validateClientName: printable ASCII but the space. */
static int name_ok(struct cmd_ctx *c, size_t i)
{
	for (size_t j = 0; j < len(c, i); j++)
		if (arg(c, i)[j] < '!' || arg(c, i)[j] > '~') {
			resp_add_error(c->out, "ERR Client names cannot contain "
			               "spaces, newlines or special characters.");
			return 0;
		}
	return 1;
}

/* Set (or, if empty, clear) the name: 0, or -1 out of memory (replied). */
static int set_name(struct cmd_ctx *c, size_t i)
{
	struct client *cl = c->sess ? c->sess->cl : NULL;
	char *name = NULL;
	if (!cl)
		return 0;
	if (len(c, i) && !(name = strndup(arg(c, i), len(c, i)))) {
		resp_add_error(c->out, "ERR out of memory");
		return -1;
	}
	pthread_mutex_lock(&c->srv->lock);
	char *old = cl->name;
	cl->name = name;
	pthread_mutex_unlock(&c->srv->lock);
	free(old);
	return 0;
}

static void client_setname(struct cmd_ctx *c)
{
	if (name_ok(c, 2) && !set_name(c, 2))
		resp_add_simple(c->out, "OK");
}

static void client_getname(struct cmd_ctx *c)
{
	struct client *cl = c->sess ? c->sess->cl : NULL;
	pthread_mutex_lock(&c->srv->lock);
	if (cl && cl->name)
		resp_add_bulk(c->out, cl->name, strlen(cl->name));
	else
		resp_add_null(c->out);
	pthread_mutex_unlock(&c->srv->lock);
}

static void client_id(struct cmd_ctx *c)
{
	struct client *cl = c->sess ? c->sess->cl : NULL;
	resp_add_int(c->out, cl ? (long long)cl->id : 0);
}

static void client_no_evict(struct cmd_ctx *c)
{
	struct client *cl = c->sess ? c->sess->cl : NULL;
	int on = resp_arg_is(c->q, 2, "on");
	if (!on && !resp_arg_is(c->q, 2, "off"))
		return syntax_error(c);
	if (cl)
		atomic_store(&cl->no_evict, on);
	resp_add_simple(c->out, "OK");
}

/* Redis's client types; a pmkv client is normal or, while subscribed,
 * pubsub. -1: no such type. */
enum { T_NORMAL, T_PUBSUB, T_NONE };

static int type_named(const char *s)
{
	if (!strcasecmp(s, "normal"))
		return T_NORMAL;
	if (!strcasecmp(s, "pubsub"))
		return T_PUBSUB;
	if (!strcasecmp(s, "master") || !strcasecmp(s, "slave") ||
	    !strcasecmp(s, "replica"))
		return T_NONE; /* pmkv has none of these */
	return -1;
}

static int type_of(struct cmd_ctx *c, struct client *cl)
{
	int self = c->sess && c->sess->cl == cl;
	unsigned subscribed = self ? c->sess->subscribed
	                           : atomic_load(&cl->subscribed);
	return subscribed ? T_PUBSUB : T_NORMAL;
}

/* The last command's name, as Redis's "container|subcommand". */
static void cmd_name(struct client *cl, char *out, size_t n)
{
	const struct command *k = atomic_load_explicit(&cl->sess->last_cmd,
	                                               memory_order_relaxed);
	const char *sub = atomic_load_explicit(&cl->sub, memory_order_relaxed);
	if (!k)
		snprintf(out, n, "NULL");
	else if (sub && (!strcmp(k->name, "client") ||
	                 !strcmp(k->name, "config") || !strcmp(k->name, "acl")))
		snprintf(out, n, "%s|%s", k->name, sub);
	else
		snprintf(out, n, "%s", k->name);
}

/* One line of CLIENT LIST (srv->lock held): the fields pmkv knows, in
 * Redis's order and words. The caller's own line reads its session. */
static void client_line(struct cmd_ctx *c, struct client *cl,
                        struct text *t, int64_t now)
{
	struct session *s = c->sess;
	int self = s && s->cl == cl;
	char flags[8], *f = flags, cmd[48];
	unsigned db = self ? s->db : atomic_load(&cl->db);
	long multi = self ? (s->multi ? (long)s->nqueued : -1)
	                  : atomic_load(&cl->multi);
	int64_t idle = self ? 0 : now - atomic_load(&cl->active_ms);
	if (type_of(c, cl) == T_PUBSUB)
		*f++ = 'P';
	if (multi >= 0)
		*f++ = 'x';
	if (atomic_load(&cl->sess->blocked)) /* blocking.c */
		*f++ = 'b';
	if (atomic_load(&cl->sess->watch_dirty))
		*f++ = 'd';
	if (cl->unix_socket)
		*f++ = 'U';
	if (atomic_load(&cl->no_evict))
		*f++ = 'e';
	if (f == flags)
		*f++ = 'N';
	*f = 0;
	cmd_name(cl, cmd, sizeof(cmd));
	text_add(t, "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld "
	         "idle=%lld flags=%s db=%u multi=%ld qbuf=%zu qbuf-free=%zu "
	         "cmd=%s user=default redir=-1 resp=2\n",
	         (unsigned long long)cl->id, cl->addr, cl->laddr, cl->fd,
	         cl->name ? cl->name : "", (long long)(now - cl->created_ms) / 1000,
	         (long long)(idle < 0 ? 0 : idle) / 1000, flags, db, multi,
	         atomic_load(&cl->qbuf), atomic_load(&cl->qfree), cmd);
}

static void reply_text(struct cmd_ctx *c, struct text *t)
{
	if (t->oom)
		resp_add_error(c->out, "ERR out of memory");
	else
		resp_add_bulk(c->out, t->p ? t->p : "", t->n);
	free(t->p);
}

/* CLIENT LIST [TYPE type | ID id ...] (Redis 7.0's clientCommand). */
static void client_list(struct cmd_ctx *c)
{
	struct text t = {NULL, 0, 0, 0};
	int type = -1, ids = 0;
	size_t argc = c->q->argc;
	if (argc == 4 && resp_arg_is(c->q, 2, "type")) {
		if ((type = type_named(arg(c, 3))) < 0)
			return resp_add_error(c->out, "ERR Unknown client type "
			                      "'%s'", arg(c, 3));
	} else if (argc > 3 && resp_arg_is(c->q, 2, "id")) {
		long long v;
		for (size_t i = 3; i < argc; i++)
			if (resp_arg_ll(c->q, i, &v))
				return resp_add_error(c->out, "ERR Invalid client ID");
		ids = 1;
	} else if (argc != 2) {
		return syntax_error(c);
	}
	int64_t now = mono_ms();
	pthread_mutex_lock(&c->srv->lock);
	for (size_t i = ids ? 3 : 0; i < (ids ? argc : 1); i++) {
		long long id = 0;
		if (ids)
			resp_arg_ll(c->q, i, &id);
		for (struct client *cl = c->srv->clients; cl; cl = cl->next)
			if (!atomic_load(&cl->killed) &&
			    (!ids || cl->id == (uint64_t)id) &&
			    (type < 0 || type == type_of(c, cl)))
				client_line(c, cl, &t, now);
	}
	pthread_mutex_unlock(&c->srv->lock);
	reply_text(c, &t);
}

static void client_info(struct cmd_ctx *c)
{
	struct text t = {NULL, 0, 0, 0};
	pthread_mutex_lock(&c->srv->lock);
	if (c->sess && c->sess->cl)
		client_line(c, c->sess->cl, &t, mono_ms());
	pthread_mutex_unlock(&c->srv->lock);
	reply_text(c, &t);
}

/* CLIENT KILL's filters (Redis 7.0's clientKillCommand). */
struct kill_filter {
	const char *addr, *laddr;
	long long id;
	int type, skipme;
};

/* The new form's filters from argv[2..]: 0, or -1 after the error. */
static int kill_filters(struct cmd_ctx *c, struct kill_filter *k)
{
	for (size_t i = 2; i < c->q->argc; i += 2) {
		int more = i + 1 < c->q->argc;
		const char *v = more ? arg(c, i + 1) : NULL;
		if (resp_arg_is(c->q, i, "id") && more) {
			if (resp_arg_ll(c->q, i + 1, &k->id) || k->id < 1) {
				resp_add_error(c->out, "ERR client-id should be "
				               "greater than 0");
				return -1;
			}
		} else if (resp_arg_is(c->q, i, "type") && more) {
			if ((k->type = type_named(v)) < 0) {
				resp_add_error(c->out, "ERR Unknown client type "
				               "'%s'", v);
				return -1;
			}
		} else if (resp_arg_is(c->q, i, "addr") && more) {
			k->addr = v;
		} else if (resp_arg_is(c->q, i, "laddr") && more) {
			k->laddr = v;
		} else if (resp_arg_is(c->q, i, "user") && more) {
			if (strcmp(v, "default")) {
				resp_add_error(c->out, "ERR No such user '%s'", v);
				return -1;
			}
		} else if (resp_arg_is(c->q, i, "skipme") && more &&
		           (resp_arg_is(c->q, i + 1, "yes") ||
		            resp_arg_is(c->q, i + 1, "no"))) {
			k->skipme = resp_arg_is(c->q, i + 1, "yes");
		} else {
			syntax_error(c);
			return -1;
		}
	}
	return 0;
}

static int kill_matches(struct cmd_ctx *c, const struct kill_filter *k,
                        struct client *cl)
{
	return !atomic_load(&cl->killed) &&
	       (!k->addr || !strcmp(k->addr, cl->addr)) &&
	       (!k->laddr || !strcmp(k->laddr, cl->laddr)) &&
	       (k->type < 0 || k->type == type_of(c, cl)) &&
	       (!k->id || cl->id == (uint64_t)k->id) &&
	       !(k->skipme && c->sess && c->sess->cl == cl);
}

/* CLIENT KILL addr (the old form: +OK, or no such client), or CLIENT KILL
 * with filters (how many). The caller itself is closed after the reply. */
static void client_kill_cmd(struct cmd_ctx *c)
{
	struct kill_filter k = {NULL, NULL, 0, -1, 1};
	int old = c->q->argc == 3;
	long long killed = 0;
	if (old)
		k.addr = arg(c, 2), k.skipme = 0;
	else if (kill_filters(c, &k))
		return;
	pthread_mutex_lock(&c->srv->lock);
	for (struct client *cl = c->srv->clients; cl; cl = cl->next) {
		if (!kill_matches(c, &k, cl))
			continue;
		if (c->sess && c->sess->cl == cl)
			c->close_after = 1;
		else
			client_kill(cl);
		killed++;
	}
	pthread_mutex_unlock(&c->srv->lock);
	if (!old)
		resp_add_int(c->out, killed);
	else if (killed)
		resp_add_simple(c->out, "OK");
	else
		resp_add_error(c->out, "ERR No such client");
}

static void client_help(struct cmd_ctx *c)
{
	static const char *const lines[] = {
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GETNAME", "    Return the name of the current connection.",
		"ID", "    Return the ID of the current connection.",
		"INFO", "    Return information about the current client connection.",
		"KILL <ip:port>", "    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]",
		"    Kill connections. Options are: ID <client-id>, ADDR "
		"<ip:port>, LADDR <ip:port>, TYPE normal|pubsub, USER default, "
		"SKIPME yes|no.",
		"LIST [options ...]", "    Return information about client "
		"connections. Options: TYPE normal|pubsub, ID id [id ...].",
		"NO-EVICT (ON|OFF)", "    Protect the current client connection "
		"from eviction.",
		"SETNAME <name>", "    Assign the name <name> to the current "
		"connection.",
		"HELP", "    Print this help.", NULL};
	reply_help(c, lines);
}

static const struct subcommand client_subs[] = {
	{"getname", 2, client_getname}, {"setname", 3, client_setname},
	{"id", 2, client_id},           {"info", 2, client_info},
	{"list", -2, client_list},      {"kill", -3, client_kill_cmd},
	{"no-evict", 3, client_no_evict}, {"help", 2, client_help},
	{NULL, 0, NULL},
};

static void cmd_client(struct cmd_ctx *c)
{
	run_sub(c, client_subs);
}

/* ---- CONFIG ---- */

enum {
	P_BIND, P_PORT, P_UNIXSOCKET, P_UNIXSOCKETPERM, P_REQUIREPASS,
	P_MAXMEMORY, P_POLICY, P_MAXCLIENTS, P_TIMEOUT, P_HZ, P_PROTECTED,
	P_IOTHREADS, P_DIR, P_DBFILENAME, P_DATABASES, P_SAVE, P_APPENDONLY,
	P_COUNT
};

static const struct {
	const char *name;
	int mutable;
} params[P_COUNT] = {
	[P_BIND] = {"bind", 0},
	[P_PORT] = {"port", 0},
	[P_UNIXSOCKET] = {"unixsocket", 0},
	[P_UNIXSOCKETPERM] = {"unixsocketperm", 0},
	[P_REQUIREPASS] = {"requirepass", 1},
	[P_MAXMEMORY] = {"maxmemory", 0},
	[P_POLICY] = {"maxmemory-policy", 1},
	[P_MAXCLIENTS] = {"maxclients", 1},
	[P_TIMEOUT] = {"timeout", 1},
	[P_HZ] = {"hz", 1},
	[P_PROTECTED] = {"protected-mode", 1},
	[P_IOTHREADS] = {"io-threads", 0},
	[P_DIR] = {"dir", 0},
	[P_DBFILENAME] = {"dbfilename", 0},
	[P_DATABASES] = {"databases", 0},
	[P_SAVE] = {"save", 0},
	[P_APPENDONLY] = {"appendonly", 0},
};

/* The parameter named s (any case), or -1. */
static int param_named(const char *s)
{
	for (int p = 0; p < P_COUNT; p++)
		if (!strcasecmp(s, params[p].name))
			return p;
	return -1;
}

/* The region file's directory (absolute) or its name. */
static void region_part(struct server *srv, int dir, char *out, size_t n)
{
	const char *path = srv->cfg.region_path ? srv->cfg.region_path : "";
	const char *slash = strrchr(path, '/');
	if (!dir) {
		snprintf(out, n, "%s", slash ? slash + 1 : path);
		return;
	}
	char cwd[PATH_MAX] = ".";
	if (path[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), ".");
	if (!slash)
		snprintf(out, n, "%s", cwd);
	else if (path[0] == '/')
		snprintf(out, n, "%.*s", slash == path ? 1 : (int)(slash - path),
		         path);
	else
		snprintf(out, n, "%s/%.*s", cwd, (int)(slash - path), path);
}

/* Parameter p's value as CONFIG GET gives it (and CONFIG REWRITE
 * writes). */
static void param_value(struct server *srv, int p, char *out, size_t n)
{
	const struct server_config *g = &srv->cfg;
	struct pmkv_info in;
	switch (p) {
	case P_BIND:
		snprintf(out, n, "%s", g->bind ? g->bind : "");
		break;
	case P_PORT:
		snprintf(out, n, "%d", g->port);
		break;
	case P_UNIXSOCKET:
		snprintf(out, n, "%s", g->unixsocket ? g->unixsocket : "");
		break;
	case P_UNIXSOCKETPERM:
		snprintf(out, n, "%o", g->unixsocketperm);
		break;
	case P_REQUIREPASS:
		pthread_mutex_lock(&srv->cfg_lock);
		snprintf(out, n, "%s", srv->requirepass);
		pthread_mutex_unlock(&srv->cfg_lock);
		break;
	case P_MAXMEMORY: /* the region's most: the limit in force */
		pmkv_info_get(srv->store, &in);
		snprintf(out, n, "%zu", in.region_max);
		break;
	case P_POLICY:
		snprintf(out, n, "%s",
		         pmkv_policy_name(atomic_load(&g->maxmemory_policy)));
		break;
	case P_MAXCLIENTS:
		snprintf(out, n, "%u", atomic_load(&g->maxclients));
		break;
	case P_TIMEOUT:
		snprintf(out, n, "%u", atomic_load(&g->timeout));
		break;
	case P_HZ:
		snprintf(out, n, "%u", atomic_load(&g->hz));
		break;
	case P_PROTECTED:
		snprintf(out, n, "%s",
		         atomic_load(&g->protected_mode) ? "yes" : "no");
		break;
	case P_IOTHREADS:
		snprintf(out, n, "%u", g->io_threads);
		break;
	case P_DIR:
	case P_DBFILENAME:
		region_part(srv, p == P_DIR, out, n);
		break;
	case P_DATABASES:
		snprintf(out, n, "%d", PMKV_DBS);
		break;
	case P_SAVE: /* no snapshots: every write is durable (cmd.c C1) */
		snprintf(out, n, "%s", "");
		break;
	default: /* P_APPENDONLY */
		snprintf(out, n, "%s", "no");
		break;
	}
}

#define VALUE_MAX 4200 /* a path, or a password (a bulk cut to it) */

/* CONFIG GET pattern ...: each parameter once, under the name asked for
 * when one was named exactly (Redis 7.0 does), else its own. */
static void config_get(struct cmd_ctx *c)
{
	const char *as[P_COUNT] = {NULL};
	size_t n = 0;
	int order[P_COUNT];
	char *v = malloc(VALUE_MAX);
	if (!v)
		return resp_add_error(c->out, "ERR out of memory");
	for (size_t i = 2; i < c->q->argc; i++) {
		const char *pat = arg(c, i);
		if (!strpbrk(pat, "[*?")) {
			int p = param_named(pat);
			if (p >= 0 && !as[p])
				as[p] = pat, order[n++] = p;
			continue;
		}
		for (int p = 0; p < P_COUNT; p++)
			if (!as[p] && glob_match(pat, len(c, i), params[p].name,
			                         strlen(params[p].name), 1))
				as[p] = params[p].name, order[n++] = p;
	}
	resp_add_array(c->out, 2 * (long long)n);
	for (size_t i = 0; i < n; i++) {
		param_value(c->srv, order[i], v, VALUE_MAX);
		resp_add_bulk(c->out, as[order[i]], strlen(as[order[i]]));
		resp_add_bulk(c->out, v, strlen(v));
	}
	free(v);
}

/* A value CONFIG SET parsed, to apply once all are (SV4). */
struct setting {
	int p;
	const char *name; /* as the client wrote it */
	const char *str;
	long long num;
};

/* Redis's integer config (string2ll, then the range): NULL, or why. */
static const char *int_value(struct cmd_ctx *c, size_t i, long long lo,
                             long long hi, long long *v, char *why,
                             size_t n)
{
	if (resp_arg_ll(c->q, i, v))
		return "argument couldn't be parsed into an integer";
	if (*v < lo || *v > hi) {
		snprintf(why, n, "argument must be between %lld and %lld "
		         "inclusive", lo, hi);
		return why;
	}
	return NULL;
}

/* maxclients: the open files it needs (Redis keeps 32 more for itself),
 * the limit raised if the system lets it (adjustOpenFilesLimit). */
static const char *fd_room(long long want, char *why, size_t n)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)want + 32;
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= need)
		return NULL;
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need) {
		struct rlimit up = {need, rl.rlim_max};
		if (!setrlimit(RLIMIT_NOFILE, &up))
			return NULL;
	}
	snprintf(why, n, "The operating system is not able to handle the "
	         "specified number of clients, try with %lld",
	         (long long)rl.rlim_cur - 32);
	return why;
}

static const char POLICIES[] =
	"argument(s) must be one of the following: volatile-lru, "
	"volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, "
	"allkeys-lfu, allkeys-random, noeviction";

/* Parse argv[i], the value of s->p: NULL, or why not. */
static const char *parse_setting(struct cmd_ctx *c, size_t i,
                                 struct setting *s, char *why, size_t n)
{
	const char *e;
	s->str = arg(c, i);
	switch (s->p) {
	case P_REQUIREPASS:
		return NULL;
	case P_POLICY:
		s->num = pmkv_policy_parse(s->str);
		return s->num < 0 ? POLICIES : NULL;
	case P_MAXCLIENTS:
		e = int_value(c, i, 1, UINT_MAX, &s->num, why, n);
		return e ? e : fd_room(s->num, why, n);
	case P_TIMEOUT:
	case P_HZ:
		return int_value(c, i, 0, INT_MAX, &s->num, why, n);
	default: /* P_PROTECTED */
		s->num = resp_arg_is(c->q, i, "yes");
		return s->num || resp_arg_is(c->q, i, "no")
		               ? NULL
		               : "argument must be 'yes' or 'no'";
	}
}

/* The file descriptors' array holds maxclients + 1 (server.c): grown
 * before maxclients is (srv->lock held). */
static int grow_fds(struct server *srv, unsigned max)
{
	if (max <= atomic_load(&srv->cfg.maxclients))
		return 0;
	int *fds = realloc(srv->fds, ((size_t)max + 1) * sizeof(int));
	if (!fds)
		return -1;
	srv->fds = fds;
	return 0;
}

/* Apply a parsed setting: 0, or -1 (out of memory: nothing changed). */
static int apply_setting(struct server *srv, const struct setting *s)
{
	struct server_config *g = &srv->cfg;
	char *pass, *old;
	int rc = 0;
	switch (s->p) {
	case P_REQUIREPASS:
		if (!(pass = strdup(s->str)))
			return -1;
		pthread_mutex_lock(&srv->cfg_lock);
		old = srv->requirepass;
		srv->requirepass = pass;
		atomic_store(&srv->need_auth, pass[0] != 0);
		pthread_mutex_unlock(&srv->cfg_lock);
		free(old);
		return 0;
	case P_POLICY:
		if ((rc = pmkv_track_access(srv->store, (int)s->num)))
			return -1;
		atomic_store(&g->maxmemory_policy, (int)s->num);
		return 0;
	case P_MAXCLIENTS:
		pthread_mutex_lock(&srv->lock);
		if (!(rc = grow_fds(srv, (unsigned)s->num)))
			atomic_store(&g->maxclients, (unsigned)s->num);
		pthread_mutex_unlock(&srv->lock);
		return rc;
	case P_TIMEOUT:
		atomic_store(&g->timeout, (unsigned)s->num);
		return 0;
	case P_HZ: /* Redis clamps it: CONFIG_MIN_HZ, CONFIG_MAX_HZ */
		atomic_store(&g->hz, s->num < 1 ? 1u
		                     : s->num > 500 ? 500u : (unsigned)s->num);
		return 0;
	default: /* P_PROTECTED */
		atomic_store(&g->protected_mode, (int)s->num);
		return 0;
	}
}

static void config_failed(struct cmd_ctx *c, const char *name,
                          const char *why)
{
	resp_add_error(c->out, "ERR CONFIG SET failed (possibly related to "
	               "argument '%s') - %s", name, why);
}

/* CONFIG SET name value [name value ...] (SV4). */
static void config_set(struct cmd_ctx *c)
{
	struct setting s[P_COUNT];
	size_t n = 0;
	char why[160];
	const char *err = NULL, *err_name = NULL;
	if (c->q->argc % 2)
		return syntax_error(c);
	for (size_t i = 2; i < c->q->argc; i += 2) {
		int p = param_named(arg(c, i));
		if (err) /* the first error is the reply */
			continue;
		if (p < 0)
			return resp_add_error(c->out, "ERR Unknown option or "
			                      "number of arguments for CONFIG SET - "
			                      "'%s'", arg(c, i));
		int twice = 0;
		for (size_t j = 0; j < n; j++)
			twice |= s[j].p == p;
		if (!params[p].mutable || twice || n == P_COUNT) {
			err = twice ? "duplicate parameter"
			            : "can't set immutable config";
			err_name = arg(c, i);
			continue;
		}
		s[n++] = (struct setting){p, arg(c, i), NULL, 0};
	}
	if (err)
		return config_failed(c, err_name, err);
	for (size_t i = 0; i < n; i++)
		if ((err = parse_setting(c, 3 + 2 * i, &s[i], why, sizeof(why))))
			return config_failed(c, s[i].name, err);
	for (size_t i = 0; i < n; i++)
		if (apply_setting(c->srv, &s[i]))
			return config_failed(c, s[i].name, "out of memory");
	resp_add_simple(c->out, "OK");
}

static void config_resetstat(struct cmd_ctx *c)
{
	struct server *s = c->srv;
	atomic_store(&s->commands, 0);
	atomic_store(&s->conns_total, 0);
	atomic_store(&s->rejected, 0);
	atomic_store(&s->groups, 0);
	atomic_store(&s->group_cmds, 0);
	atomic_store(&s->group_conns, 0);
	atomic_store(&s->expired, 0);
	atomic_store(&s->evicted, 0);
	atomic_store(&s->oom_refusals, 0);
	resp_add_simple(c->out, "OK");
}

/* CONFIG REWRITE: the parameters CONFIG SET changes, written into the
 * file pmkv was started with (conf.c). */
static void config_rewrite(struct cmd_ctx *c)
{
	static const int mutable[] = {P_REQUIREPASS, P_POLICY, P_MAXCLIENTS,
	                              P_TIMEOUT, P_HZ, P_PROTECTED};
	enum { N = sizeof(mutable) / sizeof(*mutable) };
	static const char *const defaults[N] = {"", "noeviction", "10000",
	                                        "0", "10", "yes"};
	struct conf_line lines[N];
	char err[256], *v = malloc(N * VALUE_MAX);
	if (!c->srv->cfg.conf_file) {
		free(v);
		return resp_add_error(c->out, "ERR The server is running without "
		                      "a config file");
	}
	if (!v)
		return resp_add_error(c->out, "ERR out of memory");
	for (size_t i = 0; i < N; i++) {
		param_value(c->srv, mutable[i], v + i * VALUE_MAX, VALUE_MAX);
		lines[i] = (struct conf_line){params[mutable[i]].name,
		                              v + i * VALUE_MAX, defaults[i]};
	}
	if (conf_rewrite(c->srv->cfg.conf_file, lines, N, err, sizeof(err)))
		resp_add_error(c->out, "ERR Rewriting config file: %s", err);
	else
		resp_add_simple(c->out, "OK");
	free(v);
}

static void config_help(struct cmd_ctx *c)
{
	static const char *const lines[] = {
		"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET <pattern>", "    Return parameters matching the glob-like "
		"<pattern> and their values.",
		"SET <directive> <value>", "    Set the configuration <directive> "
		"to <value>.",
		"RESETSTAT", "    Reset statistics reported by the INFO command.",
		"REWRITE", "    Rewrite the configuration file.",
		"HELP", "    Print this help.", NULL};
	reply_help(c, lines);
}

static const struct subcommand config_subs[] = {
	{"get", -3, config_get},           {"set", -4, config_set},
	{"resetstat", 2, config_resetstat}, {"rewrite", 2, config_rewrite},
	{"help", 2, config_help},          {NULL, 0, NULL},
};

static void cmd_config(struct cmd_ctx *c)
{
	run_sub(c, config_subs);
}

/* ---- ACL: the one user ---- */

static void acl_whoami(struct cmd_ctx *c)
{
	resp_add_bulk(c->out, "default", 7);
}

static void acl_users(struct cmd_ctx *c)
{
	resp_add_array(c->out, 1);
	resp_add_bulk(c->out, "default", 7);
}

static void acl_help(struct cmd_ctx *c)
{
	static const char *const lines[] = {
		"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"USERS", "    List all the registered usernames.",
		"WHOAMI", "    Return the current connection username.",
		"HELP", "    Print this help.", NULL};
	reply_help(c, lines);
}

static const struct subcommand acl_subs[] = {
	{"whoami", 2, acl_whoami},
	{"users", 2, acl_users},
	{"help", 2, acl_help},
	{NULL, 0, NULL},
};

static void cmd_acl(struct cmd_ctx *c)
{
	run_sub(c, acl_subs);
}

/* ---- SV3: the commands a client may run before it authenticates ---- */

int session_refused(struct cmd_ctx *c, const struct command *k)
{
	static const char *const open[] = {"auth", "hello", "quit", "reset"};
	static const struct {
		const char *name;
		const struct subcommand *subs;
	} containers[] = {{"client", client_subs},
	                  {"config", config_subs},
	                  {"acl", acl_subs}};
	const struct subcommand *s;
	if (!atomic_load(&c->srv->need_auth))
		return 0;
	for (size_t i = 0; i < sizeof(open) / sizeof(*open); i++)
		if (!strcmp(k->name, open[i]))
			return 0;
	for (size_t i = 0; i < sizeof(containers) / sizeof(*containers); i++)
		if (!strcmp(k->name, containers[i].name) &&
		    sub_check(c, containers[i].subs, &s))
			return 1;
	if (!strcmp(k->name, "exec")) /* Redis's rejectCommand */
		multi_abort(c, "NOAUTH Authentication required.");
	else
		resp_add_error(c->out, "NOAUTH Authentication required.");
	return 1;
}

/* ---- HELLO, RESET ---- */

/* HELLO [protover [AUTH username password] [SETNAME clientname]]: RESP2
 * only (RESP3 is "-NOPROTO", as a server that does not know it). */
static void cmd_hello(struct cmd_ctx *c)
{
	size_t i = 1, user = 0, name = 0;
	long long ver = 2;
	if (c->q->argc >= 2 && resp_arg_ll(c->q, i++, &ver))
		return resp_add_error(c->out, "ERR Protocol version is not an "
		                      "integer or out of range");
	if (ver != 2)
		return resp_add_error(c->out, "NOPROTO unsupported protocol "
		                      "version");
	for (; i < c->q->argc; i++) {
		size_t more = c->q->argc - 1 - i;
		if (resp_arg_is(c->q, i, "auth") && more >= 2) {
			user = i + 1;
			i += 2;
		} else if (resp_arg_is(c->q, i, "setname") && more) {
			if (!name_ok(c, i + 1))
				return;
			name = ++i;
		} else {
			return resp_add_error(c->out, "ERR Syntax error in HELLO "
			                      "option '%s'", arg(c, i));
		}
	}
	if (user && !authenticate(c, user, user + 1))
		return wrongpass(c);
	if (user && c->sess)
		c->sess->unauthed = 0;
	if (c->sess && c->sess->unauthed)
		return resp_add_error(c->out, "NOAUTH HELLO must be called with "
		                      "the client already authenticated, "
		                      "otherwise the HELLO AUTH <user> <pass> "
		                      "option can be used to authenticate the "
		                      "client and select the RESP protocol "
		                      "version at the same time");
	if (name && set_name(c, name))
		return;
	static const char *const kv[] = {"server", "redis", "version",
	                                 PMKV_REDIS_VERSION};
	resp_add_array(c->out, 14);
	for (size_t j = 0; j < 4; j++)
		resp_add_bulk(c->out, kv[j], strlen(kv[j]));
	resp_add_bulk(c->out, "proto", 5);
	resp_add_int(c->out, 2);
	resp_add_bulk(c->out, "id", 2);
	resp_add_int(c->out, c->sess && c->sess->cl ? (long long)c->sess->cl->id
	                                            : 0);
	resp_add_bulk(c->out, "mode", 4);
	resp_add_bulk(c->out, "standalone", 10);
	resp_add_bulk(c->out, "role", 4);
	resp_add_bulk(c->out, "master", 6);
	resp_add_bulk(c->out, "modules", 7);
	resp_add_array(c->out, 0);
}

/* RESET (Redis's clearClientConnectionState): out of MULTI and every
 * WATCH, every subscription, database 0, no name, no NO-EVICT, and
 * unauthenticated again while a password is set. */
static void cmd_reset(struct cmd_ctx *c)
{
	struct session *s = c->sess;
	if (s) {
		multi_session_end(c->srv, s);
		s->multi = s->multi_dirty = 0;
		atomic_store(&s->watch_dirty, 0);
		pubsub_session_end(c->srv, s);
		s->db = 0;
		s->unauthed = atomic_load(&c->srv->need_auth);
		if (s->cl) {
			pthread_mutex_lock(&c->srv->lock);
			free(s->cl->name);
			s->cl->name = NULL;
			pthread_mutex_unlock(&c->srv->lock);
			atomic_store(&s->cl->no_evict, 0);
		}
	}
	pmkv_select(c->srv->store, 0);
	resp_add_simple(c->out, "RESET");
}

/* ---- TIME, LASTSAVE, SAVE, BGSAVE ---- */

static void cmd_time(struct cmd_ctx *c)
{
	struct timeval tv;
	char buf[2][24];
	gettimeofday(&tv, NULL);
	int a = snprintf(buf[0], sizeof(buf[0]), "%lld", (long long)tv.tv_sec);
	int b = snprintf(buf[1], sizeof(buf[1]), "%ld", (long)tv.tv_usec);
	resp_add_array(c->out, 2);
	resp_add_bulk(c->out, buf[0], (size_t)a);
	resp_add_bulk(c->out, buf[1], (size_t)b);
}

/* Every write acknowledged is already durable (cmd.c C1): the data set is
 * saved as of now, every time it is asked. */
static void cmd_lastsave(struct cmd_ctx *c)
{
	resp_add_int(c->out, (long long)time(NULL));
}

/* Nothing to save, and no save to start in the background: +OK. */
static void cmd_save(struct cmd_ctx *c)
{
	resp_add_simple(c->out, "OK");
}

static void cmd_bgsave(struct cmd_ctx *c)
{
	if (c->q->argc > 2 ||
	    (c->q->argc == 2 && !resp_arg_is(c->q, 1, "schedule")))
		return syntax_error(c);
	resp_add_simple(c->out, "OK");
}

const struct command pmkv_cmds_server[] = {
	{"auth", -2, cmd_auth, "noscript loading stale fast no_auth allow_busy",
	 0, 0, 0, 0},
	{"hello", -1, cmd_hello,
	 "noscript loading stale fast no_auth allow_busy", 0, 0, 0, 0},
	{"reset", 1, cmd_reset,
	 "noscript loading stale fast no_auth allow_busy", 0, 0, 0, 0},
	{"acl", -2, cmd_acl, "", 0, 0, 0, 0},
	{"client", -2, cmd_client, "", 0, 0, 0, 0},
	{"config", -2, cmd_config, "", 0, 0, 0, 0},
	{"time", 1, cmd_time, "loading stale fast", 0, 0, 0, 1},
	{"lastsave", 1, cmd_lastsave, "loading stale fast", 0, 0, 0, 1},
	{"save", 1, cmd_save, "admin noscript no_async_loading no_multi", 0, 0,
	 0, 0},
	{"bgsave", -1, cmd_bgsave, "admin noscript no_async_loading", 0, 0, 0,
	 0},
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};
