/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_trace.c - `pmtx trace dump FILE`: a persistence trace as text, one
 * event a line: time (ns since the trace started), thread, type, region
 * id, region offset, size, then the runtime and status for transaction
 * events and the bytes in hex when the trace has them.
 *
 * Invariants
 *  1. The trace is read only through pmtx_trace_open/next, which validate
 *     its header and every record: a bad trace ends the dump with a
 *     message and CMD_PROBLEM, after the events that were good.
 */
#include "cmd.h"
#include "pmtx_trace.h"

static const struct cmd_usage trace_usage = {"trace dump", "FILE", ""};

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
	else if (r->type == PMTX_TEV_STORE || r->type == PMTX_TEV_NT)
		printf(" kind=%s", pmtx_trace_store_kind_name(r->arg));
	else if (r->type == PMTX_TEV_BARRIER)
		printf(" kind=%s", pmtx_trace_barrier_kind_name(r->arg));
	if (ev->bytes) {
		printf(" bytes=");
		for (uint64_t i = 0; i < r->size; i++)
			printf("%02x", ev->bytes[i]);
	}
	putchar('\n');
}

int cmd_trace_dump(int argc, char **argv)
{
	const char *path;
	int rc = cmd_parse_file_only(&trace_usage, argc, argv, &path);
	if (rc)
		return rc;
	pmtx_trace_reader *rd;
	if ((rc = pmtx_trace_open(path, &rd)) != 0) {
		cmd_report("trace dump", path, rc, NULL);
		return CMD_PROBLEM;
	}
	uint64_t t0 = pmtx_trace_header(rd)->start_ns;
	pmtx_trace_event ev;
	while ((rc = pmtx_trace_next(rd, &ev)) == 0)
		print_event(&ev, t0);
	pmtx_trace_close(rd);
	if (rc != 1) {
		cmd_report("trace dump", path, rc, NULL);
		return CMD_PROBLEM;
	}
	return CMD_OK;
}
