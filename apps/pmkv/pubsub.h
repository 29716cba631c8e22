/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pubsub.h - publish/subscribe (pubsub.c): what the dispatcher (cmd.c),
 * the connections (conn.c) and the event loops (loop.c) call. The
 * commands themselves are the table pmkv_cmds_pubsub (cmd.h).
 */
#ifndef PMKV_PUBSUB_H
#define PMKV_PUBSUB_H

#include <stddef.h>

#include "server.h"

struct command;

/* RESP2's subscribed context (Redis 7.0's processCommand): 1 if c's
 * command k, run by a subscribed client, is refused (the error, or
 * Redis's arity error of a subcommand, replied); 0 if it runs. */
int pubsub_refuses(struct cmd_ctx *c, const struct command *k);

/* Unsubscribe s from every channel and pattern, and drop the messages
 * waiting for it (RESET, and a closing connection). Its mailbox stays
 * (an event loop may still watch its eventfd) until
 * pubsub_session_free. */
void pubsub_session_end(struct server *srv, struct session *s);
/* Free s's mailbox, after pubsub_session_end (the eventfd is the
 * session's: mailbox.c). */
void pubsub_session_free(struct session *s);

/* For a session that has a mailbox (s->ps): move the messages waiting
 * into out, after what it holds (P1). 0, or -1 if the connection was
 * closed for its output limit (P3): close it. */
int pubsub_drain(struct session *s, struct resp_out *out);
/* The connection has n bytes of replies not yet sent (P3's count). */
void pubsub_unsent(struct session *s, size_t n);

#endif
