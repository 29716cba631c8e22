/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trace_hops.h - a trace-driven timing model of persistence (`pmtx trace
 * hops`): a pmtx persistence trace (include/pmtx_trace.h) replayed under
 * x86 clwb+sfence, HOPS persist buffers (Nalli et al., ASPLOS'17, section
 * 6), an ideal machine and this machine's measured x86. The rules, and
 * every approximation, are in trace_hops.c's design comment.
 */
#ifndef PMTX_TRACE_HOPS_H
#define PMTX_TRACE_HOPS_H

#include <stdint.h>

/* The machines, in the order of the reports (seed 002, Figure 10). */
enum th_machine {
	TH_X86_NVM,  /* clwb + sfence, durable at the PM device */
	TH_X86_PWQ,  /* clwb + sfence, durable at the controller's queue */
	TH_HOPS_NVM, /* persist buffers, ofence/dfence, durable at PM */
	TH_HOPS_PWQ, /* persist buffers, durable at the controller's queue */
	TH_IDEAL,    /* no flush, no fence, no order */
	TH_X86_HERE, /* this machine's measured flush and barrier costs */
	TH_NMACH
};

/* "x86_nvm", ... (the JSON keys). */
const char *th_machine_name(unsigned m);

struct th_opts {
	double ghz;            /* cycles per ns (Table 3: 2 GHz) */
	double pm_cycles;      /* PM write latency (Table 3: 160) */
	double pwq_cycles;     /* time to reach the controller (Table 3's
	                        * DRAM latency, 40: an assumption) */
	uint64_t pb_entries;   /* persist buffer entries per thread (32) */
	uint64_t pb_launch;    /* draining starts at this many entries (16) */
	double trace_ns;       /* what writing one record cost the trace */
	double here_fence_ns;  /* measured barrier: fence_ns + line_ns * k */
	double here_line_ns;
	double here_clwb_ns;   /* measured flush of one clean line */
};

/* The defaults: seed 002's Table 3 and section 6.4; the here_* and
 * trace_ns costs are 0 (unknown until measured). */
void th_opts_default(struct th_opts *o);

/* What one HOPS variant (nvm, pwq) spent stalled, and drained. */
struct th_hops_stats {
	double dfence_stall_ns; /* threads waiting at dfences */
	double full_stall_ns;   /* threads waiting for room in the buffer */
	uint64_t epochs_drained;
	uint64_t splits;        /* open epochs closed by the model */
};

struct th_result {
	uint64_t records, threads;
	uint64_t first_ns, last_ns;      /* time span of the records */
	uint64_t barriers[3];            /* order, durable, unknown kind */
	uint64_t stores, pm_lines_stored;
	double time_ns[TH_NMACH];        /* run time per machine */
	struct th_hops_stats hops[2];    /* nvm, pwq */
};

/* Model the trace at path. 0, or the reader's error (PMTX_E_BAD_MAGIC,
 * PMTX_E_BAD_VERSION, PMTX_E_TRUNCATED, PMTX_E_CORRUPT, errno), ENOMEM,
 * or PMTX_E_INVAL for options out of range (ghz <= 0, pb_entries 0). */
int th_model_file(const char *path, const struct th_opts *o,
                  struct th_result *res);

#endif
