/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trace_analyze.h - WHISPER's epoch analysis of a persistence trace
 * (include/pmtx_trace.h), behind `pmtx trace analyze`. The definitions
 * and the choices the paper leaves open are in trace_analyze.c's design
 * comment.
 */
#ifndef PMTX_TRACE_ANALYZE_H
#define PMTX_TRACE_ANALYZE_H

#include <stddef.h>
#include <stdint.h>

#include "pmtx_trace.h"

/* A distribution of counts (epochs per transaction, lines per epoch):
 * exact for every value; values below TA_DIST_EXACT cost no memory. */
#define TA_DIST_EXACT 1024u
struct ta_dist {
	uint64_t n, sum, max;
	uint64_t small[TA_DIST_EXACT]; /* small[v]: how many equal v */
	uint64_t *big;                 /* the values >= TA_DIST_EXACT */
	size_t nbig, capbig;
};

/* The nearest-rank percentile (pct in 1..100): the smallest value v such
 * that at least pct% of the values are <= v. 0 when there is no value. */
uint64_t ta_dist_percentile(struct ta_dist *d, unsigned pct);
/* How many values lie in [lo, hi]. */
uint64_t ta_dist_count(const struct ta_dist *d, uint64_t lo, uint64_t hi);
double ta_dist_mean(const struct ta_dist *d);

/* The line map's default bound, in entries (about 56 bytes each). */
#define TA_MAX_LINES (1u << 22)

struct ta_opts {
	uint64_t window_ns; /* dependency window (WHISPER: 50 us) */
	size_t max_lines;   /* line map bound; 0: TA_MAX_LINES */
};

struct ta_result {
	uint64_t records, threads;
	uint64_t first_ns, last_ns;      /* time span of the records */
	uint64_t tx_committed, tx_aborted, tx_unfinished;
	uint64_t epochs, epochs_outside; /* outside: not in a transaction */
	uint64_t singletons, singletons_small; /* small: < 10 bytes */
	uint64_t self_dep, cross_dep;    /* epochs with a dependency */
	uint64_t store_bytes, nt_bytes;  /* STORE, NT (VSTORE: neither) */
	/* STORE and NT bytes by store kind (pmtx_trace_store_kind; kinds
	 * this reader does not know count as PMTX_TSK_UNKNOWN). */
	uint64_t kind_bytes[PMTX_TSK_COUNT];
	uint64_t barriers, empty_barriers; /* empty: no store before it */
	/* Barriers by kind: [0] unknown, [1] ORDER, [2] DURABLE. */
	uint64_t barrier_kinds[3];
	uint64_t flush_recs, flushed_lines, redundant_lines;
	uint64_t distinct_lines;         /* lines in the line map at the end */
	uint64_t pruned_lines;           /* entries dropped to bound the map */
	struct ta_dist epoch_lines;      /* lines per epoch, every epoch */
	struct ta_dist tx_epochs;        /* epochs per committed tx */
	struct ta_dist tx_crit_lines;    /* critical-path lines, committed */
};

/* Analyze the trace at path. 0, or the reader's error (PMTX_E_BAD_MAGIC,
 * PMTX_E_BAD_VERSION, PMTX_E_TRUNCATED, PMTX_E_CORRUPT, errno), or ENOMEM.
 * On success res holds the result: free it with ta_result_free. On
 * failure res holds nothing to free. */
int ta_analyze_file(const char *path, const struct ta_opts *o,
                    struct ta_result *res);
void ta_result_free(struct ta_result *res);

#endif
