/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_hash.c - pmkv's hash commands (cmd.h): Redis 7.0's t_hash.c, its
 * argument checks in its order and with its texts, each command one store
 * operation (store_hash.h) and one reply (cmd.c C1-C3).
 *
 * Where Redis checks an argument after its lookup (HSCAN's options: a
 * key that is absent or of another type answers before them), the
 * options are read first and their error kept; the reply is then the
 * key's (pmkv_type) or the error.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "store_hash.h"

/* argv[from], argv[from + step], ...: n of them into k. */
static void args_of(struct cmd_ctx *c, size_t from, size_t step,
                    struct pmkv_key *k, size_t n)
{
	for (size_t i = 0; i < n; i++, from += step)
		k[i] = (struct pmkv_key){arg(c, from), len(c, from)};
}

static void out_of_memory(struct cmd_ctx *c)
{
	resp_add_error(c->out, "ERR out of memory");
}

/* A failed read that may have replied part of its array: the part taken
 * back (C3), then the error. */
static void read_failed(struct cmd_ctx *c, size_t mark, int rc)
{
	c->out->n = mark;
	if (rc == ENOMEM)
		return out_of_memory(c);
	reply_status(c, rc);
}

/* ---- writes ---- */

/* HSET (reply: the fields added) and HMSET (+OK): pairs from argv[2]. */
static void hset_cmd(struct cmd_ctx *c, int hmset)
{
	size_t n = (c->q->argc - 2) / 2;
	uint64_t added = 0;
	if (c->q->argc % 2)
		return wrong_args(c);
	struct pmkv_key *k = calloc(2 * n, sizeof(*k));
	if (!k)
		return out_of_memory(c);
	args_of(c, 2, 2, k, n);
	args_of(c, 3, 2, k + n, n);
	int rc = pmkv_hset(c->srv->store, arg(c, 1), len(c, 1), k, k + n, n, 0,
	                   &added);
	free(k);
	if (hmset)
		reply_ok(c, rc);
	else
		reply_int(c, rc, (long long)added);
}

static void cmd_hset(struct cmd_ctx *c)
{
	hset_cmd(c, 0);
}

static void cmd_hmset(struct cmd_ctx *c)
{
	hset_cmd(c, 1);
}

static void cmd_hsetnx(struct cmd_ctx *c)
{
	struct pmkv_key f = {arg(c, 2), len(c, 2)}, v = {arg(c, 3), len(c, 3)};
	uint64_t added = 0;
	int rc = pmkv_hset(c->srv->store, arg(c, 1), len(c, 1), &f, &v, 1, 1,
	                   &added);
	reply_int(c, rc, (long long)added);
}

static void cmd_hdel(struct cmd_ctx *c)
{
	size_t n = c->q->argc - 2;
	uint64_t removed = 0;
	struct pmkv_key *f = calloc(n, sizeof(*f));
	if (!f)
		return out_of_memory(c);
	args_of(c, 2, 1, f, n);
	int rc = pmkv_hdel(c->srv->store, arg(c, 1), len(c, 1), f, n, &removed);
	free(f);
	reply_int(c, rc, (long long)removed);
}

static void cmd_hincrby(struct cmd_ctx *c)
{
	long long d;
	int64_t v = 0;
	if (resp_arg_ll(c->q, 3, &d))
		return not_integer(c);
	int rc = pmkv_hincrby(c->srv->store, arg(c, 1), len(c, 1), arg(c, 2),
	                      len(c, 2), d, &v);
	if (rc == PMKV_E_NOTINT)
		return resp_add_error(c->out, "ERR hash value is not an integer");
	reply_int(c, rc, v);
}

static void cmd_hincrbyfloat(struct cmd_ctx *c)
{
	long double d;
	char buf[PMKV_LD_CHARS];
	size_t n = 0;
	if (pmkv_ld_parse(arg(c, 3), len(c, 3), &d))
		return resp_add_error(c->out, "ERR value is not a valid float");
	if (isnan(d) || isinf(d))
		return resp_add_error(c->out, "ERR value is NaN or Infinity");
	int rc = pmkv_hincrbyfloat(c->srv->store, arg(c, 1), len(c, 1),
	                           arg(c, 2), len(c, 2), d, buf, sizeof(buf),
	                           &n);
	if (rc == PMKV_E_NOTFLOAT)
		resp_add_error(c->out, "ERR hash value is not a float");
	else
		reply_float(c, rc, buf, n);
}

/* ---- reads of fields ---- */

static void cmd_hget(struct cmd_ctx *c)
{
	size_t mark = c->out->n;
	int found;
	int rc = pmkv_hget(c->srv->store, arg(c, 1), len(c, 1), arg(c, 2),
	                   len(c, 2), emit_bulk, c->out, &found);
	if (rc)
		read_failed(c, mark, rc);
	else if (!found)
		resp_add_null(c->out);
}

/* A pmkv_pair_fn: the value as a bulk string, nil if absent. */
static void reply_value(void *arg, const void *f, size_t fn, const void *v,
                        size_t vn)
{
	(void)f, (void)fn;
	if (v)
		resp_add_bulk(arg, v, vn);
	else
		resp_add_null(arg);
}

static void cmd_hmget(struct cmd_ctx *c)
{
	size_t n = c->q->argc - 2, mark = c->out->n;
	struct pmkv_key *f = calloc(n, sizeof(*f));
	if (!f)
		return out_of_memory(c);
	args_of(c, 2, 1, f, n);
	resp_add_array(c->out, (long long)n);
	int rc = pmkv_hmget(c->srv->store, arg(c, 1), len(c, 1), f, n,
	                    reply_value, c->out);
	free(f);
	if (rc)
		read_failed(c, mark, rc);
}

static void cmd_hlen(struct cmd_ctx *c)
{
	uint64_t n = 0;
	int rc = pmkv_hlen(c->srv->store, arg(c, 1), len(c, 1), &n);
	reply_int(c, rc, (long long)n);
}

/* HSTRLEN (exists 0: the value's length) and HEXISTS (1). */
static void hstrlen_cmd(struct cmd_ctx *c, int exists)
{
	uint64_t n = 0;
	int found = 0;
	int rc = pmkv_hstrlen(c->srv->store, arg(c, 1), len(c, 1), arg(c, 2),
	                      len(c, 2), &found, &n);
	reply_int(c, rc, exists ? found : (long long)n);
}

static void cmd_hstrlen(struct cmd_ctx *c)
{
	hstrlen_cmd(c, 0);
}

static void cmd_hexists(struct cmd_ctx *c)
{
	hstrlen_cmd(c, 1);
}

/* ---- replies of many pairs ---- */

enum { PAIR_FIELD = 1, PAIR_VALUE = 2 }; /* what a reply shows a pair by */

/* Pairs replied as they come: an array of what each shows. single: one
 * field as a bulk string (nil if there is none), not an array. */
struct pair_reply {
	struct resp_out *out;
	unsigned show;
	int single;
};

static void pair_count(void *arg, uint64_t n)
{
	struct pair_reply *r = arg;
	if (r->single) {
		if (!n)
			resp_add_null(r->out);
		return;
	}
	unsigned per = (r->show & PAIR_FIELD) && (r->show & PAIR_VALUE) ? 2 : 1;
	resp_add_array(r->out, (long long)(n * per));
}

static void pair_add(void *arg, const void *f, size_t fn, const void *v,
                     size_t vn)
{
	struct pair_reply *r = arg;
	if (r->show & PAIR_FIELD)
		resp_add_bulk(r->out, f, fn);
	if (r->show & PAIR_VALUE)
		resp_add_bulk(r->out, v, vn);
}

/* HKEYS, HVALS and HGETALL. */
static void all_cmd(struct cmd_ctx *c, unsigned show)
{
	struct pair_reply r = {c->out, show, 0};
	struct pmkv_pairs o = {pair_count, pair_add, &r};
	size_t mark = c->out->n;
	int rc = pmkv_hgetall(c->srv->store, arg(c, 1), len(c, 1), &o);
	if (rc)
		read_failed(c, mark, rc);
}

static void cmd_hkeys(struct cmd_ctx *c)
{
	all_cmd(c, PAIR_FIELD);
}

static void cmd_hvals(struct cmd_ctx *c)
{
	all_cmd(c, PAIR_VALUE);
}

static void cmd_hgetall(struct cmd_ctx *c)
{
	all_cmd(c, PAIR_FIELD | PAIR_VALUE);
}

/* HRANDFIELD key [count [WITHVALUES]] (Redis 7.0's hrandfieldCommand):
 * the count is read before the options, and both before the key. */
static void cmd_hrandfield(struct cmd_ctx *c)
{
	struct pair_reply r = {c->out, PAIR_FIELD, c->q->argc == 2};
	struct pmkv_pairs o = {pair_count, pair_add, &r};
	long long n = 1;
	size_t mark = c->out->n;
	if (c->q->argc >= 3 && resp_arg_ll(c->q, 2, &n))
		return not_integer(c);
	if (n < -LLONG_MAX) /* getRangeLongFromObjectOrReply */
		return resp_add_error(c->out, "ERR value is out of range, value "
		                      "must between %lld and %lld", -LLONG_MAX,
		                      LLONG_MAX);
	if (c->q->argc > 4 ||
	    (c->q->argc == 4 && !resp_arg_is(c->q, 3, "withvalues")))
		return syntax_error(c);
	if (c->q->argc == 4) {
		if (n < -LLONG_MAX / 2 || n > LLONG_MAX / 2)
			return resp_add_error(c->out, "ERR value is out of range");
		r.show |= PAIR_VALUE;
	}
	int rc = pmkv_hrandfield(c->srv->store, arg(c, 1), len(c, 1), n, &o);
	if (rc)
		read_failed(c, mark, rc);
}

/* ---- HSCAN ---- */

/* HSCAN key cursor [MATCH pattern] [COUNT count] (cmd.c scan_args): the
 * pairs whose field matches (scan_pair); a COUNT too large asks for no
 * more (the store's bound, store_hash.c). */
static void cmd_hscan(struct cmd_ctx *c)
{
	uint64_t cur, next = 0;
	struct scan_opts o;
	if (scan_args(c, pmkv_hlen, &cur, &o))
		return;
	struct scan_pairs h = {{0}, o.pat, o.pn};
	int rc = pmkv_hscan(c->srv->store, arg(c, 1), len(c, 1), cur,
	                    (uint64_t)o.count, scan_pair, &h, &next);
	if (rc || h.k.oom)
		read_failed(c, c->out->n, rc ? rc : ENOMEM);
	else
		scan_page(c, next, &h.k);
	collect_free(&h.k);
}

/* Redis 7.0's COMMAND INFO for each; every one a single store operation
 * (kx_begin/kx_end), so each may run in a group commit. */
const struct command pmkv_cmds_hash[] = {
	{"hset", -4, cmd_hset, "write denyoom fast", 1, 1, 1, 1},
	{"hmset", -4, cmd_hmset, "write denyoom fast", 1, 1, 1, 1},
	{"hsetnx", 4, cmd_hsetnx, "write denyoom fast", 1, 1, 1, 1},
	{"hget", 3, cmd_hget, "readonly fast", 1, 1, 1, 1},
	{"hmget", -3, cmd_hmget, "readonly fast", 1, 1, 1, 1},
	{"hdel", -3, cmd_hdel, "write fast", 1, 1, 1, 1},
	{"hlen", 2, cmd_hlen, "readonly fast", 1, 1, 1, 1},
	{"hstrlen", 3, cmd_hstrlen, "readonly fast", 1, 1, 1, 1},
	{"hexists", 3, cmd_hexists, "readonly fast", 1, 1, 1, 1},
	{"hkeys", 2, cmd_hkeys, "readonly", 1, 1, 1, 1},
	{"hvals", 2, cmd_hvals, "readonly", 1, 1, 1, 1},
	{"hgetall", 2, cmd_hgetall, "readonly", 1, 1, 1, 1},
	{"hincrby", 4, cmd_hincrby, "write denyoom fast", 1, 1, 1, 1},
	{"hincrbyfloat", 4, cmd_hincrbyfloat, "write denyoom fast", 1, 1, 1,
	 1},
	{"hrandfield", -2, cmd_hrandfield, "readonly", 1, 1, 1, 1},
	{"hscan", -3, cmd_hscan, "readonly", 1, 1, 1, 1},
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};
