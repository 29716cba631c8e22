/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mailbox.h - what other threads leave for a connection, and the eventfd
 * that wakes it (mailbox.c): pub/sub's messages (pubsub.c) and a blocked
 * command's reply (blocking.c). conn.c (N6) and loop.c (L6) call it.
 */
#ifndef PMKV_MAILBOX_H
#define PMKV_MAILBOX_H

#include "server.h"

/* Give s its eventfd, if it has none yet: 0, or -1. */
int mailbox_open(struct session *s);
/* Close it, after pubsub_session_free and blocked_session_end. */
void mailbox_close(struct session *s);
/* The eventfd, or -1 while s has none. */
int mailbox_fd(const struct session *s);
/* Wake the connection whose eventfd is efd (another thread). */
void mailbox_ring(int efd);
/* Woken: reset the eventfd (before mailbox_take). */
void mailbox_woken(struct session *s);
/* Move what waits for s into out: pub/sub's messages, then a blocked
 * command's reply (or its timeout's). 0, or -1 if the connection was
 * closed for its output limit (pubsub.c P3): close it. */
int mailbox_take(struct session *s, struct resp_out *out);

#endif
