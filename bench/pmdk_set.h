/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmdk_set.h - two sets of 64-bit keys on libpmemobj's C API, for the
 * `set` workload (wl_set.c): a B-tree and a chained hash map, each
 * operation meant to run inside one PMDK transaction (bench_pmdk_tx).
 * Written for this benchmark on the shape of PMDK's examples (btree_map,
 * hashmap_tx); see pmdk_set.c for the design.
 */
#ifndef PMTX_BENCH_PMDK_SET_H
#define PMTX_BENCH_PMDK_SET_H

#include <libpmemobj.h>
#include <stdint.h>

/* Items per B-tree node at most; a node has one child more. PMDK's
 * examples' btree_map uses order 8: 7 items, 8 children. */
#define PB_ORDER 8
#define PB_MAX (PB_ORDER - 1)   /* items in a full node */
#define PB_MIN (PB_ORDER / 2 - 1) /* items in a node other than the root */

struct pb_item {
	uint64_t key, val;
};

struct pb_node {
	uint64_t n; /* items */
	struct pb_item it[PB_MAX];
	PMEMoid child[PB_ORDER]; /* all null in a leaf */
};

struct pb_root {
	PMEMoid root; /* a node, or null (empty) */
};

struct ph_entry {
	uint64_t key, val;
	PMEMoid next;
};

struct ph_root {
	uint64_t log2; /* 2^log2 buckets */
	PMEMoid buckets; /* PMEMoid[1 << log2] */
};

/* Inside a PMDK transaction: 1 if key was added (0: it was there). */
int pb_add(struct pb_root *t, uint64_t key);
/* Inside a PMDK transaction: 1 if key was removed (0: absent). */
int pb_remove(struct pb_root *t, uint64_t key);
/* Plain loads, in or out of a transaction: 1 if key is present. */
int pb_contains(const struct pb_root *t, uint64_t key);
/* Check the tree's shape (order, fill, one depth for every leaf) and
 * call fn(key, val, arg) in key order; stop at fn's first nonzero value
 * or the first fault (-1, with a message on stderr). */
int pb_walk(const struct pb_root *t, int (*fn)(uint64_t, uint64_t, void *),
            void *arg);

/* Outside any transaction: a map of 2^log2 empty buckets in root. */
int ph_init(PMEMobjpool *pop, struct ph_root *h, unsigned log2);
int ph_add(struct ph_root *h, uint64_t key);
int ph_remove(struct ph_root *h, uint64_t key);
int ph_contains(const struct ph_root *h, uint64_t key);
/* Every entry, bucket by bucket (each must sit in its key's bucket). */
int ph_walk(const struct ph_root *h, int (*fn)(uint64_t, uint64_t, void *),
            void *arg);

#endif
