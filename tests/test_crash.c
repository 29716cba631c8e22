/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_crash.c - SIGKILL crash tests.
 *
 * A child process opens a region and runs a deterministic workload forever:
 * transaction k (k = 1, 2, ...) is a function of (seed, k) and of the state
 * left by transaction k-1 only, so the parent can replay any prefix in a
 * DRAM model. The state (in the root) holds ntx (the number of committed
 * transactions, written inside every transaction), NACC account balances
 * with a constant sum (bank transfers), and the head of a singly linked
 * list of heap nodes (inserts, deletes, in-place updates; a few nodes are
 * large blocks). Before some transactions the child runs one
 * that it aborts (plain or from a nested level); those never count in ntx.
 * After each pmtx_commit() returns 0 the child writes k to a pipe: the
 * acknowledgement.
 *
 * The parent kills the child with SIGKILL after a random delay, drains the
 * pipe for the last acknowledged k, reopens the region (recovery) and
 * checks:
 *   - ntx == last_acked or last_acked + 1 (one transaction may have become
 *     durable without its acknowledgement);
 *   - the whole state equals the model replayed for ntx transactions
 *     (atomicity: it is a prefix of the committed transactions);
 *   - pmtx_heap_check() passes;
 *   - no leak: the blocks pmtx_heap_walk() reports are exactly the list
 *     nodes reachable from the root.
 *
 * Under the copy-on-write runtime, which updates objects only through
 * wrappers, the state and every node are copy-on-write objects: the root
 * then only names the state's wrapper (set once at creation), and links
 * are wrapper offsets. The workload goes through a small accessor layer
 * (obj_get/obj_set/...) that hides which of the two representations is in
 * use; the plans, the model and the checks are the same.
 *
 * PMTX_CRASH_SEED overrides the workload seed; PMTX_LONG_TESTS=1 raises the
 * number of kills from 500 to 5,000 per runtime (file backend: 20 to 200).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static const pmtx_runtime runtimes[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                        PMTX_RT_REDO_ASYNC, PMTX_RT_COW,
                                        PMTX_RT_AUTO, PMTX_RT_TWIN};

#define NACC 64
#define INIT_BAL 1000000ull
#define MAXNODES 48
#define MAXTR 6
#define REGION_SIZE (32u << 20)
#define DEFAULT_SEED 0x5eedc0ffee123457ull

/* Child exit codes (the child is expected to die of SIGKILL). */
enum {
	CHILD_OPEN = 10,
	CHILD_MODEL,
	CHILD_PIPE,
	CHILD_BEGIN,
	CHILD_APPLY,
	CHILD_ABORT,
	CHILD_ABORT_COMMIT,
	CHILD_TX_LEFT,
	CHILD_COMMIT,
};

struct cstate {
	uint64_t ntx;    /* committed transactions so far */
	uint64_t nnodes; /* length of the list */
	pmtx_off head;   /* first node, or 0 */
	uint64_t bal[NACC]; /* sum is always NACC * INIT_BAL */
};

struct croot {
	pmtx_off state_w; /* copy-on-write: the state's wrapper */
	uint64_t reserved[7];
	struct cstate st; /* other runtimes: the state itself */
};

struct node {
	uint64_t key;   /* changed in place by update operations */
	uint64_t pseed; /* the payload is a function of pseed */
	uint64_t len;   /* payload bytes */
	pmtx_off next;  /* next node (its block, or its wrapper), or 0 */
	uint8_t payload[];
};

#define F_NTX offsetof(struct cstate, ntx)
#define F_NNODES offsetof(struct cstate, nnodes)
#define F_HEAD offsetof(struct cstate, head)
#define F_BAL(i) (offsetof(struct cstate, bal) + (size_t)(i) * 8)
#define F_KEY offsetof(struct node, key)
#define F_NEXT offsetof(struct node, next)

/* ---- DRAM model ---- */

struct mnode {
	uint64_t key, pseed, len;
};

struct model {
	uint64_t ntx;
	uint64_t bal[NACC];
	size_t n;
	struct mnode node[MAXNODES + 1];
};

enum { OP_NONE, OP_INSERT, OP_DELETE, OP_UPDATE };

struct plan {
	unsigned ntr;
	struct {
		unsigned from, to;
		uint64_t amt;
	} tr[MAXTR];
	int op;
	size_t pos;      /* insert: new index; delete/update: index */
	struct mnode nn; /* insert: the node; update: nn.key */
	int naked;       /* insert: naked stores + pmtx_flush, not pmtx_write */
	int ntx_first;   /* write ntx before the rest */
	int nested;      /* aborted plans: abort from a nested level */
};

static uint64_t stream_seed(uint64_t seed, uint64_t k, uint64_t stream)
{
	uint64_t s = seed ^ (k * 0xd1342543de82ef95ull) ^ (stream << 58);
	return tu_rand(&s);
}

/* Is transaction k preceded by an aborted one? */
static int aborts_before(uint64_t seed, uint64_t k)
{
	uint64_t s = stream_seed(seed, k, 2);
	return tu_rand(&s) % 8 == 0;
}

/* Transaction k's plan (stream 0) or the aborted one before it (stream 1),
 * from the state m it runs on. */
static void plan_make(uint64_t seed, uint64_t k, uint64_t stream,
                      const struct model *m, struct plan *p)
{
	uint64_t s = stream_seed(seed, k, stream), bal[NACC];
	memcpy(bal, m->bal, sizeof(bal));
	memset(p, 0, sizeof(*p));
	p->ntr = 1 + (unsigned)(tu_rand(&s) % MAXTR);
	for (unsigned i = 0; i < p->ntr; i++) {
		unsigned from = (unsigned)(tu_rand(&s) % NACC);
		unsigned to = (from + 1 + (unsigned)(tu_rand(&s) % (NACC - 1))) %
		              NACC;
		uint64_t amt = tu_rand(&s) % (bal[from] / 2 + 1);
		bal[from] -= amt, bal[to] += amt;
		p->tr[i].from = from, p->tr[i].to = to, p->tr[i].amt = amt;
	}
	p->ntx_first = (int)(tu_rand(&s) & 1);
	p->nested = (int)(tu_rand(&s) & 1);
	if (tu_rand(&s) % 100 < 15)
		return; /* OP_NONE */
	/* Inserts get rarer as the list grows, so it stays near 2/3 full. */
	uint64_t y = tu_rand(&s) % MAXNODES;
	if (m->n == 0 || (m->n < MAXNODES && y >= m->n)) {
		p->op = OP_INSERT;
		p->pos = (size_t)(tu_rand(&s) % (m->n + 1));
		p->nn.key = tu_rand(&s);
		p->nn.pseed = tu_rand(&s);
		/* 1 in 64 nodes is a large block (a run of superblocks). */
		p->nn.len = tu_rand(&s) % 64 == 0 ? 33000 + tu_rand(&s) % 70000
		                                  : tu_rand(&s) % 240;
		p->naked = (int)(tu_rand(&s) & 1);
	} else {
		p->op = tu_rand(&s) & 1 ? OP_DELETE : OP_UPDATE;
		p->pos = (size_t)(tu_rand(&s) % m->n);
		p->nn.key = tu_rand(&s);
	}
}

static void model_apply(struct model *m, const struct plan *p, uint64_t k)
{
	for (unsigned i = 0; i < p->ntr; i++) {
		m->bal[p->tr[i].from] -= p->tr[i].amt;
		m->bal[p->tr[i].to] += p->tr[i].amt;
	}
	switch (p->op) {
	case OP_INSERT:
		memmove(&m->node[p->pos + 1], &m->node[p->pos],
		        (m->n - p->pos) * sizeof(m->node[0]));
		m->node[p->pos] = p->nn;
		m->n++;
		break;
	case OP_DELETE:
		memmove(&m->node[p->pos], &m->node[p->pos + 1],
		        (m->n - p->pos - 1) * sizeof(m->node[0]));
		m->n--;
		break;
	case OP_UPDATE:
		m->node[p->pos].key = p->nn.key;
		break;
	}
	m->ntx = k;
}

static void model_init(struct model *m)
{
	memset(m, 0, sizeof(*m));
	for (unsigned i = 0; i < NACC; i++)
		m->bal[i] = INIT_BAL;
}

static uint8_t pbyte(uint64_t pseed, uint64_t i)
{
	return (uint8_t)((pseed >> (8 * (i % 8))) ^ ((i * 131) >> 3));
}

static size_t node_size(uint64_t len)
{
	return sizeof(struct node) + (size_t)len;
}

/* ---- the workload on the region (child) ---- */

static const char *const child_stage[] = {
	"open", "model", "pipe", "begin", "apply", "abort",
	"commit after abort", "transaction left after abort", "commit",
};

/* Report why the child stopped (stderr is unbuffered) and exit. */
static void child_fail(int code, int rc)
{
	fprintf(stderr, "crash child: %s failed: %s\n",
	        child_stage[code - CHILD_OPEN], rc ? pmtx_strerror(rc) : "");
	_exit(code);
}


/* ---- object access, raw or copy-on-write ---- */

/* A transaction's view of the region. Objects are named by handles: the
 * state is STATE, a node is its block (raw) or its wrapper (cow). */
#define STATE ((pmtx_off)0)

struct view {
	pmtx_region *r;
	pmtx_tx *tx;
	int cow;
	struct croot *root;
	int in_place; /* AUTO: odd values are stored in place (add_range) */
};

static int is_cow(pmtx_runtime rt)
{
	return rt == PMTX_RT_COW;
}

/* The object's bytes: raw, in place; cow, the payload (this transaction's
 * copy when it writes the object, or when write is set). */
static char *obj_at(struct view *v, pmtx_off h, int write)
{
	if (!v->cow)
		return h == STATE ? (char *)&v->root->st : pmtx_ptr(v->r, h);
	void *p;
	int rc = pmtx_cow_open(v->tx, h == STATE ? v->root->state_w : h,
	                       write ? PMTX_COW_WRITE : PMTX_COW_READ, NULL,
	                       &p);
	if (rc)
		child_fail(CHILD_APPLY, rc);
	return p;
}

/* Reads inside a transaction go through pmtx_read (raw): under a redo
 * runtime the transaction's own writes are not in place yet. */
static uint64_t obj_get(struct view *v, pmtx_off h, size_t field)
{
	uint64_t x;
	const char *p = obj_at(v, h, 0) + field;
	int rc = v->cow ? (memcpy(&x, p, 8), 0) : pmtx_read(v->tx, &x, p, 8);
	if (rc)
		child_fail(CHILD_APPLY, rc);
	return x;
}

static int obj_set(struct view *v, pmtx_off h, size_t field, uint64_t x)
{
	char *p = obj_at(v, h, 1) + field;
	if (v->cow) {
		memcpy(p, &x, 8); /* the private copy: commit persists it */
		return 0;
	}
	if (v->in_place && (x & 1)) {
		/* a redo transaction of AUTO turns to undo here */
		int rc = pmtx_add_range(v->tx, p, 8);
		if (!rc)
			memcpy(p, &x, 8);
		return rc;
	}
	return pmtx_write(v->tx, p, &x, 8);
}

/* The handle of node pos-1 (STATE for pos 0): the one whose link points
 * to node pos. */
static pmtx_off pred_of(struct view *v, size_t pos)
{
	pmtx_off h = STATE;
	for (size_t i = 0; i < pos; i++)
		h = obj_get(v, h, h == STATE ? F_HEAD : F_NEXT);
	return h;
}

static size_t link_field(pmtx_off h)
{
	return h == STATE ? F_HEAD : F_NEXT;
}

static void node_fill(struct node *nd, const struct mnode *mn, pmtx_off next)
{
	nd->key = mn->key;
	nd->pseed = mn->pseed;
	nd->len = mn->len;
	nd->next = next;
	for (uint64_t i = 0; i < mn->len; i++)
		nd->payload[i] = pbyte(mn->pseed, i);
}

/* A new node, initialised: raw, with naked stores + pmtx_flush or with
 * pmtx_write (as the plan says); cow, in its fresh payload. */
static int node_new(struct view *v, const struct plan *p, pmtx_off next,
                    pmtx_off *out)
{
	size_t size = node_size(p->nn.len);
	int rc;
	if (v->cow) {
		if ((rc = pmtx_cow_new(v->tx, size, out)))
			return rc;
		node_fill((struct node *)obj_at(v, *out, 1), &p->nn, next);
		return 0;
	}
	if ((rc = pmtx_alloc(v->tx, size, out)))
		return rc;
	struct node *nd = pmtx_ptr(v->r, *out);
	if (p->naked) {
		node_fill(nd, &p->nn, next);
		pmtx_flush(v->r, nd, size);
		return 0;
	}
	struct node *tmp = malloc(size);
	if (!tmp)
		return ENOMEM;
	node_fill(tmp, &p->nn, next);
	rc = pmtx_write(v->tx, nd, tmp, size);
	free(tmp);
	return rc;
}

static int node_free(struct view *v, pmtx_off h)
{
	return v->cow ? pmtx_cow_delete(v->tx, h) : pmtx_free(v->tx, h);
}

/* ---- the workload on the region (child) ---- */

static int pm_list(struct view *v, const struct plan *p)
{
	pmtx_off pred, h;
	int rc;
	switch (p->op) {
	case OP_INSERT:
		pred = pred_of(v, p->pos);
		rc = node_new(v, p, obj_get(v, pred, link_field(pred)), &h);
		if (!rc)
			rc = obj_set(v, pred, link_field(pred), h);
		if (!rc)
			rc = obj_set(v, STATE, F_NNODES,
			             obj_get(v, STATE, F_NNODES) + 1);
		return rc;
	case OP_DELETE:
		pred = pred_of(v, p->pos);
		h = obj_get(v, pred, link_field(pred));
		rc = obj_set(v, pred, link_field(pred), obj_get(v, h, F_NEXT));
		if (!rc)
			rc = node_free(v, h);
		if (!rc)
			rc = obj_set(v, STATE, F_NNODES,
			             obj_get(v, STATE, F_NNODES) - 1);
		return rc;
	case OP_UPDATE:
		pred = pred_of(v, p->pos);
		h = obj_get(v, pred, link_field(pred));
		return obj_set(v, h, F_KEY, p->nn.key);
	}
	return 0;
}

static int pm_apply(struct view *v, const struct plan *p, uint64_t ntx)
{
	int rc = p->ntx_first ? obj_set(v, STATE, F_NTX, ntx) : 0;
	for (unsigned i = 0; !rc && i < p->ntr; i++) {
		unsigned f = p->tr[i].from, t = p->tr[i].to;
		rc = obj_set(v, STATE, F_BAL(f),
		             obj_get(v, STATE, F_BAL(f)) - p->tr[i].amt);
		if (!rc)
			rc = obj_set(v, STATE, F_BAL(t),
			             obj_get(v, STATE, F_BAL(t)) + p->tr[i].amt);
	}
	if (!rc)
		rc = pm_list(v, p);
	if (!rc && !p->ntx_first)
		rc = obj_set(v, STATE, F_NTX, ntx);
	return rc;
}

/* ---- committed state, outside transactions (child and parent) ---- */

static const struct cstate *state_peek(pmtx_region *r, int cow)
{
	const struct croot *root = pmtx_root(r, NULL);
	return cow ? pmtx_cow_peek(r, root->state_w) : &root->st;
}

static const struct node *node_peek(pmtx_region *r, int cow, pmtx_off h)
{
	return cow ? pmtx_cow_peek(r, h) : pmtx_ptr(r, h);
}

/* Model of the region's current state (trusted: the parent verified it). */
static int model_load(pmtx_region *r, int cow, struct model *m)
{
	const struct cstate *st = state_peek(r, cow);
	if (!st)
		return -1;
	m->ntx = st->ntx;
	memcpy(m->bal, st->bal, sizeof(m->bal));
	m->n = 0;
	for (pmtx_off o = st->head; o; m->n++) {
		const struct node *nd = node_peek(r, cow, o);
		if (!nd || m->n == MAXNODES)
			return -1;
		m->node[m->n] = (struct mnode){nd->key, nd->pseed, nd->len};
		o = nd->next;
	}
	return 0;
}

static void run_aborted(pmtx_region *r, pmtx_runtime rt, const struct plan *p)
{
	pmtx_tx *tx, *inner;
	int rc = pmtx_begin(r, rt, &tx);
	if (rc)
		child_fail(CHILD_BEGIN, rc);
	inner = tx;
	if (p->nested && (rc = pmtx_begin(r, rt, &inner)))
		child_fail(CHILD_BEGIN, rc);
	struct view v = {r, inner, is_cow(rt), pmtx_root(r, NULL),
	                 rt == PMTX_RT_AUTO};
	if ((rc = pm_apply(&v, p, ~0ull)))
		child_fail(CHILD_APPLY, rc);
	if ((rc = pmtx_abort(inner)))
		child_fail(CHILD_ABORT, rc);
	if (p->nested && (rc = pmtx_commit(tx)) != PMTX_E_ABORTED)
		child_fail(CHILD_ABORT_COMMIT, rc);
	if (pmtx_tx_current())
		child_fail(CHILD_TX_LEFT, 0);
}

static void child_main(const char *path, const pmtx_options *o,
                       pmtx_runtime rt, uint64_t seed, int wfd)
{
	static struct model m;
	pmtx_region *r;
	int rc = pmtx_open(path, o, &r);
	if (rc)
		child_fail(CHILD_OPEN, rc);
	if (model_load(r, is_cow(rt), &m))
		child_fail(CHILD_MODEL, 0);
	uint64_t ready = 0;
	if (write(wfd, &ready, sizeof(ready)) != sizeof(ready))
		child_fail(CHILD_PIPE, 0);
	for (uint64_t k = m.ntx + 1;; k++) {
		struct plan p;
		pmtx_tx *tx;
		if (aborts_before(seed, k)) {
			plan_make(seed, k, 1, &m, &p);
			run_aborted(r, rt, &p);
		}
		plan_make(seed, k, 0, &m, &p);
		if ((rc = pmtx_begin(r, rt, &tx)))
			child_fail(CHILD_BEGIN, rc);
		struct view v = {r, tx, is_cow(rt), pmtx_root(r, NULL),
		                 rt == PMTX_RT_AUTO};
		if ((rc = pm_apply(&v, &p, k)))
			child_fail(CHILD_APPLY, rc);
		if ((rc = pmtx_commit(tx)))
			child_fail(CHILD_COMMIT, rc);
		model_apply(&m, &p, k);
		if (write(wfd, &k, sizeof(k)) != sizeof(k))
			child_fail(CHILD_PIPE, 0);
	}
}

/* ---- verification (parent) ---- */

struct ctx {
	const char *what; /* for messages */
	uint64_t seed;
	unsigned kill;
	int cow;
};

/* The heap blocks of the object h: its block (raw), or its wrapper and
 * its payload (cow). */
static void push_blocks(pmtx_region *r, int cow, pmtx_off h, const void *obj,
                        size_t size, const struct ctx *c,
                        struct tu_offs *used)
{
	pmtx_off b = cow ? pmtx_off_of(r, obj) : h;
	if (pmtx_usable_size(r, b) < size)
		fail_msg("%s seed %#llx kill %u: object %#llx is not an "
		         "allocated block of %zu bytes (lost allocation)",
		         c->what, (unsigned long long)c->seed, c->kill,
		         (unsigned long long)b, size);
	tu_offs_push(used, b);
	if (cow)
		tu_offs_push(used, h);
}

static void check_list(pmtx_region *r, const struct cstate *st,
                       const struct model *m, const struct ctx *c,
                       struct tu_offs *nodes)
{
	size_t i = 0;
	for (pmtx_off o = st->head; o; i++) {
		const struct node *nd = node_peek(r, c->cow, o);
		if (!nd || i >= m->n)
			fail_msg("%s seed %#llx kill %u: list longer than the "
			         "model's %zu nodes", c->what,
			         (unsigned long long)c->seed, c->kill, m->n);
		const struct mnode *mn = &m->node[i];
		if (nd->key != mn->key || nd->pseed != mn->pseed ||
		    nd->len != mn->len)
			fail_msg("%s seed %#llx kill %u ntx %llu: node %zu differs "
			         "from the model", c->what,
			         (unsigned long long)c->seed, c->kill,
			         (unsigned long long)m->ntx, i);
		for (uint64_t b = 0; b < mn->len; b++)
			if (nd->payload[b] != pbyte(mn->pseed, b))
				fail_msg("%s seed %#llx kill %u: node %zu payload "
				         "byte %llu differs", c->what,
				         (unsigned long long)c->seed, c->kill, i,
				         (unsigned long long)b);
		push_blocks(r, c->cow, o, nd, node_size(mn->len), c, nodes);
		o = nd->next;
	}
	if (i != m->n)
		fail_msg("%s seed %#llx kill %u: list has %zu nodes, model %zu",
		         c->what, (unsigned long long)c->seed, c->kill, i, m->n);
}

/* The user blocks of the heap are exactly the reachable objects'. */
static void check_no_leak(pmtx_region *r, struct tu_offs *nodes,
                          const struct ctx *c)
{
	char ctx[160];
	snprintf(ctx, sizeof(ctx), "%s seed %#llx kill %u", c->what,
	         (unsigned long long)c->seed, c->kill);
	tu_assert_heap_blocks(r, nodes, ctx);
}

static void verify(pmtx_region *r, struct model *m, uint64_t last_acked,
                   const struct ctx *c)
{
	const struct cstate *st = state_peek(r, c->cow);
	if (!st)
		fail_msg("%s seed %#llx kill %u: the state object is gone",
		         c->what, (unsigned long long)c->seed, c->kill);
	uint64_t ntx = st->ntx;
	if (ntx != last_acked && ntx != last_acked + 1)
		fail_msg("%s seed %#llx kill %u: ntx %llu after recovery, last "
		         "acknowledged commit %llu", c->what,
		         (unsigned long long)c->seed, c->kill,
		         (unsigned long long)ntx,
		         (unsigned long long)last_acked);
	assert_true(ntx >= m->ntx);
	for (uint64_t k = m->ntx + 1; k <= ntx; k++) {
		struct plan p;
		plan_make(c->seed, k, 0, m, &p);
		model_apply(m, &p, k);
	}
	uint64_t sum = 0;
	for (unsigned i = 0; i < NACC; i++) {
		if (st->bal[i] != m->bal[i])
			fail_msg("%s seed %#llx kill %u ntx %llu: balance %u is "
			         "%llu, model %llu", c->what,
			         (unsigned long long)c->seed, c->kill,
			         (unsigned long long)ntx, i,
			         (unsigned long long)st->bal[i],
			         (unsigned long long)m->bal[i]);
		sum += st->bal[i];
	}
	assert_int_equal(sum, NACC * INIT_BAL);
	assert_int_equal(st->nnodes, m->n);
	struct tu_offs nodes = {0};
	if (c->cow)
		push_blocks(r, 1, ((const struct croot *)pmtx_root(r, NULL))
		                           ->state_w,
		            st, sizeof(*st), c, &nodes);
	check_list(r, st, m, c, &nodes);
	pmtx_heap_stats hs;
	if (pmtx_heap_check(r, &hs))
		fail_msg("%s seed %#llx kill %u: heap check: %s", c->what,
		         (unsigned long long)c->seed, c->kill, hs.first_error);
	check_no_leak(r, &nodes, c);
	free(nodes.v);
}

/* ---- the kill loop ---- */

static void init_region(const char *path, const pmtx_options *o,
                        pmtx_runtime rt)
{
	pmtx_region *r;
	/* a twin region holds its back copy too */
	size_t size = rt == PMTX_RT_TWIN ? 2 * REGION_SIZE : REGION_SIZE;
	int rc = pmtx_create(path, size, o, &r);
	if (rc)
		fail_msg("pmtx_create %s: %s %s", path, pmtx_strerror(rc),
		         pmtx_errmsg());
	struct croot *root = pmtx_root(r, NULL);
	pmtx_tx *tx;
	if (is_cow(rt)) {
		/* The state object; the root names it (written once, by an
		 * undo transaction: cow cannot write the root). */
		pmtx_off w;
		void *p;
		assert_int_equal(pmtx_begin(r, rt, &tx), 0);
		assert_int_equal(pmtx_cow_new(tx, sizeof(struct cstate), &w), 0);
		assert_int_equal(pmtx_cow_open(tx, w, PMTX_COW_WRITE, NULL, &p),
		                 0);
		for (unsigned i = 0; i < NACC; i++)
			((struct cstate *)p)->bal[i] = INIT_BAL;
		assert_int_equal(pmtx_commit(tx), 0);
		assert_int_equal(pmtx_begin(r, PMTX_RT_UNDO, &tx), 0);
		assert_int_equal(PMTX_SET(tx, root->state_w, w), 0);
		assert_int_equal(pmtx_commit(tx), 0);
	} else {
		assert_int_equal(pmtx_begin(r, rt, &tx), 0);
		for (unsigned i = 0; i < NACC; i++)
			assert_int_equal(PMTX_SET(tx, root->st.bal[i], INIT_BAL),
			                 0);
		assert_int_equal(pmtx_commit(tx), 0);
	}
	assert_int_equal(pmtx_close(r), 0);
}

static void sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Delay before the kill: a quarter of them under 200 us (often inside
 * the first transactions or still in open/recovery), the rest up to
 * max_ns. */
static long kill_delay(uint64_t *rs, long max_ns)
{
	if (tu_rand(rs) % 4 == 0)
		return (long)(tu_rand(rs) % 200000);
	return (long)(tu_rand(rs) % (uint64_t)max_ns);
}

/* Fork the child, kill it, and return the last acknowledged k (or
 * prev when none was). */
static uint64_t run_and_kill(const char *path, const pmtx_options *o,
                             pmtx_runtime rt, uint64_t *rs, long max_ns,
                             uint64_t prev, const struct ctx *c)
{
	uint64_t seed = c->seed;
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	(void)fcntl(fds[1], F_SETPIPE_SZ, 1 << 20); /* never block the child */
	pid_t pid = tu_fork();
	if (pid == 0) {
		close(fds[0]);
		child_main(path, o, rt, seed, fds[1]);
		child_fail(CHILD_PIPE, 0);
	}
	close(fds[1]);
	uint64_t v, last = prev;
	/* Most rounds wait until the child has opened (and recovered) the
	 * region; 1 in 8 may kill it inside pmtx_open. */
	if (tu_rand(rs) % 8 != 0 && read(fds[0], &v, sizeof(v)) == sizeof(v) &&
	    v > last)
		last = v;
	sleep_ns(kill_delay(rs, max_ns));
	kill(pid, SIGKILL);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	ssize_t n;
	while ((n = read(fds[0], &v, sizeof(v))) == sizeof(v))
		if (v > last)
			last = v;
	assert_true(n == 0);
	close(fds[0]);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail_msg("%s seed %#llx kill %u: child did not die of SIGKILL: "
		         "%s %d (see its message above)", c->what,
		         (unsigned long long)c->seed, c->kill,
		         WIFEXITED(status) ? "exit" : "signal",
		         WIFEXITED(status) ? WEXITSTATUS(status)
		                           : WTERMSIG(status));
	return last;
}

static uint64_t crash_seed(void)
{
	const char *s = getenv("PMTX_CRASH_SEED");
	return s && *s ? strtoull(s, NULL, 0) : DEFAULT_SEED;
}

/* The region of the running test, unlinked after it even if it fails
 * (PMTX_CRASH_SEED reproduces the workload). */
static char cur_path[96];

static int unlink_region(void **state)
{
	if (cur_path[0])
		unlink(cur_path);
	cur_path[0] = 0;
	return 0;
}

static void kill_loop(const char *path, pmtx_backend backend,
                      pmtx_runtime rt, unsigned nkills, long max_ns,
                      const char *where)
{
	static struct model m;
	char what[64];
	snprintf(what, sizeof(what), "%s/%s", where, pmtx_runtime_name(rt));
	pmtx_options o;
	pmtx_options_init(&o);
	o.root_size = sizeof(struct croot);
	o.backend = backend;
	o.runtime = rt;
	if (rt == PMTX_RT_AUTO) /* every runtime, and switches to undo */
		o.flags |= PMTX_OPEN_AUTO_ROTATE;
	struct ctx c = {what, crash_seed(), 0, is_cow(rt)};
	uint64_t rs = c.seed ^ 0xabcdefull;
	snprintf(cur_path, sizeof(cur_path), "%s", path);
	unlink(path);
	init_region(path, &o, rt);
	model_init(&m);
	uint64_t last = 0, committed_max = 0;
	for (c.kill = 0; c.kill < nkills; c.kill++) {
		last = run_and_kill(path, &o, rt, &rs, max_ns, m.ntx, &c);
		pmtx_region *r;
		int rc = pmtx_open(path, &o, &r);
		if (rc)
			fail_msg("%s seed %#llx kill %u: reopen: %s %s", what,
			         (unsigned long long)c.seed, c.kill,
			         pmtx_strerror(rc), pmtx_errmsg());
		verify(r, &m, last, &c);
		assert_int_equal(pmtx_close(r), 0);
		committed_max = m.ntx;
	}
	print_message("%s: %u kills, %llu transactions committed, seed "
	              "%#llx\n", what, nkills,
	              (unsigned long long)committed_max,
	              (unsigned long long)c.seed);
	assert_true(committed_max > 0);
	unlink(path);
}

static void sigkill_at_random_points_recovers_a_committed_prefix_without_leaks(
	void **state)
{
	unsigned nkills = tu_long_mode() ? 5000 : 500;
	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++)
		kill_loop(tu_path(), PMTX_BACKEND_HARDWARE, runtimes[i], nkills,
		          15000000L, "shm");
}

static void sigkill_on_file_backend_recovers_a_committed_prefix_without_leaks(
	void **state)
{
	const char *path = tu_path_in("/var/tmp", "crash.pmtx");
	unsigned nkills = tu_long_mode() ? 200 : 20;
	for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++)
		kill_loop(path, PMTX_BACKEND_FILE, runtimes[i], nkills,
		          50000000L, "file");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(
			sigkill_at_random_points_recovers_a_committed_prefix_without_leaks,
			unlink_region),
		cmocka_unit_test_teardown(
			sigkill_on_file_backend_recovers_a_committed_prefix_without_leaks,
			unlink_region),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
