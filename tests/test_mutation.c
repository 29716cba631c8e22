/*
 * test_mutation.c - the crash explorer must catch every planted bug.
 *
 * Linked against pmtx_mut (the library with mutation sites, mutant.h).
 * For each site in turn the site is disabled, and the explorer runs the
 * workloads, under the runtimes the site belongs to first, until one
 * violation is found. First, with no site disabled, every workload under
 * every runtime must show none: a checker that flags a correct library
 * proves nothing either.
 *
 * A site whose removal is never caught is either a redundant flush or
 * barrier (a performance bug: remove it) or a hole in the workloads (close
 * it). The few sites that are uncatchable by design are named in
 * `justified` below, each with the reason; the test fails if one of them
 * is ever caught (the reason was wrong) or any other site is not.
 *
 * Prints the mutation score: caught sites / all sites.
 * PMTX_LONG_TESTS=1 explores more images per point.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mutant.h"
#include "ct.h"

struct justified {
	const char *site, *why;
};

/* Sites that no crash image can reveal, and why. */
static const struct justified justified[] = {
	{"undo.tail_store", "recovery finds the end of an undo log from "
	                    "sequence numbers and checksums, never the tail"},
	{"undo.tail_flush", "the same tail: never read by recovery"},
	{"log.grow_alloc_barrier", "recovery re-marks every linked chunk as "
	                           "allocated (log.c L4), so the chunk's heap "
	                           "bit need not be durable"},
	{NULL, NULL},
};

static const char *why_justified(const char *site)
{
	for (const struct justified *j = justified; j->site; j++)
		if (!strcmp(j->site, site))
			return j->why;
	return NULL;
}

static const pmtx_runtime runtimes[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                        PMTX_RT_REDO_ASYNC, PMTX_RT_COW,
                                        CT_RT_CLTX};
#define NRT (sizeof(runtimes) / sizeof(*runtimes))

/* Runtimes a site belongs to, tried first (by the site name's prefix). */
static int preferred(const char *site, pmtx_runtime rt)
{
	if (!strncmp(site, "undo.", 5))
		return rt == PMTX_RT_UNDO;
	if (!strncmp(site, "redo.", 5))
		return rt == PMTX_RT_REDO || rt == PMTX_RT_REDO_ASYNC;
	if (!strncmp(site, "cow.", 4))
		return rt == PMTX_RT_COW;
	if (!strncmp(site, "api.", 4))
		return rt == CT_RT_CLTX;
	return 1;
}

static int explore(const struct ct_workload *w, pmtx_runtime rt,
                   uint64_t images, struct ct_result *res)
{
	struct ct_config c;
	ct_config_init(&c);
	c.wl = w;
	c.env.rt = rt;
	c.env.ntx = 8;
	c.images = images;
	c.depth2 = 2;
	c.d2images = 8;
	c.stop_after = 1;
	c.quiet = 1;
	return ct_run(&c, res);
}

/* Run the explorer over every (workload, runtime), preferred runtimes
 * first; stop at the first violation. Returns 1 if caught. */
static int hunt(const char *site, uint64_t images, char *how, size_t len)
{
	for (int pass = 0; pass < 2; pass++)
		for (unsigned k = 0; k < NRT; k++) {
			if (preferred(site, runtimes[k]) != (pass == 0))
				continue;
			for (unsigned i = 0; ct_workloads[i]; i++) {
				const struct ct_workload *w = ct_workloads[i];
				struct ct_result res;
				if (!w->applies(runtimes[k]) ||
				    explore(w, runtimes[k], images, &res))
					continue;
				if (res.violations) {
					snprintf(how, len, "%s/%s: %s", w->name,
					         ct_runtime_name(runtimes[k]),
					         res.first);
					return 1;
				}
			}
		}
	return 0;
}

static int baseline(uint64_t images)
{
	int bad = 0;
	for (unsigned k = 0; k < NRT; k++)
		for (unsigned i = 0; ct_workloads[i]; i++) {
			struct ct_result res;
			if (!ct_workloads[i]->applies(runtimes[k]))
				continue;
			int rc = explore(ct_workloads[i], runtimes[k], images,
			                 &res);
			if (rc || res.violations) {
				printf("BASELINE %s/%s: %s\n",
				       ct_workloads[i]->name,
				       ct_runtime_name(runtimes[k]),
				       rc ? pmtx_strerror(rc) : res.first);
				bad = 1;
			}
		}
	return bad;
}

int main(void)
{
	const char *lm = getenv("PMTX_LONG_TESTS");
	uint64_t images = lm && *lm && strcmp(lm, "0") ? 256 : 24;
	unsigned n = pmtx__mutant_count(), caught = 0, failures = 0, just = 0;
	if (pmtx__mutant_set(0)) {
		printf("not a mutation build\n");
		return 1;
	}
	if (baseline(images)) {
		printf("FAIL: violations with no mutant\n");
		return 1;
	}
	for (unsigned id = 1; id <= n; id++) {
		const char *name = pmtx__mutant_name(id), *why;
		char how[700];
		pmtx__mutant_set(id);
		int got = hunt(name, images, how, sizeof(how));
		pmtx__mutant_set(0);
		caught += got;
		why = why_justified(name);
		if (got && why) {
			printf("FAIL %-26s caught, but justified as: %s\n  %s\n",
			       name, why, how);
			failures++;
		} else if (got) {
			char *nl = strchr(how, '\n');
			printf("caught %-26s %.*s\n", name,
			       nl ? (int)(nl - how) : (int)strlen(how), how);
		} else if (why) {
			just++;
			printf("justified %-23s %s\n", name, why);
		} else {
			printf("FAIL %-26s NOT CAUGHT: %s\n", name,
			       pmtx__mutant_desc(id));
			failures++;
		}
		fflush(stdout);
	}
	printf("mutation score: %u/%u sites caught (%u justified, %u "
	       "failures)\n", caught, n, just, failures);
	return failures ? 1 : 0;
}
