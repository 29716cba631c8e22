/*
 * main.c - pmtx-bench: benchmarks that print JSON lines.
 *
 *   pmtx-bench --list
 *   pmtx-bench WORKLOAD [--system S] [--domain D] [--backend B]
 *                       [--writes N] [--allocs N] [--seconds T]
 *                       [--rounds R] [--dir DIR]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static const struct workload {
	const char *name;
	int (*run)(const struct bench_opts *o);
	const char *help;
} workloads[] = {
	{"txn", wl_txn,
	 "transactions writing --writes distinct 8-byte ranges and allocating "
	 "--allocs 64-byte blocks (default: sweep 0,1,4,16,32 writes; 1 alloc)"},
	{"checksum", wl_checksum,
	 "XXH3 throughput by size (the undo checksum threshold's basis)"},
};

static int usage(const char *argv0)
{
	fprintf(stderr,
	        "usage: %s --list\n"
	        "       %s WORKLOAD [--system S] [--domain pdom0|pdom1|pdom2]\n"
	        "          [--backend hardware|emulated|file] [--writes N]\n"
	        "          [--allocs N] [--seconds T] [--rounds R] [--dir D]\n",
	        argv0, argv0);
	return 2;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {.seconds = 0.3, .rounds = 3, .writes = -1,
	                       .allocs = -1, .dir = "/dev/shm"};
	if (argc >= 2 && !strcmp(argv[1], "--list")) {
		for (size_t i = 0; i < sizeof(workloads) / sizeof(*workloads); i++)
			printf("%-10s %s\n", workloads[i].name, workloads[i].help);
		return 0;
	}
	if (argc < 2)
		return usage(argv[0]);
	const struct workload *w = NULL;
	for (size_t i = 0; i < sizeof(workloads) / sizeof(*workloads); i++)
		if (!strcmp(argv[1], workloads[i].name))
			w = &workloads[i];
	if (!w)
		return usage(argv[0]);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			return usage(argv[0]);
		if (!strcmp(a, "--system"))
			o.system = v;
		else if (!strcmp(a, "--domain"))
			o.domain = v;
		else if (!strcmp(a, "--backend"))
			o.backend = v;
		else if (!strcmp(a, "--writes"))
			o.writes = atol(v);
		else if (!strcmp(a, "--allocs"))
			o.allocs = atol(v);
		else if (!strcmp(a, "--seconds"))
			o.seconds = atof(v);
		else if (!strcmp(a, "--rounds"))
			o.rounds = atoi(v);
		else if (!strcmp(a, "--dir"))
			o.dir = v;
		else
			return usage(argv[0]);
		i++;
	}
	int rc = w->run(&o);
	if (rc)
		fprintf(stderr, "%s: %s\n", w->name, pmtx_strerror(rc));
	return rc ? 1 : 0;
}
