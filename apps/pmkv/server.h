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

struct server_config {
	const char *bind;        /* TCP address; default 127.0.0.1 */
	int port;                /* 0: no TCP listener */
	const char *unixsocket;  /* NULL: none */
	unsigned unixsocketperm; /* octal mode of the socket file */
	unsigned maxclients;
	unsigned io_threads;     /* 0: a thread per client (the seed's);
	                          * else that many event-loop threads */
	size_t qbuf_max;         /* most bytes one client may have buffered */
	int commit_delay_us;     /* --io-threads: how long a loop's batch
	                          * waits for more of its connections before
	                          * it commits (loop.c L5); -1: 50 on the
	                          * disk backends, else 0 */
	struct resp_limits lim;
	unsigned hz;             /* active expiry's passes per second
	                          * (server.c V3) */
	const char *region_path; /* for INFO */
	const char *executable;
};

struct server {
	struct server_config cfg;
	struct pmkv_store *store;
	int tcp_fd, unix_fd;
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
	_Atomic int64_t oom_logged;
	/* the keys clients WATCH (multi.c M4) */
	pthread_mutex_t wlock;
	struct watch *watched;
	_Atomic unsigned nwatched;
};

struct command;
struct queued;
struct watch;

/* What a client connection keeps between its commands. */
struct session {
	int multi;        /* between MULTI and EXEC or DISCARD (multi.c) */
	int multi_dirty;  /* a command was refused while queuing: EXECABORT */
	_Atomic int watch_dirty; /* a watched key was written (multi.c M3) */
	unsigned nwatch;  /* keys this session watches */
	unsigned db;      /* SELECT's (store.c S15) */
	struct queued **queue; /* the commands queued since MULTI */
	size_t nqueued, capqueued;
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

/* Serve one client on fd until it closes or the server stops. */
void conn_serve(struct server *srv, int fd);
/* A connection has ended: close fd and let the server count it out. */
void server_forget(struct server *srv, int fd);

int server_listen(struct server *srv, char *msg, size_t len);
/* Accept clients until server_stop; then close them all and return. */
int server_run(struct server *srv);
void server_stop(struct server *srv);

#endif
