/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.c - walking and checking the cache's persistent structure, for
 * the crash-state explorer and the tests: every block the cache owns, and
 * the invariants of items.c, assoc.c, lru.c and restart.c over them.
 * Read-only; every offset is validated before it is followed.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store_int.h"

struct walk {
	int (*fn)(pmtx_off off, void *arg);
	void *arg;
};

static int walk_one(pmtx_off off, uint64_t bucket, int old, void *arg)
{
	struct walk *w = arg;
	(void)bucket, (void)old;
	return w->fn(off, w->arg);
}

int mc_store_walk(pmtx_region *r, int (*fn)(pmtx_off off, void *arg),
                  void *arg)
{
	const struct mc_root *root = pmtx_root(r, NULL);
	struct walk w = {fn, arg};
	if (root->magic != MC_MAGIC)
		return 0;
	int rc = mc_assoc_foreach(r, root, walk_one, &w);
	for (unsigned p = 0; !rc && p < MC_NPENDING; p++)
		for (pmtx_off off = root->pending[p]; !rc && off;) {
			const struct mc_item *it = mc_item_at(r, off);
			if (!it)
				return PMTX_E_CORRUPT;
			rc = fn(off, arg);
			off = it->next;
		}
	return rc;
}

struct chk {
	char *msg;
	size_t len;
	uint64_t items, bytes;
	const struct mc_root *root;
	pmtx_region *r;
};

static int bad(struct chk *c, const char *what, pmtx_off off)
{
	snprintf(c->msg, c->len, "%s (item at %#llx)", what,
	         (unsigned long long)off);
	return PMTX_E_CORRUPT;
}

/* A chained item: in the right bucket (assoc.c A1), linked. */
static int chk_chained(pmtx_off off, uint64_t bucket, int old, void *arg)
{
	struct chk *c = arg;
	if (bucket == ~0ull)
		return 0; /* the table block itself */
	const struct mc_item *it = mc_item_at(c->r, off);
	uint64_t hp = old ? c->root->old_hashpower : c->root->hashpower;
	uint64_t h = mc_hash(mc_item_key(it), it->nkey);
	if ((h & ((1ull << hp) - 1)) != bucket)
		return bad(c, "item in the wrong bucket", off);
	if (!old && c->root->old_table &&
	    (h & ((1ull << c->root->old_hashpower) - 1)) >=
	            c->root->expand_next)
		return bad(c, "item moved before its bucket", off);
	if (it->link != MC_LINK_TABLE || it->lru >= MC_NLRU)
		return bad(c, "chained item not marked linked", off);
	if (it->iflags & ~MC_IF_ALL)
		return bad(c, "unknown item flags", off);
	c->items++;
	c->bytes += mc_item_bytes(it->nkey, it->nbytes);
	return 0;
}

/* LRU list l: doubly linked, marked, counted (lru.c U1, U2). */
static int chk_lru(struct chk *c, unsigned l)
{
	const struct mc_lru *lru = &c->root->lru[l];
	uint64_t n = 0, bytes = 0;
	pmtx_off prev = 0, off = lru->head;
	for (; off; prev = off, off = mc_item_at(c->r, off)->next) {
		const struct mc_item *it = mc_item_at(c->r, off);
		if (!it || it->prev != prev || it->lru != l ||
		    it->link != MC_LINK_TABLE || ++n > c->items)
			return bad(c, "LRU list broken", off);
		bytes += mc_item_bytes(it->nkey, it->nbytes);
	}
	if (lru->tail != prev || lru->count != n || lru->bytes != bytes)
		return bad(c, "LRU list count, bytes or tail wrong", prev);
	c->items -= n;
	c->bytes -= bytes;
	return 0;
}

static int chk_pending(struct chk *c, unsigned p)
{
	pmtx_off prev = 0;
	for (pmtx_off off = c->root->pending[p]; off;) {
		const struct mc_item *it = mc_item_at(c->r, off);
		if (!it || it->link != MC_LINK_PENDING || it->slot != p ||
		    it->prev != prev)
			return bad(c, "pending list broken", off);
		prev = off;
		off = it->next;
	}
	return 0;
}

int mc_format_msg(const struct mc_root *root, char *msg, size_t len)
{
	if (root->major == MC_FORMAT_MAJOR)
		return 0;
	snprintf(msg, len, "pmcached format %u.%u, this pmcached reads "
	         "format %u.x only: a region of another format is never "
	         "converted; start on a new region file (-e), or remove this "
	         "one (the cache starts empty)", root->major, root->minor,
	         MC_FORMAT_MAJOR);
	return PMTX_E_BAD_VERSION;
}

int mc_store_check(pmtx_region *r, char *msg, size_t len)
{
	struct chk c = {msg, len, 0, 0, pmtx_root(r, NULL), r};
	if (c.root->magic != MC_MAGIC)
		return 0; /* not initialised yet */
	if (mc_format_msg(c.root, msg, len))
		return PMTX_E_BAD_VERSION;
	int rc = mc_assoc_foreach(r, c.root, chk_chained, &c);
	if (rc == PMTX_E_CORRUPT && !msg[0])
		snprintf(msg, len, "broken hash chain");
	for (unsigned l = 0; !rc && l < MC_NLRU; l++)
		rc = chk_lru(&c, l);
	if (!rc && (c.items || c.bytes))
		rc = bad(&c, "chained items missing from the LRU lists", 0);
	for (unsigned p = 0; !rc && p < MC_NPENDING; p++)
		rc = chk_pending(&c, p);
	return rc;
}

int mc_store_peek(pmtx_region *r, const char *key, size_t nkey, int64_t now,
                  struct mc_ref *ref)
{
	struct mc_store s = {.r = r, .root = pmtx_root(r, NULL)};
	pmtx_off link, off = 0;
	uint64_t h = mc_hash(key, nkey);
	*ref = (struct mc_ref){0};
	if (s.root->magic != MC_MAGIC)
		return 0;
	int rc = do_assoc_find(&s, NULL, key, nkey, h, &link, &off);
	struct mc_item *it = off ? mc_item_at(r, off) : NULL;
	if (rc || !it || !mc_item_live(&s, it, now))
		return rc;
	*ref = (struct mc_ref){.off = off, .value = mc_item_value(it),
	                       .nbytes = it->nbytes, .flags = it->flags,
	                       .cas = it->cas, .exptime = it->exptime,
	                       .iflags = it->iflags};
	return 0;
}

static int count_owned(pmtx_off off, void *arg)
{
	(void)off;
	++*(uint64_t *)arg;
	return 0;
}

static int count_heap(pmtx_off off, size_t usable, void *arg)
{
	(void)usable;
	return count_owned(off, arg);
}

int mc_store_count_blocks(pmtx_region *r, uint64_t *owned, uint64_t *heap)
{
	*owned = *heap = 0;
	int rc = mc_store_walk(r, count_owned, owned);
	return rc ? rc : pmtx_heap_walk(r, count_heap, heap);
}

/* Open the cache's region at path on that backend (flags: PMTX_OPEN_*). */
static int open_cache(const char *path, pmtx_backend backend, unsigned flags,
                      pmtx_region **r)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.layout = MC_LAYOUT;
	o.backend = backend;
	o.flags = flags;
	return pmtx_open(path, &o, r);
}

/* 1 if the region at path has a journal ("<path>.pmtxj", pmtx's journal
 * backend). */
static int has_journal(const char *path)
{
	char j[4096];
	int n = snprintf(j, sizeof(j), "%s.pmtxj", path);
	return n > 0 && (size_t)n < sizeof(j) && access(j, F_OK) == 0;
}

/* Commits a crash left in the region's journal (the journal backend) are
 * not in the file yet, and pmtx refuses a private view of it: open it
 * once for writing through the journal backend (the journal is replayed
 * into the file, pmtx recovery runs) and close it, as the next start of
 * the server would. */
static int apply_journal(const char *path, char *msg, size_t len)
{
	pmtx_region *r;
	int rc = open_cache(path, PMTX_BACKEND_JOURNAL, 0, &r);
	if (!rc)
		rc = pmtx_close(r);
	if (rc)
		snprintf(msg, len, "%s: applying its journal: %s (%s)", path,
		         pmtx_strerror(rc), pmtx_errmsg());
	return rc;
}

/* A private view of the region at path (recovery runs in memory; the
 * file is not written), but for a journal that holds commits, first
 * applied (apply_journal; *applied = 1). */
static int open_view(const char *path, pmtx_region **r, int *applied,
                     char *msg, size_t len)
{
	const pmtx_backend hw = PMTX_BACKEND_HARDWARE;
	int rc = open_cache(path, hw, PMTX_OPEN_PRIVATE, r);
	*applied = 0;
	if (rc == PMTX_E_UNSUPPORTED && has_journal(path)) {
		if ((rc = apply_journal(path, msg, len)))
			return rc;
		*applied = 1;
		rc = open_cache(path, hw, PMTX_OPEN_PRIVATE, r);
	}
	if (rc)
		snprintf(msg, len, "%s: %s (%s)", path, pmtx_strerror(rc),
		         pmtx_errmsg());
	return rc;
}

/* Everything the explorer checks on an image, on a region file, opened
 * by open_view. */
int mc_store_verify(const char *path, char *msg, size_t len)
{
	pmtx_region *r;
	int applied;
	msg[0] = '\0';
	int rc = open_view(path, &r, &applied, msg, len);
	if (rc)
		return rc;
	pmtx_heap_stats st;
	uint64_t owned, blocks;
	rc = pmtx_heap_check(r, &st);
	if (rc)
		snprintf(msg, len, "heap: %s", pmtx_errmsg());
	if (!rc && mc_format_msg(pmtx_root(r, NULL), msg, len)) {
		char why[512];
		snprintf(why, sizeof(why), "%s", msg);
		snprintf(msg, len, "%s: %s", path, why);
		rc = PMTX_E_BAD_VERSION;
	}
	if (!rc)
		rc = mc_store_check(r, msg, len);
	if (!rc)
		rc = mc_store_count_blocks(r, &owned, &blocks);
	if (!rc && owned != blocks) {
		snprintf(msg, len, "%llu heap blocks, %llu reachable: a leak",
		         (unsigned long long)blocks, (unsigned long long)owned);
		rc = PMTX_E_CORRUPT;
	}
	if (!rc)
		snprintf(msg, len, "%s: consistent, %llu items%s", path,
		         (unsigned long long)mc_lru_count(pmtx_root(r, NULL)),
		         applied ? " (its journal's commits applied first)"
		                 : "");
	pmtx_close(r);
	return rc;
}
