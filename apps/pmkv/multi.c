/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multi.c - MULTI, EXEC, DISCARD, WATCH and UNWATCH: a client's queued
 * commands run as one pmtx transaction (the store's group, store.c S8),
 * so that after a crash all of them or none of them are there.
 *
 * DESIGN
 * Volatile only: a session's queue (copies of its requests) and the
 * server's list of watched keys. Nothing of a transaction is persistent
 * before EXEC's commit.
 *
 * Invariants
 *  M1. Between MULTI and EXEC or DISCARD, every command but EXEC,
 *      DISCARD, MULTI, WATCH, QUIT and RESET is queued, not run (Redis
 *      7.0's processCommand): it touches no store. An unknown command or
 *      a wrong number of arguments is answered at once and marks the
 *      transaction, which EXEC then refuses (EXECABORT) without running
 *      any of it.
 *  M2. EXEC runs the queue in one store group: under the store lock from
 *      the first command to the commit, so no other client's command runs
 *      between two of them, and the group's one commit makes every write
 *      of the transaction durable together, before any of its replies is
 *      sent (cmd.c C1). A command's own mistake (store.c S13) is its
 *      reply in the array, as in Redis, and the others still apply. A
 *      failure that breaks the group (no room, a failed disk) aborts the
 *      whole transaction: nothing of it is applied, and EXEC answers that
 *      error alone, not an array (Redis would have applied the commands
 *      before the failing one: pmkv never applies part of an EXEC).
 *  M3. WATCH: every command with the "write" flag that a client runs marks
 *      the sessions watching any of its keys (COMMAND's key positions),
 *      FLUSHALL every watching session, FLUSHDB those watching a key of
 *      its database, SWAPDB every one; a watched key that existed at
 *      WATCH and no longer does at EXEC (it expired) marks the session
 *      too. EXEC of a marked session runs nothing and answers a null
 *      array. A write marks even when it changed nothing (SETNX on a key
 *      that exists), and a write whose keys move (LMPOP, ZMPOP, EVAL: key
 *      positions 0) marks every argument as a key: more EXECs refused
 *      than Redis would refuse, never fewer. The marking happens after
 *      the command ran and before its reply is sent.
 *  M4. The watch list is guarded by its mutex; srv->nwatched, read
 *      without it, is zero only when no key is watched, so a write with
 *      no watcher anywhere costs one atomic load.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

/* One watched key of one session. */
struct watch {
	struct watch *next;
	struct session *sess;
	unsigned db;
	int existed; /* the key was live at WATCH (M3) */
	size_t kn;
	char k[];
};

static void queue_free(struct session *s)
{
	for (size_t i = 0; i < s->nqueued; i++)
		free(s->queue[i]);
	free(s->queue);
	s->queue = NULL;
	s->nqueued = s->capqueued = 0;
}

struct queued *queued_copy(const struct resp_req *q)
{
	size_t bytes = 0;
	for (size_t i = 0; i < q->argc; i++)
		bytes += q->argl[i] + 1;
	struct queued *r = malloc(sizeof(*r) + q->argc * (sizeof(size_t) +
	                          sizeof(char *)) + bytes);
	if (!r)
		return NULL;
	r->argc = q->argc;
	r->argl = (size_t *)(r + 1);
	r->argv = (char **)(r->argl + q->argc);
	char *p = (char *)(r->argv + q->argc);
	for (size_t i = 0; i < q->argc; i++) {
		r->argl[i] = q->argl[i];
		r->argv[i] = p;
		memcpy(p, q->argv[i], q->argl[i] + 1);
		p += q->argl[i] + 1;
	}
	return r;
}

int multi_queue(struct cmd_ctx *c)
{
	struct session *s = c->sess;
	if (s->nqueued == s->capqueued) {
		size_t cap = s->capqueued ? 2 * s->capqueued : 8;
		void *q = realloc(s->queue, cap * sizeof(*s->queue));
		if (!q)
			return -1;
		s->queue = q, s->capqueued = cap;
	}
	struct queued *r = queued_copy(c->q);
	if (!r)
		return -1;
	s->queue[s->nqueued++] = r;
	resp_add_simple(c->out, "QUEUED");
	return 0;
}

int multi_passes(const struct command *k)
{
	static const char *const pass[] = {"exec", "discard", "multi",
	                                   "watch", "quit", "reset"};
	for (size_t i = 0; i < sizeof(pass) / sizeof(*pass); i++)
		if (!strcmp(k->name, pass[i]))
			return 1;
	return 0;
}

/* ---- WATCH (M3, M4) ---- */

static void unwatch_all(struct server *srv, struct session *s)
{
	if (!s->nwatch)
		return;
	pthread_mutex_lock(&srv->wlock);
	for (struct watch **w = &srv->watched; *w;) {
		struct watch *x = *w;
		if (x->sess == s) {
			*w = x->next;
			free(x);
			atomic_fetch_sub(&srv->nwatched, 1);
		} else {
			w = &x->next;
		}
	}
	pthread_mutex_unlock(&srv->wlock);
	s->nwatch = 0;
	atomic_store(&s->watch_dirty, 0);
}

static void touch_key(struct server *srv, unsigned db, const char *k,
                      size_t kn)
{
	for (struct watch *w = srv->watched; w; w = w->next)
		if (w->db == db && w->kn == kn && !memcmp(w->k, k, kn))
			atomic_store(&w->sess->watch_dirty, 1);
}

void multi_touch(struct cmd_ctx *c, int all)
{
	struct server *srv = c->srv;
	const struct command *k = c->cmd;
	unsigned db = c->sess->db;
	if (!atomic_load(&srv->nwatched))
		return;
	pthread_mutex_lock(&srv->wlock);
	if (all) { /* 2: every database; 1: the client's (and SWAPDB's) */
		for (struct watch *w = srv->watched; w; w = w->next)
			if (all == 2 || w->db == db || !strcmp(k->name, "swapdb"))
				atomic_store(&w->sess->watch_dirty, 1);
	} else if (k->first == 0) { /* the keys move (LMPOP, EVAL): any
	                             * argument may be one (M3: never fewer) */
		for (size_t i = 1; i < c->q->argc; i++)
			touch_key(srv, db, arg(c, i), len(c, i));
	} else {
		size_t last = k->last < 0 ? c->q->argc + (size_t)k->last
		                          : (size_t)k->last;
		for (size_t i = (size_t)k->first;
		     i <= last && i < c->q->argc; i += (size_t)k->step)
			touch_key(srv, db, arg(c, i), len(c, i));
	}
	pthread_mutex_unlock(&srv->wlock);
}

static int watch_one(struct cmd_ctx *c, size_t i)
{
	struct pmkv_key key = {arg(c, i), len(c, i)};
	uint64_t n = 0;
	int rc = pmkv_exists(c->srv->store, &key, 1, &n);
	if (rc)
		return rc;
	struct watch *w = malloc(sizeof(*w) + key.n);
	if (!w)
		return ENOMEM;
	w->sess = c->sess;
	w->db = c->sess->db;
	w->existed = n != 0;
	w->kn = key.n;
	memcpy(w->k, key.p, key.n);
	pthread_mutex_lock(&c->srv->wlock);
	w->next = c->srv->watched;
	c->srv->watched = w;
	atomic_fetch_add(&c->srv->nwatched, 1);
	pthread_mutex_unlock(&c->srv->wlock);
	c->sess->nwatch++;
	return 0;
}

static void cmd_watch(struct cmd_ctx *c)
{
	if (c->sess->multi)
		return resp_add_error(c->out, "ERR WATCH inside MULTI is not "
		                      "allowed");
	for (size_t i = 1; i < c->q->argc; i++) {
		int rc = watch_one(c, i);
		if (rc)
			return reply_status(c, rc);
	}
	resp_add_simple(c->out, "OK");
}

static void cmd_unwatch(struct cmd_ctx *c)
{
	unwatch_all(c->srv, c->sess);
	resp_add_simple(c->out, "OK");
}

/* M3: a watched key that was live at WATCH and is not now. The session's
 * own entries are gathered under the lock (only its own thread frees
 * them), and looked up after it: the store lock is never taken while the
 * watch lock is held (a group holds the store lock and then marks). */
static int watched_gone(struct cmd_ctx *c)
{
	struct watch **mine = malloc(c->sess->nwatch * sizeof(*mine));
	size_t n = 0;
	int gone = 0;
	if (!mine)
		return 1; /* refuse the EXEC rather than miss a change */
	pthread_mutex_lock(&c->srv->wlock);
	for (struct watch *w = c->srv->watched; w; w = w->next)
		if (w->sess == c->sess && w->existed && n < c->sess->nwatch)
			mine[n++] = w;
	pthread_mutex_unlock(&c->srv->wlock);
	for (size_t i = 0; i < n && !gone; i++) {
		struct pmkv_key key = {mine[i]->k, mine[i]->kn};
		uint64_t live = 1;
		pmkv_select(c->srv->store, mine[i]->db);
		gone = pmkv_exists(c->srv->store, &key, 1, &live) || !live;
	}
	pmkv_select(c->srv->store, c->sess->db);
	free(mine);
	return gone;
}

/* ---- MULTI, EXEC, DISCARD ---- */

static void multi_end(struct cmd_ctx *c)
{
	queue_free(c->sess);
	c->sess->multi = c->sess->multi_dirty = 0;
	unwatch_all(c->srv, c->sess);
}

void multi_session_end(struct server *srv, struct session *s)
{
	queue_free(s);
	unwatch_all(srv, s);
}

void multi_abort(struct cmd_ctx *c, const char *why)
{
	if (c->sess->multi)
		multi_end(c);
	resp_add_error(c->out, "EXECABORT Transaction discarded because of: "
	               "%s", why);
}

static void cmd_multi(struct cmd_ctx *c)
{
	if (c->sess->multi)
		return resp_add_error(c->out, "ERR MULTI calls can not be "
		                      "nested");
	c->sess->multi = 1;
	resp_add_simple(c->out, "OK");
}

static void cmd_discard(struct cmd_ctx *c)
{
	if (!c->sess->multi)
		return resp_add_error(c->out, "ERR DISCARD without MULTI");
	multi_end(c);
	resp_add_simple(c->out, "OK");
}

/* Run the queue in the store's group (M2): 0 and its replies appended,
 * or the group's failure (the replies then taken back by the caller). */
static int exec_queue(struct cmd_ctx *c)
{
	struct session *s = c->sess;
	int rc = pmkv_group_begin(c->srv->store);
	if (rc)
		return rc;
	resp_add_array(c->out, (long long)s->nqueued);
	for (size_t i = 0; i < s->nqueued; i++) {
		struct resp_req q = *c->q;
		q.argc = s->queue[i]->argc;
		q.argv = s->queue[i]->argv;
		q.argl = s->queue[i]->argl;
		struct cmd_ctx x = *c;
		x.q = &q;
		cmd_dispatch(&x);
	}
	return pmkv_group_end(c->srv->store);
}

static void cmd_exec(struct cmd_ctx *c)
{
	struct session *s = c->sess;
	if (!s->multi)
		return resp_add_error(c->out, "ERR EXEC without MULTI");
	if (s->multi_dirty) {
		multi_end(c);
		return resp_add_error(c->out, "EXECABORT Transaction discarded "
		                      "because of previous errors.");
	}
	if (atomic_load(&s->watch_dirty) || (s->nwatch && watched_gone(c))) {
		multi_end(c);
		return resp_add_array(c->out, -1); /* a null array */
	}
	s->multi = 0; /* the queued commands run now (M1) */
	size_t mark = c->out->n;
	int rc = exec_queue(c);
	if (rc) { /* M2: nothing applied */
		c->out->n = mark;
		reply_status(c, rc);
	}
	multi_end(c);
}

const struct command pmkv_cmds_multi[] = {
	{"multi", 1, cmd_multi, "noscript loading stale fast", 0, 0, 0, 0},
	{"exec", 1, cmd_exec, "noscript loading stale skip_slowlog", 0, 0, 0,
	 0},
	{"discard", 1, cmd_discard, "noscript loading stale fast", 0, 0, 0,
	 0},
	{"watch", -2, cmd_watch, "noscript loading stale fast", 1, -1, 1, 0},
	{"unwatch", 1, cmd_unwatch, "noscript loading stale fast", 0, 0, 0,
	 0},
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};
