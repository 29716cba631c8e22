/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * workloads.c - the built-in workloads of `pmtx crashtest`, written
 * against the public explorer API (pmtx_explore.h) like any program's.
 *
 * Every workload is deterministic from the seed: transaction i of thread t
 * draws its choices from rnd(seed, t, i) alone, so the model can replay
 * the first k transactions on a DRAM copy and say exactly what the region
 * must hold after them.
 *
 * Cell workloads (sps, bank, abort, mt) work on NCELLS 64-bit cells. Where
 * the cells live depends on the runtime:
 *   undo, redo, redo-async, an array in the root, written with
 *   auto, twin              pmtx_write (under auto and twin, every other
 *                           transaction stores its last operation in
 *                           place, after pmtx_add_range);
 *   cow                     NCELLS/8 copy-on-write objects of 8 cells,
 *                           their wrappers in the root;
 *   cltx                    NCELLS/3 cache-line transactional lines of 3
 *                           cells in the root; a transaction then touches
 *                           one line only, so its cells are drawn from one
 *                           line.
 * The list workload allocates and frees: a singly linked list with inserts
 * at random positions (nodes initialised as W3 says) and deletes; under
 * cow the nodes are objects.
 *
 * Twin (PMTX_RT_TWIN) runs in a region of its own kind, which the explorer
 * makes (pmtx_explore.h): every transaction there is twin, and any other
 * runtime is refused. So setup code begins its transactions with
 * PMTX_RT_DEFAULT, the region's own runtime, never with a named one (W7).
 * Every workload but grow (a twin region has a fixed size) and switch
 * (auto only) runs under twin, laid out as under undo; handoff then
 * makes its naked-only operation outside any transaction (W4).
 *
 * Invariants
 *  W1. run() and model() draw the same choices for the same (t, i).
 *  W2. A thread's data is disjoint from every other thread's (mt), so each
 *      thread's prefix is checked on its own.
 *  W3. list nodes are initialised four ways, so that every
 *      naked-persistence call has a user whose loss shows: by turns, naked
 *      stores with pmtx_flush, with pmtx_persist, or pmtx_memcpy_nt; and
 *      right after a delete (when the freed block is likely to be reused)
 *      pmtx_zalloc with the fields written through the transaction. A
 *      node's tag is ~value, or 0 when it came from pmtx_zalloc; anything
 *      else is a block whose initialisation was lost (a reused block
 *      keeps an older node's tag). Under cow, every other new node is
 *      written through pmtx_cow_peek with naked stores and pmtx_flush
 *      instead of being opened for writing.
 *  W4. handoff runs its odd transactions in a second thread, strictly in
 *      turn with the first, on the same cells, each thread on a
 *      descriptor of its own: the workload where one descriptor's end (a
 *      redo retirement, tx.c R3; an undo abort's IDLE, undo.c U4) must be
 *      durable before another descriptor's commit over the same data.
 *      Some transactions abort, some commit only a naked store (one
 *      word), some allocate or free, every write is made twice (the
 *      second rewrites the first); the first thread drains the
 *      truncation queue right after some of the second one's commits.
 *      The turns make it as deterministic as a single thread.
 *      Under twin, whose transactions run one at a time (twin.c TW5) and
 *      leave their descriptors IDLE, the first thread holds no
 *      descriptor while the second begins (it would wait for ever), and
 *      the naked-only operation is made outside any transaction: a naked
 *      store made durable with pmtx_persist, which must reach the back
 *      copy too (twin.c TW6), so that the next transaction's crash,
 *      which copies the back copy over the data, keeps it.
 *  W5. grow starts its region with one superblock and lets it grow to
 *      8 MiB. Each operation allocates a whole superblock in the first
 *      thread's transaction, which may grow the region, and before that
 *      transaction commits hands a turn to the partner thread, whose own
 *      transaction allocates (likely from the space just added) and
 *      commits: the growth must be durable before another thread's
 *      commit, not only before the growing thread's (region.c G1). The
 *      partner's blocks are checked by the leak and heap checks, not by
 *      the model: only the first thread's slots are observed.
 *  W6. switch runs only under auto, where a region holds transactions of
 *      undo, redo and redo-async at once: transaction i begins with the
 *      runtime a fixed sequence names, so that every three consecutive
 *      runtimes follow one another on the same cells (a redo-async log
 *      still queued when a redo commits, then an undo transaction over
 *      that redo's data, is the order that needs redo.c D4(b) for both
 *      queued logs). A redo commit retires the redo-async log before it
 *      when its own thread flushed that log's data (redo.c D12), so the
 *      redo-async transactions 0, 8, 16, ... run in the partner thread
 *      (W4's), strictly in turn: then a redo commit finds another
 *      thread's log queued, and queues its own behind it (D13); the
 *      first triple, redo-async, redo, undo, is of that kind, and so is
 *      transaction 9. The others run in the first thread: transaction 5,
 *      a redo, retires redo-async 4 after its COMMIT barrier and then
 *      itself, the two IDLE stores separated by its apply barrier (D12),
 *      so both paths are reached in the first 10 transactions.
 *  W7. Setup's transactions (the cow objects of the cell, list, big and
 *      handoff workloads) begin with PMTX_RT_DEFAULT: the region's own
 *      runtime, undo in the regions the explorer makes for every runtime
 *      but twin, twin in a twin region.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <pmtx.h>
#include <pmtx_cltx.h>
#include <pmtx_explore.h>

#include "workloads.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

#define NCELLS 48u
#define PER_OBJ 8u
#define PER_LINE 3u
#define NOBJS (NCELLS / PER_OBJ)
#define NLINES (NCELLS / PER_LINE)
#define MAXLIST 64u

struct cells3 {
	uint64_t v[PER_LINE];
};
PMTX_CLTX_DECLARE(cl3, struct cells3)

struct obj8 {
	uint64_t v[PER_OBJ];
};

int ct_tx_end(pmtx_tx *tx, int rc)
{
	if (rc) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}

uint64_t ct_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rnd(const pmtx_explore_env *e, unsigned t, uint64_t i,
                    unsigned k)
{
	return ct_mix64(e->seed ^ ct_mix64(((uint64_t)t << 56) ^ (i << 8) ^ k));
}

/* ---- cell operations (W1) ---- */

enum { OP_SWAP, OP_MOVE };
struct op {
	int kind;
	unsigned a, b;
	uint64_t amt;
};

/* The cells thread t owns: [lo, hi). */
static void range_of(const pmtx_explore_workload *w, unsigned t, unsigned *lo,
                     unsigned *hi)
{
	unsigned per = NCELLS / w->nthreads;
	*lo = t * per;
	*hi = *lo + per;
}

/* Two distinct cells of [lo, hi), in one line under cltx. */
static void pick2(const pmtx_explore_env *e, unsigned lo, unsigned hi,
                  uint64_t r, unsigned *a, unsigned *b)
{
	if (e->runtime == PMTX_EXPLORE_RT_CLTX) {
		unsigned nl = (hi - lo) / PER_LINE;
		unsigned line = lo / PER_LINE + (unsigned)(r % nl);
		*a = line * PER_LINE + (unsigned)((r >> 16) % PER_LINE);
		*b = line * PER_LINE +
		     (*a % PER_LINE + 1 + (unsigned)((r >> 24) % 2)) % PER_LINE;
		return;
	}
	*a = lo + (unsigned)(r % (hi - lo));
	*b = lo + (unsigned)((*a - lo + 1 + (r >> 20) % (hi - lo - 1)) %
	                     (hi - lo));
}

/* The operations of transaction i of thread t; returns how many. Under
 * cltx every operation of a transaction is in the first one's line. */
static unsigned ops_of(const pmtx_explore_env *e, unsigned t, uint64_t i,
                       struct op *ops)
{
	const pmtx_explore_workload *w = e->workload;
	unsigned lo, hi, n = 0;
	range_of(w, t, &lo, &hi);
	int bank = !strcmp(w->name, "bank");
	unsigned nops = bank || e->runtime == PMTX_EXPLORE_RT_CLTX ? 1 : 2;
	for (unsigned k = 0; k < nops; k++) {
		uint64_t r = rnd(e, t, i, k);
		struct op o = {bank ? OP_MOVE : OP_SWAP, 0, 0, (r >> 40) % 300};
		pick2(e, lo, hi, r, &o.a, &o.b);
		ops[n++] = o;
	}
	return n;
}

static int aborts(const pmtx_explore_workload *w, uint64_t i)
{
	return !strcmp(w->name, "abort") && i % 3 == 1;
}

static void apply_ops(uint64_t *c, const struct op *ops, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		uint64_t *a = &c[ops[k].a], *b = &c[ops[k].b];
		if (ops[k].kind == OP_SWAP) {
			uint64_t x = *a;
			*a = *b;
			*b = x;
		} else if (*a >= ops[k].amt) {
			*a -= ops[k].amt;
			*b += ops[k].amt;
		}
	}
}

static uint64_t initial_cell(const pmtx_explore_workload *w, unsigned i)
{
	return !strcmp(w->name, "bank") ? 1000 : i;
}

/* ---- cells in the region ---- */

struct cellx {
	pmtx_region *r;
	pmtx_tx *tx;
	pmtx_runtime rt;
	int in_place;         /* cell_set stores in place (pmtx_add_range) */
	uint64_t *obj[NOBJS]; /* cow: this transaction's copies */
};

static uint64_t *cell_addr(struct cellx *x, unsigned i)
{
	return (uint64_t *)pmtx_root(x->r, NULL) + i;
}

static int cow_obj(struct cellx *x, unsigned i, uint64_t **out)
{
	unsigned o = i / PER_OBJ;
	if (!x->obj[o]) {
		pmtx_off *w = pmtx_root(x->r, NULL);
		int rc = pmtx_cow_open(x->tx, w[o], PMTX_COW_WRITE, NULL,
		                       (void **)&x->obj[o]);
		if (rc)
			return rc;
	}
	*out = &x->obj[o][i % PER_OBJ];
	return 0;
}

static int cell_get(struct cellx *x, unsigned i, uint64_t *v)
{
	uint64_t *p;
	if (x->rt != PMTX_RT_COW)
		return pmtx_read(x->tx, v, cell_addr(x, i), sizeof(*v));
	int rc = cow_obj(x, i, &p);
	if (!rc)
		*v = *p;
	return rc;
}

static int cell_set(struct cellx *x, unsigned i, uint64_t v)
{
	uint64_t *p;
	if (x->in_place) {
		int rc = pmtx_add_range(x->tx, cell_addr(x, i), sizeof(v));
		if (!rc)
			*cell_addr(x, i) = v;
		return rc;
	}
	if (x->rt != PMTX_RT_COW)
		return pmtx_write(x->tx, cell_addr(x, i), &v, sizeof(v));
	int rc = cow_obj(x, i, &p);
	if (!rc)
		*p = v;
	return rc;
}

/* Under PMTX_RT_AUTO, every other transaction does its last operation
 * with in-place stores: one that runs redo becomes undo there (auto.c A2),
 * and the explorer crashes it before, during and after the switch. Under
 * PMTX_RT_TWIN the same transactions declare their stores with
 * pmtx_add_range (twin.c notes the lines as it does for pmtx_write). */
static int tx_ops(struct cellx *x, const struct op *ops, unsigned n,
                  int switch_last)
{
	for (unsigned k = 0; k < n; k++) {
		uint64_t a, b;
		x->in_place = switch_last && k == n - 1;
		int rc = cell_get(x, ops[k].a, &a);
		if (!rc)
			rc = cell_get(x, ops[k].b, &b);
		if (rc)
			return rc;
		if (ops[k].kind == OP_SWAP) {
			rc = cell_set(x, ops[k].a, b);
			if (!rc)
				rc = cell_set(x, ops[k].b, a);
		} else if (a >= ops[k].amt) {
			rc = cell_set(x, ops[k].a, a - ops[k].amt);
			if (!rc)
				rc = cell_set(x, ops[k].b, b + ops[k].amt);
		}
		if (rc)
			return rc;
	}
	return 0;
}

static struct cl3 *cltx_lines(pmtx_region *r)
{
	return pmtx_cltx_align(pmtx_root(r, NULL));
}

static int cells_setup_cow(const pmtx_explore_workload *w, pmtx_region *r)
{
	pmtx_tx *tx;
	pmtx_off *wr = pmtx_root(r, NULL);
	int rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx); /* W7 */
	for (unsigned o = 0; !rc && o < NOBJS; o++) {
		pmtx_off off;
		rc = pmtx_cow_new(tx, sizeof(struct obj8), &off);
		if (rc)
			break;
		/* A fresh object: naked stores, flushed, durable at commit. */
		struct obj8 *p = (struct obj8 *)pmtx_cow_peek(r, off);
		for (unsigned k = 0; k < PER_OBJ; k++)
			p->v[k] = initial_cell(w, o * PER_OBJ + k);
		pmtx_flush(r, p, sizeof(*p));
		rc = PMTX_SET(tx, wr[o], off);
	}
	return ct_tx_end(tx, rc);
}

static int cells_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	const pmtx_explore_workload *w = e->workload;
	if (e->runtime == PMTX_RT_COW)
		return cells_setup_cow(w, r);
	if (e->runtime == PMTX_EXPLORE_RT_CLTX) {
		for (unsigned l = 0; l < NLINES; l++) {
			struct cells3 c;
			for (unsigned k = 0; k < PER_LINE; k++)
				c.v[k] = initial_cell(w, l * PER_LINE + k);
			int rc = cl3_init(r, &cltx_lines(r)[l], &c);
			if (rc)
				return rc;
		}
		return 0;
	}
	uint64_t *a = pmtx_root(r, NULL);
	for (unsigned i = 0; i < NCELLS; i++)
		a[i] = initial_cell(w, i);
	return pmtx_persist(r, a, NCELLS * sizeof(*a));
}

static int cells_run_cltx(const struct op *ops, unsigned n, pmtx_region *r)
{
	struct cl3 *l = &cltx_lines(r)[ops[0].a / PER_LINE];
	struct cells3 *c = cl3_begin(l);
	uint64_t tmp[NCELLS];
	unsigned base = ops[0].a / PER_LINE * PER_LINE;
	memset(tmp, 0, sizeof(tmp));
	memcpy(&tmp[base], c->v, sizeof(c->v));
	apply_ops(tmp, ops, n);
	memcpy(c->v, &tmp[base], sizeof(c->v));
	return cl3_commit(r, l);
}

static int cells_run(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
                     uint64_t i)
{
	const pmtx_explore_workload *w = e->workload;
	struct op ops[4];
	unsigned n = ops_of(e, t, i, ops);
	if (e->runtime == PMTX_EXPLORE_RT_CLTX)
		return cells_run_cltx(ops, n, r);
	struct cellx x = {.r = r, .rt = e->runtime};
	int rc = pmtx_begin(r, e->runtime, &x.tx);
	if (rc)
		return rc;
	int in_place = e->runtime == PMTX_RT_AUTO || e->runtime == PMTX_RT_TWIN;
	rc = tx_ops(&x, ops, n, in_place && (i & 1));
	if (!rc && aborts(w, i)) {
		/* An aborted transaction may also allocate: nothing leaks. */
		pmtx_off off;
		if (e->runtime != PMTX_RT_COW)
			rc = pmtx_alloc(x.tx, 200, &off);
		int arc = pmtx_abort(x.tx); /* ends the transaction */
		return rc ? rc : arc;
	}
	return ct_tx_end(x.tx, rc);
}

static size_t cells_model(const pmtx_explore_env *e, unsigned t, uint64_t k,
                          uint64_t *out, size_t max)
{
	const pmtx_explore_workload *w = e->workload;
	uint64_t c[NCELLS];
	unsigned lo, hi;
	for (unsigned i = 0; i < NCELLS; i++)
		c[i] = initial_cell(w, i);
	for (uint64_t i = 0; i < k; i++) {
		struct op ops[4];
		unsigned n = ops_of(e, t, i, ops);
		if (!aborts(w, i))
			apply_ops(c, ops, n);
	}
	range_of(w, t, &lo, &hi);
	size_t n = MIN(max, hi - lo);
	memcpy(out, &c[lo], n * sizeof(*out));
	return n;
}

static size_t cells_observe(const pmtx_explore_env *e, pmtx_region *r,
                            unsigned t, uint64_t *out, size_t max, char *msg,
                            size_t len)
{
	const pmtx_explore_workload *w = e->workload;
	unsigned lo, hi;
	range_of(w, t, &lo, &hi);
	for (unsigned i = lo; i < hi && i - lo < max; i++) {
		if (e->runtime == PMTX_EXPLORE_RT_CLTX) {
			const struct cells3 *c =
				cl3_valid(&cltx_lines(r)[i / PER_LINE]);
			out[i - lo] = c->v[i % PER_LINE];
		} else if (e->runtime == PMTX_RT_COW) {
			const pmtx_off *wr = pmtx_root(r, NULL);
			const struct obj8 *o = pmtx_cow_peek(r, wr[i / PER_OBJ]);
			if (!o) {
				snprintf(msg, len, "object %u: bad wrapper",
				         i / PER_OBJ);
				return (size_t)-1;
			}
			out[i - lo] = o->v[i % PER_OBJ];
		} else {
			out[i - lo] = ((const uint64_t *)pmtx_root(r, NULL))[i];
		}
	}
	return MIN(max, hi - lo);
}

/* cow: wrappers and payloads of the cell objects. */
static int cells_walk(const pmtx_explore_env *e, pmtx_region *r,
                      pmtx_explore_block_fn fn, void *arg)
{
	if (e->runtime != PMTX_RT_COW)
		return 0;
	const pmtx_off *wr = pmtx_root(r, NULL);
	for (unsigned o = 0; o < NOBJS; o++) {
		const void *p = pmtx_cow_peek(r, wr[o]);
		int rc = fn(wr[o], arg);
		if (!rc && p)
			rc = fn(pmtx_off_of(r, p), arg);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the cell workloads ---- */

/* Every built-in workload's model is sized for at most 60 transactions
 * per thread. */
#define CT_MAX_NTX 60
#define NO_CLTX (PMTX_EXPLORE_ALL & ~PMTX_EXPLORE_CLTX)

/* The workload wl_<wname>, one of those over the cells. */
#define CELL_WORKLOAD(wname, nthr, rts, whelp)                                \
	static const pmtx_explore_workload wl_##wname = {                     \
		.name = #wname, .help = whelp, .nthreads = nthr,             \
		.root_size = PMTX_CLTX_ROOM(NLINES), .runtimes = rts,         \
		.max_ntx = CT_MAX_NTX, .setup = cells_setup,                 \
		.run = cells_run, .observe = cells_observe,                  \
		.model = cells_model, .walk = cells_walk,                    \
	}

CELL_WORKLOAD(sps, 1, PMTX_EXPLORE_ALL,
              "swaps of random pairs over 48 cells (sum invariant)");
CELL_WORKLOAD(bank, 1, PMTX_EXPLORE_ALL,
              "transfers between 48 accounts (balance never negative)");
CELL_WORKLOAD(abort, 1, NO_CLTX,
              "swaps; every third transaction allocates, then aborts");
CELL_WORKLOAD(mt, 2, PMTX_EXPLORE_ALL,
              "two threads swapping on disjoint halves of the cells");

/* ---- the list workload ---- */

struct lnode {
	uint64_t value;
	pmtx_off next; /* node (cow: wrapper) */
	uint64_t tag;  /* ~value, or 0 in a node made by pmtx_zalloc (W3) */
};
struct lroot {
	pmtx_off head;  /* cow: the wrapper of a struct lroot object */
	uint64_t count;
};


/* Insert (1) or delete (0), and the position, of transaction i. */
static int list_choice(const pmtx_explore_env *e, uint64_t i, uint64_t len,
                       uint64_t *pos)
{
	uint64_t r = rnd(e, 0, i, 0);
	int ins = len < 3 || r % 3 != 0 || len >= MAXLIST - 1;
	*pos = (r >> 8) % (ins ? len + 1 : len);
	return ins;
}

static int list_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	if (e->runtime != PMTX_RT_COW)
		return 0; /* a zeroed root is the empty list */
	pmtx_tx *tx;
	pmtx_off w;
	struct lroot *root = pmtx_root(r, NULL);
	int rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx); /* W7 */
	if (!rc)
		rc = pmtx_cow_new(tx, sizeof(struct lroot), &w);
	if (!rc)
		rc = PMTX_SET(tx, root->head, w);
	return ct_tx_end(tx, rc);
}

static struct lnode *node_at(pmtx_region *r, pmtx_off off)
{
	return PMTX_PTR(r, off, struct lnode);
}

/* undo/redo: the link that points at position pos. */
static pmtx_off *link_at(pmtx_region *r, uint64_t pos)
{
	pmtx_off *link = &((struct lroot *)pmtx_root(r, NULL))->head;
	for (uint64_t p = 0; p < pos; p++)
		link = &node_at(r, *link)->next;
	return link;
}

/* Set by a delete: the next insert likely reuses the freed block (W3). */
static int list_freed;

/* A new node for transaction i, initialised one of four ways (W3). */
static int list_new_node(pmtx_tx *tx, pmtx_region *r, uint64_t i,
                         pmtx_off next, pmtx_off *off)
{
	struct lnode v = {i + 1, next, ~(i + 1)}, *n;
	unsigned how = list_freed ? 3 : (unsigned)(i % 3);
	int rc = how == 3 ? pmtx_zalloc(tx, sizeof(v), off)
	                  : pmtx_alloc(tx, sizeof(v), off);
	if (rc)
		return rc;
	list_freed = 0;
	n = node_at(r, *off);
	switch (how) {
	case 0: /* naked stores, then pmtx_flush: durable at commit */
		*n = v;
		pmtx_flush(r, n, sizeof(*n));
		return 0;
	case 1: /* naked stores made durable at once */
		*n = v;
		return pmtx_persist(r, n, sizeof(*n));
	case 2: /* non-temporal copy: durable at commit */
		pmtx_memcpy_nt(r, n, &v, sizeof(v));
		return 0;
	default: /* zeroed, then written through the transaction */
		rc = PMTX_SET(tx, n->value, v.value);
		return rc ? rc : PMTX_SET(tx, n->next, next);
	}
}

static int list_tx(pmtx_tx *tx, pmtx_region *r, uint64_t i,
                   const pmtx_explore_env *e)
{
	struct lroot *root = pmtx_root(r, NULL);
	uint64_t pos;
	int ins = list_choice(e, i, root->count, &pos), rc;
	pmtx_off *link = link_at(r, pos), off;
	if (ins) {
		if ((rc = list_new_node(tx, r, i, *link, &off)))
			return rc;
		rc = PMTX_SET(tx, *link, off);
	} else {
		off = *link;
		rc = PMTX_SET(tx, *link, node_at(r, off)->next);
		if (!rc)
			rc = pmtx_free(tx, off);
		list_freed = 1;
	}
	return rc ? rc : PMTX_SET(tx, root->count, root->count + (ins ? 1 : -1));
}

/* cow: open for writing the object whose `next` (or `head`) is position
 * pos's link; *link then points into the private copy. */
static int cow_link_at(pmtx_tx *tx, pmtx_region *r, struct lroot *h,
                       uint64_t pos, pmtx_off **link)
{
	*link = &h->head;
	pmtx_off cur = h->head;
	for (uint64_t p = 1; p < pos; p++)
		cur = ((const struct lnode *)pmtx_cow_peek(r, cur))->next;
	if (pos == 0)
		return 0;
	struct lnode *n;
	int rc = pmtx_cow_open(tx, cur, PMTX_COW_WRITE, NULL, (void **)&n);
	if (!rc)
		*link = &n->next;
	return rc;
}

static int list_tx_cow(pmtx_tx *tx, pmtx_region *r, uint64_t i,
                       const pmtx_explore_env *e)
{
	struct lroot *h, *root = pmtx_root(r, NULL);
	int rc = pmtx_cow_open(tx, root->head, PMTX_COW_WRITE, NULL,
	                       (void **)&h);
	if (rc)
		return rc;
	uint64_t pos;
	int ins = list_choice(e, i, h->count, &pos);
	pmtx_off *link, w;
	if ((rc = cow_link_at(tx, r, h, pos, &link)))
		return rc;
	if (ins) {
		struct lnode *n;
		rc = pmtx_cow_new(tx, sizeof(*n), &w);
		if (!rc && i % 2) /* a fresh object: naked stores (W3) */
			n = (struct lnode *)pmtx_cow_peek(r, w);
		else if (!rc)
			rc = pmtx_cow_open(tx, w, PMTX_COW_WRITE, NULL,
			                   (void **)&n);
		if (rc)
			return rc;
		n->value = i + 1;
		n->next = *link;
		n->tag = ~n->value;
		if (i % 2)
			pmtx_flush(r, n, sizeof(*n));
		*link = w;
	} else {
		w = *link;
		*link = ((const struct lnode *)pmtx_cow_peek(r, w))->next;
		rc = pmtx_cow_delete(tx, w);
	}
	h->count += ins ? 1 : (uint64_t)-1;
	return rc;
}

static int list_run(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
                    uint64_t i)
{
	pmtx_tx *tx;
	int rc = pmtx_begin(r, e->runtime, &tx);
	if (rc)
		return rc;
	rc = e->runtime == PMTX_RT_COW ? list_tx_cow(tx, r, i, e)
	                          : list_tx(tx, r, i, e);
	return ct_tx_end(tx, rc);
}

static size_t list_model(const pmtx_explore_env *e, unsigned t, uint64_t k,
                         uint64_t *out, size_t max)
{
	uint64_t v[MAXLIST], len = 0, pos;
	for (uint64_t i = 0; i < k; i++) {
		if (list_choice(e, i, len, &pos)) {
			memmove(&v[pos + 1], &v[pos], (len - pos) * sizeof(*v));
			v[pos] = i + 1;
			len++;
		} else {
			memmove(&v[pos], &v[pos + 1],
			        (len - pos - 1) * sizeof(*v));
			len--;
		}
	}
	out[0] = len;
	memcpy(out + 1, v, MIN(len, max - 1) * sizeof(*v));
	return 1 + MIN(len, max - 1);
}

/* Follow the list; every offset is checked before it is used. */
static size_t list_follow(const pmtx_explore_env *e, pmtx_region *r,
                          pmtx_off first, uint64_t *out, size_t max,
                          char *msg, size_t len,
                          pmtx_explore_block_fn fn, void *arg)
{
	size_t n = 1;
	for (pmtx_off off = first; off; n++) {
		const struct lnode *nd = e->runtime == PMTX_RT_COW
		                                 ? pmtx_cow_peek(r, off)
		                                 : node_at(r, off);
		if (!nd || n >= max || n > MAXLIST) {
			snprintf(msg, len, "list: bad link 0x%llx at %zu",
			         (unsigned long long)off, n - 1);
			return (size_t)-1;
		}
		if (nd->tag != 0 && nd->tag != ~nd->value) {
			snprintf(msg, len, "list: node 0x%llx: tag 0x%llx fits "
			         "neither 0 nor its value 0x%llx (lost "
			         "initialisation)", (unsigned long long)off,
			         (unsigned long long)nd->tag,
			         (unsigned long long)nd->value);
			return (size_t)-1;
		}
		if (fn && (fn(off, arg) || (e->runtime == PMTX_RT_COW &&
		                            fn(pmtx_off_of(r, nd), arg))))
			return (size_t)-1;
		out[n] = nd->value;
		off = nd->next;
	}
	return n;
}

static const struct lroot *list_head(const pmtx_explore_env *e, pmtx_region *r)
{
	const struct lroot *root = pmtx_root(r, NULL);
	return e->runtime == PMTX_RT_COW ? pmtx_cow_peek(r, root->head) : root;
}

static size_t list_observe(const pmtx_explore_env *e, pmtx_region *r,
                           unsigned t, uint64_t *out, size_t max, char *msg,
                           size_t len)
{
	const struct lroot *h = list_head(e, r);
	if (!h) {
		snprintf(msg, len, "list: bad head wrapper");
		return (size_t)-1;
	}
	size_t n = list_follow(e, r, h->head, out, max, msg, len, NULL, NULL);
	if (n != (size_t)-1 && h->count != n - 1) {
		snprintf(msg, len, "list: count %llu but %zu nodes",
		         (unsigned long long)h->count, n - 1);
		return (size_t)-1;
	}
	if (n != (size_t)-1)
		out[0] = h->count;
	return n;
}

static int list_walk(const pmtx_explore_env *e, pmtx_region *r,
                     pmtx_explore_block_fn fn, void *arg)
{
	uint64_t buf[MAXLIST + 2];
	char msg[8];
	const struct lroot *h = list_head(e, r);
	if (e->runtime == PMTX_RT_COW) {
		pmtx_off w = ((const struct lroot *)pmtx_root(r, NULL))->head;
		if (!h || fn(w, arg) || fn(pmtx_off_of(r, h), arg))
			return 1;
	}
	return list_follow(e, r, h->head, buf, MAXLIST + 2, msg, sizeof(msg),
	                   fn, arg) == (size_t)-1;
}

static const pmtx_explore_workload wl_list = {
	.name = "list",
	.help = "inserts and deletes in a linked list (allocates and frees)",
	.nthreads = 1, .root_size = sizeof(struct lroot), .runtimes = NO_CLTX,
	.max_ntx = CT_MAX_NTX, .setup = list_setup, .run = list_run,
	.observe = list_observe, .model = list_model, .walk = list_walk};

/* ---- the big workload: large ranges, log growth ---- */

#define BIG_WORDS 4096u
#define BIGK 2 /* ranges per transaction */

#define BIG_PER_OBJ 512u /* cow: 8 objects of 4 KiB */
#define BIG_NOBJS (BIG_WORDS / BIG_PER_OBJ)

/* Range k of transaction i: [*start, *start + *len) words. */
static void big_range(const pmtx_explore_env *e, uint64_t i, unsigned k,
                      unsigned *start, unsigned *len)
{
	uint64_t r = rnd(e, 0, i, k);
	*len = 1024 + (unsigned)((r >> 16) % 1536);
	*start = (unsigned)(r % (BIG_WORDS - *len));
}

static uint64_t big_value(uint64_t i, unsigned j)
{
	return (i + 1) << 32 | j;
}

/* undo and redo: root word BIG_WORDS holds a large block (above the
 * largest size class: a run of two superblocks) or 0; every third
 * transaction allocates or frees it, and every transaction that leaves it
 * allocated writes one word of it, in its second superblock (so that a
 * recovery that restores only some superblocks of a run is caught). */
#define BIG_BLOB (100u * 1024u)
#define BIG_BLOB_WORD (70000u / 8)

static int big_blob_toggles(uint64_t i)
{
	return i % 3 == 1;
}

static int big_blob_toggle(pmtx_tx *tx, pmtx_region *r)
{
	pmtx_off *blob = (pmtx_off *)pmtx_root(r, NULL) + BIG_WORDS, off = 0;
	int rc = *blob ? pmtx_free(tx, *blob) : pmtx_alloc(tx, BIG_BLOB, &off);
	return rc ? rc : PMTX_SET(tx, *blob, off);
}

/* The word of the large block at blob that transactions write, or NULL. */
static uint64_t *big_blob_word(pmtx_region *r, pmtx_off blob)
{
	if (!blob || !pmtx_ptr(r, blob + BIG_BLOB - 1))
		return NULL;
	return (uint64_t *)pmtx_ptr(r, blob) + BIG_BLOB_WORD;
}

/* Transaction i's store into the large block, if there is one (the root
 * word read as the transaction sees it: redo has not stored it yet). */
static int big_blob_write(pmtx_tx *tx, pmtx_region *r, uint64_t i)
{
	pmtx_off blob;
	int rc = pmtx_read(tx, &blob, (pmtx_off *)pmtx_root(r, NULL) + BIG_WORDS,
	                   sizeof(blob));
	uint64_t *p = rc ? NULL : big_blob_word(r, blob);
	return rc ? rc : p ? PMTX_SET(tx, *p, big_value(i, BIG_WORDS)) : 0;
}

static int big_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	uint64_t *a = pmtx_root(r, NULL);
	if (e->runtime != PMTX_RT_COW) {
		for (unsigned j = 0; j < BIG_WORDS; j++)
			a[j] = j;
		return pmtx_persist(r, a, BIG_WORDS * sizeof(*a));
	}
	pmtx_tx *tx;
	int rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx); /* W7 */
	for (unsigned o = 0; !rc && o < BIG_NOBJS; o++) {
		pmtx_off off;
		if ((rc = pmtx_cow_new(tx, BIG_PER_OBJ * 8, &off)))
			break;
		uint64_t *p = (uint64_t *)pmtx_cow_peek(r, off);
		for (unsigned k = 0; k < BIG_PER_OBJ; k++)
			p[k] = o * BIG_PER_OBJ + k;
		pmtx_flush(r, p, BIG_PER_OBJ * 8);
		rc = PMTX_SET(tx, a[o], off);
	}
	return ct_tx_end(tx, rc);
}

static int big_write_cow(pmtx_tx *tx, pmtx_region *r, unsigned start,
                         unsigned len, uint64_t i)
{
	const pmtx_off *wr = pmtx_root(r, NULL);
	for (unsigned j = start; j < start + len; j++) {
		uint64_t *p;
		int rc = pmtx_cow_open(tx, wr[j / BIG_PER_OBJ], PMTX_COW_WRITE,
		                       NULL, (void **)&p);
		if (rc)
			return rc;
		p[j % BIG_PER_OBJ] = big_value(i, j);
	}
	return 0;
}

static int big_run(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
                   uint64_t i)
{
	static uint64_t buf[BIG_WORDS];
	pmtx_tx *tx;
	int rc = pmtx_begin(r, e->runtime, &tx);
	for (unsigned k = 0; !rc && k < BIGK; k++) {
		unsigned start, len;
		big_range(e, i, k, &start, &len);
		if (e->runtime == PMTX_RT_COW) {
			rc = big_write_cow(tx, r, start, len, i);
			continue;
		}
		for (unsigned j = 0; j < len; j++)
			buf[j] = big_value(i, start + j);
		rc = pmtx_write(tx, (uint64_t *)pmtx_root(r, NULL) + start, buf,
		                len * sizeof(*buf));
	}
	if (!rc && e->runtime != PMTX_RT_COW && big_blob_toggles(i))
		rc = big_blob_toggle(tx, r);
	if (!rc && e->runtime != PMTX_RT_COW)
		rc = big_blob_write(tx, r, i);
	return ct_tx_end(tx, rc);
}

static size_t big_model(const pmtx_explore_env *e, unsigned t, uint64_t k,
                        uint64_t *out, size_t max)
{
	if (max < BIG_WORDS + 2)
		return 0;
	for (unsigned j = 0; j < BIG_WORDS; j++)
		out[j] = j;
	out[BIG_WORDS] = out[BIG_WORDS + 1] = 0;
	for (uint64_t i = 0; i < k; i++) {
		for (unsigned q = 0; q < BIGK; q++) {
			unsigned start, len;
			big_range(e, i, q, &start, &len);
			for (unsigned j = start; j < start + len; j++)
				out[j] = big_value(i, j);
		}
		if (e->runtime != PMTX_RT_COW && big_blob_toggles(i))
			out[BIG_WORDS] ^= 1;
		out[BIG_WORDS + 1] =
			out[BIG_WORDS] ? big_value(i, BIG_WORDS) : 0;
	}
	return BIG_WORDS + 2;
}

static size_t big_observe(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
                          uint64_t *out, size_t max, char *msg, size_t len)
{
	const uint64_t *a = pmtx_root(r, NULL);
	if (max < BIG_WORDS + 2)
		return 0;
	out[BIG_WORDS] = e->runtime != PMTX_RT_COW && a[BIG_WORDS] != 0;
	const uint64_t *bw =
		out[BIG_WORDS] ? big_blob_word(r, a[BIG_WORDS]) : NULL;
	if (out[BIG_WORDS] && !bw) {
		snprintf(msg, len, "big: the large block's offset is bad");
		return (size_t)-1;
	}
	out[BIG_WORDS + 1] = bw ? *bw : 0;
	for (unsigned o = 0; o < BIG_NOBJS; o++) {
		const uint64_t *p = e->runtime == PMTX_RT_COW
		                            ? pmtx_cow_peek(r, a[o])
		                            : a + o * BIG_PER_OBJ;
		if (!p) {
			snprintf(msg, len, "big: object %u: bad wrapper", o);
			return (size_t)-1;
		}
		memcpy(out + o * BIG_PER_OBJ, p, BIG_PER_OBJ * 8);
	}
	return BIG_WORDS + 2;
}

static int big_walk(const pmtx_explore_env *e, pmtx_region *r,
                    pmtx_explore_block_fn fn, void *arg)
{
	const pmtx_off *wr = pmtx_root(r, NULL);
	if (e->runtime != PMTX_RT_COW)
		return wr[BIG_WORDS] && fn(wr[BIG_WORDS], arg);
	for (unsigned o = 0; o < BIG_NOBJS; o++) {
		const void *p = pmtx_cow_peek(r, wr[o]);
		if (fn(wr[o], arg) || (p && fn(pmtx_off_of(r, p), arg)))
			return 1;
	}
	return 0;
}

static const pmtx_explore_workload wl_big = {
	.name = "big",
	.help = "two ranges of 8-20 KiB per transaction: large records, log "
	        "growth, a large block of two superblocks, written",
	.nthreads = 1, .root_size = (BIG_WORDS + 1) * 8, .runtimes = NO_CLTX,
	.max_ntx = CT_MAX_NTX, .setup = big_setup, .run = big_run,
	.observe = big_observe, .model = big_model, .walk = big_walk};

/* ---- the handoff workload: two threads in turn on shared cells (W4) ---- */

#define HCELLS 16u /* the cells, then one word only naked stores write */

enum { H_WRITE, H_ABORT, H_NAKED };

/* What transaction i does: by turns, the abort and the naked-only
 * transaction each followed by the other thread's (W4). */
static int handoff_kind(uint64_t i)
{
	return i % 4 == 2 ? H_ABORT : i % 8 == 5 ? H_NAKED : H_WRITE;
}

/* undo and redo: each writing transaction of the second thread also
 * allocates or frees, by turns, a block at root word HCELLS + 1: 200 B
 * when i % 4 == 3, else 40 KiB (a large run). */
static int handoff_toggles(const pmtx_explore_env *e, uint64_t i)
{
	return e->runtime != PMTX_RT_COW && i % 2 && handoff_kind(i) == H_WRITE;
}

static int handoff_toggle(pmtx_tx *tx, pmtx_region *r, uint64_t i)
{
	pmtx_off *blk = (pmtx_off *)pmtx_root(r, NULL) + HCELLS + 1, off = 0;
	int rc = *blk ? pmtx_free(tx, *blk)
	              : pmtx_alloc(tx, i % 4 == 3 ? 200 : 40 << 10, &off);
	return rc ? rc : PMTX_SET(tx, *blk, off);
}

static uint64_t handoff_value(uint64_t i, unsigned j)
{
	return (i + 1) << 8 | j;
}

/* Under cow the cells are one object, its wrapper in root word 0; the
 * naked word stays in the root (word HCELLS). */
static int handoff_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	pmtx_off *root = pmtx_root(r, NULL), w;
	pmtx_tx *tx;
	if (e->runtime != PMTX_RT_COW)
		return 0; /* zeroed cells: the state after no transaction */
	int rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx); /* W7 */
	if (!rc)
		rc = pmtx_cow_new(tx, HCELLS * 8, &w);
	if (!rc)
		rc = PMTX_SET(tx, root[0], w);
	return ct_tx_end(tx, rc);
}

/* The cells transaction tx writes. */
static int handoff_cells(const pmtx_explore_env *e, pmtx_region *r,
                         pmtx_tx *tx, uint64_t **cells)
{
	uint64_t *root = pmtx_root(r, NULL);
	if (e->runtime != PMTX_RT_COW) {
		*cells = root;
		return 0;
	}
	return pmtx_cow_open(tx, root[0], PMTX_COW_WRITE, NULL,
	                     (void **)cells);
}

static int handoff_tx(const pmtx_explore_env *e, pmtx_region *r, uint64_t i)
{
	uint64_t v[HCELLS], *cells = pmtx_root(r, NULL);
	pmtx_tx *tx;
	int kind = handoff_kind(i), rc;
	if (kind == H_NAKED && e->runtime == PMTX_RT_TWIN) {
		/* outside any transaction: to the back copy too (W4) */
		cells[HCELLS] = i + 1; /* one word: atomic */
		return pmtx_persist(r, &cells[HCELLS], 8);
	}
	if ((rc = pmtx_begin(r, e->runtime, &tx)))
		return rc;
	if (kind == H_NAKED) {
		cells[HCELLS] = i + 1; /* one word: atomic */
		pmtx_flush(r, &cells[HCELLS], 8);
		return pmtx_commit(tx);
	}
	for (unsigned j = 0; j < HCELLS; j++)
		v[j] = handoff_value(i, j);
	uint64_t *dst;
	rc = handoff_cells(e, r, tx, &dst);
	if (!rc && e->runtime == PMTX_RT_COW)
		memcpy(dst, v, sizeof(v)); /* the private copy */
	else if (!rc) { /* twice: a rewrite of the same range (redo D11) */
		uint64_t w[HCELLS];
		for (unsigned j = 0; j < HCELLS; j++)
			w[j] = ~v[j];
		rc = pmtx_write(tx, dst, w, sizeof(w));
		if (!rc)
			rc = pmtx_write(tx, dst, v, sizeof(v));
	}
	if (!rc && handoff_toggles(e, i))
		rc = handoff_toggle(tx, r, i);
	if (rc || kind == H_ABORT) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}

/* The second thread: runs one transaction per turn (W4, W5). */
typedef int (*partner_fn)(const pmtx_explore_env *e, pmtx_region *r,
                          uint64_t i);

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int started, turn; /* turn: 1 = the partner's */
	partner_fn fn;
	const pmtx_explore_env *e;
	pmtx_region *r;
	uint64_t i;
	int rc;
} partner = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0,
              NULL, NULL, NULL, 0, 0};

static void *partner_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&partner.lock);
	for (;;) {
		while (partner.turn != 1)
			pthread_cond_wait(&partner.cond, &partner.lock);
		pthread_mutex_unlock(&partner.lock);
		int rc = partner.fn(partner.e, partner.r, partner.i);
		pthread_mutex_lock(&partner.lock);
		partner.rc = rc;
		partner.turn = 0;
		pthread_cond_broadcast(&partner.cond);
	}
	return NULL;
}

/* Run fn(e, r, i) in the partner thread and wait for it. */
static int partner_run(const pmtx_explore_env *e, pmtx_region *r, uint64_t i,
                       partner_fn fn)
{
	if (!partner.started) {
		pthread_t th;
		if (pthread_create(&th, NULL, partner_main, NULL))
			return EAGAIN;
		partner.started = 1;
	}
	pthread_mutex_lock(&partner.lock);
	partner.fn = fn, partner.e = e, partner.r = r, partner.i = i;
	partner.turn = 1;
	pthread_cond_broadcast(&partner.cond);
	while (partner.turn != 0)
		pthread_cond_wait(&partner.cond, &partner.lock);
	int rc = partner.rc;
	pthread_mutex_unlock(&partner.lock);
	return rc;
}

/* handoff: the first time, the caller holds a descriptor while the
 * partner leases its own, which the partner then keeps using (W4); not
 * under twin, where the partner would wait for the held transaction. */
static int handoff_partner(const pmtx_explore_env *e, pmtx_region *r,
                           uint64_t i)
{
	pmtx_tx *hold = NULL;
	if (!partner.started && e->runtime != PMTX_RT_TWIN) {
		int rc = pmtx_begin(r, e->runtime, &hold);
		if (rc)
			return rc;
	}
	int rc = partner_run(e, r, i, handoff_tx);
	if (hold)
		pmtx_abort(hold); /* wrote nothing: no barrier */
	return rc;
}

static int handoff_run(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
                       uint64_t i)
{
	(void)t;
	if (i % 2)
		return handoff_partner(e, r, i);
	/* Truncate the other thread's transaction before it makes another
	 * barrier: its flushes must be covered by this thread's (W4). */
	int rc = i && i % 4 == 0 ? pmtx_drain(r) : 0;
	return rc ? rc : handoff_tx(e, r, i);
}

static size_t handoff_observe(const pmtx_explore_env *e, pmtx_region *r,
                              unsigned t, uint64_t *out, size_t max,
                              char *msg, size_t len)
{
	(void)t;
	const uint64_t *root = pmtx_root(r, NULL), *cells = root;
	if (max < HCELLS + 2)
		return 0;
	if (e->runtime == PMTX_RT_COW && !(cells = pmtx_cow_peek(r, root[0]))) {
		snprintf(msg, len, "handoff: bad wrapper");
		return (size_t)-1;
	}
	memcpy(out, cells, HCELLS * sizeof(*out));
	out[HCELLS] = root[HCELLS];
	out[HCELLS + 1] = root[HCELLS + 1] != 0;
	return HCELLS + 2;
}

static int handoff_walk(const pmtx_explore_env *e, pmtx_region *r,
                        pmtx_explore_block_fn fn, void *arg)
{
	const pmtx_off *root = pmtx_root(r, NULL);
	if (e->runtime != PMTX_RT_COW)
		return root[HCELLS + 1] && fn(root[HCELLS + 1], arg);
	const void *p = pmtx_cow_peek(r, root[0]);
	return fn(root[0], arg) || (p && fn(pmtx_off_of(r, p), arg));
}

static size_t handoff_model(const pmtx_explore_env *e, unsigned t, uint64_t k,
                            uint64_t *out, size_t max)
{
	(void)t;
	if (max < HCELLS + 2)
		return 0;
	memset(out, 0, (HCELLS + 2) * sizeof(*out));
	for (uint64_t i = 0; i < k; i++) {
		int kind = handoff_kind(i);
		for (unsigned j = 0; kind == H_WRITE && j < HCELLS; j++)
			out[j] = handoff_value(i, j);
		if (kind == H_NAKED)
			out[HCELLS] = i + 1;
		out[HCELLS + 1] ^= (uint64_t)handoff_toggles(e, i);
	}
	return HCELLS + 2;
}

static const pmtx_explore_workload wl_handoff = {
	.name = "handoff",
	.help = "two threads in turn on the same cells, each on its own "
	        "descriptor; aborts, naked-only commits, allocation",
	/* One thread as the explorer sees it: it hands every other
	 * transaction to a second thread of its own (W4). */
	.nthreads = 1, .root_size = (HCELLS + 2) * 8, .runtimes = NO_CLTX,
	.max_ntx = CT_MAX_NTX, .setup = handoff_setup, .run = handoff_run,
	.observe = handoff_observe, .model = handoff_model,
	.walk = handoff_walk};

/* ---- the grow workload: a region that grows (W5) ---- */

#define GROW_BLOCK (40u * 1024u) /* a run of one whole superblock */

struct groot {
	pmtx_off a[CT_MAX_NTX]; /* the first thread's blocks, by operation */
	pmtx_off b[CT_MAX_NTX]; /* the partner's */
};

/* Operation i also frees the blocks of operation i - 2. */
static int grow_frees(uint64_t i)
{
	return i % 3 == 2;
}

static int grow_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	(void)e, (void)r;
	return 0; /* zeroed slots: the state after no operation */
}

/* One block of operation i into slots[i], and the free of slots[i - 2]. */
static int grow_slots(pmtx_tx *tx, pmtx_off *slots, uint64_t i,
                      pmtx_off off)
{
	int rc = PMTX_SET(tx, slots[i], off);
	if (!rc && grow_frees(i))
		rc = pmtx_free(tx, slots[i - 2]);
	if (!rc && grow_frees(i))
		rc = PMTX_SET(tx, slots[i - 2], 0);
	return rc;
}

/* The partner's transaction, run while the first thread's is open: its
 * block likely comes from the space the first thread's growth added. */
static int grow_partner_tx(const pmtx_explore_env *e, pmtx_region *r,
                           uint64_t i)
{
	struct groot *g = pmtx_root(r, NULL);
	pmtx_tx *tx;
	pmtx_off off;
	int rc = pmtx_begin(r, e->runtime, &tx);
	if (rc)
		return rc;
	rc = pmtx_alloc(tx, GROW_BLOCK, &off);
	return ct_tx_end(tx, rc ? rc : grow_slots(tx, g->b, i, off));
}

static int grow_run(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
                    uint64_t i)
{
	struct groot *g = pmtx_root(r, NULL);
	pmtx_tx *tx;
	pmtx_off off;
	(void)t;
	int rc = pmtx_begin(r, e->runtime, &tx);
	if (rc)
		return rc;
	rc = pmtx_alloc(tx, GROW_BLOCK, &off); /* may grow the region */
	if (!rc)
		rc = partner_run(e, r, i, grow_partner_tx);
	return ct_tx_end(tx, rc ? rc : grow_slots(tx, g->a, i, off));
}

/* The first thread's slots, 1 where a block is linked. */
static size_t grow_observe(const pmtx_explore_env *e, pmtx_region *r,
                           unsigned t, uint64_t *out, size_t max, char *msg,
                           size_t len)
{
	const struct groot *g = pmtx_root(r, NULL);
	(void)t;
	if (max < e->ntx)
		return 0;
	for (unsigned j = 0; j < e->ntx; j++) {
		if (g->a[j] && !pmtx_ptr(r, g->a[j])) {
			snprintf(msg, len, "grow: slot %u: bad offset 0x%llx",
			         j, (unsigned long long)g->a[j]);
			return (size_t)-1;
		}
		out[j] = g->a[j] != 0;
	}
	return e->ntx;
}

static size_t grow_model(const pmtx_explore_env *e, unsigned t, uint64_t k,
                         uint64_t *out, size_t max)
{
	(void)t;
	if (max < e->ntx)
		return 0;
	memset(out, 0, e->ntx * sizeof(*out));
	for (uint64_t i = 0; i < k; i++) {
		out[i] = 1;
		if (grow_frees(i))
			out[i - 2] = 0;
	}
	return e->ntx;
}

static int grow_walk(const pmtx_explore_env *e, pmtx_region *r,
                     pmtx_explore_block_fn fn, void *arg)
{
	const struct groot *g = pmtx_root(r, NULL);
	for (unsigned j = 0; j < e->ntx; j++)
		if ((g->a[j] && fn(g->a[j], arg)) ||
		    (g->b[j] && fn(g->b[j], arg)))
			return 1;
	return 0;
}

static const pmtx_explore_workload wl_grow = {
	.name = "grow",
	.help = "a region that starts with one superblock and grows; a "
	        "second thread allocates in the new space before the growing "
	        "transaction commits",
	.nthreads = 1, .root_size = sizeof(struct groot),
	.region_size = 64u << 10, .max_size = 8u << 20,
	.runtimes = PMTX_EXPLORE_LOGGING, .max_ntx = CT_MAX_NTX,
	.setup = grow_setup, .run = grow_run, .observe = grow_observe,
	.model = grow_model, .walk = grow_walk};

/* ---- the switch workload: the runtimes in every order (W6) ---- */

#define SCELLS 12u

/* The runtime of transaction i: a de Bruijn sequence B(3, 3) over undo
 * (0), redo (1) and redo-async (2), so every three consecutive runtimes
 * occur, starting with redo-async, redo, undo. */
static pmtx_runtime switch_runtime(uint64_t i)
{
	static const char seq[] = "210221112122200010020110120";
	static const pmtx_runtime rt[3] = {PMTX_RT_UNDO, PMTX_RT_REDO,
	                                   PMTX_RT_REDO_ASYNC};
	return rt[seq[i % (sizeof(seq) - 1)] - '0'];
}

/* Transaction i writes cell j unless (i + j) % 3 == 0: neighbours
 * overlap in part, so a replay of an older log over a newer
 * transaction's cells shows. */
static int switch_writes(uint64_t i, unsigned j)
{
	return (i + j) % 3 != 0;
}

static uint64_t switch_value(uint64_t i, unsigned j)
{
	return (i + 1) << 8 | j;
}

static int switch_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	(void)e, (void)r;
	return 0; /* zeroed cells: the state after no transaction */
}

static int switch_tx(const pmtx_explore_env *e, pmtx_region *r, uint64_t i)
{
	(void)e;
	uint64_t *cells = pmtx_root(r, NULL);
	pmtx_tx *tx;
	int rc = pmtx_begin(r, switch_runtime(i), &tx);
	if (rc)
		return rc; /* nothing begun: tx was not set */
	for (unsigned j = 0; !rc && j < SCELLS; j++)
		if (switch_writes(i, j))
			rc = PMTX_SET(tx, cells[j], switch_value(i, j));
	if (rc) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}

/* W6: the redo-async transactions i = 0, 8, 16, ... run in the partner
 * thread. */
static int switch_run(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
                      uint64_t i)
{
	(void)t;
	if (switch_runtime(i) == PMTX_RT_REDO_ASYNC && i % 8 == 0)
		return partner_run(e, r, i, switch_tx);
	return switch_tx(e, r, i);
}

static size_t switch_observe(const pmtx_explore_env *e, pmtx_region *r,
                             unsigned t, uint64_t *out, size_t max,
                             char *msg, size_t len)
{
	(void)e, (void)t, (void)msg, (void)len;
	if (max < SCELLS)
		return 0;
	memcpy(out, pmtx_root(r, NULL), SCELLS * sizeof(*out));
	return SCELLS;
}

static size_t switch_model(const pmtx_explore_env *e, unsigned t, uint64_t k,
                           uint64_t *out, size_t max)
{
	(void)e, (void)t;
	if (max < SCELLS)
		return 0;
	memset(out, 0, SCELLS * sizeof(*out));
	for (uint64_t i = 0; i < k; i++)
		for (unsigned j = 0; j < SCELLS; j++)
			if (switch_writes(i, j))
				out[j] = switch_value(i, j);
	return SCELLS;
}

static const pmtx_explore_workload wl_switch = {
	.name = "switch",
	.help = "one thread whose transactions run undo, redo and redo-async "
	        "in every order of three, on overlapping cells (every eighth "
	        "transaction, when redo-async, handed to a second thread)",
	.nthreads = 1, .root_size = SCELLS * 8,
	.runtimes = PMTX_EXPLORE_AUTO, .max_ntx = CT_MAX_NTX,
	.setup = switch_setup, .run = switch_run, .observe = switch_observe,
	.model = switch_model};

const pmtx_explore_workload *const ct_workloads[] = {
	&wl_sps, &wl_bank, &wl_list, &wl_abort, &wl_mt, &wl_big, &wl_handoff,
	&wl_grow, &wl_switch};
const size_t ct_nworkloads = sizeof(ct_workloads) / sizeof(*ct_workloads);
