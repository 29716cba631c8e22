/* SPDX-License-Identifier: BSD-3-Clause */
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
	bench_workload *run;
	const char *help;
} workloads[] = {
	{"txn", wl_txn,
	 "transactions writing --writes distinct 8-byte ranges and allocating "
	 "--allocs 64-byte blocks (default: sweep 0,1,4,16,32 writes; 1 alloc)"},
	{"checksum", wl_checksum,
	 "XXH3 throughput by size (the undo checksum threshold's basis)"},
	{"array", wl_array,
	 "seed 000 6.1: 20 random contiguous slots per transaction, one-shot "
	 "update through a private buffer (--p slots=,slot=,write_pct=)"},
	{"array-raw", wl_array_raw,
	 "seed 000 6.1: as array, but increments each integer in place "
	 "(read-after-write)"},
	{"alloc", wl_alloc,
	 "seed 000 6.2: transactions allocating X blocks of 1-512 B, lazy "
	 "vs eager persist vs PMDK (--p x=)"},
	{"sps", wl_sps,
	 "swaps per second: k random swaps per transaction over an array "
	 "with a sum invariant, on threads each on a slice of it or sharing "
	 "it under per-slot locks (--p n=,k=,threads=,shared=,ops=)"},
	{"single-obj", wl_single_obj,
	 "seed 004 III-C: one object, entry sizes 128-16384 B, read ratio "
	 "(--p size=,read_pct=)"},
	{"multi-obj", wl_multi_obj,
	 "seed 004 III-C: many objects, entry sizes 128-16384 B, read ratio "
	 "(--p size=,read_pct=,objects=)"},
	{"hashmap", wl_hashmap,
	 "seed 004 hashmap_tx: inserts into a persistent hash map with "
	 "entries of 128-8192 B (--p entry=)"},
	{"open", wl_open,
	 "open + close of a region by heap in use and maximum size "
	 "(--p used_mib=,max_gib=; max 0 = fixed size)"},
	{"bbuf", wl_bbuf,
	 "seed 003 5: the 29-byte bounded buffer, scenarios 1-3 "
	 "(--p scenario=)"},
	{"costs", wl_costs,
	 "this machine's persistence costs for trace models: sfence, clean "
	 "flush, flush+fence by lines (PDOM-1 hardware, /dev/shm), file "
	 "backend barrier by pages (--dir, default /var/tmp), per trace "
	 "record (--p lines=,pages=)"},
	{"set", wl_set,
	 "the PTM papers' set: keys u64 keys of 2 x keys, each operation a "
	 "transaction, update_pct % updates (pmtx's ordered and hash maps "
	 "under every runtime, PMDK's B-tree and hash map; --p keys=,"
	 "update_pct=)"},
	{"journal-mem", wl_journal_mem,
	 "the journal backend's anonymous memory (RssAnon) and write rate "
	 "with a checkpoint's pages given back (drop=1) or kept until close "
	 "(drop=0), --dir default /var/tmp (--p drop=,journal_mib=,mib=,"
	 "block_kib=)"},
	{"containers", wl_containers,
	 "the containers' bytes per entry at `entries` entries, and their "
	 "barriers and flushed lines per operation under every runtime "
	 "(--p what=memory,cost entries=, ops=)"},
};

static int usage(const char *argv0)
{
	fprintf(stderr,
	        "usage: %s --list\n"
	        "       %s WORKLOAD [--system S] [--domain pdom0|pdom1|pdom2]\n"
	        "          [--backend hardware|emulated|file] [--writes N]\n"
	        "          [--allocs N] [--seconds T] [--rounds R] [--dir D]\n"
	        "          [--p NAME=V1,V2,...]... [--inject-fault]\n"
	        "       %s --info\n"
	        "--system takes a comma-separated list; --p sets a workload\n"
	        "parameter (a list is a sweep); --inject-fault corrupts the data\n"
	        "before the workload's validator runs, which must then fail.\n",
	        argv0, argv0, argv0);
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
	if (argc >= 2 && !strcmp(argv[1], "--info")) {
		printf("{\"flush_instruction\":\"%s\",\"pmtx_version\":\"%s\"}\n",
		       pmtx_flush_instruction(), pmtx_version(NULL, NULL, NULL));
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
		if (!strcmp(a, "--inject-fault")) {
			o.inject_fault = 1;
			continue;
		}
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
			o.dir = v, o.dir_set = 1;
		else if (!strcmp(a, "--p") && strchr(v, '=') &&
		         o.nparams < BENCH_MAX_PARAMS)
			o.params[o.nparams++] = v;
		else
			return usage(argv[0]);
		i++;
	}
	int rc = w->run(&o);
	if (rc)
		fprintf(stderr, "%s: %s\n", w->name, pmtx_strerror(rc));
	return rc ? 1 : 0;
}
