/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gen_corpus.c - the seed corpus of fuzz_region: real region images.
 *
 *   fuzz_gen_corpus DIR
 *
 * For each runtime (undo, redo, redo-async, copy-on-write, twin) and two
 * small geometries (one descriptor and one superblock, about 100 KiB; two
 * and two, about 184 KiB; twice that for a twin region and its back
 * copy), it writes into DIR:
 *   fresh-*     the region just created;
 *   *-b<N>      the image at the region's N-th persist barrier of a few
 *               transactions (root writes, allocations, frees, an abort, a
 *               write large enough to grow the log): what a process crash
 *               just before that barrier leaves, every store made so far
 *               included;
 *   mid-*       a transaction with writes and an allocation, not committed
 *               (midbig-*: one whose log has grown);
 *   done-*      after the transactions, before close (redo-async: committed
 *               logs not yet retired, truncation being lazy).
 * Power-failure images, where stores are lost, come from the crash-state
 * explorer (`pmtx crashtest ... --save FILE`, tests/fuzz/run.sh).
 *
 * The images are taken through the persist-ops override (persist.h), the
 * hook fault-injection tests use: a barrier copies the mapping first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmtx.h"
#include "persist/persist.h"
#include "region/layout.h"

struct snap {
	const char *dir;
	char prefix[64];
	unsigned n;
	unsigned stride; /* keep one barrier image in stride */
	int on;
};

static struct snap snap;

static void save(const char *name, const void *p, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", snap.dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, p, len) != (ssize_t)len || close(fd) != 0) {
		perror(path);
		exit(1);
	}
}

static void snap_flush(struct persist *p, const void *a, size_t n)
{
	persist_default_ops(p->domain, p->backend)->flush(p, a, n);
}

static int snap_barrier(struct persist *p)
{
	if (snap.on && snap.n++ % snap.stride == 0) {
		char name[96];
		snprintf(name, sizeof(name), "%s-b%03u", snap.prefix, snap.n - 1);
		save(name, p->base, p->len);
	}
	return persist_default_ops(p->domain, p->backend)->barrier(p);
}

static void snap_copy_nt(struct persist *p, void *d, const void *s, size_t n)
{
	persist_default_ops(p->domain, p->backend)->copy_nt(p, d, s, n);
}

static const persist_ops snap_ops = {"snapshot", snap_flush, snap_barrier,
                                     snap_copy_nt, NULL, NULL, NULL, NULL};

static void check(int rc, const char *what)
{
	if (rc) {
		fprintf(stderr, "fuzz_gen_corpus: %s: %s (%s)\n", what,
		        pmtx_strerror(rc), pmtx_errmsg());
		exit(1);
	}
}

struct root {
	uint64_t count;
	pmtx_off a, b;
	uint64_t pad[5];
};

static void save_region(pmtx_region *r, const char *what)
{
	char name[96];
	snprintf(name, sizeof(name), "%s-%s", what, snap.prefix);
	save(name, (char *)pmtx_ptr(r, PMTX_HDR_SIZE) - PMTX_HDR_SIZE,
	     pmtx_region_size(r));
}

/* A logged update of the user's data: root fields, or an object. */
static int update(pmtx_tx *tx, pmtx_region *r, pmtx_off w, uint64_t v)
{
	struct root *root = pmtx_root(r, NULL);
	void *p;
	if (pmtx_tx_runtime(tx) != PMTX_RT_COW)
		return PMTX_SET(tx, root->count, v);
	int rc = pmtx_cow_open(tx, w, PMTX_COW_WRITE, NULL, &p);
	if (!rc)
		memcpy(p, &v, sizeof(v));
	return rc;
}

/* Transactions 1-3: allocate, update, free; each committed. */
static void txs_commit(pmtx_region *r, pmtx_off w)
{
	struct root *root = pmtx_root(r, NULL);
	pmtx_tx *tx;
	pmtx_off a, b;
	check(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), "begin 1");
	check(update(tx, r, w, 1), "update 1");
	check(pmtx_zalloc(tx, 32, &a), "zalloc 1");
	check(pmtx_commit(tx), "commit 1");
	check(pmtx_begin(r, pmtx_region_runtime(r) == PMTX_RT_TWIN
	                            ? PMTX_RT_DEFAULT : PMTX_RT_UNDO, &tx),
	      "begin 2");
	check(PMTX_SET(tx, root->a, a), "link 2");
	check(pmtx_commit(tx), "commit 2");
	check(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), "begin 3");
	check(update(tx, r, w, 3), "update 3");
	check(pmtx_alloc(tx, 32, &b), "alloc 3");
	check(pmtx_free(tx, a), "free 3");
	check(pmtx_commit(tx), "commit 3");
}

/* An aborted transaction, then one left running (mid-*). */
static void txs_unfinished(pmtx_region *r, pmtx_off w)
{
	pmtx_tx *tx;
	pmtx_off a;
	check(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), "begin 4");
	check(update(tx, r, w, 4), "update 4");
	check(pmtx_zalloc(tx, 32, &a), "zalloc 4");
	check(pmtx_abort(tx), "abort 4");
	check(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), "begin 5");
	check(update(tx, r, w, 5), "update 5");
	check(pmtx_zalloc(tx, 32, &a), "zalloc 5");
	save_region(r, "mid");
	check(pmtx_commit(tx), "commit 5");
}

/* More records than a first log chunk holds: the log grows into the
 * heap. Allocations of one size class only, so that one superblock is
 * left for the new chunk. */
static void tx_big(pmtx_region *r)
{
	enum { NBLK = 75, WORDS = 4 };
	pmtx_tx *tx;
	pmtx_off a[NBLK];
	pmtx_runtime rt = pmtx_region_runtime(r) == PMTX_RT_COW
	                          ? PMTX_RT_UNDO : PMTX_RT_DEFAULT;
	check(pmtx_begin(r, PMTX_RT_DEFAULT, &tx), "begin big");
	for (unsigned i = 0; i < NBLK; i++)
		check(pmtx_alloc(tx, 32, &a[i]), "alloc big");
	check(pmtx_commit(tx), "commit big");
	snap.stride = 16; /* undo: a barrier per write */
	check(pmtx_begin(r, rt, &tx), "begin big write");
	for (unsigned i = 0; i < NBLK; i++)
		for (unsigned k = 0; k < WORDS; k++)
			check(PMTX_SET(tx, PMTX_PTR(r, a[i], uint64_t)[k],
			               i * WORDS + k),
			      "write big");
	save_region(r, "midbig");
	check(pmtx_commit(tx), "commit big write");
	snap.stride = 1;
}

/* The copy-on-write runtime updates objects only: make one first. */
static pmtx_off make_object(pmtx_region *r)
{
	pmtx_tx *tx;
	pmtx_off w = 0;
	if (pmtx_region_runtime(r) != PMTX_RT_COW)
		return 0;
	check(pmtx_begin(r, PMTX_RT_COW, &tx), "begin cow");
	check(pmtx_cow_new(tx, 32, &w), "cow new");
	check(pmtx_commit(tx), "commit cow");
	return w;
}

static void one_region(pmtx_runtime rt, unsigned ndesc, size_t size, int big)
{
	char path[96];
	pmtx_options o;
	pmtx_region *r;
	snprintf(path, sizeof(path), "/dev/shm/pmtx-gen-%d.pmtx", (int)getpid());
	unlink(path);
	pmtx_options_init(&o);
	o.root_size = sizeof(struct root);
	o.ndesc = ndesc;
	o.runtime = rt;
	o.backend = PMTX_BACKEND_EMULATED;
	o.barrier_ns = 0;
	o.truncation = PMTX_TRUNC_LAZY;
	snprintf(snap.prefix, sizeof(snap.prefix), "%s-d%u",
	         pmtx_runtime_name(rt), ndesc);
	snap.n = 0;
	snap.stride = 1;
	check(pmtx_create(path, size, &o, &r), "create");
	save_region(r, "fresh");
	snap.on = 1;
	pmtx_off w = make_object(r);
	txs_commit(r, w);
	txs_unfinished(r, w);
	if (big)
		tx_big(r);
	save_region(r, "done");
	snap.on = 0;
	check(pmtx_close(r), "close");
	unlink(path);
}

int main(int argc, char **argv)
{
	static const pmtx_runtime rts[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
	                                   PMTX_RT_REDO_ASYNC, PMTX_RT_COW,
	                                   PMTX_RT_TWIN};
	if (argc != 2) {
		fprintf(stderr, "usage: fuzz_gen_corpus DIR\n");
		return 2;
	}
	snap.dir = argv[1];
	persist_override_ops(&snap_ops, NULL);
	for (size_t i = 0; i < sizeof(rts) / sizeof(rts[0]); i++) {
		size_t twice = rts[i] == PMTX_RT_TWIN ? 2 : 1;
		one_region(rts[i], 1, twice * (100u << 10), 0);
		one_region(rts[i], 2, twice * (184u << 10), 1);
	}
	persist_override_ops(NULL, NULL);
	return 0;
}
