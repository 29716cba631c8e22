/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * explore.c - the crash-state explorer (include/pmtx_explore.h): runs a
 * workload, stops it at every crash point, builds the crash images and
 * has check.c check each one.
 *
 * Design
 * ------
 * The parent makes a fresh region and fills it (setup), then forks a
 * child that opens the region over the sim backend (persist/sim.h) and
 * runs the workload. At every crash point (just before each barrier, and
 * once at the end) the child's sim serialises the crash state into shared
 * memory, writes a byte to the parent and waits. The parent, a clean
 * process, builds crash images from that state, one at a time, into an
 * image file, and checks each (check.c). Depth 2: for some images, a
 * second child opens the image over the sim (so recovery runs under the
 * sim) and the same protocol crashes recovery at each of its barriers;
 * those images must pass the same checks against the same bounds.
 *
 * This is the one layer above pmtx.c: it uses the public API, plus the
 * sim backend (persist_override_ops), the trace sink that feeds the sim
 * the library's tracked stores (trace_set_sink), and the name of a
 * planted bug (pmtx__mutant_*) for reproducers.
 *
 * Invariants
 *  E1. The parent never runs pmtx code on the workload's region; it only
 *      opens crash images, each in a file of its own, with no transaction
 *      running anywhere else in its process.
 *  E2. A child is stopped at a crash point for as long as the parent
 *      looks: the state it published cannot change underneath.
 *  E3. An image is named by (seed, point, image[, rpoint, rimage]); the
 *      same names rebuild the same bytes, so every violation has a
 *      one-line reproducer.
 *  E4. Images are enumerated when the count allows (config.images),
 *      otherwise sampled with a seed derived from (seed, point).
 *  E5. The workload's region truncates redo-async logs lazily
 *      (PMTX_TRUNC_LAZY): with no truncation thread, a single-threaded
 *      workload reaches the same barriers in the same order on every run,
 *      which E3 needs. Truncations are then as late as they can be:
 *      retired only when a descriptor or an object is needed again. For
 *      the same reason PMTX_RT_AUTO is explored in rotation
 *      (PMTX_OPEN_AUTO_ROTATE), never chosen by time.
 *  E6. A workload and a configuration are validated before anything is
 *      forked: a malformed one is PMTX_E_INVAL with pmtx_errmsg, never a
 *      child that fails in a way that looks like a violation.
 *  E7. A region that grows (workload.max_size) is simulated up to its
 *      maximum: the sim, the shared durable image and the image files
 *      have room for max_size bytes. A crash image's file is exactly as
 *      long as the region's file was at the crash point (a growth extends
 *      the file before the region records it, region.c 6), so recovery
 *      sees the lengths a real crash leaves.
 *  E8. PMTX_RT_TWIN is explored in a twin region (pmtx_options.runtime
 *      PMTX_RT_TWIN at create), where every transaction is twin, setup's
 *      included: the runtime the workload is explored under chooses the
 *      kind of region. It is made twice the workload's region_size, as a
 *      twin region holds half the heap of another of its size (the back
 *      copy follows the heap), and never grows (max_size is refused under
 *      twin, E6).
 *  E9. --process-crash (config.process_crash): the process died at the
 *      crash point and the power failed during or after its recovery.
 *      Depth 2 then opens the visible image (every pending store applied:
 *      what the process saw) with the recovery child's sim preset to the
 *      crash image as the durable one (sim_preset_durable), so every
 *      store that had not persisted is still pending there, and may or
 *      may not reach the media until recovery flushes it. A recovery
 *      that skips writing a line because it already reads right, and so
 *      never flushes it, leaves an image that is checked like any other.
 *      Under PDOM-2 the caches are durable: the image is the visible one.
 * E10. --reopen (config.reopen): a single-threaded workload's child
 *      closes the region halfway through its transactions and opens it
 *      again, over the same sim (sim.c S10), as the next process to use
 *      it would after a clean close: what the close left pending in the
 *      cache stays pending, and a crash after later commits may still
 *      lose it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/mutant.h"
#include "common/util.h"
#include "explore/explore.h"
#include "persist/sim.h"
#include "trace/trace.h"

#define SNAP_CAP (64ull << 20)
#define AUTO_ENUM (1ull << 16)
#define AUTO_SAMPLES 10000ull

/* Shared between the explorer and one child. */
struct shm_hdr {
	uint64_t point;
	struct explore_bounds b;
	uint64_t barriers; /* at the end of the run */
	int32_t status;    /* the child's failure, or 0 */
	uint32_t count_only;
	struct sim_check_stats cs;
	char msg[256];
};

struct chan {
	struct shm_hdr *h;
	uint8_t *snap;    /* SNAP_CAP bytes */
	uint8_t *durable; /* region bytes */
	size_t maplen;
	int c2p, p2c;
	pid_t pid;
};

/* A file that holds one crash image at a time, mapped cap bytes long. */
struct image {
	char path[256];
	int fd;
	uint8_t *map;
	size_t len; /* the file's length: the image's */
};

struct explorer {
	const pmtx_explore_config *c;
	pmtx_explore_result *res;
	pmtx_explore_env env;
	const char *prog;
	size_t size; /* region bytes at creation */
	size_t cap;  /* the most it may grow to (E7) */
	char region[256];
	struct image img[2]; /* 0: the workload's, 1: recovery's */
	struct chan ch[2]; /* 0: the workload, 1: recovery (depth 2) */
	struct explore_scratch scratch;
	uint64_t t0, last_progress, total_points;
	int stop;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- runtimes and workloads ---- */

static const struct {
	pmtx_runtime rt;
	unsigned bit;
	const char *name;
} runtimes[] = {
	{PMTX_RT_UNDO, PMTX_EXPLORE_UNDO, "undo"},
	{PMTX_RT_REDO, PMTX_EXPLORE_REDO, "redo"},
	{PMTX_RT_REDO_ASYNC, PMTX_EXPLORE_REDO_ASYNC, "redo-async"},
	{PMTX_RT_COW, PMTX_EXPLORE_COW, "cow"},
	{PMTX_EXPLORE_RT_CLTX, PMTX_EXPLORE_CLTX, "cltx"},
	{PMTX_RT_AUTO, PMTX_EXPLORE_AUTO, "auto"},
	{PMTX_RT_TWIN, PMTX_EXPLORE_TWIN, "twin"},
};

const char *pmtx_explore_runtime_name(pmtx_runtime rt)
{
	for (size_t i = 0; i < ARRAY_SIZE(runtimes); i++)
		if (runtimes[i].rt == rt)
			return runtimes[i].name;
	return "?";
}

int pmtx_explore_runtime_parse(const char *s, pmtx_runtime *out)
{
	for (size_t i = 0; s && i < ARRAY_SIZE(runtimes); i++)
		if (!strcmp(s, runtimes[i].name)) {
			*out = runtimes[i].rt;
			return 0;
		}
	return PMTX_E_INVAL;
}

unsigned explore_runtimes(const pmtx_explore_workload *w)
{
	return w->runtimes ? w->runtimes : PMTX_EXPLORE_LOGGING;
}

unsigned explore_nthreads(const pmtx_explore_workload *w)
{
	return w->nthreads ? w->nthreads : 1;
}

int pmtx_explore_applies(const pmtx_explore_workload *w, pmtx_runtime rt)
{
	for (size_t i = 0; w && i < ARRAY_SIZE(runtimes); i++)
		if (runtimes[i].rt == rt)
			return (explore_runtimes(w) & runtimes[i].bit) != 0;
	return 0;
}

/* E8: a twin region holds half the heap of another of its size. */
size_t explore_region_size(const pmtx_explore_workload *w, pmtx_runtime rt)
{
	size_t n = w->region_size ? w->region_size : EXPLORE_REGION_SIZE;
	return rt == PMTX_RT_TWIN ? 2 * n : n;
}

/* The one place that maps a workload's sizes to pmtx_options. */
void explore_region_options(const pmtx_explore_workload *w, pmtx_runtime rt,
                            pmtx_options *o)
{
	pmtx_options_init(o);
	o->layout = w->layout ? w->layout : EXPLORE_LAYOUT;
	o->root_size = w->root_size;
	o->ndesc = 8;
	o->max_size = w->max_size;
	if (rt == PMTX_RT_TWIN) /* E8; opening ignores it */
		o->runtime = PMTX_RT_TWIN;
}

/* E6: 0, or PMTX_E_INVAL with the reason in pmtx_errmsg. */
static int validate(const pmtx_explore_config *c)
{
	const pmtx_explore_workload *w = c->workload;
	const char *bad = NULL;
	if (!w || !w->name)
		bad = "the workload or its name is missing";
	else if (!w->setup || !w->run || !w->observe || !w->model)
		bad = "setup, run, observe and model are required";
	else if (explore_nthreads(w) > PMTX_EXPLORE_MAX_THREADS)
		bad = "more threads than PMTX_EXPLORE_MAX_THREADS";
	else if (w->max_size &&
	         w->max_size < explore_region_size(w, PMTX_RT_UNDO))
		bad = "max_size is below region_size";
	else if (w->max_size && c->runtime == PMTX_RT_TWIN)
		bad = "a twin region cannot grow: max_size under twin";
	else if (c->ntx == 0 || (w->max_ntx && c->ntx > w->max_ntx))
		bad = "ntx is 0 or above the workload's max_ntx";
	else if (c->points < -1)
		bad = "points is below -1";
	else if ((unsigned)c->domain > PMTX_PDOM2)
		bad = "unknown domain";
	if (bad)
		pmtx__set_errmsg("explore: %s", bad);
	return bad ? PMTX_E_INVAL : 0;
}

void pmtx_explore_config_init(pmtx_explore_config *c)
{
	memset(c, 0, sizeof(*c));
	c->runtime = PMTX_RT_UNDO;
	c->domain = PMTX_PDOM1;
	c->seed = 1;
	c->ntx = 12;
	c->points = -1;
	c->images = 64;
	c->depth2 = 1;
	c->d2images = 16;
	c->dir = "/dev/shm";
}

/* ---- shared memory and files ---- */

static int chan_open(struct chan *ch, size_t size)
{
	size_t len = 4096 + SNAP_CAP + size;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return errno;
	ch->h = p;
	ch->snap = (uint8_t *)p + 4096;
	ch->durable = ch->snap + SNAP_CAP;
	ch->maplen = len;
	ch->pid = -1;
	return 0;
}

static void chan_close(struct chan *ch)
{
	if (ch->h)
		munmap(ch->h, ch->maplen);
	ch->h = NULL;
}

static int image_open(struct image *im, size_t cap)
{
	im->fd = open(im->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (im->fd < 0)
		return errno;
	void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_SHARED, im->fd,
	               0);
	if (p == MAP_FAILED)
		return errno;
	im->map = p;
	im->len = 0;
	return 0;
}

static void image_close(struct image *im, size_t cap)
{
	if (im->map)
		munmap(im->map, cap);
	if (im->fd >= 0)
		close(im->fd);
	unlink(im->path);
	im->map = NULL;
	im->fd = -1;
}

/* Build image id of the crash state snap into im, in a file exactly as
 * long as the region was at the crash (E7). */
static void image_build(struct image *im, const struct sim_snap *snap,
                        const uint8_t *durable, uint64_t id, int sample,
                        uint64_t seed)
{
	if (im->len != snap->len && ftruncate(im->fd, (off_t)snap->len))
		_exit(3); /* the mapping would fault: nothing sane is left */
	im->len = snap->len;
	sim_image(snap, durable, id, sample, seed, im->map);
}

/* The options of the region the workload runs in, at its creation and
 * in every child. */
static void run_options(const struct explorer *x, pmtx_options *o)
{
	explore_region_options(x->env.workload, x->c->runtime, o);
	o->domain = x->c->domain;
	o->backend = PMTX_BACKEND_EMULATED;
	o->barrier_ns = 0;
	o->truncation = PMTX_TRUNC_LAZY; /* E5: deterministic crash points */
	if (x->c->runtime == PMTX_RT_AUTO) /* E5 too */
		o->flags |= PMTX_OPEN_AUTO_ROTATE;
}

/* A fresh region with the workload's initial data, closed again. */
static int make_region(struct explorer *x)
{
	pmtx_options o;
	pmtx_region *r;
	run_options(x, &o);
	unlink(x->region);
	int rc = pmtx_create(x->region, x->size, &o, &r);
	if (rc)
		return rc;
	rc = x->env.workload->setup(&x->env, r);
	int crc = pmtx_close(r);
	return rc ? rc : crc;
}

/* ---- the child side ---- */

struct child {
	const struct explorer *x;
	struct chan *ch;
	pmtx_region *r;
	unsigned t;
};

/* The sim's point callback (sim.c S6): publish, then wait. */
static void publish(struct sim *s, uint64_t point, void *arg)
{
	struct chan *ch = arg;
	char b = 'p';
	if (ch->h->count_only)
		return;
	ch->h->point = point;
	if (sim_snapshot(s, ch->snap, SNAP_CAP, point) > SNAP_CAP) {
		ch->h->status = PMTX_E_NOMEM;
		snprintf(ch->h->msg, sizeof(ch->h->msg),
		         "crash state larger than %llu bytes",
		         (unsigned long long)SNAP_CAP);
		_exit(3);
	}
	if (write(ch->c2p, &b, 1) != 1 || read(ch->p2c, &b, 1) != 1 ||
	    b == 'q')
		_exit(0);
}

static pmtx_region *child_open(const struct explorer *x, struct chan *ch,
                               const char *path);

/* E10: close the region and open it again. */
static void child_reopen(struct child *k)
{
	int rc = pmtx_close(k->r);
	if (rc) {
		k->ch->h->status = rc;
		snprintf(k->ch->h->msg, sizeof(k->ch->h->msg), "close: %s",
		         pmtx_strerror(rc));
		_exit(3);
	}
	k->r = child_open(k->x, k->ch, k->x->region);
}

static void *child_thread(void *arg)
{
	struct child *k = arg;
	const pmtx_explore_env *e = &k->x->env;
	struct shm_hdr *h = k->ch->h;
	int reopen = k->x->c->reopen && explore_nthreads(e->workload) == 1;
	for (uint64_t i = 0; i < e->ntx; i++) {
		if (reopen && i == e->ntx / 2)
			child_reopen(k);
		__atomic_store_n(&h->b.started[k->t], i + 1, __ATOMIC_SEQ_CST);
		int rc = e->workload->run(e, k->r, k->t, i);
		if (rc) {
			h->status = rc;
			snprintf(h->msg, sizeof(h->msg),
			         "workload transaction %llu of thread %u: %s",
			         (unsigned long long)i, k->t, pmtx_strerror(rc));
			_exit(3);
		}
		__atomic_store_n(&h->b.done[k->t], i + 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static struct sim *child_sim(const struct explorer *x, struct chan *ch)
{
	struct sim *s = sim_new(x->cap, ch->durable);
	if (!s)
		_exit(3);
	sim_set_point_fn(s, publish, ch);
	sim_set_checks(s, x->c->checks && !ch->h->count_only);
	persist_override_ops(&sim_ops, s);
	trace_set_sink(sim_trace_sink, s);
	return s;
}

static pmtx_region *child_open(const struct explorer *x, struct chan *ch,
                               const char *path)
{
	pmtx_options o;
	pmtx_region *r;
	run_options(x, &o);
	int rc = pmtx_open(path, &o, &r);
	if (rc) {
		ch->h->status = rc;
		snprintf(ch->h->msg, sizeof(ch->h->msg), "open: %s (%s)",
		         pmtx_strerror(rc), pmtx_errmsg());
		_exit(3);
	}
	return r;
}

/* Returns the region as the threads leave it (E10: reopened). */
static pmtx_region *run_threads(const struct explorer *x, struct chan *ch,
                                pmtx_region *r)
{
	unsigned n = explore_nthreads(x->env.workload);
	struct child k[PMTX_EXPLORE_MAX_THREADS];
	pthread_t th[PMTX_EXPLORE_MAX_THREADS];
	for (unsigned t = 0; t < n; t++) {
		k[t] = (struct child){x, ch, r, t};
		if (n == 1)
			child_thread(&k[t]);
		else if (pthread_create(&th[t], NULL, child_thread, &k[t]))
			_exit(3);
	}
	for (unsigned t = 0; n > 1 && t < n; t++)
		pthread_join(th[t], NULL);
	return k[0].r;
}

static void child_workload(const struct explorer *x, struct chan *ch,
                           const char *path)
{
	struct sim *s = child_sim(x, ch);
	pmtx_region *r = child_open(x, ch, path);
	r = run_threads(x, ch, r);
	/* The truncations still waiting (E5) are crash points too. */
	if (pmtx_drain(r))
		_exit(3);
	sim_final(s);
	ch->h->barriers = sim_barriers(s);
	sim_check_stats(s, &ch->h->cs);
	_exit(0);
}

/* Depth 2: recovery of an image, under the sim. */
static void child_recovery(const struct explorer *x, struct chan *ch,
                           const char *path)
{
	struct sim *s = child_sim(x, ch);
	if (x->c->process_crash) /* E9: ch->durable holds the crash image */
		sim_preset_durable(s);
	pmtx_region *r = child_open(x, ch, path);
	sim_final(s);
	(void)r;
	_exit(0);
}

static int spawn(struct explorer *x, struct chan *ch, int recovery,
                 const char *path, int count_only)
{
	int a[2], b[2];
	if (pipe(a))
		return errno;
	if (pipe(b)) {
		int rc = errno;
		close(a[0]);
		close(a[1]);
		return rc;
	}
	memset(ch->h, 0, sizeof(*ch->h));
	ch->h->count_only = (uint32_t)count_only;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		close(a[0]);
		close(b[1]);
		ch->c2p = a[1];
		ch->p2c = b[0];
		if (recovery)
			child_recovery(x, ch, path);
		child_workload(x, ch, path);
	}
	close(a[1]);
	close(b[0]);
	ch->c2p = a[0];
	ch->p2c = b[1];
	ch->pid = pid;
	return 0;
}

/* Wait for the next crash point: 1 at a point, 0 at the end, or a status
 * (the child failed: message in ch->h->msg). */
static int next_point(struct chan *ch)
{
	char b;
	ssize_t n;
	do
		n = read(ch->c2p, &b, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		return 1;
	int st = 0;
	waitpid(ch->pid, &st, 0);
	close(ch->c2p);
	close(ch->p2c);
	ch->pid = -1;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (!ch->h->status) {
		ch->h->status = PMTX_E_IO;
		snprintf(ch->h->msg, sizeof(ch->h->msg), "child %s %d",
		         WIFSIGNALED(st) ? "killed by signal" : "exit status",
		         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	}
	return ch->h->status;
}

static void resume(struct chan *ch, int quit)
{
	char b = quit ? 'q' : 'g';
	if (write(ch->p2c, &b, 1) != 1)
		kill(ch->pid, SIGKILL);
}

/* ---- replays ---- */

/* Keep a copy of the crash image, before recovery changes it. */
static void save_image(const struct explorer *x, const char *from,
                       const char *to)
{
	FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
	char buf[65536];
	size_t n;
	while (out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			break;
	if (!out || ferror(in) || fclose(out))
		fprintf(stderr, "%s: cannot save the image to %s\n", x->prog,
		        to);
	else
		fprintf(stderr, "image saved to %s\n", to);
	if (in)
		fclose(in);
}

static void describe_pdom2(const struct sim_snap *snap)
{
	const struct sim_gstore *g = (const void *)(snap + 1);
	for (uint64_t j = 0; j < snap->nstores && j < 12; j++)
		fprintf(stderr, "  store %llu: off 0x%llx = 0x%llx\n",
		        (unsigned long long)j,
		        (unsigned long long)g[j].line * 64 + g[j].word * 8,
		        (unsigned long long)g[j].v);
}

/* Say which lines of the image are not the durable image. */
static void describe(const struct sim_snap *snap, const uint8_t *durable,
                     const uint8_t *img)
{
	fprintf(stderr, "crash state: %u lines with %llu pending stores, "
	        "%llu images\n", snap->nlines,
	        (unsigned long long)snap->nstores,
	        (unsigned long long)sim_image_count(snap));
	if (snap->domain == PMTX_PDOM2) {
		describe_pdom2(snap);
		return;
	}
	const uint8_t *p = (const uint8_t *)(snap + 1);
	while (p < (const uint8_t *)snap + snap->bytes) {
		const struct sim_line_hdr *lh = (const void *)p;
		const struct sim_store *st = (const void *)(lh + 1);
		const uint64_t *d = (const void *)(durable + lh->line * 64ull);
		const uint64_t *m = (const void *)(img + lh->line * 64ull);
		fprintf(stderr, "  line 0x%llx: %u stores (", lh->line * 64ull,
		        lh->nstores);
		for (uint32_t j = 0; j < lh->nstores; j++)
			fprintf(stderr, "%s%02x%s", j ? " " : "", st[j].mask,
			        st[j].naked ? "n" : "");
		fprintf(stderr, "); image words differing from durable:");
		for (unsigned i = 0; i < 8; i++)
			if (d[i] != m[i])
				fprintf(stderr, " %u", i);
		fputc('\n', stderr);
		p += sizeof(*lh) + lh->nstores * sizeof(*st);
	}
}

/* ---- reporting ---- */

static void progress(struct explorer *x, int force)
{
	uint64_t t = now_ns();
	if (!x->c->progress || (!force && t - x->last_progress < 200000000ull))
		return;
	x->last_progress = t;
	double s = (double)(t - x->t0) / 1e9;
	uint64_t done = x->res->points, all = x->total_points;
	uint64_t imgs = x->res->images + x->res->recovery_images;
	int w = 30, fill = all ? (int)(w * done / all) : 0;
	double eta = done && all > done ? s / (double)done * (double)(all - done)
	                                : 0;
	fprintf(stderr, "\r[%.*s%*s] point %llu/%llu  images %llu (%.0f/s)  "
	        "violations %llu  eta %.0fs ", fill,
	        "##############################", w - fill, "",
	        (unsigned long long)done, (unsigned long long)all,
	        (unsigned long long)imgs, s > 0 ? (double)imgs / s : 0,
	        (unsigned long long)x->res->violations, eta);
}

static void reproducer(const struct explorer *x, char *buf, size_t len,
                       uint64_t point, uint64_t image, uint64_t rpoint,
                       uint64_t rimage)
{
	const pmtx_explore_config *c = x->c;
	unsigned m = pmtx__mutant_active(); /* a planted bug: name it */
	int n = snprintf(buf, len, "%s%s%s%s --workload %s --runtime %s "
	                 "--domain %s --seed %llu --ntx %u --images %llu "
	                 "--point %llu --image %llu",
	                 m ? "PMTX_MUTANT=" : "",
	                 m ? pmtx__mutant_name(m) : "", m ? " " : "",
	                 x->prog, x->env.workload->name,
	                 pmtx_explore_runtime_name(c->runtime),
	                 pmtx_domain_name(c->domain),
	                 (unsigned long long)c->seed, c->ntx,
	                 (unsigned long long)c->images,
	                 (unsigned long long)point, (unsigned long long)image);
	if (rpoint && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n,
		         " --d2images %llu --rpoint %llu --rimage %llu%s",
		         (unsigned long long)c->d2images,
		         (unsigned long long)rpoint, (unsigned long long)rimage,
		         c->process_crash ? " --process-crash" : "");
}

static void violation(struct explorer *x, const char *why, uint64_t point,
                      uint64_t image, uint64_t rpoint, uint64_t rimage)
{
	char rep[400], line[sizeof(x->res->first)];
	reproducer(x, rep, sizeof(rep), point, image, rpoint, rimage);
	snprintf(line, sizeof(line), "%s\n  reproduce: %s", why, rep);
	if (!x->res->violations++)
		snprintf(x->res->first, sizeof(x->res->first), "%s", line);
	if (!x->c->quiet)
		fprintf(stderr, "%sVIOLATION %s/%s/%s point %llu image %llu%s: "
		        "%s\n", x->c->progress ? "\n" : "",
		        x->env.workload->name,
		        pmtx_explore_runtime_name(x->c->runtime),
		        pmtx_domain_name(x->c->domain),
		        (unsigned long long)point, (unsigned long long)image,
		        !rpoint ? ""
		        : x->c->process_crash
		                ? " (crash in recovery after a process crash)"
		                : " (crash in recovery)",
		        line);
	if (x->c->stop_after &&
	    x->res->violations >= (uint64_t)x->c->stop_after)
		x->stop = 1;
}

/* Not replaying, with --save: the first violating image, as the crash
 * left it (the check recovered the file, so it is built again). A
 * multithreaded workload's reproducer may not meet the same crash state
 * again; this file keeps it. */
static void save_first(struct explorer *x, struct chan *ch, int level,
                       uint64_t id, int sample, uint64_t seed)
{
	const struct sim_snap *snap = (const void *)ch->snap;
	image_build(&x->img[level], snap, ch->durable, id, sample, seed);
	describe(snap, ch->durable, x->img[level].map);
	save_image(x, x->img[level].path, x->c->save);
}

/* ---- exploring ---- */

/* E9: img[0] holds crash image id of snap, the durable part of a process
 * crash: it becomes the durable image of the recovery's sim, and img[0]
 * the visible one. */
static void process_crash(struct explorer *x, const struct sim_snap *snap)
{
	uint8_t *durable = x->ch[1].durable;
	if (snap->domain == PMTX_PDOM2) /* E9: the caches are durable */
		sim_image_visible(snap, x->ch[0].durable, durable);
	else
		memcpy(durable, x->img[0].map, snap->len);
	sim_image_visible(snap, x->ch[0].durable, x->img[0].map);
}

/* How many images a point is given, and whether they are enumerated. */
static uint64_t plan(uint64_t count, uint64_t cap, int *sample)
{
	uint64_t lim = cap ? cap : AUTO_ENUM;
	*sample = count > lim;
	return *sample ? (cap ? cap : AUTO_SAMPLES) : count;
}

static int explore_d2(struct explorer *x, const struct explore_bounds *b,
                      uint64_t point, uint64_t image);

/* Image id is one of the k spread over 0..n-1 that are crashed again. */
static int d2_pick(uint64_t id, uint64_t n, unsigned k)
{
	for (unsigned j = 0; j < k && j < n; j++)
		if (j * n / MIN(k, n) == id)
			return 1;
	return 0;
}

/* One image of the crash state: check it, and at level 0 maybe crash its
 * recovery too. */
static void explore_image(struct explorer *x, struct chan *ch, int level,
                          const struct explore_bounds *b, uint64_t point,
                          uint64_t image, uint64_t id, int sample,
                          uint64_t seed, int replay, uint64_t n)
{
	const pmtx_explore_config *c = x->c;
	const struct sim_snap *snap = (const void *)ch->snap;
	uint64_t here = ch->h->point;
	char msg[300];
	image_build(&x->img[level], snap, ch->durable, id, sample, seed);
	if (replay)
		describe(snap, ch->durable, x->img[level].map);
	if (replay && c->save && (!c->replay_rpoint || level))
		save_image(x, x->img[level].path, c->save);
	if (explore_check_image(&x->env, b, x->img[level].path, &x->scratch,
	                        msg, sizeof(msg))) {
		if (!replay && c->save && !x->res->violations)
			save_first(x, ch, level, id, sample, seed);
		violation(x, msg, level ? point : here, level ? image : id,
		          level ? here : 0, level ? id : 0);
	}
	else if (replay)
		fprintf(stderr, "image passes every check\n");
	if (level) {
		x->res->recovery_images++;
		return;
	}
	x->res->images++;
	int pick = replay ? c->replay_rpoint != 0 : d2_pick(id, n, c->depth2);
	if (pick && !x->stop) {
		/* the check recovered the file: crash recovery from the
		 * image itself */
		image_build(&x->img[level], snap, ch->durable, id, sample,
		            seed);
		if (c->process_crash)
			process_crash(x, snap);
		explore_d2(x, b, here, id);
	}
}

/* Check the images of the crash state in ch (level 0: the workload; 1:
 * recovery of image (point, image)). */
static void explore_point(struct explorer *x, struct chan *ch, int level,
                          const struct explore_bounds *b, uint64_t point,
                          uint64_t image)
{
	const pmtx_explore_config *c = x->c;
	const struct sim_snap *snap = (const void *)ch->snap;
	uint64_t seed = pmtx_mix64(c->seed ^ pmtx_mix64(ch->h->point));
	int sample;
	uint64_t n = plan(sim_image_count(snap),
	                  level ? c->d2images : c->images, &sample);
	uint64_t only = level ? c->replay_rimage : c->replay_image;
	int replay = level ? c->replay_rpoint != 0 : c->replay_point != 0;
	for (uint64_t id = replay ? only : 0; id < n && !x->stop; id++) {
		explore_image(x, ch, level, b, point, image, id, sample, seed,
		              replay, n);
		progress(x, 0);
		if (replay)
			break;
	}
}

/* Depth 2: crash the recovery of image (point, image), now in img[0]. */
static int explore_d2(struct explorer *x, const struct explore_bounds *b,
                      uint64_t point, uint64_t image)
{
	struct chan *ch = &x->ch[1];
	int rc = spawn(x, ch, 1, x->img[0].path, 0);
	if (rc)
		return rc;
	while ((rc = next_point(ch)) == 1) {
		int want = !x->c->replay_rpoint ||
		           ch->h->point == x->c->replay_rpoint;
		if (want && !x->stop) {
			x->res->recovery_points++;
			explore_point(x, ch, 1, b, point, image);
		}
		resume(ch, x->stop);
	}
	if (rc) {
		char why[320];
		snprintf(why, sizeof(why), "recovery under the sim failed: %s",
		         ch->h->msg);
		violation(x, why, point, image, 0, 0);
	}
	return 0;
}

/* Which crash points to visit: all, or n spread over 1..total. */
static int selected(const pmtx_explore_config *c, uint64_t point,
                    uint64_t total)
{
	if (c->replay_point)
		return point == c->replay_point;
	if (c->points < 0 || (uint64_t)c->points >= total)
		return 1;
	for (long j = 0; j < c->points; j++)
		if (1 + (uint64_t)j * total / (uint64_t)c->points == point)
			return 1;
	return 0;
}

/* A run of the workload with no crash: how many crash points it has. */
static int count_points(struct explorer *x, uint64_t *total)
{
	int rc = make_region(x);
	if (rc)
		return rc;
	struct chan *ch = &x->ch[0];
	if ((rc = spawn(x, ch, 0, x->region, 1)))
		return rc;
	while ((rc = next_point(ch)) == 1)
		resume(ch, 0);
	*total = ch->h->barriers + 1;
	return rc;
}

/* Visit the crash points of a run of the workload. */
static void explore_run(struct explorer *x, uint64_t total)
{
	struct chan *ch = &x->ch[0];
	struct explore_bounds b;
	int rc;
	while ((rc = next_point(ch)) == 1) {
		if (!x->stop && selected(x->c, ch->h->point, total)) {
			b = ch->h->b;
			x->res->points++;
			explore_point(x, ch, 0, &b, 0, 0);
		}
		resume(ch, x->stop);
	}
	x->res->unflushed_at_commit = ch->h->cs.unflushed_at_commit;
	x->res->dirty_at_commit = ch->h->cs.dirty_at_commit;
	x->res->redundant_flushes = ch->h->cs.redundant_flushes;
	if (rc && !x->stop) {
		char why[320];
		snprintf(why, sizeof(why), "the workload failed under the sim: "
		         "%s", ch->h->msg);
		violation(x, why, ch->h->point, 0, 0, 0);
	}
}

static int explore(struct explorer *x)
{
	uint64_t total = 0;
	int rc = count_points(x, &total);
	if (rc) {
		const char *why = x->ch[0].h->msg[0] ? x->ch[0].h->msg
		                                     : pmtx_strerror(rc);
		fprintf(stderr, "%s: the workload failed without any crash: "
		        "%s\n", x->prog, why);
		return rc;
	}
	x->res->crash_points = total;
	x->total_points = x->c->points < 0 || (uint64_t)x->c->points > total
	                          ? total
	                          : (uint64_t)x->c->points;
	if (x->c->replay_point)
		x->total_points = 1;
	if ((rc = make_region(x)))
		return rc;
	if ((rc = spawn(x, &x->ch[0], 0, x->region, 0)))
		return rc;
	explore_run(x, total);
	return 0;
}

/* Shared memory, image files and scratch space of one exploration. */
static int setup(struct explorer *x)
{
	const pmtx_explore_workload *w = x->env.workload;
	int pid = (int)getpid();
	const char *dir = x->c->dir ? x->c->dir : "/dev/shm";
	snprintf(x->region, sizeof(x->region), "%s/pmtx-ct-%d.region", dir,
	         pid);
	snprintf(x->img[0].path, sizeof(x->img[0].path), "%s/pmtx-ct-%d.img",
	         dir, pid);
	snprintf(x->img[1].path, sizeof(x->img[1].path), "%s/pmtx-ct-%d.img2",
	         dir, pid);
	int rc = explore_scratch_init(&x->scratch, w->max_words
	                                                   ? w->max_words
	                                                   : EXPLORE_MAX_WORDS);
	for (int i = 0; i < 2 && !rc; i++)
		rc = chan_open(&x->ch[i], x->cap);
	for (int i = 0; i < 2 && !rc; i++)
		rc = image_open(&x->img[i], x->cap);
	return rc;
}

static void teardown(struct explorer *x)
{
	for (int i = 0; i < 2; i++) {
		image_close(&x->img[i], x->cap);
		chan_close(&x->ch[i]);
	}
	unlink(x->region);
	explore_scratch_free(&x->scratch);
}

int pmtx_explore_run(const pmtx_explore_config *c, pmtx_explore_result *res)
{
	struct explorer x = {.c = c, .res = res};
	memset(res, 0, sizeof(*res));
	int rc = validate(c);
	if (rc)
		return rc;
	if (!pmtx_explore_applies(c->workload, c->runtime))
		return PMTX_E_UNSUPPORTED;
	x.env = (pmtx_explore_env){c->workload, c->seed, c->runtime, c->ntx};
	x.prog = c->prog ? c->prog : program_invocation_short_name;
	x.size = explore_region_size(c->workload, c->runtime);
	x.cap = MAX(x.size, c->workload->max_size);
	x.img[0].fd = x.img[1].fd = -1;
	signal(SIGPIPE, SIG_IGN); /* a child that ended: EPIPE, then EOF */
	rc = setup(&x);
	x.t0 = now_ns();
	if (!rc)
		rc = explore(&x);
	res->seconds = (double)(now_ns() - x.t0) / 1e9;
	progress(&x, 1);
	if (c->progress)
		fputc('\n', stderr);
	teardown(&x);
	return rc;
}
