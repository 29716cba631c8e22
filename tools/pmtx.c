/*
 * pmtx.c - the pmtx command. Subcommands are dispatched from one table;
 * each takes the arguments after its own name(s).
 *
 *   pmtx trace dump FILE   print a persistence trace as text, one event a
 *                          line: time (ns since the trace started), thread,
 *                          type, region id, region offset, size, then the
 *                          runtime and status for transaction events and
 *                          the bytes in hex when the trace has them.
 *   pmtx crashtest [...]   the power-failure crash-state explorer
 *                          (tools/crashtest/cmd.c).
 *   pmtx help              list the subcommands.
 *
 * Exit status: 0 success, 1 the operation failed, 2 usage error.
 */
#include <stdio.h>
#include <string.h>

#include "pmtx.h"
#include "pmtx_trace.h"

struct subcmd {
	const char *name;    /* "trace dump" */
	const char *args;
	const char *help;
	int (*run)(int argc, char **argv);
};

static int cmd_help(int argc, char **argv);
static int cmd_trace_dump(int argc, char **argv);
int ct_main(int argc, char **argv); /* crashtest/cmd.c */

static const struct subcmd subcmds[] = {
	{"help", "", "list the subcommands", cmd_help},
	{"trace dump", "FILE", "print a persistence trace as text",
	 cmd_trace_dump},
	{"crashtest", "[OPTIONS]",
	 "explore power-failure crash states of every runtime (--help)",
	 ct_main},
};

#define NSUBCMDS (sizeof(subcmds) / sizeof(subcmds[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: pmtx SUBCOMMAND [ARGS]\n\nsubcommands:\n");
	for (size_t i = 0; i < NSUBCMDS; i++)
		fprintf(f, "  %-12s %-6s %s\n", subcmds[i].name,
		        subcmds[i].args, subcmds[i].help);
}

static int cmd_help(int argc, char **argv)
{
	(void)argc, (void)argv;
	usage(stdout);
	return 0;
}

static void print_event(const pmtx_trace_event *ev, uint64_t t0)
{
	const struct pmtx_trace_rec *r = &ev->rec;
	printf("%llu %u %s region=%016llx off=0x%llx size=%llu",
	       (unsigned long long)(r->time_ns - t0), r->tid,
	       pmtx_trace_type_name(r->type), (unsigned long long)r->region,
	       (unsigned long long)r->off, (unsigned long long)r->size);
	if (r->type == PMTX_TEV_BEGIN || r->type == PMTX_TEV_COMMIT ||
	    r->type == PMTX_TEV_ABORT)
		printf(" runtime=%s status=%d",
		       pmtx_runtime_name((pmtx_runtime)r->arg), r->status);
	else if (r->type == PMTX_TEV_FLUSH)
		printf(" lines=%u", r->arg);
	if (ev->bytes) {
		printf(" bytes=");
		for (uint64_t i = 0; i < r->size; i++)
			printf("%02x", ev->bytes[i]);
	}
	putchar('\n');
}

static int cmd_trace_dump(int argc, char **argv)
{
	if (argc != 1) {
		usage(stderr);
		return 2;
	}
	pmtx_trace_reader *rd;
	int rc = pmtx_trace_open(argv[0], &rd);
	if (rc) {
		fprintf(stderr, "pmtx: %s: %s\n", argv[0], pmtx_strerror(rc));
		return 1;
	}
	uint64_t t0 = pmtx_trace_header(rd)->start_ns;
	pmtx_trace_event ev;
	while ((rc = pmtx_trace_next(rd, &ev)) == 0)
		print_event(&ev, t0);
	pmtx_trace_close(rd);
	if (rc != 1) {
		fprintf(stderr, "pmtx: %s: %s\n", argv[0], pmtx_strerror(rc));
		return 1;
	}
	return 0;
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
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(0, NULL);
	for (size_t i = 0; i < NSUBCMDS; i++) {
		int n = match(subcmds[i].name, argc - 1, argv + 1);
		if (n)
			return subcmds[i].run(argc - 1 - n, argv + 1 + n);
	}
	fprintf(stderr, "pmtx: unknown subcommand '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
