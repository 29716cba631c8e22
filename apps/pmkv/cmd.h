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

/* A container's subcommand (CLIENT's, CONFIG's, ACL's, OBJECT's). */
struct subcommand {
	const char *name; /* lower case */
	int arity;        /* Redis's, the container's name included */
	void (*fn)(struct cmd_ctx *c);
};
/* Run the subcommand argv[1] names in t (ended by a NULL name), after
 * Redis's errors for an unknown one or a wrong number of its arguments
 * (cmd_server.c). */
void run_sub(struct cmd_ctx *c, const struct subcommand *t);
/* HELP's reply: the NULL-ended lines, each a simple string. */
void reply_help(struct cmd_ctx *c, const char *const *lines);

/* Each type's commands, ended by an entry whose name is NULL. */
extern const struct command pmkv_cmds_hash[];
extern const struct command pmkv_cmds_list[];
extern const struct command pmkv_cmds_set[];
extern const struct command pmkv_cmds_zset[];
extern const struct command pmkv_cmds_multi[]; /* multi.c */
extern const struct command pmkv_cmds_pubsub[]; /* pubsub.c */
extern const struct command pmkv_cmds_server[]; /* cmd_server.c */
extern const struct command pmkv_cmds_script[]; /* script.c */
extern const struct command pmkv_cmds_keys[]; /* cmd_keys.c */

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
/* INCRBYFLOAT's and HINCRBYFLOAT's reply: the number's text, or the
 * error of rc (a NaN or infinite sum: Redis's text). */
void reply_float(struct cmd_ctx *c, int rc, const char *buf, size_t n);
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

/* ---- arguments the types' commands share ---- */

/* argv[i] as a count of at least min, else the error text msg (Redis's
 * getRangeLongFromObjectOrReply: one text whether it is not a number or
 * out of range). 0, or -1 after the error. */
int count_arg(struct cmd_ctx *c, size_t i, long long min, const char *msg,
              long long *v);
/* argv[from..from + n) as keys (or members): an array the caller frees,
 * or NULL out of memory (nothing replied). */
struct pmkv_key *args_keys(struct cmd_ctx *c, size_t from, size_t n);
/* LMPOP's and ZMPOP's numkeys key [key ...] WHERE [COUNT count], read as
 * Redis 7.0's lmpopGenericCommand and zmpopGenericCommand: numkeys, then
 * WHERE, one of where[0] and where[1] (*which 0 or 1; a syntax error if
 * the arguments end before it), then COUNT at most once (*count 1
 * without it). numkeys (the keys from argv[2]), or 0 after the error. */
size_t mpop_args(struct cmd_ctx *c, const char *const where[2], int *which,
                 uint64_t *count);

/* ---- HSCAN, SSCAN, ZSCAN: key cursor [MATCH pattern] [COUNT count] ---- */

struct scan_opts {
	const char *pat; /* NULL: every element */
	size_t pn;
	long long count;
};
/* The type's count of elements at key k (pmkv_hlen, pmkv_scard,
 * pmkv_zcard): 0 for an absent key, or PMKV_E_WRONGTYPE. */
typedef int (*scan_card_fn)(struct pmkv_store *s, const void *k, size_t kn,
                            uint64_t *n);
/* The cursor and the options, in Redis 7.0's order (scanGenericCommand):
 * the cursor's error first; an option's error once the key has answered
 * (card: another type's WRONGTYPE, an absent key's empty page, then the
 * error). 0 and *cur, *o; or -1 after the reply. */
int scan_args(struct cmd_ctx *c, scan_card_fn card, uint64_t *cur,
              struct scan_opts *o);
/* A page: the next cursor, then k's elements (NULL: none). */
void scan_page(struct cmd_ctx *c, uint64_t next, struct collect *k);
/* Pairs gathered for a page (HSCAN's field and value, ZSCAN's member and
 * score): scan_pair, a pmkv_pair_fn, keeps a pair if its first matches
 * pat (Redis's glob). */
struct scan_pairs {
	struct collect k;
	const char *pat;
	size_t pn;
};
void scan_pair(void *arg, const void *a, size_t an, const void *b,
               size_t bn);

#endif
