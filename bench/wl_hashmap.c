/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wl_hashmap.c - the `hashmap` workload: seed 004's hashmap_tx (section
 * IV-B, Figure 7), insert throughput of a persistent chained hash map by
 * map entry size.
 *
 * The map. A fixed array of `buckets` (65536) chain heads, and one heap
 * block per entry: an 8-byte key, the link to the next entry of its chain
 * and the value, `entry` bytes in all (sweep, default 128..8192: the
 * seed's "map entry size"; the value is entry - 16 bytes, entry - 24 under
 * PMDK, whose links are 16-byte PMEMoids). Bucket = key mod buckets. Keys
 * are successive outputs of bench_rand() from `seed`, hence all distinct
 * (xorshift64* never repeats within its period); the value is a fixed
 * pattern (from seed) whose first word is derived from the key. An insert
 * works as PMDK's hashmap_tx insert does: walk the key's chain to reject a
 * duplicate, allocate the entry inside the transaction, initialise it,
 * link it at the head of the chain, count++. There is no rehash: with
 * `cap` <= buckets the chains stay short (hashmap_tx would not rebuild
 * either, as its count stays below 2 * nbuckets).
 *
 * Bounded memory. The seed inserts 1000 entries into an empty map. To
 * measure a steady state that does not depend on how long a system ran,
 * the map is first filled to `cap` (20000) entries, untimed (inserts
 * batched 32 to a transaction, which keeps every log small), and then
 * every insert transaction first removes the oldest entry (unlink, free,
 * count--) and then inserts a new one: the map always holds `cap`
 * entries. op = one such transaction. Emitted params: entry, buckets,
 * cap.
 *
 * Systems:
 *   pmtx-undo, pmtx-redo, pmtx-redo-async, pmtx-twin
 *       root {nbuckets, buckets, count}; the bucket array is one zeroed
 *       block of offsets. Reads inside the transaction go through
 *       pmtx_read (redo must see the transaction's own writes), links and
 *       count are written with pmtx_write, the new entry (pmtx_alloc'd in
 *       the transaction) is initialised with naked stores + pmtx_flush.
 *       pmtx-twin runs this same code in a twin region (PMTX_RT_TWIN,
 *       twice the bytes: bench_region): reads are plain loads, writes
 *       store in place and note their lines, the pmtx_flush of the new
 *       entry joins its lines to the transaction, and commit flushes
 *       every line (the heap metadata of the allocation and the free
 *       too: no allocation log), then copies them to the back copy: 4
 *       barriers per insert (below, "log runtimes" include twin: the
 *       kind HM_LOG). The setup transaction is an undo one, twin in a
 *       twin region (which refuses any other runtime): bench_setup_rt.
 *   pmtx-cow
 *       copy-on-write works only through wrappers, so every mutable piece
 *       is an object: the heads in groups of 64 buckets (a 512-byte object
 *       per group: an insert copies one group, not the whole array), each
 *       entry (links are entry wrappers; unlinking an entry that is not a
 *       chain head copies its predecessor) and the count (an 8-byte
 *       object). New entries come from pmtx_cow_new (zeroed) and are
 *       initialised by naked stores, as they are not reachable yet.
 *   pmdk
 *       libpmemobj, as hashmap_tx.c: TX_BEGIN, pmemobj_tx_alloc for the
 *       entry (flushed at commit), TX_ADD on the bucket slot (or the
 *       predecessor's link) and on count, pmemobj_tx_free.
 *   plain
 *       the same map with malloc/free in DRAM: the floor.
 *
 * Validation (`check`): walk every chain; each entry must sit in the
 * bucket of its key, be a live key of the DRAM record (a FIFO of the keys
 * inserted and not removed), appear once, and carry its value; the number
 * of entries and the persistent count must equal the number of live keys.
 * For pmtx, pmtx_heap_check must pass and pmtx_heap_walk must report
 * exactly the blocks the map uses: the bucket array and the entries (for
 * pmtx-cow: the group wrapper array, each group's, the count's and each
 * entry's wrapper and payload). `corrupt` unlinks the first entry of the
 * first non-empty bucket with a naked store.
 */
#include <libpmemobj.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define HM_GROUP 64          /* buckets per copy-on-write head object */
#define HM_PREFILL_BATCH 32  /* inserts per prefill transaction */
#define HM_TYPE_ENTRY 1      /* PMDK type numbers */
#define HM_TYPE_BUCKETS 2

/* One parameter point, shared (read-only) by all its runners. */
struct hm_plan {
	long entry, nbuckets, cap;
	uint64_t seed;       /* of the key sequence */
	unsigned char *tmpl; /* the value pattern, entry bytes */
};

/* ---- layouts ---- */

struct hm_root { /* pmtx: the root object */
	uint64_t nbuckets;
	pmtx_off buckets; /* heads (log runtimes), group wrappers (cow) */
	uint64_t count;   /* log runtimes */
	pmtx_off meta;    /* cow: wrapper of struct hm_meta */
};

struct hm_ent { /* pmtx: an entry (cow: the payload) */
	uint64_t key;
	pmtx_off next; /* an entry (log runtimes), its wrapper (cow) */
	unsigned char value[];
};

struct hm_group { /* pmtx-cow: the heads of HM_GROUP buckets */
	pmtx_off head[HM_GROUP];
};

struct hm_meta { /* pmtx-cow */
	uint64_t count;
};

struct pd_root { /* pmdk */
	uint64_t nbuckets;
	PMEMoid buckets; /* PMEMoid[nbuckets] */
	uint64_t count;
};

struct pd_ent {
	uint64_t key;
	PMEMoid next;
	unsigned char value[];
};

struct pl_ent { /* plain */
	uint64_t key;
	struct pl_ent *next;
	unsigned char value[];
};

enum hm_kind { HM_LOG, HM_COW, HM_PMDK, HM_PLAIN };

struct hm_ctx {
	const struct hm_plan *pl;
	enum hm_kind kind;
	pmtx_runtime rt;
	pmtx_region *r;
	PMEMobjpool *pop;
	char path[256];
	struct hm_root *root;    /* pmtx */
	pmtx_off *heads;         /* log runtimes: the bucket array */
	pmtx_off *groups;        /* cow: group wrappers */
	struct pd_root *proot;   /* pmdk */
	PMEMoid *pheads;
	struct pl_ent **lheads;  /* plain */
	struct pl_ent *orphan;   /* plain: the entry corrupt() unlinked */
	uint64_t lcount;
	size_t vlen;             /* value bytes */
	uint64_t rng;            /* the key sequence */
	uint64_t *ring;          /* live keys, oldest at rhead */
	long rhead, live;
};

/* ---- shared helpers ---- */

static inline long hm_bucket(const struct hm_ctx *c, uint64_t key)
{
	return (long)(key % (uint64_t)c->pl->nbuckets);
}

/* The value of key: the pattern with its first word replaced. */
static void hm_fill(const struct hm_ctx *c, unsigned char *v, uint64_t key)
{
	uint64_t k = ~key;
	size_t w = c->vlen < 8 ? c->vlen : 8;
	memcpy(v, &k, w);
	memcpy(v + w, c->pl->tmpl + w, c->vlen - w);
}

static int hm_value_ok(const struct hm_ctx *c, const unsigned char *v,
                       uint64_t key)
{
	uint64_t k = ~key;
	size_t w = c->vlen < 8 ? c->vlen : 8;
	return !memcmp(v, &k, w) &&
	       !memcmp(v + w, c->pl->tmpl + w, c->vlen - w);
}

static int hm_fail(const char *what, uint64_t key)
{
	fprintf(stderr, "hashmap: %s (key %#llx)\n", what,
	        (unsigned long long)key);
	return PMTX_E_CORRUPT;
}

static int hm_fail_block(const char *what, pmtx_off off)
{
	fprintf(stderr, "hashmap: %s (block at offset %#llx)\n", what,
	        (unsigned long long)off);
	return PMTX_E_CORRUPT;
}

/* ---- pmtx-undo, pmtx-redo, pmtx-redo-async, pmtx-twin ---- */

/* Follow the chain from *link to key: *at = the link that points to it
 * (or the chain's last link), *found = its offset or 0. */
static int log_find(struct hm_ctx *c, pmtx_tx *tx, pmtx_off *link,
                    uint64_t key, pmtx_off **at, pmtx_off *found)
{
	pmtx_off cur;
	int rc = pmtx_read(tx, &cur, link, sizeof(cur));
	while (!rc && cur) {
		struct hm_ent *e = pmtx_ptr(c->r, cur);
		uint64_t k;
		if ((rc = pmtx_read(tx, &k, &e->key, sizeof(k))) || k == key)
			break;
		link = &e->next;
		rc = pmtx_read(tx, &cur, link, sizeof(cur));
	}
	*at = link;
	*found = cur;
	return rc;
}

static int log_count(struct hm_ctx *c, pmtx_tx *tx, int delta)
{
	uint64_t n;
	int rc = pmtx_read(tx, &n, &c->root->count, sizeof(n));
	n += (uint64_t)(int64_t)delta;
	return rc ? rc : pmtx_write(tx, &c->root->count, &n, sizeof(n));
}

static int log_insert(struct hm_ctx *c, pmtx_tx *tx, uint64_t key)
{
	pmtx_off *slot = &c->heads[hm_bucket(c, key)], *at, dup, head, off;
	int rc = log_find(c, tx, slot, key, &at, &dup);
	if (!rc && dup)
		rc = hm_fail("duplicate key", key);
	if (!rc)
		rc = pmtx_read(tx, &head, slot, sizeof(head));
	if (!rc)
		rc = pmtx_alloc(tx, (size_t)c->pl->entry, &off);
	if (rc)
		return rc;
	struct hm_ent *e = pmtx_ptr(c->r, off); /* fresh: naked stores */
	e->key = key;
	e->next = head;
	hm_fill(c, e->value, key);
	pmtx_flush(c->r, e, (size_t)c->pl->entry);
	rc = pmtx_write(tx, slot, &off, sizeof(off));
	return rc ? rc : log_count(c, tx, 1);
}

static int log_remove(struct hm_ctx *c, pmtx_tx *tx, uint64_t key)
{
	pmtx_off *at, victim, next;
	int rc = log_find(c, tx, &c->heads[hm_bucket(c, key)], key, &at,
	                  &victim);
	if (!rc && !victim)
		rc = hm_fail("live key not found", key);
	if (rc)
		return rc;
	struct hm_ent *e = pmtx_ptr(c->r, victim);
	if (!(rc = pmtx_read(tx, &next, &e->next, sizeof(next))) &&
	    !(rc = pmtx_write(tx, at, &next, sizeof(next))))
		rc = pmtx_free(tx, victim);
	return rc ? rc : log_count(c, tx, -1);
}

/* ---- pmtx-cow ---- */

/* The head slot of key's bucket, in its group opened in mode. */
static int cow_slot(struct hm_ctx *c, pmtx_tx *tx, uint64_t key, int mode,
                    pmtx_off **slot)
{
	long b = hm_bucket(c, key);
	struct hm_group *g;
	int rc = pmtx_cow_open(tx, c->groups[b / HM_GROUP], mode, NULL,
	                       (void **)&g);
	*slot = rc ? NULL : &g->head[b % HM_GROUP];
	return rc;
}

static int cow_entry(pmtx_tx *tx, pmtx_off w, int mode, struct hm_ent **e)
{
	return pmtx_cow_open(tx, w, mode, NULL, (void **)e);
}

/* Follow the chain from head to key: *prev = the wrapper of the entry
 * before it (0: it is the head), *found = its wrapper or 0. */
static int cow_find(pmtx_tx *tx, pmtx_off head, uint64_t key, pmtx_off *prev,
                    pmtx_off *found)
{
	pmtx_off p = 0, w = head;
	while (w) {
		struct hm_ent *e;
		int rc = cow_entry(tx, w, PMTX_COW_READ, &e);
		if (rc)
			return rc;
		if (e->key == key)
			break;
		p = w;
		w = e->next;
	}
	*prev = p;
	*found = w;
	return 0;
}

static int cow_count(struct hm_ctx *c, pmtx_tx *tx, int delta)
{
	struct hm_meta *m;
	int rc = pmtx_cow_open(tx, c->root->meta, PMTX_COW_WRITE, NULL,
	                       (void **)&m);
	if (!rc)
		m->count += (uint64_t)(int64_t)delta;
	return rc;
}

static int cow_insert(struct hm_ctx *c, pmtx_tx *tx, uint64_t key)
{
	pmtx_off *slot, prev, dup, w;
	int rc = cow_slot(c, tx, key, PMTX_COW_READ, &slot);
	if (!rc)
		rc = cow_find(tx, *slot, key, &prev, &dup);
	if (!rc && dup)
		rc = hm_fail("duplicate key", key);
	if (!rc)
		rc = pmtx_cow_new(tx, (size_t)c->pl->entry, &w);
	if (!rc)
		rc = cow_slot(c, tx, key, PMTX_COW_WRITE, &slot);
	if (rc)
		return rc;
	struct hm_ent *e = (struct hm_ent *)pmtx_cow_peek(c->r, w); /* fresh */
	e->key = key;
	e->next = *slot;
	hm_fill(c, e->value, key);
	pmtx_flush(c->r, e, (size_t)c->pl->entry);
	*slot = w;
	return cow_count(c, tx, 1);
}

static int cow_remove(struct hm_ctx *c, pmtx_tx *tx, uint64_t key)
{
	pmtx_off *slot, prev, victim;
	struct hm_ent *e, *p;
	int rc = cow_slot(c, tx, key, PMTX_COW_READ, &slot);
	if (!rc)
		rc = cow_find(tx, *slot, key, &prev, &victim);
	if (!rc && !victim)
		rc = hm_fail("live key not found", key);
	if (!rc)
		rc = cow_entry(tx, victim, PMTX_COW_READ, &e);
	if (rc)
		return rc;
	pmtx_off next = e->next;
	if (prev && !(rc = cow_entry(tx, prev, PMTX_COW_WRITE, &p)))
		p->next = next;
	if (!prev && !(rc = cow_slot(c, tx, key, PMTX_COW_WRITE, &slot)))
		*slot = next;
	if (!rc)
		rc = pmtx_cow_delete(tx, victim);
	return rc ? rc : cow_count(c, tx, -1);
}

/* ---- pmdk (called inside TX_BEGIN; errors abort the transaction) ---- */

static struct pd_ent *pd_ent(PMEMoid o)
{
	return pmemobj_direct(o);
}

static int pd_insert(struct hm_ctx *c, pmtx_tx *unused, uint64_t key)
{
	(void)unused;
	PMEMoid *slot = &c->pheads[hm_bucket(c, key)];
	for (PMEMoid o = *slot; !OID_IS_NULL(o); o = pd_ent(o)->next)
		if (pd_ent(o)->key == key)
			pmemobj_tx_abort(EEXIST);
	PMEMoid n = pmemobj_tx_alloc((size_t)c->pl->entry, HM_TYPE_ENTRY);
	struct pd_ent *e = pd_ent(n);
	e->key = key;
	e->next = *slot;
	hm_fill(c, e->value, key);
	pmemobj_tx_add_range_direct(slot, sizeof(*slot));
	*slot = n;
	pmemobj_tx_add_range_direct(&c->proot->count, sizeof(uint64_t));
	c->proot->count++;
	return 0;
}

static int pd_remove(struct hm_ctx *c, pmtx_tx *unused, uint64_t key)
{
	(void)unused;
	PMEMoid *link = &c->pheads[hm_bucket(c, key)];
	while (!OID_IS_NULL(*link) && pd_ent(*link)->key != key)
		link = &pd_ent(*link)->next;
	if (OID_IS_NULL(*link))
		pmemobj_tx_abort(ENOENT);
	PMEMoid victim = *link;
	pmemobj_tx_add_range_direct(link, sizeof(*link));
	*link = pd_ent(victim)->next;
	pmemobj_tx_free(victim);
	pmemobj_tx_add_range_direct(&c->proot->count, sizeof(uint64_t));
	c->proot->count--;
	return 0;
}

/* ---- plain ---- */

static int pl_insert(struct hm_ctx *c, pmtx_tx *unused, uint64_t key)
{
	(void)unused;
	struct pl_ent **slot = &c->lheads[hm_bucket(c, key)];
	for (struct pl_ent *e = *slot; e; e = e->next)
		if (e->key == key)
			return hm_fail("duplicate key", key);
	struct pl_ent *e = malloc((size_t)c->pl->entry);
	if (!e)
		return ENOMEM;
	e->key = key;
	e->next = *slot;
	hm_fill(c, e->value, key);
	*slot = e;
	c->lcount++;
	return 0;
}

static int pl_remove(struct hm_ctx *c, pmtx_tx *unused, uint64_t key)
{
	(void)unused;
	struct pl_ent **link = &c->lheads[hm_bucket(c, key)];
	while (*link && (*link)->key != key)
		link = &(*link)->next;
	struct pl_ent *e = *link;
	if (!e)
		return hm_fail("live key not found", key);
	*link = e->next;
	free(e);
	c->lcount--;
	return 0;
}

/* ---- the operation ---- */

/* Each kind's insert and remove of a key. */
static const struct {
	int (*insert)(struct hm_ctx *c, pmtx_tx *tx, uint64_t key);
	int (*remove)(struct hm_ctx *c, pmtx_tx *tx, uint64_t key);
} hm_ops[] = {
	[HM_LOG] = {log_insert, log_remove},
	[HM_COW] = {cow_insert, cow_remove},
	[HM_PMDK] = {pd_insert, pd_remove},
	[HM_PLAIN] = {pl_insert, pl_remove},
};

/* One insert: at cap, remove the oldest first. The DRAM record of live
 * keys follows at once (a failed transaction fails the run anyway). */
static int hm_step(struct hm_ctx *c, pmtx_tx *tx)
{
	const long cap = c->pl->cap;
	int rc = 0;
	if (c->live == cap) {
		rc = hm_ops[c->kind].remove(c, tx, c->ring[c->rhead]);
		c->rhead = (c->rhead + 1) % cap;
		c->live--;
	}
	uint64_t key = bench_rand(&c->rng);
	if (!rc)
		rc = hm_ops[c->kind].insert(c, tx, key);
	c->ring[(c->rhead + c->live) % cap] = key;
	c->live++;
	return rc;
}

static int hm_steps(struct hm_ctx *c, pmtx_tx *tx, long n)
{
	int rc = 0;
	for (long i = 0; !rc && i < n; i++)
		rc = hm_step(c, tx);
	return rc;
}

static int pmtx_txn(struct hm_ctx *c, long n)
{
	pmtx_tx *tx;
	int rc = pmtx_begin(c->r, c->rt, &tx);
	if (rc)
		return rc;
	return bench_tx_end(tx, hm_steps(c, tx, n));
}

struct hm_steps_arg {
	struct hm_ctx *c;
	long n;
};

static void pmdk_body(void *arg)
{
	struct hm_steps_arg *a = arg;
	hm_steps(a->c, NULL, a->n);
}

static int pmdk_txn(struct hm_ctx *c, long n)
{
	struct hm_steps_arg a = {c, n};
	return bench_pmdk_tx(c->pop, pmdk_body, &a);
}

/* n inserts in one transaction. */
static int hm_txn(struct hm_ctx *c, long n)
{
	switch (c->kind) {
	case HM_PMDK: return pmdk_txn(c, n);
	case HM_PLAIN: return hm_steps(c, NULL, n);
	default: return pmtx_txn(c, n);
	}
}

static int hm_run(void *vctx, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		int rc = hm_txn(vctx, 1);
		if (rc)
			return rc;
	}
	return 0;
}

static int hm_prefill(struct hm_ctx *c)
{
	while (c->live < c->pl->cap) {
		long k = c->pl->cap - c->live;
		int rc = hm_txn(c, k < HM_PREFILL_BATCH ? k : HM_PREFILL_BATCH);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- validation ---- */

/* One entry met in a walk: its bucket, key, value and heap blocks. */
struct hm_visit {
	long bucket;
	uint64_t key;
	const unsigned char *value;
	pmtx_off blk[2];
};

struct hm_audit {
	uint64_t *keys;   /* live keys, sorted */
	uint8_t *seen;    /* per live key */
	long entries;
	pmtx_off *blocks; /* heap blocks the map uses */
	long nblocks, maxblocks;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int audit_block(struct hm_audit *a, pmtx_off off)
{
	if (a->nblocks == a->maxblocks)
		return hm_fail_block("more blocks than the map can have", off);
	a->blocks[a->nblocks++] = off;
	return 0;
}

static int audit_entry(struct hm_ctx *c, struct hm_audit *a,
                       const struct hm_visit *v)
{
	if (hm_bucket(c, v->key) != v->bucket)
		return hm_fail("entry in the wrong bucket", v->key);
	uint64_t *k = bsearch(&v->key, a->keys, (size_t)c->live,
	                      sizeof(uint64_t), cmp_u64);
	if (!k)
		return hm_fail("entry whose key is not live", v->key);
	if (a->seen[k - a->keys]++)
		return hm_fail("key found twice", v->key);
	if (!hm_value_ok(c, v->value, v->key))
		return hm_fail("entry with a wrong value", v->key);
	a->entries++;
	int rc = 0;
	for (int i = 0; !rc && i < 2 && v->blk[i]; i++)
		rc = audit_block(a, v->blk[i]);
	return rc;
}

static pmtx_off cow_payload_off(const struct hm_ctx *c, pmtx_off w)
{
	return pmtx_off_of(c->r, pmtx_cow_peek(c->r, w));
}

/* Visit every entry of bucket b; stop at the first failure. */
static int walk_bucket(struct hm_ctx *c, struct hm_audit *a, long b)
{
	struct hm_visit v = {.bucket = b};
	int rc = 0;
	if (c->kind == HM_LOG) {
		for (pmtx_off o = c->heads[b]; o && !rc;) {
			const struct hm_ent *e = pmtx_ptr(c->r, o);
			v.key = e->key, v.value = e->value, v.blk[0] = o;
			rc = audit_entry(c, a, &v);
			o = e->next;
		}
	} else if (c->kind == HM_COW) {
		const struct hm_group *g =
			pmtx_cow_peek(c->r, c->groups[b / HM_GROUP]);
		for (pmtx_off w = g->head[b % HM_GROUP]; w && !rc;) {
			const struct hm_ent *e = pmtx_cow_peek(c->r, w);
			v.key = e->key, v.value = e->value;
			v.blk[0] = w, v.blk[1] = cow_payload_off(c, w);
			rc = audit_entry(c, a, &v);
			w = e->next;
		}
	} else if (c->kind == HM_PMDK) {
		for (PMEMoid o = c->pheads[b]; !OID_IS_NULL(o) && !rc;
		     o = pd_ent(o)->next) {
			v.key = pd_ent(o)->key, v.value = pd_ent(o)->value;
			rc = audit_entry(c, a, &v);
		}
	} else {
		for (const struct pl_ent *e = c->lheads[b]; e && !rc;
		     e = e->next) {
			v.key = e->key, v.value = e->value;
			rc = audit_entry(c, a, &v);
		}
	}
	return rc;
}

/* The blocks the map uses besides its entries. */
static int audit_fixed_blocks(struct hm_ctx *c, struct hm_audit *a)
{
	int rc = audit_block(a, c->root->buckets);
	long ngroups = (c->pl->nbuckets + HM_GROUP - 1) / HM_GROUP;
	if (c->kind != HM_COW)
		return rc;
	if (!rc && !(rc = audit_block(a, c->root->meta)))
		rc = audit_block(a, cow_payload_off(c, c->root->meta));
	for (long g = 0; !rc && g < ngroups; g++)
		if (!(rc = audit_block(a, c->groups[g])))
			rc = audit_block(a, cow_payload_off(c, c->groups[g]));
	return rc;
}

static uint64_t hm_persistent_count(const struct hm_ctx *c)
{
	const struct hm_meta *m;
	switch (c->kind) {
	case HM_LOG: return c->root->count;
	case HM_COW:
		m = pmtx_cow_peek(c->r, c->root->meta);
		return m->count;
	case HM_PMDK: return c->proot->count;
	default: return c->lcount;
	}
}

struct heap_audit {
	const struct hm_audit *a;
	uint8_t *seen;
	long n;
};

static int heap_block(pmtx_off off, size_t usable, void *arg)
{
	struct heap_audit *h = arg;
	(void)usable;
	pmtx_off *p = bsearch(&off, h->a->blocks, (size_t)h->a->nblocks,
	                      sizeof(pmtx_off), cmp_u64);
	if (!p)
		return hm_fail_block("heap block the map does not use", off);
	if (h->seen[p - h->a->blocks]++)
		return hm_fail_block("heap block reported twice", off);
	h->n++;
	return 0;
}

/* pmtx: the heap is consistent and holds exactly the map's blocks. */
static int audit_heap(struct hm_ctx *c, struct hm_audit *a)
{
	pmtx_heap_stats st;
	if (pmtx_heap_check(c->r, &st)) {
		fprintf(stderr, "hashmap: heap check: %s\n", st.first_error);
		return PMTX_E_CORRUPT;
	}
	qsort(a->blocks, (size_t)a->nblocks, sizeof(pmtx_off), cmp_u64);
	struct heap_audit h = {a, calloc((size_t)a->nblocks + 1, 1), 0};
	if (!h.seen)
		return ENOMEM;
	int rc = pmtx_heap_walk(c->r, heap_block, &h);
	if (!rc && h.n != a->nblocks) {
		fprintf(stderr, "hashmap: heap walk found %ld of the map's %ld "
		        "blocks\n", h.n, a->nblocks);
		rc = PMTX_E_CORRUPT;
	}
	free(h.seen);
	return rc;
}

static int audit_map(struct hm_ctx *c, struct hm_audit *a)
{
	int rc = 0;
	for (long b = 0; !rc && b < c->pl->nbuckets; b++)
		rc = walk_bucket(c, a, b);
	if (!rc && (a->entries != c->live ||
	            hm_persistent_count(c) != (uint64_t)c->live)) {
		fprintf(stderr, "hashmap: %ld entries in the chains, "
		        "count %llu, %ld live keys\n", a->entries,
		        (unsigned long long)hm_persistent_count(c), c->live);
		rc = PMTX_E_CORRUPT;
	}
	if (!rc && c->r)
		rc = audit_fixed_blocks(c, a);
	return !rc && c->r ? audit_heap(c, a) : rc;
}

static int hm_check(void *vctx)
{
	struct hm_ctx *c = vctx;
	long ngroups = (c->pl->nbuckets + HM_GROUP - 1) / HM_GROUP;
	struct hm_audit a = {
		.keys = malloc(((size_t)c->live + 1) * sizeof(uint64_t)),
		.seen = calloc((size_t)c->live + 1, 1),
		.maxblocks = 2 * c->live + 2 * ngroups + 4,
	};
	a.blocks = malloc((size_t)a.maxblocks * sizeof(pmtx_off));
	int rc = a.keys && a.seen && a.blocks ? 0 : ENOMEM;
	for (long i = 0; !rc && i < c->live; i++)
		a.keys[i] = c->ring[(c->rhead + i) % c->pl->cap];
	if (!rc) {
		qsort(a.keys, (size_t)c->live, sizeof(uint64_t), cmp_u64);
		rc = audit_map(c, &a);
	}
	free(a.keys);
	free(a.seen);
	free(a.blocks);
	return rc;
}

/* pmtx-cow: the head slot of bucket b in the committed group. */
static pmtx_off *cow_head(struct hm_ctx *c, long b)
{
	struct hm_group *g =
		(struct hm_group *)pmtx_cow_peek(c->r, c->groups[b / HM_GROUP]);
	return &g->head[b % HM_GROUP];
}

/* Unlink the head of the first non-empty bucket with a naked store. */
static void hm_corrupt(void *vctx)
{
	struct hm_ctx *c = vctx;
	for (long b = 0; b < c->pl->nbuckets; b++) {
		if (c->kind == HM_LOG && c->heads[b]) {
			struct hm_ent *e = pmtx_ptr(c->r, c->heads[b]);
			c->heads[b] = e->next;
			return;
		}
		if (c->kind == HM_COW && *cow_head(c, b)) {
			const struct hm_ent *e =
				pmtx_cow_peek(c->r, *cow_head(c, b));
			*cow_head(c, b) = e->next;
			return;
		}
		if (c->kind == HM_PMDK && !OID_IS_NULL(c->pheads[b])) {
			c->pheads[b] = pd_ent(c->pheads[b])->next;
			return;
		}
		if (c->kind == HM_PLAIN && c->lheads[b]) {
			c->orphan = c->lheads[b];
			c->lheads[b] = c->orphan->next;
			return;
		}
	}
}

/* ---- setup ---- */

static void hm_destroy(void *vctx)
{
	struct hm_ctx *c = vctx;
	bench_close(c->r, c->pop, c->path);
	for (long b = 0; c->lheads && b < c->pl->nbuckets; b++)
		for (struct pl_ent *e = c->lheads[b], *n; e; e = n) {
			n = e->next;
			free(e);
		}
	free(c->orphan);
	free(c->lheads);
	free(c->ring);
	free(c);
}

static struct hm_ctx *hm_ctx_new(const struct hm_plan *pl, enum hm_kind kind)
{
	struct hm_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->pl = pl;
	c->kind = kind;
	c->rng = pl->seed ? pl->seed : 1;
	c->vlen = (size_t)pl->entry - (kind == HM_PMDK ? sizeof(struct pd_ent)
	                                               : sizeof(struct hm_ent));
	if (!(c->ring = malloc((size_t)pl->cap * sizeof(uint64_t)))) {
		free(c);
		return NULL;
	}
	return c;
}

/* The end of a maker: prefill the map, then bind r to it (or destroy c
 * if rc, or the prefill, failed). */
static int hm_ready(struct runner *r, struct hm_ctx *c, int rc)
{
	if (!rc)
		rc = hm_prefill(c);
	return bench_bind(r, rc, c, hm_run, hm_check, hm_corrupt, hm_destroy);
}

/* The map's empty structure, in one setup transaction (undo; twin in a
 * twin region). */
static int log_setup(struct hm_ctx *c, pmtx_tx *tx)
{
	pmtx_off b;
	size_t sz = (size_t)c->pl->nbuckets * sizeof(pmtx_off);
	int rc = pmtx_zalloc(tx, sz, &b);
	if (!rc)
		rc = PMTX_SET(tx, c->root->buckets, b);
	return rc;
}

static int cow_setup(struct hm_ctx *c, pmtx_tx *tx)
{
	long ngroups = (c->pl->nbuckets + HM_GROUP - 1) / HM_GROUP;
	pmtx_off b = 0, m = 0;
	int rc = pmtx_zalloc(tx, (size_t)ngroups * sizeof(pmtx_off), &b);
	if (!rc)
		rc = pmtx_cow_new(tx, sizeof(struct hm_meta), &m);
	if (!rc && !(rc = PMTX_SET(tx, c->root->buckets, b)))
		rc = PMTX_SET(tx, c->root->meta, m);
	pmtx_off *groups = pmtx_ptr(c->r, b);
	for (long g = 0; !rc && g < ngroups; g++)
		rc = pmtx_cow_new(tx, sizeof(struct hm_group), &groups[g]);
	if (!rc) /* a block allocated in tx: naked stores + flush */
		pmtx_flush(c->r, groups, (size_t)ngroups * sizeof(pmtx_off));
	return rc;
}

static int hm_pmtx_setup(struct hm_ctx *c)
{
	pmtx_tx *tx;
	c->root = pmtx_root(c->r, NULL);
	int rc = pmtx_begin(c->r, bench_setup_rt(c->rt), &tx);
	if (rc)
		return rc;
	if (!(rc = PMTX_SET(tx, c->root->nbuckets, (uint64_t)c->pl->nbuckets)))
		rc = c->kind == HM_COW ? cow_setup(c, tx) : log_setup(c, tx);
	if ((rc = bench_tx_end(tx, rc)))
		return rc;
	c->heads = pmtx_ptr(c->r, c->root->buckets);
	c->groups = c->heads;
	return 0;
}

/* Live entries, plus one in flight and the frees that redo-async releases
 * only when their truncation retires (one per descriptor); 16 MB for the
 * region's own metadata and for logs that outgrow their first chunk (a
 * 64 KiB chunk on each of the 64 descriptors is 4 MB). */
static size_t hm_region_size(const struct hm_plan *pl, pmtx_runtime rt)
{
	size_t live = (size_t)pl->cap + 1 + 64;
	size_t ngroups = (size_t)(pl->nbuckets + HM_GROUP - 1) / HM_GROUP;
	size_t sz = (16u << 20) + bench_heap_block((size_t)pl->nbuckets * 8) +
	            live * bench_heap_block((size_t)pl->entry);
	if (rt == PMTX_RT_COW)
		sz += live * bench_heap_block(32) + 2 * bench_heap_block((size_t)pl->entry) +
		      ngroups * (bench_heap_block(32) + 2 * bench_heap_block(HM_GROUP * 8));
	return sz;
}

static int hm_pmtx_runner(struct runner *r, const struct bench_opts *o,
                          pmtx_runtime rt, struct bench_cfg cfg, void *arg)
{
	const struct hm_plan *pl = arg;
	struct hm_ctx *c = hm_ctx_new(pl, rt == PMTX_RT_COW ? HM_COW : HM_LOG);
	if (!c)
		return ENOMEM;
	c->rt = rt;
	int rc = bench_region(r, o, rt, cfg, sizeof(struct hm_root),
	                      hm_region_size(pl, rt), &c->r, c->path);
	return hm_ready(r, c, rc ? rc : hm_pmtx_setup(c));
}

static int pd_setup(struct hm_ctx *c)
{
	size_t sz = (size_t)c->pl->nbuckets * sizeof(PMEMoid);
	c->proot = pmemobj_direct(pmemobj_root(c->pop, sizeof(struct pd_root)));
	if (pmemobj_zalloc(c->pop, &c->proot->buckets, sz, HM_TYPE_BUCKETS)) {
		fprintf(stderr, "pmemobj_zalloc: %s\n", pmemobj_errormsg());
		return PMTX_E_NOMEM;
	}
	c->proot->nbuckets = (uint64_t)c->pl->nbuckets;
	pmemobj_persist(c->pop, c->proot, sizeof(*c->proot));
	c->pheads = pmemobj_direct(c->proot->buckets);
	return 0;
}

static int hm_pmdk_runner(struct runner *r, const struct bench_opts *o,
                          void *arg)
{
	const struct hm_plan *pl = arg;
	struct hm_ctx *c = hm_ctx_new(pl, HM_PMDK);
	if (!c)
		return ENOMEM;
	size_t per = ((size_t)pl->entry + 64) * 3 / 2;
	size_t pool = ((size_t)pl->cap + 128) * per +
	              (size_t)pl->nbuckets * sizeof(PMEMoid) + (32u << 20);
	int rc = bench_pmdk_pool(r, o, sizeof(struct pd_root), pool, &c->pop,
	                         c->path);
	return hm_ready(r, c, rc ? rc : pd_setup(c));
}

static int hm_plain_runner(struct runner *r, const struct bench_opts *o,
                           void *arg)
{
	const struct hm_plan *pl = arg;
	struct hm_ctx *c = hm_ctx_new(pl, HM_PLAIN);
	(void)o;
	if (!c)
		return ENOMEM;
	bench_plain_names(r);
	c->lheads = calloc((size_t)pl->nbuckets, sizeof(*c->lheads));
	return hm_ready(r, c, c->lheads ? 0 : ENOMEM);
}

/* ---- the sweep ---- */

static const struct bench_makers hm_makers = BENCH_MAKERS(
	bench_obj_runtimes, hm_pmtx_runner, hm_pmdk_runner, hm_plain_runner);

static int hm_point(const struct bench_opts *o, struct hm_plan *pl)
{
	uint64_t s = pl->seed ^ 0x9e3779b97f4a7c15ull;
	pl->tmpl = malloc((size_t)pl->entry);
	if (!pl->tmpl)
		return ENOMEM;
	for (long i = 0; i < pl->entry; i++)
		pl->tmpl[i] = (unsigned char)bench_rand(&s);
	struct runner rs[BENCH_MAX_RUNNERS];
	int n = 0, rc = bench_runners(rs, &n, o, &hm_makers, pl);
	char params[96];
	snprintf(params, sizeof(params), "\"entry\":%ld,\"buckets\":%ld,"
	         "\"cap\":%ld", pl->entry, pl->nbuckets, pl->cap);
	rc = bench_point(rs, n, rc, o, "hashmap", params, NULL);
	free(pl->tmpl);
	return rc;
}

int wl_hashmap(const struct bench_opts *o)
{
	static const char *const systems[] = {
		"pmtx-undo", "pmtx-redo", "pmtx-redo-async", "pmtx-cow",
		"pmtx-twin", "pmdk", "plain", NULL};
	long entries[32];
	if (bench_check_systems(o, "hashmap", systems))
		return PMTX_E_INVAL;
	int ne = bench_param_in(o, "hashmap", "entry",
	                        "128,256,512,1024,2048,4096,8192", 32, LONG_MAX,
	                        entries, 32);
	long nb = bench_param1(o, "buckets", 65536);
	long cap = bench_param1(o, "cap", 20000);
	uint64_t seed = (uint64_t)bench_param1(o, "seed", 1);
	if (nb < 1 || cap < 1) {
		fprintf(stderr, "hashmap: buckets and cap must be >= 1\n");
		return PMTX_E_INVAL;
	}
	int rc = ne < 0 ? PMTX_E_INVAL : 0;
	for (int i = 0; !rc && i < ne; i++) {
		struct hm_plan pl = {.entry = entries[i], .nbuckets = nb,
		                     .cap = cap, .seed = seed};
		rc = hm_point(o, &pl);
	}
	return rc;
}
