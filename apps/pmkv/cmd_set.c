/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_set.c - pmkv's set commands (cmd.h): Redis 7.0's arguments, error
 * texts and replies (t_set.c), each command one store operation
 * (store_set.h). Arguments are read, and every error a client's
 * arguments cause is found, before the store is called (store.c S13),
 * in Redis's order: where Redis looks the key up before it reads an
 * argument (SSCAN's options), a bad argument is answered only if the
 * key holds a set.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "cmd.h"
#include "store_set.h"

/* argv[from..argc) as an array of keys (or members) the caller frees
 * (cmd.c args_keys); NULL out of memory. */
static struct pmkv_key *args_of(struct cmd_ctx *c, size_t from, size_t *n)
{
	*n = c->q->argc - from;
	return args_keys(c, from, *n);
}

/* A reply gathered from the store (cmd.h struct collect): the array, or
 * the error of rc (ENOMEM if the gathering ran out of memory). */
static void reply_collected(struct cmd_ctx *c, int rc, struct collect *k)
{
	if (rc || k->oom)
		reply_status(c, rc ? rc : ENOMEM);
	else
		collect_reply(c, k);
	collect_free(k);
}

typedef int (*members_fn)(struct pmkv_store *s, const void *k, size_t kn,
                          const struct pmkv_key *m, size_t n, uint64_t *r);

/* SADD and SREM: key, then members; the count. */
static void members_cmd(struct cmd_ctx *c, members_fn fn)
{
	size_t n;
	uint64_t r = 0;
	struct pmkv_key *m = args_of(c, 2, &n);
	if (!m)
		return reply_status(c, ENOMEM);
	int rc = fn(c->srv->store, arg(c, 1), len(c, 1), m, n, &r);
	free(m);
	reply_int(c, rc, (long long)r);
}

static void cmd_sadd(struct cmd_ctx *c)
{
	members_cmd(c, pmkv_sadd);
}

static void cmd_srem(struct cmd_ctx *c)
{
	members_cmd(c, pmkv_srem);
}

static void cmd_scard(struct cmd_ctx *c)
{
	uint64_t n = 0;
	int rc = pmkv_scard(c->srv->store, arg(c, 1), len(c, 1), &n);
	reply_int(c, rc, (long long)n);
}

static void cmd_sismember(struct cmd_ctx *c)
{
	struct pmkv_key m = {arg(c, 2), len(c, 2)};
	unsigned char hit = 0;
	int rc = pmkv_smismember(c->srv->store, arg(c, 1), len(c, 1), &m, 1,
	                         &hit);
	reply_int(c, rc, hit);
}

static void cmd_smismember(struct cmd_ctx *c)
{
	size_t n;
	struct pmkv_key *m = args_of(c, 2, &n);
	unsigned char *hit = malloc(n);
	int rc = m && hit ? pmkv_smismember(c->srv->store, arg(c, 1),
	                                    len(c, 1), m, n, hit)
	                  : ENOMEM;
	if (rc) {
		reply_status(c, rc);
	} else {
		resp_add_array(c->out, (long long)n);
		for (size_t i = 0; i < n; i++)
			resp_add_int(c->out, hit[i]);
	}
	free(m);
	free(hit);
}

static void cmd_smembers(struct cmd_ctx *c)
{
	struct collect k = {0};
	int rc = pmkv_smembers(c->srv->store, arg(c, 1), len(c, 1),
	                       collect_key, &k);
	reply_collected(c, rc, &k);
}

/* SPOP and SRANDMEMBER without a count: the member, or nil. */
static void reply_one(struct cmd_ctx *c, int rc, int found, struct collect *k)
{
	size_t n;
	const char *m;
	if (rc || k->oom) {
		reply_status(c, rc ? rc : ENOMEM);
	} else if (!found || !k->n) {
		resp_add_null(c->out);
	} else {
		m = collect_at(k, 0, &n); /* NULL for the empty member */
		resp_add_bulk(c->out, n ? m : "", n);
	}
	collect_free(k);
}

static void cmd_spop(struct cmd_ctx *c)
{
	struct collect k = {0};
	long long count = 1;
	int found, with = c->q->argc == 3;
	if (c->q->argc > 3)
		return syntax_error(c);
	if (with && count_arg(c, 2, 0, "ERR value is out of range, must be "
	                      "positive", &count))
		return;
	int rc = pmkv_spop(c->srv->store, arg(c, 1), len(c, 1),
	                   (uint64_t)count, collect_key, &k, &found);
	if (with)
		reply_collected(c, rc, &k);
	else
		reply_one(c, rc, found, &k);
}

/* SRANDMEMBER's count: -LLONG_MAX to LLONG_MAX, a negative one drawing
 * with repeats (Redis's getRangeLongFromObjectOrReply). */
static void cmd_srandmember(struct cmd_ctx *c)
{
	struct collect k = {0};
	long long count = 1;
	int found, with = c->q->argc == 3;
	if (c->q->argc > 3)
		return syntax_error(c);
	if (with && resp_arg_ll(c->q, 2, &count))
		return not_integer(c);
	if (count == LLONG_MIN)
		return resp_add_error(c->out, "ERR value is out of range, value "
		                      "must between -9223372036854775807 and "
		                      "9223372036854775807");
	int rc = pmkv_srandmember(c->srv->store, arg(c, 1), len(c, 1),
	                          (uint64_t)(count < 0 ? -count : count),
	                          count < 0, collect_key, &k, &found);
	if (with)
		reply_collected(c, rc, &k);
	else
		reply_one(c, rc, found, &k);
}

static void cmd_smove(struct cmd_ctx *c)
{
	int moved = 0;
	int rc = pmkv_smove(c->srv->store, arg(c, 1), len(c, 1), arg(c, 2),
	                    len(c, 2), arg(c, 3), len(c, 3), &moved);
	reply_int(c, rc, moved);
}

/* SINTER, SUNION, SDIFF: the keys from argv[1] on; the result. */
static void setop_cmd(struct cmd_ctx *c, enum pmkv_setop op)
{
	struct collect k = {0};
	size_t n;
	struct pmkv_key *keys = args_of(c, 1, &n);
	int rc = keys ? pmkv_setop(c->srv->store, op, keys, n, collect_key, &k)
	              : ENOMEM;
	free(keys);
	reply_collected(c, rc, &k);
}

static void cmd_sinter(struct cmd_ctx *c)
{
	setop_cmd(c, PMKV_SINTER);
}

static void cmd_sunion(struct cmd_ctx *c)
{
	setop_cmd(c, PMKV_SUNION);
}

static void cmd_sdiff(struct cmd_ctx *c)
{
	setop_cmd(c, PMKV_SDIFF);
}

/* SINTERSTORE, SUNIONSTORE, SDIFFSTORE: the destination, then the keys;
 * the result's size. */
static void setop_store_cmd(struct cmd_ctx *c, enum pmkv_setop op)
{
	size_t n;
	uint64_t card = 0;
	struct pmkv_key *keys = args_of(c, 2, &n);
	int rc = keys ? pmkv_setop_store(c->srv->store, op, arg(c, 1),
	                                 len(c, 1), keys, n, &card)
	              : ENOMEM;
	free(keys);
	reply_int(c, rc, (long long)card);
}

static void cmd_sinterstore(struct cmd_ctx *c)
{
	setop_store_cmd(c, PMKV_SINTER);
}

static void cmd_sunionstore(struct cmd_ctx *c)
{
	setop_store_cmd(c, PMKV_SUNION);
}

static void cmd_sdiffstore(struct cmd_ctx *c)
{
	setop_store_cmd(c, PMKV_SDIFF);
}

/* SINTERCARD numkeys key [key ...] [LIMIT limit], as Redis 7.0's
 * sinterCardCommand reads it. */
static void cmd_sintercard(struct cmd_ctx *c)
{
	long long numkeys, limit = 0;
	uint64_t card = 0;
	size_t argc = c->q->argc;
	if (count_arg(c, 1, 1, "ERR numkeys should be greater than 0",
	              &numkeys))
		return;
	if (numkeys > (long long)argc - 2)
		return resp_add_error(c->out, "ERR Number of keys can't be "
		                      "greater than number of args");
	for (size_t i = 2 + (size_t)numkeys; i < argc; i++) {
		if (!resp_arg_is(c->q, i, "limit") || i + 1 >= argc)
			return syntax_error(c);
		if (count_arg(c, ++i, 0, "ERR LIMIT can't be negative",
		              &limit))
			return;
	}
	struct pmkv_key *keys = args_keys(c, 2, (size_t)numkeys);
	int rc = keys ? pmkv_sintercard(c->srv->store, keys, (size_t)numkeys,
	                                (uint64_t)limit, &card)
	              : ENOMEM;
	free(keys);
	reply_int(c, rc, (long long)card);
}

/* SSCAN key cursor [MATCH pattern] [COUNT count] (cmd.c scan_args). */
static void cmd_sscan(struct cmd_ctx *c)
{
	struct collect k = {0};
	struct scan_opts o;
	uint64_t cur, next = 0;
	if (scan_args(c, pmkv_scard, &cur, &o))
		return;
	k.pat = o.pat, k.pn = o.pn;
	int rc = pmkv_sscan(c->srv->store, arg(c, 1), len(c, 1), cur,
	                    (uint64_t)o.count, collect_key, &k, &next);
	if (rc || k.oom)
		reply_status(c, rc ? rc : ENOMEM);
	else
		scan_page(c, next, &k);
	collect_free(&k);
}

const struct command pmkv_cmds_set[] = {
	{"sadd", -3, cmd_sadd, "write denyoom fast", 1, 1, 1, 1},
	{"srem", -3, cmd_srem, "write fast", 1, 1, 1, 1},
	{"smembers", 2, cmd_smembers, "readonly", 1, 1, 1, 1},
	{"sismember", 3, cmd_sismember, "readonly fast", 1, 1, 1, 1},
	{"smismember", -3, cmd_smismember, "readonly fast", 1, 1, 1, 1},
	{"scard", 2, cmd_scard, "readonly fast", 1, 1, 1, 1},
	{"spop", -2, cmd_spop, "write fast", 1, 1, 1, 1},
	{"srandmember", -2, cmd_srandmember, "readonly", 1, 1, 1, 1},
	{"smove", 4, cmd_smove, "write fast", 1, 2, 1, 1},
	{"sinter", -2, cmd_sinter, "readonly", 1, -1, 1, 1},
	{"sintercard", -3, cmd_sintercard, "readonly movablekeys", 0, 0, 0, 1},
	{"sunion", -2, cmd_sunion, "readonly", 1, -1, 1, 1},
	{"sdiff", -2, cmd_sdiff, "readonly", 1, -1, 1, 1},
	{"sinterstore", -3, cmd_sinterstore, "write denyoom", 1, -1, 1, 1},
	{"sunionstore", -3, cmd_sunionstore, "write denyoom", 1, -1, 1, 1},
	{"sdiffstore", -3, cmd_sdiffstore, "write denyoom", 1, -1, 1, 1},
	{"sscan", -3, cmd_sscan, "readonly", 1, 1, 1, 1},
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};
