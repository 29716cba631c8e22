/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_list.c - pmkv's list commands (cmd.h): Redis 7.0's L and R
 * commands over store_list.h, with its replies and error texts
 * (t_list.c); the blocking ones (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH,
 * BLMPOP) are attempts that blocking.c runs, and runs again for a
 * waiter when a key it waits for is written. Arguments are read in Redis's order, so that a request
 * with two mistakes gets Redis's error for it: most commands read their
 * numbers before the key, LINDEX and LSET after it (late_notint).
 *
 * A store call emits elements into the reply while it runs (store_list.h);
 * if it then fails, what it emitted is taken back before the error is
 * replied (cmd.c C3), as cmd_set does with GET's old value.
 */
#include <limits.h>
#include <stdlib.h>

#include "blocking.h"
#include "cmd.h"
#include "store_list.h"

/* ---- arguments ---- */

/* argv[i] as LEFT or RIGHT (getListPositionFromObjectOrReply): 0 and
 * *end, or -1 after the syntax error. */
static int end_arg(struct cmd_ctx *c, size_t i, int *end)
{
	if (resp_arg_is(c->q, i, "left"))
		*end = PMKV_LEFT;
	else if (resp_arg_is(c->q, i, "right"))
		*end = PMKV_RIGHT;
	else
		return syntax_error(c), -1;
	return 0;
}

/* argv[i] is not an integer, in a command Redis reads it in after the
 * key's lookup (LINDEX, LSET): the key's own answer comes first (absent,
 * or WRONGTYPE), else the integer's error. */
static void late_notint(struct cmd_ctx *c, void (*absent)(struct cmd_ctx *))
{
	uint64_t n;
	int rc = pmkv_list_len(c->srv->store, arg(c, 1), len(c, 1), &n);
	if (rc)
		reply_status(c, rc);
	else if (!n)
		absent(c);
	else
		not_integer(c);
}

static void reply_nil(struct cmd_ctx *c)
{
	resp_add_null(c->out);
}

static void reply_nokey(struct cmd_ctx *c)
{
	reply_status(c, PMKV_E_NOKEY);
}

/* ---- replies of elements (struct pmkv_elems) ---- */

struct elems {
	struct resp_out *out;
	const struct pmkv_key *keys; /* LMPOP: the keys, one is named */
};

static void elem_bulk(void *arg, const void *p, size_t n)
{
	resp_add_bulk(((struct elems *)arg)->out, p, n);
}

/* LPOP with no count: a bulk alone */
static void count_none(void *arg, size_t key, uint64_t n)
{
	(void)arg, (void)key, (void)n;
}

static void count_array(void *arg, size_t key, uint64_t n)
{
	(void)key;
	resp_add_array(((struct elems *)arg)->out, (long long)n);
}

/* LMPOP: the key, then the array of its elements */
static void count_keyed(void *arg, size_t key, uint64_t n)
{
	struct elems *e = arg;
	resp_add_array(e->out, 2);
	resp_add_bulk(e->out, e->keys[key].p, e->keys[key].n);
	resp_add_array(e->out, (long long)n);
}

/* A store call's error, after taking back what it emitted from mark on. */
static void undo_reply(struct cmd_ctx *c, size_t mark, int rc)
{
	c->out->n = mark;
	reply_status(c, rc);
}

/* ---- push ---- */

/* LPUSH, RPUSH (xx 0), LPUSHX, RPUSHX (xx 1): key, then elements. */
static void push_cmd(struct cmd_ctx *c, int end, int xx)
{
	size_t n = c->q->argc - 2;
	uint64_t r = 0;
	struct pmkv_key *v = args_keys(c, 2, n);
	if (!v)
		return resp_add_error(c->out, "ERR out of memory");
	int rc = pmkv_list_push(c->srv->store, arg(c, 1), len(c, 1), end, xx,
	                        v, n, &r);
	free(v);
	reply_int(c, rc, (long long)r);
}

static void cmd_lpush(struct cmd_ctx *c)
{
	push_cmd(c, PMKV_LEFT, 0);
}

static void cmd_rpush(struct cmd_ctx *c)
{
	push_cmd(c, PMKV_RIGHT, 0);
}

static void cmd_lpushx(struct cmd_ctx *c)
{
	push_cmd(c, PMKV_LEFT, 1);
}

static void cmd_rpushx(struct cmd_ctx *c)
{
	push_cmd(c, PMKV_RIGHT, 1);
}

/* ---- pop ---- */

/* BLPOP, BRPOP: the key, then the element */
static void count_pair(void *arg, size_t key, uint64_t n)
{
	struct elems *e = arg;
	(void)n;
	resp_add_array(e->out, 2);
	resp_add_bulk(e->out, e->keys[key].p, e->keys[key].n);
}

/* Pop count elements at end from the first existing list of keys[0..n)
 * (store_list.h) into the reply, by the counter cnt: the store's
 * status (what it emitted is the caller's to take back). */
static int pop_run(struct cmd_ctx *c, const struct pmkv_key *keys,
                   size_t n, int end, uint64_t count,
                   void (*cnt)(void *, size_t, uint64_t), long *found)
{
	struct elems e = {c->out, keys};
	struct pmkv_elems out = {cnt, elem_bulk, &e};
	*found = -1;
	return pmkv_list_pop(c->srv->store, keys, n, end, count, &out, found);
}

/* pop_run, or nil (an array if nil_array) if there is no list. */
static void pop_reply(struct cmd_ctx *c, const struct pmkv_key *keys,
                      size_t n, int end, uint64_t count,
                      void (*cnt)(void *, size_t, uint64_t), int nil_array)
{
	size_t mark = c->out->n;
	long found;
	int rc = pop_run(c, keys, n, end, count, cnt, &found);
	if (rc)
		undo_reply(c, mark, rc);
	else if (found < 0)
		nil_array ? resp_add_array(c->out, -1) : resp_add_null(c->out);
}

/* LPOP and RPOP: key [count]. With a count, an array (count 0: an empty
 * one, or nil for an absent key: Redis 7.0's popGenericCommand). */
static void pop_cmd(struct cmd_ctx *c, int end)
{
	struct pmkv_key k = {arg(c, 1), len(c, 1)};
	long long count = 1;
	int has = c->q->argc == 3;
	if (c->q->argc > 3)
		return wrong_args(c);
	if (has && count_arg(c, 2, 0, "ERR value is out of range, must be "
	                     "positive", &count))
		return;
	pop_reply(c, &k, 1, end, (uint64_t)count,
	          has ? count_array : count_none, has);
}

static void cmd_lpop(struct cmd_ctx *c)
{
	pop_cmd(c, PMKV_LEFT);
}

static void cmd_rpop(struct cmd_ctx *c)
{
	pop_cmd(c, PMKV_RIGHT);
}

/* LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count] (cmd.c
 * mpop_args: Redis 7.0's lmpopGenericCommand). */
static void cmd_lmpop(struct cmd_ctx *c)
{
	static const char *const ends[2] = {"left", "right"};
	int right;
	uint64_t count;
	size_t nk = mpop_args(c, ends, &right, &count);
	if (!nk)
		return;
	struct pmkv_key *k = args_keys(c, 2, nk);
	if (!k)
		return resp_add_error(c->out, "ERR out of memory");
	pop_reply(c, k, nk, right ? PMKV_RIGHT : PMKV_LEFT, count, count_keyed,
	          1);
	free(k);
}

/* ---- move ---- */

static void move_reply(struct cmd_ctx *c, int from, int to)
{
	size_t mark = c->out->n;
	int found;
	int rc = pmkv_list_move(c->srv->store, arg(c, 1), len(c, 1), arg(c, 2),
	                        len(c, 2), from, to, emit_bulk, c->out, &found);
	if (rc)
		undo_reply(c, mark, rc);
	else if (!found)
		resp_add_null(c->out);
}

static void cmd_lmove(struct cmd_ctx *c)
{
	int from, to;
	if (!end_arg(c, 3, &from) && !end_arg(c, 4, &to))
		move_reply(c, from, to);
}

static void cmd_rpoplpush(struct cmd_ctx *c)
{
	move_reply(c, PMKV_RIGHT, PMKV_LEFT);
}

/* ---- blocking (blocking.h: each command's attempt, and its call) ---- */

static int bpop_try(struct cmd_ctx *c, const struct pmkv_key *k, size_t n,
                    int serving, int end)
{
	size_t mark = c->out->n;
	long found;
	int rc = pop_run(c, k, n, end, 1, count_pair, &found);
	return block_result(c, mark, rc, found >= 0, serving);
}

static int blpop_try(struct cmd_ctx *c, const struct pmkv_key *k, size_t n,
                     int serving)
{
	return bpop_try(c, k, n, serving, PMKV_LEFT);
}

static int brpop_try(struct cmd_ctx *c, const struct pmkv_key *k, size_t n,
                     int serving)
{
	return bpop_try(c, k, n, serving, PMKV_RIGHT);
}

/* BLPOP, BRPOP key [key ...] timeout: [key, element]. */
static void cmd_blpop(struct cmd_ctx *c)
{
	block_keys(c, blpop_try);
}

static void cmd_brpop(struct cmd_ctx *c)
{
	block_keys(c, brpop_try);
}

static const char *const list_ends[2] = {"left", "right"};

static int blmpop_try(struct cmd_ctx *c, const struct pmkv_key *k, size_t n,
                      int serving)
{
	int right;
	uint64_t count;
	long found;
	if (!block_mpop_args(c, list_ends, &right, &count))
		return 1;
	size_t mark = c->out->n;
	int rc = pop_run(c, k, n, right ? PMKV_RIGHT : PMKV_LEFT, count,
	                 count_keyed, &found);
	return block_result(c, mark, rc, found >= 0, serving);
}

/* BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]. */
static void cmd_blmpop(struct cmd_ctx *c)
{
	block_mpop(c, list_ends, blmpop_try);
}

/* A waiter is served by its source only while that is a list with
 * something in it; then the destination's WRONGTYPE is its reply, as
 * Redis's serveClientBlockedOnList answers it. */
static int bmove_try(struct cmd_ctx *c, const struct pmkv_key *k,
                     int serving, int from, int to)
{
	uint64_t n = 1;
	int found = 0;
	if (serving && (pmkv_list_len(c->srv->store, k->p, k->n, &n) || !n))
		return 0;
	size_t mark = c->out->n;
	int rc = pmkv_list_move(c->srv->store, k->p, k->n, arg(c, 2), len(c, 2),
	                        from, to, emit_bulk, c->out, &found);
	return block_result(c, mark, rc, found, 0);
}

static int blmove_try(struct cmd_ctx *c, const struct pmkv_key *k, size_t n,
                      int serving)
{
	int from = PMKV_LEFT, to = PMKV_LEFT;
	(void)n;
	end_arg(c, 3, &from); /* read before (cmd_blmove) */
	end_arg(c, 4, &to);
	return bmove_try(c, k, serving, from, to);
}

static int brpoplpush_try(struct cmd_ctx *c, const struct pmkv_key *k,
                          size_t n, int serving)
{
	(void)n;
	return bmove_try(c, k, serving, PMKV_RIGHT, PMKV_LEFT);
}

/* BLMOVE and BRPOPLPUSH: the timeout at argv[t]; in MULTI, nil. */
static void bmove_cmd(struct cmd_ctx *c, size_t t, block_try_fn try)
{
	struct block_call b = {1, 1, 2, 1, 0, try};
	if (!block_timeout(c, t, &b.deadline))
		block_run(c, &b);
}

static void cmd_blmove(struct cmd_ctx *c)
{
	int from, to;
	if (!end_arg(c, 3, &from) && !end_arg(c, 4, &to))
		bmove_cmd(c, 5, blmove_try);
}

static void cmd_brpoplpush(struct cmd_ctx *c)
{
	bmove_cmd(c, 3, brpoplpush_try);
}

/* ---- reads ---- */

static void cmd_llen(struct cmd_ctx *c)
{
	uint64_t n = 0;
	int rc = pmkv_list_len(c->srv->store, arg(c, 1), len(c, 1), &n);
	reply_int(c, rc, (long long)n);
}

static void cmd_lindex(struct cmd_ctx *c)
{
	long long i;
	int found;
	if (resp_arg_ll(c->q, 2, &i))
		return late_notint(c, reply_nil);
	size_t mark = c->out->n;
	int rc = pmkv_list_index(c->srv->store, arg(c, 1), len(c, 1), i,
	                         emit_bulk, c->out, &found);
	if (rc)
		undo_reply(c, mark, rc);
	else if (!found)
		resp_add_null(c->out);
}

static void cmd_lrange(struct cmd_ctx *c)
{
	long long a, b;
	struct elems e = {c->out, NULL};
	struct pmkv_elems out = {count_array, elem_bulk, &e};
	if (resp_arg_ll(c->q, 2, &a) || resp_arg_ll(c->q, 3, &b))
		return not_integer(c);
	size_t mark = c->out->n;
	int rc = pmkv_list_range(c->srv->store, arg(c, 1), len(c, 1), a, b,
	                         &out);
	if (rc)
		undo_reply(c, mark, rc);
}

/* LPOS's matches, gathered: the reply's length comes first. */
struct positions {
	uint64_t *v;
	size_t n, cap;
	int oom;
};

static void pos_add(void *arg, uint64_t i)
{
	struct positions *p = arg;
	if (p->oom)
		return;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		uint64_t *v = realloc(p->v, cap * sizeof(*v));
		if (!v) {
			p->oom = 1;
			return;
		}
		p->v = v, p->cap = cap;
	}
	p->v[p->n++] = i;
}

/* LPOS's options (Redis 7.0's lposCommand): each may repeat (the last
 * counts); *count -1 when COUNT is not given. 0, or -1 after the
 * error. */
static int lpos_options(struct cmd_ctx *c, long long *rank, long long *count,
                        long long *maxlen)
{
	for (size_t j = 3; j < c->q->argc; j++) {
		int more = j + 1 < c->q->argc;
		if (resp_arg_is(c->q, j, "rank") && more) {
			if (resp_arg_ll(c->q, ++j, rank))
				return not_integer(c), -1;
			if (*rank == 0) {
				resp_add_error(c->out, "ERR RANK can't be zero: use 1 "
				               "to start from the first match, 2 from "
				               "the second ... or use negative to "
				               "start from the end of the list");
				return -1;
			}
		} else if (resp_arg_is(c->q, j, "count") && more) {
			if (count_arg(c, ++j, 0, "ERR COUNT can't be negative",
			              count))
				return -1;
		} else if (resp_arg_is(c->q, j, "maxlen") && more) {
			if (count_arg(c, ++j, 0, "ERR MAXLEN can't be negative",
			              maxlen))
				return -1;
		} else {
			return syntax_error(c), -1;
		}
	}
	return 0;
}

/* LPOS key element [RANK rank] [COUNT count] [MAXLEN len]. RANK
 * -9223372036854775808 is what Redis 7.0 makes of it: its negation
 * overflows to itself, so it reads as -1 and every later match passes
 * COUNT's test: every match from the tail, whatever COUNT says. */
static void cmd_lpos(struct cmd_ctx *c)
{
	long long rank = 1, count = -1, maxlen = 0;
	struct positions got = {NULL, 0, 0, 0};
	if (lpos_options(c, &rank, &count, &maxlen))
		return;
	struct pmkv_lpos q = {arg(c, 2), len(c, 2), rank,
	                      count < 0 ? 1 : (uint64_t)count,
	                      (uint64_t)maxlen, pos_add, &got};
	if (rank == LLONG_MIN)
		q.rank = -1, q.count = count < 0 ? 1 : 0;
	int rc = pmkv_list_pos(c->srv->store, arg(c, 1), len(c, 1), &q);
	if (rc) {
		reply_status(c, rc);
	} else if (got.oom) {
		resp_add_error(c->out, "ERR out of memory");
	} else if (count < 0) {
		if (got.n)
			resp_add_int(c->out, (long long)got.v[0]);
		else
			resp_add_null(c->out);
	} else {
		resp_add_array(c->out, (long long)got.n);
		for (size_t i = 0; i < got.n; i++)
			resp_add_int(c->out, (long long)got.v[i]);
	}
	free(got.v);
}

/* ---- writes in place ---- */

static void cmd_lset(struct cmd_ctx *c)
{
	long long i;
	int done;
	if (resp_arg_ll(c->q, 2, &i))
		return late_notint(c, reply_nokey);
	int rc = pmkv_list_set(c->srv->store, arg(c, 1), len(c, 1), i,
	                       arg(c, 3), len(c, 3), &done);
	if (!rc && !done)
		resp_add_error(c->out, "ERR index out of range");
	else
		reply_ok(c, rc);
}

static void cmd_linsert(struct cmd_ctx *c)
{
	int64_t n = 0;
	int after = resp_arg_is(c->q, 2, "after");
	if (!after && !resp_arg_is(c->q, 2, "before"))
		return syntax_error(c);
	int rc = pmkv_list_insert(c->srv->store, arg(c, 1), len(c, 1), after,
	                          arg(c, 3), len(c, 3), arg(c, 4), len(c, 4),
	                          &n);
	reply_int(c, rc, n);
}

static void cmd_lrem(struct cmd_ctx *c)
{
	long long count;
	uint64_t n = 0;
	if (resp_arg_ll(c->q, 2, &count))
		return not_integer(c);
	int rc = pmkv_list_rem(c->srv->store, arg(c, 1), len(c, 1), count,
	                       arg(c, 3), len(c, 3), &n);
	reply_int(c, rc, (long long)n);
}

static void cmd_ltrim(struct cmd_ctx *c)
{
	long long a, b;
	if (resp_arg_ll(c->q, 2, &a) || resp_arg_ll(c->q, 3, &b))
		return not_integer(c);
	reply_ok(c, pmkv_list_trim(c->srv->store, arg(c, 1), len(c, 1), a, b));
}

/* ---- the table: Redis 7.0's arity, flags and key positions ---- */

const struct command pmkv_cmds_list[] = {
	{"lpush", -3, cmd_lpush, "write denyoom fast", 1, 1, 1, 1},
	{"rpush", -3, cmd_rpush, "write denyoom fast", 1, 1, 1, 1},
	{"lpushx", -3, cmd_lpushx, "write denyoom fast", 1, 1, 1, 1},
	{"rpushx", -3, cmd_rpushx, "write denyoom fast", 1, 1, 1, 1},
	{"lpop", -2, cmd_lpop, "write fast", 1, 1, 1, 1},
	{"rpop", -2, cmd_rpop, "write fast", 1, 1, 1, 1},
	{"lmpop", -4, cmd_lmpop, "write movablekeys", 0, 0, 0, 1},
	{"lmove", 5, cmd_lmove, "write denyoom", 1, 2, 1, 1},
	{"rpoplpush", 3, cmd_rpoplpush, "write denyoom", 1, 2, 1, 1},
	{"blpop", -3, cmd_blpop, "write noscript blocking", 1, -2, 1, 0},
	{"brpop", -3, cmd_brpop, "write noscript blocking", 1, -2, 1, 0},
	{"blmove", 6, cmd_blmove, "write denyoom noscript blocking", 1, 2, 1,
	 0},
	{"brpoplpush", 4, cmd_brpoplpush, "write denyoom noscript blocking", 1,
	 2, 1, 0},
	{"blmpop", -5, cmd_blmpop, "write blocking movablekeys", 0, 0, 0, 0},
	{"llen", 2, cmd_llen, "readonly fast", 1, 1, 1, 1},
	{"lindex", 3, cmd_lindex, "readonly", 1, 1, 1, 1},
	{"lrange", 4, cmd_lrange, "readonly", 1, 1, 1, 1},
	{"lpos", -3, cmd_lpos, "readonly", 1, 1, 1, 1},
	{"lset", 4, cmd_lset, "write denyoom", 1, 1, 1, 1},
	{"linsert", 5, cmd_linsert, "write denyoom", 1, 1, 1, 1},
	{"lrem", 4, cmd_lrem, "write", 1, 1, 1, 1},
	{"ltrim", 4, cmd_ltrim, "write", 1, 1, 1, 1},
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};
