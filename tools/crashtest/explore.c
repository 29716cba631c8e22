/*
 * explore.c - the crash-state explorer (ct.h).
 *
 * Design
 * ------
 * The parent makes a fresh region and fills it (setup), then forks a
 * child that opens the region over the sim backend and runs the workload.
 * At every crash point (just before each barrier, and once at the end)
 * the child's sim serialises the crash state into shared memory, writes a
 * byte to the parent and waits. The parent, a clean process, builds crash
 * images from that state, one at a time, into an image file, and for each
 *   1. opens it: recovery must succeed;
 *   2. checks failure atomicity: each thread's data equals the model after
 *      some k of its transactions, done <= k <= started, where `done`
 *      counts the transactions whose commit (or intended abort) had
 *      returned before the crash point and `started` those begun;
 *   3. runs pmtx_heap_check;
 *   4. checks for leaks: the blocks pmtx_heap_walk reports are exactly the
 *      blocks the workload's walker reaches from the root;
 *   5. closes and opens it again: the second open must repair nothing (no
 *      barrier, no flush), or a later crash would repair again over newer
 *      data.
 * Depth 2: for some images, a second child opens the image over the sim
 * (so recovery runs under the sim) and the same protocol crashes recovery
 * at each of its barriers; those images must pass the same checks against
 * the same bounds.
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
 *  E4. Images are enumerated when the count allows (ct.h), otherwise
 *      sampled with a seed derived from (seed, point).
 *  E5. The workload's region truncates redo-async logs lazily
 *      (PMTX_TRUNC_LAZY): with no truncation thread, a single-threaded
 *      workload reaches the same barriers in the same order on every run,
 *      which E3 needs. Truncations are then as late as they can be:
 *      retired only when a descriptor or an object is needed again.
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

#include "ct.h"
#include "common/mutant.h"
#include "common/util.h"
#include "persist/sim.h"
#include "trace/trace.h"

#define SNAP_CAP (64ull << 20)
#define REGION_SIZE (1u << 20)
#define MAX_VEC 8192
#define AUTO_ENUM (1ull << 16)
#define AUTO_SAMPLES 10000ull

/* Shared between the explorer and one child. */
struct shm_hdr {
	uint64_t point;
	uint64_t done[CT_MAX_THREADS], started[CT_MAX_THREADS];
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

struct explorer {
	const struct ct_config *c;
	struct ct_result *res;
	char region[256], img[2][256];
	uint8_t *imgmap[2];
	struct chan ch[2]; /* 0: the workload, 1: recovery (depth 2) */
	uint64_t t0, last_progress, total_points;
	int stop;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *ct_runtime_name(pmtx_runtime rt)
{
	return rt == CT_RT_CLTX ? "cltx" : pmtx_runtime_name(rt);
}

int ct_runtime_parse(const char *s, pmtx_runtime *out)
{
	if (!strcmp(s, "cltx")) {
		*out = CT_RT_CLTX;
		return 0;
	}
	return pmtx_runtime_parse(s, out);
}

void ct_config_init(struct ct_config *c)
{
	memset(c, 0, sizeof(*c));
	c->env.seed = 1;
	c->env.rt = PMTX_RT_UNDO;
	c->env.ntx = 12;
	c->domain = PMTX_PDOM1;
	c->points = -1;
	c->depth2 = 1;
	c->d2images = 16;
	c->dir = "/dev/shm";
}

/* ---- shared memory and files ---- */

static int chan_open(struct chan *ch)
{
	size_t len = 4096 + SNAP_CAP + REGION_SIZE;
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

static int map_image_file(const char *path, uint8_t **out)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return errno;
	int rc = ftruncate(fd, REGION_SIZE) ? errno : 0;
	void *p = rc ? MAP_FAILED
	             : mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE,
	                    MAP_SHARED, fd, 0);
	if (!rc && p == MAP_FAILED)
		rc = errno;
	close(fd);
	if (!rc)
		*out = p;
	return rc;
}

/* A fresh region with the workload's initial data, closed again. */
static int make_region(struct explorer *x)
{
	const struct ct_config *c = x->c;
	pmtx_options o;
	pmtx_region *r;
	pmtx_options_init(&o);
	o.layout = "crashtest";
	o.root_size = c->wl->root_size;
	o.ndesc = 8;
	o.domain = c->domain;
	o.backend = PMTX_BACKEND_EMULATED;
	o.barrier_ns = 0;
	o.truncation = PMTX_TRUNC_LAZY; /* E5: deterministic crash points */
	unlink(x->region);
	int rc = pmtx_create(x->region, REGION_SIZE, &o, &r);
	if (rc)
		return rc;
	rc = c->wl->setup(&c->env, r);
	int crc = pmtx_close(r);
	return rc ? rc : crc;
}

/* ---- the child side ---- */

struct child {
	const struct ct_config *c;
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

static void *child_thread(void *arg)
{
	struct child *k = arg;
	const struct ct_config *c = k->c;
	struct shm_hdr *h = k->ch->h;
	for (uint64_t i = 0; i < c->env.ntx; i++) {
		__atomic_store_n(&h->started[k->t], i + 1, __ATOMIC_SEQ_CST);
		int rc = c->wl->run(&c->env, k->r, k->t, i);
		if (rc) {
			h->status = rc;
			snprintf(h->msg, sizeof(h->msg),
			         "workload transaction %llu of thread %u: %s",
			         (unsigned long long)i, k->t, pmtx_strerror(rc));
			_exit(3);
		}
		__atomic_store_n(&h->done[k->t], i + 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static struct sim *child_sim(const struct ct_config *c, struct chan *ch)
{
	struct sim *s = sim_new(REGION_SIZE, ch->durable);
	if (!s)
		_exit(3);
	sim_set_point_fn(s, publish, ch);
	sim_set_checks(s, c->checks && !ch->h->count_only);
	persist_override_ops(&sim_ops, s);
	trace_set_sink(sim_trace_sink, s);
	return s;
}

static pmtx_region *child_open(const struct ct_config *c, struct chan *ch,
                               const char *path)
{
	pmtx_options o;
	pmtx_region *r;
	pmtx_options_init(&o);
	o.domain = c->domain;
	o.backend = PMTX_BACKEND_EMULATED;
	o.barrier_ns = 0;
	o.truncation = PMTX_TRUNC_LAZY;
	int rc = pmtx_open(path, &o, &r);
	if (rc) {
		ch->h->status = rc;
		snprintf(ch->h->msg, sizeof(ch->h->msg), "open: %s (%s)",
		         pmtx_strerror(rc), pmtx_errmsg());
		_exit(3);
	}
	return r;
}

static void child_workload(const struct ct_config *c, struct chan *ch,
                           const char *path)
{
	struct sim *s = child_sim(c, ch);
	pmtx_region *r = child_open(c, ch, path);
	struct child k[CT_MAX_THREADS];
	pthread_t th[CT_MAX_THREADS];
	for (unsigned t = 0; t < c->wl->nthreads; t++) {
		k[t] = (struct child){c, ch, r, t};
		if (c->wl->nthreads == 1)
			child_thread(&k[t]);
		else if (pthread_create(&th[t], NULL, child_thread, &k[t]))
			_exit(3);
	}
	for (unsigned t = 0; c->wl->nthreads > 1 && t < c->wl->nthreads; t++)
		pthread_join(th[t], NULL);
	/* The truncations still waiting (E5) are crash points too. */
	if (pmtx_drain(r))
		_exit(3);
	sim_final(s);
	ch->h->barriers = sim_barriers(s);
	sim_check_stats(s, &ch->h->cs);
	_exit(0);
}

/* Depth 2: recovery of an image, under the sim. */
static void child_recovery(const struct ct_config *c, struct chan *ch,
                           const char *path)
{
	struct sim *s = child_sim(c, ch);
	pmtx_region *r = child_open(c, ch, path);
	sim_final(s);
	(void)r;
	_exit(0);
}

static int spawn(struct explorer *x, struct chan *ch, int recovery,
                 const char *path, int count_only)
{
	int a[2], b[2];
	if (pipe(a) || pipe(b))
		return errno;
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
			child_recovery(x->c, ch, path);
		child_workload(x->c, ch, path);
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

/* ---- checks on one image ---- */

struct offset_set {
	pmtx_off v[4096];
	size_t n;
	int overflow;
};

static int collect(pmtx_off off, void *arg)
{
	struct offset_set *s = arg;
	if (s->n == sizeof(s->v) / sizeof(s->v[0])) {
		s->overflow = 1;
		return 1;
	}
	s->v[s->n++] = off;
	return 0;
}

static int collect_walk(pmtx_off off, size_t usable, void *arg)
{
	(void)usable;
	return collect(off, arg);
}

static int cmp_off(const void *a, const void *b)
{
	pmtx_off x = *(const pmtx_off *)a, y = *(const pmtx_off *)b;
	return x < y ? -1 : x > y;
}

static int check_leaks(const struct ct_config *c, pmtx_region *r, char *msg,
                       size_t len)
{
	static struct offset_set heap, reach;
	heap.n = reach.n = 0;
	heap.overflow = reach.overflow = 0;
	pmtx_heap_walk(r, collect_walk, &heap);
	if (c->wl->walk && c->wl->walk(&c->env, r, collect, &reach)) {
		snprintf(msg, len, "leak check: the walk from the root failed");
		return 1;
	}
	qsort(heap.v, heap.n, sizeof(pmtx_off), cmp_off);
	qsort(reach.v, reach.n, sizeof(pmtx_off), cmp_off);
	for (size_t i = 0, j = 0; i < heap.n || j < reach.n;) {
		if (j == reach.n || (i < heap.n && heap.v[i] < reach.v[j])) {
			snprintf(msg, len, "leak: block 0x%llx is allocated "
			         "but unreachable",
			         (unsigned long long)heap.v[i]);
			return 1;
		}
		if (i == heap.n || reach.v[j] < heap.v[i]) {
			snprintf(msg, len, "block 0x%llx is reachable but "
			         "not allocated",
			         (unsigned long long)reach.v[j]);
			return 1;
		}
		i++, j++;
	}
	return 0;
}

static int check_atomic(const struct ct_config *c, const struct shm_hdr *h,
                        pmtx_region *r, char *msg, size_t len)
{
	static uint64_t got[MAX_VEC], want[MAX_VEC];
	for (unsigned t = 0; t < c->wl->nthreads; t++) {
		size_t n = c->wl->observe(&c->env, r, t, got, MAX_VEC, msg,
		                          len);
		if (n == (size_t)-1)
			return 1;
		if (n == 0) { /* never a pass by default */
			snprintf(msg, len, "workload %s: thread %u's data does "
			         "not fit the checker's vector", c->wl->name, t);
			return 1;
		}
		int ok = 0;
		for (uint64_t k = h->done[t]; !ok && k <= h->started[t]; k++) {
			size_t m = c->wl->model(&c->env, t, k, want, MAX_VEC);
			ok = m == n && !memcmp(got, want, n * sizeof(*got));
		}
		if (!ok) {
			size_t m = c->wl->model(&c->env, t, h->done[t], want,
			                        MAX_VEC), j = 0;
			while (j < n && j < m && got[j] == want[j])
				j++;
			snprintf(msg, len, "not atomic: thread %u's data is no "
			         "state after %llu..%llu transactions (word %zu "
			         "is 0x%llx, 0x%llx after %llu)", t,
			         (unsigned long long)h->done[t],
			         (unsigned long long)h->started[t], j,
			         (unsigned long long)(j < n ? got[j] : 0),
			         (unsigned long long)(j < m ? want[j] : 0),
			         (unsigned long long)h->done[t]);
			return 1;
		}
	}
	return 0;
}

/* Replay: keep a copy of the crash image, before recovery changes it. */
static void save_image(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
	char buf[65536];
	size_t n;
	while (out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			break;
	if (!out || ferror(in) || fclose(out))
		fprintf(stderr, "pmtx crashtest: cannot save the image to %s\n",
		        to);
	else
		fprintf(stderr, "image saved to %s\n", to);
	if (in)
		fclose(in);
}

/* Check 5: recovery finished its work. Opening the recovered region again
 * must repair nothing (recovery.c R2: not a barrier, not a flush); else a
 * later crash would repair it again, over data written since. */
static int check_reopen(const char *path, const pmtx_options *o, char *msg,
                        size_t len)
{
	pmtx_counters a, b;
	pmtx_region *r;
	pmtx_counters_get(&a);
	int rc = pmtx_open(path, o, &r);
	pmtx_counters_get(&b);
	if (rc) {
		snprintf(msg, len, "second open failed: %s (%s)",
		         pmtx_strerror(rc), pmtx_errmsg());
		return 1;
	}
	pmtx_close(r);
	if (b.barriers == a.barriers && b.flushes == a.flushes)
		return 0;
	snprintf(msg, len, "recovery left work: reopening the recovered "
	         "region made %llu barriers and %llu flushes",
	         (unsigned long long)(b.barriers - a.barriers),
	         (unsigned long long)(b.flushes - a.flushes));
	return 1;
}

/* 0 if the image at path passes every check, else 1 with msg. */
static int check_image(const struct ct_config *c, const struct shm_hdr *h,
                       const char *path, char *msg, size_t len)
{
	pmtx_options o;
	pmtx_region *r;
	pmtx_heap_stats st;
	pmtx_options_init(&o);
	o.domain = PMTX_PDOM2;
	o.backend = PMTX_BACKEND_EMULATED;
	o.barrier_ns = 0;
	int rc = pmtx_open(path, &o, &r);
	if (rc) {
		snprintf(msg, len, "recovery failed: %s (%s)",
		         pmtx_strerror(rc), pmtx_errmsg());
		return 1;
	}
	int bad = check_atomic(c, h, r, msg, len);
	if (!bad && pmtx_heap_check(r, &st)) {
		snprintf(msg, len, "heap check: %s", st.first_error);
		bad = 1;
	}
	if (!bad)
		bad = check_leaks(c, r, msg, len);
	rc = pmtx_close(r);
	if (!bad && rc) {
		snprintf(msg, len, "close: %s", pmtx_strerror(rc));
		bad = 1;
	}
	if (!bad)
		bad = check_reopen(path, &o, msg, len);
	return bad;
}

/* ---- exploring ---- */

static void progress(struct explorer *x, int force)
{
	uint64_t t = now_ns();
	if (!x->c->progress || (!force && t - x->last_progress < 200000000ull))
		return;
	x->last_progress = t;
	double s = (double)(t - x->t0) / 1e9;
	uint64_t done = x->res->points, all = x->total_points;
	int w = 30, fill = all ? (int)(w * done / all) : 0;
	double eta = done && all > done ? s / (double)done * (double)(all - done)
	                                : 0;
	fprintf(stderr, "\r[%.*s%*s] point %llu/%llu  images %llu (%.0f/s)  "
	        "violations %llu  eta %.0fs ", fill,
	        "##############################", w - fill, "",
	        (unsigned long long)done, (unsigned long long)all,
	        (unsigned long long)(x->res->images + x->res->d2images),
	        s > 0 ? (double)(x->res->images + x->res->d2images) / s : 0,
	        (unsigned long long)x->res->violations, eta);
}

static void reproducer(const struct explorer *x, char *buf, size_t len,
                       uint64_t point, uint64_t image, uint64_t rpoint,
                       uint64_t rimage)
{
	const struct ct_config *c = x->c;
	unsigned m = pmtx__mutant_active(); /* a planted bug: name it */
	int n = snprintf(buf, len, "%s%s%spmtx%s crashtest --workload %s "
	                 "--runtime %s --domain %s --seed %llu --ntx %u "
	                 "--images %llu --point %llu --image %llu",
	                 m ? "PMTX_MUTANT=" : "",
	                 m ? pmtx__mutant_name(m) : "", m ? " " : "",
	                 m ? "-mut" : "", c->wl->name,
	                 ct_runtime_name(c->env.rt), pmtx_domain_name(c->domain),
	                 (unsigned long long)c->env.seed, c->env.ntx,
	                 (unsigned long long)c->images,
	                 (unsigned long long)point, (unsigned long long)image);
	if (rpoint && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n,
		         " --d2images %llu --rpoint %llu --rimage %llu",
		         (unsigned long long)c->d2images,
		         (unsigned long long)rpoint, (unsigned long long)rimage);
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
		        "%s\n", x->c->progress ? "\n" : "", x->c->wl->name,
		        ct_runtime_name(x->c->env.rt),
		        pmtx_domain_name(x->c->domain),
		        (unsigned long long)point, (unsigned long long)image,
		        rpoint ? " (crash in recovery)" : "", line);
	if (x->c->stop_after && x->res->violations >= (uint64_t)x->c->stop_after)
		x->stop = 1;
}

/* Replay: say which lines of the image are not the durable image. */
static void describe(const struct sim_snap *snap, const uint8_t *durable,
                     const uint8_t *img)
{
	fprintf(stderr, "crash state: %u lines with %llu pending stores, "
	        "%llu images\n", snap->nlines,
	        (unsigned long long)snap->nstores,
	        (unsigned long long)sim_image_count(snap));
	if (snap->domain == PMTX_PDOM2) {
		const struct sim_gstore *g = (const void *)(snap + 1);
		for (uint64_t j = 0; j < snap->nstores && j < 12; j++)
			fprintf(stderr, "  store %llu: off 0x%llx = 0x%llx\n",
			        (unsigned long long)j,
			        (unsigned long long)g[j].line * 64 + g[j].word * 8,
			        (unsigned long long)g[j].v);
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

/* How many images a point is given, and whether they are enumerated. */
static uint64_t plan(uint64_t count, uint64_t cap, int *sample)
{
	uint64_t lim = cap ? cap : AUTO_ENUM;
	*sample = count > lim;
	return *sample ? (cap ? cap : AUTO_SAMPLES) : count;
}

static int explore_d2(struct explorer *x, const struct shm_hdr *h,
                      uint64_t point, uint64_t image);

/* Image id is one of the k spread over 0..n-1 that are crashed again. */
static int d2_pick(uint64_t id, uint64_t n, unsigned k)
{
	for (unsigned j = 0; j < k && j < n; j++)
		if (j * n / MIN(k, n) == id)
			return 1;
	return 0;
}

/* Check the images of the crash state in ch (level 0: the workload; 1:
 * recovery of image (point, image)). */
static void explore_point(struct explorer *x, struct chan *ch, int level,
                          const struct shm_hdr *bounds, uint64_t point,
                          uint64_t image)
{
	const struct ct_config *c = x->c;
	const struct sim_snap *snap = (const void *)ch->snap;
	uint64_t here = ch->h->point, seed = pmtx_mix64(c->env.seed ^ pmtx_mix64(here));
	int sample;
	uint64_t n = plan(sim_image_count(snap),
	                  level ? c->d2images : c->images, &sample);
	uint64_t only = level ? c->rep_rimage : c->rep_image;
	int replay = level ? c->rep_rpoint != 0 : c->rep_point != 0;
	char msg[300];
	for (uint64_t id = replay ? only : 0; id < n && !x->stop; id++) {
		sim_image(snap, ch->durable, id, sample, seed, x->imgmap[level]);
		if (replay)
			describe(snap, ch->durable, x->imgmap[level]);
		if (replay && c->save && (!c->rep_rpoint || level))
			save_image(x->img[level], c->save);
		if (check_image(c, bounds, x->img[level], msg, sizeof(msg)))
			violation(x, msg, level ? point : here,
			          level ? image : id, level ? here : 0,
			          level ? id : 0);
		else if (replay)
			fprintf(stderr, "image passes every check\n");
		if (level) {
			x->res->d2images++;
		} else {
			x->res->images++;
			int pick = replay ? c->rep_rpoint != 0
			                  : d2_pick(id, n, c->depth2);
			if (pick && !x->stop) {
				/* check_image recovered the file: crash
				 * recovery from the image itself */
				sim_image(snap, ch->durable, id, sample, seed,
				          x->imgmap[level]);
				explore_d2(x, bounds, here, id);
			}
		}
		progress(x, 0);
		if (replay)
			break;
	}
}

/* Depth 2: crash the recovery of image (point, image), now in img[0]. */
static int explore_d2(struct explorer *x, const struct shm_hdr *h,
                      uint64_t point, uint64_t image)
{
	struct chan *ch = &x->ch[1];
	int rc = spawn(x, ch, 1, x->img[0], 0);
	if (rc)
		return rc;
	while ((rc = next_point(ch)) == 1) {
		int want = !x->c->rep_rpoint || ch->h->point == x->c->rep_rpoint;
		if (want && !x->stop) {
			x->res->d2points++;
			explore_point(x, ch, 1, h, point, image);
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
static int selected(const struct ct_config *c, uint64_t point, uint64_t total)
{
	if (c->rep_point)
		return point == c->rep_point;
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

static int explore(struct explorer *x)
{
	uint64_t total = 0;
	int rc = count_points(x, &total);
	if (rc) {
		fprintf(stderr, "pmtx crashtest: the workload failed without "
		        "any crash: %s\n", x->ch[0].h->msg);
		return rc;
	}
	x->res->barriers = total;
	x->total_points = x->c->points < 0 || (uint64_t)x->c->points > total
	                          ? total
	                          : (uint64_t)x->c->points;
	if (x->c->rep_point)
		x->total_points = 1;
	if ((rc = make_region(x)))
		return rc;
	struct chan *ch = &x->ch[0];
	if ((rc = spawn(x, ch, 0, x->region, 0)))
		return rc;
	static struct shm_hdr bounds;
	while ((rc = next_point(ch)) == 1) {
		if (!x->stop && selected(x->c, ch->h->point, total)) {
			bounds = *ch->h;
			x->res->points++;
			explore_point(x, ch, 0, &bounds, 0, 0);
		}
		resume(ch, x->stop);
	}
	x->res->unflushed = ch->h->cs.unflushed_at_commit;
	x->res->dirty_at_commit = ch->h->cs.dirty_at_commit;
	x->res->redundant_flushes = ch->h->cs.redundant_flushes;
	if (rc && !x->stop) {
		char why[320];
		snprintf(why, sizeof(why), "the workload failed under the sim: "
		         "%s", ch->h->msg);
		violation(x, why, ch->h->point, 0, 0, 0);
	}
	return 0;
}

int ct_run(const struct ct_config *c, struct ct_result *res)
{
	struct explorer x = {.c = c, .res = res};
	memset(res, 0, sizeof(*res));
	if (!c->wl || !c->wl->applies(c->env.rt))
		return PMTX_E_UNSUPPORTED;
	signal(SIGPIPE, SIG_IGN); /* a child that ended: EPIPE, then EOF */
	int pid = (int)getpid();
	snprintf(x.region, sizeof(x.region), "%s/pmtx-ct-%d.region", c->dir,
	         pid);
	snprintf(x.img[0], sizeof(x.img[0]), "%s/pmtx-ct-%d.img", c->dir, pid);
	snprintf(x.img[1], sizeof(x.img[1]), "%s/pmtx-ct-%d.img2", c->dir,
	         pid);
	int rc = chan_open(&x.ch[0]);
	if (!rc)
		rc = chan_open(&x.ch[1]);
	if (!rc)
		rc = map_image_file(x.img[0], &x.imgmap[0]);
	if (!rc)
		rc = map_image_file(x.img[1], &x.imgmap[1]);
	x.t0 = now_ns();
	if (!rc)
		rc = explore(&x);
	res->seconds = (double)(now_ns() - x.t0) / 1e9;
	progress(&x, 1);
	if (c->progress)
		fputc('\n', stderr);
	for (int i = 0; i < 2; i++) {
		if (x.imgmap[i])
			munmap(x.imgmap[i], REGION_SIZE);
		unlink(x.img[i]);
		chan_close(&x.ch[i]);
	}
	unlink(x.region);
	return rc;
}
