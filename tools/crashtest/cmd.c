/*
 * cmd.c - `pmtx crashtest`: the command line of the crash-state explorer.
 *
 *   pmtx crashtest [--workload W] [--runtime R] [--domain D]
 *                  [--points all|N] [--images N] [--seed S] [--ntx N]
 *                  [--depth2 N] [--d2images N] [--checks] [--json]
 *                  [--stop-after N] [--min-images N] [--no-progress] [--quiet]
 *                  [--point P --image I [--rpoint Q --rimage J]
 *                   [--save FILE]]
 *
 * With no --workload (or --runtime) every workload runs under every
 * runtime it applies to. --images 0 means: every image when a point has
 * at most 65,536, else 10,000 samples. The default run takes every crash
 * point with up to 64 images each. --point/--image replay one image (the
 * reproducer printed with a violation).
 *
 * Exit status: 0 no violation, 1 violations found, 2 usage error, 3 the
 * explorer itself failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

static const pmtx_runtime all_rt[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                      PMTX_RT_REDO_ASYNC, PMTX_RT_COW,
                                      CT_RT_CLTX};

static int usage(void)
{
	fprintf(stderr,
	        "usage: pmtx crashtest [--workload W] [--runtime R] "
	        "[--domain D]\n"
	        "         [--points all|N] [--images N] [--seed S] [--ntx N]\n"
	        "         [--depth2 N] [--d2images N] [--checks] [--json]\n"
	        "         [--stop-after N] [--min-images N] [--no-progress]"
	        " [--quiet]\n"
	        "         [--point P --image I [--rpoint Q --rimage J]"
	        " [--save FILE]]\n"
	        "workloads:");
	for (unsigned i = 0; ct_workloads[i]; i++)
		fprintf(stderr, " %s", ct_workloads[i]->name);
	fprintf(stderr, "\nruntimes: undo redo redo-async cow cltx\n"
	                "domains: pdom0 pdom1 pdom2\n");
	return 2;
}

struct args {
	struct ct_config c;
	const char *workload, *runtime;
	int json;
	uint64_t min_images; /* fail if fewer images were explored */
};

static int parse_u64(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long x = strtoull(v, &end, 10);
	if (!*v || *end)
		return -1;
	*out = x;
	return 0;
}

/* One option with its value; -1 for a bad one. */
static int parse_opt(struct args *a, const char *o, const char *v)
{
	struct ct_config *c = &a->c;
	uint64_t n = 0;
	if (!strcmp(o, "--workload"))
		a->workload = v;
	else if (!strcmp(o, "--runtime"))
		a->runtime = v;
	else if (!strcmp(o, "--domain"))
		return pmtx_domain_parse(v, &c->domain) ? -1 : 0;
	else if (!strcmp(o, "--save"))
		c->save = v;
	else if (!strcmp(o, "--points"))
		c->points = !strcmp(v, "all") ? -1
		            : parse_u64(v, &n) ? -2 : (long)n;
	else if (parse_u64(v, &n))
		return -1;
	else if (!strcmp(o, "--images"))
		c->images = n;
	else if (!strcmp(o, "--seed"))
		c->env.seed = n;
	else if (!strcmp(o, "--ntx"))
		c->env.ntx = (unsigned)n;
	else if (!strcmp(o, "--depth2"))
		c->depth2 = (unsigned)n;
	else if (!strcmp(o, "--d2images"))
		c->d2images = n;
	else if (!strcmp(o, "--min-images"))
		a->min_images = n;
	else if (!strcmp(o, "--stop-after"))
		c->stop_after = (long)n;
	else if (!strcmp(o, "--point"))
		c->rep_point = n;
	else if (!strcmp(o, "--image"))
		c->rep_image = n;
	else if (!strcmp(o, "--rpoint"))
		c->rep_rpoint = n;
	else if (!strcmp(o, "--rimage"))
		c->rep_rimage = n;
	else
		return -1;
	return c->points < -1 ? -1 : 0;
}

static int parse(struct args *a, int argc, char **argv)
{
	ct_config_init(&a->c);
	a->c.images = 64;
	a->c.progress = isatty(2);
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			a->json = 1;
		else if (!strcmp(argv[i], "--checks"))
			a->c.checks = 1;
		else if (!strcmp(argv[i], "--no-progress"))
			a->c.progress = 0;
		else if (!strcmp(argv[i], "--progress"))
			a->c.progress = 1;
		else if (!strcmp(argv[i], "--quiet"))
			a->c.quiet = 1;
		else if (i + 1 >= argc || parse_opt(a, argv[i], argv[i + 1]))
			return -1;
		else
			i++;
	}
	if (a->c.env.ntx == 0 || a->c.env.ntx > 60)
		return -1; /* the models are sized for at most 60 */
	return 0;
}

static void report(const struct args *a, const struct ct_result *r)
{
	const struct ct_config *c = &a->c;
	uint64_t imgs = r->images + r->d2images;
	double rate = r->seconds > 0 ? (double)imgs / r->seconds : 0;
	if (a->json) {
		printf("{\"workload\":\"%s\",\"runtime\":\"%s\",\"domain\":"
		       "\"%s\",\"seed\":%llu,\"crash_points\":%llu,"
		       "\"points_explored\":%llu,\"images\":%llu,"
		       "\"recovery_points\":%llu,\"recovery_images\":%llu,"
		       "\"violations\":%llu,\"seconds\":%.3f,"
		       "\"images_per_s\":%.1f,\"unflushed_at_commit\":%llu,"
		       "\"dirty_at_commit\":%llu,\"redundant_flushes\":%llu}\n",
		       c->wl->name, ct_runtime_name(c->env.rt),
		       pmtx_domain_name(c->domain),
		       (unsigned long long)c->env.seed,
		       (unsigned long long)r->barriers,
		       (unsigned long long)r->points,
		       (unsigned long long)r->images,
		       (unsigned long long)r->d2points,
		       (unsigned long long)r->d2images,
		       (unsigned long long)r->violations, r->seconds, rate,
		       (unsigned long long)r->unflushed,
		       (unsigned long long)r->dirty_at_commit,
		       (unsigned long long)r->redundant_flushes);
		fflush(stdout);
		return;
	}
	printf("%-6s %-10s %s: crash points %llu/%llu, images %llu "
	       "(+%llu in recovery at %llu points), %.0f images/s, "
	       "violations %llu\n",
	       c->wl->name, ct_runtime_name(c->env.rt),
	       pmtx_domain_name(c->domain), (unsigned long long)r->points,
	       (unsigned long long)r->barriers, (unsigned long long)r->images,
	       (unsigned long long)r->d2images,
	       (unsigned long long)r->d2points, rate,
	       (unsigned long long)r->violations);
	if (c->checks)
		printf("       checks: %llu stores unflushed at commit, %llu "
		       "dirty lines at commit, %llu redundant flushes\n",
		       (unsigned long long)r->unflushed,
		       (unsigned long long)r->dirty_at_commit,
		       (unsigned long long)r->redundant_flushes);
	fflush(stdout);
}

/* Run one (workload, runtime); add its result to *tot. */
static int run_one(struct args *a, const struct ct_workload *w,
                   pmtx_runtime rt, struct ct_result *tot)
{
	struct ct_result r;
	a->c.wl = w;
	a->c.env.rt = rt;
	int rc = ct_run(&a->c, &r);
	if (rc) {
		fprintf(stderr, "pmtx crashtest: %s/%s: %s\n", w->name,
		        ct_runtime_name(rt), pmtx_strerror(rc));
		return rc;
	}
	report(a, &r);
	tot->points += r.points;
	tot->images += r.images;
	tot->d2images += r.d2images;
	tot->violations += r.violations;
	tot->seconds += r.seconds;
	return 0;
}

int ct_main(int argc, char **argv);
int ct_main(int argc, char **argv)
{
	struct args a = {0};
	if (parse(&a, argc, argv))
		return usage();
	pmtx_runtime only = PMTX_RT_DEFAULT;
	if (a.runtime && ct_runtime_parse(a.runtime, &only))
		return usage();
	if (a.workload && !ct_workload_find(a.workload))
		return usage();
	struct ct_result tot = {0};
	int runs = 0, failed = 0;
	for (unsigned i = 0; ct_workloads[i]; i++) {
		const struct ct_workload *w = ct_workloads[i];
		if (a.workload && strcmp(a.workload, w->name))
			continue;
		for (unsigned k = 0; k < sizeof(all_rt) / sizeof(*all_rt); k++) {
			if ((a.runtime && all_rt[k] != only) ||
			    !w->applies(all_rt[k]))
				continue;
			runs++;
			failed |= run_one(&a, w, all_rt[k], &tot) != 0;
		}
	}
	if (!runs) {
		fprintf(stderr, "pmtx crashtest: workload %s does not apply to "
		        "runtime %s\n", a.workload, a.runtime);
		return 2;
	}
	if (runs > 1 && !a.json)
		printf("total: %d runs, crash points %llu, images %llu "
		       "(+%llu in recovery), %.0f images/s, violations %llu\n",
		       runs, (unsigned long long)tot.points,
		       (unsigned long long)tot.images,
		       (unsigned long long)tot.d2images,
		       tot.seconds > 0 ? (double)(tot.images + tot.d2images) /
		                                 tot.seconds
		                       : 0,
		       (unsigned long long)tot.violations);
	uint64_t all = tot.images + tot.d2images;
	if (all < a.min_images) {
		fprintf(stderr, "pmtx crashtest: %llu images explored, fewer "
		        "than --min-images %llu\n", (unsigned long long)all,
		        (unsigned long long)a.min_images);
		failed = 1;
	}
	return failed ? 3 : tot.violations ? 1 : 0;
}
