/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mutant.c - the table of mutation sites and the choice of the disabled
 * one (mutant.h). Compiled into both libraries: the names serve tools in
 * either, but only pmtx_mut (PMTX_MUTATION) can disable a site.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmtx.h"
#include "mutant.h"

struct site {
	const char *sym, *name, *desc;
};

static const struct site sites[] = {
	{"MUT_NONE", "none", "no site is disabled"},
#define MUT_ROW_(id, name, desc) {#id, name, desc},
	PMTX_MUTANTS(MUT_ROW_)
#undef MUT_ROW_
};
_Static_assert(ARRAY_SIZE(sites) == MUT_END_, "one row per site");

#ifdef PMTX_MUTATION
unsigned pmtx__mutant; /* written once, before the workload */
#endif

static pthread_once_t env_once = PTHREAD_ONCE_INIT;

unsigned pmtx__mutant_count(void)
{
	return MUT_NSITES;
}

const char *pmtx__mutant_name(unsigned id)
{
	return id < MUT_END_ ? sites[id].name : NULL;
}

const char *pmtx__mutant_desc(unsigned id)
{
	return id < MUT_END_ ? sites[id].desc : NULL;
}

unsigned pmtx__mutant_lookup(const char *s)
{
	if (!s || !*s)
		return MUT_NONE;
	size_t len = strlen(s);
	if (strspn(s, "0123456789") == len) {
		unsigned long v = len < 6 ? strtoul(s, NULL, 10) : MUT_END_;
		return v < MUT_END_ ? (unsigned)v : MUT_INVALID;
	}
	for (unsigned i = 0; i < MUT_END_; i++)
		if (!strcmp(s, sites[i].name) || !strcmp(s, sites[i].sym))
			return i;
	return MUT_INVALID;
}

static void read_env(void)
{
	const char *s = getenv("PMTX_MUTANT");
	unsigned id = pmtx__mutant_lookup(s);
	if (id == MUT_NONE)
		return;
#ifdef PMTX_MUTATION
	if (id == MUT_INVALID) {
		fprintf(stderr, "pmtx: PMTX_MUTANT=%s names no mutation site\n",
		        s);
		abort();
	}
	__atomic_store_n(&pmtx__mutant, id, __ATOMIC_RELAXED);
#else
	fprintf(stderr, "pmtx: PMTX_MUTANT=%s ignored: this build has no "
	        "mutation sites (link pmtx_mut)\n", s);
#endif
}

void pmtx__mutant_init(void)
{
	pthread_once(&env_once, read_env);
}

int pmtx__mutant_set(unsigned id)
{
#ifdef PMTX_MUTATION
	pmtx__mutant_init();
	if (id >= MUT_END_)
		return PMTX_E_INVAL;
	__atomic_store_n(&pmtx__mutant, id, __ATOMIC_RELAXED);
	return 0;
#else
	(void)id;
	return PMTX_E_UNSUPPORTED;
#endif
}

unsigned pmtx__mutant_active(void)
{
#ifdef PMTX_MUTATION
	pmtx__mutant_init();
	return __atomic_load_n(&pmtx__mutant, __ATOMIC_RELAXED);
#else
	return MUT_NONE;
#endif
}
