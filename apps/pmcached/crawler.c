/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crawler.c - memcached's lru_crawler commands and "stats cachedump":
 * lru_crawler metadump (the items, one line each: what memcached-tool's
 * dump and keys read), lru_crawler crawl (reclaim expired and flushed
 * items now rather than when next looked up), and enable, disable,
 * sleep and tocrawl, answered as memcached 1.6.18 answers them.
 *
 * DESIGN
 * memcached walks its LRUs in a thread of its own. Here a walk is a
 * reply in parts on the asking connection (conn.c C8): each part takes
 * a snapshot of one LRU list under its lock (the offset and unique of
 * each item it wants: no more than 16 bytes an item), then looks each
 * item up again with no list lock held (mc_store_item_meta: an item gone
 * meanwhile is skipped) and writes its line, or reaps it, BATCH at a
 * time. So a list is locked only while it is read, and the dump of a
 * whole cache is never in memory at once.
 *
 * Invariants:
 *  1. One walk at a time, as memcached has one crawler: another crawl or
 *     metadump meanwhile answers BUSY.
 *  2. A metadump line is memcached's, byte for byte in its format: the
 *     key URI-encoded, exp and la absolute (exp -1 for none), cls and
 *     size those memcached would give the item (sizeclass.h), "\n" after
 *     each line and "END\r\n" after the last. Expired and flushed items
 *     are left out, as memcached leaves them out.
 *  3. la is item_last_access() and fetch item_fetched(): the item's own
 *     (items.c I8).
 *  4. The items come in pmcached's order (each LRU list from its least
 *     recently used item), not memcached's; "hash" lists the same
 *     items. An item stored during a walk may be missed, one moved to
 *     another list's place may be listed twice: a snapshot, as
 *     memcached's crawler gives.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "proto_int.h" /* memcached's number parser */
#include "server.h"

#define BATCH 256                   /* items looked up per part */
#define CACHEDUMP_MAX (2u << 20)    /* memcached's cachedump memlimit */
#define SLEEP_MAX 1000000           /* lru_crawler sleep, microseconds */

static _Atomic bool busy;           /* invariant 1 */
static _Atomic uint64_t starts, checked; /* walks begun, items looked at */

void crawler_stats(uint64_t *n_starts, uint64_t *n_checked, bool *running)
{
	*n_starts = atomic_load_explicit(&starts, memory_order_relaxed);
	*n_checked = atomic_load_explicit(&checked, memory_order_relaxed);
	*running = atomic_load_explicit(&busy, memory_order_relaxed);
}

/* memcached's la: the item's last access (a read, or its store; the
 * store keeps it: items.c I8). */
static int64_t item_last_access(const struct mc_item_meta *m)
{
	return m->atime;
}

/* memcached's fetch: read since it was stored. */
static bool item_fetched(const struct mc_item_meta *m)
{
	return m->fetched;
}

/* ---- which classes ---- */

struct classes_wanted {
	bool all;
	bool id[MC_CLASSES_MAX];
};

/* memcached's lru_crawler_crawl: "all", or class ids separated by
 * commas, each 1 to 63. False for a bad one (BADCLASS). */
static bool parse_classes(struct mc_str s, struct classes_wanted *w)
{
	*w = (struct classes_wanted){.all = mc_tok_is(s, "all") ||
	                                    mc_tok_is(s, "hash")};
	for (size_t i = 0; !w->all && i <= s.len;) {
		size_t j = i;
		while (j < s.len && s.p[j] != ',')
			j++;
		uint32_t id;
		struct mc_str tok = {s.p + i, j - i};
		if (j > i) {
			if (!mc_strtoul(tok, &id) || id < 1 ||
			    id >= MC_CLASSES_MAX)
				return false;
			w->id[id] = true;
		}
		i = j + 1;
	}
	return true;
}

static bool wanted(const struct classes_wanted *w,
                   const struct mc_item_meta *m)
{
	return w->all || w->id[stats_class_of(m, NULL)];
}

/* ---- a walk in parts ---- */

struct spot {
	uint64_t off, cas;
};

struct walk {
	bool reap;                /* crawl: reap dead items; else list live */
	struct classes_wanted w;
	unsigned list;            /* the next LRU list to snapshot */
	struct spot *snap;
	size_t n, pos, cap;
	char key[MC_KEY_MAX];
};

static int snap_one(const struct mc_item_meta *m, void *arg)
{
	struct walk *k = arg;
	if (m->live == k->reap || !wanted(&k->w, m))
		return 0;
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 1024;
		struct spot *p = realloc(k->snap, cap * sizeof(*p));
		if (!p)
			return 1; /* the rest of this list is skipped */
		k->snap = p, k->cap = cap;
	}
	k->snap[k->n++] = (struct spot){m->off, m->cas};
	return 0;
}

/* memcached's uriencode: all but letters, digits and "-._~" as %XX. */
static size_t uriencode(const char *key, size_t n, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)key[i];
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || (ch && strchr("-._~", ch))) {
			out[o++] = (char)ch;
			continue;
		}
		out[o++] = '%';
		out[o++] = hex[ch >> 4];
		out[o++] = hex[ch & 15];
	}
	return o;
}

static void dump_line(struct conn *c, const struct mc_item_meta *m)
{
	char *room = conn_room(c, 3 * MC_KEY_MAX + 160);
	if (!room)
		return;
	size_t size = 0;
	unsigned cls = stats_class_of(m, &size);
	size_t n = (size_t)sprintf(room, "key=");
	n += uriencode(m->key, m->nkey, room + n);
	n += (size_t)sprintf(room + n, " exp=%" PRId64 " la=%" PRId64
	                     " cas=%" PRIu64 " fetch=%s cls=%u size=%zu\n",
	                     m->exptime ? m->exptime : -1,
	                     item_last_access(m),
	                     settings.use_cas ? m->cas : 0,
	                     item_fetched(m) ? "yes" : "no", cls, size);
	conn_commit_room(c, n);
}

static void reap(struct conn *c, const struct mc_item_meta *m)
{
	int reaped = 0;
	unsigned cls = stats_class_of(m, NULL);
	if (!mc_store_reap(server.store, slot_of(c), m->key, m->nkey,
	                   &reaped) && reaped)
		stats_crawler_reclaimed(cls);
}

static void walk_free(struct walk *k)
{
	free(k->snap);
	free(k);
	atomic_store(&busy, false);
}

/* conn_more_fn: the next part of a metadump or crawl. */
static bool walk_part(struct conn *c, void *arg, bool abort)
{
	struct walk *k = arg;
	while (!abort && k->pos == k->n && k->list < MC_NLRU) {
		k->n = k->pos = 0;
		mc_store_walk_lru(server.store, k->list++, snap_one, k);
	}
	if (abort || k->pos == k->n) {
		if (!abort && !k->reap)
			conn_add(c, "END\r\n", 5);
		walk_free(k);
		return true;
	}
	for (size_t end = k->pos + BATCH; k->pos < k->n && k->pos < end;
	     k->pos++) {
		struct mc_item_meta m;
		const struct spot *sp = &k->snap[k->pos];
		atomic_fetch_add_explicit(&checked, 1, memory_order_relaxed);
		if (!mc_store_item_meta(server.store, sp->off, sp->cas, &m,
		                        k->key) || m.live == k->reap)
			continue;
		if (k->reap)
			reap(c, &m);
		else
			dump_line(c, &m);
	}
	return false;
}

/* Start a walk; the reply for a refusal, or NULL. */
static const char *start_walk(struct conn *c, struct mc_str which,
                              bool reap)
{
	struct classes_wanted w;
	if (!parse_classes(which, &w))
		return "BADCLASS invalid class id";
	if (reap && mc_tok_is(which, "hash"))
		return "ERROR an unknown error happened"; /* as memcached */
	if (atomic_exchange(&busy, true))
		return "BUSY currently processing crawler request";
	struct walk *k = calloc(1, sizeof(*k));
	if (!k) {
		atomic_store(&busy, false);
		return "ERROR an unknown error happened";
	}
	k->reap = reap;
	k->w = w;
	atomic_fetch_add_explicit(&starts, 1, memory_order_relaxed);
	conn_continue(c, walk_part, k);
	return reap ? "OK" : NULL;
}

/* ---- the commands ---- */

static void metadump(struct conn *c, struct mc_str which)
{
	const char *r;
	if (!atomic_load(&settings.lru_crawler))
		r = "CLIENT_ERROR lru crawler disabled";
	else if (!settings.dump_enabled)
		r = "ERROR metadump not allowed";
	else if (conn_has_output(c))
		r = "ERROR cannot pipeline other commands before metadump";
	else
		r = start_walk(c, which, false);
	if (r)
		conn_reply(c, r);
}

static void crawl(struct conn *c, struct mc_str which)
{
	conn_reply(c, atomic_load(&settings.lru_crawler)
	                      ? start_walk(c, which, true)
	                      : "CLIENT_ERROR lru crawler disabled");
}

/* sleep and tocrawl: memcached's number checks; the values are kept
 * for "stats settings" (pmcached's walks do not pause). */
static void crawler_number(struct conn *c, const struct mc_request *req,
                           bool sleep)
{
	uint32_t v;
	if (!mc_strtoul(req->args[1], &v))
		return conn_reply(c, "CLIENT_ERROR bad command line format");
	if (sleep && v > SLEEP_MAX)
		return conn_reply(c, "CLIENT_ERROR sleep must be one second or "
		                  "less");
	atomic_store(sleep ? &settings.lru_crawler_sleep
	                   : &settings.lru_crawler_tocrawl, v);
	conn_reply(c, "OK");
}

static void enable(struct conn *c, bool on)
{
	bool was = atomic_exchange(&settings.lru_crawler, on);
	conn_reply(c, on && was ? "ERROR failed to start lru crawler thread"
	                        : "OK");
}

void crawler_command(struct conn *c, const struct mc_request *req)
{
	struct mc_str sub = req->nargs ? req->args[0] : (struct mc_str){0};
	if (req->nargs == 2 && mc_tok_is(sub, "crawl"))
		crawl(c, req->args[1]);
	else if (req->nargs == 2 && mc_tok_is(sub, "metadump"))
		metadump(c, req->args[1]);
	else if (req->nargs == 2 && mc_tok_is(sub, "tocrawl"))
		crawler_number(c, req, false);
	else if (req->nargs == 2 && mc_tok_is(sub, "sleep"))
		crawler_number(c, req, true);
	else if (req->nargs == 1 && (mc_tok_is(sub, "enable") ||
	                             mc_tok_is(sub, "disable")))
		enable(c, mc_tok_is(sub, "enable"));
	else
		conn_reply(c, "ERROR");
}

/* ---- stats cachedump ---- */

struct cachedump {
	struct conn *c;
	unsigned cls;
	uint32_t limit, shown;
	size_t bytes;
};

static int cachedump_one(const struct mc_item_meta *m, void *arg)
{
	struct cachedump *d = arg;
	if (d->limit && d->shown >= d->limit)
		return 1;
	if (stats_class_of(m, NULL) != d->cls)
		return 0;
	char line[MC_KEY_MAX + 64];
	int n = snprintf(line, sizeof(line), "ITEM %.*s [%zu b; %" PRId64
	                 " s]\r\n", (int)m->nkey, m->key, m->nbytes,
	                 m->exptime);
	if (d->bytes + (size_t)n + 6 > CACHEDUMP_MAX)
		return 1;
	conn_add(d->c, line, (size_t)n);
	d->bytes += (size_t)n;
	d->shown++;
	return 0;
}

/* memcached's "stats cachedump <class> <limit>": the class's items, at
 * most limit (0: all) and 2 MiB of lines, "ITEM <key> [<bytes> b;
 * <exptime> s]", in pmcached's order. */
void crawler_cachedump(struct conn *c, const struct mc_request *req)
{
	uint32_t id, limit;
	if (!settings.dump_enabled)
		return conn_reply(c, "CLIENT_ERROR stats cachedump not allowed");
	if (req->nargs < 3)
		return conn_reply(c, "CLIENT_ERROR bad command line");
	if (!mc_strtoul(req->args[1], &id) || !mc_strtoul(req->args[2], &limit))
		return conn_reply(c, "CLIENT_ERROR bad command line format");
	if (id >= MC_CLASSES_MAX)
		return conn_reply(c, "CLIENT_ERROR Illegal slab id");
	struct cachedump d = {c, id, limit, 0, 0};
	for (unsigned l = 0; l < MC_NLRU; l++)
		if (mc_store_walk_lru(server.store, l, cachedump_one, &d))
			break;
	conn_reply(c, "END");
}
