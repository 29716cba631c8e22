/* SPDX-License-Identifier: BSD-3-Clause */
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
 * Prints the mutation score: caught sites / all sites. Part of the
 * default suite (a few minutes); PMTX_LONG_TESTS=1 explores more images.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmtx_explore.h>

#include "common/mutant.h"
#include "workloads.h"

struct justified {
	const char *site, *why;
};

/* The journal backend's give-back: the explorer simulates persistent
 * memory and never runs that backend, so these are not hunted. */
#define JOURNAL_ELSEWHERE                                                    \
	"the journal backend's give-back, which the explorer never runs: "   \
	"tests/test_mutant.c shows each loses a store (tests/jgive.c)"

/* Sites that no crash image can reveal, and why. (The sites that
 * recovery never needed, the undo log tail and the barrier after a log
 * chunk's heap mark, were removed.) */
static const struct justified justified[] = {
	/* (twin.idle_mark is caught: without the store, the checker's own
	 * reopen finds the state word still set and recovers again, check
	 * 5; only the flush is left for a crash to lose) */
	{"twin.idle_flush",
	 "the IDLE store only spares the next open a pass over the region "
	 "(twin.c TW4): a crash that loses it leaves MUTATING or COPYING "
	 "over copies that agree, or a recovery that copies again (TW8); "
	 "the next transaction's MUTATING supersedes it in the same word"},
	{"journal.drop_after_sync", JOURNAL_ELSEWHERE},
	{"journal.drop_compare", JOURNAL_ELSEWHERE},
	{"journal.drop_protect", JOURNAL_ELSEWHERE},
	{NULL, NULL},
};

static const char *why_justified(const char *site)
{
	for (const struct justified *j = justified; j->site; j++)
		if (!strcmp(j->site, site))
			return j->why;
	return NULL;
}

struct combo {
	const pmtx_explore_workload *w;
	pmtx_runtime rt;
	pmtx_domain d;
	int cont; /* a workload of the containers (wl_containers.c) */
};

static struct combo combos[256];
static unsigned ncombos;

static const pmtx_runtime rts[] = {PMTX_RT_UNDO, PMTX_RT_REDO,
                                   PMTX_RT_REDO_ASYNC, PMTX_RT_COW,
                                   PMTX_EXPLORE_RT_CLTX, PMTX_RT_AUTO,
                                   PMTX_RT_TWIN};

static void add_combos(const pmtx_explore_workload *const *wls, size_t n,
                       pmtx_domain d, int cont)
{
	for (unsigned k = 0; k < sizeof(rts) / sizeof(*rts); k++)
		for (size_t i = 0; i < n; i++)
			if (pmtx_explore_applies(wls[i], rts[k]))
				combos[ncombos++] = (struct combo){
					wls[i], rts[k], d, cont};
}

/* The runtimes' workloads in PDOM-1 and PDOM-2; the containers' in
 * PDOM-1 (where a lost flush shows first), hunted with for the
 * containers' sites only (cont_site). */
static void make_combos(void)
{
	for (int d = PMTX_PDOM1; d <= PMTX_PDOM2; d++)
		add_combos(ct_workloads, ct_nworkloads, (pmtx_domain)d, 0);
	add_combos(ct_cont_workloads, ct_ncont_workloads, PMTX_PDOM1, 1);
}

/* A site of src/containers, and whether workload w uses its container:
 * the hash map's in hmap and cross, the ordered map's in map, the
 * list's in clist and cross, the strings' in str. */
static int cont_site(const char *site)
{
	return !strncmp(site, "hmap.", 5) || !strncmp(site, "list.", 5) ||
	       !strncmp(site, "str.", 4) || !strncmp(site, "map.", 4);
}

static int cont_uses(const char *site, const pmtx_explore_workload *w)
{
	if (!strncmp(site, "hmap.", 5))
		return !strcmp(w->name, "hmap") || !strcmp(w->name, "cross");
	if (!strncmp(site, "list.", 5))
		return !strcmp(w->name, "clist") || !strcmp(w->name, "cross");
	if (!strncmp(site, "map.", 4))
		return !strcmp(w->name, "map");
	return !strcmp(w->name, "str");
}

/* Combinations a site belongs to, tried first (by the site name's
 * prefix): its runtimes, or its container's workloads. */
static int preferred(const char *site, const struct combo *cb)
{
	pmtx_runtime rt = cb->rt;
	if (cont_site(site))
		return cb->cont && cont_uses(site, cb->w);
	if (!strncmp(site, "undo.", 5))
		return rt == PMTX_RT_UNDO;
	if (!strncmp(site, "redo.", 5))
		return rt == PMTX_RT_REDO || rt == PMTX_RT_REDO_ASYNC;
	if (!strncmp(site, "cow.", 4))
		return rt == PMTX_RT_COW;
	if (!strncmp(site, "api.", 4))
		return rt == PMTX_EXPLORE_RT_CLTX;
	if (!strncmp(site, "mix.", 4))
		return rt == PMTX_RT_AUTO;
	if (!strncmp(site, "twin.", 5))
		return rt == PMTX_RT_TWIN;
	return 1;
}

/* Sites that only their preferred combinations reach: twin.c runs in
 * twin regions only, and no other runtime runs there, so hunting a twin
 * site elsewhere would explore every other combination for nothing; a
 * container's code runs only in the workloads that use it. */
static int exclusive(const char *site)
{
	return !strncmp(site, "twin.", 5) || cont_site(site);
}

/* Sites that only a process crash before recovery (recovery.c R4,
 * layout.h G4) or a close and a later open (tx.c R3) can reveal: hunted
 * with depth 2 starting after a process crash (explore.c E9), the region
 * closed and opened again halfway (E10), and 12 transactions. */
static int special_site(const char *site)
{
	return !strncmp(site, "recovery.sweep", 14) ||
	       !strcmp(site, "region.open_mark") ||
	       !strncmp(site, "tx.close_cover", 14);
}

static int explore(const struct combo *cb, uint64_t images, int special,
                   pmtx_explore_result *res)
{
	pmtx_explore_config c;
	pmtx_explore_config_init(&c);
	c.workload = cb->w;
	c.runtime = cb->rt;
	c.domain = cb->d;
	c.ntx = 8;
	c.images = images;
	c.depth2 = 4;
	c.d2images = 16;
	c.stop_after = 1;
	c.quiet = 1;
	c.prog = "pmtx-mut crashtest"; /* the reproducers' command */
	c.process_crash = c.reopen = special;
	if (special)
		c.ntx = 12;
	return pmtx_explore_run(&c, res);
}

static void name_combo(const struct combo *cb, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s/%s", cb->w->name,
	         pmtx_explore_runtime_name(cb->rt),
	         pmtx_domain_name(cb->d));
}

/* Explore the combinations, preferred runtimes first; stop at the first
 * violation. Returns 1 if caught. */
static int hunt(const char *site, uint64_t images, char *how, size_t len)
{
	for (int pass = 0; pass < (exclusive(site) ? 1 : 2); pass++)
		for (unsigned i = 0; i < ncombos; i++) {
			pmtx_explore_result res;
			char nm[64];
			if (preferred(site, &combos[i]) != (pass == 0) ||
			    (combos[i].cont && !cont_site(site)) ||
			    explore(&combos[i], images, special_site(site),
			            &res) ||
			    !res.violations)
				continue;
			name_combo(&combos[i], nm, sizeof(nm));
			snprintf(how, len, "%s: %s", nm, res.first);
			return 1;
		}
	return 0;
}

/* Every combination (long mode; by default those in PDOM-1 only, the
 * domain every site is hunted in first: crashtest_pdom0 and _pdom2 show
 * the other domains free of violations), and again as the special sites
 * are hunted, in PDOM-1 (where they are caught first); the containers'
 * workloads, never hunted with for those, only as their own sites are. */
static int baseline(uint64_t images, int all_domains)
{
	int bad = 0, runs = 0;
	for (unsigned k = 0; k < 2 * ncombos; k++) {
		pmtx_explore_result res;
		char nm[64];
		unsigned i = k % ncombos;
		int special = k >= ncombos;
		if (special && (combos[i].d != PMTX_PDOM1 || combos[i].cont))
			continue;
		if (!all_domains && combos[i].d != PMTX_PDOM1)
			continue;
		runs++;
		int rc = explore(&combos[i], images, special, &res);
		if (rc || res.violations) {
			name_combo(&combos[i], nm, sizeof(nm));
			printf("BASELINE %s%s: %s\n", nm,
			       special ? " (process crash, reopen)" : "",
			       rc ? pmtx_strerror(rc) : res.first);
			bad = 1;
		}
	}
	printf("baseline: %d explorations%s, %s\n", runs,
	       all_domains ? " in every domain" : " in PDOM-1",
	       bad ? "violations" : "no violation");
	fflush(stdout);
	return bad;
}

int main(void)
{
	/* Long mode (PMTX_LONG_TESTS=1): four times the images per point,
	 * and the baseline in every domain. */
	const char *lm = getenv("PMTX_LONG_TESTS");
	int long_mode = lm && *lm && strcmp(lm, "0");
	uint64_t images = long_mode ? 256 : 64;
	unsigned n = pmtx__mutant_count(), caught = 0, failures = 0, just = 0;
	if (pmtx__mutant_set(0)) {
		printf("not a mutation build\n");
		return 1;
	}
	make_combos();
	if (baseline(images, long_mode)) {
		printf("FAIL: violations with no mutant\n");
		return 1;
	}
	for (unsigned id = 1; id <= n; id++) {
		const char *name = pmtx__mutant_name(id), *why;
		char how[700];
		pmtx__mutant_set(id);
		int got = strncmp(name, "journal.", 8) &&
		          hunt(name, images, how, sizeof(how));
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
