/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmdline.c - pmtx_explore_main: a crash-exploring command over a set of
 * workloads (`pmtx crashtest` is this over the built-in ones).
 *
 *   PROG [--workload W] [--runtime R] [--domain D]
 *        [--points all|N] [--images N] [--seed S] [--ntx N]
 *        [--depth2 N] [--d2images N] [--checks] [--json]
 *        [--stop-after N] [--min-images N] [--no-progress] [--quiet]
 *        [--point P --image I [--rpoint Q --rimage J]] [--save FILE]
 *
 * With no --workload (or --runtime) every workload runs under every
 * runtime it applies to. --images 0 means: every image when a point has
 * at most 65,536, else 10,000 samples. The default run takes every crash
 * point with up to 64 images each. --point/--image replay one image (the
 * reproducer printed with a violation). --save FILE keeps the replayed
 * image, or without --point the first violating one, before recovery.
 *
 * Invariants
 *  M1. The output is a contract: one line (or JSON object) per run in a
 *      fixed format, VIOLATION lines and reproducers on stderr; scripts
 *      and tests parse them (tests/planted_bug.sh).
 *  M2. Exit status: 0 no violation, 1 violations found, 2 usage error,
 *      3 the explorer itself failed.
 *  M3. Every option is checked before anything runs: a bad one is a
 *      usage error, never a partial exploration.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "explore/explore.h"

/* In the order runs are made; all_rt[k] is the runtime of mask bit k
 * (pmtx_explore.h), which usage_to relies on. */
static const pmtx_runtime all_rt[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                      PMTX_RT_REDO_ASYNC, PMTX_RT_COW,
                                      PMTX_EXPLORE_RT_CLTX, PMTX_RT_AUTO,
                                      PMTX_RT_TWIN};

struct args {
	pmtx_explore_config c;
	const char *prog;
	const pmtx_explore_workload *const *wls;
	size_t nwls;
	const char *workload, *runtime;
	int json, help;
	uint64_t min_images; /* fail if fewer images were explored */
};

static void usage_to(const struct args *a, FILE *f)
{
	unsigned rts = 0;
	fprintf(f,
	        "usage: %s [--workload W] [--runtime R] [--domain D]\n"
	        "         [--points all|N] [--images N] [--seed S] [--ntx N]\n"
	        "         [--depth2 N] [--d2images N] [--checks] [--json]\n"
	        "         [--stop-after N] [--min-images N] [--no-progress]"
	        " [--quiet]\n"
	        "         [--process-crash] [--reopen]\n"
	        "         [--point P --image I [--rpoint Q --rimage J]]"
	        " [--save FILE]\n"
	        "workloads:", a->prog);
	for (size_t i = 0; i < a->nwls; i++) {
		fprintf(f, " %s", a->wls[i]->name);
		rts |= explore_runtimes(a->wls[i]);
	}
	fprintf(f, "\nruntimes:");
	for (size_t k = 0; k < ARRAY_SIZE(all_rt); k++)
		if (rts & (1u << k))
			fprintf(f, " %s", pmtx_explore_runtime_name(all_rt[k]));
	fprintf(f, "\ndomains: pdom0 pdom1 pdom2\n");
}

static int usage(const struct args *a)
{
	usage_to(a, stderr);
	return 2;
}

/* --help: the usage, then each workload with its help line. */
static int help(const struct args *a)
{
	usage_to(a, stdout);
	printf("\n");
	for (size_t i = 0; i < a->nwls; i++) {
		const pmtx_explore_workload *w = a->wls[i];
		printf("  %-10s %s\n", w->name, w->help ? w->help : "");
	}
	return 0;
}

static int parse_u64(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long x = strtoull(v, &end, 10);
	if (!*v || *end || *v == '-')
		return -1;
	*out = x;
	return 0;
}

/* The options whose number is stored as it is. */
static const struct {
	const char *name;
	size_t off; /* of a uint64_t in pmtx_explore_config */
} u64_opts[] = {
	{"--images", offsetof(pmtx_explore_config, images)},
	{"--seed", offsetof(pmtx_explore_config, seed)},
	{"--d2images", offsetof(pmtx_explore_config, d2images)},
	{"--point", offsetof(pmtx_explore_config, replay_point)},
	{"--image", offsetof(pmtx_explore_config, replay_image)},
	{"--rpoint", offsetof(pmtx_explore_config, replay_rpoint)},
	{"--rimage", offsetof(pmtx_explore_config, replay_rimage)},
};

/* An option whose value is a number; -1 for a bad one. */
static int parse_num(pmtx_explore_config *c, struct args *a, const char *o,
                     uint64_t n)
{
	for (size_t i = 0; i < ARRAY_SIZE(u64_opts); i++)
		if (!strcmp(o, u64_opts[i].name)) {
			memcpy((char *)c + u64_opts[i].off, &n, sizeof(n));
			return 0;
		}
	if (!strcmp(o, "--ntx"))
		c->ntx = n > 1000000 ? 0 : (unsigned)n;
	else if (!strcmp(o, "--depth2"))
		c->depth2 = (unsigned)MIN(n, 1000000);
	else if (!strcmp(o, "--min-images"))
		a->min_images = n;
	else if (!strcmp(o, "--stop-after"))
		c->stop_after = (long)MIN(n, 1000000000);
	else
		return -1;
	return 0;
}

/* One option with its value; -1 for a bad one. */
static int parse_opt(struct args *a, const char *o, const char *v)
{
	pmtx_explore_config *c = &a->c;
	uint64_t n = 0;
	if (!strcmp(o, "--workload"))
		a->workload = v;
	else if (!strcmp(o, "--runtime"))
		a->runtime = v;
	else if (!strcmp(o, "--domain"))
		return pmtx_domain_parse(v, &c->domain) ? -1 : 0;
	else if (!strcmp(o, "--save"))
		c->save = v;
	else if (!strcmp(o, "--points") && !strcmp(v, "all"))
		c->points = -1;
	else if (parse_u64(v, &n))
		return -1;
	else if (!strcmp(o, "--points"))
		c->points = (long)MIN(n, 1000000000);
	else
		return parse_num(c, a, o, n);
	return 0;
}

/* The flags (options without a value): the int of struct args each sets,
 * and its value. */
static const struct {
	const char *name;
	size_t off;
	int v;
} flags[] = {
	{"--json", offsetof(struct args, json), 1},
	{"--checks", offsetof(struct args, c.checks), 1},
	{"--no-progress", offsetof(struct args, c.progress), 0},
	{"--progress", offsetof(struct args, c.progress), 1},
	{"--quiet", offsetof(struct args, c.quiet), 1},
	{"--process-crash", offsetof(struct args, c.process_crash), 1},
	{"--reopen", offsetof(struct args, c.reopen), 1},
	{"--help", offsetof(struct args, help), 1},
	{"-h", offsetof(struct args, help), 1},
};

/* 1 if o is a flag (then set), else 0. */
static int parse_flag(struct args *a, const char *o)
{
	for (size_t i = 0; i < ARRAY_SIZE(flags); i++)
		if (!strcmp(o, flags[i].name)) {
			memcpy((char *)a + flags[i].off, &flags[i].v, sizeof(int));
			return 1;
		}
	return 0;
}

static const pmtx_explore_workload *find(const struct args *a,
                                         const char *name)
{
	for (size_t i = 0; i < a->nwls; i++)
		if (!strcmp(a->wls[i]->name, name))
			return a->wls[i];
	return NULL;
}

/* M3: the selected workloads' models must support --ntx. */
static int ntx_ok(const struct args *a)
{
	if (a->c.ntx == 0)
		return 0;
	for (size_t i = 0; i < a->nwls; i++) {
		const pmtx_explore_workload *w = a->wls[i];
		if ((!a->workload || !strcmp(a->workload, w->name)) &&
		    w->max_ntx && a->c.ntx > w->max_ntx)
			return 0;
	}
	return 1;
}

static int parse(struct args *a, int argc, char **argv)
{
	pmtx_explore_config_init(&a->c);
	a->c.progress = isatty(2);
	a->c.prog = a->prog;
	for (int i = 1; i < argc; i++) {
		if (parse_flag(a, argv[i]))
			continue;
		if (i + 1 >= argc || parse_opt(a, argv[i], argv[i + 1]))
			return -1;
		i++;
	}
	return ntx_ok(a) ? 0 : -1;
}

static void report_json(const struct args *a, const pmtx_explore_result *r,
                        double rate)
{
	const pmtx_explore_config *c = &a->c;
	printf("{\"workload\":\"%s\",\"runtime\":\"%s\",\"domain\":"
	       "\"%s\",\"seed\":%llu,\"crash_points\":%llu,"
	       "\"points_explored\":%llu,\"images\":%llu,"
	       "\"recovery_points\":%llu,\"recovery_images\":%llu,"
	       "\"violations\":%llu,\"seconds\":%.3f,"
	       "\"images_per_s\":%.1f,\"unflushed_at_commit\":%llu,"
	       "\"dirty_at_commit\":%llu,\"redundant_flushes\":%llu}\n",
	       c->workload->name, pmtx_explore_runtime_name(c->runtime),
	       pmtx_domain_name(c->domain), (unsigned long long)c->seed,
	       (unsigned long long)r->crash_points,
	       (unsigned long long)r->points, (unsigned long long)r->images,
	       (unsigned long long)r->recovery_points,
	       (unsigned long long)r->recovery_images,
	       (unsigned long long)r->violations, r->seconds, rate,
	       (unsigned long long)r->unflushed_at_commit,
	       (unsigned long long)r->dirty_at_commit,
	       (unsigned long long)r->redundant_flushes);
}

static void report(const struct args *a, const pmtx_explore_result *r)
{
	const pmtx_explore_config *c = &a->c;
	uint64_t imgs = r->images + r->recovery_images;
	double rate = r->seconds > 0 ? (double)imgs / r->seconds : 0;
	if (a->json) {
		report_json(a, r, rate);
		fflush(stdout);
		return;
	}
	printf("%-6s %-10s %s: crash points %llu/%llu, images %llu "
	       "(+%llu in recovery at %llu points), %.0f images/s, "
	       "violations %llu\n",
	       c->workload->name, pmtx_explore_runtime_name(c->runtime),
	       pmtx_domain_name(c->domain), (unsigned long long)r->points,
	       (unsigned long long)r->crash_points,
	       (unsigned long long)r->images,
	       (unsigned long long)r->recovery_images,
	       (unsigned long long)r->recovery_points, rate,
	       (unsigned long long)r->violations);
	if (r->violations && c->quiet) /* the one line --quiet keeps */
		printf("       first: %s\n", r->first);
	if (c->checks)
		printf("       checks: %llu stores unflushed at commit, %llu "
		       "dirty lines at commit, %llu redundant flushes\n",
		       (unsigned long long)r->unflushed_at_commit,
		       (unsigned long long)r->dirty_at_commit,
		       (unsigned long long)r->redundant_flushes);
	fflush(stdout);
}

/* Run one (workload, runtime); add its result to *tot. */
static int run_one(struct args *a, const pmtx_explore_workload *w,
                   pmtx_runtime rt, pmtx_explore_result *tot)
{
	pmtx_explore_result r;
	a->c.workload = w;
	a->c.runtime = rt;
	int rc = pmtx_explore_run(&a->c, &r);
	if (rc) {
		fprintf(stderr, "%s: %s/%s: %s%s%s\n", a->prog, w->name,
		        pmtx_explore_runtime_name(rt), pmtx_strerror(rc),
		        rc == PMTX_E_INVAL ? ": " : "",
		        rc == PMTX_E_INVAL ? pmtx_errmsg() : "");
		return rc;
	}
	report(a, &r);
	tot->points += r.points;
	tot->images += r.images;
	tot->recovery_images += r.recovery_images;
	tot->violations += r.violations;
	tot->seconds += r.seconds;
	return 0;
}

/* Every selected (workload, runtime); returns how many ran, *failed set
 * when the explorer failed on one. */
static int run_all(struct args *a, pmtx_runtime only,
                   pmtx_explore_result *tot, int *failed)
{
	int runs = 0;
	for (size_t i = 0; i < a->nwls; i++) {
		const pmtx_explore_workload *w = a->wls[i];
		if (a->workload && strcmp(a->workload, w->name))
			continue;
		for (size_t k = 0; k < ARRAY_SIZE(all_rt); k++) {
			if ((a->runtime && all_rt[k] != only) ||
			    !pmtx_explore_applies(w, all_rt[k]))
				continue;
			runs++;
			*failed |= run_one(a, w, all_rt[k], tot) != 0;
		}
	}
	return runs;
}

static void total(const pmtx_explore_result *tot, int runs)
{
	uint64_t imgs = tot->images + tot->recovery_images;
	printf("total: %d runs, crash points %llu, images %llu "
	       "(+%llu in recovery), %.0f images/s, violations %llu\n",
	       runs, (unsigned long long)tot->points,
	       (unsigned long long)tot->images,
	       (unsigned long long)tot->recovery_images,
	       tot->seconds > 0 ? (double)imgs / tot->seconds : 0,
	       (unsigned long long)tot->violations);
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path ? path : "explore";
}

int pmtx_explore_main(int argc, char **argv,
                      const pmtx_explore_workload *const *wls, size_t n)
{
	struct args a = {.prog = base_name(argc > 0 ? argv[0] : NULL),
	                 .wls = wls, .nwls = n};
	pmtx_runtime only = PMTX_RT_DEFAULT;
	if (parse(&a, argc, argv))
		return usage(&a);
	if (a.help)
		return help(&a);
	if (a.runtime && pmtx_explore_runtime_parse(a.runtime, &only))
		return usage(&a);
	if (a.workload && !find(&a, a.workload))
		return usage(&a);
	pmtx_explore_result tot;
	memset(&tot, 0, sizeof(tot));
	int failed = 0, runs = run_all(&a, only, &tot, &failed);
	if (!runs) {
		fprintf(stderr, "%s: workload %s does not apply to runtime "
		        "%s\n", a.prog, a.workload ? a.workload : "(any)",
		        a.runtime ? a.runtime : "(any)");
		return 2;
	}
	if (runs > 1 && !a.json)
		total(&tot, runs);
	uint64_t all = tot.images + tot.recovery_images;
	if (all < a.min_images) {
		fprintf(stderr, "%s: %llu images explored, fewer than "
		        "--min-images %llu\n", a.prog, (unsigned long long)all,
		        (unsigned long long)a.min_images);
		failed = 1;
	}
	return failed ? 3 : tot.violations ? 1 : 0;
}
