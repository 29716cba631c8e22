/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_journal.c - the journal backend (persist/journal.c, jlayout.h).
 *
 * Power failure. The journal's writes and fdatasyncs go through a table
 * (journal_set_io) that this test replaces with one keeping, for the
 * region file and the journal, the image a power failure would leave:
 * what the last fdatasync of that file covered, plus any part of the
 * writes since. Before every write and every sync of a running workload
 * (transactions under each runtime, a journal small enough to be
 * checkpointed several times, then the close's checkpoint) and of a
 * replay at open, it builds crash
 * images (nothing since the last sync; everything; the first half of the
 * writes; everything with the last write torn after its first sector),
 * opens each in a child process through another backend (which replays
 * the journal), and checks that the transactions are whole, that every
 * acknowledged one is there, and that nothing else is: the array holds
 * exactly the state after the acknowledged commits or after the one in
 * flight.
 *
 * Each image is also opened without its journal: if the region file's
 * mark (journal.c invariant 9) is set the open must be refused, and if
 * it is clear the file alone must hold every acknowledged commit. The
 * workload's open through the journal backend is under the images too.
 *
 * Two threads do the same at once, each on its half of the array: their
 * records share the journal and their commits share syncs.
 *
 * Then each sync the design says is needed is left out in turn, and the
 * same check must find a violation (the journal's own mutation test).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "region/layout.h"
#include "persist/jlayout.h"
#include "persist/journal.h"

#define NW 4096 /* words of the array: 32 KiB, 8 pages */
#define REGION_SIZE (1u << 20)
#define TXS 60

struct root {
	uint64_t seq;
	uint64_t pad[7];
	uint64_t a[NW];
};

static char jpath_buf[160];
static const char *jpath(const char *path)
{
	snprintf(jpath_buf, sizeof(jpath_buf), "%s.pmtxj", path);
	return jpath_buf;
}

static void rm_region(const char *path)
{
	unlink(path);
	unlink(jpath(path));
}

/* ---- the model: the array after each transaction ---- */

static uint64_t model_done[NW], model_next[NW];
static uint64_t acked; /* commits returned */

struct move {
	uint32_t x[4], y[4];
	uint64_t d[4];
};

static void next_move(uint64_t *seed, struct move *m)
{
	for (int k = 0; k < 4; k++) {
		m->x[k] = (uint32_t)(tu_rand(seed) % NW);
		m->y[k] = (uint32_t)(tu_rand(seed) % NW);
		m->d[k] = tu_rand(seed) % 1000 + 1;
	}
}

static void model_apply(uint64_t *a, const struct move *m)
{
	for (int k = 0; k < 4; k++) {
		a[m->x[k]] -= m->d[k];
		a[m->y[k]] += m->d[k];
	}
}

static int run_tx(pmtx_region *r, pmtx_runtime rt, const struct move *m,
                  uint64_t seq)
{
	struct root *root = pmtx_root(r, NULL);
	pmtx_tx *tx;
	int rc = pmtx_begin(r, rt, &tx);
	if (rc)
		return rc;
	for (int k = 0; k < 4 && !rc; k++) { /* redo-async: read the log */
		uint64_t v;
		rc = pmtx_read(tx, &v, &root->a[m->x[k]], 8);
		v -= m->d[k];
		if (!rc)
			rc = pmtx_write(tx, &root->a[m->x[k]], &v, 8);
		if (!rc)
			rc = pmtx_read(tx, &v, &root->a[m->y[k]], 8);
		v += m->d[k];
		if (!rc)
			rc = pmtx_write(tx, &root->a[m->y[k]], &v, 8);
	}
	if (!rc)
		rc = pmtx_write(tx, &root->seq, &seq, 8);
	int rc2 = pmtx_commit(tx);
	return rc ? rc : rc2;
}

/* ---- two threads, each on its half of the array ---- */

#define NT 2
#define HALF (NW / NT)
#define TXS_MT 40

struct root_mt {
	uint64_t seq[NT]; /* each thread's last commit */
	uint64_t pad[6];
	uint64_t a[NW];   /* thread t owns [t * HALF, (t + 1) * HALF) */
};
_Static_assert(sizeof(struct root_mt) == sizeof(struct root), "root");

static struct {
	uint64_t done[HALF], next[HALF];
	uint64_t acked;
} mt[NT];
static int mt_mode; /* the check is of the threads' model */

/* The hooks below run on every thread that writes or syncs; one at a
 * time, and with the model (acked, done, next) as the threads leave it
 * between their commits. */
static pthread_mutex_t pf_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- the power-failure image ---- */

enum { F_REGION, F_JOURNAL };

struct image {
	char *b;
	size_t len;
};

struct pend {
	int f;
	uint64_t off;
	size_t n;
	char *b;
	pthread_t th; /* the thread that wrote it */
};

static struct {
	struct image dur[2];
	struct pend *p;
	size_t np, cap;
	int armed;
	int skip;        /* a sync site left out, or -1 */
	const char *img; /* where crash images are written */
	unsigned points, images, violations;
	unsigned shared; /* syncs that made another thread's write durable */
	char first[256];
} pf = {.skip = -1};

static int site_file(enum journal_site s)
{
	switch (s) {
	case JS_W_CKPT:
	case JS_W_REPLAY:
	case JS_S_CKPT_REGION:
	case JS_S_REPLAY_REGION:
	case JS_W_MARK:
	case JS_S_MARK:
		return F_REGION;
	default:
		return F_JOURNAL;
	}
}

static void image_load(struct image *im, const char *path)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	free(im->b);
	im->len = (size_t)st.st_size;
	im->b = malloc(im->len);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, im->b, im->len, 0), (ssize_t)im->len);
	close(fd);
}

static void image_write(struct image *im, uint64_t off, const void *b,
                        size_t n)
{
	if (off + n > im->len) {
		im->b = realloc(im->b, off + n);
		memset(im->b + im->len, 0, off + n - im->len);
		im->len = off + n;
	}
	memcpy(im->b + off, b, n);
}

static void save(const struct image *im, const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, im->b, im->len), (ssize_t)im->len);
	close(fd);
}

/* Each thread's half after its acknowledged commits, or after the one
 * it had in flight. 0: whole. */
static int check_threads(const struct root_mt *root)
{
	for (int t = 0; t < NT; t++) {
		const uint64_t *want = root->seq[t] == mt[t].acked ? mt[t].done
		                       : root->seq[t] == mt[t].acked + 1
		                               ? mt[t].next
		                               : NULL;
		if (!want) {
			fprintf(stderr, "thread %d: seq %llu, acknowledged "
			        "%llu\n", t, (unsigned long long)root->seq[t],
			        (unsigned long long)mt[t].acked);
			return 3;
		}
		if (memcmp(root->a + t * HALF, want, sizeof(mt[t].done))) {
			fprintf(stderr, "thread %d: seq %llu: words differ\n", t,
			        (unsigned long long)root->seq[t]);
			return 4;
		}
	}
	return 0;
}

/* The region against the model: 0 whole. */
static int check_model(pmtx_region *r)
{
	if (mt_mode)
		return check_threads(pmtx_root(r, NULL));
	struct root *root = pmtx_root(r, NULL);
	const uint64_t *want = root->seq == acked       ? model_done
	                       : root->seq == acked + 1 ? model_next
	                                                : NULL;
	if (!want) {
		fprintf(stderr, "seq %llu, acknowledged %llu\n",
		        (unsigned long long)root->seq,
		        (unsigned long long)acked);
		return 3;
	}
	for (int i = 0; i < NW; i++)
		if (root->a[i] != want[i]) {
			fprintf(stderr, "seq %llu: word %d differs\n",
			        (unsigned long long)root->seq, i);
			return 4;
		}
	return 0;
}

/* In a child: open the image through the hardware backend (which replays
 * and removes the journal) and compare with the model. alone: the region
 * file's image without its journal, whose mark (journal.c invariant 9)
 * is mark: set, the open must refuse it; clear, the file alone must hold
 * every acknowledged commit. 0: whole. */
static int check_child(const char *path, int alone, uint64_t mark)
{
	journal_set_io(NULL);
	pmtx_options o;
	pmtx_options_init(&o);
	pmtx_region *r;
	int rc = pmtx_open(path, &o, &r);
	if (alone && mark)
		return rc == PMTX_E_CORRUPT ? 0 : 6;
	if (rc) {
		fprintf(stderr, "open: %s %s\n", pmtx_strerror(rc),
		        pmtx_errmsg());
		return 2;
	}
	int bad = check_model(r);
	return bad ? bad + (alone ? 10 : 0) : pmtx_close(r) ? 5 : 0;
}

/* The mark word of a region image. */
static uint64_t image_mark(const struct image *im)
{
	struct pmtx_hdr h;
	uint64_t v = 0;
	memcpy(&h, im->b, sizeof(h));
	memcpy(&v, im->b + h.rstate_off + 16, 8);
	return v;
}

/* Check the image in a child: the region file and its journal (alone:
 * the region file only). */
static void check_image_as(const struct image im[2], const char *what,
                           int alone)
{
	uint64_t mark = image_mark(&im[F_REGION]);
	save(&im[F_REGION], pf.img);
	if (!alone)
		save(&im[F_JOURNAL], jpath(pf.img));
	fflush(stderr);
	pid_t pid = tu_fork();
	if (pid == 0)
		_exit(check_child(pf.img, alone, mark));
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	pf.images++;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		uint64_t ack = mt_mode ? mt[0].acked + mt[1].acked : acked;
		if (!pf.violations++)
			snprintf(pf.first, sizeof(pf.first),
			         "point %u (%s%s), acknowledged %llu: status %d",
			         pf.points, what, alone ? ", no journal" : "",
			         (unsigned long long)ack,
			         WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	rm_region(pf.img);
}

static void check_image(const struct image im[2], const char *what)
{
	check_image_as(im, what, 0);
	if (!pf.violations)
		check_image_as(im, what, 1);
}

/* Durable images plus the pending writes [0, upto), the last of them
 * cut to its first `cut` bytes when cut != 0; with lose, every write
 * without its first `lose` bytes, or, with first, the first write
 * without them (a disk that kept later sectors and lost earlier ones). */
static void build(struct image out[2], size_t upto, size_t cut, size_t lose,
                  int first)
{
	for (int f = 0; f < 2; f++) {
		out[f].len = pf.dur[f].len;
		out[f].b = malloc(out[f].len);
		memcpy(out[f].b, pf.dur[f].b, out[f].len);
	}
	for (size_t i = 0; i < upto; i++) {
		const struct pend *w = &pf.p[i];
		size_t n = i + 1 == upto && cut ? cut : w->n;
		size_t skip = i == 0 || !first ? MIN(lose, n) : 0;
		image_write(&out[w->f], w->off + skip, w->b + skip, n - skip);
	}
}

/* The images of one crash point: nothing since the last syncs; all of
 * it; the first half of the writes; all of them with the last one torn
 * at sector boundaries (its first sector, half, three quarters: a write
 * of several records keeps a prefix of them); out of order, all of them
 * but the first sector of each, and all but the first write. */
static void crash_here(const char *what)
{
	if (pf.violations)
		return; /* one is enough */
	pf.points++;
	size_t v[8][4] = {{0}}, nv = 0;
	v[nv][0] = 0, v[nv++][1] = 0;
	if (pf.np)
		v[nv][0] = pf.np, v[nv++][1] = 0;
	if (pf.np > 1)
		v[nv][0] = pf.np / 2, v[nv++][1] = 0;
	if (pf.np)
		v[nv][0] = pf.np, v[nv][1] = 0, v[nv++][2] = 512;
	if (pf.np > 1)
		v[nv][0] = pf.np, v[nv][2] = pf.p[0].n, v[nv++][3] = 1;
	size_t last = pf.np ? pf.p[pf.np - 1].n : 0;
	const size_t cuts[3] = {512, last / 2 / 512 * 512, last * 3 / 4 / 512 * 512};
	for (int c = 0; c < 3; c++)
		if (cuts[c] && cuts[c] < last && (c == 0 || cuts[c] != cuts[c - 1]))
			v[nv][0] = pf.np, v[nv++][1] = cuts[c];
	for (size_t k = 0; k < nv && !pf.violations; k++) {
		struct image im[2];
		build(im, v[k][0], v[k][1], v[k][2], (int)v[k][3]);
		check_image(im, what);
		free(im[0].b);
		free(im[1].b);
	}
}

static ssize_t pf_pwrite_locked(int fd, const void *b, size_t n,
                                off_t off, enum journal_site s)
{
	if (pf.armed) {
		crash_here(journal_site_name(s));
		if (pf.np == pf.cap) {
			pf.cap = pf.cap ? pf.cap * 2 : 64;
			pf.p = realloc(pf.p, pf.cap * sizeof(*pf.p));
		}
		struct pend *w = &pf.p[pf.np++];
		w->f = site_file(s), w->off = (uint64_t)off, w->n = n;
		w->th = pthread_self();
		w->b = malloc(n);
		memcpy(w->b, b, n);
	}
	return pwrite(fd, b, n, off);
}

static ssize_t pf_pwrite(int fd, const void *b, size_t n, off_t off,
                         enum journal_site s)
{
	pthread_mutex_lock(&pf_mu);
	ssize_t k = pf_pwrite_locked(fd, b, n, off, s);
	pthread_mutex_unlock(&pf_mu);
	return k;
}

static int pf_sync_locked(int fd, enum journal_site s)
{
	(void)fd;
	if (!pf.armed)
		return 0;
	crash_here(journal_site_name(s));
	if ((int)s == pf.skip)
		return 0;
	int f = site_file(s), other = 0;
	size_t k = 0;
	for (size_t i = 0; i < pf.np; i++) {
		struct pend *w = &pf.p[i];
		if (w->f == f) {
			other |= !pthread_equal(w->th, pthread_self());
			image_write(&pf.dur[f], w->off, w->b, w->n);
			free(w->b);
		} else {
			pf.p[k++] = *w;
		}
	}
	pf.np = k;
	pf.shared += other;
	return 0;
}

/* Under pf_mu: a write of the journal by another thread is pending. */
static int other_pending(void)
{
	for (size_t i = 0; i < pf.np; i++)
		if (pf.p[i].f == F_JOURNAL &&
		    !pthread_equal(pf.p[i].th, pthread_self()))
			return 1;
	return 0;
}

static int pf_sync(int fd, enum journal_site s)
{
	pthread_mutex_lock(&pf_mu);
	/* Two threads: give the other one up to 2 ms to append a record
	 * first, so that this sync makes it durable too (journal.c
	 * invariant 4), which the crash checks alone make rare. */
	for (int t = 0; mt_mode && t < 40 && !other_pending(); t++) {
		pthread_mutex_unlock(&pf_mu);
		usleep(50);
		pthread_mutex_lock(&pf_mu);
	}
	int rc = pf_sync_locked(fd, s);
	pthread_mutex_unlock(&pf_mu);
	return rc;
}

static const struct journal_io pf_io = {pf_pwrite, pf_sync, NULL};

static void pf_arm(const char *path, const char *img)
{
	image_load(&pf.dur[F_REGION], path);
	image_load(&pf.dur[F_JOURNAL], jpath(path));
	pf.np = 0;
	pf.points = pf.images = pf.violations = pf.shared = 0;
	pf.first[0] = 0;
	pf.img = img;
	pf.armed = 1;
	journal_set_io(&pf_io);
}

static void pf_disarm(void)
{
	pf.armed = 0;
	journal_set_io(NULL);
	for (size_t i = 0; i < pf.np; i++)
		free(pf.p[i].b);
	pf.np = 0;
}

static const char *img_path(void)
{
	static char buf[160];
	if (!buf[0]) /* one image path for the whole run */
		snprintf(buf, sizeof(buf), "%s", tu_path_in("/dev/shm",
		                                             "image.pmtx"));
	return buf;
}

static pmtx_region *create_journal_region(const char **path, pmtx_runtime rt)
{
	pmtx_options o = tu_options(sizeof(struct root), rt);
	o.backend = PMTX_BACKEND_JOURNAL;
	o.ndesc = 4;
	o.truncation = PMTX_TRUNC_LAZY;
	return tu_create_with(path, REGION_SIZE, &o);
}

/* TXS transactions of rt under the power-failure image; returns the
 * violations, with the first in pf.first. */
static unsigned workload(pmtx_runtime rt, int skip)
{
	const char *path;
	setenv("PMTX_JOURNAL_SIZE", "64k", 1);
	pmtx_region *r = create_journal_region(&path, rt);
	assert_int_equal(pmtx_close(r), 0);
	memset(model_done, 0, sizeof(model_done));
	memset(model_next, 0, sizeof(model_next));
	acked = 0;
	pf.skip = skip;
	pf_arm(path, img_path());
	/* the open too: it sets the mark before the first record */
	pmtx_options o;
	pmtx_options_init(&o);
	o.backend = PMTX_BACKEND_JOURNAL;
	o.truncation = PMTX_TRUNC_LAZY;
	assert_int_equal(pmtx_open(path, &o, &r), 0);
	uint64_t seed = 42 + (uint64_t)rt;
	for (uint64_t i = 1; i <= TXS && !pf.violations; i++) {
		struct move m;
		next_move(&seed, &m);
		memcpy(model_next, model_done, sizeof(model_done));
		model_apply(model_next, &m);
		assert_int_equal(run_tx(r, rt, &m, i), 0);
		acked = i;
		memcpy(model_done, model_next, sizeof(model_done));
	}
	crash_here("end");
	/* The close's checkpoint (every page changed, then a new epoch) under
	 * the same images: nothing is in flight. */
	memcpy(model_next, model_done, sizeof(model_done));
	assert_int_equal(pmtx_close(r), 0);
	crash_here("closed");
	unsigned v = pf.violations;
	unsigned points = pf.points, images = pf.images;
	pf_disarm();
	pf.skip = -1;
	rm_region(path);
	unsetenv("PMTX_JOURNAL_SIZE");
	fprintf(stderr, "# %s, %s left out: %u points, %u images, %u "
	        "violations%s%s\n", pmtx_runtime_name(rt),
	        skip < 0 ? "nothing" : journal_site_name(skip), points,
	        images, v, v ? ": " : "", v ? pf.first : "");
	return v;
}

static void every_runtime_survives_power_failure_at_every_write(void **s)
{
	const pmtx_runtime rts[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
	                            PMTX_RT_REDO_ASYNC, PMTX_RT_TWIN};
	for (size_t i = 0; i < ARRAY_SIZE(rts); i++)
		assert_int_equal(workload(rts[i], -1), 0);
}

static pmtx_region *mt_region;
static pmtx_runtime mt_rt[NT];
static int mt_err;

/* Thread t's transaction i: moves within its half, and its seq word. */
static int run_tx_half(pmtx_region *r, pmtx_runtime rt, int t,
                       const struct move *m, uint64_t i)
{
	struct root_mt *root = pmtx_root(r, NULL);
	uint64_t *a = root->a + t * HALF;
	pmtx_tx *tx = NULL;
	int rc = pmtx_begin(r, rt, &tx);
	for (int k = 0; k < 4 && !rc; k++) {
		uint64_t v;
		rc = pmtx_read(tx, &v, &a[m->x[k] % HALF], 8);
		v -= m->d[k];
		if (!rc)
			rc = pmtx_write(tx, &a[m->x[k] % HALF], &v, 8);
		if (!rc)
			rc = pmtx_read(tx, &v, &a[m->y[k] % HALF], 8);
		v += m->d[k];
		if (!rc)
			rc = pmtx_write(tx, &a[m->y[k] % HALF], &v, 8);
	}
	if (!rc)
		rc = pmtx_write(tx, &root->seq[t], &i, 8);
	if (rc && tx)
		return pmtx_abort(tx), rc;
	return rc ? rc : pmtx_commit(tx);
}

static void model_apply_half(uint64_t *a, const struct move *m)
{
	for (int k = 0; k < 4; k++) {
		a[m->x[k] % HALF] -= m->d[k];
		a[m->y[k] % HALF] += m->d[k];
	}
}

static void *mt_thread(void *arg)
{
	int t = (int)(intptr_t)arg;
	uint64_t seed = 100 + (uint64_t)t;
	for (uint64_t i = 1; i <= TXS_MT && !pf.violations; i++) {
		struct move m;
		next_move(&seed, &m);
		pthread_mutex_lock(&pf_mu);
		memcpy(mt[t].next, mt[t].done, sizeof(mt[t].done));
		model_apply_half(mt[t].next, &m);
		pthread_mutex_unlock(&pf_mu);
		int rc = run_tx_half(mt_region, mt_rt[t], t, &m, i);
		pthread_mutex_lock(&pf_mu);
		if (rc)
			mt_err = rc;
		else
			mt[t].acked = i;
		memcpy(mt[t].done, mt[t].next, sizeof(mt[t].done));
		pthread_mutex_unlock(&pf_mu);
		if (rc)
			break;
	}
	return NULL;
}

/* Two threads commit at once under the power-failure images: their
 * records share the journal, one thread's fdatasync may make the other's
 * commit durable before that one returns (invariant 4), and an ordering
 * barrier's record may wait in the buffer for the other's durable one
 * (invariant 8). Returns the violations. */
static unsigned threads_workload(pmtx_runtime rt0, pmtx_runtime rt1,
                                 int skip)
{
	const char *path;
	setenv("PMTX_JOURNAL_SIZE", "64k", 1);
	mt_region = create_journal_region(&path, PMTX_RT_REDO);
	memset(mt, 0, sizeof(mt));
	mt_rt[0] = rt0, mt_rt[1] = rt1;
	mt_err = 0;
	mt_mode = 1;
	pf.skip = skip;
	pf_arm(path, img_path());
	pthread_t th[NT];
	for (int t = 0; t < NT; t++)
		assert_int_equal(pthread_create(&th[t], NULL, mt_thread,
		                                (void *)(intptr_t)t), 0);
	for (int t = 0; t < NT; t++)
		assert_int_equal(pthread_join(th[t], NULL), 0);
	pthread_mutex_lock(&pf_mu);
	crash_here("end");
	pthread_mutex_unlock(&pf_mu);
	assert_int_equal(mt_err, 0);
	assert_int_equal(pmtx_close(mt_region), 0);
	unsigned v = pf.violations, points = pf.points, images = pf.images;
	unsigned shared = pf.shared;
	pf_disarm();
	pf.skip = -1;
	mt_mode = 0;
	rm_region(path);
	unsetenv("PMTX_JOURNAL_SIZE");
	fprintf(stderr, "# two threads, %s and %s, %s left out: %u points, "
	        "%u images, %u syncs of the other thread's writes, %u "
	        "violations%s%s\n", pmtx_runtime_name(rt0),
	        pmtx_runtime_name(rt1),
	        skip < 0 ? "nothing" : journal_site_name(skip), points, images,
	        shared, v, v ? ": " : "", v ? pf.first : "");
	/* the premise: the threads' commits did share syncs */
	assert_true(v || shared > 0);
	return v;
}

static void two_threads_survive_power_failure_at_every_write(void **s)
{
	assert_int_equal(threads_workload(PMTX_RT_REDO, PMTX_RT_REDO, -1), 0);
	assert_int_equal(threads_workload(PMTX_RT_UNDO, PMTX_RT_REDO, -1), 0);
	assert_true(threads_workload(PMTX_RT_REDO, PMTX_RT_REDO, JS_S_COMMIT) >
	            0);
}

/* Invariant 1 of journal.c (the journal before any page) matters for
 * undo, whose in-place stores follow records appended without a sync;
 * the reset's sync (invariant 2) shows with a new epoch's first write
 * kept without its first sector. */
static void each_needed_sync_is_caught_when_left_out(void **s)
{
	assert_true(workload(PMTX_RT_REDO, JS_S_COMMIT) > 0);
	assert_true(workload(PMTX_RT_UNDO, JS_S_CKPT_JOURNAL) > 0);
	assert_true(workload(PMTX_RT_REDO, JS_S_CKPT_REGION) > 0);
	assert_true(workload(PMTX_RT_REDO, JS_S_RESET) > 0);
	assert_true(workload(PMTX_RT_REDO, JS_S_MARK) > 0);
}

/* A child opens path through the journal backend, commits n moves from
 * seed (redo) and dies without closing: the commits are in the journal
 * only. */
static void die_after_commits(const char *path, int n, uint64_t seed)
{
	pid_t pid = tu_fork();
	if (pid == 0) {
		pmtx_region *r;
		if (tu_open_on(path, PMTX_BACKEND_JOURNAL, 0, &r))
			_exit(1);
		for (int i = 1; i <= n; i++) {
			struct move m;
			next_move(&seed, &m);
			if (run_tx(r, PMTX_RT_REDO, &m, (uint64_t)i))
				_exit(1);
		}
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A process that dies after TXS commits leaves them in the journal only;
 * replay at the next open survives a power failure at every write. */
static unsigned replay_workload(pmtx_backend reopen_with, int skip)
{
	const char *path;
	setenv("PMTX_JOURNAL_SIZE", "1m", 1);
	pmtx_region *r = create_journal_region(&path, PMTX_RT_REDO);
	assert_int_equal(pmtx_close(r), 0);
	uint64_t seed = 7;
	memset(model_done, 0, sizeof(model_done));
	struct move m;
	for (uint64_t i = 1; i <= TXS; i++) {
		next_move(&seed, &m);
		model_apply(model_done, &m);
	}
	die_after_commits(path, TXS, 7);
	memcpy(model_next, model_done, sizeof(model_done));
	acked = TXS;
	pf.skip = skip;
	pf_arm(path, img_path());
	pmtx_options o;
	pmtx_options_init(&o);
	o.backend = reopen_with;
	assert_int_equal(pmtx_open(path, &o, &r), 0);
	crash_here("end");
	unsigned v = pf.violations, points = pf.points;
	pf_disarm();
	pf.skip = -1;
	struct root *root = pmtx_root(r, NULL);
	assert_int_equal(root->seq, TXS);
	assert_memory_equal(root->a, model_done, sizeof(model_done));
	assert_int_equal(pmtx_close(r), 0);
	assert_int_equal(access(jpath(path), F_OK) == 0,
	                 reopen_with == PMTX_BACKEND_JOURNAL);
	rm_region(path);
	unsetenv("PMTX_JOURNAL_SIZE");
	fprintf(stderr, "# replay through %s, %s left out: %u points, %u "
	        "violations%s%s\n", pmtx_backend_name(reopen_with),
	        skip < 0 ? "nothing" : journal_site_name(skip), points, v,
	        v ? ": " : "", v ? pf.first : "");
	return v;
}

static void replay_survives_power_failure_and_needs_its_sync(void **s)
{
	assert_int_equal(replay_workload(PMTX_BACKEND_JOURNAL, -1), 0);
	assert_int_equal(replay_workload(PMTX_BACKEND_HARDWARE, -1), 0);
	assert_true(replay_workload(PMTX_BACKEND_JOURNAL,
	                            JS_S_REPLAY_REGION) > 0);
}

/* ---- format and bad input ---- */

/* A region whose journal holds n commits (a child died after them). */
static const char *crashed_region(int n)
{
	const char *path;
	pmtx_region *r = create_journal_region(&path, PMTX_RT_REDO);
	assert_int_equal(pmtx_close(r), 0);
	die_after_commits(path, n, 1);
	return path;
}

static uint64_t seq_after_open(const char *path, pmtx_backend b)
{
	pmtx_region *r;
	assert_int_equal(tu_open_on(path, b, 0, &r), 0);
	uint64_t seq = ((struct root *)pmtx_root(r, NULL))->seq;
	assert_int_equal(pmtx_close(r), 0);
	return seq;
}

static int open_rc(const char *path, pmtx_backend b, unsigned flags)
{
	pmtx_region *r;
	int rc = tu_open_on(path, b, flags, &r);
	if (!rc)
		pmtx_close(r);
	return rc;
}

static void patch(const char *path, uint64_t off, const void *b, size_t n)
{
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, b, n, (off_t)off), (ssize_t)n);
	close(fd);
}

static void commits_in_the_journal_survive_a_kill(void **s)
{
	const char *path = crashed_region(25);
	assert_int_equal(seq_after_open(path, PMTX_BACKEND_JOURNAL), 25);
	rm_region(path);
}

/* The region file's journal mark (layout.h G3), read from the file. */
static uint64_t mark_of(const char *path)
{
	struct pmtx_hdr h;
	uint64_t v = 0;
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	assert_int_equal(pread(fd, &v, 8, (off_t)(h.rstate_off + 16)), 8);
	close(fd);
	return v;
}

/* journal.c invariant 9: while a region's newest commits may be in its
 * journal only, the file says so, and an open without that journal is
 * refused, changing nothing, rather than open the file as of its last
 * checkpoint; PMTX_OPEN_FORGET_JOURNAL does that on purpose. A clean
 * close and a replay by another backend clear the mark. */
static void a_region_whose_journal_is_missing_is_refused(void **s)
{
	const char *path = crashed_region(3);
	assert_int_equal(mark_of(path), 1);
	char *jp = strdup(jpath(path)), *moved;
	assert_true(asprintf(&moved, "%s.moved", jp) > 0);
	assert_int_equal(rename(jp, moved), 0);
	uint64_t h = tu_file_hash(path);
	const pmtx_backend bs[] = {PMTX_BACKEND_JOURNAL, PMTX_BACKEND_HARDWARE,
	                           PMTX_BACKEND_FILE};
	for (size_t i = 0; i < sizeof(bs) / sizeof(*bs); i++) {
		assert_int_equal(open_rc(path, bs[i], 0), PMTX_E_CORRUPT);
		assert_non_null(strstr(pmtx_errmsg(), "which is missing"));
		assert_int_equal(access(jp, F_OK), -1); /* none made */
	}
	assert_int_equal(open_rc(path, PMTX_BACKEND_HARDWARE,
	                         PMTX_OPEN_PRIVATE), PMTX_E_CORRUPT);
	/* another region's empty journal in its place is no journal of
	 * this one: refused too, a private view included */
	const char *other;
	pmtx_region *ro = create_journal_region(&other, PMTX_RT_REDO);
	assert_int_equal(pmtx_close(ro), 0);
	char *ojp = strdup(jpath(other));
	assert_int_equal(rename(ojp, jp), 0);
	assert_int_equal(open_rc(path, PMTX_BACKEND_HARDWARE,
	                         PMTX_OPEN_PRIVATE), PMTX_E_CORRUPT);
	assert_int_equal(open_rc(path, PMTX_BACKEND_JOURNAL, 0),
	                 PMTX_E_CORRUPT);
	unlink(jp);
	rm_region(other);
	free(ojp);
	assert_int_equal(tu_file_hash(path), h);
	/* put back, it replays: all 3 commits */
	assert_int_equal(rename(moved, jp), 0);
	assert_int_equal(seq_after_open(path, PMTX_BACKEND_JOURNAL), 3);
	/* a clean close cleared the mark: the journal is not needed */
	assert_int_equal(mark_of(path), 0);
	assert_int_equal(unlink(jp), 0);
	assert_int_equal(seq_after_open(path, PMTX_BACKEND_HARDWARE), 3);
	rm_region(path);

	/* replay through another backend clears it too, then removes the
	 * journal */
	path = crashed_region(2);
	free(jp);
	jp = strdup(jpath(path));
	assert_int_equal(seq_after_open(path, PMTX_BACKEND_FILE), 2);
	assert_int_equal(mark_of(path), 0);
	assert_int_equal(access(jp, F_OK), -1);
	rm_region(path);

	/* forgotten on purpose: as of the last checkpoint (no commit), and
	 * the journal backend starts a new journal, marked again */
	path = crashed_region(4);
	free(jp);
	jp = strdup(jpath(path));
	assert_int_equal(unlink(jp), 0);
	pmtx_region *r;
	assert_int_equal(tu_open_on(path, PMTX_BACKEND_JOURNAL,
	                            PMTX_OPEN_FORGET_JOURNAL, &r), 0);
	assert_int_equal(((struct root *)pmtx_root(r, NULL))->seq, 0);
	assert_int_equal(mark_of(path), 1);
	assert_int_equal(access(jp, F_OK), 0);
	assert_int_equal(pmtx_close(r), 0);
	assert_int_equal(mark_of(path), 0);
	rm_region(path);
	free(moved);
	free(jp);
}

static void a_private_view_refuses_a_journal_with_commits(void **s)
{
	const char *path = crashed_region(3);
	uint64_t h = tu_file_hash(path);
	assert_int_equal(open_rc(path, PMTX_BACKEND_HARDWARE,
	                         PMTX_OPEN_PRIVATE),
	                 PMTX_E_UNSUPPORTED);
	assert_non_null(strstr(pmtx_errmsg(), "pmtx recover"));
	assert_int_equal(tu_file_hash(path), h);
	assert_int_equal(seq_after_open(path, PMTX_BACKEND_FILE), 3);
	assert_int_equal(access(jpath(path), F_OK), -1); /* removed */
	assert_int_equal(open_rc(path, PMTX_BACKEND_HARDWARE,
	                         PMTX_OPEN_PRIVATE), 0);
	rm_region(path);
}

static void a_damaged_or_foreign_journal_is_refused_untouched(void **s)
{
	const char *path = crashed_region(3);
	char *saved = strdup(jpath(path));
	uint64_t h = tu_file_hash(path);
	/* both header slots damaged */
	char junk[8] = "garbage!";
	patch(saved, 8, junk, 8);
	patch(saved, PMTXJ_SLOT_SIZE + 8, junk, 8);
	assert_int_equal(open_rc(path, PMTX_BACKEND_JOURNAL, 0),
	                 PMTX_E_CORRUPT);
	assert_non_null(strstr(pmtx_errmsg(), "no valid header"));
	assert_int_equal(tu_file_hash(path), h);
	rm_region(path);
	/* another region's journal */
	const char *a = crashed_region(2);
	char *apath = strdup(a);
	const char *b = crashed_region(2);
	char *aj = strdup(jpath(apath));
	assert_int_equal(rename(aj, jpath(b)), 0);
	free(aj);
	h = tu_file_hash(b);
	assert_int_equal(open_rc(b, PMTX_BACKEND_HARDWARE, 0),
	                 PMTX_E_CORRUPT);
	assert_non_null(strstr(pmtx_errmsg(), "another region"));
	assert_int_equal(tu_file_hash(b), h);
	/* a's journal is gone (b has it): a is refused, unchanged, until
	 * told to forget it, and then opens as of its last checkpoint */
	h = tu_file_hash(apath);
	assert_int_equal(open_rc(apath, PMTX_BACKEND_FILE, 0), PMTX_E_CORRUPT);
	assert_non_null(strstr(pmtx_errmsg(), "which is missing"));
	assert_int_equal(tu_file_hash(apath), h);
	assert_int_equal(open_rc(apath, PMTX_BACKEND_FILE,
	                         PMTX_OPEN_FORGET_JOURNAL), 0);
	assert_int_equal(seq_after_open(apath, PMTX_BACKEND_FILE), 0);
	/* another region's journal with no record is nobody's: dropped */
	pmtx_region *r = create_journal_region(&a, PMTX_RT_REDO);
	assert_int_equal(pmtx_close(r), 0); /* its journal: empty */
	aj = strdup(jpath(a));
	assert_int_equal(rename(aj, jpath(apath)), 0);
	free(aj);
	assert_int_equal(open_rc(apath, PMTX_BACKEND_JOURNAL, 0), 0);
	rm_region(a);
	rm_region(apath);
	rm_region(b);
	free(apath);
	free(saved);
}

/* Where the journal's last record starts (fd open on it). */
static uint64_t last_record(int fd, uint64_t *end)
{
	uint64_t pos = PMTXJ_REC_OFF, last = 0;
	struct pmtxj_rec rec;
	for (;;) {
		assert_int_equal(pread(fd, &rec, sizeof(rec), (off_t)pos),
		                 (ssize_t)sizeof(rec));
		if (rec.magic != PMTXJ_REC_MAGIC)
			break;
		last = pos;
		pos += rec.len;
	}
	assert_true(last > 0);
	*end = pos;
	return last;
}

/* J3: a record whose checksum holds but whose offset lies outside the
 * region is corruption, refused before anything is applied (the last
 * record: the records before it are not applied either). */
static void an_offset_outside_the_region_is_refused(void **s)
{
	const char *path = crashed_region(3);
	const char *jp = jpath(path);
	struct pmtxj_rec rec;
	int fd = open(jp, O_RDWR);
	assert_true(fd >= 0);
	uint64_t end, at = last_record(fd, &end);
	assert_int_equal(pread(fd, &rec, sizeof(rec), (off_t)at),
	                 (ssize_t)sizeof(rec));
	char *b = malloc(rec.len);
	assert_int_equal(pread(fd, b, rec.len, (off_t)at), (ssize_t)rec.len);
	uint64_t bad = (uint64_t)REGION_SIZE * 4;
	memcpy(b + sizeof(rec), &bad, 8);
	memset(b + offsetof(struct pmtxj_rec, checksum), 0, 8);
	uint64_t c = pmtx_checksum(b, rec.len, PMTXJ_CSUM_SEED_REC);
	memcpy(b + offsetof(struct pmtxj_rec, checksum), &c, 8);
	assert_int_equal(pwrite(fd, b, rec.len, (off_t)at), (ssize_t)rec.len);
	close(fd);
	free(b);
	uint64_t h = tu_file_hash(path);
	assert_int_equal(open_rc(path, PMTX_BACKEND_JOURNAL, 0),
	                 PMTX_E_CORRUPT);
	assert_non_null(strstr(pmtx_errmsg(), "outside the region"));
	assert_int_equal(tu_file_hash(path), h);
	rm_region(path);
}

/* J2: a torn last record ends the journal; those before it apply. */
static void a_torn_last_record_ends_the_journal(void **s)
{
	const char *path = crashed_region(5);
	int fd = open(jpath(path), O_RDWR);
	uint64_t end;
	(void)last_record(fd, &end);
	char x = 0x5a;
	assert_int_equal(pwrite(fd, &x, 1, (off_t)(end - 1)), 1);
	close(fd);
	/* the records of ordering barriers after the fifth commit never
	 * reached the file (the child died with them in DRAM): the last
	 * record is the fifth commit's own, so the journal ends after the
	 * fourth */
	assert_int_equal(seq_after_open(path, PMTX_BACKEND_JOURNAL), 4);
	rm_region(path);
}

/* ---- behaviour ---- */

static void a_clean_close_keeps_even_unflushed_stores(void **s)
{
	const char *path;
	pmtx_region *r = create_journal_region(&path, PMTX_RT_REDO);
	struct root *root = pmtx_root(r, NULL);
	root->a[17] = 0x1234; /* a plain store, never flushed */
	assert_int_equal(pmtx_close(r), 0);
	pmtx_options o;
	pmtx_options_init(&o);
	assert_int_equal(pmtx_open(path, &o, &r), 0);
	root = pmtx_root(r, NULL);
	assert_int_equal(root->a[17], 0x1234);
	assert_int_equal(pmtx_close(r), 0);
	rm_region(path);
}

/* One fdatasync per commit, none for an ordering barrier (exact, from
 * the counters). */
static void a_commit_costs_one_sync_and_an_order_barrier_none(void **s)
{
	const char *path;
	pmtx_region *r = create_journal_region(&path, PMTX_RT_REDO);
	struct root *root = pmtx_root(r, NULL);
	uint64_t seed = 3;
	const pmtx_runtime rts[] = {PMTX_RT_REDO, PMTX_RT_UNDO};
	for (size_t k = 0; k < ARRAY_SIZE(rts); k++)
		for (int i = 1; i <= 10; i++) {
			struct move m;
			next_move(&seed, &m);
			tu_count_start();
			assert_int_equal(run_tx(r, rts[k], &m, (uint64_t)i), 0);
			pmtx_counters c = tu_count();
			assert_true(c.barriers >= 2);
			assert_int_equal(c.msyncs, 1);
		}
	root->a[0] = 5;
	tu_count_start();
	pmtx_flush(r, &root->a[0], 8);
	assert_int_equal(pmtx_order(r), 0);
	assert_int_equal(tu_count().msyncs, 0);
	assert_int_equal(pmtx_barrier(r), 0);
	assert_int_equal(tu_count().msyncs, 1);
	assert_int_equal(pmtx_barrier(r), 0); /* nothing new: no sync */
	assert_int_equal(tu_count().msyncs, 1);
	assert_int_equal(pmtx_close(r), 0);
	rm_region(path);
}

/* A transaction bigger than the journal is written by a checkpoint, and
 * survives the process's death right after its commit. */
static void a_transaction_bigger_than_the_journal_commits(void **s)
{
	setenv("PMTX_JOURNAL_SIZE", "64k", 1);
	const char *path;
	pmtx_region *r = create_journal_region(&path, PMTX_RT_UNDO);
	assert_int_equal(pmtx_close(r), 0);
	pid_t pid = tu_fork();
	if (pid == 0) {
		pmtx_tx *tx;
		if (tu_open_on(path, PMTX_BACKEND_JOURNAL, 0, &r) ||
		    pmtx_begin(r, PMTX_RT_UNDO, &tx))
			_exit(1);
		struct root *root = pmtx_root(r, NULL);
		for (uint64_t i = 0; i < NW; i++) {
			uint64_t v = i * 3 + 1;
			if (pmtx_write(tx, &root->a[i], &v, 8))
				_exit(1);
		}
		uint64_t one = 1;
		if (pmtx_write(tx, &root->seq, &one, 8))
			_exit(1);
		pmtx_counters c;
		pmtx_counters_reset();
		int rc = pmtx_commit(tx);
		pmtx_counters_get(&c);
		/* a checkpoint: the journal, the region, the new header */
		_exit(rc ? 1 : c.msyncs >= 3 ? 0 : 2); /* no close */
	}
	assert_int_equal(tu_wait_exit(pid), 0);
	pmtx_options o;
	pmtx_options_init(&o);
	assert_int_equal(pmtx_open(path, &o, &r), 0);
	struct root *root = pmtx_root(r, NULL);
	assert_int_equal(root->seq, 1);
	for (uint64_t i = 0; i < NW; i++)
		assert_int_equal(root->a[i], i * 3 + 1);
	assert_int_equal(pmtx_close(r), 0);
	unsetenv("PMTX_JOURNAL_SIZE");
	rm_region(path);
}

static void the_journal_backend_refuses_pdom2(void **s)
{
	pmtx_options o;
	pmtx_options_init(&o);
	o.backend = PMTX_BACKEND_JOURNAL;
	o.domain = PMTX_PDOM2;
	o.root_size = 64;
	o.ndesc = 4;
	pmtx_region *r;
	const char *path = tu_path();
	assert_int_equal(pmtx_create(path, REGION_SIZE, &o, &r),
	                 PMTX_E_INVAL);
	assert_non_null(strstr(pmtx_errmsg(), "PDOM-2"));
	assert_int_equal(access(path, F_OK), -1); /* refused before create */
	rm_region(path);
}

/* Invariant 6: after a failed fdatasync every later barrier fails, even
 * where a second fdatasync would report success; the region opened again
 * replays and runs. */
static int fail_syncs; /* the next n commit syncs fail */

static ssize_t plain_pwrite(int fd, const void *b, size_t n, off_t off,
                            enum journal_site s)
{
	return pwrite(fd, b, n, off);
}

static int failing_sync(int fd, enum journal_site s)
{
	if (s == JS_S_COMMIT && fail_syncs > 0) {
		fail_syncs--;
		errno = EIO;
		return -1;
	}
	return fdatasync(fd);
}

static const struct journal_io failing_io = {plain_pwrite, failing_sync,
                                             NULL};

static void a_failed_sync_fails_every_later_barrier(void **s)
{
	const char *path;
	pmtx_region *r = create_journal_region(&path, PMTX_RT_REDO);
	uint64_t seed = 9;
	struct move m;
	next_move(&seed, &m);
	assert_int_equal(run_tx(r, PMTX_RT_REDO, &m, 1), 0);
	journal_set_io(&failing_io);
	fail_syncs = 1;
	next_move(&seed, &m);
	assert_int_equal(run_tx(r, PMTX_RT_REDO, &m, 2), PMTX_E_IO);
	assert_non_null(strstr(pmtx_errmsg(), "opened again"));
	assert_int_equal(fail_syncs, 0); /* later syncs would succeed... */
	next_move(&seed, &m);
	assert_int_equal(run_tx(r, PMTX_RT_REDO, &m, 3), PMTX_E_IO);
	struct root *root = pmtx_root(r, NULL);
	root->a[0] = 1;
	pmtx_flush(r, &root->a[0], 8);
	assert_int_equal(pmtx_barrier(r), PMTX_E_IO); /* ...but none runs */
	journal_set_io(NULL);
	assert_int_equal(pmtx_close(r), PMTX_E_IO);
	/* opened again: replay, and the first commit is there */
	assert_true(seq_after_open(path, PMTX_BACKEND_JOURNAL) >= 1);
	assert_int_equal(open_rc(path, PMTX_BACKEND_JOURNAL, 0), 0);
	rm_region(path);
}

/* An open that refuses the region makes no journal beside it. */
static void a_refused_open_makes_no_journal(void **s)
{
	const char *path;
	pmtx_region *r = create_journal_region(&path, PMTX_RT_REDO);
	assert_int_equal(pmtx_close(r), 0);
	assert_int_equal(unlink(jpath(path)), 0); /* closed: nothing in it */
	pmtx_options o;
	pmtx_options_init(&o);
	o.backend = PMTX_BACKEND_JOURNAL;
	o.layout = "another";
	assert_int_equal(pmtx_open(path, &o, &r), PMTX_E_BAD_LAYOUT);
	assert_int_equal(access(jpath(path), F_OK), -1);
	o.layout = NULL;
	assert_int_equal(pmtx_open(path, &o, &r), 0);
	assert_int_equal(access(jpath(path), F_OK), 0);
	assert_int_equal(pmtx_close(r), 0);
	rm_region(path);
}

static void create_forgets_a_stale_journal(void **s)
{
	const char *path = crashed_region(2);
	char *keep = strdup(path);
	unlink(keep); /* the region goes, its journal stays */
	pmtx_options o;
	pmtx_options_init(&o);
	o.backend = PMTX_BACKEND_JOURNAL;
	o.root_size = sizeof(struct root);
	o.ndesc = 4;
	pmtx_region *r;
	assert_int_equal(pmtx_create(keep, REGION_SIZE, &o, &r), 0);
	assert_int_equal(((struct root *)pmtx_root(r, NULL))->seq, 0);
	assert_int_equal(pmtx_close(r), 0);
	assert_int_equal(seq_after_open(keep, PMTX_BACKEND_JOURNAL), 0);
	rm_region(keep);
	free(keep);
}

/* "power": the power-failure enumerations (thousands of child
 * processes: a "crash" test, kept out of the sanitizer build); else the
 * rest. */
int main(int argc, char **argv)
{
	const struct CMUnitTest unit[] = {
		cmocka_unit_test(commits_in_the_journal_survive_a_kill),
		cmocka_unit_test(a_private_view_refuses_a_journal_with_commits),
		cmocka_unit_test(a_region_whose_journal_is_missing_is_refused),
		cmocka_unit_test(
			a_damaged_or_foreign_journal_is_refused_untouched),
		cmocka_unit_test(an_offset_outside_the_region_is_refused),
		cmocka_unit_test(a_torn_last_record_ends_the_journal),
		cmocka_unit_test(a_clean_close_keeps_even_unflushed_stores),
		cmocka_unit_test(
			a_commit_costs_one_sync_and_an_order_barrier_none),
		cmocka_unit_test(a_transaction_bigger_than_the_journal_commits),
		cmocka_unit_test(the_journal_backend_refuses_pdom2),
		cmocka_unit_test(create_forgets_a_stale_journal),
		cmocka_unit_test(a_refused_open_makes_no_journal),
		cmocka_unit_test(a_failed_sync_fails_every_later_barrier),
	};
	const struct CMUnitTest power[] = {
		cmocka_unit_test(
			every_runtime_survives_power_failure_at_every_write),
		cmocka_unit_test(each_needed_sync_is_caught_when_left_out),
		cmocka_unit_test(
			two_threads_survive_power_failure_at_every_write),
		cmocka_unit_test(
			replay_survives_power_failure_and_needs_its_sync),
	};
	if (argc > 1 && !strcmp(argv[1], "power"))
		return cmocka_run_group_tests(power, NULL, NULL);
	return cmocka_run_group_tests(unit, NULL, NULL);
}
