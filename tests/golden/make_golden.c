/*
 * make_golden.c - write the golden regions: one per runtime, each holding
 * a committed transaction that its runtime has not retired yet, exactly
 * as a process killed at that moment leaves it.
 *
 *   make_golden DIR     writes DIR/golden-<runtime>.pmtx
 *
 * Each region gets a first transaction that commits completely, then a
 * second one (under the runtime) that is caught in flight: the file is
 * copied after every barrier of the second commit (and once more after
 * commit returns: redo-async with lazy truncation has written nothing
 * back by then), and the golden file is the first copy whose recovery
 * yields the committed state while a descriptor is still busy: the
 * barrier that made the commit durable, with everything after it (undo:
 * the allocation log; redo: the data; cow: the payload swap) still to be
 * done by recovery. The copies are taken in the persist layer (an ops
 * table that delegates to the real one), the way the mutation test takes
 * its crash images.
 */
#define _GNU_SOURCE
#include <err.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "golden.h"
#include "persist/persist.h"
#include "region/layout.h"

#define MAX_COPIES 16

static const persist_ops *real;
static const char *g_src;
static int g_armed, g_copies; /* copies taken since armed */

static const char *copy_name(int k)
{
	static char buf[MAX_COPIES + 1][96];
	snprintf(buf[k], sizeof(buf[k]), "/dev/shm/pmtx-golden-%d.%d",
	         getpid(), k);
	return buf[k];
}

static void copy_file(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY), out;
	struct stat st;
	if (in < 0 || fstat(in, &st) != 0)
		err(1, "%s", src);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0)
		err(1, "%s", dst);
	for (off_t off = 0; off < st.st_size;)
		if (sendfile(out, in, &off, (size_t)(st.st_size - off)) <= 0)
			err(1, "copy to %s", dst);
	close(in);
	close(out);
}

static void snap_flush(struct persist *p, const void *a, size_t n)
{
	real->flush(p, a, n);
}

static int snap_barrier(struct persist *p)
{
	int rc = real->barrier(p);
	if (g_armed && g_copies < MAX_COPIES)
		copy_file(g_src, copy_name(g_copies++));
	return rc;
}

static void snap_copy_nt(struct persist *p, void *d, const void *s, size_t n)
{
	real->copy_nt(p, d, s, n);
}

static const persist_ops snap_ops = {"golden", snap_flush, snap_barrier,
                                     snap_copy_nt, NULL, NULL, NULL, NULL};

static void check(int rc, const char *what)
{
	if (rc)
		errx(1, "%s: %s (%s)", what, pmtx_strerror(rc), pmtx_errmsg());
}

static void first_tx(pmtx_region *r)
{
	struct golden_root *root = pmtx_root(r, NULL);
	pmtx_tx *tx;
	pmtx_off blk, obj;
	check(pmtx_begin(r, PMTX_RT_UNDO, &tx), "begin");
	check(pmtx_alloc(tx, 100, &blk), "alloc");
	strcpy(pmtx_ptr(r, blk), GOLDEN_TEXT);
	pmtx_flush(r, pmtx_ptr(r, blk), sizeof(GOLDEN_TEXT));
	check(pmtx_cow_new(tx, sizeof(uint64_t), &obj), "cow_new");
	uint64_t *v = (uint64_t *)pmtx_cow_peek(r, obj);
	*v = 5555;
	pmtx_flush(r, v, sizeof(*v));
	check(PMTX_SET(tx, root->a, 1111) || PMTX_SET(tx, root->blk, blk) ||
	      PMTX_SET(tx, root->obj, obj), "write");
	check(pmtx_commit(tx), "commit");
}

/* The second transaction's body, before its commit. */
static void second_body(pmtx_region *r, pmtx_tx *tx, pmtx_runtime rt)
{
	struct golden_root *root = pmtx_root(r, NULL);
	if (rt == PMTX_RT_COW) {
		uint64_t *v;
		check(pmtx_cow_open(tx, root->obj, PMTX_COW_WRITE, NULL,
		                    (void **)&v), "cow_open");
		*v = 6666;
		return;
	}
	pmtx_off big;
	check(pmtx_alloc(tx, GOLDEN_BIG, &big), "alloc big");
	uint64_t *w = pmtx_ptr(r, big);
	for (uint64_t i = 0; i < GOLDEN_BIG / 8; i++)
		w[i] = golden_word(i);
	pmtx_flush(r, w, GOLDEN_BIG);
	check(pmtx_free(tx, root->blk), "free");
	check(PMTX_SET(tx, root->b, 2222) || PMTX_SET(tx, root->blk, 0) ||
	      PMTX_SET(tx, root->big, big), "write");
}

static int busy(const char *path)
{
	int fd = open(path, O_RDONLY), n = 0;
	struct pmtx_hdr h;
	if (fd < 0 || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		err(1, "%s", path);
	for (unsigned i = 0; i < h.ndesc && i < GOLDEN_NDESC; i++) {
		struct pmtx_desc d;
		if (pread(fd, &d, sizeof(d), (off_t)(h.desc_off + i * 256)) !=
		    (ssize_t)sizeof(d))
			err(1, "%s", path);
		n += PMTX_SV_STATE(d.statever) != PMTX_DS_IDLE;
	}
	close(fd);
	return n;
}

/* Recovering a scratch copy of path gives the second commit's state. */
static int recovers_committed(const char *path, pmtx_runtime rt)
{
	const char *tmp = copy_name(MAX_COPIES);
	copy_file(path, tmp);
	pmtx_region *r;
	int ok = pmtx_open(tmp, NULL, &r) == 0;
	if (ok) {
		const struct golden_root *root = pmtx_root(r, NULL);
		const uint64_t *v = pmtx_cow_peek(r, root->obj);
		ok = rt == PMTX_RT_COW ? v && *v == 6666 : root->b == 2222;
		check(pmtx_close(r), "close");
	}
	unlink(tmp);
	return ok;
}

static void pick(pmtx_runtime rt, const char *dst)
{
	int chosen = -1;
	for (int k = 0; k < g_copies; k++) {
		if (chosen < 0 && busy(copy_name(k)) &&
		    recovers_committed(copy_name(k), rt)) {
			chosen = k;
			copy_file(copy_name(k), dst);
		}
		unlink(copy_name(k));
	}
	if (chosen < 0)
		errx(1, "%s: no copy is committed and unretired", dst);
}

static void make_one(const char *dir, pmtx_runtime rt)
{
	char src[96], dst[512];
	snprintf(src, sizeof(src), "/dev/shm/pmtx-golden-%d.pmtx", getpid());
	snprintf(dst, sizeof(dst), "%s/golden-%s.pmtx", dir,
	         pmtx_runtime_name(rt));
	unlink(src);
	pmtx_options o;
	pmtx_options_init(&o);
	o.layout = GOLDEN_LAYOUT;
	o.root_size = sizeof(struct golden_root);
	o.max_size = GOLDEN_MAX;
	o.ndesc = GOLDEN_NDESC;
	o.runtime = rt;
	o.truncation = PMTX_TRUNC_LAZY;
	pmtx_region *r;
	real = persist_default_ops(o.domain, o.backend);
	persist_override_ops(&snap_ops, NULL);
	check(pmtx_create(src, GOLDEN_SIZE, &o, &r), "create");
	first_tx(r);
	pmtx_tx *tx;
	check(pmtx_begin(r, rt, &tx), "begin");
	second_body(r, tx, rt);
	g_src = src;
	g_copies = 0;
	g_armed = 1;
	check(pmtx_commit(tx), "commit");
	g_armed = 0;
	copy_file(src, copy_name(g_copies++));
	check(pmtx_close(r), "close");
	persist_override_ops(NULL, NULL);
	unlink(src);
	pick(rt, dst);
	printf("%s\n", dst);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		errx(2, "usage: make_golden DIR");
	for (size_t i = 0; i < GOLDEN_N; i++)
		make_one(argv[1], golden_runtimes[i]);
	return 0;
}
