/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * script_lua.c - the Lua 5.1 state of EVAL (script.c) as Redis 7.0 sets
 * up its own: the libraries it loads, the redis.* functions, the
 * protection of the globals, the scripts by SHA1, and the conversions of
 * values between Lua and RESP.
 *
 * DESIGN
 * Volatile only: one lua_State for the process (as Redis), used by one
 * thread at a time (script.c's vm lock). A script is compiled once into
 * a function kept in the registry under its SHA1, and runs with the
 * globals KEYS and ARGV set for the run.
 *
 * Invariants
 *  L1. The globals are protected as Redis 7.0.15 (Debian's) protects
 *      them: reading one that does not exist raises "Script attempted to
 *      access nonexistent global variable 'x'", and every write to the
 *      globals or to a library table (string, table, math, coroutine,
 *      bit, redis, the string metatable) raises "Attempt to modify a
 *      readonly table". Redis patches its Lua with read-only tables; the
 *      stock Lua 5.1 pmkv links has none, so each protected table is
 *      replaced by an empty proxy whose metatable reads through to it
 *      and refuses writes (every write to an empty table reaches
 *      __newindex), and the functions that go around metatables see
 *      through a proxy (rawget, next, pairs, ipairs, getmetatable) or
 *      refuse it (rawset, setmetatable, table.insert, table.remove,
 *      table.sort). What still differs: # and unpack of a proxy see
 *      nothing (as of those tables in Redis, which hold no array part),
 *      and table.foreach and the like see no entries.
 *  L2. Every entry from C into Lua is protected (lua_cpcall, lua_pcall):
 *      an error, a memory error too, becomes a reply, never a panic.
 *  L3. RESP to Lua (a command's reply, redis.call) and Lua to RESP (the
 *      script's result) follow Redis 7.0's redisProtocolToLuaType and
 *      luaReplyToRedisReply for RESP2: integer -> number, bulk ->
 *      string, nil bulk or array -> false, array -> table, status ->
 *      {ok=...}, error -> {err=...}; number -> integer (truncated; out of
 *      range -> the smallest 64-bit integer, as x86's conversion gives
 *      Redis), string -> bulk, true -> 1, false and nil -> nil bulk,
 *      table -> err / ok / double / big_number / verbatim_string / map
 *      / set in that order, else an array up to the first nil.
 *      redis.setresp(3) is refused: pmkv's commands speak RESP2 only.
 *  L4. A script's error reaches the client as Redis 7.0.15 words it:
 *      the error handler (Redis's __redis__err__handler) turns any error
 *      into a table with err, source and line, and the reply is
 *      "-<err> script: <sha>, on <source>:<line>.".
 */
#include <errno.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lualib.h>

#include "script_lua.h"

#define REDIS_VERSION "7.0.0" /* info.c's REDIS_COMPAT */
#define REDIS_VERSION_NUM 0x070000

struct svm {
	lua_State *L;
	const struct svm_host *host; /* the running script's, else NULL */
	/* redis.call's request, rebuilt for each call */
	char *buf;
	size_t bufcap;
	char **argv;
	size_t *argl, *off, argcap;
	struct resp_out reply; /* its reply */
	unsigned runs;         /* for the collector's steps */
};

/* Registry keys: their addresses. */
static char K_ENGINE, K_GLOBALS, K_RO, K_SCRIPTS, K_FLAGS, K_GMETA,
	K_STRMETA;

static const char RO_ERR[] = "Attempt to modify a readonly table";

static void reg_get(lua_State *L, void *key)
{
	lua_pushlightuserdata(L, key);
	lua_rawget(L, LUA_REGISTRYINDEX);
}

/* registry[key] = the value at the top (popped) */
static void reg_set(lua_State *L, void *key)
{
	lua_pushlightuserdata(L, key);
	lua_insert(L, -2);
	lua_rawset(L, LUA_REGISTRYINDEX);
}

static struct svm *engine(lua_State *L)
{
	reg_get(L, &K_ENGINE);
	struct svm *e = lua_touserdata(L, -1);
	lua_pop(L, 1);
	return e;
}

/* ---- errors as tables (Redis's luaPushErrorBuff) ---- */

/* The table {err = "<CODE> <message>"} for the text s: "-CODE message"
 * gives its code, anything else ERR; the message loses the CR and LF at
 * its ends. s is read as a C string, as Redis reads it. */
static void push_error(lua_State *L, const char *s)
{
	const char *code = "ERR", *msg = s;
	size_t cn = 3, mn;
	if (s[0] == '-') {
		const char *sp = strchr(s, ' ');
		if (!sp)
			msg = s + 1;
		else
			code = s + 1, cn = (size_t)(sp - s - 1), msg = sp + 1;
	}
	mn = strlen(msg);
	while (mn && (msg[0] == '\r' || msg[0] == '\n'))
		msg++, mn--;
	while (mn && (msg[mn - 1] == '\r' || msg[mn - 1] == '\n'))
		mn--;
	lua_newtable(L);
	lua_pushlstring(L, code, cn);
	lua_pushliteral(L, " ");
	lua_pushlstring(L, msg, mn);
	lua_concat(L, 3);
	lua_setfield(L, -2, "err");
}

/* The same, for an error a command gave (Redis marks these so that its
 * error statistics count them once). */
static void push_cmd_error(lua_State *L, const char *s)
{
	push_error(L, s);
	lua_pushboolean(L, 1);
	lua_setfield(L, -2, "ignore_error_stats_update");
}

static int raise(lua_State *L, const char *msg)
{
	push_error(L, msg);
	return lua_error(L);
}

/* ---- RESP to Lua (L3) ---- */

static long long line_ll(const char *p)
{
	return strtoll(p, NULL, 10);
}

/* Push the RESP2 value that begins at p (a whole reply that pmkv made,
 * ending before end); return where it ends. */
static const char *push_reply(lua_State *L, const char *p, const char *end)
{
	const char *nl = memchr(p, '\r', (size_t)(end - p)), *body = nl + 2;
	if (!lua_checkstack(L, 4))
		luaL_error(L, "reached lua stack limit");
	switch (*p) {
	case ':':
		lua_pushnumber(L, (lua_Number)line_ll(p + 1));
		return body;
	case '+':
		lua_newtable(L);
		lua_pushlstring(L, p + 1, (size_t)(nl - p - 1));
		lua_setfield(L, -2, "ok");
		return body;
	case '-':
		lua_pushlstring(L, p, (size_t)(nl - p)); /* a C string */
		push_cmd_error(L, lua_tostring(L, -1));
		lua_remove(L, -2);
		return body;
	case '$': {
		long long n = line_ll(p + 1);
		if (n < 0) {
			lua_pushboolean(L, 0);
			return body;
		}
		lua_pushlstring(L, body, (size_t)n);
		return body + n + 2;
	}
	default: { /* '*' */
		long long n = line_ll(p + 1);
		if (n < 0) {
			lua_pushboolean(L, 0);
			return body;
		}
		lua_newtable(L);
		for (long long j = 1; j <= n; j++) {
			body = push_reply(L, body, end);
			lua_rawseti(L, -2, (int)j);
		}
		return body;
	}
	}
}

/* ---- Lua to RESP (L3) ---- */

/* Redis's (long long) of a Lua number, as x86 converts: out of range
 * and NaN give the smallest 64-bit integer. */
static long long number_ll(lua_Number d)
{
	if (d >= -9223372036854775808.0 && d < 9223372036854775808.0)
		return (long long)d;
	return (-9223372036854775807LL - 1);
}

static void reply_value(lua_State *L, struct resp_out *o);

/* t[field] (raw) at the top if its type is type: 1, else nothing
 * pushed and 0. */
static int field_of(lua_State *L, const char *field, int type)
{
	lua_pushstring(L, field);
	lua_rawget(L, -2);
	if (lua_type(L, -1) == type)
		return 1;
	lua_pop(L, 1);
	return 0;
}

/* A double as Redis's addReplyDouble in RESP2: a bulk of %.17g. */
static void reply_double(struct resp_out *o, lua_Number d)
{
	char buf[64];
	int n = isinf(d) ? snprintf(buf, sizeof(buf), "%s", d > 0 ? "inf" : "-inf")
	                 : snprintf(buf, sizeof(buf), "%.17g", (double)d);
	resp_add_bulk(o, buf, (size_t)n);
}

/* A string with CR and LF made spaces, as a bulk (big numbers). */
static void reply_mapped(lua_State *L, struct resp_out *o)
{
	size_t n;
	const char *s = lua_tolstring(L, -1, &n);
	char *c = malloc(n ? n : 1);
	if (!c) {
		o->oom = 1;
		return;
	}
	for (size_t i = 0; i < n; i++)
		c[i] = s[i] == '\r' || s[i] == '\n' ? ' ' : s[i];
	resp_add_bulk(o, c, n);
	free(c);
}

/* The entries of the table at the top: count, then each as key and
 * value (pairs 1) or key alone (pairs 0). */
static void reply_entries(lua_State *L, struct resp_out *o, int pairs)
{
	long long n = 0;
	lua_pushnil(L);
	while (lua_next(L, -2))
		n++, lua_pop(L, 1);
	resp_add_array(o, pairs ? 2 * n : n);
	lua_pushnil(L);
	while (lua_next(L, -2)) {
		if (!pairs)
			lua_pop(L, 1);
		lua_pushvalue(L, -1 - pairs);
		reply_value(L, o); /* the key */
		if (pairs)
			reply_value(L, o); /* the value */
	}
}

/* The error table at the top as the client's error (luaReplyToRedisReply:
 * "-<err>"); with where (the script's own failure) " script: <sha>, on
 * <source>:<line>." after it, as luaCallFunction adds. */
static void reply_error_table(lua_State *L, struct resp_out *o,
                              const char *sha)
{
	const char *msg = "ERR unknown error", *src = NULL, *line = NULL;
	lua_getfield(L, -1, "err");
	if (lua_isstring(L, -1))
		msg = lua_tostring(L, -1);
	lua_getfield(L, -2, "source");
	if (lua_isstring(L, -1))
		src = lua_tostring(L, -1);
	lua_getfield(L, -3, "line");
	if (lua_isstring(L, -1))
		line = lua_tostring(L, -1);
	if (sha && src && line)
		resp_add_error(o, "%s script: %s, on %s:%s.", msg, sha, src, line);
	else
		resp_add_error(o, "%s", msg);
	lua_pop(L, 3);
}

/* The verbatim string {format=, string=} at the top, if it is one. */
static int reply_verbatim(lua_State *L, struct resp_out *o)
{
	if (!field_of(L, "verbatim_string", LUA_TTABLE))
		return 0;
	int done = field_of(L, "format", LUA_TSTRING);
	if (done) {
		lua_pop(L, 1);
		done = field_of(L, "string", LUA_TSTRING);
		if (done) {
			size_t n;
			const char *s = lua_tolstring(L, -1, &n);
			resp_add_bulk(o, s, n);
			lua_pop(L, 1);
		}
	}
	lua_pop(L, 1);
	return done;
}

/* A table: the first of Redis's special forms it has, else an array. */
static void reply_table(lua_State *L, struct resp_out *o)
{
	if (field_of(L, "err", LUA_TSTRING)) {
		lua_pop(L, 1);
		return reply_error_table(L, o, NULL);
	}
	if (field_of(L, "ok", LUA_TSTRING)) {
		resp_add_simple(o, lua_tostring(L, -1));
	} else if (field_of(L, "double", LUA_TNUMBER)) {
		reply_double(o, lua_tonumber(L, -1));
	} else if (field_of(L, "big_number", LUA_TSTRING)) {
		reply_mapped(L, o);
	} else if (reply_verbatim(L, o)) {
		return;
	} else if (field_of(L, "map", LUA_TTABLE)) {
		reply_entries(L, o, 1);
	} else if (field_of(L, "set", LUA_TTABLE)) {
		reply_entries(L, o, 0);
	} else {
		int n = 0;
		for (;; n++) {
			lua_rawgeti(L, -1, n + 1);
			int end = lua_isnil(L, -1);
			lua_pop(L, 1);
			if (end)
				break;
		}
		resp_add_array(o, n);
		for (int j = 1; j <= n; j++) {
			lua_rawgeti(L, -1, j);
			reply_value(L, o);
		}
		return;
	}
	lua_pop(L, 1);
}

/* The value at the top as a reply (popped). */
static void reply_value(lua_State *L, struct resp_out *o)
{
	size_t n;
	const char *s;
	if (!lua_checkstack(L, 4)) {
		resp_add_error(o, "ERR reached lua stack limit");
		lua_pop(L, 1);
		return;
	}
	switch (lua_type(L, -1)) {
	case LUA_TSTRING:
		s = lua_tolstring(L, -1, &n);
		resp_add_bulk(o, s, n);
		break;
	case LUA_TBOOLEAN:
		if (lua_toboolean(L, -1))
			resp_add_int(o, 1);
		else
			resp_add_null(o);
		break;
	case LUA_TNUMBER:
		resp_add_int(o, number_ll(lua_tonumber(L, -1)));
		break;
	case LUA_TTABLE:
		reply_table(L, o);
		break;
	default:
		resp_add_null(o);
	}
	lua_pop(L, 1);
}

/* ---- redis.call and redis.pcall ---- */

static int args_room(struct svm *e, size_t argc, size_t bytes)
{
	if (argc > e->argcap) {
		char **v = realloc(e->argv, argc * sizeof(*v));
		if (v)
			e->argv = v;
		size_t *l = realloc(e->argl, argc * sizeof(*l));
		if (l)
			e->argl = l;
		size_t *f = realloc(e->off, argc * sizeof(*f));
		if (f)
			e->off = f;
		if (!v || !l || !f)
			return -1;
		e->argcap = argc;
	}
	if (bytes > e->bufcap) {
		size_t cap = e->bufcap ? e->bufcap : 256;
		while (cap < bytes)
			cap *= 2;
		char *b = realloc(e->buf, cap);
		if (!b)
			return -1;
		e->buf = b, e->bufcap = cap;
	}
	return 0;
}

/* Argument j (a number as %.17g, as Redis formats it) into the buffer
 * at *at: 0, or -1 if it is neither a string nor a number. */
static int add_arg(lua_State *L, struct svm *e, int j, size_t *at)
{
	char num[64];
	size_t n;
	const char *s = num;
	if (lua_type(L, j) == LUA_TNUMBER)
		n = (size_t)snprintf(num, sizeof(num), "%.17g",
		                     (double)lua_tonumber(L, j));
	else if (!(s = lua_tolstring(L, j, &n)))
		return -1;
	if (args_room(e, (size_t)j, *at + n + 1))
		luaL_error(L, "not enough memory");
	memcpy(e->buf + *at, s, n);
	e->buf[*at + n] = 0;
	e->argl[j - 1] = n;
	e->off[j - 1] = *at;
	*at += n + 1;
	return 0;
}

/* The arguments on L's stack (all taken off it) as the request q, in
 * e's buffers (Redis's luaArgsToRedisArgv): 0, or -1 and the error table
 * pushed. */
static int get_args(lua_State *L, struct svm *e, struct resp_req *q)
{
	int argc = lua_gettop(L), j = 1;
	size_t at = 0;
	if (argc == 0) {
		push_error(L, "Please specify at least one argument for this "
		           "redis lib call");
		return -1;
	}
	while (j <= argc && !add_arg(L, e, j, &at))
		j++;
	lua_settop(L, 0);
	if (j <= argc) {
		push_error(L, "Lua redis lib command arguments must be strings "
		           "or integers");
		return -1;
	}
	for (int i = 0; i < argc; i++)
		e->argv[i] = e->buf + e->off[i];
	memset(q, 0, sizeof(*q));
	q->argc = (size_t)argc;
	q->argv = e->argv;
	q->argl = e->argl;
	return 0;
}

/* redis.call (raise 1) and redis.pcall (0): the command's reply as Lua
 * values; an error reply (at the top of it) raised by redis.call. */
static int redis_generic(lua_State *L, int raise_error)
{
	struct svm *e = engine(L);
	struct resp_req q;
	if (!e->host)
		return raise(L, "redis.call/pcall can only be called inside a "
		             "script invocation");
	if (get_args(L, e, &q))
		return raise_error ? lua_error(L) : 1;
	resp_out_reset(&e->reply);
	const char *err = e->host->call(e->host->arg, &q, &e->reply);
	if (!err && (e->reply.oom || !e->reply.n))
		err = e->reply.oom ? "out of memory" : "the command gave no reply";
	if (err) {
		push_cmd_error(L, err);
		return raise_error ? lua_error(L) : 1;
	}
	push_reply(L, e->reply.p, e->reply.p + e->reply.n);
	return raise_error && e->reply.p[0] == '-' ? lua_error(L) : 1;
}

static int r_call(lua_State *L)
{
	return redis_generic(L, 1);
}

static int r_pcall(lua_State *L)
{
	return redis_generic(L, 0);
}

/* ---- the other redis.* functions ---- */

static int r_sha1hex(lua_State *L)
{
	char hex[41];
	size_t n = 0;
	if (lua_gettop(L) != 1)
		return raise(L, "wrong number of arguments");
	const char *s = lua_tolstring(L, 1, &n);
	script_sha1hex(hex, s ? s : "", s ? n : 0);
	lua_pushstring(L, hex);
	return 1;
}

static int r_error_reply(lua_State *L)
{
	if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
		push_error(L, "wrong number or type of arguments");
		return 1;
	}
	const char *s = lua_tostring(L, -1);
	if (s[0] == '-') {
		push_error(L, s);
		return 1;
	}
	lua_pushfstring(L, "-%s", s);
	push_error(L, lua_tostring(L, -1));
	lua_remove(L, -2);
	return 1;
}

static int r_status_reply(lua_State *L)
{
	if (lua_gettop(L) != 1 || lua_type(L, -1) != LUA_TSTRING) {
		push_error(L, "wrong number or type of arguments");
		return 1;
	}
	lua_newtable(L);
	lua_pushvalue(L, 1);
	lua_setfield(L, -2, "ok");
	return 1;
}

/* redis.log(level, ...): to stderr at NOTICE and WARNING (Redis's
 * default verbosity hides DEBUG and VERBOSE), the arguments that are
 * strings or numbers joined by spaces (a space before each but the
 * first argument's place, as Redis joins them). */
static int r_log(lua_State *L)
{
	int argc = lua_gettop(L);
	luaL_Buffer b;
	if (argc < 2)
		return raise(L, "redis.log() requires two arguments or more.");
	if (!lua_isnumber(L, 1))
		return raise(L, "First argument must be a number (log level).");
	int level = (int)lua_tonumber(L, 1);
	if (level < 0 || level > 3)
		return raise(L, "Invalid debug level.");
	if (level < 2)
		return 0;
	luaL_buffinit(L, &b);
	for (int j = 2; j <= argc; j++) {
		size_t n;
		const char *s = lua_tolstring(L, j, &n);
		if (!s)
			continue;
		if (j != 2)
			luaL_addchar(&b, ' ');
		luaL_addlstring(&b, s, n);
	}
	luaL_pushresult(&b);
	fprintf(stderr, "pmkv: script log %c %s\n", ".-*#"[level],
	        lua_tostring(L, -1));
	return 0;
}

static int r_setresp(lua_State *L)
{
	if (lua_gettop(L) != 1)
		return raise(L, "redis.setresp() requires one argument.");
	int resp = (int)lua_tonumber(L, 1);
	if (resp != 2 && resp != 3)
		return raise(L, "RESP version must be 2 or 3.");
	if (resp == 3)
		return raise(L, "pmkv's scripts speak RESP2 only: "
		             "redis.setresp(3) is not supported");
	return 0;
}

static int r_set_repl(lua_State *L)
{
	if (lua_gettop(L) != 1)
		return raise(L, "redis.set_repl() requires two arguments.");
	if ((int)lua_tonumber(L, -1) & ~3)
		return raise(L, "Invalid replication flags. Use REPL_AOF, "
		             "REPL_REPLICA, REPL_ALL or REPL_NONE.");
	return 0; /* nothing to replicate */
}

/* No ACLs: any command that exists is allowed. */
static int r_acl_check_cmd(lua_State *L)
{
	struct svm *e = engine(L);
	struct resp_req q;
	if (!e->host)
		return raise(L, "redis.acl_check_cmd can only be called inside "
		             "a script invocation");
	if (get_args(L, e, &q))
		return lua_error(L);
	if (!e->host->known(e->host->arg, q.argv[0], q.argl[0]))
		return raise(L, "Invalid command passed to "
		             "redis.acl_check_cmd()");
	lua_pushboolean(L, 1);
	return 1;
}

static int r_breakpoint(lua_State *L)
{
	lua_pushboolean(L, 0); /* no debugger */
	return 1;
}

static int r_debug(lua_State *L)
{
	(void)L;
	return 0;
}

static int r_replicate_commands(lua_State *L)
{
	lua_pushboolean(L, 1);
	return 1;
}

static const luaL_Reg redis_funcs[] = {
	{"call", r_call},
	{"pcall", r_pcall},
	{"log", r_log},
	{"setresp", r_setresp},
	{"sha1hex", r_sha1hex},
	{"error_reply", r_error_reply},
	{"status_reply", r_status_reply},
	{"set_repl", r_set_repl},
	{"acl_check_cmd", r_acl_check_cmd},
	{"breakpoint", r_breakpoint},
	{"debug", r_debug},
	{"replicate_commands", r_replicate_commands},
	{NULL, NULL},
};

static void set_number(lua_State *L, const char *name, lua_Number v)
{
	lua_pushnumber(L, v);
	lua_setfield(L, -2, name);
}

static void register_redis(lua_State *L)
{
	static const char *const repl[] = {"REPL_NONE", "REPL_AOF",
	                                   "REPL_SLAVE", "REPL_REPLICA",
	                                   "REPL_ALL"};
	static const int replv[] = {0, 1, 2, 2, 3};
	lua_newtable(L);
	luaL_register(L, NULL, redis_funcs);
	set_number(L, "LOG_DEBUG", 0);
	set_number(L, "LOG_VERBOSE", 1);
	set_number(L, "LOG_NOTICE", 2);
	set_number(L, "LOG_WARNING", 3);
	for (int i = 0; i < 5; i++)
		set_number(L, repl[i], replv[i]);
	set_number(L, "REDIS_VERSION_NUM", REDIS_VERSION_NUM);
	lua_pushliteral(L, REDIS_VERSION);
	lua_setfield(L, -2, "REDIS_VERSION");
	lua_setglobal(L, "redis");
}

/* ---- the protection of the globals (L1) ---- */

/* If the value at i is a read-only proxy, push the table it stands for
 * and return 1; else push nothing and return 0. */
static int ro_real(lua_State *L, int i)
{
	if (!lua_istable(L, i))
		return 0;
	reg_get(L, &K_RO);
	lua_pushvalue(L, i);
	lua_rawget(L, -2);
	lua_remove(L, -2);
	if (!lua_isnil(L, -1))
		return 1;
	lua_pop(L, 1);
	return 0;
}

static int ro_is(lua_State *L, int i)
{
	int is = ro_real(L, i);
	if (is)
		lua_pop(L, 1);
	return is;
}

/* A write through a function: no position (Redis's lapi.c raises it). */
static int ro_refuse(lua_State *L)
{
	lua_pushstring(L, RO_ERR);
	return lua_error(L);
}

/* __newindex of a proxy: with the writer's position (lvm.c's). */
static int ro_newindex(lua_State *L)
{
	return luaL_error(L, "%s", RO_ERR);
}

/* __index of the globals' own table: Redis's luaProtectedTableError. */
static int ro_noglobal(lua_State *L)
{
	if (lua_gettop(L) != 2)
		luaL_error(L, "Wrong number of arguments to "
		           "luaProtectedTableError");
	if (!lua_isstring(L, -1) && !lua_isnumber(L, -1))
		luaL_error(L, "Second argument to luaProtectedTableError must "
		           "be a string or number");
	return luaL_error(L, "Script attempted to access nonexistent global "
	                  "variable '%s'", lua_tostring(L, -1));
}

/* Replace the table at the top by a read-only proxy of it. */
static void ro_proxy(lua_State *L)
{
	lua_newtable(L); /* the proxy */
	lua_newtable(L); /* its metatable */
	lua_pushvalue(L, -3);
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, ro_newindex);
	lua_setfield(L, -2, "__newindex");
	lua_setmetatable(L, -2);
	reg_get(L, &K_RO);
	lua_pushvalue(L, -2);
	lua_pushvalue(L, -4);
	lua_rawset(L, -3);
	lua_pop(L, 1);
	lua_remove(L, -2);
}

/* The table argument 1 names, a proxy seen through, at index 1. */
static void see_through(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	if (ro_real(L, 1))
		lua_replace(L, 1);
}

static int w_rawget(lua_State *L)
{
	see_through(L);
	luaL_checkany(L, 2);
	lua_settop(L, 2);
	lua_rawget(L, 1);
	return 1;
}

static int w_rawset(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	luaL_checkany(L, 2);
	luaL_checkany(L, 3);
	if (ro_is(L, 1))
		return ro_refuse(L);
	lua_settop(L, 3);
	lua_rawset(L, 1);
	return 1;
}

static int w_next(lua_State *L)
{
	see_through(L);
	lua_settop(L, 2);
	if (lua_next(L, 1))
		return 2;
	lua_pushnil(L);
	return 1;
}

/* pairs and ipairs keep the proxy as their state: the table behind it
 * never reaches the script. */
static int w_pairs(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_pushcfunction(L, w_next);
	lua_pushvalue(L, 1);
	lua_pushnil(L);
	return 3;
}

static int w_ipairs_step(lua_State *L)
{
	int i = luaL_checkint(L, 2) + 1;
	see_through(L);
	lua_pushinteger(L, i);
	lua_rawgeti(L, 1, i);
	return lua_isnil(L, -1) ? 0 : 2;
}

static int w_ipairs(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_pushcfunction(L, w_ipairs_step);
	lua_pushvalue(L, 1);
	lua_pushinteger(L, 0);
	return 3;
}

static int w_setmetatable(lua_State *L)
{
	int t = lua_type(L, 2);
	luaL_checktype(L, 1, LUA_TTABLE);
	luaL_argcheck(L, t == LUA_TNIL || t == LUA_TTABLE, 2,
	              "nil or table expected");
	if (luaL_getmetafield(L, 1, "__metatable"))
		luaL_error(L, "cannot change a protected metatable");
	if (ro_is(L, 1))
		return ro_refuse(L);
	lua_settop(L, 2);
	lua_setmetatable(L, 1);
	return 1;
}

/* getmetatable: a string's is a read-only view of the strings'; the
 * globals' a read-only view of theirs (its __index raises, as Redis's);
 * a library's none; the others' as Lua's own. */
static int w_getmetatable(lua_State *L)
{
	luaL_checkany(L, 1);
	if (lua_type(L, 1) == LUA_TSTRING) {
		reg_get(L, &K_STRMETA);
		return 1;
	}
	if (ro_is(L, 1)) {
		lua_pushvalue(L, LUA_GLOBALSINDEX);
		int globals = lua_rawequal(L, 1, -1);
		if (globals)
			reg_get(L, &K_GMETA);
		else
			lua_pushnil(L);
		return 1;
	}
	if (!lua_getmetatable(L, 1)) {
		lua_pushnil(L);
		return 1;
	}
	luaL_getmetafield(L, 1, "__metatable");
	return 1;
}

/* table.insert, table.remove, table.sort: refuse a proxy, else call the
 * library's function (upvalue 1). */
static int w_table_write(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	if (ro_is(L, 1))
		return ro_refuse(L);
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
	return lua_gettop(L);
}

/* Redis's pcall (luaRedisPcall): an error that is a table with an err
 * string is returned as that string. */
static int w_pcall(lua_State *L)
{
	int argc = lua_gettop(L);
	luaL_checkany(L, 1);
	lua_pushboolean(L, 1);
	lua_insert(L, 1);
	if (lua_pcall(L, argc - 1, LUA_MULTRET, 0)) {
		lua_remove(L, 1);
		if (lua_istable(L, -1)) {
			lua_getfield(L, -1, "err");
			if (lua_isstring(L, -1))
				lua_replace(L, -2);
		}
		lua_pushboolean(L, 0);
		lua_insert(L, 1);
	}
	return lua_gettop(L);
}

static void set_global_fn(lua_State *L, const char *name, lua_CFunction f)
{
	lua_pushcfunction(L, f);
	lua_setglobal(L, name);
}

/* The builtins Redis replaces or takes away, and the wrappers of L1. */
static void builtins(lua_State *L)
{
	static const char *const gone[] = {"dofile", "loadfile", "print",
	                                   "getfenv", "setfenv", "newproxy"};
	static const char *const writes[] = {"insert", "remove", "sort"};
	for (size_t i = 0; i < sizeof(gone) / sizeof(*gone); i++) {
		lua_pushnil(L);
		lua_setglobal(L, gone[i]);
	}
	set_global_fn(L, "pcall", w_pcall);
	set_global_fn(L, "rawget", w_rawget);
	set_global_fn(L, "rawset", w_rawset);
	set_global_fn(L, "next", w_next);
	set_global_fn(L, "pairs", w_pairs);
	set_global_fn(L, "ipairs", w_ipairs);
	set_global_fn(L, "setmetatable", w_setmetatable);
	set_global_fn(L, "getmetatable", w_getmetatable);
	lua_getglobal(L, "table");
	for (size_t i = 0; i < 3; i++) {
		lua_getfield(L, -1, writes[i]);
		lua_pushcclosure(L, w_table_write, 1);
		lua_setfield(L, -2, writes[i]);
	}
	lua_pop(L, 1);
	lua_getglobal(L, "math");
	lua_pushcfunction(L, script_math_random);
	lua_setfield(L, -2, "random");
	lua_pushcfunction(L, script_math_randomseed);
	lua_setfield(L, -2, "randomseed");
	lua_pop(L, 1);
}

/* Redis 7.0.15's error handler: every error becomes a table with err,
 * and where it happened (the caller of a C function that raised it). */
static const char ERR_HANDLER[] =
	"local dbg = debug\n"
	"function __redis__err__handler(err)\n"
	"  local i = dbg.getinfo(2,'nSl')\n"
	"  if i and i.what == 'C' then\n"
	"    i = dbg.getinfo(3,'nSl')\n"
	"  end\n"
	"  if type(err) ~= 'table' then\n"
	"    err = {err='ERR ' .. tostring(err)}\n"
	"  end\n"
	"  if i then\n"
	"    err['source'] = i.source\n"
	"    err['line'] = i.currentline\n"
	"  end\n"
	"  return err\n"
	"end\n";

static void err_handler(lua_State *L)
{
	if (luaL_loadbuffer(L, ERR_HANDLER, sizeof(ERR_HANDLER) - 1,
	                    "@err_handler_def"))
		lua_error(L);
	lua_call(L, 0, 0);
	lua_pushnil(L);
	lua_setglobal(L, "debug"); /* the handler keeps its own */
}

/* L1: the libraries and the globals behind read-only proxies; the
 * strings' metatable reads through the string proxy. */
static void protect(lua_State *L)
{
	static const char *const libs[] = {"string", "table", "math",
	                                   "coroutine", "bit", "redis"};
	lua_newtable(L);
	reg_set(L, &K_RO);
	for (size_t i = 0; i < sizeof(libs) / sizeof(*libs); i++) {
		lua_getglobal(L, libs[i]);
		ro_proxy(L);
		lua_setglobal(L, libs[i]);
	}
	lua_pushliteral(L, "");
	lua_getmetatable(L, -1);
	lua_getglobal(L, "string");
	lua_setfield(L, -2, "__index");
	ro_proxy(L);
	reg_set(L, &K_STRMETA);
	lua_pop(L, 1);
	lua_pushvalue(L, LUA_GLOBALSINDEX); /* the real globals */
	lua_pushvalue(L, -1);
	reg_set(L, &K_GLOBALS);
	lua_newtable(L);
	lua_pushcfunction(L, ro_noglobal);
	lua_setfield(L, -2, "__index");
	lua_pushvalue(L, -1);
	ro_proxy(L);
	reg_set(L, &K_GMETA);
	lua_setmetatable(L, -2);
	ro_proxy(L);             /* the globals' proxy */
	lua_pushvalue(L, -1);
	lua_setfield(L, LUA_GLOBALSINDEX, "_G");
	lua_replace(L, LUA_GLOBALSINDEX);
}

static int setup_p(lua_State *L)
{
	static const luaL_Reg libs[] = {
		{"", luaopen_base},
		{LUA_TABLIBNAME, luaopen_table},
		{LUA_STRLIBNAME, luaopen_string},
		{LUA_MATHLIBNAME, luaopen_math},
		{LUA_DBLIBNAME, luaopen_debug},
	};
	struct svm *e = lua_touserdata(L, 1);
	lua_settop(L, 0);
	lua_pushlightuserdata(L, e);
	reg_set(L, &K_ENGINE);
	for (size_t i = 0; i < sizeof(libs) / sizeof(*libs); i++) {
		lua_pushcfunction(L, libs[i].func);
		lua_pushstring(L, libs[i].name);
		lua_call(L, 1, 0);
	}
	luaL_register(L, "bit", script_bit_funcs);
	lua_pop(L, 1);
	builtins(L);
	register_redis(L);
	err_handler(L);
	protect(L);
	lua_newtable(L);
	reg_set(L, &K_SCRIPTS);
	lua_newtable(L);
	reg_set(L, &K_FLAGS);
	return 0;
}

int svm_open(struct svm **out)
{
	struct svm *e = calloc(1, sizeof(*e));
	if (!e)
		return ENOMEM;
	resp_out_init(&e->reply);
	e->L = luaL_newstate();
	if (!e->L || lua_cpcall(e->L, setup_p, e)) {
		svm_close(e);
		return ENOMEM;
	}
	*out = e;
	return 0;
}

void svm_close(struct svm *e)
{
	if (!e)
		return;
	if (e->L)
		lua_close(e->L);
	resp_out_free(&e->reply);
	free(e->buf);
	free(e->argv);
	free(e->argl);
	free(e->off);
	free(e);
}

/* ---- the scripts ---- */

struct find_arg {
	const char *sha;
	unsigned flags;
	int found;
};

static int find_p(lua_State *L)
{
	struct find_arg *a = lua_touserdata(L, 1);
	reg_get(L, &K_FLAGS);
	lua_pushlstring(L, a->sha, 40);
	lua_rawget(L, -2);
	a->found = lua_isnumber(L, -1);
	a->flags = (unsigned)lua_tonumber(L, -1);
	return 0;
}

int svm_find(struct svm *e, const char *sha, unsigned *flags)
{
	struct find_arg a = {sha, 0, 0};
	if (lua_cpcall(e->L, find_p, &a)) {
		lua_pop(e->L, 1);
		return 0;
	}
	*flags = a.flags;
	return a.found;
}

/* The words of the line s[0..n), split at white space (sdssplitargs,
 * without its quoting): their count, at most max. */
static int words(const char *s, size_t n, const char **w, size_t *wn,
                 int max)
{
	int k = 0;
	for (size_t i = 0; i < n && k < max;) {
		while (i < n && isspace((unsigned char)s[i]))
			i++;
		if (i == n)
			break;
		w[k] = s + i;
		while (i < n && !isspace((unsigned char)s[i]))
			i++;
		wn[k] = (size_t)(s + i - w[k]);
		k++;
	}
	return k;
}

/* The flags of "flags=a,b,c": 0, or -1 and the error in err. */
static int shebang_flags(const char *s, size_t n, unsigned *flags,
                         char *err, size_t errlen)
{
	static const char *const known[] = {"no-writes", "allow-oom",
	                                    "allow-stale", "no-cluster",
	                                    "allow-cross-slot-keys"};
	for (size_t i = 0; n && i <= n;) {
		size_t k = i;
		while (k < n && s[k] != ',')
			k++;
		size_t j = 0;
		while (j < 5 && (strlen(known[j]) != k - i ||
		                 memcmp(known[j], s + i, k - i)))
			j++;
		if (j == 5) {
			snprintf(err, errlen, "ERR Unexpected flag in script "
			         "shebang: %.*s", (int)(k - i), s + i);
			return -1;
		}
		if (j == 0)
			*flags |= SVM_NO_WRITES;
		i = k + 1;
	}
	return 0;
}

/* A "#!lua [flags=...]" first line (Redis 7.0's): 0 with *code where the
 * code begins (its newline, so that line numbers count the shebang) and
 * the flags, or -1 and the error in err. */
static int shebang(const char *body, size_t n, size_t *code,
                   unsigned *flags, char *err, size_t errlen)
{
	const char *w[16];
	size_t wn[16];
	*code = 0;
	*flags = 0;
	if (n < 2 || body[0] != '#' || body[1] != '!')
		return 0;
	const char *nl = memchr(body, '\n', n);
	int k = nl ? words(body, (size_t)(nl - body), w, wn, 16) : 0;
	if (!k) {
		snprintf(err, errlen, "ERR Invalid script shebang");
		return -1;
	}
	if (wn[0] != 5 || memcmp(w[0], "#!lua", 5)) {
		snprintf(err, errlen, "ERR Unexpected engine in script shebang: "
		         "%.*s", (int)wn[0], w[0]);
		return -1;
	}
	*flags = SVM_SHEBANG;
	for (int i = 1; i < k; i++) {
		if (wn[i] < 6 || memcmp(w[i], "flags=", 6)) {
			snprintf(err, errlen, "ERR Unknown lua shebang option: %.*s",
			         (int)wn[i], w[i]);
			return -1;
		}
		if (shebang_flags(w[i] + 6, wn[i] - 6, flags, err, errlen))
			return -1;
	}
	*code = (size_t)(nl - body);
	return 0;
}

struct load_arg {
	const char *sha, *code;
	size_t n;
	unsigned flags;
	char *err;
	size_t errlen;
	int rc;
};

static int load_p(lua_State *L)
{
	struct load_arg *a = lua_touserdata(L, 1);
	lua_settop(L, 0);
	if (luaL_loadbuffer(L, a->code, a->n, "@user_script")) {
		snprintf(a->err, a->errlen, "ERR Error compiling script (new "
		         "function): %s", lua_tostring(L, -1));
		a->rc = -1;
		return 0;
	}
	reg_get(L, &K_SCRIPTS);
	lua_pushlstring(L, a->sha, 40);
	lua_pushvalue(L, 1);
	lua_rawset(L, -3);
	reg_get(L, &K_FLAGS);
	lua_pushlstring(L, a->sha, 40);
	lua_pushnumber(L, a->flags);
	lua_rawset(L, -3);
	a->rc = 0;
	return 0;
}

int svm_load(struct svm *e, const char *sha, const char *body, size_t n,
             unsigned *flags, char *err, size_t errlen)
{
	size_t code;
	if (shebang(body, n, &code, flags, err, errlen))
		return -1;
	struct load_arg a = {sha, body + code, n - code, *flags, err, errlen,
	                     -1};
	if (lua_cpcall(e->L, load_p, &a)) {
		snprintf(err, errlen, "ERR %s", lua_tostring(e->L, -1));
		lua_pop(e->L, 1);
		return -1;
	}
	return a.rc;
}

/* ---- running a script ---- */

/* The count hook: stop the script when the host says so. From then on
 * the hook runs at every line, so that no pcall can keep the script
 * going (Redis's luaMaskCountHook). */
static void count_hook(lua_State *L, lua_Debug *ar)
{
	(void)ar;
	struct svm *e = engine(L);
	const char *why = e->host ? e->host->interrupt(e->host->arg) : NULL;
	if (!why)
		return;
	lua_sethook(L, count_hook, LUA_MASKLINE, 0);
	push_error(L, why);
	lua_error(L);
}

/* globals[name] = the strings v[0..n) as an array */
static void set_array(lua_State *L, int globals, const char *name,
                      char **v, const size_t *l, size_t n)
{
	lua_pushstring(L, name);
	lua_createtable(L, (int)n, 0);
	for (size_t i = 0; i < n; i++) {
		lua_pushlstring(L, v[i], l[i]);
		lua_rawseti(L, -2, (int)i + 1);
	}
	lua_rawset(L, globals);
}

struct run_arg {
	const char *sha;
	const struct svm_args *a;
	struct resp_out *out;
};

/* The script's failure (L4): its error table as the reply. */
static void reply_failure(lua_State *L, const char *sha,
                          struct resp_out *o)
{
	if (lua_istable(L, -1))
		return reply_error_table(L, o, sha);
	resp_add_error(o, "ERR Error running script %s, %.100s", sha,
	               lua_isstring(L, -1) ? lua_tostring(L, -1)
	                                   : "execution failure");
}

static int run_p(lua_State *L)
{
	struct run_arg *r = lua_touserdata(L, 1);
	lua_settop(L, 0);
	reg_get(L, &K_GLOBALS); /* 1 */
	set_array(L, 1, "KEYS", r->a->keys, r->a->keyl, r->a->nkeys);
	set_array(L, 1, "ARGV", r->a->args, r->a->argl, r->a->nargs);
	lua_getfield(L, 1, "__redis__err__handler"); /* 2 */
	reg_get(L, &K_SCRIPTS);
	lua_pushlstring(L, r->sha, 40);
	lua_rawget(L, -2);
	lua_remove(L, 3); /* 3: the script */
	lua_sethook(L, count_hook, LUA_MASKCOUNT, SVM_HOOK_COUNT);
	int err = lua_pcall(L, 0, 1, 2);
	lua_sethook(L, NULL, 0, 0);
	if (err)
		reply_failure(L, r->sha, r->out);
	else
		reply_value(L, r->out);
	return 0;
}

void svm_run(struct svm *e, const char *sha, const struct svm_args *a,
             const struct svm_host *h, struct resp_out *out)
{
	struct run_arg r = {sha, a, out};
	size_t mark = out->n;
	e->host = h;
	if (lua_cpcall(e->L, run_p, &r)) {
		out->n = mark;
		resp_add_error(out, "ERR %s", lua_isstring(e->L, -1)
		                                  ? lua_tostring(e->L, -1)
		                                  : "out of memory");
		lua_pop(e->L, 1);
	}
	e->host = NULL;
	if (++e->runs % 50 == 0) /* Redis: a step every 50 scripts */
		lua_gc(e->L, LUA_GCSTEP, 50);
}
