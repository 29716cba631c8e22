/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd.c - `pmtx crashtest`: the explorer's command line
 * (pmtx_explore_main) over the built-in workloads.
 *
 * Two tables: the workloads of the runtimes (workloads.c), which a
 * crashtest with no --workload runs, and those of the containers
 * (wl_containers.c), which `--containers` runs instead. --workload W
 * finds W in either table, and --help lists both, so that a reproducer
 * (which names its workload) replays without --containers.
 *
 * Reproducers name the command that replays them: "pmtx crashtest", or
 * "pmtx-mut crashtest" from the command built over the mutant library,
 * after the name this program was started by.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads.h"

static int in_table(const pmtx_explore_workload *const *wls, size_t n,
                    const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(wls[i]->name, name))
			return 1;
	return 0;
}

/* Which table argv selects; *all: both (--help). */
static int wants_containers(int argc, char **argv, int *all)
{
	*all = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--containers"))
			return 1;
		if (!strcmp(argv[i], "--help"))
			*all = 1;
		if (!strcmp(argv[i], "--workload") && i + 1 < argc &&
		    in_table(ct_cont_workloads, ct_ncont_workloads,
		             argv[i + 1]))
			return 1;
	}
	return 0;
}

int ct_main(int argc, char **argv)
{
	char prog[256];
	char **args = calloc((size_t)argc + 2, sizeof(*args));
	const pmtx_explore_workload **both =
		calloc(ct_nworkloads + ct_ncont_workloads, sizeof(*both));
	int all, cont = wants_containers(argc, argv, &all), n = 1, rc;
	if (!args || !both) {
		perror("pmtx crashtest");
		free(args);
		free(both);
		return 3;
	}
	snprintf(prog, sizeof(prog), "%s crashtest",
	         program_invocation_short_name);
	args[0] = prog;
	for (int i = 0; i < argc; i++)
		if (strcmp(argv[i], "--containers"))
			args[n++] = argv[i];
	memcpy(both, ct_workloads, ct_nworkloads * sizeof(*both));
	memcpy(both + ct_nworkloads, ct_cont_workloads,
	       ct_ncont_workloads * sizeof(*both));
	if (all && !cont)
		rc = pmtx_explore_main(n, args, both,
		                       ct_nworkloads + ct_ncont_workloads);
	else if (cont)
		rc = pmtx_explore_main(n, args, ct_cont_workloads,
		                       ct_ncont_workloads);
	else
		rc = pmtx_explore_main(n, args, ct_workloads, ct_nworkloads);
	free(both);
	free(args);
	return rc;
}
