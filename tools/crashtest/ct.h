/*
 * ct.h - the crash-state explorer (pmtx crashtest) and its workloads.
 *
 * The explorer runs a workload in a child process over the sim backend
 * (src/persist/sim.h). At every crash point (just before each barrier,
 * and at the end) the child publishes the crash state and waits; the
 * parent builds crash images from it, opens each (recovery), checks it,
 * and lets the child go on. See explore.c for the checks.
 */
#ifndef PMTX_CT_H
#define PMTX_CT_H

#include <stddef.h>
#include <stdint.h>

#include "pmtx.h"

#define CT_RT_CLTX ((pmtx_runtime)100) /* cache-line transactions */
#define CT_MAX_THREADS 2

/* What a workload knows of its run. */
struct ct_env {
	uint64_t seed;
	pmtx_runtime rt;
	unsigned ntx; /* transactions per thread */
};

/* A workload: deterministic from env->seed. Thread t's transactions are
 * numbered 0..ntx-1; the model gives the state its data must be in after
 * the first k of them (an aborted transaction changes nothing). */
struct ct_workload {
	const char *name;
	const char *help;
	unsigned nthreads;
	size_t root_size;
	int (*applies)(pmtx_runtime rt);
	/* Fill a fresh region's data (no crash points are taken here). */
	int (*setup)(const struct ct_env *e, pmtx_region *r);
	/* Run transaction i of thread t: 0, or a status. */
	int (*run)(const struct ct_env *e, pmtx_region *r, unsigned t,
	           uint64_t i);
	/* Thread t's data as a vector of words (at most max); returns the
	 * count, or (size_t)-1 if the data is malformed (msg says why). */
	size_t (*observe)(const struct ct_env *e, pmtx_region *r, unsigned t,
	                  uint64_t *out, size_t max, char *msg, size_t len);
	/* The same vector as the model has it after k transactions. */
	size_t (*model)(const struct ct_env *e, unsigned t, uint64_t k,
	                uint64_t *out, size_t max);
	/* Call fn for every heap block reachable from the root (NULL: the
	 * workload allocates nothing). */
	int (*walk)(const struct ct_env *e, pmtx_region *r,
	            int (*fn)(pmtx_off off, void *arg), void *arg);
};

extern const struct ct_workload *const ct_workloads[];
const struct ct_workload *ct_workload_find(const char *name);

struct ct_config {
	const struct ct_workload *wl;
	struct ct_env env;
	pmtx_domain domain;
	long points;        /* crash points to visit: -1 all, else N spread */
	uint64_t images;    /* per point: 0 = auto (all if <= 2^16, else
	                     * 10,000 samples); N = all if <= N, else N */
	unsigned depth2;    /* images per point also crashed in recovery */
	uint64_t d2images;  /* images per recovery crash point */
	const char *dir;    /* where the region and images go */
	int progress;       /* progress bar on stderr */
	int checks;         /* pmemcheck-like checks in the workload run */
	long stop_after;    /* stop after this many violations (0: never) */
	int quiet;          /* no violation lines */
	/* replay one image: point > 0 */
	uint64_t rep_point, rep_image, rep_rpoint, rep_rimage;
	const char *save;   /* replay: copy the image here before recovery */
};

struct ct_result {
	uint64_t points, images, d2points, d2images, violations;
	uint64_t barriers;  /* crash points the workload has */
	double seconds;
	char first[512];    /* the first violation, with its reproducer */
	uint64_t unflushed, dirty_at_commit, redundant_flushes;
};

void ct_config_init(struct ct_config *c);
/* Explore; 0 when the exploration ran (violations are in res), else a
 * status for a failure of the explorer itself. */
int ct_run(const struct ct_config *c, struct ct_result *res);
/* "undo", ..., "cltx" */
const char *ct_runtime_name(pmtx_runtime rt);
int ct_runtime_parse(const char *s, pmtx_runtime *out);

#endif
