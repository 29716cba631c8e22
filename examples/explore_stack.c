/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * explore_stack.c - a persistent stack, and a program that explores its
 * power-failure crash states through the public explorer API alone.
 *
 * The stack is a linked list of nodes in a pmtx region: a push allocates
 * a node, fills it with naked stores (a fresh block: flushed, made
 * durable by the commit) and links it on top; a pop unlinks the top node
 * and frees it. The root holds the top and the count, and the count
 * always equals the number of nodes: the invariant a crash must not
 * break.
 *
 * The workload tells the explorer how to exercise and check the stack:
 *   setup    nothing (a zeroed root is the empty stack);
 *   run      operation i: a push, or a pop when the stack is not empty
 *            and the seed says so; one transaction each;
 *   observe  [count, values from the top down], following and checking
 *            every offset;
 *   model    the same vector after the first k operations, computed in
 *            DRAM from the same choices;
 *   walk     every node, for the leak check.
 *
 *   pmtx-explore-stack [pmtx crashtest options]     (--help lists them)
 *
 * Built with -DEXPLORE_STACK_BROKEN (pmtx-explore-stack-broken), a push
 * updates the count with a store outside the transaction: a crash between
 * that store and the commit leaves a count that no longer matches the
 * nodes, and the explorer reports it with a reproducer.
 */
#include <stdio.h>

#include <pmtx.h>
#include <pmtx_explore.h>

struct stack_root {
	pmtx_off top; /* the top node, or 0 */
	uint64_t count;
};

struct stack_node {
	uint64_t value;
	pmtx_off next;
};

#define MAX_DEPTH 4096 /* the model's capacity (max_ntx) */

/* splitmix64's finaliser: every choice derives from the seed. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Operation i pushes (1) or pops (0); run and model decide alike. */
static int is_push(const pmtx_explore_env *e, uint64_t i, uint64_t depth)
{
	return depth == 0 || mix(e->seed ^ mix(i)) % 3 != 0;
}

static uint64_t value_of(const pmtx_explore_env *e, uint64_t i)
{
	return mix(e->seed + i) | 1; /* never 0 */
}

static int stack_setup(const pmtx_explore_env *e, pmtx_region *r)
{
	(void)e, (void)r;
	return 0;
}

static int push(pmtx_tx *tx, pmtx_region *r, uint64_t value)
{
	struct stack_root *root = pmtx_root(r, NULL);
	pmtx_off off;
	int rc = pmtx_alloc(tx, sizeof(struct stack_node), &off);
	if (rc)
		return rc;
	/* A fresh node: naked stores, flushed; the commit makes them
	 * durable before the node becomes reachable. */
	struct stack_node *n = PMTX_PTR(r, off, struct stack_node);
	n->value = value;
	n->next = root->top;
	pmtx_flush(r, n, sizeof(*n));
	rc = PMTX_SET(tx, root->top, off);
#ifdef EXPLORE_STACK_BROKEN
	/* The bug: the count bypasses the transaction. */
	root->count++;
	pmtx_persist(r, &root->count, sizeof(root->count));
	return rc;
#else
	return rc ? rc : PMTX_SET(tx, root->count, root->count + 1);
#endif
}

static int pop(pmtx_tx *tx, pmtx_region *r)
{
	struct stack_root *root = pmtx_root(r, NULL);
	pmtx_off off = root->top;
	const struct stack_node *n = PMTX_PTR(r, off, struct stack_node);
	int rc = PMTX_SET(tx, root->top, n->next);
	if (!rc)
		rc = PMTX_SET(tx, root->count, root->count - 1);
	return rc ? rc : pmtx_free(tx, off);
}

static int stack_run(const pmtx_explore_env *e, pmtx_region *r, unsigned t,
                     uint64_t i)
{
	const struct stack_root *root = pmtx_root(r, NULL);
	pmtx_tx *tx;
	(void)t;
	int rc = pmtx_begin(r, e->runtime, &tx);
	if (rc)
		return rc;
	rc = is_push(e, i, root->count) ? push(tx, r, value_of(e, i))
	                                : pop(tx, r);
	if (rc) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}

/* Follow the stack from the top: out = [count, values...]; every offset
 * is checked, and fn (if any) gets every node. */
static size_t follow(pmtx_region *r, uint64_t *out, size_t max, char *msg,
                     size_t len, pmtx_explore_block_fn fn, void *arg)
{
	const struct stack_root *root = pmtx_root(r, NULL);
	size_t n = 1;
	for (pmtx_off off = root->top; off; n++) {
		const struct stack_node *nd =
			PMTX_PTR(r, off, const struct stack_node);
		if (!nd || n >= max) {
			snprintf(msg, len, "stack: bad link 0x%llx at "
			         "depth %zu", (unsigned long long)off, n - 1);
			return (size_t)-1;
		}
		if (fn && fn(off, arg))
			return (size_t)-1;
		out[n] = nd->value;
		off = nd->next;
	}
	if (root->count != n - 1) {
		snprintf(msg, len, "stack: count %llu but %zu nodes",
		         (unsigned long long)root->count, n - 1);
		return (size_t)-1;
	}
	out[0] = root->count;
	return n;
}

static size_t stack_observe(const pmtx_explore_env *e, pmtx_region *r,
                            unsigned t, uint64_t *out, size_t max,
                            char *msg, size_t len)
{
	(void)e, (void)t;
	return follow(r, out, max, msg, len, NULL, NULL);
}

static size_t stack_model(const pmtx_explore_env *e, unsigned t, uint64_t k,
                          uint64_t *out, size_t max)
{
	uint64_t depth = 0;
	(void)t;
	/* out[1] is the top: a push shifts the values down, a pop up */
	for (uint64_t i = 0; i < k; i++) {
		if (!is_push(e, i, depth)) {
			for (uint64_t j = 1; j < depth; j++)
				out[j] = out[j + 1];
			depth--;
			continue;
		}
		if (depth + 2 > max)
			return 0; /* does not fit */
		for (uint64_t j = depth + 1; j > 1; j--)
			out[j] = out[j - 1];
		out[1] = value_of(e, i);
		depth++;
	}
	out[0] = depth;
	return depth + 1;
}

static int stack_walk(const pmtx_explore_env *e, pmtx_region *r,
                      pmtx_explore_block_fn fn, void *arg)
{
	uint64_t buf[MAX_DEPTH + 2];
	char msg[8];
	(void)e;
	return follow(r, buf, MAX_DEPTH + 2, msg, sizeof(msg), fn, arg) ==
	       (size_t)-1;
}

static const pmtx_explore_workload stack = {
	.name = "stack",
	.help = "pushes and pops on a persistent linked stack",
	.root_size = sizeof(struct stack_root),
	.layout = "explore-stack",
	.runtimes = PMTX_EXPLORE_LOGGING,
	.max_ntx = MAX_DEPTH,
	.setup = stack_setup,
	.run = stack_run,
	.observe = stack_observe,
	.model = stack_model,
	.walk = stack_walk,
};

int main(int argc, char **argv)
{
	const pmtx_explore_workload *const wls[] = {&stack};
	return pmtx_explore_main(argc, argv, wls, 1);
}
