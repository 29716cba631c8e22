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
/* Send the waiting replies: 0 all sent, 1 the socket is full (not
 * blocking), -1 the connection failed. */
int conn_send(struct conn *c, int blocking);

#endif
