/*
 * cmd.c - `pmtx crashtest`: the explorer's command line
 * (pmtx_explore_main) over the built-in workloads.
 *
 * Reproducers name the command that replays them: "pmtx crashtest", or
 * "pmtx-mut crashtest" from the command built over the mutant library,
 * after the name this program was started by.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "workloads.h"

int ct_main(int argc, char **argv)
{
	char prog[256];
	char **args = calloc((size_t)argc + 2, sizeof(*args));
	if (!args) {
		perror("pmtx crashtest");
		return 3;
	}
	snprintf(prog, sizeof(prog), "%s crashtest",
	         program_invocation_short_name);
	args[0] = prog;
	for (int i = 0; i < argc; i++)
		args[i + 1] = argv[i];
	int rc = pmtx_explore_main(argc + 1, args, ct_workloads,
	                           ct_nworkloads);
	free(args);
	return rc;
}
