/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmdk_set.c - PMDK's side of the `set` workload: a B-tree and a chained
 * hash map of 64-bit keys on libpmemobj's C API, written for pmtx-bench
 * in the shape of PMDK's examples (btree_map, hashmap_tx), so that the
 * comparison is with PMDK used as its own examples use it.
 *
 * B-tree (pb_*): a classic B-tree of order PB_ORDER (8, btree_map's):
 * every node holds 1..7 items (3..7 below the root) and, when inner, one
 * child more; items live in inner nodes too. An add splits full nodes on
 * the way down (so it never walks back up); a remove merges or rotates on
 * the way down so that the node it descends into holds more than the
 * minimum (CLRS's one-pass deletion), and an inner node's item is
 * replaced by its predecessor or successor. Both first look the key up
 * with plain loads and return 0 without writing when there is nothing to
 * do. Each node is snapshotted whole (pmemobj_tx_add_range_direct, as
 * btree_map's TX_ADD of a node) once per operation before its first
 * store; nodes allocated by the operation (pmemobj_tx_zalloc) are not
 * snapshotted (PMDK persists them at commit). No entry count is kept
 * (btree_map keeps none): the workload's validator counts by walking.
 *
 * Hash map (ph_*): 2^log2 bucket heads (PMEMoid), fixed at ph_init (the
 * workload sizes it to the key range, so chains stay short and, as in
 * hashmap_tx below its rehash threshold, nothing is ever rehashed), and
 * one 32-byte entry {key, value, next} per key, allocated in the
 * transaction. An add links the entry at its chain's head (the slot
 * snapshotted); a remove snapshots the link that names the victim,
 * unlinks it and frees it (pmemobj_tx_free). No count (nothing reads it).
 *
 * Both run inside the caller's transaction (bench_pmdk_tx: TX_BEGIN ..
 * TX_END); a PMDK failure aborts it (pmemobj_tx_* abort by themselves).
 */
#include <stdio.h>
#include <string.h>

#include "pmdk_set.h"

#define PB_TYPE_NODE 11 /* PMDK type numbers */
#define PH_TYPE_ENTRY 12
#define PH_TYPE_BUCKETS 13

/* ---- B-tree ---- */

/* Nodes of one operation that need no snapshot: already snapshotted, or
 * allocated by it. An operation touches at most 3 per level. */
struct pb_op {
	const void *done[3 * 64];
	int n;
};

static struct pb_node *nd(PMEMoid o)
{
	return pmemobj_direct(o);
}

static int is_leaf(const struct pb_node *x)
{
	return OID_IS_NULL(x->child[0]);
}

static void snap(struct pb_op *op, struct pb_node *x)
{
	for (int i = 0; i < op->n; i++)
		if (op->done[i] == x)
			return;
	pmemobj_tx_add_range_direct(x, sizeof(*x));
	if (op->n < (int)(sizeof(op->done) / sizeof(*op->done)))
		op->done[op->n++] = x;
}

static PMEMoid new_node(struct pb_op *op)
{
	PMEMoid o = pmemobj_tx_zalloc(sizeof(struct pb_node), PB_TYPE_NODE);
	if (op->n < (int)(sizeof(op->done) / sizeof(*op->done)))
		op->done[op->n++] = nd(o);
	return o;
}

/* The first item of x whose key is >= key (x->n if none). */
static uint64_t lower(const struct pb_node *x, uint64_t key)
{
	uint64_t i = 0;
	while (i < x->n && x->it[i].key < key)
		i++;
	return i;
}

int pb_contains(const struct pb_root *t, uint64_t key)
{
	for (PMEMoid o = t->root; !OID_IS_NULL(o);) {
		const struct pb_node *x = nd(o);
		uint64_t i = lower(x, key);
		if (i < x->n && x->it[i].key == key)
			return 1;
		o = x->child[i];
	}
	return 0;
}

/* Split x's full child i: its upper half moves to a new node, its median
 * up into x (which is not full). */
static void split_child(struct pb_op *op, struct pb_node *x, uint64_t i)
{
	struct pb_node *y = nd(x->child[i]);
	PMEMoid zo = new_node(op);
	struct pb_node *z = nd(zo);
	const uint64_t m = PB_MAX / 2; /* the median's index */
	snap(op, x);
	snap(op, y);
	z->n = PB_MAX - m - 1;
	memcpy(z->it, &y->it[m + 1], z->n * sizeof(struct pb_item));
	if (!is_leaf(y))
		memcpy(z->child, &y->child[m + 1],
		       (z->n + 1) * sizeof(PMEMoid));
	memmove(&x->it[i + 1], &x->it[i], (x->n - i) * sizeof(struct pb_item));
	memmove(&x->child[i + 2], &x->child[i + 1],
	        (x->n - i) * sizeof(PMEMoid));
	x->it[i] = y->it[m];
	x->child[i + 1] = zo;
	x->n++;
	y->n = m;
	memset(&y->child[m + 1], 0, (PB_ORDER - m - 1) * sizeof(PMEMoid));
}

static void insert_nonfull(struct pb_op *op, struct pb_node *x, uint64_t key)
{
	for (;;) {
		uint64_t i = lower(x, key);
		if (is_leaf(x)) {
			snap(op, x);
			memmove(&x->it[i + 1], &x->it[i],
			        (x->n - i) * sizeof(struct pb_item));
			x->it[i] = (struct pb_item){key, key};
			x->n++;
			return;
		}
		if (nd(x->child[i])->n == PB_MAX) {
			split_child(op, x, i);
			if (key > x->it[i].key)
				i++;
		}
		x = nd(x->child[i]);
	}
}

int pb_add(struct pb_root *t, uint64_t key)
{
	struct pb_op op = {.n = 0};
	if (pb_contains(t, key))
		return 0;
	if (OID_IS_NULL(t->root) || nd(t->root)->n == PB_MAX) {
		PMEMoid s = new_node(&op);
		pmemobj_tx_add_range_direct(&t->root, sizeof(t->root));
		if (!OID_IS_NULL(t->root)) {
			nd(s)->child[0] = t->root;
			split_child(&op, nd(s), 0);
		}
		t->root = s;
	}
	insert_nonfull(&op, nd(t->root), key);
	return 1;
}

/* Merge x's child i+1 into child i, with x's item i between them (both
 * children hold PB_MIN items). */
static void merge(struct pb_op *op, struct pb_node *x, uint64_t i)
{
	struct pb_node *y = nd(x->child[i]);
	PMEMoid zo = x->child[i + 1];
	struct pb_node *z = nd(zo);
	snap(op, x);
	snap(op, y);
	y->it[y->n] = x->it[i];
	memcpy(&y->it[y->n + 1], z->it, z->n * sizeof(struct pb_item));
	if (!is_leaf(y))
		memcpy(&y->child[y->n + 1], z->child,
		       (z->n + 1) * sizeof(PMEMoid));
	y->n += 1 + z->n;
	memmove(&x->it[i], &x->it[i + 1],
	        (x->n - i - 1) * sizeof(struct pb_item));
	memmove(&x->child[i + 1], &x->child[i + 2],
	        (x->n - i - 1) * sizeof(PMEMoid));
	x->child[x->n] = OID_NULL;
	x->n--;
	pmemobj_tx_free(zo);
}

/* Child c = x's child i holds PB_MIN items: give it one more, from a
 * sibling through x, or merge it with one. Returns the child to descend
 * into. */
static struct pb_node *fill_child(struct pb_op *op, struct pb_node *x,
                                  uint64_t i)
{
	struct pb_node *c = nd(x->child[i]);
	struct pb_node *l = i > 0 ? nd(x->child[i - 1]) : NULL;
	struct pb_node *r = i < x->n ? nd(x->child[i + 1]) : NULL;
	if (l && l->n > PB_MIN) { /* rotate right */
		snap(op, x), snap(op, c), snap(op, l);
		memmove(&c->it[1], c->it, c->n * sizeof(struct pb_item));
		memmove(&c->child[1], c->child, (c->n + 1) * sizeof(PMEMoid));
		c->it[0] = x->it[i - 1];
		c->child[0] = l->child[l->n];
		x->it[i - 1] = l->it[l->n - 1];
		l->child[l->n] = OID_NULL;
		l->n--;
		c->n++;
		return c;
	}
	if (r && r->n > PB_MIN) { /* rotate left */
		snap(op, x), snap(op, c), snap(op, r);
		c->it[c->n] = x->it[i];
		c->child[c->n + 1] = r->child[0];
		x->it[i] = r->it[0];
		memmove(r->it, &r->it[1], (r->n - 1) * sizeof(struct pb_item));
		memmove(r->child, &r->child[1], r->n * sizeof(PMEMoid));
		r->child[r->n] = OID_NULL;
		r->n--;
		c->n++;
		return c;
	}
	if (r) {
		merge(op, x, i);
		return c;
	}
	merge(op, x, i - 1);
	return l;
}

/* The largest (dir 1) or smallest (dir 0) item under node x. */
static struct pb_item extreme(const struct pb_node *x, int dir)
{
	while (!is_leaf(x))
		x = nd(x->child[dir ? x->n : 0]);
	return x->it[dir ? x->n - 1 : 0];
}

/* Remove key from the subtree of x, which holds more than PB_MIN items
 * (or is the root); key is in it. */
static void remove_from(struct pb_op *op, struct pb_node *x, uint64_t key)
{
	for (;;) {
		uint64_t i = lower(x, key);
		int here = i < x->n && x->it[i].key == key;
		if (here && is_leaf(x)) {
			snap(op, x);
			memmove(&x->it[i], &x->it[i + 1],
			        (x->n - i - 1) * sizeof(struct pb_item));
			x->n--;
			return;
		}
		if (is_leaf(x))
			return; /* absent: pb_remove looked first */
		if (here) {
			struct pb_node *y = nd(x->child[i]);
			struct pb_node *z = nd(x->child[i + 1]);
			if (y->n > PB_MIN || z->n > PB_MIN) {
				/* the predecessor from y, or the successor */
				struct pb_node *from = y->n > PB_MIN ? y : z;
				struct pb_item it = extreme(from, from == y);
				snap(op, x);
				x->it[i] = it;
				key = it.key;
				x = from;
			} else {
				merge(op, x, i);
				x = y;
			}
			continue;
		}
		x = nd(x->child[i])->n > PB_MIN ? nd(x->child[i])
		                                 : fill_child(op, x, i);
	}
}

int pb_remove(struct pb_root *t, uint64_t key)
{
	struct pb_op op = {.n = 0};
	if (!pb_contains(t, key))
		return 0;
	PMEMoid ro = t->root;
	struct pb_node *root = nd(ro);
	remove_from(&op, root, key);
	if (root->n == 0) {
		pmemobj_tx_add_range_direct(&t->root, sizeof(t->root));
		t->root = root->child[0]; /* null for a leaf: empty */
		pmemobj_tx_free(ro);
	}
	return 1;
}

/* ---- B-tree: the validator's walk ---- */

struct pb_walk_ctx {
	int (*fn)(uint64_t, uint64_t, void *);
	void *arg;
	int depth; /* of the leaves, once one is met (-1 before) */
};

static int pb_fault(const char *what, uint64_t key)
{
	fprintf(stderr, "pmdk-btree: %s (key %llu)\n", what,
	        (unsigned long long)key);
	return -1;
}

/* Walk x's subtree, whose keys lie in (lo, hi) (bounds open, each
 * ignored when its flag is 0), at depth d. */
static int pb_walk_node(struct pb_walk_ctx *w, const struct pb_node *x,
                        int d, int is_root, uint64_t lo, int has_lo,
                        uint64_t hi, int has_hi)
{
	if (x->n > PB_MAX || x->n < (is_root ? 1u : (uint64_t)PB_MIN) ||
	    d > 64)
		return pb_fault("node with a wrong item count", x->n);
	if (is_leaf(x) && w->depth < 0)
		w->depth = d;
	if (is_leaf(x) && w->depth != d)
		return pb_fault("leaves at different depths", x->it[0].key);
	for (uint64_t i = 0; i <= x->n; i++) {
		uint64_t l = i ? x->it[i - 1].key : lo;
		uint64_t h = i < x->n ? x->it[i].key : hi;
		int hl = i ? 1 : has_lo, hh = i < x->n ? 1 : has_hi;
		if (i < x->n && ((hl && x->it[i].key <= l) ||
		                 (has_hi && x->it[i].key >= hi)))
			return pb_fault("keys out of order", x->it[i].key);
		int rc = 0;
		if (!is_leaf(x)) {
			if (OID_IS_NULL(x->child[i]))
				return pb_fault("inner node lacks a child", l);
			rc = pb_walk_node(w, nd(x->child[i]), d + 1, 0, l, hl,
			                  h, hh);
		}
		if (!rc && i < x->n)
			rc = w->fn(x->it[i].key, x->it[i].val, w->arg);
		if (rc)
			return rc;
	}
	return 0;
}

int pb_walk(const struct pb_root *t, int (*fn)(uint64_t, uint64_t, void *),
            void *arg)
{
	struct pb_walk_ctx w = {fn, arg, -1};
	if (OID_IS_NULL(t->root))
		return 0;
	return pb_walk_node(&w, nd(t->root), 0, 1, 0, 0, 0, 0);
}

/* ---- hash map ---- */

static struct ph_entry *ent(PMEMoid o)
{
	return pmemobj_direct(o);
}

static PMEMoid *slot(const struct ph_root *h, uint64_t key)
{
	PMEMoid *b = pmemobj_direct(h->buckets);
	return &b[(key * 0x9e3779b97f4a7c15ull) >> (64 - h->log2)];
}

int ph_init(PMEMobjpool *pop, struct ph_root *h, unsigned log2)
{
	size_t sz = sizeof(PMEMoid) << log2;
	if (log2 < 1 || log2 > 40 ||
	    pmemobj_zalloc(pop, &h->buckets, sz, PH_TYPE_BUCKETS)) {
		fprintf(stderr, "pmemobj_zalloc: %s\n", pmemobj_errormsg());
		return -1;
	}
	h->log2 = log2;
	pmemobj_persist(pop, h, sizeof(*h));
	return 0;
}

int ph_contains(const struct ph_root *h, uint64_t key)
{
	for (PMEMoid o = *slot(h, key); !OID_IS_NULL(o); o = ent(o)->next)
		if (ent(o)->key == key)
			return 1;
	return 0;
}

int ph_add(struct ph_root *h, uint64_t key)
{
	if (ph_contains(h, key))
		return 0;
	PMEMoid *s = slot(h, key);
	PMEMoid n = pmemobj_tx_alloc(sizeof(struct ph_entry), PH_TYPE_ENTRY);
	*ent(n) = (struct ph_entry){key, key, *s};
	pmemobj_tx_add_range_direct(s, sizeof(*s));
	*s = n;
	return 1;
}

int ph_remove(struct ph_root *h, uint64_t key)
{
	PMEMoid *link = slot(h, key);
	while (!OID_IS_NULL(*link) && ent(*link)->key != key)
		link = &ent(*link)->next;
	if (OID_IS_NULL(*link))
		return 0;
	PMEMoid victim = *link;
	pmemobj_tx_add_range_direct(link, sizeof(*link));
	*link = ent(victim)->next;
	pmemobj_tx_free(victim);
	return 1;
}

int ph_walk(const struct ph_root *h, int (*fn)(uint64_t, uint64_t, void *),
            void *arg)
{
	const PMEMoid *b = pmemobj_direct(h->buckets);
	for (uint64_t i = 0; i < (1ull << h->log2); i++)
		for (PMEMoid o = b[i]; !OID_IS_NULL(o); o = ent(o)->next) {
			if (slot(h, ent(o)->key) != &b[i]) {
				fprintf(stderr, "pmdk-hmap: key %llu in the "
				        "wrong bucket\n",
				        (unsigned long long)ent(o)->key);
				return -1;
			}
			int rc = fn(ent(o)->key, ent(o)->val, arg);
			if (rc)
				return rc;
		}
	return 0;
}
