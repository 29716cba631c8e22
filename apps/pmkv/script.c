/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * script.c - EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (Redis 7.0):
 * Lua scripts (script_lua.c) whose every redis.call is a command run in
 * one store group, so that a script is one pmtx transaction: after a
 * crash all of it is there or none of it.
 *
 * DESIGN
 * Volatile only: the Lua state and the scripts compiled in it (gone at a
 * restart, as Redis's script cache), and the state of the running
 * script. Nothing of a script is persistent before its group's commit.
 * One Lua state and one running script for the process, as in Redis:
 * that state lives here (struct server is not this file's to extend).
 *
 * Invariants
 *  X1. A script runs in one store group (store.c S8): pmkv_group_begin
 *      before its first instruction, pmkv_group_end after its last, both
 *      inside EVAL, so its reply (in the client's output, not sent before
 *      EVAL returns) goes out after that commit (cmd.c C1). Each
 *      redis.call runs its command through cmd_dispatch in the group, on
 *      a session of the script's own (a copy of the caller's: its
 *      database; never MULTI), and its reply is read back as Lua
 *      values. A command's own mistake (S13) is its reply and the group
 *      goes on; a script that fails after writes commits them, as Redis
 *      keeps them. A failure that breaks the group (no room, a failed
 *      disk) aborts it: the reply is that error alone and nothing of the
 *      script stays (Redis keeps the writes before the failure). Inside
 *      EXEC a script joins EXEC's group (multi.c M2), and EXEC's commit
 *      is its commit.
 *  X2. One script at a time. Locks, in this order: the gate (X3), the
 *      store lock (from the group's begin to its end), the vm lock (the
 *      Lua state, held while the script runs). SCRIPT LOAD, EXISTS and
 *      FLUSH take the vm lock alone. A script inside EXEC holds the
 *      store lock already: it neither waits for the gate nor closes it.
 *  X3. Busy scripts. pmkv_script_on is set while a script runs, under
 *      the store lock. Every other client's command waits in cmd_dispatch
 *      (script_check) until the script ends, or until it has run for
 *      lua-time-limit ($PMKV_LUA_TIME_LIMIT ms, 5000 by default as in
 *      Redis; 0: never busy): from then on it is answered BUSY but for
 *      the commands Redis allows (SCRIPT KILL, SHUTDOWN NOSAVE, MULTI,
 *      DISCARD, UNWATCH, QUIT, RESET, HELLO, AUTH); EXEC is EXECABORT.
 *      WATCH is BUSY too: it would read the store, which the script
 *      holds (Redis answers it). A group commit's leader (group.c)
 *      passes the gate instead of taking the store lock while a script
 *      starts or runs: its connections' requests then run one by one
 *      and meet that wait. A script closes the gate, then waits for the
 *      leaders that passed it just before (s.entering) to have their
 *      group, so that no group sleeps on the store lock through a
 *      script. The server's active expiry (server.c), which runs in the
 *      accepting thread, passes the same gate, so that connections are
 *      still accepted (and answered BUSY) while a script runs. What
 *      remains: a single command that passed the check just before a
 *      script took the store lock waits for its end instead of being
 *      answered BUSY; with --io-threads, the other connections of the
 *      event loop that runs a script wait for its end (Redis's one
 *      thread answers them BUSY).
 *  X4. SCRIPT KILL stops a running script that has called no write
 *      command (at its next hook: every SVM_HOOK_COUNT instructions,
 *      then every line, so that pcall cannot catch it); one that has is
 *      UNKILLABLE, as in Redis. SHUTDOWN NOSAVE while a script is busy,
 *      and a server stopping under a script that wrote, end the process
 *      without committing the script: recovery at the next start rolls
 *      its transaction back, as Redis loses its writes. A stopping
 *      server kills a script that has not written.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "script.h"
#include "script_lua.h"

#define BUSY_ERR "BUSY Redis is busy running a script. You can only call " \
	"SCRIPT KILL or SHUTDOWN NOSAVE."
#define KILLED "Script killed by user with SCRIPT KILL..."
#define DRAIN_MS 1000 /* the longest a script waits for leaders (X3) */

_Atomic int pmkv_script_on;

static struct {
	pthread_mutex_t m;  /* busy, and the waits on cv */
	pthread_cond_t cv;  /* on, busy or the gate changed */
	int busy;           /* under m: the script is past its time limit */
	_Atomic int gate;   /* X3: a script starts or runs (changed under m) */
	_Atomic unsigned entering; /* leaders past the gate, before the lock */
	_Atomic int kill;   /* SCRIPT KILL asked (1), and logged (2) */
	_Atomic int dirty;  /* the script called a write command */
	int64_t start_ms;   /* when it began (monotonic) */
	int64_t limit_ms;   /* lua-time-limit */
	pthread_mutex_t vm_lock;
	struct svm *vm;     /* under vm_lock; NULL until first needed */
} s = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0,
       0, -1, PTHREAD_MUTEX_INITIALIZER, NULL};

/* The thread runs a script: its commands pass the check. */
static _Thread_local int in_script;

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t time_limit(void)
{
	if (s.limit_ms < 0) {
		const char *v = getenv("PMKV_LUA_TIME_LIMIT");
		long long ms = v && *v ? atoll(v) : 5000;
		s.limit_ms = ms > 0 ? ms : 0;
	}
	return s.limit_ms;
}

/* ---- the busy check and the gate (X3) ---- */

static const struct subcommand *script_sub(struct cmd_ctx *c, int *arity_ok);

/* Commands Redis runs while a script is busy (COMMAND's allow_busy), and
 * SCRIPT's whose reply is an error of its arguments, which Redis gives
 * before BUSY. */
static int allowed_busy(struct cmd_ctx *c)
{
	static const char *const ok[] = {"multi", "discard", "unwatch", "quit",
	                                 "reset", "hello", "auth"};
	int arity_ok;
	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++)
		if (!strcmp(c->cmd->name, ok[i]))
			return 1;
	if (strcmp(c->cmd->name, "script"))
		return 0;
	const struct subcommand *sub = script_sub(c, &arity_ok);
	return !sub || !arity_ok || !strcmp(sub->name, "kill");
}

/* X4: the process ends; the script's transaction is never committed. */
static void abandon(const char *why)
{
	fprintf(stderr, "pmkv: %s while a script runs: exiting without "
	        "committing the script (recovery rolls it back)\n", why);
	_exit(0);
}

static int shutdown_nosave(struct cmd_ctx *c)
{
	for (size_t i = 1; i < c->q->argc; i++)
		if (resp_arg_is(c->q, i, "nosave"))
			return 1;
	return 0;
}

int script_check(struct cmd_ctx *c)
{
	if (in_script)
		return 0;
	pthread_mutex_lock(&s.m);
	while (atomic_load(&pmkv_script_on) && !s.busy)
		pthread_cond_wait(&s.cv, &s.m);
	int busy = atomic_load(&pmkv_script_on);
	pthread_mutex_unlock(&s.m);
	if (!busy || allowed_busy(c))
		return 0;
	if (!strcmp(c->cmd->name, "shutdown") && shutdown_nosave(c))
		abandon("SHUTDOWN NOSAVE");
	if (!strcmp(c->cmd->name, "exec") && c->sess) {
		multi_abort(c, BUSY_ERR);
		return 1;
	}
	if (c->sess && c->sess->multi)
		c->sess->multi_dirty = 1; /* Redis's flagTransaction */
	resp_add_error(c->out, "%s", BUSY_ERR);
	return 1;
}

int script_enter(void)
{
	atomic_fetch_add(&s.entering, 1);
	if (!atomic_load(&s.gate))
		return 1;
	atomic_fetch_sub(&s.entering, 1);
	return 0;
}

void script_leave(void)
{
	atomic_fetch_sub(&s.entering, 1);
}

int script_group_begin(struct server *srv)
{
	if (!script_enter())
		return SCRIPT_GROUP_SCRIPT;
	int rc = pmkv_group_begin(srv->store);
	script_leave();
	return rc ? SCRIPT_GROUP_FAILED : SCRIPT_GROUP_BEGUN;
}

/* Close the gate (one script at a time), then wait for the leaders that
 * passed it before to have their group (X3). */
static void gate_close(void)
{
	pthread_mutex_lock(&s.m);
	while (atomic_load(&s.gate))
		pthread_cond_wait(&s.cv, &s.m);
	atomic_store(&s.gate, 1);
	pthread_mutex_unlock(&s.m);
	int64_t until = mono_ms() + DRAIN_MS;
	while (atomic_load(&s.entering) && mono_ms() < until)
		sched_yield();
}

static void gate_open(void)
{
	pthread_mutex_lock(&s.m);
	atomic_store(&s.gate, 0);
	pthread_cond_broadcast(&s.cv);
	pthread_mutex_unlock(&s.m);
}

/* The running script's state, set and cleared under the store lock. */
static void running(int on)
{
	pthread_mutex_lock(&s.m);
	s.busy = 0;
	atomic_store(&s.kill, 0);
	atomic_store(&s.dirty, 0);
	s.start_ms = mono_ms();
	atomic_store(&pmkv_script_on, on);
	pthread_cond_broadcast(&s.cv);
	pthread_mutex_unlock(&s.m);
}

static void set_busy(void)
{
	pthread_mutex_lock(&s.m);
	s.busy = 1;
	pthread_cond_broadcast(&s.cv);
	pthread_mutex_unlock(&s.m);
}

/* ---- what a running script calls (struct svm_host) ---- */

/* What COMMAND says of a command, as a script needs it. */
struct cmd_facts {
	int known, arity, write, noscript;
};

/* Redis's commands that a script may not call (COMMAND's "noscript",
 * and the containers all of whose subcommands have it). */
static int redis_noscript(const char *name)
{
	static const char *const no[] = {
		"auth", "bgrewriteaof", "bgsave", "blmove", "blpop", "brpop",
		"brpoplpush", "bzpopmax", "bzpopmin", "debug", "discard", "eval",
		"eval_ro", "evalsha", "evalsha_ro", "exec", "failover", "fcall",
		"fcall_ro", "hello", "monitor", "multi", "psubscribe", "psync",
		"punsubscribe", "quit", "replconf", "replicaof", "reset", "role",
		"save", "shutdown", "slaveof", "ssubscribe", "subscribe",
		"sunsubscribe", "sync", "unsubscribe", "unwatch", "wait", "watch",
		"client", "config", "script", "function", "module", "latency",
		"acl"};
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++)
		if (!strcmp(name, no[i]))
			return 1;
	return 0;
}

static int has_flag(const char *flags, size_t n, const char *flag)
{
	size_t fl = strlen(flag);
	for (size_t i = 0; i + fl <= n; i++)
		if (!memcmp(flags + i, flag, fl) && (i == 0 || flags[i - 1] == ' ') &&
		    (i + fl == n || flags[i + fl] == ' '))
			return 1;
	return 0;
}

/* One line of a reply: its text after the type byte, up to CR. */
static const char *reply_line(const char *p, const char *end, long long *v)
{
	const char *nl = memchr(p, '\r', (size_t)(end - p));
	if (!nl)
		return NULL;
	*v = strtoll(p + 1, NULL, 10);
	return nl + 2;
}

/* The facts from COMMAND INFO's reply to one name (the first three
 * fields of the entry: name, arity, flags). */
static void parse_facts(const char *p, const char *end, struct cmd_facts *f)
{
	long long n, len;
	char flags[256];
	size_t fn = 0;
	memset(f, 0, sizeof(*f));
	if (!(p = reply_line(p, end, &n)) || p >= end || *p != '*')
		return; /* "*1", then the entry or a null */
	if (!(p = reply_line(p, end, &n)) || n < 3 || *p != '$')
		return;
	if (!(p = reply_line(p, end, &len)) || len < 0) /* the name */
		return;
	p += len + 2;
	if (p >= end || *p != ':')
		return;
	p = reply_line(p, end, &n);
	f->known = 1;
	f->arity = (int)n;
	if (!p || *p != '*' || !(p = reply_line(p, end, &n)))
		return;
	for (long long i = 0; i < n && p && *p == '+'; i++) {
		const char *nl = memchr(p, '\r', (size_t)(end - p));
		size_t k = nl ? (size_t)(nl - p - 1) : 0;
		if (fn + k + 1 < sizeof(flags)) {
			memcpy(flags + fn, p + 1, k);
			fn += k;
			flags[fn++] = ' ';
		}
		p = nl ? nl + 2 : NULL;
	}
	f->write = has_flag(flags, fn ? fn - 1 : 0, "write");
	f->noscript = has_flag(flags, fn ? fn - 1 : 0, "noscript");
}

/* A running script's context (the svm_host's arg). */
struct run {
	struct cmd_ctx *c;    /* the EVAL's */
	struct session sess;  /* the script's own (X1) */
	int readonly;         /* EVAL_RO, or a no-writes script */
	struct resp_out tmp;  /* COMMAND INFO's replies */
};

/* What COMMAND INFO says of the command name (NUL-terminated). */
static void facts_of(struct run *r, const char *name, struct cmd_facts *f)
{
	char *argv[3] = {"command", "info", (char *)name};
	size_t argl[3] = {7, 4, strlen(name)};
	struct resp_req q;
	memset(&q, 0, sizeof(q));
	q.argc = 3, q.argv = argv, q.argl = argl;
	struct cmd_ctx x = {.srv = r->c->srv, .cmd = r->c->cmd, .sess = &r->sess,
	                    .q = &q, .out = &r->tmp, .in_group = 1};
	resp_out_reset(&r->tmp);
	cmd_dispatch(&x);
	parse_facts(r->tmp.p, r->tmp.p + r->tmp.n, f);
}

/* The facts of the names met so far (the table never changes while the
 * server runs), under vm_lock: open addressing, names shorter than
 * FACT_NAME only, and none added once it is full. */
#define FACTS 256
#define FACT_NAME 32
static struct fact {
	char name[FACT_NAME];
	struct cmd_facts f;
} facts[FACTS];

static struct fact *fact_slot(const char *name, size_t n)
{
	uint32_t h = 2166136261u;
	if (n >= FACT_NAME)
		return NULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)name[i]) * 16777619u;
	for (unsigned k = 0; k < FACTS; k++) {
		struct fact *x = &facts[(h + k) % FACTS];
		if (!x->name[0] || !strcmp(x->name, name))
			return x;
	}
	return NULL;
}

/* The command's facts, its name looked up in lower case. */
static void lookup(struct run *r, const char *cmd, size_t n,
                   struct cmd_facts *f)
{
	char name[64];
	memset(f, 0, sizeof(*f));
	if (n == 0 || n >= sizeof(name) || memchr(cmd, 0, n))
		return;
	for (size_t i = 0; i < n; i++)
		name[i] = (char)tolower((unsigned char)cmd[i]);
	name[n] = 0;
	struct fact *x = fact_slot(name, n);
	if (x && x->name[0]) {
		*f = x->f;
		return;
	}
	const struct command *mine = script_command(name, n);
	if (mine)
		*f = (struct cmd_facts){1, mine->arity, 0, 1};
	else
		facts_of(r, name, f);
	if (redis_noscript(name)) /* refused, whether pmkv has it or not */
		f->noscript = 1, f->known = 1, f->arity = f->arity ? f->arity : -1;
	if (x) {
		memcpy(x->name, name, n + 1);
		x->f = *f;
	}
}

static const char *host_call(void *arg, struct resp_req *q,
                             struct resp_out *out)
{
	struct run *r = arg;
	struct cmd_facts f;
	long long argc = (long long)q->argc;
	lookup(r, q->argv[0], q->argl[0], &f);
	if (!f.known)
		return "Unknown Redis command called from script";
	if ((f.arity > 0 && argc != f.arity) || argc < -f.arity)
		return "Wrong number of args calling Redis command from script";
	if (f.noscript)
		return "This Redis command is not allowed from script";
	if (f.write && r->readonly)
		return "Write commands are not allowed from read-only scripts.";
	if (f.write)
		atomic_store(&s.dirty, 1);
	/* in_group: the group's failure is the script's (X1), the command
	 * does not run again alone */
	struct cmd_ctx x = {.srv = r->c->srv, .cmd = r->c->cmd, .sess = &r->sess,
	                    .q = q, .out = out, .in_group = 1};
	cmd_dispatch(&x);
	return NULL;
}

static int host_known(void *arg, const char *name, size_t n)
{
	struct cmd_facts f;
	lookup(arg, name, n, &f);
	return f.known;
}

static const char *host_interrupt(void *arg)
{
	struct run *r = arg;
	int kill = atomic_load(&s.kill);
	if (kill) {
		if (kill == 1) /* said once, though the hook runs on */
			fprintf(stderr, "pmkv: Lua script killed by user with "
			        "SCRIPT KILL.\n");
		atomic_store(&s.kill, 2);
		return KILLED;
	}
	if (r->c->srv->stopping) {
		if (atomic_load(&s.dirty))
			abandon("the server stopping");
		return "Script killed: the server is shutting down";
	}
	int64_t limit = time_limit();
	if (limit > 0 && !s.busy && mono_ms() - s.start_ms >= limit)
		set_busy();
	return NULL;
}

/* ---- EVAL ---- */

/* The Lua state, opened when first needed (vm_lock held): 0 or ENOMEM. */
static int vm_ready(void)
{
	return s.vm ? 0 : svm_open(&s.vm);
}

/* The script sha: found or compiled from the body (EVAL), with its
 * flags; 0, or -1 after replying the error. */
static int script_ready(struct cmd_ctx *c, const char *sha, int evalsha,
                        unsigned *flags)
{
	char err[512];
	if (vm_ready()) {
		resp_add_error(c->out, "ERR out of memory");
		return -1;
	}
	if (svm_find(s.vm, sha, flags))
		return 0;
	if (evalsha) {
		resp_add_error(c->out, "NOSCRIPT No matching script. Please use "
		               "EVAL.");
		return -1;
	}
	if (svm_load(s.vm, sha, arg(c, 1), len(c, 1), flags, err,
	             sizeof(err))) {
		resp_add_error(c->out, "%s", err);
		return -1;
	}
	return 0;
}

/* The script's session: the caller's database, no MULTI, no WATCH. */
static void script_session(struct cmd_ctx *c, struct session *out)
{
	if (c->sess)
		memcpy(out, c->sess, sizeof(*out));
	else
		memset(out, 0, sizeof(*out));
	out->multi = out->multi_dirty = 0;
	atomic_store(&out->watch_dirty, 0);
	out->nwatch = 0;
	out->queue = NULL;
	out->nqueued = out->capqueued = 0;
}

/* Run the script (vm_lock and the store lock held): its reply in c->out. */
static void run_locked(struct cmd_ctx *c, const char *sha, int evalsha,
                       int ro, size_t numkeys)
{
	unsigned flags;
	if (script_ready(c, sha, evalsha, &flags))
		return;
	if (ro && (flags & SVM_SHEBANG) && !(flags & SVM_NO_WRITES))
		return resp_add_error(c->out, "ERR Can not execute a script "
		                      "with write flag using *_ro command.");
	struct run r = {.c = c, .readonly = ro || (flags & SVM_NO_WRITES)};
	struct svm_args a = {c->q->argv + 3, c->q->argv + 3 + numkeys,
	                     c->q->argl + 3, c->q->argl + 3 + numkeys,
	                     numkeys, c->q->argc - 3 - numkeys};
	struct svm_host h = {host_call, host_known, host_interrupt, &r};
	script_session(c, &r.sess);
	resp_out_init(&r.tmp);
	running(1);
	in_script = 1;
	svm_run(s.vm, sha, &a, &h, c->out);
	in_script = 0;
	running(0);
	resp_out_free(&r.tmp);
}

/* Inside EXEC (multi.c: the queue runs with MULTI over and the queue
 * still there), this thread's group is open: the script joins it. */
static int in_exec(struct cmd_ctx *c)
{
	return c->sess && !c->sess->multi && c->sess->nqueued > 0;
}

/* X1, X2: the script in its group, or in EXEC's: pmkv_group_begin says
 * PMTX_E_INVAL when this thread's group is open already. */
static void run_script(struct cmd_ctx *c, const char *sha, int evalsha,
                       int ro, size_t numkeys)
{
	int gated = !in_exec(c), own = 1;
	size_t mark = c->out->n;
	if (gated)
		gate_close();
	int rc = pmkv_group_begin(c->srv->store);
	if (rc == PMTX_E_INVAL) /* EXEC's group: its commit is ours */
		rc = 0, own = 0;
	if (!rc) {
		pthread_mutex_lock(&s.vm_lock);
		run_locked(c, sha, evalsha, ro, numkeys);
		pthread_mutex_unlock(&s.vm_lock);
		if (own)
			rc = pmkv_group_end(c->srv->store);
	}
	if (gated)
		gate_open();
	if (rc) { /* X1: nothing of it stays, and only the error is said */
		c->out->n = mark;
		reply_status(c, rc);
	}
}

static void eval_generic(struct cmd_ctx *c, int evalsha, int ro)
{
	long long numkeys;
	char sha[41];
	if (evalsha && len(c, 1) != 40)
		return resp_add_error(c->out, "NOSCRIPT No matching script. "
		                      "Please use EVAL.");
	if (resp_arg_ll(c->q, 2, &numkeys))
		return not_integer(c);
	if (numkeys > (long long)c->q->argc - 3)
		return resp_add_error(c->out, "ERR Number of keys can't be "
		                      "greater than number of args");
	if (numkeys < 0)
		return resp_add_error(c->out, "ERR Number of keys can't be "
		                      "negative");
	if (evalsha) {
		for (int i = 0; i < 40; i++)
			sha[i] = (char)tolower((unsigned char)arg(c, 1)[i]);
		sha[40] = 0;
	} else {
		script_sha1hex(sha, arg(c, 1), len(c, 1));
	}
	run_script(c, sha, evalsha, ro, (size_t)numkeys);
}

static void cmd_eval(struct cmd_ctx *c)
{
	eval_generic(c, 0, 0);
}

static void cmd_evalsha(struct cmd_ctx *c)
{
	eval_generic(c, 1, 0);
}

static void cmd_eval_ro(struct cmd_ctx *c)
{
	eval_generic(c, 0, 1);
}

static void cmd_evalsha_ro(struct cmd_ctx *c)
{
	eval_generic(c, 1, 1);
}

/* ---- SCRIPT ---- */

static const char *const script_help[] = {
	"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DEBUG (YES|SYNC|NO)",
	"    Set the debug mode for subsequent scripts executed.",
	"EXISTS <sha1> [<sha1> ...]",
	"    Return information about the existence of the scripts in the "
	"script cache.",
	"FLUSH [ASYNC|SYNC]",
	"    Flush the Lua scripts cache. Very dangerous on replicas.",
	"    When called without the optional mode argument, the behavior is "
	"determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the scripts cache.",
	"    * SYNC: Synchronously flush the scripts cache.",
	"KILL",
	"    Kill the currently executing Lua script.",
	"LOAD <script>",
	"    Load a script into the scripts cache without executing it.",
	"HELP",
	"    Prints this help.",
};

static void script_load(struct cmd_ctx *c)
{
	char sha[41], err[512];
	unsigned flags;
	int rc = 0;
	script_sha1hex(sha, arg(c, 2), len(c, 2));
	pthread_mutex_lock(&s.vm_lock);
	if (vm_ready())
		snprintf(err, sizeof(err), "ERR out of memory"), rc = -1;
	else if (!svm_find(s.vm, sha, &flags))
		rc = svm_load(s.vm, sha, arg(c, 2), len(c, 2), &flags, err,
		              sizeof(err));
	pthread_mutex_unlock(&s.vm_lock);
	if (rc)
		resp_add_error(c->out, "%s", err);
	else
		resp_add_bulk(c->out, sha, 40);
}

static void script_exists(struct cmd_ctx *c)
{
	unsigned flags;
	resp_add_array(c->out, (long long)c->q->argc - 2);
	pthread_mutex_lock(&s.vm_lock);
	for (size_t i = 2; i < c->q->argc; i++) {
		char sha[41];
		int found = 0;
		if (len(c, i) == 40 && s.vm) {
			for (int k = 0; k < 40; k++)
				sha[k] = (char)tolower((unsigned char)arg(c, i)[k]);
			found = svm_find(s.vm, sha, &flags);
		}
		resp_add_int(c->out, found);
	}
	pthread_mutex_unlock(&s.vm_lock);
}

/* Redis resets its Lua state: globals and all. */
static void script_flush(struct cmd_ctx *c)
{
	if (c->q->argc == 3 && !resp_arg_is(c->q, 2, "sync") &&
	    !resp_arg_is(c->q, 2, "async"))
		return resp_add_error(c->out, "ERR SCRIPT FLUSH only support "
		                      "SYNC|ASYNC option");
	if (c->q->argc > 3)
		return resp_add_error(c->out, "ERR SCRIPT FLUSH only support "
		                      "SYNC|ASYNC option");
	pthread_mutex_lock(&s.vm_lock);
	svm_close(s.vm);
	s.vm = NULL;
	pthread_mutex_unlock(&s.vm_lock);
	resp_add_simple(c->out, "OK");
}

/* X4 */
static void script_kill(struct cmd_ctx *c)
{
	pthread_mutex_lock(&s.m);
	int on = atomic_load(&pmkv_script_on), dirty = atomic_load(&s.dirty);
	if (on && !dirty)
		atomic_store(&s.kill, 1);
	pthread_mutex_unlock(&s.m);
	if (!on)
		return resp_add_error(c->out, "NOTBUSY No scripts in execution "
		                      "right now.");
	if (dirty)
		return resp_add_error(c->out, "UNKILLABLE Sorry the script "
		                      "already executed write commands against "
		                      "the dataset. You can either wait the script "
		                      "termination or kill the server in a hard way "
		                      "using the SHUTDOWN NOSAVE command.");
	resp_add_simple(c->out, "OK");
}

/* No debugger: SCRIPT DEBUG NO only. */
static void script_debug(struct cmd_ctx *c)
{
	if (resp_arg_is(c->q, 2, "no"))
		return resp_add_simple(c->out, "OK");
	if (resp_arg_is(c->q, 2, "yes") || resp_arg_is(c->q, 2, "sync"))
		return resp_add_error(c->out, "ERR pmkv has no Lua debugger");
	resp_add_error(c->out, "ERR Use SCRIPT DEBUG YES/SYNC/NO");
}

static void script_help_reply(struct cmd_ctx *c)
{
	size_t n = sizeof(script_help) / sizeof(*script_help);
	resp_add_array(c->out, (long long)n);
	for (size_t i = 0; i < n; i++)
		resp_add_simple(c->out, script_help[i]);
}

static const struct subcommand script_subs[] = {
	{"load", 3, script_load},     {"exists", -3, script_exists},
	{"flush", -2, script_flush},  {"kill", 2, script_kill},
	{"debug", 3, script_debug},   {"help", 2, script_help_reply},
};

/* SCRIPT's subcommand argv[1] names (NULL: none), and whether the
 * arguments' count is its arity. */
static const struct subcommand *script_sub(struct cmd_ctx *c, int *arity_ok)
{
	long long argc = (long long)c->q->argc;
	for (size_t i = 0; i < sizeof(script_subs) / sizeof(*script_subs); i++) {
		const struct subcommand *sub = &script_subs[i];
		if (!resp_arg_is(c->q, 1, sub->name))
			continue;
		*arity_ok = sub->arity > 0 ? argc == sub->arity
		                           : argc >= -sub->arity;
		return sub;
	}
	return NULL;
}

static void cmd_script(struct cmd_ctx *c)
{
	int arity_ok;
	const struct subcommand *sub = script_sub(c, &arity_ok);
	if (!sub)
		return resp_add_error(c->out, "ERR unknown subcommand '%.128s'. "
		                      "Try SCRIPT HELP.", arg(c, 1));
	if (!arity_ok)
		return resp_add_error(c->out, "ERR wrong number of arguments "
		                      "for 'script|%s' command", sub->name);
	sub->fn(c);
}

#define EVAL_FLAGS "noscript stale skip_monitor no_mandatory_keys movablekeys"

const struct command pmkv_cmds_script[] = {
	{"eval", -3, cmd_eval, EVAL_FLAGS, 0, 0, 0, 0},
	{"evalsha", -3, cmd_evalsha, EVAL_FLAGS, 0, 0, 0, 0},
	{"eval_ro", -3, cmd_eval_ro, "readonly " EVAL_FLAGS, 0, 0, 0, 0},
	{"evalsha_ro", -3, cmd_evalsha_ro, "readonly " EVAL_FLAGS, 0, 0, 0, 0},
	{"script", -2, cmd_script, "", 0, 0, 0, 0},
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};

const struct command *script_command(const char *name, size_t n)
{
	for (int i = 2; i < 4; i++) {
		const char *t = pmkv_cmds_script[i].name;
		if (strlen(t) == n && !strncasecmp(t, name, n))
			return &pmkv_cmds_script[i];
	}
	return NULL;
}
