/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * blocking.h - blocked clients (blocking.c): what the blocking commands
 * (cmd_list.c's BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP; cmd_zset.c's
 * BZPOPMIN, BZPOPMAX, BZMPOP), the dispatcher (cmd.c), group commit
 * (group.c) and the connections (conn.c, loop.c, mailbox.c) call.
 */
#ifndef PMKV_BLOCKING_H
#define PMKV_BLOCKING_H

#include <stdint.h>

#include "server.h"

/* A blocking command's attempt: pop from the first of keys[0..n) that
 * has something, the reply appended to c->out. 1: done (its reply, or
 * an error that ends the command); 0: nothing to pop, nothing replied.
 * serving: the attempt for a waiter on keys[0] alone (n 1), made by the
 * thread that signalled the key (B3): a key of another type is then
 * nothing to pop, and the waiter stays. */
typedef int (*block_try_fn)(struct cmd_ctx *c, const struct pmkv_key *keys,
                            size_t n, int serving);

/* A blocking command, as its handler read it. */
struct block_call {
	size_t first, nkeys; /* its keys: argv[first..first + nkeys) */
	size_t dst;      /* BLMOVE's destination (argv index), or 0 */
	int nil_bulk;    /* nothing to pop in MULTI or a script: $-1 (else
	                  * a null array, as every timeout) */
	int64_t deadline; /* block_timeout's */
	block_try_fn try;
};

/* argv[i] as Redis 7.0's timeout in seconds (getTimeoutFromObjectOrReply):
 * 0 and *deadline (0: forever), or -1 after the error. */
int block_timeout(struct cmd_ctx *c, size_t i, int64_t *deadline);
/* An attempt's end: the store's status rc (what it replied from mark on
 * taken back first, and the error replied; a serving attempt's WRONGTYPE
 * is nothing to pop), and whether it popped. The attempt's result. */
int block_result(struct cmd_ctx *c, size_t mark, int rc, int got,
                 int serving);
/* BLPOP, BRPOP, BZPOPMIN, BZPOPMAX: key [key ...] timeout. */
void block_keys(struct cmd_ctx *c, block_try_fn try);
/* BLMPOP's and BZMPOP's arguments after the timeout, read as LMPOP's
 * and ZMPOP's (cmd.c mpop_args; ends: the two words of WHERE): the
 * number of keys, or 0 after the error. */
size_t block_mpop_args(struct cmd_ctx *c, const char *const ends[2],
                       int *which, uint64_t *count);
/* BLMPOP, BZMPOP: timeout numkeys key [key ...] WHERE [COUNT count],
 * the timeout read after the others (Redis's lmpopGenericCommand and
 * zmpopGenericCommand). */
void block_mpop(struct cmd_ctx *c, const char *const ends[2],
                block_try_fn try);
/* Run the command: its attempt, and, if it has nothing to pop, the
 * client blocked (B1); in MULTI, a script or EXEC, b->nil_bulk's reply
 * at once instead. */
void block_run(struct cmd_ctx *c, const struct block_call *b);

/* cmd.c, after a write c ran (nested too): its keys that have waiters
 * are ready (B2). */
void blocked_signal(struct cmd_ctx *c);
/* cmd.c, after a command read from a client: serve the waiters of the
 * ready keys (B3), in c's group if it runs in one (settled by group.c),
 * else in a group of their own. */
void blocked_serve(struct cmd_ctx *c);
/* group.c, once a group has ended: the waiters it served get their
 * replies if it committed, else wait on (B4). */
void blocked_settle(int committed);

/* The connection's own thread (mailbox.c, conn.c, loop.c): move a
 * served reply, or a timeout's null array, into out, and end the block
 * (s->blocked NULL); else leave it blocked. */
void blocked_take(struct session *s, struct resp_out *out);
/* ms until s's blocked command times out (0: now), or -1 (none). */
int blocked_wait_ms(const struct session *s);
/* A closing connection: its waiter, if any, removed (B5). */
void blocked_session_end(struct session *s);
/* INFO's blocked_clients. */
unsigned blocked_clients(void);

#endif
