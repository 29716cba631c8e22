/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pubsub.c - SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE, PUBLISH and
 * PUBSUB, with Redis 7.0's RESP2 replies and messages.
 *
 * DESIGN
 * Volatile only, as in Redis: nothing of it is in the region, and a
 * restart forgets every subscription. The registry holds the channels
 * and the patterns that have subscribers, each with its subscribers in
 * the order they subscribed, under one mutex. A connection that
 * subscribes gets a pubsub_client: its subscriptions and a mailbox (the
 * RESP messages published to it and not yet taken, under the mailbox's
 * own mutex), and its session's eventfd (mailbox.c). A publisher
 * appends to the mailboxes and rings the eventfd of one it made
 * non-empty; it never writes a subscriber's socket, so a slow subscriber
 * never blocks it. The eventfd
 * wakes the subscriber's thread from its poll (conn.c N6) or its event
 * loop (loop.c L6), which moves the mailbox into the connection's
 * replies and sends them, as it does before each of the connection's
 * requests. What a publisher pays is a copy of the message per
 * subscriber under the registry lock. pubsub_session_end (RESET, a
 * closing connection) drops what waits in the mailbox: messages that
 * came after the connection's last request had taken it (PUBLISH counted
 * them, as Redis counts those of a client that then disconnects).
 *
 * Lock order: the store's lock (SUBSCRIBE inside EXEC runs in a group),
 * then the registry's, then a mailbox's.
 *
 * Invariants
 *  P1. One order: PUBLISH holds the registry lock from its lookup to its
 *      last delivery, and (P)SUBSCRIBE and (P)UNSUBSCRIBE hold it while
 *      they change a client's subscriptions; so every subscriber gets the
 *      messages of each publisher in the order published, and the
 *      messages in one order for all. A client's own (un)subscribe first
 *      moves its mailbox into its replies, under the lock: a message of a
 *      channel never follows the reply that unsubscribed it, nor comes
 *      before the one that subscribed it. (Not inside EXEC, where the
 *      mailbox would land inside EXEC's array: messages published while
 *      an EXEC runs come after its reply.)
 *  P2. A pubsub_client is reached by publishers only through the
 *      registry: its socket closes only after pubsub_session_end has
 *      removed its subscriptions under the registry lock, so a publisher
 *      holding the lock may shut its socket down (P3).
 *  P3. Output limits, Redis's client-output-buffer-limit for pubsub
 *      clients (32mb 8mb 60): a subscriber whose pending bytes (its
 *      mailbox, and the replies its connection has not sent yet) would
 *      pass HARD_LIMIT, or have stayed above SOFT_LIMIT for more than
 *      SOFT_SECONDS, is closed: its mailbox dropped, its socket shut down
 *      (its thread wakes from a blocked write or poll and ends the
 *      connection), the closing logged. Until its connection is gone its
 *      subscriptions stay, and messages to it are counted in PUBLISH's
 *      reply but not kept (as Redis's freeClientAsync).
 *  P4. A connection that never subscribed has no pubsub_client: a
 *      request costs it a NULL check in conn.c and one in cmd.c.
 *  P5. A session's `subscribed` (its channels and patterns; RESP2's
 *      subscribed context, Redis's CLIENT_PUBSUB, while non-zero) and its
 *      `ps` are written by its own thread only (`subscribed` under the
 *      registry lock), and read by that thread without a lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "mailbox.h"
#include "pubsub.h"

#define HARD_LIMIT ((size_t)32 << 20) /* P3 */
#define SOFT_LIMIT ((size_t)8 << 20)
#define SOFT_SECONDS 60
#define BOX_KEEP ((size_t)1 << 20) /* a mailbox larger is freed once empty */

struct sub;

/* Subscriptions in order, oldest first: a topic's, or a client's of one
 * kind. A subscription is in two (its struct link at TOPIC and CLIENT). */
struct subs {
	struct sub *head, *tail;
	size_t n;
};

struct link {
	struct sub *prev, *next;
};

/* A channel or a pattern that has subscribers. */
struct topic {
	struct topic *hnext;        /* its hash chain */
	struct topic *prev, *next;  /* its space's topics, oldest first */
	struct subs subs;
	size_t len;
	char name[];
};

/* One client's subscription to one topic. */
struct sub {
	struct topic *t;
	struct pubsub_client *who;
	struct link in_topic, in_client;
};

#define TOPIC offsetof(struct sub, in_topic)
#define CLIENT offsetof(struct sub, in_client)

/* The channels, or the patterns: a hash table and the order of creation
 * (PUBLISH tries the patterns in it). */
struct space {
	struct topic **b;
	size_t nb, n;
	struct topic *first, *last;
};

struct pubsub_client {
	struct subs chans, pats; /* registry lock */
	int efd;                 /* the session's eventfd (mailbox.c) */
	int fd;                  /* the connection's socket (P2) */
	pthread_mutex_t m;       /* the mailbox's lock, for: */
	struct resp_out box;     /* messages not yet taken */
	int dead;                /* closed for its limit (P3) */
	int64_t soft_since;      /* above SOFT_LIMIT since (ms), or 0 */
	_Atomic size_t unsent;   /* the connection's replies not yet sent */
};

static struct {
	pthread_mutex_t m;
	struct space chans, pats;
} reg = {.m = PTHREAD_MUTEX_INITIALIZER};

/* What (UN)SUBSCRIBE and P(UN)SUBSCRIBE differ in. */
struct kind {
	struct space *sp;
	size_t mine;           /* offsetof the client's struct subs */
	const char *on, *off;  /* the replies' names */
};

static const struct kind CHANNELS = {
	&reg.chans, offsetof(struct pubsub_client, chans), "subscribe",
	"unsubscribe"};
static const struct kind PATTERNS = {
	&reg.pats, offsetof(struct pubsub_client, pats), "psubscribe",
	"punsubscribe"};

static struct subs *mine(struct pubsub_client *p, const struct kind *k)
{
	return (struct subs *)((char *)p + k->mine);
}

static size_t count(const struct pubsub_client *p)
{
	return p ? p->chans.n + p->pats.n : 0;
}

/* ---- the registry's topics ---- */

static size_t hash(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return (size_t)h;
}

static struct topic *find(const struct space *sp, const char *s, size_t n)
{
	if (!sp->nb)
		return NULL;
	struct topic *t = sp->b[hash(s, n) & (sp->nb - 1)];
	while (t && (t->len != n || memcmp(t->name, s, n)))
		t = t->hnext;
	return t;
}

/* Twice the buckets (at least 16): 0, or -1 (the table as it was). */
static int grow(struct space *sp)
{
	size_t nb = sp->nb ? 2 * sp->nb : 16;
	struct topic **b = calloc(nb, sizeof(*b));
	if (!b)
		return -1;
	for (struct topic *t = sp->first; t; t = t->next) {
		size_t i = hash(t->name, t->len) & (nb - 1);
		t->hnext = b[i];
		b[i] = t;
	}
	free(sp->b);
	sp->b = b, sp->nb = nb;
	return 0;
}

static struct topic *topic_add(struct space *sp, const char *s, size_t n)
{
	if (sp->n >= sp->nb && grow(sp) && !sp->nb)
		return NULL;
	struct topic *t = calloc(1, sizeof(*t) + n);
	if (!t)
		return NULL;
	memcpy(t->name, s, n);
	t->len = n;
	size_t i = hash(s, n) & (sp->nb - 1);
	t->hnext = sp->b[i];
	sp->b[i] = t;
	t->prev = sp->last;
	if (sp->last)
		sp->last->next = t;
	else
		sp->first = t;
	sp->last = t;
	sp->n++;
	return t;
}

static void topic_drop(struct space *sp, struct topic *t)
{
	struct topic **at = &sp->b[hash(t->name, t->len) & (sp->nb - 1)];
	while (*at != t)
		at = &(*at)->hnext;
	*at = t->hnext;
	if (t->prev)
		t->prev->next = t->next;
	else
		sp->first = t->next;
	if (t->next)
		t->next->prev = t->prev;
	else
		sp->last = t->prev;
	sp->n--;
	free(t);
}

/* ---- subscriptions (the registry lock held: do_) ---- */

static struct link *lk(struct sub *s, size_t at)
{
	return (struct link *)((char *)s + at);
}

static void subs_add(struct subs *l, struct sub *s, size_t at)
{
	*lk(s, at) = (struct link){l->tail, NULL};
	if (l->tail)
		lk(l->tail, at)->next = s;
	else
		l->head = s;
	l->tail = s;
	l->n++;
}

static void subs_del(struct subs *l, struct sub *s, size_t at)
{
	struct link *k = lk(s, at);
	if (k->prev)
		lk(k->prev, at)->next = k->next;
	else
		l->head = k->next;
	if (k->next)
		lk(k->next, at)->prev = k->prev;
	else
		l->tail = k->prev;
	l->n--;
}

/* p's subscription to t, or NULL: the shorter of the two lists walked. */
static struct sub *sub_find(struct topic *t, struct subs *l,
                            struct pubsub_client *p)
{
	if (t->subs.n <= l->n) {
		for (struct sub *s = t->subs.head; s; s = s->in_topic.next)
			if (s->who == p)
				return s;
	} else {
		for (struct sub *s = l->head; s; s = s->in_client.next)
			if (s->t == t)
				return s;
	}
	return NULL;
}

/* Subscribe p to the topic name[0..n) of kind k: 0 (already, or now),
 * or ENOMEM. */
static int do_subscribe(struct pubsub_client *p, const struct kind *k,
                        const char *name, size_t n)
{
	struct topic *t = find(k->sp, name, n);
	if (t && sub_find(t, mine(p, k), p))
		return 0;
	struct sub *s = malloc(sizeof(*s));
	if (!s || (!t && !(t = topic_add(k->sp, name, n)))) {
		free(s);
		return ENOMEM;
	}
	s->t = t, s->who = p;
	subs_add(&t->subs, s, TOPIC);
	subs_add(mine(p, k), s, CLIENT);
	return 0;
}

/* End the subscription s of p (a topic left without subscribers goes:
 * PUBSUB lists only those that have some). */
static void do_drop(struct pubsub_client *p, const struct kind *k,
                    struct sub *s)
{
	struct topic *t = s->t;
	subs_del(&t->subs, s, TOPIC);
	subs_del(mine(p, k), s, CLIENT);
	free(s);
	if (!t->subs.n)
		topic_drop(k->sp, t);
}

static void do_unsubscribe(struct pubsub_client *p, const struct kind *k,
                           const char *name, size_t n)
{
	struct topic *t = find(k->sp, name, n);
	struct sub *s = t ? sub_find(t, mine(p, k), p) : NULL;
	if (s)
		do_drop(p, k, s);
}

/* ---- mailboxes ---- */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* P3: close p (p->m and the registry lock held, P2). */
static void do_kill(struct pubsub_client *p, size_t pending, const char *why)
{
	p->dead = 1;
	resp_out_free(&p->box);
	shutdown(p->fd, SHUT_RDWR);
	fprintf(stderr, "pmkv: a subscriber closed for overcoming its output "
	        "limit (%s, %zu bytes pending)\n", why, pending);
}

/* P3 with add bytes more (p->m held): 1 if p is over a limit, and
 * closed now. */
static int do_over_limit(struct pubsub_client *p, size_t add)
{
	size_t pending = p->box.n + atomic_load(&p->unsent) + add;
	if (pending > HARD_LIMIT) {
		do_kill(p, pending, "hard limit 32mb");
		return 1;
	}
	if (pending <= SOFT_LIMIT) {
		p->soft_since = 0;
		return 0;
	}
	int64_t now = now_ms();
	if (!p->soft_since) {
		p->soft_since = now;
	} else if (now - p->soft_since > SOFT_SECONDS * 1000) {
		do_kill(p, pending, "soft limit 8mb for 60 s");
		return 1;
	}
	return 0;
}

/* Give p the message head + tail (the registry lock held, P1). */
static void do_deliver(struct pubsub_client *p, const struct resp_out *head,
                       const struct resp_out *tail)
{
	pthread_mutex_lock(&p->m);
	int was_dead = p->dead, ring = 0;
	if (!p->dead && !do_over_limit(p, head->n + tail->n)) {
		ring = p->box.n == 0;
		resp_add_raw(&p->box, head->p, head->n);
		resp_add_raw(&p->box, tail->p, tail->n);
		if (p->box.oom)
			do_kill(p, p->box.n, "out of memory");
	}
	ring |= p->dead && !was_dead; /* empty before, or closed now */
	pthread_mutex_unlock(&p->m);
	if (ring)
		mailbox_ring(p->efd);
}

/* Deliver to every subscriber of t: how many. */
static long long do_deliver_all(struct topic *t, const struct resp_out *head,
                                const struct resp_out *tail)
{
	long long n = 0;
	for (struct sub *s = t->subs.head; s; s = s->in_topic.next, n++)
		do_deliver(s->who, head, tail);
	return n;
}

int pubsub_drain(struct session *s, struct resp_out *out)
{
	struct pubsub_client *p = s->ps;
	pthread_mutex_lock(&p->m);
	int dead = p->dead;
	size_t moved = p->box.n;
	if (moved && !dead && !out->n && !out->oom) { /* no copy: swapped */
		struct resp_out t = *out;
		*out = p->box;
		p->box = t;
	} else if (moved && !dead) {
		resp_add_raw(out, p->box.p, moved);
		p->box.n = 0;
	}
	if (p->box.cap > BOX_KEEP)
		resp_out_free(&p->box);
	if (!dead)
		atomic_fetch_add(&p->unsent, moved);
	pthread_mutex_unlock(&p->m);
	return dead ? -1 : 0;
}

void pubsub_unsent(struct session *s, size_t n)
{
	atomic_store(&s->ps->unsent, n);
}

/* s's pubsub_client, made at its first subscription; NULL if out of
 * memory. */
static struct pubsub_client *client_of(struct session *s)
{
	if (s->ps)
		return s->ps;
	struct pubsub_client *p = calloc(1, sizeof(*p));
	if (!p || mailbox_open(s)) {
		free(p);
		return NULL;
	}
	p->efd = mailbox_fd(s); /* the session's (mailbox.c MB1) */
	p->fd = s->fd;
	pthread_mutex_init(&p->m, NULL);
	resp_out_init(&p->box);
	return s->ps = p;
}

void pubsub_session_end(struct server *srv, struct session *s)
{
	struct pubsub_client *p = s->ps;
	(void)srv;
	if (!p)
		return;
	pthread_mutex_lock(&reg.m);
	while (p->chans.head)
		do_drop(p, &CHANNELS, p->chans.head);
	while (p->pats.head)
		do_drop(p, &PATTERNS, p->pats.head);
	s->subscribed = 0;
	pthread_mutex_unlock(&reg.m);
	pthread_mutex_lock(&p->m);
	p->box.n = 0;
	p->soft_since = 0;
	pthread_mutex_unlock(&p->m);
}

void pubsub_session_free(struct session *s)
{
	struct pubsub_client *p = s->ps;
	if (!p)
		return;
	pthread_mutex_destroy(&p->m);
	resp_out_free(&p->box);
	free(p);
	s->ps = NULL;
}

/* ---- the commands ---- */

/* Redis's reply to a (un)subscription: [name, topic or null, count]. */
static void reply_sub(struct resp_out *o, const char *what, const char *t,
                      size_t n, size_t subscribed)
{
	resp_add_array(o, 3);
	resp_add_bulk(o, what, strlen(what));
	if (t)
		resp_add_bulk(o, t, n);
	else
		resp_add_null(o);
	resp_add_int(o, (long long)subscribed);
}

/* P1: the messages published before this command changed anything come
 * before its replies (not inside EXEC: P1). A connection closed for its
 * limit (P3) is ended by conn.c's next pubsub_drain. */
static void do_catch_up(struct cmd_ctx *c)
{
	if (!c->nested && c->sess && c->sess->ps)
		pubsub_drain(c->sess, c->out);
}

static void subscribe(struct cmd_ctx *c, const struct kind *k)
{
	struct pubsub_client *p = c->sess ? client_of(c->sess) : NULL;
	if (!p)
		return resp_add_error(c->out, "ERR out of memory");
	pthread_mutex_lock(&reg.m);
	do_catch_up(c);
	for (size_t i = 1; i < c->q->argc; i++) {
		if (do_subscribe(p, k, arg(c, i), len(c, i)))
			resp_add_error(c->out, "ERR out of memory");
		else
			reply_sub(c->out, k->on, arg(c, i), len(c, i), count(p));
	}
	c->sess->subscribed = (unsigned)count(p);
	pthread_mutex_unlock(&reg.m);
}

static void unsubscribe(struct cmd_ctx *c, const struct kind *k)
{
	struct pubsub_client *p = c->sess ? c->sess->ps : NULL;
	pthread_mutex_lock(&reg.m);
	do_catch_up(c);
	if (c->q->argc == 1 && (!p || !mine(p, k)->head))
		reply_sub(c->out, k->off, NULL, 0, count(p));
	for (struct sub *s; c->q->argc == 1 && p && (s = mine(p, k)->head);) {
		reply_sub(c->out, k->off, s->t->name, s->t->len, count(p) - 1);
		do_drop(p, k, s);
	}
	for (size_t i = 1; i < c->q->argc; i++) {
		if (p)
			do_unsubscribe(p, k, arg(c, i), len(c, i));
		reply_sub(c->out, k->off, arg(c, i), len(c, i), count(p));
	}
	if (c->sess)
		c->sess->subscribed = (unsigned)count(p);
	pthread_mutex_unlock(&reg.m);
}

static void cmd_subscribe(struct cmd_ctx *c)
{
	subscribe(c, &CHANNELS);
}

static void cmd_psubscribe(struct cmd_ctx *c)
{
	subscribe(c, &PATTERNS);
}

static void cmd_unsubscribe(struct cmd_ctx *c)
{
	unsubscribe(c, &CHANNELS);
}

static void cmd_punsubscribe(struct cmd_ctx *c)
{
	unsubscribe(c, &PATTERNS);
}

/* PUBLISH channel message: to the channel's subscribers, then to each
 * pattern's that matches it (Redis's order); the reply counts both. */
static void cmd_publish(struct cmd_ctx *c)
{
	static const char message[] = "*3\r\n$7\r\nmessage\r\n";
	struct resp_out head, tail;
	long long n = 0;
	resp_out_init(&head);
	resp_out_init(&tail);
	resp_add_raw(&head, message, sizeof(message) - 1);
	resp_add_bulk(&tail, arg(c, 1), len(c, 1));
	resp_add_bulk(&tail, arg(c, 2), len(c, 2));
	pthread_mutex_lock(&reg.m);
	struct topic *t = find(&reg.chans, arg(c, 1), len(c, 1));
	if (t && !head.oom && !tail.oom)
		n += do_deliver_all(t, &head, &tail);
	for (t = reg.pats.first; t && !tail.oom; t = t->next) {
		if (!glob_match(t->name, t->len, arg(c, 1), len(c, 1), 0))
			continue;
		resp_out_reset(&head);
		resp_add_array(&head, 4);
		resp_add_bulk(&head, "pmessage", 8);
		resp_add_bulk(&head, t->name, t->len);
		if (!head.oom)
			n += do_deliver_all(t, &head, &tail);
	}
	pthread_mutex_unlock(&reg.m);
	if (head.oom || tail.oom)
		resp_add_error(c->out, "ERR out of memory");
	else
		resp_add_int(c->out, n);
	resp_out_free(&head);
	resp_out_free(&tail);
}

/* ---- PUBSUB ---- */

/* CHANNELS [pattern]: every channel with a subscriber, or those that
 * match (Redis's glob: "*" leaves the empty channel out, glob.c G1). */
static void pubsub_channels(struct cmd_ctx *c)
{
	struct collect k = {0};
	if (c->q->argc == 3)
		k.pat = arg(c, 2), k.pn = len(c, 2);
	pthread_mutex_lock(&reg.m);
	for (struct topic *t = reg.chans.first; t; t = t->next)
		collect_key(&k, t->name, t->len);
	pthread_mutex_unlock(&reg.m);
	if (k.oom)
		resp_add_error(c->out, "ERR out of memory");
	else
		collect_reply(c, &k);
	collect_free(&k);
}

static void pubsub_numsub(struct cmd_ctx *c)
{
	resp_add_array(c->out, 2 * ((long long)c->q->argc - 2));
	pthread_mutex_lock(&reg.m);
	for (size_t i = 2; i < c->q->argc; i++) {
		struct topic *t = find(&reg.chans, arg(c, i), len(c, i));
		resp_add_bulk(c->out, arg(c, i), len(c, i));
		resp_add_int(c->out, t ? (long long)t->subs.n : 0);
	}
	pthread_mutex_unlock(&reg.m);
}

/* The number of patterns with a subscriber (distinct ones: Redis 7.0's
 * dictSize of its patterns). */
static void pubsub_numpat(struct cmd_ctx *c)
{
	pthread_mutex_lock(&reg.m);
	long long n = (long long)reg.pats.n;
	pthread_mutex_unlock(&reg.m);
	resp_add_int(c->out, n);
}

/* Shard channels (SSUBSCRIBE) pmkv has not: none. */
static void pubsub_shardchannels(struct cmd_ctx *c)
{
	resp_add_array(c->out, 0);
}

static void pubsub_shardnumsub(struct cmd_ctx *c)
{
	resp_add_array(c->out, 2 * ((long long)c->q->argc - 2));
	for (size_t i = 2; i < c->q->argc; i++) {
		resp_add_bulk(c->out, arg(c, i), len(c, i));
		resp_add_int(c->out, 0);
	}
}

static void pubsub_help(struct cmd_ctx *c)
{
	static const char *const help[] = {
		"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands "
		"are:",
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> "
		"(default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified "
		"channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching "
		"a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard "
		"level channel(s)",
		"HELP",
		"    Prints this help.",
	};
	size_t n = sizeof(help) / sizeof(*help);
	resp_add_array(c->out, (long long)n);
	for (size_t i = 0; i < n; i++)
		resp_add_simple(c->out, help[i]);
}

/* PUBSUB's subcommands, their arities (Redis 7.0's), and the most
 * arguments they take (0: no most). */
static const struct {
	const char *name;
	int arity;
	size_t most;
	void (*fn)(struct cmd_ctx *c);
} pubsub_subs[] = {
	{"channels", -2, 3, pubsub_channels},
	{"numsub", -2, 0, pubsub_numsub},
	{"numpat", 2, 0, pubsub_numpat},
	{"shardchannels", -2, 3, pubsub_shardchannels},
	{"shardnumsub", -2, 0, pubsub_shardnumsub},
	{"help", 2, 0, pubsub_help},
};

static int arity_ok(int arity, size_t argc)
{
	return arity > 0 ? argc == (size_t)arity : argc >= (size_t)-arity;
}

static void cmd_pubsub(struct cmd_ctx *c)
{
	size_t i = 0, n = sizeof(pubsub_subs) / sizeof(*pubsub_subs);
	while (i < n && !resp_arg_is(c->q, 1, pubsub_subs[i].name))
		i++;
	if (i == n)
		return resp_add_error(c->out, "ERR unknown subcommand '%.128s'. "
		                      "Try PUBSUB HELP.", arg(c, 1));
	if (!arity_ok(pubsub_subs[i].arity, c->q->argc))
		return resp_add_error(c->out, "ERR wrong number of arguments "
		                      "for 'pubsub|%s' command",
		                      pubsub_subs[i].name);
	if (pubsub_subs[i].most && c->q->argc > pubsub_subs[i].most)
		return resp_add_error(c->out, "ERR unknown subcommand or wrong "
		                      "number of arguments for '%.128s'. Try "
		                      "PUBSUB HELP.", arg(c, 1));
	pubsub_subs[i].fn(c);
}

/* ---- the subscribed context (RESP2) ---- */

/* Redis 7.0's subcommands of the container commands, with their
 * arities: a refused command is named "container|subcommand". */
static const char *const containers[][2] = {
	{"acl", "genpass:-2 users:2 help:2 load:2 cat:-2 whoami:2 save:2 "
	        "setuser:-3 getuser:3 dryrun:-4 deluser:-3 list:2 log:-2"},
	{"client", "pause:-3 getname:2 kill:-3 unpause:2 help:2 info:2 "
	           "reply:3 no-evict:3 id:2 unblock:-3 caching:3 "
	           "trackinginfo:2 list:-2 setname:3 tracking:-3 getredir:2"},
	{"command", "count:2 list:-2 info:-2 docs:-2 getkeys:-4 help:2 "
	            "getkeysandflags:-4"},
	{"config", "rewrite:2 get:-3 resetstat:2 help:2 set:-4"},
	{"function", "delete:3 kill:2 flush:-2 load:-3 list:-2 help:2 "
	             "restore:-3 dump:2 stats:2"},
	{"latency", "doctor:2 graph:3 help:2 histogram:-2 history:3 latest:2 "
	            "reset:-2"},
	{"memory", "malloc-stats:2 doctor:2 stats:2 usage:-3 help:2 purge:2"},
	{"object", "idletime:3 encoding:3 freq:3 help:2 refcount:3"},
	{"pubsub", "numpat:2 channels:-2 numsub:-2 shardchannels:-2 help:2 "
	           "shardnumsub:-2"},
	{"script", "kill:2 debug:3 flush:-2 load:3 help:2 exists:-3"},
	{"slowlog", "help:2 get:-2 reset:2 len:2"},
	{"xgroup", "delconsumer:5 createconsumer:5 create:-5 help:2 destroy:4 "
	           "setid:-5"},
	{"xinfo", "help:2 groups:3 stream:-3 consumers:4"},
};

/* In the list "a:1 b:-2 ...", argv[1]'s entry: its name (lower case,
 * its length in *n) and its arity in *arity; NULL if it has none. */
static const char *subcommand(struct cmd_ctx *c, const char *list,
                              size_t *n, int *arity)
{
	for (const char *p = list; *p;) {
		*n = strcspn(p, ":");
		if (*n == len(c, 1) && !strncasecmp(p, arg(c, 1), *n)) {
			*arity = atoi(p + *n + 1);
			return p;
		}
		p += strcspn(p, " ");
		p += *p == ' ';
	}
	return NULL;
}

/* Redis's error for the command k (a container's subcommand: its name
 * and arity from the list). 0 if the subcommand is not Redis's: then
 * Redis answers that it does not know it, and so does the handler. EXEC
 * refused is EXECABORT (Redis's rejectCommand). */
static int refuse(struct cmd_ctx *c, const struct command *k,
                  const char *list)
{
	char why[256];
	size_t n = 0;
	int arity = 0;
	const char *sub = list ? subcommand(c, list, &n, &arity) : "";
	if (!sub)
		return 0;
	if (list && !arity_ok(arity, c->q->argc))
		snprintf(why, sizeof(why), "wrong number of arguments for "
		         "'%s|%.*s' command", k->name, (int)n, sub);
	else
		snprintf(why, sizeof(why), "Can't execute '%s%s%.*s': only "
		         "(P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
		         "RESET are allowed in this context", k->name,
		         list ? "|" : "", (int)n, sub);
	if (!strcmp(k->name, "exec"))
		multi_abort(c, why);
	else
		resp_add_error(c->out, "ERR %s", why);
	return 1;
}

int pubsub_refuses(struct cmd_ctx *c, const struct command *k)
{
	static const char *const pass[] = {"subscribe", "unsubscribe",
	                                   "psubscribe", "punsubscribe",
	                                   "ssubscribe", "sunsubscribe",
	                                   "ping", "quit", "reset"};
	for (size_t i = 0; i < sizeof(pass) / sizeof(*pass); i++)
		if (!strcmp(k->name, pass[i]))
			return 0;
	for (size_t i = 0; i < sizeof(containers) / sizeof(*containers); i++)
		if (!strcmp(k->name, containers[i][0]))
			return refuse(c, k, containers[i][1]);
	return refuse(c, k, NULL);
}

const struct command pmkv_cmds_pubsub[] = {
	{"subscribe", -2, cmd_subscribe, "pubsub noscript loading stale", 0,
	 0, 0, 0},
	{"unsubscribe", -1, cmd_unsubscribe, "pubsub noscript loading stale",
	 0, 0, 0, 0},
	{"psubscribe", -2, cmd_psubscribe, "pubsub noscript loading stale", 0,
	 0, 0, 0},
	{"punsubscribe", -1, cmd_punsubscribe,
	 "pubsub noscript loading stale", 0, 0, 0, 0},
	{"publish", 3, cmd_publish, "pubsub loading stale fast", 0, 0, 0, 0},
	{"pubsub", -2, cmd_pubsub, "", 0, 0, 0, 0},
	{NULL, 0, NULL, NULL, 0, 0, 0, 0},
};
