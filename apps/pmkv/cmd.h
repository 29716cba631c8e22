/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd.h - what the command files share: the command table's entry, the
 * argument and reply helpers (cmd.c), and each type's table (cmd_hash.c,
 * cmd_list.c, cmd_set.c, cmd_zset.c). cmd.c's invariants (C1-C4) hold in
 * every one of them.
 */
#ifndef PMKV_CMD_H
#define PMKV_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "server.h"

struct command {
	const char *name; /* lower-case letters only (cmd.c is_name) */
	int arity;
	void (*fn)(struct cmd_ctx *c);
	const char *flags; /* COMMAND's flags, space separated */
	int first, last, step; /* key positions, for COMMAND */
	int grouped; /* may run in a group commit (group.c): the store's
	              * group operations only (store.h), or none */
};

/* Each type's commands, ended by an entry whose name is NULL. */
extern const struct command pmkv_cmds_hash[];
extern const struct command pmkv_cmds_list[];
extern const struct command pmkv_cmds_set[];
extern const struct command pmkv_cmds_zset[];
extern const struct command pmkv_cmds_multi[]; /* multi.c */

/* Argument i and its length. */
static inline const char *arg(struct cmd_ctx *c, size_t i)
{
	return c->q->argv[i];
}

static inline size_t len(struct cmd_ctx *c, size_t i)
{
	return c->q->argl[i];
}

/* The store's status rc as the client's error (Redis's text). */
void reply_status(struct cmd_ctx *c, int rc);
/* +OK, or the error of rc. */
void reply_ok(struct cmd_ctx *c, int rc);
/* :v, or the error of rc. */
void reply_int(struct cmd_ctx *c, int rc, long long v);
/* A pmkv_emit_fn that appends a bulk string to the resp_out arg. */
void emit_bulk(void *arg, const void *p, size_t n);
void syntax_error(struct cmd_ctx *c);
void not_integer(struct cmd_ctx *c);
/* Redis's arity error for the command argv[0] names. */
void wrong_args(struct cmd_ctx *c);

/* Byte strings gathered while the store holds them, to reply after: the
 * count of an array must come before its elements. With pat set, only
 * the ones that match it (Redis's glob) are kept. */
struct collect {
	char *bytes;
	size_t nbytes, capbytes;
	size_t *end;
	size_t n, cap;
	const char *pat;
	size_t pn;
	int oom;
};
/* A pmkv_emit_fn: add p[0..n) to the struct collect arg. */
void collect_key(void *arg, const void *p, size_t n);
/* Element i. */
static inline const char *collect_at(const struct collect *k, size_t i,
                                     size_t *n)
{
	size_t at = i ? k->end[i - 1] : 0;
	*n = k->end[i] - at;
	return k->bytes + at;
}
/* The whole collection as one array. */
void collect_reply(struct cmd_ctx *c, struct collect *k);
void collect_free(struct collect *k);

#endif
