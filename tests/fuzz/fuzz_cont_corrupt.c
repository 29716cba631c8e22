/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_cont_corrupt.c - libFuzzer harness: containers whose blocks the
 * input corrupts.
 *
 * A container's blocks are read back from a file, so every byte of them
 * is untrusted (cont.h C3): a corrupt container must give a status
 * (PMTX_E_CORRUPT, PMTX_E_NOT_CONTAINER, ...), never a crash, a hang or
 * a read outside the region.
 *
 * Design
 *  CC1. A template region is made once per process (its file read into
 *       memory and removed): two hash maps (one split several times, one
 *       PMTX_HMAP_LOCKED), two ordered maps (byte keys: items and
 *       separators; u64 keys with byte values, three levels), a list of
 *       several chunks (one holding an element bigger than a chunk) and
 *       three strings (two in heap blocks) in the root. Its blocks are
 *       listed: the root, each container's header and every block it
 *       owns.
 *  CC2. Each input is a list of patches: a block (a byte, modulo the
 *       blocks), an offset in it (two bytes, modulo its usable size), a
 *       length and that many bytes, written over the block in a copy of
 *       the template (a memfd, or a file in /dev/shm removed at exit).
 *       Only container bytes change: the region's header and heap
 *       metadata are the template's, so open succeeds.
 *  CC3. The copy is opened and every operation of every container runs
 *       on it: the checkers, reads (get, scan, len, index, range, string
 *       reads) and writes (put, delete, clear, push, pop, insert,
 *       remove, set, trim, string set, append, setrange, clear,
 *       destroy), first inside a transaction that aborts, then each in a
 *       transaction of its own. Every status is accepted; what fails is
 *       a crash, a hang (-timeout), a sanitizer report or a leak.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pmtx.h"
#include "pmtx_containers.h"
#include "containers/hmap.h"
#include "containers/list.h"
#include "containers/list_layout.h"
#include "containers/map.h"
#include "containers/str_layout.h"
#include "fuzz_options.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REGION (2u << 20)
#define NSTR 3
#define MAXBLOCKS 16384

struct root {
	pmtx_off hmap, locked, list, bmap, umap;
	pmtx_str s[NSTR];
};

static int file_fd = -1;
static char file_path[64], tmpl_path[64];
static unsigned char *tmpl;   /* the template's bytes */
static size_t tmpl_size;
static struct block {
	pmtx_off off;
	size_t n;
} blocks[MAXBLOCKS];
static unsigned nblocks;

static _Noreturn void die(const char *what, int rc)
{
	fprintf(stderr, "fuzz_cont_corrupt: %s: %s (%s)\n", what,
	        pmtx_strerror(rc), pmtx_errmsg());
	abort();
}

static void ok(const char *what, int rc)
{
	if (rc)
		die(what, rc);
}

static void remove_files(void)
{
	if (strncmp(file_path, "/dev/shm/", 9) == 0)
		unlink(file_path);
}

static pmtx_options options(void)
{
	return fuzz_options(sizeof(struct root), 2);
}

/* ---- the template (CC1) ---- */

static void kv(unsigned i, unsigned char *k, size_t *kn, unsigned char *v,
               size_t *vn)
{
	*kn = (size_t)snprintf((char *)k, 16, "key-%u", i);
	*vn = i % 7 == 0 ? 300 : 5 + i % 40;
	for (size_t j = 0; j < *vn; j++)
		v[j] = (unsigned char)(i + j);
}

static void fill_hmap(pmtx_region *r, pmtx_tx *tx, pmtx_off off,
                      unsigned n)
{
	pmtx_hmap *m;
	ok("hmap open", pmtx_hmap_open(r, off, NULL, &m));
	for (unsigned i = 0; i < n; i++) {
		unsigned char k[16], v[300];
		size_t kn, vn;
		kv(i, k, &kn, v, &vn);
		ok("hmap put", pmtx_hmap_put(tx, m, k, kn, v, vn, 0, NULL));
	}
	pmtx_hmap_close(m);
}

static void fill_list(pmtx_region *r, pmtx_tx *tx, pmtx_off off)
{
	static unsigned char big[1100];
	unsigned char v[120];
	pmtx_list *l;
	ok("list open", pmtx_list_open(r, off, NULL, &l));
	for (unsigned i = 0; i < 60; i++) {
		memset(v, (int)i, sizeof(v));
		ok("list push", pmtx_list_push(tx, l, i % 3 ? PMTX_LIST_TAIL
		                                           : PMTX_LIST_HEAD,
		                               v, 10 + i * 7 % 100));
	}
	memset(v, 20, sizeof(v));
	ok("list insert", pmtx_list_insert(tx, l, v, 10 + 20 * 7 % 100, 1,
	                                   big, sizeof(big)));
	pmtx_list_close(l);
}

/* An ordered map of 1,000 keys (byte keys, or u64 keys with byte
 * values; the u64 map has three levels). */
static void fill_map(pmtx_region *r, pmtx_tx *tx, pmtx_off off, int u64)
{
	pmtx_map *m;
	ok("map open", pmtx_map_open(r, off, NULL, &m));
	for (unsigned i = 0; i < 1000; i++) {
		unsigned char k[16], v[300];
		size_t kn, vn;
		uint64_t kw = i * 7;
		kv(i, k, &kn, v, &vn);
		ok("map put", u64 ? pmtx_map_put(tx, m, &kw, 8, v, vn % 40, 0,
		                                 NULL)
		                  : pmtx_map_put(tx, m, k, kn, v, vn % 40, 0,
		                                 NULL));
	}
	pmtx_map_close(m);
}

static int add_block(pmtx_off off, size_t n)
{
	if (nblocks < MAXBLOCKS)
		blocks[nblocks++] = (struct block){off, n};
	return 0;
}

static int walk_block(pmtx_off off, size_t usable, void *arg)
{
	(void)arg;
	return add_block(off, usable);
}

static void make_template(void)
{
	static const unsigned char s0[200] = "a heap string";
	pmtx_options o = options();
	pmtx_region *r;
	pmtx_tx *tx;
	snprintf(tmpl_path, sizeof(tmpl_path),
	         "/dev/shm/pmtx-fuzz-cont-tmpl-%d.pmtx", (int)getpid());
	unlink(tmpl_path);
	ok("create", pmtx_create(tmpl_path, REGION, &o, &r));
	struct root *rt = pmtx_root(r, NULL);
	pmtx_off h, hl, l, bm, um;
	ok("begin", pmtx_begin(r, PMTX_RT_UNDO, &tx));
	ok("hmap create", pmtx_hmap_create(tx, 0, &h));
	ok("hmap create", pmtx_hmap_create(tx, PMTX_HMAP_LOCKED, &hl));
	ok("list create", pmtx_list_create(tx, &l));
	ok("map create", pmtx_map_create(tx, PMTX_MAP_BYTES, &bm));
	ok("map create", pmtx_map_create(tx, PMTX_MAP_U64, &um));
	ok("set", PMTX_SET(tx, rt->hmap, h));
	ok("set", PMTX_SET(tx, rt->locked, hl));
	ok("set", PMTX_SET(tx, rt->list, l));
	ok("set", PMTX_SET(tx, rt->bmap, bm));
	ok("set", PMTX_SET(tx, rt->umap, um));
	ok("commit", pmtx_commit(tx));
	ok("begin", pmtx_begin(r, PMTX_RT_UNDO, &tx));
	fill_hmap(r, tx, h, 40);
	fill_hmap(r, tx, hl, 10);
	fill_list(r, tx, l);
	fill_map(r, tx, bm, 0);
	fill_map(r, tx, um, 1);
	ok("str", pmtx_str_set(r, tx, &rt->s[0], s0, sizeof(s0)));
	ok("str", pmtx_str_set(r, tx, &rt->s[1], "inline", 6));
	ok("str", pmtx_str_set(r, tx, &rt->s[2], s0, 40));
	ok("commit", pmtx_commit(tx));
	/* every user block is a container's (the root aside) */
	add_block(pmtx_off_of(r, rt), sizeof(*rt));
	pmtx_heap_walk(r, walk_block, NULL);
	ok("close", pmtx_close(r));
	int fd = open(tmpl_path, O_RDONLY);
	off_t end = fd < 0 ? -1 : lseek(fd, 0, SEEK_END);
	if (end <= 0 || !(tmpl = malloc((size_t)end)) ||
	    pread(fd, tmpl, (size_t)end, 0) != end)
		die("read the template", 0);
	tmpl_size = (size_t)end;
	close(fd);
	unlink(tmpl_path); /* nothing left, however the process ends */
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	atexit(remove_files);
	make_template();
	file_fd = memfd_create("pmtx-fuzz-cont", MFD_CLOEXEC);
	if (file_fd >= 0) {
		snprintf(file_path, sizeof(file_path), "/proc/self/fd/%d",
		         file_fd);
		return 0;
	}
	snprintf(file_path, sizeof(file_path),
	         "/dev/shm/pmtx-fuzz-cont-%d.pmtx", (int)getpid());
	file_fd = open(file_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (file_fd < 0)
		die("open the work file", 0);
	return 0;
}

/* ---- the patches (CC2) ---- */

static void write_copy(const uint8_t *data, size_t size)
{
	static unsigned char *img;
	if (!img && !(img = malloc(tmpl_size)))
		abort();
	memcpy(img, tmpl, tmpl_size);
	for (size_t at = 0; at + 4 <= size;) {
		const struct block *b = &blocks[data[at] % nblocks];
		size_t off = (data[at + 1] | (size_t)data[at + 2] << 8) % b->n;
		size_t n = data[at + 3];
		at += 4;
		n = n < size - at ? n : size - at;
		n = n < b->n - off ? n : b->n - off;
		memcpy(img + b->off + off, data + at, n);
		at += n;
	}
	if (ftruncate(file_fd, (off_t)tmpl_size) != 0 ||
	    pwrite(file_fd, img, tmpl_size, 0) != (ssize_t)tmpl_size)
		die("write the copy", 0);
}

/* ---- the operations (CC3) ---- */

static int count_kv(const pmtx_bytes *k, const pmtx_bytes *v, void *arg)
{
	(void)k, (void)v;
	return ++*(unsigned *)arg > 100000;
}

static int count_v(const pmtx_bytes *v, void *arg)
{
	(void)v;
	return ++*(unsigned *)arg > 100000;
}

static void hmap_ops(pmtx_region *r, pmtx_tx *tx, pmtx_off off,
                     unsigned stripes, int destroy)
{
	pmtx_cont_options o;
	pmtx_hmap *m;
	pmtx_bytes v;
	char why[128];
	uint64_t n, cur = 0;
	unsigned seen = 0;
	pmtx_cont_options_init(&o);
	o.stripes = stripes;
	if (pmtx_hmap_open(r, off, &o, &m))
		return;
	if (!tx)
		hmap_check(m, why, sizeof(why));
	for (unsigned i = 0; i < 44; i += 3) {
		unsigned char k[16], b[300];
		size_t kn, vn;
		kv(i, k, &kn, b, &vn);
		pmtx_hmap_get(tx, m, k, kn, &v);
		if (i % 2)
			pmtx_hmap_put(tx, m, k, kn, b, vn, i % 4 == 1
			              ? PMTX_HMAP_NX : 0, NULL);
		else
			pmtx_hmap_del(tx, m, k, kn);
	}
	for (int calls = 0; calls < 1000; calls++)
		if (pmtx_hmap_scan(tx, m, cur, 8, count_kv, &seen, &cur) || !cur)
			break;
	pmtx_hmap_len(tx, m, &n);
	if (tx) {
		const void *keys[2] = {"key-1", "key-2"};
		size_t lens[2] = {5, 5};
		pmtx_hmap_lock_keys(tx, m, 2, keys, lens);
		pmtx_hmap_clear(tx, m);
	}
	pmtx_hmap_close(m);
	if (destroy && tx)
		pmtx_hmap_destroy(tx, off);
}

static void list_ops(pmtx_region *r, pmtx_tx *tx, pmtx_off off)
{
	unsigned char b[200];
	pmtx_list *l;
	pmtx_bytes v;
	uint64_t n;
	size_t got;
	unsigned seen = 0;
	char why[128];
	memset(b, 20, sizeof(b));
	if (pmtx_list_open(r, off, NULL, &l))
		return;
	if (!tx)
		list_check(l, why, sizeof(why));
	pmtx_list_len(tx, l, &n);
	pmtx_list_range(tx, l, 0, -1, count_v, &seen);
	pmtx_list_index(tx, l, 0, &v);
	pmtx_list_index(tx, l, -1, &v);
	pmtx_list_index(tx, l, 17, &v);
	pmtx_list_push(tx, l, PMTX_LIST_HEAD, b, 30);
	pmtx_list_push(tx, l, PMTX_LIST_TAIL, b, 150);
	pmtx_list_pop(tx, l, PMTX_LIST_HEAD, b, sizeof(b), &got);
	pmtx_list_pop(tx, l, PMTX_LIST_TAIL, b, sizeof(b), &got);
	memset(b, 20, sizeof(b));
	pmtx_list_insert(tx, l, b, 10 + 20 * 7 % 100, 0, b, 60);
	pmtx_list_set(tx, l, 5, b, 90);
	pmtx_list_remove(tx, l, b, 60, 0, &n);
	pmtx_list_trim(tx, l, 1, -2);
	pmtx_list_close(l);
	if (tx)
		pmtx_list_destroy(tx, off);
}

static void map_ops(pmtx_region *r, pmtx_tx *tx, pmtx_off off, int u64)
{
	pmtx_map *m;
	pmtx_map_cursor c;
	pmtx_bytes k, v;
	uint64_t n;
	char why[128];
	if (pmtx_map_open(r, off, NULL, &m))
		return;
	if (!tx)
		map_check(m, why, sizeof(why));
	pmtx_map_len(tx, m, &n);
	for (unsigned i = 0; i < 1100; i += 61) {
		unsigned char kb[16], b[300];
		size_t kn, vn;
		uint64_t kw = i * 7;
		kv(i, kb, &kn, b, &vn);
		const void *key = u64 ? (const void *)&kw : kb;
		size_t keyn = u64 ? 8 : kn;
		pmtx_map_get(tx, m, key, keyn, &v);
		pmtx_map_rank(tx, m, key, keyn, PMTX_MAP_INCL, &n);
		pmtx_map_count(tx, m, key, keyn, NULL, 0, 0, &n);
		if (!pmtx_map_seek(tx, m, PMTX_SEEK_GE, key, keyn, &c)) {
			pmtx_map_cursor_get(&c, &k, &v);
			pmtx_map_next(&c);
			pmtx_map_prev(&c);
		}
		if (i % 2)
			pmtx_map_put(tx, m, key, keyn, b, vn % 50, 0, NULL);
		else
			pmtx_map_del(tx, m, key, keyn);
	}
	if (!pmtx_map_seek(tx, m, PMTX_SEEK_FIRST, NULL, 0, &c))
		for (unsigned j = 0; j < 200 && !pmtx_map_next(&c); j++)
			pmtx_map_cursor_get(&c, &k, &v);
	if (!pmtx_map_seek(tx, m, PMTX_SEEK_LAST, NULL, 0, &c))
		for (unsigned j = 0; j < 200 && !pmtx_map_prev(&c); j++)
			;
	pmtx_map_seek_rank(tx, m, 700, &c);
	if (tx)
		pmtx_map_clear(tx, m);
	pmtx_map_close(m);
	if (tx)
		pmtx_map_destroy(tx, off);
}

static void str_ops(pmtx_region *r, pmtx_tx *tx, pmtx_str *s)
{
	static const unsigned char b[600];
	unsigned char out[64];
	pmtx_bytes v;
	size_t n;
	pmtx_str_len(r, tx, s, &n);
	pmtx_str_get(r, tx, s, &v);
	pmtx_str_read(r, tx, s, 3, out, sizeof(out), &n);
	pmtx_str_append(r, tx, s, b, 20);
	pmtx_str_setrange(r, tx, s, 250, b, 10);
	pmtx_str_set(r, tx, s, b, tx ? 500 : 9);
	pmtx_str_clear(r, tx, s);
}

/* In a transaction (in_tx) that aborts at the end, or each op alone. An
 * op that fails after writing aborts the transaction (cont.h C4): the
 * next container's ops then get a new one. */
static void all_ops(pmtx_region *r, int in_tx)
{
	struct root rt;
	pmtx_tx *tx = NULL;
	memcpy(&rt, pmtx_root(r, NULL), sizeof(rt)); /* the ops may write it */
	for (unsigned step = 0; step < 5 + NSTR; step++) {
		if (in_tx && (!tx || pmtx_tx_current() != tx) &&
		    pmtx_begin(r, PMTX_RT_UNDO, &tx))
			return;
		if (step == 0)
			hmap_ops(r, tx, rt.hmap, 0, 1);
		else if (step == 1)
			hmap_ops(r, tx, rt.locked, 4, 0);
		else if (step == 2)
			list_ops(r, tx, rt.list);
		else if (step == 3)
			map_ops(r, tx, rt.bmap, 0);
		else if (step == 4)
			map_ops(r, tx, rt.umap, 1);
		else
			str_ops(r, tx, &((struct root *)pmtx_root(r, NULL))
			                        ->s[step - 5]);
	}
	if (tx && pmtx_tx_current() == tx)
		pmtx_abort(tx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	pmtx_options o = options();
	pmtx_region *r;
	write_copy(data, size);
	ok("open", pmtx_open(file_path, &o, &r));
	all_ops(r, 1);
	all_ops(r, 0);
	pmtx_close(r);
	return 0;
}
