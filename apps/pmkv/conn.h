/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.h - a client connection's buffers, shared by the thread-per-client
 * server (conn.c: conn_serve) and the event loops (loop.c).
 */
#ifndef PMKV_CONN_H
#define PMKV_CONN_H

#include "server.h"

struct conn {
	struct server *srv;
	int fd;
	char *in;          /* received, not yet run */
	size_t n, cap;
	struct resp_req q;
	struct resp_out out; /* replies; out.p[sent..n) not yet sent */
	size_t sent;
	int closing;       /* send what is due, then close */
	/* the requests run in a group (group.c) and not yet settled */
	size_t g_in;       /* input bytes they took */
	size_t g_out;      /* out.n before their replies */
	unsigned g_ran;    /* how many: uncounted if they run again */
	struct session sess; /* MULTI, WATCH (multi.c) */
};

void conn_init(struct conn *c, struct server *srv, int fd);
void conn_free(struct conn *c);
/* Make room to read into (N1): 0, or -1 (the error reply queued and
 * closing set, or out of memory). */
int conn_room(struct conn *c);
/* Run whole requests from the input, appending replies, until none is
 * left, the connection is to close, or OUT_FLUSH bytes wait (N4): then
 * returns 1 (send, and call again). */
int conn_run(struct conn *c);
/* In the calling thread's store group (store.c S8), run the whole
 * groupable requests (cmd_grouped) at the head of the input, at most
 * max, and keep them in the input and their replies unsent until
 * conn_group_settle. Returns how many ran. */
unsigned conn_group_run(struct conn *c, unsigned max);
/* The group committed (keep the replies, drop the requests run from the
 * input) or not (drop the replies: conn_run runs the requests again). */
void conn_group_settle(struct conn *c, int committed);
/* 1 if the first whole request of the input changes the store
 * (cmd_writes): what a commit would be made for. */
int conn_writes_next(struct conn *c);
/* Send the waiting replies: 0 all sent, 1 the socket is full (not
 * blocking), -1 the connection failed. */
int conn_send(struct conn *c, int blocking);

#endif
