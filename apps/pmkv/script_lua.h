/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * script_lua.h - the Lua side of scripting (script_lua.c, script_lib.c):
 * one Lua 5.1 state set up as Redis 7.0 sets up its own, the scripts
 * compiled in it by SHA1, and the conversions between Lua values and
 * RESP. It knows nothing of the store: a running script reaches the
 * server through struct svm_host (script.c).
 */
#ifndef PMKV_SCRIPT_LUA_H
#define PMKV_SCRIPT_LUA_H

#include <stddef.h>

#include <lua.h>
#include <lauxlib.h>

#include "resp.h"

/* script_lib.c */
void script_sha1hex(char out[41], const void *data, size_t n);
extern const luaL_Reg script_bit_funcs[];
int script_math_random(lua_State *L);
int script_math_randomseed(lua_State *L);

/* A script's flags (its "#!lua flags=..." line). */
enum {
	SVM_SHEBANG = 1,   /* it has one: not Redis's EVAL compatibility mode */
	SVM_NO_WRITES = 2, /* flags=no-writes */
};

/* What a running script calls back. */
struct svm_host {
	/* Run the command q (arguments NUL-terminated): NULL and its reply
	 * in out (empty before), or the error the script gets instead, as
	 * Redis words it ("Unknown Redis command called from script"). */
	const char *(*call)(void *arg, struct resp_req *q,
	                    struct resp_out *out);
	/* 1 if a command of that name exists (redis.acl_check_cmd). */
	int (*known)(void *arg, const char *name, size_t n);
	/* Every SVM_HOOK_COUNT instructions: NULL to go on, or the error
	 * the script is stopped with (SCRIPT KILL, a stopping server). */
	const char *(*interrupt)(void *arg);
	void *arg;
};
#define SVM_HOOK_COUNT 100000

/* KEYS and ARGV. */
struct svm_args {
	char **keys, **args;
	size_t *keyl, *argl;
	size_t nkeys, nargs;
};

struct svm;

/* A new state (0), or ENOMEM. */
int svm_open(struct svm **out);
void svm_close(struct svm *e);
/* The script named sha (40 lower-case hex digits): 1 and its flags, or
 * 0 if it is not there. */
int svm_find(struct svm *e, const char *sha, unsigned *flags);
/* Compile body under its name sha: 0 and its flags, or -1 and Redis's
 * error reply in err (without the '-'). */
int svm_load(struct svm *e, const char *sha, const char *body, size_t n,
             unsigned *flags, char *err, size_t errlen);
/* Run the script sha (svm_find found it): its reply, or its error as
 * Redis formats it, appended to out. */
void svm_run(struct svm *e, const char *sha, const struct svm_args *a,
             const struct svm_host *h, struct resp_out *out);

#endif
