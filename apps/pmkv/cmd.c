/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd.c - pmkv's commands: the table, argument checks with Redis's own
 * error texts, and one handler per command, each a call into the store
 * (store.h) and a reply (resp.h).
 *
 * Invariants
 *  C1. A command that writes replies only after the store returned, and
 *      the store returns only after the transaction committed (store.c
 *      S1): every positive reply to a write is an acknowledged, durable
 *      write. A failed write replies with an error and changed nothing.
 *  C2. Arity is checked before the handler runs, as Redis does: a
 *      positive arity is exact, a negative one a minimum (the command
 *      name counts).
 *  C3. Every reply is one RESP value, so pipelined replies stay in step.
 *  C4. The hints (cmd_hint_begin, cmd_hint_next) only look ahead: they
 *      read the input without consuming it and call nothing but the
 *      store's hints (store.c S9), so what runs, and every reply, is the
 *      same with them or without them.
 */
#include <ctype.h>
#include <pthread.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blocking.h"
#include "cmd.h"
#include "pubsub.h"
#include "script.h"

/* ---- helpers (cmd.h) ---- */

/* A commit failed on the disk: counted for INFO, and the library's
 * detail logged the first time (its errmsg is this thread's). */
static void write_failed(struct server *srv)
{
	if (atomic_fetch_add(&srv->write_errors, 1) == 0)
		fprintf(stderr, "pmkv: a commit failed: %s (%s)\n",
		        pmtx_strerror(PMTX_E_IO), pmtx_errmsg());
}

/* A write refused for want of room. The client gets Redis's OOM text;
 * the log says why (the library's message: the region's maximum size
 * reached, or a file system with no space left), the first time and
 * then at most once a minute, with the count so far. */
static void write_refused(struct server *srv, int rc)
{
	uint64_t n = atomic_fetch_add(&srv->oom_refusals, 1) + 1;
	int64_t now = (int64_t)time(NULL), last = atomic_load(&srv->oom_logged);
	if (now - last < 60 ||
	    !atomic_compare_exchange_strong(&srv->oom_logged, &last, now))
		return;
	fprintf(stderr, "pmkv: a write refused, no room: %s (%llu refused so "
	        "far)\n", rc == PMKV_E_TABLE_FULL ? "the hash table is at its "
	        "largest" : pmtx_errmsg(), (unsigned long long)n);
}

/* Counted and logged once per request: in a group, an error aborts the
 * group and the request runs again alone (conn.c N5). */
void reply_status(struct cmd_ctx *c, int rc)
{
	c->refused |= pmkv_no_room(rc); /* store.c S16 */
	if (!c->in_group && pmkv_no_room(rc))
		write_refused(c->srv, rc);
	if (rc != PMTX_E_IO)
		return resp_add_error(c->out, "%s", pmkv_strerror(rc));
	if (!c->in_group)
		write_failed(c->srv); /* Redis's code when it cannot write its AOF */
	resp_add_error(c->out, "MISCONF Errors writing to the region: %s; see "
	               "the server's log", pmtx_strerror(rc));
}

void reply_ok(struct cmd_ctx *c, int rc)
{
	if (rc)
		reply_status(c, rc);
	else
		resp_add_simple(c->out, "OK");
}

void reply_int(struct cmd_ctx *c, int rc, long long v)
{
	if (rc)
		reply_status(c, rc);
	else
		resp_add_int(c->out, v);
}

void emit_bulk(void *arg, const void *p, size_t n)
{
	resp_add_bulk(arg, p, n);
}

void syntax_error(struct cmd_ctx *c)
{
	resp_add_error(c->out, "ERR syntax error");
}

void not_integer(struct cmd_ctx *c)
{
	resp_add_error(c->out, "ERR value is not an integer or out of range");
}

void wrong_args(struct cmd_ctx *c)
{
	resp_add_error(c->out, "ERR wrong number of arguments for '%s' "
	               "command", c->cmd->name);
}

/* Keys argv[from], argv[from + step], ... (at most n of them). */
static size_t keys_of(struct cmd_ctx *c, size_t from, size_t step,
                      struct pmkv_key *k, size_t n)
{
	size_t m = 0;
	for (size_t i = from; i < c->q->argc && m < n; i += step)
		k[m++] = (struct pmkv_key){arg(c, i), len(c, i)};
	return m;
}

/* ---- connection and server ---- */

static void cmd_ping(struct cmd_ctx *c)
{
	if (c->q->argc > 2)
		resp_add_error(c->out,
		               "ERR wrong number of arguments for 'ping' command");
	else if (c->sess && c->sess->subscribed) { /* RESP2 subscribed */
		resp_add_array(c->out, 2);
		resp_add_bulk(c->out, "pong", 4);
		if (c->q->argc == 2)
			resp_add_bulk(c->out, arg(c, 1), len(c, 1));
		else
			resp_add_bulk(c->out, "", 0);
	} else if (c->q->argc == 2)
		resp_add_bulk(c->out, arg(c, 1), len(c, 1));
	else
		resp_add_simple(c->out, "PONG");
}

static void cmd_echo(struct cmd_ctx *c)
{
	resp_add_bulk(c->out, arg(c, 1), len(c, 1));
}

static void cmd_quit(struct cmd_ctx *c)
{
	resp_add_simple(c->out, "OK");
	c->close_after = 1;
}

static void cmd_shutdown(struct cmd_ctx *c)
{
	for (size_t i = 1; i < c->q->argc; i++)
		if (!resp_arg_is(c->q, i, "nosave") &&
		    !resp_arg_is(c->q, i, "save") &&
		    !resp_arg_is(c->q, i, "now") &&
		    !resp_arg_is(c->q, i, "force"))
			return syntax_error(c);
	/* every write is already durable: nothing to save */
	server_stop(c->srv);
	c->close_after = 1;
}

/* A database index argument: 0 and *db, or -1 after replying the error
 * (notint: the reply when it is not an integer). */
static int db_arg(struct cmd_ctx *c, size_t i, const char *notint,
                  unsigned *db)
{
	long long v;
	if (resp_arg_ll(c->q, i, &v)) {
		resp_add_error(c->out, "%s", notint);
		return -1;
	}
	if (v < 0 || v >= PMKV_DBS) {
		resp_add_error(c->out, "ERR DB index is out of range");
		return -1;
	}
	*db = (unsigned)v;
	return 0;
}

#define NOTINT "ERR value is not an integer or out of range"

static void cmd_select(struct cmd_ctx *c)
{
	unsigned db;
	if (db_arg(c, 1, NOTINT, &db))
		return;
	int rc = pmkv_select(c->srv->store, db);
	if (!rc && c->sess)
		c->sess->db = db;
	reply_ok(c, rc);
}

static void cmd_swapdb(struct cmd_ctx *c)
{
	unsigned a, b;
	if (db_arg(c, 1, "ERR invalid first DB index", &a) ||
	    db_arg(c, 2, "ERR invalid second DB index", &b))
		return;
	reply_ok(c, pmkv_swapdb(c->srv->store, a, b));
}

static void cmd_move(struct cmd_ctx *c)
{
	unsigned db;
	int done = 0;
	if (db_arg(c, 2, NOTINT, &db))
		return;
	int rc = pmkv_move(c->srv->store, arg(c, 1), len(c, 1), db, &done);
	reply_int(c, rc, done);
}

/* ---- strings ---- */

static void cmd_get(struct cmd_ctx *c)
{
	int found;
	int rc = pmkv_get(c->srv->store, arg(c, 1), len(c, 1), emit_bulk,
	                  c->out, &found);
	if (rc)
		reply_status(c, rc);
	else if (!found)
		resp_add_null(c->out);
}

/* SET's and GETEX's options: PMKV_SET_* and OPT_PERSIST, and the last
 * expiry option's index (0: none) and kind (1 to 4: EX, PX, EXAT,
 * PXAT). */
#define OPT_PERSIST 0x100
struct set_args {
	unsigned flags;
	size_t exp_at;
	int exp_kind;
	int64_t expire_ms;
};

enum { EXP_OK, EXP_NOTINT, EXP_INVALID };

/* argv[i] as an expiry of kind k (1 to 4: EX, PX, EXAT, PXAT), as Redis
 * 7.0 reads it (getExpireMillisecondsOrReply): a positive integer, its
 * seconds no more than fit in milliseconds, and a relative one added to
 * the clock with Redis's wrap-around, refused when the sum is not
 * positive. EXP_OK and *t (ms since the epoch), or what is wrong. */
static int expiry_value(struct cmd_ctx *c, size_t i, int k, int64_t *t)
{
	long long v;
	int ms = k == 2 || k == 4;
	if (resp_arg_ll(c->q, i, &v))
		return EXP_NOTINT;
	*t = 0;
	if (v > 0 && (ms || v <= INT64_MAX / 1000)) {
		*t = ms ? v : v * 1000;
		if (k <= 2)
			*t = (int64_t)((uint64_t)*t + (uint64_t)pmkv_now_ms());
	}
	return *t > 0 ? EXP_OK : EXP_INVALID;
}

/* Redis's reply to an expiry expiry_value refused (e: its status), for
 * the command name. */
static void bad_expiry(struct cmd_ctx *c, int e, const char *name)
{
	if (e == EXP_NOTINT)
		return not_integer(c);
	resp_add_error(c->out, "ERR invalid expire time in '%s' command", name);
}

/* The expiry the options name, replying Redis's error for the command
 * name if it is bad: 0, or -1 after the error. */
static int set_expiry(struct cmd_ctx *c, struct set_args *a,
                      const char *name)
{
	int e = a->exp_at ? expiry_value(c, a->exp_at + 1, a->exp_kind,
	                                 &a->expire_ms)
	                  : EXP_OK;
	if (e)
		bad_expiry(c, e, name);
	return e ? -1 : 0;
}

/* The expiry option argv[i] names: 1 to 4 (EX, PX, EXAT, PXAT), or 0. */
static int expiry_option(struct cmd_ctx *c, size_t i)
{
	static const char *const exp[] = {"ex", "px", "exat", "pxat"};
	for (int k = 0; k < 4; k++)
		if (resp_arg_is(c->q, i, exp[k]))
			return k + 1;
	return 0;
}

/* SET's (getex 0) or GETEX's (getex 1) options from argv[from], as Redis
 * 7.0 reads them (parseExtendedStringArgumentsOrReply): an option may
 * repeat (the last expiry counts); NX and XX exclude each other, and so
 * do KEEPTTL, PERSIST and the four expiry options; an expiry option
 * needs an argument after it; SET takes NX, XX, GET and KEEPTTL, GETEX
 * PERSIST. Every option is read before the expiry's argument is: a
 * syntax error comes first. 0, or -1 after replying with the error. */
static int set_options(struct cmd_ctx *c, size_t from, int getex,
                       struct set_args *a)
{
	for (size_t i = from; i < c->q->argc; i++) {
		unsigned f = resp_arg_is(c->q, i, "nx")        ? PMKV_SET_NX
		             : resp_arg_is(c->q, i, "xx")      ? PMKV_SET_XX
		             : resp_arg_is(c->q, i, "get")     ? PMKV_SET_GET
		             : resp_arg_is(c->q, i, "keepttl") ? PMKV_SET_KEEPTTL
		             : resp_arg_is(c->q, i, "persist") ? OPT_PERSIST
		                                               : 0;
		int e = f ? 0 : expiry_option(c, i);
		int ok = f == PMKV_SET_NX        ? !(a->flags & PMKV_SET_XX)
		         : f == PMKV_SET_XX      ? !(a->flags & PMKV_SET_NX)
		         : f == PMKV_SET_KEEPTTL ? !a->exp_kind
		         : f == PMKV_SET_GET     ? 1
		         : f == OPT_PERSIST      ? getex && !a->exp_kind
		         : e ? !(a->flags & (PMKV_SET_KEEPTTL | OPT_PERSIST)) &&
		               (!a->exp_kind || a->exp_kind == e) &&
		               i + 1 < c->q->argc
		             : 0;
		if (!ok || (getex && f && f != OPT_PERSIST)) {
			syntax_error(c);
			return -1;
		}
		if (e)
			a->exp_at = i++, a->exp_kind = e;
		a->flags |= f;
	}
	return 0;
}

static void cmd_set(struct cmd_ctx *c)
{
	struct set_args a = {0, 0, 0, 0};
	int done, found = 0;
	if (set_options(c, 3, 0, &a) || set_expiry(c, &a, "set"))
		return;
	size_t mark = c->out->n;
	int rc = pmkv_set(c->srv->store, arg(c, 1), len(c, 1), arg(c, 2),
	                  len(c, 2), a.flags, a.expire_ms, &done, emit_bulk,
	                  c->out, &found);
	if (rc) {
		c->out->n = mark; /* no old value before an error (C3) */
		return reply_status(c, rc);
	}
	if (a.flags & PMKV_SET_GET) {
		if (!found)
			resp_add_null(c->out);
	} else if (done) {
		resp_add_simple(c->out, "OK");
	} else {
		resp_add_null(c->out);
	}
}

/* SET k v with flags (PMKV_SET_*) and expiry exp: *done, or -1 after
 * replying with an error. GET's old value, if asked for, is emitted
 * (and taken back before an error: C3). */
static int set_with(struct cmd_ctx *c, size_t v, unsigned flags,
                    int64_t exp, int *found)
{
	int done = 0;
	size_t mark = c->out->n;
	*found = 0;
	int rc = pmkv_set(c->srv->store, arg(c, 1), len(c, 1), arg(c, v),
	                  len(c, v), flags, exp, &done, emit_bulk, c->out,
	                  found);
	if (rc) {
		c->out->n = mark;
		reply_status(c, rc);
		return -1;
	}
	return done;
}

static void cmd_setnx(struct cmd_ctx *c)
{
	int found, done = set_with(c, 2, PMKV_SET_NX, 0, &found);
	if (done >= 0)
		resp_add_int(c->out, done);
}

/* SETEX (kind 1: seconds) and PSETEX (2: ms): key, expiry, value. */
static void setex_cmd(struct cmd_ctx *c, int kind, const char *name)
{
	int64_t t;
	int found, e = expiry_value(c, 2, kind, &t);
	if (e)
		return bad_expiry(c, e, name);
	if (set_with(c, 3, 0, t, &found) >= 0)
		resp_add_simple(c->out, "OK");
}

static void cmd_setex(struct cmd_ctx *c)
{
	setex_cmd(c, 1, "setex");
}

static void cmd_psetex(struct cmd_ctx *c)
{
	setex_cmd(c, 2, "psetex");
}

static void cmd_getset(struct cmd_ctx *c)
{
	int found;
	if (set_with(c, 2, PMKV_SET_GET, 0, &found) >= 0 && !found)
		resp_add_null(c->out);
}

/* GETDEL, GETEX and the EXPIRE family: pmkv_expire on argv[1]; with
 * PMKV_EXP_GET the value (or nil) is replied, else r->done. */
static void expire_key(struct cmd_ctx *c, unsigned flags, int64_t when)
{
	struct pmkv_reply r = {emit_bulk, c->out, 0, 0};
	int rc = pmkv_expire(c->srv->store, arg(c, 1), len(c, 1), flags,
	                     when, &r);
	if (rc)
		reply_status(c, rc);
	else if (!(flags & PMKV_EXP_GET))
		resp_add_int(c->out, r.done);
	else if (!r.found)
		resp_add_null(c->out);
}

static void cmd_getdel(struct cmd_ctx *c)
{
	expire_key(c, PMKV_EXP_GET | PMKV_EXP_DEL, 0);
}

static void cmd_persist(struct cmd_ctx *c)
{
	expire_key(c, PMKV_EXP_PERSIST, 0);
}

/* GETEX: a bad expiry is an error only if the key exists (Redis 7.0
 * reads it after the lookup); an absent key is nil. */
static void cmd_getex(struct cmd_ctx *c)
{
	struct set_args a = {0, 0, 0, 0};
	struct pmkv_key k = {arg(c, 1), len(c, 1)};
	uint64_t n = 0;
	if (set_options(c, 2, 1, &a))
		return;
	int e = a.exp_at ? expiry_value(c, a.exp_at + 1, a.exp_kind,
	                                &a.expire_ms)
	                 : EXP_OK;
	if (!e)
		return expire_key(c, PMKV_EXP_GET |
		                  (a.exp_at ? PMKV_EXP_SET : 0) |
		                  (a.flags & OPT_PERSIST ? PMKV_EXP_PERSIST : 0),
		                  a.expire_ms);
	int rc = pmkv_exists(c->srv->store, &k, 1, &n);
	if (rc)
		reply_status(c, rc);
	else if (n)
		bad_expiry(c, e, "getex");
	else
		resp_add_null(c->out);
}

/* EXPIRE's options (Redis 7.0's parseExtendedExpireArgumentsOrReply):
 * PMKV_EXP_* flags, or -1 after replying with the error. */
static int expire_options(struct cmd_ctx *c, unsigned *flags)
{
	static const char *const opt[] = {"nx", "xx", "gt", "lt"};
	for (size_t i = 3; i < c->q->argc; i++) {
		unsigned f = 0;
		for (unsigned k = 0; k < 4 && !f; k++)
			f = resp_arg_is(c->q, i, opt[k]) ? 1u << k : 0;
		if (!f) {
			resp_add_error(c->out, "ERR Unsupported option %s",
			               arg(c, i));
			return -1;
		}
		*flags |= f;
	}
	if ((*flags & PMKV_EXP_NX) &&
	    (*flags & (PMKV_EXP_XX | PMKV_EXP_GT | PMKV_EXP_LT))) {
		resp_add_error(c->out, "ERR NX and XX, GT or LT options at the "
		               "same time are not compatible");
		return -1;
	}
	if ((*flags & PMKV_EXP_GT) && (*flags & PMKV_EXP_LT)) {
		resp_add_error(c->out, "ERR GT and LT options at the same time "
		               "are not compatible");
		return -1;
	}
	return 0;
}

/* EXPIRE (ms 0, at 0), PEXPIRE, EXPIREAT, PEXPIREAT, as Redis 7.0's
 * expireGenericCommand: options first, then the time, which may be
 * negative (a time past removes the key) but must not overflow. */
static void expire_cmd(struct cmd_ctx *c, int ms, int at, const char *name)
{
	unsigned flags = PMKV_EXP_SET;
	long long v;
	int64_t base = at ? 0 : pmkv_now_ms();
	if (expire_options(c, &flags))
		return;
	if (resp_arg_ll(c->q, 2, &v))
		return not_integer(c);
	if ((!ms && (v > LLONG_MAX / 1000 || v < LLONG_MIN / 1000)) ||
	    (ms ? v : v * 1000) > LLONG_MAX - base)
		return bad_expiry(c, EXP_INVALID, name);
	expire_key(c, flags, (ms ? v : v * 1000) + base);
}

static void cmd_expire(struct cmd_ctx *c)
{
	expire_cmd(c, 0, 0, "expire");
}

static void cmd_pexpire(struct cmd_ctx *c)
{
	expire_cmd(c, 1, 0, "pexpire");
}

static void cmd_expireat(struct cmd_ctx *c)
{
	expire_cmd(c, 0, 1, "expireat");
}

static void cmd_pexpireat(struct cmd_ctx *c)
{
	expire_cmd(c, 1, 1, "pexpireat");
}

/* TYPE's name of each enum pmkv_type (Redis's). */
static const char *const type_names[] = {
	[PMKV_T_STRING] = "string", [PMKV_T_LIST] = "list",
	[PMKV_T_SET] = "set", [PMKV_T_ZSET] = "zset", [PMKV_T_HASH] = "hash",
};

static void cmd_type(struct cmd_ctx *c)
{
	int type;
	int rc = pmkv_type(c->srv->store, arg(c, 1), len(c, 1), &type);
	if (rc)
		reply_status(c, rc);
	else
		resp_add_simple(c->out, type < 0 ? "none" : type_names[type]);
}

/* RENAME (nx 0) and RENAMENX (nx 1). */
static void rename_cmd(struct cmd_ctx *c, int nx)
{
	int done = 0;
	int rc = pmkv_rename(c->srv->store, arg(c, 1), len(c, 1), arg(c, 2),
	                     len(c, 2), nx, &done);
	if (nx)
		reply_int(c, rc, done);
	else
		reply_ok(c, rc);
}

static void cmd_rename(struct cmd_ctx *c)
{
	rename_cmd(c, 0);
}

static void cmd_renamenx(struct cmd_ctx *c)
{
	rename_cmd(c, 1);
}

/* GETRANGE's slice of a value (Redis 7.0's getrangeCommand). */
struct range {
	struct resp_out *out;
	long long start, end;
};

static void emit_range(void *arg, const void *p, size_t n)
{
	struct range *r = arg;
	long long s = r->start, e = r->end, len = (long long)n;
	if (s < 0 && e < 0 && s > e)
		return resp_add_bulk(r->out, "", 0);
	s = s < 0 ? len + s : s;
	e = e < 0 ? len + e : e;
	s = s < 0 ? 0 : s;
	e = e < 0 ? 0 : e >= len ? len - 1 : e;
	if (s > e || n == 0)
		return resp_add_bulk(r->out, "", 0);
	resp_add_bulk(r->out, (const char *)p + s, (size_t)(e - s + 1));
}

static void cmd_getrange(struct cmd_ctx *c)
{
	struct range r = {c->out, 0, 0};
	int found;
	if (resp_arg_ll(c->q, 2, &r.start) || resp_arg_ll(c->q, 3, &r.end))
		return not_integer(c);
	int rc = pmkv_get(c->srv->store, arg(c, 1), len(c, 1), emit_range,
	                  &r, &found);
	if (rc)
		reply_status(c, rc);
	else if (!found)
		resp_add_bulk(c->out, "", 0);
}

/* MGET: a key that cannot be read is nil, unless the store is broken
 * (store.c S11): then the whole reply is the error. */
static void cmd_mget(struct cmd_ctx *c)
{
	size_t start = c->out->n;
	resp_add_array(c->out, (long long)c->q->argc - 1);
	for (size_t i = 1; i < c->q->argc; i++) {
		int found;
		size_t mark = c->out->n;
		int rc = pmkv_get(c->srv->store, arg(c, i), len(c, i),
		                  emit_bulk, c->out, &found);
		if (rc == PMTX_E_IO) {
			c->out->n = start;
			return reply_status(c, rc);
		}
		if (rc)
			c->out->n = mark;
		if (rc || !found)
			resp_add_null(c->out);
	}
}

/* MSET (nx 0) and MSETNX (nx 1). */
static void mset_cmd(struct cmd_ctx *c, int nx)
{
	size_t n = (c->q->argc - 1) / 2;
	int done = 0;
	if ((c->q->argc - 1) % 2)
		return resp_add_error(c->out, "ERR wrong number of arguments "
		                      "for '%s' command", nx ? "msetnx" : "mset");
	struct pmkv_key *k = calloc(2 * n, sizeof(*k));
	if (!k)
		return resp_add_error(c->out, "ERR out of memory");
	keys_of(c, 1, 2, k, n);
	keys_of(c, 2, 2, k + n, n);
	int rc = nx ? pmkv_msetnx(c->srv->store, k, k + n, n, &done)
	            : pmkv_mset(c->srv->store, k, k + n, n);
	free(k);
	if (nx)
		reply_int(c, rc, done);
	else
		reply_ok(c, rc);
}

static void cmd_mset(struct cmd_ctx *c)
{
	mset_cmd(c, 0);
}

static void cmd_msetnx(struct cmd_ctx *c)
{
	mset_cmd(c, 1);
}

/* DEL and EXISTS: every argument a key. */
static void keys_cmd(struct cmd_ctx *c, int del)
{
	size_t n = c->q->argc - 1;
	uint64_t r = 0;
	struct pmkv_key *k = calloc(n, sizeof(*k));
	if (!k)
		return resp_add_error(c->out, "ERR out of memory");
	keys_of(c, 1, 1, k, n);
	int rc = del ? pmkv_del(c->srv->store, k, n, &r)
	             : pmkv_exists(c->srv->store, k, n, &r);
	free(k);
	reply_int(c, rc, (long long)r);
}

static void cmd_del(struct cmd_ctx *c)
{
	keys_cmd(c, 1);
}

static void cmd_exists(struct cmd_ctx *c)
{
	keys_cmd(c, 0);
}

static void incr_by(struct cmd_ctx *c, long long d)
{
	int64_t v = 0;
	int rc = pmkv_incrby(c->srv->store, arg(c, 1), len(c, 1), d, &v);
	reply_int(c, rc, v);
}

static void cmd_incr(struct cmd_ctx *c)
{
	incr_by(c, 1);
}

static void cmd_decr(struct cmd_ctx *c)
{
	incr_by(c, -1);
}

static void cmd_incrby(struct cmd_ctx *c)
{
	long long d;
	if (resp_arg_ll(c->q, 2, &d))
		return not_integer(c);
	incr_by(c, d);
}

static void cmd_decrby(struct cmd_ctx *c)
{
	long long d;
	if (resp_arg_ll(c->q, 2, &d))
		return not_integer(c);
	if (d == LLONG_MIN)
		return resp_add_error(c->out, "ERR decrement would overflow");
	incr_by(c, -d);
}

static void cmd_append(struct cmd_ctx *c)
{
	uint64_t n = 0;
	int rc = pmkv_append(c->srv->store, arg(c, 1), len(c, 1), arg(c, 2),
	                     len(c, 2), &n);
	reply_int(c, rc, (long long)n);
}

static void cmd_incrbyfloat(struct cmd_ctx *c)
{
	long double d;
	char buf[PMKV_LD_CHARS];
	size_t n = 0;
	if (pmkv_ld_parse(arg(c, 2), len(c, 2), &d))
		return resp_add_error(c->out, "ERR value is not a valid float");
	int rc = pmkv_incrbyfloat(c->srv->store, arg(c, 1), len(c, 1), d, buf,
	                          sizeof(buf), &n);
	reply_float(c, rc, buf, n);
}

void reply_float(struct cmd_ctx *c, int rc, const char *buf, size_t n)
{
	if (rc == PMKV_E_OVERFLOW)
		resp_add_error(c->out, "ERR increment would produce NaN or "
		               "Infinity");
	else if (rc)
		reply_status(c, rc);
	else
		resp_add_bulk(c->out, buf, n);
}

/* SETRANGE: Redis 7.0's order: the offset, then the key. */
static void cmd_setrange(struct cmd_ctx *c)
{
	long long off;
	uint64_t n = 0;
	if (resp_arg_ll(c->q, 2, &off))
		return not_integer(c);
	if (off < 0)
		return resp_add_error(c->out, "ERR offset is out of range");
	int rc = pmkv_setrange(c->srv->store, arg(c, 1), len(c, 1),
	                       (uint64_t)off, arg(c, 3), len(c, 3), &n);
	reply_int(c, rc, (long long)n);
}

static void cmd_strlen(struct cmd_ctx *c)
{
	uint64_t n = 0;
	int rc = pmkv_strlen(c->srv->store, arg(c, 1), len(c, 1), &n);
	reply_int(c, rc, (long long)n);
}

/* TTL, PTTL (ms), EXPIRETIME and PEXPIRETIME (at): seconds rounded. */
static void ttl_cmd(struct cmd_ctx *c, int ms, int at)
{
	int64_t t = 0;
	int rc = at ? pmkv_pexpiretime(c->srv->store, arg(c, 1), len(c, 1), &t)
	            : pmkv_pttl(c->srv->store, arg(c, 1), len(c, 1), &t);
	if (!rc && !ms && t > 0)
		t = (t + 500) / 1000;
	reply_int(c, rc, t);
}

static void cmd_ttl(struct cmd_ctx *c)
{
	ttl_cmd(c, 0, 0);
}

static void cmd_pttl(struct cmd_ctx *c)
{
	ttl_cmd(c, 1, 0);
}

static void cmd_expiretime(struct cmd_ctx *c)
{
	ttl_cmd(c, 0, 1);
}

static void cmd_pexpiretime(struct cmd_ctx *c)
{
	ttl_cmd(c, 1, 1);
}

/* ---- the key space ---- */

static void cmd_dbsize(struct cmd_ctx *c)
{
	resp_add_int(c->out, (long long)pmkv_dbsize(c->srv->store));
}

static void cmd_flushall(struct cmd_ctx *c)
{
	if (c->q->argc > 2 || (c->q->argc == 2 &&
	                        !resp_arg_is(c->q, 1, "sync") &&
	                        !resp_arg_is(c->q, 1, "async")))
		return syntax_error(c);
	reply_ok(c, pmkv_flushall(c->srv->store));
}

static void cmd_flushdb(struct cmd_ctx *c)
{
	if (c->q->argc > 2 || (c->q->argc == 2 &&
	                        !resp_arg_is(c->q, 1, "sync") &&
	                        !resp_arg_is(c->q, 1, "async")))
		return syntax_error(c);
	reply_ok(c, pmkv_flushdb(c->srv->store));
}

/* Keys collected for KEYS and SCAN (the reply's length comes first, so
 * they are gathered, then replied): bytes one after another, and where
 * each one ends. */
static int collect_grow(struct collect *k, size_t more)
{
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 64;
		size_t *e = realloc(k->end, cap * sizeof(*e));
		if (!e)
			return -1;
		k->end = e, k->cap = cap;
	}
	if (k->nbytes + more > k->capbytes) {
		size_t cap = k->capbytes ? 2 * k->capbytes : 4096;
		while (cap < k->nbytes + more)
			cap *= 2;
		char *b = realloc(k->bytes, cap);
		if (!b)
			return -1;
		k->bytes = b, k->capbytes = cap;
	}
	return 0;
}

void collect_key(void *arg, const void *p, size_t n)
{
	struct collect *k = arg;
	if (k->oom || (k->pat && !glob_match(k->pat, k->pn, p, n, 0)))
		return;
	if (collect_grow(k, n)) {
		k->oom = 1;
		return;
	}
	if (n) /* the first may be empty, before any bytes (UBSan) */
		memcpy(k->bytes + k->nbytes, p, n);
	k->nbytes += n;
	k->end[k->n++] = k->nbytes;
}

void collect_reply(struct cmd_ctx *c, struct collect *k)
{
	resp_add_array(c->out, (long long)k->n);
	for (size_t i = 0, at = 0; i < k->n; at = k->end[i++])
		resp_add_bulk(c->out, k->bytes + at, k->end[i] - at);
}

void collect_free(struct collect *k)
{
	free(k->bytes);
	free(k->end);
}

static void cmd_keys(struct cmd_ctx *c)
{
	struct collect k = {.pat = arg(c, 1), .pn = len(c, 1)};
	uint64_t cur = 0;
	int rc = 0;
	if (len(c, 1) == 1 && arg(c, 1)[0] == '*')
		k.pat = NULL;
	do
		rc = pmkv_scan(c->srv->store, cur, 4096, collect_key, &k, &cur);
	while (!rc && cur && !k.oom);
	if (rc || k.oom)
		reply_status(c, rc ? rc : ENOMEM);
	else
		collect_reply(c, &k);
	collect_free(&k);
}

/* ---- the SCAN family (cmd.h) ---- */

/* SCAN's cursor as Redis 7.0 reads it (parseScanCursorOrReply): strtoul
 * in base 10 up to the first NUL, no leading blank; "" is 0, and a
 * negative one wraps. 0, or -1 if it is not a cursor. */
static int scan_cursor(const char *s, uint64_t *cur)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	*cur = (uint64_t)v;
	return isspace((unsigned char)s[0]) || *end || errno == ERANGE ? -1
	                                                                 : 0;
}

/* A larger COUNT asks for no more: the store's bound of 10 x COUNT
 * buckets a call must not wrap around. */
#define SCAN_MOST (1LL << 32)

/* The enum pmkv_type argv[i] names (TYPE's names, any case), or -1. */
static int type_named(struct cmd_ctx *c, size_t i)
{
	for (int t = 0; t <= PMKV_T_MAX; t++)
		if (resp_arg_is(c->q, i, type_names[t]))
			return t;
	return -1;
}

enum { SCAN_NOTINT = 1, SCAN_SYNTAX };

/* The options from argv[at] on (scanGenericCommand's loop): MATCH and
 * COUNT, each with its argument, in any order, the last one counting;
 * TYPE too where type is not NULL (*type the enum pmkv_type it names; a
 * name of none gives PMKV_T_MAX + 1, which no key has: the scan goes on
 * and returns none, as Redis 7.0's does). 0, or the first error:
 * SCAN_NOTINT or SCAN_SYNTAX. */
static int scan_options(struct cmd_ctx *c, size_t at, struct scan_opts *o,
                        int *type)
{
	for (size_t i = at; i < c->q->argc; i += 2) {
		if (i + 1 >= c->q->argc)
			return SCAN_SYNTAX;
		if (resp_arg_is(c->q, i, "match")) {
			o->pat = arg(c, i + 1), o->pn = len(c, i + 1);
			if (o->pn == 1 && o->pat[0] == '*')
				o->pat = NULL; /* every one (glob.c G1) */
		} else if (resp_arg_is(c->q, i, "count")) {
			if (resp_arg_ll(c->q, i + 1, &o->count))
				return SCAN_NOTINT;
			if (o->count < 1)
				return SCAN_SYNTAX;
		} else if (!type || !resp_arg_is(c->q, i, "type")) {
			return SCAN_SYNTAX;
		} else if ((*type = type_named(c, i + 1)) < 0) {
			*type = PMKV_T_MAX + 1;
		}
	}
	return 0;
}

void scan_page(struct cmd_ctx *c, uint64_t next, struct collect *k)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)next);
	resp_add_array(c->out, 2);
	resp_add_bulk(c->out, buf, (size_t)n);
	if (k)
		collect_reply(c, k);
	else
		resp_add_array(c->out, 0);
}

int scan_args(struct cmd_ctx *c, scan_card_fn card, uint64_t *cur,
              struct scan_opts *o)
{
	uint64_t n = 0;
	*o = (struct scan_opts){NULL, 0, 10};
	if (scan_cursor(arg(c, 2), cur)) {
		resp_add_error(c->out, "ERR invalid cursor");
		return -1;
	}
	int why = scan_options(c, 3, o, NULL), rc;
	if (!why)
		return 0;
	if ((rc = card(c->srv->store, arg(c, 1), len(c, 1), &n)))
		reply_status(c, rc);
	else if (!n)
		scan_page(c, 0, NULL);
	else if (why == SCAN_NOTINT)
		not_integer(c);
	else
		syntax_error(c);
	return -1;
}

void scan_pair(void *arg, const void *a, size_t an, const void *b,
               size_t bn)
{
	struct scan_pairs *p = arg;
	if (p->pat && !glob_match(p->pat, p->pn, a, an, 0))
		return;
	collect_key(&p->k, a, an);
	collect_key(&p->k, b, bn);
}

static void cmd_scan(struct cmd_ctx *c)
{
	struct collect k = {0};
	struct scan_opts o = {NULL, 0, 10};
	uint64_t cur, next;
	int type = -1, why;
	if (scan_cursor(arg(c, 1), &cur))
		return resp_add_error(c->out, "ERR invalid cursor");
	if ((why = scan_options(c, 2, &o, &type)))
		return why == SCAN_NOTINT ? not_integer(c) : syntax_error(c);
	k.pat = o.pat, k.pn = o.pn;
	int rc = pmkv_scan_type(c->srv->store, cur,
	                        (uint64_t)(o.count > SCAN_MOST ? SCAN_MOST
	                                                       : o.count),
	                        type, collect_key, &k, &next);
	if (rc || k.oom) {
		collect_free(&k);
		return reply_status(c, rc ? rc : ENOMEM);
	}
	scan_page(c, next, &k);
	collect_free(&k);
}

/* ---- arguments the types' commands share (cmd.h) ---- */

int count_arg(struct cmd_ctx *c, size_t i, long long min, const char *msg,
              long long *v)
{
	if (!resp_arg_ll(c->q, i, v) && *v >= min)
		return 0;
	resp_add_error(c->out, "%s", msg);
	return -1;
}

struct pmkv_key *args_keys(struct cmd_ctx *c, size_t from, size_t n)
{
	struct pmkv_key *k = calloc(n ? n : 1, sizeof(*k));
	for (size_t i = 0; k && i < n; i++)
		k[i] = (struct pmkv_key){arg(c, from + i), len(c, from + i)};
	return k;
}

size_t mpop_args(struct cmd_ctx *c, const char *const where[2], int *which,
                 uint64_t *count)
{
	long long nk, n = -1;
	size_t argc = c->q->argc;
	if (count_arg(c, 1, 1, "ERR numkeys should be greater than 0", &nk))
		return 0;
	if ((unsigned long long)nk >= argc - 2)
		return syntax_error(c), 0;
	size_t at = 2 + (size_t)nk;
	*which = resp_arg_is(c->q, at, where[1]);
	if (!*which && !resp_arg_is(c->q, at, where[0]))
		return syntax_error(c), 0;
	for (size_t j = at + 1; j < argc; j++) {
		if (n != -1 || !resp_arg_is(c->q, j, "count") || j + 1 >= argc)
			return syntax_error(c), 0;
		if (count_arg(c, ++j, 1, "ERR count should be greater than 0",
		              &n))
			return 0;
	}
	*count = n < 0 ? 1 : (uint64_t)n;
	return (size_t)nk;
}

static void cmd_command(struct cmd_ctx *c);

/* ---- the table ---- */

/* Names are lower-case letters only (is_name). */
static const struct command commands[] = {
	{"get", 2, cmd_get, "readonly fast", 1, 1, 1, 1},
	{"set", -3, cmd_set, "write denyoom", 1, 1, 1, 1},
	{"del", -2, cmd_del, "write", 1, -1, 1, 1},
	{"exists", -2, cmd_exists, "readonly fast", 1, -1, 1, 1},
	{"mget", -2, cmd_mget, "readonly fast", 1, -1, 1, 1},
	{"mset", -3, cmd_mset, "write denyoom", 1, -1, 2, 1},
	{"incr", 2, cmd_incr, "write denyoom fast", 1, 1, 1, 1},
	{"decr", 2, cmd_decr, "write denyoom fast", 1, 1, 1, 1},
	{"incrby", 3, cmd_incrby, "write denyoom fast", 1, 1, 1, 1},
	{"decrby", 3, cmd_decrby, "write denyoom fast", 1, 1, 1, 1},
	{"append", 3, cmd_append, "write denyoom fast", 1, 1, 1, 1},
	{"incrbyfloat", 3, cmd_incrbyfloat, "write denyoom fast", 1, 1, 1, 1},
	{"setrange", 4, cmd_setrange, "write denyoom", 1, 1, 1, 1},
	{"strlen", 2, cmd_strlen, "readonly fast", 1, 1, 1, 1},
	{"ttl", 2, cmd_ttl, "readonly fast", 1, 1, 1, 1},
	{"pttl", 2, cmd_pttl, "readonly fast", 1, 1, 1, 1},
	{"setnx", 3, cmd_setnx, "write denyoom fast", 1, 1, 1, 1},
	{"setex", 4, cmd_setex, "write denyoom", 1, 1, 1, 1},
	{"psetex", 4, cmd_psetex, "write denyoom", 1, 1, 1, 1},
	{"getset", 3, cmd_getset, "write denyoom fast", 1, 1, 1, 1},
	{"getdel", 2, cmd_getdel, "write fast", 1, 1, 1, 1},
	{"getex", -2, cmd_getex, "write fast", 1, 1, 1, 1},
	{"msetnx", -3, cmd_msetnx, "write denyoom", 1, -1, 2, 1},
	{"expire", -3, cmd_expire, "write fast", 1, 1, 1, 1},
	{"pexpire", -3, cmd_pexpire, "write fast", 1, 1, 1, 1},
	{"expireat", -3, cmd_expireat, "write fast", 1, 1, 1, 1},
	{"pexpireat", -3, cmd_pexpireat, "write fast", 1, 1, 1, 1},
	{"persist", 2, cmd_persist, "write fast", 1, 1, 1, 1},
	{"expiretime", 2, cmd_expiretime, "readonly fast", 1, 1, 1, 1},
	{"pexpiretime", 2, cmd_pexpiretime, "readonly fast", 1, 1, 1, 1},
	{"type", 2, cmd_type, "readonly fast", 1, 1, 1, 1},
	{"rename", 3, cmd_rename, "write", 1, 2, 1, 1},
	{"renamenx", 3, cmd_renamenx, "write fast", 1, 2, 1, 1},
	{"unlink", -2, cmd_del, "write fast", 1, -1, 1, 1},
	{"touch", -2, cmd_exists, "readonly fast", 1, -1, 1, 1},
	{"getrange", 4, cmd_getrange, "readonly", 1, 1, 1, 1},
	{"substr", 4, cmd_getrange, "readonly", 1, 1, 1, 1},
	{"dbsize", 1, cmd_dbsize, "readonly fast", 0, 0, 0, 1},
	{"flushall", -1, cmd_flushall, "write", 0, 0, 0, 0},
	{"flushdb", -1, cmd_flushdb, "write", 0, 0, 0, 0},
	{"swapdb", 3, cmd_swapdb, "write fast", 0, 0, 0, 0},
	{"move", 3, cmd_move, "write fast", 1, 1, 1, 1},
	{"keys", 2, cmd_keys, "readonly", 0, 0, 0, 0},
	{"scan", -2, cmd_scan, "readonly", 0, 0, 0, 0},
	{"ping", -1, cmd_ping, "fast", 0, 0, 0, 1},
	{"echo", 2, cmd_echo, "fast", 0, 0, 0, 1},
	{"info", -1, cmd_info, "loading stale", 0, 0, 0, 0},
	{"command", -1, cmd_command, "loading stale", 0, 0, 0, 0},
	{"select", 2, cmd_select, "loading stale fast", 0, 0, 0, 0},
	{"quit", -1, cmd_quit, "fast", 0, 0, 0, 0},
	{"shutdown", -1, cmd_shutdown, "admin loading stale", 0, 0, 0, 0},
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};

/* Every table, each ended by a NULL name. */
static const struct command *const tables[] = {
	commands, pmkv_cmds_hash, pmkv_cmds_list, pmkv_cmds_set,
	pmkv_cmds_zset, pmkv_cmds_multi, pmkv_cmds_pubsub,
	pmkv_cmds_script, pmkv_cmds_server, pmkv_cmds_keys,
};
#define NTABLES (sizeof(tables) / sizeof(*tables))

/* Every command in one array, and an index of them by name (open
 * addressing over a hash of the letters with bit 5 set: is_name's
 * folding), built once. */
#define INDEX_SIZE 1024u
static const struct command *all[INDEX_SIZE / 2];
static size_t nall;
static const struct command *index_of[INDEX_SIZE];
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static uint32_t name_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)(s[i] | 0x20)) * 16777619u;
	return h;
}

static void index_build(void)
{
	for (size_t t = 0; t < NTABLES; t++)
		for (const struct command *k = tables[t]; k->name; k++) {
			uint32_t h = name_hash(k->name, strlen(k->name));
			while (index_of[h % INDEX_SIZE])
				h++;
			index_of[h % INDEX_SIZE] = k;
			if (nall < INDEX_SIZE / 2)
				all[nall++] = k;
		}
}

/* Does s[0..n) spell name, a table name, in any case? For a lower-case
 * letter L, (c | 0x20) == L holds exactly when c is L or its upper case:
 * setting bit 5 maps only 'A'..'Z' onto 'a'..'z'. strncasecmp measured
 * 3 % of a pipelined SET's time, for four lookups a request. */
static int is_name(const char *name, const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && name[i] && (s[i] | 0x20) == name[i])
		i++;
	return i == n && !name[n];
}

static const struct command *lookup(const char *name, size_t n)
{
	pthread_once(&index_once, index_build);
	for (uint32_t h = name_hash(name, n);; h++) {
		const struct command *k = index_of[h % INDEX_SIZE];
		if (!k || is_name(k->name, name, n))
			return k;
	}
}

/* COMMAND's entry for one command (Redis 6's six fields). */
static void command_entry(struct resp_out *o, const struct command *k)
{
	char buf[64];
	resp_add_array(o, 6);
	resp_add_bulk(o, k->name, strlen(k->name));
	resp_add_int(o, k->arity);
	size_t nf = 0;
	for (const char *p = k->flags; *p; p++)
		nf += p == k->flags || p[-1] == ' ';
	resp_add_array(o, (long long)nf);
	for (const char *p = k->flags; *p;) {
		size_t n = strcspn(p, " ");
		snprintf(buf, sizeof(buf), "%.*s", (int)n, p);
		resp_add_simple(o, buf);
		p += n + (p[n] == ' ');
	}
	resp_add_int(o, k->first);
	resp_add_int(o, k->last);
	resp_add_int(o, k->step);
}

static void cmd_command(struct cmd_ctx *c)
{
	if (c->q->argc == 1) {
		pthread_once(&index_once, index_build);
		resp_add_array(c->out, (long long)nall);
		for (size_t i = 0; i < nall; i++)
			command_entry(c->out, all[i]);
	} else if (resp_arg_is(c->q, 1, "count")) {
		pthread_once(&index_once, index_build);
		resp_add_int(c->out, (long long)nall);
	} else if (resp_arg_is(c->q, 1, "info")) {
		resp_add_array(c->out, (long long)c->q->argc - 2);
		for (size_t i = 2; i < c->q->argc; i++) {
			const struct command *k = lookup(arg(c, i), len(c, i));
			if (k)
				command_entry(c->out, k);
			else
				resp_add_null(c->out);
		}
	} else {
		/* DOCS too: pmkv has no documentation to give, and redis-cli,
		 * refused it, takes its own (its help and hints); an empty
		 * reply would leave it none */
		resp_add_error(c->out, "ERR unknown subcommand '%.128s'. Try "
		               "COMMAND HELP.", arg(c, 1));
	}
}

/* Redis 7.0's text for a command it does not know (processCommand):
 * arguments quoted while the list is shorter than 128 bytes, each cut to
 * what is left of them, and all read as C strings (up to a NUL).
 * resp_add_error turns CR and LF into spaces, as rejectCommandFormat. */
static void unknown(struct cmd_ctx *c)
{
	char args[160] = ""; /* 128, then at most 3 more a quoted argument */
	size_t at = 0;
	for (size_t i = 1; i < c->q->argc && at < 128; i++) {
		int n = snprintf(args + at, sizeof(args) - at, "'%.*s' ",
		                 (int)(128 - at), arg(c, i));
		if (n < 0)
			break;
		at += (size_t)n;
	}
	resp_add_error(c->out, "ERR unknown command '%.128s', with args "
	               "beginning with: %s", arg(c, 0), args);
}

/* COMMAND's "write" flag: the command changes the store. */
static int is_write(const struct command *k)
{
	return k && !strncmp(k->flags, "write", 5);
}

#define HINT_READS 4 /* reads a look-ahead passes over before it stops */

/* A request the hints look ahead to: a write with a key (COMMAND's
 * "write" flag, and a first argument). */
static int hinted(const char *const *argv, const size_t *argl, long argc)
{
	return argc >= 2 && is_write(lookup(argv[0], argl[0]));
}

/* The next hinted request from h->at on (a whole multibulk one; up to
 * HINT_READS others are passed over): its key's bucket hinted, its token
 * in *tok; 0, and no more hints, otherwise. Reads are not hinted: they
 * run with plain loads (store.c S2) and measured slower with hints
 * (docs/results/pmkv-hint-2026-11-26 in git's history, before d144efc). */
static int hint_peek(struct server *srv, struct cmd_hints *h, const char *in,
                     size_t n, uint64_t *tok)
{
	const char *argv[2];
	size_t argl[2], used;
	for (unsigned skip = 0; h->more; skip++) {
		if (skip > HINT_READS)
			return h->more = 0;
		long argc = resp_peek_args(in + h->at, n - h->at, &srv->cfg.lim,
		                           2, argv, argl, &used);
		if (argc < 0)
			return h->more = 0;
		h->at += used;
		if (hinted(argv, argl, argc)) {
			*tok = pmkv_hint(srv->store, argv[1], argl[1]);
			return 1;
		}
	}
	return 0;
}

void cmd_hint_begin(struct server *srv, struct cmd_hints *h, const char *in,
                    size_t n)
{
	uint64_t t[3] = {0, 0, 0};
	unsigned k = 0;
	*h = (struct cmd_hints){0, 0, pmkv_hinting(srv->store)};
	while (k < 3 && hint_peek(srv, h, in, n, &t[k]))
		k++;
	for (unsigned i = 0; i < k && i < 2; i++)
		pmkv_hint_more(srv->store, t[i]);
	h->tok = t[2];
	h->more = k == 3;
}

void cmd_hint_next(struct server *srv, struct cmd_hints *h,
                   const struct resp_req *ran, const char *in, size_t n)
{
	if (!h->more ||
	    !hinted((const char *const *)ran->argv, ran->argl, (long)ran->argc))
		return;
	pmkv_hint_more(srv->store, h->tok);
	hint_peek(srv, h, in, n, &h->tok);
}

int cmd_grouped(const struct resp_req *q)
{
	const struct command *k = lookup(q->argv[0], q->argl[0]);
	return k && k->grouped;
}

int cmd_writes(const struct resp_req *q)
{
	return is_write(lookup(q->argv[0], q->argl[0]));
}

#define EVICT_TRIES 8 /* evictions a refused write may wait for */

/* Run the command; a write refused for want of room runs again after
 * the maxmemory-policy evicted keys (store.c S16), its refusal taken
 * back; at most EVICT_TRIES times, each evicting twice as many. Not in
 * a group: there the request runs again alone (conn.c N5). */
static void run_evicting(struct cmd_ctx *c, const struct command *k)
{
	int policy = atomic_load(&c->srv->cfg.maxmemory_policy);
	size_t mark = c->out->n;
	for (unsigned tries = 0;; tries++) {
		uint64_t evicted = 0;
		c->refused = 0;
		k->fn(c);
		if (!c->refused || !policy || c->in_group ||
		    tries == EVICT_TRIES || !strstr(k->flags, "denyoom") ||
		    pmkv_evict(c->srv->store, policy, 16u << tries, &evicted) ||
		    !evicted)
			return;
		atomic_fetch_add(&c->srv->evicted, evicted);
		c->out->n = mark; /* the refusal taken back */
	}
}

void cmd_dispatch(struct cmd_ctx *c)
{
	const struct command *k = lookup(arg(c, 0), len(c, 0));
	long long argc = (long long)c->q->argc;
	if (!k) /* EVAL_RO and EVALSHA_RO: the index matches letters only */
		k = script_command(arg(c, 0), len(c, 0));
	c->nested = c->cmd != NULL; /* EXEC's ctx: its own entry set */
	c->srv->commands++;
	if (!k) {
		if (c->sess && c->sess->multi)
			c->sess->multi_dirty = 1; /* multi.c M1 */
		return unknown(c);
	}
	c->cmd = k;
	if (c->sess && !c->nested) /* CLIENT LIST's cmd (cmd_server.c) */
		atomic_store_explicit(&c->sess->last_cmd, k,
		                      memory_order_relaxed);
	if ((k->arity > 0 && argc != k->arity) ||
	    (k->arity < 0 && argc < -k->arity)) {
		if (c->sess && c->sess->multi)
			c->sess->multi_dirty = 1; /* multi.c M1 */
		if (!strcmp(k->name, "exec") && c->sess)
			return multi_abort(c, "wrong number of arguments for "
			                   "'exec' command");
		return wrong_args(c);
	}
	if (c->sess && c->sess->unauthed && session_refused(c, k))
		return; /* cmd_server.c SV3: NOAUTH */
	if (c->sess && c->sess->subscribed && !c->nested &&
	    pubsub_refuses(c, k)) /* pubsub.c: RESP2's subscribed context */
		return;
	if (script_refuses(c)) /* script.c X3: a script runs; BUSY */
		return;
	if (c->sess && c->sess->multi && !multi_passes(k)) {
		if (multi_queue(c))
			resp_add_error(c->out, "ERR out of memory");
		return;
	}
	if (c->sess)
		pmkv_select(c->srv->store, c->sess->db); /* store.c S15 */
	run_evicting(c, k);
	/* a blocked command wrote nothing (yet) */
	if (is_write(k) && !(c->sess && c->sess->blocked)) {
		if (c->sess) /* multi.c M3 */
			multi_touch(c, k->fn == cmd_flushall ? 2
			               : k->fn == cmd_flushdb ||
			                 k->fn == cmd_swapdb);
		blocked_signal(c); /* blocking.c B2 */
	}
	if (!c->nested) /* B3: after EXEC or EVAL as a whole */
		blocked_serve(c);
}
