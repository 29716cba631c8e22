/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * server.h - pmkv's server: listeners, a thread per connected client (the
 * seed's architecture), and the command table they dispatch to.
 */
#ifndef PMKV_SERVER_H
#define PMKV_SERVER_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "resp.h"
#include "store.h"

#define PMKV_REDIS_VERSION "7.0.15" /* the Redis whose replies pmkv gives */

struct server_config {
	const char *bind;        /* TCP addresses, separated by a space (a
	                          * '-' before one: skipped if it is not
	                          * there); default 127.0.0.1 */
	int port;                /* 0: no TCP listener */
	const char *unixsocket;  /* NULL: none */
	unsigned unixsocketperm; /* octal mode of the socket file */
	_Atomic unsigned maxclients; /* CONFIG SET changes it, and hz */
	unsigned io_threads;     /* 0: a thread per client (the seed's);
	                          * else that many event-loop threads */
	size_t qbuf_max;         /* most bytes one client may have buffered */
	int commit_delay_us;     /* --io-threads: how long a loop's batch
	                          * waits for more of its connections before
	                          * it commits (loop.c L5); -1: 50 on the
	                          * disk backends, else 0 */
	struct resp_limits lim;
	_Atomic unsigned hz;     /* active expiry's passes per second
	                          * (server.c V3) */
	const char *region_path; /* for INFO */
	const char *executable;
	_Atomic int maxmemory_policy; /* enum pmkv_policy (store.c S16) */
	/* cmd_server.c's CONFIG */
	const char *conf_file;   /* the redis.conf given (conf.c), or NULL */
	const char *requirepass; /* at start; then the server's, below */
	_Atomic int protected_mode; /* SV5 */
	_Atomic unsigned timeout;   /* a client idle longer (seconds) is
	                             * closed; 0: never */
};

struct server {
	struct server_config cfg;
	struct pmkv_store *store;
#define TCP_MAX 16          /* addresses of bind (server.c V4) */
	int tcp_fds[TCP_MAX], unix_fd;
	unsigned ntcp;
	int wake[2];             /* a pipe: written to stop accepting */
	int64_t started_ms;
	_Atomic int stopping;
	/* the connections, to close them at shutdown */
	pthread_mutex_t lock;
	pthread_cond_t gone;     /* a connection has ended */
	unsigned nconns;         /* under lock */
	int *fds;                /* nconns open sockets, under lock */
	_Atomic uint64_t conns_total, rejected, commands;
	/* group commit (group.c): groups committed that ran a request, the
	 * requests they ran, and the connections that ran one in them */
	_Atomic uint64_t groups, group_cmds, group_conns;
	/* active expiry (V3): keys removed, and where the next step starts */
	_Atomic uint64_t expired;
	uint64_t expire_cursor;
	unsigned expire_db;      /* the database it is in */
	int64_t expire_next_ms;
	/* commands refused because a commit failed on the disk (PMTX_E_IO:
	 * MISCONF, as Redis when it cannot write its AOF) */
	_Atomic uint64_t write_errors;
	/* writes refused for want of room (OOM), and when that was last
	 * logged (seconds since the epoch) */
	_Atomic uint64_t oom_refusals;
	_Atomic uint64_t evicted; /* keys evicted (store.c S16) */
	_Atomic int64_t oom_logged;
	/* the keys clients WATCH (multi.c M4) */
	pthread_mutex_t wlock;
	struct watch *watched;
	_Atomic unsigned nwatched;
	/* cmd_server.c: the connected clients (SV1, under lock) and their
	 * ids; the password (under cfg_lock; need_auth while there is one);
	 * INFO's run_id and master_replid */
	struct client *clients;
	_Atomic uint64_t client_ids;
	pthread_mutex_t cfg_lock;
	char *requirepass;
	_Atomic int need_auth;
	char run_id[41], replid[41];
};

struct client;
struct command;
struct queued;
struct watch;
struct pubsub_client;
struct waiter;

/* A copy of a request in one block (multi.c: MULTI's queue, and a
 * blocked command's, blocking.c): argc, then the lengths, then the
 * bytes, each argument followed by a NUL as the parser leaves them. */
struct queued {
	size_t argc;
	size_t *argl;
	char **argv;
};
/* A copy of q (free() it), or NULL out of memory. */
struct queued *queued_copy(const struct resp_req *q);

/* What a client connection keeps between its commands. */
struct session {
	int multi;        /* between MULTI and EXEC or DISCARD (multi.c) */
	int multi_dirty;  /* a command was refused while queuing: EXECABORT */
	_Atomic int watch_dirty; /* a watched key was written (multi.c M3) */
	unsigned nwatch;  /* keys this session watches */
	unsigned db;      /* SELECT's (store.c S15) */
	struct queued **queue; /* the commands queued since MULTI */
	size_t nqueued, capqueued;
	int fd;           /* the connection's socket (pubsub.c P2) */
	struct pubsub_client *ps; /* since its first SUBSCRIBE (pubsub.c) */
	unsigned subscribed; /* channels and patterns: RESP2's subscribed
	                      * context while non-zero (pubsub.c P5) */
	struct client *cl;   /* its entry among the clients (cmd_server.c) */
	int mail, mailfd;    /* its eventfd, once it has one (mailbox.c) */
	/* its blocked command (blocking.c), NULL when none: written by its
	 * own thread, read by CLIENT LIST's */
	struct waiter *_Atomic blocked;
	int unauthed;        /* to AUTH before other commands (SV3) */
	const struct command *_Atomic last_cmd; /* CLIENT LIST's cmd */
};

/* The context of one command. */
struct cmd_ctx {
	struct server *srv;
	const struct command *cmd; /* the table's entry (cmd.h) */
	struct session *sess;      /* the client's */
	struct resp_req *q;
	struct resp_out *out;
	int close_after; /* QUIT: reply, then close */
	int in_group;    /* in a group commit: an error is final only when
	                  * the request runs again alone (conn.c N5) */
	int nested;      /* run by another command (EXEC), not read from
	                  * the client (cmd_dispatch sets it) */
	int refused;     /* a write was refused for want of room (S16) */
};

/* Run the command in ctx->q, appending its reply to ctx->out. */
void cmd_dispatch(struct cmd_ctx *c);
/* multi.c: queue c's request (M1): 0, or -1 out of memory; whether the
 * command k runs even inside MULTI; mark the sessions watching the keys
 * of the write c ran (all: every watching session); and free what a
 * session of a closing connection holds. */
int multi_queue(struct cmd_ctx *c);
int multi_passes(const struct command *k);
/* EXEC refused before it ran (Redis's execCommandAbort): the error why,
 * as EXECABORT, and the transaction, if any, discarded. */
void multi_abort(struct cmd_ctx *c, const char *why);
void multi_touch(struct cmd_ctx *c, int all);
void multi_session_end(struct server *srv, struct session *s);
/* Hints for the requests a group runs from in[0..n) (C4): the store is
 * told (store.h pmkv_hint) the first argument of each whole multibulk
 * request a few requests before it runs, its bucket two requests ahead,
 * then its entry one request ahead, so that each load has a request's
 * work to arrive in. Only writes with a key are hinted, and the look-ahead
 * moves on only after one has run. cmd_hint_begin before the first
 * request, and cmd_hint_next with each request run. */
struct cmd_hints {
	size_t at;    /* where the next request to look at begins */
	uint64_t tok; /* the request two ahead: its bucket hinted */
	int more;     /* 0: nothing more to hint */
};
void cmd_hint_begin(struct server *srv, struct cmd_hints *h, const char *in,
                    size_t n);
void cmd_hint_next(struct server *srv, struct cmd_hints *h,
                   const struct resp_req *ran, const char *in, size_t n);
/* 1 if the command in q may run in a group commit (group.c). */
int cmd_grouped(const struct resp_req *q);
/* 1 if the command in q changes the store (COMMAND's "write" flag). */
int cmd_writes(const struct resp_req *q);
/* INFO's text for the sections named in argv[1..] (all if none). */
void cmd_info(struct cmd_ctx *c);
/* Redis's glob-style match (KEYS, SCAN MATCH), binary safe. */
int glob_match(const char *pat, size_t pn, const char *s, size_t sn,
               int nocase);

/* cmd_server.c. server_conf_init once srv->cfg is set: 0, or -1. A
 * connection's session is opened (listed: SV1) before its first request,
 * 0 or -1 (out of memory: close it), and closed before its socket is;
 * each turn of requests begins and ends with session_turn (the end
 * publishes what CLIENT LIST shows of it: qbuf bytes received not yet
 * run, qfree the room left), and session_read precedes each read of
 * its socket. session_refused before a command runs: 1
 * if it is refused for want of AUTH (SV3), the error replied.
 * client_denied: protected mode's text for a socket just accepted, or
 * NULL (SV5). clients_cron: the idle timeout, from the cron. */
int server_conf_init(struct server *srv);
int session_open(struct server *srv, struct session *s, int fd);
void session_close(struct server *srv, struct session *s);
void session_turn(struct session *s, int begin, size_t qbuf, size_t qfree);
void session_read(struct session *s);
int session_refused(struct cmd_ctx *c, const struct command *k);
const char *client_denied(struct server *srv, int fd);
void clients_cron(struct server *srv);

/* Serve one client on fd until it closes or the server stops. */
void conn_serve(struct server *srv, int fd);
/* A connection has ended: close fd and let the server count it out. */
void server_forget(struct server *srv, int fd);

int server_listen(struct server *srv, char *msg, size_t len);
/* Accept clients until server_stop; then close them all and return. */
int server_run(struct server *srv);
void server_stop(struct server *srv);

#endif
