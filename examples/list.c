/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * list.c - a persistent linked list that survives kill -9.
 *
 * Every run opens (or creates) a region, prints what the list holds, then
 * appends --count nodes, one transaction each: allocate a node, fill it,
 * link it at the head, bump the count. Kill it at any moment with kill -9
 * and run it again: the list is always whole, and the count always equals
 * the number of nodes.
 *
 *   pmtx-example [--path FILE] [--count N] [--slow]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmtx.h"

struct node {
	uint64_t value;
	pmtx_off next;
};

struct root {
	uint64_t count;
	pmtx_off head;
};

static int append(pmtx_region *r, struct root *root, uint64_t value)
{
	pmtx_tx *tx;
	pmtx_off off;
	int rc = pmtx_begin(r, PMTX_RT_DEFAULT, &tx);
	if (rc)
		return rc;
	rc = pmtx_alloc(tx, sizeof(struct node), &off);
	if (!rc) {
		/* A fresh node: naked stores, flushed; commit makes them
		 * durable before the node becomes reachable. */
		struct node *n = PMTX_PTR(r, off, struct node);
		n->value = value;
		n->next = root->head;
		pmtx_flush(r, n, sizeof(*n));
		rc = TXN_SET(tx, root, head, off);
	}
	if (!rc)
		rc = TXN_SET(tx, root, count, root->count + 1);
	if (rc) {
		pmtx_abort(tx);
		return rc;
	}
	return pmtx_commit(tx);
}

static uint64_t walk(pmtx_region *r, const struct root *root)
{
	uint64_t n = 0;
	for (pmtx_off o = root->head; o; o = PMTX_PTR(r, o, struct node)->next)
		n++;
	return n;
}

int main(int argc, char **argv)
{
	const char *path = "/dev/shm/pmtx-example.pmtx";
	long count = 1000;
	int slow = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--path") && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = atol(argv[++i]);
		else if (!strcmp(argv[i], "--slow"))
			slow = 1;
		else {
			fprintf(stderr, "usage: %s [--path FILE] [--count N] "
			                "[--slow]\n", argv[0]);
			return 2;
		}
	}
	pmtx_options o;
	pmtx_options_init(&o);
	o.layout = "example-list";
	o.root_size = sizeof(struct root);
	pmtx_region *r;
	int rc = pmtx_open(path, &o, &r);
	if (rc == ENOENT)
		rc = pmtx_create(path, 64 << 20, &o, &r);
	if (rc) {
		fprintf(stderr, "%s: %s %s\n", path, pmtx_strerror(rc),
		        pmtx_errmsg());
		return 1;
	}
	struct root *root = pmtx_root(r, NULL);
	uint64_t nodes = walk(r, root);
	printf("opened %s: count=%llu, nodes in list=%llu (%s)\n", path,
	       (unsigned long long)root->count, (unsigned long long)nodes,
	       nodes == root->count ? "consistent" : "INCONSISTENT");
	if (nodes != root->count)
		return 1;
	for (long i = 0; i < count && !rc; i++) {
		rc = append(r, root, root->count);
		if (slow)
			usleep(1000);
	}
	if (rc)
		fprintf(stderr, "append: %s\n", pmtx_strerror(rc));
	printf("appended %ld: count=%llu\n", count,
	       (unsigned long long)root->count);
	pmtx_close(r);
	return rc ? 1 : 0;
}
