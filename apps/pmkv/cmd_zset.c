/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_zset.c - pmkv's sorted set commands (cmd.h): Redis 7.0's Z
 * commands, each one store operation (store_zset.h; the blocking pops
 * BZPOPMIN, BZPOPMAX and BZMPOP are attempts that blocking.c runs), with
 * Redis's replies and error texts, its errors in its order (t_zset.c's:
 * a command's own arguments first, then the key's type, then what Redis
 * reads after the lookup).
 *
 * Scores are replied as Redis 7.0's addReplyDouble writes them: "%.17g",
 * which gives "inf" and "-inf" too. Elements reach the reply while the
 * store holds them (a struct pmkv_zsink over c->out: a RESP array needs its
 * count first, and the store gives it first); a failed operation's part
 * of the reply is taken back before its error (C3).
 *
 * Where Redis's reply depends on its encoding of the set, pmkv answers as
 * the listpack encoding (every set of at most 128 members of at most 64
 * bytes) does: a score of -0 is stored as 0 (store_zset.c Z2), and ZSCAN
 * gives an integral score of at most 2^62 as an integer (a skiplist's is
 * "%.17g": "1e+17"). Other differences: ZSCAN's cursor is the member
 * map's bucket (Redis gives a small set whole, cursor 0, from any
 * cursor); BYLEX over members of mixed scores (Redis documents no answer;
 * store_zset.c Z6); ZRANDMEMBER with a count below -ZRAND_MOST is refused
 * as out of memory.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocking.h"
#include "cmd.h"
#include "store_zset.h"

/* ZRANDMEMBER with a negative count: a reply of more elements than this
 * is refused as out of memory (Redis would try to build it). */
#define ZRAND_MOST (1LL << 27)

static struct pmkv_store *store(struct cmd_ctx *c)
{
	return c->srv->store;
}

/* ---- arguments ---- */

/* Redis's string2d (getDoubleFromObject): the whole argument one float,
 * no leading blank, not NaN, not out of range (an underflow to 0 too). */
static int arg_float(struct cmd_ctx *c, size_t i, double *d)
{
	const char *s = arg(c, i);
	size_t n = len(c, i);
	char *end;
	if (n == 0 || isspace((unsigned char)s[0]))
		return -1;
	errno = 0;
	*d = strtod(s, &end);
	return (size_t)(end - s) != n || isnan(*d) ||
	       (errno == ERANGE && (*d == HUGE_VAL || *d == -HUGE_VAL ||
	                            fpclassify(*d) == FP_ZERO)) ? -1 : 0;
}

/* A score bound as zslParseRange reads it: "(" makes it exclusive, then
 * strtod up to the first NUL, which must end the number; NaN refused
 * ("" is 0, an overflow infinite, as Redis has them). */
static int score_bound(struct cmd_ctx *c, size_t i, double *v, int *ex)
{
	const char *s = arg(c, i);
	char *end;
	*ex = s[0] == '(';
	*v = strtod(s + *ex, &end);
	return *end || isnan(*v) ? -1 : 0;
}

/* A lex bound as zslParseLexRangeItem reads it. */
static int lex_bound(struct cmd_ctx *c, size_t i, struct pmkv_zlex *b)
{
	const char *s = arg(c, i);
	size_t n = len(c, i);
	b->p = s + 1;
	b->n = n ? n - 1 : 0;
	switch (s[0]) {
	case '+':
	case '-':
		b->kind = s[0] == '+' ? PMKV_ZLEX_MAX : PMKV_ZLEX_MIN;
		return s[1] ? -1 : 0; /* read as a C string, as Redis's */
	case '(':
		b->kind = PMKV_ZLEX_EXCL;
		return 0;
	case '[':
		b->kind = PMKV_ZLEX_INCL;
		return 0;
	default:
		return -1;
	}
}

/* The ends of r from argv[lo] and argv[hi], as r->by reads them: 0, or
 * -1 after Redis's error. */
static int range_ends(struct cmd_ctx *c, struct pmkv_zrange *r, size_t lo,
                      size_t hi)
{
	if (r->by == PMKV_ZBY_RANK) {
		if (!resp_arg_ll(c->q, lo, &r->start) &&
		    !resp_arg_ll(c->q, hi, &r->end))
			return 0;
		not_integer(c);
	} else if (r->by == PMKV_ZBY_SCORE) {
		if (!score_bound(c, lo, &r->min, &r->minex) &&
		    !score_bound(c, hi, &r->max, &r->maxex))
			return 0;
		resp_add_error(c->out, "ERR min or max is not a float");
	} else {
		if (!lex_bound(c, lo, &r->lmin) && !lex_bound(c, hi, &r->lmax))
			return 0;
		resp_add_error(c->out, "ERR min or max not valid string range "
		               "item");
	}
	return -1;
}

/* The members argv[from..from + n) (cmd.c args_keys): an array the
 * caller frees, or NULL after replying. */
static struct pmkv_key *args_from(struct cmd_ctx *c, size_t from, size_t n)
{
	struct pmkv_key *k = args_keys(c, from, n);
	if (!k)
		resp_add_error(c->out, "ERR out of memory");
	return k;
}

/* ---- replies ---- */

static void add_score(struct resp_out *o, double d)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%.17g", d);
	resp_add_bulk(o, buf, (size_t)n);
}

/* How a reply of elements looks: flat (member, and its score with
 * scores), each element a [member, score] pair after the key's name
 * (pairs: ZMPOP; key0 the first key's argv index), or one bare member
 * (bare: ZRANDMEMBER without a count); keyed (BZPOPMIN): the key's name,
 * then member and score. A blocking pop names its keys in keys. */
struct zout {
	struct cmd_ctx *c;
	int scores, pairs, bare;
	size_t key0;
	int keyed;
	const struct pmkv_key *keys;
};

static void zout_key(struct zout *z, size_t key)
{
	if (z->keys)
		resp_add_bulk(z->c->out, z->keys[key].p, z->keys[key].n);
	else
		resp_add_bulk(z->c->out, arg(z->c, z->key0 + key),
		              len(z->c, z->key0 + key));
}

static void zout_begin(void *p, size_t key, uint64_t n)
{
	struct zout *z = p;
	struct resp_out *o = z->c->out;
	if (z->bare)
		return;
	if (z->keyed) {
		resp_add_array(o, 1 + 2 * (long long)n);
		zout_key(z, key);
	} else if (z->pairs) {
		resp_add_array(o, 2);
		zout_key(z, key);
		resp_add_array(o, (long long)n);
	} else {
		resp_add_array(o, (long long)(z->scores ? 2 * n : n));
	}
}

static int zout_elem(void *p, const void *m, size_t n, double score)
{
	struct zout *z = p;
	struct resp_out *o = z->c->out;
	if (z->pairs)
		resp_add_array(o, 2);
	resp_add_bulk(o, m, n);
	if (z->scores || z->pairs)
		add_score(o, score);
	return o->oom;
}

/* After a store call that replied into c->out from mark on: its error
 * instead, if it failed (C3). 0, or -1 after the error. */
static int zout_end(struct cmd_ctx *c, size_t mark, int rc)
{
	if (!rc)
		return 0;
	c->out->n = mark;
	reply_status(c, rc);
	return -1;
}

/* ---- ZADD, ZINCRBY ---- */

/* ZADD's options, from argv[2] until the first that is none: flags and
 * CH; the first score's index. */
static size_t zadd_options(struct cmd_ctx *c, unsigned *flags, int *ch)
{
	static const char *const opt[] = {"nx", "xx", "gt", "lt", "incr"};
	static const unsigned bit[] = {PMKV_ZADD_NX, PMKV_ZADD_XX,
	                               PMKV_ZADD_GT, PMKV_ZADD_LT,
	                               PMKV_ZADD_INCR};
	size_t i = 2;
	for (; i < c->q->argc; i++) {
		unsigned k = 0;
		while (k < 5 && !resp_arg_is(c->q, i, opt[k]))
			k++;
		if (k < 5)
			*flags |= bit[k];
		else if (resp_arg_is(c->q, i, "ch"))
			*ch = 1;
		else
			break;
	}
	return i;
}

/* zaddGenericCommand's checks, in its order: 0, or -1 after the error. */
static int zadd_check(struct cmd_ctx *c, unsigned f, size_t pairs2)
{
	const char *e = NULL;
	if (pairs2 % 2 || !pairs2) {
		syntax_error(c);
		return -1;
	}
	if ((f & PMKV_ZADD_NX) && (f & PMKV_ZADD_XX))
		e = "XX and NX options at the same time are not compatible";
	else if ((f & PMKV_ZADD_NX) && (f & (PMKV_ZADD_GT | PMKV_ZADD_LT)))
		e = "GT, LT, and/or NX options at the same time are not "
		    "compatible";
	else if ((f & PMKV_ZADD_GT) && (f & PMKV_ZADD_LT))
		e = "GT, LT, and/or NX options at the same time are not "
		    "compatible";
	else if ((f & PMKV_ZADD_INCR) && pairs2 > 2)
		e = "INCR option supports a single increment-element pair";
	if (e)
		resp_add_error(c->out, "ERR %s", e);
	return e ? -1 : 0;
}

static void zadd_reply(struct cmd_ctx *c, unsigned f, int ch,
                       const struct pmkv_zadd_res *r)
{
	if (r->nan)
		resp_add_error(c->out, "ERR resulting score is not a number "
		               "(NaN)");
	else if (!(f & PMKV_ZADD_INCR))
		resp_add_int(c->out, (long long)(ch ? r->added + r->updated
		                                    : r->added));
	else if (r->processed)
		add_score(c->out, r->score);
	else
		resp_add_null(c->out);
}

/* ZADD, and ZINCRBY (flags PMKV_ZADD_INCR), which Redis reads with
 * ZADD's parser: its options too. */
static void zadd_cmd(struct cmd_ctx *c, unsigned flags)
{
	int ch = 0;
	size_t at = zadd_options(c, &flags, &ch), n = (c->q->argc - at) / 2;
	struct pmkv_zadd_res r;
	if (zadd_check(c, flags, c->q->argc - at))
		return;
	struct pmkv_zpair *p = calloc(n, sizeof(*p));
	if (!p)
		return resp_add_error(c->out, "ERR out of memory");
	for (size_t i = 0; i < n; i++) {
		p[i] = (struct pmkv_zpair){0, arg(c, at + 2 * i + 1),
		                           len(c, at + 2 * i + 1)};
		if (arg_float(c, at + 2 * i, &p[i].score)) {
			free(p);
			return reply_status(c, PMKV_E_NOTFLOAT);
		}
	}
	int rc = pmkv_zadd(store(c), arg(c, 1), len(c, 1), flags, p, n, &r);
	free(p);
	if (rc)
		reply_status(c, rc);
	else
		zadd_reply(c, flags, ch, &r);
}

static void cmd_zadd(struct cmd_ctx *c)
{
	zadd_cmd(c, 0);
}

static void cmd_zincrby(struct cmd_ctx *c)
{
	zadd_cmd(c, PMKV_ZADD_INCR);
}

/* ---- single members ---- */

static void cmd_zscore(struct cmd_ctx *c)
{
	struct pmkv_key m = {arg(c, 2), len(c, 2)};
	double score = 0;
	unsigned char found = 0;
	int rc = pmkv_zscore(store(c), arg(c, 1), len(c, 1), &m, 1, &score,
	                     &found);
	if (rc)
		reply_status(c, rc);
	else if (found)
		add_score(c->out, score);
	else
		resp_add_null(c->out);
}

static void cmd_zmscore(struct cmd_ctx *c)
{
	size_t n = c->q->argc - 2;
	struct pmkv_key *m = args_from(c, 2, n);
	double *score = calloc(n, sizeof(*score));
	unsigned char *found = calloc(n, 1);
	int rc = m && score && found ? pmkv_zscore(store(c), arg(c, 1),
	                                           len(c, 1), m, n, score,
	                                           found)
	                             : ENOMEM;
	if (rc && m)
		reply_status(c, rc);
	if (!rc)
		resp_add_array(c->out, (long long)n);
	for (size_t i = 0; i < n && !rc; i++) {
		if (found[i])
			add_score(c->out, score[i]);
		else
			resp_add_null(c->out);
	}
	free(m);
	free(score);
	free(found);
}

static void cmd_zcard(struct cmd_ctx *c)
{
	uint64_t n = 0;
	int rc = pmkv_zcard(store(c), arg(c, 1), len(c, 1), &n);
	reply_int(c, rc, (long long)n);
}

static void zrank_cmd(struct cmd_ctx *c, int rev)
{
	int64_t rank = -1;
	int rc = pmkv_zrank(store(c), arg(c, 1), len(c, 1), arg(c, 2),
	                    len(c, 2), rev, &rank);
	if (rc)
		reply_status(c, rc);
	else if (rank < 0)
		resp_add_null(c->out);
	else
		resp_add_int(c->out, (long long)rank);
}

static void cmd_zrank(struct cmd_ctx *c)
{
	zrank_cmd(c, 0);
}

static void cmd_zrevrank(struct cmd_ctx *c)
{
	zrank_cmd(c, 1);
}

static void cmd_zrem(struct cmd_ctx *c)
{
	size_t n = c->q->argc - 2;
	uint64_t removed = 0;
	struct pmkv_key *m = args_from(c, 2, n);
	if (!m)
		return;
	int rc = pmkv_zrem(store(c), arg(c, 1), len(c, 1), m, n, &removed);
	free(m);
	reply_int(c, rc, (long long)removed);
}

/* ---- ZRANGE and its family ---- */

/* How one of the family reads its arguments: its source key's index,
 * what the command fixes (by, rev; -1: ZRANGE's options choose), and
 * whether it stores the range (ZRANGESTORE). */
struct zrange_how {
	size_t key;
	int by, rev, store;
};

/* zrangeGenericCommand's options, in its order: 0, or -1 after the
 * error. */
static int zrange_options(struct cmd_ctx *c, const struct zrange_how *h,
                          struct pmkv_zrange *r, int *ws)
{
	int by = h->by, rev = h->rev;
	for (size_t j = h->key + 3; j < c->q->argc; j++) {
		size_t left = c->q->argc - j - 1;
		if (!h->store && resp_arg_is(c->q, j, "withscores")) {
			*ws = 1;
		} else if (resp_arg_is(c->q, j, "limit") && left >= 2) {
			if (resp_arg_ll(c->q, j + 1, &r->offset) ||
			    resp_arg_ll(c->q, j + 2, &r->limit)) {
				not_integer(c);
				return -1;
			}
			j += 2;
		} else if (rev < 0 && resp_arg_is(c->q, j, "rev")) {
			rev = 1;
		} else if (by < 0 && resp_arg_is(c->q, j, "bylex")) {
			by = PMKV_ZBY_LEX;
		} else if (by < 0 && resp_arg_is(c->q, j, "byscore")) {
			by = PMKV_ZBY_SCORE;
		} else {
			syntax_error(c);
			return -1;
		}
	}
	r->by = by < 0 ? PMKV_ZBY_RANK : by;
	r->rev = rev > 0;
	return 0;
}

/* The range and options of a command of the family: 0, or -1 after
 * Redis's error. */
static int zrange_args(struct cmd_ctx *c, const struct zrange_how *h,
                       struct pmkv_zrange *r, int *ws)
{
	size_t lo = h->key + 1, hi = h->key + 2;
	memset(r, 0, sizeof(*r));
	r->limit = -1;
	*ws = 0;
	if (zrange_options(c, h, r, ws))
		return -1;
	if (r->limit != -1 && r->by == PMKV_ZBY_RANK) {
		resp_add_error(c->out, "ERR syntax error, LIMIT is only "
		               "supported in combination with either BYSCORE "
		               "or BYLEX");
		return -1;
	}
	if (*ws && r->by == PMKV_ZBY_LEX) {
		resp_add_error(c->out, "ERR syntax error, WITHSCORES not "
		               "supported in combination with BYLEX");
		return -1;
	}
	if (r->rev && r->by != PMKV_ZBY_RANK) /* given as max, min */
		lo = h->key + 2, hi = h->key + 1;
	return range_ends(c, r, lo, hi);
}

static void zrange_run(struct cmd_ctx *c, const struct zrange_how *h)
{
	struct pmkv_zrange r;
	int ws;
	if (zrange_args(c, h, &r, &ws))
		return;
	if (h->store) {
		uint64_t n = 0;
		int rc = pmkv_zrangestore(store(c), arg(c, 1), len(c, 1),
		                          arg(c, 2), len(c, 2), &r, &n);
		return reply_int(c, rc, (long long)n);
	}
	struct zout z = {c, ws, 0, 0, 0, 0, NULL};
	struct pmkv_zsink out = {zout_begin, zout_elem, &z};
	size_t mark = c->out->n;
	zout_end(c, mark, pmkv_zrange(store(c), arg(c, h->key),
	                              len(c, h->key), &r, &out));
}

static void cmd_zrange(struct cmd_ctx *c)
{
	static const struct zrange_how h = {1, -1, -1, 0};
	zrange_run(c, &h);
}

static void cmd_zrangestore(struct cmd_ctx *c)
{
	static const struct zrange_how h = {2, -1, -1, 1};
	zrange_run(c, &h);
}

static void cmd_zrevrange(struct cmd_ctx *c)
{
	static const struct zrange_how h = {1, PMKV_ZBY_RANK, 1, 0};
	zrange_run(c, &h);
}

static void cmd_zrangebyscore(struct cmd_ctx *c)
{
	static const struct zrange_how h = {1, PMKV_ZBY_SCORE, 0, 0};
	zrange_run(c, &h);
}

static void cmd_zrevrangebyscore(struct cmd_ctx *c)
{
	static const struct zrange_how h = {1, PMKV_ZBY_SCORE, 1, 0};
	zrange_run(c, &h);
}

static void cmd_zrangebylex(struct cmd_ctx *c)
{
	static const struct zrange_how h = {1, PMKV_ZBY_LEX, 0, 0};
	zrange_run(c, &h);
}

static void cmd_zrevrangebylex(struct cmd_ctx *c)
{
	static const struct zrange_how h = {1, PMKV_ZBY_LEX, 1, 0};
	zrange_run(c, &h);
}

/* ZREMRANGEBYRANK/SCORE/LEX (remove 1), ZCOUNT, ZLEXCOUNT: key min max. */
static void range_count(struct cmd_ctx *c, int by, int remove)
{
	struct pmkv_zrange r;
	uint64_t n = 0;
	memset(&r, 0, sizeof(r));
	r.by = by, r.limit = -1;
	if (range_ends(c, &r, 2, 3))
		return;
	int rc = remove ? pmkv_zremrange(store(c), arg(c, 1), len(c, 1), &r, &n)
	                : pmkv_zcount(store(c), arg(c, 1), len(c, 1), &r, &n);
	reply_int(c, rc, (long long)n);
}

static void cmd_zremrangebyrank(struct cmd_ctx *c)
{
	range_count(c, PMKV_ZBY_RANK, 1);
}

static void cmd_zremrangebyscore(struct cmd_ctx *c)
{
	range_count(c, PMKV_ZBY_SCORE, 1);
}

static void cmd_zremrangebylex(struct cmd_ctx *c)
{
	range_count(c, PMKV_ZBY_LEX, 1);
}

static void cmd_zcount(struct cmd_ctx *c)
{
	range_count(c, PMKV_ZBY_SCORE, 0);
}

static void cmd_zlexcount(struct cmd_ctx *c)
{
	range_count(c, PMKV_ZBY_LEX, 0);
}

/* ---- pops ---- */

/* Pop count of the n keys k (pmkv_zpop) into the reply z describes:
 * the store's status, what it replied the caller's to take back. */
static int zpop_keys(struct cmd_ctx *c, const struct pmkv_key *k, size_t n,
                     int max, uint64_t count, struct zout *z, size_t *which)
{
	struct pmkv_zsink out = {zout_begin, zout_elem, z};
	*which = n;
	return pmkv_zpop(store(c), k, n, max, count, &out, which);
}

/* zpop_keys of the n keys from argv[at]; *which as pmkv_zpop's. 0, or
 * -1 after the error. */
static int zpop_run(struct cmd_ctx *c, size_t at, size_t n, int max,
                    uint64_t count, struct zout *z, size_t *which)
{
	struct pmkv_key *k = args_from(c, at, n);
	size_t mark = c->out->n;
	if (!k)
		return -1;
	int rc = zpop_keys(c, k, n, max, count, z, which);
	free(k);
	return zout_end(c, mark, rc);
}

/* ZPOPMIN, ZPOPMAX key [count]: a flat array (empty if the key is
 * absent). */
static void zpop_cmd(struct cmd_ctx *c, int max)
{
	long long count = 1;
	struct zout z = {c, 1, 0, 0, 1, 0, NULL};
	size_t which;
	if (c->q->argc > 3)
		return syntax_error(c);
	if (c->q->argc == 3 && count_arg(c, 2, 0, "ERR value is out of range, "
	                                 "must be positive", &count))
		return;
	if (!zpop_run(c, 1, 1, max, (uint64_t)count, &z, &which) && which == 1)
		resp_add_array(c->out, 0);
}

static void cmd_zpopmin(struct cmd_ctx *c)
{
	zpop_cmd(c, 0);
}

static void cmd_zpopmax(struct cmd_ctx *c)
{
	zpop_cmd(c, 1);
}

/* ZMPOP numkeys key [key ...] MIN|MAX [COUNT count] (cmd.c mpop_args:
 * zmpopGenericCommand): [key, [[member, score] ...]], or a null array if
 * no key exists. */
static void cmd_zmpop(struct cmd_ctx *c)
{
	static const char *const ends[2] = {"min", "max"};
	struct zout z = {c, 1, 1, 0, 2, 0, NULL};
	size_t which;
	int max;
	uint64_t count;
	size_t numkeys = mpop_args(c, ends, &max, &count);
	if (numkeys && !zpop_run(c, 2, numkeys, max, count, &z, &which) &&
	    which == numkeys)
		resp_add_array(c->out, -1);
}

/* ---- blocking pops (blocking.h: each one's attempt, and its call) ---- */

static int bzpop_try(struct cmd_ctx *c, const struct pmkv_key *k, size_t n,
                     int serving, int max)
{
	struct zout z = {.c = c, .scores = 1, .keyed = 1, .keys = k};
	size_t which, mark = c->out->n;
	int rc = zpop_keys(c, k, n, max, 1, &z, &which);
	return block_result(c, mark, rc, which < n, serving);
}

static int bzpopmin_try(struct cmd_ctx *c, const struct pmkv_key *k,
                        size_t n, int serving)
{
	return bzpop_try(c, k, n, serving, 0);
}

static int bzpopmax_try(struct cmd_ctx *c, const struct pmkv_key *k,
                        size_t n, int serving)
{
	return bzpop_try(c, k, n, serving, 1);
}

/* BZPOPMIN, BZPOPMAX key [key ...] timeout: [key, member, score]. */
static void cmd_bzpopmin(struct cmd_ctx *c)
{
	block_keys(c, bzpopmin_try);
}

static void cmd_bzpopmax(struct cmd_ctx *c)
{
	block_keys(c, bzpopmax_try);
}

static const char *const zset_ends[2] = {"min", "max"};

static int bzmpop_try(struct cmd_ctx *c, const struct pmkv_key *k, size_t n,
                      int serving)
{
	struct zout z = {.c = c, .pairs = 1, .keys = k};
	int max;
	uint64_t count;
	size_t which, mark = c->out->n;
	if (!block_mpop_args(c, zset_ends, &max, &count))
		return 1;
	int rc = zpop_keys(c, k, n, max, count, &z, &which);
	return block_result(c, mark, rc, which < n, serving);
}

/* BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]. */
static void cmd_bzmpop(struct cmd_ctx *c)
{
	block_mpop(c, zset_ends, bzmpop_try);
}

/* ---- ZRANDMEMBER ---- */

/* ZRANDMEMBER key [count [WITHSCORES]] (zrandmemberCommand). */
static void cmd_zrandmember(struct cmd_ctx *c)
{
	long long count = 1;
	struct zout z = {c, 0, 0, c->q->argc < 3, 0, 0, NULL};
	struct pmkv_zsink out = {zout_begin, zout_elem, &z};
	int found;
	if (c->q->argc >= 3 && resp_arg_ll(c->q, 2, &count))
		return not_integer(c);
	if (count == LLONG_MIN)
		return resp_add_error(c->out, "ERR value is out of range, "
		                      "value must between -9223372036854775807 "
		                      "and 9223372036854775807");
	if (c->q->argc > 4 ||
	    (c->q->argc == 4 && !resp_arg_is(c->q, 3, "withscores")))
		return syntax_error(c);
	z.scores = c->q->argc == 4;
	if (z.scores && (count < -LLONG_MAX / 2 || count > LLONG_MAX / 2))
		return resp_add_error(c->out, "ERR value is out of range");
	if (count < -ZRAND_MOST) {
		c->out->oom = 1; /* the connection answers out of memory */
		return;
	}
	size_t mark = c->out->n;
	if (!zout_end(c, mark, pmkv_zrandmember(store(c), arg(c, 1), len(c, 1),
	                                        count, &out, &found)) &&
	    z.bare && !found)
		resp_add_null(c->out);
}

/* ---- ZSCAN ---- */

/* ZSCAN's pmkv_zsink, into a struct scan_pairs (cmd.h): no count first. */
static void zscan_begin(void *p, size_t key, uint64_t n)
{
	(void)p, (void)key, (void)n;
}

/* A score as ZSCAN gives it: Redis returns a listpack's (every small
 * sorted set's) entry as stored, an integer where the score is one of at
 * most LLONG_MAX / 2 (double2ll), else "%.17g" (a skiplist's are all
 * "%.17g": they differ from 1e17 up). */
static int scan_score(char *buf, size_t cap, double d)
{
	if (d >= (double)(-LLONG_MAX / 2) && d <= (double)(LLONG_MAX / 2) &&
	    (double)(long long)d == d)
		return snprintf(buf, cap, "%lld", (long long)d);
	return snprintf(buf, cap, "%.17g", d);
}

/* A pmkv_zsink's element: the member and its score kept if the member
 * matches (cmd.c scan_pair). */
static int zscan_elem(void *p, const void *m, size_t n, double score)
{
	struct scan_pairs *z = p;
	char buf[32];
	scan_pair(z, m, n, buf, (size_t)scan_score(buf, sizeof(buf), score));
	return z->k.oom;
}

/* ZSCAN key cursor [MATCH pattern] [COUNT count] (cmd.c scan_args). */
static void cmd_zscan(struct cmd_ctx *c)
{
	uint64_t cur, next = 0;
	struct scan_opts o;
	if (scan_args(c, pmkv_zcard, &cur, &o))
		return;
	struct scan_pairs z = {{0}, o.pat, o.pn};
	struct pmkv_zsink out = {zscan_begin, zscan_elem, &z};
	int rc = pmkv_zscan(store(c), arg(c, 1), len(c, 1), cur,
	                    (uint64_t)o.count, &out, &next);
	if (rc || z.k.oom)
		reply_status(c, rc ? rc : ENOMEM);
	else
		scan_page(c, next, &z.k);
	collect_free(&z.k);
}

/* ---- ZUNION, ZINTER, ZDIFF, their STORE, ZINTERCARD ---- */

/* What zunionInterDiffGenericCommand reads: numkeys at argv[at], the
 * keys, then WEIGHTS and AGGREGATE (not DIFF's), WITHSCORES (not with a
 * destination) or LIMIT (ZINTERCARD's only). */
struct zsetop_cmd {
	int op;
	size_t at;
	int store, card;
};

struct zsetop_args {
	struct pmkv_zsetop o;
	int withscores;
	long long limit;
};

/* One option at argv[*j]: 0, or the error (1 syntax, 2 a weight, 3 a
 * limit) after which nothing more is read. */
static int zsetop_option(struct cmd_ctx *c, const struct zsetop_cmd *h,
                         struct zsetop_args *a, double *w, size_t *j)
{
	size_t left = c->q->argc - *j, i = *j;
	int wa = h->op != PMKV_ZOP_DIFF && !h->card;
	if (wa && left >= a->o.n + 1 && resp_arg_is(c->q, i, "weights")) {
		for (size_t k = 0; k < a->o.n; k++)
			if (arg_float(c, i + 1 + k, &w[k]))
				return 2;
		a->o.weights = w;
		*j = i + 1 + a->o.n;
	} else if (wa && left >= 2 && resp_arg_is(c->q, i, "aggregate")) {
		static const char *const agg[] = {"sum", "min", "max"};
		int k = 0;
		while (k < 3 && !resp_arg_is(c->q, i + 1, agg[k]))
			k++;
		if (k == 3)
			return 1;
		a->o.agg = k == 0 ? PMKV_ZAGG_SUM : k == 1 ? PMKV_ZAGG_MIN
		                                           : PMKV_ZAGG_MAX;
		*j = i + 2;
	} else if (!h->store && !h->card &&
	           resp_arg_is(c->q, i, "withscores")) {
		a->withscores = 1;
		*j = i + 1;
	} else if (h->card && left >= 2 && resp_arg_is(c->q, i, "limit")) {
		if (resp_arg_ll(c->q, i + 1, &a->limit) || a->limit < 0)
			return 3;
		*j = i + 2;
	} else {
		return 1;
	}
	return 0;
}

/* The options' error, once the keys' types are known to be right (Redis
 * looks the keys up first). */
static void zsetop_bad(struct cmd_ctx *c, const struct zsetop_args *a,
                       int bad)
{
	int rc = pmkv_zsetop_types(store(c), a->o.keys, a->o.n);
	if (rc)
		reply_status(c, rc);
	else if (bad == 2)
		resp_add_error(c->out, "ERR weight value is not a float");
	else if (bad == 3)
		resp_add_error(c->out, "ERR LIMIT can't be negative");
	else
		syntax_error(c);
}

/* numkeys and the keys: 0, or -1 after the error. */
static int zsetop_keys(struct cmd_ctx *c, const struct zsetop_cmd *h,
                       struct zsetop_args *a)
{
	long long n;
	if (resp_arg_ll(c->q, h->at, &n)) {
		not_integer(c);
		return -1;
	}
	if (n < 1) {
		resp_add_error(c->out, "ERR at least 1 input key is needed for "
		               "'%s' command", c->cmd->name);
		return -1;
	}
	if ((unsigned long long)n > c->q->argc - (h->at + 1)) {
		syntax_error(c);
		return -1;
	}
	a->o.n = (size_t)n;
	a->o.keys = args_from(c, h->at + 1, a->o.n);
	return a->o.keys ? 0 : -1;
}

static void zsetop_run(struct cmd_ctx *c, const struct zsetop_cmd *h,
                       struct zsetop_args *a)
{
	uint64_t n = 0;
	int rc;
	if (h->card) {
		rc = pmkv_zintercard(store(c), a->o.keys, a->o.n,
		                     (uint64_t)a->limit, &n);
		return reply_int(c, rc, (long long)n);
	}
	if (h->store) {
		rc = pmkv_zsetop_store(store(c), arg(c, 1), len(c, 1), &a->o,
		                       &n);
		return reply_int(c, rc, (long long)n);
	}
	struct zout z = {c, a->withscores, 0, 0, 0, 0, NULL};
	struct pmkv_zsink out = {zout_begin, zout_elem, &z};
	size_t mark = c->out->n;
	zout_end(c, mark, pmkv_zsetop(store(c), &a->o, &out));
}

static void zsetop_cmd(struct cmd_ctx *c, const struct zsetop_cmd *h)
{
	struct zsetop_args a = {{h->op, PMKV_ZAGG_SUM, NULL, NULL, 0}, 0, 0};
	double *w = NULL;
	int bad = 0;
	if (zsetop_keys(c, h, &a))
		return;
	if (!(w = calloc(a.o.n, sizeof(*w)))) {
		free((void *)a.o.keys);
		return resp_add_error(c->out, "ERR out of memory");
	}
	for (size_t j = h->at + 1 + a.o.n; j < c->q->argc && !bad;)
		bad = zsetop_option(c, h, &a, w, &j);
	if (bad)
		zsetop_bad(c, &a, bad);
	else
		zsetop_run(c, h, &a);
	free(w);
	free((void *)a.o.keys);
}

static void cmd_zunion(struct cmd_ctx *c)
{
	static const struct zsetop_cmd h = {PMKV_ZOP_UNION, 1, 0, 0};
	zsetop_cmd(c, &h);
}

static void cmd_zinter(struct cmd_ctx *c)
{
	static const struct zsetop_cmd h = {PMKV_ZOP_INTER, 1, 0, 0};
	zsetop_cmd(c, &h);
}

static void cmd_zdiff(struct cmd_ctx *c)
{
	static const struct zsetop_cmd h = {PMKV_ZOP_DIFF, 1, 0, 0};
	zsetop_cmd(c, &h);
}

static void cmd_zunionstore(struct cmd_ctx *c)
{
	static const struct zsetop_cmd h = {PMKV_ZOP_UNION, 2, 1, 0};
	zsetop_cmd(c, &h);
}

static void cmd_zinterstore(struct cmd_ctx *c)
{
	static const struct zsetop_cmd h = {PMKV_ZOP_INTER, 2, 1, 0};
	zsetop_cmd(c, &h);
}

static void cmd_zdiffstore(struct cmd_ctx *c)
{
	static const struct zsetop_cmd h = {PMKV_ZOP_DIFF, 2, 1, 0};
	zsetop_cmd(c, &h);
}

static void cmd_zintercard(struct cmd_ctx *c)
{
	static const struct zsetop_cmd h = {PMKV_ZOP_INTER, 1, 0, 1};
	zsetop_cmd(c, &h);
}

/* Redis 7.0's COMMAND INFO for each: arity, flags, key positions. */
const struct command pmkv_cmds_zset[] = {
	{"zadd", -4, cmd_zadd, "write denyoom fast", 1, 1, 1, 1},
	{"zincrby", 4, cmd_zincrby, "write denyoom fast", 1, 1, 1, 1},
	{"zscore", 3, cmd_zscore, "readonly fast", 1, 1, 1, 1},
	{"zmscore", -3, cmd_zmscore, "readonly fast", 1, 1, 1, 1},
	{"zcard", 2, cmd_zcard, "readonly fast", 1, 1, 1, 1},
	{"zrank", 3, cmd_zrank, "readonly fast", 1, 1, 1, 1},
	{"zrevrank", 3, cmd_zrevrank, "readonly fast", 1, 1, 1, 1},
	{"zrange", -4, cmd_zrange, "readonly", 1, 1, 1, 1},
	{"zrangestore", -5, cmd_zrangestore, "write denyoom", 1, 2, 1, 1},
	{"zrevrange", -4, cmd_zrevrange, "readonly", 1, 1, 1, 1},
	{"zrangebyscore", -4, cmd_zrangebyscore, "readonly", 1, 1, 1, 1},
	{"zrevrangebyscore", -4, cmd_zrevrangebyscore, "readonly", 1, 1, 1, 1},
	{"zrangebylex", -4, cmd_zrangebylex, "readonly", 1, 1, 1, 1},
	{"zrevrangebylex", -4, cmd_zrevrangebylex, "readonly", 1, 1, 1, 1},
	{"zrem", -3, cmd_zrem, "write fast", 1, 1, 1, 1},
	{"zremrangebyrank", 4, cmd_zremrangebyrank, "write", 1, 1, 1, 1},
	{"zremrangebyscore", 4, cmd_zremrangebyscore, "write", 1, 1, 1, 1},
	{"zremrangebylex", 4, cmd_zremrangebylex, "write", 1, 1, 1, 1},
	{"zcount", 4, cmd_zcount, "readonly fast", 1, 1, 1, 1},
	{"zlexcount", 4, cmd_zlexcount, "readonly fast", 1, 1, 1, 1},
	{"zpopmin", -2, cmd_zpopmin, "write fast", 1, 1, 1, 1},
	{"zpopmax", -2, cmd_zpopmax, "write fast", 1, 1, 1, 1},
	{"zmpop", -4, cmd_zmpop, "write movablekeys", 0, 0, 0, 1},
	{"bzpopmin", -3, cmd_bzpopmin, "write noscript blocking fast", 1, -2,
	 1, 0},
	{"bzpopmax", -3, cmd_bzpopmax, "write noscript blocking fast", 1, -2,
	 1, 0},
	{"bzmpop", -5, cmd_bzmpop, "write blocking movablekeys", 0, 0, 0, 0},
	{"zrandmember", -2, cmd_zrandmember, "readonly", 1, 1, 1, 1},
	{"zscan", -3, cmd_zscan, "readonly", 1, 1, 1, 1},
	{"zunion", -3, cmd_zunion, "readonly movablekeys", 0, 0, 0, 1},
	{"zinter", -3, cmd_zinter, "readonly movablekeys", 0, 0, 0, 1},
	{"zdiff", -3, cmd_zdiff, "readonly movablekeys", 0, 0, 0, 1},
	{"zunionstore", -4, cmd_zunionstore, "write denyoom movablekeys", 1, 1,
	 1, 1},
	{"zinterstore", -4, cmd_zinterstore, "write denyoom movablekeys", 1, 1,
	 1, 1},
	{"zdiffstore", -4, cmd_zdiffstore, "write denyoom movablekeys", 1, 1, 1,
	 1},
	{"zintercard", -3, cmd_zintercard, "readonly movablekeys", 0, 0, 0, 1},
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};
