/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmtx.c - the pmtx command: the table of subcommands and the dispatch.
 * Each subcommand lives in its own file and takes the words after its
 * name(s); each has --help and a man page (docs/man/pmtx-NAME.1).
 *
 *   pmtx create FILE --size N [...]   make a region (cmd_create.c)
 *   pmtx info FILE [--json]           what a region is (cmd_info.c)
 *   pmtx check FILE                   validate it, without writing it
 *   pmtx recover FILE                 run recovery on it (cmd_create.c)
 *   pmtx dump FILE OFFSET [LEN]       hex dump of its bytes (cmd_check.c)
 *   pmtx trace dump FILE              a persistence trace as text
 *   pmtx trace analyze FILE... [--json]  WHISPER's epoch metrics of
 *                                     traces (cmd_trace_analyze.c)
 *   pmtx trace hops FILE... [--json]  run time of traces under x86, HOPS
 *                                     and ideal (cmd_trace_hops.c)
 *   pmtx crashtest [...]              the power-failure crash-state
 *                                     explorer (tools/crashtest/cmd.c)
 *   pmtx help                         list the subcommands
 *
 * Invariants
 *  1. Exit status: 0 fine, 1 the region (or the operation) has a problem,
 *     2 usage error (cmd.h rule 1); crashtest keeps its own (3: the
 *     explorer failed).
 *  2. A subcommand is matched on whole words ("trace dump" is two), so
 *     no prefix of a name runs anything.
 */
#include <string.h>

#include "cmd.h"

struct subcmd {
	const char *name;    /* "trace dump" */
	const char *args;
	const char *help;
	int (*run)(int argc, char **argv);
};

static int cmd_help(int argc, char **argv);
int ct_main(int argc, char **argv); /* crashtest/cmd.c */

static const struct subcmd subcmds[] = {
	{"help", "", "list the subcommands", cmd_help},
	{"create", "FILE --size N [...]", "create a region", cmd_create},
	{"info", "FILE [--json]",
	 "header, descriptors, recovery needed, heap usage", cmd_info},
	{"check", "FILE", "validate a region without writing it", cmd_check},
	{"recover", "FILE", "recover a region in place", cmd_recover},
	{"dump", "FILE OFFSET [LEN]", "hex dump of a region's bytes",
	 cmd_dump},
	{"trace dump", "FILE", "print a persistence trace as text",
	 cmd_trace_dump},
	{"trace analyze", "FILE... [--json]",
	 "WHISPER's epoch metrics of persistence traces", cmd_trace_analyze},
	{"trace hops", "FILE... [--json]",
	 "run time of traces under x86, HOPS and ideal", cmd_trace_hops},
	{"crashtest", "[OPTIONS]",
	 "explore power-failure crash states of every runtime (--help)",
	 ct_main},
};

#define NSUBCMDS (sizeof(subcmds) / sizeof(subcmds[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: pmtx SUBCOMMAND [ARGS]\n\nsubcommands:\n");
	for (size_t i = 0; i < NSUBCMDS; i++)
		fprintf(f, "  %-13s %-19s %s\n", subcmds[i].name,
		        subcmds[i].args, subcmds[i].help);
	fprintf(f, "\n`pmtx SUBCOMMAND --help` and `man pmtx-SUBCOMMAND` tell "
	           "more.\nexit status: 0 fine, 1 the region has a problem, "
	           "2 usage error\n");
}

static int cmd_help(int argc, char **argv)
{
	(void)argc, (void)argv;
	usage(stdout);
	return CMD_OK;
}

/* Number of words of argv that spell name ("trace dump": 2), or 0. */
static int match(const char *name, int argc, char **argv)
{
	int n = 0;
	while (*name) {
		size_t len = strcspn(name, " ");
		if (n >= argc || strlen(argv[n]) != len ||
		    strncmp(argv[n], name, len) != 0)
			return 0;
		name += len + (name[len] == ' ');
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CMD_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(0, NULL);
	for (size_t i = 0; i < NSUBCMDS; i++) {
		int n = match(subcmds[i].name, argc - 1, argv + 1);
		if (n) {
			int rc = subcmds[i].run(argc - 1 - n, argv + 1 + n);
			return rc == CMD_HELP_DONE ? CMD_OK : rc;
		}
	}
	fprintf(stderr, "pmtx: unknown subcommand '%s'\n", argv[1]);
	usage(stderr);
	return CMD_USAGE;
}
