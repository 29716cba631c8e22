/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * blocking.c - blocked clients: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP,
 * BZPOPMIN, BZPOPMAX and BZMPOP wait for a key, and are served by the
 * thread whose write gave the key something, as Redis 7.0 serves them
 * (blocked.c's handleClientsBlockedOnKeys).
 *
 * DESIGN
 * Volatile only, as in Redis: a restart forgets every waiter. The
 * registry holds, for each key name with waiters (in any database), its
 * waiters in the order they blocked, under one mutex. A waiter is a copy
 * of its command (the request, the handler's attempt function) and its
 * state. A write's keys that have waiters are noted as ready, in the
 * order the writes name them, by the thread that ran it (a thread-local
 * list); after the command read from the client (EXEC and EVAL as a
 * whole) that thread serves them: for each ready key, each of its
 * waiters in order runs its attempt on that key alone, in a store group,
 * until the key has nothing left. A BLMOVE served makes its destination
 * ready in turn (a chain of BLMOVEs is served in the same turn). The
 * reply waits in the waiter until the group has committed; then the
 * waiter's connection is rung (mailbox.c) and takes it.
 *
 * Lock order: the store's lock (a group), then the registry's, then the
 * watch lock (multi.c) or a mailbox's eventfd.
 *
 * Invariants
 *  B1. A command blocks only after an attempt found nothing to pop, and
 *      the attempt and the registration run under one hold of the store
 *      lock (a group): a write that gives one of its keys something
 *      either ran before the attempt (which pops it) or after the
 *      registration (which its serve finds). No wake-up is lost.
 *  B2. Every write command marks its keys (COMMAND's key positions;
 *      every argument when they move; every waited key for SWAPDB) that
 *      have waiters as ready: a superset of Redis's signalKeyAsReady
 *      (which signals only a key's creation), so pmkv serves whenever
 *      Redis would, and also where Redis 7.0 leaves a waiter of a key
 *      that a STORE command overwrote with data.
 *  B3. A waiter is served only by a thread that holds the store lock
 *      through a group: the write's own group (group.c), or a group
 *      right after the command that ran alone; so no other client's
 *      command runs between a write and the serving of the waiters it
 *      woke, when the write ran in a group (as a push does: it is
 *      grouped), and the pop is a pmtx transaction committed before its
 *      reply is sent (cmd.c C1). Waiters of a key are tried in the order
 *      they blocked (first come, first served); one whose type the key
 *      has not (Redis's btype) stays.
 *  B4. A served waiter is PENDING until its group ends: committed, it is
 *      DONE, out of the registry, and its connection rung; aborted, it
 *      waits again (the group's requests run again, and serve again).
 *      Only PENDING waiters of this thread are on its pending list.
 *  B5. A waiter is freed only by its own connection's thread: when it
 *      has taken the reply (DONE), timed out (WAITING, out of the
 *      registry then), or its connection closes; a PENDING one is first
 *      waited for (the registry's condition variable), so a popped
 *      element is never dropped for a timeout nor given twice.
 *  B6. A blocked connection runs no request (conn.c N7); in MULTI, EXEC
 *      and scripts a blocking command never blocks: it answers as its
 *      timeout would, at once (Redis's CLIENT_DENY_BLOCKING), $-1 for
 *      BLMOVE and BRPOPLPUSH, *-1 for the others.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blocking.h"
#include "cmd.h"
#include "mailbox.h"

enum { W_WAITING, W_PENDING, W_DONE };

struct bkey;

/* A waiter's place in one key's queue. */
struct bnode {
	struct waiter *w;
	size_t arg;       /* the key's argv index in the waiter's request */
	struct bkey *k;   /* once listed */
	struct bnode *prev, *next;
};

/* A key name with waiters, and its queue, oldest first. */
struct bkey {
	struct bkey *hnext;
	struct bnode *head, *tail;
	size_t len;
	char name[];
};

struct waiter {
	struct session *sess;
	struct server *srv;
	const struct command *cmd;
	struct queued *req;     /* the command, as it came */
	block_try_fn try;
	size_t dst;
	unsigned db;
	int64_t deadline;       /* monotonic ms, 0: forever */
	int state;              /* W_*, under reg.m */
	int listed;             /* in the registry (reg.m) */
	struct resp_out reply;  /* PENDING, DONE: the served reply */
	struct waiter *pnext;   /* the serving thread's pending list (B4) */
	size_t nnodes;
	struct bnode nodes[];   /* one per distinct key */
};

#define BUCKETS 1024u

static struct {
	pthread_mutex_t m;
	pthread_cond_t settled; /* a group that served waiters ended */
	struct bkey *b[BUCKETS];
} reg = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {NULL}};

static _Atomic unsigned nwaiting; /* listed waiters: 0, no work (B2) */

/* This thread's ready keys (their names copied; B2) and served waiters
 * (B4). */
static _Thread_local struct {
	struct pmkv_key *k;
	size_t n, at, cap;
} ready;
static _Thread_local struct waiter *pending;

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the registry (reg.m held: do_) ---- */

static struct bkey **slot(const void *p, size_t n)
{
	uint64_t h = 14695981039346656037ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
	return &reg.b[h % BUCKETS];
}

static struct bkey *do_find(const void *p, size_t n)
{
	struct bkey *k = *slot(p, n);
	while (k && (k->len != n || memcmp(k->name, p, n)))
		k = k->hnext;
	return k;
}

static struct bkey *do_key(const void *p, size_t n)
{
	struct bkey *k = do_find(p, n);
	if (k || !(k = calloc(1, sizeof(*k) + n)))
		return k;
	memcpy(k->name, p, n);
	k->len = n;
	struct bkey **s = slot(p, n);
	k->hnext = *s;
	*s = k;
	return k;
}

static void do_key_drop(struct bkey *k)
{
	struct bkey **at = slot(k->name, k->len);
	while (*at != k)
		at = &(*at)->hnext;
	*at = k->hnext;
	free(k);
}

/* Take w's first n nodes out of their keys' queues. */
static void do_unlink(struct waiter *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct bnode *nd = &w->nodes[i];
		struct bkey *k = nd->k;
		if (nd->prev)
			nd->prev->next = nd->next;
		else
			k->head = nd->next;
		if (nd->next)
			nd->next->prev = nd->prev;
		else
			k->tail = nd->prev;
		if (!k->head)
			do_key_drop(k);
	}
}

/* List w at the end of each of its keys' queues: 0, or -1 (out of
 * memory: not listed). */
static int do_list(struct waiter *w)
{
	for (size_t i = 0; i < w->nnodes; i++) {
		struct bnode *nd = &w->nodes[i];
		struct bkey *k = do_key(w->req->argv[nd->arg],
		                        w->req->argl[nd->arg]);
		if (!k) {
			do_unlink(w, i);
			return -1;
		}
		nd->k = k;
		nd->prev = k->tail, nd->next = NULL;
		if (k->tail)
			k->tail->next = nd;
		else
			k->head = nd;
		k->tail = nd;
	}
	w->listed = 1;
	atomic_fetch_add(&nwaiting, 1);
	return 0;
}

static void do_unlist(struct waiter *w)
{
	if (!w->listed)
		return;
	do_unlink(w, w->nnodes);
	w->listed = 0;
	atomic_fetch_sub(&nwaiting, 1);
}

/* ---- waiters ---- */

static void waiter_free(struct waiter *w)
{
	if (!w)
		return;
	free(w->req);
	resp_out_free(&w->reply);
	free(w);
}

/* Is argv[i] of the request the same bytes as argv[j]? */
static int same_arg(const struct queued *q, size_t i, size_t j)
{
	return q->argl[i] == q->argl[j] &&
	       !memcmp(q->argv[i], q->argv[j], q->argl[i]);
}

/* A waiter for c's command b, not listed: its nodes name its distinct
 * keys by argv index until do_list. NULL out of memory. */
static struct waiter *waiter_new(struct cmd_ctx *c, const struct block_call *b)
{
	struct waiter *w = calloc(1, sizeof(*w) + b->nkeys * sizeof(w->nodes[0]));
	if (!w || !(w->req = queued_copy(c->q))) {
		free(w);
		return NULL;
	}
	w->sess = c->sess, w->srv = c->srv, w->cmd = c->cmd;
	w->try = b->try, w->dst = b->dst;
	w->db = c->sess->db, w->deadline = b->deadline;
	resp_out_init(&w->reply);
	for (size_t i = b->first; i < b->first + b->nkeys; i++) {
		size_t j = b->first;
		while (j < i && !same_arg(w->req, i, j))
			j++;
		if (j == i) /* Redis blocks once per distinct key */
			w->nodes[w->nnodes++] = (struct bnode){.w = w, .arg = i};
	}
	return w;
}

/* The waiter's command as a request, and a context to run it in. */
static void waiter_ctx(struct waiter *w, struct resp_req *q,
                       struct cmd_ctx *x)
{
	memset(q, 0, sizeof(*q));
	q->argc = w->req->argc, q->argv = w->req->argv, q->argl = w->req->argl;
	*x = (struct cmd_ctx){.srv = w->srv, .cmd = w->cmd, .sess = w->sess,
	                      .q = q, .out = &w->reply, .in_group = 1,
	                      .nested = 1};
}

/* ---- the commands' side ---- */

int block_timeout(struct cmd_ctx *c, size_t i, int64_t *deadline)
{
	long double v;
	if (pmkv_ld_parse(arg(c, i), len(c, i), &v)) {
		resp_add_error(c->out, "ERR timeout is not a float or out of "
		               "range");
		return -1;
	}
	/* Redis's (long long)(v * 1000.0): x86 makes what does not fit a
	 * long long LLONG_MIN, so inf is negative too */
	long double ms = v * 1000.0L;
	long long t = ms >= 0x1p63L || ms < -0x1p63L ? LLONG_MIN : (long long)ms;
	if (t < 0) {
		resp_add_error(c->out, "ERR timeout is negative");
		return -1;
	}
	int64_t now = mono_ms();
	/* past the clock's range: forever, as Redis's wrapped deadline */
	*deadline = t == 0 || t > INT64_MAX - now ? 0 : now + t;
	return 0;
}

int block_result(struct cmd_ctx *c, size_t mark, int rc, int got,
                 int serving)
{
	if (!rc)
		return got;
	c->out->n = mark;
	if (serving && rc == PMKV_E_WRONGTYPE)
		return 0;
	reply_status(c, rc);
	return 1;
}

void block_keys(struct cmd_ctx *c, block_try_fn try)
{
	struct block_call b = {1, c->q->argc - 2, 0, 0, 0, try};
	if (!block_timeout(c, c->q->argc - 1, &b.deadline))
		block_run(c, &b);
}

size_t block_mpop_args(struct cmd_ctx *c, const char *const ends[2],
                       int *which, uint64_t *count)
{
	struct resp_req q = *c->q;
	struct cmd_ctx x = *c;
	q.argc--, q.argv++, q.argl++; /* without the timeout */
	x.q = &q;
	return mpop_args(&x, ends, which, count);
}

void block_mpop(struct cmd_ctx *c, const char *const ends[2],
                block_try_fn try)
{
	struct block_call b = {3, 0, 0, 0, 0, try};
	int which;
	uint64_t count;
	if ((b.nkeys = block_mpop_args(c, ends, &which, &count)) &&
	    !block_timeout(c, 1, &b.deadline))
		block_run(c, &b);
}

/* The keys argv[first..first + n) for the attempt (a caller's array),
 * or NULL after replying out of memory. */
static struct pmkv_key *call_keys(struct cmd_ctx *c,
                                  const struct block_call *b)
{
	struct pmkv_key *k = args_keys(c, b->first, b->nkeys);
	if (!k)
		resp_add_error(c->out, "ERR out of memory");
	return k;
}

/* B1: the attempt, and the waiter listed if it found nothing, in one
 * group. 1 blocked (*w the session's now), 0 answered. */
static int try_or_block(struct cmd_ctx *c, const struct block_call *b,
                        const struct pmkv_key *k, struct waiter *w)
{
	size_t mark = c->out->n;
	int rc = pmkv_group_begin(c->srv->store), got = 0, listed = 0;
	if (!rc) {
		got = b->try(c, k, b->nkeys, 0);
		pthread_mutex_lock(&reg.m);
		listed = !got && !do_list(w);
		pthread_mutex_unlock(&reg.m);
		rc = pmkv_group_end(c->srv->store);
		if (!got && !listed && !rc)
			rc = ENOMEM;
	}
	if (rc) {
		pthread_mutex_lock(&reg.m);
		do_unlist(w);
		pthread_mutex_unlock(&reg.m);
		c->out->n = mark;
		reply_status(c, rc);
		return 0;
	}
	if (listed)
		atomic_store(&c->sess->blocked, w);
	return listed;
}

void block_run(struct cmd_ctx *c, const struct block_call *b)
{
	struct pmkv_key *k = call_keys(c, b);
	struct waiter *w = NULL;
	if (!k)
		return;
	if (c->nested || !c->sess) { /* B6 */
		if (!b->try(c, k, b->nkeys, 0))
			b->nil_bulk ? resp_add_null(c->out)
			            : resp_add_array(c->out, -1);
	} else if (mailbox_open(c->sess) || !(w = waiter_new(c, b))) {
		resp_add_error(c->out, "ERR out of memory");
	} else if (try_or_block(c, b, k, w)) {
		w = NULL; /* the session's */
	}
	waiter_free(w);
	free(k);
}

/* ---- ready keys (B2) ---- */

static void ready_clear(void)
{
	for (size_t i = 0; i < ready.n; i++)
		free((void *)ready.k[i].p);
	ready.n = ready.at = 0;
}

/* p[0..n) ready if it has waiters and is not waiting to be served. */
static void do_ready(const void *p, size_t n)
{
	if (!do_find(p, n))
		return;
	for (size_t i = ready.at; i < ready.n; i++)
		if (ready.k[i].n == n && !memcmp(ready.k[i].p, p, n))
			return;
	if (ready.n == ready.cap) {
		size_t cap = ready.cap ? 2 * ready.cap : 16;
		void *k = realloc(ready.k, cap * sizeof(*ready.k));
		if (!k)
			return;
		ready.k = k, ready.cap = cap;
	}
	void *copy = malloc(n ? n : 1);
	if (copy) {
		memcpy(copy, p, n);
		ready.k[ready.n++] = (struct pmkv_key){copy, n};
	}
}

/* SWAPDB: every key that has waiters. */
static void do_ready_all(void)
{
	for (size_t i = 0; i < BUCKETS; i++)
		for (struct bkey *k = reg.b[i]; k; k = k->hnext)
			do_ready(k->name, k->len);
}

void blocked_signal(struct cmd_ctx *c)
{
	const struct command *k = c->cmd;
	if (!atomic_load(&nwaiting) || (c->sess && c->sess->blocked))
		return; /* no waiter; or the command blocked: it wrote nothing */
	size_t argc = c->q->argc, last = k->last < 0 ? argc + (size_t)k->last
	                                             : (size_t)k->last;
	pthread_mutex_lock(&reg.m);
	if (!strcmp(k->name, "swapdb"))
		do_ready_all();
	else if (k->first == 0) /* the keys move: any argument may be one */
		for (size_t i = 1; i < argc; i++)
			do_ready(arg(c, i), len(c, i));
	else
		for (size_t i = (size_t)k->first; i <= last && i < argc;
		     i += (size_t)k->step)
			do_ready(arg(c, i), len(c, i));
	pthread_mutex_unlock(&reg.m);
}

/* ---- serving (B3) ---- */

/* Serve the waiters of key, oldest first, in this thread's group. */
static void do_serve_key(const struct pmkv_key *key)
{
	struct bkey *k = do_find(key->p, key->n);
	for (struct bnode *nd = k ? k->head : NULL; nd; nd = nd->next) {
		struct waiter *w = nd->w;
		struct resp_req q;
		struct cmd_ctx x;
		if (w->state != W_WAITING)
			continue;
		waiter_ctx(w, &q, &x);
		pmkv_select(w->srv->store, w->db);
		if (!w->try(&x, key, 1, 1))
			continue;
		w->state = W_PENDING;
		w->pnext = pending;
		pending = w;
		if (w->dst) /* a chain: its destination is ready in turn */
			do_ready(q.argv[w->dst], q.argl[w->dst]);
		multi_touch(&x, 0); /* multi.c M3 */
	}
}

/* Every ready key, in the order made ready (B2), then none. */
static void serve_all(struct server *srv)
{
	unsigned db = pmkv_cur_db();
	pthread_mutex_lock(&reg.m);
	for (; ready.at < ready.n; ready.at++)
		do_serve_key(&ready.k[ready.at]);
	pthread_mutex_unlock(&reg.m);
	ready_clear();
	pmkv_select(srv->store, db);
}

void blocked_serve(struct cmd_ctx *c)
{
	if (!ready.n)
		return;
	if (c->in_group) /* settled when the group ends (group.c) */
		return serve_all(c->srv);
	if (pmkv_group_begin(c->srv->store))
		return ready_clear(); /* a broken store: they wait on */
	serve_all(c->srv);
	blocked_settle(pmkv_group_end(c->srv->store) == 0);
}

void blocked_settle(int committed)
{
	ready_clear(); /* a failed group's: its requests run again */
	if (!pending)
		return;
	pthread_mutex_lock(&reg.m);
	for (struct waiter *w = pending; w; w = w->pnext) {
		if (committed) {
			do_unlist(w);
			w->state = W_DONE;
			mailbox_ring(w->sess->mailfd);
		} else {
			w->state = W_WAITING;
			resp_out_reset(&w->reply);
		}
	}
	pending = NULL;
	pthread_cond_broadcast(&reg.settled);
	pthread_mutex_unlock(&reg.m);
}

/* ---- the connection's side ---- */

void blocked_take(struct session *s, struct resp_out *out)
{
	struct waiter *w = s->blocked;
	int64_t now = mono_ms();
	int late = w->deadline && now >= w->deadline;
	pthread_mutex_lock(&reg.m);
	while (late && w->state == W_PENDING) /* B5 */
		pthread_cond_wait(&reg.settled, &reg.m);
	int over = w->state == W_DONE || late;
	if (over)
		do_unlist(w);
	pthread_mutex_unlock(&reg.m);
	if (!over)
		return;
	if (w->state == W_DONE)
		resp_add_raw(out, w->reply.p, w->reply.n);
	else
		resp_add_array(out, -1); /* timed out */
	atomic_store(&s->blocked, NULL);
	waiter_free(w);
}

int blocked_wait_ms(const struct session *s)
{
	struct waiter *w = s->blocked;
	if (!w || !w->deadline)
		return -1;
	int64_t left = w->deadline - mono_ms();
	return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

void blocked_session_end(struct session *s)
{
	struct waiter *w = s->blocked;
	if (!w)
		return;
	pthread_mutex_lock(&reg.m);
	while (w->state == W_PENDING) /* B5 */
		pthread_cond_wait(&reg.settled, &reg.m);
	do_unlist(w);
	pthread_mutex_unlock(&reg.m);
	atomic_store(&s->blocked, NULL);
	waiter_free(w);
}

unsigned blocked_clients(void)
{
	return atomic_load(&nwaiting);
}
