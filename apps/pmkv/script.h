/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * script.h - what the rest of the server sees of scripting (script.c):
 * the commands' table, the check every command passes while a script
 * runs (cmd.c's cmd_dispatch), and the gate a group commit's leader
 * passes before it takes the store lock (group.c).
 */
#ifndef PMKV_SCRIPT_H
#define PMKV_SCRIPT_H

#include <stdatomic.h>
#include <stddef.h>

#include "server.h"

struct command; /* cmd.h; its table pmkv_cmds_script[] is declared there */

/* The entry of EVAL_RO or EVALSHA_RO for the name s[0..n) in any case,
 * else NULL: cmd.c's index matches letters only. */
const struct command *script_command(const char *s, size_t n);

/* 1 while a script runs (script.c X3), read without a lock. */
extern _Atomic int pmkv_script_on;
int script_check(struct cmd_ctx *c);

/* For cmd_dispatch, before a command runs (c->cmd set): 0 to run it; 1
 * if it got its reply instead (BUSY). While a script runs, another
 * client's command waits here until the script ends or is busy. */
static inline int script_refuses(struct cmd_ctx *c)
{
	return atomic_load_explicit(&pmkv_script_on, memory_order_relaxed) &&
	       script_check(c);
}

/* For what takes the store lock outside a command (server.c's active
 * expiry): 1 if it may take it now, and then script_leave() once it
 * has; 0 while a script starts or runs (script.c X3). */
int script_enter(void);
void script_leave(void);

/* For a group commit's leader instead of pmkv_group_begin: */
enum {
	SCRIPT_GROUP_BEGUN,  /* the group is open */
	SCRIPT_GROUP_SCRIPT, /* a script starts or runs: no group; run the
	                      * requests one by one (they meet the check) */
	SCRIPT_GROUP_FAILED, /* pmkv_group_begin failed */
};
int script_group_begin(struct server *srv);

#endif
